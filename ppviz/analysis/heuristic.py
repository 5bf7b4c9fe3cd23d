"""The zero-bubble authors' automatic scheduler: F, I and W placed greedily under a memory limit.

Source: Qi et al., "Zero Bubble Pipeline Parallelism" (arXiv 2401.10241) §3.1, "Heuristic
algorithm", and the authors' code, ``Graph.manual_order`` and ``initial_solution`` in
sail-sg/zero-bubble-pipeline-parallelism ``megatron/core/pipeline_parallel/zerobubble/
scheduler/zb.py``. Written again here on ppviz's model (one stage per device, I for their B);
the rules are theirs:

1. Warm-up: the first microbatch's F on every stage; then, from the last stage up, each stage
   schedules as many further F's as fit its memory limit before the first I's result can
   reach it (``allow_bubble_before_first_b``: as long as the F *starts* before then, which
   may leave a bubble before the first I), no more than the stage above it (while that
   leaves F's to run later); then the first I on every stage, last stage first.
2. Steady state, for each further microbatch: every stage that has F's left schedules the
   next one — unless (``prioritize_b``) it is at least two F's ahead of the next stage and
   that stage's next F and I would not be done in time, in which case the F waits if the
   stage can afford the bubble — and a stage never schedules an F the stage below it does
   not. Before each F and each I: W's first until memory fits the F; then W's while one fits
   before the op's input arrives; then one more W if the stage would otherwise idle and
   either its bubble so far is the largest (it can afford none) or ``no_bubble_greedy``.
   Stage 0 runs all its owed W's before its last I's once its F's are done.
3. The W's still owed, at the end of each stage.

One rule is added: a stage always places the F of the microbatch whose I it places next
(with uneven memory per stage the authors' rules can skip it, leaving an I without its F).

``initial_solution`` runs the eight combinations of the three flags and keeps the best; so
does :func:`variants` (ppviz then keeps the best by its own makespan). A variant that cannot
place an F within the limit (no W left to free memory) fails, as theirs raises; so does one
whose orders are incomplete or deadlock.

The per-stage memory limit counts memory op by op, as the authors' ``m[j]`` does: an F adds
its stage's activation, an I removes (1 − w_share) of it and a W the rest.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

from ..core.program import F, I, W
from .orders import Orders, Problem

#: The authors' three switches, in the order ``initial_solution`` tries them.
FLAGS = ("allow_bubble_before_first_b", "prioritize_b", "no_bubble_greedy")


class _DoesNotFit(Exception):
    """No W is left to free memory for the next F."""


class _Greedy:
    """One run of the heuristic: per-stage counters, end times, memory and bubble."""

    def __init__(self, problem: Problem, limit: float):
        S = self.S = problem.stages
        self.m = problem.microbatches
        self.comm = problem.comm
        self.cost = problem.cost
        self.change = problem.change
        self.limit = limit
        self.count = {F: [0] * S, I: [0] * S, W: [0] * S}
        self.free = [0.0] * S
        self.mem = [0.0] * S
        self.bubble = [0.0] * S
        self.done = {F: [[0.0] * self.m for _ in range(S)], I: [[0.0] * self.m for _ in range(S)]}
        self.orders: Orders = [[] for _ in range(S)]

    def put(self, j: int, kind: int) -> None:
        mb = self.count[kind][j]
        cost = self.cost[kind][j]
        t = self.free[j] + cost
        unblocked = t
        if kind == F and j > 0:
            t = max(t, self.done[F][j - 1][mb] + self.comm + cost)
        if kind == I and j < self.S - 1:
            t = max(t, self.done[I][j + 1][mb] + self.comm + cost)
        if self.count[F][j] > 0:
            self.bubble[j] += t - unblocked
        self.free[j] = t
        if kind != W:
            self.done[kind][j][mb] = t
        self.mem[j] += self.change[kind][j]
        self.count[kind][j] += 1
        self.orders[j].append((kind, j, mb))

    def fits(self, j: int, extra: float) -> bool:
        return self.mem[j] + extra <= self.limit

    def owed_w(self, j: int) -> bool:
        return self.count[W][j] < self.count[I][j]

    def fill_with_w(self, j: int, ready: float, greedy: bool) -> None:
        """W's while one ends before ``ready``; one more if the stage would idle and may not
        afford it (or ``greedy``)."""
        cost_w = self.cost[W][j]
        while self.owed_w(j) and self.free[j] + cost_w <= ready:
            self.put(j, W)
        if self.owed_w(j) and self.free[j] < ready:
            affordable = ready - self.free[j] <= max(self.bubble) - self.bubble[j]
            if greedy or not affordable:
                self.put(j, W)

    def warm_up(self, allow_bubble: bool) -> None:
        S, m, comm, cost = self.S, self.m, self.comm, self.cost
        for j in range(S):
            self.put(j, F)
        extra = [0] * S
        arrival = 0.0
        for j in range(S - 1, -1, -1):
            if j == S - 1:
                arrival = self.done[F][j][0] + cost[I][j]
                continue
            mem, t = self.mem[j], self.free[j]
            while self.count[F][j] + extra[j] < m and mem + self.change[F][j] <= self.limit:
                if (t + cost[F][j] > arrival + comm) if allow_bubble else (t >= arrival + comm):
                    break
                mem += self.change[F][j]
                t += cost[F][j]
                extra[j] += 1
            arrival = max(t, arrival + comm) + cost[I][j]
        for j in range(1, S):
            while extra[j] > 0 and extra[j] >= extra[j - 1] and self.count[F][j] + extra[j] < m:
                extra[j] -= 1
        for j in range(S):
            for _ in range(extra[j]):
                self.put(j, F)
        for j in range(S - 1, -1, -1):
            self.put(j, I)

    def step(self, i: int, prioritize_b: bool, greedy: bool) -> None:
        S, m, comm, cost = self.S, self.m, self.comm, self.cost
        count_f, count_i, count_w = self.count[F], self.count[I], self.count[W]
        wants = [0] * S
        for j in range(S):
            if count_f[j] >= m:
                continue
            if prioritize_b and j + 1 < S and count_f[j] >= count_f[j + 1] + 2:
                next_done = self.free[j + 1] + cost[F][j + 1] + cost[I][j + 1] + comm
                if self.free[j] >= next_done:
                    continue
                mem, w_cost, owed = self.mem[j] + self.change[F][j], 0.0, count_i[j] - count_w[j]
                while mem > self.limit and owed > 0:
                    w_cost += cost[W][j]
                    mem += self.change[W][j]
                    owed -= 1
                if self.free[j] + cost[F][j] + w_cost <= next_done:
                    wants[j] = 1
                    continue
                if next_done - self.free[j] <= max(self.bubble) - self.bubble[j]:
                    continue
            wants[j] = 1
        for j in range(S - 2, -1, -1):
            wants[j] = min(wants[j], wants[j + 1])
        for j in range(S):
            # not in the authors' code: their rules can skip the F whose I this round places
            # (with uneven memory per stage); that F is placed all the same
            if count_f[j] <= i:
                wants[j] = 1
            if not wants[j]:
                continue
            while not self.fits(j, self.change[F][j]):
                if not self.owed_w(j):
                    raise _DoesNotFit
                self.put(j, W)
            if j > 0:
                self.fill_with_w(j, self.done[F][j - 1][count_f[j]] + comm, greedy)
            self.put(j, F)
        for j in range(S - 1, -1, -1):
            while not self.fits(j, self.change[I][j]):
                if not self.owed_w(j):
                    raise _DoesNotFit
                self.put(j, W)
            if j + 1 < S:
                self.fill_with_w(j, self.done[I][j + 1][i] + comm, greedy)
            if j == 0 and count_f[j] == m:
                while self.owed_w(j):
                    self.put(j, W)
            self.put(j, I)

    def run(self, allow_bubble: bool, prioritize_b: bool, greedy: bool) -> Orders:
        self.warm_up(allow_bubble)
        for i in range(1, self.m):
            self.step(i, prioritize_b, greedy)
        for j in range(self.S):
            while self.count[W][j] < self.m:
                self.put(j, W)
        return self.orders


def auto_schedule(problem: Problem, limit: float, allow_bubble_before_first_b: bool, prioritize_b: bool,
                  no_bubble_greedy: bool) -> Orders | None:
    """One variant's per-device orders (one stage per device), or None when it cannot fit ``limit``."""
    if not problem.one_stage_per_device:
        raise ValueError("the zero-bubble heuristic places one stage per device")
    try:
        return _Greedy(problem, limit).run(allow_bubble_before_first_b, prioritize_b, no_bubble_greedy)
    except _DoesNotFit:
        return None


class Variant(NamedTuple):
    """One of the eight: its number (1–8, in the authors' order) and its switches (:data:`FLAGS`)."""

    number: int
    flags: dict[str, bool]


def variants(problem: Problem, limit: float):
    """(variant, orders, timing) of each of the eight variants, in the authors' order, that fits
    ``limit`` and runs: a complete program that does not deadlock (with uneven stages a
    variant can produce neither; the authors' runtime skips this check)."""
    for number, flags in enumerate(itertools.product((True, False), repeat=3), 1):
        orders = auto_schedule(problem, limit, *flags)
        if orders is None or not problem.complete(orders):
            continue
        timing = problem.evaluate(orders)
        if timing is not None:
            yield Variant(number, dict(zip(FLAGS, flags))), orders, timing


__all__ = ["FLAGS", "Variant", "auto_schedule", "variants"]
