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
from .program import B, F, I, W


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
        out = np.zeros(len(self.offsets) - 1)
        for d in range(len(out)):
            times, values = self.curve(d)
            k = np.searchsorted(times, t, side="right") - 1
            out[d] = values[k] if k >= 0 else 0.0
        return out

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


def activation_curves(program, config, start: np.ndarray, end: np.ndarray) -> MemoryCurves:
    p = program.devices
    act = stage_activation(config, p, program.stages)[program.stage] / program.segments
    kind = program.kind
    share = config.w_share
    release = np.select([kind == B, kind == I, kind == W], [act, (1.0 - share) * act, share * act], 0.0)
    is_alloc = kind == F
    is_free = ~is_alloc & (release != 0)
    if program.forward_only:
        release, is_free = act, act != 0  # each F frees at its own end what it took at its start
    times, values, offsets = [], [], [0]
    bounds = program.offsets.tolist()
    for d in range(p):
        lo, hi = bounds[d], bounds[d + 1]
        alloc_t = start[lo:hi][is_alloc[lo:hi]]
        alloc_v = act[lo:hi][is_alloc[lo:hi]]
        free_t = end[lo:hi][is_free[lo:hi]]
        free_v = release[lo:hi][is_free[lo:hi]]
        # a device's starts and ends both grow along its program, so each list is sorted;
        # merge them, frees first at equal times (memory freed at t can be reused at t)
        before = np.searchsorted(free_t, alloc_t, side="right")
        n_events = len(alloc_t) + len(free_t)
        at_alloc = before + np.arange(len(alloc_t))
        is_alloc_event = np.zeros(n_events, bool)
        is_alloc_event[at_alloc] = True
        when = np.empty(n_events)
        delta = np.empty(n_events)
        when[at_alloc] = alloc_t
        delta[at_alloc] = alloc_v
        when[~is_alloc_event] = free_t
        delta[~is_alloc_event] = -free_v
        level = np.cumsum(delta)
        # one point per instant: the level after all of that instant's events
        last = np.r_[when[1:] != when[:-1], True] if n_events else np.zeros(0, bool)
        when, level = when[last], level[last]
        if not len(when) or when[0] > 0:
            when, level = np.r_[0.0, when], np.r_[0.0, level]
        level[np.abs(level) < 1e-9 * max(1.0, float(np.abs(alloc_v).max(initial=0.0)))] = 0.0
        changed = np.r_[True, level[1:] != level[:-1]]
        when, level = when[changed], level[changed]
        times.append(when)
        values.append(level)
        offsets.append(offsets[-1] + len(when))
    return MemoryCurves(np.concatenate(times), np.concatenate(values), np.array(offsets, dtype=np.int64))


def static_memory(program, config) -> np.ndarray:
    """Parameters + gradients + optimizer state per device, in activation units: each
    (replica, stage) a device holds adds ``params`` · p/S, or ``stage_costs[s]["params"]``."""
    per_stage = np.full(program.stages, config.params * program.devices / program.stages)
    for s, over in config.stage_costs.items():
        if "params" in over and s < program.stages:
            per_stage[s] = over["params"]
    out = np.zeros(program.devices)
    if program.placement is None:
        for d in range(program.devices):
            out[d] = per_stage[np.unique(program.stage[program.device == d])].sum()
        return out
    placement = program.placement
    np.add.at(out, np.asarray(placement.stage_device), per_stage)
    if placement.reverse_device is not None:
        np.add.at(out, np.asarray(placement.reverse_device), per_stage)
    return out
