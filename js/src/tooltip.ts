// What the tooltip says about an op, and putting it on screen. Text only: no HTML is parsed.

import {
  FLAG_PAIR_F,
  KIND_LETTERS,
  type Timeline,
  actionName,
  deviceOf,
  endOf,
  kindOf,
  waitedFor,
} from "./data";
import { num } from "./format";
import type { Meta } from "./meta";

export const KIND_NAMES: Record<string, string> = {
  F: "forward",
  B: "backward",
  I: "backward for inputs",
  W: "backward for weights",
};

export interface TooltipContent {
  title: string;
  rows: [string, string][];
}

function waitText(tl: Timeline, meta: Meta, k: number): string {
  const w = waitedFor(tl, k);
  const d = deviceOf(tl, k);
  if (w >= 0) {
    const from = deviceOf(tl, w);
    const comm = from !== d && meta.comm > 0 ? ` + comm ${num(meta.comm)}` : "";
    return `${actionName(tl, w)} on device ${from}, done at ${num(endOf(tl, w))}${comm}`;
  }
  let prev = k - 1;
  if (prev >= 0 && tl.flags[prev] & FLAG_PAIR_F) prev--; // k is the B of a pair: its slot began earlier
  if (prev >= tl.offsets[d]) return `its device, busy with ${actionName(tl, prev)} until ${num(endOf(tl, prev))}`;
  return "nothing: first op on its device";
}

/** The tooltip of op k (for an F&B pair, k is its F and the tooltip covers both ops). */
export function describeOp(tl: Timeline, meta: Meta, k: number): TooltipContent {
  const d = deviceOf(tl, k);
  const where = meta.rows[d] ? `${d} (${meta.rows[d]})` : String(d);
  const times: [string, string][] = [
    ["start", num(tl.start[k])],
    ["end", num(endOf(tl, k))],
    ["duration", num(tl.dur[k])],
  ];
  if (tl.flags[k] & FLAG_PAIR_F) {
    const b = k + 1;
    const bKind = KIND_LETTERS[kindOf(tl, b)];
    return {
      title: `F&B pair · ${actionName(tl, k)} with ${actionName(tl, b)}`,
      rows: [
        ["kind", `forward + ${KIND_NAMES[bKind]}, overlapped`],
        ["forward", `stage ${tl.stage[k]}, microbatch ${tl.mb[k]}`],
        [bKind === "B" ? "backward" : "backward (I)", `stage ${tl.stage[b]}, microbatch ${tl.mb[b]}`],
        ["device", where],
        ...times,
        ["F waited for", waitText(tl, meta, k)],
        [`${bKind} waited for`, waitText(tl, meta, b)],
      ],
    };
  }
  const kind = KIND_LETTERS[kindOf(tl, k)];
  return {
    title: `${kind} · ${KIND_NAMES[kind]} · ${actionName(tl, k)}`,
    rows: [
      ["kind", `${kind} (${KIND_NAMES[kind]})`],
      ["stage", String(tl.stage[k])],
      ["microbatch", String(tl.mb[k])],
      ["device", where],
      ...times,
      ["waited for", waitText(tl, meta, k)],
    ],
  };
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
