import json

import numpy as np
import pytest

import ppviz
from ppviz import Config, Program, simulate


def load(tmp_path, res, **kw):
    path = tmp_path / "trace.json"
    assert res.to_chrome_trace(path, **kw) == str(path)
    return json.loads(path.read_text())


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


def reference_trace(res, scale):
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
                          "microbatches": program.microbatches, "time_unit_us": scale}}


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
    assert load(tmp_path, res) == reference_trace(res, 1000.0)
