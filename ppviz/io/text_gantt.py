"""Plain-text Gantt chart for terminals."""

from __future__ import annotations

import math
import textwrap
from typing import NamedTuple

import numpy as np

from ..core.errors import ConfigError
from ..core.result import number_text


#: widest chart drawn; wider asks are refused rather than building huge strings
MAX_WIDTH = 10_000
_IDLE = "·"
_PAIR = "#"
_MERGED = ":"
#: times that land on a column edge only up to rounding (3 × 0.1 × 10) count as on it, so that
#: an op ending there is not taken to reach into the next column
_EDGE = 1e-6
#: the note's suggested width is checked by drawing it only up to this many cells (p × columns)
_CHECKED_CELLS = 10_000_000


def text_gantt(result, width: int = 80, *, widen: str = "width={}") -> str:
    """One row per device: each op its kind letter (``#`` for an F&B pair) over the columns of its
    time span, labelled with its microbatch (``F12``) where the label fits.

    A column shows an op's letter where that op covers the column's middle, or is the only op
    in it; a column that an op narrower than a column shares with other ops shows ``:``, never one
    op's letter, and a note under the chart then says how long a column is and which width
    shows every op (``widen`` words that width, e.g. ``"--width {}"``). Touching ops of one
    kind are labelled only if every one of them has room for its label, so a letter without a
    label is never taken for the end of its labelled neighbour. Ops that take no time have no
    columns and are not drawn."""
    if isinstance(width, bool) or not isinstance(width, int) or not 20 <= width <= MAX_WIDTH:
        raise ConfigError("width", width, f"give a whole number of columns from 20 to {MAX_WIDTH}")
    p = result.devices
    label = [f"dev {d} " for d in range(p)]
    lw = max(len(s) for s in label)
    span = result.makespan or 1.0
    ops = _drawn_ops(result)
    drawn = _fit(ops, span, p, _room(width, lw))
    cols = drawn.grid.shape[1]
    end = f"{span:g}"
    room = cols - len(end) - 1
    # the labels hold their trailing space, so the axis starts right under the rows' first column
    axis = " " * lw + (f"0{'':{room}}{end}" if room >= 1 else end.rjust(cols))
    lines = [label[d].ljust(lw) + drawn.grid[d].tobytes().decode("utf-32-le") for d in range(p)]
    notes = _merge_note(result, ops, span, p, lw, drawn.scale, widen, width) if drawn.merged else []
    return "\n".join(lines + [axis] + notes + _legend(width))


def _room(width: int, lw: int) -> int:
    return max(1, width - lw - 1)


def _drawn_ops(result) -> dict[str, np.ndarray]:
    """The ops drawn: every op that takes time but the first of a pair, whose slot its second op
    draws (a pair is one ``#`` slot, labelled with its backward's microbatch)."""
    o = result.ops
    drawn = ~result.program.pair & (o.end > o.start)
    kind = np.where(o.pair, _PAIR, o.kind)[drawn]
    microbatch = o.microbatch[drawn].astype(np.int64)
    digits = 1 + np.sum(microbatch[:, None] >= 10 ** np.arange(1, 11), axis=1)
    return {"device": o.device[drawn].astype(np.int64), "start": o.start[drawn], "end": o.end[drawn],
            "kind": kind, "microbatch": microbatch, "label_width": 1 + digits}


class _Drawn(NamedTuple):
    grid: np.ndarray  # code points, one row per device
    scale: float  # columns per time unit
    labelled: int  # ops drawn with their microbatch
    merged: int  # columns shown as ``:``


def _fit(ops: dict, span: float, p: int, room: int) -> _Drawn:
    """The chart at the best scale: whole columns per time unit when the chart fits (equal ops
    equally wide, so labels line up), unless filling the width merges fewer ops or labels more."""
    full = room / span
    scales = [full] if span > room else [float(room // span), full]
    best = None
    for scale in scales:
        drawn = _draw(ops, scale, p, min(room, max(1, math.ceil(span * scale - _EDGE))))
        if best is None or (drawn.merged, -drawn.labelled) < (best.merged, -best.labelled):
            best = drawn
    return best


def _draw(ops: dict, scale: float, p: int, cols: int) -> _Drawn:
    grid = np.full((p, cols), ord(_IDLE), "<u4")
    flat = grid.reshape(-1)
    start, end = ops["start"] * scale, ops["end"] * scale
    row = ops["device"] * cols
    # an op's own columns are those whose middle it covers (the columns of the chart when every
    # op is wide); a device's ops do not overlap in time, so their own columns do not overlap
    first = np.clip(np.rint(start), 0, cols).astype(np.int64)
    last = np.clip(np.rint(end), 0, cols).astype(np.int64)
    narrow = last <= first
    # the columns an op reaches into at all
    lo = np.clip(np.floor(start + _EDGE), 0, cols - 1).astype(np.int64)
    hi = np.clip(np.ceil(end - _EDGE), lo + 1, cols).astype(np.int64)
    ops_in = np.bincount(_cells(row + lo, hi - lo), minlength=flat.size)
    narrow_in = np.bincount(_cells((row + lo)[narrow], (hi - lo)[narrow]), minlength=flat.size)
    merged = (ops_in >= 2) & (narrow_in >= 1)

    # a narrow op alone in its columns keeps its letter there; elsewhere it is part of a ``:``
    first = np.where(narrow, lo, first)
    last = np.where(narrow, hi, last)
    letter = ops["kind"].astype("<U1").view("<u4")
    _fill(flat, row + first, last - first, letter)
    flat[merged] = ord(_MERGED)

    # what is left of each op as letters: only its edge columns can have been merged (its
    # inner columns lie wholly within it)
    first = first + merged[row + first]
    last = last - merged[row + np.maximum(last - 1, 0)]
    shown = last > first
    fits = ~narrow & (last - first >= ops["label_width"])
    dev, first, last, kind, fits = ops["device"][shown], first[shown], last[shown], letter[shown], fits[shown]
    mb, label_width = ops["microbatch"][shown], ops["label_width"][shown]
    order = np.lexsort((first, dev))
    dev, first, last, kind, fits = dev[order], first[order], last[order], kind[order], fits[order]
    mb, label_width = mb[order], label_width[order]
    touching = np.zeros(len(dev), bool)
    touching[1:] = (dev[1:] == dev[:-1]) & (first[1:] == last[:-1]) & (kind[1:] == kind[:-1])
    run = np.cumsum(~touching) - 1
    unlabellable = np.bincount(run, weights=~fits, minlength=run[-1] + 1 if len(run) else 0)
    labelled = fits & (unlabellable[run] == 0)

    # labels: the kind letter, then the microbatch's digits
    mb, digits, at = mb[labelled], label_width[labelled] - 1, (dev * cols + first)[labelled] + 1
    for k in range(int(digits.max(initial=0))):  # the k-th digit from the left of every label that has one
        has = digits > k
        value = mb[has] // 10 ** (digits[has] - 1 - k) % 10
        flat[at[has] + k] = ord("0") + value.astype("<u4")
    return _Drawn(grid, scale, int(labelled.sum()), int(merged.sum()))


def _cells(at: np.ndarray, width: np.ndarray) -> np.ndarray:
    """The flat indices at[i] : at[i] + width[i] for every i, concatenated."""
    width = np.maximum(width, 0)
    total = int(width.sum())
    offsets = np.cumsum(width) - width
    return np.repeat(at - offsets, width) + np.arange(total)


def _fill(flat: np.ndarray, at: np.ndarray, width: np.ndarray, value: np.ndarray) -> None:
    """flat[at[i] : at[i] + width[i]] = value[i] for every i, at once."""
    flat[_cells(at, width)] = np.repeat(value, np.maximum(width, 0))


def _merge_note(result, ops: dict, span: float, p: int, lw: int, scale: float, widen: str,
                width: int) -> list[str]:
    length = number_text(1 / scale)
    unit = result.config.time_unit or ("time unit" if length == "1" else "time units")
    need = _width_showing_every_op(ops, span, p, lw)
    # an option and its value stay on one line when the note wraps
    option = widen.format(MAX_WIDTH if need is None else need).replace(" ", "\0")
    hint = f"{option} shows each op" if need is not None else f"up to {option} shows more"
    lines = textwrap.wrap(f"{_MERGED} several ops in a column of {length} {unit}; {hint}", width,
                          break_on_hyphens=False, break_long_words=False)
    return [line.replace("\0", " ") for line in lines]


def _width_showing_every_op(ops: dict, span: float, p: int, lw: int) -> int | None:
    """The narrowest chart with every op at least a column wide (checked by drawing it, for
    rounding, where that is cheap); None beyond ``MAX_WIDTH``."""
    shortest = float(np.min(ops["end"] - ops["start"]))
    least = lw + 1 + math.ceil(span / shortest - _EDGE)
    for width in (least, least + 1, least + 2):
        if width > MAX_WIDTH:
            return None
        if p * _room(width, lw) > _CHECKED_CELLS:
            return least
        if not _fit(ops, span, p, _room(width, lw)).merged:
            return width
    return None


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
