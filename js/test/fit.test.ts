// Memory in real units, the out-of-memory state, segmented and forward-only programs: what the
// lanes, the gutter, the header and the legend say. The numbers are Python's describe() of
// Llama 3 70B on 8 H100s (TP 8, DP 4, ZeRO-1, m = 32): GPipe does not fit, 1F1B does.
import { describe, expect, it } from "vitest";
import { decodeMemory, decodeTimeline } from "../src/data";
import { labelOf } from "../src/draw";
import { capacityOf, excessText, fitBadge, formatMemory, laneBase, lanePeak, memoryUnit, overDevices } from "../src/fit";
import { fillHeader, fillLegend, sizesText } from "../src/header";
import { TWO_LINE_LANE, memoryLabel, memoryLine } from "../src/labels";
import { labelBox, memoryTop } from "../src/memory";
import type { Meta } from "../src/meta";
import { microbatchLabel } from "../src/meta";
import { LIGHT } from "../src/theme";
import { PRECISE, number, share } from "../src/format";
import { describeMemory, describeOp } from "../src/tooltip";
import { type OpSpec, encodeMemory, encodeTimeline, fillDrain, metaFor } from "./fixtures";

const GIB = 2 ** 30;
const BYTES = 2880045056; // activation_bytes: one activation unit
const CAPACITY = (80 * GIB) / BYTES; // 29.8257 units: the H100's 80 GiB

/** GPipe's describe(): every device over 80 GiB, device 7 by 28.2 GiB. */
function gpipe70b(): Meta {
  const { ops, makespan } = fillDrain(8, 4);
  return metaFor(8, ops, makespan, {
    activation_bytes: BYTES,
    memory_capacity: CAPACITY,
    fits: new Array(8).fill(false),
    excess: [4.316893175715634, ...new Array(6).fill(3.9976832362444625), 10.526698604537387],
    peak_memory: [34.142588347062286, ...new Array(6).fill(33.823378407591115), 40.35239377588404],
    static_memory: [2.9188137145587767, ...new Array(6).fill(2.5996037750876075), 2.918816203408729],
    peak_activation: [...new Array(7).fill(31.223774632503506), 37.43357757247531],
    time_unit: "ms",
  });
}

/** 1F1B's: every device fits, the highest peak 28.8 GiB on device 0. */
function oneFOneB70b(): Meta {
  const { ops, makespan } = fillDrain(8, 4);
  const peaks = [10.72475737268466, 9.429804475947755, 8.45406151868202, 7.478318561416284, 6.5025756041505485,
    5.526832646884813, 4.551089689619078, 4.088615502548582];
  const statics = [2.9188137145587767, ...new Array(6).fill(2.5996037750876075), 2.918816203408729];
  return metaFor(8, ops, makespan, {
    activation_bytes: BYTES,
    memory_capacity: CAPACITY,
    fits: new Array(8).fill(true),
    excess: new Array(8).fill(0),
    peak_memory: peaks,
    static_memory: statics,
    peak_activation: peaks.map((p, d) => p - statics[d]),
    time_unit: "ms",
  });
}

describe("memory in real units", () => {
  it("shows GiB (activation units × activation_bytes) and nothing but units without bytes", () => {
    const meta = gpipe70b();
    const u = memoryUnit(meta);
    expect(u.label).toBe("GiB");
    expect(u.factor).toBeCloseTo(BYTES / GIB, 12);
    expect(formatMemory(CAPACITY, u)).toBe("80 GiB");
    expect(formatMemory(meta.peak_memory[7], u)).toBe("108 GiB");
    const plain = metaFor(4, fillDrain(4, 4).ops, 10);
    expect(memoryUnit(plain)).toEqual({ factor: 1, label: "" });
    expect(formatMemory(2.5, memoryUnit(plain))).toBe("2.5");
  });

  it("stacks the activations on the static memory when there is a capacity to compare them with", () => {
    const meta = gpipe70b();
    expect(capacityOf(meta)).toBeCloseTo(29.8257, 4);
    expect(laneBase(meta, 7)).toBe(meta.static_memory[7]);
    expect(lanePeak(meta, 7)).toBe(meta.peak_memory[7]);
    const plain = metaFor(4, fillDrain(4, 4).ops, 10, { static_memory: [1, 1, 1, 1], peak_memory: [3, 3, 3, 3] });
    expect(laneBase(plain, 0)).toBe(0);
    expect(lanePeak(plain, 0)).toBe(2);
  });

  it("scales the lanes to show the capacity line even when every device is far below it", () => {
    const meta = oneFOneB70b();
    const mem = decodeMemory(encodeMemory(meta.peak_activation.map((p) => [[0, 0], [1, p], [5, 0]] as [number, number][])));
    // 1F1B peaks at 28.8 GiB: the scale reaches 10 % above the 80 GiB capacity
    expect(memoryTop(mem, meta)).toBeCloseTo(CAPACITY * 1.1, 9);
    // GPipe peaks above it: 10 % above its highest peak, activations on the static memory
    const over = gpipe70b();
    const mem2 = decodeMemory(encodeMemory(over.peak_activation.map((p) => [[0, 0], [1, p], [5, 0]] as [number, number][])));
    expect(memoryTop(mem2, over)).toBeCloseTo((over.static_memory[7] + over.peak_activation[7]) * 1.1, 5);
    // a heat strip's colour scale ends at the highest peak itself: the peak gets the hottest colour
    expect(memoryTop(mem2, over, true)).toBeCloseTo(over.static_memory[7] + over.peak_activation[7], 5);
  });

  it("names the worst device and its excess in the badge, and every device over in its detail", () => {
    const badge = fitBadge(gpipe70b())!;
    expect(badge.fits).toBe(false);
    expect(badge.text).toBe("does not fit: device 7 over by 28.2 GiB");
    expect(badge.detail).toContain("8 of 8 devices peak above the capacity of 80 GiB");
    expect(badge.detail).toContain("device 0 +11.6 GiB");
    expect(badge.detail).toContain("device 7 +28.2 GiB");
    const fits = fitBadge(oneFOneB70b())!;
    expect(fits.fits).toBe(true);
    expect(fits.text).toBe("fits in 80 GiB");
    expect(fits.detail).toContain("28.8 GiB on device 0");
    expect(fitBadge(metaFor(4, fillDrain(4, 4).ops, 10))).toBeNull();
  });

  it("gives a device over its capacity its excess in the gutter: a second line, or instead of the peak", () => {
    const meta = gpipe70b();
    expect(overDevices(meta)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(excessText(meta, 7)).toBe("+28.2 GiB over");
    expect(memoryLine(meta, 7, true, null)).toBe("device 7  peak 108 GiB");
    expect(memoryLabel(meta, 7, true, null, TWO_LINE_LANE)).toEqual({ first: "device 7  peak 108 GiB", second: "+28.2 GiB over" });
    expect(memoryLabel(meta, 7, false, null, TWO_LINE_LANE - 1)).toEqual({ first: "7  +28.2 GiB over", second: null });
    // during a replay: the memory then, with the static part, of the peak
    expect(memoryLine(meta, 7, true, 20)).toBe(`device 7  ${formatMemory(20 + meta.static_memory[7], memoryUnit(meta))} of 108 GiB`);
    const fits = oneFOneB70b();
    expect(memoryLabel(fits, 0, true, null, 27)).toEqual({ first: "device 0  peak 28.8 GiB", second: null });
  });

  it("says the memory, its static part, the capacity and the excess under the pointer", () => {
    const meta = gpipe70b();
    const mem = decodeMemory(encodeMemory(meta.peak_activation.map((p) => [[0, 0], [1, p], [5, 0]] as [number, number][])));
    const tip = describeMemory(mem, meta, 7, 2);
    const rows = Object.fromEntries(tip.rows);
    expect(tip.title).toBe("device 7 · memory");
    expect(rows.memory).toBe("108 GiB (activations 100 GiB + static 7.83 GiB)");
    expect(rows.capacity).toBe("80 GiB: does not fit, +28.2 GiB over");
    expect(rows.unit).toBeUndefined();
  });
});

describe("the label of a dashed line at a lane's end", () => {
  it("puts a label above its line, or below it where the lane's top leaves no room", () => {
    expect(labelBox(20, 0)).toEqual([10, 20]);
    expect(labelBox(3, 0)).toEqual([5, 15]);
  });

});

describe("segmented and forward-only programs", () => {
  const segmented = (): { meta: Meta; ops: OpSpec[] } => {
    const { ops, makespan } = fillDrain(4, 8);
    return { ops, meta: metaFor(4, ops, makespan, { segments: 2, whole_microbatches: 4, microbatches: 8 }) };
  };

  it("labels a segment's bar microbatch.segment and counts whole microbatches in the header", () => {
    expect(microbatchLabel(7, 2)).toBe("3.1");
    expect(microbatchLabel(6, 2)).toBe("3.0");
    expect(microbatchLabel(7, 1)).toBe("7");
    const { meta, ops } = segmented();
    const tl = decodeTimeline(encodeTimeline(4, ops));
    const k = ops.findIndex((o) => o.mb === 7 && o.kind === "F");
    expect(labelOf(tl, k, 2)).toBe("3.1");
    expect(labelOf(tl, k)).toBe("7");
    expect(sizesText(meta, false)).toBe(`p=4 · m=4 · k=2 segments (bars: microbatch.segment) · f=1 b=1 w=1 · ${ops.length} ops`);
    expect(sizesText(meta, true)).toBe(`p=4 · m=4 · k=2 segments · ${ops.length} ops`);
    // F&B pairs: their time beside f, b and w
    expect(sizesText({ ...meta, fb: 2.4 }, false)).toContain("f=1 b=1 w=1 fb=2.4 · ");
    const tip = Object.fromEntries(describeOp(tl, meta, k).rows);
    expect(tip.microbatch).toBe("3, segment 1 of 2 (3.1)");
  });

  it("shows no backward, no b or w, and latency and throughput instead of a training bubble", () => {
    const ops: OpSpec[] = [];
    for (let d = 0; d < 4; d++) for (let j = 0; j < 8; j++) ops.push({ device: d, stage: d, mb: j, kind: "F", start: d + j, dur: 1 });
    const meta = metaFor(4, ops, 11, {
      forward_only: true, time_to_first_output: 4, throughput: 1, bubble_fraction: 3 / 11, time_unit: "ms",
      closed_form: {
        makespan: 11, bubble_fraction: 3 / 11, bubble_rate: 0.375, peak_activation: [1, 1, 1, 1],
        bubble_formula: "(p−1)·f: the fill and drain of one batch", memory_formula: "1 on every rank",
        assumptions: "uniform stage costs, comm = 0", applies: true, source: "DeepSpeed", first_output: 4, throughput: 1,
      },
    });
    expect(sizesText(meta, false)).toBe("p=4 · m=8 · f=1 ms · 32 ops");
    const header = document.createElement("div");
    fillHeader(header, meta);
    const labels = [...header.querySelectorAll(".ppviz-metric-label")].map((e) => e.textContent);
    expect(labels).toEqual(["makespan", "first output", "throughput", "fill + drain", "peak memory"]);
    const cards = [...header.querySelectorAll<HTMLElement>(".ppviz-metric")];
    expect(cards[1].querySelector(".ppviz-metric-value")!.textContent).toBe("4 ms");
    expect(cards[2].querySelector(".ppviz-metric-value")!.textContent).toBe("1 per ms");
    expect(cards[3].title).toContain("the fill and drain of this one batch");
    expect(cards[3].title).toContain("a stream of batches through a full pipeline would not pay");
    // a closed form that does not hold says why: Python's sentence, else the assumptions alone
    const why = "the closed form assumes uniform stage costs, comm = 0, no offload; this config has offload = 0.5";
    const off = (caveat?: string) => ({ ...meta, closed_form: { ...meta.closed_form!, applies: false, caveat } });
    fillHeader(header, off(why));
    expect(header.querySelector<HTMLElement>(".ppviz-metric")!.title).toContain(`(${why})`);
    fillHeader(header, off());
    expect(header.querySelector<HTMLElement>(".ppviz-metric")!.title).toContain(
      "(the closed form assumes uniform stage costs, comm = 0; this config does not meet all of it)");
    const legend = document.createElement("div");
    fillLegend(legend, decodeTimeline(encodeTimeline(4, ops)), LIGHT);
    expect(legend.textContent).toContain("F forward");
    expect(legend.textContent).not.toContain("backward");
    expect(legend.textContent).toContain("idle (fill + drain)");
    // a training program keeps its backward and its bubble
    const training = fillDrain(4, 4);
    fillLegend(legend, decodeTimeline(encodeTimeline(4, training.ops)), LIGHT);
    expect(legend.textContent).toContain("B backward");
    expect(legend.textContent).toContain("idle (bubble)");
  });

  it("puts the out-of-memory badge in the header, red, and the capacity under the peak", () => {
    const header = document.createElement("div");
    fillHeader(header, gpipe70b());
    const badge = header.querySelector<HTMLElement>(".ppviz-fit")!;
    expect(badge.classList.contains("ppviz-fit-over")).toBe(true);
    expect(badge.textContent).toBe("does not fit: device 7 over by 28.2 GiB");
    const memory = [...header.querySelectorAll<HTMLElement>(".ppviz-metric")].at(-1)!;
    expect(memory.classList.contains("ppviz-metric-over")).toBe(true);
    expect(memory.querySelector(".ppviz-metric-value")!.textContent).toBe("108 GiB");
    expect(memory.textContent).toContain("of 80 GiB capacity");
    fillHeader(header, oneFOneB70b());
    expect(header.querySelector(".ppviz-fit")!.textContent).toBe("fits in 80 GiB");
    expect(header.querySelector(".ppviz-metric-over")).toBeNull();
    fillHeader(header, gpipe70b(), { compact: true, color: "", run: "" });
    expect(header.querySelector(".ppviz-fit")!.textContent).toBe("does not fit (8 of 8 over)");
  });
});

describe("the step card", () => {
  it("gives the training step, its MFU and the longest tail's split; none without a step", () => {
    const header = document.createElement("div");
    const step = { time: 5264.2, mfu: 0.379, tokens_per_second: 199190, device: 7, compute: 3218.4, tp_comm: 1155.9,
      p2p_wait: 11.3, idle: 873.9, dp_tail: 4.53, setup: 0, end: 5264.2, overlap_grad_reduce: true,
      overlap_param_gather: true, names: {}, tail: { device: [], stage: [], kind: [], start: [], end: [], time: [], hidden: [] } };
    fillHeader(header, { ...oneFOneB70b(), step });
    const cards = [...header.querySelectorAll<HTMLElement>(".ppviz-metric")];
    const labels = cards.map((c) => c.querySelector(".ppviz-metric-label")!.textContent);
    expect(labels).toEqual(["makespan", "bubble", "step", "peak memory"]);
    const card = cards[2];
    expect(card.querySelector(".ppviz-metric-value")!.textContent).toBe("5,264 ms");
    expect(card.querySelector(".ppviz-metric-closed")!.textContent).toBe("MFU 37.9 %");
    expect(card.title).toContain("199,190 tokens/s");
    expect(card.title).toContain("Device 7 (the longest tail): compute 3,218 ms, TP/EP traffic 1,156 ms, " +
      "P2P wait 11.3 ms, idle 874 ms, DP tail 4.53 ms");
    fillHeader(header, oneFOneB70b());
    expect([...header.querySelectorAll(".ppviz-metric-label")].map((e) => e.textContent)).not.toContain("step");
  });
});

describe("an op's tensor-parallel share", () => {
  it("splits the op's time into compute and TP/EP traffic where the stage has any", () => {
    const { ops, makespan } = fillDrain(4, 4);
    const tl = decodeTimeline(encodeTimeline(4, ops));
    const f = ops.findIndex((o) => o.stage === 2 && o.kind === "F");
    const b = ops.findIndex((o) => o.stage === 2 && o.kind === "B");
    const traffic = [0, 1, 2, 3].map((s) => (s === 2 ? [0.25, 0.5, 0, 0] : [0, 0, 0, 0]));
    const meta = metaFor(4, ops, makespan, { time_unit: "ms", traffic });
    const rows = (k: number) => Object.fromEntries(describeOp(tl, meta, k).rows);
    expect(rows(f)["of which"]).toBe(`compute ${number(ops[f].dur - 0.25, "ms", PRECISE)}, TP/EP traffic 0.25 ms (${share(0.25 / ops[f].dur)})`);
    expect(rows(b)["of which"]).toContain("TP/EP traffic 0.5 ms");
    const other = ops.findIndex((o) => o.stage === 1 && o.kind === "F");
    expect(rows(other)["of which"]).toBeUndefined();
    expect(Object.fromEntries(describeOp(tl, metaFor(4, ops, makespan, { time_unit: "ms" }), f).rows)["of which"]).toBeUndefined();
  });
});
