import { describe, expect, it } from "vitest";
import { colourSlot } from "../src/draw";
import {
  FLAG_PAIR_B,
  KINDS_PAIR,
  KIND_B,
  KIND_F,
  KIND_I,
  KIND_S,
  KIND_T,
  KIND_W,
  actionName,
  chunkOf,
  decodeMemory,
  decodeTimeline,
  depOf,
  deviceOf,
  isReverse,
  kindOf,
  lowerBound,
  memoryAt,
  rangeMax,
  slotOf,
  toBytes,
  upperBound,
  waitedFor,
  opsOf,
} from "../src/data";
import { type OpSpec, encodeMemory, encodeTimeline, fillDrain } from "./fixtures";

describe("decodeTimeline", () => {
  it("reads every column back", () => {
    const { ops } = fillDrain(3, 4);
    const tl = decodeTimeline(new DataView(encodeTimeline(3, ops).buffer));
    expect(tl.n).toBe(ops.length);
    expect(tl.devices).toBe(3);
    expect(Array.from(tl.offsets)).toEqual([0, 8, 16, 24]);
    ops.forEach((o, k) => {
      expect(tl.start[k]).toBe(o.start);
      expect(tl.dur[k]).toBe(o.dur);
      expect(tl.mb[k]).toBe(o.mb);
      expect(tl.stage[k]).toBe(o.stage);
      expect(depOf(tl, k)).toBe(o.dep);
      expect(deviceOf(tl, k)).toBe(o.device);
      expect(waitedFor(tl, k)).toBe(o.waited ? o.dep : -1);
    });
    expect(tl.microbatches).toBe(4);
  });

  it("maps aligned columns without copying and copies unaligned input", () => {
    const bytes = encodeTimeline(2, fillDrain(2, 2).ops);
    const tl = decodeTimeline(bytes);
    expect(tl.start.buffer).toBe(bytes.buffer);
    const shifted = new Uint8Array(bytes.length + 1);
    shifted.set(bytes, 1);
    const view = new DataView(shifted.buffer, 1, bytes.length);
    const copy = decodeTimeline(view);
    expect(Array.from(copy.start)).toEqual(Array.from(tl.start));
  });

  it("counts a pair's time once and groups ops by microbatch", () => {
    const tl = decodeTimeline(
      encodeTimeline(1, [
        { device: 0, stage: 0, mb: 0, kind: "F", start: 0, dur: 1 },
        { device: 0, stage: 0, mb: 1, kind: "F", start: 1, dur: 3, pair: "F" },
        { device: 0, stage: 0, mb: 0, kind: "B", start: 1, dur: 3, pair: "B" },
        { device: 0, stage: 0, mb: 1, kind: "B", start: 4, dur: 2 },
      ]),
    );
    expect(Array.from(tl.busy)).toEqual([0, 1, 4, 4, 6]);
    expect(tl.flags[2] & FLAG_PAIR_B).toBeTruthy();
    expect(slotOf(tl, 2)).toBe(1);
    const mb0 = opsOf(tl, 0);
    expect(Array.from(mb0)).toEqual([0, 2]);
    // the pair and the kinds present, for the legend
    expect(tl.kinds).toBe((1 << KIND_F) | (1 << KIND_B) | KINDS_PAIR);
  });

  it("groups ops by microbatch on first use, in program order", () => {
    const { ops } = fillDrain(3, 5);
    const tl = decodeTimeline(encodeTimeline(3, ops));
    expect(tl.byMicrobatch).toBeNull(); // a paint does not need it
    for (let j = 0; j < 5; j++) {
      const want = ops.flatMap((o, k) => (o.mb === j ? [k] : []));
      expect(Array.from(opsOf(tl, j))).toEqual(want);
    }
    expect(opsOf(tl, -1).length).toBe(0);
    expect(opsOf(tl, 5).length).toBe(0);
    expect(tl.kinds).toBe((1 << KIND_F) | (1 << KIND_B));
  });

  it("names the kinds present: split backwards and no pair", () => {
    const tl = decodeTimeline(
      encodeTimeline(1, [
        { device: 0, stage: 0, mb: 0, kind: "F", start: 0, dur: 1 },
        { device: 0, stage: 0, mb: 0, kind: "I", start: 1, dur: 1 },
        { device: 0, stage: 0, mb: 0, kind: "W", start: 2, dur: 1 },
      ]),
    );
    expect(tl.kinds).toBe((1 << KIND_F) | (1 << KIND_I) | (1 << KIND_W));
  });

  it("reads the vocabulary passes S and T from the kind's third bit", () => {
    const tl = decodeTimeline(
      encodeTimeline(1, [
        { device: 0, stage: 0, mb: 0, kind: "F", start: 0, dur: 1 },
        { device: 0, stage: 0, mb: 0, kind: "S", start: 1, dur: 0.5 },
        { device: 0, stage: 0, mb: 0, kind: "T", start: 1.5, dur: 0.5 },
        { device: 0, stage: 0, mb: 0, kind: "B", start: 2, dur: 2 },
      ]),
    );
    expect([0, 1, 2, 3].map((k) => kindOf(tl, k))).toEqual([KIND_F, KIND_S, KIND_T, KIND_B]);
    expect([0, 1, 2, 3].map((k) => actionName(tl, k))).toEqual(["0F0", "0S0", "0T0", "0B0"]);
    expect([0, 1, 2, 3].map((k) => colourSlot(tl.flags[k]))).toEqual([0, 4, 5, 1]);
    expect(tl.kinds).toBe((1 << KIND_F) | (1 << KIND_B) | (1 << KIND_S) | (1 << KIND_T));
  });

  it("rejects data that is not ppviz's format", () => {
    const bytes = encodeTimeline(1, fillDrain(1, 1).ops);
    bytes[0] ^= 0xff;
    expect(() => decodeTimeline(bytes)).toThrow(/not in ppviz's format/);
    const short = encodeTimeline(2, fillDrain(2, 4).ops).slice(0, 40);
    expect(() => decodeTimeline(short)).toThrow(/ends early/);
    const widths = encodeTimeline(1, fillDrain(1, 1).ops);
    widths[16] = 3; // a microbatch column 3 bytes wide
    expect(() => decodeTimeline(widths)).toThrow(/column widths/);
    // a duration index past the table of the two durations (1 and 2): after the header, the
    // table, the offsets and the starts, op 0's index set to 2
    const indexed = encodeTimeline(1, fillDrain(1, 1).ops, [], { mbBytes: 2, stageBytes: 1, durBytes: 1 });
    indexed[24 + 2 * 4 + 2 * 4 + 2 * 4] = 2;
    expect(() => decodeTimeline(indexed)).toThrow(/op 0's duration is not in the timeline's table/);
  });

  it("accepts ArrayBuffer and typed arrays as well as DataView", () => {
    const bytes = encodeTimeline(1, fillDrain(1, 2).ops);
    expect(toBytes(bytes.buffer).length).toBe(bytes.length);
    expect(toBytes(new DataView(bytes.buffer)).length).toBe(bytes.length);
    expect(toBytes(undefined).length).toBe(0);
  });
});

describe("memory curves", () => {
  const mem = decodeMemory(encodeMemory([[[0, 0], [1, 1], [2, 3], [5, 0]], [[0, 0], [4, 2]]]));

  it("evaluates the step function", () => {
    expect(memoryAt(mem, 0, 0.5)).toBe(0);
    expect(memoryAt(mem, 0, 1)).toBe(1);
    expect(memoryAt(mem, 0, 4.9)).toBe(3);
    expect(memoryAt(mem, 0, 6)).toBe(0);
    expect(memoryAt(mem, 1, 4)).toBe(2);
    expect(mem.peak).toBe(3);
  });

  it("finds range maxima across block boundaries", () => {
    const points: [number, number][] = Array.from({ length: 1000 }, (_, i) => [i, (i * 7919) % 997]);
    const big = decodeMemory(encodeMemory([points]));
    for (const [lo, hi] of [[0, 1000], [3, 64], [60, 200], [129, 130], [500, 999]]) {
      const expected = Math.max(...points.slice(lo, hi).map(([, v]) => v));
      expect(rangeMax(big, lo, hi)).toBe(expected);
    }
  });
});

describe("binary search", () => {
  const a = [0, 1, 1, 1, 4, 9];
  it("finds bounds", () => {
    expect(lowerBound(a, 0, a.length, 1)).toBe(1);
    expect(upperBound(a, 0, a.length, 1)).toBe(4);
    expect(lowerBound(a, 0, a.length, 10)).toBe(6);
    expect(upperBound(a, 0, a.length, -1)).toBe(0);
  });
});

describe("model chunks and directions", () => {
  /** one F per (device, stage) pair: [device, stage, reverse] */
  function timeline(devices: number, pairs: [number, number, boolean?][]) {
    const ops: OpSpec[] = pairs
      .map(([device, stage, reverse], i) => ({ device, stage, mb: i, kind: "F" as const, start: i, dur: 1, reverse }))
      .sort((a, b) => a.device - b.device || a.start - b.start);
    const tl = decodeTimeline(encodeTimeline(devices, ops));
    const chunkOfStage = (d: number, stage: number, reverse = false) => {
      const k = ops.findIndex((o) => o.device === d && o.stage === stage && !!o.reverse === reverse);
      return chunkOf(tl, k);
    };
    return { tl, chunkOfStage };
  }

  it("count a device's stages in order: the loop placement of interleaved schedules", () => {
    const { tl, chunkOfStage } = timeline(2, [[0, 0], [1, 1], [0, 2], [1, 3], [0, 4], [1, 5]]);
    expect([chunkOfStage(0, 0), chunkOfStage(0, 2), chunkOfStage(0, 4)]).toEqual([0, 1, 2]);
    expect([chunkOfStage(1, 1), chunkOfStage(1, 3), chunkOfStage(1, 5)]).toEqual([0, 1, 2]);
    expect(tl.chunks).toBe(3);
    expect(tl.bidirectional).toBe(false);
  });

  it("count the V placement's way back as the second chunk", () => {
    const { tl, chunkOfStage } = timeline(2, [[0, 0], [1, 1], [1, 2], [0, 3]]);
    expect([chunkOfStage(0, 0), chunkOfStage(0, 3), chunkOfStage(1, 1), chunkOfStage(1, 2)]).toEqual([0, 1, 0, 1]);
    expect(tl.chunks).toBe(2);
  });

  it("count each direction of a bidirectional placement apart: DualPipe has one chunk per direction", () => {
    const { tl, chunkOfStage } = timeline(2, [[0, 0], [1, 1], [1, 0, true], [0, 1, true]]);
    expect([chunkOfStage(0, 0), chunkOfStage(0, 1, true), chunkOfStage(1, 1), chunkOfStage(1, 0, true)])
      .toEqual([0, 0, 0, 0]);
    expect(tl.chunks).toBe(1);
    expect(tl.bidirectional).toBe(true);
    expect(isReverse(tl, 0)).toBe(false);
  });
});
