// Each device's data-parallel tail after its pipeline ops (Config.step; core/step.py times it,
// wire._step sends it): the gradient reduction of each stage it holds on its data-parallel link,
// then its optimizer step, then the parameter gather. A part that runs after the device's last op
// is a bar in the row, as the ops are; a reduction overlapped with the last backwards
// (overlap_grad_reduce) is, for as long as it runs under them, a band along the bottom of the row,
// so the backward above it stays readable. The parts differ by colour and by texture (stripes,
// plain, dots), so they read apart in every colour vision, and never like idle's grey hatch.
// The other part of the step's breakdown drawn, each op's share of tensor/expert-parallel
// traffic (a dark band along the top of its bar, draw.ts), has its legend entry here too.

import { PRECISE, number, share } from "./format";
import { type Layout, inPlot, inRows } from "./layout";
import type { Meta, TailColumns } from "./meta";
import type { Scale } from "./scale";
import { type Palette, inkOn } from "./theme";

export const TAIL_KINDS = ["reduce", "optimizer", "gather"] as const;
export type TailKind = (typeof TAIL_KINDS)[number];

/** A part's stretch drawn one way: under the device's ops (a band) or after them (a bar). */
export interface TailPiece {
  part: number;
  kind: TailKind;
  t0: number;
  t1: number;
  /** runs under the device's pipeline ops: drawn as a band along the bottom of the row */
  under: boolean;
}

/** The step's tail parts (null without a step or without any part). */
export function tailOf(meta: Meta | null): TailColumns | null {
  const t = meta?.step?.tail;
  return t && t.device.length ? t : null;
}

/** Where the step ends on the ops' time axis (its time less the set-up before t = 0), or null without a step. */
export function stepEnd(meta: Meta | null): number | null {
  return meta?.step ? meta.step.end : null;
}

/** Part i as it is drawn: under the device's ops for its first `hidden`, after them for the rest. */
export function tailPieces(t: TailColumns, i: number): TailPiece[] {
  const kind = t.kind[i] as TailKind;
  const a = t.start[i];
  const b = t.end[i];
  const split = Math.min(b, a + Math.max(0, t.hidden[i]));
  const pieces: TailPiece[] = [];
  if (split > a) pieces.push({ part: i, kind, t0: a, t1: split, under: true });
  if (b > split) pieces.push({ part: i, kind, t0: split, t1: b, under: false });
  return pieces;
}

/** The height of the band a reduction under the ops is drawn as: the row's bottom inset and 2 px of its bars. */
export function bandOf(L: Layout): number {
  return Math.max(3, L.barInset + 2);
}

/** [top, height] of a piece in its device's row (in the rows' coordinates). */
export function pieceRows(L: Layout, d: number, under: boolean): [number, number] {
  if (under) {
    const h = bandOf(L);
    return [L.rowTop[d] + L.rowHeight - h, h];
  }
  return [L.rowTop[d] + L.barInset, L.rowHeight - 2 * L.barInset];
}

/** Piece box in CSS px (rows' coordinates), at least 2 px wide so that a short part still shows. */
export function pieceBox(L: Layout, scale: Scale, t: TailColumns, piece: TailPiece) {
  const [y, h] = pieceRows(L, t.device[piece.part], piece.under);
  const x0 = scale.x(piece.t0);
  const x1 = Math.max(x0 + 2, scale.x(piece.t1));
  return { x: x0, y, w: x1 - x0, h };
}

/** The colour a part of this kind is drawn in. */
export function tailColour(P: Palette, kind: string): string {
  return kind === "reduce" ? P.tailReduce : kind === "optimizer" ? P.tailOptimizer : P.tailGather;
}

// Drawing -------------------------------------------------------------------------------

/** A bar's texture over its colour: stripes (\) for a reduction, dots for a gather, none for the
 * optimizer step, in the ink that reads on the colour. */
function texture(ctx: CanvasRenderingContext2D, kind: string, ink: string, x: number, y: number, w: number,
  h: number): void {
  if (kind === "optimizer") return;
  ctx.save();
  ctx.beginPath();
  ctx.rect(x, y, w, h);
  ctx.clip();
  ctx.strokeStyle = ctx.fillStyle = ink;
  ctx.globalAlpha = 0.45;
  ctx.lineWidth = 1.25;
  ctx.beginPath();
  if (kind === "reduce") {
    for (let c = x - h; c < x + w; c += 5) {
      ctx.moveTo(c, y);
      ctx.lineTo(c + h, y + h);
    }
    ctx.stroke();
  } else {
    for (let cy = y + 2.5; cy < y + h; cy += 5) {
      for (let cx = x + 2.5 + ((cy - y) % 10 < 5 ? 0 : 2.5); cx < x + w; cx += 5) {
        ctx.moveTo(cx + 1.1, cy);
        ctx.arc(cx, cy, 1.1, 0, 2 * Math.PI);
      }
    }
    ctx.fill();
  }
  ctx.restore();
}

export interface TailScene {
  meta: Meta;
  layout: Layout;
  scale: Scale;
  palette: Palette;
  /** the tail part under the pointer, -1 for none */
  hoverTail?: number;
}

/** A part's names in its bar, longest first (the first that fits is drawn); the last is the compact legend's. */
function barLabels(meta: Meta, kind: string): string[] {
  if (kind === "reduce") return ["grad reduce", meta.step?.names.reduce.includes("reduce-scatter") ? "RS" : "AR"];
  return kind === "optimizer" ? ["optimizer", "opt"] : ["gather", "AG"];
}

/** Every tail part in view, in the rows' coordinates; returns how many parts are drawn. */
export function drawTail(ctx: CanvasRenderingContext2D, s: TailScene): number {
  const t = tailOf(s.meta);
  if (!t) return 0;
  const { layout: L, scale, palette: P } = s;
  const { t0, t1 } = scale.view;
  let shown = 0;
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  for (let i = 0; i < t.device.length; i++) {
    if (t.device[i] >= L.devices || t.end[i] < t0 || t.start[i] > t1) continue;
    shown++;
    const colour = tailColour(P, t.kind[i]);
    const ink = inkOn(colour);
    for (const piece of tailPieces(t, i)) {
      const b = pieceBox(L, scale, t, piece);
      ctx.fillStyle = colour;
      ctx.fillRect(b.x, b.y, b.w, b.h);
      if (piece.under) {
        // a hairline of the background above the band parts it from the bar it runs under
        ctx.fillStyle = P.background;
        ctx.fillRect(b.x, b.y - 1, b.w, 1);
        continue;
      }
      texture(ctx, t.kind[i], ink, b.x, b.y, b.w, b.h);
      const text = b.h >= 12 ? barLabels(s.meta, t.kind[i]).find((x) => ctx.measureText(x).width + 6 <= b.w) : undefined;
      if (text) {
        // on a patch of the bar's own colour, over its texture
        const w = ctx.measureText(text).width + 4;
        ctx.fillStyle = colour;
        ctx.fillRect(b.x + b.w / 2 - w / 2, b.y + b.h / 2 - 6, w, 12);
        ctx.fillStyle = ink;
        ctx.fillText(text, b.x + b.w / 2, b.y + b.h / 2 + 0.5);
      }
    }
  }
  const hover = s.hoverTail ?? -1;
  if (hover >= 0 && hover < t.device.length) {
    ctx.strokeStyle = P.foreground;
    ctx.lineWidth = 1.5;
    for (const piece of tailPieces(t, hover)) {
      const b = pieceBox(L, scale, t, piece);
      ctx.strokeRect(b.x - 0.75, b.y - 0.75, b.w + 1.5, b.h + 1.5);
    }
  }
  return shown;
}

/** The tail parts after the last ops in the overview strip's rows (`rows`: [top, height] per
 * device, or one band for all), on the strip's scale of the whole run. */
export function drawTailOverview(ctx: CanvasRenderingContext2D, meta: Meta, P: Palette, rows: [number, number][],
  x: (t: number) => number, devices: number): void {
  const t = tailOf(meta);
  if (!t) return;
  for (let i = 0; i < t.device.length; i++) {
    const d = t.device[i];
    const [top, height] = rows.length === devices ? rows[d] : [rows[0][0] + (rows[0][1] * d) / devices, rows[0][1] / devices];
    ctx.fillStyle = tailColour(P, t.kind[i]);
    for (const piece of tailPieces(t, i)) {
      if (piece.under) continue;
      const a = x(piece.t0);
      ctx.fillRect(a, top, Math.max(1, x(piece.t1) - a), height);
    }
  }
}

// Hit-testing -----------------------------------------------------------------------------

/** The tail part drawn at canvas (x, y) with the rows scrolled by `scroll`, or -1: a bar after the
 * last op anywhere in the row's bar, a band only where it is drawn; within `tolerance` px in time. */
export function tailAt(meta: Meta, L: Layout, scale: Scale, x: number, y: number, tolerance = 3, scroll = 0): number {
  const t = tailOf(meta);
  if (!t || !inRows(L, y) || !inPlot(L, x)) return -1;
  const c = y + scroll;
  let best = -1;
  let bestDistance = tolerance;
  for (let i = 0; i < t.device.length; i++) {
    const d = t.device[i];
    if (d >= L.devices || c < L.rowTop[d] || c >= L.rowTop[d] + L.rowHeight) continue;
    for (const piece of tailPieces(t, i)) {
      const [top, h] = pieceRows(L, d, piece.under);
      if (c < top - (piece.under ? 1 : 0) || c >= top + h) continue;
      const b = pieceBox(L, scale, t, piece);
      const distance = x < b.x ? b.x - x : x > b.x + b.w ? x - b.x - b.w : 0;
      if (distance < bestDistance || (distance === 0 && best < 0)) {
        best = i;
        bestDistance = distance;
      }
    }
  }
  return best;
}

// Text ------------------------------------------------------------------------------------

/** The tooltip of tail part i. */
export function describeTail(meta: Meta, i: number): { title: string; rows: [string, string][] } {
  const t = tailOf(meta)!;
  const step = meta.step!;
  const time = (x: number) => number(x, meta.time_unit, PRECISE);
  const kind = t.kind[i];
  const name = step.names[kind] ?? kind;
  const d = t.device[i];
  const where = meta.rows[d] ? `${d} (${meta.rows[d]})` : String(d);
  const span = t.end[i] - t.start[i];
  const rows: [string, string][] = [
    ["part", kind === "reduce" ? `${name} of stage ${t.stage[i]}'s gradients, on the data-parallel link`
      : kind === "optimizer" ? `${name} of the device's parameters` : `${name}: the updated parameters to every replica`],
    ["device", where],
    ["start", time(t.start[i])],
    ["end", time(t.end[i])],
    ["duration", time(span)],
  ];
  if (kind === "reduce") {
    rows.push(["collective", time(t.time[i]) + (span > t.time[i] * (1 + 1e-9)
      ? ` (it ends with the stage's last backward)` : "")]);
    const hidden = t.hidden[i];
    const after = span - hidden;
    rows.push(["overlapped", after <= 0 ? "all of it, under the device's ops (overlap_grad_reduce)"
      : hidden > 0 ? `${time(hidden)} (${share(hidden / span)}) under the device's ops (overlap_grad_reduce), ` +
        `${time(after)} after its last op`
      : step.overlap_grad_reduce ? "none: it runs after the device's last op" : "none (overlap_grad_reduce off)"]);
  }
  rows.push(["step", `ends at ${time(step.end)}; step time ${number(step.time, meta.time_unit)}` +
    (step.setup > 0 ? ` with the set-up of ${number(step.setup, meta.time_unit)} before the ops` : "")]);
  return { title: `${name} · device ${d}${kind === "reduce" ? ` · stage ${t.stage[i]}` : ""}`, rows };
}

// Legend ----------------------------------------------------------------------------------

/** A legend entry per kind of tail part present: a swatch drawn as the bars are (stripes, plain,
 * dots), and for an overlapped reduction a band under the swatch. */
export function tailLegend(P: Palette, meta: Meta, compact: boolean): HTMLElement[] {
  const t = tailOf(meta);
  if (!t) return [];
  const names = meta.step!.names;
  const overlapped = t.hidden.some((h) => h > 0);
  return TAIL_KINDS.filter((kind) => t.kind.includes(kind)).map((kind) => {
    const item = document.createElement("span");
    item.className = `ppviz-legend-item ppviz-legend-tail ppviz-legend-tail-${kind}`;
    const swatch = document.createElement("span");
    swatch.className = `ppviz-swatch ppviz-tail-${kind}`;
    swatch.style.backgroundColor = tailColour(P, kind);
    swatch.style.color = inkOn(tailColour(P, kind));
    const name = names[kind] ?? kind;
    const text = compact ? barLabels(meta, kind).at(-1)! : kind === "reduce" && overlapped
      ? `${name} (DP tail; band: overlapped with the last backwards)` : `${name} (DP tail)`;
    item.title = kind === "reduce" ? "each stage's gradients reduced over its data-parallel group's link, after its "
      + "last backward (overlapped with it under overlap_grad_reduce)" : kind === "optimizer"
      ? "the optimizer step, once every reduction of the device has ended" : "the updated parameters all-gathered "
      + "over the data-parallel group (distributed optimizer)";
    item.append(swatch, document.createTextNode(text));
    return item;
  });
}

/** The legend's entry for the TP share's band (draw.ts), when the run's ops carry TP/EP traffic. */
export function tpLegend(P: Palette, meta: Meta, compact: boolean): HTMLElement[] {
  if (!meta.traffic?.some((row) => row.some((x) => x > 0))) return [];
  const item = document.createElement("span");
  item.className = "ppviz-legend-item ppviz-legend-tp";
  const swatch = document.createElement("span");
  swatch.className = "ppviz-swatch ppviz-swatch-tp";
  swatch.style.backgroundColor = P.kinds[0];
  swatch.style.setProperty("--ppviz-tp", P.tpShare);
  item.title = "the share of the op's time its tensor- and expert-parallel collectives take (its tooltip gives both)";
  item.append(swatch, document.createTextNode(compact ? "TP share" : "TP/EP traffic (dark band: its share of the op)"));
  return [item];
}
