"""Calibration and residuals on runs whose truth is known: a simulated run, written as a trace
and loaded as if measured, must give back exactly the costs it was simulated with. (The real
profiled runs are in test_measured_runs.py.)"""

import json
import pathlib
import tempfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ppviz

SCHEDULES = [("1f1b", 1), ("gpipe", 1), ("interleaved-1f1b", 2), ("zb-h1", 1), ("zb-v", 2)]


def _as_measured(result):
    with tempfile.TemporaryDirectory() as tmp:
        result.to_chrome_trace(f"{tmp}/run.json")
        return ppviz.load_trace(f"{tmp}/run.json")


costs = st.floats(0.5, 20.0)


@given(st.sampled_from(SCHEDULES), st.lists(st.tuples(costs, costs, costs), min_size=8, max_size=8),
       st.one_of(st.just(0.0), st.floats(0.05, 3.0)))
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
    assert cal.error == pytest.approx(0.0, abs=1e-9)
    # the latency is told from host gaps, even where every op of a kind waits for its input
    # (test_a_latency_every_op_of_a_kind_waits_for_is_told_from_a_gap)
    assert cal.comm == pytest.approx(comm, abs=1e-9)
    assert np.nan_to_num(cal.stages.overhead) == pytest.approx(0.0, abs=1e-9)


def test_a_latency_every_op_of_a_kind_waits_for_is_told_from_a_gap():
    # hypothesis found it: GPipe whose first stage (f = 4) feeds faster ones, comm = 3; fitted from
    # no latency up, the rounds had settled on a latency of 1 and host gaps of 2
    per_stage = [(4.0, 1.0, 1.0), (1.2897229627165707, 1.0, 1.0), (1.0, 1.0, 1.0), (2.0, 1.0, 3.0)]
    config = ppviz.Config(schedule="gpipe", devices=4, microbatches=8, comm=3.0,
                          stage_costs={s: {"f": f, "b": b, "w": w} for s, (f, b, w) in enumerate(per_stage)})
    measured = _as_measured(ppviz.simulate(config))
    cal = ppviz.calibrate(measured)
    assert cal.comm == pytest.approx(3.0) and np.nan_to_num(cal.stages.overhead) == pytest.approx(0.0, abs=1e-9)
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
    assert gap != 0
    words = f"{abs(gap) / measured.makespan:.1%} {'under' if gap > 0 else 'over'} the measured"
    report = [line for line in cal.report().splitlines() if "measured pipeline time" in line]
    assert report == [f"  measured pipeline time {measured.makespan:.4g} ms, simulated {simulated:.4g} ms ({words})"]
    first = ppviz.residuals(measured, cal).summary().splitlines()[0]
    assert first == (f"pipeline time  measured {measured.makespan:.4g} ms, simulated {simulated:.4g} ms "
                     f"({abs(gap):.4g} ms, {words})")


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


# A step whose parts are known: a simulated run written as a profiler trace ------------------

def _as_profiled(result, directory, steps=2):
    """``result`` as ``torch.profiler`` traces, one per rank: each op a ``PP:<action>`` span that
    starts after its stage's host gap (the time the simulation adds to its cost: host work
    before the op, on a device that was waiting or not), inside ``ProfilerStep#k`` spans that hold
    the step's set-up before the ops and each device's tail after them."""
    config, ops = result.config, result.ops
    gap_key = {"F": "gap_f", "B": "gap_b", "I": "gap_b", "W": "gap_w"}
    gaps = np.array([config.stage_costs.get(int(s), {}).get(gap_key[k], 0.0) for s, k in zip(ops.stage, ops.kind)])
    setup = config.step.setup
    files = []
    for rank in range(result.devices):
        mine = ops.device == rank
        events = []
        for k in range(steps):
            origin = 1000.0 + k * result.step_time  # ms; steps follow one another
            events.append({"ph": "X", "name": f"ProfilerStep#{k + 1}", "pid": rank, "tid": 1,
                           "ts": origin * 1000, "dur": result.step_time * 1000})
            for s, mb, kind, a, b, g in zip(ops.stage[mine], ops.microbatch[mine], ops.kind[mine], ops.start[mine],
                                            ops.end[mine], gaps[mine]):
                events.append({"ph": "X", "name": f"PP:{s}{kind}{mb}", "pid": rank, "tid": 1, "cat": "user_annotation",
                               "ts": (origin + setup + a + g) * 1000, "dur": (b - a - g) * 1000})
        path = directory / f"rank{rank}.json"
        path.write_text(json.dumps({"schemaVersion": 1, "baseTimeNanoseconds": 0, "traceEvents": events,
                                    "distributedInfo": {"rank": rank, "world_size": result.devices}}))
        files.append(path)
    return ppviz.load_trace(files)


def sixteenths(lo, hi):
    """Times in sixteenths of a millisecond: their sums, and the traces' microseconds, are exact."""
    return st.integers(int(lo * 16), int(hi * 16)).map(lambda k: k / 16)


times = sixteenths(0.5, 20)


@given(st.sampled_from([("1f1b", 1), ("gpipe", 1), ("zb-h1", 1), ("interleaved-1f1b", 2), ("zb-v", 2)]),
       st.lists(st.tuples(times, times, times), min_size=8, max_size=8),
       st.lists(st.tuples(sixteenths(0, 1), sixteenths(0, 1), sixteenths(0, 1), sixteenths(0, 8), sixteenths(0, 8)),
                min_size=8, max_size=8),
       sixteenths(0.0625, 2), sixteenths(0, 30), sixteenths(0, 30))
@settings(max_examples=40)
def test_calibration_separates_the_parts_of_a_known_step_and_predicts_twice_the_microbatches(
        schedule, compute, extra, comm, setup, tail):
    """Compute per stage, a host gap per op, a first-microbatch warm-up, the set-up before the
    ops and a tail after them, each known: the fit gives each back, the measured step is
    re-simulated exactly, and at twice the microbatches, or under another schedule of the same
    backward, its prediction is the simulation of the truth (the same model, each part carried by
    its own rule)."""
    name, v = schedule
    p, m = 4, 4
    S = p * v
    costs = {s: {"f": f, "b": b, "w": w, "gap_f": gf, "gap_b": gb, "gap_w": gb if name in ("1f1b", "gpipe") else gw,
                 "warmup_f": wf, "warmup_b": wb}
             for s, ((f, b, w), (gf, gb, gw, wf, wb)) in enumerate(zip(compute[:S], extra[:S]))}
    truth = ppviz.Config(name, devices=p, microbatches=m, stages_per_device=v, comm=comm, stage_costs=costs,
                         time_unit="ms", step=ppviz.Step(setup=setup, optimizer=(tail / v,) * S))
    with tempfile.TemporaryDirectory() as tmp:  # not tmp_path: hypothesis runs the test many times in one
        measured = _as_profiled(ppviz.simulate(truth), pathlib.Path(tmp))
    cal = ppviz.calibrate(measured)
    assert cal.schedule == name and cal.fixed.measured
    assert cal.fixed.setup == pytest.approx(setup, abs=1e-6) and cal.fixed.tail == pytest.approx(tail, abs=1e-6)
    fitted = cal.stage_costs()
    split = truth.spec.split_backward
    for s in range(S):
        want, got = costs[s], {"warmup_f": 0.0, "warmup_b": 0.0, "warmup_w": 0.0, "gap_f": 0.0, "gap_b": 0.0,
                               "gap_w": 0.0, **fitted[s]}  # the fit leaves out what is 0
        for key in ("f", "gap_f", "gap_b", "warmup_f"):
            assert got[key] == pytest.approx(want[key], abs=1e-6), key
        if split:
            for key in ("b", "w", "gap_w", "warmup_b"):
                assert got[key] == pytest.approx(want[key], abs=1e-6), key
        else:  # a full B: only its sums are observable
            assert got["b"] + got["w"] == pytest.approx(want["b"] + want["w"], abs=1e-6)
            assert got["warmup_b"] + got["warmup_w"] == pytest.approx(want["warmup_b"], abs=1e-6)
    if cal.comm_samples:
        assert cal.comm == pytest.approx(comm, abs=1e-6)
    assert measured.step_time == pytest.approx(ppviz.simulate(truth).step_time, abs=1e-6)
    assert cal.step_error == pytest.approx(0.0, abs=1e-9)
    # the measured pipeline starts where the first op computes, after its host gap
    assert cal.simulate().makespan == pytest.approx(measured.makespan + costs[0]["gap_f"], abs=1e-6)
    same_backward = {"1f1b": "gpipe", "gpipe": "1f1b", "zb-h1": "zb-h1", "interleaved-1f1b": "interleaved-1f1b",
                     "zb-v": "zb-v"}[name]
    for target, microbatches in ((name, 2 * m), (same_backward, m)):
        predicted = ppviz.simulate(cal.config_for(target, microbatches=microbatches, stages_per_device=v))
        actual = ppviz.simulate(truth.replace(schedule=target, microbatches=microbatches, stages_per_device=v))
        assert predicted.step_time == pytest.approx(actual.step_time, rel=1e-9)


def test_the_report_states_each_part_with_its_figure(tmp_path):
    costs = {s: {"f": 2.0 + s, "b": 3.0, "w": 1.0, "gap_f": 0.25, "gap_b": 0.5, "gap_w": 0.5, "warmup_f": 1.5}
             for s in range(4)}
    truth = ppviz.Config("1f1b", devices=4, microbatches=8, comm=0.5, stage_costs=costs, time_unit="ms",
                         step=ppviz.Step(setup=4.0, optimizer=(6.0,) * 4))
    cal = ppviz.calibrate(_as_profiled(ppviz.simulate(truth), tmp_path))
    report = cal.report()
    assert "  stage 0: F 2±0 (+0.25, first +1.5), B 4±0 (+0.5)" in report
    assert "host gap before such ops, added to their cost: 0.375 ms per op on average" in report
    assert "warm-up: the first microbatch's ops (first +x) take 6 ms more in all, 6 ms of it in forwards" in report
    assert "per-step fixed cost 10 ms: 4 ms before the first op (set-up), 6 ms after the last" in report
    assert f"measured step time {cal.measured.step_time:.4g} ms, simulated {cal.measured.step_time:.4g} ms" in report
    # the fixed cost stays fixed with the microbatches; a stage count that doubles halves each stage's
    # share of the tail (a device holds two) and of the warm-up (it follows the layers), not the gaps
    assert cal.config_for(microbatches=32).step == cal.config.step
    two = cal.config_for("interleaved-1f1b", stages_per_device=2)
    assert two.step.setup == 4.0 and two.step.optimizer == pytest.approx((3.0,) * 8)
    assert ppviz.simulate(two).tail == pytest.approx([6.0] * 4)
    assert [two.stage_costs[s]["warmup_f"] for s in range(8)] == pytest.approx([0.75] * 8)
    assert [two.stage_costs[s]["gap_f"] for s in range(8)] == pytest.approx([0.25] * 8)
    assert [two.stage_costs[s]["f"] for s in range(8)] == pytest.approx([1.0, 1.0, 1.5, 1.5, 2.0, 2.0, 2.5, 2.5])
    # a split schedule from full backwards: I and W are an op each, and each pays a B's gap
    zb = cal.config_for("zb-h1")
    assert (zb.stage_costs[0]["gap_b"], zb.stage_costs[0]["gap_w"]) == (0.5, 0.5)


def test_a_trace_without_step_spans_has_no_fixed_cost():
    cal = ppviz.calibrate(_as_measured(ppviz.simulate(ppviz.Config("1f1b", time_unit="ms"))))
    assert not cal.fixed.measured and cal.config.step is None
    assert "per-step fixed cost: not measured" in cal.report()
