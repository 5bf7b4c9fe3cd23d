"""Schedules with fewer microbatches in flight: candidates for limits below p activations.

**Waves**: GPipe over groups of k ≤ p microbatches — each device runs a group's forwards, then
its I's each followed by its W, then the next group. A device holds at most k activations;
every device takes the groups and, inside one, the microbatches in the same order, so no two
wait for each other. k = 1 is one microbatch at a time.

**Capped ZB-H1**: 1F1B holds p − r activations on rank r because its warm-up runs p − r − 1 forwards; ZB-H1
keeps the same warm-up and holds r W's back (``ppviz.schedules.zero_bubble``). Capping every
rank's warm-up at c forwards (c + 1 activations in flight) and holding back as many W's as
still fit gives a schedule for any limit from one activation up: with fewer microbatches in
flight the pipeline drains between them and the bubble grows, but far less than running one
microbatch at a time.

A warm-up that never grows down the pipeline (rank r + 1 runs no more forwards before its
first I than rank r) cannot deadlock: rank r has run forward k before rank r + 1 needs it,
and its I k waits only for rank r + 1's I k, which comes after rank r + 1's forward k. Held
W's wait only for their own I on the same device.
"""

from __future__ import annotations

import math

from ..core.placement import Placement
from ..core.program import F, I, W, Program
from ..schedules.zero_bubble import split_backward_order
from .orders import Orders, Problem, orders_of


def capped_orders(problem: Problem, limit: float):
    """(name, orders) for each warm-up cap c from 0 to p − 2, with W's held back as ZB-H1 holds
    them (rank r up to r) as far as ``limit`` allows, and with none held back.

    Caps whose warm-up alone goes over the limit are left out before they are built (rank r holds
    min(warm-up + 1, m) activations before its first I, whatever it holds back), and so is the
    second order of a cap where no W fits to be held (the same order twice): each order costs a
    build and a run over all p · m ops, and at p = 64 there were 126 of them."""
    p, m = problem.devices, problem.microbatches
    if not problem.one_stage_per_device:
        return
    share = problem.config.w_share
    over = limit + 1e-9 * max(1.0, abs(limit))
    for cap in range(0, min(p - 1, m)):
        warmups = [min(p - 1 - r, cap, m) for r in range(p)]
        if any(min(warmup + 1, m) * unit > over for warmup, unit in zip(warmups, problem.activation)):
            continue
        built = set()
        for held in ("fitting", "none"):
            delays = []
            for r, warmup in enumerate(warmups):
                unit = problem.activation[r]
                room = limit / unit - (warmup + 1) if unit > 0 else math.inf
                fits = r if share == 0 or room == math.inf else max(0, math.floor(room / share + 1e-9))
                delays.append(min(r, fits) if held == "fitting" else 0)
            if tuple(delays) in built:
                continue
            built.add(tuple(delays))
            # named by what it holds: a warm-up of c forwards keeps c + 1 microbatches in flight
            held_back = f", W's held back ≤ {max(delays)}" if any(delays) else ""
            yield f"capped ZB-H1 (≤ {cap + 1} in flight{held_back})", _orders(p, m, warmups, delays)


def wave_orders(problem: Problem, limit: float):
    """(name, orders) of GPipe in waves of k microbatches, for every k from 2 to what the limit
    holds, and at most p: a limit that holds p activations holds 1F1B too, which drains the
    pipeline once where waves drain it after each (a loose limit made m − 1 candidates of all
    p · m ops each: at p = 2, m = 5,000 a search ran for minutes)."""
    p, m = problem.devices, problem.microbatches
    if not problem.one_stage_per_device:
        return
    unit = max(problem.activation)
    most = min(m, p) if unit <= 0 else min(m, p, math.floor(limit / unit + 1e-9))
    for k in range(2, most + 1):
        orders: Orders = [[] for _ in range(p)]
        for first in range(0, m, k):
            wave = range(first, min(first + k, m))
            for r in range(p):
                orders[r] += [(F, r, mb) for mb in wave]
                for mb in wave:
                    orders[r] += [(I, r, mb), (W, r, mb)]
        yield f"GPipe in waves of {k}", orders


def _orders(p: int, m: int, warmups: list[int], delays: list[int]) -> Orders:
    devices = []
    for r in range(p):
        order = [(r, mb) for mb in range(m)]
        devices.append(split_backward_order(order, order, warmups[r], delays[r]))
    program = Program.from_device_ops(devices, stages=p, microbatches=m, placement=Placement.contiguous(p, 1))
    orders = orders_of(program)
    assert orders is not None  # one stage per device, split backwards: searched
    return orders


__all__ = ["capped_orders", "wave_orders"]
