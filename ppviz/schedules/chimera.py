"""Chimera: two model replicas run pipelines in opposite directions, filling each other's bubbles.

Source: Li & Hoefler, "Chimera: Efficiently Training Large-Scale Neural Networks with
Bidirectional Pipelines" (SC'21, arXiv 2107.06925), and the authors' schedule generator
(Shigangli/Chimera, ``chimera_pipeline_rank.py``, ``AutoGeneratePipelineRank`` with two
pipelines). The per-device orders here equal that generator's wherever it builds a feasible
lock-step schedule: on 13 of 24 configurations (D = 2…12, 1–4 units; checked outside the test
suite, which holds the paper's D = 4, N = 4 figure). On the other 11 the generator itself breaks
down: for D = 2 it runs only the first unit's microbatches, and for D >= 6 with three or more
units it books two passes on one device in one step. They also equal, op for op, the training
loop the authors ran for direct concatenation (branch ChimeraBk,
``chimera/chimera_bert/bert/main_with_runtime_direct.py``) on every even p up to 16 with one to
seven units (tests/test_chimera.py transcribes it), D = 2 and many units included.

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

More microbatches than devices (§3.5). Concatenated units leave a gap between units
wherever a backward outlasts a forward (the (p−2)(B − f) per unit above). The paper's answer:

* ``chimera-forward-doubling``: each slot of the basic unit runs two microbatches' forwards
  back to back, so a forward slot (2f) is as long as a backward (B ≈ 2f). The authors' loop
  (Shigangli/Chimera, branch ChimeraBk, ``chimera/chimera_bert/bert/
  main_with_runtime_forward_doubling.py`` and its GPT-2 twin) runs a doubling step of two units
  (2p microbatches) at a time; with m = p it runs the basic unit (this equals ``chimera``), and
  it refuses every other m (``assert acc_steps % 2 == 0``). Per device, with a = p/2 − d on the
  first half of the devices (d − p/2 + 1 on the second), b = p/2 − a, "own" the pipeline whose
  stage 0 side the device is on, each doubling step is: a × (B own after the first step, F own,
  F own), b × (F other, F other, F own, F own), a × (F other, F other, B other),
  (b + p/2) × (B own, B other); after the last step a × B own.
  Doubling keeps twice the forwards in flight: the trade is activation memory against
  recompute (the authors run it with ``--recompute_step``): with ``recompute="full"`` each F
  keeps only its layers' inputs (``recompute_activation``) and each backward costs the
  recompute more, so B grows by f, past 2f, and the gaps come back.
* ``chimera-backward-halving``: the same order on microbatches of half the size and without
  recompute, so each slot's two forwards are one full-size microbatch and each backward is
  half of one: the activations of direct concatenation, no recompute, smaller kernels. ppviz
  times an op per microbatch, so this is forward doubling's program over m half-size
  microbatches: give f, b, w and activation of half a microbatch and twice the count. The
  authors' code has no loop of its own for it.

* Bubble (read off the authors' loop, checked by simulation for every m a multiple of 2p and
  any f, B = b + w): idle per device (p/2 − 1)·max(2f, f + B, 2B − 2f) + (m/2p − 1)(p − 2)·
  (max(0, f − B) + max(0, B − 2f)): the doubling steps join without a gap exactly when
  f <= B <= 2f; at the paper's B = 2f it is (p/2 − 1)·3f whatever m, a bubble ratio of
  (D−2)/(2N+D−2) (direct concatenation: (p−2)(m/p + 1)·f idle). Under recompute the same with
  B + the recompute time.
* Memory: device r peaks at 3p/2 + 1 + min(r, p−1−r) activations (for any m a multiple of 2p
  and any costs): 2p on the middle two devices, twice Chimera's p; under full recompute these
  many inputs (``recompute_activation`` each). With backward halving's half-size microbatches
  that is up to p full-size activations, Chimera's.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..core.closed_form import ClosedForm, base, held
from ..core.placement import Placement
from ..core.program import B, F, Program
from ..core.registry import (
    ScheduleSpec,
    even_devices,
    even_devices_whole_units,
    no_microbatch_groups,
    register,
    require,
)


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


#: why every Chimera takes an even p
EVEN = "runs two pipelines of p/2 microbatches each way per unit, so it needs an even number of devices"


def _one_stage_of_each_replica(config) -> None:
    require(config.stages_per_device == 1, config, "stages_per_device",
            "use 1 (each device holds one stage of each of the two replicas)",
            "holds one stage of each replica per device")
    no_microbatch_groups(config)


def _validate(config) -> None:
    _one_stage_of_each_replica(config)
    even_devices_whole_units(config, EVEN, f"concatenates basic units of p = {config.devices} microbatches (p/2 each way)")


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


#: the tokens of the authors' forward-doubling loop: a forward or backward of the device's own
#: pipeline (the one whose stage 0 side it is on: down on the first half of the devices) or the other's
_F_OWN, _F_OTHER, _B_OWN, _B_OTHER = range(4)


def forward_doubling_passes(p: int, m: int, device: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One device's passes (kind, stage, microbatch) in the order of the authors' loop, for m a
    multiple of 2p: each doubling step's phases, the steps after the first alike, then the tail."""
    half = p // 2
    a = half - device if device < half else device - half + 1
    b = half - a
    rest = [_F_OTHER, _F_OTHER, _F_OWN, _F_OWN] * b + [_F_OTHER, _F_OTHER, _B_OTHER] * a + [_B_OWN, _B_OTHER] * (b + half)
    first, later = [_F_OWN, _F_OWN] * a + rest, [_B_OWN, _F_OWN, _F_OWN] * a + rest
    steps = m // (2 * p)
    token = np.concatenate([first, np.tile(later, steps - 1), [_B_OWN] * a]).astype(np.int8)
    kind = np.where(token <= _F_OTHER, F, B).astype(np.int8)
    down = (token % 2 == 0) == (device < half)  # own tokens are even
    stage = np.where(down, device, p - 1 - device)
    # each pipeline's stage takes its microbatches in order, forwards and backwards alike (FIFO):
    # the k-th of a token's kind is microbatch k of that direction (the up direction's from m/2)
    microbatch = np.empty(len(token), np.int64)
    for t in range(4):
        at = token == t
        microbatch[at] = np.arange(int(at.sum()))
    microbatch += np.where(down, 0, m // 2)
    return kind, stage, microbatch


def build_forward_doubling(config) -> Program:
    p, m = config.devices, config.microbatches
    if m == p:  # the authors' loop runs the basic unit (acc_steps == 1)
        return build_chimera(config)
    per_device = [forward_doubling_passes(p, m, d) for d in range(p)]
    return Program.from_arrays(per_device, stages=p, microbatches=m, placement=Placement.bidirectional(p, m))


def _validate_doubling(config) -> None:
    _one_stage_of_each_replica(config)
    even_devices(config, EVEN)
    p, m = config.devices, config.microbatches
    step = 2 * p
    lower, upper = (p, step) if m < step else (m - m % step, m - m % step + step)
    accepted = f"use {p}" if m < p else f"use {lower} or {upper}"
    require(m == p or m % step == 0, config, "microbatches", f"{accepted} (p, or a multiple of 2p)",
            f"runs two units of p = {p} microbatches per doubling step (or one unit alone), as the authors' "
            f"loop does; got {m}")


#: at m = p the loop runs the basic unit, whose formula (Chimera's) needs a backward no shorter than a forward
ONE_UNIT = "at m = p (one unit) b + w >= f"
ASSUMPTIONS = f"uniform stage costs, comm = 0, {ONE_UNIT}"


def forward_doubling_closed_form(config, name: str = "chimera-forward-doubling") -> ClosedForm:
    p, m, _, f, b, w, a = base(config)
    full = b + w
    if m == p:
        return dataclasses.replace(chimera_closed_form(config), schedule=name, assumptions=ASSUMPTIONS,
                                   **held(config, {ONE_UNIT: full >= f}))
    steps = m // (2 * p)
    idle = (p // 2 - 1) * max(2 * f, f + full, 2 * full - 2 * f) + (steps - 1) * (p - 2) * (
        max(0.0, f - full) + max(0.0, full - 2 * f))
    memory = ("3p/2 + 1 + min(r, p−1−r) on device r, up to 2p: twice Chimera's; 2× parameters"
              if name == "chimera-forward-doubling" else
              "3p/2 + 1 + min(r, p−1−r) half-size activations on device r: up to p full-size ones, Chimera's; "
              "2× parameters")
    return ClosedForm(
        schedule=name,
        idle=idle,
        ideal=m * (f + b + w),
        peak_activation=tuple((3 * p // 2 + 1 + min(r, p - 1 - r)) * a for r in range(p)),
        bubble_formula="(p/2−1)·max(2f, f+B, 2B−2f) + (m/2p − 1)(p−2)(max(0, f−B) + max(0, B−2f)), B = b + w; "
                       "(p/2−1)·3f at the paper's B = 2f",
        memory_formula=memory,
        source="Li & Hoefler, Chimera (SC'21) §3.5; read off Shigangli/Chimera main_with_runtime_forward_doubling.py",
        assumptions=ASSUMPTIONS,
        **held(config, {}),
    )


def backward_halving_closed_form(config) -> ClosedForm:
    return forward_doubling_closed_form(config, "chimera-backward-halving")


FORWARD_DOUBLING = register(ScheduleSpec(
    name="chimera-forward-doubling",
    summary="Chimera for m > p: two forwards per slot close the gaps between units (2× activations, or recompute)",
    reference="Li & Hoefler, Chimera (SC'21, arXiv 2107.06925) §3.5; Shigangli/Chimera (branch ChimeraBk) "
              "chimera/chimera_bert/bert/main_with_runtime_forward_doubling.py",
    builder=build_forward_doubling,
    aliases=("chimera-doubling", "forward-doubling"),
    validate=_validate_doubling,
    closed_form=forward_doubling_closed_form,
    constraints="v = 1; even p; m = p or a multiple of 2p",
    replicas=2,
))

# the same loop, its sizes and two replicas
register(dataclasses.replace(
    FORWARD_DOUBLING,
    name="chimera-backward-halving",
    summary="forward doubling's order on half-size microbatches, no recompute: Chimera's activations",
    reference=FORWARD_DOUBLING.reference + " (its order: the code has no loop of its own)",
    aliases=("chimera-halving", "backward-halving"),
    closed_form=backward_halving_closed_form,
    constraints="v = 1; even p; m = p or a multiple of 2p (m counts half-size microbatches)",
    same_program_as=FORWARD_DOUBLING.name,
))
