"""PyTorch profiler Chrome traces of ``torch.distributed.pipelining`` runs → :class:`RankRecords`.

What torch 2.13 records (``torch/distributed/pipelining/schedules.py``):

* the multi-stage schedules (``_PipelineScheduleRuntime``: Interleaved1F1B, LoopedBFS,
  InterleavedZeroBubble, ZBVZeroBubble, DualPipeV) wrap every action in
  ``record_function(f"PP:{action}")``: ``PP:5F2``, ``PP:6I1``, ``PP:1SEND_F0``, ``PP:2RECV_B3``,
  ``PP:(0F7;7B3)OVERLAP_F_B``, and ``PP:0UNSHARD`` / ``RESHARD`` / ``REDUCE_GRAD``. A RECV span
  only posts the receive; the compute span that needs it waits for it first, so the wait is
  inside the compute span.
* ``ScheduleGPipe`` records ``Forward i`` / ``Backward i`` (no stage: it is the rank's), each
  holding its receive, its wait, its computation and the posting of its send; the computation
  ends where the send is posted (the start of the backend's send span inside it).
* ``Schedule1F1B`` records nothing per op: :func:`ppviz.annotate` adds ``PP:{action}`` spans
  around the stage's own computation.

The communication backend records each transfer as its own span (``gloo:recv``, ``gloo:send``,
``nccl:recv`` …) from the moment it is posted until it completes; these do not nest with the
compute spans. A receive's completion is the end of the backend span that starts inside its
RECV span (or inside the ``Forward i`` / ``Backward i`` span), and the computation that needed it
starts at ``max(span start, completion)``: the rest of the span before that was waiting.

Steps are the profiler's ``ProfilerStep#N`` spans where it wrote them (with a profiler
``schedule``); times are ``ts`` (µs) from the file's ``baseTimeNanoseconds``, and the rank is
``distributedInfo.rank``. A merged file (several processes) names each process's rank in its
``process_name`` / ``process_labels`` metadata (``"rank 3"``); otherwise ranks are told apart
by the stages they run.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import defaultdict

import numpy as np

from ..core.errors import ParseError
from ..core.program import B, F, I, W, _shown
from .trace_records import COMPUTE_RE, PAIR_RE, RankRecords

_KIND = {"F": F, "B": B, "I": I, "W": W}
_COMM_RE = re.compile(r"(\d{1,7})(SEND|RECV)_([FB])(\d{1,10})")
_OTHER_RE = re.compile(r"\d{1,7}(UNSHARD|RESHARD|REDUCE_GRAD)")
_SINGLE_RE = re.compile(r"(Forward|Backward) (\d{1,10})")
_STEP_RE = re.compile(r"ProfilerStep#(\d{1,12})")
_BACKEND_RE = re.compile(r"[A-Za-z_]+:(send|recv)")
_RANK_LABEL_RE = re.compile(r"\brank\s*[:=#]?\s*(\d{1,7})\b", re.IGNORECASE)


def looks_like(trace) -> bool:
    """True for a PyTorch profiler trace (Kineto's keys, or a pipelining annotation)."""
    if isinstance(trace, dict) and ("distributedInfo" in trace or "baseTimeNanoseconds" in trace
                                    or "schemaVersion" in trace):
        return True
    events = trace.get("traceEvents") if isinstance(trace, dict) else trace
    if not isinstance(events, list):
        return False
    for e in events[:200_000]:
        name = e.get("name") if isinstance(e, dict) else None
        if isinstance(name, str) and (name.startswith("PP:") or _SINGLE_RE.fullmatch(name)):
            return True
    return False


def _number(value, what: str, source: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or abs(value) > 1e300:
        raise ParseError(f"{source}: {what} must be a finite number; found {_shown(value)}")
    return float(value)


class _Process:
    __slots__ = ("pp", "single", "steps", "backend")

    def __init__(self):
        self.pp: list = []  # (name, start, end)
        self.single: list = []
        self.steps: list = []  # (label, start, end)
        self.backend: list = []  # ("send"/"recv", start, end)


def read_torch_trace(trace, source: str) -> list[RankRecords]:
    """The records of each process in a PyTorch profiler trace (a parsed JSON document)."""
    if isinstance(trace, list):
        events, meta = trace, {}
    else:
        events, meta = trace.get("traceEvents"), trace
    if not isinstance(events, list):
        raise ParseError(f"{source}: 'traceEvents' must be a list of events; found {type(events).__name__}")
    base_ns = meta.get("baseTimeNanoseconds", 0)
    if isinstance(base_ns, bool) or not isinstance(base_ns, int) or not 0 <= base_ns < 1 << 63:
        raise ParseError(f"{source}: baseTimeNanoseconds must be a whole number of nanoseconds >= 0; "
                         f"found {_shown(base_ns)}")
    info = meta.get("distributedInfo")
    file_rank = world = None
    if isinstance(info, dict):
        file_rank, world = info.get("rank"), info.get("world_size")
        for what, value in (("distributedInfo.rank", file_rank), ("distributedInfo.world_size", world)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ParseError(f"{source}: {what} must be a whole number >= 0; found {_shown(value)}")
    host = meta.get("host_name") if isinstance(meta.get("host_name"), str) else None

    processes: dict = defaultdict(_Process)
    labels: dict = {}
    origin = None
    for e in events:
        if type(e) is not dict:
            raise ParseError(f"{source}: every trace event must be a JSON object; found {_shown(e)}")
        ph = e.get("ph")
        name = e.get("name")
        if ph == "M":
            if name in ("process_name", "process_labels") and isinstance(e.get("args"), dict):
                text = e["args"].get("name", e["args"].get("labels"))
                match = _RANK_LABEL_RE.search(text) if isinstance(text, str) else None
                if match:
                    labels[_key(e.get("pid"))] = int(match.group(1))
            continue
        if ph != "X" or not isinstance(name, str):
            continue
        if name.startswith("PP:"):
            target = "pp"
        elif name.startswith(("Forward ", "Backward ")):
            target = "single"
        elif name.startswith("ProfilerStep#"):
            target = "steps"
        elif ":" in name and _BACKEND_RE.fullmatch(name):
            target = "backend"
        else:
            continue
        ts = _number(e.get("ts"), f"event {_shown(name)}'s ts", source)
        dur = _number(e.get("dur", 0.0), f"event {_shown(name)}'s dur", source)
        if dur < 0:
            raise ParseError(f"{source}: event {_shown(name)} at ts={ts:g} has a negative duration {dur:g}")
        if origin is None or ts < origin:
            origin = ts
        proc = processes[_key(e.get("pid"))]
        if target == "pp":
            proc.pp.append((name[3:], ts, ts + dur))
        elif target == "single":
            proc.single.append((name, ts, ts + dur))
        elif target == "steps":
            match = _STEP_RE.fullmatch(name)
            if match:
                proc.steps.append((int(match.group(1)), ts, ts + dur))
        else:
            proc.backend.append((name.rsplit(":", 1)[1], ts, ts + dur))
    processes = {pid: p for pid, p in processes.items() if p.pp or p.single}
    if not processes:
        raise ParseError(
            f"{source}: a PyTorch profiler trace without pipeline annotations; expected 'PP:<action>' spans "
            f"(torch.distributed.pipelining's multi-stage schedules), 'Forward i' / 'Backward i' spans "
            f"(ScheduleGPipe), or spans added by ppviz.annotate(stage) (Schedule1F1B and custom loops)")
    # times in ms from a whole microsecond, so that the origin is exact in nanoseconds
    whole_us = int(origin // 1)
    origin_ns = base_ns + whole_us * 1000
    out = []
    for pid, proc in processes.items():
        rank = labels.get(pid, file_rank if len(processes) == 1 else None)
        name = source if len(processes) == 1 else f"{source} (pid {pid})"
        records = RankRecords(source=name, rank=rank, host=host, origin_ns=origin_ns, world_size=world)
        _fill(records, proc, whole_us, name)
        out.append(records)
    return out


def _key(pid):
    return pid if isinstance(pid, (int, str)) else repr(pid)


def _fill(records: RankRecords, proc: _Process, origin_us: int, source: str) -> None:
    """Compute ops (waits split off), sends and receive completions of one process."""
    step_of = _step_finder(proc.steps)
    recv = sorted((s, e) for kind, s, e in proc.backend if kind == "recv")
    recv_starts = [s for s, _ in recv]
    recv_ends = np.array([e for _, e in recv])
    sends = sorted(s for kind, s, _ in proc.backend if kind == "send")

    def completion(start, end):
        lo = bisect_right(recv_starts, start - 1e-9)
        hi = bisect_right(recv_starts, end)
        return float(recv_ends[lo:hi].max()) if hi > lo else None

    def ms(t):
        return (t - origin_us) / 1000.0

    compute = []  # (key, span_start, span_end, step)
    pairs = []  # (forward key, backward key, span_start, span_end, step)
    received = {}  # (step, direction, stage, microbatch) -> completion
    for action, start, end in proc.pp:
        step = step_of(start)
        match = COMPUTE_RE.fullmatch(action)
        if match:
            s, k, mb = match.groups()
            compute.append(((_KIND[k], int(s), int(mb)), start, end, step))
            continue
        match = _COMM_RE.fullmatch(action)
        if match:
            s, verb, direction, mb = match.groups()
            if verb == "SEND":
                records.sends.append((step, direction, int(s), int(mb), ms(start)))
            else:
                done = completion(start, end)
                if done is not None:
                    received[(step, direction, int(s), int(mb))] = done
            continue
        match = PAIR_RE.fullmatch(action)
        if match:
            fs, fm, bs, bk, bm = match.groups()
            pairs.append(((F, int(fs), int(fm)), (_KIND[bk], int(bs), int(bm)), start, end, step))
            continue
        if not _OTHER_RE.fullmatch(action):
            raise ParseError(f"{source}: annotation {_shown('PP:' + action)} is not one of torch's pipeline actions; "
                             f"expected PP:<stage><F|B|I|W><microbatch> (e.g. PP:5F2), PP:<stage>SEND_F<mb> / "
                             f"RECV_B<mb> …, PP:(0F7;7B3)OVERLAP_F_B, or UNSHARD / RESHARD / REDUCE_GRAD")
    if not compute:
        # ScheduleGPipe: Forward i / Backward i hold the receive and the send themselves
        for name, start, end in proc.single:
            verb, mb = name.split(" ")
            kind = F if verb == "Forward" else B
            step = step_of(start)
            direction = "F" if kind == F else "B"
            done = completion(start, end)
            if done is not None:
                received[(step, direction, None, int(mb))] = done
            # the send is posted after the computation, inside the span: the computation ends there
            k = bisect_right(sends, start if done is None else done)
            if k < len(sends) and sends[k] <= end:
                records.sends.append((step, direction, None, int(mb), ms(sends[k])))
                end = sends[k]
            compute.append(((kind, None, int(mb)), start, end, step))
    def begin(key, start, end, step):
        kind, stage, mb = key
        done = received.get((step, "F" if kind == F else "B", stage, mb)) if kind != W else None
        if done is None:
            return start
        records.recvs.append((step, "F" if kind == F else "B", stage, mb, ms(done)))
        return min(max(start, done), end)

    for key, start, end, step in _innermost(compute):
        records.ops.append((step, *key, False, ms(start), ms(begin(key, start, end, step)), ms(end)))
    for f_key, b_key, start, end, step in pairs:
        # torch runs the pair's forward, then its backward: the slot computes once the forward's
        # input is in (a wait for the backward's input, between the two, stays inside the slot)
        t = ms(begin(f_key, start, end, step))
        begin(b_key, start, end, step)
        records.ops.append((step, *f_key, True, ms(start), t, ms(end)))
        records.ops.append((step, *b_key, True, ms(start), t, ms(end)))


def _step_finder(steps):
    """The profiler step whose span holds a time (None outside every step, or without steps)."""
    if not steps:
        return lambda t: None
    steps = sorted(steps, key=lambda s: s[1])
    starts = [s for _, s, _ in steps]

    def find(t):
        k = bisect_right(starts, t) - 1
        return steps[k][0] if k >= 0 and t <= steps[k][2] else None

    return find


def _innermost(compute):
    """Drop a span that holds another of the same action (torch's runtime span around the one
    ppviz.annotate adds): the inner one is the computation without the wait."""
    compute.sort(key=lambda c: (c[0][0], -1 if c[0][1] is None else c[0][1], c[0][2], c[1], -c[2]))
    out = []
    for c in compute:
        if out and out[-1][0] == c[0] and out[-1][3] == c[3] and out[-1][1] <= c[1] and c[2] <= out[-1][2]:
            out[-1] = c
        else:
            out.append(c)
    return out
