"""V-shape schedules: two stages per device, placed 0..p−1 then p−1..0 (torch's "v" style).

Device d holds stage d (the "down" leg) and stage 2p−1−d (the "up" leg), so the first and the
last stage share device 0 and the turn of the V is local to device p−1. A stage is half of
1/p of the model: its passes cost f/2, b/2, w/2 and hold half an activation unit (a "chunk").
All three schedules split the backward into I and W.

``zb-v`` — ZB-V, Qi et al., "Zero Bubble Pipeline Parallelism" (arXiv 2401.10241) §6, in the
order torch's ``ScheduleZBVZeroBubble`` builds (op for op, on every (p, m) torch accepts).
Rank r: 2(p−r)−1 down forwards; r × (up F, down F); p−r × (up F, up I, up W); steady rounds
(down F, down I, down W, up F, up I, up W); r × (down I, up I); p−r × (down I, down W); the
remaining W's, up leg first. Below 2p−1 microbatches torch builds the order for 2p−1 and drops
the ops of microbatches that do not exist; so does ppviz.

* Bubble: the paper and torch say zero when f = b = w. What is left is the fill: device p−1
  cannot start before p−1 half-stage forwards, so idle is (p−1)·f/2 per device; exact when
  m >= 2p−1, f = b and f/2 <= w <= f (checked by simulation).
* Memory: p activation units (2p chunks) on every device when m >= 2p−1, 1F1B's peak.

``v-half`` and ``v-min`` — Qi et al., "Pipeline Parallelism with Controllable Memory"
(arXiv 2405.15362). Construction: the authors' V-shape building blocks with their greedy
reordering (sail-sg/zero-bubble-pipeline-parallelism, the "vhalf / vmin" ``PipelineGraph``),
rewritten here step for step, so each device's order is theirs:

1. the building block gives device d a slot for each of one microbatch's passes (down F, up
   F, up I, down I): V-Half 2d, 3p−d−2, 3p+g+2d−1, 6p+g−d−2 with g = 3 for even p (else 0);
   V-Min d, 2p−d−1, 2p+g+d, 4p+g−d−1 with g = 2 when 3 divides p (else 0);
2. the block repeats every 6 slots (a microbatch's F, F, I, I, W, W on one device);
3. W's fill free slots, oldest first; then, in slot order, every pass outside the steady phase
   (from device 0's first down-leg I to the last microbatch's first down-leg F) moves to the
   earliest free slot its dependencies allow that keeps its device at or below the highest
   device's peak; everything is squeezed to unit time;
4. the W's are taken out (a W is then assumed to fill any free slot), the cool-down is
   reordered and squeezed again, and the W's go back into free slots, the up leg's first;
5. each device runs its passes in slot order.

The memory figures are the point (activation held from F to W, ``w_share = 1``, as the
authors count; both are exact once m >= p+1):

* V-Half: (p+2)//2 activation units on every device, against 1F1B's p (any w_share).
* V-Min: (p+4)//3 on every device; device 0 holds half a unit less when p mod 3 = 2.

Bubble, published as ≈ p/(2m) (V-Half) and ≈ 2p/(3m) (V-Min) of the makespan for f = b = w
(1F1B: ≈ p/m). Read off the construction and checked by simulation for p <= 32, with
f = b = w: idle per device (6⌈p/2⌉ − 7)·f/2 for V-Half (p >= 3; f/2 at p = 2) once m >= p+2,
and (4p − 5 − 2·[3 divides p])·f/2 for V-Min (p >= 2) once m >= p+1.
"""

from __future__ import annotations

import functools

import numpy as np

from ..core.program import DeviceOps, Program
from ..core.placement import Placement
from ..core.closed_form import ClosedForm, base, uniform_costs
from ..core.registry import ScheduleSpec, register, require


def _program(devices: list[DeviceOps], p: int, m: int) -> Program:
    return Program.from_device_ops(devices, stages=2 * p, microbatches=m, placement=Placement.v_shape(p, 2))


# ZB-V (torch ScheduleZBVZeroBubble) ----------------------------------------------------------

def _zb_v_device(rank: int, p: int, m: int) -> DeviceOps:
    ops = DeviceOps()
    n = max(2 * p - 1, m)
    down, up = rank, 2 * p - 1 - rank
    count = {}

    def emit(kind: str, stage: int) -> None:
        mb = count.get((kind, stage), 0)
        count[kind, stage] = mb + 1
        if mb < m:  # torch builds for max(2p−1, m) microbatches and drops the extra ones
            getattr(ops, kind)(stage, mb)

    def done(kind: str, stage: int) -> int:
        return count.get((kind, stage), 0)

    for _ in range(2 * (p - rank) - 1):
        emit("f", down)
    for _ in range(rank):
        emit("f", up)
        emit("f", down)
    for _ in range(p - rank):
        emit("f", up)
        emit("i", up)
        emit("w", up)
    while done("f", up) < done("f", down) or done("f", down) < n:
        if done("f", down) < n:
            emit("f", down)
        emit("i", down)
        emit("w", down)
        emit("f", up)
        emit("i", up)
        emit("w", up)
    for _ in range(rank):
        emit("i", down)
        emit("i", up)
    for _ in range(p - rank):
        emit("i", down)
        emit("w", down)
    for stage in (up, down):
        while done("w", stage) < done("i", stage):
            emit("w", stage)
    return ops


def build_zb_v(config) -> Program:
    p, m = config.devices, config.microbatches
    return _program([_zb_v_device(r, p, m) for r in range(p)], p, m)


# V-Half / V-Min (sail-sg building blocks + greedy reordering) ------------------------------

# the six passes of one microbatch on one device, in the authors' order "FfBbWw"
F_DOWN, F_UP, I_UP, I_DOWN, W_UP, W_DOWN = range(6)
_PERIOD = 6


def _block_v_half(p: int) -> list[tuple[int, int, int, int]]:
    gap = 3 if p % 2 == 0 else 0
    return [(2 * d, 3 * p - d - 2, 3 * p + gap + 2 * d - 1, 6 * p + gap - d - 2) for d in range(p)]


def _block_v_min(p: int) -> list[tuple[int, int, int, int]]:
    gap = 2 if p % 3 == 0 else 0
    return [(d, 2 * p - d - 1, 2 * p + gap + d, 4 * p + gap - d - 1) for d in range(p)]


def _put_w(lists: list[list[int]], split: bool) -> list[list[int]]:
    """Add W slots: each free slot takes the oldest pending W; the rest follow the last pass.

    With ``split`` the up leg's and the down leg's W's are two lists and a free slot serves
    the up leg first (the authors' rule); otherwise there is one W list.
    """
    taken = {t: kind for kind in range(4) for t in lists[kind]}
    end = max(taken)
    w_lists: list[list[int]] = [[], []] if split else [[]]
    pending = [0, 0]
    for t in range(end + 1):
        kind = taken.get(t)
        if kind is not None:
            if kind in (I_UP, I_DOWN):
                pending[kind - I_UP if split else 0] += 1
            continue
        for leg in range(2):
            if pending[leg]:
                w_lists[leg].append(t)
                pending[leg] -= 1
                break
    t = end
    for leg in range(len(w_lists)):
        for _ in range(pending[leg]):
            t += 1
            w_lists[leg].append(t)
    return [list(x) for x in lists[:4]] + w_lists


def _levels(lists: list[list[int]]) -> np.ndarray:
    """Chunks a device holds after each slot, W's placed: an F takes one, a W gives it back."""
    size = max(max(times) for times in lists if times) + 1
    delta = np.zeros(size, np.int64)
    for kind, times in enumerate(lists):
        delta[times] += 1 if kind < I_UP else (-1 if kind >= W_UP else 0)
    return np.cumsum(delta)


def _peak(lists: list[list[int]]) -> int:
    """Peak activation of one device in chunks, counted slot by slot as the authors do.

    Each F holds one chunk until its W. Without W lists, a W is assumed to run in every free
    slot while one is pending: a queue whose departures by slot t are
    D(t) = S(t) + min(0, min over j <= t of (A(j) − S(j))), with A the I's and S the free
    slots counted up to each slot.
    """
    if len(lists) > 4:
        return max(0, int(_levels(lists).max()))
    size = max(max(times) for times in lists if times) + 1
    forwards = np.zeros(size, np.int64)
    forwards[lists[F_DOWN]] = 1
    forwards[lists[F_UP]] = 1
    arrivals = np.zeros(size, np.int64)
    arrivals[lists[I_UP]] = 1
    arrivals[lists[I_DOWN]] = 1
    free = np.cumsum((forwards == 0) & (arrivals == 0))
    arrived = np.cumsum(arrivals)
    drained = free + np.minimum(0, np.minimum.accumulate(arrived - free))
    return max(0, int((np.cumsum(forwards) - drained).max()))


def _in_slot_order(schedule: list[list[list[int]]]) -> list[tuple[int, int, int, int]]:
    """Every pass as (slot, device, kind, microbatch), in the order the authors visit them."""
    return sorted((t, d, k, mb) for d, lists in enumerate(schedule)
                  for k, times in enumerate(lists) for mb, t in enumerate(times))


def _squeeze(schedule: list[list[list[int]]]) -> list[list[list[int]]]:
    """Start every pass as early as its dependencies and its device allow, in unit time.

    ``schedule[d][kind][mb]`` is a slot time; passes keep their per-device order.
    """
    p = len(schedule)
    out = [[[0] * len(times) for times in lists] for lists in schedule]
    device_free = [0] * p
    # a dependency on the same device always sits in an earlier slot, so the device's own
    # order covers it; only the neighbour on the leg's upstream side can hold a pass back
    for _, d, k, mb in _in_slot_order(schedule):
        ready = device_free[d]
        if k == F_DOWN or k == I_UP:
            if d > 0:
                ready = max(ready, out[d - 1][k][mb] + 1)
        elif (k == F_UP or k == I_DOWN) and d + 1 < p:
            ready = max(ready, out[d + 1][k][mb] + 1)
        out[d][k][mb] = ready
        device_free[d] = ready + 1
    return out


def _dependencies(p: int, d: int, kind: int, mb: int) -> list[tuple[int, int, int]]:
    """(device, kind, microbatch) of the passes this one waits for, in the authors' model."""
    deps = []
    if kind in (F_DOWN, I_UP) and d > 0:
        deps.append((d - 1, kind, mb))
    if kind in (F_UP, I_DOWN) and d + 1 < p:
        deps.append((d + 1, kind, mb))
    if F_DOWN < kind < W_UP:
        deps.append((d, kind - 1, mb))
    if mb > 0:
        deps.append((d, kind, mb - 1))
    return deps


def _reorder(schedule: list[list[list[int]]], m: int, with_w: bool) -> list[list[list[int]]]:
    """Move warm-up and cool-down passes to earlier free slots, then squeeze.

    The steady phase runs from device 0's first down-leg I to the last microbatch's first
    down-leg F and stays as built; so does the warm-up when the W's are out (``with_w``
    false). Every other pass, in slot order, takes the earliest free slot after its
    dependencies that keeps its device at or below the highest device's peak before the move.
    """
    if with_w:
        schedule = [_put_w(lists, split=False) for lists in schedule]
    else:
        schedule = [[list(x) for x in lists] for lists in schedule]
    p = len(schedule)
    ceiling = max(_peak(lists) for lists in schedule)
    # with the W's placed, moving a pass from t to an earlier slot s changes the device's
    # level on [s, t) only, by +1 for an F and −1 for a W; every device stays at or below the
    # ceiling, so only that stretch needs checking
    levels = [_levels(lists) for lists in schedule] if with_w else None
    taken = [set() for _ in range(p)]
    phase = 0
    # a pass only ever moves after it is visited, so the visiting order is fixed up front
    for t, d, k, mb in _in_slot_order(schedule):
        if phase == 0 and k == I_DOWN and d == 0:
            phase = 1
        if phase == 1:
            if k == F_DOWN and mb == m - 1:
                phase = 2
            taken[d].add(t)
            continue
        if phase == 0 and not with_w:
            taken[d].add(t)
            continue
        lists = schedule[d]
        earliest = -1
        if k < W_UP:
            for dd, kk, mm in _dependencies(p, d, k, mb):
                earliest = max(earliest, schedule[dd][kk][mm])
        else:
            # the mb-th W belongs to the device's mb-th I, whichever leg it is on
            earliest = max(sorted(lists[I_UP] + lists[I_DOWN])[mb], lists[k][mb - 1] if mb else -1)
        step = 1 if k < I_UP else (-1 if k >= W_UP else 0)
        placed = t
        for slot in range(earliest + 1, t):
            if slot in taken[d]:
                continue
            if with_w:
                fits = step <= 0 or levels[d][slot:t].max() + step <= ceiling
            else:
                lists[k][mb] = slot
                fits = _peak(lists) <= ceiling
            if fits:
                placed = slot
                break
        lists[k][mb] = placed
        taken[d].add(placed)
        if with_w and placed != t:
            levels[d][placed:t] += step
    if not with_w:
        schedule = [_put_w(lists, split=False) for lists in schedule]
    return _squeeze(schedule)


@functools.lru_cache(maxsize=64)
def v_schedule_order(p: int, m: int, block) -> tuple[tuple[tuple[int, int], ...], ...]:
    """Each device's passes as (kind, microbatch) in slot order, per the construction above.

    Cached: the greedy search is the slow part of building, and the same sizes are built
    again for every change of costs.
    """
    base = [[[t + _PERIOD * mb for mb in range(m)] for t in times] for times in block(p)]
    first = _reorder(base, m, with_w=True)
    second = _reorder([lists[:4] for lists in first], m, with_w=False)
    final = [_put_w(lists[:4], split=True) for lists in second]
    orders = []
    for lists in final:
        slots = sorted((t, kind, mb) for kind, times in enumerate(lists) for mb, t in enumerate(times))
        orders.append(tuple((kind, mb) for _, kind, mb in slots))
    return tuple(orders)


# each pass kind as (DeviceOps method, leg), leg 0 being the down stage and 1 the up stage
_PASSES = {F_DOWN: ("f", 0), F_UP: ("f", 1), I_UP: ("i", 1), I_DOWN: ("i", 0), W_UP: ("w", 1), W_DOWN: ("w", 0)}


def _build_v(config, block) -> Program:
    p, m = config.devices, config.microbatches
    devices = []
    for d, order in enumerate(v_schedule_order(p, m, block)):
        ops = DeviceOps()
        stages = (d, 2 * p - 1 - d)
        for kind, mb in order:
            method, leg = _PASSES[kind]
            getattr(ops, method)(stages[leg], mb)
        devices.append(ops)
    return _program(devices, p, m)


def build_v_half(config) -> Program:
    return _build_v(config, _block_v_half)


def build_v_min(config) -> Program:
    return _build_v(config, _block_v_min)


# Registry -----------------------------------------------------------------------------------

def _validate_two_stages(config) -> None:
    require(config.stages_per_device == 2, config, "stages_per_device", "use 2 (leave it unset)",
            "places exactly two stages per device in a V")


# Closed forms, from the papers' formulas (independent of the builders above) ----------

def zb_v_closed_form(config) -> ClosedForm:
    p, m, _, f, b, w, a = base(config)
    full = m >= 2 * p - 1
    return ClosedForm(
        schedule="zb-v",
        idle=(p - 1) * f / 2,
        ideal=m * (f + b + w),
        peak_activation=tuple(p * a for _ in range(p)) if full else None,
        bubble_formula="(p−1)·f/2: only the fill, p−1 half-stage forwards before device p−1 starts",
        memory_formula="p on every device (2p chunks of ½), 1F1B's peak",
        source=("ZB-V, Zero Bubble PP (arXiv 2401.10241) §6, as torch ScheduleZBVZeroBubble orders it; the "
                "published bubble 0 (f = b = w) leaves out the fill; this form is checked by simulation"),
        assumptions="uniform stage costs, comm = 0, m >= 2p−1, f = b, f/2 <= w <= f",
        applies=uniform_costs(config) and full and f == b and f / 2 <= w <= f,
    )


def _v_family_closed_form(config, name: str, passes: int, peaks: tuple | None, least_m: int, bubble: str,
              memory: str) -> ClosedForm:
    p, m, _, f, b, w, a = base(config)
    return ClosedForm(
        schedule=name,
        idle=passes * f / 2,
        ideal=m * (f + b + w),
        peak_activation=None if peaks is None else tuple(x * a for x in peaks),
        bubble_formula=bubble,
        memory_formula=memory,
        source=("Pipeline Parallelism with Controllable Memory (arXiv 2405.15362) and its HF Space: memory as "
                "published, bubble published only as a rate; the exact idle is read off the authors' "
                "construction and checked by simulation for p <= 32"),
        assumptions=f"uniform stage costs, comm = 0, f = b = w, m >= {least_m}",
        applies=uniform_costs(config) and f == b == w and m >= least_m,
    )


def v_half_closed_form(config) -> ClosedForm:
    p = config.devices
    passes = 0 if p == 1 else 1 if p == 2 else 6 * ((p + 1) // 2) - 7
    return _v_family_closed_form(
        config, "v-half", passes, tuple((p + 2) // 2 for _ in range(p)), p + 2,
        bubble="(6⌈p/2⌉ − 7)·f/2 for p >= 3 (f/2 at p = 2): ≈ p/(2m) of the makespan",
        memory="(p+2)//2 on every device, ≈ half of 1F1B's p (any w_share)")


def v_min_closed_form(config) -> ClosedForm:
    p = config.devices
    passes = 0 if p == 1 else 4 * p - 5 - 2 * (p % 3 == 0)
    base = (p + 4) // 3
    peaks = None
    if config.w_share == 1 or p % 3 != 2:
        peaks = tuple(base - 0.5 if (d == 0 and p % 3 == 2) else base for d in range(p))
    return _v_family_closed_form(
        config, "v-min", passes, peaks, p + 1,
        bubble="(4p − 5 − 2·[3 divides p])·f/2 for p >= 2: ≈ 2p/(3m) of the makespan",
        memory=("(p+4)//3 on every device, ≈ a third of 1F1B's p; device 0 holds half a unit less when "
                "p mod 3 = 2 (the figures count an activation until its W: w_share = 1)"))


def _register_v(name: str, summary: str, reference: str, builder, aliases: tuple[str, ...], closed_form) -> None:
    """The three V-shaped schedules share their shape: two stages per device, split backward."""
    register(ScheduleSpec(name=name, summary=summary, reference=reference, builder=builder, aliases=aliases,
                          default_v=2, v_min=2, v_max=2, validate=_validate_two_stages, closed_form=closed_form,
                          constraints="v = 2", split_backward=True))


_register_v("zb-v", "zero bubble in a V: two stages per device, 1F1B memory",
            "Zero Bubble PP (arXiv 2401.10241) §6 ZB-V; torch ScheduleZBVZeroBubble", build_zb_v,
            ("ZBVZeroBubble", "ScheduleZBVZeroBubble", "ZBV", "zero-bubble-v"), zb_v_closed_form)
_register_v("v-half", "V-shape at half of 1F1B's activation memory",
            "Pipeline Parallelism with Controllable Memory (arXiv 2405.15362) V-Half; sail-sg building block",
            build_v_half, ("V-Half",), v_half_closed_form)
_register_v("v-min", "V-shape at a third of 1F1B's activation memory",
            "Pipeline Parallelism with Controllable Memory (arXiv 2405.15362) V-Min; sail-sg building block",
            build_v_min, ("V-Min",), v_min_closed_form)
