import json

import numpy as np

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
