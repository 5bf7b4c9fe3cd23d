"""The optimal makespan of small instances, one stage per device, by mixed-integer programming.

The zero-bubble paper formulates schedule search as an integer linear program (arXiv
2401.10241 §3.1, "ILP formulation"): start times, an order variable for each pair of ops on one
device, and the memory limit counted over those orders. This module writes that program for
ppviz's model and solves it with HiGHS (``scipy.optimize.milp``):

* variables: each op's start x ≥ 0 (F, I, W of every stage and microbatch; stage s on device
  s), the makespan C, and y_ab ∈ {0, 1} for two ops a, b of one device (1: a runs first), with
  pairs whose order the dependencies fix left out;
* dependencies as in ppviz (``comm`` on every edge between devices); a device runs one op at a
  time: x_b ≥ x_a + d_a − M(1 − y_ab) and x_a ≥ x_b + d_b − M·y_ab, with M the time of every op
  one after another;
* memory: at each F's start its device holds its activation plus the changes of the ops before
  it (+a for an F, −(1 − w_share)·a for an I, −w_share·a for a W), at most the limit — the
  op-by-op count ppviz's search uses, which bounds the simulated peak;
* minimise C ≥ x_o + d_o.

The answer is the optimum over every order of one stage per device (ASAP times of the optimal
orders are no later than the program's x), or, past ``time_limit``, the best found with HiGHS's
bound. Sizes grow as (3m)² per device: p·m up to about 12 solves in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.config import Config
from ..core.errors import ConfigError
from ..core.placement import Placement
from ..core.program import F, I, W
from .orders import Orders, Problem

#: Largest instance solved: ops per device (3m) and devices.
MAX_OPS_PER_DEVICE = 24
MAX_DEVICES = 6


@dataclass(frozen=True)
class Exact:
    """The solver's answer: the best makespan found, a bound no order beats, whether it proved
    optimality, and the per-device orders of the best solution (None when none was found)."""

    makespan: float
    bound: float
    optimal: bool
    orders: Orders | None

    @property
    def gap(self) -> float:
        return (self.makespan - self.bound) / self.bound if self.bound else 0.0


def solve(config: Config, max_memory: float, *, time_limit: float = 30.0) -> Exact:
    """The least makespan of any one-stage-per-device order of ``config`` whose every device's
    peak activation (counted op by op) stays within ``max_memory``."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    p, m = config.devices, config.microbatches
    if p > MAX_DEVICES or 3 * m > MAX_OPS_PER_DEVICE:
        raise ConfigError("size", f"p={p}, m={m}", f"give p <= {MAX_DEVICES} and m <= {MAX_OPS_PER_DEVICE // 3}: the "
                          "program grows with the square of each device's ops", reason="too large to solve exactly")
    problem = Problem(config.replace(schedule="custom", stages_per_device=1, microbatch_group_size=None, label=None),
                      Placement.contiguous(p, 1))
    S = p
    ops = [(k, s, mb) for s in range(S) for mb in range(m) for k in (F, I, W)]
    index = {op: i for i, op in enumerate(ops)}
    n = len(ops)
    dur = np.array([problem.cost[k][s] for k, s, _ in ops])
    change = np.array([problem.change[k][s] for k, s, _ in ops])
    comm = problem.comm
    big = float(dur.sum() + comm * n + 1.0)
    pairs = []
    for s in range(S):
        mine = [index[k, s, mb] for mb in range(m) for k in (F, I, W)]
        for a_pos, a in enumerate(mine):
            for b in mine[a_pos + 1:]:
                ka, _, ma = ops[a]
                kb, _, mb_ = ops[b]
                if ma == mb_:  # F before I before W of one microbatch: fixed by the dependencies
                    continue
                pairs.append((a, b))
    nvar = n + 1 + len(pairs)
    C = n
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    lo: list[float] = []
    hi: list[float] = []

    def add(terms, lower, upper):
        r = len(lo)
        for c, v in terms:
            rows.append(r)
            cols.append(c)
            vals.append(v)
        lo.append(lower)
        hi.append(upper)

    for i, (k, s, mb) in enumerate(ops):
        if k == F and s > 0:
            add([(i, 1), (index[F, s - 1, mb], -1)], dur[index[F, s - 1, mb]] + comm, np.inf)
        if k == I:
            if s == S - 1:
                add([(i, 1), (index[F, s, mb], -1)], dur[index[F, s, mb]], np.inf)
            else:
                add([(i, 1), (index[I, s + 1, mb], -1)], dur[index[I, s + 1, mb]] + comm, np.inf)
        if k == W:
            add([(i, 1), (index[I, s, mb], -1)], dur[index[I, s, mb]], np.inf)
        add([(C, 1), (i, -1)], dur[i], np.inf)
    for q, (a, b) in enumerate(pairs):
        y = n + 1 + q
        add([(b, 1), (a, -1), (y, -big)], dur[a] - big, np.inf)  # y = 1: a first
        add([(a, 1), (b, -1), (y, big)], dur[b], np.inf)  # y = 0: b first
    # memory at each F's start: its own activation plus the changes of the ops before it
    before: dict[int, list[tuple[int, int, bool]]] = {}
    for q, (a, b) in enumerate(pairs):
        before.setdefault(b, []).append((a, n + 1 + q, False))  # a before b when y = 1
        before.setdefault(a, []).append((b, n + 1 + q, True))  # b before a when y = 0
    for i, (k, s, mb) in enumerate(ops):
        if k != F:
            continue
        # the F's own I and W come after it; every other op of its device is before it or not by y
        terms, constant = [], change[i]
        for other, y, flipped in before.get(i, []):
            if flipped:  # other before i when y = 0: change·(1 − y)
                constant += change[other]
                terms.append((y, -change[other]))
            else:
                terms.append((y, change[other]))
        add(terms, -np.inf, max_memory - constant)
    A = coo_matrix((np.asarray(vals), (np.asarray(rows, np.int64), np.asarray(cols, np.int64))),
                   shape=(len(lo), nvar)).tocsr()
    cost = np.zeros(nvar)
    cost[C] = 1.0
    integrality = np.zeros(nvar, np.int64)
    integrality[n + 1:] = 1
    bounds = Bounds(np.zeros(nvar), np.r_[np.full(n + 1, big), np.ones(len(pairs))])
    res = milp(cost, constraints=LinearConstraint(A, lo, hi), integrality=integrality, bounds=bounds,
               options={"time_limit": float(time_limit), "disp": False})
    if res.x is None:
        bound = getattr(res, "mip_dual_bound", None)
        return Exact(float("inf"), float(bound) if bound is not None else 0.0, False, None)
    # each device's order from the order variables: an op's place is the number of ops before it
    first = np.round(res.x[n + 1:]).astype(bool)
    ahead = np.zeros(n, int)
    for (a, b), a_first in zip(pairs, first):
        ahead[b if a_first else a] += 1
    for i, (k, s, mb) in enumerate(ops):
        ahead[i] += (k == I) + 2 * (k == W)  # its own F (and I) run before it
    orders: Orders = [sorted((op for op in ops if op[1] == s), key=lambda op: ahead[index[op]]) for s in range(S)]
    timing = problem.evaluate(orders)
    assert timing is not None  # a feasible solution's orders keep every dependency
    optimal = res.status == 0
    bound = float(res.fun) if optimal else float(getattr(res, "mip_dual_bound", 0.0) or 0.0)
    return Exact(timing.makespan, min(bound, timing.makespan), optimal, orders)


__all__ = ["Exact", "solve", "MAX_OPS_PER_DEVICE", "MAX_DEVICES"]
