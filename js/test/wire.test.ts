// The wire format pinned from the front end: the widget's decoder reads the golden bytes the
// Python encoder wrote (tests/data/wire_golden.*, checked byte for byte by
// tests/test_wire_golden.py) as the JSON beside them says.
import { describe, expect, it } from "vitest";
import golden from "../../tests/data/wire_golden.json";
import memoryUrl from "../../tests/data/wire_golden.memory.bin?url";
import timelineUrl from "../../tests/data/wire_golden.timeline.bin?url";
import {
  FLAG_PAIR_B, FLAG_PAIR_F, chunkOf, decodeMemory, decodeTimeline, depOf, deviceOf, isReverse, waitedFor, waitedTransfer,
} from "../src/data";
import { type OpSpec, type TransferSpec, encodeMemory, encodeTimeline } from "./fixtures";

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
      expect(depOf(tl, k)).toBe(o.dep);
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

  it("decodes every transfer as written, and links each to its ops", async () => {
    const tl = decodeTimeline(await bytes(timelineUrl));
    const tr = tl.transfers;
    expect(tr.count).toBe(golden.transfers.length);
    expect(tr.count).toBeGreaterThan(0);
    golden.transfers.forEach((x, i) => {
      expect(tr.src[i]).toBe(x.src);
      expect(tr.dst[i]).toBe(x.dst);
      expect("FB"[tr.kind[i]]).toBe(x.kind);
      expect(tr.ready[i]).toBe(x.ready);
      expect(tr.start[i]).toBe(x.start);
      expect(tr.end[i]).toBe(x.end);
      expect(tr.producer[i]).toBe(x.producer);
      expect(tr.consumer[i]).toBe(x.consumer);
      // the ops it joins are on its two devices, and the consumer knows it
      expect(deviceOf(tl, x.producer)).toBe(x.src);
      expect(deviceOf(tl, x.consumer)).toBe(x.dst);
      expect(tr.intoOp[x.consumer]).toBe(i);
      expect(waitedTransfer(tl, x.consumer)).toBe(golden.ops[x.consumer].waited ? i : -1);
    });
    // the per-device groups hold each transfer once, on its sender and on its receiver
    for (let d = 0; d < tl.devices; d++) {
      const sent = Array.from(tr.outIndex.subarray(tr.outOffsets[d], tr.outOffsets[d + 1]));
      const received = Array.from(tr.inIndex.subarray(tr.inOffsets[d], tr.inOffsets[d + 1]));
      expect(sent).toEqual(golden.transfers.flatMap((x, i) => (x.src === d ? [i] : [])));
      expect(received).toEqual(golden.transfers.flatMap((x, i) => (x.dst === d ? [i] : [])));
    }
    expect(tr.maxDur).toBe(Math.max(...golden.transfers.map((x) => x.end - x.start)));
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
    // Python sent the golden run in the narrowest layout: u16 microbatches, u8 stages, u8 indices
    // into the table of its distinct durations, u8 ranks of the dependencies in their microbatches
    const narrow = { mbBytes: 2, stageBytes: 1, durBytes: 1, depBytes: 1 } as const;
    const mine = encodeTimeline(golden.devices, ops, golden.transfers as TransferSpec[], narrow);
    const theirs = new Uint8Array((await bytes(timelineUrl)).buffer);
    expect(Array.from(mine)).toEqual(Array.from(theirs));
    // every layout decodes to the same timeline
    const reference = decodeTimeline(theirs);
    for (const layout of [
      { mbBytes: 4, stageBytes: 2, durBytes: 4, depBytes: 4 }, { mbBytes: 2, stageBytes: 2, durBytes: 2, depBytes: 2 },
      { mbBytes: 4, stageBytes: 1, durBytes: 1, depBytes: 1 },
    ] as const) {
      const tl = decodeTimeline(encodeTimeline(golden.devices, ops, golden.transfers as TransferSpec[], layout));
      for (const column of ["start", "dur", "mb", "stage", "flags"] as const) {
        expect(Array.from(tl[column])).toEqual(Array.from(reference[column]));
      }
      expect(Array.from({ length: tl.n }, (_, k) => depOf(tl, k))).toEqual(
        Array.from({ length: reference.n }, (_, k) => depOf(reference, k)));
    }
    const curves = golden.memory.map((c) => c.times.map((t, i) => [t, c.values[i]] as [number, number]));
    const memory = new Uint8Array((await bytes(memoryUrl)).buffer);
    expect(Array.from(encodeMemory(curves))).toEqual(Array.from(memory));
  });
});
