"""Calibration and residuals on runs whose truth is known: a simulated run, written as a trace
and loaded as if measured, must give back exactly the costs it was simulated with. (The real
profiled runs are in test_measured_runs.py.)"""

import tempfile

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ppviz

SCHEDULES = [("1f1b", 1), ("gpipe", 1), ("interleaved-1f1b", 2), ("zb-h1", 1), ("zb-v", 2)]


def _as_measured(result):
    with tempfile.TemporaryDirectory() as tmp:
        result.to_chrome_trace(f"{tmp}/run.json")
        return ppviz.load_trace(f"{tmp}/run.json")


costs = st.floats(0.5, 20.0)


@given(st.sampled_from(SCHEDULES), st.lists(st.tuples(costs, costs, costs), min_size=8, max_size=8),
       st.floats(0.05, 3.0))
def test_calibration_recovers_the_costs_of_a_simulated_run(schedule, per_stage, comm):
    name, v = schedule
    p = 4
    S = p * v
    stage_costs = {s: {"f": f, "b": b, "w": w} for s, (f, b, w) in enumerate(per_stage[:S])}
    config = ppviz.Config(schedule=name, devices=p, microbatches=8, stages_per_device=v, comm=comm,
                          stage_costs=stage_costs)
    measured = _as_measured(ppviz.simulate(config))
    cal = ppviz.calibrate(measured)
    assert cal.schedule == name
    split = ppviz.Config(schedule=name, devices=p, microbatches=2, stages_per_device=v).spec.split_backward
    fitted = cal.stage_costs()
    for s in range(S):
        assert fitted[s]["f"] == pytest.approx(stage_costs[s]["f"], rel=1e-9, abs=1e-9)
        if split:
            assert fitted[s]["b"] == pytest.approx(stage_costs[s]["b"], rel=1e-9, abs=1e-9)
            assert fitted[s]["w"] == pytest.approx(stage_costs[s]["w"], rel=1e-9, abs=1e-9)
        else:  # a full B: only b + w is observable
            assert fitted[s]["b"] + fitted[s]["w"] == pytest.approx(stage_costs[s]["b"] + stage_costs[s]["w"])
    if cal.comm_samples:
        assert cal.comm == pytest.approx(comm, rel=1e-6)
    assert np.nan_to_num(cal.stages.overhead) == pytest.approx(0.0, abs=1e-9)
    assert cal.error == pytest.approx(0.0, abs=1e-9)
    res = ppviz.residuals(measured, cal)
    assert np.abs(res.start).max() == pytest.approx(0.0, abs=1e-6)
    assert res.attribution.total == pytest.approx(0.0, abs=1e-6)


def test_residuals_of_a_known_disturbance():
    """One op made 5 units longer than modelled: its residual is +5 and compute variance is the
    whole difference."""
    config = ppviz.Config(schedule="1f1b", devices=4, microbatches=8, f=1.0, b=2.0, w=0.0)
    slow = config.replace(stage_costs={3: {"f": 1.0, "b": 2.0}})
    base = ppviz.simulate(config)
    measured = _as_measured(base)
    r = ppviz.residuals(measured, config)
    assert np.abs(r.duration).max() == pytest.approx(0.0, abs=1e-9)
    # against a model whose last stage is slower than measured, the measured run is faster
    r2 = ppviz.residuals(measured, slow.replace(stage_costs={3: {"f": 2.0, "b": 4.0}}))
    assert r2.difference < 0
    assert r2.attribution.compute_variance == pytest.approx(r2.difference)
    assert r2.attribution.communication == pytest.approx(0.0, abs=1e-9)
    assert r2.compute_excess[3] == pytest.approx(-8 * 3.0)  # 8 F's 1 shorter and 8 B's 2 shorter
    assert r2.straggler is None


def test_config_for_redistributes_over_the_model():
    """4 measured stages → 8: each half-stage takes half; → 2: each takes the sum of two."""
    config = ppviz.Config(schedule="1f1b", devices=4, microbatches=8, f=1.0, b=2.0, w=0.0,
                          stage_costs={s: {"f": s + 1.0, "b": 2 * (s + 1.0), "w": 0.0} for s in range(4)})
    cal = ppviz.calibrate(_as_measured(ppviz.simulate(config)), w_fraction=0.25)
    eight = cal.config_for("interleaved-1f1b", stages_per_device=2)
    assert eight.stages == 8
    assert [eight.stage_costs[s]["f"] for s in range(8)] == pytest.approx([0.5, 0.5, 1, 1, 1.5, 1.5, 2, 2])
    assert eight.stage_costs[7]["w"] == pytest.approx(0.25 * 4.0)  # w_fraction of the half-stage's B
    two = cal.stage_costs(2)
    assert [two[s]["f"] for s in range(2)] == pytest.approx([3.0, 7.0])
    assert cal.config_for(microbatches=16).microbatches == 16
    with pytest.raises(ppviz.ConfigError, match="stages"):
        cal.stage_costs(0)


def test_bad_arguments():
    with pytest.raises(ppviz.ConfigError, match="measured"):
        ppviz.calibrate(ppviz.simulate(ppviz.Config()))
    measured = _as_measured(ppviz.simulate(ppviz.Config()))
    with pytest.raises(ppviz.ConfigError, match="w_fraction"):
        ppviz.calibrate(measured, w_fraction=2)
    with pytest.raises(ppviz.ConfigError, match="against.microbatches"):
        ppviz.residuals(measured, ppviz.Config(microbatches=3))
    with pytest.raises(ppviz.ConfigError, match="against"):
        ppviz.residuals(measured, ppviz.simulate(ppviz.Config(schedule="gpipe")))
    with pytest.raises(ppviz.ConfigError, match="against"):
        ppviz.residuals(measured, "1f1b")


def test_the_report_and_the_residuals_state_one_gap_in_the_same_words():
    # before: the report said "(-0.7%)" and the residuals "(+3.637 ms, +0.7%)" of the same gap
    measured = ppviz.load_trace(ppviz.example_trace())
    cal = ppviz.calibrate(measured)
    simulated = cal.simulate().makespan
    gap = measured.makespan - simulated
    assert gap > 0
    words = f"{gap / measured.makespan:.1%} under the measured"
    report = [line for line in cal.report().splitlines() if "measured pipeline time" in line]
    assert report == [f"  measured pipeline time {measured.makespan:.4g} ms, simulated {simulated:.4g} ms ({words})"]
    first = ppviz.residuals(measured, cal).summary().splitlines()[0]
    assert first == (f"pipeline time  measured {measured.makespan:.4g} ms, simulated {simulated:.4g} ms "
                     f"({gap:.4g} ms, {words})")


def test_a_unitless_run_calibrates_to_a_unitless_config_that_compares_with_it(tmp_path):
    # the calibrated config took "ms" whatever the trace's unit, and compare refused the pair
    run = ppviz.simulate(ppviz.Config("zb-h1", devices=4, microbatches=8))
    run.to_chrome_trace(tmp_path / "run.json")
    measured = ppviz.load_trace(tmp_path / "run.json")
    config = ppviz.calibrate(measured).config_for("zb-h1")
    assert measured.config.time_unit is None and config.time_unit is None
    assert ppviz.simulate(config).makespan == pytest.approx(run.makespan)
    assert ppviz.compare([measured, config]).ranking == ["measured zb-h1", "zb-h1 (calibrated)"]
    # the residuals speak in the run's own units too (they said ms)
    res = ppviz.residuals(measured, config)
    assert " ms" not in res.summary() and " ms" not in repr(res) and res.time_unit is None
    assert res.summary().splitlines()[0] == (f"pipeline time  measured {run.makespan:.4g}, simulated "
                                             f"{ppviz.simulate(config).makespan:.4g} (equal to the measured)")
