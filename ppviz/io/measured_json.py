"""ppviz's minimal measured-run JSON, for frameworks ppviz does not read directly.

Megatron-LM's and DeepSpeed's timers, or any log with per-op start and end times, convert to it
in a few lines::

    {"ppviz_measured": 1,
     "time_unit": "ms",
     "ops": [{"rank": 0, "action": "0F0", "start": 0.0, "end": 1.5},
             {"rank": 1, "action": "1F0", "start": 1.6, "end": 3.0, "step": 0},
             {"rank": 0, "action": "(0F7;7B3)OVERLAP_F_B", "start": 9.0, "end": 11.0}, ...]}

* ``ppviz_measured``: the format version, 1.
* ``time_unit``: ``"s"``, ``"ms"``, ``"us"`` or ``"ns"`` (default ``"ms"``), or ``null`` for times
  in a simulation's own units (a unitless run: it loads unitless).
* ``ops``: one object per op: ``rank`` (the pipeline rank, 0..p−1), ``action`` (torch's action
  string: stage, F/B/I/W, microbatch; or an overlapped pair), ``start`` and ``end`` (when its
  computation started and ended, on one clock for all ranks — or per rank, then pass
  ``align=True`` to :func:`ppviz.load_trace`), and optionally ``step`` (a whole number: several
  steps in one file) and ``wait_start`` (when the op began waiting for its input, if it did).

One file may hold every rank, or each file some ranks. :func:`ppviz.load_trace` reads it;
:func:`measured_json` writes a :class:`ppviz.Measured` (or any Result) in it.
"""

from __future__ import annotations

from ..core.errors import ParseError
from ..core.program import _shown
from ..core.topology import SECONDS
from .trace_records import RankRecords, action_ops

FORMAT_KEY = "ppviz_measured"
VERSION = 1
#: milliseconds per unit (the topology's seconds per unit, divided: equal bit for bit to the ratios)
UNITS = {unit: seconds / 1e-3 for unit, seconds in SECONDS.items()}
_FIELDS = ("rank", "action", "start", "end", "step", "wait_start")


def looks_like(trace) -> bool:
    return isinstance(trace, dict) and FORMAT_KEY in trace


def _time(op: dict, key: str, where: str, scale: float) -> float:
    x = op.get(key)
    if isinstance(x, bool) or not isinstance(x, (int, float)) or x != x or abs(x) > 1e300:
        raise ParseError(f"{where}: {key!r} must be a finite number; found {_shown(x)}")
    return float(x) * scale


def _index(value: object, what: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 31:
        raise ParseError(f"{where}: {what!r} must be a whole number >= 0; found {_shown(value)}")
    return value


def read_measured_json(trace: dict, source: str) -> list[RankRecords]:
    """One :class:`RankRecords` per rank named in the file."""
    version = trace.get(FORMAT_KEY)
    if version != VERSION:
        raise ParseError(f"{source}: {FORMAT_KEY} is {_shown(version)}; this ppviz reads version {VERSION}")
    unit = trace.get("time_unit", "ms")
    if unit is not None and unit not in UNITS:
        raise ParseError(f"{source}: time_unit {_shown(unit)} is not one of {', '.join(UNITS)}, or null (unitless)")
    scale = 1.0 if unit is None else UNITS[unit]
    ops = trace.get("ops")
    if not isinstance(ops, list) or not ops:
        raise ParseError(f"{source}: 'ops' must be a non-empty list of {{\"rank\", \"action\", \"start\", \"end\"}} "
                         f"objects; found {_shown(ops)}")
    ranks: dict[int, RankRecords] = {}
    for i, op in enumerate(ops):
        where = f"{source}: ops[{i}]"
        if not isinstance(op, dict):
            raise ParseError(f"{where} must be an object with rank, action, start and end; found {_shown(op)}")
        unknown = [k for k in op if k not in _FIELDS]
        if unknown:
            raise ParseError(f"{where} has an unknown field {_shown(unknown[0])}; the fields are {', '.join(_FIELDS)}")
        rank, step, action = op.get("rank"), op.get("step"), op.get("action")
        rank = _index(rank, "rank", where)
        step = None if step is None else _index(step, "step", where)
        start, end = _time(op, "start", where, scale), _time(op, "end", where, scale)
        span_start = _time(op, "wait_start", where, scale) if "wait_start" in op else start
        if end < start or span_start > start:
            raise ParseError(f"{where}: needs wait_start <= start <= end; found "
                             f"{'wait_start ' + repr(op['wait_start']) + ', ' if 'wait_start' in op else ''}"
                             f"start {op['start']!r}, end {op['end']!r}")
        records = ranks.setdefault(rank, RankRecords(source=f"{source} (rank {rank})", rank=rank, host=None,
                                                     origin_ns=0, time_unit=None if unit is None else "ms"))
        parsed = action_ops(action, step, span_start, start, end)
        if parsed is None:
            raise ParseError(f"{where}: action {_shown(action)} is not a compute action; write "
                             f"<stage><F|B|I|W><microbatch> such as '0F1' or '3I0', or '(0F7;7B3)OVERLAP_F_B'")
        records.ops.extend(parsed)
    return [ranks[r] for r in sorted(ranks)]


def measured_json(result) -> dict:
    """A Result's (or Measured's) timeline in the minimal format (times in its unit, ms for a
    measured run; a unitless run, or one in a unit this format does not name, as ``null``: its
    own units), one step; ``json.dump`` it to a file."""
    program, ops = result.program, result.ops
    unit = result.config.time_unit
    wait = getattr(result, "wait", None)
    out = []
    i = 0
    while i < len(ops):
        entry = {"rank": int(ops.device[i]), "action": program.action_at(i),
                 "start": float(ops.start[i]), "end": float(ops.end[i])}
        if wait is not None and wait[i] > 0:
            entry["wait_start"] = float(ops.start[i] - wait[i])
        out.append(entry)
        i += 2 if program.pair[i] else 1
    return {FORMAT_KEY: VERSION, "time_unit": unit if unit in UNITS else None, "ops": out}
