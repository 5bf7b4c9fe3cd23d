"""``ppviz.search``: the fastest schedule whose every device stays within an activation-memory limit.

    found = ppviz.search(ppviz.Config(devices=8, microbatches=32, comm=0.2), max_memory=6)
    found.makespan, found.peak_activation.max()     # a Result: show, compare, export it
    found.candidates                                # what it was chosen from, with the margins

How it works, for the config's costs (per-stage overrides and ``comm`` included):

1. **Candidates.** Every library schedule that accepts the config's sizes (at its own default
   v and at the config's, or only at the config's when ``stage_costs`` name its stages), run
   on the fast metrics path; for one stage per device, the zero-bubble authors' automatic
   scheduler (its eight variants, :mod:`.heuristic`) at the limit and at whole activation
   counts below it, and GPipe in waves and ZB-H1 with its warm-up capped (:mod:`.capped`,
   for limits below p);
   and one microbatch at a time, the least memory there is. Those whose
   peak activation exceeds the limit on some device are out, and with a ``memory_capacity``
   those whose activation and static memory together exceed it on some device (a device
   holding two stages or two replicas holds their parameters too; the orders built for a
   placement are built under the tightest device's room); ZB-H1 is in at a limit of p,
   ZB-H2 at 2p − 1, V-Min / V-Half / ZB-V (the controllable-memory paper's building blocks)
   at about p/3, p/2 and p.
2. **Local search** (:mod:`.improve`) from the best candidate of each placement (F&B pairs
   and DualPipe's two replicas are not searched), filling idle gaps with ready work and
   unblocking waiting devices while the limit holds.
3. **The answer** is the best of all of them, simulated in full: never slower than the best
   candidate, within the limit on every device, a validated program that cannot deadlock
   (the simulator ran it). A limit below the least memory of any candidate is refused with
   that minimum.

``found.lower_bound`` is a bound no order on one stage per device can beat (each device's
work after the first microbatch's round trip, less the forwards the limit lets it run
before); ``found.gap`` the relative distance to it.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass

import numpy as np

from ..core.budget import DEFAULT_MAX_OPS, max_ops
from ..core.config import MAX_COST, Config
from ..core.engine import simulate
from ..core.errors import ConfigError, ScheduleConstraintError, checked_arguments
from ..core.memory import placement_static_memory
from ..core.metrics import metrics
from ..core.placement import Placement
from ..core.program import F, I, W
from ..core.registry import all_specs
from ..core.numbers import number, size
from ..core.result import Result
from . import heuristic
from .capped import capped_orders, wave_orders
from .improve import improve
from .orders import Orders, Problem, orders_of

#: Evaluations the local search may spend, in ops evaluated (an evaluation costs about
#: 0.7 µs per op): about half a second at p = 8, m = 32 (768 ops).
DEFAULT_EFFORT = 400_000
#: Largest ``effort`` accepted: at about 0.7 µs per op evaluated, some 7 s of local search
#: (2 s measured at p = 8, m = 64 and a limit of 2, where 10^9 took 91 s).
MAX_EFFORT = 10_000_000
#: Largest ``stages_per_device`` accepted: the local search's moves grow faster than the ops
#: with it (3 s measured at p = 16, m = 16, v = 256; 18 s at p = 8, m = 4, v = 1,000).
MAX_STAGES_PER_DEVICE = 256
#: Largest search at the default size budget (``ppviz.set_budget`` scales it:
#: :func:`max_search_work`), in op runs: every candidate (library schedules, capped ZB-H1 and
#: GPipe waves, the heuristic's variants) is built and run over the whole program, 3 · p · m ops
#: at one stage per device, and there are about ``_CANDIDATE_RUNS + 3 · min(p, m)`` of them
#: (:func:`search_work`).
#: At about 2–3 µs per op run on a 2-core machine, the largest accepted search takes up to some
#: 40 s (measured: p = 64, m = 256 at a limit of 64, 13.4M op runs, 26.5 s; p = 32, m = 512 at
#: 32, 8.6M, 16.7 s; at the edge, p = 64, m = 287 at 64: 29.6 s, p = 8, m = 6,009 at 8: 35.2 s,
#: p = 2, m = 29,069 at any limit: 32.5 s).
MAX_SEARCH_WORK = 15_000_000
#: Candidates whose count does not grow with p: the library's schedules at two v's, the serial
#: order and the heuristic's variants at up to five limits.
_CANDIDATE_RUNS = 80
#: Searches of this many op runs or more (about 2 s) show a progress bar unless told otherwise.
PROGRESS_FROM_WORK = 1_000_000
#: How many candidates the local search starts from: the best of each placement (one stage per
#: device, the V, the loop), fastest first, so a looser limit never loses a shape a tighter one had.
STARTS = 3
#: Relative slack for peaks computed by different summation orders.
_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Candidate:
    """One schedule the search considered: its makespan and peaks, and whether it fits (its
    activation within the limit and, with a ``memory_capacity``, activation and static memory
    within the capacity, on every device). ``peak_memory``: the highest device's activation
    plus static memory, in activation units."""

    name: str
    makespan: float
    peak_activation: float
    fits: bool
    stages_per_device: int
    peak_memory: float


@checked_arguments
class SearchResult(Result):
    """The schedule :func:`search` found, as an ordinary :class:`ppviz.Result`, plus the search's
    report: ``max_memory``, ``candidates`` (every schedule considered, best first),
    ``best_candidate`` (the best that fitted before local search), ``improvement`` (its makespan
    minus the answer's), ``lower_bound`` and ``gap`` (None where no bound applies) and
    ``evaluations`` (orders the local search tried)."""

    max_memory: float
    candidates: tuple[Candidate, ...]
    best_candidate: Candidate
    lower_bound: float | None
    evaluations: int

    @classmethod
    def of(cls, result: Result, **report) -> "SearchResult":
        found = cls.__new__(cls)
        found.__dict__.update(result.__dict__)
        found.__dict__.update(report)
        return found

    @property
    def improvement(self) -> float:
        return self.best_candidate.makespan - self.makespan

    @property
    def gap(self) -> float | None:
        if self.lower_bound is None or not self.lower_bound:
            return None
        return max(0.0, (self.makespan - self.lower_bound) / self.lower_bound)

    def candidates_frame(self):
        """The candidates as a pandas DataFrame (needs pandas)."""
        import pandas as pd

        return pd.DataFrame([dataclasses.asdict(c) for c in self.candidates])

    def __repr__(self) -> str:
        unit = self.config.time_unit
        return (f"<SearchResult {self.config.display_name}: makespan {number(self.makespan, unit)} "
                f"(best candidate {self.best_candidate.name}: {number(self.best_candidate.makespan, unit)}), "
                f"peak activation {_amount(self.peak_activation.max(), self.config)} <= "
                f"{_amount(self.max_memory, self.config)}"
                + (f", peak memory {_amount(self.peak_memory.max(), self.config)} of {_amount(capacity, self.config)}"
                   if (capacity := self.config.memory_capacity) is not None else "") + ">")


def _amount(units: float, config: Config, digits: int = 3) -> str:
    """Activation units, and their bytes where the config gives them: '3.96 (37.6 GiB)'."""
    unit_bytes = config.activation_bytes
    return number(units, digits=digits) + (f" ({size(units * unit_bytes)})" if unit_bytes else "")


def _memory_words(units: float, config: Config) -> str:
    """An amount of activation memory as a candidate's name says it: a size where the config gives
    the bytes of an activation unit ('37.6 GiB'), else in activations ('3.96 activations')."""
    if config.activation_bytes:
        return size(units * config.activation_bytes)
    amount = number(units)
    return f"{amount} activation{'' if amount == '1' else 's'}"


def _slack(limit: float) -> float:
    return limit + _TOLERANCE * max(1.0, abs(limit))


def _fits(peak: float, limit: float) -> bool:
    return peak <= _slack(limit)


def _room(config: Config, static: np.ndarray, limit: float) -> np.ndarray:
    """Each device's activation limit: ``limit`` and, with a memory capacity, what the device's
    static memory (``static``, per device: two stages or two replicas hold more) leaves of it."""
    room = np.full(len(static), limit)
    if config.memory_capacity is not None:
        np.minimum(room, config.memory_capacity - static, out=room)
    return room


def _fits_room(peaks, room: np.ndarray) -> bool:
    return bool(np.all(np.asarray(peaks) <= room + _TOLERANCE * np.maximum(1.0, np.abs(room))))


def _candidate(name: str, makespan: float, peaks, static, room: np.ndarray, v: int) -> Candidate:
    peaks = np.asarray(peaks, dtype=float)
    return Candidate(name, makespan, float(peaks.max()), _fits_room(peaks, room), v, float((peaks + static).max()))


#: A memory size as text: a number and a unit of bytes, binary (KiB … TiB) or decimal (kB … TB).
_SIZE = re.compile(r"\s*((?:\d+\.?\d*|\.\d+)(?:e[+-]?\d{1,3})?)\s*([kmgt]i?b|b|bytes)\s*", re.IGNORECASE)
_SIZE_UNITS = {"b": 1, "bytes": 1, **{f"{x}ib": 1024 ** (n + 1) for n, x in enumerate("kmgt")},
               **{f"{x}b": 1000 ** (n + 1) for n, x in enumerate("kmgt")}}


def checked_limit(max_memory, name: str = "max_memory", config: Config | None = None) -> float:
    """``max_memory`` in activation units, or a ConfigError naming ``name``. With ``config``: a
    size in bytes as text (``"40GiB"``) is taken in its ``activation_bytes``, and a limit above
    its ``memory_capacity`` (a device's whole memory) is refused: it is almost surely bytes given
    as activation units, and no schedule under it would fit the device anyway."""
    unit_bytes = None if config is None else config.activation_bytes
    if isinstance(max_memory, str):
        return _limit_from_text(max_memory, name, unit_bytes)
    # compared before any conversion: an int too large for a float is refused, not an OverflowError
    if isinstance(max_memory, bool) or not isinstance(max_memory, (int, float)) or not 0 < max_memory <= MAX_COST:
        sizes = " or a size in bytes such as '40GiB'" if unit_bytes else ""
        raise ConfigError(name, max_memory,
                          f"give a number > 0 and at most {number(MAX_COST)}{sizes}: each device's peak activation limit, "
                          "in activation units (one microbatch through 1/p of the model), as Result.peak_activation "
                          "counts it")
    capacity = None if config is None else config.memory_capacity
    if capacity is not None and max_memory > capacity:
        if unit_bytes:
            hint = (f"an activation unit is {size(unit_bytes)} here, so {size(max_memory)} would be "
                    f"{number(max_memory / unit_bytes)}: give a size in bytes as text ('{_size_hint(max_memory)}') "
                    "or a number of activation units")
        else:
            hint = "give a limit in activation units, as Result.peak_activation counts them"
        raise ConfigError(name, max_memory, f"{hint}, at most the capacity {number(capacity)}",
                          reason=f"more than a device's whole memory (memory_capacity={number(capacity)} activation "
                                 "units, static memory included)")
    return float(max_memory)


def _limit_from_text(text: str, name: str, unit_bytes: float | None) -> float:
    """A size in bytes as text ('40GiB', '512 MB'), in activation units of ``unit_bytes`` bytes."""
    matched = _SIZE.fullmatch(text) if len(text) <= 40 else None
    if matched is None:
        raise ConfigError(name, text, "give a number of activation units, or a size in bytes as a number and a "
                          "unit: '40GiB', '512 MiB', '80GB' (KiB, MiB, GiB, TiB; kB, MB, GB, TB)")
    if not unit_bytes:
        raise ConfigError(name, text, "give a number of activation units, or set the config's activation_bytes "
                          "(Config.from_model does) to give sizes in bytes",
                          reason="a size in bytes needs the bytes of one activation unit, and this config has none")
    nbytes = float(matched[1]) * _SIZE_UNITS[matched[2].lower()]
    units = nbytes / unit_bytes
    if not 0 < units <= MAX_COST:
        raise ConfigError(name, text, f"give a size above 0 bytes and at most {size(MAX_COST * unit_bytes)}")
    return units


def _size_hint(nbytes: float) -> str:
    """``nbytes`` as a size to type: '40GiB'."""
    return size(nbytes).replace(" ", "")


def checked_effort(effort) -> int:
    """``effort`` as given, or a ConfigError naming the largest accepted."""
    if isinstance(effort, bool) or not isinstance(effort, int) or not 0 <= effort <= MAX_EFFORT:
        raise ConfigError("effort", effort, f"give a whole number from 0 to {MAX_EFFORT:,} (ops the local search "
                          f"may evaluate, about 0.7 µs each; the default is {DEFAULT_EFFORT:,})")
    return effort


def _checked_config(config) -> Config:
    if not isinstance(config, Config):
        raise ConfigError("config", config, "give a ppviz.Config: its sizes, costs and memory parameters are searched "
                          "over (its schedule is not used)")
    return checked_size(config)


def _search_ops(config: Config) -> int:
    """The ops of a search's program at one stage per device: an F, I and W per stage and microbatch."""
    return 3 * config.devices * config.microbatches * config.segments


def search_work(devices: int, microbatches: int, stages_per_device: int = 1) -> int:
    """Op runs of a search at these sizes (:data:`MAX_SEARCH_WORK`): its ops times the candidates
    run over them, up to 2 · (p − 1) capped ZB-H1 orders and p GPipe waves beside the rest, of
    which the library's at the config's ``stages_per_device`` have that many times the ops."""
    half = _CANDIDATE_RUNS // 2
    return 3 * devices * microbatches * (half * stages_per_device + half + 3 * min(devices, microbatches))


def max_search_work() -> int:
    """The largest search accepted, in op runs: :data:`MAX_SEARCH_WORK` at the default size budget,
    in proportion to the budget ``ppviz.set_budget(max_ops=...)`` sets (a bigger machine)."""
    return max(1, MAX_SEARCH_WORK * max_ops() // DEFAULT_MAX_OPS)


def _v(config: Config) -> int:
    """The config's stages per device (a config's schedule has set the default in place of None)."""
    assert config.stages_per_device is not None
    return config.stages_per_device


def _most_microbatches(devices: int, stages_per_device: int, searches: int, limit: int) -> int:
    """The most microbatches ``searches`` searches at these sizes accept within ``limit`` op runs
    (0 when none)."""
    lo, hi = 0, limit
    while lo < hi:  # search_work grows with m
        mid = (lo + hi + 1) // 2
        fits = searches * search_work(devices, mid, stages_per_device) <= limit
        lo, hi = (mid, hi) if fits else (lo, mid - 1)
    return lo


def checked_size(config: Config, searches: int = 1) -> Config:
    """``config``, or a ConfigError when ``searches`` searches of its sizes (a frontier's, one per
    limit) are over :func:`max_search_work` or it splits microbatches into sequence segments
    (the search orders whole microbatches)."""
    if config.segments > 1:
        raise ConfigError("segments", config.segments,
                          "search with segments=1 (whole microbatches); set Seq1F1B beside the answer with "
                          "ppviz.compare", reason="the search orders whole microbatches, not sequence segments")
    p, m, v = config.devices, config.microbatches, _v(config)
    work = searches * search_work(p, m, v)
    limit = max_search_work()
    if work > limit:
        most = _most_microbatches(p, v, searches, limit)
        at = f"p = {p:,}" + (f", v = {v:,}" if v > 1 else "")
        fewer = f"at most {most:,} microbatches at {at}" if most else "fewer devices or stages per device"
        if searches > 1:
            fewer += f" for {searches} limits (fewer limits allow more)"
        what = "a search" if searches == 1 else f"{searches} searches (one per limit)"
        runs = "runs" if searches == 1 else "run"
        raise ConfigError("microbatches", m,
                          f"give {fewer}, or raise the size budget with ppviz.set_budget(max_ops=...), which "
                          "scales this limit too; simulate larger runs with ppviz.simulate",
                          reason=f"{what} at {at}, m = {m:,} {runs} about {work:,} ops over "
                                 f"{'its' if searches == 1 else 'their'} candidates "
                                 f"(each one all {_search_ops(config):,} ops), over the limit of {limit:,} "
                                 f"(about {40 * limit / MAX_SEARCH_WORK:.0f} s on a 2-core machine)")
    return config


def library_runs(config: Config, fixed_v: bool, replicas: bool = True):
    """(name, v, config) of every library schedule that accepts the config's sizes and costs, at
    its default v and the config's (only the config's, with the same stages, when ``fixed_v``);
    without the two-replica schedules when ``replicas`` is False, and once for a program two specs
    build (``ScheduleSpec.same_program_as``)."""
    fields = {f.name: getattr(config, f.name) for f in dataclasses.fields(Config)}
    for spec in all_specs():
        if spec.builder is None or spec.forward_only or spec.same_program_as:  # training schedules, once
            continue
        if spec.vocab_barriers:  # its vocabulary passes need the costs of an output layer split over the devices
            continue
        if not replicas and spec.replicas > 1:
            continue
        vs = [_v(config)] if fixed_v else sorted({spec.default_v, _v(config)})
        for v in vs:
            if v < spec.v_min or (spec.v_max is not None and v > spec.v_max):
                continue
            try:
                cfg = Config(**{**fields, "schedule": spec.name, "stages_per_device": v, "label": None,
                                "microbatch_group_size": None})
            except ScheduleConstraintError:
                continue
            if fixed_v and cfg.stages != config.devices * _v(config):
                continue
            yield (spec.name if v == spec.default_v else f"{spec.name} v={v}"), v, cfg


def _placements(config: Config, fixed_v: bool) -> list[Placement]:
    """Placements the search builds orders for: one stage per device (the heuristic's), and
    the V when two stages per device are allowed."""
    p, v = config.devices, _v(config)
    if fixed_v:
        return [Placement.contiguous(p, 1)] if v == 1 else [Placement.v_shape(p, v)] if v == 2 else \
            [Placement.loop(p, v)]
    return [Placement.contiguous(p, 1), Placement.v_shape(p, 2)]


def _heuristic_limits(limit: float, unit: float, p: int) -> list[float]:
    """The limit itself and whole activation counts just below it: the heuristic is not
    monotone in its limit, so a tighter one sometimes schedules better."""
    top = math.floor(limit / unit + _TOLERANCE) if unit > 0 else 0
    levels = [limit] + [k * unit for k in range(top, max(top - 4, 0), -1) if k * unit < limit]
    return levels[: 2 * p]


def lower_bound(problem: Problem, limit: float) -> float | None:
    """No order on one stage per device finishes sooner (None for other placements).

    Device d cannot start before the first microbatch's forward reaches it (head), and runs
    its first I no sooner than that microbatch's round trip to the last stage and back; before
    then it can only run forwards, at most as many as the limit holds. So it finishes no
    sooner than head + its work, nor than that round trip + its work less those forwards.
    """
    if not problem.one_stage_per_device:
        return None
    S, m, comm, cost, change = problem.stages, problem.microbatches, problem.comm, problem.cost, problem.change
    bound = 0.0
    head = 0.0
    down = sum(cost[F]) + comm * (S - 1)
    for d in range(S):
        work = m * (cost[F][d] + cost[I][d] + cost[W][d])
        back = sum(cost[I][d + 1:]) + comm * (S - 1 - d)
        first_i = down + back
        held = m if change[F][d] <= 0 else min(m, math.floor(limit / change[F][d] + _TOLERANCE))
        bound = max(bound, head + work, first_i + work - held * cost[F][d])
        head += cost[F][d] + comm
    return bound


@checked_arguments
def search(config: Config, max_memory: float | str | None = None, *, stages_per_device: int | None = None,
           effort: int = DEFAULT_EFFORT, progress: bool | None = None) -> SearchResult:
    """The fastest schedule found whose peak activation stays within ``max_memory`` on every device.

    ``config`` gives the sizes (p, m), costs (``f``, ``b``, ``w``, ``comm``, ``fb``,
    ``stage_costs``) and memory parameters (``activation``, ``w_share``, per-stage
    ``activation``); its schedule is not used. ``max_memory`` is in activation units, as
    :attr:`ppviz.Result.peak_activation` counts them, or, when the config has
    ``activation_bytes`` (``Config.from_model`` sets it), a size in bytes as text (``"40GiB"``,
    ``"512MB"``). With a ``memory_capacity`` the answer also fits each device's memory, static
    memory (parameters, gradients, optimizer state: twice as much for two replicas) included;
    ``max_memory`` may then be left out (None) to ask only for that; a limit above a device's
    whole memory is refused (bytes given as a plain number would be). With ``stage_costs`` the search keeps the
    config's stages per device (the overrides name its stages); otherwise it also considers
    one stage per device and the V (two); ``stages_per_device`` keeps the search to that many
    (1: one stage per device; at most :data:`MAX_STAGES_PER_DEVICE`). ``effort`` bounds the
    local search, in ops evaluated (at most :data:`MAX_EFFORT`). Searches of more than
    :data:`MAX_SEARCH_WORK` op runs (:func:`search_work`, about 40 s) are refused before any
    work. ``progress``: a tqdm bar over the candidates and the local searches (a widget in
    notebooks); by default shown for searches of :data:`PROGRESS_FROM_WORK` op runs or more,
    which take seconds.

    Returns a :class:`SearchResult` — a :class:`ppviz.Result` of a validated program, shown,
    compared and exported like any other — labelled with its limit. Raises
    :class:`ppviz.ConfigError` when no schedule fits (naming the least peak there is).
    """
    config = _checked_config(config)
    if max_memory is None:
        if config.memory_capacity is None:
            raise ConfigError("max_memory", None, "give a limit on each device's peak activation (activation units, "
                              "or bytes as '40GiB' with activation_bytes), or a config with a memory_capacity to fit",
                              reason="nothing to search under: no limit and no memory capacity")
        limit = float(config.memory_capacity)
    else:
        limit = checked_limit(max_memory, config=config)
    effort = checked_effort(effort)
    fixed_v = bool(config.stage_costs)
    if stages_per_device is not None:
        if isinstance(stages_per_device, bool) or not isinstance(stages_per_device, int) or \
                not 1 <= stages_per_device <= MAX_STAGES_PER_DEVICE:
            raise ConfigError("stages_per_device", stages_per_device,
                              f"give a whole number from 1 to {MAX_STAGES_PER_DEVICE:,}, or None for any")
        config = checked_size(config.replace(schedule="custom", stages_per_device=stages_per_device,
                                             microbatch_group_size=None))
        fixed_v = True
    if progress is not None and not isinstance(progress, bool):
        raise ConfigError("progress", progress, "give True, False or None (shown for long searches)")
    from tqdm.auto import tqdm

    # asked for v stages per device, two replicas do not qualify: they hold two stages' weights on
    # every device (twice the parameters, which an activation limit does not see)
    library = list(library_runs(config, fixed_v, replicas=stages_per_device is None))
    placements = _placements(config, fixed_v)
    work = search_work(config.devices, config.microbatches, _v(config))
    show = progress if progress is not None else work >= PROGRESS_FROM_WORK
    with tqdm(total=len(library) + len(placements) + STARTS, desc="ppviz.search", unit="step",
              disable=not show) as bar:
        result = _search(config, limit, max_memory, effort, library, placements, bar)
    return result


def _ordered_model_is_exact(config: Config) -> bool:
    """Whether the order model the search builds and improves with times runs as the simulator
    does. It has no links and no host copies: with a ``topology`` or ``offload`` its makespans
    and peaks are estimates, and every order it proposes is simulated before it is compared."""
    return not config.transfers and config.offload is None


def _simulated_runs(runs, limit: float):
    """``runs`` with the candidates the order model timed replaced by their simulation."""
    out = []
    for cand, cfg, problem, orders in runs:
        if problem is not None:
            got = simulate(problem.program(orders), cfg)
            cand = _candidate(cand.name, got.makespan, got.peak_activation, got.static_memory,
                              _room(cfg, got.static_memory, limit), cand.stages_per_device)
        out.append((cand, cfg, problem, orders))
    return out


def _search(config, limit, max_memory, effort, library, placements, bar) -> SearchResult:
    candidates, runs, bound = _candidates(config, limit, library, placements, bar)
    exact = _ordered_model_is_exact(config)
    if not exact:
        runs = _simulated_runs(runs, limit)
        candidates = [run[0] for run in runs]
    fitting = sorted((r for r in runs if r[0].fits), key=lambda r: (r[0].makespan, r[0].peak_activation, r[0].name))
    if not fitting:
        raise _nothing_fits(config, max_memory, candidates)
    best, problem, orders = fitting[0][0], fitting[0][2], fitting[0][3]
    program = problem.program(orders) if problem is not None else fitting[0][1].build()
    run_config, v, makespan = fitting[0][1], best.stages_per_device, best.makespan
    evaluations = 0
    starts = _starts(fitting, limit)
    bar.total = bar.n + len(starts)
    bar.refresh()
    for cand, start_problem, start_orders, room in starts:
        budget = effort // max(1, sum(map(len, start_orders)) * len(starts))
        # one limit for every device, the tightest (the local search holds one); with the slack
        # _fits allows: a library start may peak a rounding error above the limit
        new_orders, timing, spent = improve(start_problem, start_orders, _slack(float(room.min())), budget)
        evaluations += spent
        bar.update()
        found_makespan = timing.makespan
        if not exact:
            got = simulate(start_problem.program(new_orders), start_problem.config)
            if not _fits_room(got.peak_activation, room):
                continue
            found_makespan = got.makespan
        if found_makespan < makespan:
            program = start_problem.program(new_orders)
            run_config, v, makespan = start_problem.config, cand.stages_per_device, found_makespan
    # in bytes where the config gives them: the limit as the user thinks of it
    shown = size(limit * config.activation_bytes) if config.activation_bytes else number(limit)
    label = f"search ≤ {shown}" if max_memory is not None else f"search, fits {shown}"
    run_config = run_config.replace(schedule="custom", microbatch_group_size=None, label=label, stages_per_device=v)
    result = simulate(program, run_config)
    in_bytes = f", {shown}" if config.activation_bytes else ""
    program.name = (f"search: makespan {number(result.makespan, config.time_unit)}, peak activation "
                    f"{number(result.peak_activation.max())} (limit {number(limit)}{in_bytes})")
    one_stage = program.placement.reverse_device is None and \
        tuple(program.placement.stage_device) == tuple(range(program.devices))
    ordered = tuple(sorted(candidates, key=lambda c: (not c.fits, c.makespan, c.peak_activation, c.name)))
    return SearchResult.of(result, max_memory=limit, candidates=ordered, best_candidate=best,
                           lower_bound=bound if one_stage else None, evaluations=evaluations)


def _nothing_fits(config: Config, max_memory, candidates) -> ConfigError:
    """The refusal when no candidate fits: the least limit that would do, or, when the device's
    memory is what no schedule fits, the least memory any schedule needs."""
    capacity = config.memory_capacity
    room = [c for c in candidates if capacity is None or c.peak_memory <= _slack(capacity)]
    if room:
        least = min(room, key=lambda c: (c.peak_activation, c.makespan))
        return ConfigError("max_memory", max_memory,
                           f"give at least {_amount(least.peak_activation, config, 6)}"
                           f", the least peak activation of any schedule here ({least.name})"
                           + (" that fits the device's memory" if capacity is not None else ""),
                           reason="no schedule fits: every one needs more on some device")
    least = min(candidates, key=lambda c: (c.peak_memory, c.makespan))
    assert capacity is not None  # without one every candidate has room
    return ConfigError("max_memory", max_memory,
                       "lower the static memory (more devices, ZeRO sharding) or the activations (recompute, fewer "
                       f"microbatches in flight), or give a larger memory_capacity: the least any schedule here needs "
                       f"is {_amount(least.peak_memory, config)} ({least.name}), static memory included",
                       reason=f"no schedule fits the device's memory (memory_capacity={_amount(capacity, config)})")


def _candidates(config: Config, limit: float, library, placements, bar):
    """Every candidate (library runs, and orders built for each placement), the runs behind
    them as (candidate, config, problem or None, orders or None), and the lower bound for one
    stage per device (None when that placement is not searched)."""
    candidates: list[Candidate] = []
    runs: list[tuple[Candidate, Config, Problem | None, Orders | None]] = []
    for name, v, cfg in library:
        got = metrics(cfg)
        cand = _candidate(name, got.makespan, got.peak_activation, got.static_memory,
                          _room(config, got.static_memory, limit), v)
        candidates.append(cand)
        runs.append((cand, cfg, None, None))
        bar.update()
    bound = None
    for placement in placements:
        v = placement.stages // placement.devices
        cfg = config.replace(schedule="custom", stages_per_device=v, microbatch_group_size=None, label=None)
        problem = Problem(cfg, placement)
        serial = problem.serial()
        serial_timing = problem.evaluate(serial)
        assert serial_timing is not None  # one microbatch at a time never deadlocks
        built = [(f"one microbatch at a time{'' if v == 1 else f' v={v}'}", serial, serial_timing)]
        static = placement_static_memory(placement, cfg)
        room = _room(cfg, static, limit)
        # the orders below are built for one limit on every device: the tightest
        tightest = float(room.min())
        if problem.one_stage_per_device:
            # (the bound holds under the limit, which every device's room is within)
            bound = lower_bound(problem, limit)
        if problem.one_stage_per_device and tightest > 0:
            for name, orders in (*wave_orders(problem, tightest), *capped_orders(problem, tightest)):
                timing = problem.evaluate(orders)
                if timing is not None and timing.peak <= tightest:
                    built.append((name, orders, timing))
            seen = set()
            for level in _heuristic_limits(tightest, max(problem.activation), placement.devices):
                for variant, orders, timing in heuristic.variants(problem, level):
                    key = tuple(map(tuple, orders))
                    if key not in seen:
                        seen.add(key)
                        built.append((f"zero-bubble heuristic (≤ {_memory_words(level, config)}, variant "
                                      f"{variant.number})", orders, timing))
        for name, orders, timing in built:
            cand = _candidate(name, timing.makespan, timing.peaks, static, room, v)
            candidates.append(cand)
            runs.append((cand, cfg, problem, orders))
        bar.update()
    return candidates, runs, bound


def _starts(fitting, limit: float):
    """(candidate, problem, orders, each device's room) to search from: the fastest fitting
    candidate of each placement, at most ``STARTS``; programs with F&B pairs or two replicas
    are not searched, nor orders above the tightest device's room (the local search holds one
    limit for every device)."""
    starts, families = [], set()
    for cand, cfg, problem, orders in fitting:
        if problem is None:
            base = cfg.build()
            orders = orders_of(base)
            if orders is None:
                continue
            problem = Problem(cfg.replace(schedule="custom", microbatch_group_size=None, label=None), base.placement)
        room = _room(problem.config, placement_static_memory(problem.placement, problem.config), limit)
        timing = problem.evaluate(orders)
        # (a library run may fit only because the simulator frees at an instant before allocating)
        if timing is None or not _fits(timing.peak, float(room.min())):
            continue
        family = (problem.placement.style, problem.stages)
        if family not in families:
            families.add(family)
            starts.append((cand, problem, orders, room))
        if len(starts) == STARTS:
            break
    return starts


__all__ = ["search", "SearchResult", "Candidate", "library_runs", "lower_bound", "checked_effort", "checked_limit",
           "checked_size", "max_search_work", "search_work", "DEFAULT_EFFORT", "MAX_EFFORT", "MAX_STAGES_PER_DEVICE",
           "MAX_SEARCH_WORK", "PROGRESS_FROM_WORK"]
