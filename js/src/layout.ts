// Geometry of the canvas in CSS pixels: gutter, the overview strip, Gantt rows, axis and memory
// lanes. Rows keep a readable height however many devices there are; past ROWS_MAX_PX of them the
// rows scroll inside a viewport [ganttTop, ganttBottom), and rowTop (like laneTop) is in the
// rows' own coordinates, which equal the canvas's when the rows are scrolled to the top.

export interface Layout {
  width: number;
  height: number;
  devices: number;
  /** the overview strip of the whole run above the rows (0 high when there is none): a row of
   * overviewRow px per device, from overviewTop */
  overviewTop: number;
  overviewHeight: number;
  /** the plot spans x in [plotLeft, plotRight] */
  plotLeft: number;
  plotRight: number;
  rowHeight: number;
  /** top of device d's Gantt row */
  rowTop: number[];
  /** vertical inset of an op bar inside its row */
  barInset: number;
  /** the rows' viewport on the canvas: [ganttTop, ganttBottom) */
  ganttTop: number;
  ganttBottom: number;
  /** how far the rows scroll: their height beyond the viewport (0 when they all show) */
  scrollMax: number;
  axisTop: number;
  memTitleTop: number;
  memHeight: number;
  /** top of device d's memory lane */
  memTop: number[];
  memBottom: number;
  /** rows are tall enough to print two lines of label and the microbatch in each bar */
  roomy: boolean;
  /** the memory lanes are one heat strip (a row per device, colour = memory), for p > HEAT_ABOVE */
  heat: boolean;
  /** the transfer lane under each Gantt row (0 when hidden): its top half the device's sends,
   * its bottom half its receives */
  laneHeight: number;
  /** the lane's bands: 0 (no lane), 2 (the halves) or 4 (each half split between the links and the
   * host copies, for a run that has both: they run at once, and one band each keeps both in view) */
  laneBands: number;
  /** top of device d's transfer lane (just under its row) */
  laneTop: number[];
}

/** the gutter of a comparison's charts, which share one time axis (and so one plot edge) */
export const GUTTER = 132;
/** a measured gutter's bounds: never narrower, never more than this share of the width */
export const MIN_GUTTER = 56;
export const MAX_GUTTER_SHARE = 0.45;
/** above this many devices the memory lanes collapse into a heat strip */
export const HEAT_ABOVE = 16;
export const RIGHT_PAD = 18;
export const AXIS_HEIGHT = 28;
export const MEM_TITLE = 22;

/** The least row height: rows stay this tall (their labels at PX.label, their bars' labels
 * inside them) and scroll, rather than shrinking past legibility. */
export const MIN_ROW = 20;
export const MIN_COMPACT_ROW = 14;
/** The rows' viewport at most (CSS px): beyond it they scroll. */
export const ROWS_MAX_PX = 480;
export const COMPACT_ROWS_MAX_PX = 150;

export function rowHeightFor(devices: number, compact = false): number {
  if (compact) return devices <= 8 ? 16 : Math.max(MIN_COMPACT_ROW, Math.min(16, Math.floor(128 / devices)));
  if (devices <= 8) return 30;
  return Math.max(MIN_ROW, Math.min(30, Math.floor(320 / devices)));
}

/** The overview strip's height: a few pixels per device, within bounds (a comparison's is lower). */
export function overviewHeightFor(devices: number, compact = false): number {
  return compact ? Math.max(12, Math.min(32, 2 * devices)) : Math.max(24, Math.min(64, 4 * devices));
}
/** space between the overview and the rows */
export const OVERVIEW_GAP = 12;

/** A memory lane's height: a little less than a row's, or a heat strip's row (2 to 6 px). */
export function memoryLaneHeight(rowHeight: number, devices: number): number {
  return devices > HEAT_ABOVE ? Math.max(2, Math.min(6, Math.floor(192 / devices))) : Math.max(12, Math.round(rowHeight * 0.9));
}

/** A transfer lane's height under a row `rowHeight` px tall: two halves (sends, receives) of at
 * least 2 px each; with four bands (`bands`), taller where the row leaves room. */
export function transferLaneHeight(rowHeight: number, bands = 2): number {
  if (bands === 4) return rowHeight >= 20 ? 14 : rowHeight >= 12 ? 8 : 4;
  return rowHeight >= 20 ? 10 : rowHeight >= 12 ? 6 : 4;
}

/** `compact` (the charts of a comparison): thin rows, no memory lanes, the shared gutter.
 * `gutter`: the width the row labels need (labels.ts); without it, the shared gutter.
 * `laneBands`: 0, or a transfer lane of 2 or 4 bands under each row (Layout.laneBands).
 * `overview`: the overview strip above the rows. */
export function computeLayout(width: number, devices: number, memory: boolean, compact = false,
  gutter?: number, laneBands = 0, overview = false): Layout {
  const rowHeight = rowHeightFor(devices, compact);
  const laneHeight = laneBands ? transferLaneHeight(rowHeight, laneBands) : 0;
  memory = memory && !compact;
  const heat = memory && devices > HEAT_ABOVE;
  const gap = rowHeight >= 24 ? 6 : rowHeight >= 12 ? 3 : 1;
  const overviewTop = compact ? 4 : 8;
  const overviewHeight = overview ? overviewHeightFor(devices, compact) : 0;
  const top = overview ? overviewTop + overviewHeight + (compact ? OVERVIEW_GAP / 2 : OVERVIEW_GAP) : overviewTop;
  const rowTop: number[] = [];
  for (let d = 0; d < devices; d++) rowTop.push(top + d * (rowHeight + laneHeight + gap));
  const laneTop = laneHeight ? rowTop.map((y) => y + rowHeight) : [];
  const rowsBottom = devices ? rowTop[devices - 1] + rowHeight + laneHeight : top;
  // whole rows in the viewport when it scrolls, so that its edge does not cut one in two at rest
  const pitch = rowHeight + laneHeight + gap;
  const most = compact ? COMPACT_ROWS_MAX_PX : ROWS_MAX_PX;
  const ganttBottom = rowsBottom - top <= most ? rowsBottom : top + Math.max(1, Math.floor((most + gap) / pitch)) * pitch - gap;
  const axisTop = ganttBottom + 4;
  const memTitleTop = axisTop + AXIS_HEIGHT;
  const memHeight = memory ? memoryLaneHeight(rowHeight, devices) : 0;
  const memGap = heat ? 0 : memHeight >= 20 ? 5 : 2;
  const memTop: number[] = [];
  let y = memTitleTop + (memory ? MEM_TITLE : 0);
  for (let d = 0; memory && d < devices; d++) {
    memTop.push(y);
    y += memHeight + memGap;
  }
  const memBottom = memory ? y - memGap : compact ? memTitleTop - 6 : memTitleTop;
  // whole pixels, so that the bar strip maps 1:1 onto device pixels
  const plotLeft = Math.round(compact || gutter === undefined
    ? Math.min(GUTTER, Math.max(60, width * 0.25))
    : Math.min(Math.max(gutter, MIN_GUTTER), Math.max(MIN_GUTTER, width * MAX_GUTTER_SHARE)));
  return {
    width,
    height: Math.ceil(memBottom + 10),
    devices,
    overviewTop,
    overviewHeight,
    plotLeft,
    plotRight: Math.max(plotLeft + 10, width - RIGHT_PAD),
    rowHeight,
    rowTop,
    barInset: rowHeight >= 20 ? 3 : rowHeight >= 6 ? 1 : 0,
    ganttTop: top,
    ganttBottom,
    scrollMax: rowsBottom - ganttBottom,
    axisTop,
    memTitleTop,
    memHeight,
    memTop,
    memBottom,
    roomy: rowHeight >= 24,
    heat,
    laneHeight,
    laneBands: laneHeight ? laneBands : 0,
    laneTop,
  };
}

export type Lane = { area: "gantt" | "memory" | "transfer"; device: number };

/** Whether canvas y is in the rows' viewport. */
export function inRows(layout: Layout, y: number): boolean {
  return y >= layout.ganttTop && y < layout.ganttBottom;
}

/** Whether canvas y is in the overview strip. */
export function inOverview(layout: Layout, y: number): boolean {
  return layout.overviewHeight > 0 && y >= layout.overviewTop - 2 && y < layout.overviewTop + layout.overviewHeight + 2;
}

/** The row under canvas y (a Gantt row, its transfer lane or a memory lane), or null between
 * rows; `scroll` is how far the rows are scrolled. */
export function laneAt(layout: Layout, y: number, scroll = 0): Lane | null {
  if (inRows(layout, y)) {
    const c = y + scroll;
    for (let d = 0; d < layout.devices; d++) {
      if (c >= layout.rowTop[d] && c < layout.rowTop[d] + layout.rowHeight) return { area: "gantt", device: d };
      if (layout.laneHeight && c >= layout.laneTop[d] && c < layout.laneTop[d] + layout.laneHeight) {
        return { area: "transfer", device: d };
      }
    }
    return null;
  }
  for (let d = 0; d < layout.memTop.length; d++) {
    if (y >= layout.memTop[d] && y < layout.memTop[d] + layout.memHeight) return { area: "memory", device: d };
  }
  return null;
}

export function inPlot(layout: Layout, x: number): boolean {
  return x >= layout.plotLeft && x <= layout.plotRight;
}

/** The device whose row label (in the gutter left of the plot) is at (x, y), or -1. */
export function labelAt(layout: Layout, x: number, y: number, scroll = 0): number {
  if (x < 0 || x >= layout.plotLeft) return -1;
  const lane = laneAt(layout, y, scroll);
  return lane && lane.area === "gantt" ? lane.device : -1;
}

/** The devices whose rows show (partly) in the viewport at this scroll: [first, last]. */
export function rowsInView(layout: Layout, scroll: number): [number, number] {
  let first = -1;
  let last = -1;
  for (let d = 0; d < layout.devices; d++) {
    const top = layout.rowTop[d] - scroll;
    if (top + layout.rowHeight > layout.ganttTop && top < layout.ganttBottom) {
      if (first < 0) first = d;
      last = d;
    }
  }
  return [Math.max(0, first), Math.max(0, last)];
}
