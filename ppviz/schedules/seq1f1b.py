"""Seq1F1B: 1F1B over sequence segments, with causal order between one sequence's segments.

Source: Sun et al., "Seq1F1B: Efficient Sequence-Level Pipeline Parallelism for Large Language
Model Training" (arXiv 2406.03488, NAACL 2025) and its code (MayDomine/Seq1F1B, Megatron's
``forward_backward_pipelining_without_interleaving`` with ``pipe_sp_splits`` = k): every
microbatch is split along the sequence into k segments, and 1F1B runs on the m·k segments.

The causal rule (the paper's Fig. 1 and its "partially ordered queue"): on every stage the
forward of segment j needs segment j−1's keys and values, so a sequence's segments go forward
in order; the backward of segment j needs the gradient that segments after it send back to its
keys and values, so they go backward in reverse order. The code keeps forwards in a queue per
microbatch and pops the newest segment of the oldest microbatch first (``sp_queue.pop``).

IR: segment j of microbatch i is microbatch index i·k + j, and the program carries
``segments = k`` (``Config.segments``): ``Program.validate`` checks the causal order, the engine
charges each segment 1/k of the microbatch's f, b, w and the memory model 1/k of its
activation. Both causal edges are local to a device, so the engine needs no new dependency.

Rank r runs min(p − r − 1 + k − 1, m·k) warm-up forwards (the code's
``num_warmup_microbatches = p − r + k − 2``), then one forward and one backward alternately, then
the remaining backwards; forwards in index order, backwards microbatch by microbatch with the
segments in reverse. k = 1 is 1F1B.

* Bubble: idle (p−1)(f+b+w)/k per device — 1F1B's fill and drain, in segment-sized steps —
  so the bubble fraction falls from (p−1)/(m+p−1) to (p−1)/(k·m+p−1). Exact for uniform
  segments (the paper's "average" split) and uniform stage costs (checked by simulation); the
  paper's computation-wise split evens out attention's growing cost along
  the sequence, which ppviz's uniform segments already are.
* Memory: rank r holds min(p − r + k − 1, m·k) segments of 1/k unit: device 0 peaks at
  (p + k − 1)/k activation units against 1F1B's p, e.g. 2.5 against 4 for p = 4, k = 2
  (the paper: "half memory footprint"). Exact with uniform costs.
"""

from __future__ import annotations

import numpy as np

from ..core.closed_form import ClosedForm, base, uniform_costs
from ..core.placement import Placement
from ..core.program import Program
from ..core.registry import ScheduleSpec, no_microbatch_groups, register, require
from .one_f_one_b import one_f_one_b_order


def build_seq1f1b(config) -> Program:
    p, m, k = config.devices, config.microbatches, config.segments
    forwards = np.arange(m * k, dtype=np.int32)
    # oldest microbatch first, its newest segment first
    backwards = (np.arange(m)[:, None] * k + np.arange(k - 1, -1, -1)[None, :]).ravel().astype(np.int32)
    per_device = []
    for r in range(p):
        stage = np.full(m * k, r, np.int32)
        per_device.append(one_f_one_b_order(forwards, stage, backwards, stage, min(p - r - 1 + k - 1, m * k)))
    return Program.from_arrays(per_device, stages=p, microbatches=m * k, placement=Placement.contiguous(p, 1),
                               segments=k)


def _validate(config) -> None:
    require(config.stages_per_device == 1, config, "stages_per_device",
            "use 1 (the paper's Seq1F1B holds one stage per device)", "holds one stage per device")
    no_microbatch_groups(config)


def seq1f1b_closed_form(config) -> ClosedForm:
    p, m, _, f, b, w, a = base(config)
    k = config.segments
    return ClosedForm(
        schedule="seq1f1b",
        idle=(p - 1) * (f + b + w) / k,
        ideal=m * (f + b + w),
        peak_activation=tuple(min(p - r + k - 1, m * k) * a / k for r in range(p)),
        bubble_formula="(p−1)(f+b+w)/k, fraction (p−1)/(k·m+p−1)",
        memory_formula="min(p−r+k−1, m·k)/k on rank r: (p+k−1)/k on device 0 (1F1B: p)",
        source="Sun et al., Seq1F1B (arXiv 2406.03488); MayDomine/Seq1F1B schedules.py",
        assumptions="uniform stage costs and segments, comm = 0",
        applies=uniform_costs(config),
    )


register(ScheduleSpec(
    name="seq1f1b",
    summary="1F1B over k sequence segments per microbatch (Config.segments), in causal order",
    reference="Sun et al., Seq1F1B (arXiv 2406.03488); MayDomine/Seq1F1B",
    builder=build_seq1f1b,
    aliases=("Seq1F1B", "sequence-1f1b"),
    validate=_validate,
    closed_form=seq1f1b_closed_form,
    constraints="v = 1; segments k >= 1 (k = 1 is 1F1B)",
    segmented=True,
))
