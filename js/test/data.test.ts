import { describe, expect, it } from "vitest";
import {
  FLAG_PAIR_B,
  decodeMemory,
  decodeTimeline,
  deviceOf,
  lowerBound,
  memoryAt,
  rangeMax,
  slotOf,
  toBytes,
  upperBound,
  waitedFor,
} from "../src/data";
import { encodeMemory, encodeTimeline, fillDrain } from "./fixtures";

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
      expect(tl.dep[k]).toBe(o.dep);
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
    const mb0 = tl.mbIndex.subarray(tl.mbOffsets[0], tl.mbOffsets[1]);
    expect(Array.from(mb0)).toEqual([0, 2]);
  });

  it("rejects data that is not ppviz's format", () => {
    const bytes = encodeTimeline(1, fillDrain(1, 1).ops);
    bytes[0] ^= 0xff;
    expect(() => decodeTimeline(bytes)).toThrow(/not in ppviz's format/);
    const short = encodeTimeline(2, fillDrain(2, 4).ops).slice(0, 40);
    expect(() => decodeTimeline(short)).toThrow(/ends early/);
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
