// The activation-memory lanes under the Gantt rows. Every lane has the same scale, from 0 to a
// little above the highest peak: up to HEAT_ABOVE devices each lane is the device's step curve
// with gridlines labelled in activation units and its closed-form peak dashed; above that the
// lanes collapse into a heat strip, a thin row per device whose colour is its memory, with the
// colour scale beside the title. Hovering a lane shows the value (tooltip.ts) and marks it here.

import { type MemoryCurves, lowerBound, memoryAt, rangeMax, upperBound } from "./data";
import type { Scene } from "./draw";
import { num } from "./format";
import { FONT, fit, gutterFonts, memoryLine } from "./labels";
import type { Layout } from "./layout";
import { closedPeak, type Meta } from "./meta";
import { Strip, blend, over, rgbaWord } from "./pixels";
import type { Palette } from "./theme";
import { ticks } from "./scale";

/** The top of the lanes' shared scale: the highest simulated or closed-form peak, plus 10 %. */
export function memoryTop(mem: MemoryCurves, meta: Meta): number {
  let top = mem.peak;
  for (let d = 0; d < mem.devices; d++) top = Math.max(top, closedPeak(meta, d) ?? 0);
  return top > 0 ? top * 1.1 : 1;
}

/** Gridline values inside a lane `height` px tall: 1, 2 or 5 × 10^k apart, at least 10 px
 * (closer in a lane too low to hold one otherwise). */
export function memoryGrid(top: number, height: number): number[] {
  for (const minPx of [10, 5, 2]) {
    const grid = ticks({ t0: 0, t1: top }, height, minPx).values.filter((v) => v > 0 && v < top);
    if (grid.length) return grid;
  }
  return [];
}

/** What the memory layer was last computed from: hover, selection and the replay only blit it. */
export interface MemoryFrame {
  mem: MemoryCurves;
  palette: Palette;
  layout: Layout;
  t0: number;
  t1: number;
  dpr: number;
  top: number;
}

/** Per device-pixel column c of device d's lane, in order: the value held when the column
 * starts, the highest value inside it, and the value held when it ends. */
function walkColumns(s: Scene, d: number, columns: number,
  visit: (c: number, before: number, peak: number, after: number) => void): void {
  const { mem, layout: L, scale, dpr } = s;
  if (!mem) return;
  const { t0, t1 } = scale.view;
  const lo = mem.offsets[d];
  const hi = mem.offsets[d + 1];
  let k = upperBound(mem.times, lo, hi, t0);
  const j = lowerBound(mem.times, k, hi, t1);
  let held = k > lo ? mem.values[k - 1] : 0;
  for (let c = 0; c < columns; c++) {
    const m = lowerBound(mem.times, k, j, scale.t(L.plotLeft + (c + 1) / dpr));
    const before = held;
    let peak = held;
    if (m > k) {
      peak = Math.max(held, rangeMax(mem, k, m));
      held = mem.values[m - 1];
      k = m;
    }
    visit(c, before, peak, held);
  }
}

/** Each lane's step curve: in every column the highest level is filled, and every level the
 * curve passes through is on its outline. One image of `lanes` × `height` rows. */
function rasteriseLanes(s: Scene, strip: Strip, top: number, width: number, height: number, lanes: number,
  columns: number): void {
  const { palette: P, dpr, cache } = s;
  strip.ensure(width, height * lanes);
  const px = strip.pixels;
  // opaque pixels (the fill already blended over the lane) blit without blending
  const surface = rgbaWord(P.surface);
  const fill = over(rgbaWord(P.memoryFill), surface);
  const line = rgbaWord(P.memoryLine);
  const thick = Math.max(1, Math.round(dpr));
  const level = (v: number) => Math.min(height - 1, Math.round((v / top) * (height - 1)));
  if (cache.memoryColumns.high.length < width) {
    cache.memoryColumns = { high: new Int16Array(width), outline: new Int16Array(width) };
  }
  const { high, outline } = cache.memoryColumns;
  for (let d = 0; d < lanes; d++) {
    high.fill(-1);
    walkColumns(s, d, columns, (c, before, peak, after) => {
      high[c] = level(peak);
      outline[c] = Math.max(0, Math.min(level(before), level(after)) - thick + 1);
    });
    // row by row, so that the writes run along memory
    for (let y = 0; y < height; y++) {
      const row = (d * height + height - 1 - y) * width;
      for (let c = 0; c < width; c++) px[row + c] = y > high[c] ? surface : y >= outline[c] ? line : fill;
    }
  }
}

/** The colours of the heat strip, from no memory (the lane's surface) to the top of the scale. */
export function heatRamp(P: Palette): Uint32Array {
  const low = rgbaWord(P.surface);
  const high = rgbaWord(P.memoryLine);
  return Uint32Array.from({ length: 256 }, (_, i) => blend(low, high, Math.pow(i / 255, 0.8)));
}

/** A row per device: each column coloured by the highest memory inside it. */
function rasteriseHeat(s: Scene, strip: Strip, top: number, width: number, lanes: number, columns: number): void {
  strip.ensure(width, lanes);
  const px = strip.pixels;
  const ramp = heatRamp(s.palette);
  for (let d = 0; d < lanes; d++) {
    const row = d * width;
    walkColumns(s, d, columns, (c, _before, peak) => {
      px[row + c] = ramp[Math.min(255, Math.max(0, Math.round((peak / top) * 255)))];
    });
  }
}

/** The lanes (or the heat strip), their gridlines, closed-form peaks and the hovered point. */
export function drawMemory(ctx: CanvasRenderingContext2D, s: Scene): void {
  const { mem, layout: L, palette: P, scale, meta, dpr, cache } = s;
  if (!mem || !L.memTop.length) return;
  const top = memoryTop(mem, meta);
  const width = Math.round((L.plotRight - L.plotLeft) * dpr);
  const height = Math.max(1, Math.round(L.memHeight * dpr));
  const lanes = Math.min(mem.devices, L.memTop.length);
  const columns = Math.max(0, Math.min(width, Math.ceil((scale.x(meta.makespan) - L.plotLeft) * dpr)));
  const strip = (cache.memoryStrip ??= new Strip());
  const f = cache.memoryFrame;
  if (!(f && f.mem === mem && f.palette === P && f.layout === L && f.t0 === scale.view.t0 &&
        f.t1 === scale.view.t1 && f.dpr === dpr && f.top === top)) {
    cache.memoryFrame = { mem, palette: P, layout: L, t0: scale.view.t0, t1: scale.view.t1, dpr, top };
    if (L.heat) rasteriseHeat(s, strip, top, width, lanes, columns);
    else rasteriseLanes(s, strip, top, width, height, lanes, columns);
    strip.ctx.putImageData(strip.image!, 0, 0);
  }
  ctx.imageSmoothingEnabled = false;
  if (L.heat) {
    ctx.drawImage(strip.canvas, 0, 0, width, lanes, L.plotLeft, L.memTop[0], width / dpr, lanes * L.memHeight);
  } else {
    for (let d = 0; d < lanes; d++) {
      ctx.drawImage(strip.canvas, 0, d * height, width, height, L.plotLeft, L.memTop[d], width / dpr, L.memHeight);
    }
  }
  ctx.imageSmoothingEnabled = true;
  if (!L.heat) drawScale(ctx, s, top, lanes);
  drawMemoryHover(ctx, s, top);
}

function laneY(L: Layout, d: number, value: number, top: number): number {
  return L.memTop[d] + L.memHeight - (value / top) * L.memHeight;
}

/** Gridlines at round values with the highest one labelled, and the closed-form peaks dashed. */
function drawScale(ctx: CanvasRenderingContext2D, s: Scene, top: number, lanes: number): void {
  const { layout: L, palette: P, meta } = s;
  const grid = memoryGrid(top, L.memHeight);
  ctx.strokeStyle = P.border;
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (let d = 0; d < lanes; d++) {
    for (const v of grid) {
      const y = Math.round(laneY(L, d, v, top)) + 0.5;
      ctx.moveTo(L.plotLeft, y);
      ctx.lineTo(L.plotRight, y);
    }
  }
  ctx.stroke();
  // the highest gridline's value at the lane's right end, where runs have drained their memory
  const label = grid[grid.length - 1];
  if (label !== undefined && L.memHeight >= 16) {
    ctx.font = `9px ${FONT}`;
    ctx.textAlign = "right";
    const text = num(label, 4);
    const w = ctx.measureText(text).width;
    for (let d = 0; d < lanes; d++) {
      const y = Math.round(laneY(L, d, label, top));
      const below = y - 10 < L.memTop[d];
      ctx.textBaseline = below ? "top" : "bottom";
      const boxTop = below ? y + 1 : y - 10;
      ctx.fillStyle = P.surface;
      ctx.fillRect(L.plotRight - w - 5, boxTop, w + 4, 10);
      ctx.fillStyle = P.muted;
      ctx.fillText(text, L.plotRight - 3, below ? y + 1 : y);
    }
  }
  if (!meta.closed_form?.applies) return;
  ctx.strokeStyle = P.closedForm;
  ctx.globalAlpha = 0.55;
  ctx.setLineDash([4, 3]);
  ctx.beginPath();
  for (let d = 0; d < lanes; d++) {
    const cf = closedPeak(meta, d);
    if (cf === null) continue;
    const y = Math.round(laneY(L, d, cf, top)) + 0.5;
    ctx.moveTo(L.plotLeft, y);
    ctx.lineTo(L.plotRight, y);
  }
  ctx.stroke();
  ctx.setLineDash([]);
  ctx.globalAlpha = 1;
}

/** The hovered time on the hovered lane: a hairline, and a dot on the curve (or the cell outlined). */
function drawMemoryHover(ctx: CanvasRenderingContext2D, s: Scene, top: number): void {
  const h = s.memoryHover;
  const { mem, layout: L, palette: P, scale } = s;
  if (!h || !mem || h.device >= L.memTop.length) return;
  const x = Math.round(scale.x(h.t)) + 0.5;
  if (x < L.plotLeft || x > L.plotRight) return;
  ctx.strokeStyle = P.foreground;
  ctx.lineWidth = 1;
  if (L.heat) {
    ctx.strokeRect(L.plotLeft + 0.5, L.memTop[h.device] - 0.5, L.plotRight - L.plotLeft - 1, L.memHeight + 1);
    ctx.beginPath();
    ctx.moveTo(x, L.memTop[0]);
    ctx.lineTo(x, L.memBottom);
    ctx.stroke();
    return;
  }
  const y = laneY(L, h.device, memoryAt(mem, h.device, h.t), top);
  ctx.beginPath();
  ctx.moveTo(x, L.memTop[h.device]);
  ctx.lineTo(x, L.memTop[h.device] + L.memHeight);
  ctx.stroke();
  ctx.fillStyle = P.memoryLine;
  ctx.beginPath();
  ctx.arc(x, y, 3, 0, 2 * Math.PI);
  ctx.fill();
  ctx.stroke();
}

/** The memory section's title and scale note, and each lane's label in the gutter (in a heat
 * strip, every few devices' number); returns nothing, counts cut labels in `cut`. */
export function drawMemoryLabels(ctx: CanvasRenderingContext2D, s: Scene, cut: { count: number }): void {
  const { layout: L, palette: P, meta, mem } = s;
  if (!mem || !L.memTop.length) return;
  const top = memoryTop(mem, meta);
  const y = L.memTitleTop + 4;
  ctx.textAlign = "left";
  ctx.textBaseline = "top";
  ctx.font = `600 11px ${FONT}`;
  ctx.fillStyle = P.foreground;
  const title = "activation memory";
  ctx.fillText(title, L.plotLeft, y);
  let x = L.plotLeft + ctx.measureText(title).width + 16;
  ctx.font = `11px ${FONT}`;
  ctx.fillStyle = P.muted;
  const unit = "activations of one microbatch through 1/p of the model";
  let notes: string[];
  if (L.heat) {
    // the colour scale: 0, a ramp, the top
    const rampWidth = 90;
    ctx.fillText("0", x, y);
    x += ctx.measureText("0").width + 4;
    const ramp = heatRamp(P);
    for (let i = 0; i < rampWidth; i++) {
      const w = ramp[Math.round((i / (rampWidth - 1)) * 255)];
      ctx.fillStyle = `rgb(${w & 255}, ${(w >>> 8) & 255}, ${(w >>> 16) & 255})`;
      ctx.fillRect(x + i, y + 1, 1, 10);
    }
    ctx.strokeStyle = P.border;
    ctx.strokeRect(x - 0.5, y + 0.5, rampWidth + 1, 11);
    x += rampWidth + 4;
    ctx.fillStyle = P.muted;
    const topText = num(top, 3);
    ctx.fillText(topText, x, y);
    x += ctx.measureText(topText).width + 16;
    notes = [`a row per device, coloured by its highest memory in each pixel, in ${unit}; hover for values`,
      "a row per device; hover for values", ""];
  } else {
    const dashed = meta.closed_form?.applies && meta.closed_form.peak_activation;
    notes = [`one scale on every lane, in ${unit}${dashed ? " · dashed: closed-form peak" : ""}`,
      `one scale, in activation units${dashed ? " · dashed: closed form" : ""}`, ""];
  }
  // the longest note that fits
  const room = L.plotRight - x;
  ctx.fillText(notes.find((n) => ctx.measureText(n).width <= room) ?? "", x, y);

  const right = L.plotLeft - 10;
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  const fonts = gutterFonts(L.rowHeight, L.memHeight);
  ctx.fillStyle = P.muted;
  if (L.heat) {
    // device numbers far enough apart to read, on powers of two
    ctx.font = `9px ${FONT}`;
    let every = 1;
    while (every * L.memHeight < 11) every *= 2;
    for (let d = 0; d < L.memTop.length; d += every) ctx.fillText(String(d), right, L.memTop[d] + L.memHeight / 2);
    return;
  }
  ctx.font = fonts.memory;
  for (let d = 0; d < L.memTop.length; d++) {
    const value = s.cursor === null ? null : memoryAt(mem, d, s.cursor);
    ctx.fillText(fit(ctx, memoryLine(meta, d, fonts.roomy, value), right - 4, cut), right, L.memTop[d] + L.memHeight / 2);
  }
}
