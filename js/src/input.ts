// What a wheel gesture or a key does to the chart: pure rules, stated by the unit tests.
// A plain vertical wheel belongs to the page (a notebook scrolls past the chart); zooming
// needs Ctrl or ⌘, which is also what Chromium sends for a trackpad pinch.

/** "scroll": the page's (or, when the chart's rows scroll, theirs first), `px` down. */
export type WheelAction = { kind: "scroll"; px: number } | { kind: "pan"; px: number } | { kind: "zoom"; factor: number };

export type KeyAction =
  | { kind: "zoom"; factor: number }
  | { kind: "pan"; share: number }
  | { kind: "rows"; by: number; unit: "row" | "page" }
  | { kind: "reset" }
  | { kind: "clear" };

/** One ↑ or ↓ key press scrolls the rows (when they scroll) by this many. */
export const KEY_ROWS = 3;

/** The zoom modifier as this platform's keyboard names it. */
export const KEY_ZOOM = typeof navigator !== "undefined" && /Mac|iPhone|iPad/.test(navigator.platform) ? "⌘" : "Ctrl";

/** Zoom per pixel of wheel: a mouse's notch (100 px) zooms by about 22 %. */
const ZOOM_PER_PX = 0.002;
/** One + or − key press. */
export const KEY_ZOOM_FACTOR = 1.5;
/** One ← or → key press moves this share of the span in view. */
export const KEY_PAN_SHARE = 0.2;

type Wheel = Pick<WheelEvent, "deltaX" | "deltaY" | "deltaMode" | "ctrlKey" | "metaKey">;

export function wheelAction(e: Wheel): WheelAction {
  const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? 400 : 1;
  const dx = e.deltaX * unit;
  const dy = e.deltaY * unit;
  if (e.ctrlKey || e.metaKey) return { kind: "zoom", factor: Math.exp(-dy * ZOOM_PER_PX) };
  if (Math.abs(dx) > Math.abs(dy)) return { kind: "pan", px: dx };
  return { kind: "scroll", px: dy };
}

type Key = Pick<KeyboardEvent, "key" | "ctrlKey" | "metaKey" | "altKey">;

/** null: the key is not the chart's (with Ctrl, ⌘ or Alt it is the browser's or the host's). */
export function keyAction(e: Key): KeyAction | null {
  if (e.ctrlKey || e.metaKey || e.altKey) return null;
  switch (e.key) {
    case "+":
    case "=":
      return { kind: "zoom", factor: KEY_ZOOM_FACTOR };
    case "-":
    case "_":
      return { kind: "zoom", factor: 1 / KEY_ZOOM_FACTOR };
    case "0":
      return { kind: "reset" };
    case "ArrowLeft":
      return { kind: "pan", share: -KEY_PAN_SHARE };
    case "ArrowRight":
      return { kind: "pan", share: KEY_PAN_SHARE };
    case "ArrowUp":
      return { kind: "rows", by: -KEY_ROWS, unit: "row" };
    case "ArrowDown":
      return { kind: "rows", by: KEY_ROWS, unit: "row" };
    case "PageUp":
      return { kind: "rows", by: -1, unit: "page" };
    case "PageDown":
      return { kind: "rows", by: 1, unit: "page" };
    case "Escape":
      return { kind: "clear" };
    default:
      return null;
  }
}
