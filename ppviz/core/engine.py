"""Event simulation of a program: every op starts when its device is free and its inputs are ready.

Dependencies (ARCHITECTURE.md, "Model of time and memory"): F(s,mb) waits for F(s−1,mb); B or I of (s,mb) waits for the
B/I of (s+1,mb), or for F(S−1,mb) on the last stage; W(s,mb) waits for I(s,mb). An edge
between two devices adds ``comm``. A device runs its ops in order, one slot at a time; an
F&B pair fills one slot and waits for the inputs of both its ops.

The engine is a single pass: each device advances through its ops until one waits for an
op that has not run, and registers itself with that op; finishing an op wakes the device
waiting for it. Every op is visited once, so the cost is linear in the number of ops, and
a program that cannot finish is detected (no device can move) instead of hanging.
"""

from __future__ import annotations

import array
from typing import Any

import numpy as np

from . import comm_engine, kernel, offload, relaxation, vocab
from .config import A2A_KEYS, Config
from .dependencies import deadlock_error, dependencies, latencies
from .errors import ConfigError, checked_arguments
from .program import KINDS, Program
from .registry import ScheduleSpec, find
from .result import Result, traffic


def op_costs(program: Program, config: Config) -> np.ndarray:
    """Duration of each op; the first op of an F&B pair carries the pair's duration: ``Config.fb``'s
    ratio to f + b + w times its two ops' sum, or, where the stages give their all-to-all parts
    (``f_a2a``, ...), :func:`overlapped_pairs`' rule. A segment of a microbatch split into k
    sequence segments costs 1/k of the microbatch's pass. Every op also pays its stage's host gap
    (:func:`gap_table`), and the first microbatch's ops (its first segment's) their stage's
    warm-up (:func:`warmup_table`), neither scaled."""
    return _joined(program, config, _own_costs(program, config))


def _joined(program: Program, config: Config, own: np.ndarray) -> np.ndarray:
    """:func:`op_costs` from each op's own duration (``own``, :func:`_own_costs`)."""
    cost = braided(program, config, own)
    if program.pair.any():
        if cost is own:
            cost = own.copy()  # ``own`` stays each op's own duration (hidden_costs compares with it)
        first = np.flatnonzero(program.pair)
        if a2a_table(config, program.stages) is None:
            ratio = 1.0 if config.fb is None else config.fb / (config.f + config.b + config.w)
            cost[first] = ratio * (cost[first] + cost[first + 1])
        else:
            cost[first] = overlapped_pairs(program, config, cost, first)
        cost[first + 1] = 0.0
    return cost


def hidden_costs(program: Program, own: np.ndarray, cost: np.ndarray) -> np.ndarray | None:
    """Per op, how much shorter ``cost`` (:func:`op_costs`) runs it than ``own`` (alone,
    :func:`_own_costs`): an F&B pair's two ops against the pair (on its first op), an op of STP's
    braided units against its own time; None where nothing overlaps."""
    spec = find(program.name) if program.name else None
    if not program.pair.any() and (spec is None or spec.braided_units is None):
        return None
    alone = own.copy()
    first = np.flatnonzero(program.pair)
    alone[first] += alone[first + 1]
    alone[first + 1] = 0.0
    return np.maximum(0.0, alone - cost)


def _own_costs(program: Program, config: Config) -> np.ndarray:
    """Each op's own duration, as if it ran alone (:func:`op_costs` before it joins pairs)."""
    kind = program.kind.astype(np.intp)
    table = stage_table(config, program.devices, program.stages) / program.segments
    gaps = gap_table(config, program.stages)
    if gaps is not None:
        table = table + gaps
    cost = table[kind, program.stage]
    warm = warmup_table(config, program.stages)
    if warm is not None:
        first = np.flatnonzero(program.microbatch == 0)
        cost[first] += warm[kind[first], program.stage[first]]
    return cost


def a2a_table(config: Config, stages: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Per stage, the expert-parallel all-to-all inside its F, B, I and W (rows as
    :func:`stage_table`'s: ``stage_costs[s]["f_a2a"]``, ``"b_a2a"`` + ``"w_a2a"``, ``"b_a2a"``,
    ``"w_a2a"``), and the share of the SMs communication takes in an F&B pair
    (``"a2a_sm_share"``); None when no stage gives any."""
    rows = _stage_rows(config, stages, A2A_KEYS)
    if rows is None:
        return None
    f, i, w, share = rows
    return np.stack([f, i + w, i, w]), share


def overlapped_pairs(program: Program, config: Config, cost: np.ndarray, first: np.ndarray) -> np.ndarray:
    """The duration of each F&B pair whose first op is at ``first`` (``cost``: each op's own), by
    DeepSeek-V3's overlap (arXiv 2412.19437, §3.2.1 and Figure 4): each chunk is split into
    attention, all-to-all dispatch, MLP and all-to-all combine, and a forward's and a backward's
    components interleave so that each one's all-to-all runs under the other's computation, on
    SMs given to communication ("20 SMs", §3.2.2, of an H800's 132), which the computation lacks
    while it runs.

    With M an op's all-to-all, C the rest of its time and σ its stage's ``a2a_sm_share``, the
    pair takes max(C_F + C_B + σ_F·M_F + σ_B·M_B, C_F + M_F, C_B + M_B, M_F + M_B): the
    computation, slowed by the SMs the all-to-all holds while it runs; each op's own chain, whose
    MLP waits for its dispatch and whose combine for its MLP, so that its all-to-all hides only
    under the other op's computation; or the communication in a row. The report's case, each
    all-to-all within the other op's computation, is the first; beyond it the communication
    cannot hide. Without all-to-all the pair is its two ops' sum, and it never takes longer than
    its two ops one after the other. An op's tensor-parallel collectives and host gaps count as
    its computation."""
    return _overlap(program, config, cost, first)[0]


def _overlap(program: Program, config: Config, cost: np.ndarray, first: np.ndarray):
    """:func:`overlapped_pairs`' durations, and the pairs' computation C_F + C_B."""
    table = a2a_table(config, program.stages)
    assert table is not None  # called only where the stages give the parts
    a2a, share = table[0] / program.segments, table[1]
    second = first + 1
    kind, stage = program.kind.astype(np.intp), program.stage
    m_f, m_b = a2a[kind[first], stage[first]], a2a[kind[second], stage[second]]
    if np.any(cost[first] < m_f) or np.any(cost[second] < m_b):
        raise ConfigError("stage_costs", dict(config.stage_costs), "give each stage's all-to-all parts (f_a2a, "
                          "b_a2a, w_a2a) at most the times of the ops they are part of",
                          reason="an op's all-to-all is longer than the op")
    c_f, c_b = cost[first] - m_f, cost[second] - m_b
    computation = c_f + c_b + share[stage[first]] * m_f + share[stage[second]] * m_b
    pair = np.maximum(np.maximum(computation, m_f + m_b), np.maximum(c_f + m_f, c_b + m_b))
    return pair, c_f + c_b


def exposed_a2a(program: Program, config: Config) -> np.ndarray:
    """Per op, the expert-parallel all-to-all it does not hide (zeros without the stages'
    all-to-all parts): an op alone exposes all of its own; an F&B pair, on its first op, what it
    takes beyond its two ops' computation (:func:`overlapped_pairs`), the SMs the all-to-all
    holds included."""
    table = a2a_table(config, program.stages)
    out = np.zeros(len(program))
    if table is None:
        return out
    out[:] = table[0][program.kind.astype(np.intp), program.stage] / program.segments
    if program.pair.any():
        first = np.flatnonzero(program.pair)
        pair, compute = _overlap(program, config, _own_costs(program, config), first)
        out[first] = pair - compute
        out[first + 1] = 0.0
    return out


def braided(program: Program, config: Config, cost: np.ndarray) -> np.ndarray:
    """``cost`` with each braided unit's communication hidden (``ScheduleSpec.braided_units``:
    STP's): each of its two ops pays its compute and only the part of its tensor- and expert-
    parallel communication (:func:`ppviz.core.result.traffic`) that its partner's compute cannot
    cover, the partner's compute being its cost less its own communication; what it hides still
    costs σ of itself, σ its stage's ``comm_sm_share``: the SMs the collectives hold while the
    partner computes, which the computation lacks (the charge :func:`overlapped_pairs` makes,
    DeepSeek-V3's §3.2.2). Where the stages give their all-to-all parts, F&B pairs are left to
    :func:`overlapped_pairs` (one rule owns a pair: there its tensor-parallel collectives count
    as computation)."""
    spec = find(program.name) if program.name else None
    if spec is None or spec.braided_units is None:
        return cost
    table = traffic(config, program.stages) / program.segments
    if not table.any():
        return cost
    first = np.asarray(spec.braided_units(program), dtype=np.intp)
    if a2a_table(config, program.stages) is not None:
        first = first[~program.pair[first]]
    second = first + 1
    comm = np.zeros(len(cost))
    for k in (first, second):
        comm[k] = np.minimum(table[program.stage[k], program.kind[k]], cost[k])
    compute = cost - comm
    rows = _stage_rows(config, program.stages, ("comm_sm_share",))
    kept = 1.0 - (rows[0][program.stage] if rows is not None else np.zeros(len(cost)))  # what hiding saves
    cost = cost.copy()
    cost[first] -= kept[first] * np.minimum(comm[first], compute[second])
    cost[second] -= kept[second] * np.minimum(comm[second], compute[first])
    return cost


def gap_table(config: Config, stages: int) -> np.ndarray | None:
    """Per stage, the host time each of its ops pays (rows F, B, I, W as :func:`stage_table`'s):
    ``stage_costs[s]["gap_f"]``, ``"gap_b"`` (an I's, and a full B's: one op, one gap) and
    ``"gap_w"``; None when no stage gives one."""
    rows = _stage_rows(config, stages, ("gap_f", "gap_b", "gap_w"))
    return None if rows is None else np.stack([rows[0], rows[1], rows[1], rows[2], *_no_vocab(stages)])


def warmup_table(config: Config, stages: int) -> np.ndarray | None:
    """Per stage, what its first microbatch's F, B, I and W cost on top of the others' (rows as
    :func:`stage_table`'s; B = I + W): ``stage_costs[s]["warmup_f"]``, ``"warmup_b"`` (the
    input-gradient part) and ``"warmup_w"``; None when no stage gives one."""
    rows = _stage_rows(config, stages, ("warmup_f", "warmup_b", "warmup_w"))
    return None if rows is None else np.stack([rows[0], rows[1] + rows[2], rows[1], rows[2], *_no_vocab(stages)])


def _no_vocab(stages: int) -> tuple[np.ndarray, np.ndarray]:
    """The S and T rows of the gap and warm-up tables: calibration measures neither."""
    return np.zeros(stages), np.zeros(stages)


def _stage_rows(config: Config, stages: int, keys: tuple[str, ...]) -> list[np.ndarray] | None:
    """One row per key of ``stage_costs``' values per stage (0 where a stage does not give it);
    None when no stage gives any."""
    if not any(k in over for over in config.stage_costs.values() for k in keys):
        return None
    rows = [np.zeros(stages) for _ in keys]
    for s, over in config.stage_costs.items():
        for row, k in zip(rows, keys):
            row[s] = over.get(k, 0.0)
    return rows


def stage_table(config: Config, devices: int, stages: int) -> np.ndarray:
    """Per-stage times, rows F, B (= I + W), I, W, S, T; a stage of 1/S of the model costs p/S of
    f, b, w; the vocabulary passes S and T (``s``, ``t``) are a device's, whatever its stages.

    Under recompute, each stage's I (and B) starts with the recompute of its forward
    (``recompute_cost``, by default the stage's f under full recompute; see ``Config.recompute``).
    """
    frac = devices / stages
    f = np.full(stages, config.f * frac)
    i = np.full(stages, config.b * frac)
    w = np.full(stages, config.w * frac)
    s_pass, t_pass = np.full(stages, config.s), np.full(stages, config.t)
    again = np.zeros(stages)
    for s, over in config.stage_costs.items():
        if s >= stages:
            raise ConfigError("stage_costs", dict(config.stage_costs),
                              f"stage keys must be integers 0..{stages - 1} for this program")
        f[s] = over.get("f", f[s])
        i[s] = over.get("b", i[s])
        w[s] = over.get("w", w[s])
        s_pass[s] = over.get("s", s_pass[s])
        t_pass[s] = over.get("t", t_pass[s])
    if config.recompute is not None:
        default = config.recompute_cost
        again = f.copy() if default is None and config.recompute == "full" else np.full(stages, (default or 0.0) * frac)
        for s, over in config.stage_costs.items():
            again[s] = over.get("recompute", again[s])
    i = i + again
    return np.stack([f, i + w, i, w, s_pass, t_pass])


def execute(program: Program, cost: np.ndarray, comm: float | np.ndarray, *,
            engine: str = "auto") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Start and end time of every op, and the index of the op each one depends on.

    Two exact engines give bit-identical times: ``"events"`` walks each device until it must
    wait (cost ∝ ops) and ``"lockstep"`` advances every device by one op per vectorised round
    (cost ∝ rounds × devices); ``"auto"`` runs the cheaper by :func:`choose_engine`'s cost model,
    after trying ``relaxation`` where it applies (the same times, by whole-array passes).
    ``"kernel"`` runs the reference model, :func:`ppviz.core.kernel.compute`, which they equal.
    ``comm`` is the latency added to every dependency between devices, or an array giving each
    op's own (a measured run's transfers; ignored where the dependency stays on one device).
    Raises DeadlockError when the per-device orders cannot all finish.
    """
    kernel.checked_engine(engine)
    dep = dependencies(program)
    cross = latencies(program, dep, comm)
    if engine == "auto":
        if relaxation.applies(program, cross):
            relaxed = relaxation.times(program, dep, cost)
            if relaxed is not None:
                return relaxed[0], relaxed[1], dep
        engine = choose_engine(program)
    if engine == "lockstep":
        if program.pair.any():
            raise ConfigError("engine", engine, "use 'events' or 'auto': the lockstep engine does not run F&B pairs")
        start, end = _lockstep(program, dep, cross, cost)
    elif engine == "events":
        start, end = _events(program, dep, cross, cost)
    else:
        start, end, _ = kernel.compute(program, cost, comm, dep)
    return start, end, dep


# Costs of the two engines, in microseconds, measured on a 2-core machine (benchmarks/hardening.py
# prints both engines' times beside the choice): a lockstep round costs a fixed overhead plus a
# little per device, whether or not the device moves; the events engine costs about one
# microsecond per op (less when devices run long stretches without waiting, more when each op
# waits for another device).
_ROUND_US = 10.0
_ROUND_US_PER_DEVICE = 0.03
_EVENT_US = 1.0


def estimated_rounds(program: Program) -> int:
    """About how many rounds the lockstep engine needs: its longest device, plus the chain of
    one microbatch's forwards and backwards through every stage (2S ops in a row), which is what
    devices wait for at the fill and the drain. An upper estimate for the library's schedules;
    far more than the longest device when devices wait on each other (looped BFS at m = 1 runs
    one op per round)."""
    longest = int(np.diff(program.offsets).max(initial=0))
    return longest + 2 * program.stages


def choose_engine(program: Program) -> str:
    """The engine ``engine="auto"`` runs: the cheaper of the two by the cost model above."""
    if program.pair.any():
        return "events"  # the lockstep engine does not run F&B pairs
    lockstep = estimated_rounds(program) * (_ROUND_US + _ROUND_US_PER_DEVICE * program.devices)
    return "lockstep" if lockstep < _EVENT_US * len(program) else "events"


def _events(program: Program, dep: np.ndarray, cross: np.ndarray, cost: np.ndarray):
    if not program.pair.any() and not cross.any():
        return _events_plain(program, dep, cost)
    dep_l, start, end, waiter, pos, stop, free, runnable = _event_state(program, dep)
    cross_l = cross.tolist()
    cost_l = cost.tolist()
    pair_l = program.pair.tolist()
    pop = runnable.pop
    push = runnable.append
    while runnable:
        d = pop()
        t = free[d]
        # a for loop over a range (see _events_plain), which skips an F&B pair's second op by hand
        ahead = iter(range(pos[d], stop[d]))
        for i in ahead:
            j = dep_l[i]
            r = end[j]
            if r < 0.0:
                waiter[j] = d
                pos[d] = i
                break
            r += cross_l[i]
            if r > t:
                t = r
            if pair_l[i]:
                # an F&B pair: one slot that also waits for its second op's input (t may
                # already hold the first input's time if it breaks here: harmless, the slot
                # starts at the max of both anyway)
                k = i + 1
                j = dep_l[k]
                r = end[j]
                if r < 0.0:
                    waiter[j] = d
                    pos[d] = i
                    break
                r += cross_l[k]
                if r > t:
                    t = r
                start[i] = start[k] = t
                t += cost_l[i]
                end[i] = end[k] = t
                w = waiter[i]
                if w >= 0:
                    push(w)
                next(ahead)
                i = k
            else:
                start[i] = t
                t += cost_l[i]
                end[i] = t
            w = waiter[i]
            if w >= 0:
                push(w)
        else:
            pos[d] = stop[d]
        free[d] = t
    return _event_times(program, dep, pos, stop, end, start, cost)


def _events_plain(program: Program, dep: np.ndarray, cost: np.ndarray):
    """The loop of :func:`_events` for the common case, no F&B pairs and no communication:
    without their branches it runs ~25% faster (the widget's loop at 10^6 ops is mostly this).

    It keeps only the ends, as raw doubles (a store there costs less than into a list, and no
    float objects stay alive), and no starts: each op starts at the later of its device
    predecessor's end and its input's end, which one vectorised pass recomputes after the loop,
    bit for bit the value the loop had (a max picks one of two doubles). ~20 % less time again.
    """
    n = len(program)
    # op n is a sentinel that ended at time 0: an op without a dependency waits for it
    inputs = np.where(dep < 0, n, dep)
    dep_l = inputs.tolist()
    end = array.array("d", [-1.0]) * (n + 1)  # -1 until the op has run
    end[n] = 0.0
    waiter = [-1] * (n + 1)
    offsets = program.offsets.tolist()
    pos, stop = offsets[:-1], offsets[1:]
    free = [0.0] * program.devices
    runnable = list(range(program.devices - 1, -1, -1))
    cost_l = cost.tolist()
    pop = runnable.pop
    push = runnable.append
    while runnable:
        d = pop()
        t = free[d]
        # a for loop over a range, not a while with its own counter: 19 % fewer instructions
        # (callgrind, looped BFS at p = 1024, m = 1, v = 200, where every op waits for another
        # device), about 18 % less time where devices run long stretches
        for i in range(pos[d], stop[d]):
            r = end[dep_l[i]]
            if r > t:
                t = r
            elif r < 0.0:  # t >= 0, so only here can the input be missing
                waiter[dep_l[i]] = d
                pos[d] = i
                break
            t += cost_l[i]
            end[i] = t
            if waiter[i] >= 0:
                push(waiter[i])
        else:
            pos[d] = stop[d]
        free[d] = t
    if any(pos[d] < stop[d] for d in range(program.devices)):
        raise deadlock_error(program, pos, stop, dep.tolist(), end[:-1])
    ends = np.frombuffer(end, dtype=np.float64)
    device_free = np.empty(n)  # what each op's device was free from: its predecessor's end, or 0
    device_free[1:] = ends[:n - 1]
    heads = program.offsets[:-1]
    device_free[heads[heads < n]] = 0.0
    start = np.maximum(device_free, ends[inputs])
    return start, start + cost


def _event_state(program: Program, dep: np.ndarray):
    """The events engine's state: dependencies as a list, where op n is a sentinel that ended at
    time 0 (an op without a dependency waits for it, so the loops have no branch for "none");
    starts as raw doubles (no float objects kept alive, nothing to convert at the end); ends, -1
    until the op has run; the device waiting for each op (validation guarantees at most one: its
    same-device dependants, W after I and the last stage's B after F, never wait); each device's
    position, last op and free time; the devices to visit."""
    n = len(program)
    dep_l = np.where(dep < 0, n, dep).tolist()
    start = array.array("d", bytes(8 * n))
    end = [-1.0] * (n + 1)
    end[n] = 0.0
    waiter = [-1] * (n + 1)
    offsets = program.offsets.tolist()
    free = [0.0] * program.devices
    runnable = list(range(program.devices - 1, -1, -1))
    return dep_l, start, end, waiter, offsets[:-1], offsets[1:], free, runnable


def _event_times(program: Program, dep, pos, stop, end, start, cost):
    """Start and end arrays after the loop, or the DeadlockError of devices that could not finish.
    Ends are recomputed from the starts, bit for bit as the loops compute them."""
    if any(pos[d] < stop[d] for d in range(program.devices)):
        raise deadlock_error(program, pos, stop, dep.tolist(), end[:-1])
    start = np.frombuffer(start, dtype=np.float64)
    ends = start + cost
    first = np.flatnonzero(program.pair)  # an F&B pair's second op ends with its slot
    ends[first + 1] = ends[first]
    return start, ends


def _lockstep(program: Program, dep: np.ndarray, cross: np.ndarray, cost: np.ndarray):
    p, n = program.devices, len(program)
    counts = np.diff(program.offsets)
    width = int(counts.max()) + 2
    # padded layout: row d holds device d's ops in columns 1.., column 0 is a "device start"
    # slot that ended at time 0, and the column after the last op never finishes
    rows = np.arange(p, dtype=np.int64) * width
    slot = np.repeat(rows - program.offsets[:-1], counts) + np.arange(n, dtype=np.int64) + 1
    size = p * width + 2
    none, never = size - 2, size - 1
    end = np.full(size, -1.0)
    end[rows] = 0.0
    end[none] = 0.0
    dep_slot = np.full(size, never, np.int64)
    dep_slot[slot] = np.where(dep < 0, none, slot[np.maximum(dep, 0)])
    cross_slot = np.zeros(size)
    cross_slot[slot] = cross
    cost_slot = np.zeros(size)
    cost_slot[slot] = cost
    start = np.zeros(size)
    here = rows + 1
    prev = rows.copy()
    remaining = n
    maximum, where, count_nonzero = np.maximum, np.where, np.count_nonzero
    # the cheap spellings (x[i] rather than np.take, count_nonzero rather than sum) matter:
    # a round costs ~10 µs, dominated by per-call overhead
    while remaining:
        ready = end[dep_slot[here]]
        ok = ready >= 0
        moved = count_nonzero(ok)
        if not moved:
            pos = (here - rows - 1 + program.offsets[:-1]).tolist()
            end_flat = end[slot].tolist()
            raise deadlock_error(program, pos, program.offsets[1:].tolist(), dep.tolist(), end_flat)
        ready += cross_slot[here]
        s = maximum(end[prev], ready)
        t = s + cost_slot[here]
        target = where(ok, here, none)
        start[target] = s
        end[target] = t
        end[none] = 0.0
        here += ok
        prev += ok
        remaining -= moved
    return start[slot], end[slot]


def program_config(program: Program, config: Config | None, options: dict) -> Config:
    """The config a program runs with: ``config`` (or a custom one of unit costs) with ``options``
    replacing fields, checked against the program's devices and microbatches."""
    if config is None:
        base: dict[str, Any] = {"schedule": "custom", "devices": program.devices, "microbatches": program.whole_microbatches}
        if program.name not in (None, "custom"):  # a registry schedule's program keeps its name in charts
            base["label"] = program.name
        base.update(options)
        cfg = Config(**base)
    else:
        cfg = config.replace(**options) if options else config
    for field, wanted in (("devices", program.devices), ("microbatches", program.whole_microbatches)):
        if getattr(cfg, field) != wanted:
            raise ConfigError(field, getattr(cfg, field),
                              f"the program has {wanted} {field}: give {field}={wanted} (or leave it out)")
    return cfg


#: what every entry point that takes a run accepts (ppviz.simulate, show, compare, the charts)
RUN_KINDS = "a ppviz.Config, Program or Result, or a schedule name (at the default sizes)"
#: a program fixes these: a Result of one is run again with other costs and memory only
PROGRAM_FIXED = ("schedule", "devices", "microbatches", "stages_per_device", "microbatch_group_size", "segments")


def _source(x, config: Config | None, options: dict, name: str) -> tuple[Program, Config] | Result:
    """What a run is made from: the program and the config to simulate it with, or a Result that
    is already the answer (a Result given without options)."""
    if isinstance(x, (str, ScheduleSpec)):
        x = Config(schedule=x if isinstance(x, str) else x.name)
    if config is not None and not isinstance(x, Program):
        raise ConfigError("config", config, "give a config with a Program only (it gives the program its costs); "
                          "for a Config, a Result or a schedule name, give changed fields as keywords",
                          reason=f"{name} is a {type(x).__name__}, which carries its own config")
    if isinstance(x, Result):
        if not options:
            return x
        if x.config.schedule != "custom":
            return _source(x.config, None, options, name)
        fixed = [key for key in PROGRAM_FIXED if key in options]
        if fixed:
            raise ConfigError(fixed[0], options[fixed[0]], f"{name} is the result of a program, which fixes its "
                              "schedule, devices, microbatches and stages: give it costs and memory options only")
        return x.program, x.config.replace(**options)
    if isinstance(x, Config):
        cfg = x.replace(**options) if options else x
        return cfg.build(), cfg
    if isinstance(x, Program):
        if config is not None and not isinstance(config, Config):
            raise ConfigError("config", config, "give a ppviz.Config (the program's costs and memory), or None")
        return x, program_config(x, config, options)
    hint = "; to compare runs, give the list to ppviz.compare" if isinstance(x, (list, tuple)) else ""
    raise ConfigError(name, x, f"give {RUN_KINDS}{hint}", reason=f"{_a(type(x).__name__)} is not a run")


def _a(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


@checked_arguments
def simulate(run, /, config: Config | None = None, *, engine: str = "auto", **options) -> Result:
    """Simulate a run: a :class:`Config` (its schedule is built first), a :class:`Program`, a
    :class:`Result` (returned as it is, or run again with ``options``) or a schedule name (a
    Config of that schedule at the default sizes).

    ``simulate(cfg)``; ``simulate("zb-h1", devices=8)``; ``simulate(cfg, comm=0.1)`` (options
    replace config fields); ``simulate(program)`` with unit costs, or ``simulate(program, config)``
    / ``simulate(program, f=1, b=2, w=0.5)`` to give it costs and memory parameters. A Result
    of a program runs again with other costs and memory; one of a registry schedule is rebuilt
    from its config with the options. Returns a :class:`ppviz.Result`.

    ``engine``: ``"auto"`` (the fastest engine that applies), ``"events"`` or ``"lockstep"`` (a
    fast path by name), or ``"kernel"``, the reference model of time (``ppviz.core.kernel``),
    which every fast path equals bit for bit.
    """
    return _simulated(run, config, options, engine, "run")


def as_run(x, /, *, name: str = "run", **options) -> Result:
    """The one coercion of a run, used by every entry point that takes one (``simulate``,
    ``show``, ``compare``, every chart): :data:`RUN_KINDS`, simulated with ``options`` when
    given; a refusal names ``name``."""
    return _simulated(x, None, options, "auto", name)


def as_runs(items, /, *, name: str = "runs", **options) -> list[Result]:
    """A list of runs (or one run) as Results, each through :func:`as_run`; an empty list, or
    something that is neither a run nor a list of them, is refused naming ``name``."""
    if isinstance(items, (list, tuple)):
        if not items:
            raise ConfigError(name, items, f"give one or more runs: {RUN_KINDS}", reason="the list is empty")
        return [as_run(x, name=f"{name}[{i}]", **options) for i, x in enumerate(items)]
    if isinstance(items, (Config, Program, Result, str, ScheduleSpec)):
        return [as_run(items, name=name, **options)]
    raise ConfigError(name, items, f"give a run ({RUN_KINDS}) or a list of them",
                      reason=f"{_a(type(items).__name__)} is neither a run nor a list of runs")


def _simulated(x, config, options: dict, engine: str, name: str) -> Result:
    source = _source(x, config, options, name)
    if isinstance(source, Result):
        return source
    program, cfg = source
    kernel.checked_engine(engine)
    program.validate()
    own = _own_costs(program, cfg)
    cost = _joined(program, cfg, own)
    hidden = hidden_costs(program, own, cost)
    if vocab.has_vocab(program):
        return _vocab_result(program, cfg, cost, engine)
    if cfg.transfers:
        program, start, end, dep, device_end, transfers, copies = comm_engine.run(program, cfg, cost, engine)
        return Result(cfg, program, start, end, dep, cost, transfers=transfers, device_end=device_end,
                      host_copies=copies, hidden=hidden)
    if cfg.offload is not None:
        start, end, dep, copies = offload.run(program, cfg, cost, cfg.comm, engine)
        return Result(cfg, program, start, end, dep, cost, host_copies=copies, hidden=hidden)
    # every op one after another bounds the makespan: it must stay a finite number
    if not np.isfinite(float(cost.sum()) + cfg.comm * len(program)):
        raise ConfigError("costs", f"f={cfg.f:g}, b={cfg.b:g}, w={cfg.w:g}, comm={cfg.comm:g}",
                          "give smaller times: summed over this run they overflow a float")
    start, end, dep = execute(program, cost, cfg.comm, engine=engine)
    return Result(cfg, program, start, end, dep, cost, hidden=hidden)


def _vocab_result(program: Program, cfg: Config, cost: np.ndarray, engine: str) -> Result:
    """A program with vocabulary passes: its ops wait for several others (the all-reduce
    barriers), which :func:`ppviz.core.vocab.run` times; transfers and offload are refused."""
    for name, value, what in (("topology", cfg.topology, "transfers over links"),
                              ("offload", cfg.offload, "activation offload")):
        if value is not None:
            raise ConfigError(name, value, f"leave {name} out for a program with vocabulary passes",
                              reason=f"ppviz does not yet time {what} beside the vocabulary passes' all-reduces")
    start, end, dep, arrival = vocab.run(program, cost, cfg.comm, cfg.vocab_comm, engine="kernel" if engine == "kernel" else "auto")
    return Result(cfg, program, start, end, dep, cost, arrival=arrival)


__all__ = ["simulate", "as_run", "as_runs", "RUN_KINDS", "execute", "dependencies", "op_costs", "stage_table",
           "gap_table", "warmup_table", "a2a_table", "overlapped_pairs", "exposed_a2a", "KINDS"]
