import json

import numpy as np
import pytest

import ppviz
from ppviz import Config, Program, simulate


def load(tmp_path, res, **kw):
    path = tmp_path / "trace.json"
    assert res.to_chrome_trace(path, **kw) is None  # written, as pandas' to_x(path) does
    text = path.read_text()
    assert res.to_chrome_trace(**kw) == text  # and without a path, the same JSON returned
    return json.loads(text)


def test_chrome_trace_is_valid_trace_event_json(tmp_path):
    res = simulate(Config(schedule="1f1b", devices=4, microbatches=8))
    trace = load(tmp_path, res)
    events = trace["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    # one complete event per op, on the thread of its device, with times in microseconds
    assert len(complete) == len(res.ops) == 64
    for e in complete:
        assert {"name", "cat", "pid", "tid", "ts", "dur"} <= e.keys()
        assert e["dur"] >= 0 and isinstance(e["tid"], int)
    by_name = {(e["tid"], e["name"]): e for e in complete}
    k = int(np.flatnonzero((res.ops.device == 3) & (res.ops.kind == "B") & (res.ops.microbatch == 0))[0])
    e = by_name[(3, "3B0")]
    assert e["ts"] == res.ops.start[k] * 1000 and e["dur"] == (res.ops.end[k] - res.ops.start[k]) * 1000
    assert e["args"]["waited_for"] == "3F0"
    names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names == {d: f"device {d} (stage {d})" for d in range(4)}
    assert trace["otherData"]["makespan"] == 33


def test_memory_counters_follow_the_curve(tmp_path):
    res = simulate(Config(schedule="gpipe", devices=2, microbatches=3))
    counters = [e for e in load(tmp_path, res, time_unit_us=1)["traceEvents"] if e["ph"] == "C" and e["tid"] == 0]
    times, values = res.memory.curve(0)
    assert [c["ts"] for c in counters] == list(times)
    assert [c["args"]["activation"] for c in counters] == list(values)
    assert max(values) == 3


def test_pairs_are_one_event(tmp_path):
    program = Program.from_text({0: "0F0 (0F1;0B0)OVERLAP_F_B 0B1"})
    res = simulate(program)
    complete = [e for e in load(tmp_path, res)["traceEvents"] if e["ph"] == "X"]
    assert [e["name"] for e in complete] == ["0F0", "(0F1;0B0)OVERLAP_F_B", "0B1"]
    assert complete[1]["cat"] == "F&B" and complete[1]["args"] == {"forward": "0F1", "backward": "0B0"}


def reference_trace(res, scale, unitless=False):
    """The trace as Python objects, built op by op from the result (how the exporter used to build it)."""
    program, ops = res.program, res.ops
    events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": f"ppviz: {res.config.display_name}"}}]
    for d in range(program.devices):
        label = program.placement.describe(d)
        events.append({"ph": "M", "name": "thread_name", "pid": 1, "tid": d, "args": {"name": f"device {d} ({label})"}})
        events.append({"ph": "M", "name": "thread_sort_index", "pid": 1, "tid": d, "args": {"sort_index": d}})
    i = 0
    while i < len(program):
        if program.pair[i]:
            args = {"forward": program.action_at(i).split(";")[0][1:], "backward": program.action_at(i + 1)}
            kind = "F&B"
        else:
            args = {"stage": int(ops.stage[i]), "microbatch": int(ops.microbatch[i])}
            kind = str(ops.kind[i])
        if ops.waited_for[i] >= 0:
            args["waited_for"] = program.action_at(int(ops.waited_for[i]))
        events.append({"ph": "X", "name": program.action_at(i), "cat": kind, "pid": 1, "tid": int(ops.device[i]),
                       "ts": float(ops.start[i]) * scale, "dur": float(ops.end[i] - ops.start[i]) * scale,
                       "args": args})
        i += 2 if program.pair[i] else 1
    for d in range(program.devices):
        times, values = res.memory.curve(d)
        events += [{"ph": "C", "name": f"activation memory, device {d}", "pid": 1, "tid": d, "ts": t * scale,
                    "args": {"activation": v}} for t, v in zip(times.tolist(), values.tolist())]
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"makespan": res.makespan, "bubble_fraction": res.bubble_fraction,
                          "schedule": res.config.schedule, "devices": program.devices,
                          "microbatches": program.microbatches, "time_unit_us": scale,
                          "time_unit": res.config.time_unit, "unitless": unitless}}


@pytest.mark.parametrize("cfg, unit", [
    (Config(schedule="1f1b", devices=4, microbatches=8), 1000.0),
    (Config(schedule="zb-h1", devices=3, microbatches=5, f=1.5, b=1.1, w=0.3, comm=0.07), 2.5),
    (Config(schedule="dualpipe", devices=4, microbatches=8, fb=2.5, label='quotes " and \\ and ünïcode\n'), 1.0),
    (Config(schedule="1f1b-overlap", devices=4, microbatches=12, f=1e150, b=1e150, w=1e150), 1e-3),
    (Config(schedule="interleaved-1f1b", devices=2, microbatches=4, stages_per_device=3, w_share=0.3), 0.1),
])
def test_the_streamed_trace_holds_what_the_result_holds(tmp_path, cfg, unit):
    # events written as text in blocks, read back: exactly the objects built op by op from the result
    from ppviz.io import chrome_trace

    res = simulate(cfg)
    expected = reference_trace(res, unit)
    assert load(tmp_path, res, time_unit_us=unit) == expected
    assert chrome_trace.chrome_trace(res, unit) == expected


def test_a_trace_longer_than_one_block_is_one_valid_document(tmp_path, monkeypatch):
    from ppviz.io import chrome_trace

    monkeypatch.setattr(chrome_trace, "_BLOCK", 7)
    res = simulate(Config(schedule="dualpipe-v", devices=4, microbatches=10, comm=0.5))
    assert load(tmp_path, res) == reference_trace(res, 1000.0, unitless=True)


# The trace in microseconds, whatever the config's time unit ------------------------------------

#: one config unit in ms, and in µs (what the trace's otherData.time_unit_us must say)
PER_MS = {"s": 1e-3, "ms": 1.0, "us": 1e3, "µs": 1e3, "μs": 1e3, "ns": 1e6}
UNIT_US = {"s": 1e6, "ms": 1e3, "us": 1.0, "µs": 1.0, "μs": 1.0, "ns": 1e-3}


def run_in(unit, schedule="1f1b", m=2, **extra):
    """8 ms forwards and backwards and 6 ms W, written in ``unit``."""
    k = PER_MS[unit]
    return simulate(Config(schedule=schedule, devices=2, microbatches=m, f=8 * k, b=8 * k, w=6 * k, time_unit=unit,
                           **extra))


def assert_same_times(got, want):
    """Two traces' events equal, their numbers to float precision (µs from different units)."""
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.keys() == b.keys()
        for key in a:
            if isinstance(a[key], dict):
                assert_same_times([a[key]], [b[key]])
            elif isinstance(a[key], float):
                assert a[key] == pytest.approx(b[key], rel=1e-12, abs=1e-9), (a, key)
            else:
                assert a[key] == b[key]


@pytest.mark.parametrize("unit", list(PER_MS))
def test_the_trace_converts_the_config_time_unit_to_microseconds(tmp_path, unit):
    # before: every unit was written as if it were ms, a 0.008 s forward lasting 8 µs
    res = run_in(unit, topology="dgx-h100", comm_bytes=67108864)
    trace = load(tmp_path, res)
    assert trace["otherData"]["time_unit_us"] == UNIT_US[unit]
    assert (trace["otherData"]["time_unit"], trace["otherData"]["unitless"]) == (unit, False)
    ops = {e["name"]: e for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] != "transfer"}
    assert (ops["0F0"]["ts"], ops["0F0"]["dur"]) == (0.0, pytest.approx(8000.0, rel=1e-12))
    assert ops["1B0"]["dur"] == pytest.approx(14000.0, rel=1e-12)  # B = b + w
    sent = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] == "transfer"]
    # 64 MiB over an H100 node's NVLink: 160.93 µs
    assert (sent[0]["ts"], sent[0]["dur"]) == (pytest.approx(8000.0, rel=1e-12),
                                               pytest.approx(160.930808888889, rel=1e-9))
    assert_same_times(trace["traceEvents"], load(tmp_path, run_in("ms", topology="dgx-h100",
                                                                  comm_bytes=67108864))["traceEvents"])


@pytest.mark.parametrize("unit", ["s", "us", "ns"])
def test_host_copies_are_converted_too(tmp_path, unit):
    # 64 MB per activation over 64 GB/s: 1 ms = 1000 µs per copy in every unit
    extra = dict(offload=ppviz.Offload(1.0, link=ppviz.Link(0.0, bandwidth=64e9, unit="s")), activation_bytes=64e6)
    trace = load(tmp_path, run_in(unit, "gpipe", 4, **extra))
    copies = [e for e in trace["traceEvents"] if e.get("cat") == "host copy" and e["ph"] == "X"]
    assert len(copies) == 16 and {round(e["dur"], 6) for e in copies} == {1000.0}
    assert (copies[0]["ts"], copies[0]["args"]["ready"]) == (pytest.approx(8000.0, rel=1e-12),
                                                            pytest.approx(8000.0, rel=1e-12))
    assert_same_times(trace["traceEvents"], load(tmp_path, run_in("ms", "gpipe", 4, **extra))["traceEvents"])


def test_a_run_without_a_unit_ppviz_converts_draws_one_unit_as_a_millisecond(tmp_path):
    for unit in (None, "cycles"):
        trace = load(tmp_path, simulate(Config(schedule="1f1b", devices=2, microbatches=2, f=8, time_unit=unit)))
        assert {k: trace["otherData"][k] for k in ("time_unit_us", "time_unit", "unitless")} == \
            {"time_unit_us": 1000.0, "time_unit": unit, "unitless": True}
        assert [e["dur"] for e in trace["traceEvents"] if e.get("name") == "0F0"] == [8000.0]
    # a unit given by the caller is the microseconds in one of the run's units, whatever its config says
    trace = load(tmp_path, run_in("s"), time_unit_us=1.0)
    assert [e["dur"] for e in trace["traceEvents"] if e.get("name") == "0F0"] == [0.008]
    assert trace["otherData"]["unitless"] is False
