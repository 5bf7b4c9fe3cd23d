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
  document.body.removeAttribute("data-theme");
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

  it("leaves a plain wheel to the page, zooms around the cursor on Ctrl + wheel, pans on drag, resets on double-click", async () => {
    const spec = dense(2, 3000);
    const { root, hooks } = await mount(modelFor(2, spec));
    const canvas = root.querySelector("canvas")!;
    const r = canvas.getBoundingClientRect();
    // 6,000 ops open on a readable window from their start; the whole run first
    const opening = hooks.getView();
    expect(opening.t0).toBe(0);
    expect(opening.t1).toBeLessThan(spec.makespan / 10);
    hooks.setView(0, spec.makespan);
    await nextFrame();
    const full = hooks.getView();
    const box0 = hooks.opBox(1500)!;
    const x = Math.round(box0.x); // mouse events carry whole pixels
    const opsBefore = Number(root.dataset.ops);
    const plain = new WheelEvent("wheel", { clientX: x, clientY: box0.y + 2, deltaY: -500, bubbles: true, cancelable: true });
    canvas.dispatchEvent(plain);
    expect(plain.defaultPrevented).toBe(false);
    expect(hooks.getView()).toEqual(full);
    expect(root.dataset.hint).toBe("zoom");
    canvas.dispatchEvent(new WheelEvent("wheel", { clientX: x, clientY: box0.y + 2, deltaY: -500, ctrlKey: true, bubbles: true, cancelable: true }));
    const zoomed = hooks.getView();
    const factor = (full.t1 - full.t0) / (zoomed.t1 - zoomed.t0);
    expect(factor).toBeGreaterThan(2);
    // the time under the cursor stays under it: distances from the cursor scale by the zoom factor
    expect(hooks.opBox(1500)!.x - x).toBeCloseTo((box0.x - x) * factor, 3);
    await nextFrame();
    expect(Number(root.dataset.ops)).toBeLessThan(opsBefore);

    const row = box0.y + 2; // on device 0's row, below the overview strip
    pointer(canvas, "pointerdown", r.left + 500, row, { buttons: 1 });
    pointer(canvas, "pointermove", r.left + 400, row, { buttons: 1 });
    pointer(canvas, "pointerup", r.left + 400, row);
    const panned = hooks.getView();
    const k = hooks.opBox(1500)!.width; // pixels per unit of time: the op lasts 1
    expect(panned.t0 - zoomed.t0).toBeCloseTo(100 / k, 1);
    expect(panned.t1 - panned.t0).toBeCloseTo(zoomed.t1 - zoomed.t0, 6);

    // a double-click goes back to the window the chart opened on
    canvas.dispatchEvent(new MouseEvent("dblclick", { clientX: x, clientY: row, bubbles: true }));
    expect(hooks.getView()).toEqual(opening);
  });

  it("renders user text as text, never as HTML", async () => {
    const spec = fillDrain(2, 2);
    const evil = '<img src=x onerror="window.__ppvizPwned=1"><b>bold</b>';
    const model = modelFor(2, spec);
    model.state._meta = metaFor(2, spec.ops, spec.makespan, { title: evil, rows: [evil, "stage 1"] });
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

  it("follows marimo's theme (data-theme on the body) live", async () => {
    document.body.setAttribute("data-theme", "dark");
    const { root } = await mount(modelFor(2, fillDrain(2, 2), { theme: "auto" }));
    expect(root.dataset.theme).toBe("dark");
    expect(root.style.getPropertyValue("--ppviz-bg")).toBe(DARK.background);
    document.body.setAttribute("data-theme", "light");
    await new Promise((r) => setTimeout(r, 0));
    await nextFrame();
    expect(root.dataset.theme).toBe("light");
  });

  it("draws nothing for a chart with no data, title or error, and draws once data arrives", async () => {
    const model = new FakeModel({ _meta: {}, error: "", _timeline: new DataView(new ArrayBuffer(0)) });
    const { root } = await mount(model);
    expect(root.hidden).toBe(true);
    const spec = fillDrain(2, 2);
    model.state._timeline = new DataView(encodeTimeline(2, spec.ops).buffer);
    model.set("_meta", metaFor(2, spec.ops, spec.makespan));
    await nextFrame();
    await nextFrame();
    expect(root.hidden).toBe(false);
    expect(Number(root.dataset.ops)).toBe(spec.ops.length);
    model.set("_meta", {});
    await nextFrame();
    expect(root.hidden).toBe(true);
    model.set("error", "refused");
    expect(root.hidden).toBe(false);
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
    model.state._timeline = new DataView(encodeTimeline(3, spec.ops).buffer);
    model.set("_meta", metaFor(3, spec.ops, spec.makespan));
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

describe("GanttView in a comparison", () => {
  function compared(extra: Record<string, unknown> = {}): FakeModel {
    const spec = fillDrain(3, 4);
    return modelFor(3, spec, {
      _compact: true, _run_name: "zb-h1", _color: "#cc79a7", selected_schedule: "", selected_device: -1,
      time_extent: spec.makespan * 2, time_window: [], ...extra,
    });
  }

  it("is compact: one-line header with the run's swatch, no replay bar or memory lanes, thin rows", async () => {
    const { root } = await mount(compared());
    expect(root.classList.contains("ppviz-compact")).toBe(true);
    expect((root.querySelector(".ppviz-player") as HTMLElement).hidden).toBe(true);
    expect(root.querySelector(".ppviz-name-button .ppviz-run-swatch")).not.toBeNull();
    expect(root.style.getPropertyValue("--ppviz-run")).toBe("#cc79a7");
    const compactHeight = root.querySelector("canvas")!.clientHeight;
    views.splice(0).forEach((v) => v.destroy());
    const { root: full } = await mount(modelFor(3, fillDrain(3, 4)));
    expect(full.classList.contains("ppviz-compact")).toBe(false);
    expect(compactHeight).toBeLessThan(full.querySelector("canvas")!.clientHeight / 2);
  });

  it("spans the shared time extent, and the full view is that extent", async () => {
    const model = compared();
    const { root, hooks } = await mount(model);
    const extent = model.state.time_extent as number;
    expect(hooks.getView()).toEqual({ t0: 0, t1: extent });
    // the run's last op ends halfway along the axis
    const spec = fillDrain(3, 4);
    const last = spec.ops.reduce((a, o, k) => (o.start + o.dur > spec.ops[a].start + spec.ops[a].dur ? k : a), 0);
    const box = hooks.opBox(last)!;
    const canvas = root.querySelector("canvas")!.getBoundingClientRect();
    const plotLeft = canvas.left + 132;
    const plotRight = canvas.right - 18;
    expect(box.x + box.width).toBeCloseTo(plotLeft + (plotRight - plotLeft) / 2, 0);
  });

  it("writes zoom and pan to time_window, and follows a window set elsewhere without writing it back", async () => {
    const model = compared();
    const { root, hooks } = await mount(model);
    const canvas = root.querySelector("canvas")!;
    const r = canvas.getBoundingClientRect();
    canvas.dispatchEvent(new WheelEvent("wheel", { clientX: r.left + 400, clientY: r.top + 10, deltaY: -400, ctrlKey: true, bubbles: true, cancelable: true }));
    const zoomed = hooks.getView();
    expect(model.state.time_window).toEqual([zoomed.t0, zoomed.t1]);
    canvas.dispatchEvent(new MouseEvent("dblclick", { clientX: r.left + 400, clientY: r.top + 10, bubbles: true }));
    expect(model.state.time_window).toEqual([]);
    const saves = model.saves;
    model.set("time_window", [2, 5]);
    expect(hooks.getView()).toEqual({ t0: 2, t1: 5 });
    expect(model.saves).toBe(saves);
    expect(model.state.time_window).toEqual([2, 5]);
    // a window beyond this chart's extent is clamped for drawing, and left as it is in the model
    model.set("time_window", [1, 1000]);
    expect(hooks.getView()).toEqual({ t0: 0, t1: model.state.time_extent });
    expect(model.state.time_window).toEqual([1, 1000]);
  });

  it("highlights a device from its row label or an op, and clears it on a second click or Escape", async () => {
    const model = compared();
    const { root, hooks } = await mount(model);
    const canvas = root.querySelector("canvas")!;
    const r = canvas.getBoundingClientRect();
    const spec = fillDrain(3, 4);
    const k = spec.ops.findIndex((o) => o.device === 2);
    const row = hooks.opBox(k)!;
    click(canvas, r.left + 40, row.y + row.height / 2);
    expect(model.state.selected_device).toBe(2);
    expect(root.dataset.selectedDevice).toBe("2");
    expect(model.state.selected_microbatch).toBe(-1);
    click(canvas, r.left + 40, row.y + row.height / 2);
    expect(model.state.selected_device).toBe(-1);
    const j = spec.ops.findIndex((o) => o.device === 1 && o.mb === 3);
    const box = hooks.opBox(j)!;
    click(canvas, box.x + box.width / 2, box.y + box.height / 2);
    expect([model.state.selected_device, model.state.selected_microbatch, model.state.selected_op]).toEqual([1, 3, j]);
    root.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true }));
    expect([model.state.selected_device, model.state.selected_microbatch]).toEqual([-1, -1]);
    // set from another chart: shown without being written back
    const saves = model.saves;
    model.set("selected_device", 0);
    expect(root.dataset.selectedDevice).toBe("0");
    expect(model.saves).toBe(saves);
  });

  it("selects its run from the title, shows emphasis, and dims while another run is selected", async () => {
    const model = compared();
    const { root } = await mount(model);
    const title = root.querySelector(".ppviz-name-button") as HTMLButtonElement;
    expect(title.textContent).toBe("zb-h1");
    expect(root.dataset.emphasis).toBe("none");
    title.click();
    expect(model.state.selected_schedule).toBe("zb-h1");
    expect(root.dataset.emphasis).toBe("selected");
    expect(title.getAttribute("aria-pressed")).toBe("true");
    title.click();
    expect(model.state.selected_schedule).toBe("");
    model.set("selected_schedule", "1f1b");
    expect(root.dataset.emphasis).toBe("dimmed");
    root.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true }));
    expect(model.state.selected_schedule).toBe("");
  });

  it("keeps the selected op an op of the selected microbatch when the microbatch comes from elsewhere", async () => {
    const model = compared();
    const { root, hooks } = await mount(model);
    const canvas = root.querySelector("canvas")!;
    const spec = fillDrain(3, 4);
    const k = spec.ops.findIndex((o) => o.mb === 2);
    const box = hooks.opBox(k)!;
    click(canvas, box.x + box.width / 2, box.y + box.height / 2);
    expect(model.state.selected_op).toBe(k);
    model.set("selected_microbatch", 1);
    expect(model.state.selected_op).toBe(-1);
    model.set("selected_microbatch", 2);
    expect(model.state.selected_op).toBe(-1);
  });

  it("shows a run that did not run as its title and the reason, as text", async () => {
    const evil = '<img src=x onerror="window.__ppvizPwned=1">';
    const model = new FakeModel({ _meta: { title: "dualpipe-v" }, error: `m=4: needs more ${evil}`, _compact: true, _run_name: `dualpipe-v ${evil}` });
    const { root } = await mount(model);
    expect(root.querySelector(".ppviz-name")!.textContent).toBe(`dualpipe-v ${evil}`);
    expect(root.querySelector(".ppviz-sizes")!.textContent).toBe("not run");
    const banner = root.querySelector(".ppviz-error") as HTMLElement;
    expect(banner.hidden).toBe(false);
    expect(banner.textContent).toBe(`m=4: needs more ${evil}`);
    expect(root.querySelector("img")).toBeNull();
    expect((root.querySelector(".ppviz-plot") as HTMLElement).hidden).toBe(true);
  });
});
