// The overlay of ppviz.show(measured, against=...): the simulation of the measured program drawn
// on the measured chart's rows, its residuals (measured − simulated) in the tooltip and a summary.
// Python computes every number (ppviz/widgets/overlay.py, which documents the bytes decoded here).
//
// Each Gantt row keeps the measured bar on top and gives its lower part to a ghost strip: the
// op's simulated span, filled with the residual colour of its end (late or early, stronger the
// larger the residual) and outlined, so that a late or long op shows as a coloured ghost left of
// its bar. A thin mark joins each bar's measured start to its simulated one.

import style from "../../ppviz/style.json";
import { FLAG_PAIR_B, FLAG_PAIR_F, type Timeline, deviceOf, endOf, opsOf, slotOf, toBytes } from "./data";
import type { Scene } from "./draw";
import { PRECISE, number, share } from "./format";
import type { Layout } from "./layout";
import type { Meta } from "./meta";
import type { Scale } from "./scale";
import type { ThemeName } from "./theme";

export const OVERLAY_MAGIC = 0x4f565050; // "PPVO"
export const OVERLAY_VERSION = 1;

/** Per op (timeline order): the simulated span and the residuals Python computed. */
export interface Overlay {
  n: number;
  simStart: Float32Array;
  simEnd: Float32Array;
  /** measured − simulated start and duration */
  startRes: Float32Array;
  durRes: Float32Array;
  /** the transfer it waited for took this much longer than the modelled comm (0: it did not wait) */
  commExcess: Float32Array;
  /** its device sat idle before it although its input was there */
  hostGap: Float32Array;
  /** the largest |end residual| (the ghosts' colour scale) */
  maxEndRes: number;
  /** how far a ghost can lie from its bar (culling reaches this far) */
  reach: number;
}

/** meta.overlay: the summary (ppviz/widgets/overlay.py, describe_overlay). */
export interface OverlaySummary {
  label: string;
  /** [measured, simulated] */
  pipeline_time: [number, number];
  bubble_fraction: [number, number];
  difference: number;
  attribution: { compute_variance: number; communication: number; host_overhead: number };
  /** per device: measured − simulated busy time, idle time spent with the next op ready, last op's end */
  compute_excess: number[];
  host_gaps: number[];
  finish: number[];
  straggler: number | null;
  comm: number;
}

export function overlaySummary(meta: Meta | null): OverlaySummary | null {
  const o = (meta as (Meta & { overlay?: OverlaySummary | null }) | null)?.overlay;
  return o && Array.isArray(o.pipeline_time) ? o : null;
}

/** The overlay trait's columns, or null when it is empty (a chart without overlay). */
export function decodeOverlay(input: unknown, n: number): Overlay | null {
  let bytes = toBytes(input);
  if (bytes.byteLength === 0) return null;
  if (bytes.byteOffset % 4 !== 0) bytes = bytes.slice();
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.byteLength < 12 || view.getUint32(0, true) !== OVERLAY_MAGIC) {
    throw new Error("ppviz: the overlay data is not in ppviz's format");
  }
  const version = view.getUint32(4, true);
  if (version !== OVERLAY_VERSION) {
    throw new Error(`ppviz: overlay format ${version}, this front end reads ${OVERLAY_VERSION}; reinstall ppviz`);
  }
  const count = view.getUint32(8, true);
  if (count !== n) throw new Error(`ppviz: the overlay has ${count} ops, the timeline ${n}`);
  if (bytes.byteLength < 12 + 24 * n) throw new Error(`ppviz: overlay data ends early (${bytes.byteLength} bytes)`);
  const col = (i: number) => new Float32Array(bytes.buffer as ArrayBuffer, bytes.byteOffset + 12 + 4 * n * i, n);
  const ov: Overlay = {
    n, simStart: col(0), simEnd: col(1), startRes: col(2), durRes: col(3), commExcess: col(4), hostGap: col(5),
    maxEndRes: 0, reach: 0,
  };
  for (let k = 0; k < n; k++) {
    ov.maxEndRes = Math.max(ov.maxEndRes, Math.abs(ov.startRes[k] + ov.durRes[k]));
    ov.reach = Math.max(ov.reach, Math.abs(ov.startRes[k]) + Math.abs(ov.durRes[k]));
  }
  return ov;
}

// Layout ----------------------------------------------------------------------------------

export interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** The ghost strip of device d's row: the lower part of the bar area (at least 5 px, about a
 * third), and the measured bar above it (one pixel apart). */
export function ghostStrip(L: Layout, d: number): { bar: Box; strip: Box } {
  const top = L.rowTop[d] + L.barInset;
  const h = L.rowHeight - 2 * L.barInset;
  const gh = Math.max(Math.min(5, h), Math.round(h * 0.3));
  const barH = Math.max(1, h - gh - 1);
  return {
    bar: { x: L.plotLeft, y: top, w: L.plotRight - L.plotLeft, h: barH },
    strip: { x: L.plotLeft, y: top + h - gh, w: L.plotRight - L.plotLeft, h: gh },
  };
}

/** The simulated span of slot k (an F&B pair: both ops) and its residuals at both ends. */
export function ghostOf(tl: Timeline, ov: Overlay, k: number): { start: number; end: number; lateStart: number; lateEnd: number } {
  const slot = slotOf(tl, k);
  const last = tl.flags[slot] & FLAG_PAIR_F ? slot + 1 : slot;
  const start = ov.simStart[slot];
  const end = Math.max(ov.simEnd[slot], ov.simEnd[last]);
  return { start, end, lateStart: tl.start[slot] - start, lateEnd: Math.max(endOf(tl, slot), endOf(tl, last)) - end };
}

/** Where the ghost of slot k is drawn, and the mark from its simulated start to its measured one
 * (x0 → x1, late when the measured start is later). */
export function ghostBox(tl: Timeline, ov: Overlay, L: Layout, scale: Scale, k: number): { ghost: Box; mark: { x0: number; x1: number; y: number; late: boolean } } {
  const slot = slotOf(tl, k);
  const d = deviceOf(tl, slot);
  const g = ghostOf(tl, ov, slot);
  const { bar, strip } = ghostStrip(L, d);
  const x0 = scale.x(g.start);
  return {
    ghost: { x: x0, y: strip.y, w: Math.max(1, (g.end - g.start) * scale.k), h: strip.h },
    mark: { x0, x1: scale.x(tl.start[slot]), y: bar.y + bar.h, late: g.lateStart > 0 },
  };
}

// Drawing ---------------------------------------------------------------------------------

function colours(name: ThemeName) {
  const t = style.themes[name];
  return { ghost: t.overlayGhost, line: t.overlaySimulated, late: t.residualLate, early: t.residualEarly };
}

/** The first and one-past-last op of device d whose ghost can show in [t0, t1]. */
function ghostRange(tl: Timeline, ov: Overlay, d: number, t0: number, t1: number): [number, number] {
  let lo = tl.offsets[d];
  let hi = tl.offsets[d + 1];
  const a = t0 - ov.reach;
  const b = t1 + ov.reach;
  while (lo < hi && endOf(tl, lo) < a && tl.start[lo] < a) lo++;
  while (hi > lo && tl.start[hi - 1] > b) hi--;
  return [lo, hi];
}

type Colours = ReturnType<typeof colours>;

/** Slot k's ghost and start mark. */
function paintGhost(ctx: CanvasRenderingContext2D, s: Scene, ov: Overlay, C: Colours, k: number): void {
  const { tl, layout: L, scale } = s;
  const { ghost, mark } = ghostBox(tl, ov, L, scale, k);
  if (ghost.x > L.plotRight || ghost.x + ghost.w < L.plotLeft) return;
  const late = ghostOf(tl, ov, k).lateEnd;
  ctx.fillStyle = late > 0 ? C.late : C.early;
  ctx.globalAlpha = 0.15 + 0.85 * Math.min(1, Math.abs(late) / Math.max(ov.maxEndRes, 1e-12));
  ctx.fillRect(ghost.x, ghost.y, ghost.w, ghost.h);
  ctx.globalAlpha = 1;
  if (ghost.w >= 3) {
    ctx.strokeStyle = C.line;
    ctx.lineWidth = 1;
    ctx.strokeRect(ghost.x + 0.5, ghost.y + 0.5, ghost.w - 1, ghost.h - 1);
  }
  if (Math.abs(mark.x1 - mark.x0) >= 1) {
    ctx.strokeStyle = mark.late ? C.late : C.early;
    ctx.lineWidth = 2;
    ctx.beginPath();
    ctx.moveTo(mark.x0, mark.y);
    ctx.lineTo(mark.x1, mark.y);
    ctx.stroke();
  }
}

/** Paint the ghost strips and the start marks (after the bars, before selection and hover). */
export function drawOverlay(ctx: CanvasRenderingContext2D, s: Scene, ov: Overlay): void {
  const { tl, layout: L, scale } = s;
  const C = colours(s.palette.name);
  const { t0, t1 } = scale.view;
  const last = Math.max(s.meta.makespan, overlaySummary(s.meta)?.pipeline_time[1] ?? 0);
  for (let d = 0; d < tl.devices; d++) {
    const { strip } = ghostStrip(L, d);
    // the strip is the row's own lane for the simulation: bars above, ghosts below
    ctx.fillStyle = s.palette.background;
    ctx.fillRect(L.plotLeft, strip.y - 1, L.plotRight - L.plotLeft, strip.h + 1);
    ctx.fillStyle = C.ghost;
    ctx.fillRect(L.plotLeft, strip.y, Math.min(L.plotRight, scale.x(last)) - L.plotLeft, strip.h);
    const [lo, hi] = ghostRange(tl, ov, d, t0, t1);
    for (let k = lo; k < hi; k++) if (!(tl.flags[k] & FLAG_PAIR_B)) paintGhost(ctx, s, ov, C, k);
  }
}

/** The selected microbatch's ops are drawn again over the dimmed chart: so are their ghosts. */
export function drawOverlaySelection(ctx: CanvasRenderingContext2D, s: Scene, ov: Overlay): void {
  const { tl, layout: L, scale } = s;
  const j = s.selectedMb;
  if (j < 0 || j >= tl.microbatches) return;
  const C = colours(s.palette.name);
  for (const k of opsOf(tl, j)) {
    if (tl.flags[k] & FLAG_PAIR_B) continue;
    const { strip } = ghostStrip(L, deviceOf(tl, k));
    const x = scale.x(tl.start[k]);
    const w = Math.max(1, tl.dur[k] * scale.k) + 1;
    ctx.fillStyle = s.palette.background;
    ctx.fillRect(x - 0.5, strip.y - 1, w, strip.h + 1);
    paintGhost(ctx, s, ov, C, k);
  }
}

// Tooltip and summary ---------------------------------------------------------------------

/** A residual with its sign: "+2.16 ms", "-0.375 ms", "0 ms". */
export function signed(x: number, unit: string): string {
  return `${x > 0 ? "+" : ""}${number(x, unit)}`;
}

/** The tooltip rows an overlay adds to op k's (an F&B pair: its F): its simulated span, its
 * residuals, what they come from, and its device's. */
export function overlayRows(tl: Timeline, meta: Meta, ov: Overlay, k: number): [string, string][] {
  const unit = meta.time_unit;
  const g = ghostOf(tl, ov, k);
  const sign = (x: number) => signed(x, "");
  const rows: [string, string][] = [
    ["simulated", `${number(g.start, null, PRECISE)} – ${number(g.end, unit, PRECISE)}`],
    ["residual", `start ${sign(ov.startRes[k])} · duration ${sign(ov.durRes[k])} · end ${signed(g.lateEnd, unit)}`],
  ];
  const parts: string[] = [];
  const eps = 5e-4 * Math.max(meta.makespan, 1e-12);
  if (Math.abs(ov.durRes[k]) >= eps) parts.push(`compute ${sign(ov.durRes[k])}`);
  if (ov.commExcess[k] >= eps) parts.push(`comm ${sign(ov.commExcess[k])}`);
  if (ov.hostGap[k] >= eps) parts.push(`host gap ${sign(ov.hostGap[k])}`);
  const upstream = ov.startRes[k] - Math.max(ov.commExcess[k], 0) - ov.hostGap[k];
  if (Math.abs(upstream) >= eps) parts.push(`earlier ops ${sign(upstream)}`);
  rows.push(["attribution", parts.length ? `${parts.join(" · ")}${unit ? ` ${unit}` : ""}` : "as simulated"]);
  const sum = overlaySummary(meta);
  const d = deviceOf(tl, slotOf(tl, k));
  if (sum && d < sum.finish.length) {
    rows.push([`device ${d}`, `ends ${sign(sum.finish[d])} · busy ${sign(sum.compute_excess[d])} · ` +
      `gaps ${number(sum.host_gaps[d], unit)}`]);
  }
  return rows;
}

export const OVERLAY_CSS = `
.ppviz-overlay {
  --ppviz-late: ${style.themes.light.residualLate}; --ppviz-early: ${style.themes.light.residualEarly};
  --ppviz-sim: ${style.themes.light.overlaySimulated};
  display: flex; flex-wrap: wrap; gap: 8px; margin: 10px 0 2px; font-size: ${style.font.px.text}px;
}
.ppviz-gantt[data-theme="dark"] .ppviz-overlay {
  --ppviz-late: ${style.themes.dark.residualLate}; --ppviz-early: ${style.themes.dark.residualEarly};
  --ppviz-sim: ${style.themes.dark.overlaySimulated};
}
.ppviz-overlay[hidden] { display: none; }
.ppviz-overlay:not([hidden]) ~ .ppviz-plot .ppviz-tooltip { max-width: 460px; }
.ppviz-overlay-card {
  padding: 5px 11px 6px; border-radius: 8px; background: var(--ppviz-surface); border: 1px solid var(--ppviz-border);
}
.ppviz-overlay-label { font-size: ${style.font.px.caption}px; text-transform: uppercase; letter-spacing: 0.06em; color: var(--ppviz-muted); }
.ppviz-overlay-value { font-size: ${style.font.px.value}px; font-weight: 650; line-height: 1.3; }
.ppviz-overlay-note { color: var(--ppviz-muted); font-size: ${style.font.px.note}px; }
.ppviz-late { color: var(--ppviz-late); }
.ppviz-early { color: var(--ppviz-early); }
.ppviz-overlay-parts { display: grid; grid-template-columns: auto auto; gap: 0 10px; font-size: ${style.font.px.text}px; }
.ppviz-overlay-key { display: inline-flex; align-items: center; gap: 6px; color: var(--ppviz-muted); font-size: ${style.font.px.note}px; }
.ppviz-overlay-swatch { width: 18px; height: 7px; border: 1px solid var(--ppviz-sim); display: inline-block; }
`;

function el(tag: string, className: string, text = ""): HTMLElement {
  const e = document.createElement(tag);
  e.className = className;
  e.textContent = text;
  return e;
}

function signClass(x: number): string {
  return x > 0 ? "ppviz-late" : x < 0 ? "ppviz-early" : "";
}

function card(label: string, ...children: HTMLElement[]): HTMLElement {
  const c = el("div", "ppviz-overlay-card");
  c.append(el("div", "ppviz-overlay-label", label), ...children);
  return c;
}

/** The summary cards above an overlay: step time and bubble measured and simulated, where the
 * difference comes from, each device's end; empty (hidden) without an overlay. */
export function fillOverlaySummary(box: HTMLElement, meta: Meta | null, maxEnd = 0): void {
  const sum = overlaySummary(meta);
  box.hidden = sum === null;
  if (!sum || !meta) {
    box.replaceChildren();
    return;
  }
  const unit = meta.time_unit;
  const time = (t: number) => number(t, unit);
  const [tm, ts] = sum.pipeline_time;
  const [bm, bs] = sum.bubble_fraction;
  const pct = share;
  const diff = el("div", `ppviz-overlay-note ${signClass(sum.difference)}`,
    `${signed(sum.difference, unit)} (${sum.difference >= 0 ? "+" : ""}${share(tm / ts - 1)})`);
  const step = card("step time", el("div", "ppviz-overlay-value", `${time(tm)} measured`),
    el("div", "ppviz-overlay-note", `${time(ts)} ${sum.label}`), diff);
  const bubble = card("bubble", el("div", "ppviz-overlay-value", `${pct(bm)} measured`),
    el("div", "ppviz-overlay-note", `${pct(bs)} simulated`));
  const parts = el("div", "ppviz-overlay-parts");
  const a = sum.attribution;
  for (const [name, v] of [["compute variance", a.compute_variance], ["communication", a.communication],
    ["host overhead", a.host_overhead]] as [string, number][]) {
    parts.append(el("span", "ppviz-overlay-note", name), el("span", signClass(v), signed(v, unit)));
  }
  const why = card("the difference comes from", parts);
  const devices = el("div", "ppviz-overlay-parts");
  sum.finish.forEach((f, d) => {
    const straggler = sum.straggler === d ? " · straggler" : "";
    devices.append(el("span", "ppviz-overlay-note", `device ${d}`),
      el("span", signClass(f), `${signed(f, unit)}${straggler}`));
  });
  const ends = card("each device ends", devices);
  const key = el("div", "ppviz-overlay-card");
  const item = (swatchStyle: string, text: string) => {
    const i = el("span", "ppviz-overlay-key");
    const sw = el("span", "ppviz-overlay-swatch");
    sw.setAttribute("style", swatchStyle);
    i.append(sw, text);
    return i;
  };
  key.append(el("div", "ppviz-overlay-label", "under each bar"),
    item("background: var(--ppviz-late)", "simulated span, measured ends later"),
    el("br", ""),
    item("background: var(--ppviz-early)", "measured ends earlier"),
    el("br", ""),
    item("border: none; border-top: 2px solid var(--ppviz-late); height: 2px", "start: simulated → measured"),
    el("div", "ppviz-overlay-note", `full colour at ±${number(maxEnd, unit)} end residual`));
  box.replaceChildren(step, bubble, why, ends, key);
}

/** A short description for the canvas's aria-label. */
export function overlayAria(meta: Meta): string {
  const sum = overlaySummary(meta);
  if (!sum) return "";
  return `, with its ${sum.label} under each bar (measured ${number(sum.pipeline_time[0], meta.time_unit)}, simulated ${number(sum.pipeline_time[1], meta.time_unit)})`;
}

