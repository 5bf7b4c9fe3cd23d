"""The static Gantt chart: the widget's twin in Altair, for SVG/PNG export."""

from __future__ import annotations

import dataclasses
import textwrap
from typing import Any

import altair as alt
import numpy as np

from ..core.closed_form import caveat
from ..core.engine import as_run
from ..core.errors import ConfigError, checked_arguments
from ..core.numbers import number, share
from ..core.result import Result
from ..core.step import TAIL_KINDS
from ..core.style import SHADE_ORDER, SLOT_OF, SLOTS, ink, kind_paints, rgb
from .inputs import ACTIVATION_UNIT, MAX_ROWS, UNIT_NOTE, memory_unit, summarize_steps, time_title
from .offline import shown_offline
from .style import LABEL_SIZE, SMALL_SIZE, TEXT_SIZE, THEMES, TICK_SIZE, TITLE_SIZE

# Gantt chart ----------------------------------------------------------------------------------
#
# The static twin of the widget (js/src/theme.ts, js/src/draw.ts): the same colours, microbatch
# shades, hatched idle and labels, so an exported picture looks like what the notebook showed.

@dataclasses.dataclass(frozen=True)
class _GanttTheme:
    background: str
    foreground: str
    muted: str
    axis: str
    grid: str  # drawn at 7 % opacity
    hatch: str
    hatch_opacity: float
    idle: str
    lane: str
    kinds: tuple[str, str, str, str]  # F, I/B, W, F&B
    steps: tuple[float, float, float, float]  # how far each microbatch shade is mixed toward white
    memory: str
    memory_opacity: float
    closed: str
    over: str  # a device over its memory capacity
    over_fill: str
    static: str  # the static memory (parameters, gradients, optimizer state) under the activations
    transfers: tuple[str, str, str]  # in the lane under a row: activation, gradient, host copy
    rail: str  # the empty lane
    tail: tuple[str, str, str]  # a device's data-parallel tail: reduction, optimizer step, gather (TAIL_KINDS)
    tp: str  # the band inside a bar that is its share of tensor/expert-parallel traffic


def _gantt_theme(t) -> _GanttTheme:
    return _GanttTheme(t["background"], t["foreground"], t["muted"], t["axis"], t["foreground"], t["muted"],
                       t["hatchOpacity"], t["laneIdle"], t["surface"], tuple(t["kinds"]), tuple(t["shadeSteps"]),
                       t["memoryLine"], t["memoryOpacity"], t["closedForm"], t["oom"], t["oomFill"], t["memoryStatic"],
                       (t["transferF"], t["transferB"], t["hostCopy"]), t["transferRail"],
                       (t["tailReduce"], t["tailOptimizer"], t["tailGather"]), t["tpShare"])


GANTT_THEMES = {name: _gantt_theme(t) for name, t in THEMES.items()}

_KINDS = ("F", "B", "I", "W", "S", "T", "F&B")
_BAR_INSET_PX = 3
_GAP_MIN_PX = 4  # bars at least this wide keep a one-pixel gap to the next, as in the widget
_HATCH_PX = 4.5
_DIGIT_PX, _LABEL_PAD_PX = 6.6, 6  # an 11 px bold digit, and the room a label needs around it


def _paints(theme: _GanttTheme, lanes: bool = False, tail: bool = False) -> dict[str, tuple[str, str]]:
    """Paint key (``"F0"``..``"F&B3"``: colour slot and microbatch shade, and ``"idle"``; with
    ``lanes``, the lane's paints; with ``tail``, the data-parallel tail's parts and the TP share's
    band) → (fill, ink of a label on it)."""
    out = {f"{slot}{shade}": paint for (slot, shade), paint in kind_paints(theme.kinds, theme.steps).items()}
    out["idle"] = (theme.idle, theme.foreground)
    for key, colour in zip(_LANE_PAINTS, theme.transfers if lanes else ()):
        out[key] = (colour, theme.foreground)
    for key, colour in zip(TAIL_KINDS, theme.tail if tail else ()):
        out[key] = (colour, ink(rgb(colour)))
    if tail:
        out["tp"] = (theme.tp, theme.foreground)
    return out


#: the lane under each row (transfers between devices, offload's host copies), as in the widget
_LANE_PAINTS = ("activation", "gradient", "host copy")
#: share of a row the lane takes, and the least row (px) that keeps one
_LANE_SHARE, _LANE_MIN_ROW = 0.3, 14


def _lane_bands(r: Result) -> int:
    """The lane's bands, as in the widget: 2 (a half for what the device sends or offloads, a half
    for what it receives or reloads), or 4 when the run has both transfers and host copies (each half
    split: the transfers outside, the host copies inside, as a send and an offload run at once)."""
    return 4 if len(r.transfers) and len(r.host_copies) else 2


def _lane_pieces(r: Result, width: int, window: tuple[float, float]) -> list[dict]:
    """The lane under each device's row as the widget paints it: each band (``_lane_bands``; a
    piece's ``half``, 0 or 1, and with four bands its ``band``, 0 to 3 from the top) one pixel
    column at a time (a later transfer over an earlier one), drawn as runs of columns of one paint;
    in columns of 2, 4, … pixels where that many runs would pass the row limit."""
    columns = 1
    while True:
        pieces = _painted(r, max(1, width // columns), window)
        if len(pieces) <= MAX_ROWS or columns >= width:
            return pieces
        columns *= 2


def _painted(r: Result, width: int, window: tuple[float, float]) -> list[dict]:
    """The lane's runs when the time axis (the window [t0, t1]) is ``width`` columns."""
    t, h = r.transfers, r.host_copies
    t0, t1 = window
    px = width / (t1 - t0)
    bands = _lane_bands(r)
    split = bands == 4
    # (device, band, start, end, paint) of every piece, in the order the widget paints them
    kind = (np.asarray(t.kind) == "B").astype(np.int64)
    items = [(t.src, 0, t.start, t.end, kind), (t.dst, 3 if split else 1, t.start, t.end, kind)]
    offload = np.asarray(h.kind) == "offload"
    items += [(h.device[offload], 1 if split else 0, h.start[offload], h.end[offload], np.full(int(offload.sum()), 2)),
              (h.device[~offload], 2 if split else 1, h.start[~offload], h.end[~offload],
               np.full(int((~offload).sum()), 2))]
    columns = np.zeros((r.devices, bands, width), np.int8)  # 0: empty, else the paint + 1
    for device, band, start, end, paint in items:
        inside = (np.asarray(end) > t0) & (np.asarray(start) < t1)
        device, start, end, paint = (np.asarray(x)[inside] for x in (device, start, end, paint))
        a = np.clip(np.floor((start - t0) * px).astype(np.int64), 0, width - 1)
        b = np.clip(np.maximum(np.ceil((end - t0) * px).astype(np.int64), a + 1), 1, width)
        for d, x0, x1, k in zip(device.tolist(), a.tolist(), b.tolist(), paint.tolist()):
            columns[d, band, x0:x1] = k + 1
    pieces = []
    for cell, row in enumerate(columns.reshape(-1, width)):
        edges = np.flatnonzero(np.diff(row, prepend=0, append=0))
        device, band = divmod(cell, bands)
        where = {"device": device, "half": band * 2 // bands} | ({"band": band} if split else {})
        for x0, x1 in zip(edges[:-1].tolist(), edges[1:].tolist()):
            if row[x0]:
                pieces.append(where | {"start": t0 + x0 / px, "end": t0 + x1 / px, "paint": _LANE_PAINTS[row[x0] - 1]})
    return pieces


def _legend_layout(labels: list[str], width: int) -> dict:
    """The legend's options where its ``labels`` would not fit one line across ``width`` px (a
    step's tail adds long ones): the most columns they fit in, each as wide as its widest entry
    (its square, its text of 12 px at ~6.6 px a character, the padding after it), and labels as
    long as the chart is wide (Vega cuts them at 160 px); none where they fit."""
    size = [14 + 6 + len(text) * 6.6 + 18 for text in labels]
    if sum(size) <= width:
        return {}
    columns = next((c for c in range(len(labels) - 1, 1, -1)
                    if sum(max(size[k::c]) for k in range(c)) <= width), 1)
    return {"columns": columns, "labelLimit": width}


def _whole(value, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not low <= value <= high:
        raise ConfigError(field, value, f"give a whole number from {low} to {high}")
    return int(value)


@dataclasses.dataclass
class _Pieces:
    """Each device's time split exactly into ops drawn one by one, runs of merged narrow ops,
    and idle gaps."""

    ops: list[dict]  # one row per slot (an F&B pair is one slot)
    bands: list[dict]  # one row per kind in a run (and its idle, if it swallowed gaps)
    gaps: list[dict]
    runs: int
    merged: int  # slots inside runs
    pixels: int  # runs join pieces narrower than this many pixels
    absorbed: bool  # runs also swallow idle gaps narrower than that


def _gantt_pieces(r: Result, width: int, merge_above: int, window: tuple[float, float] | None = None) -> _Pieces:
    """The pieces of the ops in ``window`` ([t0, t1], all of the run by default) across ``width`` px."""
    program, o = r.program, r.ops
    makespan = r.makespan
    t0, t1 = window or (0.0, r.step_end)
    # the widget draws a pair once, and its second op adds no time
    slot = np.flatnonzero(~np.r_[False, program.pair[:-1]])
    slot = slot[(o.end[slot] > t0) & (o.start[slot] < t1)]
    if not len(slot):
        idle = [{"device": d, "start": t0, "end": min(t1, r.step_end)} for d in range(r.devices)]
        return _Pieces([], [], idle, 0, 0, 1, False)
    dev, s, e = o.device[slot], o.start[slot], o.end[slot]
    kind = o.kind[slot].astype(object)
    kind[program.pair[slot]] = "F&B"
    code = np.zeros(len(slot), np.int64)
    for c, name in enumerate(_KINDS):
        code[kind == name] = c
    n = len(slot)
    # float sums leave ulp-sized gaps between ops that touch: they are not idle time
    eps = 1e-9 * makespan
    same = dev[1:] == dev[:-1]
    gap = s[1:] - e[:-1]
    first = np.flatnonzero(np.r_[True, ~same])
    last = np.r_[first[1:] - 1, n - 1]

    def plan(pixels: int, absorb: bool):
        t = pixels * (t1 - t0) / width
        narrow = (e - s) < t
        joined = same & narrow[:-1] & narrow[1:] & ((gap <= eps) | (absorb & (gap < t)))
        group = np.cumsum(np.r_[True, ~joined]) - 1
        in_run = np.bincount(group)[group] >= 2
        bands = len(np.unique(group[in_run] * len(_KINDS) + code[in_run]))
        if absorb:
            bands += len(np.unique(group[in_run]))  # an idle band per run at most
        gaps = int((same & ~joined & (gap > eps)).sum()) + 2 * r.devices
        return joined, group, in_run, max(int((~in_run).sum()), bands, gaps)

    # While ops are few, none is merged. Otherwise runs of sub-pixel ops that touch are, then
    # (if many small gaps keep the spec too big) runs also swallow sub-pixel gaps, then ever
    # wider runs; the subtitle says which.
    steps = ([(0, False)] if n <= merge_above else []) + [(1, False)]
    pixels = 1
    while pixels <= 2 * width:
        steps.append((pixels, True))
        pixels *= 2
    for pixels, absorb in steps:
        joined, group, in_run, rows = plan(pixels, absorb)
        if rows <= MAX_ROWS:
            break

    ops = []
    for i in np.flatnonzero(~in_run).tolist():
        j = int(slot[i])
        mb = int(o.microbatch[j])
        row = {"device": int(dev[i]), "stage": int(o.stage[j]), "microbatch": mb, "kind": kind[i],
               "start": float(s[i]), "end": float(e[i]), "op": program.action_at(j),
               "paint": f"{SLOT_OF[kind[i]]}{SHADE_ORDER[mb // program.segments % 4]}"}
        if kind[i] == "F&B":
            row["op"] = f"{o.stage[j]}F{mb} & {program.action_at(j + 1)}"
            row["backward_microbatch"] = int(o.microbatch[j + 1])
        ops.append(row)

    bands = []
    members = np.flatnonzero(in_run)
    runs = np.unique(group[members])
    lo = np.searchsorted(group[members], runs)
    hi = np.searchsorted(group[members], runs, side="right")
    for a, b in zip(members[lo].tolist(), (members[hi - 1] + 1).tolist()):
        start, end = float(s[a]), float(e[b - 1])
        times = np.bincount(code[a:b], weights=e[a:b] - s[a:b], minlength=len(_KINDS))
        counts = np.bincount(code[a:b], minlength=len(_KINDS))
        shares = [(k, float(times[c]), int(counts[c])) for c, k in enumerate(_KINDS) if counts[c]]
        idle_time = end - start - float(times.sum())
        if idle_time > eps:
            shares.append(("idle", idle_time, 0))
        total = sum(t for _, t, _ in shares)
        top = 0.0
        for k, t, count in shares:
            bands.append({"device": int(dev[a]), "start": start, "end": end, "kind": k, "time": t, "ops": count,
                          "run_ops": b - a, "top": top, "bottom": top + t / total,
                          "paint": "idle" if k == "idle" else f"{SLOT_OF[k]}0"})
            top += t / total

    between = np.flatnonzero(same & ~joined & (gap > eps))
    end = min(t1, r.step_end)  # a device idles after its tail until the step ends
    spans = list(zip(dev[first].tolist(), [t0] * len(first), s[first].tolist()))
    spans += zip(dev[between].tolist(), e[between].tolist(), s[between + 1].tolist())
    spans += zip(dev[last].tolist(), e[last].tolist(), [end] * len(last))
    spans += [(d, t0, end) for d in sorted(set(range(r.devices)) - set(dev.tolist()))]
    gaps = [{"device": d, "start": a, "end": b} for d, a, b in sorted(spans) if b - a > eps]
    return _Pieces(ops, bands, gaps, len(runs), len(members), pixels, absorb)


def _hatch(gaps: list[dict], px: float, row: float, pad: float, lane_share: float) -> list[dict]:
    """Diagonal strokes filling each idle gap, like the widget's hatch: 45° in pixels, aligned
    across gaps, spaced wider if that is what keeps them within the row limit; above the lane
    (``lane_share`` of the row) when there is one."""
    boxes = np.array([(g["start"] * px, (g["device"] + pad) * row, g["end"] * px,
                       (g["device"] + 1 - pad - lane_share) * row)
                      for g in gaps if (g["end"] - g["start"]) * px >= 2]).reshape(-1, 4)
    if not len(boxes):
        return []
    x0, y0, x1, y1 = boxes.T
    step = _HATCH_PX
    count = np.floor((x1 + y1) / step) - np.ceil((x0 + y0) / step) + 1
    if count.sum() > MAX_ROWS:
        step *= count.sum() / MAX_ROWS
        count = np.floor((x1 + y1) / step) - np.ceil((x0 + y0) / step) + 1
    count = np.maximum(count, 0).astype(np.int64)
    box = np.repeat(np.arange(len(boxes)), count)
    c = (np.ceil((x0 + y0) / step)[box] + np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)) * step
    # the stroke x + y = c from its lower-left to its upper-right end inside the box
    xa = np.maximum(x0[box], c - y1[box])
    xb = np.minimum(x1[box], c - y0[box])
    return [{"x": a / px, "x2": b / px, "y": (c_ - a) / row, "y2": (c_ - b) / row}
            for a, b, c_ in zip(xa.tolist(), xb.tolist(), c.tolist()) if b > a]


def _lane_layers(lanes: list[dict], bands: int, devices: int, span: tuple[float, float], bottom: float, pad: float,
                 th: _GanttTheme, x, y_scale: alt.Scale, color: alt.Color) -> list[alt.Chart]:
    """The rail of each half-lane under the bars, and the lane's pieces on it (in their band)."""
    top, end = bottom + 0.05, 1 - pad / 2  # a thin gap under the bar
    middle = (top + end) / 2
    seam = 0.01  # each half stops this far (of a row) short of the middle: a hairline between them

    def on_half(chart: alt.Chart) -> alt.Chart:
        return chart.transform_calculate(
            link_top=f"datum.device + (datum.half ? {middle + seam} : {top})",
            link_bottom=f"datum.device + (datum.half ? {end} : {middle - seam})")

    def in_band(chart: alt.Chart) -> alt.Chart:
        if bands == 2:
            return on_half(chart)
        # the halves as above, each cut in two bands of equal height
        band = (middle - seam - top) / 2
        tops = [top, top + band, middle + seam, middle + seam + band]
        return chart.transform_calculate(link_top=f"datum.device + {tops}[datum.band]",
                                         link_bottom=f"datum.device + {tops}[datum.band] + {band}")

    y = [alt.Y("link_top:Q", scale=y_scale, axis=None), alt.Y2("link_bottom:Q")]
    rails = [{"device": d, "half": half, "start": span[0], "end": span[1]} for d in range(devices) for half in (0, 1)]
    return [on_half(alt.Chart({"values": rails})).mark_rect(color=th.rail, aria=False).encode(
                x("start:Q"), x2="end:Q", y=y[0], y2=y[1]),
            in_band(alt.Chart({"values": lanes})).mark_rect().encode(
                x("start:Q"), x2="end:Q", y=y[0], y2=y[1], color=color,
                tooltip=[alt.Tooltip("device:O"), alt.Tooltip("paint:N", title="lane"),
                         alt.Tooltip("start:Q", title="busy from", format=".4~g"),
                         alt.Tooltip("end:Q", title="until", format=".4~g")])]


#: the band a reduction overlapped with the last backwards is drawn as, straddling its bars' bottom
#: edge (px above it, px below it); the TP share's band: this share of a bar's height, at its top
_TAIL_BAND_PX = (1.5, 2.5)
_TP_BAND = 0.24
_TEXTURE_PX = 5.0  # stripes and dots of the tail's bars, this far apart


def _tail_rows(r: Result, window: tuple[float, float]) -> list[dict]:
    """Each tail part's pieces in ``window`` (``Result.tails``; ``under``: the stretch a
    reduction runs under its device's ops, drawn as a band, else a bar after them), each with its
    part's exact times (``part_start``, ``part_end``), its collective's own time and its overlap."""
    t, step = r.tails, r.config.step
    if step is None or not len(t):
        return []
    t0, t1 = window
    hidden = t.hidden(r.last_op_end)
    rows = []
    for i in range(len(t)):
        kind, a, b, h = str(t.kind[i]), float(t.start[i]), float(t.end[i]), float(hidden[i])
        split = min(b, a + h)
        for lo, hi, under in ((a, split, True), (split, b, False)):
            if hi > lo and hi > t0 and lo < t1:
                rows.append({"device": int(t.device[i]), "stage": int(t.stage[i]) if kind == "reduce" else None,
                             "part": step.part_name(kind), "paint": kind, "under": under,
                             "start": max(lo, t0), "end": min(hi, t1), "part_start": a, "part_end": b,
                             "duration": b - a, "overlapped": h,
                             "own_time": step.time("reduce", int(t.stage[i])) if kind == "reduce" else b - a})
    return rows


def _tp_rows(r: Result, ops: list[dict]) -> list[dict]:
    """The ops drawn one by one that spend time in tensor/expert-parallel collectives
    (``Result.traffic``), with that time and its share of the op (an F&B pair's overlap is not
    modelled op by op: pairs have none)."""
    if not r.traffic.any():
        return []
    column = {"F": 0, "B": 1, "I": 2, "W": 3}
    rows = []
    for op in ops:
        if op["kind"] not in column:
            continue
        traffic = float(r.traffic[op["stage"], column[op["kind"]]])
        duration = op["end"] - op["start"]
        if traffic > 0 and duration > 0:
            rows.append({"device": op["device"], "of_op": op["op"], "paint": "tp", "start": op["start"], "traffic": traffic,
                         "share": min(1.0, traffic / duration), "tp_end": op["start"] + min(traffic, duration)})
    return rows


def _textures(rows: list[dict], px: float, row: float, top: float, bottom: float) -> tuple[list[dict], list[dict]]:
    """The stripes (\\) over each reduction's bar and the dots over each gather's, as the widget
    draws them (tail.ts), ``_TEXTURE_PX`` apart: (strokes, dots) in time and row units."""
    strokes, dots = [], []
    for piece in rows:
        if piece["under"] or piece["paint"] == "optimizer":
            continue
        x0, x1 = piece["start"] * px, piece["end"] * px
        y0, y1 = (piece["device"] + top) * row, (piece["device"] + bottom) * row
        ink_ = piece["ink"]
        if piece["paint"] == "reduce":
            h = y1 - y0
            c = x0 - h
            while c < x1:  # the stroke from (c, y0) to (c + h, y1), cut to the bar
                ya, yb = max(y0, y0 + x0 - c), min(y1, y0 + x1 - c)
                if yb > ya:
                    strokes.append({"x": (c + ya - y0) / px, "x2": (c + yb - y0) / px, "y": ya / row, "y2": yb / row,
                                    "ink": ink_})
                c += _TEXTURE_PX
        else:
            for j, y in enumerate(np.arange(y0 + _TEXTURE_PX / 2, y1, _TEXTURE_PX).tolist()):
                for x in np.arange(x0 + _TEXTURE_PX / 2 * (1 + j % 2), x1, _TEXTURE_PX).tolist():
                    dots.append({"x": x / px, "y": y / row, "ink": ink_})
    return strokes, dots


def _tail_layers(rows: list[dict], paints: dict, px: float, row: float, pad: float, bottom: float, x, y_scale,
                 color: alt.Color) -> list[alt.Chart]:
    """The tail's bars after each device's ops (textured as in the widget), and the bands of the
    reductions that run under them, with their tooltips."""
    for piece in rows:
        piece["ink"] = paints[piece["paint"]][1]
    below, above = (v / row for v in _TAIL_BAND_PX)
    tooltip = [alt.Tooltip("part:N"), alt.Tooltip("device:O"), alt.Tooltip("stage:Q"),
               alt.Tooltip("part_start:Q", title="start", format=".6~g"),
               alt.Tooltip("part_end:Q", title="end", format=".6~g"),
               alt.Tooltip("duration:Q", format=".6~g"), alt.Tooltip("own_time:Q", title="its own time", format=".6~g"),
               alt.Tooltip("overlapped:Q", title="under the device's ops", format=".6~g")]
    y = alt.Y("tail_top:Q", scale=y_scale, axis=None)
    layers = [alt.Chart({"values": rows}).transform_calculate(
        tail_top=f"datum.device + (datum.under ? {bottom - below} : {pad})",
        tail_bottom=f"datum.device + (datum.under ? {bottom + above} : {bottom})").mark_rect().encode(
        x("start:Q"), x2="end:Q", y=y, y2="tail_bottom:Q", color=color, tooltip=tooltip)]
    strokes, dots = _textures(rows, px, row, pad, bottom)
    if strokes:
        layers.append(alt.Chart({"values": strokes}).mark_rule(strokeWidth=1.2, opacity=0.45, aria=False).encode(
            x("x:Q"), x2="x2:Q", y=alt.Y("y:Q", scale=y_scale, axis=None), y2="y2:Q",
            color=alt.Color("ink:N", scale=None)))
    if dots:
        layers.append(alt.Chart({"values": dots}).mark_circle(size=5, opacity=0.5, aria=False).encode(
            x("x:Q"), y=alt.Y("y:Q", scale=y_scale, axis=None), color=alt.Color("ink:N", scale=None)))
    return layers


@shown_offline
@checked_arguments
def gantt_chart(run, *, memory: bool = True, labels: bool = True, width: int = 900,
                row_height: int | None = None, theme: str = "light",
                merge_above: int = 3000, window=None) -> alt.LayerChart | alt.VConcatChart:
    """A static Gantt chart of one run in the widget's look, for SVG / PNG export and papers.

    One row per device (labelled with its stages and idle share); ops coloured by kind (F blue,
    B and I amber, W green, F&B mauve) and shaded by microbatch, labelled with their microbatch
    where wide enough (``labels``); idle time hatched; the makespan, bubble and peak memory,
    simulated and closed form, in the title; with ``memory`` each device's activation memory
    over time below, on one scale, its closed-form peak dashed.

    ``width`` is the plot's width in pixels, ``row_height`` a device row's (default: by p),
    ``theme`` ``"light"`` or ``"dark"``. Above ``merge_above`` ops (and whenever the spec would
    pass Altair's row limit) each device's consecutive ops narrower than a pixel become runs
    whose stacked bands give each kind's share of the run's time; idle gaps stay exact (if even
    that is too many rows, gaps narrower than a pixel join their run as a grey band, then runs
    widen). The subtitle says when this happened. ``run`` is one run: a Config, Program, Result
    or schedule name.

    ``window`` is the span of time drawn: by default the whole run when its ops are wide enough
    for their labels across ``width``, else (as the widget opens) the span from its start in which
    90 % of them are (:func:`readable_span`), under an overview strip of the whole run with that
    window marked; ``(t0, t1)`` draws that span under the strip, ``"all"`` the whole run without it.
    """
    r = as_run(run)
    if not isinstance(theme, str) or theme not in GANTT_THEMES:
        raise ConfigError("theme", theme, "give 'light' or 'dark'")
    for name, flag in (("memory", memory), ("labels", labels)):
        if not isinstance(flag, (bool, np.bool_)):
            raise ConfigError(name, flag, "give True or False")
    width = _whole(width, "width", 200, 10_000)
    merge_above = _whole(merge_above, "merge_above", 0, MAX_ROWS)
    p = r.devices
    makespan = r.makespan
    if not makespan > 0:
        raise ConfigError("item", r, "give a run whose ops take time (the makespan is 0)")
    t0, t1 = _window(r, window, width)
    overview = (t0, t1) != (0.0, r.step_end)
    # a window's rows keep room for its labels (bars of 12 px), however many devices
    row = int(np.clip(480 // p, 18 if overview else 16, 34)) if row_height is None else \
        _whole(row_height, "row_height", 8, 120)
    th = GANTT_THEMES[theme]
    pieces = _gantt_pieces(r, width, merge_above, (t0, t1))
    px = width / (t1 - t0)
    pad = _BAR_INSET_PX / row if row >= 14 else 0.1
    lanes = _lane_pieces(r, width, (t0, t1)) if (len(r.transfers) or len(r.host_copies)) and row >= _LANE_MIN_ROW \
        else None
    tails = _tail_rows(r, (t0, t1))
    tp = _tp_rows(r, pieces.ops)
    paints = _paints(th, lanes is not None, bool(tails or tp))
    # a bar spans [pad, bottom] of its row; a lane, when drawn, the rest below it
    lane_share = _LANE_SHARE if lanes is not None else 0
    bottom = 1 - pad - lane_share

    time_axis = alt.Axis(title=time_title(r.config), titleColor=th.muted, titleFontWeight="normal",
                         titleFontSize=LABEL_SIZE, labelColor=th.muted, labelFontSize=LABEL_SIZE, domainColor=th.axis,
                         tickColor=th.axis, gridColor=th.grid, gridOpacity=0.07, labelFlush=True)
    # a window's ops that run past its edges are cut there (clamped to the scale's range)
    x_scale = alt.Scale(domain=[t0, t1], nice=False, zero=False, clamp=overview)

    def x(field: str) -> alt.X:
        # every layer names the same axis, so the merged axis keeps it
        return alt.X(field, type="quantitative", scale=x_scale, axis=time_axis)

    y_scale = alt.Scale(domain=[0, p], reverse=True, nice=False, zero=False)
    y = alt.Y("y:Q", scale=y_scale, axis=None)
    bar_y = [alt.Y("device_top:Q", scale=y_scale, axis=None), alt.Y2("device_bottom:Q")]

    def on_row(chart: alt.Chart) -> alt.Chart:
        return chart.transform_calculate(device_top=f"datum.device + {pad}", device_bottom=f"datum.device + {bottom}")

    present = {op["kind"] for op in pieces.ops} | {b["kind"] for b in pieces.bands if b["kind"] != "idle"}
    backward = "B / I backward" if {"B", "I"} <= present else "I backward (inputs)" if "I" in present \
        else "B backward"
    names = {"F0": "F forward", "B0": backward, "W0": "W backward (weights)", "F&B0": "F&B overlapped pair",
             "S0": "S vocabulary pass (logits)", "T0": "T vocabulary pass (gradients)", "idle": "idle (bubble)"}
    if lanes is not None:
        names.update({"activation": "activation transfer", "gradient": "gradient transfer", "host copy": "host copy"})
    if tp:
        names["tp"] = "TP/EP traffic share"
    step = r.config.step
    if step is not None:
        names.update({kind: f"{step.part_name(kind)} (DP tail)" for kind in TAIL_KINDS})
    in_lanes = {piece["paint"] for piece in lanes or ()} | {piece["paint"] for piece in tails} | ({"tp"} if tp else set())
    shown = [key for key in names if key == "idle" or key in in_lanes or any(SLOT_OF[k] + "0" == key for k in present)]
    label_expr = "{" + ", ".join(f"'{k}': '{v}'" for k, v in names.items()) + "}[datum.label]"
    color = alt.Color("paint:N", scale=alt.Scale(domain=list(paints), range=[f for f, _ in paints.values()]),
                      legend=alt.Legend(values=shown, labelExpr=label_expr, title=None, orient="top",
                                        direction="horizontal", symbolType="square", symbolSize=140,
                                        symbolStrokeWidth=0, labelFontSize=TEXT_SIZE, labelColor=th.foreground,
                                        columnPadding=18, offset=6,
                                        **_legend_layout([names[key] for key in shown], width)))

    gaps = on_row(alt.Chart({"values": pieces.gaps})).mark_rect(color=th.idle).encode(
        x("start:Q"), x2="end:Q", y=bar_y[0], y2=bar_y[1],
        tooltip=[alt.Tooltip("device:O"), alt.Tooltip("start:Q", title="idle from", format=".4~g"),
                 alt.Tooltip("end:Q", title="until", format=".4~g")])
    layers = [gaps]
    if lanes is not None:
        layers += _lane_layers(lanes, _lane_bands(r), r.devices, (t0, min(t1, makespan)), bottom, pad, th, x, y_scale,
                               color)
    hatch = _hatch(pieces.gaps, px, row, pad, lane_share)
    if hatch:
        layers.append(alt.Chart({"values": hatch}).mark_rule(
            color=th.hatch, opacity=th.hatch_opacity, strokeWidth=1.2, aria=False).encode(
            x("x:Q"), x2="x2:Q", y=y, y2="y2:Q"))
    if pieces.bands:
        layers.append(alt.Chart({"values": pieces.bands}).transform_calculate(
            band_top=f"datum.device + {pad} + datum.top * {1 - 2 * pad - lane_share}",
            band_bottom=f"datum.device + {pad} + datum.bottom * {1 - 2 * pad - lane_share}").mark_rect().encode(
            x("start:Q"), x2="end:Q", y=alt.Y("band_top:Q", scale=y_scale, axis=None), y2="band_bottom:Q",
            color=color,
            tooltip=[alt.Tooltip("device:O"), alt.Tooltip("run_ops:Q", title="ops in this run"),
                     alt.Tooltip("start:Q", title="run from", format=".4~g"),
                     alt.Tooltip("end:Q", title="until", format=".4~g"), alt.Tooltip("kind:N", title="band"),
                     alt.Tooltip("time:Q", title="its time in the run", format=".4~g"),
                     alt.Tooltip("ops:Q", title="its ops")]))
    if pieces.ops:
        # a one-pixel gap after each bar wide enough to spare it, as the widget draws them
        layers.append(on_row(alt.Chart({"values": pieces.ops})).transform_calculate(
            bar_end=f"datum.end - ((datum.end - datum.start) * {px} >= {_GAP_MIN_PX} ? {1 / px} : 0)",
            duration="datum.end - datum.start").mark_rect(cornerRadius=2 if row >= 20 else 0).encode(
            x("start:Q"), x2="bar_end:Q", y=bar_y[0], y2=bar_y[1], color=color,
            tooltip=[alt.Tooltip("op:N"), alt.Tooltip("kind:N"), alt.Tooltip("stage:Q"),
                     alt.Tooltip("microbatch:Q"), alt.Tooltip("device:O"),
                     alt.Tooltip("start:Q", format=".4~g"), alt.Tooltip("end:Q", format=".4~g"),
                     alt.Tooltip("duration:Q", format=".4~g")]))
    if tp:
        # each op's tensor/expert-parallel traffic as the share of its bar's length, along its top
        layers.append(alt.Chart({"values": tp}).transform_calculate(
            tp_top=f"datum.device + {pad}", tp_bottom=f"datum.device + {pad + _TP_BAND * (bottom - pad)}").mark_rect().encode(
            x("start:Q"), x2="tp_end:Q", y=alt.Y("tp_top:Q", scale=y_scale, axis=None), y2="tp_bottom:Q", color=color,
            tooltip=[alt.Tooltip("of_op:N", title="op"), alt.Tooltip("device:O"),
                     alt.Tooltip("traffic:Q", title="TP/EP traffic", format=".4~g"),
                     alt.Tooltip("share:Q", title="of the op", format=".1%")]))
    if tails:
        layers += _tail_layers(tails, paints, px, row, pad, bottom, x, y_scale, color)
    bar_px = row - 2 * pad * row - lane_share * row
    if labels and bar_px >= 12:
        texts = []
        for op in pieces.ops:
            text = str(op["microbatch"]) if op["kind"] != "F&B" else f"{op['microbatch']}|{op['backward_microbatch']}"
            if (op["end"] - op["start"]) * px - 1 >= len(text) * _DIGIT_PX + _LABEL_PAD_PX:
                texts.append({"device": op["device"], "x": (op["start"] + op["end"] - 1 / px) / 2, "text": text,
                              "ink": paints[op["paint"]][1]})
        if texts:
            layers.append(alt.Chart({"values": texts}).transform_calculate(y=f"datum.device + {0.5 - lane_share / 2}").mark_text(
                fontSize=LABEL_SIZE if bar_px >= 18 else SMALL_SIZE, fontWeight="bold", baseline="middle", aria=False).encode(
                x("x:Q"), y=y, text="text:N", color=alt.Color("ink:N", scale=None)))

    heads = []
    for d in range(p):
        stages = r.program.placement.describe(d) if r.program.placement is not None else ""
        idle = f"{share(r.idle[d] / makespan)} idle"
        heads.append({"device": d, "name": f"device {d}", "detail": f"{stages} · {idle}" if stages else idle})
    two_lines = row >= 26
    head = alt.Chart({"values": heads}).transform_calculate(y="datum.device + 0.5")
    layers.append(head.mark_text(align="right", baseline="middle", dx=-10, dy=-7 if two_lines else 0,
                                 fontSize=TEXT_SIZE if row >= 20 else TICK_SIZE, fontWeight="bold", color=th.foreground).encode(
        x=alt.XDatum(t0, type="quantitative", scale=x_scale, axis=time_axis), y=y, text="name:N"))
    if two_lines:
        layers.append(head.mark_text(align="right", baseline="middle", dx=-10, dy=8, fontSize=TICK_SIZE,
                                     color=th.muted).encode(
            x=alt.XDatum(t0, type="quantitative", scale=x_scale, axis=time_axis), y=y, text="detail:N"))
    end = r.step_end
    if step is not None and t0 < end <= t1:
        # where the step ends, after every device's tail: "step 3,085 ms", as the widget marks it
        mark = [{"t": end, "text": f"step {number(r.step_time, r.config.time_unit or None)}"}]
        layers.append(alt.Chart({"values": mark}).mark_rule(color=th.muted, strokeDash=[3, 3], strokeWidth=1).encode(
            x("t:Q"), y=alt.YDatum(0, type="quantitative", scale=y_scale, axis=None), y2=alt.Y2Datum(p)))
        layers.append(alt.Chart({"values": mark}).mark_text(
            align="right", baseline="bottom", dy=-3, fontSize=LABEL_SIZE, fontWeight="bold", color=th.muted).encode(
            x("t:Q"), y=alt.YDatum(0, type="quantitative", scale=y_scale, axis=None), text="text:N"))
    gantt = alt.layer(*layers).properties(width=width, height=p * row, view=alt.ViewBackground(stroke=None))

    drawn = ({"tp"} if tp else set()) | {piece["paint"] for piece in tails} | \
        ({"under"} if any(piece["under"] for piece in tails) else set())
    title = _gantt_title(r, pieces, th, width, lanes is not None, (t0, t1) if overview else None, window is None,
                         drawn)
    parts = ([_overview(r, th, width, (t0, t1))] if overview else []) + [gantt]
    if memory:
        parts.append(_memory_lanes(r, th, width, row, x_scale, (t0, t1)))
    if len(parts) == 1:
        return gantt.properties(title=title, background=th.background, padding=16)
    return alt.vconcat(*parts, spacing=22).properties(title=title, background=th.background, padding=16)


#: the share of ops the opening window gives room for their labels, as the widget's (js/src/opening.ts)
READABLE_SHARE = 0.9


def readable_span(r: Result, width: int) -> float:
    """The span of time (from 0) across ``width`` px in which 90 % of the run's ops are wide enough
    for their microbatch labels (the chart's own rule for a label: its digits and padding), as the
    widget opens a dense run; the makespan or more when the whole run is readable."""
    o, program = r.ops, r.program
    slot = np.flatnonzero(~np.r_[False, program.pair[:-1]] & (o.end - o.start > 0))
    if not len(slot):
        return float("inf")
    digits = lambda mb: np.floor(np.log10(np.maximum(mb, 1))).astype(np.int64) + 1  # noqa: E731
    chars = digits(o.microbatch[slot])
    pair = program.pair[slot]
    after = np.minimum(slot + 1, len(o) - 1)
    chars = np.where(pair, chars + 1 + digits(o.microbatch[after]), chars)
    need = (chars * _DIGIT_PX + _LABEL_PAD_PX + 1) / (o.end[slot] - o.start[slot])
    return width / float(np.quantile(need, READABLE_SHARE, method="lower"))


def _window(r: Result, window, width: int) -> tuple[float, float]:
    makespan = r.step_end
    if window is None:
        return 0.0, min(makespan, readable_span(r, width))
    if isinstance(window, str) and window == "all":
        return 0.0, makespan
    try:
        t0, t1 = (float(t) for t in window)
    except (TypeError, ValueError):
        t0 = t1 = float("nan")
    if not 0 <= t0 < t1 or not np.isfinite(t1):
        raise ConfigError("window", window, f"give (t0, t1) with 0 <= t0 < t1 (the run ends at {number(makespan)}), "
                          "'all' for the whole run, or None for a readable window from its start")
    return t0, min(t1, makespan)


def _overview(r: Result, th: _GanttTheme, width: int, window: tuple[float, float]) -> alt.LayerChart:
    """The whole run in a strip a few pixels per device, each kind in its colour and idle in the
    lane's grey, the window drawn below outlined and the rest dimmed, as the widget's strip."""
    p, makespan = r.devices, r.step_end
    height = int(np.clip(4 * p, 24, 64))
    pieces = _gantt_pieces(r, width, 0)
    base = {k: "#%02x%02x%02x" % tuple(round(v + (255 - v) * th.steps[0]) for v in rgb(c))
            for k, c in zip(SLOTS, th.kinds)}
    rows = [{"device": op["device"], "start": op["start"], "end": op["end"], "colour": base[SLOT_OF[op["kind"]]]}
            for op in pieces.ops]
    rows += [{"device": b["device"], "start": b["start"], "end": b["end"], "top": b["top"], "bottom": b["bottom"],
              "colour": th.idle if b["kind"] == "idle" else base[SLOT_OF[b["kind"]]]} for b in pieces.bands]
    tail = dict(zip(TAIL_KINDS, th.tail))
    rows += [{"device": t["device"], "start": t["start"], "end": t["end"], "colour": tail[t["paint"]]}
             for t in _tail_rows(r, (0.0, makespan)) if not t["under"]]
    x_scale = alt.Scale(domain=[0, makespan], nice=False, zero=False)
    y_scale = alt.Scale(domain=[0, p], reverse=True, nice=False, zero=False)
    x = lambda field: alt.X(field, type="quantitative", scale=x_scale, axis=None)  # noqa: E731
    gap = 0.12 if height / p >= 3 else 0.0  # a hairline between devices where they have the pixels
    chart = alt.Chart({"values": rows}).transform_calculate(
        y0=f"datum.device + {gap} + (isValid(datum.top) ? datum.top : 0) * {1 - gap}",
        y1=f"datum.device + {gap} + (isValid(datum.bottom) ? datum.bottom : 1) * {1 - gap}")
    t0, t1 = window
    layers = [
        alt.Chart({"values": [{"d": 0}]}).mark_rect(color=th.idle, aria=False).encode(
            x=alt.XDatum(0, type="quantitative", scale=x_scale, axis=None), x2=alt.X2Datum(makespan),
            y=alt.YDatum(0, type="quantitative", scale=y_scale, axis=None), y2=alt.Y2Datum(p)),
        chart.mark_rect(aria=False).encode(x("start:Q"), x2="end:Q", y=alt.Y("y0:Q", scale=y_scale, axis=None),
                                           y2="y1:Q", color=alt.Color("colour:N", scale=None)),
    ]
    outside = [{"a": 0.0, "b": t0}, {"a": t1, "b": makespan}]
    layers.append(alt.Chart({"values": [o for o in outside if o["b"] > o["a"]]}).mark_rect(
        color=th.background, opacity=0.5, aria=False).encode(x("a:Q"), x2="b:Q"))
    layers.append(alt.Chart({"values": [{"a": t0, "b": t1}]}).mark_rect(
        fill=None, stroke=th.foreground, strokeWidth=1.5, cornerRadius=2).encode(x("a:Q"), x2="b:Q"))
    layers.append(alt.Chart({"values": [{"text": "whole run"}]}).mark_text(
        align="right", baseline="middle", dx=-10, fontSize=LABEL_SIZE, fontWeight="bold", color=th.foreground).encode(
        x=alt.XDatum(0, type="quantitative", scale=x_scale, axis=None),
        y=alt.YDatum(p / 2, type="quantitative", scale=y_scale, axis=None), text="text:N"))
    return alt.layer(*layers).properties(width=width, height=height, view=alt.ViewBackground(stroke=None))


def _step_text(r: Result) -> str:
    """The step card's figures, as the widget's header gives them: the step time with MFU and
    tokens per second, and the split of the device with the longest tail."""
    unit = r.config.time_unit or None
    worst = int(np.argmax(r.tail))
    parts = r.breakdown.iloc[worst]
    rates = "".join(f" · {text}" for text in (
        None if r.mfu is None else f"MFU {share(r.mfu)}",
        None if r.tokens_per_second is None else f"{number(r.tokens_per_second)} tokens/s") if text)
    return (f"step {number(r.step_time, unit)}{rates} · device {worst} (the longest tail): compute "
            f"{number(float(parts.compute), unit)}, TP/EP traffic {number(float(parts.tp_comm), unit)}, P2P wait "
            f"{number(float(parts.p2p_wait), unit)}, DP tail {number(float(parts.dp_tail), unit)}, idle "
            f"{number(float(parts.idle), unit)}")


def _gantt_title(r: Result, pieces: _Pieces, th: _GanttTheme, width: int, lanes: bool = False,
                 window: tuple[float, float] | None = None, readable: bool = False,
                 step_parts: frozenset[str] | set[str] = frozenset()) -> alt.TitleParams:
    c, program, cf = r.config, r.program, r.closed_form
    wrap = max(60, int((width + 120) / 6.8))  # characters of 12 px text across the chart
    name = c.label if c.label is not None else (program.name if c.schedule == "custom" else c.schedule)
    v = f" · v={c.stages_per_device}" if (c.stages_per_device or 1) > 1 else ""  # Config sets it: never None
    unit = c.time_unit or None
    comm = f" · comm={number(c.comm)}" if c.comm > 0 else ""
    # a segmented program's bars are numbered by segment index (microbatch·k + segment)
    k = f" · k={program.segments} segments (bars: microbatch·{program.segments} + segment)" if program.segments > 1 else ""
    # an F&B pair's time where the program has pairs (DualPipe's), as the widget's header gives it
    fb = f" fb={number(c.fb if c.fb is not None else c.f + c.b + c.w)}" if program.pair.any() else ""
    costs = f"f={number(c.f)}" if program.forward_only else f"f={number(c.f)} b={number(c.b)} w={number(c.w)}{fb}"
    sizes = (f"p={r.devices} · m={program.whole_microbatches}{k}{v} · {costs}{comm}{' ' + unit if unit else ''} · "
             f"{number(len(r.ops))} ops")
    star = "" if cf is None or cf.applies else "*"

    def closed(text: str | None) -> str:
        return "" if cf is None else " (closed form: none)" if text is None else f" (closed form {text}{star})"

    peak = float(r.peak_memory.max())
    cf_peak = None
    if cf is not None and cf.peak_activation:
        cf_peak = number(max(cf.peak_activation) + float(r.static_memory.max()))
    in_bytes = ""
    if c.activation_bytes:
        memory = memory_unit([r])
        in_bytes = f" = {number(peak * memory.factors[0], memory.label)}"
    # an inference batch idles only while the pipeline fills and drains: its figures are the first
    # output and the steady throughput, and its idle share is called what it is
    idle_name = "fill + drain" if program.forward_only else "bubble"
    per = f"per {unit}" if unit else "per unit of time"
    # one microbatch has no steady state: no throughput, a dash as in the widget
    throughput = "–" if r.throughput is None else number(r.throughput, per)
    first = (f"first output {number(r.time_to_first_output, unit)} · throughput {throughput} · "
             if r.time_to_first_output is not None else "")  # a forward-only run's
    metrics = (f"makespan {number(r.makespan, unit)}{closed(number(cf.makespan, unit) if cf else None)} · {first}"
               f"{idle_name} {share(r.bubble_fraction)} of p × makespan"
               f"{closed(share(cf.bubble_fraction) if cf else None)} · "
               f"peak memory {number(peak)}{in_bytes}{closed(cf_peak)}")
    lines = [sizes, metrics]
    if c.step is not None:
        lines += textwrap.wrap(_step_text(r), wrap)
    if c.step is not None and step_parts - {"tp"}:
        parts = [c.step.part_name(kind) + (" (a band under the bars where it overlaps the last backwards)"
                                           if kind == "reduce" and "under" in step_parts else "")
                 for kind in TAIL_KINDS if kind in step_parts]
        lines += textwrap.wrap(f"after each device's ops, its data-parallel tail: {', '.join(parts)}", wrap)
    if "tp" in step_parts:
        lines.append("the dark band along a bar's top: the share of the op spent in TP/EP collectives")
    if window is not None:
        t0, t1 = window
        span = f"{number(t0)} to {number(t1, unit)}" if t0 > 0 else f"the first {number(t1, unit)}"
        why = ", where its ops have room for their labels" if readable else ""
        lines.append(f"above, the whole run ({number(r.step_end, unit)}) with the window drawn below marked: {span}{why} "
                     "(window=(t0, t1) draws another, window='all' all of it)")
    if lanes:
        if _lane_bands(r) == 4:
            lines.append("the lane under each row: sends, offloads to host (top half); reloads, receives (bottom half)")
        else:
            what = "transfers" if len(r.transfers) else "host copies"
            lines.append(f"the lane under each row: {what}, sent (top half) and received (bottom half)")
    if star:
        lines += textwrap.wrap(f"* {caveat(cf, r.config)}", wrap)
    if pieces.runs:
        narrower = "a pixel" if pieces.pixels == 1 else f"{pieces.pixels} pixels"
        note = (f"{pieces.merged:,} ops narrower than {narrower} are drawn as {pieces.runs:,} runs; "
                f"a run's bands give each kind's share of its time")
        if pieces.absorbed:
            note += f"; idle gaps narrower than {narrower} are inside runs, as a grey band"
        lines += textwrap.wrap(note, wrap)
    return alt.TitleParams(name, subtitle=lines, anchor="start", color=th.foreground, fontSize=TITLE_SIZE,
                           subtitleColor=th.muted, subtitleFontSize=TEXT_SIZE, subtitlePadding=6, offset=10)


def _memory_lanes(r: Result, th: _GanttTheme, width: int, row: int, x_scale: alt.Scale,
                  window: tuple[float, float]) -> alt.LayerChart:
    """Each device's activation memory over time, one lane each on one scale. With a memory
    capacity, as the widget draws it: the activations stacked on the static memory, the capacity
    dashed, and a device over it red above the line, its excess in its label."""
    p = r.devices
    unit = memory_unit([r])
    k = unit.factors[0]
    lane = int(np.clip(row * 0.85, 12, 30))
    per_device = max(4, min(2 * width, MAX_ROWS // p - 1))
    cf = r.closed_form
    closed = list(cf.peak_activation) if cf is not None and cf.peak_activation else []
    capacity = r.config.memory_capacity
    # read only with a capacity; without one every device fits, by nothing
    fits = r.fits if r.fits is not None else np.ones(p, bool)
    excess = r.excess if r.excess is not None else np.zeros(p)
    base = r.static_memory * k if capacity is not None else np.zeros(p)
    peaks = (r.peak_memory if capacity is not None else r.peak_activation) * k
    curves: list[dict[str, Any]] = []
    heads: list[dict[str, Any]] = []
    rules: list[dict[str, Any]] = []
    top = 0.0 if capacity is None else capacity * k
    t0, t1 = window
    end = min(t1, r.makespan)
    for d in range(p):
        times, values = _in_window(*r.memory.curve(d), t0, end)
        st, sv = summarize_steps(times, values, per_device)
        if st[-1] < end:
            st, sv = np.r_[st, end], np.r_[sv, sv[-1]]
        b = float(base[d])
        curves += [{"device": d, "time": float(t), "memory": float(v) * k + b, "static": b} for t, v in zip(st, sv)]
        over = capacity is not None and not fits[d]
        excess_text = f"  +{number(float(excess[d]) * k, _label(unit))} over" if over else ""
        heads.append({"device": d, "peak": float(peaks[d]),
                      "text": f"device {d}  peak {number(float(peaks[d]), _label(unit))}{excess_text}",
                      "colour": th.over if over else th.muted})
        if d < len(closed):
            rules.append({"device": d, "closed": float(closed[d]) * k + b})
        top = max(top, float(values.max()) * k + b, float(closed[d]) * k + b if d < len(closed) else 0.0)
    top = top or 1.0
    # lane d spans [d, d + 1]: memory rises from its bottom to 0.8 of its height at the top value
    level = f"datum.device + 1 - 0.8 * datum.{{}} / {top}"
    y_scale = alt.Scale(domain=[0, p], reverse=True, nice=False, zero=False)
    lanes = alt.Chart({"values": [{"device": d} for d in range(p)]}).transform_calculate(
        lane_top="datum.device + 0.1", lane_bottom="datum.device + 1").mark_rect(color=th.lane, aria=False).encode(
        x=alt.XDatum(t0, type="quantitative", scale=x_scale, axis=None), x2=alt.X2Datum(end),
        y=alt.Y("lane_top:Q", scale=y_scale, axis=None), y2="lane_bottom:Q")
    memory_tooltip = [alt.Tooltip("device:O"), alt.Tooltip("time:Q", title="from time", format=".4~g"),
                      alt.Tooltip("memory:Q", title=f"{'memory' if capacity is not None else 'activation memory'} "
                                                    f"({unit.label})", format=".4~g")]
    area = alt.Chart({"values": curves}).transform_calculate(
        level=level.format("memory"), base=level.format("static")).mark_area(
        interpolate="step-after", color=th.memory, opacity=th.memory_opacity,
        line={"color": th.memory, "strokeWidth": 1.2, "opacity": 1}).encode(
        x=alt.X("time:Q", scale=x_scale, axis=None), y=alt.Y("level:Q", scale=y_scale, axis=None), y2="base:Q",
        detail="device:N", tooltip=memory_tooltip)
    layers = [lanes]
    if capacity is not None:
        statics = [{"device": d, "static": float(base[d])} for d in range(p) if base[d] > 0]
        if statics:
            layers.append(alt.Chart({"values": statics}).transform_calculate(
                level=level.format("static"), bottom="datum.device + 1").mark_rect(color=th.static, aria=False).encode(
                x=alt.XDatum(t0, type="quantitative", scale=x_scale, axis=None), x2=alt.X2Datum(end),
                y=alt.Y("level:Q", scale=y_scale, axis=None), y2="bottom:Q",
                tooltip=[alt.Tooltip("device:O"), alt.Tooltip("static:Q", title=f"static memory ({unit.label})",
                                                               format=".4~g")]))
    layers.append(area)
    if capacity is not None:
        cap = capacity * k
        overs = [dict(row, cap=cap) for row in curves if not fits[row["device"]]]
        if overs:  # the part above the capacity, red, as the widget paints it
            layers.append(alt.Chart({"values": overs}).transform_calculate(
                over=f"max(datum.memory, {cap})", level=level.format("over"), line=level.format("cap")).mark_area(
                interpolate="step-after", color=th.over_fill, line={"color": th.over, "strokeWidth": 1.2}).encode(
                x=alt.X("time:Q", scale=x_scale, axis=None), y=alt.Y("level:Q", scale=y_scale, axis=None),
                y2="line:Q", detail="device:N", tooltip=memory_tooltip))
        caps = [{"device": d, "cap": cap, "colour": th.foreground if fits[d] else th.over,
                 "alpha": 0.6 if fits[d] else 1.0} for d in range(p)]
        layers.append(alt.Chart({"values": caps}).transform_calculate(level=level.format("cap")).mark_rule(
            strokeDash=[7, 3], strokeWidth=1.25).encode(
            x=alt.XDatum(t0, type="quantitative", scale=x_scale, axis=None), x2=alt.X2Datum(end),
            y=alt.Y("level:Q", scale=y_scale, axis=None),
            color=alt.Color("colour:N", scale=None), opacity=alt.Opacity("alpha:Q", scale=None),
            tooltip=[alt.Tooltip("device:O"), alt.Tooltip("cap:Q", title=f"capacity ({unit.label})", format=".4~g")]))
    if rules:
        layers.append(alt.Chart({"values": rules}).transform_calculate(level=level.format("closed")).mark_rule(
            color=th.closed, strokeDash=[4, 3], strokeWidth=1, opacity=0.55).encode(
            x=alt.XDatum(t0, type="quantitative", scale=x_scale, axis=None), x2=alt.X2Datum(end),
            y=alt.Y("level:Q", scale=y_scale, axis=None),
            tooltip=[alt.Tooltip("device:O"), alt.Tooltip("closed:Q", title="closed-form peak", format=".4~g")]))
    layers.append(alt.Chart({"values": heads}).transform_calculate(y="datum.device + 0.55").mark_text(
        align="right", baseline="middle", dx=-10, fontSize=LABEL_SIZE if lane >= 16 else SMALL_SIZE).encode(
        x=alt.XDatum(t0, type="quantitative", scale=x_scale), y=alt.Y("y:Q", scale=y_scale, axis=None),
        text="text:N", color=alt.Color("colour:N", scale=None)))
    what = ("memory" if capacity is not None else "activation memory") + \
        (f" ({unit.label})" if unit.label != ACTIVATION_UNIT else "")
    note = f"per device, same scale on every lane; {UNIT_NOTE if k == 1 else unit.note}" + \
        ("; dashed: closed-form peak" if rules else "")
    subtitle: str | list[str] = note
    if capacity is not None:
        devices_over = int(np.count_nonzero(~fits))
        amount = number(capacity * k, _label(unit))
        subtitle = [note, f"activations over the grey static memory (weights, gradients, optimizer); long dashes: "
                              f"device capacity {amount}" +
                    (f", {devices_over} of {p} devices over it (red)" if devices_over else ", every device fits")]
    return alt.layer(*layers).properties(
        width=width, height=p * lane, view=alt.ViewBackground(stroke=None),
        title=alt.TitleParams(what, subtitle=subtitle, anchor="start", color=th.foreground, fontSize=TEXT_SIZE,
                              subtitleColor=th.muted, subtitleFontSize=LABEL_SIZE, orient="top", offset=6))


def _label(unit) -> str | None:
    """A memory unit's name beside a number: GiB and the like, none for activation units (the
    chart's note says what they are)."""
    return None if unit.label == ACTIVATION_UNIT else unit.label


def _in_window(times: np.ndarray, values: np.ndarray, t0: float, t1: float) -> tuple[np.ndarray, np.ndarray]:
    """A step curve's points in [t0, t1], starting with the value it holds at t0."""
    i = max(0, int(np.searchsorted(times, t0, side="right")) - 1)
    j = max(i + 1, int(np.searchsorted(times, t1, side="right")))
    t, v = times[i:j].copy(), values[i:j]
    t[0] = max(t[0], t0)
    return t, v
