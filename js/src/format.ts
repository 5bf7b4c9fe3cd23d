// Number formatting shared by the header, the axis and the tooltip.

/** At most `digits` significant digits, trailing zeros dropped: 12, 0.5, 1234.57. */
export function num(x: number, digits = 6): string {
  if (!Number.isFinite(x)) return String(x);
  if (Number.isInteger(x) && Math.abs(x) < 1e15) return String(x);
  const s = Number(x.toPrecision(digits)).toString();
  return s === "-0" ? "0" : s;
}

/** A formatted time with its unit ("12.5 ms"), or alone when times have none. */
export function withUnit(text: string, unit: string | undefined): string {
  return unit ? `${text} ${unit}` : text;
}

/** An axis label with no more decimals than the tick step needs. */
export function tickLabel(t: number, step: number): string {
  const decimals = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  return t.toFixed(Math.min(decimals, 12));
}

export function percent(x: number): string {
  return `${(x * 100).toFixed(1)} %`;
}

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

export function bytes(x: number): string {
  let i = 0;
  while (Math.abs(x) >= 1024 && i < UNITS.length - 1) {
    x /= 1024;
    i++;
  }
  return `${num(x, 3)} ${UNITS[i]}`;
}
