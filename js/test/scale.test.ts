import { describe, expect, it } from "vitest";
import { MIN_SPAN_FRACTION, Scale, clampView, fullView, panBy, tickStep, ticks, zoomAt } from "../src/scale";

describe("time scale", () => {
  it("maps time to pixels and back", () => {
    const s = new Scale({ t0: 10, t1: 20 }, 100, 600);
    expect(s.x(10)).toBe(100);
    expect(s.x(15)).toBe(350);
    expect(s.t(600)).toBe(20);
  });

  it("zooms around the anchor: the time under the cursor stays put", () => {
    const v = fullView(100);
    const s0 = new Scale(v, 0, 1000);
    const anchor = s0.t(300);
    const z = zoomAt(v, 4, anchor, 100);
    expect(z.t1 - z.t0).toBeCloseTo(25);
    expect(new Scale(z, 0, 1000).x(anchor)).toBeCloseTo(300);
  });

  it("never zooms out past the whole schedule nor in past the float32 limit", () => {
    expect(zoomAt(fullView(100), 0.1, 50, 100)).toEqual({ t0: 0, t1: 100 });
    const deep = zoomAt(fullView(100), 1e12, 50, 100);
    expect(deep.t1 - deep.t0).toBeCloseTo(100 * MIN_SPAN_FRACTION);
  });

  it("pans inside [0, makespan]", () => {
    const v = { t0: 10, t1: 20 };
    expect(panBy(v, 5, 100)).toEqual({ t0: 15, t1: 25 });
    expect(panBy(v, -50, 100)).toEqual({ t0: 0, t1: 10 });
    expect(panBy(v, 500, 100)).toEqual({ t0: 90, t1: 100 });
    expect(clampView({ t0: -5, t1: 300 }, 100)).toEqual({ t0: 0, t1: 100 });
  });

  it("puts ticks on 1-2-5 steps at least the minimum spacing apart", () => {
    expect(tickStep(100, 1000, 72)).toBe(10);
    expect(tickStep(33, 1000, 72)).toBe(5);
    expect(tickStep(0.003, 800, 72)).toBe(0.0005);
    const { step, values } = ticks({ t0: 3, t1: 47 }, 1000);
    expect(step).toBe(5);
    expect(values[0]).toBe(5);
    expect(values[values.length - 1]).toBe(45);
  });
});
