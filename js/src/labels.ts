// What the gutter left of the plot says, in the fonts it is drawn with: each device row's label
// and each memory lane's, and how wide the gutter must be to show them whole. Labels come from
// Python (meta.rows, e.g. "stages 3, 67, 131"), so at large p the gutter widens rather than
// cutting them; only a chart too narrow for them ends a label with "…".

import style from "../../ppviz/style.json";
import { excessText, formatMemory, isOver, laneBase, lanePeak, memoryUnit } from "./fit";
import { share } from "./format";
import { HEAT_ABOVE, MIN_ROW, memoryLaneHeight, rowHeightFor } from "./layout";
import type { Meta } from "./meta";

export const FONT = style.font.family;
/** Font sizes by role (px), from style.json. */
export const PX = style.font.px;
/** gap between a label's right end and the plot */
export const LABEL_GAP = 10;
const LEFT_PAD = 4;

export interface GutterFonts {
  /** roomy rows: "device d" (bold), then "N% idle" and the row's stages on a second line */
  roomy: boolean;
  head: string;
  small: string;
  /** a one-line row label, and the smaller one it takes where the chart is too narrow for it */
  row: string;
  narrow: string;
  memory: string;
}

/** The overview strip's name in the gutter, what it is and what it does, each with its font. */
export const OVERVIEW_LABEL: [[string, string], [string, string]] = [["whole run", `600 ${PX.label}px ${FONT}`],
  ["drag the window", `${PX.label}px ${FONT}`]];

/** The size of the microbatch labels inside bars of a row this tall. */
export function barLabelPx(rowHeight: number): number {
  return rowHeight >= MIN_ROW ? PX.label : PX.tiny;
}

/** The size of a one-line row label in the gutter (a roomy row's "device d" is PX.text). */
export function rowLabelPx(rowHeight: number): number {
  return rowHeight >= 24 ? PX.text : rowHeight >= 14 ? PX.label : PX.tiny;
}

export function gutterFonts(rowHeight: number, memHeight: number): GutterFonts {
  return {
    roomy: rowHeight >= 24,
    head: `600 ${PX.text}px ${FONT}`,
    small: `${PX.caption}px ${FONT}`,
    row: `${rowLabelPx(rowHeight)}px ${FONT}`,
    narrow: `${PX.tiny}px ${FONT}`,
    memory: `${memHeight >= 16 ? PX.label : PX.tiny}px ${FONT}`,
  };
}

export function idleShare(meta: Meta, d: number): string {
  const idle = meta.makespan > 0 ? (meta.idle[d] ?? 0) / meta.makespan : 0;
  return ` ${share(idle)} idle`;
}

/** A one-line row label: "3 · stages 3, 11". */
export function rowLine(meta: Meta, d: number): string {
  const stages = meta.rows[d] ?? "";
  return stages ? `${d} · ${stages}` : String(d);
}

/** A memory lane's label: its peak, or its value at the replay's time (`value`: activation
 * memory then, to which the lane adds the static memory when it shows it), in GiB with bytes. */
export function memoryLine(meta: Meta, d: number, roomy: boolean, value: number | null): string {
  const u = memoryUnit(meta);
  const peak = formatMemory(lanePeak(meta, d), u);
  const text = value === null ? `peak ${peak}` : `${formatMemory(value + laneBase(meta, d), u)} of ${peak}`;
  return `${roomy ? "device " : ""}${d}  ${text}`;
}

/** A lane tall enough for two lines of label: a device over its capacity gives its excess on the second. */
export const TWO_LINE_LANE = 22;

/** A memory lane's label, as drawn: its line (memoryLine), and for a device over its capacity
 * the excess ("+28.2 GiB over"), on a second line in a lane at least TWO_LINE_LANE px tall, else
 * instead of the peak. */
export function memoryLabel(meta: Meta, d: number, roomy: boolean, value: number | null, laneHeight: number):
  { first: string; second: string | null } {
  const excess = excessText(meta, d);
  if (excess === null) return { first: memoryLine(meta, d, roomy, value), second: null };
  if (laneHeight >= TWO_LINE_LANE) return { first: memoryLine(meta, d, roomy, value), second: excess };
  return { first: `${roomy ? "device " : ""}${d}  ${excess}`, second: null };
}

/** The gutter's width in CSS pixels for these labels, before the chart's width caps it. */
export function gutterWidth(ctx: CanvasRenderingContext2D, meta: Meta, devices: number, memory: boolean,
  compact: boolean, overview = false): number {
  const rowHeight = rowHeightFor(devices, compact);
  const fonts = gutterFonts(rowHeight, memoryLaneHeight(rowHeight, devices));
  let widest = 0;
  const measure = (font: string, text: string) => {
    ctx.font = font;
    return ctx.measureText(text).width;
  };
  for (let d = 0; d < devices; d++) {
    if (fonts.roomy) {
      widest = Math.max(widest, measure(fonts.head, `device ${d}`) + 2 + measure(fonts.small, idleShare(meta, d)),
        measure(fonts.small, meta.rows[d] ?? ""));
    } else {
      widest = Math.max(widest, measure(fonts.row, rowLine(meta, d)));
    }
    if (memory && !compact && devices <= HEAT_ABOVE) {
      // the widest a lane's label gets: during a replay it shows "value of peak"
      const peak = meta.peak_activation[d] ?? 0;
      const font = isOver(meta, d) ? `600 ${fonts.memory}` : fonts.memory;
      const label = memoryLabel(meta, d, fonts.roomy, peak, memoryLaneHeight(rowHeight, devices));
      widest = Math.max(widest, measure(font, label.first), label.second === null ? 0 : measure(font, label.second));
    }
  }
  if (overview) for (const [text, font] of OVERVIEW_LABEL) widest = Math.max(widest, measure(font, text));
  return Math.ceil(widest) + LABEL_GAP + LEFT_PAD;
}

/** `text` cut with "…" to fit `width` in the context's font; `cut` counts the labels cut. */
export function fit(ctx: CanvasRenderingContext2D, text: string, width: number, cut: { count: number }): string {
  if (ctx.measureText(text).width <= width) return text;
  cut.count++;
  let lo = 0;
  let hi = text.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (ctx.measureText(text.slice(0, mid) + "…").width <= width) lo = mid;
    else hi = mid - 1;
  }
  return text.slice(0, lo) + "…";
}
