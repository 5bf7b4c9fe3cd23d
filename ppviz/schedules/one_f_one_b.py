"""1F1B and interleaved 1F1B, built from Megatron's schedule table.

Sources: PipeDream-Flush (Narayanan et al., arXiv 2006.09503) and Megatron-LM's
``forward_backward_pipelining_without_interleaving`` for 1F1B; Megatron's virtual pipeline
(arXiv 2104.04473, ``forward_backward_pipelining_with_interleaving``,
``get_schedule_table``) for interleaved. Per-device orders equal torch's ``Schedule1F1B`` (as it
executes: p−r warmup forwards on rank r, then backward/forward) and ``ScheduleInterleaved1F1B``.

Each device walks the table of (microbatch, chunk) pairs: forwards in table order, backwards
in the same order with chunk v−1−c. Rank r first runs ``warmup`` forwards, then alternates
one forward and one backward, then drains the remaining backwards.

* 1F1B: warmup = min(p−r−1, m). Bubble: idle (p−1)(f+b+w) per device, fraction
  (p−1)/(m+p−1). Memory: rank r holds min(p−r, m) activations; peak p on device 0.
* Interleaved (v chunks, group size g = ``microbatch_group_size_per_vp_stage``):
  warmup = min(2(p−r−1) + (v−1)·g, m·v). Bubble: idle (p−1)(f+b+w)/v per device,
  ratio to ideal (p−1)/(v·m). Memory: rank r peaks at min(warmup+1, m·v) chunks, i.e.
  p + (p−1)/v activation units on device 0 when g = p.

Group size: Megatron accepts p <= g <= m unless 0 < m mod g < p. torch instead uses
g = m // max(1, m // p) and requires m mod g = 0; that also covers m < p (g = m). ppviz's
default is g = p when Megatron accepts it and torch's value otherwise, so every (p, m) torch
accepts builds, and equals Megatron whenever Megatron accepts the default.

F&B-overlap variants (Victarry/PP-Schedule-Visualization ``src/strategies.py``,
``generate_1f1b_overlap_schedule`` and ``generate_1f1b_interleave_overlap_schedule``): the same
table and order, but each steady-state forward runs together with its backward as one F&B slot
(DualPipe's trick: one op's compute hides the other's communication). The warmup has one more
forward so that the pair's forward never waits for the backward it runs with:

* 1f1b-overlap: warmup min(2(p−r−1) + 1, m) — twice 1F1B's plus one, because device r's
  slot holding backward k needs device r+1's slot holding backward k, whose forward device r
  must already have run;
* interleaved-1f1b-overlap: warmup min(2(p−r−1) + (v−1)·g + 1, m·v), Megatron's plus one.

The pair costs ``Config.fb`` per 1/p of the model (None: f+b+w, no gain), written FB below.
As the slot exists to hide communication behind compute, with transfers (``Config.topology``)
both variants default to ``p2p="overlapped"``.

* Bubble: Victarry's ``formula.py`` (``overlap_1f1b_execution_time_by_formula``) gives the
  makespan (p−1)(f+b+w)/v + n(f+b+w)/v + (m·v − n)·FB/v with n = p(v−1) + 1, the last
  device's forwards (and backwards) outside F&B slots; 1f1b-overlap is its v = 1 case. With FB = f+b+w it is
  interleaved 1F1B's idle (p−1)(f+b+w)/v. It holds, by simulation, when FB >= max(f, b+w)
  (a slot no shorter than either of its ops) and, for v >= 2, p divides m; see
  ``overlap_1f1b_closed_form`` below.
* Memory: a slot's forward allocates before its backward frees, so rank r peaks at
  min(warmup_r + 1, m·v) chunks, i.e. min(warmup_r + 1, m·v)/v units: min(2(p−r), m) for
  1f1b-overlap, 2p on device 0 for m >= 2p (twice 1F1B's p).
"""

from __future__ import annotations

import numpy as np

from ..core.program import B, F, DeviceOps, Program
from ..core.placement import Placement
from ..core.errors import ScheduleConstraintError
from ..core.closed_form import ClosedForm, base, held, uniform_costs
from ..core.registry import ScheduleSpec, one_stage_per_device, register, require
from .splice import group_period, spliced_builder


def schedule_table(m: int, v: int, g: int) -> tuple[np.ndarray, np.ndarray]:
    """Megatron's ``get_schedule_table``: (microbatch, chunk) in forward order.

    Groups of g microbatches run through chunk 0, then chunk 1, …; the last group takes
    whatever remains. Example (m=5, v=2, g=3): microbatch 0 1 2 0 1 2 3 4 3 4, chunk 0 0 0 1 1 1 0 0 1 1.
    """
    mbs, chunks = [], []
    for first in range(0, m, g):
        last = m if first + g >= m else first + g
        group = np.arange(first, last)
        for c in range(v):
            mbs.append(group)
            chunks.append(np.full(len(group), c))
    return np.concatenate(mbs).astype(np.int32), np.concatenate(chunks).astype(np.int32)


def one_f_one_b_order(f_mb, f_stage, b_mb, b_stage, warmup: int):
    """Warmup forwards, then one forward and one backward alternately, then the remaining backwards."""
    n = len(f_mb)
    steady = n - warmup
    kind = np.concatenate([np.full(warmup, F), np.tile(np.array([F, B]), steady), np.full(warmup, B)]).astype(np.int8)

    def weave(f_vals, b_vals):
        middle = np.empty(2 * steady, dtype=np.int32)
        middle[0::2] = f_vals[warmup:]
        middle[1::2] = b_vals[:steady]
        return np.concatenate([f_vals[:warmup], middle, b_vals[steady:]])

    return kind, weave(f_stage, b_stage), weave(f_mb, b_mb)


def build_1f1b(config) -> Program:
    p, m = config.devices, config.microbatches
    mb = np.arange(m, dtype=np.int32)
    per_device = []
    for r in range(p):
        stage = np.full(m, r, np.int32)
        per_device.append(one_f_one_b_order(mb, stage, mb, stage, min(p - r - 1, m)))
    return Program.from_arrays(per_device, stages=p, microbatches=m, placement=Placement.contiguous(p, 1))


def interleaved_warmup(rank: int, p: int, v: int, m: int, g: int, factor: int = 2) -> int:
    """Megatron's / torch's warmup forwards on ``rank``: (v−1)·g + factor·(p−1−rank), capped at m·v."""
    return min((v - 1) * g + factor * (p - 1 - rank), m * v)


def build_interleaved(config) -> Program:
    p, m, v = config.devices, config.microbatches, config.stages_per_device
    g = config.group_size
    table_mb, table_chunk = schedule_table(m, v, g)
    per_device = []
    for r in range(p):
        f_stage = table_chunk * p + r
        b_stage = (v - 1 - table_chunk) * p + r
        per_device.append(one_f_one_b_order(table_mb, f_stage, table_mb, b_stage, interleaved_warmup(r, p, v, m, g)))
    return Program.from_arrays(per_device, stages=p * v, microbatches=m, placement=Placement.loop(p, v))


def validate_group_size(config) -> None:
    p, m = config.devices, config.microbatches
    g = config.group_size
    if config.microbatch_group_size is None:
        if not 0 < m % g < p:
            return
        ok = [k for k in range(max(1, m - p), m + p + 1) if k % max(1, k // p) == 0]
        near = sorted(ok, key=lambda k: (abs(k - m), k))[:2]
        raise ScheduleConstraintError(
            "microbatches", m,
            f"use m = {' or '.join(map(str, sorted(near)))}, or set microbatch_group_size",
            reason=(f"{config.schedule} with p={p} needs m to be a multiple of p (Megatron, g = p) or of the "
                    f"number of rounds m // p (torch); both refuse m={m}"))
    accepted = (f"give p <= g <= m (Megatron: {p} <= g <= {m}) without 0 < m mod g < p, "
                f"or leave it unset for the default")
    require(g <= m, config, "microbatch_group_size", accepted, "needs the group size to be at most m")
    require(g >= p or g == m, config, "microbatch_group_size", accepted,
            "deadlocks with a group smaller than p (the first backward would wait for a forward queued behind it)")
    require(not (0 < m % g < p), config, "microbatch_group_size", accepted,
            f"would leave a last group of {m % g} < p microbatches, which Megatron refuses (dependency bubbles)")


def several_stages_per_device(single: str):
    """A spec's ``validate`` for interleaved schedules; ``single`` is the v = 1 schedule to suggest."""
    def validate(config) -> None:
        require(config.stages_per_device >= 2, config, "stages_per_device", f"use v >= 2, or {single} for v = 1",
                "interleaves several stages per device")
        validate_group_size(config)

    return validate


# Closed forms, from the papers' formulas (independent of the builders above) ----------

def one_f_one_b_closed_form(config) -> ClosedForm:
    p, m, _, f, b, w, a = base(config)
    return ClosedForm(
        schedule="1f1b",
        idle=(p - 1) * (f + b + w),
        ideal=m * (f + b + w),
        peak_activation=tuple(min(p - r, m) * a for r in range(p)),
        bubble_formula="(p−1)(f+b+w)",
        memory_formula="min(p−r, m) on rank r",
        source="PipeDream-Flush (arXiv 2006.09503); torch Schedule1F1B warmup",
        assumptions="uniform stage costs, comm = 0",
        applies=uniform_costs(config),
    )


def interleaved_closed_form(config) -> ClosedForm:
    """Megatron's virtual pipeline (arXiv 2104.04473 §2.2): the bubble shrinks by v to
    (p−1)(f+b+w)/v. Rank r runs (p−r−1)·2 + (v−1)·g warm-up forwards (Megatron's
    ``num_warmup_microbatches``, capped at m·v chunks) and one more before its first backward
    frees anything, so it holds min(2(p−r−1) + (v−1)g + 1, m·v) chunks of 1/v at its peak."""
    p, m, v, f, b, w, a = base(config)
    g = config.group_size
    peaks = tuple(min(2 * (p - r - 1) + (v - 1) * g + 1, m * v) * a / v for r in range(p))
    return ClosedForm(
        schedule="interleaved-1f1b",
        idle=(p - 1) * (f + b + w) / v,
        ideal=m * (f + b + w),
        peak_activation=peaks,
        bubble_formula="(p−1)(f+b+w)/v",
        memory_formula="min(2(p−r−1) + (v−1)g + 1, m·v)/v on rank r; p + (p−1)/v on rank 0 with g = p",
        source="Megatron-LM (arXiv 2104.04473); Ultra-Scale Playbook",
        assumptions="uniform stage costs, comm = 0, m a multiple of p, g = p",
        **held(config, {"m a multiple of p": m % p == 0, "g = p": g == p}),
    )


def overlap_1f1b_closed_form(config) -> ClosedForm:
    """Victarry's overlap variants (PP-Schedule-Visualization ``formula.py``): rank r runs
    k_r = min(2(p−r−1) + (v−1)g + 1, m·v) forwards alone (one more than interleaved 1F1B's
    warm-up: its first steady forward would otherwise pair with a backward not yet possible),
    then pairs each further forward with a backward."""
    p, m, v, f, b, w, a = base(config)
    g = config.group_size
    full = f + b + w
    pair = full if config.fb is None else config.fb
    warmups = [min(2 * (p - r - 1) + (v - 1) * g + 1, m * v) for r in range(p)]
    busiest = max(k * full + (m * v - k) * pair for k in warmups) / v
    outside = p * (v - 1) + 1
    makespan = ((p - 1) * full + outside * full + (m * v - outside) * pair) / v
    return ClosedForm(
        schedule=config.schedule,
        idle=makespan - busiest,
        ideal=busiest,
        peak_activation=tuple(min(k + 1, m * v) * a / v for k in warmups),
        bubble_formula="(p−1)(f+b+w)/v + (n−k)(f+b+w−fb)/v, n = p(v−1)+1, k = its forwards outside F&B slots",
        memory_formula="min(warmup_r + 1, m·v)/v on rank r; warmup_r = min(2(p−r−1) + (v−1)g + 1, m·v)",
        source="Victarry/PP-Schedule-Visualization formula.py, overlap_1f1b_execution_time_by_formula",
        assumptions=("uniform stage costs, comm = 0, fb >= max(f, b+w), m a multiple of p and g = p when v > 1; "
                     "the makespan holds there for any such fb, but idle is the busiest device's and matches "
                     "every device only when fb = f+b+w (no overlap gain)"),
        **held(config, {"fb >= max(f, b+w)": pair >= max(f, b + w),
                        "m a multiple of p and g = p when v > 1": v == 1 or (m % p == 0 and g == p),
                        "fb = f+b+w": pair == full}),
    )


register(ScheduleSpec(
    name="1f1b",
    summary="one forward, one backward: PipeDream-Flush / Megatron non-interleaved",
    reference="PipeDream-Flush (arXiv 2006.09503); Megatron-LM; torch Schedule1F1B",
    builder=build_1f1b,
    aliases=("Schedule1F1B", "pipedream-flush", "oneFoneB"),
    validate=one_stage_per_device("interleaved-1f1b for v >= 2"),
    closed_form=one_f_one_b_closed_form,
    constraints="v = 1",
))

register(ScheduleSpec(
    name="interleaved-1f1b",
    summary="1F1B over v model chunks per device (virtual pipeline)",
    reference="Megatron-LM virtual pipeline (arXiv 2104.04473); torch ScheduleInterleaved1F1B",
    builder=build_interleaved,
    aliases=("ScheduleInterleaved1F1B", "interleaved", "vpp", "virtual-pipeline"),
    default_v=2,
    v_min=2,
    v_max=None,
    validate=several_stages_per_device("1f1b"),
    closed_form=interleaved_closed_form,
    constraints="v >= 2; group size g: p <= g <= m and not 0 < m mod g < p (default p, or torch's m // (m // p))",
))


def overlap_order(forwards, backwards, warmup: int) -> DeviceOps:
    """``warmup`` forwards, then each remaining forward paired with the next backward, then the rest."""
    ops = DeviceOps()
    for stage, mb in forwards[:warmup]:
        ops.f(stage, mb)
    steady = len(forwards) - warmup
    for (fs, fm), (bs, bm) in zip(forwards[warmup:], backwards[:steady]):
        ops.fb(fs, fm, bs, bm)
    for stage, mb in backwards[steady:]:
        ops.b(stage, mb)
    return ops


def build_overlap(config) -> Program:
    """Both overlap variants: at v = 1 the table is microbatch order and (v−1)·g vanishes."""
    p, m, v = config.devices, config.microbatches, config.stages_per_device
    g = config.group_size
    table_mb, table_chunk = schedule_table(m, v, g)
    mbs, chunks = table_mb.tolist(), table_chunk.tolist()
    devices = []
    for r in range(p):
        forwards = [(c * p + r, mb) for c, mb in zip(chunks, mbs)]
        backwards = [((v - 1 - c) * p + r, mb) for c, mb in zip(chunks, mbs)]
        warmup = min(interleaved_warmup(r, p, v, m, g) + 1, m * v)
        devices.append(overlap_order(forwards, backwards, warmup))
    placement = Placement.contiguous(p, 1) if v == 1 else Placement.loop(p, v)
    return Program.from_device_ops(devices, stages=p * v, microbatches=m, placement=placement)


register(ScheduleSpec(
    name="1f1b-overlap",
    summary="1F1B whose steady state runs each forward and backward as one overlapped F&B slot",
    reference="Victarry/PP-Schedule-Visualization 1f1b_overlap (DualPipe-style F&B overlap)",
    builder=spliced_builder(build_overlap, group_period),
    aliases=("1F1BOverlap", "overlap-1f1b", "1f1b-fb-overlap"),
    validate=one_stage_per_device("interleaved-1f1b-overlap for v >= 2"),
    closed_form=overlap_1f1b_closed_form,
    constraints="v = 1",
    overlapped_p2p=True,
))

register(ScheduleSpec(
    name="interleaved-1f1b-overlap",
    summary="interleaved 1F1B with overlapped F&B slots in the steady state",
    reference="Victarry/PP-Schedule-Visualization 1f1b_interleave_overlap; Megatron-LM virtual pipeline",
    builder=spliced_builder(build_overlap, group_period),
    aliases=("1f1b-interleave-overlap", "interleave-overlap", "interleaved-overlap", "vpp-overlap"),
    default_v=2,
    v_min=2,
    v_max=None,
    validate=several_stages_per_device("1f1b-overlap"),
    closed_form=overlap_1f1b_closed_form,
    constraints="v >= 2; group size g as interleaved-1f1b",
    overlapped_p2p=True,
))
