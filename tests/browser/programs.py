"""Programs for the browser tests, screenshots and benchmark that no registered schedule gives yet."""

from __future__ import annotations

import ppviz


def dualpipe_like(p: int = 4, m: int = 8, *, f: float = 1.0, b: float = 1.0, w: float = 1.0) -> ppviz.Program:
    """A bidirectional two-replica program with F&B pairs in its steady state, like DualPipe.

    Microbatches < m/2 flow down (stage s on device s), the rest up (stage s on device
    p−1−s). The order is made by list-scheduling under the simulator's dependency rules
    (each device takes its earliest-ready op; an F and a B ready together run as a pair;
    at most p forwards in flight per direction), so it never deadlocks.
    """
    if p % 2 or m % 2:
        raise ValueError(f"dualpipe_like needs even p and m; got p={p}, m={m}")
    half = m // 2
    cost = {"F": f, "B": b + w, "pair": f + b + w}

    def device_of(stage: int, mb: int) -> int:
        return stage if mb < half else p - 1 - stage

    queues = [[(d, j) for j in range(half)] + [(p - 1 - d, j) for j in range(half, m)] for d in range(p)]
    done: dict[tuple[str, int, int], float] = {}
    free = [0.0] * p
    inflight = [[0, 0] for _ in range(p)]
    rows: list[list[str]] = [[] for _ in range(p)]
    waiting_b: list[set[tuple[int, int]]] = [set() for _ in range(p)]

    def ready(kind: str, s: int, j: int) -> float | None:
        if kind == "F":
            return 0.0 if s == 0 else done.get(("F", s - 1, j))
        return done.get(("F", s, j)) if s == p - 1 else done.get(("B", s + 1, j))

    total = 2 * p * m
    while len(done) < total:
        best = None
        for d in range(p):
            forwards = []
            for direction in (0, 1):
                queue = [q for q in queues[d] if (q[1] >= half) == bool(direction)]
                if queue and inflight[d][direction] < p:
                    s, j = queue[0]
                    r = ready("F", s, j)
                    if r is not None:
                        forwards.append((max(r, free[d]), j, s))
            backs = []
            for s, j in waiting_b[d]:
                r = ready("B", s, j)
                if r is not None:
                    backs.append((max(r, free[d]), j, s))
            fwd = min(forwards) if forwards else None
            bwd = min(backs) if backs else None
            if fwd and bwd and fwd[0] == bwd[0]:
                choice = (fwd[0], 0, d, "pair", fwd, bwd)
            elif bwd and (not fwd or bwd[0] <= fwd[0]):
                choice = (bwd[0], 1, d, "B", None, bwd)
            elif fwd:
                choice = (fwd[0], 2, d, "F", fwd, None)
            else:
                continue
            if best is None or choice[:3] < best[:3]:
                best = choice
        assert best is not None, "dualpipe_like: no device can move"
        start, _, d, what, fwd, bwd = best
        end = start + cost[what]
        if fwd:
            _, j, s = fwd
            queues[d].remove((s, j))
            inflight[d][j >= half] += 1
            done[("F", s, j)] = end
            waiting_b[device_of(s, j)].add((s, j))
        if bwd:
            _, j, s = bwd
            waiting_b[d].remove((s, j))
            inflight[d][j >= half] -= 1
            done[("B", s, j)] = end
        free[d] = end
        if what == "pair":
            rows[d].append(f"({fwd[2]}F{fwd[1]};{bwd[2]}B{bwd[1]})OVERLAP_F_B")
        else:
            s, j = (fwd or bwd)[2], (fwd or bwd)[1]
            rows[d].append(f"{s}{what}{j}")
    text = "\n".join(f"device {d}: " + " ".join(row) for d, row in enumerate(rows))
    return ppviz.Program.from_text(text, placement="bidirectional", name="dualpipe-like")
