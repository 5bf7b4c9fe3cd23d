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


def _moves(problem: Problem, orders: Orders, timing: Timing):
    """Candidate moves (device, from, to), most promising first: the largest gaps, then unblocking."""
    m, S = problem.microbatches, problem.stages
    f_end, g_end = {}, {}
    where = {}
    for d, order in enumerate(orders):
        for i, (kind, s, mb) in enumerate(order):
            where[kind, s, mb] = i
            if kind == F:
                f_end[s, mb] = timing.end[d][i]
            elif kind != W:
                g_end[s, mb] = timing.end[d][i]
    comm, device_of = problem.comm, problem.device_of
    gaps = []
    for d, order in enumerate(orders):
        st, en = timing.start[d], timing.end[d]
        for k in range(len(order)):
            before = en[k - 1] if k else 0.0
            if st[k] > before:
                gaps.append((st[k] - before, d, k, before))
    gaps.sort(key=lambda g: (-g[0], g[1], g[2]))
    for _, d, k, before in gaps:
        order = orders[d]
        tried = 0
        for j in range(k + 1, len(order)):
            kind, s, mb = order[j]
            if kind == W:
                mine = where[I, s, mb]
                if mine >= k:
                    continue
                ready = g_end[s, mb]
            elif kind == F:
                if s == 0:
                    ready = 0.0
                else:
                    ready = f_end[s - 1, mb] + (comm if device_of[s - 1] != d else 0.0)
            else:
                if where[F, s, mb] >= k:
                    continue
                if s == S - 1:
                    ready = f_end[s, mb]
                else:
                    ready = g_end[s + 1, mb] + (comm if device_of[s + 1] != d else 0.0)
            if ready < timing.start[d][k]:
                yield d, j, k
                tried += 1
                if tried == TRIES_PER_GAP:
                    break
    waited = set()
    for d, order in enumerate(orders):
        for kind, s, mb in order:
            if kind == F and s + 1 < S and device_of[s + 1] != d:
                waited.add((F, s, mb))
            elif kind != F and kind != W and s > 0 and device_of[s - 1] != d:
                waited.add((kind, s, mb))
    for d, order in enumerate(orders):
        for k in range(1, len(order)):
            if order[k] in waited and order[k - 1][0] == W:
                yield d, k - 1, k


def _moved(orders: Orders, d: int, j: int, k: int) -> Orders:
    order = list(orders[d])
    order.insert(k, order.pop(j))
    return orders[:d] + [order] + orders[d + 1:]


def improve(problem: Problem, orders: Orders, limit: float, budget: int) -> tuple[Orders, Timing, int]:
    """The best orders found from ``orders`` (which must fit ``limit``), their timing and the
    number of evaluations spent."""
    timing = problem.evaluate(orders)
    if timing is None or timing.peak > limit:
        raise ValueError("the starting orders must run and fit the limit")
    spent = 0
    while spent < budget:
        for d, j, k in _moves(problem, orders, timing):
            if spent >= budget:
                break
            candidate = _moved(orders, d, j, k)
            result = problem.evaluate(candidate)
            spent += 1
            if result is not None and result.peak <= limit and result.score < timing.score:
                orders, timing = candidate, result
                break
        else:
            break
    return orders, timing, spent


__all__ = ["improve", "TRIES_PER_GAP"]
