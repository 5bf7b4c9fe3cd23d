"""Every registry schedule against the independent reference simulator in ``tests/oracle.py``.

The property tests in ``test_properties.py`` check the timeline against ppviz's own cost table
and dependency index; these check times, metrics and memory against an oracle that computes
all of them from the config's public fields, so a wrong cost table, a swapped override, a
changed default or a wrong metric definition fails here.
"""

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from ppviz import Config, Program, ScheduleConstraintError, simulate
from ppviz.core.registry import all_specs

from . import oracle
from .helpers import accepted_sizes

SCHEDULES = [s.name for s in all_specs() if s.builder is not None]
costs = st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 3.0]) | st.floats(0.01, 4.0, allow_nan=False)


@st.composite
def configs(draw):
    name = draw(st.sampled_from(SCHEDULES))
    spec = next(s for s in all_specs() if s.name == name)
    p, m, v = accepted_sizes(draw, spec, max_devices=6, microbatches_per_device=3)
    f, b, w = draw(costs), draw(costs), draw(costs)
    assume(f + b + w > 0)
    options = {"comm": draw(st.sampled_from([0.0, 0.0, 0.25, 1.0])),
               "activation": draw(st.sampled_from([1.0, 1.0, 2.5])),
               "params": draw(st.sampled_from([0.0, 0.0, 3.0]))}
    if draw(st.booleans()):
        options["w_share"] = draw(st.sampled_from([0.0, 0.25, 0.5, 1.0]))
    if draw(st.booleans()):
        options["fb"] = draw(st.sampled_from([0.5, 1.7, 2.4, 5.0]))
    if spec.segmented:
        options["segments"] = draw(st.integers(1, 4))
    if draw(st.booleans()):
        options["recompute"] = draw(st.sampled_from(["full", "selective"]))
        if draw(st.booleans()):
            options["recompute_cost"] = draw(costs)
        if draw(st.booleans()):
            options["recompute_activation"] = draw(st.sampled_from([0.0, 0.1, 0.7]))
    try:
        stages = Config(schedule=name, devices=p, microbatches=m, stages_per_device=v).stages
    except ScheduleConstraintError:
        assume(False)
    overrides = {}
    for s in draw(st.lists(st.integers(0, stages - 1), max_size=3, unique=True)):
        keys = draw(st.lists(st.sampled_from(["f", "b", "w", "activation", "params", "recompute", "gap_f", "gap_b",
                                              "gap_w", "warmup_f", "warmup_b", "warmup_w"]), min_size=1,
                             max_size=6, unique=True))
        overrides[s] = {k: draw(costs) for k in keys}
    try:
        return Config(schedule=name, devices=p, microbatches=m, stages_per_device=v, f=f, b=b, w=w,
                      stage_costs=overrides, **options)
    except ScheduleConstraintError:
        assume(False)


def assert_matches_oracle(res, cfg):
    ref = oracle.run(res.program, cfg)
    assert np.allclose(res.ops.start, ref.start, rtol=1e-12, atol=1e-12)
    assert np.allclose(res.ops.end, ref.end, rtol=1e-12, atol=1e-12)
    assert res.makespan == pytest.approx(ref.makespan, rel=1e-12, abs=1e-12)
    assert np.allclose(res.busy, ref.busy, rtol=1e-12, atol=1e-12)
    assert np.allclose(res.idle, ref.idle, rtol=1e-9, atol=1e-9)
    assert res.bubble_fraction == pytest.approx(ref.bubble_fraction, rel=1e-9, abs=1e-12)
    assert res.bubble_rate == pytest.approx(ref.bubble_rate, rel=1e-9, abs=1e-12)
    assert np.allclose(res.peak_activation, ref.peak_activation, rtol=1e-9, atol=1e-9)
    assert np.allclose(res.static_memory, ref.static_memory, rtol=1e-12, atol=1e-12)
    assert np.allclose(res.peak_memory, np.add(ref.peak_activation, ref.static_memory), rtol=1e-9, atol=1e-9)
    assert_curves_match(res.memory, ref.curves)


def assert_curves_match(memory, reference):
    """Each device's curve is the reference's step function: equal after every time either
    changes, starting at 0, with no point that repeats the level before it."""
    assert len(memory.offsets) == len(reference) + 1
    for d, ref in enumerate(reference):
        times, values = memory.curve(d)
        assert times[0] == 0.0 and np.all(np.diff(times) > 0) and np.all(values[1:] != values[:-1])
        ref_times, ref_values = np.array(ref).T
        at = np.union1d(times, ref_times)
        # times a few ulps apart are one instant computed in two orders (the offload oracle sums
        # its copies' times its own way): compare the levels after all of such an instant
        at = at[np.r_[~np.isclose(at[1:], at[:-1], rtol=1e-9, atol=1e-12), True]]

        def level(ts, vs):
            return np.asarray(vs)[np.searchsorted(ts, at, side="right") - 1]

        assert np.allclose(level(times, values), level(ref_times, ref_values), rtol=1e-9, atol=1e-9), d


@given(configs())
def test_times_metrics_and_memory_equal_the_reference_simulator(cfg):
    assert_matches_oracle(simulate(cfg), cfg)


@given(configs(), st.sampled_from(["events", "lockstep"]))
def test_both_engines_equal_the_reference_simulator(cfg, engine):
    program = cfg.build()
    assume(engine == "events" or not program.pair.any())
    assert_matches_oracle(simulate(program, cfg, engine=engine), cfg)


# Metric definitions on schedules whose devices idle unequally ------------------------------

def test_dualpipe_bubble_fraction_is_total_idle_over_p_times_makespan():
    # with an overlap gain DualPipe's devices idle unequally: rank 0 and p−1 less than the middle
    cfg = Config(schedule="dualpipe", devices=8, microbatches=20, fb=2.4)
    res = simulate(cfg)
    ref = oracle.run(res.program, cfg)
    assert len(set(np.round(res.idle, 9))) > 1
    assert res.bubble_fraction == pytest.approx(sum(ref.idle) / (8 * ref.makespan), rel=1e-12)
    assert round(res.bubble_fraction, 4) == 0.0651
    assert res.bubble_fraction != pytest.approx(max(ref.idle) / ref.makespan, rel=1e-3)


def test_bubble_rate_uses_the_busiest_device_as_the_ideal():
    cfg = Config(schedule="1f1b", devices=3, microbatches=4, stage_costs={2: {"f": 3.0}})
    res = simulate(cfg)
    ref = oracle.run(res.program, cfg)
    # stage 2 is slower: its device is busiest with 4·(3 + 2) = 20
    assert max(ref.busy) == 20.0
    assert res.ideal == 20.0
    assert res.bubble_rate == pytest.approx((res.makespan - 20.0) / 20.0)


# Per-stage overrides and memory defaults, computed by hand ---------------------------------

def test_per_stage_b_and_w_overrides_by_hand():
    # p = 2, m = 1, ZB-H1 splits the backward: stage 1's I costs b = 3, its W w = 0.5
    cfg = Config(schedule="zb-h1", devices=2, microbatches=1, f=1, b=1, w=1, stage_costs={1: {"b": 3.0, "w": 0.5}})
    res = simulate(cfg)
    got = {(int(d), str(k)): (s, e) for d, k, s, e in zip(res.ops.device, res.ops.kind, res.ops.start, res.ops.end)}
    assert got[(0, "F")] == (0.0, 1.0)
    assert got[(1, "F")] == (1.0, 2.0)
    assert got[(1, "I")] == (2.0, 5.0)   # b of stage 1 = 3
    assert got[(1, "W")] == (5.0, 5.5)   # w of stage 1 = 0.5
    assert got[(0, "I")] == (5.0, 6.0)
    assert got[(0, "W")] == (6.0, 7.0)
    assert res.makespan == 7.0


def test_full_backward_costs_b_plus_w_of_its_stage():
    cfg = Config(schedule="1f1b", devices=2, microbatches=1, stage_costs={1: {"b": 3.0, "w": 0.5}, 0: {"f": 2.0}})
    res = simulate(cfg)
    spans = sorted(zip(res.ops.device.tolist(), res.ops.kind.tolist(), res.ops.start.tolist(), res.ops.end.tolist()))
    # F0 [0, 2] (stage 0's f = 2), F1 [2, 3], B1 = 3 + 0.5 [3, 6.5], B0 = 1 + 1 [6.5, 8.5]
    assert spans == [(0, "B", 6.5, 8.5), (0, "F", 0.0, 2.0), (1, "B", 3.0, 6.5), (1, "F", 2.0, 3.0)]


def test_activation_override_changes_that_stage_only():
    # 1F1B p = 2, m = 2: rank 0 holds 2 microbatches of stage 0 at its peak, rank 1 one of stage 1
    base = simulate(Config(schedule="1f1b", devices=2, microbatches=2))
    assert base.peak_activation.tolist() == [2.0, 1.0]
    res = simulate(Config(schedule="1f1b", devices=2, microbatches=2, stage_costs={0: {"activation": 3.5}}))
    assert res.peak_activation.tolist() == [7.0, 1.0]
    res = simulate(Config(schedule="1f1b", devices=2, microbatches=2, activation=2.0, stage_costs={1: {"activation": 0.5}}))
    assert res.peak_activation.tolist() == [4.0, 0.5]


def test_default_w_share_is_the_papers_32_over_34():
    assert Config().w_share == oracle.PAPER_W_SHARE
    # ZB-H1 p = 4, m = 8: rank r peaks at (p − r) + r·w_share (W's run late and keep that share)
    res = simulate(Config(schedule="zb-h1", devices=4, microbatches=8))
    expected = [4 - r + r * 32 / 34 for r in range(4)]
    assert np.allclose(res.peak_activation, expected, rtol=1e-12)
    assert res.peak_activation[3] == pytest.approx(1 + 3 * 32 / 34)


def test_w_share_splits_the_release_between_i_and_w():
    # p = 1, m = 1, ZB-H1: F allocates 1 at 0, I frees 1 − s at 2, W frees s at 3
    res = simulate(Config(schedule="zb-h1", devices=1, microbatches=1, w_share=0.25))
    times, values = res.memory.curve(0)
    assert times.tolist() == [0.0, 2.0, 3.0]
    assert values.tolist() == [1.0, 0.25, 0.0]


def test_stage_of_one_vth_of_the_model_costs_one_vth():
    # interleaved v = 2, p = 2: stages are half of 1/p, so each op costs half
    res = simulate(Config(schedule="interleaved-1f1b", devices=2, microbatches=2, stages_per_device=2, f=2, b=4, w=0))
    dur = dict(zip(res.ops.kind.tolist(), (res.ops.end - res.ops.start).tolist()))
    assert dur == {"F": 1.0, "B": 2.0}
    assert res.makespan == pytest.approx(oracle.run(res.program, res.config).makespan)


def test_static_memory_counts_params_per_stage_held():
    res = simulate(Config(schedule="interleaved-1f1b", devices=2, microbatches=4, stages_per_device=2, params=4.0))
    assert res.static_memory.tolist() == [4.0, 4.0]  # two stages of half the params each
    res = simulate(Config(schedule="dualpipe", devices=4, microbatches=8, params=4.0))
    assert res.static_memory.tolist() == [8.0] * 4  # two replicas
    assert math.isclose(res.peak_memory[0], res.peak_activation[0] + 8.0)


# Deadlocks: partial and self, on both engines -----------------------------------------------

PARTIAL = """
device 0: 0F0 2F0 0B0 2B0
device 1: 1F0 1B0
device 2: 3F0 3B0
"""


@pytest.mark.parametrize("engine", ["events", "lockstep"])
def test_partial_deadlock_is_detected_while_another_device_finishes(engine):
    # stages 0 and 2 share device 0: the forwards flow and device 2 (the last stage) finishes,
    # but 0B0 waits for 1B0, which waits for 2B0, placed behind 0B0 on device 0
    prog = Program.from_text(PARTIAL)
    with pytest.raises(oracle.Deadlock):
        oracle.run(prog, Config(schedule="custom", devices=3, microbatches=1))
    from ppviz import DeadlockError

    with pytest.raises(DeadlockError) as info:
        simulate(prog, engine=engine)
    text = str(info.value)
    assert "3 ops never run" in text
    assert "device 2: done" in text
    assert "[0B0]" in text and "0B0 waits for 1B0" in text
    assert "1B0 waits for 2B0" in text
    assert info.value.blocked == {0: ("0B0", "1B0"), 1: ("1B0", "2B0")}


def test_a_device_waiting_for_its_own_later_op_is_refused_before_simulation():
    from ppviz import ProgramError

    prog = Program.from_text("""
        device 0: 0F0 0F1 0B0 0B1
        device 1: 1B0 1F0 1F1 1B1
    """)
    with pytest.raises(ProgramError, match=r"device 1, position 0 \(1B0\).*before its forward 1F0"):
        simulate(prog)
    with pytest.raises(oracle.Deadlock):
        oracle.run(prog, Config(schedule="custom", devices=2, microbatches=2))
