import { describe, expect, it } from "vitest";
import {
  DARK_PARAM,
  DEVICE_PARAM,
  SCHEDULE_PARAM,
  afterPick,
  applyPicks,
  consumed,
  desiredParams,
  emphasisOf,
  paramsUpdate,
  pickOf,
} from "../src/compare";
import { clicked } from "./fixtures";

describe("comparison rules", () => {
  it("dims every run but the selected one, and none while nothing is selected", () => {
    expect(emphasisOf("zb-h1", "zb-h1")).toBe("selected");
    expect(emphasisOf("1f1b", "zb-h1")).toBe("dimmed");
    expect(emphasisOf("1f1b", "")).toBe("none");
    expect(emphasisOf("", "zb-h1")).toBe("none");
  });

  it("reads what a click picked from the selection's store", () => {
    expect(pickOf(clicked({ name: "zb-v" }))).toEqual({ name: "zb-v", device: null });
    expect(pickOf(clicked({ name: "zb-v", device: 3 }))).toEqual({ name: "zb-v", device: 3 });
    // never clicked (JupyterChart's first state), consumed, cleared, or not an entry at all
    expect(pickOf({ value: {}, store: [] })).toBeNull();
    expect(pickOf(consumed())).toBeNull();
    expect(pickOf({ value: null, store: null })).toBeNull();
    expect(pickOf(null)).toBeNull();
    expect(pickOf(clicked({ device: 3 }))).toBeNull();
  });

  it("selects a run, or a run and a device, and clears on a second click on the same mark", () => {
    const none = { schedule: "", device: -1 };
    const run = afterPick(none, { name: "zb-h1", device: null });
    expect(run).toEqual({ schedule: "zb-h1", device: -1 });
    expect(afterPick(run, { name: "zb-h1", device: null })).toEqual(none);
    expect(afterPick(run, { name: "1f1b", device: null })).toEqual({ schedule: "1f1b", device: -1 });
    // a run's mark keeps the device highlighted elsewhere
    expect(afterPick({ schedule: "", device: 2 }, { name: "1f1b", device: null })).toEqual({ schedule: "1f1b", device: 2 });
    const bar = afterPick(run, { name: "zb-h1", device: 5 });
    expect(bar).toEqual({ schedule: "zb-h1", device: 5 });
    expect(afterPick(bar, { name: "zb-h1", device: 5 })).toEqual(none);
    expect(afterPick(bar, { name: "zb-h1", device: 4 })).toEqual({ schedule: "zb-h1", device: 4 });
  });

  it("applies pending clicks and consumes them, so the same click counts again", () => {
    const selections = { ppviz_pick_0: clicked({ name: "zb-v" }), ppviz_pick_1: { value: {}, store: [] }, other: clicked({ name: "x" }) };
    const applied = applyPicks(selections, { schedule: "", device: -1 })!;
    expect(applied.selection).toEqual({ schedule: "zb-v", device: -1 });
    expect(applied.selections.ppviz_pick_0).toEqual(consumed());
    // not a ppviz pick: left alone
    expect(applied.selections.other).toBe(selections.other);
    expect(applyPicks(applied.selections, applied.selection)).toBeNull();
    const again = applyPicks({ ...applied.selections, ppviz_pick_0: clicked({ name: "zb-v" }) }, applied.selection)!;
    expect(again.selection.schedule).toBe("");
  });

  it("updates only the params the chart has, and only when they differ", () => {
    const desired = desiredParams({ schedule: "1f1b", device: 2 }, true);
    expect(desired).toEqual({ [SCHEDULE_PARAM]: "1f1b", [DEVICE_PARAM]: 2, [DARK_PARAM]: true });
    const chart = { [SCHEDULE_PARAM]: "", [DEVICE_PARAM]: -1, [DARK_PARAM]: false, brush: null };
    expect(paramsUpdate(chart, desired)).toEqual({ ...desired, brush: null });
    expect(paramsUpdate({ ...chart, ...desired }, desired)).toBeNull();
    expect(paramsUpdate({ brush: null }, desired)).toBeNull();
  });
});
