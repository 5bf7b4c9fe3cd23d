// Geometry of the canvas in CSS pixels: gutter, Gantt rows, axis and memory lanes.

export interface Layout {
  width: number;
  height: number;
  devices: number;
  /** the plot spans x in [plotLeft, plotRight] */
  plotLeft: number;
  plotRight: number;
  rowHeight: number;
  /** top of device d's Gantt row */
  rowTop: number[];
  /** vertical inset of an op bar inside its row */
  barInset: number;
  ganttTop: number;
  ganttBottom: number;
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

export function rowHeightFor(devices: number, compact = false): number {
  if (compact) return devices <= 8 ? 16 : Math.max(6, Math.min(16, Math.floor(128 / devices)));
  if (devices <= 8) return 30;
  return Math.max(10, Math.min(30, Math.floor(320 / devices)));
}

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
 * `laneBands`: 0, or a transfer lane of 2 or 4 bands under each row (Layout.laneBands). */
export function computeLayout(width: number, devices: number, memory: boolean, compact = false,
  gutter?: number, laneBands = 0): Layout {
  const rowHeight = rowHeightFor(devices, compact);
  const laneHeight = laneBands ? transferLaneHeight(rowHeight, laneBands) : 0;
  memory = memory && !compact;
  const heat = memory && devices > HEAT_ABOVE;
  const gap = rowHeight >= 20 ? 6 : rowHeight >= 12 ? 2 : 1;
  const top = compact ? 4 : 8;
  const rowTop: number[] = [];
  for (let d = 0; d < devices; d++) rowTop.push(top + d * (rowHeight + laneHeight + gap));
  const laneTop = laneHeight ? rowTop.map((y) => y + rowHeight) : [];
  const ganttBottom = devices ? rowTop[devices - 1] + rowHeight + laneHeight : top;
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
    plotLeft,
    plotRight: Math.max(plotLeft + 10, width - RIGHT_PAD),
    rowHeight,
    rowTop,
    barInset: rowHeight >= 20 ? 3 : rowHeight >= 6 ? 1 : 0,
    ganttTop: top,
    ganttBottom,
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

/** The row under y (a Gantt row or a memory lane), or null between rows. */
export function laneAt(layout: Layout, y: number): Lane | null {
  for (let d = 0; d < layout.devices; d++) {
    if (y >= layout.rowTop[d] && y < layout.rowTop[d] + layout.rowHeight) return { area: "gantt", device: d };
    if (layout.laneHeight && y >= layout.laneTop[d] && y < layout.laneTop[d] + layout.laneHeight) {
      return { area: "transfer", device: d };
    }
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
export function labelAt(layout: Layout, x: number, y: number): number {
  if (x < 0 || x >= layout.plotLeft) return -1;
  const lane = laneAt(layout, y);
  return lane && lane.area === "gantt" ? lane.device : -1;
}
