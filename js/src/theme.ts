// Light and dark palettes, and which one the host (JupyterLab, Notebook 7, VS Code, Colab) shows.
// Op colours are the Okabe-Ito set, distinguishable with the common colour-vision deficiencies.

export type ThemeName = "light" | "dark";

export interface Palette {
  name: ThemeName;
  background: string;
  surface: string;
  foreground: string;
  muted: string;
  border: string;
  grid: string;
  axis: string;
  hatch: string;
  laneIdle: string;
  /** base colour per kind slot: F, I/B, W, F&B */
  kinds: [string, string, string, string];
  /** kinds[slot] shaded per microbatch: shades[slot][level] */
  shades: string[][];
  /** label colour readable on shades[slot][level] */
  ink: string[][];
  memoryFill: string;
  memoryLine: string;
  closedForm: string;
  cursor: string;
  dim: string;
  path: string;
  error: string;
  errorBg: string;
}

export const SHADE_LEVELS = 4;
/** adjacent microbatches get shades far apart */
export const SHADE_ORDER = [0, 2, 1, 3];

type RGB = [number, number, number];

function hex(c: string): RGB {
  const v = parseInt(c.slice(1), 16);
  return [(v >> 16) & 255, (v >> 8) & 255, v & 255];
}

function css([r, g, b]: RGB): string {
  return `rgb(${Math.round(r)}, ${Math.round(g)}, ${Math.round(b)})`;
}

function mix(a: RGB, b: RGB, t: number): RGB {
  return [a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t, a[2] + (b[2] - a[2]) * t];
}

function luminance([r, g, b]: RGB): number {
  const lin = (c: number) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : Math.pow((s + 0.055) / 1.055, 2.4);
  };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

function contrast(a: RGB, b: RGB): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

/** The label colour (near-black or white) with more contrast on `fill`. */
export function inkOn(fill: string, dark = "#15171c", light = "#ffffff"): string {
  const f = parseRgb(fill);
  return contrast(f, hex(dark)) >= contrast(f, hex(light)) ? dark : light;
}

function parseRgb(c: string): RGB {
  if (c.startsWith("#")) return hex(c);
  const m = c.match(/[\d.]+/g) ?? ["0", "0", "0"];
  return [Number(m[0]), Number(m[1]), Number(m[2])];
}

function build(name: ThemeName, base: Omit<Palette, "shades" | "ink" | "name">, toward: string, steps: number[]): Palette {
  const target = hex(toward);
  const shades = base.kinds.map((k) => steps.map((t) => css(mix(hex(k), target, t))));
  const ink = shades.map((row) => row.map((c) => inkOn(c)));
  return { ...base, name, shades, ink };
}

export const LIGHT: Palette = build(
  "light",
  {
    background: "#ffffff",
    surface: "#f6f7f9",
    foreground: "#1c2128",
    muted: "#5d6672",
    border: "#d8dde3",
    grid: "rgba(28, 33, 40, 0.07)",
    axis: "#8a939e",
    hatch: "rgba(93, 102, 114, 0.30)",
    laneIdle: "#eef0f3",
    kinds: ["#0072b2", "#e69f00", "#009e73", "#cc79a7"],
    memoryFill: "rgba(106, 90, 205, 0.22)",
    memoryLine: "#6a5acd",
    closedForm: "#1c2128",
    cursor: "#d1242f",
    dim: "rgba(255, 255, 255, 0.72)",
    path: "#1c2128",
    error: "#a40e26",
    errorBg: "#fff0f1",
  },
  "#ffffff",
  [0, 0.18, 0.33, 0.47],
);

export const DARK: Palette = build(
  "dark",
  {
    background: "#15171c",
    surface: "#1c1f26",
    foreground: "#e6e9ee",
    muted: "#9aa4b1",
    border: "#2f343d",
    grid: "rgba(230, 233, 238, 0.07)",
    axis: "#6f7a87",
    hatch: "rgba(154, 164, 177, 0.26)",
    laneIdle: "#20242c",
    kinds: ["#56b4e9", "#e69f00", "#23b58a", "#d98cb9"],
    memoryFill: "rgba(167, 155, 255, 0.24)",
    memoryLine: "#a79bff",
    closedForm: "#e6e9ee",
    cursor: "#ff6b6b",
    dim: "rgba(21, 23, 28, 0.74)",
    path: "#f3f5f8",
    error: "#ffb3b8",
    errorBg: "#3a1d22",
  },
  "#ffffff",
  [0, 0.16, 0.3, 0.43],
);

export function palette(name: ThemeName): Palette {
  return name === "dark" ? DARK : LIGHT;
}

/** The host's theme: JupyterLab / Notebook 7, VS Code, Colab, then the OS preference. */
export function hostTheme(doc: Document = document): ThemeName {
  const body = doc.body;
  const html = doc.documentElement;
  const jp = body?.getAttribute("data-jp-theme-light");
  if (jp === "true") return "light";
  if (jp === "false") return "dark";
  if (body) {
    const c = body.classList;
    if (c.contains("vscode-light") || c.contains("vscode-high-contrast-light")) return "light";
    if (c.contains("vscode-dark") || c.contains("vscode-high-contrast")) return "dark";
  }
  const colab = html?.getAttribute("theme");
  if (colab === "dark" || colab === "light") return colab;
  const scheme = (body?.style.colorScheme || html?.style.colorScheme || "").trim();
  if (scheme === "dark" || scheme === "light") return scheme;
  return typeof matchMedia === "function" && matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

/** Call `onChange` whenever the host may have switched theme; returns the unsubscribe. */
export function watchTheme(onChange: () => void, doc: Document = document): () => void {
  const observer = new MutationObserver(onChange);
  const attributeFilter = ["class", "style", "theme", "data-jp-theme-light", "data-jp-theme-name"];
  if (doc.body) observer.observe(doc.body, { attributes: true, attributeFilter });
  observer.observe(doc.documentElement, { attributes: true, attributeFilter });
  const media = typeof matchMedia === "function" ? matchMedia("(prefers-color-scheme: dark)") : null;
  media?.addEventListener("change", onChange);
  return () => {
    observer.disconnect();
    media?.removeEventListener("change", onChange);
  };
}
