"""Candidate cuts of the model's items (embedding, layers, MTP layers, loss) into contiguous
stages, for the automatic layer balancer (``ppviz.model.costs.balanced_layout``, which
simulates each candidate and keeps the fastest).

A stage's cost is the time of one microbatch through it (forward, backward and any recompute);
a device's load is the sum over the stages it runs, weighted by the share of microbatches that
go through each (1 for every schedule but DualPipe's two replicas, ½ each). The total work is
the same however the model is cut, and in the steady state the slowest stage (with v = 1, the
busiest device) sets the pace m times over, so these maxima are what a placement improves.
They do not decide everything: a V-shaped schedule's critical path also depends on how F, I
and W divide within the stages, which is why the balancer's final choice is by simulation.

Memory comes first when a capacity is given: a stage's static memory and the activations of
the microbatches it holds at its device's peak (the first stage of 1F1B holds p of them, which
is why Llama 3 put one layer fewer on it) must fit, so a layer may move towards the later
stages even if that slows the step.

Method: the least possible slowest stage T* over contiguous cuts is found exactly (bisection
down to neighbouring floats, each limit checked by a greedy left-to-right packing); the better of
its cuts and the given starts (Megatron's even split) starts a local search that shifts blocks
of cut points by one item while that lowers the objective, (memory excess, slowest stage,
busiest device) or, with several stages per device, (memory excess, busiest device, slowest
stage). Each move must improve, so a candidate is never worse on its objective than any start.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, partial
from itertools import accumulate

import numpy as np


@dataclass(frozen=True)
class MemoryLimit:
    """An estimate of each device's memory for given cuts, and the capacity it must stay within.

    Device d holds ``held[d, s]`` microbatches' activations of stage s at its peak and
    ``copies[d, s]`` copies of stage s's static memory; ``activation`` and ``static`` are the
    items' bytes in model order.
    """

    activation: Sequence[float]
    static: Sequence[float]
    held: np.ndarray
    copies: np.ndarray
    capacity: float

    @cached_property
    def _act(self) -> np.ndarray:
        return np.concatenate([[0.0], np.cumsum(self.activation)])

    @cached_property
    def _static(self) -> np.ndarray:
        return np.concatenate([[0.0], np.cumsum(self.static)])

    def excess(self, cuts: Sequence[int]) -> float:
        """How far the fullest device is over the capacity (0 when every device fits)."""
        at = np.asarray(cuts)
        act, static = np.diff(self._act[at]), np.diff(self._static[at])
        return max(0.0, float((self.held @ act + self.copies @ static).max()) - self.capacity)


def candidates(costs: Sequence[float], stages: int, weights: np.ndarray | None = None,
               starts: Sequence[Sequence[int]] = (), memory: MemoryLimit | None = None) -> list[list[int]]:
    """Cut points c_0 = 0 <= c_1 <= … <= c_S = n (stage s holds items c_s … c_{s+1}−1): the
    local optima of (memory excess, slowest stage, busiest device) and, when stages share
    devices, of (memory excess, busiest device, slowest stage); the same two without the memory
    excess when ``memory`` is given (the fastest cuts, should nothing fit); then ``starts``
    (e.g. Megatron's even split). The same cuts may appear more than once.

    ``costs`` are the items' costs in model order (the first item, the embedding, stays on
    stage 0 and the last, the loss, on stage S−1); ``weights[d, s]`` is the share of
    microbatches device d runs through stage s (``None``: one stage per device); ``memory``,
    when given, makes fitting the capacity come first.
    """
    n = len(costs)
    prefix = [0.0, *accumulate(float(c) for c in costs)]
    W = np.eye(stages) if weights is None else np.asarray(weights, dtype=float)

    sums = np.array(prefix)

    def stage_first(cuts, limit=memory):
        stage = np.diff(sums[np.asarray(cuts)])
        excess = limit.excess(cuts) if limit is not None else 0.0
        return (excess, float(stage.max()), float((W @ stage).max()))

    def device_first(cuts, limit=memory):
        excess, stage, device = stage_first(cuts, limit)
        return (excess, device, stage)

    start_cuts = [list(c) for c in starts]
    found = []
    orders = (stage_first, device_first) if weights is not None and W.shape[0] < stages else (stage_first,)
    limits = (memory, None) if memory is not None else (None,)
    for limit in limits:
        for order in orders:
            objective = partial(order, limit=limit)
            best = min([_min_max_cuts(prefix, stages), *start_cuts], key=objective)
            found.append(_improve(best, objective, n, stages))
    return found + start_cuts


def _min_max_cuts(prefix: list[float], stages: int) -> list[int]:
    """Cuts whose slowest stage is the least possible, T* (every stage nonempty when possible)."""
    n = len(prefix) - 1

    def fits(limit: float) -> bool:
        return len(_pack(prefix, limit)) - 1 <= stages

    # T* is a stage sum: bisect the floats between the largest item and the total down to two
    # neighbours; the packing at the upper one then has T* as its slowest stage
    lo = max(prefix[k + 1] - prefix[k] for k in range(n))
    hi = prefix[n] - prefix[0]
    if not fits(lo):
        while lo < hi:
            mid = lo + (hi - lo) / 2
            if mid <= lo or mid >= hi:
                break  # neighbouring floats
            if fits(mid):
                hi = mid
            else:
                lo = mid
        lo = hi
    cuts = _pack(prefix, lo)
    # fewer groups than stages: split the costliest splittable group at its best point
    while len(cuts) - 1 < stages:
        groups = [(prefix[b] - prefix[a], k) for k, (a, b) in enumerate(zip(cuts, cuts[1:])) if b - a >= 2]
        if not groups:  # a single item per group: the remaining stages stay empty, before the last
            cuts[-1:-1] = [cuts[-2]] * (stages + 1 - len(cuts))
            break
        _, k = max(groups)
        a, b = cuts[k], cuts[k + 1]
        split = min(range(a + 1, b), key=lambda c: max(prefix[c] - prefix[a], prefix[b] - prefix[c]))
        cuts.insert(k + 1, split)
    return cuts


def _pack(prefix: list[float], limit: float) -> list[int]:
    """Greedy cuts: each stage takes items while its sum stays within ``limit`` (always one).
    Stage sums grow with the items taken (costs are >= 0), so each cut is found by bisection."""
    n = len(prefix) - 1
    cuts = [0]
    while cuts[-1] < n:
        a = cuts[-1]
        b = bisect_right(range(a + 1, n + 1), limit, key=lambda end: prefix[end] - prefix[a]) + a
        cuts.append(max(b, a + 1))
    return cuts


def _improve(cuts: list[int], objective, n: int, stages: int) -> list[int]:
    """Local search: shift the cut points c_lo … c_hi together by ±1 (moving one item's worth of
    work from stage lo−1 to stage hi, or back) while the objective improves."""
    cuts = list(cuts)
    best = objective(cuts)
    improved = True
    while improved:
        improved = False
        for lo in range(1, stages):
            for hi in range(lo, stages):
                for step in (-1, 1):
                    moved = cuts[:lo] + [c + step for c in cuts[lo:hi + 1]] + cuts[hi + 1:]
                    if not _valid(moved, n):
                        continue
                    value = objective(moved)
                    if value < best:
                        cuts, best, improved = moved, value, True
    return cuts


def _valid(cuts: list[int], n: int) -> bool:
    """Ordered cut points that keep the embedding on stage 0 and the loss on the last stage."""
    return cuts[1] >= 1 and cuts[-2] <= n - 1 and all(a <= b for a, b in zip(cuts, cuts[1:]))
