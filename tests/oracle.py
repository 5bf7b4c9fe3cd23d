"""A reference simulator written from the execution model's definition, not from ppviz's code.

It shares nothing with ``ppviz``'s engines, cost table, dependency index or memory curves: it
reads a program as per-device lists of (kind, stage, microbatch, paired) and a config's public
fields, and runs the model in the most direct way (repeated passes until nothing moves). Slow
and obviously right, so that the tests can use it as an oracle on random inputs.

The model (ARCHITECTURE.md, "Model of time and memory"):

- F(s, mb) waits for F(s−1, mb); I or B of (s, mb) waits for I/B of (s+1, mb), or on the last
  stage for F(S−1, mb); W(s, mb) waits for I(s, mb). A dependency between two devices adds
  ``comm``. A device runs its ops in order, one at a time; an F&B pair is one slot that waits
  for both ops' inputs.
- Stage s costs f·p/S, b·p/S (I), w·p/S (W) unless ``stage_costs[s]`` gives absolute values;
  B costs I + W; a pair costs (F + B) scaled by fb / (f + b + w) when ``fb`` is given. When a
  stage gives its expert-parallel all-to-all (``f_a2a``, ``b_a2a``: I's, ``w_a2a``; B's is
  b_a2a + w_a2a; 1/k of it per segment) and ``a2a_sm_share`` σ, a pair of ops with all-to-alls M
  and the rest C costs max(C_F + C_B + σ_F·M_F + σ_B·M_B, C_F + M_F, C_B + M_B, M_F + M_B)
  (DeepSeek-V3's overlap, ``engine.overlapped_pairs``).
- F allocates the stage's activation (activation·p/S unless overridden) at its start; I frees
  all but ``w_share`` of it at its end, W the rest, B all of it. In a forward-only program an F
  frees at its own end what it took at its start.
- A program of k sequence segments (``segments``) numbers m·k microbatch indices; each op of one
  costs 1/k of its stage's time and holds 1/k of its activation.
  all but ``w_share`` of it at its end, W the rest, B all of it.
- Recompute (``Config.recompute``): every I and B of a stage first runs the recompute, whose
  time is ``stage_costs[s]["recompute"]``, else recompute_cost·p/S, else (full recompute) the
  stage's own F time, else 0; F then stores recompute_activation·p/S, by default 2/34 of the
  activation under full recompute and all of it under selective recompute.
- Static memory: each distinct stage in a device's rows adds ``stage_costs[s]["params"]``,
  else params·p/S.
- Every op of stage s also takes its host gap, ``stage_costs[s]["gap_f"]`` for an F,
  ``"gap_b"`` for an I or a B, ``"gap_w"`` for a W, and an op of microbatch index 0 its
  warm-up, ``"warmup_f"``, ``"warmup_b"`` (I), ``"warmup_w"`` (W), both for a B; neither is
  split into segments.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

#: The zero-bubble paper's per-layer activation sizes (arXiv 2401.10241, Table 1): the weight
#: gradient still needs M_W = 32sbh of the M_B = 34sbh + 5as²b; with flash attention the
#: 5as²b term is not stored, so the default share W keeps is 32/34.
PAPER_W_SHARE = 32 / 34

KIND = "FBIWST"


class Deadlock(Exception):
    """Raised when some ops can never start."""


@dataclass
class Run:
    start: list[float]
    end: list[float]
    makespan: float
    busy: list[float]
    idle: list[float]
    bubble_fraction: float
    bubble_rate: float
    peak_activation: list[float]
    static_memory: list[float]
    #: per device, (time, activation held after that instant) wherever it changes, from (0, 0)
    curves: list[list[tuple[float, float]]]


def program_rows(program) -> list[list[tuple[str, int, int, bool]]]:
    """Per device: (kind letter, stage, microbatch, starts a pair) in program order."""
    rows = []
    offsets = program.offsets.tolist()
    kind, stage, mb, pair = (program.kind.tolist(), program.stage.tolist(), program.microbatch.tolist(),
                             program.pair.tolist())
    for d in range(len(offsets) - 1):
        rows.append([(KIND[kind[i]], stage[i], mb[i], bool(pair[i])) for i in range(offsets[d], offsets[d + 1])])
    return rows


def stage_costs(config, p: int, S: int):
    frac = p / S
    mode = config.recompute
    kept = config.activation
    if mode == "full":
        kept = config.activation * 2 / 34 if config.recompute_activation is None else config.recompute_activation
    elif mode == "selective" and config.recompute_activation is not None:
        kept = config.recompute_activation
    out = []
    for s in range(S):
        over = dict(config.stage_costs.get(s, {}))
        f = over.get("f", config.f * frac)
        i = over.get("b", config.b * frac)
        w = over.get("w", config.w * frac)
        act = over.get("activation", kept * frac)
        again = 0.0
        if mode is not None:
            if "recompute" in over:
                again = over["recompute"]
            elif config.recompute_cost is not None:
                again = config.recompute_cost * frac
            elif mode == "full":
                again = f
        params = over.get("params", config.params * frac)
        # the vocabulary passes (Vocabulary Parallelism): a device's, whatever the stage's size
        out.append({"F": f, "I": again + i, "W": w, "B": again + i + w, "act": act, "params": params,
                    "S": over.get("s", config.s), "T": over.get("t", config.t)})
    return out


def segment_costs(config, p: int, S: int, k: int):
    """stage_costs for a program of k sequence segments: a segment's passes and activation are 1/k
    of its microbatch's; the stage's parameters are not split. Each stage's ops add their host
    gap, whole, and ``"warm"`` gives each kind's warm-up (see :func:`duration`)."""
    out = []
    for s, c in enumerate(stage_costs(config, p, S)):
        over = config.stage_costs.get(s, {})
        gap = {"F": over.get("gap_f", 0.0), "I": over.get("gap_b", 0.0), "B": over.get("gap_b", 0.0),
               "W": over.get("gap_w", 0.0)}
        warm = {"F": over.get("warmup_f", 0.0), "I": over.get("warmup_b", 0.0), "W": over.get("warmup_w", 0.0),
                "S": 0.0, "T": 0.0}
        warm["B"] = warm["I"] + warm["W"]
        split = {key: value if key in ("params", "S", "T") else value / k for key, value in c.items()}
        out.append({key: value + gap[key] if key in gap else value for key, value in split.items()} | {"warm": warm})
    return out


def duration(costs, op) -> float:
    """The time of one op (kind, stage, microbatch, ...): its stage's, and the warm-up for index 0."""
    kind, s, mb = op[0], op[1], op[2]
    return costs[s][kind] + (costs[s]["warm"][kind] if mb == 0 else 0.0)


A2A = ("f_a2a", "b_a2a", "w_a2a", "a2a_sm_share")


def pair_duration(config, costs, k: int, first, second, ratio: float) -> float:
    """An F&B pair's slot (see the module docstring)."""
    own = [duration(costs, first), duration(costs, second)]
    if not any(key in over for over in config.stage_costs.values() for key in A2A):
        return ratio * sum(own)

    def a2a(op):
        over = config.stage_costs.get(op[1], {})
        i, w = over.get("b_a2a", 0.0), over.get("w_a2a", 0.0)
        return {"F": over.get("f_a2a", 0.0), "I": i, "W": w, "B": i + w}[op[0]] / k, over.get("a2a_sm_share", 0.0)

    (m_f, s_f), (m_b, s_b) = a2a(first), a2a(second)
    c_f, c_b = own[0] - m_f, own[1] - m_b
    return max(c_f + c_b + s_f * m_f + s_b * m_b, c_f + m_f, c_b + m_b, m_f + m_b)


def run(program, config) -> Run:
    rows = program_rows(program)
    p, S = len(rows), program.stages
    costs = segment_costs(config, p, S, program.segments)
    ratio = 1.0 if config.fb is None else config.fb / (config.f + config.b + config.w)

    # each (kind, stage, mb) → (device, flat index); the program is validated by ppviz, so unique
    where = {}
    flat = []
    for d, row in enumerate(rows):
        for k, s, mb, _ in row:
            where[(k, s, mb)] = (d, len(flat))
            flat.append((d, k, s, mb))

    # Vocabulary Parallelism: every device d runs S and T of each microbatch, named by its lowest
    # stage; S waits for the last stage's F, T for every S and the all-reduce after them, and the
    # last stage's backward for every S (one barrier) or every T (two) and the all-reduce after them
    shards = sorted({s for (k, s, mb) in where if k == "S"})
    barrier = config.vocab_comm
    # the interlaced pipeline (program.vocab_synchronous): the output layer is one blocking step,
    # every device's S of a microbatch starting together (after each device's op before it) and
    # each device's op after a T waiting for every T of that microbatch and the all-reduce
    sync_before, sync_after = {}, {}
    if program.vocab_synchronous:
        for d, row in enumerate(rows):
            for pos, (k, s, mb, _) in enumerate(row):
                if k == "S" and pos > 0:
                    sync_before.setdefault(mb, []).append(row[pos - 1][:3])
                if k == "T" and pos + 1 < len(row):
                    sync_after[row[pos + 1][:3]] = mb

    def needs(k, s, mb):
        """What (kind, stage, mb) waits for: a list of (op, extra time after its end or None for comm)."""
        out = own_needs(k, s, mb)
        if k == "S":
            out += [(op, 0.0) for op in sync_before.get(mb, [])]
        if (k, s, mb) in sync_after:
            out += [(("T", r, sync_after[(k, s, mb)]), barrier) for r in shards]
        return out

    def own_needs(k, s, mb):
        if k == "S":
            return [(("F", S - 1, mb), None)]
        if k == "T":
            return [(("S", r, mb), barrier) for r in shards]
        if k == "F":
            return [(("F", s - 1, mb), None)] if s > 0 else []
        if k in "BI":
            if s == S - 1:
                if shards:
                    last = "S" if program.vocab_barriers == 1 else "T"
                    return [((last, r, mb), barrier) for r in shards]
                return [(("F", s, mb), None)]
            nxt = ("I", s + 1, mb) if ("I", s + 1, mb) in where else ("B", s + 1, mb)
            return [(nxt, None)]
        return [(("I", s, mb), None)]  # W

    end = [None] * len(flat)
    start = [None] * len(flat)
    pos = [0] * p
    free = [0.0] * p
    busy = [0.0] * p
    base = [0] * p
    for d in range(1, p):
        base[d] = base[d - 1] + len(rows[d - 1])

    def ready_time(d, op):
        k, s, mb = op[0], op[1], op[2]
        ready = 0.0
        for dep, extra in needs(k, s, mb):
            dd, j = where[dep]
            if end[j] is None:
                return None
            ready = max(ready, end[j] + (extra if extra is not None else config.comm if dd != d else 0.0))
        return ready

    while any(pos[d] < len(rows[d]) for d in range(p)):
        moved = False
        for d in range(p):
            while pos[d] < len(rows[d]):
                op = rows[d][pos[d]]
                paired = op[3]
                group = [op, rows[d][pos[d] + 1]] if paired else [op]
                readies = [ready_time(d, g) for g in group]
                if any(r is None for r in readies):
                    break
                t0 = max([free[d]] + readies)
                if paired:
                    dur = pair_duration(config, costs, program.segments, group[0], group[1], ratio)
                else:
                    dur = duration(costs, op)
                for g_i in range(len(group)):
                    j = base[d] + pos[d] + g_i
                    start[j], end[j] = t0, t0 + dur
                free[d] = t0 + dur
                busy[d] += dur
                pos[d] += len(group)
                moved = True
        if not moved:
            raise Deadlock(f"stuck at positions {pos}")

    makespan = max(end) if end else 0.0
    idle = [makespan - b for b in busy]
    ideal = max(busy)
    share = config.w_share
    peaks = []
    static = []
    curves = []
    for d, row in enumerate(rows):
        events = []  # (time, order, delta): frees (order 0) before allocations (order 1) at one instant
        for g_i, (k, s, mb, _) in enumerate(row):
            j = base[d] + g_i
            a = costs[s]["act"]
            if k == "F":
                events.append((start[j], 1, a))
                if program.forward_only:
                    events.append((end[j], 0, -a))
            elif k == "B":
                events.append((end[j], 0, -a))
            elif k == "I":
                events.append((end[j], 0, -(1 - share) * a))
            elif k == "W":
                events.append((end[j], 0, -share * a))
            elif k == "S" and config.vocab_activation:
                events.append((start[j], 1, config.vocab_activation))
            elif k == "T" and config.vocab_activation:
                events.append((end[j], 0, -config.vocab_activation))
        level = peak = 0.0
        curve = [(0.0, 0.0)]
        for t, _, delta in sorted(events, key=lambda e: (e[0], e[1])):
            level += delta
            peak = max(peak, level)
            if curve[-1][0] == t:
                curve.pop()  # one point per instant: the level after all of its events
            if not curve or not math.isclose(curve[-1][1], level, abs_tol=1e-9):
                curve.append((t, level))
        peaks.append(peak)
        curves.append(curve)
        static.append(sum(costs[s]["params"] for s in {s for _, s, _, _ in row}))
    return Run(start=start, end=end, makespan=makespan, busy=busy, idle=idle,
               bubble_fraction=sum(idle) / (p * makespan) if makespan else 0.0,
               bubble_rate=(makespan - ideal) / ideal if ideal else 0.0,
               peak_activation=peaks, static_memory=static, curves=curves)


# Transfers ------------------------------------------------------------------------------------
#
# The model with communication as transfers (ARCHITECTURE.md, "Transfers"), from its definition:
#
# - A program's rows are torch's ``pipeline_order_with_comms``: compute actions and the sends and
#   receives ``{s}SEND_F{mb}`` (stage s's output to stage s+1), ``{s+1}RECV_F{mb}``,
#   ``{s}SEND_B{mb}`` (stage s's input gradient to stage s−1), ``{s−1}RECV_B{mb}``.
# - A communication op is posted at the end of the last compute action before it on its device
#   (0 if none). A transfer is ready when its send is posted; it starts when ready and when the
#   transfer sent before it from the same device to the same device has ended; it lasts
#   latency + bytes / bandwidth of the link between the two devices' nodes.
# - A compute action starts when its device is free and its inputs are there (a same-device
#   producer's end, or the transfer's end). Overlapped P2P: a device is free when its previous
#   compute action ends. Blocking P2P: also only when every transfer of the communication ops
#   between that action and this one (a batch) has ended.

SECONDS_PER = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ns": 1e-9}
ACTION = re.compile(r"^(\d+)(SEND_F|RECV_F|SEND_B|RECV_B)(\d+)$")


@dataclass
class TransferRun:
    start: list[float]          # per op, as Run
    end: list[float]
    makespan: float
    transfers: dict             # (direction "F"/"B", sending stage, microbatch) → (src, dst, start, end)
    copies: dict                # with offload, as OffloadRun's; else empty
    #: with offload, per device the peak activation and the curve, and the reloads' holds, as OffloadRun's
    peak_activation: list[float] | None = None
    curves: list | None = None
    held: dict = field(default_factory=dict)


def link_duration(config, src: int, dst: int, segments: int = 1) -> float:
    topology = config.topology
    if hasattr(topology, "devices_per_node"):
        same_node = src // topology.devices_per_node == dst // topology.devices_per_node
        link = topology.intra if same_node else topology.inter
    else:
        link = topology
    latency, bandwidth = link.latency, link.bandwidth
    if link.unit is not None:
        scale = SECONDS_PER[link.unit] / SECONDS_PER[config.time_unit]
        latency, bandwidth = latency * scale, bandwidth / scale
    return latency + config.comm_bytes / segments / bandwidth  # a segment moves 1/k of the bytes


def run_transfers(program, config, blocking: bool) -> TransferRun:
    """Times of a program with communication ops (``program.comms``) under ``config``'s links;
    with ``config.offload``, its host copies as in ``run_offload`` (``TransferRun.copies``)."""
    text = program.to_actions(comms=True)
    rows = program_rows(program)
    p, S = len(rows), program.stages
    costs = segment_costs(config, p, S, program.segments)
    ratio = 1.0 if config.fb is None else config.fb / (config.f + config.b + config.w)
    offloaded, copy_time = _offload_plan(rows, costs, config) if config.offload is not None else (set(), None)
    last_start = [0.0] * p  # start of each device's last compute action
    d2h, h2d = [0.0] * p, [0.0] * p
    copies, held = {}, {}
    # each device's items: ("compute", [op indices into rows[d]]) or ("comm", key, is_send)
    items = []
    for d in range(p):
        mine, k = [], 0
        for token in text[d]:
            match = ACTION.match(token)
            if match:
                stage, kind, mb = int(match.group(1)), match.group(2), int(match.group(3))
                direction = kind[-1]
                sender = stage if kind.startswith("SEND") else (stage - 1 if direction == "F" else stage + 1)
                mine.append(("comm", (direction, sender, mb), kind.startswith("SEND")))
            else:
                size = 2 if rows[d][k][3] else 1
                mine.append(("compute", list(range(k, k + size))))
                k += size
        items.append(mine)
    base = [0] * p
    for d in range(1, p):
        base[d] = base[d - 1] + len(rows[d - 1])
    device_of = {}
    for d, row in enumerate(rows):
        for k, (kind, s, mb, _) in enumerate(row):
            device_of[(kind, s, mb)] = (d, base[d] + k)
    n = sum(len(r) for r in rows)
    start, end = [None] * n, [None] * n
    # the transfers, with their sends in each device's order (the order a link serves them in)
    src_of, dst_of, order = {}, {}, {}
    for d in range(p):
        for item in items[d]:
            if item[0] == "comm":
                (src_of if item[2] else dst_of)[item[1]] = d
                if item[2]:
                    order[item[1]] = len(order)
    t_start, t_end = {}, {}

    def needs(kind, s, mb):
        if kind == "F":
            return (("F", s - 1, mb), "F") if s > 0 else None
        if kind in "BI":
            if s == S - 1:
                return ("F", s, mb), None
            nxt = ("I", s + 1, mb) if ("I", s + 1, mb) in device_of else ("B", s + 1, mb)
            return nxt, "B"
        return ("I", s, mb), None

    def input_ready(d, op):
        need = needs(op[0], op[1], op[2])
        if need is None:
            return 0.0
        producer, direction = need
        pd, j = device_of[producer]
        if pd == d:
            return end[j]
        return t_end.get((direction, producer[1], producer[2]))

    moved = True
    posted = {}            # when each transfer's send was posted
    pos = [0] * p
    clock = [0.0] * p      # end of the device's last compute action
    post = [0.0] * p       # when its communication ops are posted
    batch = [[] for _ in range(p)]  # the transfers of the batch since its last compute action
    while moved:
        moved = False
        # transfers whose send is posted and whose link predecessor has ended
        for key, d in src_of.items():
            if key in t_end or key not in posted:
                continue
            dst = dst_of[key]
            before = [k for k, o in order.items() if o < order[key] and src_of[k] == d and dst_of[k] == dst]
            last = max(before, key=lambda k: order[k]) if before else None
            if last is not None and last not in t_end:
                continue
            s0 = max(posted[key], t_end[last] if last is not None else 0.0)
            t_start[key], t_end[key] = s0, s0 + link_duration(config, d, dst, program.segments)
            moved = True
        for d in range(p):
            while pos[d] < len(items[d]):
                item = items[d][pos[d]]
                if item[0] == "comm":
                    if item[2]:
                        posted[item[1]] = post[d]
                    batch[d].append(item[1])
                    pos[d] += 1
                    moved = True
                    continue
                ops = [rows[d][k] for k in item[1]]
                readies = [input_ready(d, op) for op in ops]
                if any(r is None for r in readies):
                    break
                free = clock[d]
                if blocking:
                    if any(k not in t_end for k in batch[d]):
                        break
                    free = max([free] + [t_end[k] for k in batch[d]])
                s0 = max([free] + readies)
                for kind, s, mb, _ in ops:
                    if kind in "BI" and (s, mb) in offloaded:
                        r0 = max(last_start[d], h2d[d], copies[(d, s, mb, "offload")][1])
                        h2d[d] = r1 = r0 + copy_time(s)
                        copies[(d, s, mb, "reload")] = (r0, r1)
                        held[(d, s, mb)] = max(0.0, r1 - s0)
                        s0 = max(s0, r1)
                dur = pair_duration(config, costs, program.segments, ops[0], ops[1], ratio) if len(ops) == 2 \
                    else duration(costs, ops[0])
                for k in item[1]:
                    start[base[d] + k], end[base[d] + k] = s0, s0 + dur
                for kind, s, mb, _ in ops:
                    if kind == "F" and (s, mb) in offloaded:
                        o0 = max(s0 + dur, d2h[d])
                        d2h[d] = o0 + copy_time(s)
                        copies[(d, s, mb, "offload")] = (o0, d2h[d])
                last_start[d] = s0
                clock[d] = post[d] = s0 + dur
                batch[d] = []
                pos[d] += 1
                moved = True
    if any(pos[d] < len(items[d]) for d in range(p)) or len(t_end) < len(src_of):
        raise Deadlock(f"stuck at positions {pos}")
    transfers = {k: (src_of[k], dst_of[k], t_start[k], t_end[k]) for k in src_of}
    peaks = curves = None
    if config.offload is not None:
        by_device = [slice(base[d], base[d] + len(rows[d])) for d in range(p)]
        peaks, curves = offload_curves(rows, costs, config, [start[s] for s in by_device], [end[s] for s in by_device],
                                       copies, offloaded)
    return TransferRun(start=start, end=end, makespan=max(end) if end else 0.0, transfers=transfers, copies=copies,
                       peak_activation=peaks, curves=curves, held=held)



# Activation offload ---------------------------------------------------------------------------
#
# The model with activations copied to host memory (ARCHITECTURE.md, "Model of time and memory";
# ``Config.offload``), from its definition:
#
# - α = ``offload``. The F of (s, mb) is offloaded when its backward (the I, else the B, of
#   (s, mb)) runs on the same device with at least one other action (an F&B pair is one) between
#   them, and the F stores a nonzero activation. It moves α of that activation: α · act ·
#   ``activation_bytes`` bytes (α · act with no activation_bytes), over the offload link (``Config.offload.link``).
# - Each device has two host links, one per direction; a copy lasts latency + bytes / bandwidth.
#   Offloads are ready at the end of their F's action and run one at a time in the order of
#   their F's on the device-to-host link. A reload is ready at the start of the action just
#   before its backward on the device, waits for the reload before it on the host-to-device
#   link and for its own offload's end; the backward's action starts no earlier than its end.
# - Memory: as in ``run``, and α · act leaves the device at the offload's end and comes back at
#   the reload's start (frees before allocations at one instant).


@dataclass
class OffloadRun:
    start: list[float]
    end: list[float]
    makespan: float
    peak_activation: list[float]
    copies: dict          # (device, stage, mb, "offload"/"reload") -> (start, end)
    #: per device, (time, activation held after that instant) wherever it changes, from (0, 0)
    curves: list[list[tuple[float, float]]]
    #: (device, stage, mb) → how long that backward started later than it could have without its reload
    held: dict = field(default_factory=dict)


def _actions(rows):
    """Each device's actions: lists of row positions (a pair is two)."""
    actions = []
    for row in rows:
        acts, k = [], 0
        while k < len(row):
            size = 2 if row[k][3] else 1
            acts.append(list(range(k, k + size)))
            k += size
        actions.append(acts)
    return actions


def _offload_plan(rows, costs, config):
    """The (stage, mb) whose F's activation is offloaded, and the copy time of a stage's."""
    alpha = config.offload.share
    link = config.offload.link
    latency, bandwidth = link.latency, link.bandwidth
    if link.unit is not None:
        scale = SECONDS_PER[link.unit] / SECONDS_PER[config.time_unit]
        latency, bandwidth = latency * scale, bandwidth / scale
    unit_bytes = config.activation_bytes if config.activation_bytes is not None else 1.0
    where = {}
    for d, acts in enumerate(_actions(rows)):
        for a, members in enumerate(acts):
            for k in members:
                kind, s, mb, _ = rows[d][k]
                where[(kind, s, mb)] = (d, a)
    offloaded = set()
    for (kind, s, mb), (d, a) in where.items():
        if kind not in "BI":
            continue
        fd, fa = where[("F", s, mb)]
        if fd == d and a - fa >= 2 and alpha > 0 and costs[s]["act"] > 0:
            offloaded.add((s, mb))

    def copy_time(s):
        return latency + alpha * costs[s]["act"] * unit_bytes / bandwidth

    return offloaded, copy_time


def run_offload(program, config) -> OffloadRun:
    rows = program_rows(program)
    p, S = len(rows), program.stages
    costs = segment_costs(config, p, S, program.segments)
    ratio = 1.0 if config.fb is None else config.fb / (config.f + config.b + config.w)
    actions = _actions(rows)
    where = {}
    for d, row in enumerate(rows):
        for k, (kind, s, mb, _) in enumerate(row):
            where[(kind, s, mb)] = (d, k)
    offloaded, copy_time = _offload_plan(rows, costs, config)

    start = [[None] * len(r) for r in rows]
    end = [[None] * len(r) for r in rows]

    def needs(kind, s, mb):
        if kind == "F":
            return ("F", s - 1, mb) if s > 0 else None
        if kind in "BI":
            if s == S - 1:
                return ("F", s, mb)
            return ("I", s + 1, mb) if ("I", s + 1, mb) in where else ("B", s + 1, mb)
        return ("I", s, mb)

    pos = [0] * p
    free = [0.0] * p
    last_start = [0.0] * p
    d2h = [0.0] * p
    h2d = [0.0] * p
    copies, held = {}, {}
    moved = True
    while moved:
        moved = False
        for d in range(p):
            while pos[d] < len(actions[d]):
                members = actions[d][pos[d]]
                t0 = free[d]
                ok = True
                for k in members:
                    kind, s, mb, _ = rows[d][k]
                    need = needs(kind, s, mb)
                    if need is None:
                        continue
                    dd, j = where[need]
                    if end[dd][j] is None:
                        ok = False
                        break
                    t0 = max(t0, end[dd][j] + (config.comm if dd != d else 0.0))
                if not ok:
                    break
                for k in members:
                    kind, s, mb, _ = rows[d][k]
                    if kind in "BI" and (s, mb) in offloaded:
                        r0 = max(last_start[d], h2d[d], copies[(d, s, mb, "offload")][1])
                        r1 = r0 + copy_time(s)
                        h2d[d] = r1
                        copies[(d, s, mb, "reload")] = (r0, r1)
                        held[(d, s, mb)] = max(0.0, r1 - t0)
                        t0 = max(t0, r1)
                if len(members) == 2:
                    (k1, k2) = members
                    dur = pair_duration(config, costs, program.segments, rows[d][k1], rows[d][k2], ratio)
                else:
                    dur = duration(costs, rows[d][members[0]])
                for k in members:
                    start[d][k], end[d][k] = t0, t0 + dur
                    kind, s, mb, _ = rows[d][k]
                    if kind == "F" and (s, mb) in offloaded:
                        o0 = max(t0 + dur, d2h[d])
                        d2h[d] = o0 + copy_time(s)
                        copies[(d, s, mb, "offload")] = (o0, d2h[d])
                last_start[d] = t0
                free[d] = t0 + dur
                pos[d] += 1
                moved = True
    if any(pos[d] < len(actions[d]) for d in range(p)):
        raise Deadlock(f"stuck at positions {pos}")

    peaks, curves = offload_curves(rows, costs, config, start, end, copies, offloaded)
    flat_start = [x for r in start for x in r]
    flat_end = [x for r in end for x in r]
    return OffloadRun(start=flat_start, end=flat_end, makespan=max(flat_end) if flat_end else 0.0,
                      peak_activation=peaks, copies=copies, curves=curves, held=held)


def offload_curves(rows, costs, config, start, end, copies, offloaded):
    """Per device, the peak activation and the curve (see ``OffloadRun``); start and end per
    device and row position."""
    alpha, share = config.offload.share, config.w_share
    peaks = []
    curves = []
    for d, row in enumerate(rows):
        events = []
        for k, (kind, s, mb, _) in enumerate(row):
            a = costs[s]["act"]
            if kind == "F":
                events.append((start[d][k], 1, a))
                if (s, mb) in offloaded:
                    events.append((copies[(d, s, mb, "offload")][1], 0, -alpha * a))
                    events.append((copies[(d, s, mb, "reload")][0], 1, alpha * a))
            elif kind == "B":
                events.append((end[d][k], 0, -a))
            elif kind == "I":
                events.append((end[d][k], 0, -(1 - share) * a))
            else:
                events.append((end[d][k], 0, -share * a))
        level = peak = 0.0
        curve = [(0.0, 0.0)]
        for t, _, delta in sorted(events, key=lambda e: (e[0], e[1])):
            level += delta
            peak = max(peak, level)
            if curve[-1][0] == t:
                curve.pop()  # one point per instant: the level after all of its events
            if not curve or not math.isclose(curve[-1][1], level, abs_tol=1e-9):
                curve.append((t, level))
        peaks.append(peak)
        curves.append(curve)
    return peaks, curves


# The step's data-parallel tail ----------------------------------------------------------------

def step_tails(rows, start, end, step):
    """Each device's tail after its ops (``ppviz.core.step``'s model), from the per-device ``rows``
    of :func:`program_rows` and the ops' ``start`` and ``end`` per device and position: the tail's
    parts as (device, stage, kind, start, end) (stage −1 for the device's optimizer and gather),
    and each device's end, tail included.

    A device's last op ends at ``done``. Per stage it holds, its last op producing weight
    gradients (a W, a B or a vocabulary pass T; the first of them to end last) makes the stage's gradients ready; the
    device's one data-parallel link reduces the stages one at a time in the order those ops end
    (then by stage), each from the op's start (``overlap_grad_reduce``) or from ``done``, for its
    ``reduce`` time and no earlier than the op's end. The optimizer step then runs from the
    later of ``done`` and the reductions' ends for the sum of its stages' ``optimizer`` times,
    then the ``gather`` (not with ``overlap_param_gather``)."""
    def part(kind, s):
        values = getattr(step, kind)
        return values[s] if values else 0.0

    parts, ends = [], []
    for d, row in enumerate(rows):
        done = max(end[d], default=0.0)
        last = {}
        for pos, (kind, s, _, _) in enumerate(row):
            if kind in ("W", "B", "T") and (s not in last or end[d][pos] > end[d][last[s]]):
                last[s] = pos
        held = sorted(last, key=lambda s: (end[d][last[s]], s))
        link = 0.0
        t = done
        for s in held:
            begin = max(link, start[d][last[s]] if step.overlap_grad_reduce else done)
            link = max(begin + part("reduce", s), end[d][last[s]])
            if part("reduce", s) > 0:
                parts.append((d, s, "reduce", begin, link))
            t = max(t, link)
        for kind in ("optimizer",) if step.overlap_param_gather else ("optimizer", "gather"):
            took = sum(part(kind, s) for s in held)
            if took > 0:
                parts.append((d, -1, kind, t, t + took))
                t += took
        ends.append(t)
    return parts, ends
