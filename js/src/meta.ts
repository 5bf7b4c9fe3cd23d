// The JSON-sized description Python sends beside the binary columns (ppviz.widget.describe).

export interface ClosedForm {
  makespan: number;
  bubble_fraction: number;
  bubble_rate: number;
  peak_activation: (number | null)[] | null;
  bubble_formula: string;
  memory_formula: string | null;
  assumptions: string;
  applies: boolean;
  /** why it does not apply: what it assumes and what in the config breaks it (null where it applies) */
  caveat?: string | null;
  source: string;
  /** forward-only programs: the published time to first output and throughput (absent or null otherwise) */
  first_output?: number | null;
  throughput?: number | null;
}

export interface Meta {
  title: string;
  schedule: string;
  devices: number;
  microbatches: number;
  stages: number;
  stages_per_device: number;
  f: number;
  b: number;
  w: number;
  /** an F&B pair's time (Config.fb, by default f + b + w: no gain from overlap); null without pairs */
  fb?: number | null;
  comm: number;
  /** the unit of every time ("ms", "us"…), "" for unitless */
  time_unit: string;
  rows: string[];
  ops: number;
  makespan: number;
  ideal: number;
  bubble_fraction: number;
  bubble_rate: number;
  idle: number[];
  peak_activation: number[];
  static_memory: number[];
  peak_memory: number[];
  activation_bytes: number | null;
  /** the device's memory in activation units (Config.memory_capacity), null without one */
  memory_capacity?: number | null;
  /** per device: peak memory (activation + static) within the capacity; null without one */
  fits?: boolean[] | null;
  /** per device: how far the peak memory exceeds the capacity (0 where it fits), activation units */
  excess?: number[] | null;
  /** sequence segments per microbatch (Seq1F1B): an op's microbatch index i is segment i % k of
   * microbatch ⌊i / k⌋, and `microbatches` counts the indices (whole_microbatches · k) */
  segments?: number;
  whole_microbatches?: number;
  /** a forward-only (inference) program: no backward ops */
  forward_only?: boolean;
  /** forward-only programs: when the last stage finishes its first microbatch */
  time_to_first_output?: number | null;
  /** forward-only programs: steady-state microbatches per unit of time (null for m = 1) */
  throughput?: number | null;
  /** with transfers (Config.topology): what the widget says about them (wire.describe) */
  communication?: Communication | null;
  /** with activation offload (Config.offload): the share copied and the host link (wire._offload) */
  offload?: { share: number; link: string; count: number } | null;
  /** with a training step beyond the pipeline (Config.step): its time and the split of the device with the longest tail (wire._step) */
  step?: Step | null;
  /** per stage, one op's tensor/expert-parallel traffic by kind [F, B, I, W] (Result.traffic); null without any */
  traffic?: number[][] | null;
  closed_form: ClosedForm | null;
}

/** The step: pipeline, then each device's data-parallel tail (ppviz/widgets/wire.py, `_step`). */
export interface Step {
  time: number;
  mfu: number | null;
  tokens_per_second: number | null;
  device: number;
  compute: number;
  tp_comm: number;
  p2p_wait: number;
  idle: number;
  dp_tail: number;
  /** the set-up before the ops (t = 0), and where the step ends on the ops' time axis: time − setup */
  setup: number;
  end: number;
  overlap_grad_reduce: boolean;
  overlap_param_gather: boolean;
  /** each tail part's name by kind ("gradient all-reduce", "optimizer step", "parameter all-gather") */
  names: Record<string, string>;
  /** each device's tail, a part per row (Result.tails) */
  tail: TailColumns;
}

/** The tail parts, as columns (ppviz/widgets/wire.py, `_step`): a reduction's stage (-1 for the
 * device's optimizer step and gather), its own time (a reduction's collective), and how long it
 * runs under the device's pipeline ops. */
export interface TailColumns {
  device: number[];
  stage: number[];
  kind: string[];
  start: number[];
  end: number[];
  time: number[];
  hidden: number[];
}

/** The transfers' setting and totals (ppviz/widgets/wire.py, `_communication`). */
export interface Communication {
  count: number;
  /** bytes of one transfer (Config.comm_bytes) and of all of them */
  bytes: number;
  volume: number;
  p2p: string | null;
  topology: string | null;
  /** device d is on node d // devices_per_node; null: one link between every pair of devices */
  devices_per_node: number | null;
  /** each link described, e.g. "latency 11.8 µs, 450 GB/s" (inter is null with one link) */
  intra: string;
  inter: string | null;
  /** per device: idle time waiting for communication, and for other devices' compute */
  exposed_comm: number[];
  idle_compute: number[];
}

/** The closed-form peak activation of device d, when the formula gives one. */
export function closedPeak(meta: Meta, d: number): number | null {
  const peaks = meta.closed_form?.peak_activation;
  const v = peaks ? peaks[d] : null;
  return typeof v === "number" ? v : null;
}

/** Sequence segments per microbatch (1 unless the program splits microbatches, as Seq1F1B does). */
export function segmentsOf(meta: Meta): number {
  const k = meta.segments;
  return typeof k === "number" && k > 1 ? k : 1;
}

/** An op's microbatch index as people read it: "3" or, with k segments, "microbatch.segment" ("3.1"). */
export function microbatchLabel(index: number, segments: number): string {
  return segments > 1 ? `${Math.floor(index / segments)}.${index % segments}` : String(index);
}
