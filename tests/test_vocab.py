"""Vocabulary Parallelism: the S and T ops in the IR, their dependencies and all-reduce barriers,
and the two 1F1B schedules against the authors' loop (tests/vocab_reference.py)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ppviz
from ppviz import Config, Program, simulate
from ppviz.core.errors import ConfigError, ParseError, ProgramError, ScheduleConstraintError
from ppviz.core.program import B, F, S, T
from tests.vocab_reference import interlaced_passes, interlaced_trace, vocab_1f1b_passes, vocab_1f1b_trace

#: the sizes the authors' loop runs (m >= p + 1 with one barrier, p + 2 with two), up to 3p + 2
GRID = [(name, p, m) for name in ("vocab-1", "vocab-2") for p in range(2, 13)
        for m in range(p + (2 if name == "vocab-1" else 1), 3 * p + 3)]


def test_both_schedules_equal_the_authors_loop_op_for_op_on_a_grid():
    compared = 0
    for name, p, m in GRID:
        program = Config(name, devices=p, microbatches=m).build()
        for r in range(p):
            expected = [f"{r}{kind}{mb}" for kind, mb in vocab_1f1b_passes(r, p, m, fusion=name == "vocab-2")]
            assert program.device_actions(r) == expected, (name, p, m, r)
        compared += 1
    assert compared == len(GRID) == sum(4 * p + 3 for p in range(2, 13)) == 341


#: the interlaced pipeline's: m >= ⌊3p/2⌋ + 1
INTERLACED_GRID = [(p, m) for p in range(2, 13) for m in range(p * 3 // 2 + 1, 3 * p + 3)]


def test_the_interlaced_pipeline_equals_the_authors_loop_op_for_op_on_a_grid():
    for p, m in INTERLACED_GRID:
        program = Config("interlaced", devices=p, microbatches=m).build()
        for r in range(p):
            assert program.device_actions(r) == [f"{r}{kind}{mb}" for kind, mb in interlaced_passes(r, p, m)], (p, m, r)
    assert len(INTERLACED_GRID) == sum(3 * p + 2 - p * 3 // 2 for p in range(2, 13)) == 140


def test_the_interlaced_sizes_refused_are_those_where_its_loop_runs_a_microbatch_past_m():
    for p in range(2, 11):
        for m in range(1, 3 * p):
            traces = [interlaced_trace(r, p, m) for r in range(p)]
            complete = all(sorted(mb for c, mb in trace if c == call) == list(range(m))
                           for trace in traces for call in ("IF", "IB", "F", "LM")) and \
                all(sum(c == "B" for c, _ in trace) == m for trace in traces)
            try:
                Config("interlaced", devices=p, microbatches=m)
                accepted = True
            except ScheduleConstraintError:
                accepted = False
            assert accepted == complete, (p, m)


def test_the_interlaced_output_layer_is_one_blocking_step_on_every_device():
    res = simulate(Config("interlaced", devices=4, microbatches=8, f=1, b=1.5, w=0.5, s=0.25, t=0.5, vocab_comm=0.3,
                          stage_costs={1: {"f": 1.7}}))
    program, start, end = res.program, res.ops.start, res.ops.end
    at = _index(program)
    for mb in range(8):
        s_starts = {start[at[S, r, mb]] for r in range(4)}
        assert len(s_starts) == 1  # the broadcast of the last stage's output blocks every device
        t_ends = max(end[at[T, r, mb]] for r in range(4))
        for r in range(4):
            after = at[T, r, mb] + 1
            if after < program.offsets[r + 1]:
                assert start[after] >= t_ends + 0.3 - 1e-9  # the all-reduce after T blocks the device


def complete(p, m, fusion) -> bool:
    """Whether every rank of the authors' loop calls each pass of each microbatch 0..m−1 once
    (the input embedding's too, which ppviz keeps in stage 0's F and B) and its output-layer
    step for 0..m."""
    for r in range(p):
        trace = vocab_1f1b_trace(r, p, m, fusion)
        for call in ("IF", "IB", "F", "B"):
            if sorted(mb for c, mb in trace if c == call) != list(range(m)):
                return False
        if sorted(mb for c, mb in trace if c == "LM") != list(range(m + 1)):
            return False
    return True


def test_the_sizes_refused_are_exactly_those_where_the_authors_loop_runs_a_microbatch_past_m():
    for name in ("vocab-1", "vocab-2"):
        for p in range(2, 11):
            for m in range(1, 3 * p):
                try:
                    Config(name, devices=p, microbatches=m)
                    accepted = True
                except ScheduleConstraintError as error:
                    accepted = False
                    assert f"use {p + (2 if name == 'vocab-1' else 1)} or more" in str(error)
                assert accepted == complete(p, m, fusion=name == "vocab-2"), (name, p, m)


def test_action_strings_round_trip_and_s_is_not_a_send():
    program = Config("vocab-1", devices=4, microbatches=6).build()
    back = Program.from_actions(program.to_actions())
    back.vocab_barriers = 2  # torch's text has no place for it, as for forward_only
    assert back == program
    assert Program.from_text(program.to_text()).to_actions() == program.to_actions()
    parsed = Program.from_text("0F0 0S0 0T0 0B0")
    assert parsed.kind.tolist() == [F, S, T, B]
    with_send = Program.from_text("0F0 0SEND_F0 0S0 0T0 0B0")
    assert with_send.kind.tolist() == [F, S, T, B] and with_send.comms.kind.tolist() == [0]
    assert ppviz.core.program.action(S, 3, 12) == "3S12" and ppviz.core.program.action(T, 0, 1) == "0T1"


@pytest.mark.parametrize("text, says", [
    ("0F0 0S0 0B0\n1F0 1S0 1T0 1B0", "has no 0T0"),
    ("0F0 0T0 0S0 0B0\n1F0 1S0 1T0 1B0", "T runs before its S"),
    ("0F0 1F0 1S0 0T0 1B0 0B0\n2F0 2S0 2T0 2B0", "write S with stage 0"),
    ("0F0 0B0\n1F0 1S0 1T0 1B0", "has no 0S0"),
])
def test_a_wrong_vocabulary_program_is_refused_naming_the_op(text, says):
    with pytest.raises(ProgramError, match=says):
        Program.from_text(text).validate()


def test_vocab_barriers_other_than_one_or_two_are_refused():
    program = Config("vocab-2", devices=2, microbatches=3).build()
    program.vocab_barriers = 3
    with pytest.raises(ProgramError, match="vocab_barriers=3"):
        program.validate()


def test_sizes_the_authors_refuse_are_refused():
    for name in ("vocab-1", "vocab-2"):
        with pytest.raises(ScheduleConstraintError, match="pipeline parallel size > 1"):
            Config(name, devices=1)
        with pytest.raises(ScheduleConstraintError):
            Config(name, devices=4, stages_per_device=2)
    with pytest.raises(ConfigError, match="vocabulary passes"):
        simulate(Config("vocab-2", devices=4, microbatches=8, topology="dgx-h100", comm_bytes=1e6, time_unit="s"))


def _index(program):
    return {(int(k), int(s), int(mb)): i for i, (k, s, mb) in
            enumerate(zip(program.kind, program.stage, program.microbatch))}


@settings(max_examples=40, deadline=None)
@given(p=st.integers(2, 6), more=st.integers(0, 8), two=st.booleans(),
       costs=st.tuples(*[st.sampled_from([0.25, 0.5, 1.0, 2.0])] * 5), comm=st.sampled_from([0.0, 0.3]),
       barrier=st.sampled_from([0.0, 0.7, 3.0]))
def test_each_op_starts_when_its_device_is_free_and_all_its_inputs_are_ready(p, more, two, costs, comm, barrier):
    f, b, w, s, t = costs
    m = p + 1 + two + more
    name = "vocab-1" if two else "vocab-2"
    res = simulate(Config(name, devices=p, microbatches=m, f=f, b=b, w=w, s=s, t=t, comm=comm, vocab_comm=barrier))
    program, start, end = res.program, res.ops.start, res.ops.end
    at = _index(program)
    last = p - 1
    for i in range(len(program)):
        kind, stage, mb, d = int(program.kind[i]), int(program.stage[i]), int(program.microbatch[i]), \
            int(program.device[i])
        inputs = []  # (op, lag)
        if kind == S:
            inputs.append((at[F, last, mb], comm if d != last else 0.0))
        elif kind == T:
            inputs += [(at[S, r, mb], barrier) for r in range(p)]
        elif kind == B and stage == last:
            inputs += [(at[T if two else S, r, mb], barrier) for r in range(p)]
        elif kind == B:
            inputs.append((at[B, stage + 1, mb], comm))
        elif kind == F and stage > 0:
            inputs.append((at[F, stage - 1, mb], comm))
        lo = int(program.offsets[d])
        free = end[i - 1] if i > lo else 0.0
        ready = max([end[j] + lag for j, lag in inputs], default=0.0)
        assert start[i] == pytest.approx(max(free, ready), abs=1e-9), program.action_at(i)


def test_the_barriers_wait_is_communication_and_lengthens_the_run():
    quick = simulate(Config("vocab-1", devices=4, microbatches=8))
    slow = simulate(Config("vocab-1", devices=4, microbatches=8, vocab_comm=0.5))
    assert slow.makespan > quick.makespan
    assert slow.exposed_comm.sum() > 0 == quick.exposed_comm.sum()


@pytest.mark.parametrize("name, extra", [("vocab-1", 2), ("vocab-2", 1)])
def test_activation_memory_is_p_plus_two_and_p_plus_one_microbatches(name, extra):
    for p in range(2, 9):
        for m in (p + extra, 2 * p + 1, 3 * p + 1):
            res = simulate(Config(name, devices=p, microbatches=m, f=1, b=1.5, w=0.5, s=0.3, t=0.4))
            assert res.peak_activation.tolist() == [min(p - r + extra, m) for r in range(p)]
            assert res.peak_activation[0] == min(p + extra, m)


def test_the_bubble_is_1f1b_s_where_the_code_s_estimates_hold():
    for name in ("vocab-1", "vocab-2"):
        for p in (2, 4, 8):
            for m in (p + 2, 2 * p + 1, 4 * p):
                one = simulate(Config("1f1b", devices=p, microbatches=m, f=1, b=1.5, w=0.5))
                res = simulate(Config(name, devices=p, microbatches=m, f=1, b=1.5, w=0.5, s=0.25, t=0.5))
                assert res.closed_form.applies
                np.testing.assert_allclose(res.idle, one.idle, atol=1e-12)
                assert res.makespan == pytest.approx(one.makespan + m * 0.75)


def test_from_model_moves_the_output_layer_off_the_last_stage_into_s_and_t():
    from ppviz import Hardware, Transformer
    from ppviz.model.costs import Training, item_costs

    model, hardware, p = Transformer.preset("gemma-2-9b"), Hardware.preset("h100-sxm"), 7
    plain = Config.from_model(model, hardware, schedule="1f1b", devices=p, microbatches=4 * p)
    (f, i, w, _), act, _, _, _ = item_costs(model, hardware, Training(pipeline_parallel=p))["L"]
    for name, s, t in (("vocab-2", (f + i) / p, w / p), ("vocab-1", f / p, (i + w) / p)):
        cfg = Config.from_model(model, hardware, schedule=name, devices=p, microbatches=4 * p)
        assert (cfg.s, cfg.t) == pytest.approx((s, t), rel=1e-12)
        last = cfg.stage_costs[p - 1]
        assert last["f"] == pytest.approx(plain.stage_costs[p - 1]["f"] - f, rel=1e-12)
        assert last["b"] == pytest.approx(plain.stage_costs[p - 1]["b"] - i, rel=1e-12)
        assert last["w"] == pytest.approx(plain.stage_costs[p - 1]["w"] - w, rel=1e-12)
        # the stages in between are untouched
        assert cfg.stage_costs[1]["f"] == plain.stage_costs[1]["f"]
        assert cfg.vocab_activation * cfg.activation_bytes == pytest.approx(act / p, rel=1e-12)
        # the vocabulary's parameters (tied: one matrix) are split over the p devices
        held = [cfg.stage_costs[s]["params"] * cfg.activation_bytes for s in range(p)]
        before = [plain.stage_costs[s]["params"] * plain.activation_bytes for s in range(p)]
        per_param = 16  # mixed-precision Adam, no ZeRO
        matrix = model.vocab * model.hidden * per_param
        moved = matrix + model.head_params() * per_param  # the embedding matrix, and the final norm beside it
        assert held[1] - before[1] == pytest.approx(moved / p, rel=1e-12)
        assert sum(held) == pytest.approx(sum(before) - matrix, rel=1e-12)  # the last stage's tied copy is gone


def test_on_a_256k_vocabulary_the_vocabulary_passes_remove_the_last_stage_s_excess():
    from ppviz import Hardware, Transformer

    model, hardware, p, m = Transformer.preset("gemma-2-9b"), Hardware.preset("h100-sxm"), 7, 28
    steps = {name: simulate(Config.from_model(model, hardware, schedule=name, devices=p, microbatches=m))
             for name in ("1f1b", "vocab-1", "vocab-2")}
    one = steps["1f1b"]
    for name in ("vocab-1", "vocab-2"):
        res = steps[name]
        assert res.step_time < 0.7 * one.step_time
        assert res.bubble_fraction < 0.5 * one.bubble_fraction
        # with 1F1B the last stage's output layer makes it 1.9 times as busy as the others; with the
        # passes split, only the input embedding's weight gradient, kept on stage 0, is left: 4.3 %
        assert res.busy.max() / res.busy.min() < 1.05 < 1.4 < one.busy.max() / one.busy.min()
    peak = {name: float((r.peak_activation + r.static_memory).max()) * r.config.activation_bytes
            for name, r in steps.items()}
    assert peak["vocab-2"] < peak["1f1b"]


@pytest.mark.parametrize("name, barriers", [("vocab-1", 2), ("vocab-2", 1)])
def test_a_chrome_trace_of_a_run_reads_back_as_its_program_and_times(name, barriers, tmp_path):
    res = simulate(Config(name, devices=4, microbatches=8, f=1, b=1.5, w=0.5, s=0.25, t=0.5, time_unit="ms"))
    res.to_chrome_trace(tmp_path / "run.json")
    measured = ppviz.load_trace(tmp_path / "run.json")
    # the trace does not say how many barriers: the last device's order does
    assert measured.program == res.program and measured.program.vocab_barriers == barriers
    assert (measured.config.s, measured.config.t) == (0.25, 0.5)
    again = simulate(measured.program, measured.config)
    assert np.array_equal(again.ops.start, res.ops.start) and np.array_equal(again.ops.end, res.ops.end)


def test_a_device_s_gradient_reduction_waits_for_its_last_t():
    # T computes the device's shard of the output layer's weight gradient: on vocab-2's last
    # device the last T runs after the last backward, and the reduction ends no earlier than it
    from ppviz import Step

    p, m = 4, 6
    res = simulate(Config("vocab-2", devices=p, microbatches=m, step=Step(reduce=(0.1,) * p)))
    program, end = res.program, res.ops.end
    at = _index(program)
    last_t, last_b = end[at[T, p - 1, m - 1]], end[at[B, p - 1, m - 1]]
    assert last_t > last_b
    reduce = res.tails.end[(res.tails.device == p - 1) & (res.tails.kind == "reduce")]
    assert reduce.max() >= last_t


@pytest.mark.parametrize("name", ["vocab-1", "vocab-2", "interlaced"])
def test_each_op_keeps_one_dependency_of_its_own_microbatch_for_the_widget(name):
    from ppviz.widgets.wire import encode_timeline

    res = simulate(Config(name, devices=4, microbatches=8, f=1, b=1.5, w=0.5, s=0.25, t=0.5, vocab_comm=0.2))
    dep, mb = res.dependencies, res.program.microbatch
    has = dep >= 0
    assert (mb[dep[has]] == mb[has]).all()
    # every S, T and the last stage's backward depends on some op of its microbatch
    kind, stage = res.program.kind, res.program.stage
    assert has[(kind == S) | (kind == T) | ((kind == B) & (stage == 3))].all()
    assert len(encode_timeline(res)) > 0


def test_plan_says_why_it_does_not_take_a_vocabulary_parallel_schedule():
    from ppviz import Hardware, Transformer

    with pytest.raises(ConfigError, match="'vocab-2' runs vocabulary passes"):
        ppviz.plan(Transformer.preset("llama-3-8b"), Hardware.preset("h100-sxm"), gpus=8, global_batch=64,
                   schedules=["vocab-2", "1f1b"], n_jobs=1, progress=False)


@pytest.mark.parametrize("name", ["vocab-1", "vocab-2", "interlaced"])
def test_links_and_offload_are_refused_naming_what_to_leave_out(name):
    cfg = Config(schedule=name, devices=4, microbatches=8)
    with pytest.raises(ppviz.PpvizError, match="topology=.*does not yet time transfers over links.*leave it out") as refused:
        ppviz.simulate(cfg.replace(topology=ppviz.Link(0.1, bandwidth=1.0), comm=0.0, comm_bytes=1.0))
    assert isinstance(refused.value, ValueError)
    with pytest.raises(ppviz.PpvizError, match="offload=.*does not yet time activation offload.*leave it out"):
        ppviz.simulate(cfg.replace(offload=ppviz.Offload(0.5, link=ppviz.Link(0.0, bandwidth=1.0))))
