// Which op is under the pointer: the lane from y, then a binary search on the lane's starts.

import { type Timeline, slotOf, upperBound } from "./data";
import { type Layout, inPlot, laneAt } from "./layout";
import type { Scale } from "./scale";

/** The op (the F of an F&B pair for a pair) drawn at canvas (x, y) with the rows scrolled by
 * `scroll`, or -1. A bar narrower than a pixel is still found when the pointer is within
 * `tolerance` pixels of it. */
export function hitTest(tl: Timeline, layout: Layout, scale: Scale, x: number, y: number, tolerance = 3,
  scroll = 0): number {
  const lane = laneAt(layout, y, scroll);
  if (!lane || lane.area !== "gantt" || !inPlot(layout, x) || lane.device >= tl.devices) return -1;
  const lo = tl.offsets[lane.device];
  const hi = tl.offsets[lane.device + 1];
  if (lo === hi) return -1;
  const t = scale.t(x);
  const k = upperBound(tl.start, lo, hi, t) - 1;
  let best = -1;
  let bestDistance = tolerance;
  for (let c = Math.max(lo, k - 1); c <= Math.min(hi - 1, k + 1); c++) {
    const slot = slotOf(tl, c);
    if (tl.dur[slot] <= 0) continue;
    const xa = scale.x(tl.start[slot]);
    const xb = scale.x(tl.start[slot] + tl.dur[slot]);
    const distance = x < xa ? xa - x : x > xb ? x - xb : 0;
    if (distance < bestDistance || (distance === 0 && best < 0)) {
      best = slot;
      bestDistance = distance;
    }
  }
  return best;
}
