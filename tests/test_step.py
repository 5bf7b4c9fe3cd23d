"""The training step beyond the pipeline (core/step.py): each device's data-parallel tail, timed
by hand on small runs, its properties on random ones, and the figures it gives (step time,
tokens per second, MFU)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ppviz
from ppviz import Config, ConfigError, Step, simulate

from .test_oracle import configs


def tail_rows(res, device):
    t = res.tails
    mine = t.device == device
    return list(zip(t.kind[mine].tolist(), t.stage[mine].tolist(), t.start[mine].tolist(), t.end[mine].tolist()))


def one_f_one_b(**step):
    return Config("1f1b", devices=4, microbatches=8, time_unit="ms",
                  step=Step(reduce=(2.0,) * 4, optimizer=(1.0,) * 4, gather=(0.5,) * 4, **step))


def test_the_reduction_overlaps_the_last_backward_then_the_optimizer_and_the_gather():
    # 1F1B, p = 4, m = 8, unit costs: device 0's last B (stage 0, microbatch 7) runs 31..33 (its
    # makespan), device 3's 25..27. Each reduction of 2 starts with that last backward.
    res = simulate(one_f_one_b())
    assert res.makespan == 33
    assert tail_rows(res, 0) == [("reduce", 0, 31.0, 33.0), ("optimizer", -1, 33.0, 34.0), ("gather", -1, 34.0, 34.5)]
    assert tail_rows(res, 3) == [("reduce", 3, 25.0, 27.0), ("optimizer", -1, 27.0, 28.0), ("gather", -1, 28.0, 28.5)]
    assert res.step_time == 34.5 and res.tail.tolist() == [1.5] * 4


def test_without_overlap_the_reduction_waits_for_the_devices_last_op():
    res = simulate(one_f_one_b(overlap_grad_reduce=False))
    assert tail_rows(res, 0) == [("reduce", 0, 33.0, 35.0), ("optimizer", -1, 35.0, 36.0), ("gather", -1, 36.0, 36.5)]
    assert res.step_time == 36.5 and res.tail.tolist() == [3.5] * 4


def test_an_overlapped_gather_is_left_to_the_next_step():
    res = simulate(one_f_one_b(overlap_param_gather=True))
    assert "gather" not in res.tails.kind.tolist() and res.step_time == 34.0


def test_a_reduction_longer_than_the_backward_shows_in_the_tail():
    cfg = Config("1f1b", devices=4, microbatches=8, step=Step(reduce=(5.0,) * 4))
    res = simulate(cfg)
    assert tail_rows(res, 0) == [("reduce", 0, 31.0, 36.0)]
    assert res.step_time == 36.0 and res.tail.tolist() == [3.0] * 4


def test_two_stages_on_a_device_queue_on_its_data_parallel_link_in_the_order_they_finish():
    # interleaved 1F1B, p = 2, v = 2, m = 4: each device holds two stages; the later chunk's
    # gradients are ready first (its backwards run first)
    cfg = Config("interleaved-1f1b", devices=2, microbatches=4, stages_per_device=2,
                 step=Step(reduce=(3.0, 3.0, 3.0, 3.0)))
    res = simulate(cfg)
    o = res.ops
    for d in range(2):
        rows = tail_rows(res, d)
        assert [kind for kind, *_ in rows] == ["reduce", "reduce"]
        (_, s1, a1, b1), (_, s2, a2, b2) = rows
        last = {s: o.end[(o.device == d) & (o.stage == s)].max() for s in (s1, s2)}
        assert last[s1] <= last[s2]  # in the order the gradients are ready
        assert a2 >= b1  # one link: the second waits for the first
        assert b2 == max(a2 + 3.0, last[s2])


def test_rates_are_the_step_time_converted():
    cfg = Config("1f1b", devices=4, microbatches=8, time_unit="ms",
                 step=Step(reduce=(2.0,) * 4, tokens=65536, model_flops=6e12, gpus=32, peak_flops=1e10))
    res = simulate(cfg)  # step: 33 + 0 = 33 ms (the reduction hides under the last backward)
    assert res.step_time == 33
    assert res.tokens_per_second == pytest.approx(65536 / 0.033)
    assert res.mfu == pytest.approx(6e12 / (32 * 1e10 * 33))
    assert "step time        33 ms" in res.summary() and "MFU 56.8 %" in res.summary()
    assert simulate(Config("1f1b")).mfu is None and simulate(Config("1f1b")).tokens_per_second is None


def test_the_set_up_before_the_ops_counts_once_in_the_step():
    # every device sets up at once: the ops keep their times, the step starts 4 earlier
    res = simulate(one_f_one_b(setup=4.0))
    plain = simulate(one_f_one_b())
    np.testing.assert_array_equal(res.ops.start, plain.ops.start)
    assert res.step_time == plain.step_time + 4.0 == 38.5 and res.tail.tolist() == plain.tail.tolist()
    # on the ops' time axis, where every picture's ends, the step ends with the last tail
    assert res.step_end == plain.step_end == 34.5 and simulate(Config("1f1b")).step_end == simulate(Config("1f1b")).makespan
    assert "  step time        38.5 ms   set-up 4 ms before the ops, data-parallel tail up to 1.5 ms (device 0: " \
           "gradient reduction 2 ms, optimizer 1 ms, gather 0.5 ms)" in res.summary().splitlines()


@pytest.mark.parametrize("make, field", [
    (lambda: Step(setup=-1.0), "setup"),
    (lambda: Step(setup=(1.0,)), "setup"),
    (lambda: Step(reduce=(1.0, -1.0)), "reduce[1]"),
    (lambda: Step(reduce=(1.0,), optimizer=(1.0, 1.0)), "reduce"),
    (lambda: Step(reduce="fast"), "reduce"),
    (lambda: Step(overlap_grad_reduce="yes"), "overlap_grad_reduce"),
    (lambda: Step(gpus=2.5), "gpus"),
    (lambda: Step(tokens=-4), "tokens"),
    (lambda: Config("1f1b", devices=4, step=Step(reduce=(1.0,) * 3)), "step"),
    (lambda: Config("1f1b", step=(1.0, 2.0)), "step"),
])
def test_bad_steps_are_refused_naming_the_field(make, field):
    with pytest.raises(ConfigError) as info:
        make()
    assert info.value.field == field


@settings(max_examples=60, deadline=None)
@given(configs(), st.floats(0, 5), st.floats(0, 3), st.floats(0, 2), st.booleans(), st.booleans())
def test_tails_on_random_runs(cfg, reduce, optimizer, gather, overlap, overlap_gather):
    if cfg.spec.forward_only or cfg.schedule == "custom":
        return
    S = cfg.stages
    step = Step(reduce=(reduce,) * S, optimizer=(optimizer,) * S, gather=(gather,) * S,
                overlap_grad_reduce=overlap, overlap_param_gather=overlap_gather)
    res = simulate(cfg.replace(step=step))
    bare = simulate(cfg)
    # the tail never moves an op, and the step is at least the pipeline's
    np.testing.assert_array_equal(res.ops.end, bare.ops.end)
    assert res.step_time >= res.makespan - 1e-12 and (res.tail >= -1e-12).all()
    o, t = res.ops, res.tails
    for d in range(res.devices):
        mine = t.device == d
        starts, ends = t.start[mine], t.end[mine]
        assert (np.diff(starts) >= -1e-9).all() and (starts[1:] >= ends[:-1] - 1e-9).all()  # one after another
        for s, kind, a, b in zip(t.stage[mine], t.kind[mine], starts, ends):
            if kind != "reduce":
                continue
            grads = (o.device == d) & (o.stage == s) & np.isin(o.kind, ["W", "B"])
            last = int(np.flatnonzero(grads)[np.argmax(o.end[grads])])
            assert b >= o.end[last] - 1e-9 and b >= a + reduce - 1e-9
            assert a >= (o.start[last] if overlap else o.end[o.device == d].max()) - 1e-9
        held = len(set(o.stage[o.device == d].tolist()))
        expected = optimizer * held + (0 if overlap_gather else gather * held)
        assert math.isclose(float(t.duration[mine & (t.kind != "reduce")].sum()), expected, rel_tol=1e-9, abs_tol=1e-9)
    if reduce == optimizer == 0 and (gather == 0 or overlap_gather):
        assert res.step_time == res.makespan


def test_a_part_runs_under_the_devices_ops_only_while_they_run():
    # device 0's reduction of 2 runs 31..33 with its last B (which ends at 33): all of it under
    # the ops; its optimizer step and gather after them. Without overlap, none of it is.
    res = simulate(one_f_one_b())
    assert res.last_op_end.tolist() == [33.0, 31.0, 29.0, 27.0]
    hidden = res.tails.hidden(res.last_op_end)
    assert hidden[res.tails.device == 0].tolist() == [2.0, 0.0, 0.0]
    late = simulate(Config("1f1b", devices=4, microbatches=8, step=Step(reduce=(5.0,) * 4)))
    # 31..36 beside a last op that ends at 33: 2 under it, 3 after
    assert late.tails.hidden(late.last_op_end)[late.tails.device == 0].tolist() == [2.0]
    plain = simulate(one_f_one_b(overlap_grad_reduce=False))
    assert not plain.tails.hidden(plain.last_op_end).any()


def test_the_reduction_is_named_by_the_optimizer_that_follows_it():
    assert Step(reduce=(1.0,), gather=(0.5,)).reduction == "reduce-scatter"
    assert Step(reduce=(1.0,), gather=(0.0,)).reduction == Step(reduce=(1.0,)).reduction == "all-reduce"
    step = Step(reduce=(1.0,), gather=(0.5,))
    assert [step.part_name(k) for k in ("reduce", "optimizer", "gather")] == [
        "gradient reduce-scatter", "optimizer step", "parameter all-gather"]


@settings(max_examples=40, deadline=None)
@given(configs(), st.floats(0, 5), st.floats(0, 3), st.booleans())
def test_what_runs_under_the_ops_is_a_reductions_stretch_before_the_last_op_ends(cfg, reduce, optimizer, overlap):
    if cfg.spec.forward_only or cfg.schedule == "custom":
        return
    S = cfg.stages
    res = simulate(cfg.replace(step=Step(reduce=(reduce,) * S, optimizer=(optimizer,) * S, overlap_grad_reduce=overlap)))
    t = res.tails
    hidden = t.hidden(res.last_op_end)
    last = res.last_op_end[t.device]
    assert (hidden >= 0).all() and (hidden <= t.end - t.start + 1e-12).all()
    assert (t.start + hidden <= np.maximum(last, t.start) + 1e-9).all()
    # the rest of a part runs after its device's last op
    assert np.allclose(np.maximum(t.end - np.maximum(t.start, last), 0), t.end - t.start - hidden, atol=1e-9)
    assert not hidden[t.kind != "reduce"].any()
    if not overlap:
        assert not hidden.any()
