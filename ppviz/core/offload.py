"""Activation offload to host memory: copies that occupy a device's host link, memory freed while offloaded.

The model follows PipeOffload (Wan, Qi, Huang, Lin, Li 2025, "PipeOffload: Improving Scalability
of Pipeline Parallelism with Memory Optimization", arXiv 2503.01328; sail-sg's
zero-bubble-pipeline-parallelism): a stage's activation is copied to host memory after its
forward and copied back before the backward that needs it, on a copy engine of its own, so the
copies overlap compute and cost time only when the link cannot keep up. The prefetch rule is
the one-step lookahead of Megatron-LM's and TransformerEngine's activation offloading (NVIDIA
Megatron-LM ``megatron/core/transformer/README.md``, "Fine-grained Activation Offloading": in
the backward, wait for the current tensors' reload, then start reloading the next ones).

- **What.** ``Config.offload`` = α: α of the activation each F stores (its stage's activation,
  after recompute, 1/k of it per sequence segment) is offloaded; 1 − α stays on the device. An F
  is offloaded only when another action of its device runs between it and its backward (I or
  B): with nothing in between, the reload would be asked for before the offload could finish
  (the last stage of 1F1B runs F then B of one microbatch), so the copy would only delay the
  backward. A forward-only program is refused (it keeps nothing for a backward).
- **Links.** Each device has a host link (``Config.offload.link``, PCIe) in each direction, used by
  its own copies only: offloads queue on the device-to-host direction, reloads on the
  host-to-device one, each first come, first served, and a copy of ``x`` bytes lasts
  ``latency + x / bandwidth``. Bytes are activation units × ``activation_bytes`` (activation
  units when that is None).
- **Offload.** Ready when its F ends (an F&B pair: when the pair ends); starts when the
  device-to-host link is free; the α share is freed on the device when it ends.
- **Reload.** Issued when the device starts the action just before the backward (lookahead of
  one action); starts at the later of that, the end of the reload issued before it on the
  host-to-device link, and the end of its own offload; the memory is taken again at its start.
  The backward starts no earlier than the reload's end (and as usual not before its device is
  free and its inputs are there). I frees 1 − ``w_share`` of the whole activation and W the
  rest, as without offload.

The memory accounting is PipeOffload's: its scheduler (sail-sg/zero-bubble-pipeline-parallelism,
``megatron/core/pipeline_parallel/zerobubble/scheduler/offloading.py``, ``get_peak_memory``)
counts an activation as taken again when its reload is prepared and as freed when its offload
ends. Its timing differs: PipeOffload plans the copies offline on the schedule's estimated
timeline, each reload placed as late as possible so that it ends one backward's duration before
its backward, and skips an offload whose window is shorter than three copy round trips; ppviz
simulates the copies online with the lookahead above, which needs no estimate of the timeline
and reloads earlier across idle gaps (a GPipe drain), so its peaks are an upper estimate of the
planned ones.

With an infinitely fast link (latency 0) no op moves and the memory is never higher: an
offloaded activation leaves at its F's end and returns when the action before its backward
starts. Nothing else changes: compute, its costs, comm and static memory are as without offload.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import kernel
from .columns import Queue
from .dependencies import deadlock_error, dependencies, forwards, latencies
from .errors import ConfigError
from .memory import MemoryCurves, device_max, op_activation, stage_activation, step_curves
from .program import B, F, I, W, Program


@dataclass(frozen=True)
class HostCopies(Queue):
    """The simulated copies between devices and host memory, one row each (``Result.host_copies``).

    ``device``, ``stage`` and ``microbatch`` (of the activation), ``kind`` (``"offload"``: device
    to host after the F; ``"reload"``: host to device before the backward), ``bytes``, ``ready``
    (offload: its F's end; reload: the start of the action before the backward), ``start`` (later
    when the link was busy, or for a reload when its offload had not ended), ``end``, and ``op``,
    the flat index of the F (offload) or of the backward (reload) it serves, and ``held``: for a
    reload, how long its backward started later than its device, its inputs (and with transfers,
    their arrival and any blocking batch) allowed: the time it waited for the reload alone (0 for
    an offload). Rows are by device, then by start time.
    """

    device: np.ndarray
    stage: np.ndarray
    microbatch: np.ndarray
    kind: np.ndarray
    bytes: np.ndarray
    ready: np.ndarray
    start: np.ndarray
    end: np.ndarray
    op: np.ndarray
    held: np.ndarray

    COLUMNS = ("device", "stage", "microbatch", "kind", "bytes", "ready", "start", "end", "op", "held")
    EMPTY = ("int32", "int32", "int32", "<U7", "float64", "float64", "float64", "float64", "int64", "float64")


@dataclass(frozen=True)
class Offloads:
    """What a program offloads under a config: per op, ``forward`` (for an I or B, the flat index
    of its F; −1 otherwise), ``offloaded`` (an F whose activation goes to the host), ``amount``
    (the activation units each offloaded F moves), ``nbytes`` and ``duration`` (of each copy)."""

    forward: np.ndarray
    offloaded: np.ndarray
    amount: np.ndarray
    nbytes: np.ndarray
    duration: np.ndarray


def plan(program: Program, config) -> Offloads:
    """Which F's are offloaded and what each copy moves and costs (see the module docstring)."""
    if program.forward_only:
        raise ConfigError("offload", config.offload, "leave offload out for a forward-only program",
                          reason="it keeps no activation for a backward")
    n = len(program)
    act = stage_activation(config, program.devices, program.stages)[program.stage] / program.segments
    kind = program.kind
    action = program.actions.of_op  # an F&B pair is one action
    key, of_f = forwards(program)
    back = np.flatnonzero((kind == B) | (kind == I))
    fwd = of_f[key[back]]
    device = program.device
    ran_before_here = (fwd >= 0) & (fwd <= back)
    ran_before_here[ran_before_here] = device[fwd[ran_before_here]] == device[back[ran_before_here]]
    back, fwd = back[ran_before_here], fwd[ran_before_here]
    forward = np.full(n, -1, np.int64)
    forward[back] = fwd
    offloaded = np.zeros(n, bool)
    # another action runs between the F and its backward on their device
    offloaded[fwd] = (action[back] - action[fwd] >= 2) & (act[fwd] > 0)
    forward[~offloaded[np.maximum(forward, 0)]] = -1
    amount = np.where(offloaded, config.offload.share * act, 0.0)
    nbytes = amount * (config.activation_bytes if config.activation_bytes is not None else 1.0)
    link = config.offload.link.in_unit(config.time_unit, "the offload link")
    duration = np.where(offloaded, link.latency + nbytes / link.bandwidth, 0.0)
    return Offloads(forward, offloaded, amount, nbytes, duration)


class HostLinks:
    """Each device's two host links as an engine drives them, device by device in time order:
    ``reload`` when a backward's action is about to start, ``offload`` when an F's action has
    ended. ``duration``: per op, its copy's (an F's, for both of its copies). ``copies`` are the
    input of :func:`copies_table`."""

    def __init__(self, devices: int, duration: list[float]):
        self.duration = duration
        self.to_host = [0.0] * devices  # when each device's device-to-host link is free
        self.to_device = [0.0] * devices  # ... and its host-to-device link
        self.offload_at: dict[int, tuple[float, float, float]] = {}  # per F op: (ready, start, end)
        # per F op: (ready, start, end, backward, how long the backward waited for it)
        self.reload_at: dict[int, tuple[float, float, float, int, float]] = {}

    def reload(self, device: int, issued: float, backward: int, forward: int, ready: float) -> float:
        """Reload F ``forward``'s activation for op ``backward``, issued at ``issued``, when the
        backward could start at ``ready`` without it; its end."""
        start = max(issued, self.to_device[device], self.offload_at[forward][2])
        end = self.to_device[device] = start + self.duration[forward]
        self.reload_at[forward] = (issued, start, end, backward, end - ready if end > ready else 0.0)
        return end

    def offload(self, device: int, ready: float, forward: int) -> None:
        start = max(ready, self.to_host[device])
        end = self.to_host[device] = start + self.duration[forward]
        self.offload_at[forward] = (ready, start, end)

    @property
    def copies(self):
        return self.offload_at, self.reload_at


def run(program: Program, config, cost: np.ndarray, comm: float, engine: str = "auto"):
    """Start and end of every op, the dependency index, and the :class:`HostCopies` of a program
    whose config offloads activations (``Config.offload``)."""
    if kernel.checked_engine(engine) == "lockstep":
        raise ConfigError("engine", engine, "use 'events', 'auto' or 'kernel' with offload: the lockstep engine "
                          "does not model host copies")
    if not np.isfinite(float(cost.sum()) + comm * len(program)):
        raise ConfigError("costs", f"f={config.f:g}, b={config.b:g}, w={config.w:g}, comm={config.comm:g}",
                          "give smaller times: summed over this run they overflow a float")
    off = plan(program, config)
    dep = dependencies(program)
    if engine == "kernel":
        start, end, copies = kernel.compute(program, cost, comm, dep, off)
    else:
        start, end, copies = _events(program, dep, latencies(program, dep, comm), cost, off)
    return start, end, dep, copies_table(program, off, copies, end, config)


def _events(program: Program, dep: np.ndarray, cross: np.ndarray, cost: np.ndarray, off: Offloads):
    n, p = len(program), program.devices
    dep_l, cross_l, cost_l = dep.tolist(), cross.tolist(), cost.tolist()
    pair_l = program.pair.tolist()
    forward_l = off.forward.tolist()
    offloaded_l = off.offloaded.tolist()
    links = HostLinks(p, off.duration.tolist())
    reload, offload = links.reload, links.offload
    start = [0.0] * n
    end = [-1.0] * n
    waiter = [-1] * n
    offsets = program.offsets.tolist()
    pos = offsets[:-1]
    stop = offsets[1:]
    free = [0.0] * p
    previous_start = [0.0] * p  # start of each device's last action
    runnable = list(range(p - 1, -1, -1))
    while runnable:
        d = runnable.pop()
        i, e, t = pos[d], stop[d], free[d]
        while i < e:
            width = 2 if pair_l[i] else 1
            s = t
            blocked = False
            for k in range(i, i + width):
                j = dep_l[k]
                if j >= 0:
                    r = end[j]
                    if r < 0.0:
                        waiter[j] = d
                        blocked = True
                        break
                    r += cross_l[k]
                    if r > s:
                        s = r
            if blocked:
                break
            for k in range(i, i + width):
                j = forward_l[k]
                if j >= 0:
                    back = reload(d, previous_start[d], k, j, s)
                    if back > s:
                        s = back
            t = s + cost_l[i]
            for k in range(i, i + width):
                start[k] = s
                end[k] = t
                if offloaded_l[k]:
                    offload(d, t, k)
            previous_start[d] = s
            for k in range(i, i + width):
                w = waiter[k]
                if w >= 0:
                    runnable.append(w)
            i += width
        pos[d] = i
        free[d] = t
    if any(pos[d] < stop[d] for d in range(p)):
        raise deadlock_error(program, pos, stop, dep_l, end)
    return np.array(start, dtype=np.float64), np.array(end, dtype=np.float64), links.copies


def copies_table(program: Program, off: Offloads, copies, op_end: np.ndarray, config) -> HostCopies:
    """The HostCopies of a run: ``copies`` is (per F op its offload's (ready, start, end), per F
    op its reload's (ready, start, end, backward op, held)); ``op_end``, the ops' ends, is refused
    when the copies kept it from being finite."""
    if not np.isfinite(float(op_end.max(initial=0.0))):
        raise ConfigError("offload", config.offload, "give a faster host link: the copies of this run do not "
                          "finish in a finite time")
    offload_at, reload_at = copies
    if not offload_at and not reload_at:
        return HostCopies.empty()
    # columns (ready, start, end, op, held) of the offloads, then of the reloads; a copy's F is j
    offloads = np.array(list(offload_at.values()), np.float64).reshape(-1, 3)
    reloads = np.array(list(reload_at.values()), np.float64).reshape(-1, 5)
    j = np.concatenate([np.fromiter(offload_at, np.int64, len(offload_at)),
                        np.fromiter(reload_at, np.int64, len(reload_at))])
    ready, start, end = (np.concatenate([offloads[:, c], reloads[:, c]]) for c in range(3))
    op = np.concatenate([j[:len(offloads)], reloads[:, 3].astype(np.int64)])
    held = np.concatenate([np.zeros(len(offloads)), reloads[:, 4]])
    is_reload = np.arange(len(j)) >= len(offloads)
    device = program.device[j]
    order = np.lexsort((j, is_reload, start, device))  # by device, then start (then offloads first)
    j = j[order]
    return HostCopies(device=device[order].astype(np.int32), stage=program.stage[j].astype(np.int32),
                      microbatch=program.microbatch[j].astype(np.int32),
                      kind=np.where(is_reload[order], "reload", "offload"), bytes=off.nbytes[j].astype(np.float64),
                      ready=ready[order], start=start[order], end=end[order], op=op[order], held=held[order])


def curves(program: Program, config, start: np.ndarray, end: np.ndarray, copies: HostCopies) -> MemoryCurves:
    """Activation memory over time with offload: as :func:`ppviz.core.memory.activation_curves`,
    plus α of an offloaded activation freed at its offload's end and taken again at its
    reload's start (frees first at equal times)."""
    act, release = op_activation(program, config)
    kind = program.kind
    frees, allocs = np.flatnonzero((kind == B) | (kind == I) | (kind == W)), np.flatnonzero(kind == F)
    # each copy's activation is its microbatch's forward at that stage (the last one, if several)
    keys = program.stage[allocs].astype(np.int64) * program.microbatches + program.microbatch[allocs]
    by_key = np.argsort(keys, kind="stable")
    wanted = copies.stage.astype(np.int64) * program.microbatches + copies.microbatch
    forward = allocs[by_key[np.searchsorted(keys[by_key], wanted, side="right") - 1]]
    amount = config.offload.share * act[forward]
    is_offload = copies.kind == "offload"
    device = program.device
    # a device's op events first, then its copies, each in their own order
    free_device = np.concatenate([device[frees], copies.device[is_offload]])
    alloc_device = np.concatenate([device[allocs], copies.device[~is_offload]])
    free_order, alloc_order = np.argsort(free_device, kind="stable"), np.argsort(alloc_device, kind="stable")
    return step_curves(
        program.devices, free_device[free_order],
        np.concatenate([end[frees], copies.end[is_offload]])[free_order],
        np.concatenate([release[frees], amount[is_offload]])[free_order],
        alloc_device[alloc_order], np.concatenate([start[allocs], copies.start[~is_offload]])[alloc_order],
        np.concatenate([act[allocs], amount[~is_offload]])[alloc_order],
        device_max(np.abs(act), device, program.devices))


__all__ = ["HostCopies", "HostLinks", "Offloads", "plan", "run", "curves", "copies_table"]
