// The activation-memory lanes under the Gantt rows. Every lane has the same scale, from 0 to a
// little above the highest peak (or the device's capacity): up to HEAT_ABOVE devices each lane is
// the device's step curve with gridlines labelled in activation units (GiB when the config gives
// activation_bytes) and its closed-form peak dashed; with a capacity (Config.from_model) the lane
// stacks the activations on the static memory, the capacity is a dashed line, and a device over
// it is drawn in red with its excess. Above HEAT_ABOVE devices the lanes collapse into a heat
// strip, a thin row per device whose colour is its memory, with the colour scale beside the
// title. Hovering a lane shows the value (tooltip.ts) and marks it here.

import { type MemoryCurves, lowerBound, memoryAt, rangeMax, upperBound } from "./data";
import type { Scene } from "./draw";
import { capacityOf, formatMemory, isOver, laneBase, lanesWithStatic, memoryUnit } from "./fit";
import { number } from "./format";
import { FONT, PX, fit, gutterFonts, memoryLabel } from "./labels";
import type { Layout } from "./layout";
import { closedPeak, type Meta } from "./meta";
import { Strip, blend, over, rgbaWord } from "./pixels";
import type { Palette } from "./theme";
import { ticks } from "./scale";

/** The top of the lanes' shared scale: the highest simulated or closed-form peak (on the static
 * memory when the lanes show it) or the capacity, plus 10 % so a line lane's peak stays clear of
 * the lane above; a heat strip's scale ends at that top itself, so its hottest colour is the peak. */
export function memoryTop(mem: MemoryCurves, meta: Meta, heat = false): number {
  let top = lanesWithStatic(meta) ? 0 : mem.peak;
  for (let d = 0; d < mem.devices; d++) {
    const base = laneBase(meta, d);
    top = Math.max(top, base + (meta.peak_activation[d] ?? 0), base + (closedPeak(meta, d) ?? 0));
  }
  top = Math.max(top, capacityOf(meta) ?? 0);
  return top > 0 ? (heat ? top : top * 1.1) : 1;
}

/** Height in px of a line's label at a lane's right end. */
export const LABEL_HEIGHT = 10;

/** The rows [top, bottom] a label of the line at y covers: above the line, or below it where the
 * lane's top (laneTop) leaves no room. */
export function labelBox(y: number, laneTop: number): [number, number] {
  return y - LABEL_HEIGHT < laneTop ? [y + 2, y + 2 + LABEL_HEIGHT] : [y - LABEL_HEIGHT, y];
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
  const { palette: P, dpr, cache, meta } = s;
  strip.ensure(width, height * lanes);
  const px = strip.pixels;
  // opaque pixels (the fill already blended over the lane) blit without blending
  const surface = rgbaWord(P.surface);
  const fills = [over(rgbaWord(P.memoryFill), surface), over(rgbaWord(P.oomFill), surface)];
  const lines = [rgbaWord(P.memoryLine), rgbaWord(P.oom)];
  const staticFill = over(rgbaWord(P.memoryStatic), surface);
  const thick = Math.max(1, Math.round(dpr));
  const level = (v: number) => Math.min(height - 1, Math.round((v / top) * (height - 1)));
  if (cache.memoryColumns.high.length < width) {
    cache.memoryColumns = { high: new Int16Array(width), outline: new Int16Array(width) };
  }
  const { high, outline } = cache.memoryColumns;
  const capacity = capacityOf(meta);
  // rows above the capacity's level: a device's memory there does not fit, and is red
  const capLevel = capacity === null ? height : level(capacity);
  for (let d = 0; d < lanes; d++) {
    high.fill(-1);
    // activations stack on the static memory when the lanes show it
    const base = laneBase(meta, d);
    const floor = base > 0 ? level(base) : -1;
    walkColumns(s, d, columns, (c, before, peak, after) => {
      high[c] = level(base + peak);
      outline[c] = Math.max(0, Math.min(level(base + before), level(base + after)) - thick + 1);
    });
    // row by row, so that the writes run along memory
    for (let y = 0; y < height; y++) {
      const row = (d * height + height - 1 - y) * width;
      const bad = y > capLevel ? 1 : 0;
      const line = lines[bad];
      const under = y <= floor ? staticFill : fills[bad];
      for (let c = 0; c < width; c++) px[row + c] = y > high[c] ? surface : y >= outline[c] ? line : under;
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
    const base = laneBase(s.meta, d);
    walkColumns(s, d, columns, (c, _before, peak) => {
      px[row + c] = ramp[Math.min(255, Math.max(0, Math.round(((base + peak) / top) * 255)))];
    });
  }
}

/** The lanes (or the heat strip), their gridlines, closed-form peaks and the hovered point. */
export function drawMemory(ctx: CanvasRenderingContext2D, s: Scene): void {
  const { mem, layout: L, palette: P, scale, meta, dpr, cache } = s;
  if (!mem || !L.memTop.length) return;
  const top = memoryTop(mem, meta, L.heat);
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

/** A label at a lane's right end, beside the line at y: above it, or below where the lane's top
 * leaves no room; on a patch of the lane's surface. */
function lineLabel(ctx: CanvasRenderingContext2D, s: Scene, d: number, y: number, text: string, colour: string): void {
  const { layout: L, palette: P } = s;
  const w = ctx.measureText(text).width;
  const [top, bottom] = labelBox(y, L.memTop[d]);
  ctx.textBaseline = "bottom";
  ctx.fillStyle = P.surface;
  ctx.fillRect(L.plotRight - w - 5, top, w + 4, bottom - top);
  ctx.fillStyle = colour;
  ctx.fillText(text, L.plotRight - 3, bottom - 0.5);
}

/** Gridlines at round values (of the unit shown; the section's note gives their step, so that no
 * lane ends in a lone number that reads as its value), the closed-form peaks and the capacity
 * dashed, each dashed line labelled with what it is. */
function drawScale(ctx: CanvasRenderingContext2D, s: Scene, top: number, lanes: number): void {
  const { layout: L, palette: P, meta } = s;
  const u = memoryUnit(meta);
  const grid = memoryGrid(top * u.factor, L.memHeight).map((v) => v / u.factor);
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
  const dashed: (number | null)[] = [];
  if (meta.closed_form?.applies) {
    ctx.strokeStyle = P.closedForm;
    ctx.globalAlpha = 0.55;
    ctx.setLineDash([4, 3]);
    ctx.beginPath();
    for (let d = 0; d < lanes; d++) {
      const cf = closedPeak(meta, d);
      dashed[d] = null;
      if (cf === null) continue;
      const y = Math.round(laneY(L, d, laneBase(meta, d) + cf, top)) + 0.5;
      dashed[d] = y;
      ctx.moveTo(L.plotLeft, y);
      ctx.lineTo(L.plotRight, y);
    }
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.globalAlpha = 1;
  }
  const capacity = capacityOf(meta);
  const capY = capacity === null ? 0 : Math.round(laneY(L, 0, capacity, top) - L.memTop[0]);
  if (capacity !== null) {
    ctx.lineWidth = 1.25;
    ctx.setLineDash([7, 3]);
    for (let d = 0; d < lanes; d++) {
      const y = L.memTop[d] + capY + 0.5;
      ctx.strokeStyle = isOver(meta, d) ? P.oom : P.foreground;
      ctx.globalAlpha = isOver(meta, d) ? 1 : 0.6;
      ctx.beginPath();
      ctx.moveTo(L.plotLeft, y);
      ctx.lineTo(L.plotRight, y);
      ctx.stroke();
    }
    ctx.setLineDash([]);
    ctx.globalAlpha = 1;
    ctx.lineWidth = 1;
  }
  if (L.memHeight < 16) return;
  // labels at the lane's right end, where runs have drained their memory
  ctx.textAlign = "right";
  const cap = capacity === null ? "" : `capacity ${formatMemory(capacity, u)}`;
  ctx.font = `${PX.tiny}px ${FONT}`;
  for (let d = 0; d < lanes; d++) {
    const cf = dashed[d];
    if (capacity !== null) {
      const y = L.memTop[d] + capY;
      // in a lane too low for it beside the line, the section's note gives the capacity
      if (labelBox(y, L.memTop[d])[1] <= L.memTop[d] + L.memHeight) lineLabel(ctx, s, d, y, cap, isOver(meta, d) ? P.oom : P.muted);
    } else if (typeof cf === "number") {
      lineLabel(ctx, s, d, Math.round(cf), `closed form ${formatMemory(laneBase(meta, d) + (closedPeak(meta, d) ?? 0), u)}`,
        P.muted);
    }
  }
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
  const y = laneY(L, h.device, laneBase(s.meta, h.device) + memoryAt(mem, h.device, h.t), top);
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
  const top = memoryTop(mem, meta, L.heat);
  const y = L.memTitleTop + 4;
  ctx.textAlign = "left";
  ctx.textBaseline = "top";
  ctx.font = `600 ${PX.label}px ${FONT}`;
  ctx.fillStyle = P.foreground;
  const u = memoryUnit(meta);
  const withStatic = lanesWithStatic(meta);
  const title = withStatic ? "memory" : "activation memory";
  ctx.fillText(title, L.plotLeft, y);
  let x = L.plotLeft + ctx.measureText(title).width + 16;
  ctx.font = `${PX.label}px ${FONT}`;
  ctx.fillStyle = P.muted;
  const unit = u.label || "activations of one microbatch through 1/p of the model";
  const capacity = capacityOf(meta);
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
    const topText = formatMemory(top, u);
    ctx.fillText(topText, x, y);
    x += ctx.measureText(topText).width + 16;
    const what = withStatic ? "memory (activations + static)" : "memory";
    const cap = capacity === null ? "" : `; capacity ${formatMemory(capacity, u)}`;
    notes = [`a row per device, coloured by its highest ${what} in each pixel, in ${unit}${cap}; hover for values`,
      `a row per device${cap}; hover for values`, ""];
  } else {
    const dashed = meta.closed_form?.applies && meta.closed_form.peak_activation;
    const step = memoryGrid(top * u.factor, L.memHeight)[0];
    const every = step === undefined ? "" : `, a gridline every ${number(step, u.label || null)}`;
    const stacked = withStatic ? "activations over the grey static memory (weights, gradients, optimizer), " : "";
    const cap = capacity === null ? "" : ` · long dashes: device capacity ${formatMemory(capacity, u)}`;
    const closed = dashed ? (capacity === null ? " · dashed: closed-form peak" : " · short dashes: closed-form peak") : "";
    notes = [`one scale on every lane${every}: ${stacked}in ${unit}${closed}${cap}`,
      `one scale${every}, in ${u.label || "activation units"}${withStatic ? " · grey: static" : ""}` +
        `${dashed ? " · dashed: closed form" : ""}${capacity === null ? "" : ` · capacity ${formatMemory(capacity, u)}`}`,
      `one scale, in ${u.label || "activation units"}`, ""];
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
    ctx.font = `${PX.tiny}px ${FONT}`;
    let every = 1;
    while (every * L.memHeight < 11) every *= 2;
    for (let d = 0; d < L.memTop.length; d += every) {
      ctx.fillStyle = isOver(meta, d) ? P.oom : P.muted;
      ctx.fillText(String(d), right, L.memTop[d] + L.memHeight / 2);
    }
    return;
  }
  for (let d = 0; d < L.memTop.length; d++) {
    const value = s.cursor === null ? null : memoryAt(mem, d, s.cursor);
    // a device over its capacity: its label in red, as its lane
    const over = isOver(meta, d);
    ctx.font = over ? `600 ${fonts.memory}` : fonts.memory;
    ctx.fillStyle = over ? P.oom : P.muted;
    const label = memoryLabel(meta, d, fonts.roomy, value, L.memHeight);
    const mid = L.memTop[d] + L.memHeight / 2;
    if (label.second === null) ctx.fillText(fit(ctx, label.first, right - 4, cut), right, mid);
    else {
      ctx.fillText(fit(ctx, label.first, right - 4, cut), right, mid - 6);
      ctx.fillText(fit(ctx, label.second, right - 4, cut), right, mid + 6);
    }
  }
}
