// Overview and detail: a run too dense to read whole opens on a readable window with the whole run
// in the overview strip above; the strip's window moves and resizes the detail view; rows that do
// not fit scroll; a comparison's charts open on one window, the densest run's.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { decodeTimeline } from "../src/data";
import { READABLE_SHARE, readableSpan } from "../src/opening";
import { GanttView, type DebugHooks } from "../src/view";
import { FakeModel, dense, encodeTimeline, fillDrain, jslink, modelFor, nextFrame } from "./fixtures";

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
});

async function mount(model: FakeModel): Promise<{ root: HTMLElement; hooks: DebugHooks; canvas: HTMLCanvasElement }> {
  views.push(new GanttView(host, model as never));
  await nextFrame();
  await nextFrame();
  const root = host.querySelectorAll<HTMLElement>(".ppviz-gantt")[views.length - 1];
  return { root, hooks: (root as unknown as { ppviz: DebugHooks }).ppviz, canvas: root.querySelector("canvas")! };
}

function pointer(target: Element, type: string, x: number, y: number, extra: PointerEventInit = {}): void {
  target.dispatchEvent(new PointerEvent(type, { clientX: x, clientY: y, bubbles: true, pointerId: 1, button: 0, ...extra }));
}

function drag(target: Element, x0: number, y0: number, x1: number, y1: number): void {
  pointer(target, "pointerdown", x0, y0, { buttons: 1 });
  pointer(target, "pointermove", x1, y1, { buttons: 1 });
  pointer(target, "pointerup", x1, y1);
}

describe("the opening window", () => {
  it("gives READABLE_SHARE of the ops room for their labels, in the context's font", () => {
    const spec = dense(3, 600);
    const tl = decodeTimeline(encodeTimeline(3, spec.ops));
    const ctx = document.createElement("canvas").getContext("2d")!;
    ctx.font = "600 11px sans-serif";
    const span = readableSpan(ctx, tl, 1, 700);
    // every op lasts 1 unit; labels are microbatch numbers up to 199, as wide as their digits
    const widths = spec.ops.map((o) => ctx.measureText(String(o.mb)).width + 6);
    const fits = widths.filter((w) => w <= 700 / span).length;
    expect(fits / widths.length).toBeGreaterThanOrEqual(READABLE_SHARE);
    // and no wider: a span a tenth wider leaves fewer with room
    expect(widths.filter((w) => w <= 700 / (span * 1.1)).length / widths.length).toBeLessThan(READABLE_SHARE);
  });

  it("opens a dense run on that window from its start, says so to Python, and shows the whole run above", async () => {
    const spec = dense(4, 400);
    const model = modelFor(4, spec, { time_window: [] });
    const { root, hooks } = await mount(model);
    const v = hooks.getView();
    expect(v.t0).toBe(0);
    expect(v.t1).toBeLessThan(spec.makespan / 5);
    expect(model.state.time_window).toEqual([0, v.t1]);
    expect(model.state._opening_span).toBe(v.t1);
    expect(root.dataset.overview).toBe("shown");
    const ops = Number(root.dataset.ops);
    expect(Number(root.dataset.labels)).toBeGreaterThanOrEqual(0.8 * ops);
    expect(ops).toBeLessThan(spec.ops.length / 5);
    // the window on the strip covers the same share of its width as the view of the time axis
    const box = hooks.overviewWindow()!;
    const g = hooks.geometry()!;
    expect(g.scrollMax).toBe(0);
    expect(box.height).toBeGreaterThan(10);
  });

  it("leaves a run readable whole as it was: the whole run, no strip, nothing written", async () => {
    const model = modelFor(3, fillDrain(3, 4), { time_window: [] });
    const { root, hooks } = await mount(model);
    expect(hooks.getView()).toEqual({ t0: 0, t1: fillDrain(3, 4).makespan });
    expect(root.dataset.overview).toBe("none");
    expect(hooks.overviewWindow()).toBeNull();
    expect(model.state.time_window).toEqual([]);
    expect(model.saves).toBe(0);
  });

  it("keeps a window Python set before the chart opened", async () => {
    const model = modelFor(4, dense(4, 400), { time_window: [100, 180] });
    const { hooks } = await mount(model);
    expect(hooks.getView()).toEqual({ t0: 100, t1: 180 });
    expect(model.state.time_window).toEqual([100, 180]);
  });
});

describe("the overview strip", () => {
  it("moves the detail view by its window, resizes it by an edge, and moves it to a press beside it", async () => {
    const spec = dense(4, 400);
    const model = modelFor(4, spec, { time_window: [] });
    const { hooks, canvas } = await mount(model);
    const before = hooks.overviewWindow()!;
    const opening = hooks.getView();
    const mid = before.y + before.height / 2;
    // move: the window follows the pointer, the span stays
    drag(canvas, before.x + before.width / 2, mid, before.x + before.width / 2 + 60, mid);
    const moved = hooks.overviewWindow()!;
    expect(moved.x).toBeCloseTo(before.x + 60, 5);
    const v = hooks.getView();
    expect(v.t1 - v.t0).toBeCloseTo(opening.t1 - opening.t0, 6);
    expect(model.state.time_window).toEqual([v.t0, v.t1]);
    // resize by the right edge: the window widens by the pointer's way, its left edge stays
    drag(canvas, moved.x + moved.width, mid, moved.x + moved.width + 40, mid);
    const wider = hooks.overviewWindow()!;
    expect(wider.x).toBeCloseTo(moved.x, 5);
    expect(wider.width).toBeCloseTo(moved.width + 40, 5);
    // a press beside it: the window centred there
    const r = canvas.getBoundingClientRect();
    const x = r.left + r.width * 0.8;
    pointer(canvas, "pointerdown", x, mid, { buttons: 1 });
    pointer(canvas, "pointerup", x, mid);
    const jumped = hooks.overviewWindow()!;
    expect(jumped.x + jumped.width / 2).toBeCloseTo(x, 0);
    // a press on the strip selects nothing
    expect(model.state.selected_microbatch).toBe(-1);
  });
});

describe("rows that do not fit", () => {
  it("keep a readable height and scroll, by the wheel, the keys and the strip, and are hit where they show", async () => {
    const spec = dense(64, 40);
    const model = modelFor(64, spec, { time_window: [] });
    const { root, hooks, canvas } = await mount(model);
    const g = hooks.geometry()!;
    expect(g.rowHeight).toBeGreaterThanOrEqual(20);
    expect(g.rowLabelPx).toBeGreaterThanOrEqual(11);
    expect(g.scrollMax).toBeGreaterThan(0);
    expect(root.dataset.rows).toMatch(/^0-\d+$/);
    const shown = Number(root.dataset.rows!.split("-")[1]) + 1;
    expect(shown).toBeLessThan(64);
    const r = canvas.getBoundingClientRect();
    // a plain wheel over the rows scrolls them (not the page) until they end
    const wheel = new WheelEvent("wheel", { clientX: r.left + 400, clientY: g.rowsTop + 30, deltaY: 200, bubbles: true, cancelable: true });
    canvas.dispatchEvent(wheel);
    expect(wheel.defaultPrevented).toBe(true);
    expect(hooks.getScroll()).toBe(200);
    hooks.setScroll(1e9);
    expect(hooks.getScroll()).toBe(g.scrollMax);
    const atEnd = new WheelEvent("wheel", { clientX: r.left + 400, clientY: g.rowsTop + 30, deltaY: 200, bubbles: true, cancelable: true });
    canvas.dispatchEvent(atEnd);
    expect(atEnd.defaultPrevented).toBe(false); // the page scrolls on
    await nextFrame();
    expect(root.dataset.rows).toBe(`${64 - shown}-63`);
    // the last device's op (it starts at t = 63), where it now shows, is found under the pointer
    const opening = hooks.getView();
    hooks.setView(60, 60 + (opening.t1 - opening.t0));
    const k = spec.ops.findIndex((o) => o.device === 63 && o.start >= 64);
    const box = hooks.opBox(k)!;
    expect(box.y).toBeGreaterThanOrEqual(g.rowsTop);
    expect(box.y + box.height).toBeLessThanOrEqual(g.rowsBottom);
    expect(hooks.hit(box.x + box.width / 2, box.y + box.height / 2)).toBe(k);
    // keys: ↑ three rows up; 0 back to the top and the opening window
    root.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowUp", bubbles: true }));
    expect(hooks.getScroll()).toBe(g.scrollMax - 3 * (g.rowHeight + 3));
    root.dispatchEvent(new KeyboardEvent("keydown", { key: "0", bubbles: true }));
    expect(hooks.getScroll()).toBe(0);
    expect(hooks.getView()).toEqual(opening);
    // the strip's window covers the devices in view; dragging it down scrolls the rows
    const box0 = hooks.overviewWindow()!;
    drag(canvas, box0.x + box0.width / 2, box0.y + 2, box0.x + box0.width / 2, box0.y + 12);
    expect(hooks.getScroll()).toBeGreaterThan(0);
  });
});

describe("a comparison's charts", () => {
  it("open on one window, the span the densest run needs, each with its strip", async () => {
    // the same 4 devices: one run's ops last 1, the other's 0.5, so it needs half the span
    const slow = dense(4, 300);
    const fast = { ops: slow.ops.map((o) => ({ ...o, start: o.start / 2, dur: o.dur / 2 })), makespan: slow.makespan / 2 };
    const extent = slow.makespan;
    const state = new FakeModel({ time_window: [], _opening_span: 0 });
    const models = [slow, fast].map((spec) =>
      modelFor(4, spec, { _compact: true, time_extent: extent, time_window: [], _opening_span: 0 }));
    for (const m of models) {
      jslink(state, "time_window", m, "time_window");
      jslink(state, "_opening_span", m, "_opening_span");
    }
    const [a, b] = [await mount(models[0]), await mount(models[1])];
    await nextFrame();
    const va = a.hooks.getView();
    expect(b.hooks.getView()).toEqual(va);
    expect(state.state.time_window).toEqual([0, va.t1]);
    expect(va.t1).toBeLessThan(extent / 5);
    expect([a.root.dataset.overview, b.root.dataset.overview]).toEqual(["shown", "shown"]);
    // the faster run's ops carry their labels too
    expect(Number(b.root.dataset.labels)).toBeGreaterThanOrEqual(0.8 * Number(b.root.dataset.ops));
  });
});
