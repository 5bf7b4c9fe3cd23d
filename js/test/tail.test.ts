// Each device's data-parallel tail in the front end: the pieces a part is drawn as, their boxes,
// hit tests, the tooltip, the pixels painted, the step's end on the axis, the legend, and the TP
// share's band inside the bars.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { decodeMemory, decodeTimeline } from "../src/data";
import { DrawCache, type Scene, TP_BAND, draw, makeHatch } from "../src/draw";
import { computeLayout } from "../src/layout";
import type { Step, TailColumns } from "../src/meta";
import { Scale, fullView } from "../src/scale";
import { DARK, LIGHT } from "../src/theme";
import { bandOf, describeTail, pieceBox, pieceRows, stepEnd, tailAt, tailOf, tailPieces } from "../src/tail";
import { GanttView, type DebugHooks } from "../src/view";
import { FakeModel, encodeMemory, encodeTimeline, metaFor, nextFrame, type OpSpec } from "./fixtures";

// Two devices. Device 0 runs F0, F1, then B0 (4..6) and B1 (6..8); device 1 F0, F1, B0, B1 earlier.
const OPS: OpSpec[] = [
  { device: 0, stage: 0, mb: 0, kind: "F", start: 0, dur: 1 },
  { device: 0, stage: 0, mb: 1, kind: "F", start: 1, dur: 1 },
  { device: 0, stage: 0, mb: 0, kind: "B", start: 4, dur: 2, dep: 6 },
  { device: 0, stage: 0, mb: 1, kind: "B", start: 6, dur: 2, dep: 7 },
  { device: 1, stage: 1, mb: 0, kind: "F", start: 1, dur: 1, dep: 0 },
  { device: 1, stage: 1, mb: 1, kind: "F", start: 2, dur: 1, dep: 1 },
  { device: 1, stage: 1, mb: 0, kind: "B", start: 3, dur: 1, dep: 4 },
  { device: 1, stage: 1, mb: 1, kind: "B", start: 4, dur: 1, dep: 5 },
];
const MAKESPAN = 8;
// device 0: its reduction of 3 starts with its last B (6) and runs to 9, 2 of it under the B; then
// its optimizer 9..10 and gather 10..10.5. Device 1: reduction 4..7 (1 under its last B), optimizer 7..8.
const TAIL: TailColumns = {
  device: [0, 0, 0, 1, 1],
  stage: [0, -1, -1, 1, -1],
  kind: ["reduce", "optimizer", "gather", "reduce", "optimizer"],
  start: [6, 9, 10, 4, 7],
  end: [9, 10, 10.5, 7, 8],
  time: [3, 1, 0.5, 3, 1],
  hidden: [2, 0, 0, 1, 0],
};
const STEP: Step = {
  time: 10.5, mfu: 0.41, tokens_per_second: null, device: 0, compute: 5, tp_comm: 1, p2p_wait: 0, idle: 1,
  dp_tail: 2.5, setup: 0, end: 10.5, overlap_grad_reduce: true, overlap_param_gather: false,
  names: { reduce: "gradient reduce-scatter", optimizer: "optimizer step", gather: "parameter all-gather" }, tail: TAIL,
};

function meta(extra = {}) {
  return metaFor(2, OPS, MAKESPAN, { time_unit: "ms", step: STEP, ...extra });
}

describe("a tail part's pieces", () => {
  it("is a band for as long as it runs under its device's ops, then a bar", () => {
    expect(tailPieces(TAIL, 0)).toEqual([
      { part: 0, kind: "reduce", t0: 6, t1: 8, under: true },
      { part: 0, kind: "reduce", t0: 8, t1: 9, under: false },
    ]);
    expect(tailPieces(TAIL, 1)).toEqual([{ part: 1, kind: "optimizer", t0: 9, t1: 10, under: false }]);
    // a reduction wholly under the ops is a band only
    const hiddenAll = { ...TAIL, hidden: [3, 0, 0, 1, 0] };
    expect(tailPieces(hiddenAll, 0)).toEqual([{ part: 0, kind: "reduce", t0: 6, t1: 9, under: true }]);
  });

  it("ends the step where Python says, less the set-up", () => {
    expect(stepEnd(meta())).toBe(10.5);
    expect(stepEnd(meta({ step: { ...STEP, setup: 2, time: 12.5 } }))).toBe(10.5);
    expect(stepEnd(meta({ step: null }))).toBeNull();
    expect(tailOf(meta({ step: { ...STEP, tail: { ...TAIL, device: [] } } }))).toBeNull();
  });

  it("puts a band along the bottom of its row and a bar where the ops' bars are", () => {
    const L = computeLayout(900, 2, false);
    const [top, h] = pieceRows(L, 1, true);
    expect(top + h).toBe(L.rowTop[1] + L.rowHeight);
    expect(h).toBe(bandOf(L));
    // the band reaches 2 px into the bars above it, no more: their labels stay clear
    expect(L.rowTop[1] + L.rowHeight - L.barInset - top).toBe(2);
    expect(pieceRows(L, 1, false)).toEqual([L.rowTop[1] + L.barInset, L.rowHeight - 2 * L.barInset]);
    const scale = new Scale(fullView(10.5), L.plotLeft, L.plotRight);
    const b = pieceBox(L, scale, TAIL, tailPieces(TAIL, 0)[1]);
    expect(b.x).toBeCloseTo(scale.x(8), 9);
    expect(b.w).toBeCloseTo(scale.x(9) - scale.x(8), 9);
  });
});

describe("hovering the tail", () => {
  const L = computeLayout(900, 2, false);
  const scale = new Scale(fullView(10.5), L.plotLeft, L.plotRight);
  const m = meta();

  it("finds a bar anywhere in its row's bar and a band only on the band", () => {
    const barY = L.rowTop[0] + L.rowHeight / 2;
    expect(tailAt(m, L, scale, scale.x(9.5), barY)).toBe(1);
    expect(tailAt(m, L, scale, scale.x(10.25), barY)).toBe(2);
    expect(tailAt(m, L, scale, scale.x(8.5), barY)).toBe(0); // the reduction after the last op
    // under the last B (6..8) the reduction is its band: the B's middle is the B's
    expect(tailAt(m, L, scale, scale.x(7), barY)).toBe(-1);
    expect(tailAt(m, L, scale, scale.x(7), L.rowTop[0] + L.rowHeight - 1)).toBe(0);
    // device 1's row, and nothing past the step's end or between rows
    expect(tailAt(m, L, scale, scale.x(7.5), L.rowTop[1] + L.rowHeight / 2)).toBe(4);
    expect(tailAt(m, L, scale, scale.x(10.5) + 20, barY)).toBe(-1);
    expect(tailAt(m, L, scale, scale.x(9.5), L.rowTop[0] - 1)).toBe(-1);
  });

  it("says what each part is, when it ran and how much of it the ops hid", () => {
    const reduce = describeTail(m, 0);
    expect(reduce.title).toBe("gradient reduce-scatter · device 0 · stage 0");
    expect(Object.fromEntries(reduce.rows)).toMatchObject({
      part: "gradient reduce-scatter of stage 0's gradients, on the data-parallel link",
      start: "6 ms", end: "9 ms", duration: "3 ms", collective: "3 ms",
      overlapped: "2 ms (66.7 %) under the device's ops (overlap_grad_reduce), 1 ms after its last op",
      step: "ends at 10.5 ms; step time 10.5 ms",
    });
    const optimizer = Object.fromEntries(describeTail(m, 4).rows);
    expect(optimizer.part).toBe("optimizer step of the device's parameters");
    expect(optimizer.overlapped).toBeUndefined();
    expect(describeTail(m, 2).title).toBe("parameter all-gather · device 0");
  });
});

describe("painting the tail", () => {
  const canvas = document.createElement("canvas");
  const ctx = canvas.getContext("2d")!;

  function scene(P = LIGHT, extra: Partial<Scene> = {}): Scene {
    const tl = decodeTimeline(encodeTimeline(2, OPS));
    const layout = computeLayout(900, tl.devices, true);
    canvas.width = layout.width;
    canvas.height = layout.height;
    const mem = decodeMemory(encodeMemory([[[0, 0], [MAKESPAN, 0]], [[0, 0], [MAKESPAN, 0]]]));
    return {
      tl, mem, meta: meta(), layout, scale: new Scale(fullView(10.5), layout.plotLeft, layout.plotRight),
      palette: P, dpr: 1, hatch: makeHatch(ctx, P, 1), selectedMb: -1, selectedOp: -1, selectedDevice: -1,
      hover: -1, memoryHover: null, cursor: null, extent: 10.5, cache: new DrawCache(), ...extra,
    };
  }
  const pixel = (x: number, y: number) => Array.from(ctx.getImageData(Math.round(x), Math.round(y), 1, 1).data.slice(0, 3));
  const hex = (c: string) => [1, 3, 5].map((i) => parseInt(c.slice(i, i + 2), 16));

  it("paints each part in its colour: bars after the ops, the band under the last B", () => {
    for (const P of [LIGHT, DARK]) {
      const s = scene(P);
      const stats = draw(ctx, s);
      expect(stats.tail).toBe(5);
      const L = s.layout;
      const mid = L.rowTop[0] + L.rowHeight / 2;
      // the optimizer is plain: its middle is its colour (away from its label, at its top edge)
      expect(pixel(s.scale.x(9.1), L.rowTop[0] + L.barInset + 1)).toEqual(hex(P.tailOptimizer));
      // the band under device 0's last B, and the B's own colour above it
      const [bandTop, bandHeight] = pieceRows(L, 0, true);
      expect(pixel(s.scale.x(7), bandTop + bandHeight / 2)).toEqual(hex(P.tailReduce));
      expect(pixel(s.scale.x(7), mid)).not.toEqual(hex(P.tailReduce));
      // a striped or dotted bar shows its colour between its marks
      const near = (at: number[], c: string) => Math.max(...at.map((v, i) => Math.abs(v - hex(c)[i])));
      const reduceColumn = Array.from({ length: 8 }, (_, k) => pixel(s.scale.x(8.5) + k - 4, mid + 5));
      expect(Math.min(...reduceColumn.map((px) => near(px, P.tailReduce)))).toBe(0);
      const gatherColumn = Array.from({ length: 8 }, (_, k) => pixel(s.scale.x(10.25) + k - 4, mid - 6));
      expect(Math.min(...gatherColumn.map((px) => near(px, P.tailGather)))).toBe(0);
      // after device 1's tail the row is idle until the step's end: not the background
      expect(pixel(s.scale.x(9.5), L.rowTop[1] + L.rowHeight / 2)).not.toEqual(hex(P.background));
    }
  });

  it("draws nothing of a tail out of view, and nothing without a step", () => {
    const s = scene(LIGHT, { scale: new Scale({ t0: 0, t1: 3 }, 0, 1) });
    s.scale = new Scale({ t0: 0, t1: 3 }, s.layout.plotLeft, s.layout.plotRight);
    expect(draw(ctx, s).tail).toBe(0);
    expect(draw(ctx, scene(LIGHT, { meta: meta({ step: null }) })).tail).toBe(0);
  });

  it("bands each op's TP share along its bar's top, as long as its traffic", () => {
    // F: 0.25 of its 1 ms in TP collectives; B: 1 of its 2 ms
    const s = scene(LIGHT, { meta: meta({ traffic: [[0.25, 1, 0, 0], [0.25, 1, 0, 0]] }) });
    draw(ctx, s);
    const L = s.layout;
    const h = L.rowHeight - 2 * L.barInset;
    const y = L.rowTop[0] + L.barInset + Math.max(2, Math.round(h * TP_BAND)) / 2;
    const shade = (x: number) => pixel(x, y);
    const inB = shade(s.scale.x(6.5)); // device 0's B1, 6..8: its first half darker
    const pastB = shade(s.scale.x(7.5));
    expect(inB.reduce((a, b) => a + b, 0)).toBeLessThan(pastB.reduce((a, b) => a + b, 0) - 60);
    // below the band, the bar is as it was
    expect(pixel(s.scale.x(6.5), y + h / 2)).toEqual(pixel(s.scale.x(7.5), y + h / 2));
    const plain = scene(); // (sizing the canvas clears it)
    draw(ctx, plain);
    expect(shade(plain.scale.x(6.5))).toEqual(shade(plain.scale.x(7.5)));
  });
});

describe("the view with a step", () => {
  let host: HTMLDivElement;
  beforeEach(() => {
    host = document.createElement("div");
    host.style.width = "900px";
    document.body.append(host);
  });
  afterEach(() => host.remove());

  it("runs the axis to the step's end, counts the parts drawn and names them in the legend", async () => {
    const memory = encodeMemory([[[0, 0], [MAKESPAN, 0]], [[0, 0], [MAKESPAN, 0]]]);
    const v = new GanttView(host, new FakeModel({
      _timeline: new DataView(encodeTimeline(2, OPS).buffer),
      _memory: new DataView(memory.buffer),
      _meta: meta({ traffic: [[0.25, 1, 0, 0], [0.25, 1, 0, 0]] }),
    }) as never);
    await nextFrame();
    const hooks = (v.root as unknown as { ppviz: DebugHooks }).ppviz;
    expect(hooks.getView()).toEqual({ t0: 0, t1: 10.5 });
    expect(v.root.dataset.tail).toBe("5");
    expect(v.root.dataset.tailParts).toBe("5");
    const legend = v.root.querySelector(".ppviz-legend")!.textContent!;
    expect(legend).toContain("gradient reduce-scatter (DP tail; band: overlapped with the last backwards)");
    expect(legend).toContain("optimizer step (DP tail)");
    expect(legend).toContain("parameter all-gather (DP tail)");
    expect(legend).toContain("TP/EP traffic (dark band: its share of the op)");
    const boxes = hooks.tailBoxes(0);
    expect(boxes.map((b) => b.under)).toEqual([true, false]);
    // hovering the bar after the last op shows its tooltip
    const bar = boxes[1];
    v.canvas.dispatchEvent(new PointerEvent("pointermove", { clientX: bar.x + bar.width / 2, clientY: bar.y + bar.height / 2 }));
    expect(v.tooltip.hidden).toBe(false);
    expect(v.tooltip.textContent).toContain("gradient reduce-scatter · device 0 · stage 0");
    // zoomed in before the tail: none drawn
    hooks.setView(0, 3);
    hooks.redraw();
    expect(v.root.dataset.tail).toBe("0");
    v.destroy();
  });
});
