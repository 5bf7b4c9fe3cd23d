"""Zero-bubble schedules with the backward split into I (inputs) and W (weights).

Source: Qi et al., "Zero Bubble Pipeline Parallelism" (arXiv 2401.10241), handcrafted
schedules (§2, Figure 3, Table 2), and the authors' generator of them,
``get_hand_schedule(p, n, f, b, w, c, warmup_c)`` in sail-sg/zero-bubble-pipeline-parallelism
``megatron/core/pipeline_parallel/efficiency.py`` (``warmup_c`` = 1: ZB-H1, 2: ZB-H2);
torch ``ScheduleInterleavedZeroBubble`` (ZB1P) for the looped version.

All three share one shape. Rank r runs ``warmup`` forwards; then, for each of its backwards
in order: the next forward (while any is left), the I, and — once ``delay`` I's have run — the
W of the I ``delay`` places back; then the W's still owed. Delaying W's keeps their
activations alive (memory) and lets them fill the slots where 1F1B waits (bubble).

``zb-h1`` — warmup min(p−r−1, m), delay r (torch's ``num_1f1b_microbatches = rank``).

* Bubble (ZB notation, b = time of I): idle (p−1)(f + b − w) per device; one third of
  1F1B's when f = b = w. This holds exactly when m >= p and w <= min(f, b) (checked by
  simulation over every cost triple of {¼, ½, 1, 1½, 2, 3}³ and p in 2..6): a W longer than
  an F or an I no longer fits the slots this fixed order leaves for it.
* Memory: the same as 1F1B, p activations on device 0. Rank r holds p−r activations
  waiting for I and r waiting for W, which keep ``w_share`` of theirs: (p−r) + r·w_share.

``zb-h2`` — warmup min(2(p−r−1), m), delay 2r: the authors' ``warmup_c = 2`` schedule, op for
op (their Figure 3, bottom: rank 0 runs F1…F7 B1 W1 F8 B2 W2 … for p = 4, m = 8; the last rank
F1 B1 … F7 B7 W1 F8 B8 W2 … W8). Their generator asserts m >= 2p; below 2p−1 microbatches the
warmup is capped at m, which keeps the order valid (and deadlock-free) but not zero-bubble.
(The alias ZB2P is the name the paper's experiments and the sail-sg README give the
automatically searched schedule under a 2p·M_B memory limit; its handcrafted counterpart is
this one.)

* Bubble: the paper's (p−1)(f + b − 2w), zero when f = b = w, is measured per stage, from
  the stage's own first F to its last op (the authors' generator does exactly that for
  ``warmup_c = 2``): with the optimizer synchronisation bypassed (paper §4) iterations
  overlap and the stages form a parallelogram. By simulation this per-stage figure is exact
  when m >= 2p−1, w <= f and 2w <= f + b (it then reproduces the paper's Table 5).
  ppviz times one iteration from t = 0: the last device starts (p−1)·f late and then runs
  without a gap, device 0 starts at once and carries the per-stage bubble, so every device
  idles (p−1)·max(f, f + b − 2w) — exact when m >= 2p−1 and w <= f (simulated for p <= 7,
  m up to 3p, f, b, w in {¼, ½, 1, 1½, 2, 3}). For f = b = w that is (p−1)·f, ZB-H1's
  single-iteration figure: the gain shows only when iterations overlap. torch PR #130210
  warns that ZB2P "might not be zero bubble when pp_group_size > 4"; that concerns torch's
  looped attempt (PR #130752: "when num_local_stages exceed 4"). This single-stage ZB-H2
  stays a gap-free parallelogram at f = b = w for every p tested (2–6, 8, 12, 16).
* Memory: rank r holds 2p−2r−1 activations waiting for I and 2r waiting for W (paper §2.3):
  (2p−2r−1) + 2r·w_share units, 2p−1 on device 0; exact for m >= 2p−1.

``interleaved-zb`` — torch's ``ScheduleInterleavedZeroBubble`` op for op: Megatron's schedule
table over v looped stages (groups of g = torch's microbatches per round, which is p when p
divides m), warmup min((v−1)·g + p−r−1, m·v), delay r. At v = 1 it is zb-h1.

* Bubble: not published for v > 1. ZB-H1's idle over v chunks, (p−1)(f + b − w)/v, is exact
  exactly when m >= p and w <= min(f, b) (simulated for p in 2..6, v in 2..4, m in 1..3p,
  f, b, w in {¼, ½, 1, 1½, 2, 3}, and every group size Megatron accepts at p = 4, m = 12).
* Memory: no closed form here; rank r runs (v−1)·g + p−r−1 forwards before its first I
  (interleaved 1F1B's warmup with factor 1 instead of 2) and then holds r W's back.
"""

from __future__ import annotations

from ..core.program import DeviceOps, Program
from ..core.placement import Placement
from .one_f_one_b import interleaved_warmup, schedule_table, validate_group_size
from ..core.closed_form import ClosedForm, base, held
from ..core.registry import ScheduleSpec, one_stage_per_device, register
from .splice import group_period, spliced_builder


def split_backward_order(forwards, backwards, warmup: int, delay: int) -> DeviceOps:
    """One device's zero-bubble order from its forwards and backwards, as (stage, microbatch) lists.

    ``warmup`` forwards; then per backward k: the next forward if any, I_k, and W_(k−delay)
    once k >= delay; then the remaining W's.
    """
    ops = DeviceOps()
    for stage, mb in forwards[:warmup]:
        ops.f(stage, mb)
    next_f = warmup
    for k, (stage, mb) in enumerate(backwards):
        if next_f < len(forwards):
            ops.f(*forwards[next_f])
            next_f += 1
        ops.i(stage, mb)
        if k >= delay:
            ops.w(*backwards[k - delay])
    for stage, mb in backwards[max(len(backwards) - delay, 0):]:
        ops.w(stage, mb)
    return ops


def _single_stage(config, warmup_factor: int) -> Program:
    p, m = config.devices, config.microbatches
    devices = []
    for r in range(p):
        order = [(r, mb) for mb in range(m)]
        warmup = min(warmup_factor * (p - 1 - r), m)
        devices.append(split_backward_order(order, order, warmup, warmup_factor * r))
    return Program.from_device_ops(devices, stages=p, microbatches=m, placement=Placement.contiguous(p, 1))


def build_zb_h1(config) -> Program:
    return _single_stage(config, 1)


def build_zb_h2(config) -> Program:
    return _single_stage(config, 2)


def build_interleaved_zb(config) -> Program:
    p, m, v = config.devices, config.microbatches, config.stages_per_device
    g = config.group_size
    table_mb, table_chunk = schedule_table(m, v, g)
    mbs = table_mb.tolist()
    devices = []
    for r in range(p):
        forwards = [(c * p + r, mb) for c, mb in zip(table_chunk.tolist(), mbs)]
        backwards = [((v - 1 - c) * p + r, mb) for c, mb in zip(table_chunk.tolist(), mbs)]
        warmup = interleaved_warmup(r, p, v, m, g, factor=1)
        devices.append(split_backward_order(forwards, backwards, warmup, r))
    return Program.from_device_ops(devices, stages=p * v, microbatches=m, placement=Placement.loop(p, v))


# Closed forms, from the papers' formulas (independent of the builders above) ----------

def zb_h1_closed_form(config) -> ClosedForm:
    p, m, _, f, b, w, a = base(config)
    s = config.w_share
    return ClosedForm(
        schedule="zb-h1",
        idle=(p - 1) * (f + b - w),
        ideal=m * (f + b + w),
        peak_activation=tuple(((p - r) + r * s) * a for r in range(p)) if m >= p else None,
        bubble_formula="(p−1)(f+b−w)",
        memory_formula="p on rank 0; (p−r) + r·w_share on rank r",
        source="Zero Bubble PP (arXiv 2401.10241) §3, ZB-H1",
        assumptions="uniform stage costs, comm = 0, m >= p, w <= min(f, b)",
        **held(config, {"m >= p": m >= p, "w <= min(f, b)": w <= min(f, b)}),
    )


def zb_h2_closed_form(config) -> ClosedForm:
    p, m, _, f, b, w, a = base(config)
    s = config.w_share
    full = m >= 2 * p - 1
    return ClosedForm(
        schedule="zb-h2",
        idle=(p - 1) * max(f, f + b - 2 * w),
        ideal=m * (f + b + w),
        peak_activation=tuple(((2 * p - 2 * r - 1) + 2 * r * s) * a for r in range(p)) if full else None,
        bubble_formula="(p−1)·max(f, f+b−2w)",
        memory_formula="(2p−2r−1) + 2r·w_share on rank r; 2p−1 on rank 0",
        source=("Zero Bubble PP (arXiv 2401.10241) §2.2–2.3, ZB-H2. Table 2's (p−1)(f+b−2w) is per stage, from "
                "each stage's own first F; timed from t = 0 the last stage's (p−1)·f fill is added where larger"),
        assumptions="uniform stage costs, comm = 0, m >= 2p−1, w <= f",
        **held(config, {"m >= 2p−1": full, "w <= f": w <= f}),
    )


def interleaved_zb_closed_form(config) -> ClosedForm:
    p, m, v, f, b, w, _ = base(config)
    return ClosedForm(
        schedule="interleaved-zb",
        idle=(p - 1) * (f + b - w) / v,
        ideal=m * (f + b + w),
        peak_activation=None,
        bubble_formula="(p−1)(f+b−w)/v",
        memory_formula=None,
        source="ZB-H1's (p−1)(f+b−w) (arXiv 2401.10241) over v chunks; not published for v > 1, checked by simulation",
        assumptions="uniform stage costs, comm = 0, m >= p, w <= min(f, b)",
        **held(config, {"m >= p": m >= p, "w <= min(f, b)": w <= min(f, b)}),
    )


register(ScheduleSpec(
    name="zb-h1",
    summary="zero bubble, 1F1B memory: W's delayed to fill the drain bubble",
    reference="Zero Bubble PP (arXiv 2401.10241) ZB-H1; torch ScheduleInterleavedZeroBubble rule",
    builder=spliced_builder(build_zb_h1),
    aliases=("ZB1P", "zbh1", "zero-bubble-h1"),
    validate=one_stage_per_device("interleaved-zb / zb-v for more stages per device"),
    closed_form=zb_h1_closed_form,
    constraints="v = 1",
    split_backward=True,
))

register(ScheduleSpec(
    name="zb-h2",
    summary="zero bubble at (2p−1) activations: a longer warmup, W's moved to the tail",
    reference="Zero Bubble PP (arXiv 2401.10241) ZB-H2, the authors' get_hand_schedule(warmup_c=2)",
    builder=spliced_builder(build_zb_h2),
    aliases=("ZB2P", "zbh2", "zero-bubble-h2"),
    validate=one_stage_per_device("interleaved-zb / zb-v for more stages per device"),
    closed_form=zb_h2_closed_form,
    constraints="v = 1; m >= 2p−1 for its zero-bubble shape",
    split_backward=True,
))

register(ScheduleSpec(
    name="interleaved-zb",
    summary="ZB1P over v looped stages per device: interleaved 1F1B with W's delayed",
    reference="torch ScheduleInterleavedZeroBubble (Zero Bubble PP, arXiv 2401.10241)",
    builder=spliced_builder(build_interleaved_zb, group_period),
    aliases=("InterleavedZeroBubble", "ScheduleInterleavedZeroBubble", "ZB1P-interleaved",
             "interleaved-zb1p", "interleaved-zero-bubble"),
    default_v=2,
    v_min=1,
    v_max=None,
    validate=validate_group_size,
    closed_form=interleaved_zb_closed_form,
    constraints="any v (default 2; v = 1 is zb-h1); group size g as interleaved-1f1b",
    split_backward=True,
))
