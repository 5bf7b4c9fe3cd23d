"""What every trace reader returns: one :class:`RankRecords` per process (pipeline rank) found.

Readers turn their format into these records and nothing more; :mod:`ppviz.io.traces` merges
them (ranks to devices, clocks, steps) into a :class:`ppviz.Measured`. Times are milliseconds
on the process's own clock, counted from ``origin_ns`` (nanoseconds since the Unix epoch, or
any origin shared by the records of one file), so that clocks of different files and hosts can
be compared without float64 losing sub-microsecond precision on 10^18-ns epoch times. The one
exception is a Chrome trace ppviz wrote of a run without a unit it can convert: its times are
the run's own units (:attr:`RankRecords.time_unit` is None, or the run's unit name).
"""

from __future__ import annotations

import gzip
import os
import zlib
from dataclasses import dataclass, field

import re

from ..core.errors import ParseError
from ..core.program import F, KINDS

#: torch's action strings (``0F1``; ``(0F7;7B3)OVERLAP_F_B``), their indices bounded so that a
#: hostile name cannot carry a thousand-digit number
COMPUTE_RE = re.compile(r"(\d{1,7})([FBIWST])(\d{1,10})")
PAIR_RE = re.compile(r"\((\d{1,7})F(\d{1,10});(\d{1,7})([BI])(\d{1,10})\)OVERLAP_F_B")


def action_ops(action, step, span_start: float, start: float, end: float) -> list[tuple] | None:
    """The :attr:`RankRecords.ops` entries of one torch action string: one for a compute action
    (``0F1``), the forward then the backward for an overlapped pair (``(0F7;7B3)OVERLAP_F_B``);
    None when ``action`` is neither (the caller says why in its own terms)."""
    if not isinstance(action, str):
        return None
    match = COMPUTE_RE.fullmatch(action)
    if match:
        stage, kind, mb = match.groups()
        return [(step, KINDS.index(kind), int(stage), int(mb), False, span_start, start, end)]
    match = PAIR_RE.fullmatch(action)
    if match:
        fs, fm, bs, bk, bm = match.groups()
        return [(step, F, int(fs), int(fm), True, span_start, start, end),
                (step, KINDS.index(bk), int(bs), int(bm), True, span_start, start, end)]
    return None


#: The largest trace file read (decompressed), in bytes; larger files are refused before parsing.
MAX_TRACE_BYTES = 1 << 30
#: gzip is decompressed this much at a time: ``read(n)`` allocates n bytes before reading any
_GZIP_CHUNK = 16 << 20


#: (step, kind, stage, microbatch, pair, span_start, start, end): see RankRecords
OpRecord = tuple[int | None, int, int | None, int, bool, float, float, float]
#: (step, direction "F"/"B", stage, microbatch, time): see RankRecords
CommRecord = tuple[int | None, str, int | None, int, float]


@dataclass
class RankRecords:
    """The annotations of one rank.

    ``ops``: (step, kind, stage, microbatch, pair, span_start, start, end) — ``kind`` is 0..3
    (F, B, I, W), ``stage`` is None where the trace does not name it (single-stage schedules:
    the stage is the device), ``pair`` is True on both ops of an overlapped F&B, ``span_start``
    is where the annotated span began and ``start`` where its computation began (after the wait
    for its input), ``step`` is the profiler's step number or None.
    ``sends``: (step, direction "F"/"B", sending stage, microbatch, post time).
    ``recvs``: (step, direction, receiving stage, microbatch, completion time).
    ``steps``: (step, start, end) of each training step's span on this rank (the profiler's
    ``ProfilerStep#N``: the pipeline's ops and the work around them, such as the optimizer).
    ``time_unit``: the unit of those times, ``"ms"`` but for a unitless ppviz trace (module
    docstring).
    """

    source: str
    rank: int | None
    host: str | None
    origin_ns: int
    world_size: int | None = None
    time_unit: str | None = "ms"
    ops: list[OpRecord] = field(default_factory=list)
    sends: list[CommRecord] = field(default_factory=list)
    recvs: list[CommRecord] = field(default_factory=list)
    steps: list[tuple[int, float, float]] = field(default_factory=list)


def read_bytes(path: str, max_bytes: int = MAX_TRACE_BYTES) -> bytes:
    """A file's bytes, gunzipped when it is gzip (by its magic number, whatever its name);
    more than ``max_bytes`` (decompressed) is refused without reading it all."""
    too_big = ParseError(f"{path}: more than {max_bytes:,} bytes of JSON; ppviz reads traces up to that size "
                         f"(pass max_bytes=... to load_trace to read larger ones)")
    try:
        with open(path, "rb") as fh:
            if fh.read(2) == b"\x1f\x8b":
                fh.seek(0)
                with gzip.GzipFile(fileobj=fh) as gz:
                    data = _read_at_most(gz, max_bytes + 1)  # a gzip bomb stops here
            elif os.fstat(fh.fileno()).st_size > max_bytes:
                raise too_big
            else:
                fh.seek(0)
                data = fh.read()
    except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise ParseError(f"{path}: cannot be read ({type(exc).__name__}: {exc}); give a trace file "
                         f"(.json or .json.gz)") from None
    if len(data) > max_bytes:
        raise too_big
    return data


def _read_at_most(stream, limit: int) -> bytes:
    """Up to ``limit`` bytes of ``stream``, holding no more memory than what it has."""
    chunks, size = [], 0
    while size < limit:
        chunk = stream.read(min(_GZIP_CHUNK, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)
