import { describe, expect, it } from "vitest";
import { decodeTimeline } from "../src/data";
import { hitTest } from "../src/hit";
import { computeLayout } from "../src/layout";
import { Scale, fullView } from "../src/scale";
import { dense, encodeTimeline, fillDrain } from "./fixtures";

describe("hitTest", () => {
  const p = 4;
  const spec = fillDrain(p, 6);
  const tl = decodeTimeline(encodeTimeline(p, spec.ops));
  const layout = computeLayout(900, p, true);
  const scale = new Scale(fullView(spec.makespan), layout.plotLeft, layout.plotRight);
  const mid = (d: number) => layout.rowTop[d] + layout.rowHeight / 2;

  it("finds every op at its centre", () => {
    spec.ops.forEach((o, k) => {
      expect(hitTest(tl, layout, scale, scale.x(o.start + o.dur / 2), mid(o.device))).toBe(k);
    });
  });

  it("finds nothing in idle time, between rows, in the gutter or the memory lanes", () => {
    // device 3 is idle until its first forward at t = 3
    expect(hitTest(tl, layout, scale, scale.x(1.5), mid(3))).toBe(-1);
    expect(hitTest(tl, layout, scale, scale.x(0.5), layout.rowTop[1] - 2)).toBe(-1);
    expect(hitTest(tl, layout, scale, layout.plotLeft - 20, mid(0))).toBe(-1);
    expect(hitTest(tl, layout, scale, scale.x(0.5), layout.memTop[0] + 2)).toBe(-1);
  });

  it("agrees with a brute-force search after zooming", () => {
    const zoomed = new Scale({ t0: 7.3, t1: 12.9 }, layout.plotLeft, layout.plotRight);
    for (let x = layout.plotLeft; x <= layout.plotRight; x += 7) {
      for (let d = 0; d < p; d++) {
        const t = zoomed.t(x);
        const inside = spec.ops.findIndex((o) => o.device === d && o.start <= t && t <= o.start + o.dur);
        const got = hitTest(tl, layout, zoomed, x, mid(d));
        if (inside >= 0) {
          const o = spec.ops[got];
          expect(o.start <= t && t <= o.start + o.dur).toBe(true);
        } else if (got >= 0) {
          const o = spec.ops[got];
          expect(Math.min(Math.abs(zoomed.x(o.start) - x), Math.abs(zoomed.x(o.start + o.dur) - x))).toBeLessThanOrEqual(3);
        }
      }
    }
  });

  it("returns the F of an F&B pair for both halves", () => {
    const pair = decodeTimeline(
      encodeTimeline(1, [
        { device: 0, stage: 0, mb: 2, kind: "F", start: 0, dur: 4, pair: "F" },
        { device: 0, stage: 0, mb: 0, kind: "B", start: 0, dur: 4, pair: "B" },
        { device: 0, stage: 0, mb: 1, kind: "W", start: 4, dur: 1 },
      ]),
    );
    const l1 = computeLayout(600, 1, false);
    const s1 = new Scale(fullView(5), l1.plotLeft, l1.plotRight);
    expect(hitTest(pair, l1, s1, s1.x(3.9), l1.rowTop[0] + 10)).toBe(0);
    expect(hitTest(pair, l1, s1, s1.x(4.5), l1.rowTop[0] + 10)).toBe(2);
  });

  it("still finds sub-pixel ops within the tolerance", () => {
    const many = dense(2, 20000);
    const big = decodeTimeline(encodeTimeline(2, many.ops));
    const l2 = computeLayout(900, 2, false);
    const s2 = new Scale(fullView(many.makespan), l2.plotLeft, l2.plotRight);
    const k = hitTest(big, l2, s2, 400, l2.rowTop[1] + 10);
    expect(k).toBeGreaterThanOrEqual(20000);
    expect(Math.abs(s2.x(big.start[k]) - 400)).toBeLessThanOrEqual(3);
  });
});
