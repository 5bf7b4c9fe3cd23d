"""``ppviz.sweep``: the metrics of many configs, in parallel, as a pandas DataFrame.

    ppviz.sweep({"schedule": ["1f1b", "zb-h1", "zb-v"], "devices": [4, 8, 16], "microbatches": [8, 16, 32, 64]})
    ppviz.sweep(configs, client=dask_client)        # the same sweep on a Dask cluster

A grid is a list of :class:`ppviz.Config` or a dict of Config field → list of values, whose
product is swept (a single value stands for a list of one; ``base=`` gives the fields the
grid does not). The grid is checked before anything runs: unknown fields, empty lists and
values no config accepts are :class:`ppviz.ConfigError`s. A combination a schedule refuses
(DualPipe with an odd p, a size over the budget, …) becomes a row whose ``refusal`` says why.

Each row holds the grid's inputs and the run's ``makespan``, ``bubble_fraction``,
``bubble_rate``, ``ideal``, the busiest device's ``peak_activation`` and ``peak_memory``, from
the metrics-only fast path (:mod:`ppviz.core.metrics`: the numbers ``ppviz.simulate`` gives).
Configs go to the workers in chunks (so scheduling costs little beside the work); each worker
builds each program once and runs a chunk's configs of one shape together (vectors over the
configs); a tqdm progress bar counts configs (a widget in notebooks).
Locally the chunks run on joblib's loky processes (``n_jobs``, default all cores; 1 runs in
this process); ``client=`` a ``dask.distributed.Client`` runs the same chunks on its cluster,
giving the same rows in the same order.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from ..core.config import Config
from ..core.errors import ConfigError, PpvizError, ScheduleConstraintError, checked_arguments, did_you_mean
from ..core.metrics import Metrics, metrics, metrics_many

if TYPE_CHECKING:  # pandas is imported when a sweep runs
    import pandas as pd

#: Largest number of configs one sweep takes (the rows alone would take gigabytes beyond).
MAX_CONFIGS = 10_000_000
#: Largest ``n_jobs`` accepted, per core: more processes than that only share the cores, each
#: holding its own Python with ppviz, numpy and pandas imported.
MAX_JOBS_PER_CORE = 4
#: The columns every row has after its inputs.
OUTPUTS = ("makespan", "bubble_fraction", "bubble_rate", "ideal", "peak_activation", "peak_memory", "refusal")
#: Inputs shown for every row of a list of configs, whatever varies.
CORE = ("schedule", "devices", "microbatches", "stages_per_device")
_FIELDS = tuple(f.name for f in dataclasses.fields(Config))


@dataclasses.dataclass(frozen=True)
class _Grid:
    """A product of field values over a base config's fields, decoded by index on the workers."""

    base: tuple[tuple[str, object], ...]
    names: tuple[str, ...]
    values: tuple[tuple, ...]

    def __len__(self) -> int:
        return math.prod(len(v) for v in self.values)

    def combination(self, index: int) -> tuple:
        out = []
        for values in reversed(self.values):  # the last field varies fastest, as in itertools.product
            index, k = divmod(index, len(values))
            out.append(values[k])
        return tuple(reversed(out))


def _rows(items: Sequence[tuple[dict | Config, tuple]]) -> list[tuple]:
    """A row per (config or its fields, inputs): the inputs, then the metrics or the refusal.

    Configs of one shape run together (:func:`ppviz.core.metrics.metrics_many`); should a
    batch refuse (an override naming a stage the program lacks, say), its configs run one by
    one so that only the refused ones become refusals.
    """
    rows: dict[int, tuple] = {}
    built = []
    for k, (given, inputs) in enumerate(items):
        try:
            built.append((k, given if isinstance(given, Config) else Config(**given)))
        except PpvizError as exc:
            rows[k] = _refusal(inputs, exc)
    got: list[Metrics | PpvizError]
    try:
        got = list(metrics_many([config for _, config in built]))
    except PpvizError:
        got = []
        for k, config in built:
            try:
                got.append(metrics(config))
            except PpvizError as exc:
                got.append(exc)
    for (k, _), m in zip(built, got):
        inputs = items[k][1]
        rows[k] = _refusal(inputs, m) if isinstance(m, PpvizError) else inputs + (
            m.makespan, m.bubble_fraction, m.bubble_rate, m.ideal, float(m.peak_activation.max()),
            float(m.peak_memory.max()), None)
    return [rows[k] for k in range(len(items))]


def _refusal(inputs: tuple, exc: Exception) -> tuple:
    return inputs + (math.nan,) * (len(OUTPUTS) - 1) + (str(exc),)


def _run_grid(grid: _Grid, start: int, stop: int) -> list[tuple]:
    base = dict(grid.base)
    items = []
    for index in range(start, stop):
        values = grid.combination(index)
        items.append(({**base, **dict(zip(grid.names, values))}, values))
    return _rows(items)


def _run_configs(configs: Sequence[Config], names: tuple[str, ...]) -> list[tuple]:
    return _rows([(c, tuple(getattr(c, n) for n in names)) for c in configs])


def _checked_grid(grid, base: Config | None) -> tuple[_Grid | list[Config], tuple[str, ...]]:
    """The grid to run (a product of values, or configs) and the names of its input columns."""
    if base is not None and not isinstance(base, Config):
        raise ConfigError("base", base, "give a ppviz.Config whose fields the grid does not set, or None")
    if isinstance(grid, Config):
        grid = [grid]
    if isinstance(grid, Mapping):
        if not grid:
            raise ConfigError("grid", grid, "give at least one field, e.g. {'microbatches': [8, 16, 32]}")
        names, values = [], []
        for name, given in grid.items():
            if name not in _FIELDS:
                raise ConfigError(f"grid[{name!r}]", given,
                                  f"{did_you_mean(str(name), _FIELDS)}keys are Config fields: {', '.join(_FIELDS)}",
                                  reason="Config has no such field")
            options = list(given) if isinstance(given, (list, tuple, range)) else [given]
            if not options:
                raise ConfigError(f"grid[{name!r}]", given, "give at least one value")
            names.append(name)
            values.append(tuple(options))
        for name, choices in zip(names, values):
            others = {n: v for n, v in zip(names, values) if n != name}
            for value in choices:
                _check_value(name, value, base, others)
        fields = {} if base is None else {f: getattr(base, f) for f in _FIELDS if f not in names and f != "label"}
        if base is not None and "schedule" in names and fields["stages_per_device"] == base.spec.default_v:
            del fields["stages_per_device"]  # each schedule of the grid takes its own default v
        made = _Grid(tuple(fields.items()), tuple(names), tuple(values))
        if len(made) > MAX_CONFIGS:
            raise ConfigError("grid", f"{len(made):,} configs", f"give at most {MAX_CONFIGS:,} (split the sweep)",
                              reason="too many combinations")
        return made, tuple(names)
    if isinstance(grid, (str, bytes)) or not isinstance(grid, Sequence):
        raise ConfigError("grid", grid, "give a list of ppviz.Config or a dict {Config field: [values]}")
    configs = list(grid)
    if not configs:
        raise ConfigError("grid", grid, "give at least one ppviz.Config")
    for i, c in enumerate(configs):
        if not isinstance(c, Config):
            raise ConfigError(f"grid[{i}]", c, "give ppviz.Config objects (or a dict {field: [values]})")
    if base is not None:
        raise ConfigError("base", base, "base applies to a dict grid; a list of configs is complete")
    if len(configs) > MAX_CONFIGS:
        raise ConfigError("grid", f"{len(configs):,} configs", f"give at most {MAX_CONFIGS:,} (split the sweep)")
    default = Config()
    varying = [n for n in _FIELDS if n not in CORE and any(getattr(c, n) != getattr(configs[0], n) for c in configs)]
    shown = [n for n in ("f", "b", "w", "comm") if n not in varying and getattr(configs[0], n) != getattr(default, n)]
    return configs, CORE + tuple(n for n in _FIELDS if n in varying or n in shown)


def _check_value(name: str, value, base: Config | None, others: dict[str, tuple]) -> None:
    """A value no config accepts is a mistake in the grid; one that only some combinations
    refuse (a schedule's constraint) is left to become a row. Fields that only make sense
    together (``topology`` with ``comm_bytes`` and ``time_unit``, an ``offload`` in seconds with ``time_unit``)
    are tried with the grid's other values before the value is called a mistake."""
    start = base if base is not None else Config()
    if name == "stage_costs":  # which stages exist depends on the rest of the combination
        start = Config(schedule="custom")
    first = None
    for combination in itertools.islice(itertools.product(*others.values()), _VALUE_TRIES):
        changes = {} if name == "stage_costs" else dict(zip(others, combination))
        try:
            start.replace(**changes, **{name: value})
            return
        except ScheduleConstraintError:
            return
        except ConfigError as exc:
            # an error about another field of the grid is that field's to report
            if exc.field not in others and (first is None or exc.field == name):
                first = exc
            if name == "stage_costs":
                break
    if first is None:
        return
    raise ConfigError(f"grid[{name!r}]", value, first.accepted,
                      reason=f"no config accepts it ({str(first).split('; ')[0]})") from None


#: combinations of the grid's other values a value is tried with before it is called a mistake
_VALUE_TRIES = 256


def _chunks(total: int, workers: int, chunk_size: int | None) -> list[tuple[int, int]]:
    if chunk_size is None:
        # a few chunks per worker balance the load; a few hundred configs each (~0.1 s of work)
        # keep the scheduler's cost per chunk small beside it
        chunk_size = max(1, min(500, math.ceil(total / (4 * max(1, workers)))))
    return [(lo, min(lo + chunk_size, total)) for lo in range(0, total, chunk_size)]


@checked_arguments
def sweep(grid, *, base: Config | None = None, client=None, n_jobs: int | None = None,
          chunk_size: int | None = None, progress: bool = True) -> pd.DataFrame:
    """Run every config of ``grid`` on the fast metrics path; a pandas DataFrame, one row per config.

    ``grid``: a list of :class:`ppviz.Config`, or a dict {Config field: list of values} swept as
    a product (``base`` gives the other fields). ``client``: a ``dask.distributed.Client`` to
    run on; otherwise joblib's loky processes, ``n_jobs`` of them (default or -1: every core; 1:
    in this process; at most :data:`MAX_JOBS_PER_CORE` per core), never more than there are
    chunks. ``chunk_size``: configs per task. ``progress``: show a tqdm bar.
    """
    import pandas as pd
    from tqdm.auto import tqdm

    work, names = _checked_grid(grid, base)
    total = len(work)
    if chunk_size is not None and (isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1):
        raise ConfigError("chunk_size", chunk_size, "give a whole number >= 1, or None to choose")
    cores = os.cpu_count() or 1
    most = MAX_JOBS_PER_CORE * cores
    if n_jobs is not None and (isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs == 0 or
                               not -1 <= n_jobs <= most):
        raise ConfigError("n_jobs", n_jobs, f"give a whole number from 1 to {most} ({MAX_JOBS_PER_CORE} per core "
                          f"on these {cores}), -1 for every core, or None")
    if client is not None and not hasattr(client, "map"):
        raise ConfigError("client", client, "give a dask.distributed.Client, or None to run locally with joblib")
    if client is not None:
        workers = max(1, sum(client.nthreads().values()))
    else:
        workers = cores if n_jobs in (None, -1) else n_jobs
    bounds = _chunks(total, workers, chunk_size)
    tasks: list[tuple[Callable[..., list[tuple]], tuple]]
    if isinstance(work, _Grid):
        tasks = [(_run_grid, (work, lo, hi)) for lo, hi in bounds]
    else:
        tasks = [(_run_configs, (work[lo:hi], names)) for lo, hi in bounds]
    parts: dict[int, list[tuple]] = {}
    with tqdm(total=total, desc="ppviz.sweep", unit="config", disable=not progress) as bar:
        if client is not None:
            from distributed import as_completed

            futures = {client.submit(fn, *args, pure=False): k for k, (fn, args) in enumerate(tasks)}
            for future in as_completed(futures):
                k = futures[future]
                parts[k] = future.result()
                bar.update(len(parts[k]))
        elif workers == 1 or len(tasks) == 1:
            for k, (fn, args) in enumerate(tasks):
                parts[k] = fn(*args)
                bar.update(len(parts[k]))
        else:
            from joblib import Parallel, delayed

            run = Parallel(n_jobs=min(workers, len(tasks)), backend="loky", return_as="generator")
            for k, rows in enumerate(run(delayed(fn)(*args) for fn, args in tasks)):
                parts[k] = rows
                bar.update(len(rows))
    rows = [row for k in range(len(tasks)) for row in parts[k]]
    return pd.DataFrame.from_records(rows, columns=list(names) + list(OUTPUTS))


__all__ = ["sweep", "MAX_CONFIGS", "MAX_JOBS_PER_CORE", "OUTPUTS"]
