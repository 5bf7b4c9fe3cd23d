// The rules that link the views of a comparison (ppviz.compare): which Gantt chart is
// emphasised, what a click in the Altair charts selects, and the params those charts must
// show. No DOM here; src/state.ts applies the rules to the models.

/** Vega-Lite params of the linked charts (named in ppviz/compare.py). */
export const SCHEDULE_PARAM = "ppviz_schedule";
export const DEVICE_PARAM = "ppviz_device";
export const DARK_PARAM = "ppviz_dark";
/** click selections are named PICK + a number */
export const PICK = "ppviz_pick_";

export type Emphasis = "none" | "selected" | "dimmed";

/** How the chart of run `run` shows while `selected` is the comparison's selected run. */
export function emphasisOf(run: string, selected: string): Emphasis {
  if (!run || !selected) return "none";
  return run === selected ? "selected" : "dimmed";
}

export interface Selection {
  /** a run's name, "" for none */
  schedule: string;
  /** -1 for none */
  device: number;
}

/** What a chart click named: a run, and the device where the mark is per device. */
export interface Pick {
  name: string;
  device: number | null;
}

interface StoreTuple {
  fields?: { field?: string }[];
  values?: unknown[];
}

/** The mark one of JupyterChart's selection entries ({value, store}) names, or null when it
 * names none (never clicked, cleared, or already applied). Read from the store, whose tuples
 * list their fields, so it does not depend on how Vega-Lite shapes the signal's value. */
export function pickOf(entry: unknown): Pick | null {
  const store = (entry as { store?: unknown } | null)?.store;
  if (!Array.isArray(store) || store.length === 0) return null;
  const tuple = store[store.length - 1] as StoreTuple | null;
  const fields = tuple?.fields ?? [];
  const values = tuple?.values ?? [];
  let name: string | null = null;
  let device: number | null = null;
  fields.forEach((f, i) => {
    const v = values[i];
    if (f?.field === "name" && typeof v === "string") name = v;
    if (f?.field === "device" && typeof v === "number") device = v;
  });
  return name === null ? null : { name, device };
}

/** The selection after a click on a chart mark. A run's mark selects the run; a per-device
 * bar selects its run and device. Clicking what is already selected clears it. */
export function afterPick(current: Selection, pick: Pick): Selection {
  if (pick.device === null) {
    return { ...current, schedule: current.schedule === pick.name ? "" : pick.name };
  }
  const same = current.schedule === pick.name && current.device === pick.device;
  return same ? { schedule: "", device: -1 } : { schedule: pick.name, device: pick.device };
}

/** A selection entry whose click has been applied. JupyterChart compares a new click with
 * the entry it holds, so putting this back makes a second click on the same mark count. */
export function consumed(): { value: null; store: never[] } {
  return { value: null, store: [] };
}

/** Apply every pending click in the chart's selections (`_vl_selections`): the new selection
 * and the selections with those clicks consumed, or null when there is no pending click. */
export function applyPicks(
  selections: Record<string, unknown>,
  current: Selection,
): { selection: Selection; selections: Record<string, unknown> } | null {
  let selection = current;
  let any = false;
  const out: Record<string, unknown> = { ...selections };
  for (const [name, entry] of Object.entries(selections)) {
    if (!name.startsWith(PICK)) continue;
    const pick = pickOf(entry);
    if (!pick) continue;
    selection = afterPick(selection, pick);
    out[name] = consumed();
    any = true;
  }
  return any ? { selection, selections: out } : null;
}

/** The values the linked charts' params must have. */
export function desiredParams(selection: Selection, dark: boolean): Record<string, unknown> {
  return { [SCHEDULE_PARAM]: selection.schedule, [DEVICE_PARAM]: selection.device, [DARK_PARAM]: dark };
}

/** The chart's params (`_params`) with the desired values, or null when they hold them
 * already. Only params the chart has are set: Vega throws on an unknown signal. */
export function paramsUpdate(current: Record<string, unknown>, desired: Record<string, unknown>): Record<string, unknown> | null {
  const changes = Object.entries(desired).filter(([k, v]) => k in current && current[k] !== v);
  return changes.length ? { ...current, ...Object.fromEntries(changes) } : null;
}
