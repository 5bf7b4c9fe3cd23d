"""STP (Qi et al., NeurIPS'25): the builder against the authors' generator, its refusals, its
closed forms and the tensor-parallel communication its braided units hide."""

import numpy as np

import ppviz
import pytest

from ppviz import Config, PpvizError, Program, simulate
from ppviz.core.engine import op_costs
from ppviz.core.program import KINDS
from ppviz.core.registry import lookup
from ppviz.schedules.stp import braided_units, build_stp

from . import stp_reference as reference

#: every size the builder accepts up to p = 16, m = 64: 648 of them
GRID = [(p, m) for p in range(1, 17) for m in range(3 * p - 1, 65)]


def units_of(program: Program, device: int) -> list[tuple]:
    """One device's order as the reference writes it: F&B pairs as one unit of two passes, every
    other op a unit of its own (F&F and F&W units are two ops in ppviz's IR)."""
    out, i, hi = [], int(program.offsets[device]), int(program.offsets[device + 1])

    def op(k):
        return (KINDS[program.kind[k]], int(program.stage[k]), int(program.microbatch[k]))

    while i < hi:
        if program.pair[i]:
            out.append((op(i), op(i + 1)))
            i += 2
        else:
            out.append((op(i),))
            i += 1
    return out


def expected(p: int, m: int, device: int) -> list[tuple]:
    """The reference's units with its F&F and F&W units split into their two passes."""
    out = []
    for unit in reference.compute_units(device, p, m):
        if len(unit) == 2 and unit[1][0] in "BI":
            out.append(unit)
        else:
            out.extend((op,) for op in unit)
    return out


def test_the_grid_counts_every_accepted_size():
    assert len(GRID) == 648


def test_the_builder_equals_the_authors_generator_op_for_op_on_the_grid():
    for p, m in GRID:
        program = Config(schedule="stp", devices=p, microbatches=m).build()
        program.validate()
        for r in range(p):
            assert units_of(program, r) == expected(p, m, r), (p, m, r)


def test_a_spliced_order_is_the_unspliced_one():
    for p, m in ((2, 160), (4, 400)):
        cfg = Config(schedule="stp", devices=p, microbatches=m)
        assert cfg.build() == build_stp(cfg)


def test_the_braided_units_are_the_authors():
    # every F&B pair, and the first op of each ForwardAndForward and ForwardAndWeight
    for p, m in ((1, 2), (2, 5), (3, 9), (4, 12), (5, 20), (8, 23)):
        program = Config(schedule="stp", devices=p, microbatches=m).build()
        want = []
        for r in range(p):
            k = int(program.offsets[r])
            for unit in reference.compute_units(r, p, m):
                if len(unit) == 2:
                    want.append(k)
                k += len(unit)
        assert braided_units(program).tolist() == want, (p, m)


def test_a_program_that_is_not_stps_order_has_no_braided_units():
    program = Config(schedule="stp", devices=4, microbatches=12).build()
    microbatch = program.microbatch.copy()
    microbatch[[0, 1]] = microbatch[[1, 0]]  # two forwards of step 1 swapped on device 0
    changed = Program(program.kind, program.stage, microbatch, program.pair, program.offsets, stages=8,
                      microbatches=12, placement=program.placement, name="stp")
    assert len(braided_units(program)) > 0 and len(braided_units(changed)) == 0


@pytest.mark.parametrize("p", [1, 2, 3, 4, 8, 16])
def test_sizes_the_authors_generator_gets_wrong_are_refused(p):
    # below 3p − 1 the authors' generator (which asserts only m >= 2p) misses passes
    for m in range(1, 3 * p - 1):
        with pytest.raises(PpvizError, match=r"m >= 3p − 1"):
            Config(schedule="stp", devices=p, microbatches=m)
        if m >= 2 * p:
            assert not complete(p, m), (p, m)
    assert complete(p, 3 * p - 1)
    Config(schedule="stp", devices=p, microbatches=3 * p - 1)


def complete(p: int, m: int) -> bool:
    """Whether the authors' orders run every F, every backward and every weight gradient once
    (a W popping an empty queue fails the reference's assert)."""
    try:
        passes = [op for r in range(p) for unit in reference.compute_units(r, p, m) for op in unit]
    except AssertionError:
        return False
    backward = sorted((s, mb) for k, s, mb in passes if k in "BI")
    weights = sorted([(s, mb) for k, s, mb in passes if k in "BW"])
    every = [(s, mb) for s in range(2 * p) for mb in range(m)]
    return sorted((s, mb) for k, s, mb in passes if k == "F") == every and backward == every and weights == every


@pytest.mark.parametrize("v", [1, 3, 4])
def test_two_stages_per_device_only(v):
    with pytest.raises(PpvizError, match="use 2"):
        Config(schedule="stp", devices=4, microbatches=12, stages_per_device=v)


@pytest.mark.parametrize("alias", ["STP", "STPSchedule", "synergistic", "braided"])
def test_aliases(alias):
    assert lookup(alias).name == "stp"


def test_the_published_bubble_is_exact_where_f_b_and_w_are_equal():
    # (p − 1)(T_F + T_B − T_W) with chunks of half a stage: (p − 1)(f + b − w)/2
    for p in range(1, 9):
        for m in (3 * p - 1, 3 * p, 4 * p + 3):
            for t in (0.5, 1.0, 3.0):
                res = simulate(Config(schedule="stp", devices=p, microbatches=m, f=t, b=t, w=t))
                assert res.closed_form.applies
                assert np.allclose(res.idle, (p - 1) * t / 2, rtol=0, atol=1e-12), (p, m, t)
                assert res.makespan == pytest.approx(3 * m * t + (p - 1) * t / 2, abs=1e-12)


def test_the_bubble_is_not_claimed_where_it_is_wrong():
    res = simulate(Config(schedule="stp", devices=2, microbatches=5, f=1, b=1, w=0.5))
    assert not res.closed_form.applies
    assert res.makespan - 5 * 2.5 == 1.25 != res.closed_form.idle  # the formula's 0.75


@pytest.mark.parametrize("w_share", [0.0, 0.25, 1.0])
def test_peak_activation_is_3p_chunks_as_ppviz_counts_them(w_share):
    for p in (1, 2, 3, 4, 5, 8):
        for m in (3 * p - 1, 5 * p):
            res = simulate(Config(schedule="stp", devices=p, microbatches=m, w_share=w_share, activation=2.0))
            chunks = 2 * np.asarray(res.peak_activation) / 2.0
            assert chunks.tolist() == [3 * p + 1 + max(0, r - 1) * w_share for r in range(p)], (p, m)
            assert np.allclose(res.peak_activation, res.closed_form.peak_activation)


def _tp_configs(schedule: str, p: int, m: int, c: float, v: int = 2) -> tuple[Config, Config]:
    """Every stage: F and I of 0.5 that include a tensor-parallel all-reduce of c, W of 0.5 without
    one; and the same compute with no communication."""
    with_comm = {s: {"f": 0.5, "b": 0.5, "w": 0.5, "f_comm": c, "b_comm": c} for s in range(v * p)}
    without = {s: {"f": 0.5 - c, "b": 0.5 - c, "w": 0.5} for s in range(v * p)}
    base = Config(schedule=schedule, devices=p, microbatches=m)
    return base.replace(stage_costs=with_comm), base.replace(stage_costs=without)


def _exposed(cfg: Config, bare: Config) -> np.ndarray:
    program = cfg.build()
    extra = op_costs(program, cfg) - op_costs(program, bare)
    out = np.zeros(program.devices)
    np.add.at(out, program.device, extra)
    return out


@pytest.mark.parametrize("p, m", [(2, 5), (3, 8), (4, 12), (4, 16), (8, 23), (8, 40)])
def test_only_passes_outside_a_braided_unit_expose_their_all_reduce(p, m):
    # the paper's TP bubble (2p + 1)·T_AR is the forwards outside any unit: 2p on odd ranks,
    # 2p + 1 on even ones; ppviz also exposes the b_comm of the 3p full backwards outside a unit,
    # which the paper counts hidden under their own weight-gradient GEMM
    c = 0.125
    exposed = _exposed(*_tp_configs("stp", p, m, c))
    assert exposed.tolist() == [(2 * p + (r + 1) % 2 + 3 * p) * c for r in range(p)]
    assert max(2 * p + (r + 1) % 2 for r in range(p)) == 2 * p + 1


def test_zb_v_exposes_every_all_reduce():
    # the paper's ZB-V figure, 4m·T_AR: each of a device's 2m forwards and 2m input gradients
    p, m, c = 4, 16, 0.125
    assert _exposed(*_tp_configs("zb-v", p, m, c)).tolist() == [4 * m * c] * p
    assert _exposed(*_tp_configs("stp", p, m, c)).max() < 4 * m * c


def test_a_partner_with_too_little_compute_hides_only_its_compute():
    # device 0 at p = 2: step 4's F0&W unit, F of 0.5 with an all-reduce of 0.375 beside a W of 0.25
    cfg = Config(schedule="stp", devices=2, microbatches=5,
                 stage_costs={s: {"f": 0.5, "b": 0.5, "w": 0.25, "f_comm": 0.375} for s in range(4)})
    program = cfg.build()
    cost = op_costs(program, cfg)
    f_and_w = [k for k in braided_units(program) if not program.pair[k] and KINDS[program.kind[k + 1]] == "W"]
    assert len(f_and_w) == 1
    k = f_and_w[0]
    assert (cost[k], cost[k + 1]) == (0.5 - 0.25, 0.25)
    # an F&F unit of step 3 on device 1: each F's 0.375 under the other's compute of 0.125
    f_and_f = [k for k in braided_units(program) if not program.pair[k] and KINDS[program.kind[k + 1]] == "F"]
    assert [(cost[k], cost[k + 1]) for k in f_and_f] == [(0.375, 0.375)]
    # an F&I pair: the F's 0.375 under the I's 0.5; the pair's one slot is their sum
    pair = int(np.flatnonzero(program.pair & (program.kind[np.minimum(np.arange(len(program)) + 1,
                                                                       len(program) - 1)] == KINDS.index("I")))[0])
    assert (cost[pair], cost[pair + 1]) == (0.125 + 0.5, 0.0)


def test_what_a_unit_hides_still_costs_the_sms_its_collectives_hold():
    # the same F0&W unit with the collectives holding σ = 1/4 of the SMs: the F hides 0.25 of its
    # 0.375 under the W and pays 1/4 of it; the F&F unit's F's each pay 0.25 + σ · 0.125
    sigma = 0.25
    cfg = Config(schedule="stp", devices=2, microbatches=5,
                 stage_costs={s: {"f": 0.5, "b": 0.5, "w": 0.25, "f_comm": 0.375, "comm_sm_share": sigma}
                              for s in range(4)})
    program = cfg.build()
    cost = op_costs(program, cfg)
    units = [k for k in braided_units(program) if not program.pair[k]]
    (k,) = [k for k in units if KINDS[program.kind[k + 1]] == "W"]
    assert (cost[k], cost[k + 1]) == (0.5 - (1 - sigma) * 0.25, 0.25)
    assert [(cost[k], cost[k + 1]) for k in units if KINDS[program.kind[k + 1]] == "F"] == \
        [(0.375 + sigma * 0.125, 0.375 + sigma * 0.125)]
    # from a model: the share is comm_sms of the hardware's SMs, on the stages with traffic
    model = ppviz.Transformer.preset("llama-3-8b")
    h100 = ppviz.Hardware.preset("h100-sxm")
    stp = Config.from_model(model, h100, schedule="stp", devices=2, microbatches=5, tensor_parallel=4)
    assert {c["comm_sm_share"] for c in stp.stage_costs.values()} == {20 / 132}
    assert "comm_sm_share" not in Config.from_model(model, h100, schedule="stp", devices=2,
                                                    microbatches=5).stage_costs[0]
    free = stp.replace(stage_costs={s: {k: v for k, v in c.items() if k != "comm_sm_share"}
                                    for s, c in stp.stage_costs.items()})
    assert simulate(free).makespan < simulate(stp).makespan < simulate(stp.replace(schedule="zb-v")).makespan


def test_braiding_shortens_the_step_by_the_hidden_communication():
    with_comm, bare = _tp_configs("stp", 4, 16, 0.125)
    braided = simulate(with_comm)
    assert braided.makespan < simulate(with_comm.replace(schedule="zb-v")).makespan
    assert braided.makespan >= simulate(bare).makespan
