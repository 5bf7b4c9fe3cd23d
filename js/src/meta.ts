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
  source: string;
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
  closed_form: ClosedForm | null;
}

/** The closed-form peak activation of device d, when the formula gives one. */
export function closedPeak(meta: Meta, d: number): number | null {
  const peaks = meta.closed_form?.peak_activation;
  const v = peaks ? peaks[d] : null;
  return typeof v === "number" ? v : null;
}
