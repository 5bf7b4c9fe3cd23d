"""Forward-only inference pipelines: every microbatch flows once through the stages, no backward.

Sources: DeepSpeed's ``InferenceSchedule`` (``deepspeed/runtime/pipe/schedule.py``) and d9d's
inference program (``LoopedBFSPipelineProgramBuilder(num_stages_per_rank=1,
inference_mode=True)``). Both put stage r on rank r and run its forwards in microbatch order:
DeepSpeed's step t runs microbatch t − r on rank r for t < m + p − 1; d9d lists
F(r, 0) … F(r, m−1). Rank r's order is therefore ``rF0 rF1 … rF(m−1)``, and the program is
``forward_only`` (``ppviz.Program``).

DeepSpeed's buffer alternation: a stage needs only two pipe buffers (``num_pipe_buffers() == 2``).
At step t an even rank receives into buffer t mod 2 and sends from (t+1) mod 2, an odd rank the
other way round, so microbatch i always lands in buffer i mod 2 on every rank: while microbatch i
is computed in one buffer, microbatch i−1's output leaves from the other. Even ranks send before
they receive and odd ranks receive before they send, so blocking sends and receives pair up
without deadlock; ppviz models that communication as the ``comm`` latency on each edge.

What the figures mean here (p ranks, m microbatches, stage time f; b and w are unused):

* Time to first output: p·f (one microbatch through every stage) — the latency a request sees.
* Steady-state throughput: 1/f microbatches per unit of time once the pipeline is full (one
  output per stage time), measured from the first output to the last.
* Bubble: the fill and drain of this one batch, idle (p−1)·f per rank, fraction
  (p−1)/(m+p−1) of the makespan (m+p−1)·f. A stream of batches through a full pipeline does
  not pay it; that is why latency and throughput, not the bubble, describe inference.
* Memory (ppviz's model for forward-only programs, ``ppviz.core.memory``): nothing is kept for
  a backward, so each F holds its stage's activation — here the working set of one microbatch
  through 1/p of the model, ``activation`` units — only while it runs: the peak is one unit on
  every rank, whatever m. DeepSpeed's two pipe buffers hold the stage's boundary tensors
  (one microbatch's hidden states each), a small part of that working set that ppviz does not
  count separately; no KV cache is modelled (this is one forward pass, not token generation).

All of it is exact for uniform stage costs and ``comm = 0``; with ``comm`` = c, each of the
p−1 hops adds c to the first output and to the makespan.
"""

from __future__ import annotations

from ..core.closed_form import ClosedForm, base, uniform_costs
from ..core.placement import Placement
from ..core.program import DeviceOps, Program
from ..core.registry import ScheduleSpec, no_microbatch_groups, register, require
from .splice import spliced_builder


def build_inference(config) -> Program:
    p, m = config.devices, config.microbatches
    devices = []
    for rank in range(p):
        ops = DeviceOps()
        for microbatch in range(m):
            ops.f(rank, microbatch)
        devices.append(ops)
    return Program.from_device_ops(devices, stages=p, microbatches=m, placement=Placement.contiguous(p, 1),
                                   forward_only=True)


def _validate(config) -> None:
    require(config.stages_per_device == 1, config, "stages_per_device",
            "use 1 (DeepSpeed's InferenceSchedule and d9d's inference program hold one stage per rank)",
            "holds one stage per rank")
    no_microbatch_groups(config)
    require(config.f > 0, config, "f", "give a forward time f > 0 (b and w are unused)",
            "runs forwards only, so its times all come from f")


def inference_closed_form(config) -> ClosedForm:
    p, m, _, f, _, _, a = base(config)
    return ClosedForm(
        schedule="inference",
        idle=(p - 1) * f,
        ideal=m * f,
        peak_activation=tuple(a for _ in range(p)),
        bubble_formula="(p−1)·f: the fill and drain of one batch",
        memory_formula="1 on every rank (a forward's working set, held while it runs)",
        source="DeepSpeed InferenceSchedule; d9d inference program",
        assumptions="uniform stage costs, comm = 0",
        applies=uniform_costs(config),
        first_output=p * f,
        throughput=1 / f if m > 1 else None,
    )


register(ScheduleSpec(
    name="inference",
    summary="forward-only pipeline: each microbatch once through every stage, no backward",
    reference="DeepSpeed InferenceSchedule (deepspeed/runtime/pipe/schedule.py); d9d inference program",
    builder=spliced_builder(build_inference),
    aliases=("InferenceSchedule", "forward-only", "pipeline-inference"),
    validate=_validate,
    closed_form=inference_closed_form,
    constraints="v = 1; f > 0",
    forward_only=True,
))
