import { afterEach, describe, expect, it } from "vitest";
import { consumed } from "../src/compare";
import { linkCompareState } from "../src/state";
import widget from "../src/widget";
import { FakeModel, clicked, jslink } from "./fixtures";

const PARAMS = { ppviz_schedule: "", ppviz_device: -1, ppviz_dark: false };

function stateModel(extra: Record<string, unknown> = {}): FakeModel {
  const model = new FakeModel({
    _ppviz_role: "compare-state",
    selected_schedule: "",
    selected_device: -1,
    theme: "light",
    _chart_selections: { ppviz_pick_0: { value: {}, store: [] }, ppviz_pick_1: { value: {}, store: [] } },
    _chart_params: { ...PARAMS },
    ...extra,
  });
  return model;
}

/** The state answers after the change that woke it is done (a microtask later). */
const settled = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

const teardowns: (() => void)[] = [];
afterEach(() => {
  for (const t of teardowns.splice(0)) t();
  document.body.removeAttribute("data-jp-theme-light");
});

function link(model: FakeModel): void {
  teardowns.push(linkCompareState(model));
}

describe("CompareState front end", () => {
  it("turns a click in the chart into the selection, consumes it, and shows it in the chart", async () => {
    const model = stateModel();
    link(model);
    await settled();
    model.set("_chart_selections", { ...model.state._chart_selections as object, ppviz_pick_0: clicked({ name: "zb-h1" }) });
    expect(model.state.selected_schedule).toBe("");  // not while the jslink is passing the change on
    await settled();
    expect(model.state.selected_schedule).toBe("zb-h1");
    expect((model.state._chart_selections as Record<string, unknown>).ppviz_pick_0).toEqual(consumed());
    expect(model.state._chart_params).toEqual({ ...PARAMS, ppviz_schedule: "zb-h1" });
    expect(model.saves).toBeGreaterThan(0);

    // the same mark again: JupyterChart sees a change because the entry was consumed
    model.set("_chart_selections", { ...model.state._chart_selections as object, ppviz_pick_0: clicked({ name: "zb-h1" }) });
    await settled();
    expect(model.state.selected_schedule).toBe("");
    expect(model.state._chart_params).toEqual(PARAMS);

    model.set("_chart_selections", { ...model.state._chart_selections as object, ppviz_pick_1: clicked({ name: "1f1b", device: 6 }) });
    await settled();
    expect([model.state.selected_schedule, model.state.selected_device]).toEqual(["1f1b", 6]);
    expect(model.state._chart_params).toEqual({ ...PARAMS, ppviz_schedule: "1f1b", ppviz_device: 6 });
  });

  it("answers the chart through jslinks, which drop changes made while they pass one on", async () => {
    const chart = new FakeModel({ _vl_selections: { ppviz_pick_0: { value: {}, store: [] } }, _params: { ...PARAMS } });
    const model = stateModel();
    jslink(chart, "_vl_selections", model, "_chart_selections");
    jslink(chart, "_params", model, "_chart_params");
    link(model);
    await settled();
    chart.set("_vl_selections", { ppviz_pick_0: clicked({ name: "zb-v", device: 1 }) });
    await settled();
    expect([model.state.selected_schedule, model.state.selected_device]).toEqual(["zb-v", 1]);
    expect(chart.state._vl_selections).toEqual({ ppviz_pick_0: consumed() });
    expect(chart.state._params).toEqual({ ...PARAMS, ppviz_schedule: "zb-v", ppviz_device: 1 });
  });

  it("shows a selection made in a Gantt chart or in Python in the chart's params", async () => {
    const model = stateModel();
    link(model);
    await settled();
    const saves = model.saves;
    model.set("selected_device", 3);
    model.set("selected_schedule", "zb-v");
    await settled();
    expect(model.state._chart_params).toEqual({ ...PARAMS, ppviz_schedule: "zb-v", ppviz_device: 3 });
    expect(model.saves).toBe(saves + 1);
  });

  it("puts the params back when the chart resets them on building its view", async () => {
    const model = stateModel({ selected_schedule: "zb-v", theme: "dark" });
    link(model);
    await settled();
    expect(model.state._chart_params).toEqual({ ...PARAMS, ppviz_schedule: "zb-v", ppviz_dark: true });
    model.set("_chart_params", { ...PARAMS });
    await settled();
    expect(model.state._chart_params).toEqual({ ...PARAMS, ppviz_schedule: "zb-v", ppviz_dark: true });
  });

  it("follows the host theme when the theme is auto, live", async () => {
    document.body.setAttribute("data-jp-theme-light", "true");
    const model = stateModel({ theme: "auto" });
    link(model);
    await settled();
    expect((model.state._chart_params as Record<string, unknown>).ppviz_dark).toBe(false);
    document.body.setAttribute("data-jp-theme-light", "false");
    await settled();
    await settled();
    expect((model.state._chart_params as Record<string, unknown>).ppviz_dark).toBe(true);
    model.set("theme", "light");
    await settled();
    expect((model.state._chart_params as Record<string, unknown>).ppviz_dark).toBe(false);
  });

  it("is what the bundle's initialize starts for a CompareState model, and nothing else", async () => {
    const model = stateModel({ selected_schedule: "1f1b" });
    const controller = new AbortController();
    const cleanup = widget.initialize({ model, signal: controller.signal } as never) as () => void;
    expect(model.listenerCount()).toBeGreaterThan(0);
    await settled();
    expect((model.state._chart_params as Record<string, unknown>).ppviz_schedule).toBe("1f1b");
    // no view of the state: render draws nothing
    const el = document.createElement("div");
    expect(widget.render({ model, el, signal: controller.signal } as never)).toBeUndefined();
    expect(el.childElementCount).toBe(0);
    controller.abort();
    expect(model.listenerCount()).toBe(0);
    expect(cleanup).toBeTypeOf("function");

    const gantt = new FakeModel({ _meta: {} });
    expect(widget.initialize({ model: gantt } as never)).toBeUndefined();
    expect(gantt.listenerCount()).toBe(0);
  });
});
