"""Altair charts of bubble and memory, for comparing schedules.

Every chart function takes results or configs (configs are simulated) and returns an ordinary
Altair chart, so ``.properties(...)``, ``.configure_*(...)`` and ``alt.hconcat`` work as usual::

    from ppviz import charts
    runs = [ppviz.Config(schedule=s, devices=8, microbatches=32) for s in ("1f1b", "zb-h1")]
    charts.bubble_chart(runs)             # simulated bubble per schedule, closed form ticked
    charts.memory_chart(runs)             # peak memory per device
    charts.pareto_chart(runs)             # bubble vs peak memory, Pareto front highlighted
    charts.memory_curve_chart(runs[0])    # memory over time per device
    charts.sweep_chart(["1f1b", "zb-h1"], microbatches=[8, 16, 32], devices=8)
    charts.comparison_charts(runs)        # bubble, Pareto and memory laid out together
    charts.gantt_chart(runs[0])           # a static Gantt chart in the widget's look (SVG/PNG export)

Each schedule keeps one colour in every chart (:func:`schedule_colors`), drawn from a
colour-blind-safe palette. Memory is in activation units (one microbatch's activations
through 1/p of the model), in bytes when every config gives ``activation_bytes``, and
includes static memory (parameters, gradients, optimizer state) when ``params > 0``.

Offline: :func:`widget` / :func:`display` show a chart through a JupyterChart subclass whose
JavaScript is bundled by vl-convert, so nothing is fetched from a CDN and the user's own
``alt.JupyterChart`` stays as it was. :func:`to_svg` and :func:`to_png` export without a
browser or network (``chart.save("x.svg")`` / ``"x.png"`` also works offline: Altair uses
vl-convert for it).
"""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Iterable, Sequence

import altair as alt
import numpy as np
import vl_convert

from .config import Config
from .errors import ConfigError, ScheduleConstraintError
from .result import Result
from .schedules.registry import ORDER, all_specs, lookup
from .simulate import simulate

#: Okabe–Ito (without yellow, too faint on white, and black, kept for closed-form marks), then
#: Paul Tol's "muted" colours that differ from them: the first nine stay apart under every
#: common colour-vision deficiency; the rest keep up to 14 runs distinct for normal vision.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#332288", "#999933", "#882255",
           "#117733", "#DDCC77", "#AA4499", "#CC6677", "#555555")

#: Altair refuses more than 5000 data rows by default; memory curves are summarised below it.
MAX_ROWS = 4000

BUBBLE_METRICS = {
    "fraction": ("bubble_fraction", "bubble fraction", "idle / (p × makespan)"),
    "rate": ("bubble_rate", "bubble rate", "(makespan − ideal) / ideal"),
}
SWEEP_METRICS = {"makespan": ("makespan", "makespan", "time of the last op's end"), **BUBBLE_METRICS}

_CLOSED_MARK = "black"
#: Hollow shapes tell apart runs whose sweep curves coincide (gpipe and 1f1b have equal makespans).
_SHAPES = ("circle", "square", "triangle-up", "diamond", "triangle-down", "cross", "triangle-right", "triangle-left")
_ACTIVATION_UNIT = "activation units"
_UNIT_NOTE = "1 activation unit = one microbatch's activations through 1/p of the model"
_NAME_FIELDS = (("schedule", "schedule"), ("devices", "p"), ("microbatches", "m"), ("stages_per_device", "v"),
                ("microbatch_group_size", "g"), ("f", "f"), ("b", "b"), ("w", "w"), ("comm", "comm"),
                ("fb", "fb"), ("activation", "activation"), ("w_share", "w_share"), ("params", "params"),
                ("activation_bytes", "bytes"))
_VL_VERSION = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])


# Inputs ---------------------------------------------------------------------------------------

def _items(items, field: str, accepted: str, allowed: tuple[type, ...]) -> list:
    if isinstance(items, allowed):
        return [items]
    if isinstance(items, (str, bytes, dict)) or not isinstance(items, Iterable):
        raise ConfigError(field, items, accepted, reason=f"{type(items).__name__} is not a list")
    items = list(items)
    if not items:
        raise ConfigError(field, items, accepted, reason="the list is empty")
    for i, x in enumerate(items):
        if not isinstance(x, allowed):
            raise ConfigError(f"{field}[{i}]", x, accepted,
                              reason=f"{type(x).__name__} is not one of: {', '.join(t.__name__ for t in allowed)}")
    return items


_RUNS = "give a ppviz.Result or ppviz.Config, or a non-empty list of them (configs are simulated)"


def _results(items, field: str = "results") -> list[Result]:
    return [x if isinstance(x, Result) else simulate(x) for x in _items(items, field, _RUNS, (Result, Config))]


def _display_names(configs: Sequence[Config], ignore: tuple[str, ...] = ()) -> list[str]:
    """Display names, made unique by the config fields that tell equal names apart."""
    names = [c.display_name for c in configs]
    out = list(names)
    for name in dict.fromkeys(names):
        group = [i for i, n in enumerate(names) if n == name]
        if len(group) == 1:
            continue
        differ = [(f, short) for f, short in _NAME_FIELDS
                  if f not in ignore and len({getattr(configs[i], f) for i in group}) > 1]
        for i in group:
            parts = [f"{short}={_short(getattr(configs[i], f))}" for f, short in differ]
            out[i] = f"{name} ({', '.join(parts)})" if parts else name
    # identical configs: number them in input order
    repeats = {n for n in out if out.count(n) > 1}
    seen: dict[str, int] = {}
    for i, n in enumerate(out):
        if n in repeats:
            seen[n] = seen.get(n, 0) + 1
            out[i] = f"{n} #{seen[n]}"
    return out


def _short(x) -> str:
    return "none" if x is None else f"{x:g}" if isinstance(x, float) else str(x)


def _colors(names: Sequence[str], schedules: Sequence[str]) -> dict[str, str]:
    """Each schedule's place in the registry's listing order picks its colour, so it is the same
    in every chart whatever else is registered; a second run of the same schedule, or one whose
    colour is taken, takes the next free colour."""
    listing = list(ORDER) + [s.name for s in all_specs() if s.name not in ORDER]
    rank = {name: i for i, name in enumerate(listing)}
    n = len(PALETTE)
    used: set[str] = set()
    out = {}
    for name, schedule in zip(names, schedules):
        want = rank.get(schedule, 0)
        free = [PALETTE[(want + k) % n] for k in range(n) if PALETTE[(want + k) % n] not in used]
        out[name] = free[0] if free else PALETTE[want % n]
        used.add(out[name])
    return out


def schedule_colors(items) -> dict[str, str]:
    """The colour each run gets in every chart of this module, keyed by its (unique) display name."""
    configs = [x.config if isinstance(x, Result) else x for x in _items(items, "items", _RUNS, (Result, Config))]
    names = _display_names(configs)
    return _colors(names, [c.schedule for c in configs])


@dataclasses.dataclass(frozen=True)
class _Runs:
    """Simulated runs with the names and colours every chart of one comparison shares."""

    results: list[Result]
    names: list[str]
    colors: dict[str, str]

    @classmethod
    def of(cls, items) -> "_Runs":
        results = _results(items)
        names = _display_names([r.config for r in results])
        return cls(results, names, _colors(names, [r.config.schedule for r in results]))

    def color(self, legend: bool = True) -> alt.Color:
        return alt.Color("name:N", title="schedule", legend=alt.Legend(symbolType="square") if legend else None,
                         scale=alt.Scale(domain=self.names, range=[self.colors[n] for n in self.names]))


def _metric(metric, table: dict, field: str = "metric") -> tuple[str, str, str]:
    if metric not in table:
        raise ConfigError(field, metric, "give " + " or ".join(f"{k!r} ({v[2]})" for k, v in table.items()))
    return table[metric]


# Memory units ---------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class _Unit:
    label: str
    factors: list[float]  # multiply activation units of result i by factors[i]
    note: str


def _memory_unit(results: Sequence[Result]) -> _Unit:
    sizes = [r.config.activation_bytes for r in results]
    if any(s is None for s in sizes):
        mixed = " (not every config gives activation_bytes, so bytes are not shown)" if any(sizes) else ""
        return _Unit(_ACTIVATION_UNIT, [1.0] * len(results), _UNIT_NOTE + mixed)
    largest = max(float(r.peak_memory.max()) * s for r, s in zip(results, sizes))
    prefixes = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
    k = next((k for k in range(len(prefixes)) if largest < 1024 ** (k + 1)), len(prefixes) - 1)
    return _Unit(prefixes[k], [s / 1024 ** k for s in sizes], "memory in bytes from activation_bytes")


def _memory_words(results: Sequence[Result]) -> tuple[str, bool]:
    static = any(r.static_memory.any() for r in results)
    return ("memory (activations + static)" if static else "activation memory"), static


# Pure helpers ---------------------------------------------------------------------------------

def pareto_front(bubble, memory) -> np.ndarray:
    """True for each point no other point beats: lower is better on both axes.

    A point is dominated when another is at most as high on both and lower on one; values
    within floating-point noise of each other count as equal, so rounding cannot decide.
    """
    x = np.asarray(bubble, dtype=float)
    y = np.asarray(memory, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ConfigError("memory", y.tolist(), f"give one memory value per bubble value ({x.size})")
    same_x = np.isclose(x[:, None], x[None, :], rtol=1e-9, atol=1e-12)
    same_y = np.isclose(y[:, None], y[None, :], rtol=1e-9, atol=1e-12)
    le_x = (x[:, None] <= x[None, :]) | same_x  # [j, i]: j is at most as high as i
    le_y = (y[:, None] <= y[None, :]) | same_y
    lt = ((x[:, None] < x[None, :]) & ~same_x) | ((y[:, None] < y[None, :]) & ~same_y)
    return ~(le_x & le_y & lt).any(axis=0)


def summarize_steps(times, values, max_points: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    """At most ``max_points`` change points of a step function, without losing a peak.

    ``(times[k], values[k])`` means the function holds ``values[k]`` from ``times[k]`` on.
    The span is cut into equal time buckets and each keeps its lowest and highest point
    (first occurrence), plus the first and the last point of the curve. Every point returned
    is one of the input's, so it lies on the true curve, and the true maximum (at the first
    time it is reached) and minimum are always kept. Curves that already fit are returned whole.
    """
    t = np.asarray(times, dtype=float)
    v = np.asarray(values, dtype=float)
    if t.shape != v.shape or t.ndim != 1:
        raise ConfigError("values", f"{v.size} values", f"give one value per time ({t.size} times)")
    if isinstance(max_points, bool) or not isinstance(max_points, (int, np.integer)) or max_points < 4:
        raise ConfigError("max_points", max_points, "give a whole number >= 4 (first, last, and a min and max)")
    n = len(t)
    if n <= max_points:
        return t, v
    buckets = (max_points - 2) // 2
    span = t[-1] - t[0]
    bucket = np.zeros(n, np.int64)
    if span > 0:
        bucket = np.minimum(((t - t[0]) / span * buckets).astype(np.int64), buckets - 1)
    starts = np.flatnonzero(np.r_[True, bucket[1:] != bucket[:-1]])
    group = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, n]))
    index = np.arange(n)
    keep = [np.array([0, n - 1])]
    for extreme in (np.maximum, np.minimum):
        best = extreme.reduceat(v, starts)
        keep.append(np.minimum.reduceat(np.where(v == best[group], index, n), starts))
    kept = np.unique(np.concatenate(keep))
    return t[kept], v[kept]


# Charts ---------------------------------------------------------------------------------------

def _title(text: str, *subtitle: str) -> alt.TitleParams:
    return alt.TitleParams(text, subtitle=[s for s in subtitle if s] or alt.Undefined, anchor="start",
                           subtitleColor="#555555", subtitleFontSize=11)


def _headroom(values, factor: float) -> float:
    """An axis end that leaves room for labels beyond the largest value (and is never 0)."""
    top = max(values, default=0.0)
    return top * factor if top > 0 else 1.0


def _fmt(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def _num(x) -> float | None:
    return None if x is None else float(x)


def _bubble(runs: _Runs, metric: str, legend: bool = False, height: int | None = None) -> alt.LayerChart:
    attr, label, definition = _metric(metric, BUBBLE_METRICS)
    rows = []
    for name, r in zip(runs.names, runs.results):
        cf = r.closed_form
        c = r.config
        value = getattr(r, attr)
        closed = getattr(cf, attr) if cf else None
        rows.append({
            "name": name, "schedule": c.schedule, "devices": r.devices, "microbatches": c.microbatches,
            "v": c.stages_per_device, "simulated": float(value), "closed": _num(closed),
            "closed_applies": cf.applies if cf else None,
            "formula": f"{cf.bubble_formula} idle per device" if cf else "none published",
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
    y = alt.Y("name:N", sort=order, title=None, axis=alt.Axis(labelLimit=240, labelFontSize=12))
    base = alt.Chart({"values": rows}).encode(y=y)
    # bars keep a readable thickness however tall the chart is made to match its neighbours
    band = 30 if height is None else height / len(rows)
    bar = min(0.7 * band, 24)
    bars = base.mark_bar(height=bar).encode(
        x=alt.X("simulated:Q", title=f"{label} = {definition}", axis=alt.Axis(format="%", tickCount=6),
                scale=alt.Scale(domain=[0, _headroom([row["end"] for row in rows], 1.16)], nice=False)),
        color=runs.color(legend=legend), tooltip=tooltip)
    ticks = base.transform_filter("isValid(datum.closed)").mark_tick(
        color=_CLOSED_MARK, thickness=2.5, size=bar + 8).encode(
        x="closed:Q",
        opacity=alt.Opacity("closed_applies:N", scale=alt.Scale(domain=[True, False], range=[1.0, 0.35]), legend=None),
        tooltip=tooltip)
    text = base.mark_text(align="left", dx=5, fontSize=11, color="#333333").encode(x="end:Q", text="text:N")
    return alt.layer(bars, ticks, text).properties(
        width=360, height=alt.Step(band) if height is None else height,
        title=_title(f"{label.capitalize()} per schedule", "bars: simulated, lower is better",
                     "black tick: published closed form (faded where its assumptions do not hold)"))


def bubble_chart(items, *, metric: str = "fraction") -> alt.LayerChart:
    """Simulated bubble per run as bars, with the published closed form as a black tick.

    ``metric="fraction"`` plots idle / (p × makespan); ``"rate"`` plots (makespan − ideal) / ideal
    with ideal = m·(f+b+w). A tick appears only where the schedule has a published formula,
    faded when this config breaks one of its assumptions (e.g. ``comm > 0``). Bars are sorted
    best first; the axis and title name the definition plotted.
    """
    _metric(metric, BUBBLE_METRICS)
    return _bubble(_Runs.of(items), metric)


def _memory(runs: _Runs) -> alt.LayerChart:
    unit = _memory_unit(runs.results)
    what, static = _memory_words(runs.results)
    rows = []
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
                "closed_applies": cf.applies if c is not None else None,
                "formula": cf.memory_formula if c is not None else "none published",
            })
    tooltip = [alt.Tooltip("name:N", title="schedule"), alt.Tooltip("device:O"),
               alt.Tooltip("peak:Q", title=f"peak {what} ({unit.label})", format=".4~g")]
    if static:
        tooltip += [alt.Tooltip("activation:Q", title="activations at that peak", format=".4~g"),
                    alt.Tooltip("static:Q", title="static (params, grads, optimizer)", format=".4~g")]
    tooltip += [alt.Tooltip("closed:Q", title=f"closed form ({unit.label})", format=".4~g"),
                alt.Tooltip("formula:N", title="closed form"),
                alt.Tooltip("closed_applies:N", title="formula's assumptions hold")]
    base = alt.Chart({"values": rows}).encode(
        x=alt.X("device:O", title="device (pipeline rank)", axis=alt.Axis(labelAngle=0)),
        xOffset=alt.XOffset("name:N", sort=runs.names))
    bars = base.mark_bar().encode(
        y=alt.Y("peak:Q", title=f"peak {what} ({unit.label})", scale=alt.Scale(zero=True)),
        color=runs.color(), tooltip=tooltip)
    ticks = base.transform_filter("isValid(datum.closed)").mark_tick(color=_CLOSED_MARK, thickness=2.5).encode(
        y="closed:Q",
        opacity=alt.Opacity("closed_applies:N", scale=alt.Scale(domain=[True, False], range=[1.0, 0.35]), legend=None),
        tooltip=tooltip)
    devices = max(r.devices for r in runs.results)
    return alt.layer(bars, ticks).properties(
        width=max(360, min(900, devices * len(runs.names) * 12)), height=260,
        title=_title(f"Peak {what} per device", unit.note,
                     "static = parameters, gradients and optimizer state" if static else "",
                     "black tick: published closed form (faded where its assumptions do not hold)"))


def memory_chart(items) -> alt.LayerChart:
    """Peak memory of every device, bars grouped by device, one colour per run.

    Activation units, or bytes when every config gives ``activation_bytes``; static memory is
    included when any config has ``params > 0``. The published closed-form peak is a black tick.
    """
    return _memory(_Runs.of(items))


def _pareto(runs: _Runs, metric: str, height: int = 260) -> alt.LayerChart:
    attr, label, definition = _metric(metric, BUBBLE_METRICS)
    unit = _memory_unit(runs.results)
    what, _ = _memory_words(runs.results)
    bubble = [float(getattr(r, attr)) for r in runs.results]
    memory = [float(r.peak_memory.max()) * k for r, k in zip(runs.results, unit.factors)]
    front = pareto_front(bubble, memory)
    x_end, y_end = _headroom(bubble, 1.08), _headroom(memory, 1.1)
    width = 360
    texts, place = _place_labels([b / x_end * width for b in bubble], [height - m / y_end * height for m in memory],
                                 runs.names, [not f for f in front], width, height)
    rows = [{"name": n, "schedule": r.config.schedule, "bubble": b, "memory": m, "front": bool(f),
             "status": "Pareto front" if f else "dominated", "busiest": int(np.argmax(r.peak_memory)),
             "text": t, "place": k}
            for n, r, b, m, f, t, k in zip(runs.names, runs.results, bubble, memory, front, texts, place)]
    tooltip = [alt.Tooltip("name:N", title="schedule"),
               alt.Tooltip("bubble:Q", title=label, format=".2%"),
               alt.Tooltip("memory:Q", title=f"peak {what} ({unit.label})", format=".4~g"),
               alt.Tooltip("busiest:Q", title="on device"), alt.Tooltip("status:N", title="status")]
    base = alt.Chart({"values": rows}).encode(
        x=alt.X("bubble:Q", title=f"{label} = {definition}", axis=alt.Axis(format="%", tickCount=6),
                scale=alt.Scale(domain=[0, x_end], nice=False)),
        y=alt.Y("memory:Q", title=f"peak {what}, busiest device ({unit.label})",
                scale=alt.Scale(domain=[0, y_end], nice=False)))
    line = base.transform_filter("datum.front").mark_line(
        interpolate="step-after", color="#888888", strokeDash=[4, 3], strokeWidth=1.5).encode(order="bubble:Q")
    front_points = base.transform_filter("datum.front").mark_point(filled=True, size=110, opacity=1).encode(
        color=runs.color(), tooltip=tooltip)
    other_points = base.transform_filter("!datum.front").mark_point(size=110, strokeWidth=2, opacity=1).encode(
        color=runs.color(), tooltip=tooltip)
    labels = [base.transform_filter(f"datum.place == {k}").mark_text(
        align=align, baseline=baseline, dx=dx, dy=dy, lineBreak="\n", fontSize=_LABEL_FONT, lineHeight=_LABEL_LINE,
        color="#333333").encode(text="text:N")
        for k, (align, baseline, dx, dy) in enumerate(_LABEL_PLACES)]
    return alt.layer(line, front_points, other_points, *labels).properties(
        width=width, height=height,
        title=_title(f"{label.capitalize()} vs peak memory", "lower left is better; filled: on the Pareto front "
                     "(no other run is lower on both), hollow: dominated"))


_LABEL_FONT, _LABEL_LINE = 11, 13
_GLYPH = 0.55  # average glyph width in ems of the default sans-serif, a little generous
#: Where a point's label may go, in order of preference: (align, baseline, dx, dy) in pixels.
_LABEL_PLACES = (("left", "bottom", 7, -3), ("left", "top", 7, 3), ("right", "bottom", -7, -3),
                 ("right", "top", -7, 3), ("center", "bottom", 0, -9), ("center", "top", 0, 9),
                 ("left", "middle", 10, 0), ("right", "middle", -10, 0), ("left", "bottom", 7, -14),
                 ("left", "top", 7, 14), ("right", "bottom", -7, -14), ("right", "top", -7, 14))


def _place_labels(xs, ys, names, rank, width, height) -> tuple[list[str], list[int]]:
    """Label text and spot (index in ``_LABEL_PLACES``, −1 for none) of each point, in pixels.

    Vega-Lite cannot move labels apart, so this does it here: points closer than a marker
    share one label (a line per name, top point first, on the first by ``rank``), and labels
    are placed greedily in ``rank`` order inside the plot, clear of each other and if possible
    of every marker, using an average glyph width. Labels that find no spot get a second try
    placed first; a label still without a spot is left out (the legend and tooltip name it).
    """
    order = sorted(range(len(xs)), key=lambda i: (rank[i], xs[i], i))
    near = 8.0
    group: dict[int, list[int]] = {}
    for i in order:
        lead = next((j for j in group if abs(xs[j] - xs[i]) < near and abs(ys[j] - ys[i]) < near), None)
        group.setdefault(i if lead is None else lead, []).append(i)
    texts = [""] * len(xs)
    for lead, members in group.items():
        texts[lead] = "\n".join(names[i] for i in sorted(members, key=lambda i: ys[i]))
    dot = 6.0
    markers = [(x - dot, y - dot, x + dot, y + dot) for x, y in zip(xs, ys)]

    def spots(i):
        lines = texts[i].split("\n")
        w, h = _GLYPH * _LABEL_FONT * max(map(len, lines)), _LABEL_LINE * len(lines)
        for align, baseline, dx, dy in _LABEL_PLACES:
            x0 = xs[i] + dx - {"left": 0, "center": w / 2, "right": w}[align]
            y0 = ys[i] + dy - {"bottom": h, "middle": h / 2, "top": 0}[baseline]
            yield x0, y0, x0 + w, y0 + h

    def free(box, avoid):
        inside = box[0] >= 0 and box[1] >= 0 and box[2] <= width and box[3] <= height
        return inside and not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in avoid)

    def attempt(sequence):
        boxes, place = [], [-1] * len(xs)
        for i in sequence:
            candidates = list(spots(i))
            # clear of markers and labels if possible; else over a marker rather than dropping the name
            k = next((k for k, s in enumerate(candidates) if free(s, markers + boxes)),
                     next((k for k, s in enumerate(candidates) if free(s, boxes)), -1))
            if k >= 0:
                place[i] = k
                boxes.append(candidates[k])
        return place

    labelled = [i for i in order if texts[i]]
    place = attempt(labelled)
    dropped = [i for i in labelled if place[i] < 0]
    if dropped:
        retry = attempt(dropped + [i for i in labelled if place[i] >= 0])
        if retry.count(-1) < place.count(-1):
            place = retry
    return texts, place


def pareto_chart(items, *, metric: str = "fraction") -> alt.LayerChart:
    """Bubble (x) against the busiest device's peak memory (y) for each run.

    Runs on the Pareto front (no other run is at least as low on both and lower on one) are
    filled and joined by a dashed staircase; dominated runs are hollow.
    """
    _metric(metric, BUBBLE_METRICS)
    return _pareto(_Runs.of(items), metric)


def comparison_charts(items, *, metric: str = "fraction") -> alt.VConcatChart:
    """Bubble and the bubble/memory Pareto scatter side by side, peak memory per device below,
    with one shared colour per run. Every run is simulated once."""
    _metric(metric, BUBBLE_METRICS)
    runs = _Runs.of(items)
    height = max(260, 30 * len(runs.names))
    top = alt.hconcat(_bubble(runs, metric, legend=True, height=height), _pareto(runs, metric, height), spacing=40)
    return alt.vconcat(top, _memory(runs).properties(width=800), spacing=30).resolve_scale(color="shared")


def memory_curve_chart(item, *, max_rows: int = MAX_ROWS) -> alt.FacetChart:
    """Memory over time of one run: a row per device, step lines on a shared scale, each
    device's peak marked with a dot (at the first time it is reached) and given in its label.

    Long runs are summarised with :func:`summarize_steps` to at most about ``max_rows`` points
    in all (every time bucket keeps its lowest and highest point, so no peak is lost); the
    subtitle says when this happened.
    """
    if isinstance(item, (list, tuple)) and len(item) == 1:
        item = item[0]
    if not isinstance(item, (Result, Config)):
        raise ConfigError("item", item, "give one ppviz.Result or ppviz.Config",
                          reason=f"a {type(item).__name__} is not one run")
    if isinstance(max_rows, bool) or not isinstance(max_rows, (int, np.integer)) or max_rows < 8:
        raise ConfigError("max_rows", max_rows, "give a whole number >= 8")
    r = item if isinstance(item, Result) else simulate(item)
    c = r.config
    p = r.devices
    unit = _memory_unit([r])
    k = unit.factors[0]
    what, _ = _memory_words([r])
    name = _display_names([c])[0]
    color = _colors([name], [c.schedule])[name]
    per_device = max(4, max_rows // p - 1)  # one more row per device carries the curve to the makespan
    rows = []
    total = kept = 0
    for d in range(p):
        times, values = r.memory.curve(d)
        values = values + r.static_memory[d]
        top = int(np.argmax(values))
        row = f"device {d} · peak {_fmt(values[top] * k)}"
        st, sv = summarize_steps(times, values, per_device)
        total += len(times)
        kept += len(st)
        if st[-1] < r.makespan:
            st, sv = np.r_[st, r.makespan], np.r_[sv, sv[-1]]
        rows += [{"device": d, "row": row, "time": float(t), "memory": float(v) * k,
                  "peak": bool(t == times[top])} for t, v in zip(st, sv)]
    note = (f"summarised: {kept} of {total} change points kept (each time bucket's min and max)"
            if kept < total else "")
    tooltip = [alt.Tooltip("device:O"), alt.Tooltip("time:Q", title="from time", format=".4~g"),
               alt.Tooltip("memory:Q", title=f"{what} ({unit.label})", format=".4~g")]
    base = alt.Chart({"values": rows}).encode(
        x=alt.X("time:Q", title="time (units of f, b, w)", scale=alt.Scale(domain=[0, r.makespan], nice=False)),
        y=alt.Y("memory:Q", title=None, scale=alt.Scale(zero=True), axis=alt.Axis(tickCount=2, grid=False)))
    area = base.mark_area(interpolate="step-after", color=color, opacity=0.22)
    line = base.mark_line(interpolate="step-after", color=color, strokeWidth=1.5).encode(tooltip=tooltip)
    dot = base.transform_filter("datum.peak").mark_point(
        filled=True, size=42, color="black", stroke="white", strokeWidth=0.8).encode(
        tooltip=[alt.Tooltip("device:O"), alt.Tooltip("memory:Q", title="peak", format=".4~g"),
                 alt.Tooltip("time:Q", title="first reached at", format=".4~g")])
    return alt.layer(area, line, dot).properties(width=560, height=max(22, min(56, 480 // p))).facet(
        row=alt.Row("row:N", title=None, sort=alt.SortField("device"),
                    header=alt.Header(labelAngle=0, labelAlign="left", labelOrient="left", labelFontSize=11)),
        spacing=4,
        title=_title(f"{what.capitalize()} over time: {name}",
                     f"p={p}, m={c.microbatches}, v={c.stages_per_device}; {what} in {unit.label}, "
                     f"same scale on every row; black dot: the device's peak", unit.note, note))


def sweep_chart(items, microbatches, *, devices: int | None = None, metric: str = "makespan",
                **options) -> alt.LayerChart:
    """Makespan (or bubble, with ``metric="fraction"|"rate"``) against the number of microbatches.

    ``items`` are schedule names, configs or results (or one of them); each is run at every m
    in ``microbatches``, with ``devices`` and any other Config field in ``options`` (f, b, w,
    comm, stages_per_device, ...) replacing its own. A schedule that refuses some m (a
    ScheduleConstraintError, e.g. m < p) is skipped there; the subtitle and tooltips say where
    and why. The published closed form is a dashed line of the same colour.
    """
    attr, label, definition = _metric(metric, SWEEP_METRICS)
    items = _items(items, "items", "give schedule names, ppviz.Config or ppviz.Result, or a non-empty list of them",
                   (str, Config, Result))
    ms = _items(microbatches, "microbatches", "give a non-empty list of whole numbers >= 1", (int, np.integer))
    if any(isinstance(m, bool) or m < 1 for m in ms):
        raise ConfigError("microbatches", ms, "give a non-empty list of whole numbers >= 1")
    ms = sorted({int(m) for m in ms})
    fields = {f.name for f in dataclasses.fields(Config)} - {"schedule", "microbatches", "devices"}
    for key in options:
        if key not in fields:
            raise ConfigError(key, options[key], f"options are Config fields: {', '.join(sorted(fields))}")
    changes = {**options, **({} if devices is None else {"devices": devices})}
    for item in items:
        if isinstance(item, str):
            lookup(item)  # an unknown name is a mistake to report, not a constraint to skip

    series = []  # (plain label, results, [(m, why refused)])
    for item in items:
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
    names = _display_names([done[0].config for _, done, _ in ran], ignore=("microbatches",))
    colors = _colors(names, [done[0].config.schedule for _, done, _ in ran])
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
                        scale=alt.Scale(domain=names, range=[_SHAPES[i % len(_SHAPES)] for i in range(len(names))])))
    p_text = ", ".join(sorted({f"p={r.devices}" for _, done, _ in ran for r in done}))
    return alt.layer(lines, points).properties(
        width=420, height=280,
        title=_title(f"{label.capitalize()} vs microbatches", f"{p_text}; dashed: published closed form", *notes))


# Display and export ---------------------------------------------------------------------------

class OfflineChart(alt.JupyterChart):
    """A JupyterChart whose vega / vega-lite / vega-embed come bundled from vl-convert.

    Altair's ``enable_offline`` is a classmethod that stores the bundle on the class it is
    called on; calling it on this subclass keeps ``alt.JupyterChart`` (and the user's other
    charts) exactly as they were. The class attribute below is this class's own, so its state
    never follows ``alt.JupyterChart.enable_offline(...)`` either.
    """

    _is_offline = False


def widget(chart, **options) -> OfflineChart:
    """A JupyterChart widget of ``chart`` that renders with no internet (selections and params
    sync to Python as with ``alt.JupyterChart``). The JavaScript is bundled once per process."""
    OfflineChart.enable_offline()
    return OfflineChart(chart, **options)


def display(chart, **options) -> None:
    """Show ``chart`` in the notebook offline (see :func:`widget`)."""
    from IPython.display import display as show

    show(widget(chart, **options))


def _spec(chart) -> dict:
    if isinstance(chart, alt.TopLevelMixin):
        return chart.to_dict()
    if isinstance(chart, dict):
        return chart
    raise ConfigError("chart", chart, "give an Altair chart or a Vega-Lite spec dict")


def to_svg(chart) -> str:
    """The chart as SVG text, rendered by vl-convert: no browser, and no network (external
    data URLs are refused rather than fetched)."""
    return vl_convert.vegalite_to_svg(_spec(chart), vl_version=_VL_VERSION, allowed_base_urls=[])


def to_png(chart, scale: float = 2.0) -> bytes:
    """The chart as PNG bytes at ``scale`` × its size (2 for sharp text on high-DPI screens),
    rendered by vl-convert with no browser and no network."""
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not 0 < scale <= 16:
        raise ConfigError("scale", scale, "give a number > 0 and <= 16")
    return vl_convert.vegalite_to_png(_spec(chart), vl_version=_VL_VERSION, scale=float(scale), allowed_base_urls=[])


__all__ = [
    "MAX_ROWS", "OfflineChart", "PALETTE", "bubble_chart", "comparison_charts", "display", "memory_chart",
    "memory_curve_chart", "pareto_chart", "pareto_front", "schedule_colors", "summarize_steps", "sweep_chart",
    "to_png", "to_svg", "widget",
]


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


GANTT_THEMES = {
    "light": _GanttTheme("#ffffff", "#1c2128", "#5d6672", "#8a939e", "#1c2128", "#5d6672", 0.30, "#eef0f3",
                         "#f6f7f9", ("#0072b2", "#e69f00", "#009e73", "#cc79a7"), (0, 0.18, 0.33, 0.47),
                         "#6a5acd", 0.22, "#1c2128"),
    "dark": _GanttTheme("#15171c", "#e6e9ee", "#9aa4b1", "#6f7a87", "#e6e9ee", "#9aa4b1", 0.26, "#20242c",
                        "#1c1f26", ("#56b4e9", "#e69f00", "#23b58a", "#d98cb9"), (0, 0.16, 0.30, 0.43),
                        "#a79bff", 0.24, "#e6e9ee"),
}

_KINDS = ("F", "B", "I", "W", "F&B")
#: Colour of each kind: I and B share one, both being the backward the previous stage waits for.
_SLOT_OF = {"F": "F", "B": "B", "I": "B", "W": "W", "F&B": "F&B"}
#: Adjacent microbatches get shades far apart.
_SHADE_ORDER = (0, 2, 1, 3)
_BAR_INSET_PX = 3
_GAP_MIN_PX = 4  # bars at least this wide keep a one-pixel gap to the next, as in the widget
_HATCH_PX = 4.5
_DIGIT_PX, _LABEL_PAD_PX = 6.6, 6  # an 11 px bold digit, and the room a label needs around it


def _rgb(c: str) -> tuple[int, int, int]:
    return int(c[1:3], 16), int(c[3:5], 16), int(c[5:7], 16)


def _luminance(rgb) -> float:
    lin = [v / 255 / 12.92 if v / 255 <= 0.03928 else ((v / 255 + 0.055) / 1.055) ** 2.4 for v in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _ink(rgb) -> str:
    """Near-black or white, whichever contrasts more with ``rgb`` (the widget's rule)."""
    lum, dark = _luminance(rgb), _luminance(_rgb("#15171c"))
    return "#15171c" if (lum + 0.05) / (dark + 0.05) >= 1.05 / (lum + 0.05) else "#ffffff"


def _paints(theme: _GanttTheme) -> dict[str, tuple[str, str]]:
    """Paint key (``"F0"``..``"F&B3"``: colour slot and microbatch shade, and ``"idle"``) →
    (fill, ink of a label on it)."""
    out = {}
    for slot, base in zip(("F", "B", "W", "F&B"), theme.kinds):
        for shade, t in enumerate(theme.steps):
            rgb = tuple(round(v + (255 - v) * t) for v in _rgb(base))
            out[f"{slot}{shade}"] = ("#%02x%02x%02x" % rgb, _ink(rgb))
    out["idle"] = (theme.idle, theme.foreground)
    return out


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


def _gantt_pieces(r: Result, width: int, merge_above: int) -> _Pieces:
    program, o = r.program, r.ops
    makespan = r.makespan
    # the widget draws a pair once, and its second op adds no time
    slot = np.flatnonzero(~np.r_[False, program.pair[:-1]])
    dev, s, e = o.device[slot], o.start[slot], o.end[slot]
    kind = o.kind[slot].astype(object)
    kind[program.pair[slot]] = "F&B"
    code = np.zeros(len(slot), np.int64)
    for c, k in enumerate(_KINDS):
        code[kind == k] = c
    n = len(slot)
    # float sums leave ulp-sized gaps between ops that touch: they are not idle time
    eps = 1e-9 * makespan
    same = dev[1:] == dev[:-1]
    gap = s[1:] - e[:-1]
    first = np.flatnonzero(np.r_[True, ~same])
    last = np.r_[first[1:] - 1, n - 1]

    def plan(pixels: int, absorb: bool):
        t = pixels * makespan / width
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
        k = int(slot[i])
        mb = int(o.microbatch[k])
        row = {"device": int(dev[i]), "stage": int(o.stage[k]), "microbatch": mb, "kind": kind[i],
               "start": float(s[i]), "end": float(e[i]), "op": program.action_at(k),
               "paint": f"{_SLOT_OF[kind[i]]}{_SHADE_ORDER[mb % 4]}"}
        if kind[i] == "F&B":
            row["op"] = f"{o.stage[k]}F{mb} & {program.action_at(k + 1)}"
            row["backward_microbatch"] = int(o.microbatch[k + 1])
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
        idle = end - start - float(times.sum())
        if idle > eps:
            shares.append(("idle", idle, 0))
        total = sum(t for _, t, _ in shares)
        top = 0.0
        for k, t, count in shares:
            bands.append({"device": int(dev[a]), "start": start, "end": end, "kind": k, "time": t, "ops": count,
                          "run_ops": b - a, "top": top, "bottom": top + t / total,
                          "paint": "idle" if k == "idle" else f"{_SLOT_OF[k]}0"})
            top += t / total

    between = np.flatnonzero(same & ~joined & (gap > eps))
    spans = list(zip(dev[first].tolist(), [0.0] * len(first), s[first].tolist()))
    spans += zip(dev[between].tolist(), e[between].tolist(), s[between + 1].tolist())
    spans += zip(dev[last].tolist(), e[last].tolist(), [makespan] * len(last))
    spans += [(d, 0.0, makespan) for d in sorted(set(range(r.devices)) - set(dev.tolist()))]
    gaps = [{"device": d, "start": a, "end": b} for d, a, b in sorted(spans) if b - a > eps]
    return _Pieces(ops, bands, gaps, len(runs), len(members), pixels, absorb)


def _hatch(gaps: list[dict], px: float, row: float, pad: float) -> list[dict]:
    """Diagonal strokes filling each idle gap, like the widget's hatch: 45° in pixels, aligned
    across gaps, spaced wider if that is what keeps them within the row limit."""
    boxes = np.array([(g["start"] * px, (g["device"] + pad) * row, g["end"] * px, (g["device"] + 1 - pad) * row)
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


def _as_run(item) -> Result:
    if isinstance(item, (list, tuple)) and len(item) == 1:
        item = item[0]
    if isinstance(item, Result):
        return item
    from .ir import Program

    if isinstance(item, (Config, Program)):
        return simulate(item)
    raise ConfigError("item", item, "give one ppviz.Result, ppviz.Config or ppviz.Program",
                      reason=f"a {type(item).__name__} is not one run")


def gantt_chart(item, *, memory: bool = True, labels: bool = True, width: int = 900,
                row_height: int | None = None, theme: str = "light",
                merge_above: int = 3000) -> alt.LayerChart | alt.VConcatChart:
    """A static Gantt chart of one run in the widget's look, for SVG / PNG export and papers.

    One row per device (labelled with its stages and idle share); ops coloured by kind (F blue,
    B and I amber, W green, F&B pink) and shaded by microbatch, labelled with their microbatch
    where wide enough (``labels``); idle time hatched; the makespan, bubble and peak memory,
    simulated and closed form, in the title; with ``memory`` each device's activation memory
    over time below, on one scale, its closed-form peak dashed.

    ``width`` is the plot's width in pixels, ``row_height`` a device row's (default: by p),
    ``theme`` ``"light"`` or ``"dark"``. Above ``merge_above`` ops (and whenever the spec would
    pass Altair's row limit) each device's consecutive ops narrower than a pixel become runs
    whose stacked bands give each kind's share of the run's time; idle gaps stay exact (if even
    that is too many rows, gaps narrower than a pixel join their run as a grey band, then runs
    widen). The subtitle says when this happened. ``item`` is a Result, or a Config or Program
    to simulate.
    """
    r = _as_run(item)
    if theme not in GANTT_THEMES:
        raise ConfigError("theme", theme, "give 'light' or 'dark'")
    for name, flag in (("memory", memory), ("labels", labels)):
        if not isinstance(flag, (bool, np.bool_)):
            raise ConfigError(name, flag, "give True or False")
    width = _whole(width, "width", 200, 10_000)
    merge_above = _whole(merge_above, "merge_above", 0, MAX_ROWS)
    p = r.devices
    row = int(np.clip(480 // p, 16, 34)) if row_height is None else _whole(row_height, "row_height", 8, 120)
    makespan = r.makespan
    if not makespan > 0:
        raise ConfigError("item", r, "give a run whose ops take time (the makespan is 0)")
    th = GANTT_THEMES[theme]
    paints = _paints(th)
    pieces = _gantt_pieces(r, width, merge_above)
    px = width / makespan
    pad = _BAR_INSET_PX / row if row >= 14 else 0.1

    time_axis = alt.Axis(title="time (units of f, b, w)", titleColor=th.muted, titleFontWeight="normal",
                         titleFontSize=11, labelColor=th.muted, labelFontSize=11, domainColor=th.axis,
                         tickColor=th.axis, gridColor=th.grid, gridOpacity=0.07, labelFlush=True)
    x_scale = alt.Scale(domain=[0, makespan], nice=False, zero=False)

    def x(field: str) -> alt.X:
        # every layer names the same axis, so the merged axis keeps it
        return alt.X(field, type="quantitative", scale=x_scale, axis=time_axis)

    y_scale = alt.Scale(domain=[0, p], reverse=True, nice=False, zero=False)
    y = alt.Y("y:Q", scale=y_scale, axis=None)
    bar_y = [alt.Y("device_top:Q", scale=y_scale, axis=None), alt.Y2("device_bottom:Q")]

    def on_row(chart: alt.Chart) -> alt.Chart:
        return chart.transform_calculate(device_top=f"datum.device + {pad}", device_bottom=f"datum.device + {1 - pad}")

    present = {op["kind"] for op in pieces.ops} | {b["kind"] for b in pieces.bands if b["kind"] != "idle"}
    backward = "B / I backward" if {"B", "I"} <= present else "I backward (inputs)" if "I" in present \
        else "B backward"
    names = {"F0": "F forward", "B0": backward, "W0": "W backward (weights)", "F&B0": "F&B overlapped pair",
             "idle": "idle (bubble)"}
    shown = [key for key in names if key == "idle" or any(_SLOT_OF[k] + "0" == key for k in present)]
    label_expr = "{" + ", ".join(f"'{k}': '{v}'" for k, v in names.items()) + "}[datum.label]"
    color = alt.Color("paint:N", scale=alt.Scale(domain=list(paints), range=[f for f, _ in paints.values()]),
                      legend=alt.Legend(values=shown, labelExpr=label_expr, title=None, orient="top",
                                        direction="horizontal", symbolType="square", symbolSize=140,
                                        symbolStrokeWidth=0, labelFontSize=12, labelColor=th.foreground,
                                        columnPadding=18, offset=6))

    gaps = on_row(alt.Chart({"values": pieces.gaps})).mark_rect(color=th.idle).encode(
        x("start:Q"), x2="end:Q", y=bar_y[0], y2=bar_y[1],
        tooltip=[alt.Tooltip("device:O"), alt.Tooltip("start:Q", title="idle from", format=".4~g"),
                 alt.Tooltip("end:Q", title="until", format=".4~g")])
    layers = [gaps]
    hatch = _hatch(pieces.gaps, px, row, pad)
    if hatch:
        layers.append(alt.Chart({"values": hatch}).mark_rule(
            color=th.hatch, opacity=th.hatch_opacity, strokeWidth=1.2, aria=False).encode(
            x("x:Q"), x2="x2:Q", y=y, y2="y2:Q"))
    if pieces.bands:
        layers.append(alt.Chart({"values": pieces.bands}).transform_calculate(
            band_top=f"datum.device + {pad} + datum.top * {1 - 2 * pad}",
            band_bottom=f"datum.device + {pad} + datum.bottom * {1 - 2 * pad}").mark_rect().encode(
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
    bar_px = row - 2 * pad * row
    if labels and bar_px >= 12:
        texts = []
        for op in pieces.ops:
            text = str(op["microbatch"]) if op["kind"] != "F&B" else f"{op['microbatch']}|{op['backward_microbatch']}"
            if (op["end"] - op["start"]) * px - 1 >= len(text) * _DIGIT_PX + _LABEL_PAD_PX:
                texts.append({"device": op["device"], "x": (op["start"] + op["end"] - 1 / px) / 2, "text": text,
                              "ink": paints[op["paint"]][1]})
        if texts:
            layers.append(alt.Chart({"values": texts}).transform_calculate(y="datum.device + 0.5").mark_text(
                fontSize=11 if bar_px >= 18 else 9, fontWeight="bold", baseline="middle", aria=False).encode(
                x("x:Q"), y=y, text="text:N", color=alt.Color("ink:N", scale=None)))

    heads = []
    for d in range(p):
        stages = r.program.placement.describe(d) if r.program.placement is not None else ""
        idle = f"{r.idle[d] / makespan:.0%} idle"
        heads.append({"device": d, "name": f"device {d}", "detail": f"{stages} · {idle}" if stages else idle})
    two_lines = row >= 26
    head = alt.Chart({"values": heads}).transform_calculate(y="datum.device + 0.5")
    layers.append(head.mark_text(align="right", baseline="middle", dx=-10, dy=-7 if two_lines else 0,
                                 fontSize=12 if row >= 20 else 10, fontWeight="bold", color=th.foreground).encode(
        x=alt.XDatum(0, type="quantitative", scale=x_scale, axis=time_axis), y=y, text="name:N"))
    if two_lines:
        layers.append(head.mark_text(align="right", baseline="middle", dx=-10, dy=8, fontSize=10,
                                     color=th.muted).encode(
            x=alt.XDatum(0, type="quantitative", scale=x_scale, axis=time_axis), y=y, text="detail:N"))
    gantt = alt.layer(*layers).properties(width=width, height=p * row, view=alt.ViewBackground(stroke=None))

    title = _gantt_title(r, pieces, th, width)
    if not memory:
        return gantt.properties(title=title, background=th.background, padding=16)
    return alt.vconcat(gantt, _memory_lanes(r, th, width, row, x_scale), spacing=22).properties(
        title=title, background=th.background, padding=16)


def _gantt_title(r: Result, pieces: _Pieces, th: _GanttTheme, width: int) -> alt.TitleParams:
    c, program, cf = r.config, r.program, r.closed_form
    wrap = max(60, int((width + 120) / 6.8))  # characters of 12 px text across the chart
    name = c.label if c.label is not None else (program.name if c.schedule == "custom" else c.schedule)
    v = f" · v={c.stages_per_device}" if c.stages_per_device > 1 else ""
    comm = f" · comm={c.comm:g}" if c.comm > 0 else ""
    sizes = f"p={r.devices} · m={program.microbatches}{v} · f={c.f:g} b={c.b:g} w={c.w:g}{comm} · {len(r.ops):,} ops"
    star = "" if cf is None or cf.applies else "*"

    def closed(text: str | None) -> str:
        return "" if cf is None else " (closed form: none)" if text is None else f" (closed form {text}{star})"

    peak = float(r.peak_memory.max())
    cf_peak = None
    if cf is not None and cf.peak_activation:
        cf_peak = _fmt(max(cf.peak_activation) + float(r.static_memory.max()))
    in_bytes = ""
    if c.activation_bytes:
        unit = _memory_unit([r])
        in_bytes = f" = {_fmt(peak * unit.factors[0])} {unit.label}"
    metrics = (f"makespan {_fmt(r.makespan)}{closed(_fmt(cf.makespan) if cf else None)} · "
               f"bubble {r.bubble_fraction:.1%} of p × makespan{closed(f'{cf.bubble_fraction:.1%}' if cf else None)} · "
               f"peak memory {_fmt(peak)}{in_bytes}{closed(cf_peak)}")
    lines = [sizes, metrics]
    if star:
        lines += textwrap.wrap(f"* the closed form assumes {cf.assumptions}; this config does not meet all of it", wrap)
    if pieces.runs:
        narrower = "a pixel" if pieces.pixels == 1 else f"{pieces.pixels} pixels"
        note = (f"{pieces.merged:,} ops narrower than {narrower} are drawn as {pieces.runs:,} runs; "
                f"a run's bands give each kind's share of its time")
        if pieces.absorbed:
            note += f"; idle gaps narrower than {narrower} are inside runs, as a grey band"
        lines += textwrap.wrap(note, wrap)
    return alt.TitleParams(name, subtitle=lines, anchor="start", color=th.foreground, fontSize=18,
                           subtitleColor=th.muted, subtitleFontSize=12, subtitlePadding=6, offset=10)


def _memory_lanes(r: Result, th: _GanttTheme, width: int, row: int, x_scale: alt.Scale) -> alt.LayerChart:
    p = r.devices
    unit = _memory_unit([r])
    k = unit.factors[0]
    lane = int(np.clip(row * 0.85, 12, 30))
    per_device = max(4, min(2 * width, MAX_ROWS // p - 1))
    cf = r.closed_form
    closed = list(cf.peak_activation) if cf is not None and cf.peak_activation else []
    curves, heads, rules = [], [], []
    top = 0.0
    for d in range(p):
        times, values = r.memory.curve(d)
        st, sv = summarize_steps(times, values, per_device)
        if st[-1] < r.makespan:
            st, sv = np.r_[st, r.makespan], np.r_[sv, sv[-1]]
        curves += [{"device": d, "time": float(t), "memory": float(v) * k} for t, v in zip(st, sv)]
        peak = float(r.peak_activation[d]) * k
        heads.append({"device": d, "peak": peak, "text": f"device {d}  peak {_fmt(peak)}"})
        if d < len(closed):
            rules.append({"device": d, "closed": float(closed[d]) * k})
        top = max(top, float(values.max()) * k, float(closed[d]) * k if d < len(closed) else 0.0)
    top = top or 1.0
    # lane d spans [d, d + 1]: memory rises from its bottom to 0.8 of its height at the top value
    level = f"datum.device + 1 - 0.8 * datum.{{}} / {top}"
    y_scale = alt.Scale(domain=[0, p], reverse=True, nice=False, zero=False)
    lanes = alt.Chart({"values": [{"device": d} for d in range(p)]}).transform_calculate(
        lane_top="datum.device + 0.1", lane_bottom="datum.device + 1").mark_rect(color=th.lane, aria=False).encode(
        x=alt.XDatum(0, type="quantitative", scale=x_scale, axis=None), x2=alt.X2Datum(r.makespan),
        y=alt.Y("lane_top:Q", scale=y_scale, axis=None), y2="lane_bottom:Q")
    area = alt.Chart({"values": curves}).transform_calculate(
        level=level.format("memory"), base="datum.device + 1").mark_area(
        interpolate="step-after", color=th.memory, opacity=th.memory_opacity,
        line={"color": th.memory, "strokeWidth": 1.2, "opacity": 1}).encode(
        x=alt.X("time:Q", scale=x_scale, axis=None), y=alt.Y("level:Q", scale=y_scale, axis=None), y2="base:Q",
        detail="device:N",
        tooltip=[alt.Tooltip("device:O"), alt.Tooltip("time:Q", title="from time", format=".4~g"),
                 alt.Tooltip("memory:Q", title=f"activation memory ({unit.label})", format=".4~g")])
    layers = [lanes, area]
    if rules:
        layers.append(alt.Chart({"values": rules}).transform_calculate(level=level.format("closed")).mark_rule(
            color=th.closed, strokeDash=[4, 3], strokeWidth=1, opacity=0.55).encode(
            x=alt.XDatum(0, type="quantitative", scale=x_scale, axis=None), x2=alt.X2Datum(r.makespan),
            y=alt.Y("level:Q", scale=y_scale, axis=None),
            tooltip=[alt.Tooltip("device:O"), alt.Tooltip("closed:Q", title="closed-form peak", format=".4~g")]))
    layers.append(alt.Chart({"values": heads}).transform_calculate(y="datum.device + 0.55").mark_text(
        align="right", baseline="middle", dx=-10, fontSize=11 if lane >= 16 else 9, color=th.muted).encode(
        x=alt.XDatum(0, type="quantitative", scale=x_scale), y=alt.Y("y:Q", scale=y_scale, axis=None),
        text="text:N"))
    what = "activation memory" + (f" ({unit.label})" if unit.label != _ACTIVATION_UNIT else "")
    subtitle = f"per device, same scale on every lane; {_UNIT_NOTE if k == 1 else unit.note}" + \
        ("; dashed: closed-form peak" if rules else "")
    return alt.layer(*layers).properties(
        width=width, height=p * lane, view=alt.ViewBackground(stroke=None),
        title=alt.TitleParams(what, subtitle=subtitle, anchor="start", color=th.foreground, fontSize=12,
                              subtitleColor=th.muted, subtitleFontSize=11, orient="top", offset=6))


__all__ += ["GANTT_THEMES", "gantt_chart"]
