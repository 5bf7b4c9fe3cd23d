"""``ppviz.load_trace``: measured pipeline steps from trace files, as a :class:`ppviz.Measured`.

Each file is read by the reader of its format (detected from its content, whatever its name):

* PyTorch profiler Chrome traces of ``torch.distributed.pipelining`` runs
  (:mod:`ppviz.io.torch_profiler`), one file per rank or a merged one, ``.json`` or ``.json.gz``;
* Chrome traces ppviz wrote (:func:`ppviz.Result.to_chrome_trace`; :mod:`ppviz.io.chrome_trace`);
* ppviz's minimal measured JSON (:mod:`ppviz.io.measured_json`), for other frameworks.

Then the ranks are merged: each rank is a device (in rank order; all of a rank's compute
annotations, whatever thread recorded them, are its device's compute, and two that overlap in
time are refused), its clock is moved to the common origin (each file's
``baseTimeNanoseconds``), and — when the files come from different hosts, or on request —
clocks are aligned from the pipeline's own messages: a transfer a → b
cannot complete before it was sent, so the smallest gap between a producer's end on a and its
consumer's start on b bounds the clock offset from below, the smallest b → a gap bounds it from
above, and the offset is taken midway (the NTP estimate: equal latency both ways). Ops are
grouped into steps (the profiler's ``ProfilerStep#N``, else the n-th occurrence of each action),
every step that holds a whole pipeline step becomes a row of ``measured.steps``, and one of them
is the timeline.
"""

from __future__ import annotations

import gc
import os
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from ..core.config import Config
from ..core.engine import dependencies
from ..core.errors import ConfigError, ParseError, ProgramError, checked_arguments
from ..core.measured import Measured, Samples, Steps
from ..core.transfers import Transfers
from ..core.program import KINDS, MAX_MICROBATCH, MAX_STAGE, B, F, I, Program, W, action
from ..core.registry import all_specs
from ..core.result import unit_suffix
from ..core import vocab
from . import chrome_trace, measured_json, torch_profiler
from .trace_records import MAX_TRACE_BYTES, RankRecords, read_bytes

_SUFFIXES = (".json", ".json.gz")
#: the measured run shipped with ppviz (tests/pipeline_runs.py made it; see its README)
_EXAMPLE = Path(__file__).resolve().parent.parent / "data" / "traces" / "1f1b_emulated"
#: a progress bar appears for loads of several files above this many bytes
_PROGRESS_BYTES = 32 << 20
#: measured schedules are compared with the registry's builders up to this many ops
_RECOGNISE_OPS = 200_000


@checked_arguments
def load_trace(paths, *, step="median", align="auto", progress=None, max_bytes: int = MAX_TRACE_BYTES) -> Measured:
    """Read a measured pipeline run from trace files; returns a :class:`ppviz.Measured`.

    ``paths``: a file, a directory (its ``*.json`` and ``*.json.gz`` files) or a list of them —
    one file per rank or merged files. ``step``: which complete step becomes the timeline:
    ``"median"`` (the one with the median pipeline time; the default), ``"first"``, ``"last"``,
    or a step's label (the profiler's step number); every complete step is in
    ``measured.steps`` and ``measured.samples`` whichever is chosen. ``align``: ``"auto"``
    aligns clocks when the files come from different hosts, ``True`` always, ``False`` never.
    ``progress``: show a progress bar (tqdm) while reading; ``None`` shows one when several
    files hold more than 32 MB. Files over ``max_bytes`` (decompressed) are refused unread.

    Raises :class:`ppviz.ParseError` for files that are not a known format, ranks missing or
    claimed twice, compute ops of one rank that overlap in time, annotations that do not make a
    complete step, and bad values. Times are in ms, but for a Chrome trace ppviz wrote of a
    unitless run: that loads in the run's own units (``measured.config.time_unit`` None).
    """
    if align not in ("auto", True, False):
        raise ConfigError("align", align, "give 'auto', True or False")
    if progress not in (None, True, False):
        raise ConfigError("progress", progress, "give True, False or None (a bar for large multi-file loads)")
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise ConfigError("max_bytes", max_bytes, "give a whole number of bytes >= 1")
    files = _files(paths)
    # a profiler trace is millions of small dicts, alive until the end: the cyclic garbage
    # collector would traverse them again and again while they are built (2-3x the time)
    collecting = gc.isenabled()
    gc.disable()
    try:
        records = _read_all(files, progress, max_bytes)
        return _assemble(records, files, step, align)
    finally:
        if collecting:
            gc.enable()


@checked_arguments
def example_trace() -> str:
    """The directory of a small measured run shipped with ppviz: torch's ``Schedule1F1B`` on 4
    CPU ranks (gloo), 8 microbatches, a model whose layers sleep for fixed times (unequal
    stages), two profiled steps; one PyTorch profiler trace per rank. ``load_trace`` reads it."""
    return str(_EXAMPLE)


def _files(paths) -> list[str]:
    items = [paths] if isinstance(paths, (str, os.PathLike)) else paths
    if isinstance(items, (bytes, dict)) or not hasattr(items, "__iter__"):
        raise ConfigError("paths", paths, "give a trace file, a directory of them, or a list of files")
    files: list[str] = []
    for item in list(items):
        if isinstance(item, bool) or not isinstance(item, (str, os.PathLike)):
            raise ConfigError("paths", item, "give file names (str or pathlib.Path)")
        path = Path(item)
        if path.is_dir():
            found = sorted(str(p) for p in path.iterdir() if p.is_file() and p.name.endswith(_SUFFIXES))
            if not found:
                raise ParseError(f"{path}: the directory holds no .json or .json.gz files")
            files += found
        elif path.is_file():
            files.append(str(path))
        else:
            raise ParseError(f"{path}: no such file or directory")
    if not files:
        raise ConfigError("paths", paths, "give at least one trace file")
    if len(set(files)) != len(files):
        twice = next(f for f in files if files.count(f) > 1)
        raise ParseError(f"{twice} is given twice; give each rank's trace once")
    return files


def _parse_json(data: bytes, source: str):
    import orjson

    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ParseError(f"{source}: not JSON ({exc}); give a trace file (.json or .json.gz)") from None


def _read_all(files: list[str], progress, max_bytes: int) -> list[RankRecords]:
    if progress is None:
        progress = len(files) > 1 and sum(os.path.getsize(f) for f in files) > _PROGRESS_BYTES
    iterator: Iterable[str] = files
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(files, desc="reading traces", unit="file")
    records: list[RankRecords] = []
    for name in iterator:
        records += _read_file(name, max_bytes)
    return records


def _read_file(name: str, max_bytes: int) -> list[RankRecords]:
    data = read_bytes(name, max_bytes)
    trace = torch_profiler.kineto_events(data)
    if trace is not None:
        return torch_profiler.read_torch_trace(trace, name)
    trace = _parse_json(data, name)
    if measured_json.looks_like(trace):
        return measured_json.read_measured_json(trace, name)
    if chrome_trace.looks_like(trace):
        return chrome_trace.read_chrome_trace(trace, name)
    if torch_profiler.looks_like(trace):
        return torch_profiler.read_torch_trace(trace, name)
    found = ("an empty object" if trace == {} else
             f"an object with keys {', '.join(map(repr, list(trace)[:8]))}" if isinstance(trace, dict)
             else f"a JSON {type(trace).__name__}")
    raise ParseError(
        f"{name}: unknown trace format: found {found}; expected a PyTorch profiler Chrome trace with "
        f"pipeline annotations ('traceEvents' holding PP:<action> or Forward i spans), a Chrome trace "
        f"ppviz wrote, or ppviz's measured JSON ({{\"ppviz_measured\": 1, \"ops\": [...]}})")


# Merging ranks --------------------------------------------------------------------------------


def _devices(records: list[RankRecords]) -> list[RankRecords]:
    """Ranks in device order; every rank once."""
    ranked = [r for r in records if r.rank is not None]
    if ranked and len(ranked) != len(records):
        unnamed = next(r for r in records if r.rank is None)
        raise ParseError(f"{unnamed.source} does not say its rank but {ranked[0].source} does (rank "
                         f"{ranked[0].rank}); give traces that all name their rank (distributedInfo) or none")
    if ranked:
        by_rank: dict[int, RankRecords] = {}
        for r in ranked:
            assert r.rank is not None  # ranked holds the ranks that name themselves
            if r.rank in by_rank:
                raise ParseError(f"rank {r.rank} appears twice: in {by_rank[r.rank].source} and in {r.source}; "
                                 f"give one trace per rank")
            by_rank[r.rank] = r
        return [by_rank[k] for k in sorted(by_rank)]

    def lowest_stage(r):
        stages = [op[2] for op in r.ops if op[2] is not None]
        return min(stages) if stages else float("inf")

    # torch places stage d on rank d (looped and V placements alike)
    return sorted(records, key=lowest_stage)


def _peer_stages(devices: list[RankRecords]) -> set[int]:
    """Stages the ranks' sends and receives name as their peers (an activation sent from stage s
    goes to s + 1, a gradient to s − 1)."""
    peers = set()
    for d, r in enumerate(devices):
        for _, direction, stage, _, _ in r.sends:
            peers.add((d if stage is None else stage) + (1 if direction == "F" else -1))
        for _, direction, stage, _, _ in r.recvs:
            peers.add((d if stage is None else stage) + (-1 if direction == "F" else 1))
    return {s for s in peers if s >= 0}


def _check_ranks(devices: list[RankRecords], stage: np.ndarray) -> None:
    present = np.unique(stage)
    S = max(int(present.max()), max(_peer_stages(devices), default=0)) + 1
    missing = np.setdiff1d(np.arange(S), present)
    if not len(missing):
        return
    world = max((r.world_size for r in devices if r.world_size is not None), default=None)
    ranks = [r.rank for r in devices]
    lacking = [k for k in range(world) if k not in ranks] if world is not None and None not in ranks else []
    found = ", ".join(str(r) for r in ranks) if None not in ranks else f"{len(devices)} process(es)"
    expect = (f"; the traces report a world size of {world}, so rank(s) {', '.join(map(str, lacking[:10]))} "
              f"are missing" if lacking else "")
    raise ParseError(f"the traces hold ranks {found}, and stage(s) {', '.join(map(str, missing[:10].tolist()))} "
                     f"of stages 0..{S - 1} run on none of them{expect}; "
                     f"give the trace of every pipeline rank")


def _time_unit(devices: list[RankRecords]) -> str | None:
    """The one unit of every rank's times (ms but for unitless ppviz traces)."""
    first = devices[0]
    other = next((r for r in devices if r.time_unit != first.time_unit), None)
    if other is not None:
        named = ["no unit" if r.time_unit is None else repr(r.time_unit) for r in (first, other)]
        raise ParseError(f"{first.source} holds times in {named[0]} and {other.source} in {named[1]}; give traces "
                         f"of one run, all in real time or all from one unitless ppviz run")
    return first.time_unit


def _assemble(records: list[RankRecords], files: list[str], step, align) -> Measured:
    devices = _devices(records)
    unit = _time_unit(devices)
    origin = min(r.origin_ns for r in devices)
    rows = []
    for d, r in enumerate(devices):
        if not r.ops:
            raise ParseError(f"{r.source}: no compute ops; every rank of a pipeline step runs some")
        shift = (r.origin_ns - origin) / 1e6
        arr = np.array([(-1 if o[0] is None else o[0], o[1], d if o[2] is None else o[2], o[3], o[4],
                         o[5] + shift, o[6] + shift, o[7] + shift) for o in r.ops], dtype=np.float64)
        labelled = np.array([o[0] is not None for o in r.ops])
        rows.append((arr, labelled))
    use_labels = all(lab.any() for _, lab in rows)
    table = np.concatenate([arr[lab] if use_labels else arr for arr, lab in rows])
    device = np.concatenate([np.full(int(lab.sum()) if use_labels else len(lab), d, np.int32)
                             for d, (_, lab) in enumerate(rows)])
    step_label = table[:, 0].astype(np.int64)
    kind = table[:, 1].astype(np.int8)
    stage, mb = table[:, 2], table[:, 3]
    if stage.max() > MAX_STAGE or mb.max() > MAX_MICROBATCH:
        raise ParseError(f"a stage index above {MAX_STAGE} or a microbatch index above {MAX_MICROBATCH}; "
                         f"found stage {int(stage.max())}, microbatch {int(mb.max())}")
    stage, mb = stage.astype(np.int32), mb.astype(np.int32)
    pair = table[:, 4].astype(bool)
    span_start, start, end = table[:, 5], table[:, 6], table[:, 7]
    _check_ranks(devices, stage)
    _check_overlaps(devices, device, kind, stage, mb, pair, start, end, unit)
    if not use_labels:
        step_label = _occurrence(device, kind, stage, mb, start)

    S, m, p = int(stage.max()) + 1, int(mb.max()) + 1, len(devices)
    # a trace of forwards alone is an inference pipeline (torch's forward-only schedule); one
    # backward anywhere makes it training, and steps without theirs incomplete
    forward_only = bool((kind == F).all())
    programs, failures = {}, []
    for label in np.unique(step_label).tolist():
        try:
            programs[label] = _program(np.flatnonzero(step_label == label), device, kind, stage, mb, pair, start,
                                       p, S, m, forward_only)
        except ProgramError as exc:
            failures.append((label, exc))
    if not programs:
        label, error = failures[0]
        raise ParseError(f"the traces hold no complete pipeline step (stages 0..{S - 1}, microbatches 0..{m - 1}, "
                         f"{p} ranks); step {label}: {error}")
    hosts = {r.host for r in devices if r.host is not None}
    offsets = np.zeros(p)
    if align is True or (align == "auto" and len(hosts) > 1):
        offsets = _clock_offsets(programs, start, end, p)
        span_start, start, end = (x + offsets[device] for x in (span_start, start, end))

    labels = sorted(programs)
    spans = _step_spans(devices, origin, offsets) if use_labels else {}
    steps = _steps(programs, labels, start, end, p, spans)
    chosen = _choose(step, steps)
    program, order = programs[labels[chosen]]
    t0 = start[order].min()
    program = Program(program.kind, program.stage, program.microbatch, program.pair, program.offsets,
                      stages=S, microbatches=m, name=_recognise(program, p, S, m), forward_only=program.forward_only,
                      vocab_barriers=program.vocab_barriers)
    dep = dependencies(program)
    op_start, op_end = start[order] - t0, end[order] - t0
    comm = _comm_events(devices, origin, offsets, t0)
    return Measured(_config(program, op_start, op_end, unit), program, op_start, op_end,
                    wait=start[order] - span_start[order], transfers=_transfers(program, dep, op_start, op_end, comm),
                    steps=steps, step=chosen, samples=_samples(programs, labels, device, kind, stage, mb, pair,
                                                               span_start, start, end),
                    clock_offsets=offsets, sources=tuple(files), dependencies=dep)


#: overlaps this many ulps of the times compared, or less, are rounding (see _check_overlaps)
_OVERLAP_ULPS = 64


def _check_overlaps(devices, device, kind, stage, mb, pair, start, end, unit) -> None:
    """Refuse two compute ops of one rank that run at once: a device computes one op at a time
    (an overlapped F&B is one op), so a trace showing two is wrong, and its bubble would come
    out negative. Ops that touch (one ends where the next starts) are fine."""
    # a rank's ops are its device's compute whichever thread or stream recorded them: readers
    # keep only compute annotations, one RankRecords per rank
    slot = np.flatnonzero(~(pair & (kind != F)))  # a pair's backward shares its forward's slot
    order = slot[np.lexsort((end[slot], start[slot], device[slot]))]
    a, b = order[:-1], order[1:]
    # sorted by start, any overlap shows between neighbours. Readers convert units, shift
    # clocks and add ts + dur, each rounding by half an ulp of the times, so an end can pass
    # the next start that it touched by a few ulps; a real overlap is far larger (torch's
    # traces resolve 1 ns, and times at float precision resolve nothing finer than an ulp).
    slack = _OVERLAP_ULPS * np.spacing(np.maximum(np.abs(end[a]), np.abs(start[b])))
    bad = np.flatnonzero((device[a] == device[b]) & (end[a] - start[b] > slack))
    if not len(bad):
        return
    i, j = int(a[bad[0]]), int(b[bad[0]])
    d = int(device[i])
    r = devices[d]
    who = f"rank {r.rank}" if r.rank is not None else f"device {d}"
    suffix = unit_suffix(unit)

    def shown(k):
        name = action(int(kind[k]), int(stage[k]), int(mb[k]))
        if pair[k]:  # its backward is the next row: readers add a pair's ops together
            name = f"({name};{action(int(kind[k + 1]), int(stage[k + 1]), int(mb[k + 1]))})OVERLAP_F_B"
        return f"{name} at [{start[k]:.9g}, {end[k]:.9g}]{suffix}"

    raise ParseError(f"{r.source}: compute ops {shown(i)} and {shown(j)} overlap on {who} (by "
                     f"{end[i] - start[j]:.6g}{suffix}); a rank computes one op at a time, so each op must start "
                     f"at or after the end of the one before it (an overlapped forward and backward is one op: "
                     f"'(0F7;7B3)OVERLAP_F_B')")


def _occurrence(device, kind, stage, mb, start) -> np.ndarray:
    """Step numbers without profiler steps: the n-th run of an action on its device is in step n."""
    order = np.lexsort((start, mb, stage, kind, device))
    key = np.stack([device, kind, stage, mb])[:, order]
    new = np.r_[True, (key[:, 1:] != key[:, :-1]).any(axis=0)]
    group_start = np.maximum.accumulate(np.where(new, np.arange(len(order)), 0))
    occurrence = np.empty(len(order), np.int64)
    occurrence[order] = np.arange(len(order)) - group_start
    return occurrence


def _program(sel, device, kind, stage, mb, pair, start, p, S, m, forward_only):
    """The step's program (each device's ops in the order they started) and its rows, in program order."""
    # an overlapped pair's ops start together: F first, then its backward
    order = sel[np.lexsort((~(pair[sel] & (kind[sel] == F)), start[sel], device[sel]))]
    counts = np.bincount(device[order], minlength=p)
    offsets = np.r_[0, np.cumsum(counts)]
    first_of_pair = pair[order] & (kind[order] == F)
    program = Program(kind[order], stage[order], mb[order], first_of_pair, offsets, stages=S, microbatches=m,
                      name="measured", forward_only=forward_only)
    program.vocab_barriers = vocab.barriers_in_order(program)
    program.validate()
    return program, order


def _busy(program, start, end) -> float:
    second = np.r_[False, program.pair[:-1]]
    return float((end - start)[~second].sum())


def _steps(programs, labels, start, end, p, spans) -> Steps:
    rows = []
    for label in labels:
        program, order = programs[label]
        first, last = start[order].min(), end[order].max()
        span = float(last - first)
        busy = _busy(program, start[order], end[order])
        before = after = np.nan
        mine = spans.get(label)
        if mine:
            # the step lasts as long as its longest rank's span; the work before the ops is the
            # first op's rank's (the ranks after it wait for its forwards anyway)
            lead = int(program.device[np.argmin(start[order])])
            if lead in mine:
                longest = max(e - s for s, e in mine.values())
                before = max(0.0, float(first - mine[lead][0]))
                after = max(0.0, float(longest) - before - span)
        rows.append((label, span, busy, 1 - busy / (p * span) if span > 0 else 0.0, before + span + after, before,
                     after))
    columns = [np.array(col, np.float64) for col in zip(*rows)]
    return Steps(columns[0].astype(np.int64), *columns[1:])


def _step_spans(devices: list[RankRecords], origin: int, offsets) -> dict:
    """Per step label, each device's step span (start, end) on the common clock."""
    out: dict = defaultdict(dict)
    for d, r in enumerate(devices):
        shift = (r.origin_ns - origin) / 1e6 + offsets[d]
        for label, s, e in r.steps:
            out[label][d] = (s + shift, e + shift)
    return out


def _choose(step, steps: Steps) -> int:
    n = len(steps)
    if step == "median":
        return int(np.argsort(steps.pipeline_time, kind="stable")[(n - 1) // 2])
    if step == "first":
        return 0
    if step == "last":
        return n - 1
    if not isinstance(step, bool) and isinstance(step, (int, np.integer)):
        hits = np.flatnonzero(steps.label == step)
        if len(hits):
            return int(hits[0])
    raise ConfigError("step", step, f"give 'median', 'first', 'last' or a complete step's label: "
                                    f"{', '.join(str(int(x)) for x in steps.label[:20])}")


def _samples(programs, labels, device, kind, stage, mb, pair, span_start, start, end) -> Samples:
    cols = defaultdict(list)
    for k, label in enumerate(labels):
        program, order = programs[label]
        t0 = start[order].min()
        both = program.pair.copy()
        both[1:] |= program.pair[:-1]
        cols["step"].append(np.full(len(order), k))
        for name, x in (("device", device), ("stage", stage), ("microbatch", mb)):
            cols[name].append(x[order])
        cols["kind"].append(np.array(list(KINDS))[kind[order]])
        cols["pair"].append(both)
        cols["start"].append(start[order] - t0)
        cols["end"].append(end[order] - t0)
        cols["wait"].append(start[order] - span_start[order])
    return Samples(**{name: np.concatenate(v) for name, v in cols.items()})


def _recognise(program: Program, p: int, S: int, m: int) -> str:
    """The registry's name of the schedule whose program this is, or "measured"."""
    if len(program) <= _RECOGNISE_OPS and S % p == 0:
        for spec in all_specs():
            if spec.builder is None or spec.stage_count(p, S // p) not in (None, S):
                continue
            try:
                if Config(schedule=spec.name, devices=p, microbatches=m, stages_per_device=S // p).build() == program:
                    return spec.name
            except ValueError:
                continue
    return "measured"


def _config(program: Program, start, end, time_unit: str | None = "ms") -> Config:
    """A descriptive config: the sizes, and the median F, I/B and W times per 1/p of the model."""
    p, S = program.devices, program.stages
    solo = ~(program.pair | np.r_[False, program.pair[:-1]])
    duration = end - start

    def median(*kinds):
        sel = solo & np.isin(program.kind, kinds)
        return float(np.median(duration[sel])) * S / p if sel.any() else 0.0

    f, b, w = median(F), median(B, I), median(W)
    if median(B) and not median(I):
        b, w = median(B), 0.0
    if f + b + w <= 0:
        f = 1e-9  # every op took no time: keep the config valid
    v = S // p if S % p == 0 else 1
    # the vocabulary passes are a device's, not a stage's: their medians as they are
    passes = {name: float(np.median(duration[solo & (program.kind == k)]))
              for k, name in zip(vocab.VOCAB_KINDS, ("s", "t")) if (program.kind == k).any()}
    config = Config(schedule="custom", devices=p, microbatches=program.microbatches, stages_per_device=v,
                    f=f, b=b, w=w, time_unit=time_unit,
                    label=f"measured {program.name}" if program.name != "measured" else "measured")
    return config.replace(**passes) if passes else config


# Clocks and transfers -----------------------------------------------------------------------------


def _cross_edges(program: Program, dep: np.ndarray):
    """(producer, consumer) op indices of every dependency between two devices."""
    consumer = np.flatnonzero(dep >= 0)
    producer = dep[consumer]
    cross = program.device[producer] != program.device[consumer]
    return producer[cross], consumer[cross]


def _clock_offsets(programs, start, end, p) -> np.ndarray:
    """Per device, the time to add to its clock (device 0's is 0). Each pair of devices with
    messages both ways gives the offset between them midway between its bounds (module
    docstring), a pair with messages one way the offset that makes its fastest one instant;
    the offsets fit all pairs at once (least squares), so that one pair's error is spread thin."""
    low = np.full((p, p), np.inf)  # low[a, b]: smallest consumer-start-on-b minus producer-end-on-a
    for program, order in programs.values():
        producer, consumer = _cross_edges(program, dependencies(program))
        gap = start[order][consumer] - end[order][producer]
        np.minimum.at(low, (program.device[producer], program.device[consumer]), gap)
    rows, targets = [], []
    for a in range(p):
        for b in range(a + 1, p):
            if np.isinf(low[a, b]) and np.isinf(low[b, a]):
                continue
            if np.isinf(low[b, a]):
                delta = -low[a, b]
            elif np.isinf(low[a, b]):
                delta = low[b, a]
            else:
                delta = (low[b, a] - low[a, b]) / 2
            row = np.zeros(p)
            row[b], row[a] = 1.0, -1.0
            rows.append(row)
            targets.append(delta)
    anchor = np.zeros(p)
    anchor[0] = 1.0
    system = np.array(rows + [anchor])
    if np.linalg.matrix_rank(system) < p:
        connected = {0}
        for row in rows:
            a, b = int(np.flatnonzero(row < 0)[0]), int(np.flatnonzero(row > 0)[0])
            connected |= {a, b} if a in connected or b in connected else set()
        lonely = min(set(range(p)) - connected)
        raise ParseError(f"cannot align device {lonely}'s clock: no op on it depends on, or feeds, another "
                         f"device's; pass align=False if the traces share one clock")
    offsets, *_ = np.linalg.lstsq(system, np.array(targets + [0.0]), rcond=None)
    return offsets - offsets[0]


def _comm_events(devices, origin, offsets, t0):
    """Per (device, direction, stage, microbatch), the sorted times of sends posted and receives
    completed, on the chosen step's clock."""
    sends, recvs = defaultdict(list), defaultdict(list)
    for d, r in enumerate(devices):
        shift = (r.origin_ns - origin) / 1e6 + offsets[d] - t0
        for _, direction, stage, mb, t in r.sends:
            sends[(d, direction, d if stage is None else stage, mb)].append(t + shift)
        for _, direction, stage, mb, t in r.recvs:
            recvs[(d, direction, d if stage is None else stage, mb)].append(t + shift)
    for table in (sends, recvs):
        for times in table.values():
            times.sort()
    return sends, recvs


def _first_within(times, lo, hi):
    """The first of sorted ``times`` in [lo, hi], or None."""
    k = bisect_left(times, lo)
    return times[k] if k < len(times) and times[k] <= hi else None


def _transfers(program: Program, dep, start, end, comm) -> Transfers:
    """One row per dependency between devices: posted by the producer's send (else at its
    end), complete at the consumer's receive (else at its compute start)."""
    sends, recvs = comm
    producer, consumer = _cross_edges(program, dep)
    src, dst = program.device[producer], program.device[consumer]
    kind = np.where(program.kind[consumer] == F, "F", "B")
    mb = program.microbatch[consumer]
    stage_from, stage_to = program.stage[producer], program.stage[consumer]
    t_start, t_end = end[producer].copy(), start[consumer].copy()
    none = ()
    for k, (i, j, a, b, direction, micro, s_from, s_to) in enumerate(zip(
            producer.tolist(), consumer.tolist(), src.tolist(), dst.tolist(), kind.tolist(), mb.tolist(),
            stage_from.tolist(), stage_to.tolist())):
        posted = _first_within(sends.get((a, direction, s_from, micro), none), start[i], end[j])
        if posted is not None:
            t_start[k] = posted
        done = _first_within(recvs.get((b, direction, s_to, micro), none), start[i], end[j])
        if done is not None:
            t_end[k] = done
    # the simulated table's columns: the sending stage, the data ready when its producer ended,
    # the transfer from the posted send to the completed receive; a trace gives no sizes
    return Transfers(src=src.astype(np.int32), dst=dst.astype(np.int32), stage=stage_from.astype(np.int32),
                     microbatch=mb.astype(np.int32), kind=kind, bytes=np.full(len(producer), np.nan),
                     ready=end[producer].copy(), start=t_start, end=np.maximum(t_end, t_start),
                     producer=producer, consumer=consumer)
