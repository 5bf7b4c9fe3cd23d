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

// The one number formatter: the twin of ppviz/core/numbers.py, digit for digit
// (tests/data/numbers_golden.json, written by Python, is checked in test/numbers.test.ts).
// Three significant digits but never fewer than the whole part needs, whole numbers whole,
// thousands grouped, scientific beyond 1e15 or below 1e-3, a unit always after a space.

const DIGITS = 3;
const SMALLEST_PLAIN = 1e-3;
const LARGEST_PLAIN = 1e15;
const SIZE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

function trimmed(text: string): string {
  if (text.includes(".")) text = text.replace(/0+$/, "").replace(/\.$/, "");
  return text === "-0" || text === "" ? "0" : text;
}

function grouped(text: string): string {
  const sign = text.startsWith("-") ? "-" : "";
  const body = sign ? text.slice(1) : text;
  const [whole, fraction] = body.split(".");
  const withCommas = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return sign + withCommas + (fraction ? `.${fraction}` : "");
}

/** The power of ten of x's leading digit (toExponential reads x's exact value). */
function exponentOf(x: number): number {
  return Number(x.toExponential().split("e")[1]);
}

function scientific(x: number, digits: number): string {
  const [mantissa, exponent] = x.toExponential(digits - 1).split("e");
  const e = Number(exponent);
  return `${trimmed(mantissa)}e${e >= 0 ? "+" : "-"}${Math.abs(e)}`;
}

function decimals(x: number, digits: number): number {
  return Math.max(0, digits - 1 - exponentOf(x));
}

/** x as people read it (554, 13.2, 0.00612, 1,024, 1.23e+15), then its unit if given. */
export function number(x: number, unit?: string | null, digits = DIGITS): string {
  let text: string;
  if (Number.isNaN(x)) text = "NaN";
  else if (!Number.isFinite(x)) text = x > 0 ? "∞" : "-∞";
  else if (x === 0) text = "0";
  else if (Math.abs(x) >= LARGEST_PLAIN || Math.abs(x) < SMALLEST_PLAIN) text = scientific(x, digits);
  else if (Number.isInteger(x)) text = grouped(String(x));
  else text = grouped(trimmed(x.toFixed(decimals(x, digits))));
  return unit ? `${text} ${unit}` : text;
}

/** A share (0.257) as per cent: "25.7 %", "0.6 %", "0.012 %". */
export function share(x: number): string {
  const y = x * 100;
  if (!Number.isFinite(y) || y === 0 || Math.abs(y) < SMALLEST_PLAIN) return number(y, "%", 2);
  const places = Math.abs(y) >= 1 ? 1 : decimals(y, 2);
  return `${grouped(trimmed(y.toFixed(places)))} %`;
}

/** Bytes in binary units: "512 B", "1.5 KiB", "79.5 GiB". */
export function size(nbytes: number): string {
  let x = nbytes;
  let k = 0;
  while (Number.isFinite(x) && Math.abs(x) >= 1024 && k < SIZE_UNITS.length - 1) {
    x /= 1024;
    k++;
  }
  return number(x, SIZE_UNITS[k]);
}
