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
}

export const GUTTER = 132;
export const RIGHT_PAD = 18;
export const AXIS_HEIGHT = 28;
export const MEM_TITLE = 22;

export function rowHeightFor(devices: number, compact = false): number {
  if (compact) return devices <= 8 ? 16 : Math.max(6, Math.min(16, Math.floor(128 / devices)));
  if (devices <= 8) return 30;
  return Math.max(10, Math.min(30, Math.floor(320 / devices)));
}

/** `compact` (the charts of a comparison): thin rows, no memory lanes. */
export function computeLayout(width: number, devices: number, memory: boolean, compact = false): Layout {
  const rowHeight = rowHeightFor(devices, compact);
  memory = memory && !compact;
  const gap = rowHeight >= 20 ? 6 : rowHeight >= 12 ? 2 : 1;
  const top = compact ? 4 : 8;
  const rowTop: number[] = [];
  for (let d = 0; d < devices; d++) rowTop.push(top + d * (rowHeight + gap));
  const ganttBottom = devices ? rowTop[devices - 1] + rowHeight : top;
  const axisTop = ganttBottom + 4;
  const memTitleTop = axisTop + AXIS_HEIGHT;
  const memHeight = memory ? Math.max(12, Math.round(rowHeight * 0.9)) : 0;
  const memGap = memHeight >= 20 ? 5 : 2;
  const memTop: number[] = [];
  let y = memTitleTop + (memory ? MEM_TITLE : 0);
  for (let d = 0; memory && d < devices; d++) {
    memTop.push(y);
    y += memHeight + memGap;
  }
  const memBottom = memory ? y - memGap : compact ? memTitleTop - 6 : memTitleTop;
  // whole pixels, so that the bar strip maps 1:1 onto device pixels
  const plotLeft = Math.round(Math.min(GUTTER, Math.max(60, width * 0.25)));
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
  };
}

export type Lane = { area: "gantt" | "memory"; device: number };

/** The row under y (a Gantt row or a memory lane), or null between rows. */
export function laneAt(layout: Layout, y: number): Lane | null {
  for (let d = 0; d < layout.devices; d++) {
    if (y >= layout.rowTop[d] && y < layout.rowTop[d] + layout.rowHeight) return { area: "gantt", device: d };
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
