"""STP, synergistic tensor and pipeline parallelism: braided forward and backward units in a V.

Sources: Qi, Peng, Zhang, Zhu, Li, Ma, "Synergistic Tensor and Pipeline Parallelism" (NeurIPS'25,
arXiv 2510.27257) and the authors' MICLAB-BUPT/STP: ``stp/schedule.py`` (``STPSchedule.generate``,
the order built here op for op, tests/test_stp.py), ``stp/trainer.py`` (how each instruction runs)
and ``stp/utils.py`` (``WeightGradStore``, the FIFO of deferred weight gradients).

One model in 2p stages placed in a V: device r holds stage r (its phase 0) and 2p − 1 − r (phase
1), the last device's two stages meet at the turn and the first device holds the loss. Each
phase numbers its forwards and its backwards from microbatch 0 upwards. The authors' nine steps
on device r, with "X&Y" a braided unit (two passes of which each one's tensor-parallel
all-reduce runs under the other's compute):

1. 2(p − r − 1) × F0;                              6. 2p − r − 2 × (B0; F1&I1);
2. r + 1 × (F0, F1);                               7. r + 1 × (B0, B1);
3. one F0 when r is even, then ⌊(r + 1)/2⌋ × F0&F0 8. p − r × B0, with W, W between them;
   (two consecutive microbatches);                 9. 2r × W.
4. p − r − 1 × (F1&I1, F0&W);
5. 2(m − 3p + 1) + 1 + 2r braided F&B units, phase 1 and phase 0 alternately, the first
   2(m − 3p + 1) + 1 + r with a full backward B, the rest with an I;

The backward of an F&B unit in step 4, in step 5's last r units and in step 6 defers its weight
gradient (the authors' ``enable_zb``, an I here); every W, alone or in an F0&W unit, runs the
oldest one pending (``WeightGradStore.pop``, which the model's forward calls under
``overlap_weight=True``: that code is not in the repository, so one pop per F0&W is read from
the unit's name and from the count, which leaves the queue empty at the step's end as the
trainer asserts). The lone backwards of steps 6 to 8 are full B's.

In ppviz's IR an F&B unit is an F&B pair (one slot, ``DeviceOps.fb``); F&F and F&W units are
their two ops one after the other, the forward first (the authors wait for both inputs of an
F&F unit before it starts; here its second F may start on its own input alone). The braiding is
in their costs: each op of a unit pays its compute and only the part of its tensor-parallel
communication (``stage_costs``' ``f_comm``, ``b_comm``, ``w_comm``) that its partner's compute
cannot cover, and ``comm_sm_share`` of what it hides: the SMs the collectives hold meanwhile
(``ppviz.core.engine.braided`` over :func:`braided_units`; ``Config.from_model`` sets the share
from ``comm_sms``, as for DualPipe's pairs). The authors: "The forward
and backward computations (e.g., Attention and MLP) are interleaved for overlapping computation
and All-Reduce communication in tensor parallelism" (README), and "This compositional structure
enables near-complete elimination of TP-related bubbles" (abstract).

Needs m >= 3p − 1. The authors assert m >= 2p, but below 3p − 1 their step 5 count goes negative
and the order misses passes (p = 4, m = 10: a W pops an empty queue), so ppviz refuses those sizes.

Published figures (the authors' README table, the paper's; T_F, T_B, T_W a chunk's passes, T_AR
a chunk's TP all-reduce, M_a a chunk's activations), as ppviz finds them (tests/test_stp.py):

* PP bubble (p − 1)(T_F + T_AR + T_B − T_W) per device; with chunks of half a stage (T_F = f/2,
  ...) and no TP time, (p − 1)(f + b − w)/2. Exact for f = b = w (p = 4, m = 12, f = b = w = 1:
  idle 1.5, makespan 37.5); not elsewhere (p = 2, m = 5, f = b = 1, w = 0.5: idle 1.25, the
  formula's 0.75), so the closed form claims only that.
* TP bubble (2p + 1)·T_AR: the all-reduces of passes outside any braided unit. The forwards
  outside one number 2p on odd ranks and 2p + 1 on even ones (steps 1 to 3); the paper counts
  the 3p full backwards' all-reduces hidden under their own weight-gradient GEMM (Megatron-LM's
  asynchronous all-reduce, as in its 1F1B-I figure 2m·T_AR), which ppviz's model does for no
  schedule: there each full B outside a unit exposes its ``b_comm``, so device r exposes
  (2p + (r + 1) mod 2)·f_comm + 3p·b_comm. ZB-V exposes the paper's 4m·T_AR.
* Peak activation 3p·M_a, i.e. 3p chunks. ppviz holds an F&B pair's forward chunk from the
  pair's start and frees its backward's at its end (one chunk more, as DualPipe's PP+1), and
  device r >= 2 holds r − 1 deferred weight gradients (w_share each) at its peak: 3p + 1 +
  max(0, r − 1)·w_share chunks, half an activation unit each.
"""

from __future__ import annotations

import functools

import numpy as np

from ..core.closed_form import ClosedForm, base, held
from ..core.placement import Placement
from ..core.program import DeviceOps, Program
from ..core.registry import ScheduleSpec, register, require
from .splice import spliced_builder


def _nine_steps(ops: DeviceOps, r: int, p: int, m: int, units: list[int]) -> None:
    """The authors' nine steps on device r; ``units`` gets the position of the first op of every
    F&F and F&W unit (their F&B units are pairs)."""
    stage = (r, 2 * p - 1 - r)
    forwards = [0, 0]
    backwards = [0, 0]
    pending_w: list[tuple[int, int]] = []

    def f(k):
        ops.f(stage[k], forwards[k])
        forwards[k] += 1

    def b(k):
        ops.b(stage[k], backwards[k])
        backwards[k] += 1

    def w():
        ops.w(*pending_w.pop(0))

    def f_and_b(k, split):
        if split:
            pending_w.append((stage[k], backwards[k]))
        ops.fb(stage[k], forwards[k], stage[k], backwards[k], split=split)
        forwards[k] += 1
        backwards[k] += 1

    def unit(first, second):
        units.append(len(ops))
        first()
        second()

    for _ in range(2 * (p - r - 1)):
        f(0)
    for _ in range(r + 1):
        f(0)
        f(1)
    if r % 2 == 0:
        f(0)
    for _ in range((r + 1) // 2):
        unit(lambda: f(0), lambda: f(0))
    for _ in range(p - r - 1):
        f_and_b(1, split=True)
        unit(lambda: f(0), w)
    steady = 2 * (m - 3 * p + 1) + 1 + 2 * r
    full = 2 * (m - 3 * p + 1) + 1 + r
    for i in range(steady):
        f_and_b(1 if i % 2 == 0 else 0, split=i >= full)
    for _ in range(2 * p - r - 2):
        b(0)
        f_and_b(1, split=True)
    for _ in range(r + 1):
        b(0)
        b(1)
    for i in range(2 * (p - r - 1) + 1):
        if i % 2 == 0:
            b(0)
        else:
            w()
            w()
    for _ in range(2 * r):
        w()


def _build(p: int, m: int) -> tuple[Program, list[list[int]]]:
    """The program, and per device the positions of its F&F and F&W units' first ops."""
    devices: list[DeviceOps] = []
    units: list[list[int]] = []
    for r in range(p):
        devices.append(DeviceOps())
        units.append([])
        _nine_steps(devices[-1], r, p, m, units[-1])
    program = Program.from_device_ops(devices, stages=2 * p, microbatches=m, placement=Placement.v_shape(p, 2))
    return program, units


def build_stp(config) -> Program:
    return _build(config.devices, config.microbatches)[0]


@functools.lru_cache(maxsize=64)
def _opening(p: int) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """Per device, its ops up to the end of step 4 (kind, stage, microbatch, pair: the same at every
    m) and the positions of its F&F and F&W units among them."""
    program, units = _build(p, 3 * p - 1)
    ends = [6 * (p - r - 1) + 3 * (r + 1) for r in range(p)]  # steps 1 to 4
    heads = tuple(np.stack([program.kind[a:a + n], program.stage[a:a + n], program.microbatch[a:a + n],
                            program.pair[a:a + n]]) for a, n in zip(program.offsets[:-1], ends))
    return heads, tuple(np.array(u, dtype=np.int64) for u in units)


def braided_units(program: Program) -> np.ndarray:
    """The flat index of the first op of each braided unit of an STP program (its second op
    follows it): every F&B pair and the F&F and F&W units of steps 3 and 4. Empty when
    ``program`` does not open as STP's order does at its sizes (a user's own order under the
    name), as those units are where the authors' steps put them."""
    p = program.devices
    if program.stages != 2 * p or program.microbatches < 3 * p - 1:
        return np.zeros(0, np.int64)
    heads, units = _opening(p)
    lo, hi = program.offsets[:-1], program.offsets[1:]
    found = []
    for d in range(p):
        a, n = int(lo[d]), heads[d].shape[1]
        if hi[d] - a < n:
            return np.zeros(0, np.int64)
        here = np.stack([program.kind[a:a + n], program.stage[a:a + n], program.microbatch[a:a + n],
                         program.pair[a:a + n]])
        if not np.array_equal(here, heads[d]):
            return np.zeros(0, np.int64)
        found.append(units[d] + a)
    return np.union1d(np.flatnonzero(program.pair), np.concatenate(found))


def _validate(config) -> None:
    p, m = config.devices, config.microbatches
    require(config.stages_per_device == 2, config, "stages_per_device", "use 2 (leave it unset)",
            "places exactly two stages per device in a V")
    require(m >= 3 * p - 1, config, "microbatches", f"use m >= 3p − 1 = {3 * p - 1}",
            f"needs at least 3p − 1 = {3 * p - 1} microbatches (the authors assert m >= 2p, but below 3p − 1 "
            f"their steady step's count 2(m − 3p + 1) + 1 + 2r goes negative and the order misses passes); got {m}")


def stp_closed_form(config) -> ClosedForm:
    """The README's (and paper's) PP bubble (p − 1)(T_F + T_AR + T_B − T_W) with half-size chunks
    and no TP time, and its peak 3p·M_a as ppviz counts memory: an F&B pair holds its forward's
    chunk from its start and frees its backward's at its end (one chunk more, as DualPipe's PP+1),
    and device r >= 2 also holds the w_share of r − 1 deferred weight gradients at its peak.
    The bubble is exact for f = b = w (p = 4, m = 12, f = b = w = 1: idle 1.5, makespan 37.5)."""
    p, m, _, f, b, w, a = base(config)
    return ClosedForm(
        schedule="stp",
        idle=(p - 1) * (f + b - w) / 2,
        ideal=m * (f + b + w),
        peak_activation=tuple((3 * p + 1 + max(0, r - 1) * config.w_share) * a / 2 for r in range(p)),
        bubble_formula="(p − 1)(T_F + T_AR + T_B − T_W) per device, chunks of half a stage and T_AR = 0: "
                       "(p − 1)(f + b − w)/2",
        memory_formula="3p chunks (the paper's 3p·M_a), plus the pair's forward held until its backward ends and "
                       "device r's r − 1 deferred W's (w_share each): (3p + 1 + max(0, r − 1)·w_share)/2 units",
        source="Qi et al. (arXiv 2510.27257); MICLAB-BUPT/STP README, table of schedules",
        assumptions="uniform stage costs, comm = 0, f = b = w",
        **held(config, {"f = b = w": f == b == w}),
    )


register(ScheduleSpec(
    name="stp",
    summary="STP: braided F&B, F&F and F&W units in a V hide tensor-parallel all-reduces under compute",
    reference=("Qi et al., Synergistic Tensor and Pipeline Parallelism (NeurIPS'25, arXiv 2510.27257); "
               "https://github.com/MICLAB-BUPT/STP stp/schedule.py"),
    builder=spliced_builder(build_stp),
    aliases=("STPSchedule", "synergistic", "synergistic-tp-pp", "braided"),
    default_v=2,
    v_min=2,
    v_max=2,
    validate=_validate,
    closed_form=stp_closed_form,
    constraints="v = 2; m >= 3p − 1",
    split_backward=True,
    braided_units=braided_units,
))
