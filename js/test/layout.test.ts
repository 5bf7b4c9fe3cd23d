import { describe, expect, it } from "vitest";
import { HEAT_ABOVE, MAX_GUTTER_SHARE, MIN_GUTTER, computeLayout, labelAt, rowHeightFor } from "../src/layout";
import { memoryGrid } from "../src/memory";

describe("layout", () => {
  it("finds the device whose row label is under the pointer, and none elsewhere", () => {
    const L = computeLayout(900, 4, true);
    const mid = (d: number) => L.rowTop[d] + L.rowHeight / 2;
    expect(labelAt(L, 20, mid(2))).toBe(2);
    expect(labelAt(L, L.plotLeft - 1, mid(0))).toBe(0);
    expect(labelAt(L, L.plotLeft + 5, mid(2))).toBe(-1);
    expect(labelAt(L, 20, L.rowTop[1] - 1)).toBe(-1);
    // a memory lane's label is not a device row
    expect(labelAt(L, 20, L.memTop[1] + 2)).toBe(-1);
  });

  it("is compact in a comparison: thin rows, no memory lanes, the same plot edges", () => {
    const full = computeLayout(900, 8, true);
    const compact = computeLayout(900, 8, true, true);
    expect(rowHeightFor(8, true)).toBeLessThan(rowHeightFor(8));
    expect(compact.memTop).toEqual([]);
    expect(compact.height).toBeLessThan(full.height / 2);
    expect([compact.plotLeft, compact.plotRight]).toEqual([full.plotLeft, full.plotRight]);
    expect(computeLayout(900, 64, false, true).rowHeight).toBeGreaterThanOrEqual(1);
  });

  it("gives the labels the gutter they measure, within bounds; a comparison keeps the shared one", () => {
    expect(computeLayout(1200, 4, true, false, 180).plotLeft).toBe(180);
    expect(computeLayout(1200, 4, true, false, 10).plotLeft).toBe(MIN_GUTTER);
    expect(computeLayout(400, 4, true, false, 300).plotLeft).toBe(Math.round(400 * MAX_GUTTER_SHARE));
    expect(computeLayout(1200, 4, true, true, 300).plotLeft).toBe(computeLayout(1200, 4, true, true).plotLeft);
  });

  it("collapses the memory lanes into a heat strip of thin rows above HEAT_ABOVE devices", () => {
    const lanes = computeLayout(1000, HEAT_ABOVE, true);
    const heat = computeLayout(1000, HEAT_ABOVE + 1, true);
    expect(lanes.heat).toBe(false);
    expect(heat.heat).toBe(true);
    expect(heat.memHeight).toBeLessThanOrEqual(6);
    // the rows touch: one strip
    expect(heat.memTop[1] - heat.memTop[0]).toBe(heat.memHeight);
    expect(computeLayout(1000, 64, true).memBottom - computeLayout(1000, 64, true).memTop[0]).toBeLessThanOrEqual(192);
  });
});

describe("memory scale", () => {
  it("puts gridlines on round values at least 10 px apart, inside the lane", () => {
    expect(memoryGrid(4.4, 27)).toEqual([2, 4]);
    expect(memoryGrid(9.35, 25)).toEqual([5]);
    expect(memoryGrid(1.1, 40)).toEqual([0.5, 1]);
    for (const [top, h] of [[3.3, 12], [120, 30], [0.055, 18]]) {
      const grid = memoryGrid(top, h);
      expect(grid.length).toBeGreaterThan(0);
      expect(Math.min(...grid)).toBeGreaterThan(0);
      expect(Math.max(...grid)).toBeLessThan(top);
      if (grid.length > 1) expect(((grid[1] - grid[0]) / top) * h).toBeGreaterThanOrEqual(h >= 20 ? 10 : 5);
    }
  });
});
