"""Metrics without a timeline: makespan, bubble and peak memory, fast enough for sweeps and search.

:func:`metrics` answers what :func:`ppviz.simulate` answers about a run's totals — makespan,
busy and idle time per device, bubble fraction and rate, peak activation, static and peak
memory — bit for bit, without building a :class:`~ppviz.Result` (no op table, no memory
curves, no closed form, no binding dependencies).

Two things make it fast. A :class:`Plan` holds everything about a program that does not
depend on costs — its validation, its dependency indices, the order in which the event engine
would visit its ops (the same for every cost, so a deadlock is found once) — and plans of
library schedules are cached per shape (schedule, p, m, v, group size), so a sweep over
costs builds each program once. Then a run is one pass of plain Python over that fixed order
(each op starts at the later of its device's previous end and its input's end plus ``comm``),
and the peak memory is a handful of numpy operations that add the same numbers in the same
order as :mod:`ppviz.core.memory` does, so the peaks are identical, not just close.

A config that sets a field this module does not model (one added to :class:`Config` later)
is passed to :func:`ppviz.simulate` instead, and its metrics read off the full result; so are
forward-only (inference) programs, whose F's free what they hold at their own end.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np

from .config import Config
from .engine import dependencies, execute, op_costs, program_config, simulate
from .vocab import has_vocab
from .errors import ConfigError
from .memory import stage_activation, static_memory
from .program import B, F, I, W, Program

#: Config fields this module models; a config that changes any other field from its default
#: takes the full path.
MODELLED = frozenset({
    "schedule", "devices", "microbatches", "stages_per_device", "f", "b", "w", "comm", "fb", "stage_costs",
    "microbatch_group_size", "activation", "w_share", "params", "activation_bytes", "label", "time_unit",
    "segments", "recompute", "recompute_cost", "recompute_activation",
    "memory_capacity",  # changes what fits, not the metrics
    # the vocabulary passes' times and memory: only vocabulary-parallel programs have them, and
    # those take the full path (modelled)
    "s", "t", "vocab_comm", "vocab_activation",
})
#: Programs kept by :func:`plan_for`: enough for a sweep's shapes, small beside the memory it saves.
CACHE_SIZE = 256


@dataclass(frozen=True)
class Metrics:
    """A run's totals, as :class:`ppviz.Result` gives them (the same values, bit for bit)."""

    config: Config
    makespan: float
    busy: np.ndarray
    idle: np.ndarray
    ideal: float
    bubble_fraction: float
    bubble_rate: float
    peak_activation: np.ndarray
    static_memory: np.ndarray
    peak_memory: np.ndarray

    @classmethod
    def of(cls, result) -> "Metrics":
        """The metrics of a full :class:`ppviz.Result`."""
        return cls(result.config, result.makespan, result.busy, result.idle, result.ideal, result.bubble_fraction,
                   result.bubble_rate, result.peak_activation, result.static_memory, result.peak_memory)


_BATCHED = ("makespan", "busy", "idle", "ideal", "bubble_fraction", "bubble_rate", "peak_activation", "static_memory",
            "peak_memory")


@dataclass
class Batch:
    """The metrics of many configs of one program as arrays, a row per config (:meth:`Plan.batch`)."""

    configs: list[Config]
    makespan: np.ndarray
    busy: np.ndarray
    idle: np.ndarray
    ideal: np.ndarray
    bubble_fraction: np.ndarray
    bubble_rate: np.ndarray
    peak_activation: np.ndarray
    static_memory: np.ndarray
    peak_memory: np.ndarray

    def __len__(self) -> int:
        return len(self.configs)

    @classmethod
    def of(cls, runs: list[Metrics]) -> "Batch":
        return cls([m.config for m in runs], *(np.array([getattr(m, name) for m in runs]) for name in _BATCHED))

    def set(self, k: int, m: Metrics) -> None:
        for name in _BATCHED:
            getattr(self, name)[k] = getattr(m, name)

    def __getitem__(self, k: int) -> Metrics:
        return Metrics(self.configs[k], float(self.makespan[k]), self.busy[k], self.idle[k], float(self.ideal[k]),
                       float(self.bubble_fraction[k]), float(self.bubble_rate[k]), self.peak_activation[k],
                       self.static_memory[k], self.peak_memory[k])


class Plan:
    """A validated program with everything about it that costs do not change.

    ``steps`` lists the ops (pairs once, by their first op) in an order in which each op's
    device predecessor and inputs come first: the order the event engine visits them.
    """

    __slots__ = ("program", "n", "steps", "pairs", "cross", "holds", "alloc", "device", "kind", "width", "cell",
                 "_waves")

    def __init__(self, program: Program):
        program.validate()
        self.program = program
        n = self.n = len(program)
        dep = dependencies(program)
        device = self.device = program.device
        self.kind = program.kind
        has = dep >= 0
        cross = np.zeros(n, bool)
        cross[has] = device[dep[has]] != device[has]
        self.cross = cross
        self.pairs = bool(program.pair.any())
        order = _visit_order(program, dep)
        if order is None:
            # the engine names the stuck devices and what they wait for
            execute(program, np.zeros(n), 0.0, engine="events")
            raise AssertionError("unreachable: the engine found no deadlock")  # pragma: no cover
        offsets = program.offsets
        prev = np.arange(-1, n - 1, dtype=np.int64)
        prev[offsets[:-1][offsets[:-1] < n]] = n  # a device's first op follows "time 0"
        pair = program.pair
        second = np.flatnonzero(pair) + 1
        # the op after a pair follows the pair's slot, whose end both ops carry
        dep_or_start = np.where(dep >= 0, dep, n)
        prev_l, dep_l, cross_l = prev.tolist(), dep_or_start.tolist(), cross.tolist()
        if self.pairs:
            partner = np.full(n, n, np.int64)
            partner[second - 1] = dep_or_start[second]
            partner_cross = np.zeros(n, bool)
            partner_cross[second - 1] = cross[second]
            part_l, pcross_l, pair_l = partner.tolist(), partner_cross.tolist(), pair.tolist()
            self.steps: list[tuple[int, ...]] = [(i, prev_l[i], dep_l[i], cross_l[i], pair_l[i], part_l[i], pcross_l[i])
                                                 for i in order]
        else:
            self.steps = [(i, prev_l[i], dep_l[i], cross_l[i]) for i in order]
        placement = program.placement
        # each device's (replica, stage) slices, in the order static_memory adds them up
        self.holds = None if placement is None else np.concatenate(
            [placement.stage_device, () if placement.reverse_device is None else placement.reverse_device]).astype(np.intp)
        self.alloc = program.kind == F
        # each op's cell in a (device, position on the device) grid, for per-device running sums
        counts = np.diff(offsets)
        self.width = max(int(counts.max(initial=0)), 1)
        self.cell = device.astype(np.int64) * self.width + np.arange(n) - np.repeat(offsets[:-1], counts)
        self._waves: list[tuple[np.ndarray, ...]] | None = None

    def times(self, cost: np.ndarray, comm: float) -> tuple[np.ndarray, np.ndarray]:
        """Start and end of every op: the event engine's values for these costs."""
        n = self.n
        start = [0.0] * n
        end = [0.0] * (n + 1)  # end[n] = 0.0 stands for "time 0" (no input, first op)
        cost_l = cost.tolist()
        if not self.pairs:
            if comm:
                for i, pv, j, c in self.steps:
                    s = end[pv]
                    r = end[j] + comm if c else end[j]
                    if r > s:
                        s = r
                    start[i] = s
                    end[i] = s + cost_l[i]
            else:
                for i, pv, j, _ in self.steps:
                    s = end[pv]
                    r = end[j]
                    if r > s:
                        s = r
                    start[i] = s
                    end[i] = s + cost_l[i]
        else:
            for i, pv, j, c, paired, j2, c2 in self.steps:
                s = end[pv]
                r = end[j] + comm if c else end[j]
                if r > s:
                    s = r
                if paired:
                    r = end[j2] + comm if c2 else end[j2]
                    if r > s:
                        s = r
                    start[i] = start[i + 1] = s
                    end[i] = end[i + 1] = s + cost_l[i]
                else:
                    start[i] = s
                    end[i] = s + cost_l[i]
        del end[n]
        return np.array(start), np.array(end)

    def waves(self):
        """The steps grouped into waves whose inputs all come from earlier waves, as index arrays
        (op, device predecessor, input, input crosses devices, pair partner's input, it crosses,
        op starts a pair)."""
        if self._waves is None:
            n = self.n
            depth = [0] * (n + 1)
            groups: dict[int, list] = {}
            for step in self.steps:
                i, pv, j = step[0], step[1], step[2]
                j2 = step[5] if self.pairs and step[4] else n
                level = 1 + max(depth[pv], depth[j], depth[j2])
                depth[i] = level
                if self.pairs and step[4]:
                    depth[i + 1] = level
                paired = bool(self.pairs and step[4])
                groups.setdefault(level, []).append((i, pv, j, step[3], j2, paired and step[6], paired))
            self._waves = [tuple(np.array(col) for col in zip(*groups[k])) for k in sorted(groups)]
        return self._waves

    def batch(self, configs: list[Config]) -> "Batch":
        """:meth:`metrics` of many configs of this plan's program at once, as arrays (a row per
        config), each value the same as one run's.

        The times of all configs advance together, one wave of independent ops at a time, as
        vectors over the configs (the same additions and maxima as one run's); running sums go
        along rows, as for one config. Configs whose ops can take no time (their memory needs
        the curves' sort) or whose sums overflow run one by one.
        """
        program = self.program
        if program.forward_only:
            return Batch.of([self.metrics(c) for c in configs])
        n, p, K = self.n, program.devices, len(configs)
        cost = self._costs_many(configs)  # (K, n)
        comm = np.array([c.comm for c in configs])
        finite = np.isfinite(cost.sum(axis=1) + comm * n)
        start, end = self.times_many(cost, comm)
        makespan = end.max(axis=1)
        grid = np.zeros((K, p * self.width))
        grid[:, self.cell] = cost
        busy = np.cumsum(grid.reshape(K, p, self.width), axis=2)[:, :, -1]
        idle = makespan[:, None] - busy
        ideal = busy.max(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            fraction = np.where(makespan != 0, idle.sum(axis=1) / (p * makespan), 0.0)
            rate = np.where(ideal != 0, (makespan - ideal) / ideal, 0.0)
        timed = (end > start).all(axis=1) & finite
        peak = np.zeros((K, p))
        peak[timed] = self._peaks_many([c for c, ok in zip(configs, timed) if ok], start[timed], end[timed])
        static = self._static_many(configs)
        out = Batch(list(configs), makespan, busy, idle, ideal, fraction, rate, peak, static, peak + static)
        for k in np.flatnonzero(~timed):
            out.set(int(k), self.metrics(configs[k]))
        return out

    def times_many(self, cost: np.ndarray, comm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`times` of many cost rows (``cost``: configs × ops; ``comm``: one latency per
        config) at once, a row per config: one wave of independent ops at a time, each a vector
        over the configs of the same additions and maxima as one run's."""
        n, K = self.n, len(cost)
        end = np.zeros((n + 1, K))  # row n: "time 0"
        start = np.zeros((n, K))
        cost_t = np.ascontiguousarray(cost.T)
        for i, pv, j, cross, j2, cross2, paired in self.waves():
            s = np.maximum(end[pv], end[j] + cross[:, None] * comm)
            if self.pairs:
                s = np.maximum(s, end[j2] + cross2[:, None] * comm)
            start[i] = s
            end[i] = s + cost_t[i]
            if self.pairs and paired.any():  # a pair's second op shares its slot's times
                first = i[paired]
                start[first + 1] = start[first]
                end[first + 1] = end[first]
        return start.T, end[:n].T

    def _static_many(self, configs: list[Config]) -> np.ndarray:
        """``static_memory`` of each config as rows: the same per-stage values added per device
        in the same order (configs with per-stage ``params`` one by one)."""
        program = self.program
        p, S = program.devices, program.stages
        out = np.zeros((len(configs), p))
        uniform = [k for k, c in enumerate(configs) if not any("params" in over for over in c.stage_costs.values())]
        if self.holds is not None and uniform:
            per_stage = np.array([configs[k].params * p / S for k in uniform])[:, None]
            slices = np.broadcast_to(per_stage, (len(uniform), len(self.holds)))
            rows = np.zeros((len(uniform), p))
            np.add.at(rows, (slice(None), self.holds), slices)  # type: ignore[arg-type]  # numpy's stubs take no (slice, array) index
            out[uniform] = rows
        done = set(uniform) if self.holds is not None else set()
        for k, c in enumerate(configs):
            if k not in done:
                out[k] = static_memory(program, c)
        return out

    def _costs_many(self, configs: list[Config]) -> np.ndarray:
        """``op_costs`` of each config as rows; configs without per-stage overrides in one go,
        with op_costs' own arithmetic (a stage's share of f, b, w; B = I + W; a pair's ratio)."""
        program = self.program
        kind = self.kind
        cost = np.empty((len(configs), self.n))
        plain = [k for k, c in enumerate(configs)
                 if not c.stage_costs and c.recompute is None and program.segments == 1]
        for k, c in enumerate(set(range(len(configs))) - set(plain)):
            cost[c] = op_costs(program, configs[c])
        if plain:
            frac = program.devices / program.stages
            f = np.array([configs[k].f for k in plain])[:, None] * frac
            i = np.array([configs[k].b for k in plain])[:, None] * frac
            w = np.array([configs[k].w for k in plain])[:, None] * frac
            rows = np.select([kind == F, kind == B, kind == I, kind == W], [f, i + w, i, w], 0.0)
            if self.pairs:
                first = np.flatnonzero(program.pair)
                ratio = np.array([1.0 if (fb := configs[k].fb) is None else
                                  fb / (configs[k].f + configs[k].b + configs[k].w) for k in plain])[:, None]
                rows[:, first] = ratio * (rows[:, first] + rows[:, first + 1])
                rows[:, first + 1] = 0.0
            cost[plain] = rows
        return cost

    def _peaks_many(self, configs: list[Config], start: np.ndarray, end: np.ndarray) -> np.ndarray:
        """:meth:`peak_activation` for configs whose every op takes time (program-order sums).

        With one activation size a for every stage (no per-stage ``activation``), an op's change
        is one of a, −a, −(1 − w_share)·a, −w_share·a by its kind, the same products
        ``memory.activation_curves`` forms; configs with per-stage sizes take :meth:`peak_activation`.
        """
        program = self.program
        p, K = program.devices, len(configs)
        out = np.zeros((K, p))
        if not K:
            return out
        varied = np.array([c.recompute is not None or any("activation" in over for over in c.stage_costs.values())
                           for c in configs])
        for k in np.flatnonzero(varied):
            out[k] = self.peak_activation(configs[k], start[k], end[k])
        rows = np.flatnonzero(~varied)
        if not len(rows):
            return out
        # stage_activation's value, activation · p/S, per segment of a microbatch as the curves take it
        act = np.array([configs[k].activation * p / program.stages for k in rows]) / program.segments
        share = np.array([configs[k].w_share for k in rows])
        change = np.stack([act, -act, -((1.0 - share) * act), -(share * act)], axis=1)  # by kind F, B, I, W
        delta = change[:, self.kind.astype(np.intp)]
        grid = np.zeros((len(rows), p * self.width))
        grid[:, self.cell] = delta
        level = np.cumsum(grid.reshape(len(rows), p, self.width), axis=2)
        has_f = np.bincount(self.device[self.alloc], minlength=p) > 0
        scale = np.where(has_f[None, :], np.abs(act)[:, None], 0.0)
        threshold = 1e-9 * np.maximum(1.0, scale)
        level[np.abs(level) < threshold[:, :, None]] = 0.0
        peak = level.max(axis=2)
        first = np.full(p, -1)
        f_ops = np.flatnonzero(self.alloc)
        first[self.device[f_ops][::-1]] = f_ops[::-1]  # each device's first F in program order
        first_alloc = np.where(first >= 0, start[rows][:, np.maximum(first, 0)], np.inf)
        out[rows] = np.where(first_alloc > 0, np.maximum(peak, 0.0), peak)
        return out

    def metrics(self, config: Config) -> Metrics:
        program = self.program
        p = program.devices
        cost = op_costs(program, config)
        if program.forward_only or not np.isfinite(float(cost.sum()) + config.comm * self.n):
            # inference holds each activation only while its F runs; and for sums that
            # overflow, the full path says why (the same refusal)
            return Metrics.of(simulate(program, config))
        start, end = self.times(cost, config.comm)
        makespan = float(end.max())
        busy = np.bincount(self.device, weights=cost, minlength=p)
        idle = makespan - busy
        ideal = float(busy.max())
        fraction = float(idle.sum() / (p * makespan)) if makespan else 0.0
        rate = (makespan - ideal) / ideal if ideal else 0.0
        peak = self.peak_activation(config, start, end)
        static = static_memory(program, config)
        return Metrics(config, makespan, busy, idle, ideal, fraction, rate, peak, static, peak + static)

    def peak_activation(self, config: Config, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        """Each device's peak activation, as ``memory.activation_curves(...).peaks()`` computes it.

        The curves put the events (an F's allocation at its start, a release at an I's, W's or
        B's end) per device in time order, releases first at equal times, sum them in that
        order, round near-zero levels to zero and keep the level at the end of each instant
        (and 0 before a curve's first event). When every op takes time, that order is program
        order and every allocation ends its instant, while a release never lifts the level
        above the instant before it; so the peak is the highest running sum along each device's
        row of ops, the same floats added in the same order. Zero-time ops can make events
        meet out of program order: then the events are sorted as the curves sort them.
        """
        program = self.program
        p = program.devices
        act = stage_activation(config, p, program.stages)[program.stage] / program.segments
        kind = self.kind
        share = config.w_share
        release = np.select([kind == B, kind == I, kind == W], [act, (1.0 - share) * act, share * act], 0.0)
        alloc = self.alloc
        scale = np.zeros(p)
        np.maximum.at(scale, self.device[alloc], np.abs(act[alloc]))
        threshold = 1e-9 * np.maximum(1.0, scale)
        if (end > start).all():
            delta = np.where(alloc, act, -release)
            grid = np.zeros((p, self.width))
            grid.ravel()[self.cell] = delta
            level = np.cumsum(grid, axis=1)
            level[np.abs(level) < threshold[:, None]] = 0.0
            peak = level.max(axis=1)
            first_alloc = np.full(p, np.inf)
            np.minimum.at(first_alloc, self.device[alloc], start[alloc])
            return np.where(first_alloc > 0, np.maximum(peak, 0.0), peak)
        freed = ~alloc & (release != 0)
        a_idx = np.flatnonzero(alloc)
        f_idx = np.flatnonzero(freed)
        idx = np.concatenate([a_idx, f_idx])
        when = np.concatenate([start[a_idx], end[f_idx]])
        delta = np.concatenate([act[a_idx], -release[f_idx]])
        is_alloc = np.zeros(len(idx), bool)
        is_alloc[:len(a_idx)] = True
        dev = self.device[idx]
        order = np.lexsort((idx, is_alloc, when, dev))
        dev, when, delta = dev[order], when[order], delta[order]
        count = np.bincount(dev, minlength=p)
        first = np.zeros(p + 1, np.int64)
        np.cumsum(count, out=first[1:])
        pos = np.arange(len(dev)) - first[dev]
        width = int(count.max(initial=0))
        grid = np.zeros((p, width))
        grid[dev, pos] = delta
        level = np.cumsum(grid, axis=1)[dev, pos]
        last = np.ones(len(dev), bool)
        last[:-1] = (when[1:] != when[:-1]) | (dev[1:] != dev[:-1])
        level[np.abs(level) < threshold[dev]] = 0.0
        tops = np.full((p, max(width, 1)), -np.inf)
        tops[dev[last], pos[last]] = level[last]
        peak = tops.max(axis=1)
        starts_at_zero = np.ones(p, bool)
        has = count > 0
        starts_at_zero[has] = when[first[:-1][has]] > 0
        return np.where(starts_at_zero, np.maximum(peak, 0.0), peak)


def _visit_order(program: Program, dep: np.ndarray) -> list[int] | None:
    """The ops in the event engine's visiting order (pairs by their first op), or None on a deadlock."""
    n = len(program)
    dep_l = dep.tolist()
    pair_l = program.pair.tolist()
    done = [False] * n
    waiter = [-1] * n
    offsets = program.offsets.tolist()
    p = program.devices
    pos = offsets[:-1]
    stop = offsets[1:]
    order = []
    runnable = list(range(p - 1, -1, -1))
    while runnable:
        d = runnable.pop()
        i, e = pos[d], stop[d]
        while i < e:
            j = dep_l[i]
            if j >= 0 and not done[j]:
                waiter[j] = d
                break
            width = 1
            if pair_l[i]:
                j = dep_l[i + 1]
                if j >= 0 and not done[j]:
                    waiter[j] = d
                    break
                width = 2
            order.append(i)
            for k in range(i, i + width):
                done[k] = True
                if waiter[k] >= 0:
                    runnable.append(waiter[k])
            i += width
        pos[d] = i
    if any(pos[d] < stop[d] for d in range(p)):
        return None
    return order


@functools.lru_cache(maxsize=CACHE_SIZE)
def _plan_of_shape(schedule: str, devices: int, microbatches: int, v: int, group: int | None, segments: int) -> Plan:
    config = Config(schedule=schedule, devices=devices, microbatches=microbatches, stages_per_device=v,
                    microbatch_group_size=group, segments=segments)
    return Plan(config.build())


def plan_for(config: Config) -> Plan:
    """The plan of a config's program, built once per (schedule, p, m, v, group size, segments)."""
    return _plan_of_shape(config.schedule, config.devices, config.microbatches, config.stages_per_device,
                          config.microbatch_group_size, config.segments)


def clear_cache() -> None:
    """Forget the cached plans (they hold their programs)."""
    _plan_of_shape.cache_clear()


def modelled(config: Config) -> bool:
    """True when every field the config sets is one this module models, and its schedule has no
    vocabulary passes (their ops wait for several others: only ``simulate`` times them)."""
    return not config.spec.vocab_barriers and all(f.name in MODELLED or getattr(config, f.name) == _default(f) for f in dataclasses.fields(config))


def _default(field: dataclasses.Field):
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return object()


def metrics_many(configs: list[Config]) -> list[Metrics]:
    """:func:`metrics` of each config, in order; configs of one shape run together
    (:meth:`Plan.batch`), several times faster than one by one."""
    out: dict[int, Metrics] = {}
    groups: dict[tuple, list[int]] = {}
    for k, config in enumerate(configs):
        if not isinstance(config, Config):
            raise ConfigError(f"configs[{k}]", config, "give ppviz.Config objects")
        if modelled(config) and config.spec.builder is not None:
            key = (config.schedule, config.devices, config.microbatches, config.stages_per_device,
                   config.microbatch_group_size, config.segments)
            groups.setdefault(key, []).append(k)
        else:
            out[k] = metrics(config)
    for members in groups.values():
        batch = plan_for(configs[members[0]]).batch([configs[k] for k in members])
        for row, k in enumerate(members):
            out[k] = batch[row]
    return [out[k] for k in range(len(configs))]


def metrics(x, config: Config | None = None, **options) -> Metrics:
    """The metrics :func:`ppviz.simulate` would give, without its timeline.

    Called like ``simulate``: ``metrics(cfg)``, ``metrics(cfg, comm=0.1)``, ``metrics(program)``,
    ``metrics(program, cfg)``, or ``metrics(plan, cfg)`` with a :class:`Plan` made once for
    many configs. Refuses what ``simulate`` refuses, with the same errors.
    """
    if isinstance(x, Config):
        if config is not None:
            raise ConfigError("config", config, "pass either a Config or a Program with a Config, not two Configs")
        cfg = x.replace(**options) if options else x
        if not modelled(cfg) or cfg.spec.builder is None:
            return Metrics.of(simulate(cfg))
        return plan_for(cfg).metrics(cfg)
    plan = x if isinstance(x, Plan) else None
    program = plan.program if plan is not None else x
    if not isinstance(program, Program):
        raise ConfigError("x", type(x).__name__, "metrics takes a ppviz.Config, a ppviz.Program or a Plan")
    cfg = program_config(program, config, options)
    if not modelled(cfg) or has_vocab(program):
        return Metrics.of(simulate(program, cfg))
    return (plan or Plan(program)).metrics(cfg)


__all__ = ["Batch", "Metrics", "Plan", "metrics", "metrics_many", "plan_for", "clear_cache", "modelled", "MODELLED"]
