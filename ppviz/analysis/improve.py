"""Local search on per-device orders: fill idle gaps and unblock waiting devices, within a memory limit.

A move changes one device's order and keeps every rule a program must follow (an op's F
before its I or B, its I before its W). Two kinds of move, both read off the current timing:

* **fill a gap**: where a device idles before an op, bring forward a later op of that device
  whose input is ready by then (a W whose I has run, an F or I whose input has arrived) —
  the zero-bubble idea of filling the bubble with work that is ready;
* **unblock**: where a W runs just before an F or I that another device waits for, run the
  W after it, so the waiting device gets its input sooner.

A neighbour is kept when it fits the limit (counted op by op, :class:`~.orders.Problem`) and
lowers the score — the makespan, then the sum of the devices' finishing times, so the search
also moves along plateaus; the score only falls, so it cannot cycle. The search stops at a
local optimum or after ``budget`` evaluations, deterministically.
"""

from __future__ import annotations

from ..core.program import F, I, W
from .orders import Orders, Problem, Timing

#: How many ready ops a gap tries, nearest first: the nearest usually fill it best.
TRIES_PER_GAP = 3


def _moves(problem: Problem, numbered: list[list[int]], timing: Timing):
    """Candidate moves (device, from, to), most promising first: the largest gaps, then unblocking."""
    kind_of, stage_of, mb_of, op = problem.kind_of, problem.stage_of, problem.microbatch_of, problem.op
    waits_for, edge = problem.waits_for, problem.edge
    end_of = {}
    where = {}
    for d, order in enumerate(numbered):
        en = timing.end[d]
        for i, o in enumerate(order):
            where[o] = i
            end_of[o] = en[i]
    gaps = []
    for d, order in enumerate(numbered):
        st, en = timing.start[d], timing.end[d]
        for k in range(len(order)):
            before = en[k - 1] if k else 0.0
            if st[k] > before:
                gaps.append((st[k] - before, d, k))
    gaps.sort(key=lambda g: (-g[0], g[1], g[2]))
    for _, d, k in gaps:
        order = numbered[d]
        at = timing.start[d][k]
        tried = 0
        for j in range(k + 1, len(order)):
            o = order[j]
            kind = kind_of[o]
            if kind != F and where[op(F if kind != W else I, stage_of[o], mb_of[o])] >= k:
                continue  # its own F (or I) would come after it
            source = waits_for[o]
            ready = 0.0 if source < 0 else end_of[source] + edge[o]
            if ready < at:
                yield d, j, k
                tried += 1
                if tried == TRIES_PER_GAP:
                    break
    # ops another device waits for: an F whose next stage is elsewhere, an I or B whose
    # previous stage is elsewhere
    waited = {waits_for[o] for order in numbered for o in order if edge[o] or waits_for[o] < 0} - {-1}
    for d, order in enumerate(numbered):
        for k in range(1, len(order)):
            if order[k] in waited and kind_of[order[k - 1]] == W:
                yield d, k - 1, k


def _moved(numbered: list[list[int]], d: int, j: int, k: int) -> list[list[int]]:
    order = list(numbered[d])
    order.insert(k, order.pop(j))
    return numbered[:d] + [order] + numbered[d + 1:]


def improve(problem: Problem, orders: Orders, limit: float, budget: int) -> tuple[Orders, Timing, int]:
    """The best orders found from ``orders`` (which must fit ``limit``), their timing and the
    number of evaluations spent."""
    numbered = problem.encode(orders)
    timing = problem.run(numbered)
    if timing is None or timing.peak > limit:
        raise ValueError("the starting orders must run and fit the limit")
    spent = 0
    while spent < budget:
        for d, j, k in _moves(problem, numbered, timing):
            if spent >= budget:
                break
            candidate = _moved(numbered, d, j, k)
            result = problem.run(candidate)
            spent += 1
            if result is not None and result.peak <= limit and result.score < timing.score:
                numbered, timing = candidate, result
                break
        else:
            break
    return problem.decode(numbered), timing, spent


__all__ = ["improve", "TRIES_PER_GAP"]
