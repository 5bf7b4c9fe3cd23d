"""``ppviz.compare``: several runs side by side, as data — a :class:`Comparison`.

The comparison holds the runs that ran and the ones a schedule refused (with the reason), their
names as every chart and table shows them, the ranking of the runs that fit their device
memory (fastest first) and each other run's excess, and one row per run as a pandas DataFrame
(:attr:`Comparison.table`). Its views draw it: :meth:`Comparison.chart` (the Altair charts of
:func:`ppviz.charts.comparison_charts`), :meth:`Comparison.view` (the Gantt charts on one time
axis above those charts, linked; what a notebook displays), and :meth:`Comparison.summary`
(the text ``ppviz compare`` prints).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.config import Config, positive_int
from ..core.engine import as_run, simulate
from ..core.errors import ConfigError, ScheduleConstraintError, checked_arguments
from ..core.numbers import number, share, size
from ..core.registry import ScheduleSpec, lookup
from ..core.result import Result

GIB = 2**30
THEMES = ("auto", "light", "dark")
#: how :meth:`Comparison.summary` may order its runs
ORDERS = {"given": None, "makespan": lambda r: (r.step_time, r.makespan, float(r.peak_memory.max())),
          "bubble": lambda r: (r.bubble_fraction, r.makespan),
          "memory": lambda r: (float(r.peak_memory.max()), r.makespan)}
#: the bubble metrics a comparison's charts plot: ``metric=`` names one
METRICS = ("fraction", "rate")
#: columns of :attr:`Comparison.table`, in order
COLUMNS = ("name", "schedule", "devices", "microbatches", "stages_per_device", "makespan", "closed_form_makespan",
           "step_time", "tail", "tp_comm", "mfu", "tokens_per_second", "bubble_fraction", "closed_form_bubble_fraction",
           "bubble_rate", "peak_activation", "peak_memory", "peak_memory_bytes", "fits", "excess", "exposed_comm",
           "rank", "refused")
_NAME_FIELDS = (("schedule", "schedule"), ("devices", "p"), ("microbatches", "m"), ("stages_per_device", "v"),
                ("microbatch_group_size", "g"), ("f", "f"), ("b", "b"), ("w", "w"), ("comm", "comm"),
                ("fb", "fb"), ("activation", "activation"), ("w_share", "w_share"), ("params", "params"),
                ("activation_bytes", "bytes"))


def short_number(x) -> str:
    return "none" if x is None else f"{x:g}" if isinstance(x, float) else str(x)


def display_names(configs: Sequence[Config], ignore: tuple[str, ...] = ()) -> list[str]:
    """Display names, made unique by the config fields that tell equal names apart; identical
    configs are numbered in order ("1f1b #2")."""
    names = [c.display_name for c in configs]
    out = list(names)
    for name in dict.fromkeys(names):
        group = [i for i, n in enumerate(names) if n == name]
        if len(group) == 1:
            continue
        differ = [(f, short) for f, short in _NAME_FIELDS
                  if f not in ignore and len({getattr(configs[i], f) for i in group}) > 1]
        for i in group:
            parts = [f"{short}={short_number(getattr(configs[i], f))}" for f, short in differ]
            out[i] = f"{name} ({', '.join(parts)})" if parts else name
    repeats = {n for n in out if out.count(n) > 1}
    seen: dict[str, int] = {}
    taken = set(out)
    for i, n in enumerate(out):
        if n in repeats:
            # skip numbers another run already carries (a user's label may be "x #1")
            k = seen.get(n, 0) + 1
            while f"{n} #{k}" in taken:
                k += 1
            seen[n] = k
            out[i] = f"{n} #{k}"
            taken.add(out[i])
    return out


@dataclass(frozen=True)
class _Run:
    name: str  # before names are made unique
    result: Result | None
    refusal: str = ""


@checked_arguments
class Comparison:
    """What :func:`compare` returns: the runs side by side.

    ``results`` and ``names`` are the runs that ran (names unique, as in every chart);
    ``refused`` maps each run a schedule refused to the reason; ``ranking`` lists the names of
    the runs that fit their device memory (``Config.memory_capacity``; every run fits without
    one), fastest first; ``out_of_memory`` maps each run that does not fit to its largest
    excess (bytes when its config gives ``activation_bytes``, else activation units).
    ``time_extent`` is the longest run: its makespan, or with a training step the step's end after
    every device's tail (``Result.step_end``); every Gantt chart of the view spans [0, it].

    ``table`` is one row per run (refused runs included, with their reason), ``result(name)``
    a run's :class:`ppviz.Result`, ``chart()`` the Altair charts, ``view()`` the linked widget
    (what a notebook shows), ``summary()`` the text ``ppviz compare`` prints.
    """

    def __init__(self, runs: list[_Run], *, theme: str = "auto", metric: str = "fraction"):
        results = [r.result for r in runs if r.result is not None]
        if not results:
            raise ScheduleConstraintError("schedules", [r.name for r in runs], "try other sizes or schedules",
                                          reason="none of them runs: " + "; ".join(f"{r.name}: {r.refusal}"
                                                                                    for r in runs))
        units = {r.config.time_unit for r in results}
        if len(units) > 1:
            listed = ", ".join(f"{r.config.display_name} in {r.config.time_unit or 'no unit'}" for r in results)
            raise ConfigError("time_unit", sorted(units, key=str), "give every run the same time_unit (a run in real "
                              "units cannot be set against one in units of f, b, w)",
                              reason=f"the runs' times are in different units: {listed}")
        unique = iter(display_names([r.config for r in results]))
        self._names = [next(unique) if r.result is not None else r.name for r in runs]
        self._runs = runs
        self.results: list[Result] = results
        self.names: list[str] = [n for n, r in zip(self._names, runs) if r.result is not None]
        self.refused: dict[str, str] = {n: r.refusal for n, r in zip(self._names, runs) if r.result is None}
        self.time_extent = max(r.step_end for r in results)
        # the step, data-parallel tail included, is what a run costs (the makespan without a Config.step)
        order = sorted(range(len(results)), key=lambda k: results[k].step_time)
        self.ranking: list[str] = [self.names[k] for k in order if not results[k].out_of_memory]
        self.out_of_memory: dict[str, float] = {}
        for name, r in zip(self.names, results):
            excess = r.excess_bytes if r.excess_bytes is not None else r.excess
            if r.out_of_memory and excess is not None:  # out of memory: it has a capacity, and an excess
                self.out_of_memory[name] = float(excess.max())
        self.theme, self.metric = theme, metric

    @property
    def entries(self) -> list[tuple[str, Result | None, str]]:
        """(name, result or None, refusal) for every run, in the order given."""
        return [(name, r.result, r.refusal) for name, r in zip(self._names, self._runs)]

    @property
    def fits(self) -> bool | None:
        """Whether every run fits its device memory (None when no run has a capacity)."""
        if all(r.fits is None for r in self.results):
            return None
        return not self.out_of_memory

    @property
    def time_unit(self) -> str | None:
        return self.results[0].config.time_unit

    def result(self, name: str) -> Result:
        """The run named ``name`` (one of ``names``)."""
        if name not in self.names:
            raise ConfigError("name", name, f"give one of: {', '.join(self.names)}")
        return self.results[self.names.index(name)]

    @property
    def breakdown(self):
        """Each run's :attr:`ppviz.Result.breakdown` (per device: compute, TP traffic, P2P wait,
        idle, data-parallel tail), one pandas DataFrame with the run's ``name`` first."""
        import pandas as pd

        parts = [r.breakdown.assign(name=name) for name, r, _ in self.entries if r is not None]
        frame = pd.concat(parts, ignore_index=True)
        return frame[["name"] + [c for c in frame.columns if c != "name"]]

    @property
    def table(self):
        """One row per run, in the order given (a pandas DataFrame; see :data:`COLUMNS`):
        simulated figures beside the published closed forms where they apply, memory per the
        busiest device (``peak_memory`` includes static memory), whether the run fits, its
        place in ``ranking`` (1 = fastest that fits) and, for a refused run, why."""
        import pandas as pd

        rank = {name: k + 1 for k, name in enumerate(self.ranking)}
        rows: list[dict[str, object]] = []
        for name, r, refusal in self.entries:
            if r is None:
                rows.append({"name": name, "refused": refusal})
                continue
            cf = r.closed_form if r.closed_form is not None and r.closed_form.applies else None
            peak_bytes = r.peak_memory_bytes
            rows.append({
                "name": name, "schedule": r.config.schedule, "devices": r.devices,
                "microbatches": r.program.whole_microbatches, "stages_per_device": _whole(r.program.stages_per_device),
                "makespan": r.makespan, "closed_form_makespan": cf.makespan if cf is not None else None,
                "step_time": r.step_time, "tail": float(r.tail.max()), "tp_comm": float(r.tp_comm.max()),
                "mfu": r.mfu,
                "tokens_per_second": r.tokens_per_second,
                "bubble_fraction": r.bubble_fraction,
                "closed_form_bubble_fraction": cf.bubble_fraction if cf is not None else None,
                "bubble_rate": r.bubble_rate, "peak_activation": float(r.peak_activation.max()),
                "peak_memory": float(r.peak_memory.max()),
                "peak_memory_bytes": float(peak_bytes.max()) if peak_bytes is not None else None,
                "fits": None if r.fits is None else bool(r.fits.all()), "excess": self.out_of_memory.get(name, 0.0 if r.fits is not None else None),
                "exposed_comm": float(r.exposed_comm.max()), "rank": rank.get(name), "refused": None,
            })
        return pd.DataFrame(rows, columns=list(COLUMNS))

    def verdict(self) -> str:
        """With a memory capacity: how many runs fit and the fastest of them, or the one that
        comes closest when none does; empty without a capacity."""
        if self.fits is None:
            return ""
        unit = self.time_unit
        if self.ranking:
            best = self.result(self.ranking[0])
            what = "step" if best.config.step is not None else "makespan"
            return (f"{len(self.ranking)} of {len(self.results)} fit the capacity; the fastest of them: "
                    f"{self.ranking[0]}, {what} {number(best.step_time, unit)}")
        closest = min(self.out_of_memory, key=self.out_of_memory.__getitem__)
        return f"none fits the capacity; the closest: {closest}, over by {self._excess_text(closest)}"

    def _memory_text(self, r: Result, x: float) -> str:
        """``x`` activation units of ``r``'s memory as a table cell: in GiB when every run gives
        its activation's bytes (a model's configs do), else in activation units."""
        b = r.config.activation_bytes
        return number(x * b / GIB) if self._in_bytes and b is not None else number(x)

    def _excess_text(self, name: str) -> str:
        excess = self.out_of_memory[name]  # bytes where the run gives them (see __init__)
        return size(excess) if self.result(name).excess_bytes is not None else f"{number(excess)} activation units"

    @property
    def _in_bytes(self) -> bool:
        return all(r.config.activation_bytes is not None for r in self.results)

    def summary(self, order: str = "given") -> str:
        """The comparison as text: a heading, one line per run (makespan, bubble and peak memory,
        simulated and, in brackets, the published closed form where it applies; with a memory
        capacity, whether it fits), the fit verdict and the refused runs. ``order``: ``"given"``,
        ``"makespan"``, ``"bubble"`` or ``"memory"``."""
        if order not in ORDERS:
            raise ConfigError("order", order, f"give one of {', '.join(map(repr, ORDERS))}")
        pairs = list(zip(self.names, self.results))
        key = ORDERS[order]
        if key is not None:
            pairs.sort(key=lambda pair: key(pair[1]))
        unit = self.time_unit
        static = any(r.static_memory.any() for r in self.results)
        first = self.results[0]
        # runs may have different capacities, or some none: the column names one only when all share it
        capacities = {r.config.memory_capacity for r in self.results}
        fit_column = capacities != {None}
        shared = next(iter(capacities)) if len(capacities) == 1 else None
        memory = ("peak memory" if static else "peak activation") + (" (GiB)" if self._in_bytes else "")
        stepped = any(r.config.step is not None for r in self.results)
        header = ["schedule", "v", f"makespan ({unit})" if unit else "makespan", "bubble", memory]
        if stepped:
            header[3:3] = [f"step ({unit})" if unit else "step", "MFU"]
        if fit_column:
            header.append("fits" if shared is None else
                          f"fits {self._memory_text(first, shared)}{' GiB' if self._in_bytes else ''}")
        rows = [header]
        for name, r in pairs:
            cf = r.closed_form if r.closed_form is not None and r.closed_form.applies else None
            closed_peak = max(cf.peak_activation) if cf is not None and cf.peak_activation and not static else None
            row = [name, number(r.program.stages_per_device),
                   number(r.makespan) + (f" ({number(cf.makespan)})" if cf is not None else ""),
                   *((number(r.step_time), share(r.mfu) if r.mfu is not None else "-") if stepped else ()),
                   share(r.bubble_fraction) + (f" ({share(cf.bubble_fraction)})" if cf is not None else ""),
                   self._memory_text(r, float(r.peak_memory.max())) +
                   (f" ({self._memory_text(r, closed_peak)})" if closed_peak is not None else "")]
            if fit_column and r.excess is None:
                row.append("no capacity")
            elif fit_column and r.excess is not None:
                excess = self._memory_text(r, float(r.excess.max())) + (" GiB" if self._in_bytes else "")
                row.append("yes" if not r.out_of_memory else f"no (+{excess})")
            rows.append(row)
        lines = [f"{len(self.results)} schedules at p={first.devices} m={first.program.whole_microbatches}; in "
                 "brackets: the published closed form where it applies", "", *aligned(rows)]
        verdict = self.verdict()
        if verdict:
            lines += ["", verdict]
        if self.refused:
            lines += ["", f"refused by {len(self.refused)} (these sizes or options):"]
            lines += [f"  {name}: {why}" for name, why in self.refused.items()]
        return "\n".join(lines)

    def chart(self, *, metric: str | None = None):
        """The Altair charts of the runs (:func:`ppviz.charts.comparison_charts`): bubble, the
        bubble/memory Pareto scatter, peak memory per device and, with links, communication."""
        from ..charts import comparison_charts

        return comparison_charts(self.results, metric=self.metric if metric is None else _checked_metric(metric))

    def view(self, *, theme: str | None = None):
        """The linked widget: a Gantt chart per run on one time axis above :meth:`chart`
        (:class:`ppviz.widgets.ComparisonView`); a notebook displays the comparison as this."""
        from ..widgets.comparison import ComparisonView

        return ComparisonView(self, theme=self.theme if theme is None else _checked_theme(theme))

    def _ipython_display_(self):
        from IPython.display import display

        display(self.view())

    def _display_(self):
        return self.view()  # marimo's hook: the object it shows in place of this one

    def __repr__(self) -> str:
        return f"<Comparison of {len(self.results) + len(self.refused)} runs>\n{self.summary()}"


def aligned(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows of cells as table lines, columns two spaces apart: the first (names) left-aligned,
    the others (figures) right-aligned."""
    widths = [max(len(row[k]) for row in rows) for k in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) if k == 0 else cell.rjust(w) for k, (cell, w) in enumerate(zip(row, widths)))
            .rstrip() for row in rows]


def _whole(x: float) -> float | int:
    return int(x) if float(x).is_integer() else x


# Building one ------------------------------------------------------------------------------------

def _checked_theme(theme) -> str:
    if not isinstance(theme, str) or theme not in THEMES:
        raise ConfigError("theme", theme, "give 'auto', 'light' or 'dark'")
    return theme


def _checked_metric(metric) -> str:
    if not isinstance(metric, str) or metric not in METRICS:
        raise ConfigError("metric", metric, "give " + " or ".join(repr(k) for k in METRICS))
    return metric


def _checked_options(options: dict) -> dict:
    fields = sorted(f.name for f in dataclasses.fields(Config) if f.name not in ("schedule", "label"))
    for key, value in options.items():
        if key not in fields:
            hint = " (name schedules with schedules=[...])" if key == "schedule" else ""
            raise ConfigError(key, value, f"options are Config fields applied to every run{hint}: {', '.join(fields)}")
    return options


def _from_schedules(base, schedules, options: dict) -> list[_Run]:
    if isinstance(base, (list, tuple)) and len(base) == 1:
        base = base[0]
    if not isinstance(base, Config):
        raise ConfigError("runs", base, "with schedules=[names], give one ppviz.Config: its sizes and costs go "
                          "to every schedule", reason=f"a {type(base).__name__} is not one Config")
    if isinstance(schedules, str) or not isinstance(schedules, (list, tuple)) or not schedules:
        raise ConfigError("schedules", schedules, "give a non-empty list of schedule names, e.g. ['1f1b', 'zb-h1']")
    specs = []
    for i, name in enumerate(schedules):
        if not isinstance(name, (str, ScheduleSpec)):
            raise ConfigError(f"schedules[{i}]", name, "give schedule names (strings); see ppviz.list_schedules()")
        specs.append(lookup(name) if isinstance(name, str) else name)  # an unknown name is a mistake, not a refusal
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(Config)}
    fields.update(options, label=None)
    # the sizes pick each schedule's v and stage count before its Config checks them
    positive_int("devices", fields["devices"])
    positive_int("stages_per_device", fields["stages_per_device"], allow_none=True)
    runs = []
    for spec in specs:
        v = spec.v_or_default(fields["stages_per_device"])
        stages = spec.stage_count(fields["devices"], v)
        if fields["stage_costs"] and stages != base.stages:
            # per-stage costs (from_model's layers per stage) describe the base schedule's stages
            runs.append(_Run(spec.name, None, f"the config's stage_costs describe {base.stages} stages and "
                             f"{spec.name} has {stages}: build its config with Config.from_model(..., "
                             f"schedule={spec.name!r}) and compare the configs"))
            continue
        try:
            config = Config(**{**fields, "schedule": spec.name, "stages_per_device": v})
        except ScheduleConstraintError as exc:
            runs.append(_Run(spec.name, None, str(exc)))
            continue
        runs.append(_Run(config.display_name, simulate(config)))
    return runs


def _from_runs(runs, options: dict) -> list[_Run]:
    items = runs if isinstance(runs, (list, tuple)) else [runs]
    if not items:
        raise ConfigError("runs", runs, "give a list of runs: Configs, Programs, Results or schedule names",
                          reason="the list is empty")
    out = []
    for i, x in enumerate(items):
        try:
            result = as_run(x, name=f"runs[{i}]" if isinstance(runs, (list, tuple)) else "runs", **options)
        except ScheduleConstraintError as exc:  # a schedule that refuses these sizes is shown, not raised
            config = x.config if isinstance(x, Result) else x if isinstance(x, Config) else None
            name = config.display_name if config is not None else lookup(x).name if isinstance(x, str) else None
            if name is None:
                raise
            out.append(_Run(name, None, str(exc)))
            continue
        out.append(_Run(result.config.display_name, result))
    return out


@checked_arguments
def compare(runs, *, schedules=None, theme: str = "auto", metric: str = "fraction", **config_options) -> Comparison:
    """Several runs side by side: a :class:`Comparison`, which a notebook shows as Gantt charts
    on one time axis above the bubble, Pareto and peak-memory charts, linked.

    ``runs`` is a list of runs — Configs, Programs, Results or schedule names (names run at the
    default sizes, or at those of ``config_options``) — or one Config with ``schedules=[names]``:
    each schedule then runs with that config's sizes and costs, and with its own default v
    where the config's v breaks its rule. A schedule that refuses the sizes is listed as
    refused, with the reason, rather than raising. With a device memory
    (``Config.memory_capacity``, set by ``Config.from_model``) ``ranking`` lists the runs that
    fit, fastest first, and ``out_of_memory`` the others. ``config_options`` (any Config field
    but ``schedule`` and ``label``) replace those fields in every run, e.g.
    ``compare(["1f1b", "zb-h1"], devices=8, microbatches=32)``. ``theme`` (``"auto"``,
    ``"light"``, ``"dark"``) and ``metric`` (the charts' bubble metric, ``"fraction"`` or
    ``"rate"``) are the views' defaults.
    """
    theme, metric = _checked_theme(theme), _checked_metric(metric)
    options = _checked_options(config_options)
    built = _from_runs(runs, options) if schedules is None else _from_schedules(runs, schedules, options)
    return Comparison(built, theme=theme, metric=metric)


__all__ = ["Comparison", "compare", "display_names", "aligned", "COLUMNS", "ORDERS"]
