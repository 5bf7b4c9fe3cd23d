import { describe, expect, it } from "vitest";
import { computeLayout, labelAt, rowHeightFor } from "../src/layout";

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
});
