"""Measured runs made here: real ``torch.distributed.pipelining`` steps on 4 CPU ranks (gloo),
profiled with ``torch.profiler`` (tests/pipeline_runs.py), then loaded, calibrated and compared
with their simulation. One set of processes runs every schedule (about 30 s on 2 busy cores).

The emulated-device-time model sleeps for fixed times per layer, so its figures are stable
under load; the real-matmul model contends for the cores and is checked loosely.
"""

import gzip
import json
import math

import numpy as np
import pytest

import ppviz
from tests.pipeline_runs import EMULATED_LAYERS, MATMUL_LAYERS, run_pipeline

#: the emulated layers sleep and the real ones multiply, both on two cores: xdist workers running
#: beside the four gloo ranks stretch some runs' waits (in CI, ZBV's costs predicted interleaved
#: zero-bubble 21 % short), so ``./run-tests`` runs this module alone, after the parallel tests
pytestmark = pytest.mark.serial

P = 4
EMULATED = {
    # name: (torch schedule, microbatches, stages per rank, placement, extra)
    "gpipe": ("GPipe", 8, 1, None, {"steps": 3}),
    "1f1b": ("1F1B", 8, 1, None, {"steps": 3, "annotate": True}),
    "1f1b_m4": ("1F1B", 4, 1, None, {"steps": 3, "annotate": True}),
    "interleaved": ("Interleaved1F1B", 8, 2, None, {"steps": 3}),
    "zbv": ("ZBVZeroBubble", 8, 2, "v", {"steps": 3}),
    "interleaved_zb": ("InterleavedZeroBubble", 8, 2, None, {"steps": 3}),
    "dualpipev": ("DualPipeV", 8, 2, "v", {"steps": 3}),
    "gpipe_annotated": ("GPipe", 4, 1, None, {"steps": 1, "annotate": True}),
    "1f1b_plain": ("1F1B", 4, 1, None, {"steps": 1}),
}
MATMUL = {
    "mm_1f1b": ("1F1B", 8, 1, None, {"steps": 3, "annotate": True}),
    "mm_gpipe": ("GPipe", 8, 1, None, {"steps": 3}),
}
#: (calibrated from, predicting): other schedules or microbatch counts with the same stages
PREDICTIONS = [("1f1b", "gpipe"), ("gpipe", "1f1b"), ("1f1b", "1f1b_m4"), ("1f1b_m4", "1f1b"),
               ("zbv", "interleaved_zb"), ("interleaved_zb", "zbv"), ("zbv", "interleaved")]
#: full backwards cannot tell I from W: predicting a split schedule from one assumes W = ½ B (the
#: emulated layers' W is ⅓ of B), so these are checked more loosely
UNIDENTIFIED = [("interleaved", "zbv")]


def _plans():
    plans = []
    for group, model, layers in ((EMULATED, "emulated", EMULATED_LAYERS), (MATMUL, "matmul", MATMUL_LAYERS)):
        for name, (schedule, m, v, placement, extra) in group.items():
            plan = {"name": name, "schedule": schedule, "microbatches": m, "stages_per_rank": v, "model": model,
                    "layers": layers, **extra}
            if placement:
                plan["placement"] = placement
            plans.append(plan)
    return plans


#: a run whose steps differ by more than this was disturbed by the machine (another job took the
#: cores for a while): it is measured again, at most twice, rather than calibrated on noise
NOISY = 0.15


def _spread(files) -> float:
    t = ppviz.load_trace(files).steps.pipeline_time
    return float(t.max() / t.min() - 1)


#: the two real-matmul runs are measured seconds apart, and the machine's speed can change between
#: them for a whole run (another job takes the cores), which the spread of a run's steps cannot
#: show: in CI a 1F1B run took 447 ms against its usual 250 while GPipe's took 248 ms, so that
#: 1F1B's costs predicted GPipe at twice its time. When one run's fitted compute per microbatch is
#: more than DRIFT times the other's, both are measured again. Undisturbed, the ratio was 1.03 to
#: 1.27 (eight pairs of runs)
DRIFT = 1.6


def _compute(files) -> float:
    costs = ppviz.calibrate(ppviz.load_trace(files)).stage_costs()
    return sum(c["f"] + c["b"] + c["w"] for c in costs.values())


def _drift(out) -> float:
    a, b = (_compute(out[name]) for name in MATMUL)
    return max(a / b, b / a)


@pytest.fixture(scope="module")
def runs(torch_pipelining, tmp_path_factory):
    plans = _plans()
    out = run_pipeline(plans, P, tmp_path_factory.mktemp("runs"), timeout=240)
    for _ in range(2):
        noisy = [p for p in plans if p["steps"] > 1 and p["name"] != "1f1b_plain" and _spread(out[p["name"]]) > NOISY]
        if _drift(out) > DRIFT:
            noisy += [p for p in plans if p["name"] in MATMUL and p not in noisy]
        if not noisy:
            break
        print(f"\nmeasuring again (steps differ by more than {NOISY:.0%}, or the matmul runs' compute by more "
              f"than {DRIFT}×): {', '.join(p['name'] for p in noisy)}")
        out.update(run_pipeline(noisy, P, tmp_path_factory.mktemp("again"), timeout=240))
    return out


@pytest.fixture(scope="module")
def measured(runs):
    return {name: ppviz.load_trace(files) for name, files in runs.items() if name != "1f1b_plain"}


def _spec(name):
    return {**EMULATED, **MATMUL}[name]


@pytest.mark.parametrize("name", [n for n in EMULATED if n != "1f1b_plain"] + list(MATMUL))
def test_observed_order_is_torchs(measured, name):
    schedule, m, v, _, _ = _spec(name)
    expected = ppviz.from_torch(schedule, devices=P, microbatches=m, stages_per_device=v)
    got = measured[name].program
    assert got.to_actions() == expected.to_actions()
    assert (got.stages, got.microbatches, got.devices) == (P * v, m, P)


def test_schedules_are_recognised(measured):
    names = {n: measured[n].program.name for n in ("gpipe", "1f1b", "interleaved", "zbv", "dualpipev",
                                                   "interleaved_zb")}
    assert names == {"gpipe": "gpipe", "1f1b": "1f1b", "interleaved": "interleaved-1f1b", "zbv": "zb-v",
                     "dualpipev": "dualpipe-v", "interleaved_zb": "interleaved-zb"}


def _sleeps(stage, stages, kind):
    share = len(EMULATED_LAYERS) // stages
    layers = EMULATED_LAYERS[stage * share:(stage + 1) * share]
    f = sum(x[0] for x in layers)
    # the model's first layer computes no input gradient: its input needs none
    b = sum(x[1] for x in layers) - (layers[0][1] if stage == 0 else 0)
    w = sum(x[2] for x in layers)
    return {"F": f, "B": b + w, "I": b, "W": w}[kind]


@pytest.mark.parametrize("name", ["gpipe", "1f1b", "interleaved", "zbv"])
def test_op_times_are_the_computation_without_the_wait(measured, name):
    """Each stage's median op time is its layers' sleeps plus some overhead, although torch's
    spans (GPipe's Forward i, the runtime's PP:1F0) hold the wait for the input: measured from
    the span's start instead, some stage's ops would be far longer."""
    m = measured[name]
    s = m.samples
    S = m.program.stages
    spans_too_long = False
    for stage in range(S):
        for kind in set(s.kind[s.stage == stage]):
            if name == "zbv" and stage == 0 and kind == "I":
                continue  # torch skips stage 0's input gradient: the whole backward runs in its W
            sel = (s.stage == stage) & (s.kind == kind) & ~s.pair
            expected = _sleeps(0, S, "B") if (name == "zbv" and stage == 0 and kind == "W") else \
                _sleeps(stage, S, kind)
            bound = expected * 1.2 + 3.0
            got = float(np.median(s.duration[sel]))
            assert expected <= got <= bound, (stage, kind, got, expected)
            spans_too_long |= float(np.median(s.duration[sel] + s.wait[sel])) > bound
    assert spans_too_long == (name != "1f1b")  # ppviz.annotate's spans hold no wait


def test_gpipe_annotated_takes_the_inner_spans(measured):
    m = measured["gpipe_annotated"]
    assert m.program.to_actions() == ppviz.from_torch("GPipe", devices=P, microbatches=4).to_actions()
    assert np.all(m.wait == 0)  # the annotation is around the computation alone
    outer = measured["gpipe"]
    assert outer.wait.max() > 1.0


def test_schedule_1f1b_needs_annotate(runs):
    with pytest.raises(ppviz.ParseError, match=r"ppviz\.annotate\(stage\)"):
        ppviz.load_trace(runs["1f1b_plain"])


def test_steps_are_the_profilers(measured, runs):
    m = measured["gpipe"]
    assert m.steps.label.tolist() == [1, 2, 3]  # ProfilerStep#1..#3 (#0 warmed up)
    assert len(m.samples) == 3 * len(m.ops)
    assert m.makespan == np.median(m.steps.pipeline_time)
    first = ppviz.load_trace(runs["gpipe"], step="first")
    last = ppviz.load_trace(runs["gpipe"], step=3)
    assert first.step == 0 and last.step == 2
    assert first.makespan == pytest.approx(m.steps.pipeline_time[0])
    assert last.makespan == pytest.approx(m.steps.pipeline_time[2])
    with pytest.raises(ppviz.ConfigError, match="step=7"):
        ppviz.load_trace(runs["gpipe"], step=7)


def test_rank_comes_from_the_trace_not_the_file_order(measured, runs):
    again = ppviz.load_trace(list(reversed(runs["1f1b"])))
    assert again.program == measured["1f1b"].program
    np.testing.assert_array_equal(again.ops.start, measured["1f1b"].ops.start)


def _rewrite(src, dst, change):
    with open(src) as fh:
        trace = json.load(fh)
    change(trace)
    with open(dst, "w") as fh:
        json.dump(trace, fh)
    return dst


def test_base_time_per_file(measured, runs, tmp_path):
    """Moving 5 s from the events' ts into baseTimeNanoseconds changes nothing."""
    def move(trace):
        trace["baseTimeNanoseconds"] += 5_000_000_000
        for e in trace["traceEvents"]:
            if "ts" in e:
                e["ts"] -= 5_000_000
    files = list(runs["interleaved"])
    files[2] = _rewrite(files[2], tmp_path / "rank2.json", move)
    again = ppviz.load_trace(files)
    np.testing.assert_allclose(again.ops.start, measured["interleaved"].ops.start, atol=1e-6)


def test_clocks_of_different_hosts_are_aligned(measured, runs, tmp_path):
    """Rank 2 on 'another host' whose clock is 1.5 s ahead: the messages align it again."""
    def other_host(trace):
        trace["host_name"] = "another-host"
        for e in trace["traceEvents"]:
            if "ts" in e:
                e["ts"] += 1_500_000
    files = list(runs["interleaved"])
    files[2] = _rewrite(files[2], tmp_path / "rank2.json", other_host)
    original = measured["interleaved"]
    aligned = ppviz.load_trace(files)
    # exact up to the asymmetry of the fastest messages each way (the NTP assumption), which a
    # busy machine can stretch; the estimate itself must move by exactly the clock's shift
    assert aligned.clock_offsets[2] == pytest.approx(-1500.0, abs=5.0), aligned.clock_offsets
    same_host = ppviz.load_trace(runs["interleaved"], align=True)
    assert aligned.clock_offsets[2] == pytest.approx(same_host.clock_offsets[2] - 1500.0, abs=1e-6)
    np.testing.assert_allclose(aligned.ops.start, same_host.ops.start, atol=1e-6)
    np.testing.assert_allclose(aligned.ops.start, original.ops.start, atol=5.0)
    naive = ppviz.load_trace(files, align=False)
    assert naive.makespan > original.makespan + 1000


def test_merged_file(measured, runs, tmp_path):
    """All ranks in one file, one process each, named "rank N" (or not named at all)."""
    for labelled in (True, False):
        events = []
        for rank, path in enumerate(runs["zbv"]):
            with open(path) as fh:
                trace = json.load(fh)
            for e in trace["traceEvents"]:
                e = dict(e, pid=100 + 7 * (3 - rank))
                if e.get("name") == "process_name":
                    e["args"] = {"name": f"rank {rank}" if labelled else "python"}
                events.append(e)
        merged = {"traceEvents": events, "baseTimeNanoseconds": trace["baseTimeNanoseconds"]}
        path = tmp_path / f"merged{labelled}.json.gz"
        with gzip.open(path, "wt") as fh:
            json.dump(merged, fh)
        got = ppviz.load_trace(path)
        assert got.program == measured["zbv"].program
        np.testing.assert_allclose(got.ops.start, measured["zbv"].ops.start, atol=1e-6)


def test_transfers_found(measured):
    m = measured["interleaved"]
    t = m.transfers
    # every dependency between ranks of 2 stages per rank on 4 ranks: F and B of 7 boundaries
    assert len(t) == 2 * 7 * 8
    assert np.all(t.end >= t.start) and np.all(t.src != t.dst)
    assert set(np.unique(t.kind)) == {"F", "B"}


def _figures(measured):
    rows = {}
    for name in measured:
        if name in ("gpipe_annotated",):
            continue
        cal = ppviz.calibrate(measured[name])
        rows[name] = (measured[name].makespan, cal.simulate().makespan, cal.error)
    return rows


def test_calibration_reproduces_the_measured_schedule(measured, capsys):
    rows = _figures(measured)
    with capsys.disabled():
        print("\nreproduction (measured vs calibrated simulation of the same schedule, ms):")
        for name, (t, s, e) in rows.items():
            print(f"  {name:14s} measured {t:8.2f}  simulated {s:8.2f}  {e:+.1%}")
    for name in EMULATED:
        if name in rows:
            assert abs(rows[name][2]) < 0.10, (name, rows[name])
    for name in MATMUL:  # real matmuls contend for 2 busy cores: loosely
        assert abs(rows[name][2]) < 0.5, (name, rows[name])


def _predict(measured, source, target):
    cal = ppviz.calibrate(measured[source])
    goal = measured[target]
    schedule, m, v, _, _ = _spec(target)
    config = cal.config_for(goal.program.name, microbatches=m, stages_per_device=v)
    return ppviz.simulate(config).makespan, float(np.median(goal.steps.pipeline_time))


def test_calibration_predicts_other_schedules_and_microbatch_counts(measured, capsys):
    """Against the other run's median step: the runs are seconds apart on a shared machine."""
    real = [("mm_1f1b", "mm_gpipe"), ("mm_gpipe", "mm_1f1b")]
    results = [(s, t, *_predict(measured, s, t)) for s, t in PREDICTIONS + UNIDENTIFIED + real]
    with capsys.disabled():
        print("\nprediction (calibrated on one run, simulated for another, ms):")
        for s, t, predicted, actual in results:
            print(f"  {s:14s} → {t:14s} predicted {predicted:8.2f}  measured {actual:8.2f}  "
                  f"{predicted / actual - 1:+.1%}")
    for s, t, predicted, actual in results:
        if (s, t) in real:
            # four ranks of real matmuls share two cores, and how they share them differs between
            # schedules (runs whose machine changed speed in between are measured again, DRIFT).
            # From 1F1B, predictions of GPipe have ranged from −14 % to +14 % (12 pairs of runs).
            # From GPipe they run high: its four ranks send at once, and the fitted comm (a mean,
            # stalls included, by design) was 4.6–7.7 ms against 1F1B's 1.8–2.3 ms; predictions of
            # 1F1B ranged from −10 % to +68 % (24 pairs), and once in CI +120 %. So only errors
            # beyond those fail
            slack = 3 if s == "mm_gpipe" else 2
            assert 1 / slack < predicted / actual < slack, (s, t, predicted, actual)
            continue
        bound = 0.15 if (s, t) in PREDICTIONS else 0.3
        assert abs(predicted / actual - 1) < bound, (s, t, predicted, actual)


def test_residuals_add_up(measured):
    for name in ("1f1b", "zbv", "dualpipev", "mm_gpipe"):
        m = measured[name]
        cal = ppviz.calibrate(m)
        r = ppviz.residuals(m, cal)
        assert r.simulated.program == m.program
        assert r.attribution.total == pytest.approx(r.difference, abs=1e-6)
        np.testing.assert_allclose(r.start, m.ops.start - r.simulated.ops.start)
        np.testing.assert_allclose(r.busy.sum(), m.busy.sum() - r.simulated.busy.sum())
        assert "compute variance" in r.summary()
        json.dumps(r.describe())


def test_residuals_find_the_straggler(measured):
    """Against costs that underrate stage 3 by a third, device 3 is named the straggler."""
    m = measured["1f1b"]
    cal = ppviz.calibrate(m)
    costs = dict(cal.config.stage_costs)
    costs[3] = {k: v * 2 / 3 for k, v in costs[3].items()}
    r = ppviz.residuals(m, cal.config.replace(stage_costs=costs))
    assert r.straggler == 3
    assert r.attribution.compute_variance > 0.05 * m.makespan


def test_overlapped_pairs_are_fitted(measured):
    m = measured["dualpipev"]
    assert m.program.pair.any()
    cal = ppviz.calibrate(m)
    # torch runs a pair's F and B one after the other and sleeps do not overlap: F&B ≈ F + B
    assert cal.fb_ratio is not None and 0.8 < cal.fb_ratio < 1.3, cal.fb_ratio


def test_a_measured_run_is_a_result_everywhere(measured, tmp_path):
    from ppviz.widgets.gantt import GanttWidget

    m = measured["zbv"]
    assert isinstance(m, ppviz.Result)
    widget = GanttWidget(m)
    assert widget._meta["ops"] == len(m.ops) and widget._meta["title"] == "measured zb-v"
    view = ppviz.show(m)
    assert view.result is m
    cal = ppviz.calibrate(m)
    ppviz.compare([m, cal.config, cal.config_for("zb-h1", stages_per_device=1)])
    path = tmp_path / "zbv.json"
    m.to_chrome_trace(path)
    back = ppviz.load_trace(path)
    assert back.program == m.program
    np.testing.assert_allclose(back.ops.start, m.ops.start, atol=1e-9)
    np.testing.assert_allclose(back.ops.end, m.ops.end, atol=1e-9)
    assert "pipeline time" in m.summary() and math.isfinite(m.bubble_fraction)


def _pipedream_flush(p: int, m: int, rank: int) -> list[str]:
    """1F1B's order on ``rank`` from its definition (PipeDream-Flush, arXiv 2006.09503): p − 1 − rank
    warm-up forwards, then a forward and a backward in turn, then the remaining backwards."""
    warm = min(p - 1 - rank, m)
    order = [f"{rank}F{i}" for i in range(warm)]
    for i in range(m - warm):
        order += [f"{rank}F{warm + i}", f"{rank}B{i}"]
    return order + [f"{rank}B{i}" for i in range(m - warm, m)]


def test_the_shipped_trace():
    """The example trace ships in the wheel and loads without torch: a 1F1B run on 4 ranks."""
    m = ppviz.load_trace(ppviz.example_trace())
    assert m.program.to_actions() == {r: _pipedream_flush(4, 8, r) for r in range(4)}
    assert len(m.steps) == 2
    assert abs(ppviz.calibrate(m).error) < 0.10


def test_the_shipped_trace_is_torchs_1f1b(torch_pipelining):
    m = ppviz.load_trace(ppviz.example_trace())
    assert m.program.to_actions() == ppviz.from_torch("1F1B", devices=4, microbatches=8).to_actions()


def test_fast_reader_reads_what_a_full_parse_reads(runs):
    """Kineto's layout lets the reader parse only the annotations; on every real trace it finds
    exactly the events a full parse keeps."""
    import orjson

    from ppviz.io import torch_profiler

    for files in runs.values():
        for path in files:
            data = path.read_bytes()
            fast = torch_profiler.kineto_events(data)
            assert fast is not None
            full = orjson.loads(data)
            kept = [e for e in full["traceEvents"] if isinstance(e.get("name"), str) and (
                e["name"].startswith(("PP:", "Forward ", "Backward ", "ProfilerStep#"))
                or e["name"] in ("process_name", "process_labels")
                or torch_profiler._BACKEND_RE.fullmatch(e["name"]))]
            assert fast["traceEvents"] == kept
            assert {k: v for k, v in fast.items() if k != "traceEvents"} == \
                {k: v for k, v in full.items() if k not in ("traceEvents", "traceName")}
