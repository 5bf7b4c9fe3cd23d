"""The events engine's times found device by device with whole-array passes, for the programs
where that settles in a few passes: no F&B pairs, no latency between devices, and enough ops
per device (1F1B, GPipe, the zero-bubble, interleaved and V-shaped schedules at large m). At
10^6 ops of 1F1B on 8 devices it takes ~0.15 s where the loop takes ~0.8 s; ``engine.execute``
runs it first under ``engine="auto"`` and falls back to the loop when it does not settle.

The engine's times are the solution of one equation per op, ``end = max(before, ready) + cost``,
where ``before`` is the end of the op before it on its device (0 for a device's first) and
``ready`` the end of the op it depends on (0 for none). Given every op's ``ready``, a device's
ends follow by themselves; this solves the devices in turn (Gauss-Seidel relaxation: down the
devices, then up, ...) from a lower bound (each device running without waiting) until a pass
changes nothing. Each device is solved *exactly* as the loop would, not by prefix sums (whose
rounding differs from the loop's in the last bits): its ops fall into runs that start where the
device waited (``ready > before``) and then follow each other, and a run's ends are its start
plus each cost in turn, which ``np.add.accumulate`` adds in the loop's order. Where the device
waits is found from a prefix-sum estimate and confirmed on the exact ends (a near tie the
estimate got wrong is corrected and the device solved again).

What comes back is checked as a whole, bit for bit: every op's end is ``max(before, ready) +
cost`` and later than its start. Ends that rise strictly along every edge mean the program has no
cycle, so these equations have one solution, which is the loop's; anything else (a pass that
changes too much for too long, a deadlock, a tie never settled) returns None and the loop runs.
"""

from __future__ import annotations

import numpy as np

from .program import Program

#: passes over the devices before giving up (the library's schedules settle in 2 to 8; where
#: each pass settles only a few more microbatches, it would take about m)
MAX_PASSES = 8
#: attempts per device to settle where it waits (near ties the estimate decides wrongly)
MAX_ATTEMPTS = 3
#: a run of ops longer than this is added up by its own accumulate; shorter ones step together
LONG_RUN = 32
#: ops per device from which relaxation beats the loop: a device's solve costs ~100 µs of
#: fixed overhead per pass, the loop ~0.5-1 µs per op
MIN_OPS_PER_DEVICE = 4096


def applies(program: Program, cross: np.ndarray) -> bool:
    """Whether to try relaxation on this program: enough ops per device, no F&B pairs, and none
    of what makes each pass settle only a few more microbatches: a latency between devices, or
    two replicas flowing opposite ways through every device (Chimera, BitPipe)."""
    placement = program.placement
    return (len(program) >= MIN_OPS_PER_DEVICE * program.devices and not program.pair.any()
            and not cross.any() and (placement is None or placement.reverse_device is None))


def times(program: Program, dep: np.ndarray, cost: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Start and end of every op, bit for bit the events engine's, or None when relaxation does
    not settle (the caller runs the loop)."""
    n = len(program)
    offsets = program.offsets.tolist()
    devices = [(a, b) for a, b in zip(offsets[:-1], offsets[1:]) if b > a]
    inputs = np.where(dep < 0, n, dep)  # op n is a sentinel that ended at 0
    end = np.zeros(n + 1)
    for a, b in devices:  # a lower bound: each device running its ops without waiting
        end[a:b] = np.add.accumulate(cost[a:b])
    # per device, the inputs' ends it was last solved with and where it waited then: a device
    # whose inputs did not change is not solved again, and one whose did starts from its waits
    solved: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(devices)
    order = list(range(len(devices)))
    for sweep in range(MAX_PASSES):
        changed = False
        for i in order if sweep % 2 == 0 else order[::-1]:
            a, b = devices[i]
            ready = end[inputs[a:b]]
            last = solved[i]
            if last is not None and np.array_equal(ready, last[0]):
                continue
            ends = end[a:b]
            old = ends.copy()
            waits = _solve_device(ready, cost[a:b], ends, None if last is None else last[1])
            if waits is None:
                return None
            solved[i] = ready, waits
            changed = changed or not np.array_equal(old, ends)
        if not changed:
            break
    else:
        return None
    ends = end[:n]
    before = np.empty(n)
    before[1:] = ends[:-1]
    heads = program.offsets[:-1]
    before[heads[heads < n]] = 0.0
    start = np.maximum(before, end[inputs])
    if not (np.array_equal(start + cost, ends) and (ends > start).all()):
        return None
    return start, start + cost


def _solve_device(ready: np.ndarray, cost: np.ndarray, out: np.ndarray, last: np.ndarray | None) -> np.ndarray | None:
    """One device's ends into ``out``, exactly as the loop computes them from ``ready``, and where
    it waits; None when that did not settle. The first guess is where it waited when last
    solved (inputs that moved a little move few waits), then the prefix-sum estimate."""
    waits = None if last is None else _settles(ready, cost, out, last)
    if waits is not None:
        return waits
    # the estimate: end_k = S_k + max(0, max_{j<=k} ready_j - S_{j-1}), S the prefix sums
    total = np.add.accumulate(cost)
    return _settles(ready, cost, out, _waits(ready, total + np.maximum.accumulate(np.maximum(ready - (total - cost), 0.0))))


def _settles(ready: np.ndarray, cost: np.ndarray, out: np.ndarray, waits: np.ndarray) -> np.ndarray | None:
    """Solve from a guess of where the device waits, correcting it from the exact ends found
    (a near tie the guess decided wrongly) until they agree; the waits, or None."""
    for _ in range(MAX_ATTEMPTS):
        _runs(ready, cost, waits, out)
        found = _waits(ready, out)
        if np.array_equal(found, waits):
            return waits
        waits = found
    return None


def _waits(ready: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Where the device waits given its ends: an op whose input is ready after the op before it
    ends starts a run; so does the first op."""
    waits = np.empty(len(ready), bool)
    waits[0] = True
    np.greater(ready[1:], ends[:-1], out=waits[1:])
    return waits


def _runs(ready: np.ndarray, cost: np.ndarray, waits: np.ndarray, out: np.ndarray) -> None:
    """The ends of a device whose runs start at ``waits``: a run's first op starts when its input
    is ready (the first op at the later of 0 and that), each next one when the one before ends."""
    starts = np.flatnonzero(waits)
    lengths = np.diff(starts, append=len(cost))
    first = ready[starts]
    first[0] = max(first[0], 0.0)
    out[starts] = first + cost[starts]
    # the j-th op of every run at least j + 1 long, for j up to LONG_RUN, in one step each:
    # the runs sorted longest first, so that those still going are a prefix
    order = np.argsort(-lengths, kind="stable")
    heads, lengths = starts[order], lengths[order]
    descending = -lengths
    for j in range(1, min(int(lengths[0]), LONG_RUN)):
        going = int(np.searchsorted(descending, -j, side="left"))  # runs longer than j
        idx = heads[:going] + j
        out[idx] = out[idx - 1] + cost[idx]
    for head, length in zip(heads[lengths > LONG_RUN].tolist(), lengths[lengths > LONG_RUN].tolist()):
        a = head + LONG_RUN - 1
        rest = cost[a:head + length].copy()
        rest[0] = out[a]
        out[a:head + length] = np.add.accumulate(rest)
