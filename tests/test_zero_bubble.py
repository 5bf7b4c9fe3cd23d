"""zb-h2 (the paper's handcrafted ZB-H2) and interleaved-zb (torch's ZB1P over looped stages).

The paper's numbers here come from Qi et al., "Zero Bubble Pipeline Parallelism" (arXiv
2401.10241): Figure 3 (orders), Table 2 (bubble and memory formulas) and Table 5 (bubble rates
computed from profiled F/B/W/comm times with the authors' generator, ``get_hand_schedule`` in
sail-sg/zero-bubble-pipeline-parallelism ``megatron/core/pipeline_parallel/efficiency.py``).
"""

import numpy as np
import pytest
from hypothesis import given, reject
from hypothesis import strategies as st

from ppviz import Config, ScheduleConstraintError, simulate


def run(schedule, p=4, m=8, **kw):
    return simulate(Config(schedule=schedule, devices=p, microbatches=m, **kw))


def spans(res):
    """Each device's time from its first op's start to its last op's end."""
    o = res.ops
    return np.array([o.end[o.device == d].max() - o.start[o.device == d].min() for d in range(res.devices)])


def per_stage_bubble_rate(res):
    # the paper's §5.3 bubble rate: (cost − m(f+b+w)) / cost with cost the longest stage
    cost = spans(res).max()
    return (cost - res.ideal) / cost


# ZB-H2 -----------------------------------------------------------------------------------------

def test_zb_h2_is_figure_3_bottom():
    # paper Figure 3 (1-based microbatches there): device 1 runs F1…F7 B1 W1 F8 B2 W2 … B8 W8,
    # device 4 runs F1 B1 … F7 B7 W1 F8 B8 W2 … W8
    actions = Config(schedule="ZB2P", devices=4, microbatches=8).build().to_actions()
    assert actions[0] == [f"0F{i}" for i in range(7)] + ["0I0", "0W0", "0F7"] + \
        [a for i in range(1, 8) for a in (f"0I{i}", f"0W{i}")]
    assert actions[3] == [a for i in range(7) for a in (f"3F{i}", f"3I{i}")] + ["3W0", "3F7", "3I7"] + \
        [f"3W{i}" for i in range(1, 8)]
    # rank r: 2(p−r−1) forwards, then W's start 2r backwards late
    assert actions[1][:7] == ["1F0", "1F1", "1F2", "1F3", "1F4", "1I0", "1F5"]
    assert actions[1].index("1W0") == actions[1].index("1I2") + 1


def test_zb_h2_unequal_costs_by_hand():
    # p=2, m=3 (= 2p−1), f=2, b=1, w=1. d0: F0 F1 F2 I0 W0 I1 W1 I2 W2; d1: F0 I0 F1 I1 F2 I2 W0 W1 W2.
    # d0: F0 [0,2] F1 [2,4] F2 [4,6]
    # d1: F0 [2,4] I0 [4,5] F1 [5,7] I1 [7,8] F2 [8,10] I2 [10,11] W0 [11,12] W1 [12,13] W2 [13,14]
    # d0: I0 [6,7] (d1's I0 ended at 5) W0 [7,8] I1 [8,9] W1 [9,10] I2 [11,12] W2 [12,13]
    res = run("zb-h2", p=2, m=3, f=2, b=1, w=1)
    assert list(res.ops.start[:9]) == [0, 2, 4, 6, 7, 8, 9, 11, 12]
    assert list(res.ops.start[9:]) == [2, 4, 5, 7, 8, 10, 11, 12, 13]
    assert res.makespan == 14
    # one iteration: idle (p−1)·max(f, f+b−2w) = 2 per device; per stage the paper's
    # (p−1)(f+b−2w) = 1: device 0 spans [0, 13], device 1 [2, 14] with no gap
    assert list(res.idle) == [2, 2]
    assert res.closed_form.applies and res.closed_form.makespan == 14
    assert list(spans(res) - res.ideal) == [1, 0]


@pytest.mark.parametrize("p", [2, 3, 4, 5, 6, 8, 12, 16])
def test_zb_h2_has_zero_bubble_per_stage_when_f_b_w_are_equal(p):
    # torch PR #130210 says ZB2P "might not be zero bubble when pp_group_size > 4"; that concerns
    # torch's looped variant. The handcrafted single-stage ZB-H2 is a gap-free parallelogram for
    # every p: each device works without a pause from its first F to its last W.
    for m in (2 * p - 1, 2 * p, 3 * p):
        res = run("zb-h2", p=p, m=m, f=1, b=1, w=1)
        assert np.allclose(spans(res), m * 3), (p, m)
        assert per_stage_bubble_rate(res) == 0
        # timed from t = 0 a single iteration still shows the (p−1)·f fill, like ZB-H1
        assert np.allclose(res.idle, p - 1)
        assert res.makespan == run("zb-h1", p=p, m=m).makespan


def test_zb_h2_memory_is_2p_minus_1_on_device_0():
    # paper §2.3: worker i (1-based) holds (2p − 2i + 1) M_B + (2i − 2) M_W
    p = 4
    res = run("zb-h2", p=p, m=12, w_share=0.5)
    assert list(res.peak_activation) == [(2 * p - 2 * r - 1) + 2 * r * 0.5 for r in range(p)]
    assert list(res.closed_form.peak_activation) == list(res.peak_activation)
    released_at_w = run("zb-h2", p=p, m=12, w_share=1.0)
    assert list(released_at_w.peak_activation) == [2 * p - 1] * p
    # twice ZB-H1's p, less one
    assert run("zb-h1", p=p, m=12, w_share=1.0).peak_activation[0] == p


@pytest.mark.parametrize("p, m, f, b, w, comm, rates", [
    # paper Table 5 (p = 8 rows for the 1.5B and 6.2B models, one row each for 16 and 32 stages):
    # bubble rates of 1F1B, ZB-H1 and ZB-H2
    (8, 24, 18522, 18086, 9337, 601, (0.2431, 0.1585, 0.1083)),
    (8, 32, 18513, 18086, 9331, 626, (0.1985, 0.1242, 0.0837)),
    (8, 64, 18546, 18097, 9321, 762, (0.1240, 0.0674, 0.0444)),
    (8, 24, 29718, 29444, 19927, 527, (0.2347, 0.1323, 0.0698)),
    (16, 48, 11347, 11248, 8132, 377, (0.2552, 0.1397, 0.0672)),
    (32, 96, 10419, 10207, 7715, 408, (0.2646, 0.1421, 0.0641)),
])
def test_paper_table_5_bubble_rates(p, m, f, b, w, comm, rates):
    kw = dict(p=p, m=m, f=f, b=b, w=w, comm=comm)
    one_f_one_b, zb_h1, zb_h2 = (run(s, **kw) for s in ("1f1b", "zb-h1", "zb-h2"))
    # 1F1B and ZB-H1 are timed from t = 0 (the authors' generator uses the end time there);
    # ZB-H2 per stage, from each stage's first F
    assert round(one_f_one_b.bubble_fraction, 4) == rates[0]
    assert round(zb_h1.bubble_fraction, 4) == rates[1]
    assert round(per_stage_bubble_rate(zb_h2), 4) == rates[2]
    # the generator's own assertion: longest stage − ideal = (p−1)(f + b + 2·comm − 2w)
    assert spans(zb_h2).max() - zb_h2.ideal == pytest.approx((p - 1) * (f + b + 2 * comm - 2 * w))


@given(st.integers(1, 7), st.integers(1, 24), st.sampled_from([0.25, 0.5, 1.0, 1.5, 3.0]),
       st.sampled_from([0.25, 0.5, 1.0, 2.0, 3.0]), st.sampled_from([0.25, 0.5, 1.0, 1.5]))
def test_zb_h2_closed_form_holds_where_it_says(p, m, f, b, w):
    res = run("zb-h2", p=p, m=m, f=f, b=b, w=w, w_share=0.5)
    cf = res.closed_form
    assert cf.applies == (m >= 2 * p - 1 and w <= f)
    if cf.applies:
        assert np.allclose(res.idle, cf.idle) and res.makespan == pytest.approx(cf.makespan)
        assert np.allclose(res.peak_activation, cf.peak_activation)
        # and the paper's per-stage figure, where it is non-negative
        if f + b >= 2 * w:
            assert spans(res).max() - res.ideal == pytest.approx((p - 1) * (f + b - 2 * w))


def test_zb_h2_below_2p_minus_1_is_valid_but_capped():
    # the warmup is capped at m: device 0 runs all forwards first, and every op still runs once
    res = run("zb-h2", p=4, m=3)
    assert res.program.to_actions()[0][:3] == ["0F0", "0F1", "0F2"]
    assert res.closed_form.peak_activation is None and not res.closed_form.applies


# interleaved-zb --------------------------------------------------------------------------------

def test_interleaved_zb_at_v1_is_zb_h1():
    compared = 0
    for p in (1, 2, 3, 5):
        for m in range(1, 3 * p + 1):
            try:
                a = Config(schedule="InterleavedZeroBubble", devices=p, microbatches=m, stages_per_device=1).build()
            except ScheduleConstraintError:
                # torch's round rule holds at v = 1 too (its class refuses these), zb-h1 has none
                assert m % max(1, m // p)
                continue
            assert a == Config(schedule="ZB1P", devices=p, microbatches=m).build(), (p, m)
            compared += 1
    assert compared == 3 + 6 + 9 + 15 - 1 - 1 - 2  # p=2: m=5; p=3: 7; p=5: 11, 13 refused


def test_interleaved_zb_order_by_hand():
    # p=2, v=2, m=2, g = 2: table (mb, chunk) = (0,0) (1,0) (0,1) (1,1); warmup (v−1)g + p−r−1
    # = 3 on rank 0, 2 on rank 1; W's delayed by the rank
    actions = Config(schedule="interleaved-zb", devices=2, microbatches=2, stages_per_device=2).build().to_actions()
    assert actions == {
        0: ["0F0", "0F1", "2F0", "2F1", "2I0", "2W0", "2I1", "2W1", "0I0", "0W0", "0I1", "0W1"],
        1: ["1F0", "1F1", "3F0", "3I0", "3F1", "3I1", "3W0", "1I0", "3W1", "1I1", "1W0", "1W1"],
    }


def test_interleaved_zb_unequal_costs_by_hand():
    # the order above with f=2, b=1, w=1 over v=2: F = 1, I = 0.5, W = 0.5 per stage
    # d0: 0F0 [0,1] 0F1 [1,2] | d1: 1F0 [1,2] 1F1 [2,3] | d0: 2F0 [2,3] 2F1 [3,4]
    # d1: 3F0 [3,4] 3I0 [4,4.5] 3F1 [4.5,5.5] 3I1 [5.5,6] 3W0 [6,6.5] 1I0 needs 2I0
    # d0: 2I0 [4.5,5] 2W0 [5,5.5] 2I1 [6,6.5] 2W1 [6.5,7] 0I0 needs 1I0
    # d1: 1I0 [6.5,7] 3W1 [7,7.5] 1I1 [7.5,8] 1W0 [8,8.5] 1W1 [8.5,9]
    # d0: 0I0 [7,7.5] 0W0 [7.5,8] 0I1 [8,8.5] 0W1 [8.5,9]
    res = run("interleaved-zb", p=2, m=2, stages_per_device=2, f=2, b=1, w=1)
    assert list(res.ops.start[:12]) == [0, 1, 2, 3, 4.5, 5, 6, 6.5, 7, 7.5, 8, 8.5]
    assert list(res.ops.start[12:]) == [1, 2, 3, 4, 4.5, 5.5, 6, 6.5, 7, 7.5, 8, 8.5]
    assert res.makespan == 9
    # ideal 2 × 4 = 8, idle 1 = (p−1)(f+b−w)/v
    assert list(res.idle) == [1, 1] and res.closed_form.applies and res.closed_form.makespan == 9


@given(st.integers(2, 5), st.integers(2, 3), st.integers(1, 15), st.sampled_from([0.5, 1.0, 2.0]),
       st.sampled_from([0.5, 1.0, 2.0]), st.sampled_from([0.25, 0.5, 1.0, 2.0]))
def test_interleaved_zb_closed_form_holds_exactly_when_it_says(p, v, m, f, b, w):
    try:
        cfg = Config(schedule="interleaved-zb", devices=p, microbatches=m, stages_per_device=v, f=f, b=b, w=w)
    except ScheduleConstraintError:
        reject()
    res = simulate(cfg)
    cf = res.closed_form
    assert cf.applies == (m >= p and w <= min(f, b))
    assert np.allclose(res.idle, cf.idle) == cf.applies


def test_interleaved_zb_runs_every_group_size_megatron_accepts():
    built = 0
    for g in range(1, 13):
        try:
            cfg = Config(schedule="interleaved-zb", devices=4, microbatches=12, stages_per_device=2,
                         microbatch_group_size=g)
        except ScheduleConstraintError as err:
            assert "microbatch_group_size" in str(err)
            continue
        res = simulate(cfg)
        assert res.closed_form.applies and np.allclose(res.idle, res.closed_form.idle)
        built += 1
    # p <= g <= m unless 0 < m mod g < p: g = 4, 6, 7, 8, 12 (5, 9, 10, 11 leave 2, 3, 2, 1)
    assert built == 5


@pytest.mark.parametrize("kw, fragments", [
    (dict(schedule="zb-h2", stages_per_device=2), ("stages_per_device=2", "zb-h2 holds one stage per device",
                                                    "interleaved-zb / zb-v")),
    (dict(schedule="zb-h1", microbatch_group_size=4), ("microbatch_group_size=4", "zb-h1 has no microbatch groups")),
    (dict(schedule="interleaved-zb", stages_per_device=2, microbatch_group_size=2),
     ("microbatch_group_size=2", "deadlocks with a group smaller than p", "p <= g <= m")),
])
def test_refusals_name_the_rule_and_what_works(kw, fragments):
    with pytest.raises(ScheduleConstraintError) as err:
        Config(devices=4, microbatches=8, **kw)
    for fragment in fragments:
        assert fragment in str(err.value)
