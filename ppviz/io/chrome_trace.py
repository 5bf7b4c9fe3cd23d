"""The Chrome trace of a simulated result.

Chrome trace (Trace Event Format, loadable in Perfetto and chrome://tracing): one process for the
run, one thread per device, each op slot a complete ("X") event, and each device's activation
memory a counter ("C") track. With transfers (``Config.topology``) each device also has a
"transfers out" thread holding a complete event per transfer it sends (while it occupies its
link), and a flow arrow from each transfer to the op that consumes it. Simulated time has no
unit; ``time_unit_us`` says how many microseconds one unit is (default 1000: one unit displays
as a millisecond).
"""

from __future__ import annotations

import json
import os

import numpy as np

from ..core.errors import ConfigError
from ..core.program import F, action
from .files import checked_path

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
