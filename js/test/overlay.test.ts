import { afterEach, beforeEach, describe, expect, it } from "vitest";
import style from "../../ppviz/style.json";
import { decodeMemory, decodeTimeline } from "../src/data";
import { DrawCache, type Scene, draw, makeHatch } from "../src/draw";
import { computeLayout } from "../src/layout";
import {
  OVERLAY_MAGIC,
  OVERLAY_VERSION,
  decodeOverlay,
  fillOverlaySummary,
  ghostBox,
  ghostStrip,
  overlayRows,
  type Overlay,
} from "../src/overlay";
import { Scale, fullView } from "../src/scale";
import { LIGHT } from "../src/theme";
import { encodeMemory, encodeTimeline, fillDrain, metaFor, type OpSpec } from "./fixtures";

/** The overlay trait as ppviz/widgets/overlay.py writes it: header, then six f32 columns. */
function encodeOverlay(cols: number[][]): Uint8Array {
  const n = cols[0].length;
  const buf = new ArrayBuffer(12 + 24 * n);
  const dv = new DataView(buf);
  dv.setUint32(0, OVERLAY_MAGIC, true);
  dv.setUint32(4, OVERLAY_VERSION, true);
  dv.setUint32(8, n, true);
  cols.forEach((col, i) => col.forEach((v, k) => dv.setFloat32(12 + 4 * (n * i + k), v, true)));
  return new Uint8Array(buf);
}

/** fillDrain(2, 3) measured; simulated: every op `shift[k]` earlier and `longer[k]` shorter. */
function fixture(shift: (k: number, o: OpSpec) => number, longer: (k: number, o: OpSpec) => number) {
  const spec = fillDrain(2, 3);
  const simStart = spec.ops.map((o, k) => o.start - shift(k, o));
  const simEnd = spec.ops.map((o, k) => simStart[k] + o.dur - longer(k, o));
  const startRes = spec.ops.map((o, k) => shift(k, o));
  const durRes = spec.ops.map((o, k) => longer(k, o));
  const zeros = spec.ops.map(() => 0);
  return { spec, bytes: encodeOverlay([simStart, simEnd, startRes, durRes, zeros, zeros]) };
}

let canvas: HTMLCanvasElement;
let ctx: CanvasRenderingContext2D;

beforeEach(() => {
  canvas = document.createElement("canvas");
  document.body.append(canvas);
  ctx = canvas.getContext("2d", { willReadFrequently: true })!;
});
afterEach(() => canvas.remove());

function scene(spec: { ops: OpSpec[]; makespan: number }, ov: Overlay, devices = 2): Scene {
  const layout = computeLayout(900, devices, true);
  canvas.width = layout.width;
  canvas.height = layout.height;
  return {
    tl: decodeTimeline(encodeTimeline(devices, spec.ops)),
    mem: decodeMemory(encodeMemory(Array.from({ length: devices }, () => [[0, 0], [spec.makespan, 0]]))),
    meta: { ...metaFor(devices, spec.ops, spec.makespan), time_unit: "ms" },
    layout,
    scale: new Scale(fullView(spec.makespan), layout.plotLeft, layout.plotRight),
    palette: LIGHT,
    dpr: 1,
    hatch: makeHatch(ctx, LIGHT, 1),
    selectedMb: -1,
    selectedOp: -1,
    selectedDevice: -1,
    hover: -1,
    memoryHover: null,
    cursor: null,
    extent: spec.makespan,
    cache: new DrawCache(),
    overlay: ov,
  };
}

function pixel(x: number, y: number): number[] {
  const d = ctx.getImageData(Math.round(x), Math.round(y), 1, 1).data;
  return [d[0], d[1], d[2]];
}

function hex(c: string): number[] {
  const v = parseInt(c.slice(1), 16);
  return [(v >> 16) & 255, (v >> 8) & 255, v & 255];
}

describe("overlay", () => {
  it("decodes the columns Python sends and refuses other data", () => {
    const { spec, bytes } = fixture((k) => k * 0.25, () => 0.5);
    const ov = decodeOverlay(bytes, spec.ops.length)!;
    expect(ov.n).toBe(spec.ops.length);
    expect(Array.from(ov.startRes)).toEqual(spec.ops.map((_, k) => k * 0.25));
    expect(Array.from(ov.simStart)).toEqual(spec.ops.map((o, k) => o.start - k * 0.25));
    expect(ov.maxEndRes).toBeCloseTo((spec.ops.length - 1) * 0.25 + 0.5, 6);
    expect(decodeOverlay(new Uint8Array(0), 3)).toBeNull();
    expect(() => decodeOverlay(bytes, spec.ops.length + 1)).toThrow(/overlay has 12 ops, the timeline 13/);
    const wrong = bytes.slice();
    new DataView(wrong.buffer).setUint32(4, OVERLAY_VERSION + 1, true);
    expect(() => decodeOverlay(wrong, spec.ops.length)).toThrow(/overlay format 2/);
  });

  it("lays each simulated op out under its bar, in the row's ghost strip, at its simulated times", () => {
    const { spec, bytes } = fixture((_, o) => (o.device === 1 ? 1.5 : -0.5), () => 0);
    const ov = decodeOverlay(bytes, spec.ops.length)!;
    const s = scene(spec, ov);
    const L = s.layout;
    for (let k = 0; k < spec.ops.length; k++) {
      const o = spec.ops[k];
      const { ghost, mark } = ghostBox(s.tl, ov, L, s.scale, k);
      const { bar, strip } = ghostStrip(L, o.device);
      // inside the op's own row, below the measured bar
      expect(strip.y).toBeGreaterThanOrEqual(bar.y + bar.h);
      expect(strip.y + strip.h).toBeLessThanOrEqual(L.rowTop[o.device] + L.rowHeight);
      expect(strip.h).toBeGreaterThanOrEqual(5);
      expect(ghost.y).toBe(strip.y);
      expect(ghost.h).toBe(strip.h);
      expect(ghost.x).toBeCloseTo(s.scale.x(ov.simStart[k]), 6);
      expect(ghost.w).toBeCloseTo(o.dur * s.scale.k, 4);
      // the mark runs from the simulated start to the measured one: late on device 1
      expect(mark.x0).toBeCloseTo(s.scale.x(o.start - (o.device === 1 ? 1.5 : -0.5)), 6);
      expect(mark.x1).toBeCloseTo(s.scale.x(o.start), 6);
      expect(mark.late).toBe(o.device === 1);
    }
  });

  it("paints late ghosts in the late colour and early ones in the early colour", () => {
    // device 0 ends early, device 1 late, both by the largest residual (full colour)
    const { spec, bytes } = fixture(() => 0, (_, o) => (o.device === 1 ? 0.4 : -0.4));
    const ov = decodeOverlay(bytes, spec.ops.length)!;
    const s = scene(spec, ov);
    draw(ctx, s);
    const colours = style.themes.light;
    for (let k = 0; k < spec.ops.length; k++) {
      const { ghost } = ghostBox(s.tl, ov, s.layout, s.scale, k);
      const got = pixel(ghost.x + ghost.w / 2, ghost.y + ghost.h / 2);
      const want = hex(spec.ops[k].device === 1 ? colours.residualLate : colours.residualEarly);
      got.forEach((v, i) => expect(Math.abs(v - want[i])).toBeLessThanOrEqual(3));
    }
  });

  it("adds the simulated span, the residuals and their attribution to the tooltip", () => {
    const spec = fillDrain(2, 3);
    const n = spec.ops.length;
    const col = (f: (k: number) => number) => spec.ops.map((_, k) => f(k));
    const k = 8; // device 1
    const o = spec.ops[k];
    const bytes = encodeOverlay([
      col((j) => (j === k ? o.start - 0.75 : spec.ops[j].start)),
      col((j) => (j === k ? o.start - 0.75 + o.dur - 0.25 : spec.ops[j].start + spec.ops[j].dur)),
      col((j) => (j === k ? 0.75 : 0)),
      col((j) => (j === k ? 0.25 : 0)),
      col((j) => (j === k ? 0.5 : 0)),
      col(() => 0),
    ]);
    const ov = decodeOverlay(bytes, n)!;
    const s = scene(spec, ov);
    const meta = { ...s.meta, overlay: { label: "calibrated simulation", pipeline_time: [10, 9], bubble_fraction: [0.5, 0.4],
      difference: 1, attribution: { compute_variance: 0.25, communication: 0.5, host_overhead: 0.25 },
      compute_excess: [0, 0.25], host_gaps: [0, 0], finish: [0, 1], straggler: null, comm: 0 } };
    const rows = Object.fromEntries(overlayRows(s.tl, meta, ov, k));
    expect(rows.simulated).toBe(`${o.start - 0.75} – ${o.start - 0.75 + o.dur - 0.25} ms`);
    expect(rows.residual).toBe("start +0.75 · duration +0.25 · end +1 ms");
    expect(rows.attribution).toBe("compute +0.25 · comm +0.5 · earlier ops +0.25 ms");
    expect(o.device).toBe(1);
    expect(rows["device 1"]).toBe("ends +1 · busy +0.25 · gaps 0 ms");

    const box = document.createElement("div");
    fillOverlaySummary(box, meta, ov.maxEndRes);
    expect(box.hidden).toBe(false);
    expect(box.textContent).toContain("10 ms measured");
    expect(box.textContent).toContain("9 ms calibrated simulation");
    expect(box.textContent).toContain("+1 ms (+11.1 %)");
    fillOverlaySummary(box, s.meta);
    expect(box.hidden).toBe(true);
  });
});
