"""The wire format between Python and the widget's front end: the timeline and the memory
curves as two binary traits (:func:`encode_timeline`, :func:`encode_memory`), the labels and
metrics as JSON (:func:`describe`). The layout is documented in one place, ARCHITECTURE.md,
"Wire format"; ``js/src/data.ts`` decodes it and ``tests/data/wire_golden.*`` pins the bytes on
both sides."""

from __future__ import annotations

import numpy as np

from ..core.closed_form import caveat
from ..core.errors import ConfigError
from ..core.program import KINDS
from ..core.result import Result
from ..core.step import TAIL_KINDS
from ..core.topology import Link, Topology

TIMELINE_MAGIC = 0x54565050  # b"PPVT" read as little-endian u32
MEMORY_MAGIC = 0x4D565050  # b"PPVM"
FORMAT_VERSION = 5
#: bytes per op at the widest (measured durations, over 65535 microbatch indices or 255 stages,
#: microbatches of over 65534 ops); a run of the library's schedules at usual sizes takes 10
BYTES_PER_OP = 19
#: each transfer (``Result.transfers``) after the ops: ready, start, end, producer, consumer, src, dst, kind
BYTES_PER_TRANSFER = 25
TRANSFER_F, TRANSFER_B = 0, 1
#: offload's host copies (``Result.host_copies``) travel in the same section, after the transfers:
#: src = dst = their device, producer = consumer = the op they serve (an offload's F, a reload's
#: backward)
HOST_OFFLOAD, HOST_RELOAD = 2, 3

FLAG_PAIR_F = 1 << 2
FLAG_PAIR_B = 1 << 3
FLAG_WAITED = 1 << 4
#: the op runs on a bidirectional placement's second replica (DualPipe's upward direction)
FLAG_REVERSE = 1 << 5
#: the kind's third bit (S = 4 and T = 5, the vocabulary passes): bits 0-1 hold the kind's low
#: bits, so a timeline without S or T is byte for byte what it was before them
FLAG_KIND_HIGH = 1 << 6


def _aligned(*parts: bytes) -> bytes:
    """The parts end to end, each padded to a 4-byte boundary; one copy of the bytes (a
    10^6-op timeline is 13 MB)."""
    padded = []
    for part in parts:
        padded.append(part)
        if len(part) % 4:
            padded.append(b"\0" * (-len(part) % 4))
    return b"".join(padded)


def encode_timeline(result: Result) -> bytes:
    """The timeline in the binary layout of ARCHITECTURE.md, "Wire format"."""
    ops = result.ops
    program = result.program
    n = len(ops)
    if program.stages > 0xFFFF:
        raise ConfigError("stages", program.stages, "the widget draws at most 65535 stages")
    kind = program.kind.astype(np.uint8)  # ir's codes are the kind's index in KINDS ("FBIWST")
    flags = (kind & 3) | ((kind >> 2) << 6)
    flags[program.pair] |= FLAG_PAIR_F
    flags[np.flatnonzero(program.pair) + 1] |= FLAG_PAIR_B
    np.bitwise_or(flags, FLAG_WAITED, out=flags, where=ops.waited_for >= 0)
    placement = program.placement
    if placement is not None and placement.reverse_device is not None:
        flags[ops.microbatch >= placement.split] |= FLAG_REVERSE
    # the message's size is most of the widget's loop at 10^6 ops: columns take the narrowest
    # width their values fit, and durations that repeat go as indices into a table
    table, durations = _durations(program, (ops.end - ops.start).astype("<f4"))
    microbatch = ops.microbatch.astype("<u2" if program.microbatches <= 0xFFFF else "<u4")
    stage = ops.stage.astype("u1" if program.stages <= 0xFF else "<u2")
    dep = _dependency_ranks(microbatch, result.dependencies)
    widths = microbatch.itemsize | stage.itemsize << 8 | durations.itemsize << 16 | dep.itemsize << 24
    header = np.array([TIMELINE_MAGIC, FORMAT_VERSION, n, program.devices, widths, len(table)], dtype="<u4")
    return _aligned(
        header.tobytes(),
        table.tobytes(),
        program.offsets.astype("<u4").tobytes(),
        ops.start.astype("<f4").tobytes(),
        durations.tobytes(),
        dep.tobytes(),
        microbatch.tobytes(),
        stage.tobytes(),
        flags.tobytes(),
        *_transfer_columns(result),
    )


def _durations(program, durations: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The duration column: (table, u1/u2 indices into it) when each (kind, stage, pair role)
    has one duration, as in every simulated run of a config (a few distinct values); otherwise
    (an empty table, the f4 durations), as for a measured run."""
    n = len(durations)
    role = program.pair.astype(np.int64)
    role[1:] += 2 * program.pair[:-1]  # 1: a pair's first op (it carries the slot), 2: its second
    key = (program.kind.astype(np.int64) * program.stages + program.stage) * 3 + role
    if n == 0 or 12 * program.stages > 4 * n:  # too many keys for too few ops to gain anything
        return np.zeros(0, "<f4"), durations
    candidate = np.zeros(3 * len(KINDS) * program.stages, "<f4")
    candidate[key] = durations  # one of each key's durations; exact when they are all equal
    if not np.array_equal(candidate[key], durations):
        return np.zeros(0, "<f4"), durations
    used = np.zeros(len(candidate), bool)
    used[key] = True
    table, index = np.unique(candidate[used], return_inverse=True)  # the distinct durations, ascending
    if len(table) > 0xFFFF:
        return np.zeros(0, "<f4"), durations
    lookup = np.zeros(len(candidate), np.int64)
    lookup[used] = index
    return table.astype("<f4"), lookup[key].astype("u1" if len(table) <= 0xFF else "<u2")


def _dependency_ranks(microbatch: np.ndarray, dep: np.ndarray) -> np.ndarray:
    """The dependency column: each op's dependency as its rank among its microbatch's ops in
    program order (an op waits only for an op of its own microbatch), the width's largest
    value for none. A microbatch has 2 or 3 ops per stage, so a byte holds the rank at up to
    84 stages: 1 byte per op where an index into all the ops took 4."""
    n = len(dep)
    none = dep < 0
    dep = np.maximum(dep, 0)
    if np.any((microbatch[dep] != microbatch) & ~none):
        raise ConfigError("dependencies", "across microbatches", "the widget draws dependencies within a microbatch")
    counts = np.bincount(microbatch, minlength=1)
    width = np.dtype("u1" if counts.max(initial=0) < 0xFF else "<u2" if counts.max() < 0xFFFF else "<u4")
    # each microbatch's ops in program order (a stable sort of 16-bit keys is a radix sort)
    order = np.argsort(microbatch, kind="stable")
    rank = np.empty(n, width)
    rank[order] = np.arange(n) - np.repeat(np.cumsum(counts) - counts, counts)
    ranks = rank[dep]
    ranks[none] = np.iinfo(width).max
    return ranks


def _transfer_columns(result: Result) -> list[bytes]:
    """The transfers section: their count, then a column per field (ARCHITECTURE.md, "Wire format"):
    the transfers, then offload's host copies."""
    t, h = result.transfers, result.host_copies
    count = len(t) + len(h)
    if count and result.devices > 0xFFFF:
        raise ConfigError("devices", result.devices, "the widget draws transfers between at most 65535 devices")
    columns = (
        (t.ready, h.ready, "<f4"), (t.start, h.start, "<f4"), (t.end, h.end, "<f4"),
        (t.producer, h.op, "<u4"), (t.consumer, h.op, "<u4"), (t.src, h.device, "<u2"), (t.dst, h.device, "<u2"),
        (np.where(np.asarray(t.kind) == "F", TRANSFER_F, TRANSFER_B),
         np.where(np.asarray(h.kind) == "offload", HOST_OFFLOAD, HOST_RELOAD), "u1"),
    )
    return [np.array([count], dtype="<u4").tobytes()] + [
        np.concatenate([np.asarray(a).astype(dtype), np.asarray(b).astype(dtype)]).tobytes() for a, b, dtype in columns]


def _step(result: Result) -> dict | None:
    """The training step beyond the pipeline (Config.step): its time, MFU, tokens per second,
    the split of the device whose tail is longest, and each device's tail as the chart draws it;
    None without a step."""
    step = result.config.step
    if step is None:
        return None
    parts = result.breakdown
    worst = int(np.argmax(result.tail))
    row = parts.iloc[worst]
    t = result.tails
    return {"time": result.step_time, "mfu": result.mfu, "tokens_per_second": result.tokens_per_second,
            "device": worst, "compute": float(row.compute), "tp_comm": float(row.tp_comm),
            "p2p_wait": float(row.p2p_wait), "idle": float(row.idle), "dp_tail": float(row.dp_tail),
            # on the ops' time axis the step ends at step time − set-up (the set-up runs before t = 0)
            "setup": step.setup, "end": result.step_end,
            "overlap_grad_reduce": step.overlap_grad_reduce, "overlap_param_gather": step.overlap_param_gather,
            "names": {kind: step.part_name(kind) for kind in TAIL_KINDS},
            # each part (Result.tails' order: device by device, as they run): its device, the stage a
            # reduction is for (-1 for the device's optimizer step and gather), kind, start and end, its
            # own time (a reduction's collective; it ends no earlier than its stage's last backward), and
            # how much of it runs under the device's pipeline ops
            "tail": {"device": t.device.tolist(), "stage": t.stage.tolist(), "kind": [str(k) for k in t.kind],
                     "start": _floats(t.start), "end": _floats(t.end),
                     "time": [step.time("reduce", int(s)) if k == "reduce" else float(e - b)
                              for s, k, b, e in zip(t.stage.tolist(), t.kind, t.start, t.end)],
                     "hidden": _floats(t.hidden(result.last_op_end))}}


def _offload(result: Result) -> dict | None:
    """What the widget says about offload's host copies; None without offload."""
    c = result.config
    if c.offload is None:
        return None
    size = "bytes" if c.activation_bytes is not None else "activation units"
    return {"share": c.offload.share, "link": c.offload.link.describe(c.time_unit, size), "count": len(result.host_copies)}


def _communication(result: Result) -> dict | None:
    """What the widget says about transfers: the link of each pair of devices, the bytes of one
    transfer, and per device the idle time spent waiting for communication; None without transfers."""
    c = result.config
    if not c.transfers:
        return None
    topology = c.topology
    assert isinstance(topology, (Topology, Link))  # Config made a preset name its Topology
    unit = c.time_unit
    nodes = topology if isinstance(topology, Topology) else None  # None for a Link: one between every pair
    intra = topology if nodes is None else nodes.intra
    return {
        "count": len(result.transfers),
        "bytes": c.comm_bytes,
        "volume": float(np.sum(result.transfers.bytes)) if len(result.transfers) else 0.0,
        "p2p": c.p2p_mode,
        "topology": None if nodes is None else nodes.name,
        # device d is on node d // devices_per_node; None: one link between every pair of devices
        "devices_per_node": None if nodes is None else nodes.devices_per_node,
        "intra": intra.describe(unit),
        "inter": None if nodes is None else nodes.inter.describe(unit),
        "exposed_comm": _floats(result.exposed_comm),
        "idle_compute": _floats(result.idle_compute),
    }


def encode_memory(result: Result) -> bytes:
    """Each device's activation-memory step function, in the layout of ARCHITECTURE.md, "Wire format"."""
    curves = result.memory
    p = result.devices
    header = np.array([MEMORY_MAGIC, FORMAT_VERSION, p], dtype="<u4")
    return _aligned(
        header.tobytes(),
        curves.offsets.astype("<u4").tobytes(),
        curves.times.astype("<f4").tobytes(),
        curves.values.astype("<f4").tobytes(),
    )


def _floats(values) -> list[float | None]:
    return [None if v is None else float(v) for v in values]


def describe(result: Result) -> dict:
    """The JSON-sized part: labels, sizes and metrics (simulated and closed form)."""
    c = result.config
    program = result.program
    placement = program.placement
    cf = result.closed_form
    closed = None
    if cf is not None:
        closed = {
            "makespan": cf.makespan,
            "bubble_fraction": cf.bubble_fraction,
            "bubble_rate": cf.bubble_rate,
            "peak_activation": None if cf.peak_activation is None else _floats(cf.peak_activation),
            "bubble_formula": cf.bubble_formula,
            "memory_formula": cf.memory_formula,
            "assumptions": cf.assumptions,
            "applies": bool(cf.applies),
            # why it does not apply, in a sentence (None where it does)
            "caveat": caveat(cf, c),
            "source": cf.source,
            # forward-only programs: the published time to first output and throughput (else None)
            "first_output": cf.first_output,
            "throughput": cf.throughput,
        }
    return {
        "title": c.label if c.label is not None else (program.name if c.schedule == "custom" else c.schedule),
        "schedule": program.name,
        "devices": program.devices,
        "microbatches": program.microbatches,
        "stages": program.stages,
        "stages_per_device": c.stages_per_device,
        "f": c.f, "b": c.b, "w": c.w, "comm": c.comm,
        # an F&B pair's time, shown beside f, b, w: by default f + b + w, so overlap gains nothing
        "fb": (c.fb if c.fb is not None else c.f + c.b + c.w) if program.pair.any() else None,
        "time_unit": c.time_unit or "",
        "rows": [placement.describe(d) if placement is not None else "" for d in range(program.devices)],
        "ops": len(result.ops),
        "makespan": result.makespan,
        "ideal": result.ideal,
        "bubble_fraction": result.bubble_fraction,
        "bubble_rate": result.bubble_rate,
        "idle": _floats(result.idle),
        "peak_activation": _floats(result.peak_activation),
        "static_memory": _floats(result.static_memory),
        "peak_memory": _floats(result.peak_memory),
        "activation_bytes": c.activation_bytes,
        # memory_capacity and excess in activation units, like peak_memory; None without a capacity
        "memory_capacity": c.memory_capacity,
        "fits": None if result.fits is None else [bool(x) for x in result.fits],
        "excess": None if result.excess is None else _floats(result.excess),
        # a segmented program (Seq1F1B): op microbatch index i is segment i % segments of
        # microbatch i // segments, and "microbatches" counts the indices (whole_microbatches · segments)
        "segments": program.segments,
        "whole_microbatches": program.whole_microbatches,
        # a forward-only (inference) program: no backward; latency and throughput replace the bubble
        "forward_only": bool(program.forward_only),
        "time_to_first_output": result.time_to_first_output,
        "throughput": result.throughput,
        "closed_form": closed,
        "communication": _communication(result),
        "offload": _offload(result),
        "step": _step(result),
        # per stage, one F's, B's, I's and W's tensor/expert-parallel traffic (Result.traffic); None without any
        "traffic": [_floats(row) for row in result.traffic] if result.traffic.any() else None,
    }
