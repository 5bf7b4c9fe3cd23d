// The widget writes every number as Python does: the golden file is ppviz.core.numbers' output
// (scripts/write_numbers_golden.py), and the twin in format.ts must match it digit for digit.

import { describe, expect, it } from "vitest";
import golden from "../../tests/data/numbers_golden.json";
import { number, share, size } from "../src/format";

describe("the shared number formatter", () => {
  it("writes every golden value as Python does", () => {
    const wrong: string[] = [];
    for (const row of golden as Array<Record<string, number | string>>) {
      const x = row.x as number;
      const got = { number: number(x), number_ms: number(x, "ms"), share: share(x / 1000), size: size(Math.abs(x) * 1024) };
      for (const [key, value] of Object.entries(got)) {
        if (value !== row[key]) wrong.push(`${key}(${x}): ${value} != ${row[key]}`);
      }
    }
    expect(wrong).toEqual([]);
    expect((golden as unknown[]).length).toBeGreaterThan(500);
  });

  it("says what the issue's examples say", () => {
    expect(number(553.938, "ms")).toBe("554 ms");
    expect(number(13.188)).toBe("13.2");
    expect(number(3.941)).toBe("3.94");
    expect(number(41.522575225)).toBe("41.5");
    expect(share(0.006)).toBe("0.6 %");
  });
});
