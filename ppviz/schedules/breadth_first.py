"""Looped breadth-first: every microbatch through one local stage before the next stage.

Source: Lamy-Poirier, "Breadth-First Pipeline Parallelism" (arXiv 2211.05953); the per-device
order is torch's ``ScheduleLoopedBFS`` op for op. Stages are looped over the devices (stage s on
device s mod p, like interleaved 1F1B). Device r runs the forwards of its stages r, r+p, …
in that order, each for microbatches 0..m−1; then the full backwards of its stages in the
reverse order, each for microbatches m−1..0.

v = 1 is accepted: torch's class builds it (only its visualiser asks for 2 stages per rank) and
it is not GPipe, whose backwards run in microbatch order.

* Bubble: idle (p−1)(f+b+w)/v per device, the same as interleaved 1F1B. With uniform costs
  and comm = 0 it holds exactly when m >= p or v = 1, for any f, b, w: a device's sweep
  through one stage then never waits for the wrap-around from device p−1 to device 0.
  Derived here for torch's order (not taken from the paper) and checked by simulation for
  p in 1..6, v in 1..4: every m in 1..3p+1 at f = b = w, and every f, b, w in
  {¼, ½, 1, 1½, 2, 3} at m = 1, p, 2p+1; below m = p (v >= 2) each wrap-around adds idle time.
* Memory: GPipe's. A device holds all v·m chunk activations (1/v unit each) when its first
  backward starts: peak m activation units on every device.
"""

from __future__ import annotations

import numpy as np

from ..core.program import B, F, Program
from ..core.placement import Placement
from ..core.closed_form import ClosedForm, base, held
from ..core.registry import ScheduleSpec, register, require


def build(config) -> Program:
    p, m, v = config.devices, config.microbatches, config.stages_per_device
    kind = np.repeat(np.array([F, B], dtype=np.int8), v * m)
    forward_mb = np.tile(np.arange(m, dtype=np.int32), v)
    microbatch = np.concatenate([forward_mb, forward_mb[::-1]])
    chunk = np.repeat(np.arange(v, dtype=np.int32), m)
    per_device = []
    for r in range(p):
        stage = chunk * p + r
        per_device.append((kind, np.concatenate([stage, stage[::-1]]), microbatch))
    return Program.from_arrays(per_device, stages=p * v, microbatches=m, placement=Placement.loop(p, v))


def _validate(config) -> None:
    require(config.microbatch_group_size is None, config, "microbatch_group_size",
            "leave it unset (a breadth-first loop runs every microbatch through a stage at once)",
            "has no microbatch groups")


# Closed forms, from the papers' formulas (independent of the builders above) ----------

def looped_bfs_closed_form(config) -> ClosedForm:
    p, m, v, f, b, w, a = base(config)
    return ClosedForm(
        schedule="looped-bfs",
        idle=(p - 1) * (f + b + w) / v,
        ideal=m * (f + b + w),
        peak_activation=tuple(m * a for _ in range(p)),
        bubble_formula="(p−1)(f+b+w)/v",
        memory_formula="m",
        source="derived for torch ScheduleLoopedBFS (Breadth-First PP, arXiv 2211.05953); checked by simulation",
        assumptions="uniform stage costs, comm = 0, m >= p or v = 1",
        **held(config, {"m >= p or v = 1": m >= p or v == 1}),
    )


register(ScheduleSpec(
    name="looped-bfs",
    summary="breadth-first loop: all microbatches through a stage, then the next local stage",
    reference="Breadth-First Pipeline Parallelism (arXiv 2211.05953); torch ScheduleLoopedBFS",
    builder=build,
    aliases=("LoopedBFS", "ScheduleLoopedBFS", "bfs", "breadth-first"),
    default_v=2,
    v_min=1,
    v_max=None,
    validate=_validate,
    closed_form=looped_bfs_closed_form,
    constraints="any v (default 2); no microbatch groups",
))
