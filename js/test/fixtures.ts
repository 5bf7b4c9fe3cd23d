// Builds timelines in the binary layout ppviz/widgets/wire.py writes (pinned to the same bytes by
// test/wire.test.ts), and a fake anywidget model.

import { FLAG_PAIR_B, FLAG_PAIR_F, FLAG_REVERSE, FLAG_WAITED, FORMAT_VERSION, MEMORY_MAGIC, TIMELINE_MAGIC } from "../src/data";
import type { Meta } from "../src/meta";

export interface OpSpec {
  device: number;
  stage: number;
  mb: number;
  kind: "F" | "B" | "I" | "W" | "S" | "T";
  start: number;
  dur: number;
  dep?: number;
  waited?: boolean;
  pair?: "F" | "B";
  /** on a bidirectional placement's second replica */
  reverse?: boolean;
}

/** One transfer, as Result.transfers holds it (producer and consumer are indices into ops). */
export interface TransferSpec {
  src: number;
  dst: number;
  /** a transfer between devices (F, B), or one of offload's host copies (src = dst = its device) */
  kind: "F" | "B" | "offload" | "reload";
  ready: number;
  start: number;
  end: number;
  producer: number;
  consumer: number;
}

function pad4(n: number): number {
  return (n + 3) & ~3;
}

/** Column widths of a timeline: Python sends the narrowest that fits (ppviz/widgets/wire.py);
 * the default is the widest, which every timeline fits. */
export interface Layout {
  mbBytes: 2 | 4;
  stageBytes: 1 | 2;
  /** 4: f32 durations; 1 or 2: indices into the table of distinct durations, ascending */
  durBytes: 1 | 2 | 4;
  /** the dependency's rank among its microbatch's ops (the width's largest value for none) */
  depBytes?: 1 | 2 | 4;
}

const WIDEST: Layout = { mbBytes: 4, stageBytes: 2, durBytes: 4, depBytes: 4 };

/** ops must be grouped by device and sorted by start within a device, as Python sends them. */
export function encodeTimeline(devices: number, ops: OpSpec[], transfers: TransferSpec[] = [],
  layout: Layout = WIDEST): Uint8Array {
  const n = ops.length;
  const t = transfers.length;
  const { mbBytes, stageBytes, durBytes } = layout;
  const depBytes = layout.depBytes ?? 4;
  // each op's rank among its microbatch's ops, in program order: a dependency is sent as its rank
  const seen = new Map<number, number>();
  const rank = ops.map((o) => {
    const r = seen.get(o.mb) ?? 0;
    seen.set(o.mb, r + 1);
    return r;
  });
  const table = durBytes === 4 ? [] : [...new Set(ops.map((o) => Math.fround(o.dur)))].sort((a, b) => a - b);
  const size = 24 + pad4(4 * table.length) + pad4((devices + 1) * 4) + 4 * n + pad4(durBytes * n) + pad4(depBytes * n) +
    pad4(mbBytes * n) + pad4(stageBytes * n) + pad4(n) + 4 + 5 * 4 * t + 2 * pad4(2 * t) + pad4(t);
  const buf = new ArrayBuffer(size);
  const dv = new DataView(buf);
  let p = 0;
  for (const v of [TIMELINE_MAGIC, FORMAT_VERSION, n, devices,
    (mbBytes | (stageBytes << 8) | (durBytes << 16) | (depBytes << 24)) >>> 0,
    table.length, ...table.map((x) => new Uint32Array(new Float32Array([x]).buffer)[0])]) {
    dv.setUint32(p, v, true);
    p += 4;
  }
  const counts = new Array(devices + 1).fill(0);
  for (const o of ops) counts[o.device + 1]++;
  for (let d = 0; d < devices; d++) counts[d + 1] += counts[d];
  for (const c of counts) {
    dv.setUint32(p, c, true);
    p += 4;
  }
  p = pad4(p);
  const column = (write: (o: OpSpec, at: number) => void, width: number) => {
    ops.forEach((o, k) => write(o, p + k * width));
    p = pad4(p + n * width);
  };
  const unsigned = (width: number) => (at: number, v: number) =>
    width === 1 ? dv.setUint8(at, v) : width === 2 ? dv.setUint16(at, v, true) : dv.setUint32(at, v, true);
  column((o, at) => dv.setFloat32(at, o.start, true), 4);
  if (durBytes === 4) column((o, at) => dv.setFloat32(at, o.dur, true), 4);
  else column((o, at) => unsigned(durBytes)(at, table.indexOf(Math.fround(o.dur))), durBytes);
  column((o, at) => {
    const dep = o.dep ?? -1;
    if (dep >= 0 && ops[dep].mb !== o.mb) throw new Error(`fixture op ${at}: a dependency is of the same microbatch`);
    unsigned(depBytes)(at, dep < 0 ? 2 ** (8 * depBytes) - 1 : rank[dep]);
  }, depBytes);
  column((o, at) => unsigned(mbBytes)(at, o.mb), mbBytes);
  column((o, at) => unsigned(stageBytes)(at, o.stage), stageBytes);
  column((o, at) => {
    // the kind's low bits in bits 0-1, its third (S, T) in bit 6
    const kind = "FBIWST".indexOf(o.kind);
    let f = (kind & 3) | ((kind >> 2) << 6);
    if (o.pair === "F") f |= FLAG_PAIR_F;
    if (o.pair === "B") f |= FLAG_PAIR_B;
    if (o.waited) f |= FLAG_WAITED;
    if (o.reverse) f |= FLAG_REVERSE;
    dv.setUint8(at, f);
  }, 1);
  dv.setUint32(p, t, true);
  p += 4;
  const field = (write: (x: TransferSpec, at: number) => void, width: number) => {
    transfers.forEach((x, i) => write(x, p + i * width));
    p = pad4(p + t * width);
  };
  field((x, at) => dv.setFloat32(at, x.ready, true), 4);
  field((x, at) => dv.setFloat32(at, x.start, true), 4);
  field((x, at) => dv.setFloat32(at, x.end, true), 4);
  field((x, at) => dv.setUint32(at, x.producer, true), 4);
  field((x, at) => dv.setUint32(at, x.consumer, true), 4);
  field((x, at) => dv.setUint16(at, x.src, true), 2);
  field((x, at) => dv.setUint16(at, x.dst, true), 2);
  field((x, at) => dv.setUint8(at, ["F", "B", "offload", "reload"].indexOf(x.kind)), 1);
  return new Uint8Array(buf);
}

export function encodeMemory(curves: [number, number][][]): Uint8Array {
  const k = curves.reduce((s, c) => s + c.length, 0);
  const buf = new ArrayBuffer(12 + (curves.length + 1) * 4 + 8 * k);
  const dv = new DataView(buf);
  let p = 0;
  for (const v of [MEMORY_MAGIC, FORMAT_VERSION, curves.length]) {
    dv.setUint32(p, v, true);
    p += 4;
  }
  let off = 0;
  dv.setUint32(p, 0, true);
  p += 4;
  for (const c of curves) {
    off += c.length;
    dv.setUint32(p, off, true);
    p += 4;
  }
  for (const c of curves) for (const [t] of c) (dv.setFloat32(p, t, true), (p += 4));
  for (const c of curves) for (const [, v] of c) (dv.setFloat32(p, v, true), (p += 4));
  return new Uint8Array(buf);
}

/**
 * A fill-drain (GPipe) timeline on p devices with m microbatches (f = 1, B = 2, no comm), with the
 * dependencies the simulator would report. Good enough to exercise drawing and input.
 */
export function fillDrain(p: number, m: number): { ops: OpSpec[]; makespan: number } {
  const F = (s: number, j: number) => j + s;
  const ops: OpSpec[][] = Array.from({ length: p }, () => []);
  // forward of (s, j) runs at j + s; backward after the last forward, staggered back up
  for (let s = 0; s < p; s++) {
    for (let j = 0; j < m; j++) ops[s].push({ device: s, stage: s, mb: j, kind: "F", start: F(s, j), dur: 1 });
    for (let j = 0; j < m; j++) {
      const start = m + p - 1 + 2 * j + 2 * (p - 1 - s);
      ops[s].push({ device: s, stage: s, mb: j, kind: "B", start, dur: 2 });
    }
  }
  const flat = ops.flat();
  const index = new Map(flat.map((o, k) => [`${o.kind}${o.stage}:${o.mb}`, k]));
  for (const o of flat) {
    const dep = o.kind === "F" ? index.get(`F${o.stage - 1}:${o.mb}`) : o.stage === p - 1 ? index.get(`F${o.stage}:${o.mb}`) : index.get(`B${o.stage + 1}:${o.mb}`);
    o.dep = dep ?? -1;
    o.waited = dep !== undefined;
  }
  const makespan = Math.max(...flat.map((o) => o.start + o.dur));
  return { ops: flat, makespan };
}

/** Many tiny ops per device: back to back with small gaps, for the culling and merging paths. */
export function dense(devices: number, perDevice: number): { ops: OpSpec[]; makespan: number } {
  const ops: OpSpec[] = [];
  let makespan = 0;
  for (let d = 0; d < devices; d++) {
    let t = d;
    for (let k = 0; k < perDevice; k++) {
      const kind = (["F", "B", "W"] as const)[k % 3];
      ops.push({ device: d, stage: d, mb: Math.floor(k / 3), kind, start: t, dur: 1 });
      t += k % 7 === 6 ? 1.5 : 1;
    }
    makespan = Math.max(makespan, t);
  }
  return { ops, makespan };
}

export function metaFor(devices: number, ops: OpSpec[], makespan: number, extra: Partial<Meta> = {}): Meta {
  const busy = new Array(devices).fill(0);
  for (const o of ops) if (o.pair !== "B") busy[o.device] += o.dur;
  const microbatches = ops.reduce((m, o) => Math.max(m, o.mb + 1), 0);
  return {
    title: "test schedule",
    schedule: "1f1b",
    devices,
    microbatches,
    stages: devices,
    stages_per_device: 1,
    f: 1,
    b: 1,
    w: 1,
    comm: 0,
    time_unit: "",
    rows: Array.from({ length: devices }, (_, d) => `stage ${d}`),
    ops: ops.length,
    makespan,
    ideal: Math.max(...busy),
    bubble_fraction: 0.25,
    bubble_rate: 0.33,
    idle: busy.map((b) => makespan - b),
    peak_activation: new Array(devices).fill(2),
    static_memory: new Array(devices).fill(0),
    peak_memory: new Array(devices).fill(2),
    activation_bytes: null,
    closed_form: null,
    ...extra,
  };
}

export type Listener = () => void;

/** The parts of an anywidget model the view uses, recording what it sets. */
export class FakeModel {
  state: Record<string, unknown>;
  listeners = new Map<string, Set<Listener>>();
  saves = 0;
  constructor(state: Record<string, unknown>) {
    this.state = { error: "", selected_microbatch: -1, selected_op: -1, theme: "light", ...state };
  }
  get(k: string): any {
    return this.state[k];
  }
  set(k: string, v: unknown): void {
    this.state[k] = v;
    for (const f of this.listeners.get(`change:${k}`) ?? []) f();
  }
  save_changes(): void {
    this.saves++;
  }
  on(e: string, f: Listener): void {
    if (!this.listeners.has(e)) this.listeners.set(e, new Set());
    this.listeners.get(e)!.add(f);
  }
  off(e?: string | null, f?: Listener | null): void {
    if (e && f) this.listeners.get(e)?.delete(f);
  }
  listenerCount(): number {
    let n = 0;
    for (const s of this.listeners.values()) n += s.size;
    return n;
  }
}

export function modelFor(devices: number, spec: { ops: OpSpec[]; makespan: number }, extra: Record<string, unknown> = {}): FakeModel {
  const timeline = encodeTimeline(devices, spec.ops);
  const memory = encodeMemory(Array.from({ length: devices }, () => [[0, 0], [1, 1], [spec.makespan / 2, 2], [spec.makespan, 0]]));
  return new FakeModel({
    _timeline: new DataView(timeline.buffer),
    _memory: new DataView(memory.buffer),
    _meta: metaFor(devices, spec.ops, spec.makespan),
    ...extra,
  });
}

export function nextFrame(): Promise<void> {
  return new Promise((resolve) => requestAnimationFrame(() => resolve()));
}

/** A JupyterChart selection entry ({value, store}) as a Vega-Lite point selection records a click. */
export function clicked(values: Record<string, string | number>): unknown {
  const fields = Object.keys(values).map((field) => ({ field, type: "E" }));
  return { value: { vlPoint: { or: [values] } }, store: [{ unit: "view_1", fields, values: Object.values(values) }] };
}

/** ipywidgets' jslink as its front end does it: each side's change is copied to the other,
 * and a change made while one is being copied is ignored. */
export function jslink(a: FakeModel, aName: string, b: FakeModel, bName: string): void {
  let updating = false;
  const copy = (from: FakeModel, fromName: string, to: FakeModel, toName: string) => () => {
    if (updating) return;
    updating = true;
    try {
      to.set(toName, from.get(fromName));
      to.save_changes();
    } finally {
      updating = false;
    }
  };
  a.on(`change:${aName}`, copy(a, aName, b, bName));
  b.on(`change:${bName}`, copy(b, bName, a, aName));
  copy(a, aName, b, bName)();
}
