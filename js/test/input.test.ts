import { describe, expect, it } from "vitest";
import { KEY_PAN_SHARE, KEY_ROWS, KEY_ZOOM_FACTOR, keyAction, wheelAction } from "../src/input";

const wheel = (deltaY: number, extra: Partial<WheelEvent> = {}) =>
  ({ deltaX: 0, deltaY, deltaMode: 0, ctrlKey: false, metaKey: false, ...extra }) as WheelEvent;
const key = (k: string, extra: Partial<KeyboardEvent> = {}) =>
  ({ key: k, ctrlKey: false, metaKey: false, altKey: false, ...extra }) as KeyboardEvent;

describe("wheel gestures", () => {
  it("leave a plain vertical wheel to the page", () => {
    expect(wheelAction(wheel(120))).toEqual({ kind: "scroll", px: 120 });
    expect(wheelAction(wheel(-3, { deltaMode: 1 }))).toEqual({ kind: "scroll", px: -48 });
  });

  it("zoom with Ctrl or ⌘ (a pinch in Chromium), in for up, out for down, by the same factor each way", () => {
    const zoomIn = wheelAction(wheel(-100, { ctrlKey: true }));
    const zoomOut = wheelAction(wheel(100, { metaKey: true }));
    expect(zoomIn.kind).toBe("zoom");
    expect(zoomOut.kind).toBe("zoom");
    const a = (zoomIn as { factor: number }).factor;
    const b = (zoomOut as { factor: number }).factor;
    expect(a).toBeGreaterThan(1.15);
    expect(a * b).toBeCloseTo(1, 12);
    // a pinch's small steps zoom a little; lines count 16 pixels each
    expect((wheelAction(wheel(-2, { ctrlKey: true })) as { factor: number }).factor).toBeCloseTo(Math.exp(0.004), 12);
    expect((wheelAction(wheel(-1, { ctrlKey: true, deltaMode: 1 })) as { factor: number }).factor).toBeCloseTo(
      Math.exp(0.032), 12);
  });

  it("pan on a sideways wheel", () => {
    expect(wheelAction(wheel(5, { deltaX: 40 }))).toEqual({ kind: "pan", px: 40 });
  });
});

describe("keys", () => {
  it("zoom, reset, pan and clear", () => {
    expect(keyAction(key("+"))).toEqual({ kind: "zoom", factor: KEY_ZOOM_FACTOR });
    expect(keyAction(key("="))).toEqual({ kind: "zoom", factor: KEY_ZOOM_FACTOR });
    expect(keyAction(key("-"))).toEqual({ kind: "zoom", factor: 1 / KEY_ZOOM_FACTOR });
    expect(keyAction(key("0"))).toEqual({ kind: "reset" });
    expect(keyAction(key("ArrowLeft"))).toEqual({ kind: "pan", share: -KEY_PAN_SHARE });
    expect(keyAction(key("ArrowRight"))).toEqual({ kind: "pan", share: KEY_PAN_SHARE });
    expect(keyAction(key("Escape"))).toEqual({ kind: "clear" });
  });

  it("scroll the rows (when they scroll) by a few rows or a page", () => {
    expect(keyAction(key("ArrowDown"))).toEqual({ kind: "rows", by: KEY_ROWS, unit: "row" });
    expect(keyAction(key("ArrowUp"))).toEqual({ kind: "rows", by: -KEY_ROWS, unit: "row" });
    expect(keyAction(key("PageDown"))).toEqual({ kind: "rows", by: 1, unit: "page" });
    expect(keyAction(key("PageUp"))).toEqual({ kind: "rows", by: -1, unit: "page" });
  });

  it("leave the browser's and the host's shortcuts alone", () => {
    expect(keyAction(key("+", { ctrlKey: true }))).toBeNull();
    expect(keyAction(key("0", { metaKey: true }))).toBeNull();
    expect(keyAction(key("0", { altKey: true }))).toBeNull();
    expect(keyAction(key("a"))).toBeNull();
    expect(keyAction(key("Enter"))).toBeNull();
  });
});
