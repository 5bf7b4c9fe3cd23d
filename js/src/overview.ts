// The overview strip above a dense run's rows: the whole run, a thin row per device (draw.ts paints
// its bars as pixels, once per run), with the detail view's window on it. The window is the span
// of time in view (and, when the rows scroll, the devices in view); outside it the strip is
// dimmed, so the bubbles and the window read at a glance. Dragging the window moves the detail
// view, dragging its edges resizes it, and pressing beside it moves the window there (view.ts).

import type { Scene } from "./draw";
import { OVERVIEW_LABEL } from "./labels";
import { type Layout, rowsInView } from "./layout";
import type { TimeView } from "./scale";

/** The least width (px) the window is drawn and grabbed at, however far the detail is zoomed. */
export const MIN_WINDOW_PX = 8;
/** How near (px) a window's edge the pointer resizes rather than moves it. */
export const EDGE_PX = 5;

/** Each device's row in the strip, [top, height]: a few pixels each with a hairline between
 * them; or, when there are fewer than 3 px per device, one band holding all of them. */
export function overviewRows(L: Layout): [number, number][] {
  const per = L.overviewHeight / Math.max(1, L.devices);
  if (per < 3) return [[L.overviewTop, L.overviewHeight]];
  return Array.from({ length: L.devices }, (_, d) => [L.overviewTop + d * per, per - 1] as [number, number]);
}

/** The strip's x of time t, the whole time axis [0, extent] across the plot. */
export function overviewX(L: Layout, extent: number, t: number): number {
  return L.plotLeft + (t / Math.max(extent, 1e-12)) * (L.plotRight - L.plotLeft);
}

/** The time at the strip's x. */
export function overviewTime(L: Layout, extent: number, x: number): number {
  return ((x - L.plotLeft) / Math.max(1, L.plotRight - L.plotLeft)) * extent;
}

export interface WindowBox {
  x0: number;
  x1: number;
  y0: number;
  y1: number;
}

/** The window on the strip: the view's span of time, and the devices whose rows are in view. */
export function windowBox(L: Layout, view: TimeView, extent: number, scroll: number): WindowBox {
  let x0 = overviewX(L, extent, view.t0);
  let x1 = overviewX(L, extent, view.t1);
  if (x1 - x0 < MIN_WINDOW_PX) {
    const mid = (x0 + x1) / 2;
    x0 = Math.max(L.plotLeft, Math.min(L.plotRight - MIN_WINDOW_PX, mid - MIN_WINDOW_PX / 2));
    x1 = x0 + MIN_WINDOW_PX;
  }
  if (L.scrollMax <= 0) return { x0, x1, y0: L.overviewTop, y1: L.overviewTop + L.overviewHeight };
  const [first, last] = rowsInView(L, scroll);
  const per = L.overviewHeight / Math.max(1, L.devices);
  return { x0, x1, y0: L.overviewTop + first * per, y1: L.overviewTop + (last + 1) * per };
}

export type OverviewGrip = "left" | "right" | "move" | "jump";

/** What a press at x on the strip does: resize the window by an edge, move it, or move it there. */
export function gripAt(box: WindowBox, x: number): OverviewGrip {
  if (Math.abs(x - box.x0) <= EDGE_PX && box.x1 - box.x0 > 2 * EDGE_PX) return "left";
  if (Math.abs(x - box.x1) <= EDGE_PX && box.x1 - box.x0 > 2 * EDGE_PX) return "right";
  return x >= box.x0 && x <= box.x1 ? "move" : "jump";
}

/** The window: everything outside it dimmed, its outline, and grips on its edges. */
export function drawOverviewWindow(ctx: CanvasRenderingContext2D, s: Scene): void {
  const { layout: L, palette: P } = s;
  const b = windowBox(L, s.scale.view, s.extent, s.scroll ?? 0);
  const top = L.overviewTop;
  const bottom = top + L.overviewHeight;
  ctx.fillStyle = P.background;
  ctx.globalAlpha = 0.5;
  ctx.fillRect(L.plotLeft, top, b.x0 - L.plotLeft, L.overviewHeight);
  ctx.fillRect(b.x1, top, L.plotRight - b.x1, L.overviewHeight);
  ctx.fillRect(b.x0, top, b.x1 - b.x0, b.y0 - top);
  ctx.fillRect(b.x0, b.y1, b.x1 - b.x0, bottom - b.y1);
  ctx.globalAlpha = 1;
  ctx.strokeStyle = P.foreground;
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  ctx.roundRect(b.x0 - 0.75, b.y0 - 0.75, b.x1 - b.x0 + 1.5, b.y1 - b.y0 + 1.5, 2.5);
  ctx.stroke();
  // grips: the edges can be dragged
  if (b.x1 - b.x0 > 2 * EDGE_PX + 4) {
    const h = Math.min(12, (b.y1 - b.y0) * 0.6);
    const mid = (b.y0 + b.y1) / 2;
    ctx.fillStyle = P.foreground;
    for (const x of [b.x0, b.x1]) {
      ctx.beginPath();
      ctx.roundRect(x - 1.5, mid - h / 2, 3, h, 1.5);
      ctx.fill();
    }
  }
}

/** The strip's name in the gutter (labels.ts's OVERVIEW_LABEL). */
export function drawOverviewLabel(ctx: CanvasRenderingContext2D, s: Scene): void {
  const { layout: L, palette: P } = s;
  if (!L.overviewHeight) return;
  const right = L.plotLeft - 10;
  const mid = L.overviewTop + L.overviewHeight / 2;
  const two = L.overviewHeight >= 26;
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  const [[name, nameFont], [hint, hintFont]] = OVERVIEW_LABEL;
  ctx.font = nameFont;
  ctx.fillStyle = P.foreground;
  ctx.fillText(name, right, two ? mid - 7 : mid);
  if (two) {
    ctx.font = hintFont;
    ctx.fillStyle = P.muted;
    ctx.fillText(hint, right, mid + 7);
  }
}
