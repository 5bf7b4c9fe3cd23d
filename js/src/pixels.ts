// Pixel images the chart paints itself: software canvas raster costs about 3 µs per path
// rectangle, so 10^4 thin bars would take 30 ms. In a lane every bar spans the same rows, so
// the lane's bars are a 1-D image: one strip row per lane, stretched over the lane's height
// with one drawImage. Colours are little-endian RGBA words.

import type { Timeline } from "./data";
import type { Layout } from "./layout";
import type { Palette } from "./theme";

/** What a cached image of the view was painted from: when none of it changed, the image is
 * drawn again instead of repainted. */
export interface ViewKey {
  tl: Timeline;
  palette: Palette;
  layout: Layout;
  t0: number;
  t1: number;
  dpr: number;
}

export class Strip {
  canvas = document.createElement("canvas");
  ctx = this.canvas.getContext("2d")!;
  image: ImageData | null = null;
  pixels = new Uint32Array(0);
  /** A cleared image of width × rows pixels. */
  ensure(width: number, rows: number): void {
    if (this.image && this.image.width === width && this.image.height === rows) {
      this.pixels.fill(0);
      return;
    }
    this.canvas.width = width;
    this.canvas.height = rows;
    this.image = new ImageData(width, rows);
    this.pixels = new Uint32Array(this.image.data.buffer);
  }
}

/** A CSS colour (#rrggbb, rgb(...) or rgba(...)) as an RGBA word. */
export function rgbaWord(c: string): number {
  const [r, g, b, a = 1] = c.startsWith("#")
    ? [parseInt(c.slice(1, 3), 16), parseInt(c.slice(3, 5), 16), parseInt(c.slice(5, 7), 16)]
    : c.match(/[\d.]+/g)!.map(Number);
  return ((Math.round(a * 255) << 24) | (b << 16) | (g << 8) | r) >>> 0;
}

/** Word `top` (with alpha) composited over the opaque word `below`. */
export function over(top: number, below: number): number {
  const a = (top >>> 24) / 255;
  let out = 255 << 24;
  for (const shift of [0, 8, 16]) {
    const c = Math.round(((top >>> shift) & 255) * a + ((below >>> shift) & 255) * (1 - a));
    out |= c << shift;
  }
  return out >>> 0;
}

/** The opaque word `share` (0..1) of the way from word a to word b. */
export function blend(a: number, b: number, share: number): number {
  let out = 255 << 24;
  for (const shift of [0, 8, 16]) {
    const x = (a >>> shift) & 255;
    out |= Math.round(x + (((b >>> shift) & 255) - x) * share) << shift;
  }
  return out >>> 0;
}

/** Add `colour` (opaque RGB word) covering `alpha` (0..1) of pixel i of the strip. */
export function cover(px: Uint32Array, i: number, colour: number, alpha: number): void {
  const a = Math.round(alpha * 255);
  if (a <= 0) return;
  const old = px[i] >>> 24;
  if (old === 0) px[i] = ((colour & 0xffffff) | (Math.min(255, a) << 24)) >>> 0;
  else px[i] = ((a > old ? colour & 0xffffff : px[i] & 0xffffff) | (Math.min(255, old + a) << 24)) >>> 0;
}

/** Paint device pixels [a, b) of one strip row, with partial coverage at both ends. */
export function span(px: Uint32Array, row: number, width: number, a: number, b: number, colour: number): void {
  if (a < 0) a = 0;
  if (b > width) b = width;
  if (b <= a) return;
  const ia = Math.floor(a);
  const ib = Math.floor(b);
  if (ia === ib) {
    cover(px, row + ia, colour, b - a);
    return;
  }
  cover(px, row + ia, colour, ia + 1 - a);
  if (ib > ia + 1) px.fill(colour, row + ia + 1, row + ib);
  if (ib < width) cover(px, row + ib, colour, b - ib);
}
