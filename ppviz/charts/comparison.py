"""Altair charts of bubble and memory for comparing schedules: bubble, peak memory, Pareto,
memory over time, sweeps, and the three laid out together."""

from __future__ import annotations

import dataclasses
import textwrap
from typing import Any

import altair as alt
import numpy as np

from ..analysis.sweep import OUTPUTS
from ..core.config import Config
from ..core.engine import as_run, simulate
from ..core.program import Program
from ..core.errors import ConfigError, ScheduleConstraintError, checked_arguments
from ..core.numbers import number, share
from ..core.registry import lookup
from ..core.result import Result
from ..core.style import INK_DARK, INK_LIGHT
from .inputs import (
    BUBBLE_METRICS, CLOSED_MARK, MAX_ROWS, SHAPES, SWEEP_METRICS, Runs, colors_for, display_names, format_number,
    items_of, memory_unit, memory_words, metric_of, pareto_front, summarize_steps, time_title,
)
from .labels import GLYPH as _GLYPH, label_marks, leader_marks, point_labels
from .offline import shown_offline
from .style import CHART, LABEL_SIZE, TEXT_SIZE

# Charts ---------------------------------------------------------------------------------------

#: the room a y axis with its title takes left of a chart, which a title spans too
_AXIS_PX = 60


def _title(text: str, *subtitle: str, width: int = 0) -> alt.TitleParams:
    """A chart's title and subtitle lines; given the chart's ``width`` in pixels, a subtitle line
    longer than the chart and its axis wraps (a list of runs that exceed the capacity can be
    long, and Vega would widen the whole view to show it on one line)."""
    lines = [s for s in subtitle if s]
    if width:
        columns = max(40, int((width + _AXIS_PX) / (_GLYPH * LABEL_SIZE)))
        lines = [part for line in lines for part in textwrap.wrap(line, columns, subsequent_indent="  ")]
    return alt.TitleParams(text, subtitle=lines or alt.Undefined, anchor="start",
                           subtitleColor=CHART["subtitle"], subtitleFontSize=LABEL_SIZE)


def _level_titles(*charts):
    """Charts side by side with their titles on one line: Vega lines up their plots, so a chart
    with fewer subtitle lines would have its title lower; blank lines make up the difference."""
    def lines(chart) -> list[str]:
        subtitle = chart.title.subtitle
        return [] if subtitle is alt.Undefined else list(subtitle)

    most = max(len(lines(chart)) for chart in charts)
    for chart in charts:
        chart.title.subtitle = lines(chart) + [" "] * (most - len(lines(chart)))
    return charts


def _headroom(values, factor: float) -> float:
    """An axis end that leaves room for labels beyond the largest value (and is never 0)."""
    top = max(values, default=0.0)
    return top * factor if top > 0 else 1.0


#: how the device's memory capacity is drawn, in every memory chart
_CAPACITY_RULE = {"color": CHART["capacity"], "strokeDash": [6, 3], "strokeWidth": 1.3}


def _capacity_words(cap: float, unit, drawn: str = "red dashes:") -> str:
    return f"{drawn} the device's capacity, {format_number(cap)} {unit.label}"


def _capacity(runs: Runs, unit, drawn: str = "red dashes:") -> tuple[list, str, float]:
    """The device capacity the runs share, in the chart's memory unit, as a red dashed rule on
    ``y`` (none when a run has no capacity or they differ), a note for the subtitle naming the
    runs that exceed it (``drawn``: how the chart shows the capacity), and the capacity (0 for
    none)."""
    given = [r.config.memory_capacity for r in runs.results]
    caps = [float(c) * k for c, k in zip(given, unit.factors) if c is not None]
    if len(caps) < len(given) or not np.allclose(caps, caps[0], rtol=1e-9, atol=0):
        return [], "", 0.0
    cap = caps[0]
    over = [name for name, r in zip(runs.names, runs.results) if r.out_of_memory]
    note = _capacity_words(cap, unit, drawn) + (
        f"; {', '.join(over)} exceed{'s' if len(over) == 1 else ''} it" if over else "; every run fits")
    rule = alt.Chart({"values": [{"capacity": cap}]}).mark_rule(**_CAPACITY_RULE).encode(
        y="capacity:Q", tooltip=alt.value(f"device capacity {format_number(cap)} {unit.label}"))
    return [rule], note, cap


def finite_or_none(x) -> float | None:
    return None if x is None else float(x)


def _bubble(runs: Runs, metric: str, legend: bool | str = False, height: int | None = None,
            width: int = 360) -> alt.LayerChart:
    attr, label, definition = metric_of(metric, BUBBLE_METRICS)
    rows: list[dict[str, Any]] = []
    for name, r in zip(runs.names, runs.results):
        cf = r.closed_form
        c = r.config
        value = getattr(r, attr)
        closed = getattr(cf, attr) if cf else None
        rows.append({
            "name": name, "schedule": c.schedule, "devices": r.devices, "microbatches": c.microbatches,
            "v": c.stages_per_device, "simulated": float(value), "closed": finite_or_none(closed),
            "closed_applies": cf.applies if cf else None,
            "formula": f"idle per device: {cf.bubble_formula}" if cf else "none published",
            "source": cf.source if cf else "", "makespan": float(r.makespan), "idle": float(r.idle.sum()),
            "end": float(max(value, closed if closed is not None else value)),
            "text": f"{value:.1%}",
        })
    order = [row["name"] for row in sorted(rows, key=lambda row: (row["simulated"], runs.names.index(row["name"])))]
    tooltip = [
        alt.Tooltip("name:N", title="schedule"),
        alt.Tooltip("devices:Q", title="devices p"), alt.Tooltip("microbatches:Q", title="microbatches m"),
        alt.Tooltip("v:Q", title="stages per device v"),
        alt.Tooltip("simulated:Q", title=f"{label} (simulated)", format=".2%"),
        alt.Tooltip("closed:Q", title=f"{label} (closed form)", format=".2%"),
        alt.Tooltip("formula:N", title="closed form"), alt.Tooltip("source:N", title="source"),
        alt.Tooltip("closed_applies:N", title="formula's assumptions hold"),
        alt.Tooltip("makespan:Q", format=".4~g"), alt.Tooltip("idle:Q", title="idle, all devices", format=".4~g"),
    ]
    y = alt.Y("name:N", sort=order, title=None, axis=alt.Axis(labelLimit=240, labelFontSize=TEXT_SIZE))
    base = alt.Chart({"values": rows}).encode(y=y)
    # bars keep a readable thickness however tall the chart is made to match its neighbours
    band = 30 if height is None else height / len(rows)
    bar = min(0.7 * band, 24)
    bars = base.mark_bar(height=bar).encode(
        x=alt.X("simulated:Q", title=f"{label} = {definition}", axis=alt.Axis(format="%", tickCount=6),
                scale=alt.Scale(domain=[0, _headroom([row["end"] for row in rows], 1.16)], nice=False)),
        color=runs.color(legend=legend), tooltip=tooltip)
    ticks = base.transform_filter("isValid(datum.closed)").mark_tick(
        color=CLOSED_MARK, thickness=2.5, size=bar + 8).encode(
        x="closed:Q",
        opacity=alt.Opacity("closed_applies:N", scale=alt.Scale(domain=[True, False], range=[1.0, 0.35]), legend=None),
        tooltip=tooltip)
    text = base.mark_text(align="left", dx=5, fontSize=LABEL_SIZE, color=CHART["text"]).encode(x="end:Q", text="text:N")
    return alt.layer(bars, ticks, text).properties(
        width=width, height=alt.Step(band) if height is None else height,
        title=_title(f"{label.capitalize()} per schedule", "bars: simulated, lower is better",
                     "black tick: published closed form", "(faded where its assumptions do not hold)"))


@shown_offline
@checked_arguments
def bubble_chart(runs, *, metric: str = "fraction") -> alt.LayerChart:
    """Simulated bubble per run as bars, with the published closed form as a black tick.

    ``metric="fraction"`` plots idle / (p × makespan); ``"rate"`` plots (makespan − ideal) / ideal
    with ideal = m·(f+b+w). A tick appears only where the schedule has a published formula,
    faded when this config breaks one of its assumptions (e.g. ``comm > 0``). Bars are sorted
    best first; the axis and title name the definition plotted.
    """
    metric_of(metric, BUBBLE_METRICS)
    return _bubble(Runs.of(runs), metric)


def _memory(runs: Runs, width: int | None = None) -> alt.LayerChart:
    """``width``: the chart's, in pixels (by default from the devices and runs)."""
    unit = memory_unit(runs.results)
    what, static = memory_words(runs.results)
    rows: list[dict[str, Any]] = []
    for name, r, k in zip(runs.names, runs.results, unit.factors):
        cf = r.closed_form
        closed = cf.peak_activation if cf and cf.peak_activation else None
        for d in range(r.devices):
            c = closed[d] if closed is not None and d < len(closed) else None
            rows.append({
                "name": name, "schedule": r.config.schedule, "device": d,
                "peak": float(r.peak_memory[d]) * k, "activation": float(r.peak_activation[d]) * k,
                "static": float(r.static_memory[d]) * k,
                "closed": None if c is None else (float(c) + float(r.static_memory[d])) * k,
                "closed_applies": cf.applies if cf is not None and c is not None else None,
                "formula": cf.memory_formula if cf is not None and c is not None else "none published",
            })
    tooltip = [alt.Tooltip("name:N", title="schedule"), alt.Tooltip("device:O"),
               alt.Tooltip("peak:Q", title=f"peak {what} ({unit.label})", format=".4~g")]
    if static:
        tooltip += [alt.Tooltip("activation:Q", title="activations at that peak", format=".4~g"),
                    alt.Tooltip("static:Q", title="static (params, grads, optimizer)", format=".4~g")]
    tooltip += [alt.Tooltip("closed:Q", title=f"closed form ({unit.label})", format=".4~g"),
                alt.Tooltip("formula:N", title="closed form"),
                alt.Tooltip("closed_applies:N", title="formula's assumptions hold")]
    devices = max(r.devices for r in runs.results)
    if runs.labelled:
        return _memory_table(runs, rows, tooltip, what, unit, static, devices, width)
    base = alt.Chart({"values": rows}).encode(
        x=alt.X("device:O", title="device (pipeline rank)", axis=alt.Axis(labelAngle=0)),
        xOffset=alt.XOffset("name:N", sort=runs.names))
    bars = base.mark_bar().encode(
        y=alt.Y("peak:Q", title=f"peak {what} ({unit.label})", scale=alt.Scale(zero=True)),
        color=runs.color(), tooltip=tooltip)
    ticks = base.transform_filter("isValid(datum.closed)").mark_tick(color=CLOSED_MARK, thickness=2.5).encode(
        y="closed:Q",
        opacity=alt.Opacity("closed_applies:N", scale=alt.Scale(domain=[True, False], range=[1.0, 0.35]), legend=None),
        tooltip=tooltip)
    capacity, capacity_note, _ = _capacity(runs, unit)
    width = width or max(360, min(900, devices * len(runs.names) * 12))
    return alt.layer(bars, ticks, *capacity).properties(
        width=width, height=260,
        title=_title(f"Peak {what} per device", unit.note,
                     "static = parameters, gradients and optimizer state" if static else "",
                     "black tick: published closed form (faded where its assumptions do not hold)", capacity_note,
                     width=width))


#: cells of the memory table are labelled with their value up to this many devices (beyond, the
#: cells are too narrow; the tooltip still gives it)
_TABLE_LABELS_UP_TO = 24


def _label_step(devices: int) -> int:
    """Every how many devices an axis of ``devices`` columns names one: 1 up to 24, then 2, 4, 8,
    … so that at most about 24 labels share the axis."""
    step = 1
    while devices > _TABLE_LABELS_UP_TO * step:
        step *= 2
    return step


def _memory_table(runs: Runs, rows: list[dict], tooltip, what: str, unit, static: bool,
                  devices: int, width: int | None) -> alt.LayerChart:
    """Peak memory as a table, a row per run and a column per device, shaded by the peak: with
    more runs than colours, grouped bars of repeated colours could not be told apart."""
    for row in rows:
        closed = row["closed"]
        # the published peak, where it applies and differs, in the cell beside the simulated one
        row["label"] = format_number(row["peak"]) + (
            f" ({format_number(closed)})" if closed is not None and row["closed_applies"]
            and not np.isclose(closed, row["peak"]) else "")
    top = max((row["peak"] for row in rows), default=0.0) or 1.0
    cell = max(22, min(64, 720 // max(devices, 1)))
    base = alt.Chart({"values": rows}).encode(
        # past about 24 columns every label would not fit: one device in `step` is named
        x=alt.X("device:O", title="device (pipeline rank)",
                axis=alt.Axis(labelAngle=0, orient="top", values=list(range(0, devices, _label_step(devices))))),
        y=alt.Y("name:N", sort=runs.names, title=None, axis=alt.Axis(labelLimit=240, labelFontSize=TEXT_SIZE)))
    cells = base.mark_rect(stroke="white", strokeWidth=1).encode(
        color=alt.Color("peak:Q", title=f"peak ({unit.label})",
                        scale=alt.Scale(scheme="lightgreyteal", domain=[0, top], zero=True)),
        tooltip=tooltip)
    layers = [cells]
    # a table has no y axis to draw the capacity on: the devices over it are outlined instead
    _, capacity_note, cap = _capacity(runs, unit, drawn="red outline: over")
    if cap:
        layers.append(base.transform_filter(f"datum.peak > {cap!r}").mark_rect(
            filled=False, stroke=CHART["capacity"], strokeWidth=2).encode(tooltip=tooltip))
    if devices <= _TABLE_LABELS_UP_TO:
        layers.append(base.mark_text(fontSize=LABEL_SIZE).encode(
            text="label:N",
            color=alt.condition(f"datum.peak > {0.6 * top!r}", alt.value(INK_LIGHT), alt.value(INK_DARK)),
            tooltip=tooltip))
    width = width or max(360, min(900, devices * cell))
    return alt.layer(*layers).properties(
        width=width, height=18 * len(runs.names),
        title=_title(f"Peak {what} per device", unit.note,
                     "static = parameters, gradients and optimizer state" if static else "",
                     "a row per run, darker is more; in brackets: the published closed form where it "
                     "applies and differs", capacity_note, width=width))


@shown_offline
@checked_arguments
def memory_chart(runs) -> alt.LayerChart:
    """Peak memory of every device, bars grouped by device, one colour per run; with more runs
    than colours, a table of runs × devices shaded by the peak.

    Activation units, or bytes when every config gives ``activation_bytes``; static memory is
    included when any config has ``params > 0``. The published closed-form peak is a black tick.
    """
    return _memory(Runs.of(runs))


def _pareto(runs: Runs, metric: str, height: int = 260, width: int = 360, legend: bool = True) -> alt.LayerChart:
    attr, label, definition = metric_of(metric, BUBBLE_METRICS)
    unit = memory_unit(runs.results)
    what, _ = memory_words(runs.results)
    bubble = [float(getattr(r, attr)) for r in runs.results]
    memory = [float(r.peak_memory.max()) * k for r, k in zip(runs.results, unit.factors)]
    # a run over its device's capacity cannot be chosen, however low its bubble: the front is
    # the best of the runs that fit
    over = np.array([r.out_of_memory for r in runs.results])
    front = np.zeros(len(bubble), bool)
    if not over.all():
        front[~over] = pareto_front(np.array(bubble)[~over], np.array(memory)[~over])
    capacity, capacity_note, cap = _capacity(runs, unit)
    x_end, y_end = _headroom(bubble, 1.08), _headroom(memory + [cap], 1.1)
    labels = point_labels(bubble, memory, runs.names, [not f for f in front], x_end=x_end, y_end=y_end,
                          width=width, height=height)
    rows = [{"name": n, "schedule": r.config.schedule, "bubble": b, "memory": m, "front": bool(f),
             "status": "Pareto front" if f else "over the capacity" if r.out_of_memory else "dominated",
             "busiest": int(np.argmax(r.peak_memory)), **label}
            for n, r, b, m, f, label in zip(runs.names, runs.results, bubble, memory, front, labels)]
    tooltip = [alt.Tooltip("name:N", title="schedule"),
               alt.Tooltip("bubble:Q", title=label, format=".2%"),
               alt.Tooltip("memory:Q", title=f"peak {what} ({unit.label})", format=".4~g"),
               alt.Tooltip("busiest:Q", title="on device"), alt.Tooltip("status:N", title="status")]
    base = alt.Chart({"values": rows}).encode(
        x=alt.X("bubble:Q", title=f"{label} = {definition}", axis=alt.Axis(format="%", tickCount=6),
                scale=alt.Scale(domain=[0, x_end], nice=False)),
        # two lines: on one, the rotated title overhangs the plot and pushes this chart's own title
        # above its neighbour's
        y=alt.Y("memory:Q", title=[f"peak {what}, busiest device", f"({unit.label})"],
                scale=alt.Scale(domain=[0, y_end], nice=False)))
    line = base.transform_filter("datum.front").mark_line(
        interpolate="step-after", color=CHART["reference"], strokeDash=[4, 3], strokeWidth=1.5).encode(order="bubble:Q")
    # past the palette's colours, runs of one colour differ in shape
    shape = runs.shape(legend)
    by_shape = {"shape": shape} if shape is not None else {}
    front_points = base.transform_filter("datum.front").mark_point(filled=True, size=110, opacity=1).encode(
        color=runs.color(legend), tooltip=tooltip, **by_shape)
    dominated = base.transform_filter("!datum.front")
    # a grey ring under each hollow marker edges it: a light colour's ring alone (the palette's
    # yellow) is faint on white
    edges = dominated.mark_point(size=110, strokeWidth=3.6, opacity=1, color=CHART["markerEdge"]).encode(
        detail="name:N", **by_shape)
    other_points = dominated.mark_point(size=110, strokeWidth=2, opacity=1).encode(
        color=runs.color(legend), tooltip=tooltip, **by_shape)
    return alt.layer(*capacity, line, leader_marks(base), front_points, edges, other_points,
                     *label_marks(base)).properties(
        width=width, height=height,
        title=_title(f"{label.capitalize()} vs peak memory", "lower left is better",
                     f"filled: on the Pareto front (no other run{' that fits' if over.any() else ''} is lower on both)",
                     "hollow: dominated" + (", or over the capacity" if over.any() else ""), capacity_note,
                     width=width))


@shown_offline
@checked_arguments
def pareto_chart(runs, *, metric: str = "fraction") -> alt.LayerChart:
    """Bubble (x) against the busiest device's peak memory (y) for each run.

    Runs on the Pareto front (no other run is at least as low on both and lower on one) are
    filled and joined by a dashed staircase; dominated runs are hollow. A run over its device's
    ``memory_capacity`` is hollow too, and the front is that of the runs that fit.
    """
    metric_of(metric, BUBBLE_METRICS)
    return _pareto(Runs.of(runs), metric)


@shown_offline
@checked_arguments
def comparison_charts(runs, *, metric: str = "fraction", columns: int = 2) -> alt.VConcatChart:
    """Bubble and the bubble/memory Pareto scatter side by side, peak memory per device below
    and, when some run models its links (``Config.topology``), its exposed communication and
    volume (:func:`communication_chart`) at the bottom; one shared colour per run. Every run is
    simulated once.

    ``columns=1`` stacks every chart, about 560 px wide in all: a notebook output of 600 px (a
    1,000 px window with JupyterLab's side bar open) then shows its text at full size, where two
    columns (830 px) would be scaled down to about 7 px."""
    metric_of(metric, BUBBLE_METRICS)
    if columns not in (1, 2):
        raise ConfigError("columns", columns, "give 1 (every chart stacked) or 2 (bubble and Pareto side by side)")
    runs = Runs.of(runs)
    height = max(260, 30 * len(runs.names))
    # about 830 px wide in all, so a notebook's output shows it at full size: the legend runs
    # across the bottom rather than taking a column, titles wrap rather than widen their charts
    # where runs share colours every chart names its runs itself (axes, labels, a table), and a
    # legend could not tell them apart
    legend = not runs.labelled
    stacked = columns == 1
    bubble = _bubble(runs, metric, legend=legend and "bottom", height=height, width=300)
    pareto = _pareto(runs, metric, height, width=320 if not stacked else 340, legend=legend)
    rows: list[alt.LayerChart | alt.HConcatChart | alt.VConcatChart] = \
        [bubble, pareto] if stacked else [alt.hconcat(*_level_titles(bubble, pareto), spacing=36)]
    rows.append(_memory(runs, width=720 if not stacked else 400))
    if any(r.config.topology is not None for r in runs.results):
        exposed, volume = _communication(runs, legend)
        rows.append(alt.vconcat(exposed, volume, spacing=30).resolve_scale(color="shared") if stacked
                    else _side_by_side(exposed, volume))
    # (the memory table's colour is its own, a scale of memory)
    return alt.vconcat(*rows, spacing=30).resolve_scale(color="shared" if legend else "independent")


#: The most devices :func:`memory_curve_chart` draws (a row each): 512 rows render in about 15 s
#: and 0.6 GB; 2000 exhaust the renderer's memory and kill the process.
MAX_CURVE_DEVICES = 512


@shown_offline
@checked_arguments
def memory_curve_chart(run, *, max_rows: int = MAX_ROWS) -> alt.FacetChart:
    """Memory over time of one run: a row per device, step lines on a shared scale, each
    device's peak marked with a dot (at the first time it is reached) and given in its label.

    Long runs are summarised with :func:`summarize_steps` to at most about ``max_rows`` points
    in all (every time bucket keeps its lowest and highest point, so no peak is lost); the
    subtitle says when this happened. Runs of more than :data:`MAX_CURVE_DEVICES` devices are
    refused (a row each would exhaust the renderer's memory).
    """
    if isinstance(max_rows, bool) or not isinstance(max_rows, (int, np.integer)) or max_rows < 8:
        raise ConfigError("max_rows", max_rows, "give a whole number >= 8")
    if isinstance(run, (Config, Result, Program)) and run.devices > MAX_CURVE_DEVICES:
        # one facet per device: at p = 2000 the renderer (V8 in vl-convert, or the browser's)
        # runs out of memory and takes the process with it
        raise ConfigError("devices", run.devices, "give a run of fewer devices; ppviz.show draws the memory of up to "
                          "1024 devices as a heat strip", reason=f"memory_curve_chart draws a row per device, "
                          f"at most {MAX_CURVE_DEVICES}")
    r = as_run(run)
    c = r.config
    p = r.devices
    unit = memory_unit([r])
    k = unit.factors[0]
    what, _ = memory_words([r])
    name = display_names([c])[0]
    color = colors_for([name], [c.schedule])[name]
    per_device = max(4, max_rows // p - 1)  # one more row per device carries the curve to the makespan
    rows: list[dict[str, Any]] = []
    total = kept = 0
    for d in range(p):
        times, values = r.memory.curve(d)
        values = values + r.static_memory[d]
        top = int(np.argmax(values))
        row = f"device {d} · peak {format_number(values[top] * k)}"
        if r.fits is not None and r.excess is not None and not r.fits[d]:
            row += f" · +{format_number(float(r.excess[d]) * k)} {unit.label} over"
        st, sv = summarize_steps(times, values, per_device)
        total += len(times)
        kept += len(st)
        if st[-1] < r.makespan:
            st, sv = np.r_[st, r.makespan], np.r_[sv, sv[-1]]
        rows += [{"device": d, "row": row, "time": float(t), "memory": float(v) * k,
                  "peak": bool(t == times[top]), "first": i == 0} for i, (t, v) in enumerate(zip(st, sv))]
    note = (f"summarised: {kept} of {total} change points kept (each time bucket's min and max)"
            if kept < total else "")
    tooltip = [alt.Tooltip("device:O"), alt.Tooltip("time:Q", title="from time", format=".4~g"),
               alt.Tooltip("memory:Q", title=f"{what} ({unit.label})", format=".4~g")]
    # with a capacity the scale reaches a little above it, so that its rule shows on every row
    y_scale = alt.Scale(zero=True) if c.memory_capacity is None else alt.Scale(
        domain=[0, 1.1 * max(float(c.memory_capacity) * k, max(row["memory"] for row in rows))], nice=False)
    base = alt.Chart({"values": rows}).encode(
        x=alt.X("time:Q", title=time_title(c), scale=alt.Scale(domain=[0, r.makespan], nice=False)),
        y=alt.Y("memory:Q", title=None, scale=y_scale, axis=alt.Axis(tickCount=2, grid=False)))
    area = base.mark_area(interpolate="step-after", color=color, opacity=0.22)
    line = base.mark_line(interpolate="step-after", color=color, strokeWidth=1.5).encode(tooltip=tooltip)
    dot = base.transform_filter("datum.peak").mark_point(
        filled=True, size=42, color=CHART["closedForm"], stroke=CHART["pointStroke"], strokeWidth=0.8).encode(
        tooltip=[alt.Tooltip("device:O"), alt.Tooltip("memory:Q", title="peak", format=".4~g"),
                 alt.Tooltip("time:Q", title="first reached at", format=".4~g")])
    layers = [area, line, dot]
    capacity_note = ""
    if c.memory_capacity is not None:
        # the device's memory, which the curve (activations + static) must stay under
        cap = float(c.memory_capacity) * k
        capacity_note = f"; {_capacity_words(cap, unit)}"
        if r.out_of_memory and r.fits is not None:
            capacity_note += f", exceeded on {int((~r.fits).sum())} of {p} devices"
        layers.append(base.transform_filter("datum.first").mark_rule(**_CAPACITY_RULE).encode(
            x=alt.datum(0), x2=alt.datum(r.makespan), y=alt.datum(cap),
            tooltip=alt.value(f"capacity {format_number(cap)} {unit.label}")))
    return alt.layer(*layers).properties(width=560, height=max(22, min(56, 480 // p))).facet(
        row=alt.Row("row:N", title=None, sort=alt.SortField("device"),
                    header=alt.Header(labelAngle=0, labelAlign="left", labelOrient="left", labelFontSize=LABEL_SIZE)),
        spacing=4,
        title=_title(f"{what.capitalize()} over time: {name}",
                     f"p={p}, m={c.microbatches}, v={c.stages_per_device}; {what} in {unit.label}, "
                     f"same scale on every row; black dot: the device's peak{capacity_note}", unit.note, note))


@shown_offline
@checked_arguments
def sweep_chart(runs, microbatches, *, devices: int | None = None, metric: str = "makespan",
                **options) -> alt.LayerChart:
    """Makespan (or bubble, with ``metric="fraction"|"rate"``) against the number of microbatches.

    ``runs`` are schedule names, configs or results of registry schedules (or one of them: a
    Program fixes its microbatches, so it has no sweep); each is run at every m
    in ``microbatches``, with ``devices`` and any other Config field in ``options`` (f, b, w,
    comm, stages_per_device, ...) replacing its own. A schedule that refuses some m (a
    ScheduleConstraintError, e.g. m < p) is skipped there; the subtitle and tooltips say where
    and why. The published closed form is a dashed line of the same colour.
    """
    attr, label, definition = metric_of(metric, SWEEP_METRICS)
    runs = items_of(runs, "runs", "give schedule names, ppviz.Config or ppviz.Result of registry schedules, or a "
                    "list of them (a Program fixes its microbatches)", (str, Config, Result))
    ms = items_of(microbatches, "microbatches", "give a non-empty list of whole numbers >= 1", (int, np.integer))
    if any(isinstance(m, bool) or m < 1 for m in ms):
        raise ConfigError("microbatches", ms, "give a non-empty list of whole numbers >= 1")
    ms = sorted({int(m) for m in ms})
    fields = {f.name for f in dataclasses.fields(Config)} - {"schedule", "microbatches", "devices"}
    for key in options:
        if key not in fields:
            raise ConfigError(key, options[key], f"options are Config fields: {', '.join(sorted(fields))}")
    changes = {**options, **({} if devices is None else {"devices": devices})}
    for item in runs:
        if isinstance(item, str):
            lookup(item)  # an unknown name is a mistake to report, not a constraint to skip

    series = []  # (plain label, results, [(m, why refused)])
    for item in runs:
        base = item.config if isinstance(item, Result) else item
        done, refused = [], []
        for m in ms:
            try:
                cfg = (Config(**{"schedule": base, **changes, "microbatches": m}) if isinstance(base, str)
                       else base.replace(**changes, microbatches=m))
            except ScheduleConstraintError as exc:
                text, head = str(exc), f"{exc.field}={exc.value!r}: "  # the note names the m already
                refused.append((m, text[len(head):] if text.startswith(head) else text))
                continue
            done.append(simulate(cfg))
        series.append((lookup(base).name if isinstance(base, str) else base.display_name, done, refused))
    if not any(done for _, done, _ in series):
        reasons = "; ".join(refused[0][1] for _, _, refused in series)
        raise ScheduleConstraintError("microbatches", ms, "try other microbatch counts or devices",
                                      reason=f"no schedule accepts any of them: {reasons}")

    ran = [s for s in series if s[1]]
    names = display_names([done[0].config for _, done, _ in ran], ignore=("microbatches",))
    colors = colors_for(names, [done[0].config.schedule for _, done, _ in ran])
    # runs that never ran keep their plain label: they only appear in the notes
    unique = iter(names)
    series = [(next(unique) if done else plain, done, refused) for plain, done, refused in series]
    rows, notes = [], []
    for name, done, refused in series:
        if refused:
            note = f"{name} not run at m = {', '.join(str(m) for m, _ in refused)}: {refused[0][1]}"
            notes += textwrap.wrap(note, 110, subsequent_indent="    ")
        not_run = ", ".join(str(m) for m, _ in refused) or "none"
        for r in done:
            common = {"name": name, "schedule": r.config.schedule, "m": r.config.microbatches,
                      "devices": r.devices, "not_run": not_run}
            rows.append({**common, "kind": "simulated", "value": float(getattr(r, attr)), "applies": None})
            cf = r.closed_form
            if cf is not None:
                rows.append({**common, "kind": "closed form", "value": float(getattr(cf, attr)),
                             "applies": cf.applies})

    fmt = ".4~g" if metric == "makespan" else ".2%"
    tooltip = [alt.Tooltip("name:N", title="schedule"), alt.Tooltip("kind:N", title="line"),
               alt.Tooltip("m:Q", title="microbatches m"), alt.Tooltip("devices:Q", title="devices p"),
               alt.Tooltip("value:Q", title=label, format=fmt),
               alt.Tooltip("applies:N", title="formula's assumptions hold"),
               alt.Tooltip("not_run:N", title="not run at m")]
    base_chart = alt.Chart({"values": rows}).encode(
        x=alt.X("m:Q", title="microbatches m",
                axis=alt.Axis(values=ms, format="d") if len(ms) <= 12 else alt.Axis(format="d"),
                scale=alt.Scale(zero=False, nice=False, domain=[ms[0], ms[-1]]) if len(ms) > 1 else alt.Scale()),
        y=alt.Y("value:Q", title=f"{label} ({definition})", scale=alt.Scale(zero=True),
                axis=alt.Axis() if metric == "makespan" else alt.Axis(format="%")),
        color=alt.Color("name:N", title="schedule", scale=alt.Scale(domain=names, range=[colors[n] for n in names])),
        tooltip=tooltip)
    lines = base_chart.mark_line(strokeWidth=2).encode(
        strokeDash=alt.StrokeDash("kind:N", title="line", scale=alt.Scale(domain=["simulated", "closed form"],
                                                                            range=[[1, 0], [5, 4]])),
        detail="kind:N")
    points = base_chart.transform_filter(alt.datum.kind == "simulated").mark_point(
        filled=False, size=55, strokeWidth=1.8, opacity=1).encode(
        shape=alt.Shape("name:N", title="schedule",
                        scale=alt.Scale(domain=names, range=[SHAPES[i % len(SHAPES)] for i in range(len(names))])))
    p_text = ", ".join(sorted({f"p={r.devices}" for _, done, _ in ran for r in done}))
    return alt.layer(lines, points).properties(
        width=420, height=280,
        title=_title(f"{label.capitalize()} vs microbatches", f"{p_text}; dashed: published closed form", *notes))



#: a refused combination's cell in a sweep's heatmap: grey under a cross, never blank
_REFUSED_FILL, _REFUSED_MARK = CHART["reference"], "×"


@shown_offline
@checked_arguments
def sweep_heatmap(frame, *, x: str = "microbatches", y: str = "devices", metric: str = "fraction",
                  facet: str = "schedule") -> alt.FacetChart:
    """A :func:`ppviz.sweep` frame as heatmaps: ``metric`` (``"fraction"``, ``"rate"`` or
    ``"makespan"``) over the columns ``x`` and ``y``, one panel per value of ``facet``, each cell
    labelled with its value. A combination the schedule refused is a grey cell marked ×, its
    reason in the tooltip (not a blank that reads as missing data). Each (facet, x, y) has one
    row: filter a sweep over more fields first."""
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("sweep_heatmap needs pandas: pip install pandas") from exc
    attr, label, definition = metric_of(metric, SWEEP_METRICS)
    if not isinstance(frame, pd.DataFrame) or "refusal" not in frame.columns:
        raise ConfigError("frame", type(frame).__name__, "give the DataFrame ppviz.sweep returns (its rows, with "
                          "their refusal column)")
    for field, column in (("x", x), ("y", y), ("facet", facet)):
        if not isinstance(column, str) or column not in frame.columns or column in (attr, "refusal"):
            inputs = [c for c in frame.columns if c not in OUTPUTS]
            raise ConfigError(field, column, f"give one of the frame's inputs: {', '.join(inputs)}")
    if len({x, y, facet}) < 3:
        raise ConfigError("facet", facet, f"give three different columns for x, y and facet; got {x}, {y}, {facet}")
    if frame.empty:
        raise ConfigError("frame", "an empty frame", "give a sweep with at least one row")
    if frame.duplicated([facet, x, y]).any():
        varying = [c for c in frame.columns if c not in (facet, x, y, *OUTPUTS) and frame[c].nunique(dropna=False) > 1]
        raise ConfigError("frame", f"{len(frame)} rows", f"filter it to one row per ({facet}, {x}, {y}) first, e.g. "
                          f"frame[frame.{varying[0]} == ...]" if varying else "drop the repeated rows first",
                          reason=f"several rows share a cell: they differ in {', '.join(varying) or 'nothing'}")
    text = share if attr != "makespan" else number
    rows: list[dict[str, Any]] = []
    for row in frame.to_dict("records"):
        refused = isinstance(row["refusal"], str)
        value = None if refused else float(row[attr])
        rows.append({"facet": str(row[facet]), "x": row[x].item() if hasattr(row[x], "item") else row[x],
                     "y": row[y].item() if hasattr(row[y], "item") else row[y], "value": value,
                     "label": _REFUSED_MARK if value is None else text(value), "refused": refused,
                     "why": row["refusal"] if refused else "ran"})
    values = [row["value"] for row in rows if row["value"] is not None]
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    facets = list(dict.fromkeys(row["facet"] for row in rows))
    tooltip = [alt.Tooltip("facet:N", title=facet), alt.Tooltip("x:O", title=x), alt.Tooltip("y:O", title=y),
               alt.Tooltip("label:N", title=label), alt.Tooltip("why:N", title="refused")]
    base = alt.Chart().encode(x=alt.X("x:O", title=x, axis=alt.Axis(labelAngle=0)),
                              y=alt.Y("y:O", title=y, sort="descending"), tooltip=tooltip)
    ran = base.transform_filter("!datum.refused").mark_rect(stroke="white", strokeWidth=1).encode(
        color=alt.Color("value:Q", title=label, scale=alt.Scale(scheme="viridis", reverse=True, domain=[low, high]),
                        legend=alt.Legend(format="%" if attr != "makespan" else "~s")))
    refused = base.transform_filter("datum.refused").mark_rect(
        fill=_REFUSED_FILL, opacity=0.25, stroke="white", strokeWidth=1)
    middle = (low + high) / 2
    labels = base.mark_text(fontSize=LABEL_SIZE).encode(
        text="label:N",
        # viridis reversed runs from light (low) to dark (high): white text on the darker half
        color=alt.condition(f"datum.value !== null && datum.value > {middle!r}", alt.value(INK_LIGHT),
                            alt.value(INK_DARK)))
    cells = max(len({row["x"] for row in rows}), 1)
    return alt.layer(ran, refused, labels, data={"values": rows}).properties(
        width=alt.Step(46), height=alt.Step(26)).facet(
        column=alt.Column("facet:N", title=None, sort=facets, header=alt.Header(labelFontSize=TEXT_SIZE)),
        spacing=12,
        title=_title(f"{label.capitalize()} by {x} and {y}", f"{definition}; one panel per {facet}",
                     f"{_REFUSED_MARK} on grey: refused by the schedule (hover for why)",
                     width=cells * 46 * len(facets)))



# Communication --------------------------------------------------------------------------------

_BYTE_UNITS = ("B", "KB", "MB", "GB", "TB", "PB")


def _byte_unit(largest: float) -> tuple[str, float]:
    """A decimal unit for byte counts (links are rated in GB/s) and its size."""
    k = next((k for k in range(len(_BYTE_UNITS)) if largest < 1000 ** (k + 1)), len(_BYTE_UNITS) - 1)
    return _BYTE_UNITS[k], 1000.0 ** k


def _communication(runs: Runs, legend: bool = True) -> tuple[alt.LayerChart, alt.LayerChart]:
    """The exposed communication and the volume of :func:`communication_chart`."""
    rows: list[dict[str, Any]] = []
    for name, r in zip(runs.names, runs.results):
        t = r.transfers
        total = r.devices * r.makespan
        comm, compute = float(r.exposed_comm.sum()), float(r.idle_compute.sum())
        nodes = getattr(r.config.topology, "devices_per_node", None)
        across = int(np.count_nonzero(t.src // nodes != t.dst // nodes)) if nodes else 0
        rows.append({"name": name, "schedule": r.config.schedule, "transfers": len(t), "bytes": float(t.bytes.sum()),
                     "across": across, "p2p": r.config.p2p_mode or "bare latency (comm)",
                     "comm": comm / total if total else 0.0, "compute": compute / total if total else 0.0,
                     "comm_time": comm, "compute_time": compute, "makespan": float(r.makespan)})
    order = [row["name"] for row in sorted(rows, key=lambda row: (row["comm"], runs.names.index(row["name"])))]
    band = 30
    bar = 0.7 * band
    y = alt.Y("name:N", sort=order, title=None, axis=alt.Axis(labelLimit=240, labelFontSize=TEXT_SIZE))
    unit, size = _byte_unit(max(row["bytes"] for row in rows))
    for row in rows:
        row["volume"] = row["bytes"] / size
        row["label"] = f"{row['transfers']:,} transfers" if row["transfers"] else "no transfers (bare comm)"
    volume_tip = [alt.Tooltip("name:N", title="schedule"), alt.Tooltip("transfers:Q", format=","),
                  alt.Tooltip("volume:Q", title=f"moved ({unit})", format=".4~g"),
                  alt.Tooltip("across:Q", title="transfers between nodes", format=","),
                  alt.Tooltip("p2p:N", title="P2P")]
    base = alt.Chart({"values": rows}).encode(y=y)
    volume = alt.layer(
        base.mark_bar(height=bar).encode(
            x=alt.X("volume:Q", title=f"moved between devices ({unit})",
                    scale=alt.Scale(domain=[0, _headroom([row["volume"] for row in rows], 1.5)], nice=False)),
            color=runs.color(legend=False), tooltip=volume_tip),
        base.mark_text(align="left", dx=5, fontSize=LABEL_SIZE, color=CHART["text"]).encode(x="volume:Q", text="label:N"),
    ).properties(width=320, height=alt.Step(band),
                 title=_title("Communication volume per schedule", "activations and gradients sent between devices",
                              "label: how many transfers carried them"))
    parts = [{**row, "part": part, "share": row[key], "time": row[key + "_time"]}
             for row in rows for part, key in (("waiting for communication", "comm"), ("waiting for compute", "compute"))]
    idle_tip = [alt.Tooltip("name:N", title="schedule"), alt.Tooltip("part:N", title="idle"),
                alt.Tooltip("share:Q", title="share of device time", format=".2%"),
                alt.Tooltip("time:Q", title="time, all devices", format=".4~g"),
                alt.Tooltip("makespan:Q", format=".4~g"), alt.Tooltip("p2p:N", title="P2P")]
    parts_base = alt.Chart({"values": parts}).encode(y=y)
    stacked = parts_base.mark_bar(height=bar).encode(
        x=alt.X("share:Q", stack="zero", title="idle / (p × makespan), split by what it waits for",
                axis=alt.Axis(format="%", tickCount=6)),
        color=runs.color(legend=legend),
        opacity=alt.Opacity("part:N", title="idle", scale=alt.Scale(
            domain=["waiting for communication", "waiting for compute"], range=[1.0, 0.35])),
        order=alt.Order("part:N", sort="ascending"), tooltip=idle_tip)
    labels = alt.Chart({"values": rows}).encode(y=y).mark_text(
        align="left", dx=5, fontSize=LABEL_SIZE, color=CHART["text"]).encode(
        x=alt.X("total:Q"), text=alt.Text("comm:Q", format=".1%")).transform_calculate(
        total="datum.comm + datum.compute")
    exposed = alt.layer(stacked, labels).properties(
        width=360, height=alt.Step(band),
        title=_title("Exposed communication per schedule", "solid: idle waiting for communication (its share is "
                     "the label), faded: waiting for compute", "together: the bubble fraction"))
    return exposed, volume


def _side_by_side(exposed: alt.LayerChart, volume: alt.LayerChart) -> alt.HConcatChart:
    return alt.hconcat(exposed, volume, spacing=40).resolve_scale(color="shared")


@checked_arguments
def communication_chart(runs) -> alt.HConcatChart:
    """Exposed communication and communication volume per run, side by side.

    Left: each run's idle time as a share of device time (its bubble fraction), split into the
    part spent waiting for communication (``Result.exposed_comm``: latency, transfers, busy
    links, blocking sends and receives) and the part waiting for other devices' compute. Right:
    the bytes sent between devices (``Result.transfers``), with the number of transfers. Runs
    with a bare ``comm`` have no transfers; their latency still shows as exposed communication.
    """
    return _side_by_side(*_communication(Runs.of(runs)))
