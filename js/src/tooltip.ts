// What the tooltip says about an op, and putting it on screen. Text only: no HTML is parsed.

import {
  FLAG_PAIR_F,
  KIND_LETTERS,
  type MemoryCurves,
  type Timeline,
  actionName,
  chunkOf,
  deviceOf,
  endOf,
  isReverse,
  inputTransfer,
  kindOf,
  memoryAt,
  waitedFor,
} from "./data";
import { PRECISE, number, share } from "./format";
import { capacityOf, excessText, formatMemory, isOver, laneBase, lanesWithStatic, memoryUnit } from "./fit";
import { closedPeak, type Meta, microbatchLabel, segmentsOf } from "./meta";
import { inputTransferRows } from "./transfers";

export const KIND_NAMES: Record<string, string> = {
  F: "forward",
  B: "backward",
  I: "backward for inputs",
  W: "backward for weights",
  S: "vocabulary pass: this device's logits and softmax sums",
  T: "vocabulary pass: this device's output-layer gradients",
};

export interface TooltipContent {
  title: string;
  rows: [string, string][];
}

function waitText(tl: Timeline, meta: Meta, k: number): string {
  const w = waitedFor(tl, k);
  const d = deviceOf(tl, k);
  const time = (t: number) => number(t, meta.time_unit, PRECISE);
  if (w >= 0) {
    const from = deviceOf(tl, w);
    const moved = inputTransfer(tl, k);
    const comm = from !== d && moved >= 0 ? `, then its transfer until ${time(tl.transfers.end[moved])}`
      : from !== d && meta.comm > 0 ? ` + comm ${time(meta.comm)}` : "";
    return `${actionName(tl, w)} on device ${from}, done at ${time(endOf(tl, w))}${comm}`;
  }
  let prev = k - 1;
  if (prev >= 0 && tl.flags[prev] & FLAG_PAIR_F) prev--; // k is the B of a pair: its slot began earlier
  if (prev >= tl.offsets[d]) return `its device, busy with ${actionName(tl, prev)} until ${time(endOf(tl, prev))}`;
  return "nothing: first op on its device";
}

/** Where op k's stage sits: its model chunk on the device (with v > 1) and its direction
 * (with two), e.g. "chunk 1 of 2 · up (second replica)". */
function placeText(tl: Timeline, k: number): string {
  const parts: string[] = [];
  if (tl.chunks > 1) parts.push(`chunk ${chunkOf(tl, k)} of ${tl.chunks}`);
  if (tl.bidirectional) parts.push(isReverse(tl, k) ? "▲ up (second replica)" : "▼ down (first replica)");
  return parts.join(" · ");
}

/** An op's microbatch: "3", or with sequence segments "3, segment 1 of 2 (3.1)". */
function microbatchText(meta: Meta, index: number): string {
  const k = segmentsOf(meta);
  return k > 1 ? `${Math.floor(index / k)}, segment ${index % k} of ${k} (${microbatchLabel(index, k)})` : String(index);
}

/** The tooltip of op k (for an F&B pair, k is its F and the tooltip covers both ops). */
export function describeOp(tl: Timeline, meta: Meta, k: number): TooltipContent {
  const d = deviceOf(tl, k);
  const where = meta.rows[d] ? `${d} (${meta.rows[d]})` : String(d);
  const time = (t: number) => number(t, meta.time_unit, PRECISE);
  const times: [string, string][] = [
    ["start", time(tl.start[k])],
    ["end", time(endOf(tl, k))],
    ["duration", time(tl.dur[k])],
  ];
  if (tl.flags[k] & FLAG_PAIR_F) {
    const b = k + 1;
    const bKind = KIND_LETTERS[kindOf(tl, b)];
    return {
      title: `F&B pair · ${actionName(tl, k)} with ${actionName(tl, b)}`,
      rows: [
        ["kind", `forward + ${KIND_NAMES[bKind]}, overlapped`],
        ["forward", [`stage ${tl.stage[k]}, microbatch ${microbatchText(meta, tl.mb[k])}`, placeText(tl, k)].filter(Boolean).join(" · ")],
        [bKind === "B" ? "backward" : "backward (I)",
          [`stage ${tl.stage[b]}, microbatch ${microbatchText(meta, tl.mb[b])}`, placeText(tl, b)].filter(Boolean).join(" · ")],
        ["device", where],
        ...times,
        ["F waited for", waitText(tl, meta, k)],
        ...inputTransferRows(tl, meta, k, "F input transfer"),
        [`${bKind} waited for`, waitText(tl, meta, b)],
        ...inputTransferRows(tl, meta, b, `${bKind} input transfer`),
      ],
    };
  }
  const kind = KIND_LETTERS[kindOf(tl, k)];
  const traffic = meta.traffic?.[tl.stage[k]]?.[kindOf(tl, k)] ?? 0;
  return {
    title: `${kind} · ${KIND_NAMES[kind]} · ${actionName(tl, k)}`,
    rows: [
      ["kind", `${kind} (${KIND_NAMES[kind]})`],
      ["stage", [String(tl.stage[k]), placeText(tl, k)].filter(Boolean).join(" · ")],
      ["microbatch", microbatchText(meta, tl.mb[k])],
      ["device", where],
      ...times,
      ...(traffic > 0 ? [["of which", `compute ${time(tl.dur[k] - traffic)}, TP/EP traffic ${time(traffic)} ` +
        `(${share(traffic / tl.dur[k])})`] as [string, string]] : []),
      ["waited for", waitText(tl, meta, k)],
      ...inputTransferRows(tl, meta, k),
    ],
  };
}

/** The tooltip of a memory lane at time t: the device's memory then, and its peaks; with a
 * capacity, the static part, the capacity and the excess of a device over it. */
export function describeMemory(mem: MemoryCurves, meta: Meta, d: number, t: number): TooltipContent {
  const value = memoryAt(mem, d, t);
  const u = memoryUnit(meta);
  const amount = (x: number) => formatMemory(x, u);
  const base = laneBase(meta, d);
  const rows: [string, string][] = [["time", number(t, meta.time_unit, PRECISE)]];
  if (lanesWithStatic(meta)) {
    rows.push(["memory", `${amount(base + value)} (activations ${amount(value)} + static ${amount(base)})`],
      ["device's peak", amount(meta.peak_memory[d] ?? 0)]);
  } else {
    rows.push(["memory", amount(value)], ["device's peak", amount(meta.peak_activation[d] ?? 0)]);
  }
  const cf = closedPeak(meta, d);
  if (cf !== null) rows.push(["closed-form peak", `${amount(base + cf)}${meta.closed_form?.applies ? "" : " (assumptions not met)"}`]);
  const capacity = capacityOf(meta);
  if (capacity !== null) {
    rows.push(["capacity", `${amount(capacity)}${isOver(meta, d) ? `: does not fit, ${excessText(meta, d)}` : ": fits"}`]);
  }
  if (!u.label) rows.push(["unit", "activations of one microbatch through 1/p of the model"]);
  return { title: `device ${d} · ${lanesWithStatic(meta) ? "memory" : "activation memory"}`, rows };
}

export function fillTooltip(el: HTMLElement, content: TooltipContent): void {
  const title = document.createElement("div");
  title.className = "ppviz-tooltip-title";
  title.textContent = content.title;
  const grid = document.createElement("div");
  grid.className = "ppviz-tooltip-grid";
  for (const [key, value] of content.rows) {
    const k = document.createElement("span");
    k.className = "ppviz-tooltip-key";
    k.textContent = key;
    const v = document.createElement("span");
    v.textContent = value;
    grid.append(k, v);
  }
  el.replaceChildren(title, grid);
}

/** Place the tooltip beside the pointer, flipped to stay inside `bounds` (both in the parent's pixels). */
export function placeTooltip(el: HTMLElement, x: number, y: number, bounds: { width: number; height: number }): void {
  const w = el.offsetWidth;
  const h = el.offsetHeight;
  const gap = 14;
  const left = x + gap + w > bounds.width ? Math.max(0, x - gap - w) : x + gap;
  const top = y + gap + h > bounds.height ? Math.max(0, y - gap - h) : y + gap;
  el.style.transform = `translate(${Math.round(left)}px, ${Math.round(top)}px)`;
}
