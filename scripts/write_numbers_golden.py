"""Write tests/data/numbers_golden.json: what ppviz.core.numbers writes for a grid of values,
which the widget's twin (js/src/format.ts) must write digit for digit (js/test/numbers.test.ts)
and which tests/test_numbers.py checks Python still writes.

    python scripts/write_numbers_golden.py
"""

import json
import pathlib

import numpy as np

from ppviz.core.numbers import number, share, size

DATA = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data"


def values() -> list[float]:
    """Every decade from 1e-9 to 1e18 at the values where rounding decides (halves, nines,
    powers of ten and their neighbours), both signs, and random values."""
    rng = np.random.default_rng(34)
    out = [0.0, 1.0, -1.0, 0.5, 0.125, 0.375, 2.5, 999.5, 999.4999, 1e15 - 1, 1e-3, 0.0009999]
    for exponent in range(-9, 19):
        scale = 10.0**exponent
        for mantissa in (1, 1.005, 1.015, 1.25, 1.2345, 2.675, 4.5, 9.99, 9.995, 9.9949, 9.9999):
            out.append(mantissa * scale)
    out += list(rng.lognormal(0, 6, 200)) + list(-rng.lognormal(0, 4, 40)) + list(rng.integers(0, 10**7, 30))
    return [float(x) for x in out]


def golden() -> list[dict]:
    return [{"x": x, "number": number(x), "number_ms": number(x, "ms"), "share": share(x / 1000),
             "size": size(abs(x) * 1024)} for x in values()]


if __name__ == "__main__":
    (DATA / "numbers_golden.json").write_text(json.dumps(golden(), indent=0) + "\n")
    print(f"wrote {DATA / 'numbers_golden.json'}")
