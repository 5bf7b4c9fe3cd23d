// Light and dark palettes, built from ppviz/style.json (the one source Python's charts read too),
// and which one the host (JupyterLab, Notebook 7, VS Code, Colab) shows.
import style from "../../ppviz/style.json";

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
  /** base colour per kind slot: F, I/B, W, F&B, S, T */
  kinds: [string, string, string, string, string, string];
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
  /** transfers in the lane under each row: activations (F), gradients (B), the empty lane */
  transferF: string;
  transferB: string;
  /** offload's copies to and from host memory, in the same lane */
  hostCopy: string;
  transferRail: string;
  /** a device that does not fit its memory: its lane's line and label, the badge */
  oom: string;
  oomFill: string;
  /** the static memory (parameters, gradients, optimizer) under a lane's activations */
  memoryStatic: string;
  /** each device's data-parallel tail (tail.ts): the gradient reduction, the optimizer step, the parameter gather */
  tailReduce: string;
  tailOptimizer: string;
  tailGather: string;
  /** the share of an op spent in tensor/expert-parallel collectives: a darker band inside its bar */
  tpShare: string;
}

export const SHADE_LEVELS = style.shadeLevels;
/** adjacent microbatches get shades far apart */
export const SHADE_ORDER = style.shadeOrder;

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
export function inkOn(fill: string, dark = style.ink.dark, light = style.ink.light): string {
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

type StyleTheme = (typeof style.themes)["light"];

function fromStyle(name: ThemeName, t: StyleTheme): Palette {
  const { shadeToward, shadeSteps, kinds, ...rest } = t;
  const base = {
    background: rest.background,
    surface: rest.surface,
    foreground: rest.foreground,
    muted: rest.muted,
    border: rest.border,
    grid: rest.grid,
    axis: rest.axis,
    hatch: rest.hatch,
    laneIdle: rest.laneIdle,
    kinds: kinds as [string, string, string, string, string, string],
    memoryFill: rest.memoryFill,
    memoryLine: rest.memoryLine,
    closedForm: rest.closedForm,
    cursor: rest.cursor,
    dim: rest.dim,
    path: rest.path,
    error: rest.error,
    errorBg: rest.errorBg,
    transferF: rest.transferF,
    transferB: rest.transferB,
    hostCopy: rest.hostCopy,
    transferRail: rest.transferRail,
    oom: rest.oom,
    oomFill: rest.oomFill,
    memoryStatic: rest.memoryStatic,
    tailReduce: rest.tailReduce,
    tailOptimizer: rest.tailOptimizer,
    tailGather: rest.tailGather,
    tpShare: rest.tpShare,
  };
  return build(name, base, shadeToward, shadeSteps);
}

export const LIGHT: Palette = fromStyle("light", style.themes.light);
export const DARK: Palette = fromStyle("dark", style.themes.dark);

export function palette(name: ThemeName): Palette {
  return name === "dark" ? DARK : LIGHT;
}

/** The host's theme: JupyterLab / Notebook 7, VS Code, marimo, Colab, then the OS preference. */
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
  const marimo = body?.getAttribute("data-theme");
  if (marimo === "dark" || marimo === "light") return marimo;
  const colab = html?.getAttribute("theme");
  if (colab === "dark" || colab === "light") return colab;
  const scheme = (body?.style.colorScheme || html?.style.colorScheme || "").trim();
  if (scheme === "dark" || scheme === "light") return scheme;
  return typeof matchMedia === "function" && matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

/** Call `onChange` whenever the host may have switched theme; returns the unsubscribe. */
export function watchTheme(onChange: () => void, doc: Document = document): () => void {
  const observer = new MutationObserver(onChange);
  const attributeFilter = ["class", "style", "theme", "data-theme", "data-jp-theme-light", "data-jp-theme-name"];
  if (doc.body) observer.observe(doc.body, { attributes: true, attributeFilter });
  observer.observe(doc.documentElement, { attributes: true, attributeFilter });
  const media = typeof matchMedia === "function" ? matchMedia("(prefers-color-scheme: dark)") : null;
  media?.addEventListener("change", onChange);
  return () => {
    observer.disconnect();
    media?.removeEventListener("change", onChange);
  };
}
