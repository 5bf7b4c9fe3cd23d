// Transfers in the front end: decoding (beyond the golden fixture), the lanes' geometry, hit
// tests, the tooltips, the pixels the lanes paint, and the view's switch.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { decodeMemory, decodeTimeline, inputTransfer, offloadOf, reloadOf, waitedTransfer } from "../src/data";
import { DrawCache, type Scene, draw, makeHatch } from "../src/draw";
import { computeLayout, laneAt, transferLaneHeight } from "../src/layout";
import type { Communication } from "../src/meta";
import { Scale, fullView } from "../src/scale";
import { DARK, LIGHT } from "../src/theme";
import { describeOp } from "../src/tooltip";
import {
  describeTransfer, halfLane, halvesOf, hitTransfer, inputTransferRows, laneBand, linkText, transferBox,
} from "../src/transfers";
import { GanttView, type DebugHooks } from "../src/view";
import { FakeModel, encodeMemory, encodeTimeline, metaFor, nextFrame, type OpSpec, type TransferSpec } from "./fixtures";

// Two devices on two nodes. Device 0 runs F0, F1 and later B0; device 1 runs F0, F1, B0.
// Activations cross 0 → 1 (the second one queues behind the first on the link), a gradient 1 → 0.
const OPS: OpSpec[] = [
  { device: 0, stage: 0, mb: 0, kind: "F", start: 0, dur: 1 },
  { device: 0, stage: 0, mb: 1, kind: "F", start: 1, dur: 1 },
  { device: 0, stage: 0, mb: 0, kind: "B", start: 6, dur: 2, dep: 5, waited: true },
  { device: 1, stage: 1, mb: 0, kind: "F", start: 3, dur: 1, dep: 0, waited: true },
  { device: 1, stage: 1, mb: 1, kind: "F", start: 5, dur: 0.5, dep: 1, waited: false },
  { device: 1, stage: 1, mb: 0, kind: "B", start: 5.5, dur: 0.25, dep: 3, waited: false },
];
const TRANSFERS: TransferSpec[] = [
  { src: 0, dst: 1, kind: "F", ready: 1, start: 1, end: 3, producer: 0, consumer: 3 },
  { src: 0, dst: 1, kind: "F", ready: 2, start: 3, end: 4.5, producer: 1, consumer: 4 },
  { src: 1, dst: 0, kind: "B", ready: 5.75, start: 5.75, end: 6, producer: 5, consumer: 2 },
];
const MAKESPAN = 8;
const COMM: Communication = {
  count: 3, bytes: 64 * 1024 * 1024, volume: 3 * 64 * 1024 * 1024, p2p: "overlapped", topology: "test",
  devices_per_node: 1, intra: "latency 0.1 ms, 450 GB/s", inter: "latency 0.5 ms, 50 GB/s",
  exposed_comm: [0.25, 2], idle_compute: [3.75, 4.25],
};

/** "#rrggbb" as the DOM reads back a style colour. */
function rgb(hex: string): string {
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  return `rgb(${r}, ${g}, ${b})`;
}

function timeline(transfers = TRANSFERS) {
  return decodeTimeline(encodeTimeline(2, OPS, transfers));
}

function meta(extra = {}) {
  return metaFor(2, OPS, MAKESPAN, { time_unit: "ms", communication: COMM, ...extra });
}

describe("decoding transfers", () => {
  it("groups them by sender and receiver and finds each op's incoming transfer", () => {
    const tl = timeline();
    const tr = tl.transfers;
    expect(tr.count).toBe(3);
    expect(Array.from(tr.outIndex.subarray(tr.outOffsets[0], tr.outOffsets[1]))).toEqual([0, 1]);
    expect(Array.from(tr.outIndex.subarray(tr.outOffsets[1], tr.outOffsets[2]))).toEqual([2]);
    expect(Array.from(tr.inIndex.subarray(tr.inOffsets[0], tr.inOffsets[1]))).toEqual([2]);
    expect(Array.from(tr.inIndex.subarray(tr.inOffsets[1], tr.inOffsets[2]))).toEqual([0, 1]);
    expect(Array.from(tr.intoOp)).toEqual([-1, -1, 2, 0, 1, -1]);
    // op 3 waited for its input; op 4's input arrived late but op 4 did not wait for it (flag unset)
    expect(waitedTransfer(tl, 3)).toBe(0);
    expect(waitedTransfer(tl, 4)).toBe(-1);
    expect(tr.maxDur).toBe(2);
  });

  it("reads a timeline without transfers as an empty section, with no per-op maps to fill", () => {
    const tl = timeline([]);
    expect(tl.transfers.count).toBe(0);
    // the maps are read through their accessors, which answer -1 for every op
    expect(tl.transfers.intoOp.length + tl.transfers.reloadOf.length + tl.transfers.outOfOp.length).toBe(0);
    for (let k = 0; k < tl.n; k++) {
      expect([inputTransfer(tl, k), reloadOf(tl, k), offloadOf(tl, k)]).toEqual([-1, -1, -1]);
    }
  });

  it("refuses a transfer naming a device the timeline does not have", () => {
    const bad = [{ ...TRANSFERS[0], dst: 5 }];
    expect(() => decodeTimeline(encodeTimeline(2, OPS, bad))).toThrow(/transfer 0 names a device or op/);
  });
});

describe("the lanes' layout", () => {
  it("puts a lane of two halves under each row, without overlapping the next row", () => {
    for (const p of [2, 8, 16, 64]) {
      const plain = computeLayout(1000, p, true);
      const L = computeLayout(1000, p, true, false, undefined, 2);
      expect(plain.laneHeight).toBe(0);
      expect(L.laneHeight).toBe(transferLaneHeight(L.rowHeight));
      expect(L.rowHeight).toBe(plain.rowHeight);
      for (let d = 0; d < p; d++) {
        expect(L.laneTop[d]).toBe(L.rowTop[d] + L.rowHeight);
        if (d + 1 < p) expect(L.laneTop[d] + L.laneHeight).toBeLessThanOrEqual(L.rowTop[d + 1]);
        const [outTop, outH] = halfLane(L, d, "out");
        const [inTop, inH] = halfLane(L, d, "in");
        expect(outH).toBeGreaterThanOrEqual(1.5);
        expect(inH).toBe(outH);
        expect(outTop + outH).toBeLessThanOrEqual(inTop);
        // rows past the viewport are found with the rows scrolled to them
        const scroll = Math.min(L.scrollMax, Math.max(0, L.rowTop[d] - L.ganttTop));
        expect(laneAt(L, L.laneTop[d] + 1 - scroll, scroll)).toEqual({ area: "transfer", device: d });
        expect(laneAt(L, L.rowTop[d] + 1 - scroll, scroll)).toEqual({ area: "gantt", device: d });
      }
      expect(L.ganttBottom + L.scrollMax).toBe(L.laneTop[p - 1] + L.laneHeight);
    }
    expect(computeLayout(1000, 8, true, false, undefined, 2).laneHeight).toBe(10);
    // rows keep their height at any p (they scroll), and so does the lane under each
    expect(computeLayout(1000, 64, true, false, undefined, 2).laneHeight).toBe(10);
  });
});

describe("hitting a transfer", () => {
  const tl = timeline();
  const L = computeLayout(900, 2, true, false, undefined, 2);
  const scale = new Scale(fullView(MAKESPAN), L.plotLeft, L.plotRight);
  const at = (d: number, half: "out" | "in", t: number) => {
    const [y, h] = halfLane(L, d, half);
    return hitTransfer(tl, L, scale, scale.x(t), y + h / 2);
  };

  it("finds the transfer under the pointer in the sender's and the receiver's half", () => {
    expect(at(0, "out", 2)).toBe(0);
    expect(at(1, "in", 2)).toBe(0);
    expect(at(0, "out", 4)).toBe(1);
    expect(at(1, "in", 4)).toBe(1);
    expect(at(1, "out", 5.9)).toBe(2);
    expect(at(0, "in", 5.9)).toBe(2);
    // the wrong half, an empty stretch, the bar row
    expect(at(0, "in", 2)).toBe(-1);
    expect(at(0, "out", 7)).toBe(-1);
    expect(hitTransfer(tl, L, scale, scale.x(2), L.rowTop[0] + 5)).toBe(-1);
  });

  it("a transfer thinner than a pixel is found within the tolerance", () => {
    const wide = new Scale({ t0: 0, t1: 1e4 }, L.plotLeft, L.plotRight);
    const [y, h] = halfLane(L, 1, "out");
    expect(hitTransfer(tl, L, wide, wide.x(5.75) + 2, y + h / 2)).toBe(2);
    expect(hitTransfer(tl, L, wide, wide.x(5.75) + 30, y + h / 2)).toBe(-1);
  });
});

describe("the tooltips", () => {
  const tl = timeline();
  const rows = (c: { rows: [string, string][] }) => Object.fromEntries(c.rows);

  it("describe a transfer: link, bytes, times, queueing and the ops it joins", () => {
    const c = describeTransfer(tl, meta(), 1);
    expect(c.title).toBe("activation transfer · 0F1 → 1F1");
    const r = rows(c);
    expect(r["from → to"]).toBe("device 0 → device 1");
    expect(r.link).toBe("inter-node (node 0 → 1) · latency 0.5 ms, 50 GB/s");
    expect(r.bytes).toBe("64 MiB");
    expect([r.ready, r.start, r.end, r.duration]).toEqual(["2 ms", "3 ms", "4.5 ms", "1.5 ms"]);
    expect(r.queued).toBe("1 ms for a busy link");
    expect(r["sent by"]).toBe("0F1 on device 0, done at 2 ms");
    expect(r["needed by"]).toBe("1F1 on device 1, started 5 ms");
    const first = rows(describeTransfer(tl, meta(), 0));
    expect(first.queued).toBe("0 ms");
    expect(first["needed by"]).toBe("1F0 on device 1, started 3 ms (waited for it)");
    expect(rows(describeTransfer(tl, meta(), 2)).kind).toBe("gradient (to the previous stage)");
  });

  it("name the link within a node, or the single link", () => {
    const two = { ...COMM, devices_per_node: 2 };
    expect(linkText(meta({ communication: two }), 0, 1)).toBe("intra-node (node 0) · latency 0.1 ms, 450 GB/s");
    const single = { ...COMM, devices_per_node: null, inter: null };
    expect(linkText(meta({ communication: single }), 0, 1)).toBe("one link between every pair · latency 0.1 ms, 450 GB/s");
  });

  it("show an op the transfer it waited for, and one that arrived early", () => {
    const waited = rows(describeOp(tl, meta(), 3));
    expect(waited["waited for"]).toBe("0F0 on device 0, done at 1 ms, then its transfer until 3 ms");
    expect(waited["input transfer"]).toBe("device 0 → 1, inter-node, 64 MiB, 1–3 ms, queued 0 ms · it waited for this transfer");
    const early = rows(describeOp(tl, meta(), 4));
    expect(early["input transfer"]).toBe("device 0 → 1, inter-node, 64 MiB, 3–4.5 ms, queued 1 ms · arrived 0.5 ms before it started");
    expect(inputTransferRows(tl, meta(), 0)).toEqual([]);
    expect(rows(describeOp(tl, meta(), 0))["input transfer"]).toBeUndefined();
  });
});

describe("drawing the lanes", () => {
  let canvas: HTMLCanvasElement;
  let ctx: CanvasRenderingContext2D;
  beforeEach(() => {
    canvas = document.createElement("canvas");
    document.body.append(canvas);
    ctx = canvas.getContext("2d", { willReadFrequently: true })!;
  });
  afterEach(() => canvas.remove());

  function scene(tl = timeline(), lanes = true, extra: Partial<Scene> = {}): Scene {
    const bands = lanes ? (tl.transfers.links && tl.transfers.host ? 4 : 2) : 0;
    const layout = computeLayout(900, tl.devices, true, false, undefined, bands);
    canvas.width = layout.width;
    canvas.height = layout.height;
    const mem = decodeMemory(encodeMemory(Array.from({ length: tl.devices }, () => [[0, 0], [1, 2], [MAKESPAN, 0]])));
    return {
      tl, mem, meta: meta(), layout, scale: new Scale(fullView(MAKESPAN), layout.plotLeft, layout.plotRight),
      palette: LIGHT, dpr: 1, hatch: makeHatch(ctx, LIGHT, 1), selectedMb: -1, selectedOp: -1, selectedDevice: -1,
      hover: -1, memoryHover: null, cursor: null, extent: MAKESPAN, cache: new DrawCache(), ...extra,
    };
  }
  const pixel = (x: number, y: number) => Array.from(ctx.getImageData(Math.round(x), Math.round(y), 1, 1).data.slice(0, 3));
  const hex = (c: string) => [1, 3, 5].map((i) => parseInt(c.slice(i, i + 2), 16));
  const mid = (s: Scene, d: number, half: "out" | "in", t: number): [number, number] => {
    const [y, h] = halfLane(s.layout, d, half);
    return [s.scale.x(t), y + h / 2];
  };

  it("paints each transfer in its kind's colour in the sender's top half and the receiver's bottom half", () => {
    const s = scene();
    draw(ctx, s);
    expect(pixel(...mid(s, 0, "out", 2))).toEqual(hex(LIGHT.transferF));
    expect(pixel(...mid(s, 1, "in", 2))).toEqual(hex(LIGHT.transferF));
    expect(pixel(...mid(s, 1, "out", 5.9))).toEqual(hex(LIGHT.transferB));
    expect(pixel(...mid(s, 0, "in", 5.9))).toEqual(hex(LIGHT.transferB));
    // an empty stretch of a lane is its rail: neither a transfer colour nor an op colour
    const rail = pixel(...mid(s, 0, "out", 7));
    expect(rail).not.toEqual(hex(LIGHT.transferF));
    expect(rail).not.toEqual(hex(LIGHT.transferB));
    expect(rail).not.toEqual(hex(LIGHT.background));
    // the rows' bars are where they were: the lane adds height, it takes none from the bars
    const plain = computeLayout(900, 2, true);
    expect(s.layout.rowHeight - 2 * s.layout.barInset).toBe(plain.rowHeight - 2 * plain.barInset);
  });

  it("the dark theme's transfer colours differ from its op colours", () => {
    for (const P of [LIGHT, DARK]) {
      for (const c of [P.transferF, P.transferB]) expect(P.kinds).not.toContain(c);
      expect(P.transferF).not.toBe(P.transferB);
    }
  });

  it("merges transfers narrower than a pixel: a dense run still shows, and drawing follows pixels", () => {
    // 20,000 back-to-back transfers of 1e-4 on device 0's link, over 2 time units: 10,000 per unit
    const ops: OpSpec[] = [
      { device: 0, stage: 0, mb: 0, kind: "F", start: 0, dur: 1 },
      { device: 1, stage: 1, mb: 0, kind: "F", start: 7, dur: 1, dep: 0, waited: true },
    ];
    const many: TransferSpec[] = Array.from({ length: 20000 }, (_, i) => ({
      src: 0, dst: 1, kind: "F" as const, ready: 1 + i * 1e-4, start: 1 + i * 1e-4, end: 1 + (i + 1) * 1e-4,
      producer: 0, consumer: 1,
    }));
    const tl = decodeTimeline(encodeTimeline(2, ops, many));
    const s = scene(tl);
    const t0 = performance.now();
    draw(ctx, s);
    expect(performance.now() - t0).toBeLessThan(500);
    // every pixel column of [1, 3] is fully covered: it shows the activation colour
    for (const t of [1.1, 1.5, 2, 2.5, 2.9]) expect(pixel(...mid(s, 0, "out", t))).toEqual(hex(LIGHT.transferF));
    expect(pixel(...mid(s, 0, "out", 4))).not.toEqual(hex(LIGHT.transferF));
  });

  it("outlines a selected microbatch's transfers and routes its arrows through them", () => {
    const plain = scene();
    draw(ctx, plain);
    const box = transferBox(plain, 0, "out");
    const edge: [number, number] = [box.x - 1, box.y + box.h / 2];
    const before = pixel(...edge);
    const s = scene(timeline(), true, { selectedMb: 0 });
    draw(ctx, s);
    // the outline of transfer 0 (microbatch 0) left of it: (anti-aliased) towards the path colour
    const path = hex(LIGHT.path);
    const far = (c: number[]) => Math.max(...c.map((v, i) => Math.abs(v - path[i])));
    expect(far(pixel(...edge))).toBeLessThan(far(before) - 60);
    // transfer 1 (microbatch 1) is dimmed: no longer the full activation colour
    expect(pixel(...mid(s, 0, "out", 4))).not.toEqual(hex(LIGHT.transferF));
  });
});

describe("the view's transfer switch", () => {
  let host: HTMLDivElement;
  beforeEach(() => {
    host = document.createElement("div");
    host.style.width = "900px";
    document.body.append(host);
  });
  afterEach(() => host.remove());

  function model(transfers: TransferSpec[]) {
    const memory = encodeMemory([[[0, 0], [MAKESPAN, 0]], [[0, 0], [MAKESPAN, 0]]]);
    return new FakeModel({
      _timeline: new DataView(encodeTimeline(2, OPS, transfers).buffer),
      _memory: new DataView(memory.buffer),
      _meta: meta(transfers.length ? {} : { communication: null }),
    });
  }

  it("shows the lanes by default, hides them from the legend's checkbox, per view", async () => {
    const a = new GanttView(host, model(TRANSFERS) as never);
    const b = new GanttView(host, model(TRANSFERS) as never);
    await nextFrame();
    const hooks = (a.root as unknown as { ppviz: DebugHooks }).ppviz;
    expect(a.root.dataset.transfers).toBe("shown");
    expect(hooks.transferBox(0, "out")).not.toBeNull();
    const tall = a.canvas.height;
    const box = a.root.querySelector<HTMLInputElement>(".ppviz-transfer-toggle input")!;
    expect(box.checked).toBe(true);
    expect(a.root.querySelector(".ppviz-legend")!.textContent).toContain("activation");
    box.click();
    await nextFrame();
    expect(a.root.dataset.transfers).toBe("hidden");
    expect(a.canvas.height).toBeLessThan(tall);
    expect(hooks.transferBox(0, "out")).toBeNull();
    expect(a.root.querySelector<HTMLInputElement>(".ppviz-transfer-toggle input")!.checked).toBe(false);
    // the other view keeps its own
    expect(b.root.dataset.transfers).toBe("shown");
    a.destroy();
    b.destroy();
  });

  it("names offload's host copies in the legend, with the colour of their own", async () => {
    const memory = encodeMemory([[[0, 0], [7, 0]]]);
    const v = new GanttView(host, new FakeModel({
      _timeline: new DataView(encodeTimeline(1, HOST_OPS, HOST_COPIES).buffer),
      _memory: new DataView(memory.buffer),
      _meta: metaFor(1, HOST_OPS, 7, { offload: { share: 1, link: "latency 0, 1 bytes per time unit", count: 2 } }),
    }) as never);
    await nextFrame();
    expect(v.root.dataset.transfers).toBe("shown");
    const legend = v.root.querySelector(".ppviz-legend")!.textContent!;
    expect(legend).toContain("host copies (under each row: offloads, then reloads)");
    expect(legend).toContain("host copy");
    expect(legend).not.toContain("activation");
    expect(legend).not.toContain("gradient");
    const swatches = [...v.root.querySelectorAll<HTMLElement>(".ppviz-legend-transfer .ppviz-swatch")];
    expect(swatches.map((s) => s.style.background)).toEqual([rgb(LIGHT.hostCopy)]);
    v.destroy();
  });

  it("names transfers and host copies together when a run has both", async () => {
    const v = new GanttView(host, new FakeModel({
      _timeline: new DataView(encodeTimeline(2, OPS, [...TRANSFERS, ...MIXED_COPIES]).buffer),
      _memory: new DataView(encodeMemory([[[0, 0], [8, 0]], [[0, 0], [8, 0]]]).buffer),
      _meta: meta({ offload: { share: 1, link: "latency 0 ms, 64 GB/s", count: 2 } }),
    }) as never);
    await nextFrame();
    const legend = v.root.querySelector(".ppviz-legend")!.textContent!;
    expect(legend).toContain("transfers + host copies (under each row: sends and offloads, then receives and reloads)");
    const swatches = [...v.root.querySelectorAll<HTMLElement>(".ppviz-legend-transfer .ppviz-swatch")];
    expect(swatches.map((s) => s.style.background)).toEqual(
      [LIGHT.transferF, LIGHT.transferB, LIGHT.hostCopy].map(rgb));
    v.destroy();
  });

  it("offers no switch and no exposed-communication card without transfers", async () => {
    const v = new GanttView(host, model([]) as never);
    await nextFrame();
    expect(v.root.dataset.transfers).toBe("none");
    expect(v.root.querySelector(".ppviz-transfer-toggle")).toBeNull();
    expect(v.root.querySelector(".ppviz-header")!.textContent).not.toContain("exposed comm");
    v.destroy();
    const w = new GanttView(host, model(TRANSFERS) as never);
    await nextFrame();
    const header = w.root.querySelector(".ppviz-header")!.textContent!;
    // the most exposed device waits 2 ms; all devices' 2.25 ms of 2 × 8 is 14.1 %
    expect(header).toContain("exposed comm2 msmax per device · 14.1 % of all");
    w.destroy();
  });
});

// One device offloading: F0's activation goes to the host and comes back for B0 (the reload
// queues behind the offload); F1's backward comes next, so F1 offloads nothing.
const HOST_OPS: OpSpec[] = [
  { device: 0, stage: 0, mb: 0, kind: "F", start: 0, dur: 1 },
  { device: 0, stage: 0, mb: 1, kind: "F", start: 1, dur: 1 },
  { device: 0, stage: 0, mb: 1, kind: "B", start: 2, dur: 2 },
  { device: 0, stage: 0, mb: 0, kind: "B", start: 5, dur: 2 },
];
const HOST_COPIES: TransferSpec[] = [
  { src: 0, dst: 0, kind: "offload", ready: 1, start: 1, end: 3, producer: 0, consumer: 0 },
  { src: 0, dst: 0, kind: "reload", ready: 2, start: 3, end: 5, producer: 3, consumer: 3 },
];

// With transfers: device 0 offloads F0's activation after it and reloads it for B0, which also
// waits for its gradient from device 1.
const MIXED_COPIES: TransferSpec[] = [
  { src: 0, dst: 0, kind: "offload", ready: 1, start: 1, end: 2, producer: 0, consumer: 0 },
  { src: 0, dst: 0, kind: "reload", ready: 1, start: 4, end: 5.5, producer: 2, consumer: 2 },
];

describe("offload's host copies in the lanes", () => {
  const tl = decodeTimeline(encodeTimeline(1, HOST_OPS, HOST_COPIES));
  const hostMeta = metaFor(1, HOST_OPS, 7, { time_unit: "ms", offload: { share: 0.5, link: "latency 0 ms, 25 GB/s",
    count: 2 } });
  const rows = (c: { rows: [string, string][] }) => Object.fromEntries(c.rows);

  it("decode as host copies: an offload leaves its F, a reload arrives for its backward", () => {
    const tr = tl.transfers;
    expect([tr.host, tr.links]).toEqual([true, false]);
    expect(Array.from(tr.outOfOp)).toEqual([0, -1, -1, -1]);
    expect(Array.from(tr.reloadOf)).toEqual([-1, -1, -1, 1]);
    expect(Array.from(tr.intoOp)).toEqual([-1, -1, -1, -1]);
    expect(Array.from(tr.outIndex.subarray(tr.outOffsets[0], tr.outOffsets[1]))).toEqual([0]);
    expect(Array.from(tr.inIndex.subarray(tr.inOffsets[0], tr.inOffsets[1]))).toEqual([1]);
    // a reload is not a transfer between devices: the backward's input came from no other device
    expect(inputTransfer(tl, 3)).toBe(-1);
    expect(inputTransfer(timeline(), 3)).toBe(0);
    // the host copies follow every transfer in the section
    const late = [HOST_COPIES[0], { ...TRANSFERS[0], src: 0, dst: 0, producer: 0, consumer: 3 }];
    expect(() => decodeTimeline(encodeTimeline(1, HOST_OPS, late))).toThrow(/transfer 1 follows a host copy/);
  });

  it("decode beside transfers: a backward has both its gradient's transfer and its reload", () => {
    const both = decodeTimeline(encodeTimeline(2, OPS, [...TRANSFERS, ...MIXED_COPIES]));
    const tr = both.transfers;
    expect([tr.host, tr.links, tr.count]).toEqual([true, true, 5]);
    expect(Array.from(tr.intoOp)).toEqual([-1, -1, 2, 0, 1, -1]);
    expect(Array.from(tr.reloadOf)).toEqual([-1, -1, 4, -1, -1, -1]);
    expect(Array.from(tr.outOfOp)).toEqual([3, -1, -1, -1, -1, -1]);
    // device 0 sends two activations and offloads one (top half); it receives a gradient and a reload
    expect(Array.from(tr.outIndex.subarray(tr.outOffsets[0], tr.outOffsets[1]))).toEqual([0, 1, 3]);
    expect(Array.from(tr.inIndex.subarray(tr.inOffsets[0], tr.inOffsets[1]))).toEqual([2, 4]);
    const tip = Object.fromEntries(describeOp(both, meta({ offload: { share: 1, link: "latency 0 ms, 64 GB/s",
      count: 2 } }), 2).rows);
    expect(tip.reload).toBe("host → device 0, 4–5.5 ms, queued 3 ms · back 0.5 ms before it started");
    expect(tip["input transfer"]).toMatch(/^device 1 → 0, /);
  });

  it("are hit in their own half only", () => {
    const L = computeLayout(900, 1, true, false, undefined, 2);
    const scale = new Scale(fullView(7), L.plotLeft, L.plotRight);
    const at = (half: "out" | "in", t: number) => {
      const [y, h] = halfLane(L, 0, half);
      return hitTransfer(tl, L, scale, scale.x(t), y + h / 2);
    };
    expect([at("out", 2), at("in", 4), at("in", 2), at("out", 4)]).toEqual([0, 1, -1, -1]);
    expect(halvesOf(tl.transfers, 0)).toEqual(["out"]);
    expect(halvesOf(tl.transfers, 1)).toEqual(["in"]);
    expect(halvesOf(timeline().transfers, 0)).toEqual(["out", "in"]);
  });

  it("say what they copy, over which link, and the op they serve", () => {
    const off = describeTransfer(tl, hostMeta, 0);
    expect(off.title).toBe("offload to host · after 0F0");
    expect(rows(off)).toMatchObject({
      kind: "50 % of the activation to host memory (offload)", "from → to": "device 0 → host",
      "host link": "latency 0 ms, 25 GB/s", start: "1 ms", end: "3 ms", queued: "0 ms", after: "0F0, done at 1 ms",
    });
    const back = describeTransfer(tl, hostMeta, 1);
    expect(back.title).toBe("reload from host · for 0B0");
    expect(rows(back)).toMatchObject({
      kind: "50 % of the activation back from host memory (reload)", to: "host → device 0",
      queued: "1 ms for a busy link or its offload", for: "0B0, started 5 ms",
    });
    // the ops' own tooltips name their copies
    expect(rows(describeOp(tl, hostMeta, 0)).offload).toBe("device 0 → host, 1–3 ms, queued 0 ms");
    expect(rows(describeOp(tl, hostMeta, 3)).reload).toBe("host → device 0, 3–5 ms, queued 1 ms · back just as it started");
    expect(rows(describeOp(tl, hostMeta, 1)).offload).toBeUndefined();
  });

  it("paint the offload in the top half and the reload in the bottom half, each alone", () => {
    const canvas = document.createElement("canvas");
    document.body.append(canvas);
    const ctx = canvas.getContext("2d", { willReadFrequently: true })!;
    const layout = computeLayout(900, 1, true, false, undefined, 2);
    canvas.width = layout.width;
    canvas.height = layout.height;
    const mem = decodeMemory(encodeMemory([[[0, 0], [1, 1], [7, 0]]]));
    const s: Scene = {
      tl, mem, meta: hostMeta, layout, scale: new Scale(fullView(7), layout.plotLeft, layout.plotRight),
      palette: LIGHT, dpr: 1, hatch: makeHatch(ctx, LIGHT, 1), selectedMb: -1, selectedOp: -1, selectedDevice: -1,
      hover: -1, memoryHover: null, cursor: null, extent: 7, cache: new DrawCache(),
    };
    draw(ctx, s);
    const colour = (half: "out" | "in", t: number) => {
      const [y, h] = halfLane(layout, 0, half);
      return Array.from(ctx.getImageData(Math.round(s.scale.x(t)), Math.round(y + h / 2), 1, 1).data.slice(0, 3));
    };
    const copy = [1, 3, 5].map((i) => parseInt(LIGHT.hostCopy.slice(i, i + 2), 16));
    expect(colour("out", 2)).toEqual(copy);
    expect(colour("in", 2)).not.toEqual(copy);  // an offload does not come back at once
    expect(colour("in", 4)).toEqual(copy);
    expect(colour("out", 4)).not.toEqual(copy);
    canvas.remove();
  });

  it("beside transfers, keep a band of their own: a send and an offload at once both show and are both hit", () => {
    const both = decodeTimeline(encodeTimeline(2, OPS, [...TRANSFERS, ...MIXED_COPIES]));
    const layout = computeLayout(900, 2, true, false, undefined, 4);
    expect(layout.laneHeight).toBe(transferLaneHeight(layout.rowHeight, 4));
    expect(layout.laneHeight).toBeGreaterThan(transferLaneHeight(layout.rowHeight));
    // per half: the transfers' band on the outside, the host copies' inside, one after the other
    for (let d = 0; d < 2; d++) {
      const [outTop, outH] = halfLane(layout, d, "out");
      const [inTop, inH] = halfLane(layout, d, "in");
      expect(laneBand(layout, d, "out", false)).toEqual([outTop, outH / 2]);
      expect(laneBand(layout, d, "out", true)).toEqual([outTop + outH / 2, outH / 2]);
      expect(laneBand(layout, d, "in", true)).toEqual([inTop, inH / 2]);
      expect(laneBand(layout, d, "in", false)).toEqual([inTop + inH / 2, inH / 2]);
      expect(outH / 2).toBeGreaterThanOrEqual(3);
    }
    // two bands: either kind fills its half
    const halves = computeLayout(900, 2, true, false, undefined, 2);
    expect(laneBand(halves, 0, "out", true)).toEqual(halfLane(halves, 0, "out"));

    const scale = new Scale(fullView(MAKESPAN), layout.plotLeft, layout.plotRight);
    const middle = (half: "out" | "in", host: boolean) => {
      const [y, h] = laneBand(layout, 0, half, host);
      return y + h / 2;
    };
    // at t = 1.5 device 0 sends activation 0 (transfer 0) and offloads it (3); at 5 it reloads (4)
    expect(hitTransfer(both, layout, scale, scale.x(1.5), middle("out", false))).toBe(0);
    expect(hitTransfer(both, layout, scale, scale.x(1.5), middle("out", true))).toBe(3);
    expect(hitTransfer(both, layout, scale, scale.x(5), middle("in", true))).toBe(4);
    expect(hitTransfer(both, layout, scale, scale.x(5), middle("in", false))).toBe(-1);
    const box = (i: number, half: "out" | "in") => {
      const b = transferBox({ tl: both, layout, scale }, i, half);
      return [b.y, b.h];
    };
    expect(box(0, "out")).toEqual(laneBand(layout, 0, "out", false));
    expect(box(3, "out")).toEqual(laneBand(layout, 0, "out", true));

    const canvas = document.createElement("canvas");
    document.body.append(canvas);
    const ctx = canvas.getContext("2d", { willReadFrequently: true })!;
    canvas.width = layout.width;
    canvas.height = layout.height;
    const mem = decodeMemory(encodeMemory([[[0, 0], [1, 1], [MAKESPAN, 0]], [[0, 0], [MAKESPAN, 0]]]));
    const s: Scene = {
      tl: both, mem, meta: metaFor(2, OPS, MAKESPAN, { time_unit: "ms", offload: { share: 1, link: "latency 0 ms, 64 GB/s",
        count: 2 } }), layout, scale, palette: LIGHT, dpr: 1, hatch: makeHatch(ctx, LIGHT, 1), selectedMb: -1,
      selectedOp: -1, selectedDevice: -1, hover: -1, memoryHover: null, cursor: null, extent: MAKESPAN,
      cache: new DrawCache(),
    };
    draw(ctx, s);
    const rgb = (hex: string) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
    const colour = (half: "out" | "in", host: boolean, t: number) =>
      Array.from(ctx.getImageData(Math.round(scale.x(t)), Math.floor(middle(half, host)), 1, 1).data.slice(0, 3));
    expect(colour("out", false, 1.5)).toEqual(rgb(LIGHT.transferF));
    expect(colour("out", true, 1.5)).toEqual(rgb(LIGHT.hostCopy));
    expect(colour("in", true, 5)).toEqual(rgb(LIGHT.hostCopy));
    expect(colour("in", false, 5)).not.toEqual(rgb(LIGHT.hostCopy));
    canvas.remove();
  });
});
