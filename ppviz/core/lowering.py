"""Lowering: the send and receive ops of a compute program, added once for every schedule.

A compute program says what each device computes; lowering adds, for every activation (F) and
input gradient (B) that crosses devices, a send after the op that produces it and a receive on
the device that consumes it (torch's ``SEND_F``/``RECV_F``/``SEND_B``/``RECV_B``). It is torch's
lowering, ``_PipelineScheduleRuntime._prepare_schedule_with_comms`` (torch 2.13,
torch/distributed/pipelining/schedules.py), re-implemented on arrays:

- ``_add_send_recv`` walks the ranks in rounds, rank 0 first; each round a rank runs its next
  action if its input has arrived (a receive put there earlier, or a producer a lower rank ran
  this round); running it appends the action and its send to the rank's list and the receive
  to the consumer's list. So a receive sits where the producer ran: as early as possible.
  torch first adds FSDP's ``UNSHARD``/``RESHARD`` (``_add_unshard_reshard``, three stages
  active) and ``REDUCE_GRAD`` (``_add_reduce_grad``) actions, each taking a round; ppviz counts
  those rounds the same way, so its receives land where torch's do, but keeps no FSDP actions.
- deferred (for blocking P2P): each receive just before the op that consumes it, so the sends
  and receives between two compute ops form one batch, as torch's ``Schedule1F1B`` and
  Megatron's ``send_forward_recv_backward`` batch them. torch's ``defer_pp_recv=True``
  (``_defer_recv_ops``) does the same, except that it moves a receive from a higher rank before
  a send to that rank when one comes first (pytorch/pytorch issue 172668), against a deadlock of its
  in-order NCCL streams that ppviz's transfers cannot have (``ppviz.core.comm_engine``).

The rounds satisfy r(a) = max(r(previous action on the rank) + 1 + FSDP steps before a,
r(producer) + (0 if the producer's rank is lower else 1)); they are found by Gauss-Seidel sweeps
over the devices (each device's rounds at once, by a running maximum), which settle in one or
two sweeps for pipelines, with a round-by-round pass when they do not. A simulation needs only
the deferred positions, so the rounds are found only when the early ones are read.
"""

from __future__ import annotations

import numpy as np

from .dependencies import deadlock_error, dependencies
from .program import B, W, CommOps, Program

#: Gauss-Seidel sweeps (forward and backward over the devices) before the round-by-round pass
MAX_SWEEPS = 6
#: torch's ``_add_unshard_reshard(max_active_stages=3)``
ACTIVE_STAGES = 3


class ActionTransfers:
    """A program's actions (:attr:`Program.actions`, an F&B pair is one) with the device of each
    and its transfers (dependencies between devices)."""

    def __init__(self, program: Program, dep: np.ndarray):
        n = len(program)
        actions = program.actions
        self.first = actions.first  # flat index of each action's first op
        self.count = len(actions)
        self.of_op = actions.of_op
        self.device = program.device[self.first]
        self.offsets = actions.offsets  # device d's actions: offsets[d]:offsets[d+1]
        self.dep = dep
        has = dep >= 0
        cross = np.flatnonzero(has & (program.device[np.where(has, dep, 0)] != program.device))
        # each op feeds at most one op on another device: the transfers in their producers' order,
        # which is the order of their sends
        consumer_of = np.full(n, -1, np.int64)
        consumer_of[dep[cross]] = cross
        self.producer = np.flatnonzero(consumer_of >= 0)
        self.consumer = consumer_of[self.producer]


def _stage_columns(program: Program) -> tuple[np.ndarray, int]:
    """For each op, the rank of its stage among its device's stages, and the most stages a device holds."""
    p, S = program.devices, program.stages
    key = program.device.astype(np.int64) * S + program.stage
    if p * S <= 1 << 24:
        held = np.zeros(p * S, bool)
        held[key] = True
        rank = np.cumsum(held.reshape(p, S), axis=1) - 1
        return rank.ravel()[key], int(rank[:, -1].max(initial=0)) + 1
    unique, column = np.unique(key, return_inverse=True)
    device_first = np.searchsorted(unique, np.arange(p, dtype=np.int64) * S)
    column = column - device_first[program.device]
    return column, int(column.max(initial=0)) + 1


def fsdp_steps(program: Program, actions: ActionTransfers) -> np.ndarray:
    """Rounds torch's FSDP actions take just before each action: UNSHARD/RESHARD for each change of
    the set of the next three stages, and a REDUCE_GRAD after the action that ends a stage's m-th
    B or W on its device."""
    steps = np.zeros(actions.count, np.int64)
    column, k = _stage_columns(program)
    m = program.microbatches
    backward = (program.kind == B) | (program.kind == W)
    for d in range(program.devices):
        lo, hi = int(actions.offsets[d]), int(actions.offsets[d + 1])
        if lo == hi:
            continue
        count = hi - lo
        ops = slice(int(program.offsets[d]), int(program.offsets[d + 1]))
        act = actions.of_op[ops] - lo
        col = column[ops]
        occurs = np.full((count, k), count, np.int64)
        occurs[act, col] = act
        # the next action holding each stage, from each action on
        nxt = np.minimum.accumulate(occurs[::-1], axis=0)[::-1]
        active = nxt < count
        if k > ACTIVE_STAGES:
            third = np.partition(nxt, ACTIVE_STAGES - 1, axis=1)[:, ACTIVE_STAGES - 1]
            active &= nxt <= third[:, None]
        steps[lo] += np.count_nonzero(active[0])
        steps[lo + 1:hi] += np.count_nonzero(active[1:] != active[:-1], axis=1)
        # REDUCE_GRAD: a stage whose B/W ops on this device number m is reduced after its last
        bw = backward[ops]
        counts = np.bincount(col[bw], minlength=k)
        last = np.full(k, -1, np.int64)
        np.maximum.at(last, col[bw], act[bw])
        done = last[(counts == m) & (last + 1 < count)]
        np.add.at(steps, lo + done + 1, 1)
    return steps


def rounds(program: Program, actions: ActionTransfers, steps: np.ndarray) -> np.ndarray:
    """The round torch's ``_add_send_recv`` runs each action in (see the module docstring)."""
    A = actions.count
    dep_action = np.full((2, A), A, np.int64)  # A: no producer (a slot holding 0)
    delta = np.zeros((2, A), np.int64)
    end_op = np.append(actions.first[1:], len(program))
    for column, ops in enumerate((actions.first, end_op - 1)):
        valid = np.flatnonzero(ops > actions.first) if column else np.arange(A)
        op = ops[valid]
        dep = actions.dep[op]
        has = dep >= 0
        where = valid[has]
        dep_action[column, where] = actions.of_op[dep[has]]
        delta[column, where] = program.device[dep[has]] > program.device[op[has]]
    position = np.arange(A) - np.repeat(actions.offsets[:-1], np.diff(actions.offsets))
    base = position + _segment_cumsum(steps, actions.offsets)
    r = np.append(base, 0)
    lows = actions.offsets[:-1].tolist()
    highs = actions.offsets[1:].tolist()
    order = [d for d in range(program.devices) if highs[d] > lows[d]]
    for _ in range(MAX_SWEEPS):
        for d in order + order[::-1]:
            lo, hi = lows[d], highs[d]
            wait = np.maximum(r[dep_action[0, lo:hi]] + delta[0, lo:hi], r[dep_action[1, lo:hi]] + delta[1, lo:hi])
            wait -= base[lo:hi]
            np.maximum(wait, 0, out=wait)
            r[lo:hi] = base[lo:hi] + np.maximum.accumulate(wait)
        settled = np.maximum(r[dep_action[0]] + delta[0], r[dep_action[1]] + delta[1]) - base
        np.maximum(settled, 0, out=settled)
        if np.array_equal(r[:A], base + _segment_cummax(settled, actions.offsets)):
            return r[:A]
    return _rounds_stepwise(program, actions, dep_action, delta, steps)


def _segment_cumsum(x: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    total = np.cumsum(x)
    starts = offsets[:-1]
    before = np.where(starts > 0, total[np.maximum(starts - 1, 0)], 0)
    before[starts >= len(x)] = 0
    return total - np.repeat(before, np.diff(offsets))


def _segment_cummax(x: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    # values are >= 0 and below 2**40: lifting each segment above the previous one keeps the
    # running maximum from leaking across segments, exactly, in int64
    lift = np.repeat(np.arange(len(offsets) - 1, dtype=np.int64) << 40, np.diff(offsets))
    return np.maximum.accumulate(x + lift) - lift


def _rounds_stepwise(program, actions, dep_action, delta, steps) -> np.ndarray:
    """The rounds one action per device at a time (when the sweeps do not settle), or the
    DeadlockError torch's lowering would hit as "Malformed compute schedule"."""
    A = actions.count
    r = np.full(A + 1, -1, np.int64)
    r[A] = 0
    pos = actions.offsets[:-1].copy()
    stop = actions.offsets[1:]
    clock = np.full(program.devices, -1, np.int64)  # the round of each device's last action
    while True:
        live = np.flatnonzero(pos < stop)
        if not len(live):
            return r[:A]
        a = pos[live]
        known = (r[dep_action[0, a]] >= 0) & (r[dep_action[1, a]] >= 0)
        if not known.any():
            first_ext = np.append(actions.first, len(program)).tolist()
            ends = np.where(r[actions.of_op] >= 0, 1.0, -1.0).tolist()
            raise deadlock_error(program, [first_ext[x] for x in pos.tolist()], program.offsets[1:].tolist(),
                                 actions.dep.tolist(), ends)
        a, d = a[known], live[known]
        r[a] = np.maximum(clock[d] + 1 + steps[a],
                          np.maximum(r[dep_action[0, a]] + delta[0, a], r[dep_action[1, a]] + delta[1, a]))
        clock[d] = r[a]
        pos[d] += 1


def add_comms(program: Program, *, defer: bool = False, dep: np.ndarray | None = None) -> Program:
    """The program with torch's send and receive ops: each send after the action that produces
    its data; each receive as early as torch's ``_add_send_recv`` puts it or, with ``defer``,
    just before the action that consumes it. The compute ops are unchanged (the arrays are
    shared); ``dep``: the program's dependencies, when already known. The early receives'
    positions are found when they are first read (a simulation needs them only deferred)."""
    actions = ActionTransfers(program, dependencies(program) if dep is None else dep)
    first_ext = np.append(actions.first, len(program))
    send_before = first_ext[actions.of_op[actions.producer] + 1]
    if defer:
        consumer_action = actions.of_op[actions.consumer]
        recv_before = actions.first[consumer_action]
        # within a gap: the sends of the action before it (a pair's F first), then the receives
        # of the action after it, in its ops' order
        send_order = actions.producer - actions.first[actions.of_op[actions.producer]]
        recv_order = 2 + actions.consumer - recv_before

        def placement():
            return recv_before, send_order, recv_order
    else:
        recv_before = None

        def placement():
            r = rounds(program, actions, fsdp_steps(program, actions))
            prod_action = actions.of_op[actions.producer]
            src = program.device[actions.producer].astype(np.int64)
            # torch's order of one rank's list: (round, rank that appended, position in the action)
            key = (r[prod_action] * program.devices + src) * 2 + actions.producer - actions.first[prod_action]
            return first_ext[_after(program, actions, r)], key, key
    comms = CommOps.of_transfers(program, actions.producer, actions.consumer, send_before, placement, recv_before)
    return Program(program.kind, program.stage, program.microbatch, program.pair, program.offsets,
                   stages=program.stages, microbatches=program.microbatches, placement=program.placement,
                   name=program.name, forward_only=program.forward_only, segments=program.segments, comms=comms)


def _after(program: Program, actions: ActionTransfers, r: np.ndarray) -> np.ndarray:
    """For each transfer, the first action of the consumer's device that torch's list puts after
    its receive: the receive sits where the producer ran, after that device's actions of earlier
    rounds, and of the same round if the producer's rank is lower."""
    producer, consumer = actions.producer, actions.consumer
    src, dst = program.device[producer].astype(np.int64), program.device[consumer].astype(np.int64)
    span = int(r.max(initial=0)) + 2
    p = program.devices
    key = (actions.device.astype(np.int64) * span + r) * p + actions.device
    return np.searchsorted(key, (dst * span + r[actions.of_op[producer]]) * p + src)
