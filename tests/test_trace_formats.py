"""Every input format of ppviz.load_trace, its edge cases, and hostile files.

Real profiler traces are made by tests/test_measured_runs.py; here a small hand-written
PyTorch-profiler fixture pins the parser's edge cases (a nested annotation, a receive inside a
compute span, ops outside any profiler step, UNSHARD), ppviz's own Chrome traces round-trip,
the minimal JSON format reads as documented, and bad files get a ParseError that says what was
found and what was expected.
"""

import gzip
import json
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ppviz
from ppviz.io.measured_json import measured_json

# ppviz's own Chrome traces --------------------------------------------------------------------

ROUND_TRIP = [
    ppviz.Config(schedule="1f1b", devices=4, microbatches=8, f=1.0, b=2.0, w=0.5, comm=0.25),
    ppviz.Config(schedule="interleaved-1f1b", devices=4, microbatches=8, stages_per_device=2, f=1.5, b=1.0, w=1.0),
    ppviz.Config(schedule="zb-v", devices=4, microbatches=8, f=1.0, b=1.0, w=1.0, comm=0.1),
    ppviz.Config(schedule="dualpipe-v", devices=4, microbatches=10, f=1.0, b=1.5, w=0.5, fb=2.0),
    ppviz.Config(schedule="gpipe", devices=3, microbatches=5, stage_costs={2: {"f": 3.0}}),
    ppviz.Config(schedule="inference", devices=4, microbatches=6, f=1.5, comm=0.5),
    # transfers add their own events to the trace; the ops read back are the same
    ppviz.Config(schedule="1f1b", devices=4, microbatches=8, topology=ppviz.Link(0.1, bandwidth=2.0), comm_bytes=1.0),
]


def written(result, path, **options):
    """The trace file of ``result`` at ``path`` (exports return None when they write)."""
    result.to_chrome_trace(path, **options)
    return path


@pytest.mark.parametrize("config", ROUND_TRIP, ids=lambda c: c.schedule)
def test_ppviz_chrome_trace_round_trip(config, tmp_path):
    result = ppviz.simulate(config)
    back = ppviz.load_trace(written(result, tmp_path / "run.json"))
    assert back.program == result.program
    np.testing.assert_allclose(back.ops.start, result.ops.start, atol=1e-9)
    np.testing.assert_allclose(back.ops.end, result.ops.end, atol=1e-9)
    assert back.makespan == pytest.approx(result.makespan)
    assert back.program.name == config.schedule  # recognised: the registry builds the same program


def test_ppviz_chrome_trace_units(tmp_path):
    """A trace written with 250 µs per unit loads in milliseconds: a quarter of the units."""
    result = ppviz.simulate(ROUND_TRIP[0])
    back = ppviz.load_trace(written(result, tmp_path / "run.json", time_unit_us=250.0))
    np.testing.assert_allclose(back.ops.end, result.ops.end / 4, atol=1e-9)


#: a unitless run: 33 units long
UNITLESS = ppviz.Config(schedule="1f1b", devices=4, microbatches=8)


def test_a_unitless_run_reads_back_unitless(tmp_path):
    # before: it came back labelled ms ("pipeline time 33 ms")
    result = ppviz.simulate(UNITLESS)
    back = ppviz.load_trace(written(result, tmp_path / "run.json"))
    assert back.config.time_unit is None
    np.testing.assert_allclose(back.ops.end, result.ops.end, rtol=1e-12)
    assert repr(back) == "<Measured 1f1b: 4 devices, pipeline time 33, bubble 27.3%, 1 step(s)>"
    assert "  pipeline time    33\n" in back.summary() and " ms" not in back.summary()
    # a unit ppviz cannot convert is drawn as a unitless one, and read back with its name
    cycles = ppviz.simulate(UNITLESS.replace(time_unit="cycles"))
    back = ppviz.load_trace(written(cycles, tmp_path / "cycles.json"))
    assert back.config.time_unit == "cycles" and back.makespan == 33.0
    assert repr(back).startswith("<Measured 1f1b: 4 devices, pipeline time 33 cycles,")


@pytest.mark.parametrize("unit, ms", [("s", 1e3), ("us", 1e-3), ("ns", 1e-6)])
def test_a_run_in_real_time_reads_back_in_milliseconds_with_its_times(tmp_path, unit, ms):
    # measured runs are in ms: a run in s reads back with the same times, a thousand times the numbers
    result = ppviz.simulate(ppviz.Config(schedule="zb-h1", devices=3, microbatches=4, f=1.5 / ms, b=1.0 / ms,
                                         w=0.5 / ms, comm=0.1 / ms, time_unit=unit))
    back = ppviz.load_trace(written(result, tmp_path / "run.json"))
    assert back.config.time_unit == "ms" and back.program == result.program
    np.testing.assert_allclose(back.ops.start, result.ops.start * ms, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(back.ops.end, result.ops.end * ms, rtol=1e-12)
    assert back.makespan == pytest.approx(16.8, rel=1e-12) == pytest.approx(result.makespan * ms, rel=1e-12)


def test_traces_written_before_ppviz_recorded_unitless_read_in_milliseconds(tmp_path):
    trace = json.loads(open(written(ppviz.simulate(UNITLESS), tmp_path / "run.json")).read())
    for key in ("unitless", "time_unit"):
        del trace["otherData"][key]
    back = ppviz.load_trace(_write(tmp_path, trace, "old.json"))
    assert back.config.time_unit == "ms" and back.makespan == 33.0


@pytest.mark.parametrize("change, message", [
    ({"unitless": "yes"}, "otherData.unitless must be true or false; found 'yes'"),
    ({"time_unit_us": 0}, "otherData.time_unit_us must be a number from 1e-3 to 1e12 (the microseconds one unit is "
                          "drawn as; ppviz writes 1000 for a unitless run); found 0"),
    ({"time_unit_us": 1e-300}, "otherData.time_unit_us must be a number from 1e-3 to 1e12"),
    ({"time_unit": "two words"}, "otherData.time_unit 'two words' is not a time unit"),
])
def test_a_unitless_trace_with_bad_metadata_is_refused(tmp_path, change, message):
    trace = json.loads(open(written(ppviz.simulate(UNITLESS), tmp_path / "run.json")).read())
    trace["otherData"].update(change)
    with pytest.raises(ppviz.ParseError, match="bad.json: " + re.escape(message)):
        ppviz.load_trace(_write(tmp_path, trace, "bad.json"))


def test_a_unitless_trace_and_a_timed_one_are_not_one_run(tmp_path):
    one = ppviz.simulate(ppviz.Config(schedule="inference", devices=1, microbatches=2))
    unitless = written(one, tmp_path / "unitless.json")
    timed = _write(tmp_path, {"ppviz_measured": 1, "ops": [{"rank": 1, "action": "1F0", "start": 1, "end": 2}]},
                   "timed.json")
    with pytest.raises(ppviz.ParseError) as err:
        ppviz.load_trace([unitless, timed])
    assert str(err.value) == (f"{unitless} (device 0) holds times in no unit and {timed} (rank 1) in 'ms'; give "
                              f"traces of one run, all in real time or all from one unitless ppviz run")


@given(st.floats(0.01, 50), st.floats(0.01, 50), st.floats(0, 50), st.floats(0, 5), st.sampled_from(["1f1b", "zb-h1"]))
def test_chrome_round_trip_any_costs(f, b, w, comm, schedule):
    import tempfile

    result = ppviz.simulate(ppviz.Config(schedule=schedule, devices=3, microbatches=4, f=f, b=b, w=w, comm=comm))
    with tempfile.TemporaryDirectory() as tmp:
        back = ppviz.load_trace(written(result, f"{tmp}/run.json"))
    assert back.program == result.program
    np.testing.assert_allclose(back.ops.start, result.ops.start, rtol=1e-12, atol=1e-9)


# The minimal JSON format ------------------------------------------------------------------------

README_EXAMPLE = {
    "ppviz_measured": 1, "time_unit": "us",
    "ops": [{"rank": 0, "action": "0F0", "start": 0, "end": 1000},
            {"rank": 1, "action": "1F0", "start": 1200, "end": 2200},
            {"rank": 1, "action": "1B0", "start": 2200, "end": 4200},
            {"rank": 0, "action": "0B0", "start": 4400, "end": 6400, "wait_start": 1000}],
}


def _write(tmp_path, obj, name="trace.json"):
    path = tmp_path / name
    path.write_text(json.dumps(obj) if not isinstance(obj, str) else obj)
    return path


def test_minimal_json(tmp_path):
    m = ppviz.load_trace(_write(tmp_path, README_EXAMPLE))
    assert m.program.to_actions() == {0: ["0F0", "0B0"], 1: ["1F0", "1B0"]}
    np.testing.assert_allclose(m.ops.start, [0.0, 4.4, 1.2, 2.2])  # µs → ms, program order
    np.testing.assert_allclose(m.wait, [0.0, 3.4, 0.0, 0.0])
    assert m.makespan == pytest.approx(6.4)
    assert m.busy.tolist() == pytest.approx([3.0, 3.0])


def test_minimal_json_takes_every_time_unit_the_topology_does(tmp_path):
    # the micro sign (U+00B5) and the Greek mu (U+03BC) look alike: both mean microseconds
    starts = {}
    for unit, per_ms in (("s", 1e3), ("ms", 1.0), ("us", 1e-3), ("\u00b5s", 1e-3), ("\u03bcs", 1e-3), ("ns", 1e-6)):
        m = ppviz.load_trace(_write(tmp_path, {**README_EXAMPLE, "time_unit": unit}))
        starts[unit] = m.ops.start.tolist()
        assert m.makespan == 6400 * per_ms, unit
    assert starts["\u03bcs"] == starts["\u00b5s"] == starts["us"]


@pytest.mark.parametrize("config", ROUND_TRIP, ids=lambda c: c.schedule)
def test_minimal_json_round_trip(config, tmp_path):
    result = ppviz.simulate(config)
    back = ppviz.load_trace(_write(tmp_path, measured_json(result)))
    assert back.program == result.program
    np.testing.assert_allclose(back.ops.end, result.ops.end)


def test_minimal_json_keeps_a_unitless_run_unitless_and_converts_real_units(tmp_path):
    # a unitless run was written as "ms" and read back as milliseconds
    result = ppviz.simulate(UNITLESS)
    written = measured_json(result)
    assert written["time_unit"] is None
    back = ppviz.load_trace(_write(tmp_path, written))
    assert back.config.time_unit is None and back.makespan == result.makespan == 33
    assert " ms" not in back.summary() and " ms" not in ppviz.residuals(back, UNITLESS).summary()
    # a unit the format does not name is written in its own units, unlabelled
    assert measured_json(ppviz.simulate(UNITLESS.replace(time_unit="cycles")))["time_unit"] is None
    timed = ppviz.simulate(UNITLESS.replace(time_unit="us"))
    back = ppviz.load_trace(_write(tmp_path, measured_json(timed), "us.json"))
    assert back.config.time_unit == "ms" and back.makespan == pytest.approx(0.033, rel=1e-12)


def test_minimal_json_steps_and_split_files(tmp_path):
    """Two steps, each rank in its own file; the faster step is not the median of two."""
    ops = README_EXAMPLE["ops"]
    # the second step is the first slowed down by a third (6.4 → 8.4 ms): its ops still never overlap
    second = [dict(op, step=1, **{k: 10_000 + op[k] * 1.3125 for k in ("start", "end", "wait_start") if k in op})
              for op in ops]
    first = [dict(op, step=0) for op in ops]
    files = []
    for rank in (0, 1):
        doc = {"ppviz_measured": 1, "time_unit": "us", "ops": [op for op in first + second if op["rank"] == rank]}
        files.append(_write(tmp_path, doc, f"rank{rank}.json"))
    m = ppviz.load_trace(files)
    assert m.steps.label.tolist() == [0, 1]
    assert m.steps.pipeline_time == pytest.approx([6.4, 8.4])
    assert m.step == 0 and ppviz.load_trace(files, step="last").makespan == pytest.approx(8.4)
    assert len(m.samples) == 8


def test_compute_ops_that_overlap_on_one_rank_are_refused(tmp_path):
    # before: loaded, "pipeline time 3 ms, bubble -33.3%"
    path = _write(tmp_path, {"ppviz_measured": 1, "ops": [{"rank": 0, "action": "0F0", "start": 0, "end": 2},
                                                          {"rank": 0, "action": "0F1", "start": 1, "end": 3}]})
    with pytest.raises(ppviz.ParseError) as err:
        ppviz.load_trace(path)
    assert str(err.value) == (
        f"{path} (rank 0): compute ops 0F0 at [0, 2] ms and 0F1 at [1, 3] ms overlap on rank 0 (by 1 ms); a rank "
        f"computes one op at a time, so each op must start at or after the end of the one before it (an overlapped "
        f"forward and backward is one op: '(0F7;7B3)OVERLAP_F_B')")


def test_an_op_inside_another_and_an_overlapped_pair_are_named(tmp_path):
    ops = [{"rank": 0, "action": "(0F1;0B0)OVERLAP_F_B", "start": 0, "end": 10},
           {"rank": 0, "action": "0F0", "start": 4, "end": 5}, {"rank": 0, "action": "0B1", "start": 10, "end": 12}]
    with pytest.raises(ppviz.ParseError, match=re.escape(
            "compute ops (0F1;0B0)OVERLAP_F_B at [0, 10] ms and 0F0 at [4, 5] ms overlap on rank 0 (by 6 ms)")):
        ppviz.load_trace(_write(tmp_path, {"ppviz_measured": 1, "ops": ops}))


def test_ops_that_touch_or_overlap_by_float_rounding_load(tmp_path):
    # 0.1 + 0.2 s ends 5.6e-17 s after 0.3 s: rounding, not an overlap; one nanosecond more is one
    ops = [{"rank": 0, "action": "0F0", "start": 0.0, "end": 0.1 + 0.2}, {"rank": 0, "action": "0B0", "start": 0.3,
                                                                         "end": 0.5},
           {"rank": 0, "action": "0F1", "start": 0.5, "end": 0.7}, {"rank": 0, "action": "0B1", "start": 0.7, "end": 1}]
    m = ppviz.load_trace(_write(tmp_path, {"ppviz_measured": 1, "time_unit": "s", "ops": ops}))
    assert m.makespan == 1000.0 and m.bubble_fraction == 0.0
    ops[0]["end"] = 0.300000001
    with pytest.raises(ppviz.ParseError, match=re.escape("0F0 at [0, 300.000001] ms and 0B0 at [300, 500] ms overlap "
                                                         "on rank 0 (by 1e-06 ms)")):
        ppviz.load_trace(_write(tmp_path, {"ppviz_measured": 1, "time_unit": "s", "ops": ops}, "over.json"))


def test_ranks_overlap_each_other_and_ppviz_traces_are_checked_per_device(tmp_path):
    # every pipeline's ranks compute at once: only one device's own ops may not overlap
    two = ppviz.simulate(ppviz.Config(schedule="gpipe", devices=2, microbatches=2))
    assert ppviz.load_trace(written(two, tmp_path / "ok.json")).makespan == two.makespan
    trace = json.loads(open(tmp_path / "ok.json").read())
    second = next(e for e in trace["traceEvents"] if e.get("name") == "1F1")
    second["ts"] -= 500.0  # 1F1 starts half a unit before 1F0 ends, on device 1's thread
    path = _write(tmp_path, trace, "bad.json")
    with pytest.raises(ppviz.ParseError, match=re.escape(
            f"{path} (device 1): compute ops 1F0 at [1, 2] and 1F1 at [1.5, 2.5] overlap on rank 1 (by 0.5); ")):
        ppviz.load_trace(path)


def test_measured_json_of_a_measured_run_keeps_waits(tmp_path):
    m = ppviz.load_trace(_write(tmp_path, README_EXAMPLE))
    again = ppviz.load_trace(_write(tmp_path, measured_json(m), "again.json"))
    np.testing.assert_allclose(again.wait, m.wait)
    np.testing.assert_allclose(again.ops.start, m.ops.start)


# A hand-written PyTorch profiler fixture for the parser's edge cases --------------------------


def _x(name, ts, dur, pid=1, cat="user_annotation"):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": pid, "ts": ts, "dur": dur}


def _torch_trace(rank, events, base=1_700_000_000_000_000_000, host="h"):
    return {"schemaVersion": 1, "distributedInfo": {"backend": "gloo", "rank": rank, "world_size": 2},
            "host_name": host, "baseTimeNanoseconds": base, "traceEvents": events}


def _edge_fixture():
    """Two ranks, one stage each, m = 1, torch's runtime names: rank 1's 1F0 waits 300 µs for its
    receive inside the span; rank 0's 0B0 has ppviz.annotate's span inside the runtime's."""
    r0 = [_x("ProfilerStep#4", 0, 2000), _x("PP:0UNSHARD", 1, 1), _x("PP:0F0", 10, 100), _x("PP:0SEND_F0", 111, 5),
          _x("gloo:send", 112, 900), _x("PP:0RECV_B0", 120, 5), _x("gloo:recv", 121, 779),
          _x("PP:0B0", 130, 900), _x("PP:0B0", 900, 100), _x("aten::mm", 910, 50, cat="cpu_op"),
          _x("PP:0F0", 5000, 100)]  # outside every profiler step: dropped
    r1 = [_x("ProfilerStep#4", 0, 2000, pid=2), _x("PP:1RECV_F0", 20, 5, pid=2), _x("gloo:recv", 21, 399, pid=2),
          _x("PP:1F0", 120, 400, pid=2), _x("PP:1B0", 520, 300, pid=2), _x("PP:1SEND_B0", 821, 5, pid=2),
          _x("gloo:send", 822, 10, pid=2)]
    return _torch_trace(0, r0), _torch_trace(1, r1)


def test_torch_profiler_edge_cases(tmp_path):
    files = [_write(tmp_path, t, f"rank{i}.json") for i, t in enumerate(_edge_fixture())]
    m = ppviz.load_trace(files)
    assert m.program.to_actions() == {0: ["0F0", "0B0"], 1: ["1F0", "1B0"]}
    assert m.steps.label.tolist() == [4]
    # rank 1's F computes from its receive's completion (420 µs), not its span's start (120)
    np.testing.assert_allclose(m.ops.start, [0.0, 0.89, 0.41, 0.51])
    np.testing.assert_allclose(m.ops.end, [0.1, 0.99, 0.51, 0.81])
    np.testing.assert_allclose(m.wait, [0.0, 0.0, 0.3, 0.0])  # 0B0's outer span is replaced by the inner one
    t = m.transfers
    assert sorted(zip(t.src.tolist(), t.dst.tolist(), t.kind.tolist())) == [(0, 1, "F"), (1, 0, "B")]
    forward = int(np.flatnonzero(t.kind == "F")[0])
    assert (t.start[forward], t.end[forward]) == pytest.approx((0.101, 0.41))  # posted → received


def test_torch_profiler_ops_of_one_rank_overlap_across_its_threads(tmp_path):
    """A rank's compute annotations are its device's compute whichever thread recorded them: rank
    1's 1B0 on another thread, starting while 1F0 computes (from its receive at 420 µs to 520)."""
    r0, r1 = _edge_fixture()
    r1["traceEvents"] = [dict(e, tid=7, ts=450, dur=300) if e["name"] == "PP:1B0" else e for e in r1["traceEvents"]]
    files = [_write(tmp_path, t, f"rank{i}.json") for i, t in enumerate((r0, r1))]
    with pytest.raises(ppviz.ParseError) as err:
        ppviz.load_trace(files)
    assert str(err.value).startswith(f"{files[1]}: compute ops 1F0 at [0.42, 0.52] ms and 1B0 at [0.45, 0.75] ms "
                                     f"overlap on rank 1 (by 0.07 ms); ")


def test_torch_profiler_reshard_and_reduce_grad_are_not_ops(tmp_path):
    """torch's runtime also records PP:<stage>RESHARD and PP:<stage>REDUCE_GRAD (FSDP actions,
    no microbatch): read and left out like UNSHARD, the ops and times unchanged."""
    r0, r1 = _edge_fixture()
    r0 = dict(r0, traceEvents=r0["traceEvents"] + [_x("PP:0RESHARD", 1100, 20), _x("PP:0REDUCE_GRAD", 1130, 40)])
    r1 = dict(r1, traceEvents=r1["traceEvents"] + [_x("PP:1REDUCE_GRAD", 830, 30, pid=2),
                                                   _x("PP:1RESHARD", 870, 10, pid=2)])
    m = ppviz.load_trace([_write(tmp_path, t, f"rank{i}.json") for i, t in enumerate((r0, r1))])
    assert m.program.to_actions() == {0: ["0F0", "0B0"], 1: ["1F0", "1B0"]}
    np.testing.assert_allclose(m.ops.start, [0.0, 0.89, 0.41, 0.51])
    np.testing.assert_allclose(m.ops.end, [0.1, 0.99, 0.51, 0.81])


def test_torch_profiler_gpipe_spans(tmp_path):
    """ScheduleGPipe's 'Forward i' / 'Backward i' (no stage: the rank's own) hold the receive, the
    wait for it, the computation and the posting of the send. The computation starts when the
    receive completes (the end of the gloo:recv span that starts inside) and ends where the send
    is posted (the start of the gloo:send span inside)."""
    r0 = [_x("ProfilerStep#1", 0, 3000), _x("Forward 0", 10, 190), _x("gloo:send", 150, 300),
          _x("Backward 0", 300, 1700), _x("gloo:recv", 310, 1190)]
    r1 = [_x("ProfilerStep#1", 0, 3000, pid=2), _x("Forward 0", 100, 500, pid=2), _x("gloo:recv", 110, 290, pid=2),
          _x("Backward 0", 600, 600, pid=2), _x("gloo:send", 1100, 50, pid=2)]
    files = [_write(tmp_path, _torch_trace(r, events), f"rank{r}.json") for r, events in ((1, r1), (0, r0))]
    m = ppviz.load_trace(files)
    assert m.program.to_actions() == {0: ["0F0", "0B0"], 1: ["1F0", "1B0"]}
    # µs 10..150, 1500..2000 on rank 0 and 400..600, 600..1100 on rank 1, from the first op's start
    np.testing.assert_allclose(m.ops.start, [0.0, 1.49, 0.39, 0.59])
    np.testing.assert_allclose(m.ops.end, [0.14, 1.99, 0.59, 1.09])
    np.testing.assert_allclose(m.wait, [0.0, 1.2, 0.3, 0.0])
    t = m.transfers
    got = {(int(a), int(b), k): (s, e) for a, b, k, s, e in zip(t.src, t.dst, t.kind, t.start, t.end)}
    assert got == {(0, 1, "F"): pytest.approx((0.14, 0.39)), (1, 0, "B"): pytest.approx((1.09, 1.49))}


def test_gzip_and_directory(tmp_path):
    for i, t in enumerate(_edge_fixture()):
        with gzip.open(tmp_path / f"rank{i}.json.gz", "wt") as fh:
            json.dump(t, fh)
    (tmp_path / "notes.txt").write_text("not a trace")
    m = ppviz.load_trace(tmp_path)
    assert m.program.to_actions() == {0: ["0F0", "0B0"], 1: ["1F0", "1B0"]}
    assert len(m.sources) == 2


def test_progress_bar(tmp_path, capsys):
    files = [_write(tmp_path, t, f"rank{i}.json") for i, t in enumerate(_edge_fixture())]
    ppviz.load_trace(files, progress=True)
    assert "reading traces" in capsys.readouterr().err
    ppviz.load_trace(files)
    assert capsys.readouterr().err == ""  # small loads stay quiet


def test_progress_bar_by_default_for_large_multi_file_loads(tmp_path, capsys, monkeypatch):
    """By default the bar appears when several files together exceed the threshold (32 MB; here
    lowered to the fixture's size), and never for one file, however large, nor with progress=False."""
    from ppviz.io import traces

    files = [_write(tmp_path, t, f"rank{i}.json") for i, t in enumerate(_edge_fixture())]
    monkeypatch.setattr(traces, "_PROGRESS_BYTES", min(f.stat().st_size for f in files))
    ppviz.load_trace(files)
    err = capsys.readouterr().err
    assert "reading traces" in err and "2/2" in err
    ppviz.load_trace(files, progress=False)
    assert capsys.readouterr().err == ""
    merged = _write(tmp_path, json.dumps(README_EXAMPLE) + " " * 100_000, "merged.json")  # both ranks
    monkeypatch.setattr(traces, "_PROGRESS_BYTES", 10)
    ppviz.load_trace(merged)
    assert capsys.readouterr().err == ""


# Hostile and wrong files ------------------------------------------------------------------------


def _refused(tmp_path, content, *needles, error=ppviz.ParseError, **options):
    path = tmp_path / "bad.json"
    path.write_bytes(content if isinstance(content, bytes) else
                     (content if isinstance(content, str) else json.dumps(content)).encode())
    with pytest.raises(error) as info:
        ppviz.load_trace(path, **options)
    for needle in needles:
        assert needle in str(info.value), str(info.value)
    return str(info.value)


def _one_rank(events, **meta):
    return {"schemaVersion": 1, "baseTimeNanoseconds": 0, "traceEvents": events, **meta}


@pytest.mark.parametrize("content, needles", [
    (b"\x00\x01garbage", ["not JSON"]),
    ("", ["not JSON"]),
    ('{"traceEvents": [', ["not JSON"]),
    ("[1, 2, 3]", ["unknown trace format", "a JSON list", "ppviz_measured"]),
    ({"hello": 1}, ["unknown trace format", "'hello'", "PyTorch profiler"]),
    ({}, ["unknown trace format: found an empty object;"]),
    ("3", ["unknown trace format", "a JSON int"]),
    (_one_rank("nope"), ["'traceEvents' must be a list", "str"]),
    (_one_rank([1]), ["every trace event must be a JSON object", "1"]),
    (_one_rank([_x("aten::mm", 0, 1)]), ["without pipeline annotations", "PP:<action>", "ppviz.annotate"]),
    (_one_rank([_x("PP:0F0", "soon", 1)]), ["ts must be a finite number", "'soon'"]),
    (_one_rank([_x("PP:0F0", 0, -5)]), ["negative duration"]),
    (_one_rank([_x("PP:0X0", 0, 1)]), ["'PP:0X0' is not one of torch's pipeline actions", "PP:5F2"]),
    (_one_rank([_x("PP:" + "9" * 5000 + "F0", 0, 1)]), ["is not one of torch's pipeline actions", "…"]),
    (_one_rank([_x("PP:0F0", 0, 1)], baseTimeNanoseconds=-3), ["baseTimeNanoseconds", "-3"]),
    (_one_rank([_x("PP:0F0", 0, 1)], distributedInfo={"rank": "zero"}), ["distributedInfo.rank", "'zero'"]),
    (_one_rank([_x("PP:0F0", 0, 1), _x("PP:0F1", 1, 1), _x("PP:0B1", 2, 1)]),
     ["no complete pipeline step", "never backwarded", "0B0"]),
    (_one_rank([_x("PP:0F0", 0, 1), _x("PP:0B0", 1, 1), _x("PP:0W0", 2, 1)]), ["no complete pipeline step"]),
    (_one_rank([_x("PP:1F0", 0, 1), _x("PP:1B0", 1, 1)]), ["stage(s) 0 of stages 0..1 run on none of them"]),
    (_one_rank([_x("PP:1048577F0", 0, 1), _x("PP:1048577B0", 1, 1)]), ["stage index above"]),
    ({"ppviz_measured": 2, "ops": []}, ["ppviz_measured is 2", "version 1"]),
    ({"ppviz_measured": 1, "ops": []}, ["'ops' must be a non-empty list"]),
    ({"ppviz_measured": 1, "time_unit": "fortnight", "ops": [{}]}, ["time_unit 'fortnight'", "ms"]),
    ({"ppviz_measured": 1, "ops": [{"rank": 0, "action": "0F0", "start": 0, "end": 1, "colour": "red"}]},
     ["unknown field 'colour'"]),
    ({"ppviz_measured": 1, "ops": [{"rank": -1, "action": "0F0", "start": 0, "end": 1}]}, ["'rank' must be", "-1"]),
    ({"ppviz_measured": 1, "ops": [{"rank": 0, "action": "0F0", "start": 2, "end": 1}]},
     ["wait_start <= start <= end", "start 2"]),
    ({"ppviz_measured": 1, "ops": [{"rank": 0, "action": "F", "start": 0, "end": 1}]}, ["action 'F'", "'0F1'"]),
    ({"ppviz_measured": 1, "ops": [{"rank": 0, "action": "0F0", "start": "1.5", "end": 1}]},
     ["'start' must be a finite number", "'1.5'"]),
    ('{"ppviz_measured": 1, "ops": [{"rank": 0, "action": "0F0", "start": 1e999, "end": 1}]}', ["not JSON"]),
    ({"ppviz_measured": 1, "ops": ["0F0"]}, ["ops[0] must be an object"]),
])
def test_hostile_files(tmp_path, content, needles):
    _refused(tmp_path, content, *needles)


def test_annotate_refuses_what_is_not_a_stage(torch_pipelining):
    """ppviz.annotate wraps a PipelineStage; a module, None or an object with only some of a
    stage's methods is refused with what it lacks, rather than failing later inside torch."""
    import types

    import torch

    half_a_stage = types.SimpleNamespace(stage_index=0, backward_one_chunk=print)
    for wrong, lacks in ((torch.nn.Linear(2, 2), "stage_index"), (None, "stage_index"),
                         (half_a_stage, "forward_one_chunk")):
        with pytest.raises(ppviz.ConfigError, match=rf"stage=.*PipelineStage.*no {lacks}"):
            ppviz.annotate(wrong)


def test_ppviz_trace_with_a_bad_op(tmp_path):
    result = ppviz.simulate(ROUND_TRIP[0])
    trace = json.loads(open(written(result, tmp_path / "ok.json")).read())
    trace["traceEvents"].append({"ph": "X", "name": "<script>", "pid": 1, "tid": 0, "ts": 0, "dur": 1})
    _refused(tmp_path, trace, "'<script>' is not an action")
    trace["traceEvents"][-1] = {"ph": "X", "name": "0F0", "pid": 1, "tid": -2, "ts": 0, "dur": 1}
    _refused(tmp_path, trace, "tid -2")


def test_gzip_bomb_and_broken_gzip(tmp_path):
    bomb = tmp_path / "bomb.json.gz"
    with gzip.open(bomb, "wb") as fh:
        fh.write(b" " * 5_000_000)
    with pytest.raises(ppviz.ParseError, match="more than 1,000,000 bytes"):
        ppviz.load_trace(bomb, max_bytes=1_000_000)
    _refused(tmp_path, gzip.compress(b'{"a": 1}')[:12], "cannot be read")
    big = _write(tmp_path, {"x": "y" * 2000}, "big.json")
    with pytest.raises(ppviz.ParseError, match="more than 1,000 bytes"):
        ppviz.load_trace(big, max_bytes=1000)


def test_ranks_missing_twice_or_unnamed(tmp_path):
    r0, r1 = _edge_fixture()
    a = _write(tmp_path, r0, "a.json")
    with pytest.raises(ppviz.ParseError, match=r"world size of 2, so rank\(s\) 1 are missing"):
        ppviz.load_trace(a)
    b = _write(tmp_path, r0, "b.json")
    with pytest.raises(ppviz.ParseError, match="rank 0 appears twice"):
        ppviz.load_trace([a, b])
    unnamed = dict(r1)
    del unnamed["distributedInfo"]
    with pytest.raises(ppviz.ParseError, match="does not say its rank"):
        ppviz.load_trace([a, _write(tmp_path, unnamed, "c.json")])
    with pytest.raises(ppviz.ParseError, match="is given twice"):
        ppviz.load_trace([a, a])


def test_bad_arguments(tmp_path):
    good = _write(tmp_path, README_EXAMPLE)
    for kwargs, field in ((dict(align="sometimes"), "align"), (dict(progress="yes"), "progress"),
                          (dict(max_bytes=0), "max_bytes"), (dict(step="best"), "step"), (dict(step=True), "step")):
        with pytest.raises(ppviz.ConfigError, match=field):
            ppviz.load_trace(good, **kwargs)
    for paths in (42, None, [good, 3], b"x.json"):
        with pytest.raises(ppviz.ConfigError, match="paths"):
            ppviz.load_trace(paths)
    with pytest.raises(ppviz.ParseError, match="no such file"):
        ppviz.load_trace(tmp_path / "missing.json")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ppviz.ParseError, match="no .json or .json.gz files"):
        ppviz.load_trace(empty)
    with pytest.raises(ppviz.ConfigError, match="paths"):
        ppviz.load_trace([])


def test_clock_alignment_needs_messages(tmp_path):
    """Two ranks that never exchange anything cannot be aligned: say so."""
    doc = {"ppviz_measured": 1, "ops": [{"rank": r, "action": f"0{k}0" if r == 0 else f"0{k}1",
                                        "start": i, "end": i + 1} for r in (0, 1)
                                       for i, k in enumerate("FB")]}
    with pytest.raises(ppviz.ParseError):
        ppviz.load_trace(_write(tmp_path, doc), align=True)


@given(st.binary(max_size=300))
def test_any_bytes_give_a_parse_error_or_a_run(data):
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/x.json"
        with open(path, "wb") as fh:
            fh.write(data)
        try:
            ppviz.load_trace(path)
        except ppviz.PpvizError:
            pass


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
                     max_leaves=20)
_event = st.fixed_dictionaries({"ph": st.sampled_from(["X", "M", "i"]),
                                "name": st.sampled_from(["PP:0F0", "PP:0B0", "PP:1F0", "PP:1B0", "Forward 0",
                                                         "Backward 0", "gloo:recv", "ProfilerStep#1", "PP:0SEND_F0",
                                                         "PP:1RECV_F0", "PP:(0F0;1B0)OVERLAP_F_B", "x"]),
                                "ts": st.one_of(st.floats(-10, 1e6, allow_nan=False), st.text(max_size=3)),
                                "dur": st.one_of(st.floats(0, 1e4), st.integers(-5, 5), st.none()),
                                "pid": st.integers(0, 3)})


@given(st.one_of(_json, st.builds(lambda ev, rank: {"schemaVersion": 1, "traceEvents": ev,
                                                    "distributedInfo": {"rank": rank}},
                                  st.lists(_event, max_size=25), st.one_of(st.none(), st.integers(-1, 3)))))
def test_any_json_gives_a_parse_error_or_a_run(doc):
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/x.json"
        with open(path, "w") as fh:
            json.dump(doc, fh)
        try:
            m = ppviz.load_trace(path)
        except ppviz.PpvizError:
            return
        assert m.makespan >= 0 and len(m.ops) == len(m.program)


def test_kineto_layout_with_a_broken_event_falls_back_to_a_full_parse(tmp_path):
    """The fast reader gives up on anything unexpected; the full parse then names the error."""
    trace = dict(_edge_fixture()[0])
    events = trace.pop("traceEvents")
    head = json.dumps(trace, indent=2)[:-2]
    good = head + ',\n  "traceEvents": [' + ",".join(
        "\n  " + json.dumps(e, indent=2).replace("\n", "\n  ") for e in events) + "\n  ]\n}"
    from ppviz.io.torch_profiler import kineto_events

    assert kineto_events(good.encode()) is not None  # the layout is Kineto's
    broken = good.replace('"name": "PP:0F0"', '"name": "PP:0F0" "oops"', 1)
    _refused(tmp_path, broken, "not JSON")
