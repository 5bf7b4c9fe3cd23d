"""The one number formatter (ppviz.core.numbers): the values it writes read back within its
precision, and the golden file the widget's twin is checked against is what it writes today."""

import json
import math
import pathlib
import sys

from hypothesis import given
from hypothesis import strategies as st

from ppviz.core.numbers import number, share, size

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import write_numbers_golden  # noqa: E402


def read_back(text: str) -> float:
    return float(text.replace(",", ""))


def test_the_golden_file_is_what_python_writes():
    stored = json.loads((ROOT / "tests" / "data" / "numbers_golden.json").read_text())
    assert stored == write_numbers_golden.golden()


def test_the_issues_examples():
    assert number(553.938, "ms") == "554 ms"
    assert number(13.188) == "13.2"
    assert number(3.941) == "3.94"
    assert number(41.522575225) == "41.5"
    assert number(1234.5) == "1,235"
    assert number(1024) == "1,024"
    assert number(0.00612) == "0.00612"
    assert number(2.5e-5) == "2.5e-5"
    assert number(1.234e17, "B") == "1.23e+17 B"
    assert share(0.006) == "0.6 %"
    assert share(0.2573) == "25.7 %"
    assert share(0.00012) == "0.012 %"
    assert size(79.5 * 2**30) == "79.5 GiB"
    assert size(512) == "512 B"
    assert number(math.inf) == "∞" and number(-math.inf) == "-∞" and number(math.nan) == "NaN"


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300))
def test_a_number_reads_back_to_three_significant_digits(x):
    text = number(x)
    if x == 0:
        assert text == "0"
        return
    back = read_back(text)
    assert abs(back - x) <= 5e-3 * abs(x) * (1 + 1e-12)
    if x.is_integer() and abs(x) < 1e15:
        assert back == x  # whole numbers stay whole
    assert number(x, "ms") == f"{text} ms"


@given(st.floats(min_value=-1e12, max_value=1e12, allow_nan=False))
def test_a_share_reads_back_to_a_tenth_of_a_percent_or_two_digits(x):
    text = share(x)
    assert text.endswith(" %")
    back = read_back(text[:-2])
    tolerance = 0.05 if abs(x * 100) >= 1 else 5e-2 * abs(x * 100)
    assert abs(back - x * 100) <= tolerance * (1 + 1e-9) + 1e-12 * abs(x * 100) + 1e-300


@given(st.floats(min_value=0, max_value=2.0**70))
def test_a_size_is_in_the_largest_binary_unit_below_it(nbytes):
    text = size(nbytes)
    value, unit = text.rsplit(" ", 1)
    scale = 1024 ** ["B", "KiB", "MiB", "GiB", "TiB", "PiB"].index(unit)
    assert abs(read_back(value) * scale - nbytes) <= 5e-3 * nbytes + 1e-300
    assert nbytes < 1024 or read_back(value) >= 0.995  # never "0.5 KiB"
