"""Chimera: two model replicas run pipelines in opposite directions, filling each other's bubbles.

Source: Li & Hoefler, "Chimera: Efficiently Training Large-Scale Neural Networks with
Bidirectional Pipelines" (SC'21, arXiv 2107.06925), and the authors' schedule generator
(Shigangli/Chimera, ``chimera_pipeline_rank.py``, ``AutoGeneratePipelineRank`` with two
pipelines). The per-device orders here equal that generator's wherever it builds a feasible
lock-step schedule: on 13 of 24 configurations (D = 2…12, 1–4 units; checked outside the test
suite, which holds the paper's D = 4, N = 4 figure). On the other 11 the generator itself breaks
down: for D = 2 it runs only the first unit's microbatches, and for D >= 6 with three or more
units it books two passes on one device in one step.

Placement: D = p devices (even) hold stage s of the "down" replica on device s and stage s of
the "up" replica on device D−1−s (``Placement.bidirectional``: microbatches < m/2 go down, the
rest up), so every device holds two stages: 2× the parameters of 1F1B (``replicas=2``).

Construction (the generator's lock-step model, one step per forward or backward): a basic unit
is D microbatches, D/2 each way; unit u starts at step 2D·u (direct concatenation: the next
unit's first forward enters when the previous unit's first microbatch has finished). Within a
unit, each direction injects its x-th microbatch at step t0 = 2D·u + 2x; its forward of stage s
runs at t0 + s and its backward of stage s at t0 + 2D − 1 − s. The two directions never need a
device at the same step, and each device runs its passes in step order.

* Bubble (paper, Table 2): ratio (D−2)/(2N+D−2), i.e. D−2 idle steps per device against 2N
  steps of work, in the generator's model where a backward B = b + w takes as long as a
  forward. In general (read off the construction, checked by simulation for every m a
  multiple of p and B >= f): idle (p−2)(B + (m/p − 1)(B − f)) per device — one unit idles
  (p−2)·B, and each further unit of direct concatenation adds (p−2)(B − f); with B = f this is
  the paper's (p−2)·f. The paper's GPipe/1F1B comparison is (D−1)/(N+D−1).
* Memory (paper, Table 2): activations between (D/2+1)·M_a and D·M_a per device, weights
  2·M_θ. In activation units, device r peaks at p/2 + 1 + min(r, p−1−r): p/2 + 1 on the outer
  devices, p on the middle two. Exact, like the bubble, for every m that is a multiple of p
  (checked by simulation).
"""

from __future__ import annotations

import numpy as np

from ..core.closed_form import ClosedForm, base, held
from ..core.placement import Placement
from ..core.program import B, F, Program
from ..core.registry import ScheduleSpec, even_devices_whole_units, no_microbatch_groups, register, require


def chimera_passes(p: int, m: int) -> tuple[np.ndarray, ...]:
    """Every pass as arrays (device, kind, stage, microbatch), each device's passes in the order
    of their steps in the generator's lock-step model (no two share a device and a step)."""
    half = p // 2
    # one entry per (unit, direction, x, stage): 0 the down direction (stage s on device s), 1 up
    unit, direction, x, stage = (a.ravel() for a in np.meshgrid(
        np.arange(m // p), np.arange(2), np.arange(half), np.arange(p), indexing="ij"))
    microbatch = direction * (m // 2) + unit * half + x
    t0 = 2 * p * unit + 2 * x
    device = np.where(direction == 0, stage, p - 1 - stage)
    step = np.concatenate([t0 + stage, t0 + 2 * p - 1 - stage])
    kind = np.repeat(np.array([F, B], np.int8), len(t0))
    device, stage, microbatch = (np.tile(a, 2) for a in (device, stage, microbatch))
    order = np.lexsort((step, device))
    return tuple(a[order] for a in (device, kind, stage, microbatch))


def build_chimera(config) -> Program:
    p, m = config.devices, config.microbatches
    device, kind, stage, microbatch = chimera_passes(p, m)
    cuts = np.searchsorted(device, np.arange(1, p))
    per_device = list(zip(*(np.split(a, cuts) for a in (kind, stage, microbatch))))
    return Program.from_arrays(per_device, stages=p, microbatches=m, placement=Placement.bidirectional(p, m))


def _validate(config) -> None:
    require(config.stages_per_device == 1, config, "stages_per_device",
            "use 1 (each device holds one stage of each of the two replicas)",
            "holds one stage of each replica per device")
    no_microbatch_groups(config)
    even_devices_whole_units(
        config, "runs two pipelines of p/2 microbatches each way per unit, so it needs an even number of devices",
        f"concatenates basic units of p = {config.devices} microbatches (p/2 each way)")


def chimera_closed_form(config) -> ClosedForm:
    p, m, _, f, b, w, a = base(config)
    full, units = b + w, m // p
    return ClosedForm(
        schedule="chimera",
        idle=(p - 2) * (full + (units - 1) * (full - f)),
        ideal=m * (f + b + w),
        peak_activation=tuple((p // 2 + 1 + min(r, p - 1 - r)) * a for r in range(p)),
        bubble_formula="(p−2)(B + (m/p − 1)(B − f)), B = b + w; the paper's (D−2)/(2N+D−2) when B = f",
        memory_formula="p/2 + 1 + min(r, p−1−r) on device r: D/2+1 (outer) to D (middle); 2× parameters",
        source="Li & Hoefler, Chimera (SC'21) Table 2; Shigangli/Chimera generator",
        assumptions="uniform stage costs, comm = 0, a full backward no shorter than a forward (b + w >= f)",
        **held(config, {"b + w >= f": full >= f}),
    )


register(ScheduleSpec(
    name="chimera",
    summary="bidirectional: two model replicas run pipelines in opposite directions",
    reference="Li & Hoefler, Chimera (SC'21, arXiv 2107.06925); Shigangli/Chimera chimera_pipeline_rank.py",
    builder=build_chimera,
    aliases=("Chimera", "chimera-direct"),
    validate=_validate,
    closed_form=chimera_closed_form,
    constraints="v = 1; even p; m a multiple of p",
    replicas=2,
))
