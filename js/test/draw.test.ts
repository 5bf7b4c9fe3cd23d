import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Timeline, decodeMemory, decodeTimeline } from "../src/data";
import { DrawCache, type Scene, VECTOR_ALL_OPS, colourSlot, draw, makeHatch, shadeOf, visibleRange } from "../src/draw";
import { computeLayout } from "../src/layout";
import { Scale, type TimeView, fullView } from "../src/scale";
import { DARK, LIGHT, type Palette } from "../src/theme";
import { dense, encodeMemory, encodeTimeline, fillDrain, metaFor, type OpSpec } from "./fixtures";

let canvas: HTMLCanvasElement;
let ctx: CanvasRenderingContext2D;

beforeEach(() => {
  canvas = document.createElement("canvas");
  document.body.append(canvas);
  ctx = canvas.getContext("2d", { willReadFrequently: true })!;
});
afterEach(() => canvas.remove());

function scene(devices: number, ops: OpSpec[], makespan: number, view?: TimeView, extra: Partial<Scene> = {}): Scene {
  const layout = computeLayout(900, devices, true);
  canvas.width = layout.width;
  canvas.height = layout.height;
  const tl = decodeTimeline(encodeTimeline(devices, ops));
  const mem = decodeMemory(encodeMemory(Array.from({ length: devices }, () => [[0, 0], [1, 2], [makespan, 0]])));
  return {
    tl,
    mem,
    meta: metaFor(devices, ops, makespan),
    layout,
    scale: new Scale(view ?? fullView(makespan), layout.plotLeft, layout.plotRight),
    palette: LIGHT,
    dpr: 1,
    hatch: makeHatch(ctx, LIGHT, 1),
    selectedMb: -1,
    selectedOp: -1,
    selectedDevice: -1,
    hover: -1,
    memoryHover: null,
    cursor: null,
    extent: makespan,
    cache: new DrawCache(),
    ...extra,
  };
}

function pixel(x: number, y: number): [number, number, number] {
  const d = ctx.getImageData(Math.round(x), Math.round(y), 1, 1).data;
  return [d[0], d[1], d[2]];
}

function rgb(c: string): [number, number, number] {
  const m = c.match(/\d+/g)!.map(Number);
  return [m[0], m[1], m[2]];
}

function close(a: number[], b: number[], tol = 3): boolean {
  return a.every((v, i) => Math.abs(v - b[i]) <= tol);
}

function opColour(P: Palette, tl: Timeline, k: number): [number, number, number] {
  return rgb(P.shades[colourSlot(tl.flags[k])][shadeOf(tl.mb[k])]);
}

function centre(s: Scene, o: OpSpec): [number, number] {
  return [s.scale.x(o.start + o.dur * 0.3), s.layout.rowTop[o.device] + s.layout.barInset + 3];
}

describe("draw", () => {
  it("paints each op in its kind's colour, shaded by microbatch, with idle time hatched", () => {
    const spec = fillDrain(4, 6);
    const s = scene(4, spec.ops, spec.makespan);
    const stats = draw(ctx, s);
    expect(stats.ops).toBe(spec.ops.length);
    spec.ops.forEach((o, k) => {
      expect(close(pixel(...centre(s, o)), opColour(LIGHT, s.tl, k))).toBe(true);
    });
    // F of microbatches 0 and 1 differ in shade but share the F hue family
    expect(opColour(LIGHT, s.tl, 0)).not.toEqual(opColour(LIGHT, s.tl, 1));
    // device 3 idles during [0, 3): neither background nor any op colour there
    const idle = pixel(s.scale.x(1.5), s.layout.rowTop[3] + s.layout.rowHeight / 2);
    expect(close(idle, rgb("rgb(255,255,255)"), 2)).toBe(false);
    for (const shade of LIGHT.shades.flat()) expect(close(idle, rgb(shade), 12)).toBe(false);
    expect(stats.labels).toBe(spec.ops.length);
  });

  it("shades the segments of one microbatch alike (Seq1F1B), as the legend's 'shade: microbatch' says", () => {
    const spec = fillDrain(2, 6);
    const s = scene(2, spec.ops, spec.makespan);
    s.meta = { ...s.meta, segments: 2 };
    draw(ctx, s);
    const forward = (mb: number) => spec.ops.findIndex((o) => o.device === 0 && o.mb === mb && o.kind === "F");
    const painted = (k: number) => pixel(...centre(s, spec.ops[k]));
    // indices 0 and 1 are segments 0 and 1 of microbatch 0; index 2 starts microbatch 1
    expect(close(painted(forward(0)), painted(forward(1)), 1)).toBe(true);
    expect(close(painted(forward(1)), painted(forward(2)), 12)).toBe(false);
  });

  it("culls to the view: only ops overlapping it are visited", () => {
    const spec = fillDrain(4, 40);
    const view = { t0: 20.5, t1: 31.2 };
    const s = scene(4, spec.ops, spec.makespan, view);
    const stats = draw(ctx, s);
    const overlapping = spec.ops.filter((o) => o.start < view.t1 && o.start + o.dur > view.t0).length;
    expect(stats.ops).toBeGreaterThanOrEqual(overlapping);
    expect(stats.ops).toBeLessThanOrEqual(overlapping + 4);
    for (let d = 0; d < 4; d++) {
      const [i, j] = visibleRange(s.tl, d, view.t0, view.t1);
      for (let k = i; k < j; k++) expect(s.tl.start[k]).toBeLessThan(view.t1);
      if (i > s.tl.offsets[d]) expect(s.tl.start[i - 1] + s.tl.dur[i - 1]).toBeLessThanOrEqual(view.t0);
    }
  });

  it("merges sub-pixel ops so the rectangles drawn follow pixels, not ops", () => {
    const spec = dense(4, 50000);
    const s = scene(4, spec.ops, spec.makespan);
    const stats = draw(ctx, s);
    const plotWidth = s.layout.plotRight - s.layout.plotLeft;
    expect(stats.ops).toBe(200000);
    expect(stats.rects).toBeLessThanOrEqual(4 * (plotWidth + 2));
    // the busy lanes are painted, not left idle
    const busy = pixel(s.scale.x(spec.makespan / 2), s.layout.rowTop[1] + s.layout.rowHeight / 2);
    expect(close(busy, rgb(LIGHT.laneIdle), 8)).toBe(false);
    // zoomed in far enough, every op is drawn on its own again
    const zoomed = scene(4, spec.ops, spec.makespan, { t0: 1000, t1: 1020 });
    const z = draw(ctx, zoomed);
    // (an op ending exactly at the view's left edge is visited but has nothing to paint)
    expect(z.rects).toBeLessThanOrEqual(z.ops);
    expect(z.rects).toBeGreaterThanOrEqual(z.ops - 4);
    expect(z.ops).toBeLessThan(100);
    expect(z.labels).toBeGreaterThan(0);
  });

  it("paints narrow bars through the pixel strip in the same colours", () => {
    const spec = dense(12, 3000);
    // ~5 px per op: too many ops in view for vector shapes, wide enough to be drawn one by one
    const s = scene(12, spec.ops, spec.makespan, { t0: 500, t1: 500 + (900 - 150) / 5 });
    const stats = draw(ctx, s);
    expect(stats.ops).toBeGreaterThan(VECTOR_ALL_OPS);
    let checked = 0;
    spec.ops.forEach((o, k) => {
      if (o.start < 510 || o.start + o.dur > 600) return;
      const c = pixel(s.scale.x(o.start + 0.4), s.layout.rowTop[o.device] + s.layout.rowHeight / 2);
      expect(close(c, opColour(LIGHT, s.tl, k))).toBe(true);
      checked++;
    });
    expect(checked).toBeGreaterThan(100);
  });

  it("reuses the bar and memory layers only while data, view, geometry and palette stay the same", () => {
    const spec = fillDrain(3, 5);
    const s = scene(3, spec.ops, spec.makespan);
    const k = 7;
    const at = centre(s, spec.ops[k]);
    draw(ctx, { ...s, hover: 2 });
    expect(close(pixel(...at), opColour(LIGHT, s.tl, k))).toBe(true);
    draw(ctx, { ...s, palette: DARK });
    expect(close(pixel(...at), opColour(DARK, s.tl, k))).toBe(true);
    const shifted = { ...s, scale: new Scale({ t0: 2, t1: spec.makespan }, s.layout.plotLeft, s.layout.plotRight) };
    draw(ctx, shifted);
    expect(close(pixel(...centre(shifted, spec.ops[k])), opColour(LIGHT, s.tl, k))).toBe(true);
    // the same ops but op k is a W: a new timeline must not show the old bar layer
    const recoloured = spec.ops.map((o, i) => (i === k ? { ...o, kind: "W" as const } : o));
    const swapped = { ...s, tl: decodeTimeline(encodeTimeline(3, recoloured)) };
    expect(opColour(LIGHT, swapped.tl, k)).not.toEqual(opColour(LIGHT, s.tl, k));
    draw(ctx, swapped);
    expect(close(pixel(...at), opColour(LIGHT, swapped.tl, k))).toBe(true);
  });

  it("dims other microbatches when one is selected and keeps the selected one bright", () => {
    const spec = fillDrain(3, 5);
    const plain = scene(3, spec.ops, spec.makespan);
    const s = { ...plain, selectedMb: 2, selectedOp: spec.ops.findIndex((o) => o.mb === 2) };
    draw(ctx, s);
    spec.ops.forEach((o, k) => {
      const c = pixel(...centre(s, o));
      if (o.mb === 2) expect(close(c, opColour(LIGHT, s.tl, k))).toBe(true);
      else expect(close(c, opColour(LIGHT, s.tl, k), 10)).toBe(false);
    });
  });

  it("draws the dependency path of the selected microbatch", () => {
    const spec = fillDrain(3, 5);
    const base = scene(3, spec.ops, spec.makespan);
    // the arrow from F(0,4) on device 0 to F(1,4) on device 1 crosses the gap between their rows
    const f0 = spec.ops.find((o) => o.kind === "F" && o.stage === 0 && o.mb === 4)!;
    const x = base.scale.x(f0.start + f0.dur);
    const gapY = (base.layout.rowTop[0] + base.layout.rowHeight + base.layout.rowTop[1]) / 2;
    const darkInGap = () => {
      for (let dx = -2; dx <= 40; dx++) {
        const [r, g, b] = pixel(x + dx, gapY);
        if (r + g + b < 300) return true;
      }
      return false;
    };
    draw(ctx, base);
    expect(darkInGap()).toBe(false);
    draw(ctx, { ...base, selectedMb: 4 });
    expect(darkInGap()).toBe(true);
  });

  it("ghosts the future when the scrubber is in use", () => {
    const spec = fillDrain(2, 4);
    const s = scene(2, spec.ops, spec.makespan, undefined, { cursor: 3 });
    draw(ctx, s);
    const early = spec.ops.findIndex((o) => o.start + o.dur <= 3);
    const late = spec.ops.findIndex((o) => o.start > 3);
    expect(close(pixel(...centre(s, spec.ops[early])), opColour(LIGHT, s.tl, early))).toBe(true);
    expect(close(pixel(...centre(s, spec.ops[late])), opColour(LIGHT, s.tl, late), 10)).toBe(false);
  });

  it("paints F&B pairs once, in the pair colour", () => {
    const ops: OpSpec[] = [
      { device: 0, stage: 0, mb: 0, kind: "F", start: 0, dur: 1 },
      { device: 0, stage: 0, mb: 1, kind: "F", start: 1, dur: 3, pair: "F" },
      { device: 0, stage: 0, mb: 0, kind: "B", start: 1, dur: 3, pair: "B" },
    ];
    const s = scene(1, ops, 4);
    const stats = draw(ctx, s);
    expect(stats.rects).toBe(2);
    expect(close(pixel(s.scale.x(2.5), s.layout.rowTop[0] + 6), rgb(LIGHT.shades[3][shadeOf(1)]))).toBe(true);
  });
});

describe("draw in a comparison", () => {
  it("leaves the shared axis empty after the run's end, and marks the end", () => {
    const spec = fillDrain(3, 4);
    const extent = spec.makespan * 2;
    const s = scene(3, spec.ops, spec.makespan, fullView(extent), { extent });
    draw(ctx, s);
    const y = s.layout.rowTop[0] + 3;
    // idle before the end is hatched, after it is plain background
    expect(close(pixel(s.scale.x(spec.makespan * 1.5), y), rgb("rgb(255,255,255)"), 1)).toBe(true);
    // the dashed line at the end: some of its pixels in the first row are drawn
    const end = Math.round(s.scale.x(spec.makespan));
    const line = Array.from({ length: 8 }, (_, dy) => pixel(end, y + dy));
    const muted = [1, 3, 5].map((i) => parseInt(LIGHT.muted.slice(i, i + 2), 16));
    expect(line.some((c) => close(c, muted, 2))).toBe(true);
  });

  it("highlights the selected device: its row keeps its colours, the others fade", () => {
    const spec = fillDrain(3, 5);
    const s = { ...scene(3, spec.ops, spec.makespan), selectedDevice: 1 };
    draw(ctx, s);
    spec.ops.forEach((o, k) => {
      const c = pixel(...centre(s, o));
      if (o.device === 1) expect(close(c, opColour(LIGHT, s.tl, k))).toBe(true);
      else expect(close(c, opColour(LIGHT, s.tl, k), 10)).toBe(false);
    });
  });
});
