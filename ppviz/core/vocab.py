"""What the vocabulary passes wait for, and the engine that times programs with them.

Vocabulary Parallelism (Yeung et al., "Balancing Pipeline Parallelism with Vocabulary
Parallelism", MLSys'25, arXiv 2411.05288; sail-sg/VocabularyParallelism) splits the output
layer over all p devices. Every device runs two passes of it per microbatch on its shard of the
vocabulary: S (the shard's logits, its softmax maximum and sum) and T (the shard's gradients).
The shards meet in all-reduces over the pipeline group, the paper's communication barriers,
which run on a stream of their own (overlapped with the transformer layers' compute), so a
barrier occupies no device: it is a latency, ``Config.vocab_comm``, between the last pass it
reduces and what needs its result.

- S(d, mb) waits for F(S−1, mb), the last stage's output, broadcast to every device (``comm``
  where it crosses devices).
- T(d, mb) waits for every device's S(·, mb) and the barrier C0 that reduces their statistics.
- The last stage's backward B (or I) of mb waits for the output layer's input gradient: with
  one barrier (the paper's Algorithm 2, ``Program.vocab_barriers`` = 1) S already computed its
  shard of it and C0 reduces it too, so the backward waits for every S(·, mb) + C0; with two
  (Algorithm 1) T computes it and a second all-reduce C1 reduces it: every T(·, mb) + C1.
- The interlaced pipeline (``Program.vocab_synchronous``) runs the output layer as one blocking
  collective step instead: every device's S(·, mb) starts together (each waits for every
  device's op before its S), and each device's op after T(d, mb) waits for every T(·, mb) and
  the all-reduce, which holds the devices rather than running beside them.

Every other op waits for what :func:`ppviz.core.dependencies.dependencies` says. An op may wait
for several ops here, so these programs run in :func:`run`, not in the single-dependency engines;
the dependency a Result keeps per op is the one that set its start.
"""

from __future__ import annotations

import numpy as np

from . import kernel
from .dependencies import deadlock_error, dependencies
from .errors import ConfigError
from .program import B, F, I, Program, VOCAB_KINDS

S_PASS, T_PASS = VOCAB_KINDS
#: how many all-reduce barriers the vocabulary passes of a microbatch end in (the paper's
#: Algorithms 2 and 1)
BARRIERS = (1, 2)


def has_vocab(program: Program) -> bool:
    """Whether the program runs vocabulary passes."""
    return bool(np.isin(program.kind, VOCAB_KINDS).any())


def edges(program: Program, comm: float, barrier: float):
    """Every op's dependencies as CSR arrays: ``ptr`` (op i's are ``ptr[i]:ptr[i+1]``), ``on``
    (the op waited for) and ``lag`` (what is added to its end: ``comm`` across devices, ``barrier``
    after an all-reduce). The program's ``vocab_barriers`` says what the last stage's backward
    waits for, and ``vocab_synchronous`` makes the output layer one collective step (below)."""
    barriers = program.vocab_barriers
    if barriers not in BARRIERS:
        raise ConfigError("vocab_barriers", barriers, "give 1 (one all-reduce after S, the paper's Algorithm 2) "
                          "or 2 (a second after T, Algorithm 1)")
    n, m, last = len(program), program.microbatches, program.stages - 1
    kind, stage, mb, device = program.kind, program.stage, program.microbatch, program.device
    single = dependencies(program)
    is_s, is_t = kind == S_PASS, kind == T_PASS
    last_grad = ((kind == B) | (kind == I)) & (stage == last)
    forward_of = np.full(m, -1, np.int64)
    sel = (kind == F) & (stage == last)
    forward_of[mb[sel]] = np.flatnonzero(sel)
    single = np.where(is_s, forward_of[mb], single)
    single[is_t | last_grad] = -1

    def by_microbatch(sel: np.ndarray) -> np.ndarray:
        """Per microbatch, its ops of ``sel`` (one per device, validated), in device order."""
        index = np.flatnonzero(sel)
        return index[np.argsort(mb[index], kind="stable")].reshape(m, -1)

    s_of, t_of = by_microbatch(is_s), by_microbatch(is_t)
    plain = np.flatnonzero(single >= 0)
    # (waiting op, op waited for, lag) triples, then sorted into rows, each op's in this order
    parts = [(plain, single[plain], np.where(device[single[plain]] != device[plain], comm, 0.0))]

    def all_of(rows: np.ndarray, table: np.ndarray, of: np.ndarray | None = None) -> None:
        """Each op of ``rows`` waits for every device's op of ``table`` of its microbatch (of the
        microbatches ``of``, when given) and the barrier."""
        waited = table[mb[rows] if of is None else of]
        parts.append((np.repeat(rows, waited.shape[1]), waited.ravel(), np.full(waited.size, barrier)))

    all_of(np.flatnonzero(is_t), s_of)
    all_of(np.flatnonzero(last_grad), s_of if barriers == 1 else t_of)
    if program.vocab_synchronous:
        # one collective step: every device's S of a microbatch starts together (the broadcast of
        # the last stage's output is a blocking call on all of them), and the op after each T
        # waits for the all-reduce of every T (blocking, not on a stream of its own)
        first = program.offsets[:-1]
        s_rows = np.flatnonzero(is_s)
        before = s_of[mb[s_rows]] - 1
        keep = ~np.isin(s_of[mb[s_rows]], first)  # a device whose S is its first op has nothing before
        waiting = np.repeat(s_rows, s_of.shape[1])
        parts.append((waiting[keep.ravel()], before.ravel()[keep.ravel()], np.zeros(int(keep.sum()))))
        t_rows = np.flatnonzero(is_t)
        after = t_rows + 1
        inside = np.searchsorted(program.offsets, after, side="right") - 1 == device[t_rows]
        inside &= after < n
        all_of(after[inside], t_of, mb[t_rows[inside]])
    consumer = np.concatenate([c for c, _, _ in parts])
    order = np.argsort(consumer, kind="stable")
    on = np.concatenate([o for _, o, _ in parts])[order].astype(np.int64)
    lag = np.concatenate([g for _, _, g in parts])[order].astype(float)
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(consumer, minlength=n), out=ptr[1:])
    return ptr, on, lag


def run(program: Program, cost: np.ndarray, comm: float, barrier: float, *, engine: str = "auto"):
    """(start, end, dep, arrival) of every op: each device runs its ops in order, each as soon as
    its device is free and all its inputs are ready. ``dep`` is the input that set each op's
    start (its first input where none did, −1 for none), ``arrival`` when that input was ready
    (−inf where the device was the limit). ``engine="kernel"`` times the ops with the reference
    kernel (:func:`ppviz.core.kernel.several_inputs`); otherwise :func:`_times`, a fast path
    tests/test_kernel.py proves equal to it bit for bit."""
    if program.pair.any():
        raise ConfigError("program", program.name, "give a program without F&B pairs: the vocabulary passes run "
                          "beside the transformer layers' passes, not overlapped with them")
    ptr, on, lag = edges(program, comm, barrier)
    if engine == "kernel":
        start, end = kernel.several_inputs(program, cost, ptr, on, lag)
    else:
        start, end = _times(program, cost, ptr, on, lag)
    return start, end, *_binding(program, ptr, on, lag, start, end)


def _times(program: Program, cost: np.ndarray, ptr: np.ndarray, on: np.ndarray, lag: np.ndarray):
    """The event loop: each device advances until an op lacks an input, and registers with it."""
    n = len(program)
    ptr_l, on_l, lag_l, cost_l = ptr.tolist(), on.tolist(), lag.tolist(), cost.tolist()
    start, end = [0.0] * n, [-1.0] * n
    waiters: dict[int, list[int]] = {}
    offsets = program.offsets.tolist()
    pos, stop = offsets[:-1], offsets[1:]
    free = [0.0] * program.devices
    runnable = list(range(program.devices - 1, -1, -1))
    stuck_on = [-1] * n
    while runnable:
        d = runnable.pop()
        t = free[d]
        i = pos[d]
        while i < stop[d]:
            ready, blocked = t, -1
            for k in range(ptr_l[i], ptr_l[i + 1]):
                j = on_l[k]
                e = end[j]
                if e < 0.0:
                    blocked = j
                    break
                e += lag_l[k]
                if e > ready:
                    ready = e
            if blocked >= 0:
                waiters.setdefault(blocked, []).append(d)
                stuck_on[i] = blocked
                break
            start[i] = ready
            t = ready + cost_l[i]
            end[i] = t
            runnable.extend(waiters.pop(i, ()))
            i += 1
        pos[d] = i
        free[d] = t
    if any(pos[d] < stop[d] for d in range(program.devices)):
        raise deadlock_error(program, pos, stop, stuck_on + [-1], end)
    start_a = np.array(start)
    return start_a, start_a + cost


def _binding(program: Program, ptr, on, lag, start: np.ndarray, end: np.ndarray):
    """(dep, arrival): the dependency a Result keeps per op, within its microbatch (the widget
    links a microbatch's ops): the input that set its start (the first of the latest that arrived
    after its device was free) if it is one, else its first such input; and when that input
    arrived (−inf where the device was the limit)."""
    n = len(program)
    waiting = np.repeat(np.arange(n), np.diff(ptr))
    arrive = end[on] + lag
    free = np.zeros(n)  # when each op's device was free: its previous op's end
    later = np.ones(n, bool)
    later[program.offsets[:-1][program.offsets[:-1] < n]] = False
    free[later] = end[np.flatnonzero(later) - 1]
    setters = np.flatnonzero(arrive > free[waiting])
    setters = setters[np.lexsort((setters, -arrive[setters], waiting[setters]))]
    head = np.ones(len(setters), bool)
    head[1:] = waiting[setters[1:]] != waiting[setters[:-1]]
    bound = np.full(n, -1, np.int64)
    bound[waiting[setters[head]]] = on[setters[head]]
    mb = program.microbatch
    bound[(bound >= 0) & (mb[np.maximum(bound, 0)] != mb)] = -1
    arrival = np.where(bound >= 0, start, -np.inf)
    own = np.flatnonzero(mb[on] == mb[waiting])
    first_at = np.full(n, len(on), np.int64)
    np.minimum.at(first_at, waiting[own], own)
    first = np.where(first_at < len(on), on[np.minimum(first_at, max(len(on) - 1, 0))], -1) if len(on) else \
        np.full(n, -1, np.int64)
    return np.where(bound >= 0, bound, first), arrival


def barriers_in_order(program: Program) -> int:
    """The barriers a program read from a trace runs (a trace does not say): 2 when the last
    stage's device runs every microbatch's T before that microbatch's backward, as only the
    two-barrier algorithm must (its backward waits for C1 after every T), else 1."""
    if not has_vocab(program):
        return 1
    kind, stage, mb = program.kind, program.stage, program.microbatch
    last = program.device == program.devices - 1
    position = np.arange(len(program))
    m = program.microbatches
    t_at, b_at = np.full(m, -1), np.full(m, -1)
    sel = last & (kind == T_PASS)
    t_at[mb[sel]] = position[sel]
    sel = last & ((kind == B) | (kind == I)) & (stage == program.stages - 1)
    b_at[mb[sel]] = position[sel]
    return 2 if ((t_at >= 0) & (t_at < b_at)).all() else 1


__all__ = ["BARRIERS", "VOCAB_KINDS", "barriers_in_order", "edges", "has_vocab", "run"]
