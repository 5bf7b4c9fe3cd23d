"""Which op each op waits for, and the error that names them when a program cannot finish.

F(s, mb) waits for F(s−1, mb); B or I of (s, mb) waits for the B/I of (s+1, mb), or for F(S−1, mb)
on the last stage; W(s, mb) waits for I(s, mb) (ARCHITECTURE.md, "Model of time and memory").
"""

from __future__ import annotations

import numpy as np

from .errors import DeadlockError
from .program import B, F, I, W, Program


def forwards(program: Program) -> tuple[np.ndarray, np.ndarray]:
    """Each op's key (stage · m + microbatch) and, per key, the flat index of that stage's F of
    that microbatch (−1 if the program has none): ``of_f[key[i]]`` is op i's forward."""
    key = program.stage.astype(np.int64) * program.microbatches + program.microbatch
    is_f = program.kind == F
    of_f = np.full(program.stages * program.microbatches, -1, np.int64)
    of_f[key[is_f]] = np.flatnonzero(is_f)
    return key, of_f


def dependencies(program: Program) -> np.ndarray:
    """Index of the op each op waits for (−1 for none), per the dependency rules above."""
    S, m = program.stages, program.microbatches
    n = len(program)
    kind, stage = program.kind, program.stage
    key, of_f = forwards(program)
    idx = np.arange(n, dtype=np.int64)
    is_f = kind == F
    is_g = (kind == B) | (kind == I)
    is_w = kind == W
    of_g = np.full(S * m, -1, np.int64)
    of_g[key[is_g]] = idx[is_g]
    dep = np.full(n, -1, np.int64)
    sel = is_f & (stage > 0)
    dep[sel] = of_f[key[sel] - m]
    sel = is_g & (stage < S - 1)
    dep[sel] = of_g[key[sel] + m]
    sel = is_g & (stage == S - 1)
    dep[sel] = of_f[key[sel]]
    dep[is_w] = of_g[key[is_w]]
    return dep


def latencies(program: Program, dep: np.ndarray, comm: float | np.ndarray) -> np.ndarray:
    """The latency each op's dependency adds: ``comm`` (or the op's own, an array of one per
    op: a measured run's transfers) where it crosses devices, 0 where it stays on one or the op
    has none."""
    cross = np.zeros(len(program))
    if np.ndim(comm) or comm:
        has_dep = dep >= 0
        device = program.device
        latency = comm[has_dep] if isinstance(comm, np.ndarray) and comm.ndim else comm
        cross[has_dep] = np.where(device[dep[has_dep]] != device[has_dep], latency, 0.0)
    return cross


def deadlock_error(program: Program, pos, stop, dep, end) -> DeadlockError:
    """The DeadlockError for devices stopped at ``pos`` (of ``stop``), naming what each waits for."""
    blocked: dict[int, tuple[str, str]] = {}
    lines = []
    not_run = sum(stop[d] - pos[d] for d in range(program.devices))
    label_width = len(f"device {program.devices - 1}")
    for d in range(program.devices):
        head = f"device {d}".ljust(label_width)
        if pos[d] >= stop[d]:
            lines.append(f"{head}: done")
            continue
        i = pos[d]
        wait = dep[i]
        if not (wait >= 0 and end[wait] < 0):
            wait = dep[i + 1]
        wd, wpos = program.locate(wait)
        what = program.action_at(i)
        blocked[d] = (what, program.action_at(wait))
        lo = max(int(program.offsets[d]), i - 3)
        hi = min(stop[d], i + 4)
        cells = []
        k = lo
        while k < hi:
            text = program.action_at(k)
            cells.append(f"[{text}]" if k == i else text)
            k += 2 if program.pair[k] else 1
        more_before = "… " if lo > program.offsets[d] else ""
        more_after = " …" if hi < stop[d] else ""
        lines.append(f"{head}: {more_before}{' '.join(cells)}{more_after}   "
                     f"{what} waits for {program.action_at(wait)} (device {wd}, position {wpos})")
    message = (f"deadlock: no device can make progress; {not_run} ops never run. "
               f"Each stuck device's next op is in [brackets]:\n" + "\n".join(lines))
    return DeadlockError(message, blocked)
