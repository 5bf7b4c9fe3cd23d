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

/** Significant digits of the times a tooltip gives, where one op's end is told from the next one's
 * start (the cards, labels and replay give the default three). */
export const PRECISE = 6;

/** An axis tick at t on ticks `step` apart: as many digits as the step needs to tell neighbours apart. */
export function tickLabel(t: number, step: number): string {
  if (t === 0) return "0";
  return number(t, null, Math.max(DIGITS, exponentOf(t) - exponentOf(step) + 1));
}
