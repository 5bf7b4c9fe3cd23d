"""hanayo: Liu, Cheng, Zhou & You, SC'23 (arXiv 2308.15762), its Figures 3(d), 3(e) and 6(a) and
Eq. (1); and the one public generator, topal-team/elf ``generate_hanayo_schedule``."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppviz import Config, ScheduleConstraintError, simulate
from ppviz.core.placement import Placement

# The paper's figures, read block by block: per device, its passes left to right, "F" for a green
# (forward) block and "B" for an orange (backward) one, with the microbatch number printed on it.
# The figures do not print stages, and need not: a microbatch visits a device's chunks in model
# order going forward and in reverse going back, so the k-th forward of microbatch j on device r
# is its chunk k and the k-th backward its chunk 2W−1−k (see ``torch_actions``).

# Figure 3(d), "Hanayo with one wave": P = 4 devices, B = 4 microbatches.
FIGURE_3D = {
    0: "F0 F1 F2 F3 F0 B0 F1 B1 F2 B2 F3 B3 B0 B1 B2 B3",
    1: "F0 F1 F2 F0 F3 F1 B0 F2 B1 F3 B2 B0 B3 B1 B2 B3",
    2: "F0 F1 F0 F2 F1 F3 F2 B0 F3 B1 B0 B2 B1 B3 B2 B3",
    3: "F0 F0 F1 F1 F2 F2 F3 F3 B0 B0 B1 B1 B2 B2 B3 B3",
}

# Figure 3(e), "Hanayo with two waves": P = 4, B = 4.
FIGURE_3E = {
    0: "F0 F1 F2 F3 F0 F0 F1 F1 F2 F2 F3 F3 F0 B0 F1 B1 F2 B2 F3 B3 B0 B0 B1 B1 B2 B2 B3 B3 B0 B1 B2 B3",
    1: "F0 F1 F2 F0 F3 F1 F0 F2 F1 F3 F2 F0 F3 F1 B0 F2 B1 F3 B2 B0 B3 B1 B0 B2 B1 B3 B2 B0 B3 B1 B2 B3",
    2: "F0 F1 F0 F2 F1 F3 F2 F0 F3 F1 F0 F2 F1 F3 F2 B0 F3 B1 B0 B2 B1 B3 B2 B0 B3 B1 B0 B2 B1 B3 B2 B3",
    3: "F0 F0 F1 F1 F2 F2 F3 F3 F0 F0 F1 F1 F2 F2 F3 F3 B0 B0 B1 B1 B2 B2 B3 B3 B0 B0 B1 B1 B2 B2 B3 B3",
}

# Figure 6(a), "wave=2, devices=8": P = 8, B = 8.
FIGURE_6A = {
    0: "F0 F1 F2 F3 F4 F5 F6 F7 F0 F0 F1 F1 F2 F2 F3 F3 F4 F4 F5 F5 F6 F6 F7 F7 "
       "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7 "
       "B0 B0 B1 B1 B2 B2 B3 B3 B4 B4 B5 B5 B6 B6 B7 B7 B0 B1 B2 B3 B4 B5 B6 B7",
    1: "F0 F1 F2 F3 F4 F5 F6 F0 F7 F1 F0 F2 F1 F3 F2 F4 F3 F5 F4 F6 F5 F7 F6 F0 F7 F1 "
       "B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 "
       "B0 B7 B1 B0 B2 B1 B3 B2 B4 B3 B5 B4 B6 B5 B7 B6 B0 B7 B1 B2 B3 B4 B5 B6 B7",
    2: "F0 F1 F2 F3 F4 F5 F0 F6 F1 F7 F2 F0 F3 F1 F4 F2 F5 F3 F6 F4 F7 F5 F0 F6 F1 F7 F2 "
       "B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 "
       "B0 B6 B1 B7 B2 B0 B3 B1 B4 B2 B5 B3 B6 B4 B7 B5 B0 B6 B1 B7 B2 B3 B4 B5 B6 B7",
    3: "F0 F1 F2 F3 F4 F0 F5 F1 F6 F2 F7 F3 F0 F4 F1 F5 F2 F6 F3 F7 F4 F0 F5 F1 F6 F2 F7 F3 "
       "B0 F4 B1 F5 B2 F6 B3 F7 B4 "
       "B0 B5 B1 B6 B2 B7 B3 B0 B4 B1 B5 B2 B6 B3 B7 B4 B0 B5 B1 B6 B2 B7 B3 B4 B5 B6 B7",
    4: "F0 F1 F2 F3 F0 F4 F1 F5 F2 F6 F3 F7 F4 F0 F5 F1 F6 F2 F7 F3 F0 F4 F1 F5 F2 F6 F3 F7 F4 "
       "B0 F5 B1 F6 B2 F7 B3 "
       "B0 B4 B1 B5 B2 B6 B3 B7 B4 B0 B5 B1 B6 B2 B7 B3 B0 B4 B1 B5 B2 B6 B3 B7 B4 B5 B6 B7",
    5: "F0 F1 F2 F0 F3 F1 F4 F2 F5 F3 F6 F4 F7 F5 F0 F6 F1 F7 F2 F0 F3 F1 F4 F2 F5 F3 F6 F4 F7 F5 "
       "B0 F6 B1 F7 B2 "
       "B0 B3 B1 B4 B2 B5 B3 B6 B4 B7 B5 B0 B6 B1 B7 B2 B0 B3 B1 B4 B2 B5 B3 B6 B4 B7 B5 B6 B7",
    6: "F0 F1 F0 F2 F1 F3 F2 F4 F3 F5 F4 F6 F5 F7 F6 F0 F7 F1 F0 F2 F1 F3 F2 F4 F3 F5 F4 F6 F5 F7 F6 "
       "B0 F7 B1 "
       "B0 B2 B1 B3 B2 B4 B3 B5 B4 B6 B5 B7 B6 B0 B7 B1 B0 B2 B1 B3 B2 B4 B3 B5 B4 B6 B5 B7 B6 B7",
    7: "F0 F0 F1 F1 F2 F2 F3 F3 F4 F4 F5 F5 F6 F6 F7 F7 F0 F0 F1 F1 F2 F2 F3 F3 F4 F4 F5 F5 F6 F6 F7 F7 "
       "B0 B0 B1 B1 B2 B2 B3 B3 B4 B4 B5 B5 B6 B6 B7 B7 B0 B0 B1 B1 B2 B2 B3 B3 B4 B4 B5 B5 B6 B6 B7 B7",
}


def wave_stage(rank: int, chunk: int, p: int) -> int:
    """The paper's wave placement (Table 1, W = S/2P): stage s runs on device s mod p on the way
    down (even laps) and on device p−1−(s mod p) on the way back up (odd laps)."""
    return chunk * p + (rank if chunk % 2 == 0 else p - 1 - rank)


def torch_actions(figure: dict[int, str], p: int, waves: int) -> dict[int, list[str]]:
    out = {}
    for rank, row in figure.items():
        seen: dict[tuple[str, int], int] = {}
        actions = []
        for token in row.split():
            kind, mb = token[0], int(token[1:])
            k = seen.get((kind, mb), 0)
            seen[kind, mb] = k + 1
            chunk = k if kind == "F" else 2 * waves - 1 - k
            actions.append(f"{wave_stage(rank, chunk, p)}{kind}{mb}")
        out[rank] = actions
    return out


@pytest.mark.parametrize("figure, p, waves, bars", [
    # the M_a bars beside each figure (one unit: one microbatch's activation through 1/P of the
    # model), measured off the figure: 3(d) 2.49, 2.98, 3.49, 4.0; 3(e) 3.23, 3.49, 3.76, 4.0
    (FIGURE_3D, 4, 1, [2.5, 3.0, 3.5, 4.0]),
    (FIGURE_3E, 4, 2, [3.25, 3.5, 3.75, 4.0]),
    (FIGURE_6A, 8, 2, None),
], ids=["fig3d", "fig3e", "fig6a"])
def test_the_papers_figures(figure, p, waves, bars):
    cfg = Config(schedule="hanayo", devices=p, microbatches=p, stages_per_device=2 * waves, f=1.0, b=2.0, w=0.0)
    program = cfg.build()
    assert program.to_actions() == torch_actions(figure, p, waves)
    assert program.placement.stage_device == Placement.v_shape(p, 2 * waves).stage_device
    res = simulate(cfg)
    if bars is not None:
        assert list(res.peak_activation) == bars
    # the backward drawn twice as long as the forward (T_B = 2T_F): (P−1)·T_B/W idle on every device
    assert np.allclose(res.idle, (p - 1) * 2.0 / waves)


def eq1(P, W, TF, TB, TC=0.0):
    """The paper's Eq. (1), the bubble ratio, as printed."""
    num = TB / W + (1 + 2 * W + 2 / P + (P - 2) / 3) * TC
    den = P / (P - 1) * TF + (1 / (2 * W) + P / (P - 1)) * TB + ((P - 2) / 2 + 4 * W) * TC
    return num / den


def test_equation_1_against_the_figures_schedule():
    # its T_B = 2T_F, T_C = 0 form, as the paper rewrites it: (2P−2)/(3PW+P−1)
    for P in range(2, 33):
        for W in range(1, 9):
            assert eq1(P, W, 1.0, 2.0) == pytest.approx((2 * P - 2) / (3 * P * W + P - 1))
    # Figure 3(d), T_F = 1, T_B = 2: the paper's ratio is 6/15; the schedule it draws idles (P−1)·T_B/W = 6
    # of 18 on every device, Eq. (1)'s numerator times P−1, over B = P microbatches of work 3 each
    res = simulate(Config(schedule="hanayo", devices=4, microbatches=4, f=1.0, b=2.0, w=0.0))
    assert eq1(4, 1, 1.0, 2.0) == pytest.approx(0.4)
    assert res.makespan == 18.0 and list(res.idle) == [6.0] * 4
    assert res.bubble_fraction == pytest.approx(1 / 3)


GRID_COSTS = [(f, b, w) for f in (0.0, 0.5, 1.0, 2.0, 3.0) for b in (0.0, 0.5, 1.0, 2.0) for w in (0.0, 1.0)
              if f + b + w > 0]


@pytest.mark.parametrize("p", [1, 2, 3, 4, 5, 8])
@pytest.mark.parametrize("waves", [1, 2, 3])
def test_closed_form_is_exact_where_it_applies(p, waves):
    # idle (p−1)·max(f, b+w)/W (Eq. (1)'s numerator when b+w >= f), peaks m − (p−1−r)/2W
    checked = 0
    for m in range(p, 3 * p + 2):
        for f, b, w in GRID_COSTS:
            res = simulate(Config(schedule="hanayo", devices=p, microbatches=m, stages_per_device=2 * waves,
                                  f=f, b=b, w=w, activation=2.0))
            cf = res.closed_form
            assert cf.applies
            assert np.allclose(res.idle, (p - 1) * max(f, b + w) / waves)
            assert res.makespan == pytest.approx(cf.makespan, rel=1e-12)
            assert np.allclose(res.peak_activation, [2.0 * (m - (p - 1 - r) / (2 * waves)) for r in range(p)])
            assert np.allclose(res.peak_activation, cf.peak_activation)
            checked += 1
    assert checked == (2 * p + 2) * len(GRID_COSTS)


def test_closed_form_says_when_it_does_not_apply():
    assert not simulate(Config(schedule="hanayo", devices=4, microbatches=8, comm=0.1)).closed_form.applies
    uneven = Config(schedule="hanayo", devices=4, microbatches=8, stage_costs={0: {"f": 2.0}})
    assert not simulate(uneven).closed_form.applies
    # the paper's ratio is shown for its own setting, m = p
    assert "0.4 here" in simulate(Config(schedule="hanayo", devices=4, microbatches=4, f=1, b=2, w=0)
                                  ).closed_form.bubble_formula
    assert "gives" not in simulate(Config(schedule="hanayo", devices=4, microbatches=8)).closed_form.bubble_formula


# topal-team/elf, elf/scheduling/schedulers.py, generate_hanayo_schedule (MIT licence; the version at
# commit e53e281c8266d9e01db0eb36dabf5d659d3bf014), transcribed with its loops and names: ``placement``
# lists each stage's rank, the result is each rank's (op, stage, microbatch) in order (its loss ops
# and send/receive bookkeeping left out; BACKWARD_INPUTS then BACKWARD_PARAMS is one full B here).
def elf_generate_hanayo_schedule(placement, n_micro_batches):
    schedule = {rank: [] for rank in set(placement)}
    n_devices = max(placement) + 1
    n_stages = len(placement)
    n_waves = n_stages // (n_devices * 2)
    ids = [[i for i in range(n_stages) if placement[i] == rank] for rank in range(n_devices)]
    done = [0 for _ in range(n_devices)]
    enod = [0 for _ in range(n_devices)]
    for rank in range(n_devices):
        done[rank] = min(n_devices - rank, n_micro_batches)
        for i in range(done[rank]):
            schedule[rank].append(("F", ids[rank][0], i))
    for w in range(n_waves):
        for mb in range(n_micro_batches):
            for rank in reversed(range(n_devices)):
                schedule[rank].append(("F", ids[rank][2 * w + 1], mb))
                if done[rank] < n_micro_batches * n_waves:
                    schedule[rank].append(("F", ids[rank][2 * (done[rank] // n_micro_batches)],
                                           done[rank] % n_micro_batches))
                    done[rank] += 1
                else:
                    schedule[rank].append(("B", ids[rank][-1 - 2 * (enod[rank] // n_micro_batches)],
                                           enod[rank] % n_micro_batches))
                    enod[rank] += 1
    for w in range(n_waves):
        for mb in range(n_micro_batches):
            for rank in reversed(range(n_devices)):
                schedule[rank].append(("B", ids[rank][-2 * (w + 1)], mb))
                if enod[rank] < n_micro_batches * n_waves:
                    schedule[rank].append(("B", ids[rank][-1 - 2 * (enod[rank] // n_micro_batches)],
                                           enod[rank] % n_micro_batches))
                    enod[rank] += 1
    return schedule


def test_equals_the_elf_generator():
    # its default Hanayo placement, [0, 1, …, p−1, p−1, …, 0] repeated W times
    configs = [(p, m, waves) for p in range(1, 9) for waves in range(1, 5) for m in range(p, 3 * p + 1)]
    for p, m, waves in configs:
        placement = ([*range(p), *reversed(range(p))]) * waves
        expected = {rank: [f"{stage}{kind}{mb}" for kind, stage, mb in ops]
                    for rank, ops in elf_generate_hanayo_schedule(placement, m).items()}
        program = Config(schedule="hanayo", devices=p, microbatches=m, stages_per_device=2 * waves).build()
        assert program.to_actions() == expected, (p, m, waves)
    assert len(configs) == 320


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 16), st.integers(1, 4), st.integers(0, 200))
def test_equals_the_elf_generator_at_larger_sizes(p, waves, extra):
    # the builder counts the rule out with array operations; the generator runs it op by op
    m = p + extra
    placement = ([*range(p), *reversed(range(p))]) * waves
    expected = {rank: [f"{stage}{kind}{mb}" for kind, stage, mb in ops]
                for rank, ops in elf_generate_hanayo_schedule(placement, m).items()}
    program = Config(schedule="hanayo", devices=p, microbatches=m, stages_per_device=2 * waves).build()
    assert program.to_actions() == expected


def test_names_and_defaults():
    for name in ("hanayo", "Hanayo", "wave-like", "wave_pipeline", "hanayo-wave"):
        assert Config(schedule=name, devices=4, microbatches=8).schedule == "hanayo"
    cfg = Config(schedule="hanayo", devices=4, microbatches=8)
    assert cfg.stages_per_device == 2  # one wave by default
    assert cfg.build().placement.style == "v"


def test_refusals_name_what_works():
    with pytest.raises(ScheduleConstraintError, match=r"stages_per_device=3: .*even number >= 2; got 3; use 2 or 4"):
        Config(schedule="hanayo", devices=4, microbatches=8, stages_per_device=3)
    with pytest.raises(ScheduleConstraintError, match=r"stages_per_device=1: .*use 2 \(v = 2 × waves"):
        Config(schedule="hanayo", devices=4, microbatches=8, stages_per_device=1)
    with pytest.raises(ScheduleConstraintError, match=r"microbatches=3: .*m = p.*got 3 for p = 4; use m >= 4"):
        Config(schedule="hanayo", devices=4, microbatches=3)
    with pytest.raises(ScheduleConstraintError, match=r"microbatch_group_size=4"):
        Config(schedule="hanayo", devices=4, microbatches=8, microbatch_group_size=4)
