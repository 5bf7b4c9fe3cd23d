"""inference: DeepSpeed's InferenceSchedule and d9d's inference program, forward only.

DeepSpeed (deepspeed/runtime/pipe/schedule.py, InferenceSchedule.steps): rank r's step t, for
t < m + p − 1, runs ForwardPass on microbatch t − r when 0 <= t − r < m, out of buffer
(t − r) mod 2. d9d (LoopedBFSPipelineProgramBuilder, inference_mode=True): rank r lists F(r, 0)
… F(r, m−1). Both are transcribed here as the timetable below.
"""

import numpy as np
import pytest

from ppviz import Config, ProgramError, ScheduleConstraintError, simulate, Program


def run(p, m, **kw):
    return simulate(Config(schedule="inference", devices=p, microbatches=m, **kw))


def deepspeed_timetable(p, m):
    """{rank: [(step, action)]}: DeepSpeed's step t runs microbatch t − r on rank r."""
    return {r: [(t, f"{r}F{t - r}") for t in range(m + p - 1) if 0 <= t - r < m] for r in range(p)}


@pytest.mark.parametrize("p, m", [(1, 1), (2, 3), (4, 6), (8, 4), (5, 16)])
def test_orders_and_lock_step_times_are_deepspeeds(p, m):
    res = run(p, m, f=1.0)
    table = deepspeed_timetable(p, m)
    assert res.program.to_actions() == {r: [a for _, a in rows] for r, rows in table.items()}
    # with unit stage time the simulated starts are DeepSpeed's step numbers
    for r, rows in table.items():
        lo, hi = res.program.offsets[r], res.program.offsets[r + 1]
        assert list(res.ops.start[lo:hi]) == [float(t) for t, _ in rows]


def test_latency_throughput_and_bubble():
    # p = 4 ranks, m = 8 microbatches, stage time f = 2 (b and w unused)
    res = run(4, 8, f=2.0, b=5.0, w=7.0)
    assert res.program.forward_only
    assert res.time_to_first_output == 8.0  # p·f
    assert res.throughput == 0.5  # one output per f in steady state
    assert res.makespan == 22.0  # (m + p − 1)·f
    assert list(res.idle) == [6.0] * 4  # (p − 1)·f: fill and drain of this one batch
    assert res.bubble_fraction == pytest.approx(3 / 11)  # (p−1)/(m+p−1)
    cf = res.closed_form
    assert cf.applies and cf.first_output == 8.0 and cf.throughput == 0.5 and cf.makespan == 22.0
    # nothing is kept for a backward: one forward's working set at a time, whatever m
    assert list(res.peak_activation) == [1.0] * 4 == list(cf.peak_activation)
    assert "first output     8" in res.summary() and "throughput       0.5" in res.summary()


def test_comm_adds_a_hop_latency_per_stage():
    res = run(4, 5, f=1.0, comm=0.5)
    assert res.time_to_first_output == 4 + 3 * 0.5
    assert res.throughput == 1.0
    assert not res.closed_form.applies


def test_one_microbatch_has_no_steady_state():
    res = run(3, 1, f=1.0)
    assert res.time_to_first_output == 3.0 and res.throughput is None and res.closed_form.throughput is None


def test_training_results_have_no_inference_metrics():
    res = simulate(Config(schedule="1f1b", devices=2, microbatches=2))
    assert res.time_to_first_output is None and res.throughput is None


def test_refusals_name_what_works():
    with pytest.raises(ScheduleConstraintError, match=r"stages_per_device=2.*use 1"):
        Config(schedule="inference", devices=4, microbatches=4, stages_per_device=2)
    with pytest.raises(ScheduleConstraintError, match=r"f=0.*f > 0"):
        Config(schedule="inference", devices=4, microbatches=4, f=0.0)


def test_a_forward_only_program_refuses_a_backward_and_a_training_program_still_needs_one():
    ok = Program.from_text("0F0 0F1\n1F0 1F1")
    ok.forward_only = True
    res = simulate(ok, f=1.0)
    assert res.makespan == 3.0 and res.time_to_first_output == 2.0
    bad = Program.from_text("0F0 0F1\n1F0 1B0 1F1")
    bad.forward_only = True
    with pytest.raises(ProgramError, match=r"device 1, position 1 \(1B0\): a forward-only \(inference\) program has "
                                           r"no backward ops"):
        bad.validate()
    # the training rule and its message are unchanged
    with pytest.raises(ProgramError, match=r"stage 0 microbatch 0 is never backwarded: add 0B0"):
        Program.from_text("0F0 0F1 0B1\n1F0 1B0 1F1 1B1").validate()


# DeepSpeed's InferenceSchedule, run: InferenceSchedule(micro_batches=5, stages=4, stage_id=r).steps() from
# deepspeed/runtime/pipe/schedule.py, each step's instructions with their buffer ids (L LoadMicroBatch,
# S SendActivation, R RecvActivation, F ForwardPass; "-" an empty step), steps separated by "|".
DEEPSPEED_STEPS = {
    0: "L0 F0 | L1 S0 F1 | L0 S1 F0 | L1 S0 F1 | L0 S1 F0 | S0 | - | -",
    1: "- | R0 F0 | R1 S0 F1 | R0 S1 F0 | R1 S0 F1 | R0 S1 F0 | S0 | -",
    2: "- | - | R0 F0 | S0 R1 F1 | S1 R0 F0 | S0 R1 F1 | S1 R0 F0 | S0",
    3: "- | - | - | L0 R0 F0 | L1 R1 F1 | L0 R0 F0 | L1 R1 F1 | L0 R0 F0",
}


def test_deepspeeds_steps_and_buffer_alternation():
    p, m = 4, 5
    res = run(p, m, f=1.0)
    for r, text in DEEPSPEED_STEPS.items():
        steps = [step.split() for step in text.split(" | ")]
        forwards = [(t, int(c[1:])) for t, cmds in enumerate(steps) for c in cmds if c[0] == "F"]
        # ppviz runs rank r's k-th forward (microbatch k) at DeepSpeed's step of its k-th ForwardPass
        lo, hi = res.program.offsets[r], res.program.offsets[r + 1]
        assert res.program.to_actions()[r] == [f"{r}F{k}" for k in range(m)]
        assert list(res.ops.start[lo:hi]) == [float(t) for t, _ in forwards]
        # the module's description of the buffers: microbatch i in buffer i mod 2 on every rank, sent from it
        # one step later; even ranks send before they receive, odd ranks receive before they send
        assert [buffer for _, buffer in forwards] == [k % 2 for k in range(m)]
        sends = [int(c[1:]) for cmds in steps for c in cmds if c[0] == "S"]
        assert sends == ([k % 2 for k in range(m)] if r < p - 1 else [])
        for cmds in steps:
            order = [c[0] for c in cmds if c[0] in "SR"]
            if len(order) == 2:
                assert order == (["S", "R"] if r % 2 == 0 else ["R", "S"])
