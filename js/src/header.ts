// The HTML around the canvas: title, metrics (simulated beside closed form), legend, error.
// Everything that comes from the user (schedule names, labels, messages) goes in as text.

import { KINDS_PAIR, KIND_B, KIND_I, KIND_S, KIND_T, KIND_W, type Timeline } from "./data";
import { CHUNK_PATTERNS, DOWN, UP, chunkPatternKind } from "./draw";
import { capacityOf, fitBadge, formatMemory, memoryUnit, overDevices } from "./fit";
import { number, share, size } from "./format";
import { KEY_ZOOM } from "./input";
import { type Meta, segmentsOf } from "./meta";
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

export interface HeaderOptions {
  /** one line, for the charts of a comparison */
  compact: boolean;
  /** the run's colour in a comparison, "" for none */
  color: string;
  /** the run's name in a comparison, "" for none: then the title shows it (it tells equal
   * titles apart, as in the comparison's other charts) and is a button that selects the run */
  run: string;
}

export const FULL: HeaderOptions = { compact: false, color: "", run: "" };

function titleOf(title: string, o: HeaderOptions): HTMLElement {
  const text = o.run || title;
  const name = o.run ? el("button", "ppviz-name ppviz-name-button", text) : el("span", "ppviz-name", text);
  if (o.run) {
    (name as HTMLButtonElement).type = "button";
    name.title = "highlight this run in the other charts (click again to clear)";
  }
  if (o.color) name.prepend(el("span", "ppviz-run-swatch"));
  return name;
}

/** "p=4 · m=4 · k=2 segments (bars: microbatch.segment) · f=1 b=1 w=1 · 64 ops": a forward-only
 * program has no b or w to give, a segmented one counts whole microbatches, one with F&B pairs
 * gives their time fb (in a comparison too, where the other costs are left out). */
export function sizesText(meta: Meta, compact: boolean): string {
  const v = meta.stages_per_device > 1 ? ` · v=${meta.stages_per_device}` : "";
  const comm = meta.comm > 0 ? ` · comm=${number(meta.comm)}` : "";
  const unit = meta.time_unit ? ` ${meta.time_unit}` : "";
  const k = segmentsOf(meta);
  const m = k > 1 ? meta.whole_microbatches ?? Math.round(meta.microbatches / k) : meta.microbatches;
  const segments = k > 1 ? ` · k=${k} segments${compact ? "" : " (bars: microbatch.segment)"}` : "";
  const pairs = typeof meta.fb === "number" ? ` fb=${number(meta.fb)}` : "";
  const backward = meta.forward_only ? "" : ` b=${number(meta.b)} w=${number(meta.w)}${pairs}`;
  // a comparison's header leaves out the costs its runs share, but not the pair's time, which
  // only the runs with F&B pairs have
  const costs = compact ? (pairs ? ` ·${pairs}${unit}` : "") : ` · f=${number(meta.f)}${backward}${comm}${unit}`;
  return `p=${meta.devices} · m=${m}${segments}${v}${costs} · ${number(meta.ops)} ops`;
}

/** What the bubble of a forward-only program is, as Result defines it. */
export const INFERENCE_BUBBLE = "the fill and drain of this one batch: idle time a stream of batches through a " +
  "full pipeline would not pay, which is why latency and throughput, not the bubble, describe inference";

/** The badge saying whether every device fits its memory (null without a capacity). */
function badgeOf(meta: Meta, compact: boolean): HTMLElement | null {
  const badge = fitBadge(meta);
  if (!badge) return null;
  const text = compact && !badge.fits
    ? `does not fit (${overDevices(meta).length} of ${meta.devices} over)` : badge.text;
  const box = el("span", `ppviz-fit ${badge.fits ? "ppviz-fit-ok" : "ppviz-fit-over"}`, text);
  box.title = badge.detail;
  box.setAttribute("role", "status");
  return box;
}

/** Title, sizes and metrics (simulated beside closed form). */
export function fillHeader(header: HTMLElement, meta: Meta, o: HeaderOptions = FULL): void {
  const cf = meta.closed_form;
  const title = el("div", "ppviz-title");
  title.append(titleOf(meta.title, o));
  title.append(el("span", "ppviz-sizes", sizesText(meta, o.compact)));
  const badge = badgeOf(meta, o.compact);
  if (badge) title.append(badge);
  const why = cf && !cf.applies
    ? (cf.caveat ?? `the closed form assumes ${cf.assumptions}; this config does not meet all of it`) : "";
  const caveat = why ? ` (${why})` : "";
  const closed = (x: string | null) => (cf ? (x === null ? "closed form: none" : `closed form ${x}${cf.applies ? "" : "*"}`) : null);
  const peak = max(meta.peak_memory) ?? 0;
  const cfPeak = cf?.peak_activation ? max(cf.peak_activation) : null;
  const staticMax = max(meta.static_memory) ?? 0;
  const u = memoryUnit(meta);
  const amount = (x: number) => formatMemory(x, u);
  const cfMemory = cfPeak === null ? null : amount(cfPeak + staticMax);
  const capacity = capacityOf(meta);
  const memoryCard = metric("peak memory", amount(peak), closed(cfMemory),
    "largest activation + static memory on any device, " + (u.label ? `in ${u.label} (activation_bytes per unit)` : "in activation units") +
      (capacity === null ? "" : `; device capacity ${amount(capacity)}`) +
      (cf?.memory_formula ? `; closed form ${cf.memory_formula}` : "") + caveat);
  if (capacity !== null) {
    const over = overDevices(meta).length > 0;
    memoryCard.classList.toggle("ppviz-metric-over", over);
    memoryCard.append(el("span", "ppviz-metric-closed", `of ${amount(capacity)} capacity`));
  }
  const metrics = el("div", "ppviz-metrics");
  const time = (x: number) => number(x, meta.time_unit);
  const cards: HTMLElement[] = [
    metric("makespan", time(meta.makespan), closed(cf ? time(cf.makespan) : null),
      `simulated end of the last op${caveat}`),
  ];
  if (meta.forward_only) {
    const first = meta.time_to_first_output;
    const throughput = meta.throughput;
    const per = meta.time_unit ? `per ${meta.time_unit}` : "per unit of time";
    const cfFirst = cf?.first_output;
    const cfThroughput = cf?.throughput;
    cards.push(
      metric("first output", typeof first === "number" ? time(first) : "–",
        closed(typeof cfFirst === "number" ? time(cfFirst) : null),
        `time to first output: when the last stage finishes its first microbatch${caveat}`),
      metric("throughput", typeof throughput === "number" ? number(throughput, per) : "–",
        closed(typeof cfThroughput === "number" ? number(cfThroughput) : null),
        `steady-state throughput in microbatches ${per}: m − 1 outputs over the time from the first output to the ` +
          `last (none for m = 1)${caveat}`),
      metric("fill + drain", share(meta.bubble_fraction), closed(cf ? share(cf.bubble_fraction) : null),
        `the bubble of a forward-only program, idle / (p × makespan), is ${INFERENCE_BUBBLE}` +
          (cf ? `; closed form, idle per device: ${cf.bubble_formula}` : "") + caveat),
    );
    // what this bubble is, in a few words on the card itself
    cards[cards.length - 1].append(el("span", "ppviz-metric-closed", "idle once per batch, not per output"));
  } else {
    cards.push(metric("bubble", share(meta.bubble_fraction), closed(cf ? share(cf.bubble_fraction) : null),
      `idle / (p × makespan); bubble rate (makespan − ideal) / ideal = ${share(meta.bubble_rate)}` +
        (cf ? `; closed form, idle per device: ${cf.bubble_formula}` : "") + caveat));
  }
  const step = meta.step;
  if (step) {
    const rate = step.mfu === null ? null : `MFU ${share(step.mfu)}`;
    const tokens = step.tokens_per_second === null ? "" : `, ${number(step.tokens_per_second)} tokens/s`;
    cards.push(metric("step", time(step.time), rate,
      `the training step: the pipeline, then each device's data-parallel gradient reduction, optimizer and ` +
        `parameter gather${tokens}. Device ${step.device} (the longest tail): compute ${time(step.compute)}, ` +
        `TP/EP traffic ${time(step.tp_comm)}, P2P wait ${time(step.p2p_wait)}, idle ${time(step.idle)}, ` +
        `DP tail ${time(step.dp_tail)}`));
  }
  const comm = communicationCard(meta);
  if (comm) cards.push(comm);
  cards.push(memoryCard);
  metrics.append(...cards);
  // a closed form marked * is one whose assumptions this config breaks: say so where it shows,
  // not only in the cards' tooltips
  const footnote = why ? [el("div", "ppviz-footnote", `* ${why}`)] : [];
  header.replaceChildren(title, metrics, ...footnote);
}

/** Exposed communication beside the bubble, for a run with transfers: the most idle time any
 * device spent waiting for communication, and the share of all device time that was. */
function communicationCard(meta: Meta): HTMLElement | null {
  const c = meta.communication;
  if (!c) return null;
  const worst = max(c.exposed_comm) ?? 0;
  const total = c.exposed_comm.reduce((a, b) => a + b, 0);
  const part = meta.makespan > 0 ? total / (meta.devices * meta.makespan) : 0;
  const time = (x: number) => number(x, meta.time_unit);
  const links = c.devices_per_node
    ? `${c.topology ? `${c.topology}, ` : ""}${c.devices_per_node} devices per node; within a node ${c.intra}; between nodes ${c.inter}`
    : `one link between every pair of devices: ${c.intra}`;
  return metric("exposed comm", time(worst), `max per device · ${share(part)} of all`,
    `idle time spent waiting for communication (latency, transfers, busy links, blocking batches` +
      `${meta.offload ? ", reloads from host memory" : ""}): the most on any ` +
      `device, and the total over all devices as a share of p × makespan (${time(total)}); ` +
      `${number(c.count)} transfers of ${size(c.bytes)}, p2p ${c.p2p ?? "–"}; ${links}`);
}

/** The header of a chart with nothing to draw (a run its schedule refused): the title only. */
export function fillTitle(header: HTMLElement, text: string, o: HeaderOptions): void {
  const title = el("div", "ppviz-title");
  title.append(titleOf(text, o), el("span", "ppviz-sizes", "not run"));
  header.replaceChildren(title);
}

/** Legend entries for the kinds present, plus idle; `compact` names them by their letters. */
export function fillLegend(legend: HTMLElement, tl: Timeline | null, P: Palette, compact = false): void {
  const kinds = tl?.kinds ?? 0;
  const hasB = (kinds & (1 << KIND_B)) !== 0;
  const hasI = (kinds & (1 << KIND_I)) !== 0;
  const hasW = (kinds & (1 << KIND_W)) !== 0;
  const hasPair = (kinds & KINDS_PAIR) !== 0;
  const backward = hasB && hasI ? "B / I backward" : hasI ? "I backward (inputs)" : "B backward";
  // a forward-only (inference) program has no backward to show
  const forwardOnly = tl !== null && !hasB && !hasI && !hasW;
  const items: [string, string][] = [[compact ? "F" : "F forward", P.kinds[0]]];
  if (!forwardOnly) items.push([compact ? backward.split(" backward")[0] : backward, P.kinds[1]]);
  if (hasW) items.push([compact ? "W" : "W backward (weights)", P.kinds[2]]);
  if (hasPair) items.push([compact ? "F&B" : "F&B overlapped pair", P.kinds[3]]);
  if (kinds & (1 << KIND_S)) items.push([compact ? "S" : "S vocabulary pass (logits)", P.kinds[4]]);
  if (kinds & (1 << KIND_T)) items.push([compact ? "T" : "T vocabulary pass (gradients)", P.kinds[5]]);
  const children: HTMLElement[] = items.map(([text, colour]) => {
    const item = el("span", "ppviz-legend-item");
    const swatch = el("span", "ppviz-swatch");
    swatch.style.background = colour;
    item.append(swatch, document.createTextNode(text));
    return item;
  });
  const idle = el("span", "ppviz-legend-item");
  idle.append(el("span", "ppviz-swatch ppviz-swatch-idle"),
    document.createTextNode(compact ? "idle" : forwardOnly ? "idle (fill + drain)" : "idle (bubble)"));
  children.push(idle);
  if (tl && tl.chunks > 1) children.push(...chunkItems(tl.chunks, P, compact));
  if (tl?.bidirectional) children.push(...directionItems(tl.devices, P, compact));
  if (!compact) {
    children.push(el("span", "ppviz-legend-hint",
      `shade: microbatch · ${KEY_ZOOM} + scroll or + / − to zoom · drag to pan · double-click or 0 to reset · ` +
      "click an op to follow its microbatch, a device to highlight it"));
  }
  legend.replaceChildren(...children);
}

/** A swatch per model chunk: plain for the first, then the chunk's pattern over the F colour. */
function chunkItems(chunks: number, P: Palette, compact: boolean): HTMLElement[] {
  const shown = Math.min(chunks, CHUNK_PATTERNS + 1);
  const items = Array.from({ length: shown }, (_, c) => {
    const item = el("span", "ppviz-legend-item ppviz-legend-chunk");
    const swatch = el("span", `ppviz-swatch ppviz-chunk-${chunkPatternKind(c)}`);
    swatch.style.backgroundColor = P.kinds[0];
    item.append(swatch, document.createTextNode(compact ? `c${c}` : `chunk ${c}`));
    return item;
  });
  if (chunks > shown) {
    items.push(el("span", "ppviz-legend-item", compact ? "…" : `… ${chunks} chunks per device, patterns repeat`));
  }
  return items;
}

/** The two directions of a bidirectional placement, as the bars mark them: a band along the
 * top edge and ▼ in the label for the first replica, along the bottom and ▲ for the second. Each
 * swatch is a small bar drawn that way, its mark inside, so the two differ at a glance (a band's
 * place alone, on two swatches of one colour, did not). */
function directionItems(devices: number, P: Palette, compact: boolean): HTMLElement[] {
  const last = devices - 1;
  const shade = P.shades[0].length - 1;
  const item = (className: string, mark: string, text: string) => {
    const entry = el("span", "ppviz-legend-item ppviz-legend-direction");
    const swatch = el("span", `ppviz-swatch ppviz-dir ${className}`, mark);
    // a light shade of F with its band and mark in the ink the bars use on it
    swatch.style.backgroundColor = P.shades[0][shade];
    swatch.style.color = P.ink[0][shade];
    swatch.style.setProperty("--ppviz-band", P.ink[0][shade]);
    entry.append(swatch, document.createTextNode(text));
    return entry;
  };
  return [
    item("ppviz-dir-down", DOWN, compact ? "down" : `down: device 0 → ${last} (first replica)`),
    item("ppviz-dir-up", UP, compact ? "up" : `up: device ${last} → 0 (second replica)`),
  ];
}
