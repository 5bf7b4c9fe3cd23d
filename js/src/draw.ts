// Painting one frame on the canvas. Work per frame follows pixels, not ops: each lane is
// culled to the view by binary search, runs of ops narrower than a pixel are merged into
// one column whose opacity says how busy that pixel of time was, and thin bars and the
// memory curves are written as pixels rather than as thousands of path shapes.

import style from "../../ppviz/style.json";
import {
  FLAG_PAIR_B,
  FLAG_PAIR_F,
  FLAG_WAITED,
  KIND_F,
  KIND_S,
  KIND_T,
  KIND_W,
  kindOfFlags,
  type MemoryCurves,
  type Timeline,
  chunkOf,
  endOf,
  depOf,
  deviceOf,
  isReverse,
  inputTransfer,
  lowerBound,
  opsOf,
  slotOf,
  upperBound,
} from "./data";
import { number, tickLabel } from "./format";
import { FONT, PX, barLabelPx, fit, gutterFonts, idleShare, rowLine } from "./labels";
import type { Layout } from "./layout";
import { type MemoryFrame, drawMemory, drawMemoryLabels } from "./memory";
import { type Meta, microbatchLabel, segmentsOf } from "./meta";
import { type Overlay, drawOverlay, drawOverlaySelection } from "./overlay";
import { Strip, type ViewKey, cover, rgbaWord, span } from "./pixels";
import { Scale, fullView, ticks } from "./scale";
import { drawOverviewLabel, drawOverviewWindow, overviewRows } from "./overview";
import { SHADE_LEVELS, SHADE_ORDER, type Palette } from "./theme";
import { drawLaneSelection, drawLanes } from "./transfers";
import { drawTail, drawTailOverview, stepEnd } from "./tail";

export { FONT };

export interface Scene {
  tl: Timeline;
  mem: MemoryCurves | null;
  meta: Meta;
  layout: Layout;
  scale: Scale;
  palette: Palette;
  /** device pixels per CSS pixel */
  dpr: number;
  hatch: CanvasPattern | null;
  selectedMb: number;
  selectedOp: number;
  /** the highlighted device, -1 for none */
  selectedDevice: number;
  hover: number;
  /** the memory lane and time under the pointer, or null */
  memoryHover: { device: number; t: number } | null;
  /** the scrubber's time, or null when it is not in use */
  cursor: number | null;
  /** the time axis spans [0, extent]: at least the makespan, more when charts share an axis */
  extent: number;
  /** this view's buffers and last frames */
  cache: DrawCache;
  /** a measured run's simulation, drawn under its bars (overlay.ts), or none */
  overlay?: Overlay | null;
  /** the transfer under the pointer (transfers.ts), -1 for none */
  hoverTransfer?: number;
  /** how far the rows are scrolled in their viewport (px; 0 when they all show) */
  scroll?: number;
  /** the data-parallel tail part under the pointer (tail.ts), -1 for none */
  hoverTail?: number;
}

export interface DrawStats {
  /** ops inside the view, drawn one by one or merged into pixel columns */
  ops: number;
  /** bars and merged pixel columns painted for them */
  rects: number;
  labels: number;
  /** gutter labels that did not fit and end in "…" */
  clipped: number;
  /** data-parallel tail parts in view (tail.ts) */
  tail?: number;
}

/** The colour slots: F, I/B, W, F&B, S, T (a palette's kinds). */
export const SLOT_COUNT = 6;

/** Colour slot of an op: F, I/B, W, F&B, S, T. */
export function colourSlot(flags: number): number {
  if (flags & (FLAG_PAIR_F | FLAG_PAIR_B)) return 3;
  const kind = kindOfFlags(flags);
  return kind === KIND_F ? 0 : kind === KIND_W ? 2 : kind === KIND_S ? 4 : kind === KIND_T ? 5 : 1;
}

/** An op's shade, by its whole microbatch: the segments of one (Seq1F1B) share it, as the legend says. */
export function shadeOf(mb: number, segments = 1): number {
  return SHADE_ORDER[Math.floor(mb / segments) % SHADE_LEVELS];
}

/** Bars at least this wide (CSS px) are vector round rects; narrower ones, and runs of
 * sub-pixel ops, are written into a one-row-per-lane pixel strip... */
export const VECTOR_MIN_PX = 14;
/** ...unless so few ops are in view that every bar can be a vector shape (consistent corners;
 * about 10 µs of raster each with its label, so this many stay within a few ms). */
export const VECTOR_ALL_OPS = 500;
const ROUND_MIN_PX = 6;
/** the TP share's band: this share of a bar's height, along its top (the static chart's too) */
export const TP_BAND = 0.24;
const GAP_MIN_PX = 4;
export const LABEL_PAD_PX = 5;

class Batch {
  n = 0;
  buf = new Float32Array(1024);
  push(x: number, y: number, w: number, h: number): void {
    if (this.n + 4 > this.buf.length) {
      const bigger = new Float32Array(this.buf.length * 2);
      bigger.set(this.buf);
      this.buf = bigger;
    }
    const b = this.buf;
    b[this.n] = x;
    b[this.n + 1] = y;
    b[this.n + 2] = w;
    b[this.n + 3] = h;
    this.n += 4;
  }
}

interface Labels {
  x: number[];
  y: number[];
  text: string[];
  colour: string[];
}

/** Everything one view reuses between frames: buffers (so that panning allocates nothing) and
 * the last computed bar and memory layers (so that hover and selection only blit them). One
 * per view: two charts on a page never share or invalidate each other's. */
export class DrawCache {
  batches = Array.from({ length: SLOT_COUNT * SHADE_LEVELS }, () => new Batch());
  /** vector bars of later chunks: the geometry in `chunked`, [chunk of F, of B, slot, shade] in `chunkCodes` */
  chunked = new Batch();
  /** the TP share's band along the top of each vector bar whose op spends time in TP/EP collectives */
  tp = new Batch();
  /** direction bands of a bidirectional placement: two rows per device (top: down, bottom: up) */
  bands: Strip | null = null;
  chunkCodes: number[] = [];
  patterns = new Map<string, CanvasPattern | null>();
  strip: Strip | null = null;
  barFrame: BarFrame | null = null;
  /** the overview strip: the whole run, a pixel row per device */
  overviewStrip: Strip | null = null;
  overviewFrame: ViewKey | null = null;
  memoryStrip: Strip | null = null;
  memoryColumns = { high: new Int16Array(0), outline: new Int16Array(0) };
  memoryFrame: MemoryFrame | null = null;
}

const packedCache = new WeakMap<Palette, Uint32Array>();

/** Opaque colours of palette.shades as little-endian RGBA words, [slot * SHADE_LEVELS + shade]. */
function packed(P: Palette): Uint32Array {
  let out = packedCache.get(P);
  if (!out) {
    out = new Uint32Array(SLOT_COUNT * SHADE_LEVELS);
    P.shades.forEach((row, slot) =>
      row.forEach((c, shade) => {
        const [r, g, b] = c.match(/\d+/g)!.map(Number);
        out![slot * SHADE_LEVELS + shade] = ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0;
      }),
    );
    packedCache.set(P, out);
  }
  return out;
}

const inkCache = new WeakMap<Palette, Uint32Array>();

/** The label colour of each shade, translucent, as RGBA words: the direction bands' colour. */
function packedInk(P: Palette): Uint32Array {
  let out = inkCache.get(P);
  if (!out) {
    out = new Uint32Array(SLOT_COUNT * SHADE_LEVELS);
    P.ink.forEach((row, slot) =>
      row.forEach((c, shade) => {
        out![slot * SHADE_LEVELS + shade] = ((rgbaWord(c) & 0xffffff) | (BAND_ALPHA << 24)) >>> 0;
      }),
    );
    inkCache.set(P, out);
  }
  return out;
}

const BAND_ALPHA = 150;

/** A direction band's thickness in a bar `h` px tall. */
export function bandHeight(h: number): number {
  return Math.max(2, Math.round(h * 0.16));
}

/** Device pixels [a, b) of a band row, at least one. */
function band(px: Uint32Array, row: number, width: number, a: number, b: number, colour: number): void {
  const ia = Math.max(0, Math.round(a));
  const ib = Math.min(width, Math.max(ia + 1, Math.round(b)));
  px.fill(colour, row + ia, row + ib);
}

/** Ops [i, j) of device d that can show inside [t0, t1]. */
export function visibleRange(tl: Timeline, d: number, t0: number, t1: number): [number, number] {
  const lo = tl.offsets[d];
  const hi = tl.offsets[d + 1];
  let i = upperBound(tl.start, lo, hi, t0) - 1;
  if (i < lo) i = lo;
  while (i > lo && tl.start[i - 1] === tl.start[i]) i--;
  return [i, lowerBound(tl.start, i, hi, t1)];
}

/** Direction marks of a bidirectional placement's ops (in labels and the legend). */
export const DOWN = "▼";
export const UP = "▲";

function mbLabel(tl: Timeline, k: number, segments: number): string {
  const mb = microbatchLabel(tl.mb[k], segments);
  return tl.bidirectional ? `${isReverse(tl, k) ? UP : DOWN}${mb}` : mb;
}

/** A bar's label: its microbatch ("microbatch.segment" when the program splits microbatches into
 * `segments`), both of an F&B pair's, each after its direction when the placement has two. */
export function labelOf(tl: Timeline, k: number, segments = 1): string {
  return tl.flags[k] & FLAG_PAIR_F ? `${mbLabel(tl, k, segments)}|${mbLabel(tl, k + 1, segments)}` : mbLabel(tl, k, segments);
}

/** The chunk pattern of chunk c: none for the first, then four patterns in turn. */
export function chunkPatternKind(chunk: number): number {
  return chunk === 0 ? 0 : ((chunk - 1) % CHUNK_PATTERNS) + 1;
}
export const CHUNK_PATTERNS = 4;

/** The stripes (/, \, ×) or dots over a later chunk's bars, in the bar's label colour. */
function chunkPattern(ctx: CanvasRenderingContext2D, cache: DrawCache, ink: string, kind: number,
  dpr: number): CanvasPattern | null {
  const key = `${ink}|${kind}|${dpr}`;
  const known = cache.patterns.get(key);
  if (known !== undefined) return known;
  const size = Math.round(6 * dpr);
  const tile = document.createElement("canvas");
  tile.width = tile.height = size;
  const t = tile.getContext("2d");
  let pattern: CanvasPattern | null = null;
  if (t) {
    t.strokeStyle = t.fillStyle = ink;
    // dark stripes read at a lower opacity than light ones
    t.globalAlpha = ink === style.ink.dark ? 0.26 : 0.45;
    t.lineWidth = 1.25 * dpr;
    t.beginPath();
    if (kind === 4) {
      t.arc(size / 2, size / 2, 1.1 * dpr, 0, 2 * Math.PI);
      t.fill();
    } else {
      for (const o of [-size, 0, size]) {
        if (kind !== 2) {
          t.moveTo(o, size);
          t.lineTo(o + size, 0);
        }
        if (kind !== 1) {
          t.moveTo(o, 0);
          t.lineTo(o + size, size);
        }
      }
      t.stroke();
    }
    pattern = ctx.createPattern(tile, "repeat");
    pattern?.setTransform(new DOMMatrix().scale(1 / dpr));
  }
  cache.patterns.set(key, pattern);
  return pattern;
}

/** Pattern a bar by its chunk: all of it, or for an F&B pair the left half by the forward's
 * chunk and the right half by the backward's. */
function markChunks(ctx: CanvasRenderingContext2D, cache: DrawCache, ink: string, dpr: number, x: number, y: number,
  w: number, h: number, chunkF: number, chunkB: number): void {
  const halves: [number, number, number, number[]][] = chunkF === chunkB
    ? [[x, w, chunkF, [2.5]]]
    : [[x, w / 2, chunkF, [2.5, 0, 0, 2.5]], [x + w / 2, w / 2, chunkB, [0, 2.5, 2.5, 0]]];
  for (const [hx, hw, chunk, radii] of halves) {
    const kind = chunkPatternKind(chunk);
    if (!kind) continue;
    const pattern = chunkPattern(ctx, cache, ink, kind, dpr);
    if (!pattern) continue;
    ctx.fillStyle = pattern;
    ctx.beginPath();
    if (w >= ROUND_MIN_PX) ctx.roundRect(hx, y, hw, h, radii);
    else ctx.rect(hx, y, hw, h);
    ctx.fill();
  }
}

/** What the bar layer was last computed from: hover, selection and the scrubber leave it
 * alone, so those repaints only blit it again. */
interface BarFrame extends ViewKey {
  ops: number;
  rects: number;
  labels: Labels;
}
function drawOps(ctx: CanvasRenderingContext2D, s: Scene): DrawStats & { labelList: Labels } {
  const { tl, layout: L, scale, palette: P, dpr, cache } = s;
  const f = cache.barFrame;
  if (!(f && f.tl === tl && f.palette === P && f.layout === L && f.t0 === scale.view.t0 && f.t1 === scale.view.t1 &&
        f.dpr === dpr)) {
    cache.barFrame = { tl, palette: P, layout: L, t0: scale.view.t0, t1: scale.view.t1, dpr, ...computeBars(ctx, s) };
  }
  const frame = cache.barFrame!;
  const width = Math.round((L.plotRight - L.plotLeft) * dpr);
  const h = L.rowHeight - 2 * L.barInset;
  ctx.imageSmoothingEnabled = false;
  for (let d = 0; d < tl.devices; d++) {
    ctx.drawImage(cache.strip!.canvas, 0, d, width, 1, L.plotLeft, L.rowTop[d] + L.barInset, width / dpr, h);
  }
  ctx.imageSmoothingEnabled = true;
  for (let slot = 0; slot < SLOT_COUNT; slot++) {
    for (let shade = 0; shade < SHADE_LEVELS; shade++) {
      const b = cache.batches[slot * SHADE_LEVELS + shade];
      if (!b.n) continue;
      ctx.fillStyle = P.shades[slot][shade];
      ctx.beginPath();
      const buf = b.buf;
      for (let q = 0; q < b.n; q += 4) {
        if (buf[q + 2] >= ROUND_MIN_PX) ctx.roundRect(buf[q], buf[q + 1], buf[q + 2], buf[q + 3], 2.5);
        else ctx.rect(buf[q], buf[q + 1], buf[q + 2], buf[q + 3]);
      }
      ctx.fill();
    }
  }
  if (cache.tp.n) {
    ctx.fillStyle = P.tpShare;
    ctx.beginPath();
    const buf = cache.tp.buf;
    // the bar's top-left corner is round: so is the band's
    for (let q = 0; q < cache.tp.n; q += 4) ctx.roundRect(buf[q], buf[q + 1], buf[q + 2], buf[q + 3], [2.5, 0, 0, 0]);
    ctx.fill();
  }
  const g = cache.chunked.buf;
  const codes = cache.chunkCodes;
  for (let q = 0, c = 0; q < cache.chunked.n; q += 4, c += 4) {
    markChunks(ctx, cache, P.ink[codes[c + 2]][codes[c + 3]], dpr, g[q], g[q + 1], g[q + 2], g[q + 3], codes[c],
      codes[c + 1]);
  }
  if (tl.bidirectional && cache.bands) {
    const thick = bandHeight(h);
    ctx.imageSmoothingEnabled = false;
    for (let d = 0; d < tl.devices; d++) {
      const top = L.rowTop[d] + L.barInset;
      ctx.drawImage(cache.bands.canvas, 0, 2 * d, width, 1, L.plotLeft, top, width / dpr, thick);
      ctx.drawImage(cache.bands.canvas, 0, 2 * d + 1, width, 1, L.plotLeft, top + h - thick, width / dpr, thick);
    }
    ctx.imageSmoothingEnabled = true;
  }
  return { ops: frame.ops, rects: frame.rects, labels: 0, clipped: 0, labelList: frame.labels };
}

/** Cull, merge and sort the view's bars into the pixel strip and the vector batches; with
 * `overview`, every bar into the overview's strip (no vector bars, labels or direction bands). */
function computeBars(ctx: CanvasRenderingContext2D, s: Scene, overview = false): { ops: number; rects: number; labels: Labels } {
  const { tl, layout: L, scale, palette: P, dpr } = s;
  const { batches } = s.cache;
  const labels: Labels = { x: [], y: [], text: [], colour: [] };
  const { start, dur, flags, mb, busy } = tl;
  const { t0, t1 } = scale.view;
  const k0 = scale.k;
  const x0 = scale.x0;
  const left = L.plotLeft;
  const right = L.plotRight;
  const h = L.rowHeight - 2 * L.barInset;
  const digit = ctx.measureText("0").width;
  const mark = ctx.measureText(DOWN).width;
  const labelled = !overview && h >= 12;
  const segments = segmentsOf(s.meta);
  const chunked = !overview && tl.chunks > 1;
  // an op's tensor/expert-parallel traffic (Result.traffic: per stage, [F, B, I, W]); a pair has none of its own
  const traffic = overview ? null : s.meta.traffic ?? null;
  const tpHeight = Math.max(2, Math.round(h * TP_BAND));
  if (!overview) {
    s.cache.tp.n = 0;
    s.cache.chunked.n = 0;
    s.cache.chunkCodes.length = 0;
    for (const b of batches) b.n = 0;
  }
  const colours = packed(P);
  const width = Math.round((right - left) * dpr);
  const strip = overview ? (s.cache.overviewStrip ??= new Strip()) : (s.cache.strip ??= new Strip());
  strip.ensure(width, tl.devices);
  const px = strip.pixels;
  const bands = tl.bidirectional && !overview ? (s.cache.bands ??= new Strip()) : null;
  if (bands) bands.ensure(width, 2 * tl.devices);
  const inks = packedInk(P);
  const ranges = Array.from({ length: tl.devices }, (_, d) => visibleRange(tl, d, t0, t1));
  const ops = ranges.reduce((sum, [i, j]) => sum + j - i, 0);
  const vectorMin = overview ? Infinity : ops <= VECTOR_ALL_OPS ? 1 : VECTOR_MIN_PX;
  let rects = 0;
  for (let d = 0; d < tl.devices; d++) {
    const y = L.rowTop[d] + L.barInset;
    const row = d * width;
    const [i, j] = ranges[d];
    let k = i;
    while (k < j) {
      const f = flags[k];
      if (f & FLAG_PAIR_B) {
        k++;
        continue;
      }
      const xa = x0 + (start[k] - t0) * k0;
      const w = dur[k] * k0;
      if (w * dpr >= 1) {
        const xl = xa < left ? left : xa;
        const xr = xa + w > right ? right : xa + w;
        k++;
        if (xr <= xl) continue;
        const slot = colourSlot(f);
        // the overview's bars take their kind's colour only: microbatch shades would be a texture there
        const shade = overview ? 0 : shadeOf(mb[k - 1], segments);
        const visible = xr - xl;
        const drawn = visible >= GAP_MIN_PX ? visible - 1 : visible;
        rects++;
        if (visible >= vectorMin) {
          batches[slot * SHADE_LEVELS + shade].push(xl, y, drawn, h);
          const tp = traffic && !(f & FLAG_PAIR_F) ? traffic[tl.stage[k - 1]]?.[kindOfFlags(f)] ?? 0 : 0;
          if (tp > 0) {
            // the share of the op's length its collectives take, from its start
            const tr = Math.min(xl + drawn, xa + Math.min(tp, dur[k - 1]) * k0);
            if (tr > xl) s.cache.tp.push(xl, y, tr - xl, tpHeight);
          }
          if (chunked) {
            const chunkF = chunkOf(tl, k - 1);
            const chunkB = f & FLAG_PAIR_F ? chunkOf(tl, k) : chunkF;
            if (chunkF || chunkB) {
              s.cache.chunked.push(xl, y, drawn, h);
              s.cache.chunkCodes.push(chunkF, chunkB, slot, shade);
            }
          }
        } else {
          span(px, row, width, (xl - left) * dpr, (xl + drawn - left) * dpr, colours[slot * SHADE_LEVELS + shade]);
        }
        if (bands) {
          // down along the top edge, up along the bottom; a pair's halves may differ
          const up = isReverse(tl, k - 1);
          const upB = f & FLAG_PAIR_F ? isReverse(tl, k) : up;
          const a = (xl - left) * dpr;
          const b = (xl + drawn - left) * dpr;
          const ink = inks[slot * SHADE_LEVELS + shade];
          const rowOf = (reverse: boolean) => (2 * d + (reverse ? 1 : 0)) * width;
          if (up === upB) band(bands.pixels, rowOf(up), width, a, b, ink);
          else {
            band(bands.pixels, rowOf(up), width, a, (a + b) / 2, ink);
            band(bands.pixels, rowOf(upB), width, (a + b) / 2, b, ink);
          }
        }
        if (labelled) {
          const text = labelOf(tl, k - 1, segments);
          const marks = tl.bidirectional ? (f & FLAG_PAIR_F ? 2 : 1) : 0;
          if (visible >= (text.length - marks) * digit + marks * mark + LABEL_PAD_PX) {
            labels.x.push(xl + drawn / 2);
            labels.y.push(y + h / 2);
            labels.text.push(text);
            labels.colour.push(P.ink[slot][shade]);
          }
        }
        continue;
      }
      // ops starting in this device pixel merge into one; the pixel's last op may run on
      // past it and is then drawn on its own
      const col = Math.floor((xa - left) * dpr);
      const edge = t0 + ((col + 1) / dpr + left - x0) / k0;
      let m = lowerBound(start, k + 1, j, edge);
      let last = m - 1;
      if (flags[last] & FLAG_PAIR_B) last--;
      if (last > k && dur[last] * k0 * dpr >= 1) m = last;
      let mid = (k + m) >> 1;
      if (flags[mid] & FLAG_PAIR_B) mid--;
      if (col >= 0 && col < width) {
        cover(px, row + col, colours[colourSlot(flags[mid]) * SHADE_LEVELS], Math.min(1, (busy[m] - busy[k]) * k0 * dpr));
        rects++;
      }
      k = m;
    }
  }
  strip.ctx.putImageData(strip.image!, 0, 0, 0, 0, width, tl.devices);
  if (bands) bands.ctx.putImageData(bands.image!, 0, 0);
  return { ops, rects, labels };
}

function drawLabels(ctx: CanvasRenderingContext2D, labels: Labels, size: number): number {
  ctx.font = `600 ${size}px ${FONT}`;
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  for (let q = 0; q < labels.text.length; q++) {
    ctx.fillStyle = labels.colour[q];
    ctx.fillText(labels.text[q], labels.x[q], labels.y[q] + 0.5);
  }
  return labels.text.length;
}

/** Diagonal stripes marking idle time (the bubble), drawn sharp at the device pixel ratio. */
export function makeHatch(ctx: CanvasRenderingContext2D, P: Palette, dpr: number): CanvasPattern | null {
  const size = Math.round(7 * dpr);
  const tile = document.createElement("canvas");
  tile.width = tile.height = size;
  const t = tile.getContext("2d");
  if (!t) return null;
  t.fillStyle = P.laneIdle;
  t.fillRect(0, 0, size, size);
  t.strokeStyle = P.hatch;
  t.lineWidth = Math.max(1, dpr);
  t.beginPath();
  for (const o of [-size, 0, size]) {
    t.moveTo(o, size);
    t.lineTo(o + size, 0);
  }
  t.stroke();
  const pattern = ctx.createPattern(tile, "repeat");
  pattern?.setTransform(new DOMMatrix().scale(1 / dpr));
  return pattern;
}

function rowMid(L: Layout, d: number): number {
  return L.rowTop[d] + L.rowHeight / 2;
}

function slotBox(s: Scene, k: number): { x: number; y: number; w: number; h: number } {
  const { tl, layout: L, scale } = s;
  const slot = slotOf(tl, k);
  const d = deviceOf(tl, slot);
  const x = scale.x(tl.start[slot]);
  return { x, y: L.rowTop[d] + L.barInset, w: Math.max(1, tl.dur[slot] * scale.k), h: L.rowHeight - 2 * L.barInset };
}

function drawSlot(ctx: CanvasRenderingContext2D, s: Scene, k: number, outline: number): void {
  const { tl, palette: P } = s;
  const slot = slotOf(tl, k);
  const b = slotBox(s, slot);
  const c = colourSlot(tl.flags[slot]);
  const shade = shadeOf(tl.mb[slot], segmentsOf(s.meta));
  ctx.fillStyle = P.shades[c][shade];
  ctx.beginPath();
  ctx.roundRect(b.x, b.y, b.w, b.h, b.w >= ROUND_MIN_PX ? 2.5 : 0);
  ctx.fill();
  ctx.lineWidth = outline;
  ctx.strokeStyle = P.foreground;
  ctx.stroke();
  if (tl.chunks > 1) {
    const chunkF = chunkOf(tl, slot);
    const chunkB = tl.flags[slot] & FLAG_PAIR_F ? chunkOf(tl, slot + 1) : chunkF;
    markChunks(ctx, s.cache, P.ink[c][shade], s.dpr, b.x, b.y, b.w, b.h, chunkF, chunkB);
  }
  if (tl.bidirectional) {
    const thick = bandHeight(b.h);
    const up = isReverse(tl, slot);
    const upB = tl.flags[slot] & FLAG_PAIR_F ? isReverse(tl, slot + 1) : up;
    ctx.fillStyle = P.ink[c][shade];
    ctx.globalAlpha = BAND_ALPHA / 255;
    const halves: [number, number, boolean][] = up === upB ? [[b.x, b.w, up]] : [[b.x, b.w / 2, up], [b.x + b.w / 2, b.w / 2, upB]];
    for (const [x, w, reverse] of halves) ctx.fillRect(x, reverse ? b.y + b.h - thick : b.y, w, thick);
    ctx.globalAlpha = 1;
  }
  const text = labelOf(tl, slot, segmentsOf(s.meta));
  if (b.h >= 12 && b.w >= ctx.measureText(text).width + LABEL_PAD_PX) {
    ctx.fillStyle = P.ink[c][shade];
    ctx.fillText(text, b.x + b.w / 2, b.y + b.h / 2 + 0.5);
  }
}

export function arrow(ctx: CanvasRenderingContext2D, ax: number, ay: number, bx: number, by: number, solid: boolean): void {
  const dx = Math.max(10, Math.abs(bx - ax) / 2);
  ctx.setLineDash(solid ? [] : [3, 3]);
  ctx.lineWidth = solid ? 1.75 : 1.25;
  ctx.beginPath();
  ctx.moveTo(ax, ay);
  ctx.bezierCurveTo(ax + dx, ay, bx - dx, by, bx - 4, by);
  ctx.stroke();
  ctx.setLineDash([]);
  ctx.beginPath();
  ctx.moveTo(bx, by);
  ctx.lineTo(bx - 6, by - 3.5);
  ctx.lineTo(bx - 6, by + 3.5);
  ctx.closePath();
  ctx.fill();
}

function drawSelection(ctx: CanvasRenderingContext2D, s: Scene): void {
  const { tl, layout: L, palette: P } = s;
  const j = s.selectedMb;
  if (j < 0 || j >= tl.microbatches) return;
  ctx.fillStyle = P.dim;
  for (let d = 0; d < tl.devices; d++) ctx.fillRect(L.plotLeft, L.rowTop[d], L.plotRight - L.plotLeft, L.rowHeight);
  const members = opsOf(tl, j);
  ctx.font = `600 ${barLabelPx(L.rowHeight)}px ${FONT}`;
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  const chosen = s.selectedOp >= 0 && s.selectedOp < tl.n ? slotOf(tl, s.selectedOp) : -1;
  for (const k of members) drawSlot(ctx, s, k, slotOf(tl, k) === chosen ? 2.5 : 1.25);
  ctx.strokeStyle = P.path;
  ctx.fillStyle = P.path;
  const routed = L.laneHeight > 0; // cross-device arrows run through the transfer lanes instead
  for (const k of members) {
    const dep = depOf(tl, k);
    if (dep < 0 || (routed && inputTransfer(tl, k) >= 0)) continue;
    const from = slotOf(tl, dep);
    const to = slotOf(tl, k);
    const ax = s.scale.x(endOf(tl, from));
    const bx = s.scale.x(tl.start[to]);
    arrow(ctx, ax, rowMid(L, deviceOf(tl, from)), bx, rowMid(L, deviceOf(tl, to)), (tl.flags[k] & FLAG_WAITED) !== 0);
  }
}

/** The highlighted device's row: the other rows fade (unless a microbatch already dims
 * them) and the row is outlined. */
function drawDevice(ctx: CanvasRenderingContext2D, s: Scene): void {
  const { layout: L, palette: P, selectedDevice: d } = s;
  if (d < 0 || d >= L.devices) return;
  if (s.selectedMb < 0) {
    ctx.fillStyle = P.dim;
    ctx.globalAlpha = 0.6;
    for (let e = 0; e < L.devices; e++) {
      if (e !== d) ctx.fillRect(L.plotLeft, L.rowTop[e], L.plotRight - L.plotLeft, L.rowHeight);
    }
    ctx.globalAlpha = 1;
  }
  ctx.strokeStyle = P.foreground;
  ctx.lineWidth = 1.5;
  ctx.strokeRect(L.plotLeft + 0.75, L.rowTop[d] - 0.75, L.plotRight - L.plotLeft - 1.5, L.rowHeight + 1.5);
}

/** Where the run ends: a dashed line at its step's end (after every device's data-parallel tail),
 * or at its makespan when the shared axis goes on past it. */
function drawEnd(ctx: CanvasRenderingContext2D, s: Scene): void {
  const x = endX(s);
  if (x === null) return;
  const L = s.layout;
  ctx.strokeStyle = s.palette.muted;
  ctx.lineWidth = 1;
  ctx.setLineDash([3, 3]);
  ctx.beginPath();
  ctx.moveTo(x, L.ganttTop - 2);
  ctx.lineTo(x, L.axisTop);
  ctx.stroke();
  ctx.setLineDash([]);
}

/** The end line's x, or null when there is none in view: a step's end is always marked, a
 * pipeline's makespan where the axis goes on past it. */
function endX(s: Scene): number | null {
  const { layout: L, scale, meta } = s;
  const step = stepEnd(meta);
  if (step === null && !(s.extent > meta.makespan * (1 + 1e-9))) return null;
  const at = scale.x(step ?? meta.makespan);
  // at the axis's end (a step's end is the extent) the line stays just inside the plot
  return at < L.plotLeft || at > L.plotRight + 1 ? null : crisp(Math.min(at, L.plotRight - 1));
}

/** Where the end label goes: right of the end line, where this run has ended, when there is
 * room; else on the time axis under it (`onAxis`: the ticks' labels it would cover are left out). */
function endLabelBox(ctx: CanvasRenderingContext2D, s: Scene): { text: string; x: number; y: number; w: number; onAxis: boolean } | null {
  const x = endX(s);
  if (x === null) return null;
  const { layout: L, meta } = s;
  const text = meta.step ? `step ${number(meta.step.time, meta.time_unit)}` : `end ${number(meta.makespan, meta.time_unit)}`;
  ctx.font = `600 ${PX.label}px ${FONT}`;
  const w = ctx.measureText(text).width;
  const right = L.plotRight - x - 8 >= w;
  return {
    text, w, onAxis: !right,
    x: right ? x + 5 : Math.min(Math.max(x - w / 2, L.plotLeft), L.plotRight - w),
    y: right ? (L.ganttTop + L.ganttBottom) / 2 : L.axisTop + 14,
  };
}

/** "end 54.8 ms" (or "step 3.08 s", a training step's time) beside the end line, never over a bar. */
function drawEndLabel(ctx: CanvasRenderingContext2D, s: Scene): void {
  const box = endLabelBox(ctx, s);
  if (!box) return;
  const { palette: P } = s;
  const { text, x: tx, y, w } = box;
  // on a patch of background: a highlighted row's outline goes under it
  ctx.fillStyle = P.background;
  ctx.fillRect(tx - 3, y - 8, w + 6, 16);
  ctx.fillStyle = P.muted;
  ctx.textBaseline = "middle";
  ctx.textAlign = "left";
  ctx.fillText(text, tx, y);
}

function drawHover(ctx: CanvasRenderingContext2D, s: Scene): void {
  if (s.hover < 0 || s.hover >= s.tl.n) return;
  const b = slotBox(s, s.hover);
  ctx.lineWidth = 1.5;
  ctx.strokeStyle = s.palette.foreground;
  ctx.beginPath();
  ctx.roundRect(b.x - 0.5, b.y - 0.5, b.w + 1, b.h + 1, 3);
  ctx.stroke();
}

function drawFuture(ctx: CanvasRenderingContext2D, s: Scene): void {
  if (s.cursor === null) return;
  const { layout: L, palette: P } = s;
  const x = Math.max(L.plotLeft, s.scale.x(s.cursor));
  if (x >= L.plotRight) return;
  ctx.fillStyle = P.dim;
  for (let d = 0; d < L.devices; d++) ctx.fillRect(x, L.rowTop[d], L.plotRight - x, L.rowHeight);
}

function crisp(x: number): number {
  return Math.round(x) + 0.5;
}

function drawAxis(ctx: CanvasRenderingContext2D, s: Scene, tk: { step: number; values: number[] }): void {
  const { layout: L, palette: P, scale } = s;
  const y = crisp(L.axisTop);
  ctx.strokeStyle = P.axis;
  ctx.lineWidth = 1;
  ctx.beginPath();
  ctx.moveTo(L.plotLeft, y);
  ctx.lineTo(L.plotRight, y);
  for (const t of tk.values) {
    const x = crisp(scale.x(t));
    ctx.moveTo(x, y);
    ctx.lineTo(x, y + 5);
  }
  ctx.stroke();
  ctx.fillStyle = P.muted;
  ctx.font = `${PX.label}px ${FONT}`;
  ctx.textBaseline = "top";
  ctx.textAlign = "center";
  let lastRight = -Infinity;
  const end = endLabelBox(ctx, s);
  const hidden = end?.onAxis ? [end.x - 6, end.x + end.w + 6] : null;
  ctx.font = `${PX.label}px ${FONT}`;
  for (const t of tk.values) {
    const text = tickLabel(t, tk.step);
    const x = Math.min(Math.max(scale.x(t), L.plotLeft + 8), L.plotRight - 8);
    const w = ctx.measureText(text).width;
    if (x - w / 2 < lastRight + 6 || (hidden && x + w / 2 > hidden[0] && x - w / 2 < hidden[1])) continue;
    ctx.fillText(text, x, y + 8);
    lastRight = x + w / 2;
  }
  ctx.textAlign = "right";
  // the axis's title with its unit (times without one are in units of the costs), as long as fits
  const unit = s.meta.time_unit || "";
  const titles = unit ? [`time (${unit})`, unit] : ["time (units of f, b, w)", "time (f, b, w)", "time"];
  const room = L.plotLeft - 14;
  ctx.fillText(titles.find((t) => ctx.measureText(t).width <= room) ?? titles[titles.length - 1], L.plotLeft - 10, y + 8);
}

function drawGrid(ctx: CanvasRenderingContext2D, s: Scene, values: number[]): void {
  const { layout: L, palette: P, scale } = s;
  ctx.strokeStyle = P.grid;
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (const t of values) {
    const x = crisp(scale.x(t));
    ctx.moveTo(x, L.ganttTop - 2);
    ctx.lineTo(x, L.axisTop);
    if (L.memTop.length) {
      ctx.moveTo(x, L.memTop[0]);
      ctx.lineTo(x, L.memBottom);
    }
  }
  ctx.stroke();
}

/** Each device row's label, in the rows' coordinates; counts the labels cut in `cut`. */
function drawGutter(ctx: CanvasRenderingContext2D, s: Scene, cut: { count: number }): void {
  const { layout: L, palette: P, meta } = s;
  const right = L.plotLeft - 10;
  const width = right - 4;
  const fonts = gutterFonts(L.rowHeight, L.memHeight);
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  if (s.selectedDevice >= 0 && s.selectedDevice < L.devices) {
    ctx.fillStyle = P.surface;
    ctx.strokeStyle = P.foreground;
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.roundRect(2.5, L.rowTop[s.selectedDevice] - 0.5, L.plotLeft - 8, L.rowHeight + 1, 4);
    ctx.fill();
    ctx.stroke();
  }
  for (let d = 0; d < L.devices; d++) {
    const mid = rowMid(L, d);
    if (fonts.roomy) {
      const share = idleShare(meta, d);
      ctx.font = fonts.small;
      ctx.fillStyle = P.muted;
      const shareWidth = ctx.measureText(share).width;
      ctx.fillText(share, right, mid - 7);
      ctx.fillText(fit(ctx, meta.rows[d] ?? "", width, cut), right, mid + 7);
      ctx.font = fonts.head;
      ctx.fillStyle = P.foreground;
      ctx.fillText(fit(ctx, `device ${d}`, Math.max(0, width - shareWidth - 2), cut), right - shareWidth - 2, mid - 7);
    } else {
      const text = rowLine(meta, d);
      ctx.font = fonts.row;
      // a chart too narrow for the label at its size gives it a smaller one before cutting it
      if (ctx.measureText(text).width > width) ctx.font = fonts.narrow;
      ctx.fillStyle = P.foreground;
      ctx.fillText(fit(ctx, text, width, cut), right, mid);
    }
  }
}

/** Where the rows' viewport stands among all rows, when they scroll: a thin thumb right of the plot. */
function drawScrollbar(ctx: CanvasRenderingContext2D, s: Scene): void {
  const L = s.layout;
  if (L.scrollMax <= 0) return;
  const view = L.ganttBottom - L.ganttTop;
  const total = view + L.scrollMax;
  const x = L.plotRight + 7;
  ctx.fillStyle = s.palette.grid;
  ctx.beginPath();
  ctx.roundRect(x, L.ganttTop, 5, view, 2.5);
  ctx.fill();
  const top = L.ganttTop + ((s.scroll ?? 0) / total) * view;
  ctx.fillStyle = s.palette.muted;
  ctx.beginPath();
  ctx.roundRect(x, top, 5, Math.max(12, (view / total) * view), 2.5);
  ctx.fill();
}

function drawCursor(ctx: CanvasRenderingContext2D, s: Scene): void {
  if (s.cursor === null) return;
  const { layout: L, palette: P, scale } = s;
  const x = scale.x(s.cursor);
  if (x < L.plotLeft || x > L.plotRight) return;
  ctx.strokeStyle = P.cursor;
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  ctx.moveTo(x, L.ganttTop - 4);
  ctx.lineTo(x, L.memBottom);
  ctx.stroke();
  const text = `t = ${number(s.cursor, s.meta.time_unit)}`;
  ctx.font = `600 ${PX.label}px ${FONT}`;
  const w = ctx.measureText(text).width + 10;
  const bx = Math.min(Math.max(x - w / 2, L.plotLeft), L.plotRight - w);
  ctx.fillStyle = P.cursor;
  ctx.beginPath();
  ctx.roundRect(bx, L.axisTop + 4, w, 17, 8);
  ctx.fill();
  ctx.fillStyle = style.widget.onAccent;
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  ctx.fillText(text, bx + w / 2, L.axisTop + 13);
}

/** The rows' viewport, clipped (from `left`), with the rows scrolled: what the callback draws
 * in the rows' coordinates lands in the viewport. */
function inRowsViewport(ctx: CanvasRenderingContext2D, s: Scene, left: number, right: number, paint: () => void): void {
  const L = s.layout;
  ctx.save();
  ctx.beginPath();
  // 3 px above the first row: a selected row's outline and the hover ring stand out of it
  ctx.rect(left, L.ganttTop - 3, right - left, L.ganttBottom - L.ganttTop + 3);
  ctx.clip();
  ctx.translate(0, -(s.scroll ?? 0));
  paint();
  ctx.restore();
}

/** The whole run in the overview's strip (computed once per run, width, theme and extent). */
function drawOverviewBars(ctx: CanvasRenderingContext2D, s: Scene): void {
  const { tl, layout: L, palette: P, dpr, cache } = s;
  const full = new Scale(fullView(s.extent), L.plotLeft, L.plotRight);
  const f = cache.overviewFrame;
  if (!(f && f.tl === tl && f.palette === P && f.layout === L && f.t1 === full.view.t1 && f.dpr === dpr)) {
    computeBars(ctx, { ...s, scale: full }, true);
    const strip = cache.overviewStrip!;
    strip.ctx.putImageData(strip.image!, 0, 0, 0, 0, Math.round((L.plotRight - L.plotLeft) * dpr), tl.devices);
    cache.overviewFrame = { tl, palette: P, layout: L, t0: 0, t1: full.view.t1, dpr };
  }
  const width = Math.round((L.plotRight - L.plotLeft) * dpr);
  const rows = overviewRows(L);
  ctx.fillStyle = P.laneIdle;
  const end = Math.min(L.plotRight, full.x(Math.max(s.meta.makespan, stepEnd(s.meta) ?? 0)));
  for (const [top, height] of rows) ctx.fillRect(L.plotLeft, top, end - L.plotLeft, height);
  const strip = cache.overviewStrip!.canvas;
  if (rows.length === tl.devices) {
    ctx.imageSmoothingEnabled = false;
    rows.forEach(([top, height], d) => ctx.drawImage(strip, 0, d, width, 1, L.plotLeft, top, width / dpr, height));
  } else {
    // fewer pixel rows than devices: neighbours average into each
    ctx.imageSmoothingEnabled = true;
    ctx.drawImage(strip, 0, 0, width, tl.devices, L.plotLeft, L.overviewTop, width / dpr, L.overviewHeight);
  }
  ctx.imageSmoothingEnabled = true;
  drawTailOverview(ctx, s.meta, P, rows, (t) => full.x(t), tl.devices);
}

/** Paint the whole frame; the context is already scaled to CSS pixels. */
export function draw(ctx: CanvasRenderingContext2D, s: Scene): DrawStats {
  const { layout: L, palette: P } = s;
  ctx.fillStyle = P.background;
  ctx.fillRect(0, 0, L.width, L.height);
  const tk = ticks(s.scale.view, L.plotRight - L.plotLeft);
  if (L.overviewHeight) {
    drawOverviewBars(ctx, s);
    drawOverviewWindow(ctx, s);
  }
  // a device idles until the step ends, after its tail (Result.breakdown counts it so)
  const idleRight = Math.min(L.plotRight, s.scale.x(Math.max(s.meta.makespan, stepEnd(s.meta) ?? 0)));
  inRowsViewport(ctx, s, L.plotLeft, L.plotRight, () => {
    ctx.fillStyle = s.hatch ?? P.laneIdle;
    for (let d = 0; d < L.devices; d++) ctx.fillRect(L.plotLeft, L.rowTop[d], idleRight - L.plotLeft, L.rowHeight);
  });
  drawGrid(ctx, s, tk.values);
  const stats: DrawStats = { ops: 0, rects: 0, labels: 0, clipped: 0 };
  inRowsViewport(ctx, s, L.plotLeft, L.plotRight, () => {
    ctx.font = `600 ${barLabelPx(L.rowHeight)}px ${FONT}`;
    const { labelList, ...bars } = drawOps(ctx, s);
    Object.assign(stats, bars);
    if (s.overlay) drawOverlay(ctx, s, s.overlay);
    stats.labels = drawLabels(ctx, labelList, barLabelPx(L.rowHeight));
    ctx.font = `600 ${PX.label}px ${FONT}`;
    stats.tail = drawTail(ctx, { meta: s.meta, layout: L, scale: s.scale, palette: P, hoverTail: s.hoverTail });
    const lanes = { ...s, cache: s.cache, hoverTransfer: s.hoverTransfer ?? -1 };
    drawLanes(ctx, lanes);
    drawFuture(ctx, s);
    drawSelection(ctx, s);
    if (s.overlay) drawOverlaySelection(ctx, s, s.overlay);
    drawLaneSelection(ctx, lanes, s.selectedMb, (ax, ay, bx, by, solid) => arrow(ctx, ax, ay, bx, by, solid));
    drawDevice(ctx, s);
    drawHover(ctx, s);
  });
  ctx.save();
  ctx.beginPath();
  ctx.rect(L.plotLeft, 0, L.plotRight - L.plotLeft, L.height);
  ctx.clip();
  drawEnd(ctx, s);
  drawMemory(ctx, s);
  ctx.restore();
  drawAxis(ctx, s, tk);
  drawEndLabel(ctx, s);
  drawCursor(ctx, s);
  drawScrollbar(ctx, s);
  const cut = { count: 0 };
  inRowsViewport(ctx, s, 0, L.plotLeft, () => drawGutter(ctx, s, cut));
  drawOverviewLabel(ctx, s);
  drawMemoryLabels(ctx, s, cut);
  stats.clipped = cut.count;
  return stats;
}
