"""The model of time in one place: a discrete-event kernel of actions on resources.

Everything ppviz times is an *action* on a *resource*: a device's compute stream runs its ops
(an F&B pair is one action), a P2P link (each ordered pair of devices, ``core/topology.py``) its
transfers, each device's two host links (to host, to device) the copies of activation offload,
each device's data-parallel link the gradient reductions of its step's tail. A resource is a
queue: it serves its actions one at a time, in the order they were added to it. An action

- starts when its resources are free (the action before it on each has ended) and each of its
  inputs is there: an input is another action's end (or start), plus a delay (a latency);
- ends its duration later, and no earlier than the end of each action it is ``floor``-ed by.

That is the whole rule: ``start = max(free, input + delay, ...)``, ``end = max(start + duration,
floor, ...)``. The builders below write each of ppviz's models in these terms, every rule once:
:func:`compute` (ops, latencies, offload's copies), :func:`transfers` (P2P links, blocking or
overlapped) and :func:`step_tails` (the data-parallel tail, timed after the ops, which never
wait for it). The specialised engines (``engine``, ``relaxation``, ``comm_engine``, ``offload``,
``metrics.Plan``, ``orders.Problem``) are fast paths that compute the same numbers, bit for bit
(``tests/test_kernel.py`` proves it on random configs): a maximum picks one of its floats and
every sum here adds the same two floats the engines add, so the order in which actions are
processed cannot change a result. The tails have no fast path: ``step.tails`` runs the kernel.

The kernel keeps a ready list: an action waits on a count of what it lacks (its inputs, and to be
at the head of each of its resources); finishing an action decrements its dependants' and its
queues' next action's counts. Each action and each input is handled once, so a run costs time in
proportion to them and always ends: actions left over mean the program cannot finish
(:class:`Stuck`, which the callers turn into a :class:`~ppviz.DeadlockError` naming what waits
for what). It is written for clarity, not speed: the reference model, run by
``simulate(..., engine="kernel")``.
"""

from __future__ import annotations

import numpy as np

from .dependencies import deadlock_error, latencies
from .errors import ConfigError
from .program import B, T, Program, W

END, START = 0, 1
#: the engines ``simulate`` runs: "auto" picks the fastest that applies, "events" and "lockstep"
#: are the fast paths by name, "kernel" this module
ENGINES = ("auto", "events", "lockstep", "kernel")


def checked_engine(engine) -> str:
    """``engine`` if it names one of :data:`ENGINES`, else a ConfigError listing them."""
    if not isinstance(engine, str) or engine not in ENGINES:
        raise ConfigError("engine", engine, f"use one of {', '.join(repr(e) for e in ENGINES)}")
    return engine


class Stuck(Exception):
    """A run that could not finish: ``position``, per resource, the index in its queue of the
    first action that did not run; ``end``, every action's end (−1 for those that did not run)."""

    def __init__(self, position: list[int], end: list[float]):
        super().__init__("some actions never ran")
        self.position = position
        self.end = end


class Kernel:
    """Resources, and actions on them (see the module docstring). Build with :meth:`resource`,
    :meth:`action`, :meth:`wait`, :meth:`given`, then :meth:`run`."""

    def __init__(self):
        self.queues: list[list[int]] = []
        self.duration: list[float] = []
        self.resources: list[tuple[int, ...]] = []
        self.rank: list[tuple[int, ...]] = []  # each action's place in each of its queues
        self.inputs: list[list[tuple[int, float, int]]] = []
        self.floors: list[list[int]] = []
        self.fixed: dict[int, tuple[float, float]] = {}
        self.start: list[float] = []
        self.end: list[float] = []

    def resource(self) -> int:
        """A new queue; its id."""
        self.queues.append([])
        return len(self.queues) - 1

    def action(self, resources: tuple[int, ...], duration: float) -> int:
        """A new action at the back of each of ``resources``' queues; its id."""
        a = len(self.duration)
        self.duration.append(duration)
        self.resources.append(resources)
        self.rank.append(tuple(len(self.queues[r]) for r in resources))
        self.inputs.append([])
        self.floors.append([])
        for r in resources:
            self.queues[r].append(a)
        return a

    def given(self, start: float, end: float) -> int:
        """An action whose times are known (what a later phase follows: a tail after its ops)."""
        a = self.action((), end - start)
        self.fixed[a] = (start, end)
        return a

    def wait(self, a: int, b: int, delay: float = 0.0, edge: int = END) -> None:
        """Action ``a`` starts no earlier than ``b``'s end (or start, ``edge=START``) + ``delay``."""
        self.inputs[a].append((b, delay, edge))

    def floor(self, a: int, b: int) -> None:
        """Action ``a`` ends no earlier than ``b`` does."""
        self.floors[a].append(b)

    def run(self) -> Kernel:
        """Time every action (``start``, ``end``); raises :class:`Stuck` when some cannot run."""
        n = len(self.duration)
        start, end = [0.0] * n, [-1.0] * n
        # what each action still lacks: its inputs, its floors, and the head of each of its queues
        lacks = [len(ins) + len(fl) + len(res) for ins, fl, res in zip(self.inputs, self.floors, self.resources)]
        dependants: list[list[int]] = [[] for _ in range(n)]
        for a in range(n):
            for b, _, _ in self.inputs[a]:
                dependants[b].append(a)
            for b in self.floors[a]:
                dependants[b].append(a)
        for queue in self.queues:
            if queue:
                lacks[queue[0]] -= 1
        for a, (s, e) in self.fixed.items():
            start[a], end[a], lacks[a] = s, e, -1
            for c in dependants[a]:
                lacks[c] -= 1
        position = [0] * len(self.queues)
        free = [0.0] * len(self.queues)
        ready = [a for a in range(n - 1, -1, -1) if lacks[a] == 0]
        done = len(self.fixed)
        while ready:
            a = ready.pop()
            t = 0.0
            for r in self.resources[a]:
                if free[r] > t:
                    t = free[r]
            for b, delay, edge in self.inputs[a]:
                x = (start[b] if edge == START else end[b]) + delay
                if x > t:
                    t = x
            start[a] = t
            t += self.duration[a]
            for b in self.floors[a]:
                if end[b] > t:
                    t = end[b]
            end[a] = t
            done += 1
            for r in self.resources[a]:
                free[r] = t
                position[r] += 1
                if position[r] < len(self.queues[r]):
                    c = self.queues[r][position[r]]
                    lacks[c] -= 1
                    if lacks[c] == 0:
                        ready.append(c)
            for c in dependants[a]:
                lacks[c] -= 1
                if lacks[c] == 0:
                    ready.append(c)
        if done < n:
            raise Stuck(position, end)
        self.start, self.end = start, end
        return self

    def ready(self, a: int, without: int) -> float:
        """When ``a`` could have started without its input ``without``: the later of its
        resources' free times and its other inputs (what a reload's ``held`` is measured from)."""
        t = 0.0
        for r, k in zip(self.resources[a], self.rank[a]):
            if k and self.end[self.queues[r][k - 1]] > t:
                t = self.end[self.queues[r][k - 1]]
        for b, delay, edge in self.inputs[a]:
            if b != without:
                x = (self.start[b] if edge == START else self.end[b]) + delay
                if x > t:
                    t = x
        return t


# Builders: each model of ppviz in the kernel's terms ------------------------------------------

class _Copies:
    """Activation offload's copies (``core/offload.py`` has the model) on each device's two host
    links: an offloaded F's copy to the host follows its action's end; the reload for its backward
    is issued when the action before the backward starts, follows the offload's end, and the
    backward waits for it. Created in each device's program order, which is each link's order."""

    def __init__(self, k: Kernel, devices: int, offload):
        self.k = k
        self.forward = offload.forward.tolist()
        self.offloaded = offload.offloaded.tolist()
        self.duration = offload.duration.tolist()
        self.to_host = [k.resource() for _ in range(devices)]
        self.to_device = [k.resource() for _ in range(devices)]
        self.offload_of: dict[int, tuple[int, int]] = {}  # F op: (its offload, its action)
        # F op: (its reload, the backward op, the backward's action, the action before it or None)
        self.reload_of: dict[int, tuple[int, int, int, int | None]] = {}

    def add(self, op: int, device: int, slot: int, before: int | None) -> None:
        """The copies op ``op`` (in action ``slot`` of ``device``) makes; ``before`` is the action
        before ``slot`` on the device (None for its first)."""
        k = self.k
        forward = self.forward[op]
        if forward >= 0:  # a backward: reload its F's activation first
            copy = k.action((self.to_device[device],), self.duration[forward])
            if before is not None:
                k.wait(copy, before, edge=START)
            k.wait(copy, self.offload_of[forward][0])
            k.wait(slot, copy)
            self.reload_of[forward] = (copy, op, slot, before)
        if self.offloaded[op]:
            copy = k.action((self.to_host[device],), self.duration[op])
            k.wait(copy, slot)
            self.offload_of[op] = (copy, slot)

    def table(self):
        """The copies as ``offload.copies_table`` takes them: per F op its offload's (ready, start,
        end) and its reload's (issued, start, end, backward op, how long the backward waited for it)."""
        k = self.k
        offload_at = {f: (k.end[slot], k.start[c], k.end[c]) for f, (c, slot) in self.offload_of.items()}
        reload_at = {}
        for f, (c, op, slot, before) in self.reload_of.items():
            issued = 0.0 if before is None else k.start[before]
            ready = k.ready(slot, without=c)
            reload_at[f] = (issued, k.start[c], k.end[c], op, k.end[c] - ready if k.end[c] > ready else 0.0)
        return offload_at, reload_at


def compute(program: Program, cost: np.ndarray, comm: float | np.ndarray, dep: np.ndarray, offload=None):
    """Start and end of every op of a program without transfers (and, with ``offload``, the
    copies as ``offload.copies_table`` takes them, else None).

    Each device's compute stream runs its actions in program order; an action waits for the
    ops its ops depend on (``dependencies``: the F of the stage before, the backward of the stage
    after, ...), plus the latency ``comm`` (or each op's own, an array) where the dependency
    crosses devices; an F&B pair is one action that waits for both its ops' inputs and lasts the
    pair's cost (carried by its first op)."""
    k = Kernel()
    actions = program.actions
    slot_of_op = actions.of_op.tolist()
    first = actions.first.tolist()
    cost_l = cost.tolist()
    streams = [k.resource() for _ in range(program.devices)]
    rows = actions.offsets.tolist()
    for d in range(program.devices):
        for a in range(rows[d], rows[d + 1]):
            k.action((streams[d],), cost_l[first[a]])
    delay = latencies(program, dep, comm).tolist()
    copies = None if offload is None else _Copies(k, program.devices, offload)
    device = program.device.tolist()
    for i, j in enumerate(dep.tolist()):
        a = slot_of_op[i]
        if j >= 0:
            k.wait(a, slot_of_op[j], delay[i])
        if copies is not None:
            d = device[i]
            copies.add(i, d, a, a - 1 if a > rows[d] else None)
    try:
        k.run()
    except Stuck as stuck:
        end = np.asarray(stuck.end)[actions.of_op].tolist()
        pos = [first[rows[d] + p] if rows[d] + p < rows[d + 1] else int(program.offsets[d + 1])
               for d, p in enumerate(stuck.position[:program.devices])]
        raise deadlock_error(program, pos, program.offsets[1:].tolist(), dep.tolist(), end) from None
    start = np.array(k.start)[actions.of_op]
    end = np.array(k.end)[actions.of_op]
    return start, end, None if copies is None else copies.table()


def several_inputs(program: Program, cost: np.ndarray, ptr: np.ndarray, on: np.ndarray, lag: np.ndarray):
    """Start and end of every op of a program whose ops may wait for several others (Vocabulary
    Parallelism's passes and barriers: ``core/vocab.py``'s ``edges`` gives op i's inputs as
    ``on[ptr[i]:ptr[i+1]]``, each with the latency ``lag`` after its end): each device's compute
    stream runs its ops in program order, each once every input has ended. No F&B pairs."""
    k = Kernel()
    streams = [k.resource() for _ in range(program.devices)]
    for d, n in enumerate(np.diff(program.offsets).tolist()):
        for _ in range(n):
            k.action((streams[d],), 0.0)
    k.duration = cost.tolist()
    ptr_l, on_l, lag_l = ptr.tolist(), on.tolist(), lag.tolist()
    for i in range(len(program)):
        for e in range(ptr_l[i], ptr_l[i + 1]):
            k.wait(i, on_l[e], lag_l[e])
    try:
        k.run()
    except Stuck as stuck:
        pos = [int(program.offsets[d]) + p for d, p in enumerate(stuck.position)]
        # what each op waits for: its first input that never ended
        waits = [next((on_l[e] for e in range(ptr_l[i], ptr_l[i + 1]) if stuck.end[on_l[e]] < 0), -1)
                 for i in range(len(program))]
        raise deadlock_error(program, pos, program.offsets[1:].tolist(), waits, stuck.end) from None
    return np.array(k.start), np.array(k.end)


def transfers(graph, offload=None):
    """Slot and transfer times of a program whose communication runs as transfers (a
    ``comm_engine.Graph``: its actions as slots, each device's row followed by an end slot that
    holds the blocking batch after its last action). ARCHITECTURE.md, "Transfers", has the model:

    - a transfer is posted by the action before its send (ready at that action's end), queued on
      its link (``graph.link``: the ordered pair of devices) in sending order, and lasts its duration; its
      consumer waits for its end;
    - blocking P2P: the batch of communication ops before an action holds the device: the action
      after the one that posts a send waits for the transfer, and so does the action (or the end
      slot) a receive is placed before;
    - a dependency on the same device is an input as in :func:`compute` (one on a later op, or
      the pair's own other op, never runs: the program cannot finish).

    Returns (slot starts, slot ends, transfer starts, transfer ends, the copies or None)."""
    k = Kernel()
    p = graph.devices
    program = graph.program
    streams = [k.resource() for _ in range(p)]
    row_start, end_slot = graph.row_start.tolist(), graph.end_slot.tolist()
    cost = graph.cost.tolist()
    for d in range(p):
        for slot in range(row_start[d], end_slot[d] + 1):
            k.action((streams[d],), cost[slot])
    links: dict[int, int] = {}
    post, consumer, duration = graph.post.tolist(), graph.consumer.tolist(), graph.duration.tolist()
    gate = None if graph.gate is None else graph.gate.tolist()
    for t, link in enumerate(graph.link.tolist()):
        if link not in links:
            links[link] = k.resource()
        x = k.action((links[link],), duration[t])
        k.wait(x, post[t])
        holds = {consumer[t]} if gate is None else {consumer[t], post[t] + 1, gate[t]}
        for slot in sorted(holds):
            k.wait(slot, x)
    slot_of_op = graph.slot_of_op.tolist()
    device = program.device.tolist()
    copies = None if offload is None else _Copies(k, p, offload)
    for i, j in enumerate(graph.dep.tolist()):
        s = slot_of_op[i]
        if j >= 0 and device[j] == device[i]:
            k.wait(s, slot_of_op[j])
        if copies is not None:
            d = device[i]
            copies.add(i, d, s, s - 1 if s > row_start[d] else None)
    k.run()  # Stuck: comm_engine names what waits for what
    slots, T = graph.slots, graph.T
    start, end = np.array(k.start), np.array(k.end)
    return (start[:slots], end[:slots], start[slots:slots + T], end[slots:slots + T],
            None if copies is None else copies.table())


def step_tails(program: Program, start: np.ndarray, end: np.ndarray, step):
    """Each device's data-parallel tail after its pipeline ops (``core/step.py`` has the model):
    its rows (device, stage, kind, start, end), and each device's end, tail included.

    Timed after the ops, which never wait for it: a device's data-parallel link reduces each
    stage it holds once that stage's last weight-gradient op (its last W or B, or the vocabulary
    pass T, which computes the device's shard of the output layer's, named by the device's lowest
    stage; the first of those that end last) has run, in the order those ops end (then by stage): from that op's
    start with ``overlap_grad_reduce`` (ending no earlier than the op), else from the device's
    last op's end; then, on the device, its optimizer step once every reduction has ended, then
    its parameter gather (left out with ``overlap_param_gather``)."""
    p, S = program.devices, program.stages
    device = program.device
    device_end = np.zeros(p)
    np.maximum.at(device_end, device, end)
    grads = np.flatnonzero((program.kind == W) | (program.kind == B) | (program.kind == T))
    key = device[grads].astype(np.int64) * S + program.stage[grads]
    by_key = np.lexsort((grads, -end[grads], key))
    head = np.ones(len(by_key), bool)
    head[1:] = key[by_key[1:]] != key[by_key[:-1]]
    last = grads[by_key[head]]  # per (device, stage) held, its last weight-gradient op
    held = last[np.lexsort((program.stage[last], end[last], device[last]))]  # each device's, as they end
    k = Kernel()
    links, streams = [k.resource() for _ in range(p)], [k.resource() for _ in range(p)]
    finished = [k.given(t, t) for t in device_end.tolist()]
    reductions: list[list[tuple[int, int]]] = [[] for _ in range(p)]
    stages: list[list[int]] = [[] for _ in range(p)]
    for i, d, s in zip(held.tolist(), device[held].tolist(), program.stage[held].tolist()):
        op = k.given(float(start[i]), float(end[i]))
        r = k.action((links[d],), step.time("reduce", s))
        if step.overlap_grad_reduce:
            k.wait(r, op, edge=START)
        else:
            k.wait(r, finished[d])
        k.floor(r, op)
        reductions[d].append((s, r))
        stages[d].append(s)
    parts = ("optimizer",) if step.overlap_param_gather else ("optimizer", "gather")
    tails = []
    for d in range(p):
        after, mine = finished[d], []
        for part in parts:
            x = k.action((streams[d],), sum(step.time(part, s) for s in stages[d]))
            k.wait(x, after)
            after = x
            mine.append((part, x))
        for _, r in reductions[d]:
            k.wait(mine[0][1], r)
        tails.append(mine)
    k.run()
    rows = []
    for d in range(p):
        rows += [(d, s, "reduce", k.start[r], k.end[r]) for s, r in reductions[d] if k.duration[r] > 0]
        rows += [(d, -1, part, k.start[x], k.end[x]) for part, x in tails[d] if k.duration[x] > 0]
    return rows, np.array([k.end[mine[-1][1]] for mine in tails])


__all__ = ["Kernel", "Stuck", "compute", "step_tails", "transfers"]
