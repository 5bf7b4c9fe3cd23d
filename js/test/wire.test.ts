// The wire format pinned from the front end: the widget's decoder reads the golden bytes the
// Python encoder wrote (tests/data/wire_golden.*, checked byte for byte by
// tests/test_wire_golden.py) as the JSON beside them says.
import { describe, expect, it } from "vitest";
import golden from "../../tests/data/wire_golden.json";
import memoryUrl from "../../tests/data/wire_golden.memory.bin?url";
import timelineUrl from "../../tests/data/wire_golden.timeline.bin?url";
import { FLAG_PAIR_B, FLAG_PAIR_F, chunkOf, decodeMemory, decodeTimeline, deviceOf, isReverse, waitedFor } from "../src/data";
import { type OpSpec, encodeMemory, encodeTimeline } from "./fixtures";

async function bytes(url: string): Promise<DataView> {
  const buffer = await (await fetch(url)).arrayBuffer();
  return new DataView(buffer);
}

describe("the golden wire fixture", () => {
  it("decodes every op as written", async () => {
    const tl = decodeTimeline(await bytes(timelineUrl));
    expect(tl.n).toBe(golden.ops.length);
    expect(tl.devices).toBe(golden.devices);
    expect(Array.from(tl.offsets)).toEqual(golden.offsets);
    golden.ops.forEach((o, k) => {
      expect(deviceOf(tl, k)).toBe(o.device);
      expect(tl.stage[k]).toBe(o.stage);
      expect(tl.mb[k]).toBe(o.microbatch);
      expect("FBIW"[tl.flags[k] & 3]).toBe(o.kind);
      expect(tl.start[k]).toBe(o.start);
      expect(tl.dur[k]).toBe(o.duration);
      expect(tl.dep[k]).toBe(o.dep);
      expect(waitedFor(tl, k)).toBe(o.waited ? o.dep : -1);
      expect((tl.flags[k] & FLAG_PAIR_F) !== 0).toBe(o.pair_forward);
      expect((tl.flags[k] & FLAG_PAIR_B) !== 0).toBe(o.pair_backward);
      expect(isReverse(tl, k)).toBe(o.reverse);
      // DualPipe holds one stage per direction on each device: every op is in its first chunk
      expect(chunkOf(tl, k)).toBe(0);
    });
    expect(tl.bidirectional).toBe(true);
    expect(tl.chunks).toBe(1);
  });

  it("decodes every memory curve as written", async () => {
    const mem = decodeMemory(await bytes(memoryUrl));
    expect(mem.devices).toBe(golden.devices);
    golden.memory.forEach((curve, d) => {
      const lo = mem.offsets[d];
      const hi = mem.offsets[d + 1];
      expect(Array.from(mem.times.subarray(lo, hi))).toEqual(curve.times);
      expect(Array.from(mem.values.subarray(lo, hi))).toEqual(curve.values);
    });
  });

  it("is what the tests' own encoder writes for the same ops", async () => {
    const ops: OpSpec[] = golden.ops.map((o) => ({
      device: o.device,
      stage: o.stage,
      mb: o.microbatch,
      kind: o.kind as OpSpec["kind"],
      start: o.start,
      dur: o.duration,
      dep: o.dep,
      waited: o.waited,
      pair: o.pair_forward ? "F" : o.pair_backward ? "B" : undefined,
      reverse: o.reverse,
    }));
    const mine = encodeTimeline(golden.devices, ops);
    const theirs = new Uint8Array((await bytes(timelineUrl)).buffer);
    expect(Array.from(mine)).toEqual(Array.from(theirs));
    const curves = golden.memory.map((c) => c.times.map((t, i) => [t, c.values[i]] as [number, number]));
    const memory = new Uint8Array((await bytes(memoryUrl)).buffer);
    expect(Array.from(encodeMemory(curves))).toEqual(Array.from(memory));
  });
});
