"""Plain-text Gantt chart for terminals."""

from __future__ import annotations

import numpy as np

from ..core.errors import ConfigError


#: widest chart drawn; wider asks are refused rather than building huge strings
MAX_WIDTH = 10_000
_IDLE = "·"
_PAIR = "#"


def text_gantt(result, width: int = 80) -> str:
    """One row per device, each op its kind letter (``#`` for an F&B pair) over the columns of its
    time span, labelled with its microbatch (``F12``) where the span is wide enough."""
    if isinstance(width, bool) or not isinstance(width, int) or not 20 <= width <= MAX_WIDTH:
        raise ConfigError("width", width, f"give a whole number of columns from 20 to {MAX_WIDTH}")
    p = result.devices
    label = [f"dev {d} " for d in range(p)]
    lw = max(len(s) for s in label)
    cols = max(1, width - lw - 1)
    span = result.makespan or 1.0
    ops = _drawn_ops(result)
    scale = _scale(ops, span, cols)
    cols = min(cols, int(np.ceil(span * scale)))
    grid = _draw(ops, scale, p, cols)
    end = f"{span:g}"
    room = cols - len(end) - 1
    axis = " " * (lw + 1) + (f"0{'':{room}}{end}" if room >= 1 else end.rjust(cols))
    lines = [label[d].ljust(lw) + grid[d].tobytes().decode("utf-32-le") for d in range(p)]
    return "\n".join(lines + [axis] + _legend(width))


def _drawn_ops(result) -> dict[str, np.ndarray]:
    """Columns of the ops drawn: every op but the first of a pair, whose slot its second op
    draws (a pair is one ``#`` slot, labelled with its backward's microbatch)."""
    o = result.ops
    drawn = ~result.program.pair
    kind = np.where(o.pair, _PAIR, o.kind)[drawn]
    microbatch = o.microbatch[drawn].astype(np.int64)
    digits = 1 + np.sum(microbatch[:, None] >= 10 ** np.arange(1, 11), axis=1)
    return {"device": o.device[drawn], "start": o.start[drawn], "end": o.end[drawn], "kind": kind,
            "microbatch": microbatch, "label_width": 1 + digits}


def _scale(ops: dict, span: float, cols: int) -> float:
    """Columns per time unit: whole columns per unit when the chart fits (equal ops equally
    wide, so labels line up), unless filling the width keeps more labels."""
    full = cols / span
    if span > cols:
        return full
    whole = float(int(cols // span))
    return full if _labelled(ops, full) > _labelled(ops, whole) else whole


def _columns(ops: dict, scale: float) -> tuple[np.ndarray, np.ndarray]:
    return np.rint(ops["start"] * scale).astype(np.int64), np.rint(ops["end"] * scale).astype(np.int64)


def _labelled(ops: dict, scale: float) -> int:
    first, end = _columns(ops, scale)
    return int(np.count_nonzero(end - first >= ops["label_width"]))


def _draw(ops: dict, scale: float, p: int, cols: int) -> np.ndarray:
    """The chart as code points, one row per device. A device's ops do not overlap in time, so
    (rounded the same way) they do not overlap in columns either."""
    grid = np.full((p, cols), ord(_IDLE), "<u4")
    first, end = _columns(ops, scale)
    end = np.minimum(end, cols)
    width = np.maximum(end - first, 0)
    kind = ops["kind"].astype("<U1").view("<u4")  # the letters' code points
    at = ops["device"].astype(np.int64) * cols + first
    _fill(grid, at, width, kind)
    # labels: the kind letter, then the microbatch's digits, where they fit
    fits = width >= ops["label_width"]
    mb, digits, at = ops["microbatch"][fits], ops["label_width"][fits] - 1, at[fits] + 1
    place = np.arange(int(digits.max(initial=0)))
    for k in place:  # the k-th digit from the left of every label that has one
        has = digits > k
        value = mb[has] // 10 ** (digits[has] - 1 - k) % 10
        grid.flat[at[has] + k] = ord("0") + value.astype("<u4")
    return grid


def _fill(grid: np.ndarray, at: np.ndarray, width: np.ndarray, value: np.ndarray) -> None:
    """grid.flat[at[i] : at[i] + width[i]] = value[i] for every i, at once."""
    total = int(width.sum())
    if not total:
        return
    offsets = np.cumsum(width) - width
    cells = np.repeat(at - offsets, width) + np.arange(total)
    grid.flat[cells] = np.repeat(value, width)


def _legend(width: int) -> list[str]:
    """The key, wrapped between entries so that no line is wider than ``width``."""
    lines = [""]
    for entry in ("F forward", "B backward", "I input-grad", "W weight-grad", f"{_PAIR} F&B pair", f"{_IDLE} idle"):
        joined = f"{lines[-1]}  {entry}" if lines[-1] else entry
        if len(joined) <= width or not lines[-1]:
            lines[-1] = joined
        else:
            lines.append(entry)
    return lines
