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

    All devices at once: a row per device holding its frees and then its allocations, sorted
    along the rows (stably, so a row sums in the order one device's own list would). Rows are
    padded to the longest of a group of devices with counts within a factor of two, so that one
    device with many events does not pad all the others."""
    n_free = np.bincount(free_device, minlength=devices)
    n_alloc = np.bincount(alloc_device, minlength=devices)
    counts = n_free + n_alloc
    # each event's column in its device's row
    free_col = np.arange(len(free_device)) - (np.cumsum(n_free) - n_free)[free_device]
    alloc_col = np.arange(len(alloc_device)) - (np.cumsum(n_alloc) - n_alloc - n_free)[alloc_device]
    group = np.ceil(np.log2(np.maximum(counts, 1))).astype(np.int64)
    points = np.zeros(devices, np.int64)
    pieces = []
    for g in np.unique(group).tolist():
        rows = np.flatnonzero(group == g)
        row_of = np.full(devices, -1)
        row_of[rows] = np.arange(len(rows))
        width = int(counts[rows].max())
        when = np.full(len(rows) * width, np.inf)  # padding sorts last
        delta = np.zeros(len(rows) * width)
        for device, col, time, amount in ((free_device, free_col, free_time, -free_amount),
                                          (alloc_device, alloc_col, alloc_time, alloc_amount)):
            row = row_of[device]
            mine = slice(None) if len(rows) == devices else (row >= 0).nonzero()[0]
            cell = row[mine] * width + col[mine]
            when[cell], delta[cell] = time[mine], amount[mine]
        order = np.argsort(when.reshape(len(rows), width), axis=1, kind="stable")
        when = np.take_along_axis(when.reshape(len(rows), width), order, axis=1)
        level = np.take_along_axis(delta.reshape(len(rows), width), order, axis=1).cumsum(axis=1)
        level[np.abs(level) < 1e-9 * np.maximum(1.0, scale[rows])[:, None]] = 0.0
        # an instant's last event
        last = np.ones(when.shape, bool)
        np.not_equal(when[:, 1:], when[:, :-1], out=last[:, :-1])
        last &= np.arange(width) < counts[rows][:, None]
        # every curve starts at (0, 0): a point of its own unless the device's first event is at 0
        opening = (counts[rows] == 0) | (when[:, 0] > 0) if width else np.ones(len(rows), bool)
        per_row = last.sum(axis=1) + opening
        row = np.repeat(np.arange(len(rows)), per_row)
        at_event = np.ones(len(row), bool)
        at_event[(np.cumsum(per_row) - per_row)[opening]] = False
        row_times, row_levels = np.zeros(len(row)), np.zeros(len(row))
        row_times[at_event], row_levels[at_event] = when[last], level[last]
        # a point only where the level changes (or the curve begins)
        changed = np.r_[True, (row_levels[1:] != row_levels[:-1]) | (row[1:] != row[:-1])]
        points[rows] = np.bincount(row[changed], minlength=len(rows))
        pieces.append((rows, row_times[changed], row_levels[changed]))
    offsets = np.r_[0, np.cumsum(points)]
    times, levels = np.empty(int(offsets[-1])), np.empty(int(offsets[-1]))
    for rows, row_times, row_levels in pieces:
        # the group's points are its devices' curves end to end: each goes to its device's place
        first = offsets[rows] - (np.cumsum(points[rows]) - points[rows])
        at = np.repeat(first, points[rows]) + np.arange(len(row_times))
        times[at], levels[at] = row_times, row_levels
    return MemoryCurves(times, levels, offsets.astype(np.int64))


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
