"""Activation memory over time, per device.

F of (s, mb) allocates that stage's activation when it starts. I frees the part the weight
gradient does not need when it ends (1 − ``w_share`` of it), W frees the rest, and B frees
all of it. An F&B pair allocates at its start and frees at its end. In a forward-only
(inference) program nothing is kept for a backward: each F holds its stage's activation, the
working set of its pass, from its start to its end. A segment of a microbatch split into k
sequence segments (Seq1F1B) holds 1/k of the microbatch's activation. Static memory
(parameters, gradients, optimizer state) is ``params`` per 1/p of the model, counted once
per stage a device holds, so DualPipe's two replicas count twice.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .config import FULL_RECOMPUTE_SHARE
from .program import B, F, I, VOCAB_KINDS, W


@dataclass(frozen=True)
class MemoryCurves:
    """Step functions, one per device: after ``times[k]`` the device holds ``values[k]``.

    Device d's points are ``times[offsets[d]:offsets[d+1]]``; every curve starts at (0, 0).
    Values are activation units (static memory not included).
    """

    times: np.ndarray
    values: np.ndarray
    offsets: np.ndarray

    def curve(self, device: int) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = self.offsets[device], self.offsets[device + 1]
        return self.times[lo:hi], self.values[lo:hi]

    def at(self, t: float) -> np.ndarray:
        """Activation memory held by each device at time t."""
        # a device's times ascend, so those up to t are the first of its points (every curve has
        # one, at 0)
        upto = np.add.reduceat((self.times <= t).astype(np.int64), self.offsets[:-1])
        return np.where(upto > 0, self.values[self.offsets[:-1] + np.maximum(upto - 1, 0)], 0.0)

    def peaks(self) -> np.ndarray:
        return np.maximum.reduceat(self.values, self.offsets[:-1])


def stage_activation(config, devices: int, stages: int) -> np.ndarray:
    """What each stage's F stores: ``activation`` per 1/p of the model, or under recompute
    ``recompute_activation`` (default: 2/34 of it for full recompute, all of it for selective;
    see ``Config.recompute``); ``stage_costs[s]["activation"]`` overrides a stage."""
    unit = config.activation
    if config.recompute is not None:
        unit = config.recompute_activation if config.recompute_activation is not None else \
            unit * FULL_RECOMPUTE_SHARE if config.recompute == "full" else unit
    act = np.full(stages, unit * devices / stages)
    for s, over in config.stage_costs.items():
        if "activation" in over and s < stages:
            act[s] = over["activation"]
    return act


def op_activation(program, config) -> tuple[np.ndarray, np.ndarray]:
    """Per op, the activation its stage's F takes (a segment's share of it) and what the op
    frees at its end: all of it for B, 1 − ``w_share`` of it for I, ``w_share`` for W, none for F."""
    act = stage_activation(config, program.devices, program.stages)[program.stage] / program.segments
    kind, share = program.kind, config.w_share
    return act, np.select([kind == B, kind == I, kind == W], [act, (1.0 - share) * act, share * act], 0.0)


def activation_curves(program, config, start: np.ndarray, end: np.ndarray) -> MemoryCurves:
    act, release = op_activation(program, config)
    is_alloc = program.kind == F
    if config.vocab_activation:
        # a vocabulary pass S holds its shard's tensors until the T of its microbatch
        is_s, is_t = program.kind == VOCAB_KINDS[0], program.kind == VOCAB_KINDS[1]
        act, release = np.where(is_s, config.vocab_activation, act), np.where(is_t, config.vocab_activation, release)
        is_alloc = is_alloc | is_s
    is_free = ~is_alloc & (release != 0)
    if program.forward_only:
        release, is_free = act, act != 0  # each F frees at its own end what it took at its start
    allocs, frees = np.flatnonzero(is_alloc), np.flatnonzero(is_free)
    device = program.device
    return step_curves(program.devices, device[frees], end[frees], release[frees], device[allocs], start[allocs],
                       act[allocs], device_max(np.abs(act[allocs]), device[allocs], program.devices))


def device_max(values: np.ndarray, device: np.ndarray, devices: int) -> np.ndarray:
    """Per device, the largest of its values (0 for a device with none); ``device`` ascending."""
    out = np.zeros(devices)
    if len(values):
        first = np.flatnonzero(np.r_[True, device[1:] != device[:-1]])
        out[device[first]] = np.maximum.reduceat(values, first)
    return out


def step_curves(devices: int, free_device, free_time, free_amount, alloc_device, alloc_time, alloc_amount,
                scale: np.ndarray) -> MemoryCurves:
    """Each device's level over time from the amounts freed and allocated at given times, frees
    first at equal times (memory freed at t can be reused at t), otherwise in the order given;
    one point per instant (the level after all of its events), starting at (0, 0). Levels
    within 1e−9 × max(1, ``scale[d]``) of zero are zero. ``free_device`` and ``alloc_device``
    ascending.

    All devices at once, end to end: each device's frees and allocations are each in time order
    already in a simulated run (a device's ops start and end in program order), so the events
    of a device are merged by two binary searches rather than sorted, and its levels are its
    deltas summed in that order."""
    free_device, free_time, free_amount = _in_time_order(free_device, free_time, free_amount)
    alloc_device, alloc_time, alloc_amount = _in_time_order(alloc_device, alloc_time, alloc_amount)
    n_free = np.bincount(free_device, minlength=devices)
    n_alloc = np.bincount(alloc_device, minlength=devices)
    counts = n_free + n_alloc
    free_lo, alloc_lo, base = (np.r_[0, np.cumsum(x)].tolist() for x in (n_free, n_alloc, counts))
    free_at = np.empty(len(free_time), np.int64)
    alloc_at = np.empty(len(alloc_time), np.int64)
    for d in np.flatnonzero(counts).tolist():
        frees = slice(free_lo[d], free_lo[d + 1])
        allocs = slice(alloc_lo[d], alloc_lo[d + 1])
        # a free goes before the allocations at its instant, an allocation after the frees at its
        free_at[frees] = np.arange(base[d], base[d] + free_lo[d + 1] - free_lo[d]) + \
            np.searchsorted(alloc_time[allocs], free_time[frees], side="left")
        alloc_at[allocs] = np.arange(base[d], base[d] + alloc_lo[d + 1] - alloc_lo[d]) + \
            np.searchsorted(free_time[frees], alloc_time[allocs], side="right")
    total = base[-1]
    when, level = np.empty(total), np.empty(total)
    when[free_at], level[free_at] = free_time, -free_amount
    when[alloc_at], level[alloc_at] = alloc_time, alloc_amount
    for d in np.flatnonzero(counts).tolist():
        np.cumsum(level[base[d]:base[d + 1]], out=level[base[d]:base[d + 1]])
    event_device = np.repeat(np.arange(devices), counts)
    level[np.abs(level) < 1e-9 * np.maximum(1.0, scale)[event_device]] = 0.0
    # an instant's last event: the next is at another time or on the next device
    last = np.ones(total, bool)
    np.not_equal(when[1:], when[:-1], out=last[:-1])
    heads = np.asarray(base[:-1])
    last[(heads + counts - 1)[counts > 0]] = True
    instants = np.flatnonzero(last)
    # every curve starts at (0, 0): a point of its own unless the device's first event is at 0
    opening = (counts == 0) | (when[np.minimum(heads, max(total - 1, 0))] > 0) if total else np.ones(devices, bool)
    per_device = np.bincount(event_device[instants], minlength=devices) + opening
    first = np.r_[0, np.cumsum(per_device)[:-1]]
    times, levels = np.zeros(int(per_device.sum())), np.zeros(int(per_device.sum()))
    instant_device = event_device[instants]
    rank = np.arange(len(instants)) - (np.cumsum(per_device - opening) - (per_device - opening))[instant_device]
    at = first[instant_device] + opening[instant_device] + rank
    times[at], levels[at] = when[instants], level[instants]
    # a point only where the level changes (or the curve begins)
    changed = np.r_[True, levels[1:] != levels[:-1]]
    changed[first[per_device > 0]] = True
    points = np.bincount(np.repeat(np.arange(devices), per_device)[changed], minlength=devices)
    return MemoryCurves(times[changed], levels[changed], np.r_[0, np.cumsum(points)].astype(np.int64))


def _in_time_order(device: np.ndarray, time: np.ndarray, amount: np.ndarray):
    """Events (device ascending) in time order within each device, ties in the order given: as
    they come from a simulated run, or sorted (a measured run's may not be)."""
    later = time[1:] >= time[:-1]
    if later.all() or (later | (device[1:] != device[:-1])).all():
        return device, time, amount
    order = np.lexsort((time, device))
    return device[order], time[order], amount[order]


def static_memory(program, config) -> np.ndarray:
    """Parameters + gradients + optimizer state per device, in activation units: each
    (replica, stage) a device holds adds ``params`` · p/S, or ``stage_costs[s]["params"]``."""
    if program.placement is not None:
        return placement_static_memory(program.placement, config)
    p, S = program.devices, program.stages
    per_stage = _stage_params(config, p, S)
    # the distinct stages whose ops run on each device
    held = np.unique(program.device.astype(np.int64) * S + program.stage)
    return np.bincount(held // S, weights=per_stage[held % S], minlength=p).astype(np.float64)


def _stage_params(config, devices: int, stages: int) -> np.ndarray:
    per_stage = np.full(stages, config.params * devices / stages)
    for s, over in config.stage_costs.items():
        if "params" in over and s < stages:
            per_stage[s] = over["params"]
    return per_stage


def placement_static_memory(placement, config) -> np.ndarray:
    """:func:`static_memory` of any program on ``placement``."""
    per_stage = _stage_params(config, placement.devices, placement.stages)
    out = np.zeros(placement.devices)
    np.add.at(out, np.asarray(placement.stage_device), per_stage)
    if placement.reverse_device is not None:
        np.add.at(out, np.asarray(placement.reverse_device), per_stage)
    return out
