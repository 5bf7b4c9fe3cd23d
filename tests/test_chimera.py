"""chimera: Li & Hoefler, SC'21 (arXiv 2107.06925), and the authors' generator
(Shigangli/Chimera chimera_pipeline_rank.py)."""

import numpy as np
import pytest

from ppviz import Config, ScheduleConstraintError, simulate


def run(p, m, **kw):
    return simulate(Config(schedule="chimera", devices=p, microbatches=m, **kw))


def test_figure_d4_n4():
    # the paper's Fig. 3 setting, D = 4 stages, N = 4 microbatches: 0, 1 go down (stage s on
    # device s), 2, 3 up (stage s on device 3 − s); per device, the passes in lock-step order
    # (the authors' generator, steps in brackets): P0 F0[0] F1[2] F2[3] B2[4] F3[5] B3[6] B0[7] B1[9]
    program = Config(schedule="chimera", devices=4, microbatches=4).build()
    assert program.to_actions() == {
        0: ["0F0", "0F1", "3F2", "3B2", "3F3", "3B3", "0B0", "0B1"],
        1: ["1F0", "2F2", "1F1", "2F3", "2B2", "1B0", "2B3", "1B1"],
        2: ["1F2", "2F0", "1F3", "2F1", "2B0", "1B2", "2B1", "1B3"],
        3: ["0F2", "0F3", "3F0", "3B0", "3F1", "3B1", "0B2", "0B3"],
    }
    assert program.placement.style == "bidirectional"


def test_bubble_ratio_and_memory_of_table_2():
    # F = B (f = 1, b + w = 1): (D−2)/(2N+D−2) = 2/10 for D = N = 4
    res = run(4, 4, f=1.0, b=0.5, w=0.5, params=1.0)
    assert res.makespan == 10.0 and list(res.idle) == [2.0] * 4
    assert res.bubble_fraction == pytest.approx(2 / 10)
    # activations between D/2 + 1 and D; weights 2× (two replicas)
    assert list(res.peak_activation) == [3.0, 4.0, 4.0, 3.0]
    assert list(res.static_memory) == [2.0] * 4
    cf = res.closed_form
    assert cf.applies and cf.makespan == 10.0 and list(cf.peak_activation) == [3.0, 4.0, 4.0, 3.0]


@pytest.mark.parametrize("p", [2, 4, 6, 8])
@pytest.mark.parametrize("units", [1, 2, 3])
def test_closed_form_for_concatenated_units(p, units):
    m = p * units
    for f, b, w in [(1, 0.5, 0.5), (1, 1, 1), (1, 2, 1), (0.5, 1, 0)]:
        res = run(p, m, f=f, b=b, w=w)
        full = b + w
        assert np.allclose(res.idle, (p - 2) * (full + (units - 1) * (full - f)))
        assert list(res.peak_activation) == [p // 2 + 1 + min(r, p - 1 - r) for r in range(p)]
        assert res.closed_form.applies


def test_refusals_name_what_works():
    with pytest.raises(ScheduleConstraintError, match=r"devices=5.*use 4 or 6"):
        Config(schedule="chimera", devices=5, microbatches=10)
    with pytest.raises(ScheduleConstraintError, match=r"microbatches=6.*use 4 or 8 \(a multiple of p\)"):
        Config(schedule="chimera", devices=4, microbatches=6)
    with pytest.raises(ScheduleConstraintError, match=r"microbatches=2.*use 4"):
        Config(schedule="chimera", devices=4, microbatches=2)


# The authors' generator, run: AutoGeneratePipelineRank(D, 2, N) from Shigangli/Chimera chimera_pipeline_rank.py
# (two pipelines), its get_schedule() stepped to the end and every MyPipeLine.next_pass() recorded: each
# microbatch it reports is one pass on device position mod D, a forward while its direction is 1; microbatch x
# of the u-th pipeline of a direction is ppviz's u·D/2 + x ("up_or_down" True: down, stage s on device s) or
# N/2 + u·D/2 + x (up, stage s on device D−1−s). Per device, in step order. (Where the generator breaks down —
# D = 2 with more than one unit, D >= 6 with three or more units, see the module — it is not a reference.)
GENERATOR = {
    (4, 8): {
        0: "0F0 0F1 3F4 3B4 3F5 3B5 0B0 0F2 0B1 0F3 3F6 3B6 3F7 3B7 0B2 0B3",
        1: "1F0 2F4 1F1 2F5 2B4 1B0 2B5 1B1 1F2 2F6 1F3 2F7 2B6 1B2 2B7 1B3",
        2: "1F4 2F0 1F5 2F1 2B0 1B4 2B1 1B5 1F6 2F2 1F7 2F3 2B2 1B6 2B3 1B7",
        3: "0F4 0F5 3F0 3B0 3F1 3B1 0B4 0F6 0B5 0F7 3F2 3B2 3F3 3B3 0B6 0B7",
    },
    (6, 12): {
        0: "0F0 0F1 0F2 5F6 5B6 5F7 5B7 5F8 5B8 0B0 0F3 0B1 0F4 0B2 0F5 5F9 5B9 5F10 5B10 5F11 5B11 0B3 0B4 0B5",
        1: "1F0 1F1 4F6 1F2 4F7 4B6 4F8 4B7 1B0 4B8 1B1 1F3 1B2 1F4 4F9 1F5 4F10 4B9 4F11 4B10 1B3 4B11 1B4 1B5",
        2: "2F0 3F6 2F1 3F7 2F2 3F8 3B6 2B0 3B7 2B1 3B8 2B2 2F3 3F9 2F4 3F10 2F5 3F11 3B9 2B3 3B10 2B4 3B11 2B5",
        3: "2F6 3F0 2F7 3F1 2F8 3F2 3B0 2B6 3B1 2B7 3B2 2B8 2F9 3F3 2F10 3F4 2F11 3F5 3B3 2B9 3B4 2B10 3B5 2B11",
        4: "1F6 1F7 4F0 1F8 4F1 4B0 4F2 4B1 1B6 4B2 1B7 1F9 1B8 1F10 4F3 1F11 4F4 4B3 4F5 4B4 1B9 4B5 1B10 1B11",
        5: "0F6 0F7 0F8 5F0 5B0 5F1 5B1 5F2 5B2 0B6 0F9 0B7 0F10 0B8 0F11 5F3 5B3 5F4 5B4 5F5 5B5 0B9 0B10 0B11",
    },
    (8, 8): {
        0: "0F0 0F1 0F2 0F3 7F4 7B4 7F5 7B5 7F6 7B6 7F7 7B7 0B0 0B1 0B2 0B3",
        1: "1F0 1F1 1F2 6F4 1F3 6F5 6B4 6F6 6B5 6F7 6B6 1B0 6B7 1B1 1B2 1B3",
        2: "2F0 2F1 5F4 2F2 5F5 2F3 5F6 5B4 5F7 5B5 2B0 5B6 2B1 5B7 2B2 2B3",
        3: "3F0 4F4 3F1 4F5 3F2 4F6 3F3 4F7 4B4 3B0 4B5 3B1 4B6 3B2 4B7 3B3",
        4: "3F4 4F0 3F5 4F1 3F6 4F2 3F7 4F3 4B0 3B4 4B1 3B5 4B2 3B6 4B3 3B7",
        5: "2F4 2F5 5F0 2F6 5F1 2F7 5F2 5B0 5F3 5B1 2B4 5B2 2B5 5B3 2B6 2B7",
        6: "1F4 1F5 1F6 6F0 1F7 6F1 6B0 6F2 6B1 6F3 6B2 1B4 6B3 1B5 1B6 1B7",
        7: "0F4 0F5 0F6 0F7 7F0 7B0 7F1 7B1 7F2 7B2 7F3 7B3 0B4 0B5 0B6 0B7",
    },
}


@pytest.mark.parametrize("p, m", sorted(GENERATOR))
def test_orders_are_the_authors_generators(p, m):
    program = Config(schedule="chimera", devices=p, microbatches=m).build()
    assert program.to_actions() == {d: passes.split() for d, passes in GENERATOR[p, m].items()}


def _steps_pass_by_pass(p, m):
    """The construction written pass by pass (ppviz's first builder): per device, its passes as
    (step, kind, stage, microbatch), sorted."""
    devices = [[] for _ in range(p)]
    for unit in range(m // p):
        for direction in (0, 1):
            for x in range(p // 2):
                microbatch = direction * (m // 2) + unit * (p // 2) + x
                t0 = 2 * p * unit + 2 * x
                for s in range(p):
                    device = s if direction == 0 else p - 1 - s
                    devices[device] += [(t0 + s, "F", s, microbatch), (t0 + 2 * p - 1 - s, "B", s, microbatch)]
    return [sorted(passes) for passes in devices]


@pytest.mark.parametrize("p", [2, 4, 6, 8, 12])
@pytest.mark.parametrize("units", [1, 2, 3, 5])
def test_the_vectorised_builder_equals_the_construction_pass_by_pass(p, units):
    # the builder lays out every pass with array operations (3.8M ops took 4.4 s pass by pass, 0.8 s now)
    program = Config(schedule="chimera", devices=p, microbatches=p * units).build()
    expected = {d: [f"{s}{kind}{mb}" for _, kind, s, mb in passes]
                for d, passes in enumerate(_steps_pass_by_pass(p, p * units))}
    assert program.to_actions() == expected


# The authors' training loops (Shigangli/Chimera, branch ChimeraBk, chimera/chimera_bert/bert/): one rank's
# calls, transcribed from main_with_runtime_direct.py (direct concatenation, acc_steps units) and
# main_with_runtime_forward_doubling.py (acc_steps == 1: the basic unit; else assert acc_steps % 2 == 0 and
# doubling steps of two units). r runs the down pipeline's stage r.stage (= the rank), r_reverse the up one's
# (tests/depth=4/conf_reverse_pipe.json maps its stage s to rank D−1−s). Each runtime takes its microbatches in
# order, forwards and backwards alike (runtime.py: self.tensors.pop(0)).
def authors_loop(D, rank, acc_steps, doubling):
    calls = []

    class Runtime:
        def __init__(self, pipe):
            self.pipe = pipe

        def run_forward(self):
            calls.append(("F", self.pipe))

        def run_backward(self):
            calls.append(("B", self.pipe))

    r, r_reverse = Runtime("down"), Runtime("up")
    half_stages = D // 2
    first_half = rank // half_stages == 0
    schedule_number_a = half_stages - rank
    if schedule_number_a <= 0:
        schedule_number_a = -schedule_number_a
        schedule_number_a += 1
    schedule_number_b = half_stages - schedule_number_a
    schedule_number_c = schedule_number_b + half_stages
    if not doubling or acc_steps == 1:
        for acc_step in range(acc_steps):
            if acc_step == 0:
                for _ in range(schedule_number_a):
                    r.run_forward() if first_half else r_reverse.run_forward()
            else:
                for _ in range(schedule_number_a):
                    if first_half:
                        r.run_backward()
                        r.run_forward()
                    else:
                        r_reverse.run_backward()
                        r_reverse.run_forward()
            for _ in range(schedule_number_b):
                if first_half:
                    r_reverse.run_forward()
                    r.run_forward()
                else:
                    r.run_forward()
                    r_reverse.run_forward()
            for _ in range(schedule_number_a):
                if first_half:
                    r_reverse.run_forward()
                    r_reverse.run_backward()
                else:
                    r.run_forward()
                    r.run_backward()
            for _ in range(schedule_number_b):
                if first_half:
                    r.run_backward()
                    r_reverse.run_backward()
                else:
                    r_reverse.run_backward()
                    r.run_backward()
    else:
        assert acc_steps % 2 == 0
        for doubling_step in range(acc_steps // 2):
            if doubling_step == 0:
                for _ in range(schedule_number_a):
                    if first_half:
                        r.run_forward()
                        r.run_forward()
                    else:
                        r_reverse.run_forward()
                        r_reverse.run_forward()
            else:
                for _ in range(schedule_number_a):
                    if first_half:
                        r.run_backward()
                        r.run_forward()
                        r.run_forward()
                    else:
                        r_reverse.run_backward()
                        r_reverse.run_forward()
                        r_reverse.run_forward()
            for _ in range(schedule_number_b):
                if first_half:
                    r_reverse.run_forward()
                    r_reverse.run_forward()
                    r.run_forward()
                    r.run_forward()
                else:
                    r.run_forward()
                    r.run_forward()
                    r_reverse.run_forward()
                    r_reverse.run_forward()
            for _ in range(schedule_number_a):
                if first_half:
                    r_reverse.run_forward()
                    r_reverse.run_forward()
                    r_reverse.run_backward()
                else:
                    r.run_forward()
                    r.run_forward()
                    r.run_backward()
            for _ in range(schedule_number_c):
                if first_half:
                    r.run_backward()
                    r_reverse.run_backward()
                else:
                    r_reverse.run_backward()
                    r.run_backward()
    # the tail of the pipelines, only backward passes
    for _ in range(schedule_number_a):
        r.run_backward() if first_half else r_reverse.run_backward()
    return calls


def authors_actions(D, N, doubling):
    """Every rank's calls as ppviz actions: the k-th call of a kind on the down pipeline is stage rank,
    microbatch k; on the up pipeline stage D−1−rank, microbatch N/2 + k."""
    out = {}
    for rank in range(D):
        taken, actions = {}, []
        for kind, pipe in authors_loop(D, rank, N // D, doubling):
            k = taken[kind, pipe] = taken.get((kind, pipe), -1) + 1
            actions.append(f"{rank}{kind}{k}" if pipe == "down" else f"{D - 1 - rank}{kind}{N // 2 + k}")
        out[rank] = actions
    return out


#: (p, m) of the forward-doubling loop: every even p to 16, m = p and six doubling steps of 2p
DOUBLING_GRID = [(p, m) for p in range(2, 17, 2) for m in [p, *(2 * p * k for k in range(1, 7))]]
#: (p, m) of the direct loop: every even p to 16, one to seven units
DIRECT_GRID = [(p, p * k) for p in range(2, 17, 2) for k in range(1, 8)]


def test_forward_doubling_is_the_authors_loop_op_for_op():
    assert len(DOUBLING_GRID) == 56
    for p, m in DOUBLING_GRID:
        expected = authors_actions(p, m, doubling=True)
        for name in ("chimera-forward-doubling", "chimera-backward-halving"):
            assert Config(schedule=name, devices=p, microbatches=m).build().to_actions() == expected, (name, p, m)


def test_chimera_is_the_authors_direct_concatenation_loop_op_for_op():
    assert len(DIRECT_GRID) == 56
    for p, m in DIRECT_GRID:
        assert Config(schedule="chimera", devices=p, microbatches=m).build().to_actions() == \
            authors_actions(p, m, doubling=False), (p, m)


def test_forward_doubling_runs_two_forwards_per_slot():
    # p = 4, m = 8 (one doubling step): device 0 is on the down pipeline's stage 0 side (a = 2, b = 0)
    program = Config(schedule="chimera-forward-doubling", devices=4, microbatches=8).build()
    assert program.to_actions()[0] == ["0F0", "0F1", "0F2", "0F3", "3F4", "3F5", "3B4", "3F6", "3F7", "3B5",
                                       "0B0", "3B6", "0B1", "3B7", "0B2", "0B3"]
    assert program.placement.style == "bidirectional"
    # at m = p the loop runs the basic unit: Chimera itself
    assert Config(schedule="chimera-forward-doubling", devices=6, microbatches=6).build() == \
        Config(schedule="chimera", devices=6, microbatches=6).build()


def doubling_idle(p, m, f, full):
    steps = m // (2 * p)
    return (p // 2 - 1) * max(2 * f, f + full, 2 * full - 2 * f) + (steps - 1) * (p - 2) * (
        max(0, f - full) + max(0, full - 2 * f))


@pytest.mark.parametrize("p", [2, 4, 6, 8, 10])
@pytest.mark.parametrize("steps", [1, 2, 3])
def test_doubling_closed_form_is_exact_for_any_costs(p, steps):
    m = 2 * p * steps
    for f, b, w in [(1, 1, 1), (1, 0.5, 0.5), (1, 2, 1), (1, 0.25, 0.25), (2, 0.5, 0), (1, 1.5, 0.5), (1, 5, 0),
                    (3, 0, 1), (1, 0, 0), (0.5, 0.5, 1)]:
        res = simulate(Config(schedule="chimera-forward-doubling", devices=p, microbatches=m, f=f, b=b, w=w,
                              activation=2.0))
        assert np.allclose(res.idle, doubling_idle(p, m, f, b + w)), (f, b, w)
        assert list(res.peak_activation) == [2.0 * (3 * p // 2 + 1 + min(r, p - 1 - r)) for r in range(p)]
        cf = res.closed_form
        assert cf.applies and cf.makespan == pytest.approx(res.makespan) and cf.peak_activation == \
            tuple(res.peak_activation)


def test_doubling_closes_the_gaps_of_direct_concatenation_at_twice_the_activations():
    # the paper's B = 2f: direct concatenation idles (p−2)(m/p + 1)f and grows with m; forward doubling
    # idles (p/2−1)·3f whatever m (bubble ratio (D−2)/(2N+D−2)), holding up to 2p activations against p
    for p, m in [(4, 8), (4, 32), (8, 16), (8, 64)]:
        direct = run(p, m, f=1.0, b=1.0, w=1.0)
        doubled = simulate(Config(schedule="chimera-forward-doubling", devices=p, microbatches=m, f=1.0, b=1.0, w=1.0))
        assert list(direct.idle) == [(p - 2) * (m / p + 1)] * p
        assert list(doubled.idle) == [(p // 2 - 1) * 3.0] * p
        assert doubled.bubble_fraction == pytest.approx((p - 2) / (2 * m + p - 2))
        assert doubled.peak_activation.max() == 2 * p == 2 * direct.peak_activation.max()


def test_recompute_trades_the_doubled_activations_for_a_longer_backward():
    # under full recompute each F keeps its layers' inputs only (2/34 of an activation) and each backward
    # recomputes its forward (+ f): the peaks fall 17-fold and the idle is the formula's at B = b + w + f
    p, m = 8, 32
    plain = simulate(Config(schedule="chimera-forward-doubling", devices=p, microbatches=m, f=1.0, b=1.0, w=1.0))
    recomputed = simulate(Config(schedule="chimera-forward-doubling", devices=p, microbatches=m, f=1.0, b=1.0, w=1.0,
                                 recompute="full"))
    assert np.allclose(recomputed.peak_activation, plain.peak_activation * 2 / 34)
    assert np.allclose(recomputed.idle, doubling_idle(p, m, 1.0, 3.0)) and doubling_idle(p, m, 1.0, 3.0) == 18
    assert recomputed.makespan == 146.0 and plain.makespan == 105.0
    assert not recomputed.closed_form.applies


def test_backward_halving_is_doubling_over_half_size_microbatches():
    # the same global batch: forward doubling over 8 full-size microbatches, or backward halving over 16 half-size
    # ones (half the costs and the activation): the halving holds Chimera's activations in full-size units
    p = 4
    halving = simulate(Config(schedule="chimera-backward-halving", devices=p, microbatches=16, f=0.5, b=0.5, w=0.5,
                              activation=0.5))
    direct = run(p, 8, f=1.0, b=1.0, w=1.0)
    assert halving.peak_activation.max() == direct.peak_activation.max() == p
    assert halving.makespan < direct.makespan  # (p/2−1)·3f/2 = 1.5 idle against direct's 6
    assert list(halving.idle) == [1.5] * p and list(direct.idle) == [6.0] * p
    assert halving.closed_form.applies and halving.closed_form.makespan == halving.makespan


def test_doubling_refusals_name_what_works():
    with pytest.raises(ScheduleConstraintError, match=r"devices=5.*use 4 or 6"):
        Config(schedule="chimera-forward-doubling", devices=5, microbatches=10)
    with pytest.raises(ScheduleConstraintError, match=r"microbatches=12.*use 8 or 16 \(p, or a multiple of 2p\)"):
        Config(schedule="chimera-forward-doubling", devices=4, microbatches=12)
    with pytest.raises(ScheduleConstraintError, match=r"microbatches=6.*use 4 or 8 \(p, or a multiple of 2p\)"):
        Config(schedule="chimera-backward-halving", devices=4, microbatches=6)
    with pytest.raises(ScheduleConstraintError, match=r"microbatches=2.*use 4 \(p, or a multiple of 2p\)"):
        Config(schedule="chimera-forward-doubling", devices=4, microbatches=2)
    with pytest.raises(ScheduleConstraintError, match=r"stages_per_device=2"):
        Config(schedule="forward-doubling", devices=4, microbatches=8, stages_per_device=2)


def test_search_tries_forward_doubling_once_for_both_names():
    from ppviz import search
    from ppviz.analysis.plan import _schedules

    found = search(Config(schedule="1f1b", devices=4, microbatches=8), max_memory=100)
    names = [c.name for c in found.candidates]
    assert "chimera-forward-doubling" in names and "chimera-backward-halving" not in names
    # ppviz.plan likewise, unless it is asked for by name
    planned = [s.name for s in _schedules({})]
    assert "chimera-forward-doubling" in planned and "chimera-backward-halving" not in planned
    assert [s.name for s in _schedules({"schedules": ["chimera-backward-halving"]})] == ["chimera-backward-halving"]
