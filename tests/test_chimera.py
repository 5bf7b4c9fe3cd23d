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
    assert program.to_torch() == {
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
