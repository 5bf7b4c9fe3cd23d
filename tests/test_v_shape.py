"""zb-v, v-half and v-min: published figures, exact closed forms, hand-checked small cases.

In a V every stage is half of 1/p of the model: a pass costs f/2, b/2 or w/2 and holds half
an activation unit (a "chunk"). Device d holds stages d and 2p−1−d.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppviz import Config, ScheduleConstraintError, simulate
from ppviz.core.program import F, I, W


def run(schedule, p, m, **kw):
    return simulate(Config(schedule=schedule, devices=p, microbatches=m, **kw))


def starts(res):
    """{device: [(action, start), ...]} in program order."""
    out = {}
    for d in range(res.devices):
        lo = res.program.offsets[d]
        out[d] = [(a, float(res.ops.start[lo + k])) for k, a in enumerate(res.program.device_actions(d))]
    return out


# ZB-V -------------------------------------------------------------------------------------------

def test_zb_v_has_no_bubble_after_the_fill_when_costs_are_equal():
    # the paper's "zero bubble" (f = b = w): device d starts after d half-stage forwards and
    # then never waits, so it finishes (p−1−d)·f/2 before the end; idle (p−1)·f/2 everywhere
    for p, m in ((2, 3), (3, 5), (4, 8), (8, 16)):
        res = run("zb-v", p, m)
        assert res.makespan == 3 * m + (p - 1) / 2
        assert list(res.idle) == [(p - 1) / 2] * p
        for d in range(p):
            lo, hi = res.program.offsets[d], res.program.offsets[d + 1]
            begin, end = res.ops.start[lo:hi], res.ops.end[lo:hi]
            assert begin[0] == d / 2
            assert np.array_equal(begin[1:], end[:-1])
            assert res.makespan - end[-1] == (p - 1 - d) / 2


@pytest.mark.parametrize("f, b, w", [(1, 1, 1), (2, 2, 1), (1, 1, 0.75), (0.5, 0.5, 0.25), (3, 3, 2)])
def test_zb_v_closed_form_where_it_applies(f, b, w):
    for p in range(1, 9):
        for m in (2 * p - 1, 2 * p, 3 * p):
            res = run("zb-v", p, m, f=f, b=b, w=w)
            cf = res.closed_form
            assert cf.applies
            assert res.makespan == pytest.approx(m * (f + b + w) + (p - 1) * f / 2, abs=1e-12)
            assert np.allclose(res.idle, cf.idle)
            assert list(res.peak_activation) == list(cf.peak_activation) == [p] * p


@pytest.mark.parametrize("f, b, w, idle", [(1, 1, 2, 2.5), (1, 1, 0.25, 2.25), (2, 1, 1, 4.0), (1, 2, 1, 3.0)])
def test_zb_v_closed_form_is_withheld_where_it_would_be_wrong(f, b, w, idle):
    # p = 4, m = 8: W longer than F, W under half of F, or F ≠ B; (p−1)·f/2 would claim 1.5 or 3
    res = run("zb-v", 4, 8, f=f, b=b, w=w)
    assert not res.closed_form.applies
    assert list(res.idle) == [idle] * 4
    assert res.closed_form.idle != idle


def test_zb_v_unequal_costs_by_hand():
    # p = 2, m = 2, f = 1, b = 2, w = 1: passes cost F ½, I 1, W ½. Device 0 holds stages 0, 3,
    # device 1 stages 1, 2. torch's order below m = 2p−1 = 3 drops microbatch 2's ops.
    # d0: 0F0 [0,½] 0F1 [½,1]; d1: 1F0 after 0F0 [½,1], 2F0 [1,1½], 1F1 [1½,2], 2F1 [2,2½].
    # d0: 3F0 after 2F0 [1½,2], 3I0 [2,3], 3W0 [3,3½], 3F1 after 2F1 [3½,4], 3I1 [4,5], 3W1 [5,5½].
    # d1: 2I0 after 3I0 [3,4], 2W0 [4,4½], 1I0 [4½,5½], 1W0 [5½,6], 2I1 after 3I1 [6,7],
    #     2W1 [7,7½], 1I1 [7½,8½], 1W1 [8½,9].
    # d0: 0I0 after 1I0 and 3W1 [5½,6½], 0W0 [6½,7], 0I1 waits for 1I1 [8½,9½], 0W1 [9½,10].
    res = run("zb-v", 2, 2, f=1, b=2, w=1)
    assert starts(res) == {
        0: [("0F0", 0), ("0F1", 0.5), ("3F0", 1.5), ("3I0", 2), ("3W0", 3), ("3F1", 3.5), ("3I1", 4),
            ("3W1", 5), ("0I0", 5.5), ("0W0", 6.5), ("0I1", 8.5), ("0W1", 9.5)],
        1: [("1F0", 0.5), ("2F0", 1), ("1F1", 1.5), ("2F1", 2), ("2I0", 3), ("2W0", 4), ("1I0", 4.5),
            ("1W0", 5.5), ("2I1", 6), ("2W1", 7), ("1I1", 7.5), ("1W1", 8.5)],
    }
    assert res.makespan == 10 and list(res.idle) == [2, 2]
    assert not res.closed_form.applies


@pytest.mark.parametrize("w_share", [0.0, 0.5, 1.0])
def test_zb_v_peak_memory_is_1f1b_peak(w_share):
    for p in (2, 3, 4, 8):
        zbv = run("zb-v", p, 2 * p, w_share=w_share, f=1, b=2, w=0.5)
        assert list(zbv.peak_activation) == [p] * p
        assert zbv.peak_activation.max() == run("1f1b", p, 2 * p).peak_activation.max()


# V-Half and V-Min: memory --------------------------------------------------------------------

def v_half_peak(p):
    return [(p + 2) // 2] * p


def v_min_peak(p):
    peaks = [(p + 4) // 3] * p
    if p % 3 == 2:
        peaks[0] -= 0.5
    return peaks


@pytest.mark.parametrize("schedule, expected", [("v-half", v_half_peak), ("v-min", v_min_peak)])
def test_v_peak_memory_is_the_published_figure(schedule, expected):
    # HF Space description1.md: V-Half (p+2)//2 and V-Min (p+4)//3 microbatches of activation,
    # counted from F to W (w_share = 1); exact on every device once m >= p+1
    for p in list(range(1, 10)) + [12]:
        for m in sorted({p + 1, p + 2, 2 * p, 3 * p}):
            res = run(schedule, p, m, w_share=1.0)
            assert list(res.peak_activation) == expected(p), (p, m)
            assert list(res.closed_form.peak_activation) == expected(p)


@pytest.mark.parametrize("schedule, published", [("v-half", lambda p: (p + 2) // 2), ("v-min", lambda p: (p + 4) // 3)])
def test_v_peak_with_few_microbatches_is_capped_by_m(schedule, published):
    for p in (4, 6, 8):
        assert [run(schedule, p, m, w_share=1.0).peak_activation.max() for m in range(1, p + 1)] == \
            [min(m, published(p)) for m in range(1, p + 1)]


def test_v_memory_against_1f1b():
    # p = 12: 1F1B holds 12 activations on device 0, V-Half 7 (7/12 ≈ ½), V-Min 5 (5/12 ≈ ⅓)
    p, m = 12, 24
    base = run("1f1b", p, m).peak_activation.max()
    half = run("v-half", p, m, w_share=1.0).peak_activation.max()
    third = run("v-min", p, m, w_share=1.0).peak_activation.max()
    assert (base, half, third) == (12, 7, 5)


def test_v_half_memory_does_not_depend_on_w_share_but_v_min_can():
    for share in (0.0, 0.5, 32 / 34):
        assert list(run("v-half", 8, 16, w_share=share).peak_activation) == [5] * 8
        # p mod 3 ≠ 2: every device still at (p+4)//3
        assert list(run("v-min", 9, 18, w_share=share).peak_activation) == [4] * 9
    # p = 8 ≡ 2 (mod 3): device 0 is half a unit under 4 anyway, and device 1's peak moment
    # includes an activation that only its W still needs, so it drops too when W keeps less
    # than all of it; the closed form then gives no memory figure
    res = run("v-min", 8, 16, w_share=0.0)
    assert list(res.peak_activation) == [3.5, 3.5] + [4] * 6
    assert res.closed_form.peak_activation is None


# V-Half and V-Min: bubble ----------------------------------------------------------------------

def v_half_idle(p, f):
    return {1: 0, 2: f / 2}.get(p, (6 * ((p + 1) // 2) - 7) * f / 2)


def v_min_idle(p, f):
    return 0 if p == 1 else (4 * p - 5 - 2 * (p % 3 == 0)) * f / 2


@pytest.mark.parametrize("schedule, idle, least_m", [("v-half", v_half_idle, 2), ("v-min", v_min_idle, 1)])
def test_v_bubble_closed_form(schedule, idle, least_m):
    for f in (1.0, 2.0):
        for p in list(range(1, 10)) + [12]:
            for m in sorted({p + least_m, 2 * p + 1, 3 * p}):
                res = run(schedule, p, m, f=f, b=f, w=f)
                assert list(res.idle) == [idle(p, f)] * p, (p, m, f)
                assert res.closed_form.applies and res.closed_form.makespan == res.makespan


def test_v_half_below_its_microbatch_bound_is_not_claimed():
    # p = 4, m = 5 < p+2: the warm-up reordering leaves 4 of idle, not the steady 2.5
    res = run("v-half", 4, 5)
    assert list(res.idle) == [4] * 4
    assert not res.closed_form.applies and res.closed_form.idle == 2.5


def test_v_bubbles_against_1f1b():
    # published: bubble ≈ p/(2m) for V-Half and ≈ 2p/(3m) for V-Min against 1F1B's ≈ p/m, i.e.
    # idle about ½ and ⅔ of 1F1B's (p−1)(f+b+w). p = 24, f = b = w = 1: 1F1B idles 69,
    # V-Half 3·12 − 3.5 = 32.5 (0.47), V-Min 2·24 − 3.5 = 44.5 (0.64, 3 divides 24)
    p, m = 24, 26
    base = run("1f1b", p, m).idle[0]
    half = run("v-half", p, m).idle[0]
    third = run("v-min", p, m).idle[0]
    assert (base, half, third) == (69, 32.5, 44.5)


def test_v_min_unequal_costs_by_hand():
    # p = 2, m = 2, f = 2, b = 1, w = 1: passes cost F 1, I ½, W ½. The construction holds
    # device 1's second forward back until its first I, to keep memory down.
    # d0: 0F0 [0,1] 0F1 [1,2]; d1: 1F0 after 0F0 [1,2], 2F0 [2,3];
    # d0: 3F0 after 2F0 [3,4], 3I0 [4,4½], 3W0 [4½,5];
    # d1: 2I0 after 3I0 [4½,5], 1I0 [5,5½], 1F1 [5½,6½], 2F1 [6½,7½], 2W0 [7½,8], 1W0 [8,8½];
    # d0: 0I0 after 1I0 [5½,6], 0W0 [6,6½], 3F1 after 2F1 [7½,8½], 3I1 [8½,9], 3W1 [9,9½];
    # d1: 2I1 after 3I1 [9,9½], 1I1 [9½,10], 2W1 [10,10½], 1W1 [10½,11];
    # d0: 0I1 after 1I1 [10,10½], 0W1 [10½,11].
    res = run("v-min", 2, 2, f=2, b=1, w=1)
    assert starts(res) == {
        0: [("0F0", 0), ("0F1", 1), ("3F0", 3), ("3I0", 4), ("3W0", 4.5), ("0I0", 5.5), ("0W0", 6),
            ("3F1", 7.5), ("3I1", 8.5), ("3W1", 9), ("0I1", 10), ("0W1", 10.5)],
        1: [("1F0", 1), ("2F0", 2), ("2I0", 4.5), ("1I0", 5), ("1F1", 5.5), ("2F1", 6.5), ("2W0", 7.5),
            ("1W0", 8), ("2I1", 9), ("1I1", 9.5), ("2W1", 10), ("1W1", 10.5)],
    }
    assert res.makespan == 11 and not res.closed_form.applies


def test_v_half_unequal_costs_by_hand():
    # p = 2, m = 2, f = 2, b = 1, w = 1 (F 1, I ½, W ½).
    # d0: 0F0 [0,1] 0F1 [1,2]; d1: 1F0 [1,2] 2F0 [2,3] 1F1 after 0F1 [3,4] 2F1 [4,5];
    # d0: 3F0 after 2F0 [3,4] 3I0 [4,4½] 3W0 [4½,5] 3F1 after 2F1 [5,6];
    # d1: 2I0 after 3I0, behind 2F1 [5,5½] 2W0 [5½,6] 1I0 [6,6½] 1W0 [6½,7];
    # d0: 0I0 after 1I0 [6½,7] 3I1 [7,7½] 3W1 [7½,8] 0W0 [8,8½];
    # d1: 2I1 after 3I1 [7½,8] 2W1 [8,8½] 1I1 [8½,9] 1W1 [9,9½]; d0: 0I1 [9,9½] 0W1 [9½,10].
    res = run("v-half", 2, 2, f=2, b=1, w=1)
    assert starts(res) == {
        0: [("0F0", 0), ("0F1", 1), ("3F0", 3), ("3I0", 4), ("3W0", 4.5), ("3F1", 5), ("0I0", 6.5),
            ("3I1", 7), ("3W1", 7.5), ("0W0", 8), ("0I1", 9), ("0W1", 9.5)],
        1: [("1F0", 1), ("2F0", 2), ("1F1", 3), ("2F1", 4), ("2I0", 5), ("2W0", 5.5), ("1I0", 6),
            ("1W0", 6.5), ("2I1", 7.5), ("2W1", 8), ("1I1", 8.5), ("1W1", 9)],
    }
    assert res.makespan == 10 and not res.closed_form.applies


# The construction: the authors' own orders ---------------------------------------------------------

# Produced by the authors' PipelineGraph (sail-sg zero-bubble-pipeline-parallelism, "vhalf/vmin"),
# run as published, with its (type, microbatch) passes written as torch actions: F f B b W w are
# down F, up F, up I, down I, up W, down W.
AUTHORS_V_HALF_P4_M6 = {
    0: "0F0 0F1 0F2 0F3 0F4 7F0 7I0 7W0 7F1 7I1 7W1 7F2 0I0 7I2 7W2 7F3 0W0 0F5 0I1 7I3 7W3 7F4 7I4 7W4 0I2 0W1 "
       "0W2 7F5 7I5 0I3 7W5 0I4 0W3 0W4 0I5 0W5",
    1: "1F0 1F1 1F2 1F3 6F0 6F1 6I0 6W0 6F2 6I1 6W1 1I0 1W0 1F4 6F3 6I2 6W2 1I1 1F5 1W1 6F4 6I3 6W3 1I2 6I4 6W4 "
       "6F5 1W2 1I3 6I5 1I4 6W5 1W3 1W4 1I5 1W5",
    2: "2F0 2F1 2F2 5F0 5F1 5F2 5I0 5W0 2F3 5I1 2I0 5W1 2W0 5F3 2F4 2I1 5I2 5W2 5F4 2W1 2F5 2I2 5I3 5W3 5F5 5I4 "
       "2I3 5W4 2I4 5I5 5W5 2W2 2I5 2W3 2W4 2W5",
    3: "3F0 4F0 3F1 4F1 3F2 4F2 4I0 4W0 3I0 3W0 3F3 4F3 4I1 4W1 3I1 3F4 3W1 4F4 4I2 3I2 4W2 3F5 3W2 4F5 4I3 3I3 "
       "4I4 3I4 4W3 4W4 4I5 3I5 4W5 3W3 3W4 3W5",
}
AUTHORS_V_MIN_P3_M4 = {
    0: "0F0 0F1 0F2 5F0 5I0 5W0 5F1 0I0 5I1 5W1 0W0 5F2 0F3 0I1 5I2 5W2 0W1 5F3 5I3 0I2 5W3 0W2 0I3 0W3",
    1: "1F0 1F1 4F0 4F1 4I0 4W0 1I0 1F2 1W0 4I1 4F2 4W1 1I1 1F3 1W1 4I2 4F3 4W2 1I2 4I3 4W3 1W2 1I3 1W3",
    2: "2F0 3F0 2F1 3F1 3I0 2I0 3W0 2W0 2F2 3F2 3I1 2I1 3W1 2W1 2F3 3F3 3I2 2I2 3W2 2W2 3I3 2I3 3W3 2W3",
}


@pytest.mark.parametrize("schedule, p, m, expected", [("v-half", 4, 6, AUTHORS_V_HALF_P4_M6),
                                                      ("v-min", 3, 4, AUTHORS_V_MIN_P3_M4)])
def test_orders_are_the_authors(schedule, p, m, expected):
    program = Config(schedule=schedule, devices=p, microbatches=m).build()
    assert program.to_actions() == {d: acts.split() for d, acts in expected.items()}
    assert program.placement.style == "v"


# Registry -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("alias, name", [("ZBVZeroBubble", "zb-v"), ("ScheduleZBVZeroBubble", "zb-v"), ("ZBV", "zb-v"),
                                         ("V-Half", "v-half"), ("vhalf", "v-half"), ("V-Min", "v-min"),
                                         ("vmin", "v-min")])
def test_aliases(alias, name):
    cfg = Config(schedule=alias, devices=4, microbatches=8)
    assert cfg.schedule == name and cfg.stages_per_device == 2 and cfg.stages == 8


@pytest.mark.parametrize("schedule", ["zb-v", "v-half", "v-min"])
@pytest.mark.parametrize("v", [1, 3])
def test_two_stages_per_device_only(schedule, v):
    with pytest.raises(ScheduleConstraintError, match=rf"stages_per_device={v}: {schedule} places exactly two "
                                                      r"stages per device in a V; use 2"):
        Config(schedule=schedule, devices=4, microbatches=8, stages_per_device=v)


# The builder against the construction visited pass by pass ------------------------------------------

def pass_by_pass(p, m, schedule):
    """Each device's (kind, microbatch) order from the authors' greedy visited pass by pass."""
    from . import v_shape_reference as reference

    block = {"v-half": reference._block_v_half, "v-min": reference._block_v_min}[schedule]
    return reference.v_schedule_order(p, m, block)


def built(p, m, schedule):
    from ppviz.schedules import v_shape

    block = {"v-half": v_shape._block_v_half, "v-min": v_shape._block_v_min}[schedule]
    kinds, microbatches = v_shape.v_schedule_order(p, m, block)
    return tuple(tuple(zip(kinds[d].tolist(), microbatches[d].tolist())) for d in range(p))


@pytest.mark.parametrize("schedule", ["v-half", "v-min"])
def test_the_builder_orders_as_the_greedy_pass_by_pass_on_a_grid(schedule):
    # every p up to 12 against the microbatch counts where the phases change shape: fewer than
    # p (no steady phase), p to p+2 (the closed forms' bounds), and a long steady phase
    for p in range(1, 13):
        for m in sorted({1, 2, 3, 5, p, p + 1, p + 2, 2 * p + 1, 3 * p + 4}):
            assert built(p, m, schedule) == pass_by_pass(p, m, schedule), (p, m)


@settings(max_examples=25)
@given(st.integers(13, 40), st.integers(1, 90), st.sampled_from(["v-half", "v-min"]))
def test_the_builder_orders_as_the_greedy_pass_by_pass_on_random_sizes(p, m, schedule):
    assert built(p, m, schedule) == pass_by_pass(p, m, schedule)


# Many microbatches spliced from few ---------------------------------------------------------------

BLOCKS = {"v-half": "_block_v_half", "v-min": "_block_v_min"}


@pytest.mark.parametrize("schedule", ["v-half", "v-min"])
def test_a_spliced_order_is_the_greedys_pass_by_pass(schedule):
    # (tests/test_splice.py checks the splice against the construction at many more sizes)
    from ppviz.schedules.splice import SPLICE_FACTOR, splice_base

    for p in (1, 2, 3):
        m = SPLICE_FACTOR * splice_base(p) + 1
        program = Config(schedule=schedule, devices=p, microbatches=m).build()
        passes = []
        for d in range(p):
            ops = slice(program.offsets[d], program.offsets[d + 1])
            up = program.stage[ops] != d
            kind = program.kind[ops]
            # the authors' pass kinds: down F, up F, up I, down I, up W, down W
            code = np.select([kind == F, kind == I, kind == W], [up * 1, 3 - up, 5 - up])
            passes.append(tuple(zip(code.tolist(), program.microbatch[ops].tolist())))
        assert tuple(passes) == pass_by_pass(p, m, schedule), p


def test_the_cached_orders_are_compact_and_read_only():
    # an order at the size budget (p = 8, m = 83,333) held 64 MB as int64, in a cache of 64 sizes
    from ppviz.schedules import v_shape

    kinds, microbatches = v_shape.v_schedule_order(8, 300, v_shape._block_v_half)
    assert kinds.dtype == np.int8 and microbatches.dtype == np.int32 and kinds.shape == microbatches.shape == (8, 1800)
    assert not kinds.flags.writeable and not microbatches.flags.writeable
    assert v_shape.v_schedule_order.cache_info().maxsize == 16
