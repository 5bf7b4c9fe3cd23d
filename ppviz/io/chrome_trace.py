"""The Chrome trace of a simulated result, and reading it back.

Chrome trace (Trace Event Format, loadable in Perfetto and chrome://tracing): one process for the
run, one thread per device, each op slot a complete ("X") event, and each device's activation
memory a counter ("C") track. With transfers (``Config.topology``) each device also has a
"transfers out" thread holding a complete event per transfer it sends (while it occupies its
link), and a flow arrow from each transfer to the op that consumes it. With activation offload
(``Config.offload``) each device has a "host copies" thread: each offload after its F and each
reload before its backward while it occupies the host link, and a flow arrow from each reload to
the backward that waits for it.

Times are microseconds, converted from the config's ``time_unit`` (``"s"``, ``"ms"``, ``"us"``
/ ``"µs"`` / ``"μs"``, ``"ns"``): a 0.008 s forward lasts 8000 µs whatever unit the run was
written in. A unitless run (``time_unit=None``), or one in a unit ppviz cannot convert (say
``"cycles"``), is drawn with one unit as one millisecond, and its trace says so (``otherData``:
``"unitless": true``). ``time_unit_us`` overrides the conversion: the microseconds in one unit of
the run (the trace is then in real microseconds). ``otherData`` also holds ``time_unit_us`` (the
microseconds one unit became) and ``time_unit`` (the config's unit, null when unitless).

:func:`read_chrome_trace` reads such a file back for :func:`ppviz.load_trace`: each device's
op slots, in milliseconds (a measured run's unit), so a run in s, ms, us or ns loads with the
times it had (a 0.008 s op as 8 ms); a unitless trace loads unitless, in the run's own units
(``ts / time_unit_us``), with its ``time_unit`` label if it had one ppviz could not convert.

The JSON is written as text, a block of events at a time, rather than built as Python dicts and
dumped: a million ops then take about a second and the memory of one block.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from itertools import chain, repeat

import numpy as np

from ..core.config import Config
from ..core.errors import ConfigError, ParseError
from ..core.program import KINDS, _shown
from ..core.topology import SECONDS
from ..core.paths import checked_path
from .trace_records import RankRecords, action_ops

_PID = 1
#: events formatted per block of text
_BLOCK = 50_000


def chrome_trace(result, time_unit_us: float | None = None) -> dict:
    """The trace as a dict (``{"traceEvents": [...], ...}``); see :func:`write_chrome_trace`."""
    return json.loads("".join(chrome_trace_text(result, time_unit_us)))


def write_chrome_trace(result, path: str | os.PathLike, time_unit_us: float | None = None) -> str:
    """Write the Chrome trace JSON to ``path``; returns the path. ``time_unit_us``: the
    microseconds in one unit of the run; None converts from the config's ``time_unit`` (module
    docstring)."""
    name = checked_path(path)
    blocks = chrome_trace_text(result, time_unit_us)
    first = next(blocks)  # checks the unit before the file is opened: a bad unit leaves no file
    with open(name, "w", encoding="utf-8") as fh:
        fh.write(first)
        for block in blocks:
            fh.write(block)
    return name


#: microseconds one unit is drawn as when the run's unit cannot be converted (or it has none)
UNITLESS_US = 1000.0


def microseconds_per(time_unit: str | None) -> float | None:
    """Microseconds in one ``time_unit``; None for no unit or one ppviz cannot convert."""
    return SECONDS[time_unit] * 1e6 if time_unit in SECONDS else None


def chrome_trace_text(result, time_unit_us: float | None = None) -> Iterator[str]:
    """The trace's JSON text in blocks; joined, they are one JSON document."""
    unit = result.config.time_unit
    unitless = False
    if time_unit_us is None:
        time_unit_us = microseconds_per(unit)
        if time_unit_us is None:
            time_unit_us, unitless = UNITLESS_US, True
    if isinstance(time_unit_us, bool) or not isinstance(time_unit_us, (int, float)) or \
            not 0 < time_unit_us <= 1e12 or time_unit_us != time_unit_us:
        raise ConfigError("time_unit_us", time_unit_us, "give the microseconds in one time unit: a number > 0, "
                                                        "or None to convert from the config's time_unit")
    scale = float(time_unit_us)
    if not np.isfinite(result.makespan * scale):  # every time written is at most the makespan
        raise ConfigError("time_unit_us", time_unit_us, "give a smaller unit: this run's times in it overflow a float")
    program = result.program
    other = {"makespan": result.makespan, "bubble_fraction": result.bubble_fraction,
             "schedule": result.config.schedule, "devices": program.devices,
             "microbatches": program.microbatches, "time_unit_us": scale, "time_unit": unit,
             "unitless": unitless}
    head = [{"ph": "M", "name": "process_name", "pid": _PID, "tid": 0,
             "args": {"name": f"ppviz: {result.config.display_name}"}}]
    for d in range(program.devices):
        label = program.placement.describe(d) if program.placement is not None else ""
        head.append({"ph": "M", "name": "thread_name", "pid": _PID, "tid": d,
                     "args": {"name": f"device {d}" + (f" ({label})" if label else "")}})
        head.append({"ph": "M", "name": "thread_sort_index", "pid": _PID, "tid": d, "args": {"sort_index": d}})
    yield '{"traceEvents":[' + ",".join(json.dumps(e, allow_nan=False) for e in head)
    # every event below starts with its separator: the metadata above is never empty
    yield from _op_events(result, scale)
    yield from _transfer_events(result, scale)
    yield from _host_copy_events(result, scale)
    yield from _memory_events(result, scale)
    yield '],"displayTimeUnit":"ms","otherData":' + json.dumps(other, allow_nan=False) + "}"


def _op_events(result, scale: float) -> Iterator[str]:
    """One "X" event per op slot (a pair is one event), in program order, a block at a time.

    Every string in an event is an action string (digits, F/B/I/W, brackets, a semicolon), so
    the events are assembled as JSON text column by column, without escaping; floats are
    written as ``repr`` writes them, as ``json`` does.
    """
    program, ops = result.program, result.ops
    labels = _Labels(program)
    slots = np.flatnonzero(~np.r_[False, program.pair[:-1]])  # a pair's second op is in its first's event
    for lo in range(0, len(slots), _BLOCK):
        keep = slots[lo:lo + _BLOCK]
        start = ops.start[keep]
        paired = program.pair[keep]
        waited = ops.waited_for[keep]
        code = np.where(paired, len(KINDS), program.kind[keep])
        first = labels.numbers[program.stage[keep]]
        second = labels.numbers[program.microbatch[keep]]
        if paired.any():
            at = np.flatnonzero(paired)
            first[at] = labels(keep[at], pairs=False)
            second[at] = labels(keep[at] + 1) + '"'
        waited_for = np.where(waited >= 0, ',"waited_for":"' + labels(waited) + '"', "")
        columns = [repeat(',{"ph":"X","name":"'), labels(keep), _HEAD[code], labels.numbers[ops.device[keep]],
                   repeat(',"ts":'), map(repr, (start * scale).tolist()),
                   repeat(',"dur":'), map(repr, ((ops.end[keep] - start) * scale).tolist()),
                   _ARGS[code], first, _ARGS_NEXT[code], second, waited_for, repeat("}}")]
        yield "".join(chain.from_iterable(zip(*columns)))


# per op code (F, B, I, W, then an F&B pair): the text after its name, and the keys of its args
_HEAD = np.array([f'","cat":"{k}","pid":{_PID},"tid":' for k in KINDS] + [f'","cat":"F&B","pid":{_PID},"tid":'],
                 dtype=object)
_ARGS = np.array([',"args":{"stage":'] * len(KINDS) + [',"args":{"forward":"'], dtype=object)
_ARGS_NEXT = np.array([',"microbatch":'] * len(KINDS) + ['","backward":"'], dtype=object)
_KIND_STRINGS = np.array(list(KINDS), dtype=object)


class _Labels:
    """:meth:`Program.action_at` for arrays of op indices, as object arrays of str."""

    def __init__(self, program):
        self.program = program
        self.numbers = np.array([str(i) for i in range(max(program.stages, program.microbatches, program.devices))],
                                dtype=object)

    def __call__(self, index: np.ndarray, pairs: bool = True) -> np.ndarray:
        """The label of each op in ``index`` (−1 gives a placeholder); with ``pairs`` the first op
        of a pair prints as the overlapped pair, as ``action_at`` does."""
        program = self.program
        index = np.maximum(index, 0)
        out = (self.numbers[program.stage[index]] + _KIND_STRINGS[program.kind[index]] +
               self.numbers[program.microbatch[index]])
        at = np.flatnonzero(program.pair[index]) if pairs else ()
        if len(at):
            out[at] = "(" + out[at] + ";" + self(index[at] + 1, pairs=False) + ")OVERLAP_F_B"
        return out


def _memory_events(result, scale: float) -> Iterator[str]:
    """Each device's activation memory as a counter track: one "C" event per step of its curve."""
    memory = result.memory
    for d in range(result.program.devices):
        times, values = memory.curve(d)
        for lo in range(0, len(times), _BLOCK):
            columns = [repeat(f',{{"ph":"C","name":"activation memory, device {d}","pid":{_PID},"tid":{d},"ts":'),
                       map(repr, (times[lo:lo + _BLOCK] * scale).tolist()), repeat(',"args":{"activation":'),
                       map(repr, values[lo:lo + _BLOCK].tolist()), repeat("}}")]
            yield "".join(chain.from_iterable(zip(*columns)))


def _threads(devices: np.ndarray, first: int, what: str) -> list[dict]:
    """Metadata of a thread per device in ``devices``, numbered from ``first`` on: "device d: what"."""
    events: list[dict] = []
    for d in sorted(set(devices.tolist())):
        events.append({"ph": "M", "name": "thread_name", "pid": _PID, "tid": first + d,
                       "args": {"name": f"device {d}: {what}"}})
        events.append({"ph": "M", "name": "thread_sort_index", "pid": _PID, "tid": first + d,
                       "args": {"sort_index": first + d}})
    return events


def _transfer_events(result, scale: float) -> Iterator[str]:
    """A "transfers out" thread per sending device, and a flow from each transfer to its consumer."""
    t, program = result.transfers, result.program
    if not len(t):
        return
    p = program.devices
    events = _threads(t.src, p, "transfers out")
    rows = zip(t.src.tolist(), t.dst.tolist(), t.stage.tolist(), t.microbatch.tolist(), t.kind.tolist(),
               t.bytes.tolist(), t.ready.tolist(), t.start.tolist(), t.end.tolist(), t.consumer.tolist())
    for k, (src, dst, stage, mb, kind, size, ready, start, end, consumer) in enumerate(rows):
        name = f"{stage}SEND_{kind}{mb} → device {dst}"
        events.append({"ph": "X", "name": name, "cat": "transfer", "pid": _PID, "tid": p + src, "ts": start * scale,
                       "dur": (end - start) * scale,
                       "args": {"from device": src, "to device": dst, "stage": stage, "microbatch": mb,
                                "direction": "activation" if kind == "F" else "gradient",
                                "bytes": size if size == size else None,  # NaN: a measured run's unknown size
                                "ready": ready * scale, "queued for the link": (start - ready) * scale,
                                "consumer": program.action_at(consumer)}})
        events.append({"ph": "s", "name": "transfer", "cat": "transfer", "id": k, "pid": _PID, "tid": p + src,
                       "ts": start * scale})
        events.append({"ph": "f", "bp": "e", "name": "transfer", "cat": "transfer", "id": k, "pid": _PID,
                       "tid": int(program.device[consumer]), "ts": float(result.ops.start[consumer]) * scale})
    for lo in range(0, len(events), _BLOCK):
        yield "".join("," + json.dumps(e, allow_nan=False) for e in events[lo:lo + _BLOCK])


def _host_copy_events(result, scale: float) -> Iterator[str]:
    """A "host copies" thread per device that offloads, and a flow from each reload to its backward."""
    h, program = result.host_copies, result.program
    if not len(h):
        return
    p = program.devices
    # after the devices' threads (0 … p−1) and their "transfers out" threads (p … 2p−1)
    events = _threads(h.device, 2 * p, "host copies")
    rows = zip(h.device.tolist(), h.stage.tolist(), h.microbatch.tolist(), h.kind.tolist(), h.bytes.tolist(),
               h.ready.tolist(), h.start.tolist(), h.end.tolist(), h.op.tolist(), h.held.tolist())
    for k, (device, stage, mb, kind, size, ready, start, end, op, held) in enumerate(rows):
        action = program.action_at(op)
        offload = kind == "offload"
        args = {"device": device, "stage": stage, "microbatch": mb, "bytes": size, "ready": ready * scale,
                "queued for the link": (start - ready) * scale, "after" if offload else "for": action}
        if not offload:
            args["held up its backward"] = held * scale
        events.append({"ph": "X", "name": f"{kind} {stage}F{mb} {'→' if offload else '←'} host", "cat": "host copy",
                       "pid": _PID, "tid": 2 * p + device, "ts": start * scale, "dur": (end - start) * scale,
                       "args": args})
        if not offload:
            flow = len(result.transfers) + k  # ids apart from the transfers' flows
            events.append({"ph": "s", "name": "reload", "cat": "host copy", "id": flow, "pid": _PID,
                           "tid": 2 * p + device, "ts": start * scale})
            events.append({"ph": "f", "bp": "e", "name": "reload", "cat": "host copy", "id": flow, "pid": _PID,
                           "tid": device, "ts": float(result.ops.start[op]) * scale})
    for lo in range(0, len(events), _BLOCK):
        yield "".join("," + json.dumps(e, allow_nan=False) for e in events[lo:lo + _BLOCK])


def looks_like(trace) -> bool:
    """True for a trace :func:`chrome_trace` wrote (its ``otherData`` and process name)."""
    if not isinstance(trace, dict) or not isinstance(trace.get("otherData"), dict):
        return False
    events = trace.get("traceEvents")
    return "time_unit_us" in trace["otherData"] and isinstance(events, list) and any(
        isinstance(e, dict) and e.get("name") == "process_name" and isinstance(e.get("args"), dict)
        and str(e["args"].get("name", "")).startswith("ppviz:") for e in events[:4])


def _time_base(other: dict, source: str) -> tuple[float, str | None]:
    """Microseconds per time unit read back, and that unit's name: ms for a trace in real
    microseconds; for a unitless one, the run's own unit (its ``time_unit``, None if it had none).
    Traces written before ppviz recorded ``unitless`` are in microseconds."""
    unitless, scale, unit = other.get("unitless", False), other.get("time_unit_us"), other.get("time_unit")
    if not isinstance(unitless, bool):
        raise ParseError(f"{source}: otherData.unitless must be true or false; found {_shown(unitless)}")
    if not unitless:
        return 1000.0, "ms"
    # ts and dur are at most 1e300: divided by at least 1e-3 they stay finite
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not 1e-3 <= scale <= 1e12:
        raise ParseError(f"{source}: otherData.time_unit_us must be a number from 1e-3 to 1e12 (the microseconds one "
                         f"unit is drawn as; ppviz writes 1000 for a unitless run); found {_shown(scale)}")
    if unit is not None:
        try:
            Config(time_unit=unit)
        except ConfigError as exc:
            raise ParseError(f"{source}: otherData.time_unit {_shown(unit)} is not a time unit ({exc}); ppviz "
                             f"writes the config's time_unit there, or null") from None
    return float(scale), unit


def _finite(x: object, what: str, name: object, source: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or x != x or abs(x) > 1e300:
        raise ParseError(f"{source}: op {_shown(name)}'s {what} must be a finite number; found {_shown(x)}")
    return x


def read_chrome_trace(trace: dict, source: str) -> list[RankRecords]:
    """One :class:`RankRecords` per device (thread) of a trace :func:`chrome_trace` wrote."""
    per_unit, unit = _time_base(trace["otherData"], source)
    devices: dict[int, RankRecords] = {}
    for e in trace["traceEvents"]:
        if not isinstance(e, dict) or e.get("ph") != "X" or e.get("pid") != _PID or \
                e.get("cat") in ("transfer", "host copy"):
            continue  # transfers and host copies are not ops: a reading times them from the ops'
        name, tid, ts, dur = e.get("name"), e.get("tid"), e.get("ts"), e.get("dur")
        if isinstance(tid, bool) or not isinstance(tid, int) or not 0 <= tid < 1 << 20:
            raise ParseError(f"{source}: op {_shown(name)} has tid {_shown(tid)}; ppviz traces give each device "
                             f"a thread numbered from 0")
        ts, dur = _finite(ts, "ts", name, source), _finite(dur, "dur", name, source)
        if dur < 0:
            raise ParseError(f"{source}: op {_shown(name)} has a negative duration {dur:g}")
        records = devices.setdefault(tid, RankRecords(source=f"{source} (device {tid})", rank=tid, host=None,
                                                      origin_ns=0, time_unit=unit))
        start, end = ts / per_unit, (ts + dur) / per_unit
        ops = action_ops(name, None, start, start, end)
        if ops is None:
            raise ParseError(f"{source}: op {_shown(name)} is not an action; ppviz traces name each op slot with "
                             f"torch's action string, e.g. '0F1' or '(0F7;7B3)OVERLAP_F_B'")
        records.ops.extend(ops)
    if not devices:
        raise ParseError(f"{source}: a ppviz Chrome trace without ops; expected complete ('X') events, one per op")
    return [devices[d] for d in sorted(devices)]
