"""The V-Half / V-Min construction as ppviz 0.1 built it: the authors' greedy (sail-sg
zero-bubble-pipeline-parallelism, the "vhalf / vmin" PipelineGraph) rewritten step for step,
pass by pass. Slow (about p²·m), kept here only as the reference the vectorised builder in
``ppviz.schedules.v_shape`` must equal."""

import numpy as np

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
