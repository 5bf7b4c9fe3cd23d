"""looped-bfs: torch ScheduleLoopedBFS's order, its timing by hand, its closed form and memory."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ppviz import Config, ScheduleConstraintError, simulate


def run(p=4, m=8, v=2, **kw):
    return simulate(Config(schedule="looped-bfs", devices=p, microbatches=m, stages_per_device=v, **kw))


def test_order_is_breadth_first_with_backwards_reversed():
    actions = Config(schedule="LoopedBFS", devices=2, microbatches=3, stages_per_device=2).build().to_actions()
    # forwards stage by stage, microbatches ascending; backwards stages descending, microbatches descending
    assert actions == {
        0: ["0F0", "0F1", "0F2", "2F0", "2F1", "2F2", "2B2", "2B1", "2B0", "0B2", "0B1", "0B0"],
        1: ["1F0", "1F1", "1F2", "3F0", "3F1", "3F2", "3B2", "3B1", "3B0", "1B2", "1B1", "1B0"],
    }


def test_v1_is_not_gpipe():
    # torch's class accepts one stage per rank; unlike GPipe the backwards run m−1..0
    bfs = Config(schedule="bfs", devices=2, microbatches=2, stages_per_device=1).build().to_actions()
    gpipe = Config(schedule="gpipe", devices=2, microbatches=2).build().to_actions()
    assert bfs[0] == ["0F0", "0F1", "0B1", "0B0"] and gpipe[0] == ["0F0", "0F1", "0B0", "0B1"]


def test_unequal_costs_by_hand():
    # p=2, v=2, m=2, f=2, b=3, w=1: a stage is half of 1/p of the model, so F = 1 and B = (3+1)/2 = 2.
    # d0: 0F0 [0,1] 0F1 [1,2] | d1: 1F0 [1,2] 1F1 [2,3] | d0: 2F0 [2,3] 2F1 [3,4]
    # d1: 3F0 [3,4] 3F1 [4,5] 3B1 [5,7] 3B0 [7,9] | d0: 2B1 [7,9] 2B0 [9,11]
    # d1: 1B1 [9,11] 1B0 [11,13] | d0: 0B1 [11,13] 0B0 [13,15]
    res = run(p=2, m=2, v=2, f=2, b=3, w=1)
    starts = {(int(s), str(k), int(mb)): t for s, k, mb, t in zip(res.ops.stage, res.ops.kind, res.ops.microbatch, res.ops.start)}
    assert [starts[(s, "F", 0)] for s in range(4)] == [0, 1, 2, 3]
    assert [starts[(s, "B", 1)] for s in (3, 2, 1, 0)] == [5, 7, 9, 11]
    assert [starts[(s, "B", 0)] for s in (3, 2, 1, 0)] == [7, 9, 11, 13]
    assert res.makespan == 15
    # ideal 2 × (2+3+1) = 12: 3 idle per device = (p−1)(f+b+w)/v
    assert list(res.idle) == [3, 3]
    assert res.closed_form.applies and res.closed_form.makespan == 15
    # every device holds its 2 × 2 chunk activations (half a unit each) before its first backward
    assert list(res.peak_activation) == [2, 2]


def test_same_bubble_as_interleaved_with_gpipe_memory():
    # landscape §3: interleaved p=4, v=2, m=8, F=1, B=2 runs in 28.5 with idle 4.5 and peaks at
    # p + (p−1)/v = 5.5 on device 0; breadth-first has the same makespan but holds all m = 8
    bfs = run(p=4, m=8, v=2, f=1, b=1, w=1)
    vpp = simulate(Config(schedule="interleaved-1f1b", devices=4, microbatches=8, stages_per_device=2))
    assert bfs.makespan == vpp.makespan == 28.5
    assert bfs.bubble_rate == pytest.approx((4 - 1) / (2 * 8))
    assert list(bfs.peak_activation) == [8, 8, 8, 8]
    assert vpp.peak_activation[0] == 5.5


@given(st.integers(1, 6), st.integers(1, 4), st.integers(1, 18),
       st.sampled_from([0.25, 0.5, 1.0, 1.5, 3.0]), st.sampled_from([0.25, 0.5, 1.0, 2.0]),
       st.sampled_from([0.0, 0.5, 1.0, 3.0]))
def test_closed_form_holds_exactly_when_it_says(p, v, m, f, b, w):
    res = run(p=p, m=m, v=v, f=f, b=b, w=w)
    cf = res.closed_form
    matches = np.allclose(res.idle, cf.idle) and np.isclose(res.makespan, cf.makespan)
    # m >= p (or v = 1): the sweep through a stage never waits for the wrap-around from device p−1
    assert cf.applies == (m >= p or v == 1)
    assert matches == cf.applies
    assert np.allclose(res.peak_activation, m)


def test_comm_and_uneven_stages_switch_the_closed_form_off():
    assert not run(comm=0.1).closed_form.applies
    assert not run(stage_costs={7: {"f": 3.0}}).closed_form.applies


def test_group_size_is_refused_with_the_reason():
    with pytest.raises(ScheduleConstraintError) as err:
        Config(schedule="looped-bfs", devices=4, microbatches=8, microbatch_group_size=4)
    text = str(err.value)
    assert "microbatch_group_size=4" in text and "looped-bfs has no microbatch groups" in text
    assert "leave it unset" in text
