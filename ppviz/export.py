"""Exports of a simulated result: files other tools read, and pictures to share.

Chrome trace (Trace Event Format, loadable in Perfetto and chrome://tracing): one process for the
run, one thread per device, each op slot a complete ("X") event, and each device's activation
memory a counter ("C") track. Simulated time has no unit; ``time_unit_us`` says how many
microseconds one unit is (default 1000: one unit displays as a millisecond).

SVG and PNG: the static Gantt chart of :func:`ppviz.charts.gantt_chart`, rendered by
vl-convert in this process: no browser, and nothing fetched. HTML: the interactive chart as one
page (the widget's front end and the data inlined), which works offline, with no kernel.
"""

from __future__ import annotations

import json
import os
import struct
import zlib

import numpy as np

from .errors import ConfigError
from .ir import F, action

_PID = 1


def chrome_trace(result, time_unit_us: float = 1000.0) -> dict:
    """The trace as a dict (``{"traceEvents": [...], ...}``); see :func:`write_chrome_trace`."""
    program, ops = result.program, result.ops
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
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(chrome_trace(result, time_unit_us), fh)
    return os.fspath(path)


def _write(path, data: str | bytes) -> str:
    # the picture is rendered before the file is opened, so a bad option leaves no empty file
    with open(path, "wb") as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)
    return os.fspath(path)


def write_svg(result, path: str | os.PathLike, **options) -> str:
    """Write the Gantt chart as SVG (``options`` go to :func:`ppviz.charts.gantt_chart`); returns the path."""
    from .charts import gantt_chart, to_svg

    return _write(path, to_svg(gantt_chart(result, **options)))


def write_png(result, path: str | os.PathLike, scale: float = 2.0, **options) -> str:
    """Write the Gantt chart as PNG at ``scale`` × its size in pixels; returns the path."""
    from .charts import gantt_chart, to_png

    return _write(path, compact_png(to_png(gantt_chart(result, **options), scale)))


def compact_png(data: bytes) -> bytes:
    """The same PNG, its pixel data deflated again at zlib's default level: vl-convert
    compresses for speed, and this makes a chart about three times smaller in a tenth of a
    second. The pixels and every other chunk stay as they were."""
    chunks, pixels = [], []
    at = 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at:at + 4])
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + length]
        if kind == b"IDAT":
            if not pixels:
                chunks.append((kind, None))  # the image data stays where it was
            pixels.append(body)
        else:
            chunks.append((kind, body))
        at += 12 + length
    idat = zlib.compress(zlib.decompress(b"".join(pixels)))
    out = [data[:8]]
    for kind, body in chunks:
        body = idat if body is None else body
        out.append(struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body)))
    return b"".join(out)


def write_html(result, path: str | os.PathLike, theme: str = "light") -> str:
    """Write the interactive chart as a standalone offline page; returns the path.

    ``theme="auto"`` follows the reader's system setting.
    """
    if theme not in ("light", "dark", "auto"):
        raise ConfigError("theme", theme, "give 'light', 'dark' or 'auto' (follow the reader's system)")
    from .widget import standalone_html

    return _write(path, standalone_html(result, theme=theme))
