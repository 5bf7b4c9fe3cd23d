"""Plain-text Gantt chart for terminals, in the op-kind colours of the widget where asked."""

from __future__ import annotations

import math
import textwrap
from typing import NamedTuple

import numpy as np

from ..core.errors import ConfigError
from ..core.numbers import number
from ..core.step import TAIL_KINDS
from ..core.style import SHADE_ORDER, SLOT_OF, SLOTS, STYLE, ink, kind_paints, rgb


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
#: a run whose ops are so short beside it that a readable window would be under this share of it
#: (f = 1e-12 beside b = 1) is drawn whole, columns merged: a thousand windows show nothing whole
_LEAST_WINDOW = 1e-3
#: the letter of each kind drawn, and its colour slot; a cell's paint is 1 + slot · shades + shade
_LETTERS = {"F": "F", "B": "B", "I": "I", "W": "W", "S": "S", "T": "T", "F&B": _PAIR}
_SLOT_INDEX = {letter: SLOTS.index(SLOT_OF[kind]) for kind, letter in _LETTERS.items()}
_SHADES = len(SHADE_ORDER)
#: a device's data-parallel tail after its last op (Config.step), a character per part; its paints
#: follow the ops' (1 + slots · shades + the part's index). A reduction overlapped with the last
#: backwards shows only where it runs past them: a row has one character per column.
_TAIL = dict(zip(TAIL_KINDS, ("~", "o", "^")))
_TAIL_PAINT = 1 + len(SLOTS) * _SHADES
#: a tail part is never labelled: no label fits it
_UNLABELLED = 1 << 30
#: colour depths a terminal may take: xterm's 256 colours, or 24-bit ("truecolor")
COLORS = ("256", "truecolor")
_RESET = "\x1b[0m"


class Hints(NamedTuple):
    """How the notes under a chart word the ways to see more of it: a width (``{}`` the columns),
    a window (``{}`` its start and end) and the whole run; Python's keywords unless the caller
    (the command line) gives its own options."""

    width: str = "width={}"
    window: str = "window=({}, {})"
    whole: str = "window=(0, None)"


def text_gantt(result, width: int = 80, *, window=None, color: str | None = None, hints: Hints = Hints()) -> str:
    """One row per device: each op its kind letter (``#`` for an F&B pair) over the columns of its
    time span, labelled with its microbatch (``F12``) where the label fits.

    A column shows an op's letter where that op covers the column's middle, or is the only op
    in it; a column that an op narrower than a column shares with other ops shows ``:``, never one
    op's letter. When the whole run fits the width that way without such columns, the chart is the
    whole run; otherwise it is a window from 0 at the scale that labels the most ops with none
    merged, and a note under it says which span it shows and how to see the next (``hints``).
    ``window`` = (start, end) draws that span instead (either may be None: the run's start or end),
    merging where it must; a note then says how long a column is and which width shows every op.
    Touching ops of one kind are labelled only if every one of them has room for its label, so
    a letter without a label is never taken for the end of its labelled neighbour. Ops that take
    no time have no columns and are not drawn. ``color`` (one of :data:`COLORS`) paints each op in
    the widget's colours for its kind and microbatch, for a terminal."""
    if isinstance(width, bool) or not isinstance(width, int) or not 20 <= width <= MAX_WIDTH:
        raise ConfigError("width", width, f"give a whole number of columns from 20 to {MAX_WIDTH}")
    if color is not None and color not in COLORS:
        raise ConfigError("color", color, f"give None (no colour) or one of {', '.join(map(repr, COLORS))}")
    p = result.devices
    label = [f"dev {d} " for d in range(p)]
    lw = max(len(s) for s in label)
    span = result.step_end or 1.0  # to a training step's end, after every tail
    start, end, ops, drawn = chart(result, width, window)
    # the windows before and after are as long as the one asked for, though the run ends in it
    length = end - start if window is None or window[1] is None else max(end, float(window[1])) - start
    cols = drawn.grid.shape[1]
    left, right = number(start), number(end)
    gap = cols - len(left) - len(right)
    # the labels hold their trailing space, so the axis starts right under the rows' first column;
    # an end wider than the rows (11,000,000,000,000 over 13 columns) reaches left under the labels
    axis = " " * lw + f"{left}{'':{gap}}{right}" if gap >= 1 else \
        (" " * lw + right.rjust(cols) if len(right) <= cols else right.rjust(width - 1))
    paint = _palette(color)
    lines = [label[d].ljust(lw) + _painted(drawn.grid[d].tobytes().decode("utf-32-le"), drawn.paint[d], paint)
             for d in range(p)]
    unit = result.config.time_unit
    notes = []
    if drawn.merged:
        notes += _merge_note(unit, ops, end - start, p, lw, drawn.scale, hints, width)
    if start > 0 or end < span:
        notes += _window_note(unit, start, end, length, span, hints, width)
    vocab = bool(np.isin(result.ops.kind, ("S", "T")).any())
    tail = [kind for kind in TAIL_KINDS if np.any(ops["kind"] == _TAIL[kind])]
    return "\n".join(lines + [axis] + notes + _legend(width, paint, vocab, tail, result.config.step))


def chart(result, width: int, window=None) -> tuple[float, float, dict, _Drawn]:
    """(start, end, the ops in it, the grid) of the chart :func:`text_gantt` draws ``width``
    columns wide: the whole run, the window asked for, or the readable window chosen."""
    p = result.devices
    room = _room(width, len(f"dev {p - 1} "))
    span = result.step_end or 1.0  # to a training step's end, after every tail
    ops = _drawn_ops(result)
    if window is None:
        drawn = _fit(ops, span, p, room)
        if not drawn.merged:
            return 0.0, span, ops, drawn
        readable = _readable_window(ops, span, p, room)
        if readable is None:
            return 0.0, span, ops, drawn
        start, end, drawn = readable
    else:
        start, end = checked_window(window, span)
        drawn = _fit(_clipped(ops, start, end), end - start, p, room)
    return start, end, _clipped(ops, start, end), drawn


def checked_window(window, span: float) -> tuple[float, float]:
    """``window`` as (start, end) within a run of ``span``, or a ConfigError saying what is accepted:
    a pair of times (None for the run's start or end), the start before the end and the run's."""
    accepted = (f"give (start, end) in the run's time unit with 0 <= start < end, start before the run's end "
                f"{number(span)} (None for the run's start or end; an end past it stops there)")
    if not isinstance(window, (tuple, list)) or len(window) != 2:
        raise ConfigError("window", window, accepted)
    start, end = window
    for x in (start, end):
        if x is not None and (isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x)):
            raise ConfigError("window", window, accepted)
    start = 0.0 if start is None else float(start)
    end = span if end is None else min(float(end), span)
    if not 0 <= start < end:
        raise ConfigError("window", window, accepted)
    return start, end


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
    slot = np.vectorize(_SLOT_INDEX.__getitem__, otypes=[np.int64])(kind) if len(kind) else np.zeros(0, np.int64)
    # adjacent microbatches far apart in shade, as in the widget (a segment takes its microbatch's)
    shade = np.asarray(SHADE_ORDER)[microbatch // result.program.segments % _SHADES]
    ops = {"device": o.device[drawn].astype(np.int64), "start": o.start[drawn], "end": o.end[drawn],
           "kind": kind, "microbatch": microbatch, "label_width": 1 + digits,
           "paint": (1 + slot * _SHADES + shade).astype("<u1")}
    # each tail part after its device's last op, as one more "op" of its own character
    t = result.tails
    start = np.maximum(t.start, result.last_op_end[t.device]) if len(t) else np.zeros(0)
    after = t.end > start
    if not after.any():
        return ops
    kinds = np.asarray(t.kind, dtype=object)[after]
    tail = {"device": t.device[after].astype(np.int64), "start": start[after], "end": t.end[after],
            "kind": np.array([_TAIL[k] for k in kinds]), "microbatch": np.zeros(int(after.sum()), np.int64),
            "label_width": np.full(int(after.sum()), _UNLABELLED),
            "paint": np.array([_TAIL_PAINT + TAIL_KINDS.index(k) for k in kinds], "<u1")}
    order = np.lexsort((np.concatenate([ops["start"], tail["start"]]), np.concatenate([ops["device"], tail["device"]])))
    return {key: np.concatenate([ops[key], tail[key]])[order] for key in ops}


def _clipped(ops: dict, start: float, end: float) -> dict[str, np.ndarray]:
    """The ops within [start, end], cut at its edges and timed from ``start``; slivers that only
    rounding puts inside (an op ending at ``start`` + 1e-15) are left out."""
    if start <= 0 and end >= float(ops["end"].max(initial=0.0)):
        return ops
    lo, hi = np.clip(ops["start"], start, end), np.clip(ops["end"], start, end)
    keep = hi - lo > 1e-9 * max(end - start, abs(end))
    out = {key: value[keep] for key, value in ops.items()}
    out["start"], out["end"] = lo[keep] - start, hi[keep] - start
    return out


class _Drawn(NamedTuple):
    grid: np.ndarray  # code points, one row per device
    paint: np.ndarray  # per cell: 0 unpainted, else 1 + colour slot · shades + microbatch shade
    scale: float  # columns per time unit
    shown: int  # ops drawn with a letter of their own
    labelled: int  # of them, those drawn with their microbatch
    merged: int  # columns shown as ``:``


def _fit(ops: dict, span: float, p: int, room: int) -> _Drawn:
    """The chart at the best scale: whole columns per time unit when the chart fits (equal ops
    equally wide, so labels line up), unless filling the width merges fewer ops or labels more."""
    full = room / span
    scales = [full] if span > room else [float(room // span), full]
    drawn = (_draw(ops, scale, p, min(room, max(1, math.ceil(span * scale - _EDGE)))) for scale in scales)
    return min(drawn, key=lambda d: (d.merged, -d.labelled))  # the first of equals


def _readable_window(ops: dict, span: float, p: int, room: int) -> tuple[float, float, _Drawn] | None:
    """(start, end, drawn) of the window from 0 to draw when the whole run does not fit: of the
    windows with the fewest columns merged (none, but for rounding), the longest in which at least
    half the ops drawn carry their microbatch (a letter alone says less: which op is it?), else the
    one that labels the most. The lengths tried are what the width holds with the shortest op k
    columns wide, for each k up to the widest label, rounded down to two significant digits (so
    that their multiples, the next windows, are short to type). None when each would be under
    :data:`_LEAST_WINDOW` of the run."""
    shortest = float(np.min(ops["end"] - ops["start"]))
    tried = []
    labels = ops["label_width"][ops["label_width"] < _UNLABELLED]
    for k in range(1, int(labels.max(initial=1)) + 1):
        fits = room * shortest / k
        if fits >= _LEAST_WINDOW * span * 1.1:  # (rounded down to two digits, still over the least)
            length = min(span, _two_digits_below(fits))
            tried.append((length, _fit(_clipped(ops, 0.0, length), length, p, room)))
    if not tried:
        return None
    fewest = min(drawn.merged for _, drawn in tried)
    tried = [(length, drawn) for length, drawn in tried if drawn.merged == fewest]
    readable = [(length, drawn) for length, drawn in tried if 2 * drawn.labelled >= drawn.shown]
    length, drawn = readable[0] if readable else max(tried, key=lambda t: t[1].labelled)
    return 0.0, length, drawn


def _two_digits_below(x: float) -> float:
    """The largest number of two significant digits at most ``x`` (> 0): 18.5 → 18, 0.377 → 0.37."""
    exponent = math.floor(math.log10(x)) - 1
    mantissa = math.floor(x / 10.0 ** exponent + 1e-9)
    value = float(f"{mantissa}e{exponent}")
    return value if value <= x else float(f"{mantissa - 1}e{exponent}")


def _draw(ops: dict, scale: float, p: int, cols: int) -> _Drawn:
    grid = np.full((p, cols), ord(_IDLE), "<u4")
    paint = np.zeros((p, cols), "<u1")
    flat, painted = grid.reshape(-1), paint.reshape(-1)
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
    _fill(painted, row + first, last - first, ops["paint"])
    flat[merged] = ord(_MERGED)
    painted[merged] = 0

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
    return _Drawn(grid, paint, scale, int(shown.sum()), int(labelled.sum()), int(merged.sum()))


def _cells(at: np.ndarray, width: np.ndarray) -> np.ndarray:
    """The flat indices at[i] : at[i] + width[i] for every i, concatenated."""
    width = np.maximum(width, 0)
    total = int(width.sum())
    offsets = np.cumsum(width) - width
    return np.repeat(at - offsets, width) + np.arange(total)


def _fill(flat: np.ndarray, at: np.ndarray, width: np.ndarray, value: np.ndarray) -> None:
    """flat[at[i] : at[i] + width[i]] = value[i] for every i, at once."""
    flat[_cells(at, width)] = np.repeat(value, np.maximum(width, 0))


def _units(unit: str | None, amount: str) -> str:
    """``amount`` with the run's time unit, or in time units for a unitless run."""
    return f"{amount} {unit or ('time unit' if amount == '1' else 'time units')}"


def _typed(x: float) -> str:
    """A time as an option's value: every digit it has (a window's edges are short decimals), no
    thousands separator."""
    return number(x, digits=12).replace(",", "")


def _one_line(text: str, width: int) -> list[str]:
    """``text`` wrapped to ``width``, an option and its value (joined by NULs) kept on one line
    where that line fits."""
    text = " ".join(word.replace("\0", " ") if len(word) > width else word for word in text.split(" "))
    lines = textwrap.wrap(text, width, break_on_hyphens=False, break_long_words=False)
    return [line.replace("\0", " ") for line in lines]


def _merge_note(unit: str | None, ops: dict, span: float, p: int, lw: int, scale: float, hints: Hints,
                width: int) -> list[str]:
    need = _width_showing_every_op(ops, span, p, lw)
    option = hints.width.format(MAX_WIDTH if need is None else need).replace(" ", "\0")
    hint = f"{option} shows each op" if need is not None else f"up to {option} shows more"
    return _one_line(f"{_MERGED} several ops in a column of {_units(unit, number(1 / scale))}; {hint}", width)


def _window_note(unit: str | None, start: float, end: float, length: float, span: float, hints: Hints,
                 width: int) -> list[str]:
    """Which span the chart shows, and the options that show the one before and the next (each
    ``length`` long) and the whole run."""
    option = (lambda a, b: hints.window.format(_typed(a), _typed(b)).replace(" ", "\0"))
    ways = []
    if end < span:
        ways.append(f"{option(end, end + length)} the next")
    if start > 0:
        ways.append(f"{option(max(0.0, start - length), start)} the one before")
    ways.append(f"{hints.whole.replace(' ', chr(0))} the whole run")
    return _one_line(f"time {number(start)} to {number(end)} of {_units(unit, number(span))} shown; "
                     f"{', '.join(ways)}", width)


def _width_showing_every_op(ops: dict, span: float, p: int, lw: int) -> int | None:
    """The narrowest chart with every op at least a column wide (checked by drawing it, for
    rounding, where that is cheap); None beyond ``MAX_WIDTH``."""
    shortest = float(np.min(ops["end"] - ops["start"]))
    if not span / shortest < MAX_WIDTH:  # (infinite for an op of 5e-324 beside one of 1)
        return None
    least = lw + 1 + math.ceil(span / shortest - _EDGE)
    for width in (least, least + 1, least + 2):
        if width > MAX_WIDTH:
            return None
        if p * _room(width, lw) > _CHECKED_CELLS:
            return least
        if not _fit(ops, span, p, _room(width, lw)).merged:
            return width
    return None


def _palette(color: str | None) -> list[str] | None:
    """The escape that starts each paint (index as in ``_Drawn.paint``; 0 unpainted), or None for
    no colour: the light theme's op-kind colours (the widget's default) as the background, the
    widget's ink on them as the foreground."""
    if color is None:
        return None
    paints = kind_paints(STYLE["themes"]["light"]["kinds"], STYLE["themes"]["light"]["shadeSteps"])
    out = [""]
    for slot in SLOTS:
        for shade in range(_SHADES):
            fill, on = paints[slot, shade]
            out.append(f"\x1b[{_sgr(38, on, color)};{_sgr(48, fill, color)}m")
    theme = STYLE["themes"]["light"]
    for fill in (theme["tailReduce"], theme["tailOptimizer"], theme["tailGather"]):  # TAIL_KINDS' order
        out.append(f"\x1b[{_sgr(38, ink(rgb(fill)), color)};{_sgr(48, fill, color)}m")
    return out


def _sgr(plane: int, colour: str, color: str) -> str:
    """The select-graphic-rendition parameters of ``colour`` as foreground (38) or background (48)."""
    r, g, b = rgb(colour)
    if color == "truecolor":
        return f"{plane};2;{r};{g};{b}"
    return f"{plane};5;{_xterm256((r, g, b))}"


def _xterm256(colour: tuple[int, int, int]) -> int:
    """The nearest of xterm's 256 colours: its 6 × 6 × 6 cube (16–231) or its 24 greys (232–255)."""
    levels = (0, 95, 135, 175, 215, 255)
    cube = [min(range(6), key=lambda i: abs(levels[i] - v)) for v in colour]
    grey = min(range(24), key=lambda i: abs(8 + 10 * i - sum(colour) / 3))
    candidates = [(16 + 36 * cube[0] + 6 * cube[1] + cube[2], tuple(levels[i] for i in cube)),
                  (232 + grey, (8 + 10 * grey,) * 3)]
    return min(candidates, key=lambda c: sum((a - b) ** 2 for a, b in zip(c[1], colour)))[0]


def _painted(text: str, paint: np.ndarray, palette: list[str] | None) -> str:
    """A row's text with each run of equally painted cells in its colours (unpainted cells plain)."""
    if palette is None:
        return text
    edges = [0, *(np.flatnonzero(np.diff(paint)) + 1).tolist(), len(text)]
    return "".join(f"{palette[paint[a]]}{text[a:b]}{_RESET}" if paint[a] else text[a:b]
                   for a, b in zip(edges, edges[1:]))


def _legend(width: int, palette: list[str] | None, vocab: bool = False, tail=(), step=None) -> list[str]:
    """The key, wrapped between entries so that no line is wider than ``width``; with colour, each
    kind's letter in its colour. The vocabulary passes are named where the run has them, and the
    tail's parts drawn (``tail``, named by the ``step``) after the rest."""
    lines, shown = [""], [""]
    names = {"reduce": f"DP {step.reduction}" if step is not None else "", "optimizer": "optimizer",
             "gather": "DP all-gather"}
    entries = [("F", "forward"), ("B", "backward"), ("I", "input-grad"), ("W", "weight-grad"), (_PAIR, "F&B pair")]
    if vocab:
        entries += [("S", "vocab logits"), ("T", "vocab grads")]
    entries += [(_IDLE, "idle")] + [(_TAIL[kind], names[kind]) for kind in tail]
    for letter, what in entries:
        entry = f"{letter} {what}"
        tail_index = next((i for i, kind in enumerate(TAIL_KINDS) if _TAIL[kind] == letter), None)
        key = letter if palette is None or letter == _IDLE else \
            f"{palette[_TAIL_PAINT + tail_index]}{letter}{_RESET}" if tail_index is not None else \
            f"{palette[1 + _SLOT_INDEX[letter] * _SHADES]}{letter}{_RESET}"
        if len(f"{lines[-1]}  {entry}") <= width or not lines[-1]:
            lines[-1], shown[-1] = (f"{lines[-1]}  {entry}", f"{shown[-1]}  {key} {what}") if lines[-1] else \
                (entry, f"{key} {what}")
        else:
            lines.append(entry)
            shown.append(f"{key} {what}")
    return shown
