"""The one way ppviz writes a number for people: summaries, the CLI, chart labels and (through its
twin ``js/src/format.ts``) the widget all say the same value the same way.

Rules, by magnitude:

- three significant digits, never fewer than the whole part needs: 554, 13.2, 3.94, 0.00612;
  whole numbers stay whole (1,024); trailing zeros are dropped (2.5, not 2.50);
- thousands are grouped with commas (12,346); beyond 10^15 or below 10^-3 a number is written
  as 1.23e+15 / 4.5e-5;
- a unit always follows after a space ("554 ms"); shares are per cent with one decimal
  ("25.7 %", "0.6 %"), two significant digits below 1 % ("0.012 %"); sizes are binary
  ("79.5 GiB", "512 B").

Halves round away from zero on the exact binary value, as JavaScript's ``toFixed`` does, so the
two implementations agree digit for digit (``tests/test_numbers.py`` checks them against each
other on a grid of values).
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

DIGITS = 3
#: below this (and above its reciprocal's 10^15) a number is written in scientific notation
SMALLEST_PLAIN = 1e-3
LARGEST_PLAIN = 1e15
SIZE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def _fixed(x: float, decimals: int) -> str:
    """``x`` rounded half away from zero to ``decimals`` places, as ``Number.toFixed`` writes it."""
    return format(Decimal(x).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP), "f")


def _trimmed(text: str) -> str:
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _grouped(text: str) -> str:
    sign, body = ("-", text[1:]) if text.startswith("-") else ("", text)
    whole, _, fraction = body.partition(".")
    groups: list[str] = []
    while len(whole) > 3:
        groups.insert(0, whole[-3:])
        whole = whole[:-3]
    groups.insert(0, whole)
    return sign + ",".join(groups) + (f".{fraction}" if fraction else "")


def _exponent(x: float) -> int:
    """The power of ten of ``x``'s leading digit, from its exact binary value."""
    return Decimal(x).adjusted()


def _scientific(x: float, digits: int) -> str:
    """``x`` as JavaScript's ``toExponential(digits - 1)`` writes it, trailing zeros dropped."""
    exact = Decimal(x)
    exponent = exact.adjusted()
    mantissa = exact.scaleb(-exponent).quantize(Decimal(1).scaleb(1 - digits), rounding=ROUND_HALF_UP)
    if abs(mantissa) >= 10:  # 9.996e-5 rounds up to the next power of ten
        exponent += 1
        mantissa = (mantissa / 10).quantize(Decimal(1).scaleb(1 - digits), rounding=ROUND_HALF_UP)
    return f"{_trimmed(format(mantissa, 'f'))}e{'+' if exponent >= 0 else '-'}{abs(exponent)}"


def _decimals(x: float, digits: int) -> int:
    """Places after the point that give ``x`` ``digits`` significant digits (none for |x| >= 10^(digits-1))."""
    return max(0, digits - 1 - _exponent(x))


def number(x: float, unit: str | None = None, *, digits: int = DIGITS) -> str:
    """``x`` as people read it (see the module's rules), followed by ``unit`` if given."""
    x = float(x)
    if math.isnan(x):
        text = "NaN"
    elif math.isinf(x):
        text = "∞" if x > 0 else "-∞"
    elif x == 0:
        text = "0"
    elif abs(x) >= LARGEST_PLAIN or abs(x) < SMALLEST_PLAIN:
        text = _scientific(x, digits)
    elif x.is_integer():
        text = _grouped(str(int(x)))
    else:
        text = _grouped(_trimmed(_fixed(x, _decimals(x, digits))))
    return f"{text} {unit}" if unit else text


def share(x: float) -> str:
    """A share (0.257) as per cent: "25.7 %", "0.6 %", "0.012 %"."""
    y = float(x) * 100
    if not math.isfinite(y) or y == 0 or abs(y) < SMALLEST_PLAIN:
        return number(y, "%", digits=2)
    decimals = 1 if abs(y) >= 1 else _decimals(y, 2)
    return f"{_grouped(_trimmed(_fixed(y, decimals)))} %"


def size(nbytes: float) -> str:
    """Bytes in binary units: "512 B", "1.5 KiB", "79.5 GiB"."""
    x = float(nbytes)
    k = 0
    while math.isfinite(x) and abs(x) >= 1024 and k < len(SIZE_UNITS) - 1:
        x /= 1024
        k += 1
    return number(x, SIZE_UNITS[k])


__all__ = ["number", "share", "size"]
