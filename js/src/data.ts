// Decoding of the binary traits Python sends (layout: ARCHITECTURE.md, "Wire format").
// Columns are mapped as typed-array views without copying whenever the buffer is aligned.

export const TIMELINE_MAGIC = 0x54565050; // "PPVT"
export const MEMORY_MAGIC = 0x4d565050; // "PPVM"
export const FORMAT_VERSION = 5;

export const KIND_F = 0;
export const KIND_B = 1;
export const KIND_I = 2;
export const KIND_W = 3;
/** the vocabulary passes (Vocabulary Parallelism): the output layer's logits and its gradients */
export const KIND_S = 4;
export const KIND_T = 5;
export const KIND_LETTERS = "FBIWST";
/** a kind's low bits; FLAG_KIND_HIGH is its third (S, T) */
export const KIND_MASK = 3;
export const FLAG_KIND_HIGH = 1 << 6;
export const FLAG_PAIR_F = 1 << 2;
export const FLAG_PAIR_B = 1 << 3;
export const FLAG_WAITED = 1 << 4;
/** the op runs on a bidirectional placement's second replica (DualPipe's upward direction) */
export const FLAG_REVERSE = 1 << 5;
/** Timeline.kinds' bit for F&B pairs (bits 0-5 are the kinds) */
export const KINDS_PAIR = 1 << 8;

/** The kind of an op from its flags (KIND_F .. KIND_T). */
export function kindOfFlags(f: number): number {
  return (f & KIND_MASK) | (f & FLAG_KIND_HIGH ? 4 : 0);
}

export interface Timeline {
  n: number;
  devices: number;
  microbatches: number;
  /** device d's ops are offsets[d] .. offsets[d+1], sorted by start */
  offsets: Uint32Array;
  start: Float32Array;
  dur: Float32Array;
  /** op k's dependency as its rank among microbatch mb[k]'s ops (opsOf), depNone for none: read
   * it through depOf */
  depRank: Uint8Array | Uint16Array | Uint32Array;
  depNone: number;
  mb: Uint16Array | Uint32Array;
  stage: Uint8Array | Uint16Array;
  flags: Uint8Array;
  /** busy[k] = summed duration of the drawn slots before op k (pair partners count once) */
  busy: Float64Array;
  /** the ops of each microbatch, built on first use by opsOf (a selection needs them, a paint not) */
  byMicrobatch: { offsets: Uint32Array; index: Uint32Array } | null;
  /** the model chunk an op's stage is on its device, counted in stage order per device and
   * direction: stageChunk[stage] (first direction) or stageChunk[stages + stage] (reverse) */
  stageChunk: Uint8Array;
  stages: number;
  /** the most chunks any device holds in one direction (v for virtual pipelines) */
  chunks: number;
  /** some op runs in the reverse direction (a bidirectional placement, DualPipe) */
  bidirectional: boolean;
  /** the kinds present: bit k for KIND_F .. KIND_W, KINDS_PAIR for an F&B pair (the legend's entries) */
  kinds: number;
  /** the activations and gradients moved between devices (empty without a topology) */
  transfers: Transfers;
}

/** transfer kinds: an activation to the next stage, a gradient to the previous one */
export const TRANSFER_F = 0;
export const TRANSFER_B = 1;
/** offload's host copies, in the same section after the transfers (src = dst = their device,
 * producer = consumer = the op they serve): an activation to host memory after its F, and back
 * before its backward */
export const HOST_OFFLOAD = 2;
export const HOST_RELOAD = 3;

/** Transfer i is a host copy (offload or reload), not a transfer between devices. */
export function isHostCopy(tr: Transfers, i: number): boolean {
  return tr.kind[i] >= HOST_OFFLOAD;
}

/** Result.transfers, one entry per transfer, in the order Python sent them. */
export interface Transfers {
  count: number;
  ready: Float32Array;
  start: Float32Array;
  end: Float32Array;
  /** the op whose output it carries and the op that needs it (timeline indices) */
  producer: Uint32Array;
  consumer: Uint32Array;
  src: Uint16Array;
  dst: Uint16Array;
  /** TRANSFER_F, TRANSFER_B, HOST_OFFLOAD or HOST_RELOAD */
  kind: Uint8Array;
  /** the section holds transfers between devices (a topology), offload's host copies, or both */
  links: boolean;
  host: boolean;
  /** transfers sent by device d: outIndex[outOffsets[d] .. outOffsets[d+1]] (in wire order); a
   * device's offloads count as sent, its reloads as received */
  outOffsets: Uint32Array;
  outIndex: Uint32Array;
  /** transfers received by device d: inIndex[inOffsets[d] .. inOffsets[d+1]] */
  inOffsets: Uint32Array;
  inIndex: Uint32Array;
  /** the transfer between devices bringing op k its input, or -1: intoOp[k]; like reloadOf and
   * outOfOp, empty when there are no transfers (count 0): read them through transferInto,
   * reloadOf and offloadOf */
  intoOp: Int32Array;
  /** the reload a backward k waited for, or -1: reloadOf[k] */
  reloadOf: Int32Array;
  /** the offload of op k's activation, or -1: outOfOp[k] */
  outOfOp: Int32Array;
  /** the longest transfer (culling reaches back this far) */
  maxDur: number;
}

export interface MemoryCurves {
  devices: number;
  offsets: Uint32Array;
  times: Float32Array;
  values: Float32Array;
  /** max of values in each block of MAX_BLOCK points, for per-pixel envelopes */
  blockMax: Float32Array;
  peak: number;
}

export const MAX_BLOCK = 64;

/** The bytes of a binary trait, whatever the host hands over (DataView in anywidget and ipywidgets 7). */
export function toBytes(x: unknown): Uint8Array {
  if (x instanceof Uint8Array) return x;
  if (ArrayBuffer.isView(x)) return new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
  if (x instanceof ArrayBuffer) return new Uint8Array(x);
  return new Uint8Array(0);
}

function aligned(bytes: Uint8Array): Uint8Array {
  return bytes.byteOffset % 4 === 0 ? bytes : bytes.slice();
}

class Reader {
  private pos = 0;
  private readonly view: DataView;
  constructor(private readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  u32(): number {
    this.need(4);
    const v = this.view.getUint32(this.pos, true);
    this.pos += 4;
    return v;
  }
  column<T>(ctor: { new (b: ArrayBuffer, o: number, n: number): T; BYTES_PER_ELEMENT: number }, n: number): T {
    const size = n * ctor.BYTES_PER_ELEMENT;
    this.need(size);
    const out = new ctor(this.bytes.buffer as ArrayBuffer, this.bytes.byteOffset + this.pos, n);
    this.pos += size + ((4 - (size % 4)) % 4);
    return out;
  }
  private need(size: number): void {
    if (this.pos + size > this.bytes.byteLength) {
      throw new Error(`ppviz: binary data ends early (${this.bytes.byteLength} bytes); reinstall ppviz?`);
    }
  }
}

function checkHeader(r: Reader, magic: number, what: string): void {
  if (r.u32() !== magic) throw new Error(`ppviz: the ${what} data is not in ppviz's format`);
  const version = r.u32();
  if (version !== FORMAT_VERSION) {
    throw new Error(`ppviz: ${what} format ${version}, this front end reads ${FORMAT_VERSION}; reinstall ppviz`);
  }
}

export function decodeTimeline(input: unknown): Timeline {
  const r = new Reader(aligned(toBytes(input)));
  checkHeader(r, TIMELINE_MAGIC, "timeline");
  const n = r.u32();
  const devices = r.u32();
  const widths = r.u32();
  const [mbBytes, stageBytes, durBytes, depBytes] =
    [widths & 0xff, (widths >> 8) & 0xff, (widths >> 16) & 0xff, widths >>> 24];
  if (![2, 4].includes(mbBytes) || ![1, 2].includes(stageBytes) || ![1, 2, 4].includes(durBytes) ||
      ![1, 2, 4].includes(depBytes)) {
    throw new Error(`ppviz: the timeline's column widths (${widths.toString(16)}) are not in ppviz's format`);
  }
  const table = r.column(Float32Array, r.u32());
  const offsets = r.column(Uint32Array, devices + 1);
  const start = r.column(Float32Array, n);
  const dur = durBytes === 4 ? r.column(Float32Array, n)
    : lookUp(table, durBytes === 1 ? r.column(Uint8Array, n) : r.column(Uint16Array, n));
  const depRank = unsignedColumn(r, depBytes, n);
  // the narrow columns are read where they are, not widened: each copy costs milliseconds at 10^6 ops
  const mb = mbBytes === 4 ? r.column(Uint32Array, n) : r.column(Uint16Array, n);
  const stage = stageBytes === 2 ? r.column(Uint16Array, n) : r.column(Uint8Array, n);
  const flags = r.column(Uint8Array, n);
  const transfers = decodeTransfers(r, devices, n);
  // one pass for everything the first paint needs from every op: at 10^6 ops each pass costs
  // milliseconds of the control loop
  const busy = new Float64Array(n + 1);
  let microbatches = 0;
  let stages = 0;
  let seen = 0; // flags ORed: the kinds' bits (kind k sets bit k below) and the flags
  let kinds = 0;
  let sum = 0;
  for (let k = 0; k < n; k++) {
    const f = flags[k];
    if (!(f & FLAG_PAIR_B)) sum += dur[k];
    busy[k + 1] = sum;
    const j = mb[k];
    if (j >= microbatches) microbatches = j + 1;
    const s = stage[k];
    if (s >= stages) stages = s + 1;
    seen |= f;
    kinds |= 1 << kindOfFlags(f);
  }
  const bidirectional = (seen & FLAG_REVERSE) !== 0;
  if (seen & FLAG_PAIR_F) kinds |= KINDS_PAIR;
  const { stageChunk, chunks } = chunksOf(devices, stages, offsets, stage, flags);
  return {
    n, devices, microbatches, offsets, start, dur, depRank, depNone: 2 ** (8 * depBytes) - 1, mb, stage, flags, busy,
    byMicrobatch: null,
    stageChunk, stages, chunks, bidirectional, kinds, transfers,
  };
}

/** The ops of microbatch j, in program order. The index of all microbatches is a counting sort
 * whose scattered writes cost more than the rest of decoding at 10^6 ops: it is built when a
 * selection first asks, not for the first paint. */
export function opsOf(tl: Timeline, j: number): Uint32Array {
  let by = tl.byMicrobatch;
  if (!by) {
    const { n, mb, microbatches } = tl;
    const offsets = new Uint32Array(microbatches + 1);
    for (let k = 0; k < n; k++) offsets[mb[k] + 1]++;
    for (let i = 0; i < microbatches; i++) offsets[i + 1] += offsets[i];
    const fill = offsets.slice(0, microbatches);
    const index = new Uint32Array(n);
    for (let k = 0; k < n; k++) index[fill[mb[k]]++] = k;
    by = tl.byMicrobatch = { offsets, index };
  }
  return j >= 0 && j < tl.microbatches ? by.index.subarray(by.offsets[j], by.offsets[j + 1]) : new Uint32Array(0);
}

/** The op op k depends on, or -1: its rank among its microbatch's ops, looked up there. */
export function depOf(tl: Timeline, k: number): number {
  const rank = tl.depRank[k];
  if (rank === tl.depNone) return -1;
  const ops = opsOf(tl, tl.mb[k]);
  if (rank >= ops.length) throw new Error(`ppviz: op ${k}'s dependency is not among its microbatch's ops`);
  return ops[rank];
}

function unsignedColumn(r: Reader, bytes: number, n: number): Uint8Array | Uint16Array | Uint32Array {
  return bytes === 1 ? r.column(Uint8Array, n) : bytes === 2 ? r.column(Uint16Array, n) : r.column(Uint32Array, n);
}

/** Durations sent as indices into a table of the distinct ones. */
function lookUp(table: Float32Array, index: Uint8Array | Uint16Array): Float32Array {
  const out = new Float32Array(index.length);
  for (let k = 0; k < index.length; k++) {
    const i = index[k];
    if (i >= table.length) throw new Error(`ppviz: op ${k}'s duration is not in the timeline's table`);
    out[k] = table[i];
  }
  return out;
}

/** The transfers section after the ops: a count, then one column per field. */
function decodeTransfers(r: Reader, devices: number, n: number): Transfers {
  const count = r.u32();
  const ready = r.column(Float32Array, count);
  const start = r.column(Float32Array, count);
  const end = r.column(Float32Array, count);
  const producer = r.column(Uint32Array, count);
  const consumer = r.column(Uint32Array, count);
  const src = r.column(Uint16Array, count);
  const dst = r.column(Uint16Array, count);
  const kind = r.column(Uint8Array, count);
  // the maps from ops to their transfers: empty without any (most runs), so that a run without
  // a topology allocates and fills nothing per op
  const perOp = count ? n : 0;
  const intoOp = new Int32Array(perOp).fill(-1);
  const reloadOf = new Int32Array(perOp).fill(-1);
  const outOfOp = new Int32Array(perOp).fill(-1);
  let links = false;
  let host = false;
  let maxDur = 0;
  for (let i = 0; i < count; i++) {
    if (src[i] >= devices || dst[i] >= devices || producer[i] >= n || consumer[i] >= n) {
      throw new Error(`ppviz: transfer ${i} names a device or op that the timeline does not have`);
    }
    if (kind[i] > HOST_RELOAD) {
      throw new Error(`ppviz: transfer ${i} has kind ${kind[i]}; a transfer is 0 or 1, a host copy 2 or 3`);
    }
    if (kind[i] >= HOST_OFFLOAD) {
      host = true;
    } else if (host) {
      throw new Error(`ppviz: transfer ${i} follows a host copy; the host copies come after every transfer`);
    } else {
      links = true;
    }
    if (kind[i] === HOST_OFFLOAD) outOfOp[producer[i]] = i;
    else if (kind[i] === HOST_RELOAD) reloadOf[consumer[i]] = i;
    else intoOp[consumer[i]] = i;
    if (end[i] - start[i] > maxDur) maxDur = end[i] - start[i];
  }
  // a host copy occupies one half of its device's lane: an offload the sending half, a reload the other
  const [outOffsets, outIndex] = groupBy(src, devices, (i) => kind[i] !== HOST_RELOAD);
  const [inOffsets, inIndex] = groupBy(dst, devices, (i) => kind[i] !== HOST_OFFLOAD);
  return {
    count, ready, start, end, producer, consumer, src, dst, kind, links, host, outOffsets, outIndex, inOffsets,
    inIndex, intoOp, reloadOf, outOfOp, maxDur,
  };
}

/** A counting sort by key of the i in 0..keys.length-1 that `keep` keeps, stable: [offsets, index]. */
function groupBy(keys: Uint16Array, buckets: number, keep: (i: number) => boolean): [Uint32Array, Uint32Array] {
  const offsets = new Uint32Array(buckets + 1);
  for (let i = 0; i < keys.length; i++) if (keep(i)) offsets[keys[i] + 1]++;
  for (let b = 0; b < buckets; b++) offsets[b + 1] += offsets[b];
  const fill = offsets.slice(0, buckets);
  const index = new Uint32Array(offsets[buckets]);
  for (let i = 0; i < keys.length; i++) if (keep(i)) index[fill[keys[i]]++] = i;
  return [offsets, index];
}

/** The transfer between devices that brought op k its input, or -1 (a reload is not one). */
export function inputTransfer(tl: Timeline, k: number): number {
  return tl.transfers.count ? tl.transfers.intoOp[k] : -1;
}

/** The reload backward k waited for, or -1. */
export function reloadOf(tl: Timeline, k: number): number {
  return tl.transfers.count ? tl.transfers.reloadOf[k] : -1;
}

/** The offload of op k's activation to the host, or -1. */
export function offloadOf(tl: Timeline, k: number): number {
  return tl.transfers.count ? tl.transfers.outOfOp[k] : -1;
}

/** The transfer op k waited for: the one bringing its input when that input set its start, or -1. */
export function waitedTransfer(tl: Timeline, k: number): number {
  return tl.flags[k] & FLAG_WAITED ? inputTransfer(tl, k) : -1;
}

/** Each stage's chunk on its device: its rank among the stages that device runs in the same
 * direction (a placement puts each stage of a direction on one device). */
function chunksOf(devices: number, stages: number, offsets: Uint32Array, stage: Uint8Array | Uint16Array,
  flags: Uint8Array) {
  const deviceOfStage = new Int32Array(2 * stages).fill(-1);
  for (let d = 0; d < devices; d++) {
    for (let k = offsets[d]; k < offsets[d + 1]; k++) {
      deviceOfStage[(flags[k] & FLAG_REVERSE ? stages : 0) + stage[k]] = d;
    }
  }
  const held = new Uint32Array(2 * devices);
  const stageChunk = new Uint8Array(2 * stages);
  let chunks = 1;
  for (let i = 0; i < 2 * stages; i++) {
    const d = deviceOfStage[i];
    if (d < 0) continue;
    const slot = (i >= stages ? devices : 0) + d;
    stageChunk[i] = Math.min(255, held[slot]++);
    chunks = Math.max(chunks, held[slot]);
  }
  return { stageChunk, chunks };
}

/** The chunk op k's stage is on its device (0 for the first). */
export function chunkOf(tl: Timeline, k: number): number {
  return tl.stageChunk[(tl.flags[k] & FLAG_REVERSE ? tl.stages : 0) + tl.stage[k]];
}

export function isReverse(tl: Timeline, k: number): boolean {
  return (tl.flags[k] & FLAG_REVERSE) !== 0;
}

export function decodeMemory(input: unknown): MemoryCurves {
  const r = new Reader(aligned(toBytes(input)));
  checkHeader(r, MEMORY_MAGIC, "memory");
  const devices = r.u32();
  const offsets = r.column(Uint32Array, devices + 1);
  const k = offsets[devices];
  const times = r.column(Float32Array, k);
  const values = r.column(Float32Array, k);
  const blockMax = new Float32Array(Math.ceil(k / MAX_BLOCK));
  blockMax.fill(-Infinity);
  let peak = 0;
  for (let i = 0; i < k; i++) {
    const b = (i / MAX_BLOCK) | 0;
    if (values[i] > blockMax[b]) blockMax[b] = values[i];
    if (values[i] > peak) peak = values[i];
  }
  return { devices, offsets, times, values, blockMax, peak };
}

/** Largest value in values[lo .. hi). */
export function rangeMax(mem: MemoryCurves, lo: number, hi: number): number {
  let best = -Infinity;
  let i = lo;
  while (i < hi && i % MAX_BLOCK !== 0) best = Math.max(best, mem.values[i++]);
  while (i + MAX_BLOCK <= hi) {
    best = Math.max(best, mem.blockMax[i / MAX_BLOCK]);
    i += MAX_BLOCK;
  }
  while (i < hi) best = Math.max(best, mem.values[i++]);
  return best;
}

/** Activation memory device d holds at time t (the step function's value). */
export function memoryAt(mem: MemoryCurves, d: number, t: number): number {
  const lo = mem.offsets[d];
  const k = upperBound(mem.times, lo, mem.offsets[d + 1], t) - 1;
  return k >= lo ? mem.values[k] : 0;
}

/** First index in a[lo .. hi) whose value is > x (a sorted ascending). */
export function upperBound(a: ArrayLike<number>, lo: number, hi: number, x: number): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid] <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** First index in a[lo .. hi) whose value is >= x (a sorted ascending). */
export function lowerBound(a: ArrayLike<number>, lo: number, hi: number, x: number): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export function deviceOf(tl: Timeline, k: number): number {
  return upperBound(tl.offsets, 0, tl.devices + 1, k) - 1;
}

export function kindOf(tl: Timeline, k: number): number {
  return kindOfFlags(tl.flags[k]);
}

/** The op whose slot k is drawn in: the F of an F&B pair stands for both. */
export function slotOf(tl: Timeline, k: number): number {
  return tl.flags[k] & FLAG_PAIR_B ? k - 1 : k;
}

export function endOf(tl: Timeline, k: number): number {
  return tl.start[k] + tl.dur[k];
}

/** The op k waited for (its dependency set its start), or -1. */
export function waitedFor(tl: Timeline, k: number): number {
  return tl.flags[k] & FLAG_WAITED ? depOf(tl, k) : -1;
}

/** torch's action string of op k, e.g. "3F1". */
export function actionName(tl: Timeline, k: number): string {
  return `${tl.stage[k]}${KIND_LETTERS[kindOf(tl, k)]}${tl.mb[k]}`;
}
