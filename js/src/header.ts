// The HTML around the canvas: title, metrics (simulated beside closed form), legend, error.
// Everything that comes from the user (schedule names, labels, messages) goes in as text.

import { FLAG_PAIR_F, KIND_B, KIND_I, KIND_MASK, KIND_W, type Timeline } from "./data";
import { bytes, num, percent } from "./format";
import type { Meta } from "./meta";
import type { Palette } from "./theme";

function el<K extends keyof HTMLElementTagNameMap>(tag: K, className: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

function metric(label: string, value: string, closed: string | null, hint: string): HTMLElement {
  const box = el("div", "ppviz-metric");
  box.title = hint;
  box.append(el("span", "ppviz-metric-label", label), el("span", "ppviz-metric-value", value));
  if (closed !== null) box.append(el("span", "ppviz-metric-closed", closed));
  return box;
}

function max(xs: (number | null)[]): number | null {
  const ok = xs.filter((x): x is number => typeof x === "number");
  return ok.length ? Math.max(...ok) : null;
}

export function fillHeader(header: HTMLElement, meta: Meta): void {
  const cf = meta.closed_form;
  const title = el("div", "ppviz-title");
  title.append(el("span", "ppviz-name", meta.title));
  const v = meta.stages_per_device > 1 ? ` · v=${meta.stages_per_device}` : "";
  const comm = meta.comm > 0 ? ` · comm=${num(meta.comm)}` : "";
  title.append(el("span", "ppviz-sizes",
    `p=${meta.devices} · m=${meta.microbatches}${v} · f=${num(meta.f)} b=${num(meta.b)} w=${num(meta.w)}${comm} · ${meta.ops.toLocaleString("en-US")} ops`));
  const caveat = cf && !cf.applies ? ` (the closed form assumes ${cf.assumptions}; this config does not meet all of it)` : "";
  const closed = (x: string | null) => (cf ? (x === null ? "closed form: none" : `closed form ${x}${cf.applies ? "" : "*"}`) : null);
  const peak = max(meta.peak_memory) ?? 0;
  const cfPeak = cf?.peak_activation ? max(cf.peak_activation) : null;
  const staticMax = max(meta.static_memory) ?? 0;
  const cfMemory = cfPeak === null ? null : num(cfPeak + staticMax, 4);
  const inBytes = meta.activation_bytes ? ` (${bytes(peak * meta.activation_bytes)})` : "";
  const metrics = el("div", "ppviz-metrics");
  metrics.append(
    metric("makespan", num(meta.makespan, 5), closed(cf ? num(cf.makespan, 5) : null),
      `simulated end of the last op${caveat}`),
    metric("bubble", percent(meta.bubble_fraction), closed(cf ? percent(cf.bubble_fraction) : null),
      `idle / (p × makespan); bubble rate (makespan − ideal) / ideal = ${percent(meta.bubble_rate)}` +
        (cf ? `; closed form ${cf.bubble_formula} idle per device` : "") + caveat),
    metric("peak memory", `${num(peak, 4)}${inBytes}`, closed(cfMemory),
      "largest activation + static memory on any device, in activation units" +
        (cf?.memory_formula ? `; closed form ${cf.memory_formula}` : "") + caveat),
  );
  header.replaceChildren(title, metrics);
}

/** Legend entries for the kinds present, plus idle. */
export function fillLegend(legend: HTMLElement, tl: Timeline | null, P: Palette): void {
  let hasB = false;
  let hasI = false;
  let hasW = false;
  let hasPair = false;
  if (tl) {
    for (let k = 0; k < tl.n; k++) {
      const f = tl.flags[k];
      if (f & FLAG_PAIR_F) hasPair = true;
      const kind = f & KIND_MASK;
      if (kind === KIND_B) hasB = true;
      else if (kind === KIND_I) hasI = true;
      else if (kind === KIND_W) hasW = true;
    }
  }
  const backward = hasB && hasI ? "B / I backward" : hasI ? "I backward (inputs)" : "B backward";
  const items: [string, string][] = [["F forward", P.kinds[0]], [backward, P.kinds[1]]];
  if (hasW) items.push(["W backward (weights)", P.kinds[2]]);
  if (hasPair) items.push(["F&B overlapped pair", P.kinds[3]]);
  const children: HTMLElement[] = items.map(([text, colour]) => {
    const item = el("span", "ppviz-legend-item");
    const swatch = el("span", "ppviz-swatch");
    swatch.style.background = colour;
    item.append(swatch, document.createTextNode(text));
    return item;
  });
  const idle = el("span", "ppviz-legend-item");
  idle.append(el("span", "ppviz-swatch ppviz-swatch-idle"), document.createTextNode("idle (bubble)"));
  children.push(idle);
  children.push(el("span", "ppviz-legend-hint", "shade: microbatch · scroll to zoom · drag to pan · double-click to reset · click an op to follow its microbatch"));
  legend.replaceChildren(...children);
}
