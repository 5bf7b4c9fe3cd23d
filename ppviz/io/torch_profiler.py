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
``schedule``), and each span is kept: it holds the step's work around the pipeline's ops too
(zero_grad, the schedule's set-up, the optimizer step), which makes the measured step time.
Times are ``ts`` (µs) from the file's ``baseTimeNanoseconds``, and the rank is
``distributedInfo.rank``. A merged file (several processes) names each process's rank in its
``process_name`` / ``process_labels`` metadata (``"rank 3"``); otherwise ranks are told apart
by the stages they run.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections import defaultdict
from typing import NoReturn

from ..core.errors import ParseError
from ..core.program import B, F, I, W, _shown
from .trace_records import COMPUTE_RE, PAIR_RE, RankRecords

_KIND = {"F": F, "B": B, "I": I, "W": W}
_COMM_RE = re.compile(r"(\d{1,7})(SEND|RECV)_([FB])(\d{1,10})")
_OTHER_RE = re.compile(r"\d{1,7}(UNSHARD|RESHARD|REDUCE_GRAD)")
_SINGLE_RE = re.compile(r"(Forward|Backward) (\d{1,10})")
_STEP_RE = re.compile(r"ProfilerStep#(\d{1,12})")
_BACKEND_RE = re.compile(r"[A-Za-z_]+:(send|recv)")
#: Kineto's categories of operator, kernel and flow events: never an annotation (most of a trace)
_BULK = frozenset({"cpu_op", "kernel", "python_function", "cuda_runtime", "cuda_driver", "gpu_memcpy", "gpu_memset",
                   "ac2g", "fwdbwd", "cpu_instant_event", "gpu_user_annotation", "Trace"})
_RANK_LABEL_RE = re.compile(r"\brank\s*[:=#]?\s*(\d{1,7})\b", re.IGNORECASE)


# Kineto writes one event per block, "\n  {" to "\n  }", nested objects indented deeper; the
# annotations are a few percent of the events, so reading only theirs skips most of the work
_KINETO_HEAD = re.compile(rb'"(?:schemaVersion|baseTimeNanoseconds|distributedInfo)"')
_EVENTS_KEY = b'"traceEvents": ['
_WANTED = re.compile(rb'"name": "(?:PP:|Forward |Backward |ProfilerStep#|process_name"|process_labels"|'
                     rb'[A-Za-z_]+:(?:send|recv)")')
_EVENT_START, _EVENT_END = b"\n  {", b"\n  }"
_KINETO_FIRST = re.compile(rb"[ \n]*\n  \{")


def kineto_events(data: bytes):
    """A Kineto trace's metadata and its annotation events, parsed without the operator events
    around them; None when the bytes are not laid out as Kineto writes them (parse it all then)."""
    import orjson

    key = data.find(_EVENTS_KEY, 0, 1 << 16)
    if key < 0 or not _KINETO_HEAD.search(data, 0, key) or \
            not _KINETO_FIRST.match(data, key + len(_EVENTS_KEY), key + len(_EVENTS_KEY) + 64):
        return None
    try:
        meta = orjson.loads(data[:key] + b'"traceEvents": []}')
        slices, names = [], []
        done = key
        for hit in _WANTED.finditer(data, key):
            if hit.start() < done:
                continue  # a second match inside an event already taken
            start = data.rfind(_EVENT_START, done, hit.start())
            end = data.find(_EVENT_END, hit.end())
            if start < 0 or end < 0:
                return None
            slices.append(data[start + 1:end + 4])
            names.append(hit.group(0)[9:].rstrip(b'"').decode())
            done = end + 4
        events = orjson.loads(b"[" + b",".join(slices) + b"]")
        for event, name in zip(events, names):
            if not isinstance(event, dict) or not isinstance(event.get("name"), str) or \
                    not event["name"].startswith(name):
                return None
    except orjson.JSONDecodeError:
        return None
    if not isinstance(meta, dict) or not events:
        return None
    meta["traceEvents"] = events
    return meta


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


def _bad_time(name, ts, dur, source) -> NoReturn:
    for what, x in (("ts", ts), ("dur", dur)):
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not -1e300 < x < 1e300:
            raise ParseError(f"{source}: event {_shown(name)}'s {what} must be a finite number; found {_shown(x)}")
    raise ParseError(f"{source}: event {_shown(name)} at ts={ts:g} has a negative duration {dur:g}")


def _label(event: dict, labels: dict) -> None:
    """A merged trace's process named "rank N" (process_name / process_labels metadata)."""
    args = event.get("args")
    text = args.get("name", args.get("labels")) if isinstance(args, dict) else None
    match = _RANK_LABEL_RE.search(text) if isinstance(text, str) else None
    if match:
        labels[_key(event.get("pid"))] = int(match.group(1))


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
    origin = math.inf
    dict_, float_, int_ = dict, float, int
    # the hot loop: a real trace holds ~10 operator events per annotation, skipped on their name
    for e in events:
        if type(e) is not dict_:
            raise ParseError(f"{source}: every trace event must be a JSON object; found {_shown(e)}")
        if e.get("cat") in _BULK:
            continue
        name = e.get("name")
        if type(name) is not str:
            continue
        head = name[:3]
        if head == "PP:":
            target = 0
        elif head in ("For", "Bac") and _SINGLE_RE.fullmatch(name):
            target = 1
        elif head == "Pro" and name.startswith("ProfilerStep#"):
            target = 2
        elif name.endswith((":send", ":recv")) and _BACKEND_RE.fullmatch(name):
            target = 3
        else:
            if e.get("ph") == "M" and name in ("process_name", "process_labels"):
                _label(e, labels)
            continue
        if e.get("ph") != "X":
            continue
        ts, dur = e.get("ts"), e.get("dur", 0.0)
        if type(ts) is not float_ and type(ts) is not int_ or type(dur) is not float_ and type(dur) is not int_ \
                or not (-1e300 < ts < 1e300 and 0 <= dur < 1e300):
            _bad_time(name, ts, dur, source)
        if ts < origin:
            origin = ts
        proc = processes[_key(e.get("pid"))]
        if target == 0:
            proc.pp.append((name[3:], ts, ts + dur))
        elif target == 1:
            proc.single.append((name, ts, ts + dur))
        elif target == 2:
            match = _STEP_RE.fullmatch(name)
            if match:
                proc.steps.append((int(match.group(1)), ts, ts + dur))
        else:
            proc.backend.append((name[-4:], ts, ts + dur))
    processes = {pid: p for pid, p in processes.items() if p.pp or p.single}
    if not processes:
        raise ParseError(
            f"{source}: a PyTorch profiler trace without pipeline annotations; expected 'PP:<action>' spans "
            f"(torch.distributed.pipelining's multi-stage schedules), 'Forward i' / 'Backward i' spans "
            f"(ScheduleGPipe), or spans added by ppviz.annotate(stage) (Schedule1F1B and custom loops)")
    # times in ms from a whole microsecond, so that the origin is exact in nanoseconds
    whole_us = int(origin // 1) if math.isfinite(origin) else 0
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


#: a compute op's span: ((kind, stage or None, microbatch), span start, span end, step or None)
_Span = tuple[tuple[int, int | None, int], float, float, int | None]


def _fill(records: RankRecords, proc: _Process, origin_us: int, source: str) -> None:
    """Compute ops (waits split off), sends and receive completions of one process."""
    step_of = _step_finder(proc.steps)
    records.steps.extend((label, (start - origin_us) / 1000.0, (end - origin_us) / 1000.0)
                         for label, start, end in proc.steps)
    recv = sorted((s, e) for kind, s, e in proc.backend if kind == "recv")
    recv_starts = [s for s, _ in recv]
    recv_ends = [e for _, e in recv]
    sends = sorted(s for kind, s, _ in proc.backend if kind == "send")

    def completion(start, end):
        lo = bisect_right(recv_starts, start - 1e-9)
        hi = bisect_right(recv_starts, end)
        return max(recv_ends[lo:hi]) if hi > lo else None

    def ms(t):
        return (t - origin_us) / 1000.0

    compute: list[_Span] = []  # (key, span_start, span_end, step)
    pairs = []  # (forward key, backward key, span_start, span_end, step)
    received: dict[tuple[int | None, str, int | None, int], float] = {}  # (step, direction, stage, microbatch) -> completion
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
    out: list[_Span] = []
    for c in compute:
        if out and out[-1][0] == c[0] and out[-1][3] == c[3] and out[-1][1] <= c[1] and c[2] <= out[-1][2]:
            out[-1] = c
        else:
            out.append(c)
    return out
