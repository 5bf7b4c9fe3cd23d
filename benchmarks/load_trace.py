"""ppviz.load_trace on a 10^5-op PyTorch profiler trace (all ranks).

Run: python benchmarks/load_trace.py [--ops N] [--children K] [--gzip]
Writes one profiler trace per rank in a temporary directory, laid out as Kineto writes them
and shaped as torch 2.13's pipeline runtime fills them (``PP:<action>`` spans, RECV/SEND actions with their ``gloo:recv`` /
``gloo:send`` spans, a ``ProfilerStep#1`` span) with ``K`` operator events (``cpu_op``) inside
every compute span, as a real model's trace has; the timeline is ppviz's simulation of
interleaved 1F1B on 8 ranks. Then times ``load_trace`` (best of 3) and prints the events,
bytes, seconds and ops per second. Target (issue 14): 10^5 ops load in at most 3 s.
"""

from __future__ import annotations

import argparse
import gzip
import os
import tempfile
import time

import numpy as np
import orjson

import ppviz
from ppviz.core.engine import dependencies
from ppviz.core.program import action

P, V = 8, 2


def kineto_layout(trace: dict) -> bytes:
    """JSON laid out as Kineto writes it: one event per block, "\\n  {" … "\\n  }"."""
    events = trace.pop("traceEvents")
    head = orjson.dumps(trace, option=orjson.OPT_INDENT_2)[:-2]
    body = b",".join(b"\n  " + orjson.dumps(e, option=orjson.OPT_INDENT_2).replace(b"\n", b"\n  ") for e in events)
    return head + b',\n  "traceEvents": [' + body + b"\n  ]\n}"


def synthetic_traces(ops: int, children: int, directory: str, compress: bool) -> tuple[list[str], int, int, int]:
    m = max(P, ops // (2 * P * V) // P * P)  # interleaving wants m a multiple of p
    result = ppviz.simulate(ppviz.Config(schedule="interleaved-1f1b", devices=P, stages_per_device=V,
                                         microbatches=m, f=1.0, b=2.0, w=0.0, comm=0.05))
    program, o = result.program, result.ops
    dep = dependencies(program)
    consumer_of = np.full(len(program), -1)
    consumer_of[dep[dep >= 0]] = np.flatnonzero(dep >= 0)
    scale = 1000.0  # 1 unit = 1 ms; ts in µs
    files, events_total, size = [], 0, 0
    for d in range(P):
        events = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": d, "tid": d,
                   "ts": -100.0, "dur": float(result.makespan * scale + 200)}]
        for i in range(int(program.offsets[d]), int(program.offsets[d + 1])):
            kind = "F" if program.kind[i] == 0 else "B"
            s, mb = int(program.stage[i]), int(program.microbatch[i])
            start, end = float(o.start[i]) * scale, float(o.end[i]) * scale
            j = dep[i]
            if j >= 0 and program.device[j] != d:
                events.append({"ph": "X", "cat": "user_annotation", "name": f"PP:{s}RECV_{kind}{mb}", "pid": d,
                               "tid": d, "ts": start - 30.0, "dur": 2.0})
                events.append({"ph": "X", "cat": "user_annotation", "name": "gloo:recv", "pid": d, "tid": d,
                               "ts": start - 29.0, "dur": 28.0})
            events.append({"ph": "X", "cat": "user_annotation", "name": f"PP:{action(int(program.kind[i]), s, mb)}",
                           "pid": d, "tid": d, "ts": start - 1.0, "dur": end - start})
            step = (end - start) / (children + 1)
            for k in range(children):
                events.append({"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": d, "tid": d,
                               "ts": start + k * step, "dur": step * 0.9,
                               "args": {"External id": i * children + k, "Sequence number": i, "Ev Idx": k}})
            c = consumer_of[i]
            if c >= 0 and program.device[c] != d:
                events.append({"ph": "X", "cat": "user_annotation", "name": f"PP:{s}SEND_{kind}{mb}", "pid": d,
                               "tid": d, "ts": end + 1.0, "dur": 2.0})
                events.append({"ph": "X", "cat": "user_annotation", "name": "gloo:send", "pid": d, "tid": d,
                               "ts": end + 2.0, "dur": 40.0})
        trace = {"schemaVersion": 1, "distributedInfo": {"backend": "gloo", "rank": d, "world_size": P},
                 "host_name": "bench", "baseTimeNanoseconds": 1_700_000_000_000_000_000, "traceEvents": events}
        data = kineto_layout(trace)
        path = os.path.join(directory, f"rank{d}.json" + (".gz" if compress else ""))
        with open(path, "wb") as fh:
            fh.write(gzip.compress(data, 1) if compress else data)
        files.append(path)
        events_total += len(events)
        size += len(data)
    return files, events_total, size, len(program)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=100_000)
    parser.add_argument("--children", type=int, default=8, help="operator events inside each compute span")
    parser.add_argument("--gzip", action="store_true", help="write .json.gz files")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        files, events, size, n = synthetic_traces(args.ops, args.children, tmp, args.gzip)
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            measured = ppviz.load_trace(files, progress=False)
            best = min(best, time.perf_counter() - t0)
        assert len(measured.ops) == n
    print(f"load_trace: {n:,} ops on {P} ranks, {events:,} events, {size / 1e6:.0f} MB of JSON"
          f"{' (gzipped)' if args.gzip else ''}")
    print(f"  {best:.2f} s (best of 3), {n / best:,.0f} ops/s, {events / best:,.0f} events/s; target <= 3 s: "
          f"{'met' if best <= 3.0 else 'NOT met'} ({best / 3.0:.2f} of the budget)")


if __name__ == "__main__":
    main()
