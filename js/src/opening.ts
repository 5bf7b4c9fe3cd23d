// The window a chart opens on. A run whose ops are too narrow for their labels at full width (a
// barcode: interleaved 1F1B at p = 8, m = 32, v = 2 across 800 px) opens on the span from its
// start in which most of its ops carry their microbatch label, with the whole run in the overview
// strip above; a run readable whole opens whole, as before.

import { FLAG_PAIR_B, FLAG_PAIR_F, type Timeline } from "./data";
import { DOWN, LABEL_PAD_PX, labelOf } from "./draw";

/** The share of ops the opening window gives room for their labels. */
export const READABLE_SHARE = 0.9;
/** Ops sampled at most to find it (strided through the program). */
const SAMPLE = 20_000;

/** The span of time (from 0) across `plotWidth` px in which READABLE_SHARE of the ops are wide
 * enough for their labels, measured in the context's current font; Infinity without ops. */
export function readableSpan(ctx: CanvasRenderingContext2D, tl: Timeline, segments: number, plotWidth: number): number {
  const digit = ctx.measureText("0").width;
  const mark = ctx.measureText(DOWN).width;
  const step = Math.max(1, Math.floor(tl.n / SAMPLE));
  const needs: number[] = [];
  for (let k = 0; k < tl.n; k += step) {
    const f = tl.flags[k];
    if (f & FLAG_PAIR_B || !(tl.dur[k] > 0)) continue;
    const text = labelOf(tl, k, segments);
    const marks = tl.bidirectional ? (f & FLAG_PAIR_F ? 2 : 1) : 0;
    // px per unit of time this op needs (its label, the bar's padding and its one-pixel gap)
    needs.push(((text.length - marks) * digit + marks * mark + LABEL_PAD_PX + 1) / tl.dur[k]);
  }
  if (!needs.length) return Infinity;
  needs.sort((a, b) => a - b);
  const k = needs[Math.min(needs.length - 1, Math.floor(READABLE_SHARE * needs.length))];
  return plotWidth / k;
}

/** The view a chart of time axis [0, extent] opens on, given the span readable at its width. */
export function openingView(span: number, extent: number): { t0: number; t1: number } | null {
  return span < extent ? { t0: 0, t1: span } : null;
}
