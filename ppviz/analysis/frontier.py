"""The bubble-vs-peak-memory Pareto frontier over the library's schedules and search results.

:func:`frontier_points` runs every library schedule that accepts a config's sizes (fast
metrics path) and :func:`ppviz.search` at a few memory limits, and returns one row per run:
its bubble, makespan and busiest device's peak activation and peak memory (static memory
included), whether it fits the device (with a ``memory_capacity``), and whether it is on the
Pareto front — no other run that fits is at least as low on both bubble and memory and lower
on one. Memory is the peak activation, or the peak memory where the config has static memory
(``params``: two replicas hold it twice, which an activation count does not see).
:func:`frontier` returns it as a :class:`Frontier`: the rows as a DataFrame (``.table``), the
chart (``.chart()``, :func:`ppviz.charts.frontier_chart`) and the widget in which clicking a
point opens that run's Gantt chart (``.view()``, what a notebook shows).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..core.config import Config
from ..core.errors import ConfigError, checked_arguments
from ..core.engine import simulate
from ..core.metrics import metrics
from ..core.result import Result
from ..core.registry import lookup
from .search import DEFAULT_EFFORT, SearchResult, checked_effort, checked_limit, checked_size, library_runs, search

if TYPE_CHECKING:
    import pandas as pd

METRICS = {"fraction": "bubble_fraction", "rate": "bubble_rate"}
COLUMNS = ("name", "source", "schedule", "stages_per_device", "memory_limit", "makespan", "bubble_fraction",
           "bubble_rate", "peak_activation", "peak_memory", "fits", "pareto")


@checked_arguments
def pareto_front(bubble, memory) -> np.ndarray:
    """True for each point no other point beats: lower is better on both axes.

    A point is dominated when another is at most as high on both and lower on one; values
    within floating-point noise of each other count as equal, so rounding cannot decide.
    """
    x, y = _floats("bubble", bubble), _floats("memory", memory)
    if x.shape != y.shape or x.ndim != 1:
        raise ConfigError("memory", y.tolist(), f"give one memory value per bubble value ({x.size})")
    same_x = np.isclose(x[:, None], x[None, :], rtol=1e-9, atol=1e-12)
    same_y = np.isclose(y[:, None], y[None, :], rtol=1e-9, atol=1e-12)
    le_x = (x[:, None] <= x[None, :]) | same_x  # [j, i]: j is at most as high as i
    le_y = (y[:, None] <= y[None, :]) | same_y
    lt = ((x[:, None] < x[None, :]) & ~same_x) | ((y[:, None] < y[None, :]) & ~same_y)
    return ~(le_x & le_y & lt).any(axis=0)


def _floats(name: str, values) -> np.ndarray:
    try:
        return np.asarray(values, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(name, values, "give a list of numbers, one per point") from None


@checked_arguments
@dataclass
class Frontier:
    """What :func:`frontier` returns: the frontier's rows and what made each.

    ``table`` is a pandas DataFrame, one row per run, best memory first (:data:`COLUMNS`;
    ``pareto`` marks the front); ``runs[name]`` is the run's Config (library) or its
    :class:`ppviz.SearchResult` (search); ``memory`` is the column the front is taken on
    (``"peak_activation"``, or ``"peak_memory"`` where the config has static memory);
    ``config`` the config the runs share. Its views: ``result(name)`` (a run's full
    :class:`ppviz.Result`), ``chart()`` (Altair) and ``view()`` (the chart above the Gantt chart
    of the point clicked; what a notebook, or marimo, shows)."""

    table: pd.DataFrame
    metric: str
    runs: dict[str, Config | SearchResult] = field(default_factory=dict)
    memory: str = "peak_activation"
    config: Config | None = None

    def result(self, name: str) -> Result:
        """The run named ``name`` (a row of ``table``), simulated in full."""
        if name not in self.runs:
            raise ConfigError("name", name, f"give one of the table's names: {', '.join(self.table.name)}")
        run = self.runs[name]
        return run if isinstance(run, Result) else simulate(run)

    def chart(self, *, width: int = 460, height: int = 320):
        """The frontier chart (:func:`ppviz.charts.frontier_chart`)."""
        from ..charts.frontier import frontier_chart

        return frontier_chart(self, width=width, height=height)

    def view(self):
        """The chart above the Gantt chart of the run last clicked (:class:`ppviz.widgets.FrontierView`)."""
        from ..widgets.frontier import FrontierView

        return FrontierView(self)

    def _ipython_display_(self):
        from IPython.display import display

        display(self.view())

    def _display_(self):
        return self.view()  # marimo's hook; the view has its own (ppviz/widgets/marimo.py)

    def __repr__(self) -> str:
        return f"<Frontier: {len(self.table)} runs, {int(self.table.pareto.sum())} on the Pareto front>\n" + \
            self.table.to_string(index=False)


def default_limits(devices: int) -> list[float]:
    """The memory points the papers name: V-Min's ≈ p/3, V-Half's ≈ p/2, 1F1B's p, ZB-H2's 2p − 1."""
    p = devices
    return sorted({float(max(1, math.ceil(p / 3))), float(max(1, math.ceil(p / 2))), float(p), float(2 * p - 1)})


@checked_arguments
def frontier(config: Config, schedules=None, memory=None, *, metric: str = "fraction",
             effort: int = DEFAULT_EFFORT) -> Frontier:
    """The Pareto frontier of bubble against peak memory for ``config``'s sizes and costs.

    Runs every library schedule that accepts the sizes (``schedules``: only these names) and
    :func:`ppviz.search` at each limit of ``memory`` (default :func:`default_limits`: about p/3,
    p/2, p and 2p − 1 activation units; ``[]`` for none), each in activation units or, with the
    config's ``activation_bytes``, as a size in bytes (``"40GiB"``), as :func:`ppviz.search` takes
    them; each refused with the least reachable peak when below it. Memory is the busiest
    device's peak activation, or its activation and static memory together where the config has
    static memory (in GiB on the chart where it gives ``activation_bytes``); with a
    ``memory_capacity`` the runs that do not fit are never on the front. ``metric``:
    ``"fraction"`` or ``"rate"``, the bubble the front is taken on; ``effort``:
    :func:`ppviz.search`'s, for each limit (at most :data:`ppviz.analysis.search.MAX_EFFORT`).
    Returns a :class:`Frontier`.
    """
    import pandas as pd

    if not isinstance(config, Config):
        raise ConfigError("config", config, "give a ppviz.Config: its sizes and costs go to every schedule")
    if metric not in METRICS:
        raise ConfigError("metric", metric, f"use one of {', '.join(METRICS)}")
    wanted = None
    if schedules is not None:
        if isinstance(schedules, str) or not isinstance(schedules, (list, tuple)):
            raise ConfigError("schedules", schedules, "give a list of schedule names, e.g. ['1f1b', 'zb-h1'], or None")
        wanted = {lookup(s).name if isinstance(s, str) else lookup(str(s)).name for s in schedules}
    limits = default_limits(config.devices) if memory is None else memory
    if isinstance(limits, (int, float, str)) and not isinstance(limits, bool):
        limits = [limits]
    if not isinstance(limits, (list, tuple)):
        raise ConfigError("memory", memory, "give a list of activation-memory limits to search at, or None")
    # checked before the library schedules run, which take seconds at large sizes; the defaults are
    # the papers' points in activation units, shown even where they pass the device's capacity
    limits = [checked_limit(limit, "memory", config if memory is not None else None) for limit in limits]
    effort = checked_effort(effort)
    if limits:
        checked_size(config, searches=len(limits))
    rows, runs = [], {}
    for name, v, cfg in library_runs(config, bool(config.stage_costs)):
        if wanted is not None and cfg.schedule not in wanted:
            continue
        got = metrics(cfg)
        rows.append((name, "library", cfg.schedule, v, math.nan, got.makespan, got.bubble_fraction, got.bubble_rate,
                     float(got.peak_activation.max()), float(got.peak_memory.max()), _fits(got.peak_memory, config)))
        runs[name] = cfg
    for limit in limits:
        found = search(config, limit, effort=effort)
        name = found.config.display_name
        rows.append((name, "search", "search", found.config.stages_per_device, float(found.max_memory),
                     found.makespan, found.bubble_fraction, found.bubble_rate, float(found.peak_activation.max()),
                     float(found.peak_memory.max()), _fits(found.peak_memory, config)))
        runs[name] = found
    if not rows:
        raise ConfigError("schedules", schedules, "name at least one schedule that accepts these sizes, or give "
                          "memory limits to search at", reason="nothing to put on the frontier")
    table = pd.DataFrame.from_records(rows, columns=list(COLUMNS[:-1]))
    memory_column = "peak_memory" if (table.peak_memory > table.peak_activation).any() else "peak_activation"
    # the front is among the runs that fit: one that does not is no choice, however fast
    fits = table.fits.to_numpy(bool)
    table["pareto"] = False
    if fits.any():
        table.loc[fits, "pareto"] = pareto_front(table[METRICS[metric]][fits], table[memory_column][fits])
    table = table.sort_values([memory_column, METRICS[metric], "name"], kind="stable").reset_index(drop=True)
    return Frontier(table, metric, runs, memory_column, config)


def _fits(peak_memory: np.ndarray, config: Config) -> bool:
    """Whether every device's peak memory is within the config's capacity, as ``Result.fits``
    says (True without one)."""
    return config.memory_capacity is None or bool((peak_memory <= config.memory_capacity).all())


__all__ = ["pareto_front", "frontier", "Frontier", "default_limits", "METRICS", "COLUMNS"]
