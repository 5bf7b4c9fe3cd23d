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
  B costs I + W; a pair costs (F + B) scaled by fb / (f + b + w) when ``fb`` is given.
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
"""

from __future__ import annotations

from dataclasses import dataclass

#: The zero-bubble paper's per-layer activation sizes (arXiv 2401.10241, Table 1): the weight
#: gradient still needs M_W = 32sbh of the M_B = 34sbh + 5as²b; with flash attention the
#: 5as²b term is not stored, so the default share W keeps is 32/34.
PAPER_W_SHARE = 32 / 34

KIND = "FBIW"


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
        out.append({"F": f, "I": again + i, "W": w, "B": again + i + w, "act": act, "params": params})
    return out


def run(program, config) -> Run:
    rows = program_rows(program)
    p, S = len(rows), program.stages
    costs = stage_costs(config, p, S)
    k_segments = program.segments
    # a segment's passes and activation are 1/k of its microbatch's; the stage's parameters are not split
    costs = [{key: value if key == "params" else value / k_segments for key, value in c.items()} for c in costs]
    ratio = 1.0 if config.fb is None else config.fb / (config.f + config.b + config.w)

    # each (kind, stage, mb) → (device, flat index); the program is validated by ppviz, so unique
    where = {}
    flat = []
    for d, row in enumerate(rows):
        for k, s, mb, _ in row:
            where[(k, s, mb)] = (d, len(flat))
            flat.append((d, k, s, mb))

    def needs(k, s, mb):
        if k == "F":
            return ("F", s - 1, mb) if s > 0 else None
        if k in "BI":
            if s == S - 1:
                return ("F", s, mb)
            nxt = ("I", s + 1, mb) if ("I", s + 1, mb) in where else ("B", s + 1, mb)
            return nxt
        return ("I", s, mb)  # W

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
        dep = needs(k, s, mb)
        if dep is None:
            return 0.0
        dd, j = where[dep]
        if end[j] is None:
            return None
        return end[j] + (config.comm if dd != d else 0.0)

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
                    dur = ratio * (costs[group[0][1]][group[0][0]] + costs[group[1][1]][group[1][0]])
                else:
                    dur = costs[op[1]][op[0]]
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
            else:
                events.append((end[j], 0, -share * a))
        level = peak = 0.0
        for _, _, delta in sorted(events, key=lambda e: (e[0], e[1])):
            level += delta
            peak = max(peak, level)
        peaks.append(peak)
        static.append(sum(costs[s]["params"] for s in {s for _, s, _, _ in row}))
    return Run(start=start, end=end, makespan=makespan, busy=busy, idle=idle,
               bubble_fraction=sum(idle) / (p * makespan) if makespan else 0.0,
               bubble_rate=(makespan - ideal) / ideal if ideal else 0.0,
               peak_activation=peaks, static_memory=static)
