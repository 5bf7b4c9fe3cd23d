// Transfers (Config.topology) and host copies (Config.offload): the lane under each device row
// that shows when the device's sends and offloads (top half) and its receives and reloads (bottom
// half) occupy a link, the routed dependency arrows of a selected microbatch, hit-testing and the
// tooltip text. A run with both splits each half in two bands (Layout.laneBands): a send and an
// offload start together after a forward, on different links, and one band would show only the
// one painted last. Like the bars, a band is a 1-D pixel image: transfers narrower than a pixel
// add up in their pixel column's opacity.

import {
  FLAG_WAITED, HOST_OFFLOAD, HOST_RELOAD, TRANSFER_B, TRANSFER_F, type Timeline, type Transfers, actionName, deviceOf,
  endOf, inputTransfer, isHostCopy, offloadOf, opsOf, reloadOf,
} from "./data";
import { PRECISE, number, share, size } from "./format";
import { type Layout, inRows } from "./layout";
import type { Meta } from "./meta";
import { Strip, type ViewKey, rgbaWord, span } from "./pixels";
import type { Scale } from "./scale";
import type { Palette } from "./theme";

export type LaneHalf = "out" | "in";

/** The halves transfer i occupies: a transfer both (its sender's and its receiver's), an offload
 * its device's sending half, a reload its receiving half. */
export function halvesOf(tr: Transfers, i: number): LaneHalf[] {
  return tr.kind[i] === HOST_OFFLOAD ? ["out"] : tr.kind[i] === HOST_RELOAD ? ["in"] : ["out", "in"];
}

/** [top, height] of device d's sends (out) or receives (in) half-lane. */
export function halfLane(L: Layout, d: number, half: LaneHalf): [number, number] {
  const h = L.laneHeight / 2;
  // a 1 px seam between the halves once they are tall enough to spare it
  const seam = L.laneHeight >= 6 ? 0.5 : 0;
  const top = L.laneTop[d];
  return half === "out" ? [top, h - seam] : [top + h + seam, h - seam];
}

/** [top, height] of the band that shows device d's host copies (`host`) or transfers in that
 * half: the whole half, unless the lane has four bands, where the transfers take the half's outer
 * band (sends on top, receives at the bottom) and the host copies the inner one. */
export function laneBand(L: Layout, d: number, half: LaneHalf, host: boolean): [number, number] {
  const [top, height] = halfLane(L, d, half);
  if (L.laneBands !== 4) return [top, height];
  const band = height / 2;
  return (half === "out") === host ? [top + band, band] : [top, band];
}

/** Which half of a lane y falls in, and (with four bands) whether in its host copies' band; null
 * for either where the half is not split. */
export function bandAt(L: Layout, d: number, y: number): { half: LaneHalf; host: boolean | null } {
  const half: LaneHalf = y < L.laneTop[d] + L.laneHeight / 2 ? "out" : "in";
  if (L.laneBands !== 4) return { half, host: null };
  const [top, height] = laneBand(L, d, half, true);
  return { half, host: y >= top && y < top + height };
}

function listOf(tl: Timeline, d: number, half: LaneHalf): Uint32Array {
  const tr = tl.transfers;
  return half === "out"
    ? tr.outIndex.subarray(tr.outOffsets[d], tr.outOffsets[d + 1])
    : tr.inIndex.subarray(tr.inOffsets[d], tr.inOffsets[d + 1]);
}

/** The transfer drawn at time t in device d's half-lane (only host copies, or only transfers,
 * when `host` says so), within `tolerance` (time) of it, or -1: the one covering t (the latest
 * started, where several share the link), else the nearest. */
export function transferAt(tl: Timeline, d: number, half: LaneHalf, t: number, tolerance: number,
  host: boolean | null = null): number {
  const tr = tl.transfers;
  let best = -1;
  let bestDistance = tolerance;
  for (const i of listOf(tl, d, half)) {
    if (host !== null && isHostCopy(tr, i) !== host) continue;
    const a = tr.start[i];
    const b = tr.end[i];
    const distance = t < a ? a - t : t > b ? t - b : 0;
    if (distance < bestDistance || (distance === 0 && (best < 0 || a > tr.start[best]))) {
      best = i;
      bestDistance = distance;
    }
  }
  return best;
}

/** The transfer under canvas (x, y) when (x, y) is in a transfer lane (the rows scrolled by
 * `scroll`), or -1. */
export function hitTransfer(tl: Timeline, L: Layout, scale: Scale, x: number, y: number, tolerance = 3,
  scroll = 0): number {
  if (!L.laneHeight || x < L.plotLeft || x > L.plotRight || !inRows(L, y)) return -1;
  y += scroll;
  for (let d = 0; d < Math.min(tl.devices, L.devices); d++) {
    const top = L.laneTop[d];
    if (y >= top && y < top + L.laneHeight) {
      const { half, host } = bandAt(L, d, y);
      return transferAt(tl, d, half, scale.t(x), tolerance / scale.k, host);
    }
  }
  return -1;
}

// Drawing -------------------------------------------------------------------------------

interface LaneFrame extends ViewKey {
  strip: Strip;
  /** transfers inside the view */
  shown: number;
}

const frames = new WeakMap<object, LaneFrame>();

/** Which of device d's strip rows (STRIP_ROWS per device) holds a half's transfers or host copies. */
const STRIP_ROWS = 4;
function stripRow(d: number, half: LaneHalf, host: boolean): number {
  return STRIP_ROWS * d + (half === "out" ? (host ? 1 : 0) : host ? 2 : 3);
}

/** The lanes' pixels, a row per device, half and band (stripRow). */
function computeLanes(tl: Timeline, L: Layout, scale: Scale, P: Palette, dpr: number, strip: Strip): number {
  const tr = tl.transfers;
  const width = Math.round((L.plotRight - L.plotLeft) * dpr);
  strip.ensure(width, STRIP_ROWS * tl.devices);
  const px = strip.pixels;
  const colours = [TRANSFER_F, TRANSFER_B, HOST_OFFLOAD, HOST_RELOAD].map((kind) =>
    (rgbaWord(kindColour(P, kind)) | 0xff000000) >>> 0);
  const { t0, t1 } = scale.view;
  const k = scale.k * dpr;
  let shown = 0;
  for (let i = 0; i < tr.count; i++) {
    const a = tr.start[i];
    const b = tr.end[i];
    if (b < t0 || a > t1) continue;
    shown++;
    const colour = colours[tr.kind[i]];
    const xa = (a - t0) * k;
    // a zero-length transfer still shows as a hairline
    const xb = Math.max(xa + 0.6, (b - t0) * k);
    const host = isHostCopy(tr, i);
    if (tr.kind[i] !== HOST_RELOAD) span(px, stripRow(tr.src[i], "out", host) * width, width, xa, xb, colour);
    if (tr.kind[i] !== HOST_OFFLOAD) span(px, stripRow(tr.dst[i], "in", host) * width, width, xa, xb, colour);
  }
  strip.ctx.putImageData(strip.image!, 0, 0);
  return shown;
}

export interface LaneScene {
  tl: Timeline;
  layout: Layout;
  scale: Scale;
  palette: Palette;
  dpr: number;
  meta: Meta;
  /** one per view: the lanes' last frame is kept under it */
  cache: object;
  hoverTransfer: number;
}

/** The lanes' rails and transfers; returns how many transfers are in view. */
export function drawLanes(ctx: CanvasRenderingContext2D, s: LaneScene): number {
  const { tl, layout: L, scale, palette: P, dpr } = s;
  if (!L.laneHeight) return 0;
  let f = frames.get(s.cache);
  if (!(f && f.tl === tl && f.palette === P && f.layout === L && f.t0 === scale.view.t0 && f.t1 === scale.view.t1 &&
        f.dpr === dpr)) {
    const strip = f?.strip ?? new Strip();
    f = { tl, palette: P, layout: L, t0: scale.view.t0, t1: scale.view.t1, dpr, strip, shown: 0 };
    f.shown = computeLanes(tl, L, scale, P, dpr, strip);
    frames.set(s.cache, f);
  }
  const width = Math.round((L.plotRight - L.plotLeft) * dpr);
  const railRight = Math.min(L.plotRight, scale.x(s.meta.makespan));
  ctx.fillStyle = P.transferRail;
  for (let d = 0; d < tl.devices; d++) {
    for (const half of ["out", "in"] as const) {
      const [y, h] = halfLane(L, d, half);
      ctx.fillRect(L.plotLeft, y, railRight - L.plotLeft, h);
    }
  }
  ctx.imageSmoothingEnabled = false;
  // a half not split holds either transfers or host copies: the run has only one of them
  const bands = L.laneBands === 4 ? [false, true] : [tl.transfers.host && !tl.transfers.links];
  for (let d = 0; d < tl.devices; d++) {
    for (const half of ["out", "in"] as const) {
      for (const host of bands) {
        const [y, h] = laneBand(L, d, half, host);
        ctx.drawImage(f.strip.canvas, 0, stripRow(d, half, host), width, 1, L.plotLeft, y, width / dpr, h);
      }
    }
  }
  ctx.imageSmoothingEnabled = true;
  if (s.hoverTransfer >= 0 && s.hoverTransfer < tl.transfers.count) outline(ctx, s, s.hoverTransfer, P.foreground, 1.5);
  return f.shown;
}

/** Box of transfer i in its sender's (out) or receiver's (in) band, at least 2 px wide. */
export function transferBox(s: { tl: Timeline; layout: Layout; scale: Scale }, i: number, half: LaneHalf) {
  const tr = s.tl.transfers;
  const d = half === "out" ? tr.src[i] : tr.dst[i];
  const [y, h] = laneBand(s.layout, d, half, isHostCopy(tr, i));
  const x0 = s.scale.x(tr.start[i]);
  const x1 = Math.max(x0 + 2, s.scale.x(tr.end[i]));
  return { x: x0, y, w: x1 - x0, h };
}

function outline(ctx: CanvasRenderingContext2D, s: LaneScene, i: number, colour: string, width: number): void {
  ctx.strokeStyle = colour;
  ctx.lineWidth = width;
  for (const half of halvesOf(s.tl.transfers, i)) {
    const b = transferBox(s, i, half);
    ctx.strokeRect(b.x - 0.5, b.y - 0.5, b.w + 1, b.h + 1);
  }
}

/** A selected microbatch: the other transfers fade, its own are outlined, and its dependency
 * arrows that cross devices run through them (sender's end → transfer → receiver's start).
 * `arrow` draws one arrow (draw.ts's, so both kinds look alike). */
export function drawLaneSelection(ctx: CanvasRenderingContext2D, s: LaneScene, mb: number,
  arrow: (ax: number, ay: number, bx: number, by: number, solid: boolean) => void): void {
  const { tl, layout: L, palette: P, scale } = s;
  if (!L.laneHeight || mb < 0 || mb >= tl.microbatches) return;
  const tr = tl.transfers;
  ctx.fillStyle = P.dim;
  for (let d = 0; d < tl.devices; d++) ctx.fillRect(L.plotLeft, L.laneTop[d], L.plotRight - L.plotLeft, L.laneHeight);
  const mine: number[] = [];
  for (const k of opsOf(tl, mb)) {
    for (const i of [inputTransfer(tl, k), reloadOf(tl, k), offloadOf(tl, k)]) if (i >= 0) mine.push(i);
  }
  for (const i of mine) {
    ctx.fillStyle = kindColour(P, tr.kind[i]);
    for (const half of halvesOf(tr, i)) {
      const b = transferBox(s, i, half);
      ctx.fillRect(b.x, b.y, b.w, b.h);
    }
    outline(ctx, s, i, P.path, 1);
  }
  ctx.strokeStyle = P.path;
  ctx.fillStyle = P.path;
  ctx.lineWidth = 1.25;
  for (const i of mine) {
    const p = tr.producer[i];
    const c = tr.consumer[i];
    const src = tr.src[i];
    const dst = tr.dst[i];
    if (tr.kind[i] === HOST_RELOAD) {  // back from the host: the arrow to the backward it holds up
      const box = transferBox(s, i, "in");
      arrow(box.x + box.w, box.y + box.h / 2, scale.x(tl.start[c]), rowMid(L, dst), (tl.flags[c] & FLAG_WAITED) !== 0);
      continue;
    }
    // the send (or an offload): a short drop from the producer's end into its lane; a transfer's
    // arrow then runs from its end to the consumer
    const out = transferBox(s, i, "out");
    ctx.beginPath();
    ctx.moveTo(scale.x(endOf(tl, p)), L.rowTop[src] + L.rowHeight - L.barInset);
    ctx.lineTo(out.x, out.y);
    ctx.stroke();
    if (tr.kind[i] !== HOST_OFFLOAD) {
      arrow(out.x + out.w, out.y + out.h / 2, scale.x(tl.start[c]), rowMid(L, dst), (tl.flags[c] & FLAG_WAITED) !== 0);
    }
  }
}

/** The colour a transfer or host copy of this kind is drawn in. */
export function kindColour(P: Palette, kind: number): string {
  return kind === TRANSFER_F ? P.transferF : kind === TRANSFER_B ? P.transferB : P.hostCopy;
}

function rowMid(L: Layout, d: number): number {
  return L.rowTop[d] + L.rowHeight / 2;
}

// Text ----------------------------------------------------------------------------------

/** "within node 1" / "between nodes 0 → 1" (and the link), when the topology says. */
export function linkText(meta: Meta, src: number, dst: number): string {
  const c = meta.communication;
  if (!c) return "";
  const n = c.devices_per_node;
  if (!n) return `one link between every pair · ${c.intra}`;
  const a = Math.floor(src / n);
  const b = Math.floor(dst / n);
  return a === b ? `intra-node (node ${a}) · ${c.intra}` : `inter-node (node ${a} → ${b}) · ${c.inter ?? ""}`;
}

function kindName(tl: Timeline, i: number): string {
  return tl.transfers.kind[i] === TRANSFER_F ? "activation" : "gradient";
}

/** One line about transfer i, for an op's tooltip: "device 3 → 4, inter-node, 64 MiB, 1.2–1.5 ms, queued 0 ms"
 * (a reload: "host → device 3, 1.2–1.5 ms, queued 0 ms"). */
export function transferLine(tl: Timeline, meta: Meta, i: number): string {
  const tr = tl.transfers;
  const time = (t: number) => number(t, meta.time_unit, PRECISE);
  if (isHostCopy(tr, i)) {
    const way = tr.kind[i] === HOST_OFFLOAD ? `device ${tr.src[i]} → host` : `host → device ${tr.dst[i]}`;
    return `${way}, ${number(tr.start[i], null, PRECISE)}–${time(tr.end[i])}, queued ${time(tr.start[i] - tr.ready[i])}`;
  }
  const c = meta.communication;
  const n = c?.devices_per_node;
  const link = n ? (Math.floor(tr.src[i] / n) === Math.floor(tr.dst[i] / n) ? "intra-node" : "inter-node") : "";
  return [
    `device ${tr.src[i]} → ${tr.dst[i]}`,
    link,
    c ? size(c.bytes) : "",
    `${number(tr.start[i], null, PRECISE)}–${time(tr.end[i])}`,
    `queued ${time(tr.start[i] - tr.ready[i])}`,
  ].filter(Boolean).join(", ");
}

/** Rows for an op's tooltip: the transfer that brought its input, if one did; with offload, the
 * copy of an F's activation to the host, or the reload a backward waited for. */
export function inputTransferRows(tl: Timeline, meta: Meta, k: number, label = "input transfer"): [string, string][] {
  const tr = tl.transfers;
  const time = (t: number) => number(t, meta.time_unit, PRECISE);
  const rows: [string, string][] = [];
  const offload = offloadOf(tl, k);
  if (offload >= 0) rows.push(["offload", transferLine(tl, meta, offload)]);
  const reload = reloadOf(tl, k);
  if (reload >= 0) {  // a backward starts no earlier than its reload's end
    const early = tl.start[k] - tr.end[reload];
    rows.push(["reload", `${transferLine(tl, meta, reload)} · ` +
      (early <= 0 ? "back just as it started" : `back ${time(early)} before it started`)]);
  }
  const i = inputTransfer(tl, k);
  if (i < 0) return rows;
  const early = tl.start[k] - tr.end[i];
  const waited = (tl.flags[k] & FLAG_WAITED) !== 0;
  const note = waited && early <= 0 ? "it waited for this transfer"
    : `arrived ${time(Math.max(0, early))} before it started` +
      (waited && meta.communication?.p2p === "blocking" ? " (it waited for the rest of its blocking P2P batch)" : "");
  return [...rows, [label, `${transferLine(tl, meta, i)} · ${note}`]];
}

/** The tooltip of transfer i. */
export function describeTransfer(tl: Timeline, meta: Meta, i: number): { title: string; rows: [string, string][] } {
  if (isHostCopy(tl.transfers, i)) return describeHostCopy(tl, meta, i);
  const tr = tl.transfers;
  const time = (t: number) => number(t, meta.time_unit, PRECISE);
  const p = tr.producer[i];
  const c = tr.consumer[i];
  const queued = tr.start[i] - tr.ready[i];
  const rows: [string, string][] = [
    ["kind", `${kindName(tl, i)} (${tr.kind[i] === TRANSFER_F ? "to the next stage" : "to the previous stage"})`],
    ["from → to", `device ${tr.src[i]} → device ${tr.dst[i]}`],
  ];
  const link = linkText(meta, tr.src[i], tr.dst[i]);
  if (link) rows.push(["link", link]);
  if (meta.communication) rows.push(["bytes", size(meta.communication.bytes)]);
  rows.push(
    ["ready", time(tr.ready[i])],
    ["start", time(tr.start[i])],
    ["end", time(tr.end[i])],
    ["duration", time(tr.end[i] - tr.start[i])],
    ["queued", queued > 0 ? `${time(queued)} for a busy link` : time(0)],
    ["sent by", `${actionName(tl, p)} on device ${deviceOf(tl, p)}, done at ${time(endOf(tl, p))}`],
  );
  const waited = (tl.flags[c] & FLAG_WAITED) !== 0 && tl.start[c] >= tr.end[i];
  rows.push(["needed by", `${actionName(tl, c)} on device ${deviceOf(tl, c)}, started ${time(tl.start[c])}` +
    (waited ? " (waited for it)" : "")]);
  return { title: `${kindName(tl, i)} transfer · ${actionName(tl, p)} → ${actionName(tl, c)}`, rows };
}

/** The tooltip of host copy i: an offload after its F, or a reload before its backward. */
function describeHostCopy(tl: Timeline, meta: Meta, i: number): { title: string; rows: [string, string][] } {
  const tr = tl.transfers;
  const time = (t: number) => number(t, meta.time_unit, PRECISE);
  const k = tr.producer[i];  // the op it serves
  const offload = tr.kind[i] === HOST_OFFLOAD;
  const queued = tr.start[i] - tr.ready[i];
  const part = meta.offload ? `${share(meta.offload.share)} of ` : "";
  const rows: [string, string][] = [
    ["kind", offload ? `${part}the activation to host memory (offload)`
      : `${part}the activation back from host memory (reload)`],
    [offload ? "from → to" : "to", offload ? `device ${tr.src[i]} → host` : `host → device ${tr.dst[i]}`],
  ];
  if (meta.offload) rows.push(["host link", meta.offload.link]);
  rows.push(
    ["ready", time(tr.ready[i])],
    ["start", time(tr.start[i])],
    ["end", time(tr.end[i])],
    ["duration", time(tr.end[i] - tr.start[i])],
    ["queued", queued > 0 ? `${time(queued)} for a busy link${offload ? "" : " or its offload"}` : time(0)],
    offload ? ["after", `${actionName(tl, k)}, done at ${time(endOf(tl, k))}`]
      : ["for", `${actionName(tl, k)}, started ${time(tl.start[k])}`],
  );
  return { title: `${offload ? "offload to host" : "reload from host"} · ${offload ? "after" : "for"} ${actionName(tl, k)}`,
    rows };
}

// Legend ---------------------------------------------------------------------------------

/** The legend's lane entries: the lane's switch and the colours it shows (transfers: activation and
 * gradient; host copies: their own). `what` says what the lanes hold. */
export function transferLegend(P: Palette, on: boolean, compact: boolean, onToggle: (on: boolean) => void,
  what: { links: boolean; host: boolean } = { links: true, host: false }): HTMLElement[] {
  const toggle = document.createElement("label");
  toggle.className = "ppviz-legend-item ppviz-transfer-toggle";
  const { links, host } = what;
  toggle.title = "a lane under each device's row: " + (links && host
    ? "its sends, then its offloads to host memory (top half); its reloads, then its receives (bottom half)"
    : host ? "its activations offloaded to host memory (top half) and reloaded (bottom half)"
    : "its sends (top half) and receives (bottom half) on the links");
  const box = document.createElement("input");
  box.type = "checkbox";
  box.checked = on;
  box.addEventListener("change", () => onToggle(box.checked));
  const name = links && host ? "transfers + host copies" : host ? "host copies" : "transfers";
  const order = links && host ? "sends and offloads, then receives and reloads"
    : host ? "offloads, then reloads" : "sends, then receives";
  toggle.append(box, document.createTextNode(compact ? name : `${name} (under each row: ${order})`));
  const items: HTMLElement[] = [toggle];
  if (on) {
    const kinds: [string, string][] = [];
    if (links) kinds.push([compact ? "act." : "activation", P.transferF], [compact ? "grad." : "gradient", P.transferB]);
    if (host) kinds.push([compact ? "host" : "host copy", P.hostCopy]);
    for (const [text, colour] of kinds) {
      const item = document.createElement("span");
      item.className = "ppviz-legend-item ppviz-legend-transfer";
      const swatch = document.createElement("span");
      swatch.className = "ppviz-swatch";
      swatch.style.background = colour;
      swatch.style.height = "4px";
      item.append(swatch, document.createTextNode(text));
      items.push(item);
    }
  }
  return items;
}
