// The time axis: which span of time is in view, how it maps to pixels, zoom, pan and ticks.

export interface TimeView {
  t0: number;
  t1: number;
}

/** How far one may zoom in, relative to the makespan: float32 times stop meaning more below this. */
export const MIN_SPAN_FRACTION = 1e-6;

export function fullView(makespan: number): TimeView {
  return { t0: 0, t1: makespan > 0 ? makespan : 1 };
}

/** Whether v shows all of [0, extent]. */
export function isFull(v: TimeView, extent: number): boolean {
  const full = fullView(extent);
  return v.t0 <= full.t0 && v.t1 >= full.t1;
}

export class Scale {
  readonly k: number;
  constructor(
    readonly view: TimeView,
    readonly x0: number,
    readonly x1: number,
  ) {
    this.k = (x1 - x0) / (view.t1 - view.t0);
  }
  x(t: number): number {
    return this.x0 + (t - this.view.t0) * this.k;
  }
  t(x: number): number {
    return this.view.t0 + (x - this.x0) / this.k;
  }
}

/** Keep a view inside [0, makespan] and no narrower than the zoom limit. */
export function clampView(v: TimeView, makespan: number): TimeView {
  const full = fullView(makespan);
  const fullSpan = full.t1 - full.t0;
  const span = Math.min(fullSpan, Math.max(fullSpan * MIN_SPAN_FRACTION, v.t1 - v.t0));
  let t0 = Math.min(Math.max(v.t0, full.t0), full.t1 - span);
  if (!Number.isFinite(t0)) t0 = full.t0;
  return { t0, t1: t0 + span };
}

/** Zoom by `factor` (> 1 zooms in) keeping time `anchor` where it is on screen. */
export function zoomAt(v: TimeView, factor: number, anchor: number, makespan: number): TimeView {
  const span = (v.t1 - v.t0) / factor;
  const full = fullView(makespan);
  const clampedSpan = Math.min(full.t1 - full.t0, Math.max((full.t1 - full.t0) * MIN_SPAN_FRACTION, span));
  const share = (anchor - v.t0) / (v.t1 - v.t0);
  const t0 = anchor - share * clampedSpan;
  return clampView({ t0, t1: t0 + clampedSpan }, makespan);
}

export function panBy(v: TimeView, dt: number, makespan: number): TimeView {
  return clampView({ t0: v.t0 + dt, t1: v.t1 + dt }, makespan);
}

/** A 1, 2 or 5 × 10^k step giving ticks at least `minPx` apart. */
export function tickStep(span: number, widthPx: number, minPx: number): number {
  const raw = (span * minPx) / Math.max(1, widthPx);
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

export function ticks(v: TimeView, widthPx: number, minPx = 72): { step: number; values: number[] } {
  const step = tickStep(v.t1 - v.t0, widthPx, minPx);
  const values: number[] = [];
  const first = Math.ceil(v.t0 / step - 1e-9);
  for (let i = first; i * step <= v.t1 + step * 1e-9; i++) values.push(i * step);
  return { step, values };
}
