import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DebugHooks } from "../src/view";
import { GanttView } from "../src/view";
import widget from "../src/widget";
import { DARK, LIGHT } from "../src/theme";
import { FakeModel, dense, encodeTimeline, fillDrain, metaFor, modelFor, nextFrame } from "./fixtures";

let host: HTMLDivElement;
const views: GanttView[] = [];

beforeEach(() => {
  host = document.createElement("div");
  host.style.width = "1000px";
  document.body.append(host);
});

afterEach(() => {
  for (const v of views.splice(0)) v.destroy();
  host.remove();
  document.body.removeAttribute("data-jp-theme-light");
});

async function mount(model: FakeModel): Promise<{ view: GanttView; hooks: DebugHooks; root: HTMLElement }> {
  const view = new GanttView(host, model);
  views.push(view);
  await nextFrame();
  await nextFrame();
  const root = host.querySelector(".ppviz-gantt") as HTMLElement;
  return { view, root, hooks: (root as unknown as { ppviz: DebugHooks }).ppviz };
}

function pointer(target: Element, type: string, x: number, y: number, extra: PointerEventInit = {}): void {
  target.dispatchEvent(new PointerEvent(type, { clientX: x, clientY: y, bubbles: true, pointerId: 1, button: 0, ...extra }));
}

function click(target: Element, x: number, y: number): void {
  pointer(target, "pointerdown", x, y, { buttons: 1 });
  pointer(target, "pointerup", x, y);
}

describe("GanttView", () => {
  it("renders the chart with its test hooks", async () => {
    const spec = fillDrain(4, 8);
    const { root } = await mount(modelFor(4, spec));
    expect(root.querySelector("canvas")).not.toBeNull();
    expect(Number(root.dataset.drawMs)).toBeGreaterThanOrEqual(0);
    expect(Number(root.dataset.ops)).toBe(spec.ops.length);
    const canvas = root.querySelector("canvas")!;
    expect(canvas.width).toBe(Math.round(canvas.clientWidth * devicePixelRatio));
  });

  it("is sharp on high-DPI screens: the backing store follows devicePixelRatio", async () => {
    const original = Object.getOwnPropertyDescriptor(window, "devicePixelRatio");
    Object.defineProperty(window, "devicePixelRatio", { value: 2, configurable: true });
    try {
      const { root } = await mount(modelFor(2, fillDrain(2, 3)));
      const canvas = root.querySelector("canvas")!;
      expect(canvas.width).toBe(2 * parseFloat(canvas.style.width));
      expect(canvas.height).toBe(2 * parseFloat(canvas.style.height));
    } finally {
      if (original) Object.defineProperty(window, "devicePixelRatio", original);
    }
  });

  it("shows a tooltip for the op under the pointer and hides it on leave", async () => {
    const spec = fillDrain(3, 4);
    const { root, hooks } = await mount(modelFor(3, spec));
    const k = spec.ops.findIndex((o) => o.kind === "B" && o.stage === 1 && o.mb === 2);
    const box = hooks.opBox(k)!;
    const canvas = root.querySelector("canvas")!;
    pointer(canvas, "pointermove", box.x + box.width / 2, box.y + box.height / 2);
    const tip = root.querySelector(".ppviz-tooltip") as HTMLElement;
    expect(tip.hidden).toBe(false);
    const text = tip.textContent!;
    expect(text).toContain("1B2");
    expect(text).toContain("microbatch2");
    expect(text).toContain("device1 (stage 1)");
    expect(text).toContain(`start${spec.ops[k].start}`);
    expect(text).toContain("duration2");
    expect(text).toContain("waited for2B2 on device 2");
    pointer(canvas, "pointerleave", 0, 0);
    expect(tip.hidden).toBe(true);
  });

  it("selects a microbatch on click, reports it to the model, and clears on Escape or empty click", async () => {
    const spec = fillDrain(3, 4);
    const model = modelFor(3, spec);
    const { root, hooks } = await mount(model);
    const canvas = root.querySelector("canvas")!;
    const k = spec.ops.findIndex((o) => o.kind === "F" && o.stage === 2 && o.mb === 3);
    const box = hooks.opBox(k)!;
    click(canvas, box.x + box.width / 2, box.y + box.height / 2);
    expect(model.state.selected_microbatch).toBe(3);
    expect(model.state.selected_op).toBe(k);
    expect(model.saves).toBe(1);
    root.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true }));
    expect(model.state.selected_microbatch).toBe(-1);
    click(canvas, box.x + box.width / 2, box.y + box.height / 2);
    expect(model.state.selected_microbatch).toBe(3);
    // device 2 is idle at t = 0.5
    const r = canvas.getBoundingClientRect();
    click(canvas, box.x - (box.width * 3 + 0.5 * box.width), box.y + 4);
    expect(model.state.selected_microbatch).toBe(-1);
    expect(r.width).toBeGreaterThan(0);
  });

  it("redraws when Python changes the selection", async () => {
    const spec = fillDrain(2, 3);
    const model = modelFor(2, spec);
    const { root } = await mount(model);
    const before = Number(root.dataset.draws);
    model.set("selected_microbatch", 1);
    await nextFrame();
    expect(Number(root.dataset.draws)).toBe(before + 1);
  });

  it("zooms around the cursor on wheel, pans on drag, resets on double-click", async () => {
    const spec = dense(2, 3000);
    const { root, hooks } = await mount(modelFor(2, spec));
    const canvas = root.querySelector("canvas")!;
    const r = canvas.getBoundingClientRect();
    const full = hooks.getView();
    const box0 = hooks.opBox(1500)!;
    const x = Math.round(box0.x); // mouse events carry whole pixels
    const opsBefore = Number(root.dataset.ops);
    canvas.dispatchEvent(new WheelEvent("wheel", { clientX: x, clientY: box0.y + 2, deltaY: -500, bubbles: true, cancelable: true }));
    const zoomed = hooks.getView();
    const factor = (full.t1 - full.t0) / (zoomed.t1 - zoomed.t0);
    expect(factor).toBeGreaterThan(2);
    // the time under the cursor stays under it: distances from the cursor scale by the zoom factor
    expect(hooks.opBox(1500)!.x - x).toBeCloseTo((box0.x - x) * factor, 3);
    await nextFrame();
    expect(Number(root.dataset.ops)).toBeLessThan(opsBefore);

    pointer(canvas, "pointerdown", r.left + 500, r.top + 20, { buttons: 1 });
    pointer(canvas, "pointermove", r.left + 400, r.top + 20, { buttons: 1 });
    pointer(canvas, "pointerup", r.left + 400, r.top + 20);
    const panned = hooks.getView();
    const k = (r.width - 132 - 18) / (zoomed.t1 - zoomed.t0);
    expect(panned.t0 - zoomed.t0).toBeCloseTo(100 / k, 1);
    expect(panned.t1 - panned.t0).toBeCloseTo(zoomed.t1 - zoomed.t0, 6);

    canvas.dispatchEvent(new MouseEvent("dblclick", { clientX: x, clientY: r.top + 20, bubbles: true }));
    expect(hooks.getView()).toEqual(full);
  });

  it("renders user text as text, never as HTML", async () => {
    const spec = fillDrain(2, 2);
    const evil = '<img src=x onerror="window.__ppvizPwned=1"><b>bold</b>';
    const model = modelFor(2, spec);
    model.state.meta = metaFor(2, spec.ops, spec.makespan, { title: evil, rows: [evil, "stage 1"] });
    const { root } = await mount(model);
    expect(root.querySelector("img")).toBeNull();
    expect(root.querySelector("b")).toBeNull();
    expect(root.querySelector(".ppviz-name")!.textContent).toBe(evil);
    model.set("error", evil);
    const banner = root.querySelector(".ppviz-error") as HTMLElement;
    expect(banner.hidden).toBe(false);
    expect(banner.textContent).toBe(evil);
    expect(banner.querySelector("*")).toBeNull();
    model.set("error", "");
    expect(banner.hidden).toBe(true);
    expect((window as unknown as { __ppvizPwned?: number }).__ppvizPwned).toBeUndefined();
  });

  it("follows the host theme live and honours a forced theme", async () => {
    const model = modelFor(2, fillDrain(2, 2), { theme: "auto" });
    document.body.setAttribute("data-jp-theme-light", "true");
    const { root } = await mount(model);
    expect(root.dataset.theme).toBe("light");
    expect(root.style.getPropertyValue("--ppviz-bg")).toBe(LIGHT.background);
    document.body.setAttribute("data-jp-theme-light", "false");
    await new Promise((r) => setTimeout(r, 0));
    await nextFrame();
    expect(root.dataset.theme).toBe("dark");
    expect(root.style.getPropertyValue("--ppviz-bg")).toBe(DARK.background);
    model.set("theme", "light");
    await nextFrame();
    expect(root.dataset.theme).toBe("light");
  });

  it("replays time with the scrubber and the play button", async () => {
    const spec = fillDrain(2, 4);
    const { root } = await mount(modelFor(2, spec));
    const scrub = root.querySelector(".ppviz-scrub") as HTMLInputElement;
    scrub.value = "500";
    scrub.dispatchEvent(new Event("input", { bubbles: true }));
    expect(root.querySelector(".ppviz-time")!.textContent).toBe(`t = ${spec.makespan / 2} of ${spec.makespan}`);
    const play = root.querySelector(".ppviz-play") as HTMLButtonElement;
    play.click();
    expect(play.getAttribute("aria-label")).toBe("pause");
    await new Promise((r) => setTimeout(r, 120));
    expect(Number(scrub.value)).toBeGreaterThan(500);
    play.click();
    expect(play.getAttribute("aria-label")).toBe("play");
  });

  it("redraws with new data when Python re-simulates", async () => {
    const model = modelFor(2, fillDrain(2, 2));
    const { root } = await mount(model);
    const spec = fillDrain(3, 5);
    model.state.timeline = new DataView(encodeTimeline(3, spec.ops).buffer);
    model.set("meta", metaFor(3, spec.ops, spec.makespan));
    await nextFrame();
    expect(Number(root.dataset.ops)).toBe(spec.ops.length);
  });

  it("cleans up: listeners, observers, frames and DOM", async () => {
    const model = modelFor(2, fillDrain(2, 4));
    const el = document.createElement("div");
    host.append(el);
    const cleanup = widget.render({ model, el } as never) as () => void;
    await nextFrame();
    const root = el.querySelector(".ppviz-gantt") as HTMLElement;
    (root.querySelector(".ppviz-play") as HTMLButtonElement).click();
    expect(model.listenerCount()).toBeGreaterThan(0);
    cleanup();
    expect(model.listenerCount()).toBe(0);
    expect(el.querySelector(".ppviz-gantt")).toBeNull();
    const draws = root.dataset.draws;
    model.set("selected_microbatch", 1);
    document.body.setAttribute("data-jp-theme-light", "false");
    await nextFrame();
    await nextFrame();
    expect(root.dataset.draws).toBe(draws);
  });

  it("tears down when anywidget aborts the render signal", async () => {
    const model = modelFor(2, fillDrain(2, 2));
    const el = document.createElement("div");
    host.append(el);
    const controller = new AbortController();
    widget.render({ model, el, signal: controller.signal } as never);
    expect(el.querySelector(".ppviz-gantt")).not.toBeNull();
    controller.abort();
    expect(el.querySelector(".ppviz-gantt")).toBeNull();
    expect(model.listenerCount()).toBe(0);
  });
});
