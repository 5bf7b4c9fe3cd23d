"""The Chrome trace of a simulated result, and reading it back.

Chrome trace (Trace Event Format, loadable in Perfetto and chrome://tracing): one process for the
run, one thread per device, each op slot a complete ("X") event, and each device's activation
memory a counter ("C") track. With transfers (``Config.topology``) each device also has a
"transfers out" thread holding a complete event per transfer it sends (while it occupies its
link), and a flow arrow from each transfer to the op that consumes it. Simulated time has no
unit; ``time_unit_us`` says how many microseconds one unit is (default 1000: one unit displays
as a millisecond).

:func:`read_chrome_trace` reads such a file back for :func:`ppviz.load_trace`: each device's
op slots, in milliseconds (``ts / 1000``), so a trace written with the default unit loads with
the times it was written with.
"""

from __future__ import annotations

import json
import os

import numpy as np

from ..core.errors import ConfigError, ParseError
from ..core.program import F, KINDS, _shown, action
from .files import checked_path
from .trace_records import COMPUTE_RE, PAIR_RE, RankRecords

_PID = 1


def chrome_trace(result, time_unit_us: float = 1000.0) -> dict:
    """The trace as a dict (``{"traceEvents": [...], ...}``); see :func:`write_chrome_trace`."""
    program, ops = result.program, result.ops
    if isinstance(time_unit_us, bool) or not isinstance(time_unit_us, (int, float)) or \
            not 0 < time_unit_us <= 1e12 or time_unit_us != time_unit_us:
        raise ConfigError("time_unit_us", time_unit_us, "give the microseconds in one time unit: a number > 0")
    scale = float(time_unit_us)
    events: list[dict] = [
        {"ph": "M", "name": "process_name", "pid": _PID, "tid": 0, "args": {"name": f"ppviz: {result.config.display_name}"}},
    ]
    for d in range(program.devices):
        label = program.placement.describe(d) if program.placement is not None else ""
        events.append({"ph": "M", "name": "thread_name", "pid": _PID, "tid": d,
                       "args": {"name": f"device {d}" + (f" ({label})" if label else "")}})
        events.append({"ph": "M", "name": "thread_sort_index", "pid": _PID, "tid": d, "args": {"sort_index": d}})
    second = np.r_[False, program.pair[:-1]]
    for i in np.flatnonzero(~second).tolist():
        name = program.action_at(i)
        if program.pair[i]:
            kind = "F&B"
            args = {"forward": action(F, int(program.stage[i]), int(program.microbatch[i])),
                    "backward": action(int(program.kind[i + 1]), int(program.stage[i + 1]), int(program.microbatch[i + 1]))}
        else:
            kind = str(ops.kind[i])
            args = {"stage": int(ops.stage[i]), "microbatch": int(ops.microbatch[i])}
        waited = int(ops.waited_for[i])
        if waited >= 0:
            args["waited_for"] = program.action_at(waited)
        events.append({
            "ph": "X", "name": name, "cat": kind, "pid": _PID, "tid": int(ops.device[i]),
            "ts": float(ops.start[i]) * scale, "dur": float(ops.end[i] - ops.start[i]) * scale, "args": args,
        })
    events.extend(_transfer_events(result, scale))
    for d in range(program.devices):
        times, values = result.memory.curve(d)
        for t, v in zip(times.tolist(), values.tolist()):
            events.append({"ph": "C", "name": f"activation memory, device {d}", "pid": _PID, "tid": d,
                           "ts": t * scale, "args": {"activation": v}})
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {"makespan": result.makespan, "bubble_fraction": result.bubble_fraction,
                      "schedule": result.config.schedule, "devices": program.devices,
                      "microbatches": program.microbatches, "time_unit_us": scale},
    }


def write_chrome_trace(result, path: str | os.PathLike, time_unit_us: float = 1000.0) -> str:
    """Write the Chrome trace JSON to ``path``; returns the path."""
    name = checked_path(path)
    trace = chrome_trace(result, time_unit_us)  # before the file is opened: a bad unit leaves no file
    with open(name, "w", encoding="utf-8") as fh:
        json.dump(trace, fh, allow_nan=False)
    return name


def _transfer_events(result, scale: float) -> list[dict]:
    """A "transfers out" thread per sending device, and a flow from each transfer to its consumer."""
    t, program = result.transfers, result.program
    if not len(t):
        return []
    p = program.devices
    events: list[dict] = []
    for d in sorted(set(t.src.tolist())):
        events.append({"ph": "M", "name": "thread_name", "pid": _PID, "tid": p + d,
                       "args": {"name": f"device {d}: transfers out"}})
        events.append({"ph": "M", "name": "thread_sort_index", "pid": _PID, "tid": p + d, "args": {"sort_index": p + d}})
    rows = zip(t.src.tolist(), t.dst.tolist(), t.stage.tolist(), t.microbatch.tolist(), t.kind.tolist(),
               t.bytes.tolist(), t.ready.tolist(), t.start.tolist(), t.end.tolist(), t.consumer.tolist())
    for k, (src, dst, stage, mb, kind, size, ready, start, end, consumer) in enumerate(rows):
        name = f"{stage}SEND_{kind}{mb} → device {dst}"
        events.append({"ph": "X", "name": name, "cat": "transfer", "pid": _PID, "tid": p + src, "ts": start * scale,
                       "dur": (end - start) * scale,
                       "args": {"from device": src, "to device": dst, "stage": stage, "microbatch": mb,
                                "direction": "activation" if kind == "F" else "gradient", "bytes": size,
                                "ready": ready * scale, "queued for the link": (start - ready) * scale,
                                "consumer": program.action_at(consumer)}})
        events.append({"ph": "s", "name": "transfer", "cat": "transfer", "id": k, "pid": _PID, "tid": p + src,
                       "ts": start * scale})
        events.append({"ph": "f", "bp": "e", "name": "transfer", "cat": "transfer", "id": k, "pid": _PID,
                       "tid": int(program.device[consumer]), "ts": float(result.ops.start[consumer]) * scale})
    return events


def looks_like(trace) -> bool:
    """True for a trace :func:`chrome_trace` wrote (its ``otherData`` and process name)."""
    if not isinstance(trace, dict) or not isinstance(trace.get("otherData"), dict):
        return False
    events = trace.get("traceEvents")
    return "time_unit_us" in trace["otherData"] and isinstance(events, list) and any(
        isinstance(e, dict) and e.get("name") == "process_name" and isinstance(e.get("args"), dict)
        and str(e["args"].get("name", "")).startswith("ppviz:") for e in events[:4])


def read_chrome_trace(trace: dict, source: str) -> list[RankRecords]:
    """One :class:`RankRecords` per device (thread) of a trace :func:`chrome_trace` wrote."""
    devices: dict[int, RankRecords] = {}
    for e in trace["traceEvents"]:
        if not isinstance(e, dict) or e.get("ph") != "X" or e.get("pid") != _PID or e.get("cat") == "transfer":
            continue  # transfers are read back from their ops' times, not as ops
        name, tid, ts, dur = e.get("name"), e.get("tid"), e.get("ts"), e.get("dur")
        if isinstance(tid, bool) or not isinstance(tid, int) or not 0 <= tid < 1 << 20:
            raise ParseError(f"{source}: op {_shown(name)} has tid {_shown(tid)}; ppviz traces give each device "
                             f"a thread numbered from 0")
        for what, x in (("ts", ts), ("dur", dur)):
            if isinstance(x, bool) or not isinstance(x, (int, float)) or x != x or abs(x) > 1e300:
                raise ParseError(f"{source}: op {_shown(name)}'s {what} must be a finite number; found {_shown(x)}")
        if dur < 0:
            raise ParseError(f"{source}: op {_shown(name)} has a negative duration {dur:g}")
        records = devices.setdefault(tid, RankRecords(source=f"{source} (device {tid})", rank=tid, host=None,
                                                      origin_ns=0))
        start, end = ts / 1000.0, (ts + dur) / 1000.0
        match = COMPUTE_RE.fullmatch(name) if isinstance(name, str) else None
        if match:
            stage, kind, mb = match.groups()
            records.ops.append((None, KINDS.index(kind), int(stage), int(mb), False, start, start, end))
            continue
        match = PAIR_RE.fullmatch(name) if isinstance(name, str) else None
        if not match:
            raise ParseError(f"{source}: op {_shown(name)} is not an action; ppviz traces name each op slot with "
                             f"torch's action string, e.g. '0F1' or '(0F7;7B3)OVERLAP_F_B'")
        fs, fm, bs, bk, bm = match.groups()
        records.ops.append((None, F, int(fs), int(fm), True, start, start, end))
        records.ops.append((None, KINDS.index(bk), int(bs), int(bm), True, start, start, end))
    if not devices:
        raise ParseError(f"{source}: a ppviz Chrome trace without ops; expected complete ('X') events, one per op")
    return [devices[d] for d in sorted(devices)]
