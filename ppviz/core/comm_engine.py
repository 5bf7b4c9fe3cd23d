"""Simulation of a program whose communication runs as transfers over links.

The model (ARCHITECTURE.md, "Transfers"): a device runs its actions in order (an F&B pair is one
action). A send is posted when its device reaches it: at the end of the compute action before it.
A transfer is ``ready`` when it is posted (its producer has ended before it); it starts when its
link (the ordered pair of devices) has finished the transfer sent before it on that link, and
lasts its ``duration``. Its consumer starts once it has ended. Receives need not be posted first
(the receiving side is ready for it, as with torch's early ``irecv``), so no order of sends and
receives can deadlock a program whose compute order can finish.

- ``overlapped`` P2P: communication ops take no device time; only the link is busy.
- ``blocking`` P2P: the communication ops between two compute actions of a device form a batch;
  the device goes on to its next action only when every transfer of the batch has ended: a send
  holds its device until its data has crossed the link, a receive until its data has arrived
  (as a batched ``isend``/``irecv`` that is waited for at once: torch's ``Schedule1F1B``,
  Megatron's ``send_forward_recv_backward``).

The engines give bit-identical times: ``"events"`` walks each device until it must wait;
``"lockstep"`` advances every device by one action per vectorised round, in a general form or,
for programs without F&B pairs, a leaner one. Each computes a transfer's times when the action
that posts it ends.
"""

from __future__ import annotations

import functools

import numpy as np

from . import kernel
from .dependencies import dependencies
from .errors import ConfigError, DeadlockError
from .lowering import add_comms
from .offload import HostLinks, Offloads, copies_table
from .offload import plan as offload_plan
from .program import F, Program
from .topology import durations
from .transfers import Plan, Transfers
from .transfers import plan as transfer_plan

#: the lockstep engine carries at most this many waits and sends per action (more run in "events")
MAX_COLUMNS = 8


class Graph:
    """What the engines need: the actions (an F&B pair is one) as slots in device rows, each row
    followed by a virtual "end of device" slot that holds the blocking batch after its last
    action. ``waits``: per slot, what it waits for besides its device (a transfer t as
    ``slots + t``, a slot as its index, −1 for nothing): transfers, and, in a program that cannot
    finish, a same-device op that comes after it. ``sends``: per slot, the transfers it posts
    (−1 for none), each following ``prev[t]`` on its link (``link[t]``)."""

    def __init__(self, program: Program, cost: np.ndarray, plan: Plan, duration: np.ndarray, dep: np.ndarray,
                 blocking: bool):
        p = program.devices
        actions = program.actions
        first, of_op = actions.first, actions.of_op
        A = len(first)
        row = actions.offsets  # device d's actions: row[d]:row[d+1]
        self.program = program
        self.plan = plan
        self.dep = dep
        self.devices = p
        self.actions = A
        self.first = first
        self.of_op = of_op
        # slots: device d's actions then its end slot, so action a is slot a + d
        self.slot_of_action = np.arange(A) + np.repeat(np.arange(p), np.diff(row))
        self.slot_of_op = self.slot_of_action[of_op]
        self.row_start = row[:-1] + np.arange(p)
        self.end_slot = row[1:] + np.arange(p)
        self.slots = A + p
        self.cost = np.zeros(self.slots)
        self.cost[self.slot_of_action] = cost[first]
        self.blocking = blocking
        self.T = len(plan)
        self.duration = np.asarray(duration, dtype=np.float64)
        # a send is posted at the end of the action before it; the plan lists the sends of each
        # device in order, so the posting slots never decrease along it
        self.post = self.slot_of_op[plan.send_before - 1]
        # each ordered pair of devices is its own link (core/topology.py)
        self.link = plan.src.astype(np.int64) * p + plan.dst
        self.prev = _previous_on_link(self.link, p)
        self.consumer = self.slot_of_op[plan.consumer]
        self.gate = self._gate(plan.recv_before, plan.dst.astype(np.int64)) if blocking else None

    def _gate(self, before, device) -> np.ndarray:
        """The slot a communication op at ``before`` on ``device`` holds back (blocking P2P)."""
        at_end = before >= self.program.offsets[device + 1]
        inside = self.slot_of_op[np.minimum(before, len(self.slot_of_op) - 1)]
        return np.where(at_end, self.end_slot[device], inside)

    def _late(self) -> np.ndarray:
        """Ops whose same-device producer is not earlier on their device: they never start."""
        dep, device = self.dep, self.program.device
        has = dep >= 0
        producer = np.where(has, dep, 0)
        return np.flatnonzero(has & (device[producer] == device) & (self.slot_of_op[producer] >= self.slot_of_op))

    @functools.cached_property
    def sends(self) -> np.ndarray:
        every = np.arange(self.T)
        return _table(self.slots, [(self.post, every, every - np.searchsorted(self.post, self.post))])

    @functools.cached_property
    def waits(self) -> np.ndarray:
        slots, every, plan = self.slots, np.arange(self.T), self.plan
        consumer_rank = plan.consumer - self.first[self.of_op[plan.consumer]]  # 1 for a pair's second op
        if self.gate is not None:  # blocking
            # the batch after a slot holds back the next slot: its sends (posted by the slot
            # before) and the receives placed there; a receive in an earlier batch also holds
            # back its consumer
            at_consumer = self.gate == self.consumer
            early = ~at_consumer
            sources = [(self.post + 1, slots + every, every - np.searchsorted(self.post, self.post)),
                       (self.consumer[at_consumer], slots + every[at_consumer], consumer_rank[at_consumer]),
                       (self.gate[early], slots + every[early], None),
                       (self.consumer[early], slots + every[early], consumer_rank[early])]
        else:
            sources = [(self.consumer, slots + every, consumer_rank)]
        late = self._late()
        sources.append((self.slot_of_op[late], self.slot_of_op[self.dep[late]], None))
        return _table(slots, sources)

    def lockstep_ready(self) -> bool:
        """The lockstep engine takes at most MAX_COLUMNS waits and sends per action."""
        return max(self.waits.shape[1], self.sends.shape[1]) <= MAX_COLUMNS

    def single_input(self) -> bool:
        """The lean engine's shape: one op per action (no pairs), so at most one input each; at
        most one send posted per action; each receive just before its consumer (blocking); no op
        waiting for a later one of its device."""
        if self.program.pair.any() or len(self._late()) or (np.diff(self.post) <= 0).any():
            return False
        return not self.blocking or bool((self.gate == self.consumer).all())


def _table(slots: int, sources) -> np.ndarray:
    """(slots × columns) table of refs, −1 where empty: each source (slot, ref, rank) fills its own
    columns, ``rank`` the column within them (None: in the order given)."""
    placed = []
    width = 0
    for slot, ref, rank in sources:
        if not len(slot):
            continue
        if rank is None:
            order = np.argsort(slot, kind="stable")
            rank = np.empty(len(slot), np.int64)
            rank[order] = np.arange(len(slot)) - np.searchsorted(slot[order], slot[order])
        placed.append((slot, ref, width + rank))
        width += int(rank.max()) + 1
    table = np.full((slots, max(width, 1)), -1, np.int64)
    for slot, ref, column in placed:
        table[slot, column] = ref
    return table


def _previous_on_link(link: np.ndarray, devices: int) -> np.ndarray:
    """For each transfer (in sending order), the one sent before it on the same link (−1 for the first)."""
    key = link.astype(np.uint16) if devices * devices <= 1 << 16 else link  # a radix sort when it fits
    order = np.argsort(key, kind="stable")
    prev = np.full(len(link), -1, np.int64)
    same = link[order[1:]] == link[order[:-1]]
    prev[order[1:][same]] = order[:-1][same]
    return prev


class Timeline:
    """An engine's output: start and end of every slot and of every transfer; with offload, the
    host copies (``copies``: offload.copies_table's input), else None."""

    def __init__(self, slot_start, slot_end, t_start, t_end, copies=None):
        self.slot_start = slot_start
        self.slot_end = slot_end
        self.t_start = t_start
        self.t_end = t_end
        self.copies = copies


def execute(graph: Graph, engine: str = "auto", offload: Offloads | None = None) -> Timeline:
    """Run the graph with the chosen engine (``"auto"``, ``"events"``, ``"lockstep"`` or ``"kernel"``,
    the reference model).

    ``"lockstep"`` (and ``"auto"`` on a large program) runs a leaner engine for programs without
    F&B pairs (:func:`_single_input`), the general one otherwise. With ``offload`` (the host
    copies' plan) only the events engine (or the kernel) runs."""
    if kernel.checked_engine(engine) == "kernel":
        return _kernel(graph, offload)
    if offload is not None:
        if engine == "lockstep":
            raise ConfigError("engine", engine, "use 'events', 'auto' or 'kernel' with offload: the lockstep engine "
                              "does not model host copies")
        return _events(graph, offload)
    given = engine
    if engine == "auto":
        longest = int(np.diff(np.append(graph.row_start, graph.slots)).max(initial=1))
        engine = "lockstep" if graph.slots >= 8 * longest else "events"
    if engine == "lockstep":
        if graph.single_input():
            # blocking P2P never queues on a link: a device waits for each send before it goes on
            return _single_input(graph)
        if graph.lockstep_ready():
            return _lockstep(graph)
        if given == "lockstep":
            raise ConfigError("engine", given, f"use 'events' or 'auto': an action of this program waits for or "
                              f"sends more than {MAX_COLUMNS} transfers")
    return _events(graph)


class _Layout:
    """Rows of slots (a device's actions, a link's transfers) laid out position by position: slot j
    of row r at ``(j + 1)·R + r`` for R rows, position 0 holding a slot that ended at 0 and the one
    after a row's last slot one that waits for NEVER. The rows advance nearly together, so a
    lockstep round reads a few neighbouring cache lines instead of one far line per row."""

    def __init__(self, lengths: np.ndarray):
        self.R = R = len(lengths)
        self.lengths = lengths
        width = int(lengths.max(initial=0)) + 2
        self.none = width * R  # "nothing": ended at 0; takes the writes of rows that did not move
        self.never = self.none + 1
        self.heads = R + np.arange(R, dtype=np.int64)
        self.tails = (lengths + 1) * R + np.arange(R)

    def place(self, row: np.ndarray, position: np.ndarray) -> np.ndarray:
        return (position + 1) * self.R + row

    def ends(self) -> np.ndarray:
        end = np.full(self.never + 1, -1.0)
        end[:self.R] = 0.0
        end[self.none] = 0.0
        return end


def _single_input(g: Graph) -> Timeline:
    """The lockstep engine for actions of one op (at most one input, at most one send), receives
    just before their consumers: an action waits for the action before it and its input.
    Blocking P2P: a device waits for each send before it goes on, so a transfer never waits for
    its link and starts when posted: an input is ready at its posting action's end + duration,
    and the action after a send waits for that too. Overlapped: a transfer starts when its link
    is free, computed when its sending action is processed, and its consumer waits for its end."""
    p, slots, T = g.devices, g.slots, g.T
    queue = not g.blocking
    rows = np.diff(np.append(g.row_start, slots))  # slots per device, its end slot included
    lay = _Layout(rows)
    none, never, R = lay.none, lay.never, lay.R
    base = never + 1  # with ``queue``, transfer t ends at base + t
    device = np.repeat(np.arange(p), rows)
    pad = lay.place(device, np.arange(slots) - g.row_start[device])
    end = np.full(base + T if queue else never + 1, -1.0)
    end[:R] = 0.0
    end[none] = 0.0
    dep_slot = np.full(none + 1, none, np.int64)
    dep_slot[lay.tails] = never
    has = g.dep >= 0
    dep_slot[pad[g.slot_of_op[has]]] = pad[g.slot_of_op[g.dep[has]]]
    cost = np.zeros(none + 1)
    cost[pad] = g.cost
    cross: np.ndarray | None = None
    lead: np.ndarray | None = None
    if queue:
        dep_slot[pad[g.consumer]] = base + np.arange(T)
        posted = np.full(none + 1, T, np.int64)
        posted[pad[g.post]] = np.arange(T)
        before = np.append(g.prev, -1)[posted]
        link_free = np.where(before >= 0, base + before, none)
        ends_at = np.where(posted < T, base + posted, none)
        takes = np.append(g.duration, 0.0)[posted]
    else:
        dep_slot[pad[g.consumer]] = pad[g.post]
        cross = np.zeros(none + 1)
        cross[pad[g.consumer]] = g.duration
        lead = np.zeros(none + 1)
        lead[pad[g.post] + R] = g.duration
        link_free = ends_at = takes = np.empty(0)  # no queue: the rounds read none of them
    here = lay.heads.copy()
    prev = here - R
    remaining = slots
    maximum, where, count_nonzero = np.maximum, np.where, np.count_nonzero
    # the cheap spellings matter, as in the compute-only engine: a round costs some 10 µs, nearly
    # all of it per-call overhead; the starts are found afterwards
    while remaining:
        ready = end[dep_slot[here]]
        ok = ready >= 0
        moved = count_nonzero(ok)
        if not moved:
            return _events(g)  # it cannot finish: the general engine names what waits for what
        if cross is not None:
            ready += cross[here]
        free = end[prev] if lead is None else end[prev] + lead[here]
        t = maximum(free, ready)
        t += cost[here]
        end[where(ok, here, none)] = t
        end[none] = 0.0
        if queue:
            sent = maximum(t, end[link_free[here]])
            sent += takes[here]
            end[where(ok, ends_at[here], none)] = sent
            end[none] = 0.0
        step = ok * R
        here += step
        prev += step
        remaining -= moved
    ready = end[dep_slot[pad]]
    if cross is not None:
        ready += cross[pad]
    free = end[pad - R] if lead is None else end[pad - R] + lead[pad]
    start = maximum(free, ready)
    if queue:
        t_end = end[base:].copy()
        t_start = maximum(end[pad[g.post]], np.where(g.prev >= 0, t_end[np.maximum(g.prev, 0)], 0.0))
        return Timeline(start, end[pad], t_start, t_end)
    t_start = end[pad[g.post]]
    return Timeline(start, end[pad], t_start, t_start + g.duration)


def _events(g: Graph, offload: Offloads | None = None) -> Timeline:
    """Each device runs until it must wait. With ``offload``, each device's host link carries
    its copies (ppviz.core.offload has the rules): a backward's reload is issued when the action
    before it starts and the backward waits for it; an F's offload follows its action's end."""
    slots, T = g.slots, g.T
    cost = g.cost.tolist()
    start = [0.0] * slots
    end = [-1.0] * slots + [-1.0] * T  # slot ends, then transfer ends
    t_start = [0.0] * T
    prev, duration = g.prev.tolist(), g.duration.tolist()
    waits = [[x for x in row if x >= 0] for row in g.waits.tolist()]
    sends = [[x for x in row if x >= 0] for row in g.sends.tolist()]
    waiters: dict[int, list[int]] = {}  # devices waiting for a slot or transfer to end
    p = g.devices
    pos = g.row_start.tolist()
    stop = (g.end_slot + 1).tolist()
    clock = [0.0] * p
    copying = offload is not None
    if offload is not None:
        reload_op, reload_of, offload_op = _copies_by_slot(g, offload)
        row_start = g.row_start.tolist()
        links = HostLinks(p, offload.duration.tolist())
    runnable = list(range(p - 1, -1, -1))
    push = runnable.append
    while runnable:
        d = runnable.pop()
        i = pos[d]
        e = stop[d]
        t = clock[d]
        while i < e:
            s = t
            for x in waits[i]:
                r = end[x]
                if r < 0.0:
                    waiters.setdefault(x, []).append(d)
                    break
                if r > s:
                    s = r
            else:
                if copying and reload_op[i] >= 0:
                    issued = start[i - 1] if i > row_start[d] else 0.0  # the start of the action before
                    back = links.reload(d, issued, reload_op[i], reload_of[i], s)
                    if back > s:
                        s = back
                t = s + cost[i]
                start[i] = s
                end[i] = t
                if copying and offload_op[i] >= 0:
                    links.offload(d, t, offload_op[i])
                for w in waiters.pop(i, ()):
                    push(w)
                for x in sends[i]:
                    r = t
                    q = prev[x]
                    if q >= 0 and end[slots + q] > r:
                        r = end[slots + q]
                    t_start[x] = r
                    end[slots + x] = r + duration[x]
                    for w in waiters.pop(slots + x, ()):
                        push(w)
                i += 1
                continue
            break
        pos[d] = i
        clock[d] = t
    if any(pos[d] < stop[d] for d in range(p)):
        raise _deadlock(g, pos, stop, end)
    return Timeline(np.array(start), np.array(end[:slots]), np.array(t_start), np.array(end[slots:]),
                    links.copies if copying else None)


def _copies_by_slot(g: Graph, offload: Offloads) -> tuple[list[int], list[int], list[int]]:
    """Per slot (−1 for none): the backward op it reloads for, that backward's F, and the F op it
    offloads. A slot is one op or an F&B pair, so it has one backward and one F at most."""
    out = np.full((3, g.slots), -1, np.int64)
    backward = np.flatnonzero(offload.forward >= 0)
    out[0, g.slot_of_op[backward]] = backward
    out[1, g.slot_of_op[backward]] = offload.forward[backward]
    forward = np.flatnonzero(offload.offloaded)
    out[2, g.slot_of_op[forward]] = forward
    return out[0].tolist(), out[1].tolist(), out[2].tolist()


def _lockstep(g: Graph) -> Timeline:
    """One action of every device per vectorised round: an action starts when the action before it
    and everything it waits for have ended; the transfers it posts then start when their link is
    free (the transfer before on a link was posted earlier on the same device, or earlier in the
    same action: the columns of an action's sends go one after another)."""
    p, T, slots = g.devices, g.T, g.slots
    rows = np.diff(np.append(g.row_start, slots))  # slots per device, its end slot included
    lay = _Layout(rows)
    none, never, R = lay.none, lay.never, lay.R
    base = never + 1  # transfer t ends at base + t
    device = np.repeat(np.arange(p), rows)
    pad = lay.place(device, np.arange(slots) - g.row_start[device])
    target = np.concatenate([pad, base + np.arange(T), [none]])  # a ref (slot, slots + t, −1) → its place
    # what each slot waits for, column by column (a column is a row of this table, so that a
    # round's reductions run along the first axis, over whole vectors): first the slot before it
    K = g.waits.shape[1] + 1
    waits = np.full((K, none + 1), none, np.int64)
    waits[0, pad] = pad - R
    waits[0, lay.tails] = never
    waits[1:, pad] = target[g.waits].T
    sends = np.full((g.sends.shape[1], none + 1), T, np.int64)
    sends[:, pad] = np.where(g.sends >= 0, g.sends, T).T
    prev = np.append(g.prev, -1)
    duration = np.append(g.duration, 0.0)
    # per column of sends: where the transfer before on its link ends, where this one ends, its duration
    columns = [(np.where(prev[posted] >= 0, base + prev[posted], none), np.where(posted < T, base + posted, none),
                duration[posted]) for posted in sends]
    cost = np.zeros(none + 1)
    cost[pad] = g.cost
    end = np.full(base + T, -1.0)
    end[:R] = 0.0
    end[none] = 0.0
    here = lay.heads.copy()
    remaining = slots
    maximum, count_nonzero, where = np.maximum, np.count_nonzero, np.where
    # the cheap spellings matter, as in the compute-only engine: a round is some 20 calls on small
    # arrays, its cost nearly all per-call overhead; the starts are found afterwards
    while remaining:
        ends = end[waits[:, here]]
        ok = ends.min(axis=0) >= 0
        moved = count_nonzero(ok)
        if not moved:
            stuck = (here - np.arange(p)) // R - 1 + g.row_start
            raise _deadlock(g, stuck.tolist(), (g.end_slot + 1).tolist(), np.append(end[pad], end[base:]).tolist())
        t = ends.max(axis=0)
        t += cost[here]
        end[where(ok, here, none)] = t
        end[none] = 0.0
        for link_free, ends_at, takes in columns:
            sent = maximum(t, end[link_free[here]])
            sent += takes[here]
            end[where(ok, ends_at[here], none)] = sent
            end[none] = 0.0
        here += ok * R
        remaining -= moved
    t_end = end[base:].copy()
    t_start = maximum(end[pad[g.post]], where(g.prev >= 0, t_end[np.maximum(g.prev, 0)], 0.0))
    return Timeline(end[waits[:, pad]].max(axis=0), end[pad], t_start, t_end)


def _kernel(g: Graph, offload: Offloads | None) -> Timeline:
    """The reference model's times (:func:`ppviz.core.kernel.transfers`)."""
    try:
        return Timeline(*kernel.transfers(g, offload))
    except kernel.Stuck as stuck:
        pos = [int(g.row_start[d]) + stuck.position[d] for d in range(g.devices)]
        raise _deadlock(g, pos, (g.end_slot + 1).tolist(), stuck.end[:g.slots + g.T]) from None


def _deadlock(g: Graph, pos, stop, end) -> DeadlockError:
    """Which device waits for what when a program with transfers cannot finish (``end``: the slot
    ends, then the transfer ends, −1 for what has not run)."""
    program = g.program
    slot_action = np.full(g.slots, -1, np.int64)
    slot_action[g.slot_of_action] = np.arange(g.actions)
    lines, blocked = [], {}
    for d in range(g.devices):
        i = pos[d]
        if i >= stop[d]:
            lines.append(f"device {d}: done")
            continue
        a = int(slot_action[i])
        what = program.action_at(int(g.first[a])) if a >= 0 else "the end of its program"
        reason = "?"
        for x in g.waits[i].tolist():
            if x < 0 or end[x] >= 0:
                continue
            if x < g.slots:
                reason = f"{program.action_at(int(g.first[slot_action[x]]))}, which comes later on device {d}"
            else:
                poster = int(slot_action[g.post[x - g.slots]])
                reason = (f"a transfer sent after {program.action_at(int(g.first[poster]))} on device "
                          f"{int(program.device[g.first[poster]])}, which has not run")
            break
        blocked[d] = (what, reason)
        lines.append(f"device {d}: [{what}] waits for {reason}")
    stuck = sum(1 for d in range(g.devices) if pos[d] < stop[d])
    return DeadlockError(f"deadlock: no device can make progress ({stuck} stuck); each stuck device's next action "
                         f"is in [brackets]:\n" + "\n".join(lines), blocked)


def run(program: Program, config, cost: np.ndarray, engine: str = "auto"):
    """Simulate ``program`` (compute ops, with communication ops or not) with the transfers
    ``config`` describes, and its host copies with offload: (the program with its communication
    ops, start and end of every op, its dependencies, the end of each device's last batch, the
    Transfers table, the HostCopies table or None without offload)."""
    blocking = config.p2p_mode == "blocking"
    dep = dependencies(program)
    if program.comms is None:
        program = add_comms(program, defer=blocking, dep=dep)
    plan = transfer_plan(program, receives=blocking)
    # a sequence segment (Seq1F1B) carries 1/k of its microbatch's activation or gradient
    size = float(config.comm_bytes) / program.segments
    duration = durations(config.topology, config.time_unit, plan.src, plan.dst, size)
    if not np.isfinite(float(cost.sum()) + float(duration.sum())):
        raise ConfigError("comm_bytes", config.comm_bytes, "give smaller times or sizes: summed over this run the "
                          "transfers and ops overflow a float")
    offload = None if config.offload is None else offload_plan(program, config)
    graph = Graph(program, cost, plan, duration, dep, blocking)
    timeline = execute(graph, engine, offload)
    start = timeline.slot_start[graph.slot_of_op]
    end = timeline.slot_end[graph.slot_of_op]
    forward = program.kind[plan.consumer] == F
    table = Transfers(src=plan.src.astype(np.int32), dst=plan.dst.astype(np.int32),
                      stage=program.stage[plan.producer], microbatch=program.microbatch[plan.producer],
                      kind=np.where(forward, "F", "B"), bytes=np.full(len(plan), size),
                      ready=timeline.slot_end[graph.post], start=timeline.t_start, end=timeline.t_end,
                      producer=plan.producer, consumer=plan.consumer)
    copies = None if offload is None else copies_table(program, offload, timeline.copies, end, config)
    return program, start, end, dep, timeline.slot_end[graph.end_slot], table, copies
