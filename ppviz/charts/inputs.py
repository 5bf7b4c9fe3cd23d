"""What every chart takes: results or configs (simulated here), their display names, one colour
per schedule, the memory unit, and the pure helpers (Pareto front, step summaries)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import TypeVar

import altair as alt
import numpy as np

from ..analysis.comparison import display_names
from ..analysis.frontier import pareto_front  # noqa: F401  (the charts' Pareto test, defined with the frontier)
from ..core.config import Config
from ..core.engine import as_runs
from ..core.errors import ConfigError, checked_arguments
from ..core.registry import ORDER, all_specs
from ..core.result import Result
from .style import CHART, SERIES

#: Ten run colours (style.json "series", from Okabe–Ito and Paul Tol's sets), none near an op-kind
#: colour of either theme, so a run never looks like F, B, W or F&B; the first five stay apart
#: under every common colour-vision deficiency, all ten for normal vision (tests/test_colours.py).
PALETTE = SERIES

#: Altair refuses more than 5000 data rows by default; memory curves are summarised below it.
MAX_ROWS = 4000

BUBBLE_METRICS = {
    "fraction": ("bubble_fraction", "bubble fraction", "idle / (p × makespan)"),
    "rate": ("bubble_rate", "bubble rate", "(makespan − ideal) / ideal"),
}
SWEEP_METRICS = {"makespan": ("makespan", "makespan", "time of the last op's end"), **BUBBLE_METRICS}

CLOSED_MARK = CHART["closedForm"]
#: Hollow shapes tell apart runs whose sweep curves coincide (gpipe and 1f1b have equal makespans).
SHAPES = ("circle", "square", "triangle-up", "diamond", "triangle-down", "cross", "triangle-right", "triangle-left")
ACTIVATION_UNIT = "activation units"
UNIT_NOTE = "1 activation unit = one microbatch's activations through 1/p of the model"

# Inputs ---------------------------------------------------------------------------------------

def items_of(items, field: str, accepted: str, allowed: tuple[type, ...]) -> list:
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


def results_of(items, field: str = "runs") -> list[Result]:
    """The runs a chart draws (:func:`ppviz.core.engine.as_runs`), in one time unit."""
    results = as_runs(items, name=field)
    return one_time_unit(results, [r.config.display_name for r in results])


_Runs = TypeVar("_Runs", bound=Sequence[Result])


def one_time_unit(results: _Runs, names: Sequence[str]) -> _Runs:
    """``results``, when their times can share one axis and one ranking: all in one time unit."""
    units = {r.config.time_unit for r in results}
    if len(units) > 1:
        runs = ", ".join(f"{name} in {r.config.time_unit or 'no unit'}" for name, r in zip(names, results))
        raise ConfigError("time_unit", sorted(units, key=str), "give every run the same time_unit (a run in real "
                          "units cannot be set against one in units of f, b, w)",
                          reason=f"the runs' times are in different units: {runs}")
    return results


def colors_for(names: Sequence[str], schedules: Sequence[str]) -> dict[str, str]:
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


@checked_arguments
def schedule_colors(runs) -> dict[str, str]:
    """The colour each run gets in every chart of this module, keyed by its (unique) display name."""
    configs = [r.config for r in as_runs(runs, name="runs")]
    names = display_names(configs)
    return colors_for(names, [c.schedule for c in configs])


@dataclasses.dataclass(frozen=True)
class Runs:
    """Simulated runs with the names and colours every chart of one comparison shares."""

    results: list[Result]
    names: list[str]
    colors: dict[str, str]

    @classmethod
    def of(cls, items) -> "Runs":
        results = results_of(items)
        names = display_names([r.config for r in results])
        return cls(results, names, colors_for(names, [r.config.schedule for r in results]))

    @property
    def labelled(self) -> bool:
        """Whether charts must name the runs themselves rather than rely on a legend: where runs
        share a colour, grouped bars of one colour could not be told apart by it."""
        return len(set(self.colors.values())) < len(self.names)

    def legend(self, legend: bool | str = True) -> alt.Legend | None:
        """``legend`` False for none, True for one at the right, or ``"bottom"`` for one across the
        bottom (rows of up to five runs), which leaves the charts' width to the charts."""
        if legend == "bottom":
            return alt.Legend(symbolType="square", orient="bottom", direction="horizontal",
                              columns=min(5, len(self.names)), labelLimit=240)
        return alt.Legend(symbolType="square") if legend else None

    def color(self, legend: bool | str = True) -> alt.Color:
        """The runs' shared colour, with a :meth:`legend`."""
        return alt.Color("name:N", title="schedule", legend=self.legend(legend),
                         scale=alt.Scale(domain=self.names, range=[self.colors[n] for n in self.names]))

    def shapes(self) -> dict[str, str] | None:
        """Where there are more runs than colours, a shape per run that tells apart runs of one
        colour (the first a circle, the next a square, …); None while every run has a colour of
        its own."""
        if not self.labelled:
            return None
        seen: dict[str, int] = {}
        shapes = {}
        for name in self.names:
            colour = self.colors[name]
            shapes[name] = _SHAPES[seen.get(colour, 0) % len(_SHAPES)]
            seen[colour] = seen.get(colour, 0) + 1
        return shapes

    def shape(self, legend: bool | str = True) -> alt.Shape | None:
        """:meth:`shapes` as an encoding; with the same ``legend`` as :meth:`color` in one chart, the
        two legends merge into one of coloured shapes. None while every run has a colour of its own."""
        shapes = self.shapes()
        if shapes is None:
            return None
        return alt.Shape("name:N", title="schedule", legend=self.legend(legend),
                         scale=alt.Scale(domain=self.names, range=[shapes[n] for n in self.names]))


#: shapes for the runs that share a colour, in order
_SHAPES = ("circle", "square", "triangle-up", "diamond", "triangle-down", "cross")


def metric_of(metric, table: dict, field: str = "metric") -> tuple[str, str, str]:
    if not isinstance(metric, str) or metric not in table:
        raise ConfigError(field, metric, "give " + " or ".join(f"{k!r} ({v[2]})" for k, v in table.items()))
    return table[metric]


# Memory units ---------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class MemoryUnit:
    label: str
    factors: list[float]  # multiply activation units of result i by factors[i]
    note: str


def memory_unit(results: Sequence[Result]) -> MemoryUnit:
    given = [r.config.activation_bytes for r in results]
    sizes = [s for s in given if s is not None]
    if len(sizes) < len(given):
        mixed = " (not every config gives activation_bytes, so bytes are not shown)" if any(given) else ""
        return MemoryUnit(ACTIVATION_UNIT, [1.0] * len(results), UNIT_NOTE + mixed)
    # the capacity counts, as the widget's unit does: the lanes show it beside the peaks
    largest = max(max(float(r.peak_memory.max()), r.config.memory_capacity or 0.0) * s for r, s in zip(results, sizes))
    prefixes = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
    k = next((k for k in range(len(prefixes)) if largest < 1024 ** (k + 1)), len(prefixes) - 1)
    return MemoryUnit(prefixes[k], [s / 1024 ** k for s in sizes], "memory in bytes from activation_bytes")


def memory_words(results: Sequence[Result]) -> tuple[str, bool]:
    static = any(r.static_memory.any() for r in results)
    return ("memory (activations + static)" if static else "activation memory"), static


# Pure helpers ---------------------------------------------------------------------------------

@checked_arguments
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


def time_title(config: Config) -> str:
    """A time axis's title: with the config's time unit, or in units of f, b and w."""
    return f"time ({config.time_unit})" if config.time_unit else "time (units of f, b, w)"


def format_number(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"
