// Memory as a result from a model and a machine reports it (Config.from_model): amounts in bytes
// (GiB) when the config gives activation_bytes, the device's capacity, and which devices do not
// fit and by how much. Pure functions of the meta, read by the memory lanes (memory.ts), their
// labels (labels.ts), the tooltip and the header's badge. Python computed every number; this
// only converts units and picks words.

import { number } from "./format";
import type { Meta } from "./meta";

const PREFIXES = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

export interface MemoryUnit {
  /** a value shown = activation units × factor */
  factor: number;
  /** "GiB" (or another binary prefix), "" for activation units */
  label: string;
}

/** The device's memory in activation units, or null without one. */
export function capacityOf(meta: Meta): number | null {
  const c = meta.memory_capacity;
  return typeof c === "number" && Number.isFinite(c) ? c : null;
}

function largest(xs: (number | null | undefined)[]): number {
  let m = 0;
  for (const x of xs) if (typeof x === "number" && x > m) m = x;
  return m;
}

/** Bytes with the binary prefix of the largest amount shown (peak memory or capacity), as
 * Python's charts choose it; activation units when the config gives no activation_bytes. */
export function memoryUnit(meta: Meta): MemoryUnit {
  const b = meta.activation_bytes;
  if (!b) return { factor: 1, label: "" };
  const top = Math.max(largest(meta.peak_memory), capacityOf(meta) ?? 0) * b;
  let k = 0;
  while (k < PREFIXES.length - 1 && top >= Math.pow(1024, k + 1)) k++;
  return { factor: b / Math.pow(1024, k), label: PREFIXES[k] };
}

/** An amount of memory (in activation units) as shown: "28.8 GiB", or "10.7" without bytes. */
export function formatMemory(x: number, u: MemoryUnit): string {
  return u.label ? number(x * u.factor, u.label) : number(x);
}

/** With a capacity the lanes show what it is compared with, activations on top of the static
 * memory (parameters, gradients, optimizer state); without one, activations alone. */
export function lanesWithStatic(meta: Meta): boolean {
  return capacityOf(meta) !== null;
}

/** Where device d's lane starts: its static memory when the lanes include it, else 0. */
export function laneBase(meta: Meta, d: number): number {
  return lanesWithStatic(meta) ? (meta.static_memory[d] ?? 0) : 0;
}

/** The peak a lane reaches: peak memory with the static part, else peak activation. */
export function lanePeak(meta: Meta, d: number): number {
  return lanesWithStatic(meta) ? (meta.peak_memory[d] ?? 0) : (meta.peak_activation[d] ?? 0);
}

/** Does device d exceed the capacity? (false without one) */
export function isOver(meta: Meta, d: number): boolean {
  return meta.fits?.[d] === false;
}

/** The devices over the capacity, in order. */
export function overDevices(meta: Meta): number[] {
  const out: number[] = [];
  (meta.fits ?? []).forEach((ok, d) => {
    if (ok === false) out.push(d);
  });
  return out;
}

/** "+28.2 GiB over" for a device over the capacity, else null. */
export function excessText(meta: Meta, d: number): string | null {
  if (!isOver(meta, d)) return null;
  return `+${formatMemory(meta.excess?.[d] ?? 0, memoryUnit(meta))} over`;
}

export interface FitBadge {
  fits: boolean;
  /** "does not fit: device 7 over by 28.2 GiB", "fits in 80 GiB" */
  text: string;
  /** the longer story, for the badge's tooltip */
  detail: string;
}

/** What the header's badge says, or null when the result has no capacity. */
export function fitBadge(meta: Meta): FitBadge | null {
  const capacity = capacityOf(meta);
  if (capacity === null || !meta.fits) return null;
  const u = memoryUnit(meta);
  const cap = formatMemory(capacity, u);
  const over = overDevices(meta);
  const peaks = meta.peak_memory;
  if (!over.length) {
    let worst = 0;
    peaks.forEach((x, d) => {
      if (x > (peaks[worst] ?? -Infinity)) worst = d;
    });
    return {
      fits: true,
      text: `fits in ${cap}`,
      detail: `every device's peak memory (activations + static) is within its ${cap}; the highest, ` +
        `${formatMemory(peaks[worst] ?? 0, u)} on device ${worst}, leaves ${formatMemory(capacity - (peaks[worst] ?? 0), u)}`,
    };
  }
  const excess = meta.excess ?? [];
  let worst = over[0];
  for (const d of over) if ((excess[d] ?? 0) > (excess[worst] ?? 0)) worst = d;
  const text = `does not fit: device ${worst} over by ${formatMemory(excess[worst] ?? 0, u)}`;
  const each = over.map((d) => `device ${d} +${formatMemory(excess[d] ?? 0, u)}`).join(", ");
  return {
    fits: false,
    text,
    detail: `${over.length} of ${meta.devices} device${meta.devices === 1 ? "" : "s"} peak above the capacity of ${cap}: ${each}`,
  };
}
