// The front end of ppviz.compare's CompareState, the model at the centre of a comparison.
// It is never displayed: anywidget runs this once per model (initialize), so the links work
// whether or not a view of it exists. The Gantt charts reach it through jslinks of their
// selected_* and time_window traits; the Altair chart's _vl_selections and _params arrive as
// _chart_selections and _chart_params. Here, clicks in the chart become the selection, and the
// selection and the theme become the chart's params.

import { type Selection, applyPicks, desiredParams, paramsUpdate } from "./compare";
import { hostTheme, watchTheme } from "./theme";
import type { CompareStateModel } from "./traits";

export function isCompareState(model: { get(key: string): unknown }): boolean {
  return model.get("_ppviz_role") === "compare-state";
}

function selectionOf(model: CompareStateModel): Selection {
  const device = model.get("selected_device");
  return { schedule: String(model.get("selected_schedule") ?? ""), device: typeof device === "number" ? device : -1 };
}

/** Keep the state and the chart in step; returns the teardown. */
export function linkCompareState(model: CompareStateModel, doc: Document = document): () => void {
  let queued = false;
  let active = true;
  const sync = () => {
    queued = false;
    if (!active) return;
    const picks = applyPicks(model.get("_chart_selections") ?? {}, selectionOf(model));
    if (picks) {
      model.set("_chart_selections", picks.selections);
      model.set("selected_schedule", picks.selection.schedule);
      model.set("selected_device", picks.selection.device);
    }
    const theme = model.get("theme");
    const dark = theme === "dark" || (theme !== "light" && hostTheme(doc) === "dark");
    const params = paramsUpdate(model.get("_chart_params") ?? {}, desiredParams(selectionOf(model), dark));
    if (params) model.set("_chart_params", params);
    if (picks || params) model.save_changes();
  };
  // A jslink ignores changes made while it is still passing one on (and JupyterChart resets
  // _params when its view is built), so the answer waits until the current change is done.
  const later = () => {
    if (queued) return;
    queued = true;
    queueMicrotask(sync);
  };
  const events = ["_chart_selections", "_chart_params", "selected_schedule", "selected_device", "theme"].map((t) => `change:${t}`);
  for (const e of events) model.on(e, later);
  const unwatch = watchTheme(later, doc);
  later();
  return () => {
    active = false;
    for (const e of events) model.off(e, later);
    unwatch();
  };
}
