"""Per-device op orders as plain lists, timed and measured quickly, for the search to edit.

An order is a list per device of ops ``(kind, stage, microbatch)`` (kinds as in
:mod:`ppviz.core.program`). :class:`Problem` holds what a config says about one placement —
each stage's device, each op's time, the activation each op allocates or frees — and
:meth:`Problem.evaluate` runs an order under ppviz's model (ARCHITECTURE.md, "Model of time
and memory") in one pass: the same start and end times as the event engine (the same float
operations in the same order), and each device's peak activation counted op by op in program
order. That count is never below the simulated peak (the simulator frees memory released and
allocated at the same instant first, which only matters when ops take no time), so an order
that fits a limit here fits it in :func:`ppviz.simulate` too.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.config import Config
from ..core.engine import gap_table, stage_table, warmup_table
from ..core.memory import stage_activation
from ..core.placement import Placement
from ..core.program import B, F, I, W, DeviceOps, Program

Op = tuple[int, int, int]
Orders = list[list[Op]]


@dataclass
class Timing:
    """What one order gives: makespan, each device's peak (op-by-op count) and every op's times."""

    makespan: float
    peaks: list[float]
    start: list[list[float]]
    end: list[list[float]]

    @property
    def peak(self) -> float:
        return max(self.peaks)

    @property
    def score(self) -> tuple[float, float]:
        """Makespan first, then the devices' finishing times summed: a search that ties on the
        makespan still moves towards freeing devices earlier."""
        return self.makespan, sum(e[-1] if e else 0.0 for e in self.end)


class Problem:
    """One config on one placement: per-stage op times and memory, ready for :meth:`evaluate`."""

    def __init__(self, config: Config, placement: Placement):
        p, stages = placement.devices, placement.stages
        self.config = config
        self.placement = placement
        self.devices, self.stages, self.microbatches = p, stages, config.microbatches
        table = stage_table(config, p, stages)  # rows F, B, I, W: indexed by op kind
        gaps = gap_table(config, stages)
        if gaps is not None:
            table = table + gaps
        self.cost = [table[k].tolist() for k in range(4)]
        warm = warmup_table(config, stages)
        self.warmup = [row.tolist() for row in warm] if warm is not None else [[0.0] * stages] * 4
        act = stage_activation(config, p, stages).tolist()
        share = config.w_share
        self.activation = act
        # memory each op kind allocates (+) or frees (−) per stage, as ppviz.core.memory counts it
        self.change = [act, [-a for a in act], [-(1.0 - share) * a for a in act], [-share * a for a in act]]
        self.device_of = list(placement.stage_device)
        self.comm = config.comm

        self._index()

    def _index(self) -> None:
        """Number every op (kind, stage, microbatch) and tabulate, per number, what a run needs:
        the op it waits for, the comm on that edge, its time and its memory change."""
        S, m = self.stages, self.microbatches
        size = 4 * S * m
        self.kind_of = [k for k in range(4) for _ in range(S * m)]
        self.stage_of = [s for _ in range(4) for s in range(S) for _ in range(m)]
        self.microbatch_of = [mb for _ in range(4 * S) for mb in range(m)]
        self.waits_for = [-1] * size
        self.edge = [0.0] * size
        self.duration = [0.0] * size
        self.delta = [0.0] * size
        for op in range(size):
            kind, s, mb = self.kind_of[op], self.stage_of[op], self.microbatch_of[op]
            here = self.device_of[s]
            if kind == F:
                source = self.op(F, s - 1, mb) if s > 0 else -1
            elif kind == W:
                source = self.op(I, s, mb)
            elif s == S - 1:
                source = self.op(F, s, mb)
            else:
                source = self.op(kind if kind == I else B, s + 1, mb)
            self.waits_for[op] = source
            if source >= 0 and self.device_of[self.stage_of[source]] != here:
                self.edge[op] = self.comm
            self.duration[op] = self.cost[kind][s] + (self.warmup[kind][s] if mb == 0 else 0.0)
            self.delta[op] = self.change[kind][s]

    def op(self, kind: int, stage: int, microbatch: int) -> int:
        """The number of an op."""
        return (kind * self.stages + stage) * self.microbatches + microbatch

    def encode(self, orders: Orders) -> list[list[int]]:
        return [[self.op(*o) for o in order] for order in orders]

    def decode(self, numbered: list[list[int]]) -> Orders:
        k, s, mb = self.kind_of, self.stage_of, self.microbatch_of
        return [[(k[o], s[o], mb[o]) for o in order] for order in numbered]

    def evaluate(self, orders: Orders) -> Timing | None:
        """Times and peaks of ``orders``, or None when they deadlock."""
        return self.run(self.encode(orders))

    def run(self, numbered: list[list[int]]) -> Timing | None:
        """:meth:`evaluate` for orders of op numbers (:meth:`encode`)."""
        p = self.devices
        waits_for, edge, duration, delta = self.waits_for, self.edge, self.duration, self.delta
        done = [-1.0] * len(waits_for)
        waiter = [-1] * len(waits_for)
        pos = [0] * p
        free = [0.0] * p
        level = [0.0] * p
        peaks = [0.0] * p
        start = [[0.0] * len(o) for o in numbered]
        end = [[0.0] * len(o) for o in numbered]
        runnable = list(range(p - 1, -1, -1))
        while runnable:
            d = runnable.pop()
            order, st, en = numbered[d], start[d], end[d]
            i, t, lv, pk = pos[d], free[d], level[d], peaks[d]
            n = len(order)
            while i < n:
                o = order[i]
                j = waits_for[o]
                if j >= 0:
                    r = done[j]
                    if r < 0.0:
                        waiter[j] = d
                        break
                    r += edge[o]  # the engine adds comm, or 0.0, the same way
                    if r > t:
                        t = r
                st[i] = t
                t += duration[o]
                en[i] = t
                lv += delta[o]
                if lv > pk:
                    pk = lv
                done[o] = t
                w = waiter[o]
                if w >= 0:
                    runnable.append(w)
                i += 1
            pos[d], free[d], level[d], peaks[d] = i, t, lv, pk
        if any(pos[d] < len(numbered[d]) for d in range(p)):
            return None
        return Timing(max(free), peaks, start, end)

    @property
    def one_stage_per_device(self) -> bool:
        """Stage d on device d, as the zero-bubble heuristic and the lower bound assume."""
        return self.placement.reverse_device is None and tuple(self.placement.stage_device) == tuple(range(self.devices))

    def complete(self, orders: Orders) -> bool:
        """True when each device runs exactly its stages' F, I and W of every microbatch, each
        F before its I and each I before its W (the rules :meth:`Program.validate` checks)."""
        m = self.microbatches
        if len(orders) != self.devices:
            return False
        for d, order in enumerate(orders):
            stages = [s for s in range(self.stages) if self.device_of[s] == d]
            if len(order) != 3 * m * len(stages):
                return False
            seen = set()
            for kind, s, mb in order:
                if self.device_of[s] != d or not 0 <= mb < m or (kind, s, mb) in seen:
                    return False
                if (kind == I and (F, s, mb) not in seen) or (kind == W and (I, s, mb) not in seen) \
                        or kind not in (F, I, W):
                    return False
                seen.add((kind, s, mb))
        return True

    def program(self, orders: Orders, name: str = "search") -> Program:
        """The orders as a validated :class:`Program` on this placement."""
        devices = []
        for order in orders:
            ops = DeviceOps()
            for kind, s, mb in order:
                ops._add(kind, s, mb)
            devices.append(ops)
        program = Program.from_device_ops(devices, stages=self.stages, microbatches=self.microbatches,
                                          placement=self.placement, name=name)
        return program.validate()

    def serial(self) -> Orders:
        """One microbatch at a time: the least memory any order reaches (one F per stage held).

        Per microbatch each device runs its forwards in stage order, then its backwards in
        reverse stage order, each I followed by its W. Every device's order follows the one
        microbatch's chain F0…F(S−1), I(S−1)…I0, so it cannot deadlock.
        """
        orders: Orders = [[] for _ in range(self.devices)]
        stages_of = [[s for s in range(self.stages) if self.device_of[s] == d] for d in range(self.devices)]
        for mb in range(self.microbatches):
            for d, stages in enumerate(stages_of):
                orders[d] += [(F, s, mb) for s in stages]
                for s in reversed(stages):
                    orders[d] += [(I, s, mb), (W, s, mb)]
        return orders


def orders_of(program: Program) -> Orders | None:
    """A program's per-device orders, or None when it has F&B pairs, two replicas, both full and
    split backwards, sequence segments or no backward at all (not searched)."""
    if program.pair.any() or program.placement is None or program.placement.reverse_device is not None \
            or program.forward_only or program.segments != 1 or ((program.kind == B).any() and (program.kind == I).any()):
        return None
    kind, stage, mb = program.kind.tolist(), program.stage.tolist(), program.microbatch.tolist()
    bounds = program.offsets.tolist()
    return [list(zip(kind[lo:hi], stage[lo:hi], mb[lo:hi])) for lo, hi in zip(bounds[:-1], bounds[1:])]


__all__ = ["Op", "Orders", "Problem", "Timing", "orders_of"]
