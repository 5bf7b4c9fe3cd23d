"""1f1b-overlap and interleaved-1f1b-overlap: Victarry's F&B-overlap strategies.

Orders follow Victarry/PP-Schedule-Visualization ``src/strategies.py``
(``generate_1f1b_overlap_schedule``: warmup 2(p−r−1)+1; ``generate_1f1b_interleave_overlap_schedule``:
Megatron's warmup + 1); the makespan formula is its ``formula.py``
``overlap_1f1b_execution_time_by_formula``.
"""

import numpy as np
import pytest
from hypothesis import given, reject
from hypothesis import strategies as st

from ppviz import Config, ScheduleConstraintError, simulate


def run(schedule="1f1b-overlap", p=2, m=4, **kw):
    return simulate(Config(schedule=schedule, devices=p, microbatches=m, **kw))


def test_1f1b_overlap_order():
    # rank 0: warmup 2(p−1)+1 = 3; rank 1: 1. Each pair's forward runs with the oldest backward.
    actions = Config(schedule="1f1b_overlap", devices=2, microbatches=4).build().to_actions()
    assert actions == {
        0: ["0F0", "0F1", "0F2", "(0F3;0B0)OVERLAP_F_B", "0B1", "0B2", "0B3"],
        1: ["1F0", "(1F1;1B0)OVERLAP_F_B", "(1F2;1B1)OVERLAP_F_B", "(1F3;1B2)OVERLAP_F_B", "1B3"],
    }


def test_warmups_and_pairs_per_rank():
    program = Config(schedule="1f1b-overlap", devices=4, microbatches=8).build()
    for r in range(4):
        acts = program.device_actions(r)
        warmup = next(i for i, a in enumerate(acts) if "OVERLAP" in a)
        assert warmup == 2 * (4 - r - 1) + 1
        assert sum("OVERLAP" in a for a in acts) == 8 - warmup


def test_interleaved_overlap_order():
    # p=2, v=2, m=4, g=2: table (mb, chunk) = 0,0 1,0 0,1 1,1 2,0 3,0 2,1 3,1; Megatron's warmup
    # 2(p−r−1) + (v−1)g is 4 on rank 0 and 2 on rank 1, one more here
    actions = Config(schedule="interleave_overlap", devices=2, microbatches=4, stages_per_device=2).build().to_actions()
    assert actions == {
        0: ["0F0", "0F1", "2F0", "2F1", "0F2", "(0F3;2B0)OVERLAP_F_B", "(2F2;2B1)OVERLAP_F_B",
            "(2F3;0B0)OVERLAP_F_B", "0B1", "2B2", "2B3", "0B2", "0B3"],
        1: ["1F0", "1F1", "3F0", "(3F1;3B0)OVERLAP_F_B", "(1F2;3B1)OVERLAP_F_B", "(1F3;1B0)OVERLAP_F_B",
            "(3F2;1B1)OVERLAP_F_B", "(3F3;3B2)OVERLAP_F_B", "3B3", "1B2", "1B3"],
    }


def test_1f1b_overlap_unequal_costs_by_hand():
    # p=2, m=4, f=1, b=2, w=1 (B = 3), fb = 3: a pair costs 3 instead of F + B = 4.
    # d0: F0 [0,1] F1 [1,2] F2 [2,3]
    # d1: F0 [1,2] (F1;B0) [2,5] (F2;B1) [5,8]
    # d0: (F3;B0) [5,8] (waits for d1's B0) | d1: (F3;B2) [8,11] B3 [11,14]
    # d0: B1 [8,11] B2 [11,14] B3 [14,17]
    res = run(f=1, b=2, w=1, fb=3)
    assert list(res.ops.start[:8]) == [0, 1, 2, 5, 5, 8, 11, 14]
    assert list(res.ops.start[8:]) == [1, 2, 2, 5, 5, 8, 8, 11]
    assert res.makespan == 17
    # Victarry: (p−1)(F+B) + (F+B) + (m−1)·FB = 4 + 4 + 9
    cf = res.closed_form
    assert cf.makespan == 17
    # device 0 works 3 + 3 + 9 = 15, device 1 1 + 9 + 3 = 13: one idle figure cannot describe both
    assert list(res.idle) == [2, 4] and cf.idle == 2 and not cf.applies
    # in flight: the warmup plus the pair's forward
    assert list(res.peak_activation) == [4, 2] and list(cf.peak_activation) == [4, 2]


def test_interleaved_overlap_unequal_costs_by_hand():
    # p=2, v=2, m=2, f=b=w=2: a stage is half of 1/p of the model, F = 1, B = 2, pair = 4/6 × 3 = 2 (fb=4).
    # rank 0 runs all forwards then all backwards (warmup capped at m·v = 4); rank 1:
    # 1F0 1F1 3F0 (3F1;3B0) 3B1 1B0 1B1
    # d0: 0F0 [0,1] 0F1 [1,2] 2F0 [2,3] 2F1 [3,4] | d1: 1F0 [1,2] 1F1 [2,3] 3F0 [3,4] (3F1;3B0) [4,6]
    # 3B1 [6,8] | d0: 2B0 [6,8] 2B1 [8,10] | d1: 1B0 [8,10] 1B1 [10,12] | d0: 0B0 [10,12] 0B1 [12,14]
    res = run("interleaved-1f1b-overlap", p=2, m=2, stages_per_device=2, f=2, b=2, w=2, fb=4)
    assert res.program.device_actions(1) == ["1F0", "1F1", "3F0", "(3F1;3B0)OVERLAP_F_B", "3B1", "1B0", "1B1"]
    assert list(res.ops.start[:8]) == [0, 1, 2, 3, 6, 8, 10, 12]
    assert list(res.ops.start[8:]) == [1, 2, 3, 4, 4, 6, 8, 10]
    # Victarry: n = p(v−1)+1 = 3 ops outside pairs; (p−1)(F+B)/v + n(F+B)/v + (mv−n)·FB/v = 3 + 9 + 2
    assert res.makespan == res.closed_form.makespan == 14


def test_without_a_gain_the_overlap_costs_what_1f1b_costs():
    # fb = None: a pair takes f+b+w, so the makespan is (interleaved) 1F1B's
    assert run(p=4, m=8).makespan == run("1f1b", p=4, m=8).makespan == 33
    v2 = run("interleaved-1f1b-overlap", p=4, m=8, stages_per_device=2)
    assert v2.makespan == run("interleaved-1f1b", p=4, m=8, stages_per_device=2).makespan == 28.5
    assert v2.closed_form.applies and np.allclose(v2.idle, v2.closed_form.idle)


def test_a_pair_shorter_than_its_backward_breaks_the_formula():
    # fb = 1.5 < b + w = 2: pairs finish before the backward they carry could have, and the
    # formula's 22.5 undercounts what the dependencies allow
    res = run(p=4, m=8, fb=1.5)
    assert res.closed_form.makespan == 22.5 and res.makespan == 24


@given(st.integers(1, 6), st.integers(1, 3), st.integers(1, 18), st.sampled_from([0.5, 1.0, 2.0]),
       st.sampled_from([0.5, 1.0, 2.0]), st.sampled_from([0.5, 1.0]), st.sampled_from([None, 0.6, 0.8, 1.0, 1.2]))
def test_victarry_makespan_holds_where_ppviz_says(p, v, m, f, b, w, fb_ratio):
    name = "1f1b-overlap" if v == 1 else "interleaved-1f1b-overlap"
    fb = None if fb_ratio is None else fb_ratio * (f + b + w)
    try:
        res = run(name, p=p, m=m, stages_per_device=v, f=f, b=b, w=w, fb=fb)
    except ScheduleConstraintError:
        reject()
    cf = res.closed_form
    pair = f + b + w if fb is None else fb
    holds = pair >= max(f, b + w) and (v == 1 or m % p == 0)
    if holds:
        assert res.makespan == pytest.approx(cf.makespan)
    assert cf.applies == (holds and pair == f + b + w)
    if cf.applies:
        assert np.allclose(res.idle, cf.idle)
    # the peak is set by the order alone: warmup plus the pair's forward
    assert np.allclose(res.peak_activation, cf.peak_activation)


@pytest.mark.parametrize("kw, fragments", [
    (dict(schedule="1f1b-overlap", stages_per_device=2), ("stages_per_device=2", "use 1, or interleaved-1f1b-overlap")),
    (dict(schedule="interleaved-1f1b-overlap", stages_per_device=1), ("stages_per_device=1", "use v >= 2")),
    (dict(schedule="interleaved-1f1b-overlap", microbatches=9), ("microbatches=9", "use m = 8 or 10")),
    (dict(schedule="1f1b-overlap", microbatch_group_size=4), ("1f1b-overlap has no microbatch groups",)),
])
def test_refusals_name_the_rule_and_what_works(kw, fragments):
    kw.setdefault("microbatches", 8)
    with pytest.raises(ScheduleConstraintError) as err:
        Config(devices=4, **kw)
    for fragment in fragments:
        assert fragment in str(err.value)
