"""GPipe: fill-drain. Every device runs all m forwards, then all m backwards.

Source: Huang et al., "GPipe" (arXiv 1811.06965); per-device order as torch's
``ScheduleGPipe`` (forwards 0..m−1, then backwards 0..m−1).

Bubble: idle (p−1)(f+b+w) per device; fraction (p−1)/(m+p−1) of the makespan.
Memory: every device holds all m activations before its first backward: peak m.
"""

from __future__ import annotations

import numpy as np

from ..core.program import B, F, Program
from ..core.placement import Placement
from ..core.closed_form import ClosedForm, base, uniform_costs
from ..core.registry import ScheduleSpec, register, require


def build(config) -> Program:
    p, m = config.devices, config.microbatches
    per_device = []
    kind = np.concatenate([np.full(m, F), np.full(m, B)]).astype(np.int8)
    mbs = np.concatenate([np.arange(m), np.arange(m)]).astype(np.int32)
    for r in range(p):
        per_device.append((kind, np.full(2 * m, r, np.int32), mbs))
    return Program.from_arrays(per_device, stages=p, microbatches=m, placement=Placement.contiguous(p, 1))


def _validate(config) -> None:
    require(config.stages_per_device == 1, config, "stages_per_device", "use 1, or looped-bfs for v > 1",
            "holds one stage per device")


# Closed forms, from the papers' formulas (independent of the builders above) ----------

def gpipe_closed_form(config) -> ClosedForm:
    p, m, _, f, b, w, a = base(config)
    return ClosedForm(
        schedule="gpipe",
        idle=(p - 1) * (f + b + w),
        ideal=m * (f + b + w),
        peak_activation=tuple(m * a for _ in range(p)),
        bubble_formula="(p−1)(f+b+w)",
        memory_formula="m",
        source="GPipe (arXiv 1811.06965); Ultra-Scale Playbook",
        assumptions="uniform stage costs, comm = 0",
        applies=uniform_costs(config),
    )


register(ScheduleSpec(
    name="gpipe",
    summary="fill-drain: all forwards, then all backwards",
    reference="GPipe (arXiv 1811.06965); torch ScheduleGPipe",
    builder=build,
    aliases=("ScheduleGPipe", "fill-drain", "afab"),
    validate=_validate,
    closed_form=gpipe_closed_form,
    constraints="v = 1",
))
