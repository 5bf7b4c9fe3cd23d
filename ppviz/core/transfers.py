"""Transfers: the activations and gradients a program moves between devices, and where its send
and receive ops for each one sit.

Every dependency between ops on two devices (ARCHITECTURE.md, "Model of time and memory") is one
transfer: an F's output to the next stage's F, a B's or I's input gradient to the previous
stage's B or I. A program's communication ops (torch's ``SEND_F``/``RECV_F``/``SEND_B``/``RECV_B``)
place each transfer's send on the producer's device, after the producer, and its receive on the
consumer's device, before the consumer; :func:`plan` matches them to the transfers and refuses a
program whose ops do not describe them (it is checked when it runs, as torch checks it).

:class:`Transfers` is the table a simulation returns (``Result.transfers``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .columns import Queue
from .dependencies import dependencies
from .errors import ProgramError, checked_arguments
from .program import COMM_KINDS, F, RECV_B, RECV_F, SEND_B, SEND_F, CommOps, Program, action, comm_action


@dataclass(frozen=True)
class Plan:
    """A program's transfers, in the order of their sends on each device (the order a link
    serves them in): the ``producer`` and ``consumer`` op (flat indices), their devices
    ``src`` and ``dst``, and ``send_before`` / ``recv_before``, the compute op each send and
    receive precedes on its device (that device's end offset after its last op; ``recv_before``
    is None when it was not asked for)."""

    producer: np.ndarray
    consumer: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    send_before: np.ndarray
    recv_before: np.ndarray | None

    def __len__(self) -> int:
        return len(self.producer)


def crossings(program: Program, dep: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(producer, consumer) of every dependency between two devices, in producer order."""
    dep = dependencies(program) if dep is None else dep
    device = program.device
    has = dep >= 0
    cross = np.flatnonzero(has & (device[np.where(has, dep, 0)] != device))
    consumer_of = np.full(len(program), -1, np.int64)
    consumer_of[dep[cross]] = cross
    producer = np.flatnonzero(consumer_of >= 0)
    return producer, consumer_of[producer]


def plan(program: Program, *, receives: bool = True) -> Plan:
    """The transfers of a program with communication ops, matched to its sends and receives;
    ``receives=False`` may leave out where the receives sit (found lazily for lowered programs)."""
    comms = program.comms
    if comms is None:
        raise ProgramError("the program has no communication ops; add them with ppviz.core.lowering.add_comms")
    if comms.placed is not None:
        producer, consumer, send_before, recv_before = comms.placed
        if receives and recv_before is None:
            recv_before = comms.receive_positions()
        return Plan(producer, consumer, program.device[producer], program.device[consumer], send_before, recv_before)
    return _matched(program)


def _comms(program: Program) -> CommOps:
    """The communication ops of a program that :func:`plan` found to have them."""
    assert program.comms is not None
    return program.comms


def _matched(program: Program) -> Plan:
    comms = _comms(program)
    producer, consumer = crossings(program)
    t = len(producer)
    S, m = program.stages, program.microbatches
    forward = program.kind[consumer] == F
    # each transfer by (direction, sending stage, microbatch)
    slot = np.full((2, S * m), -1, np.int64)
    sender = program.stage[producer].astype(np.int64) * m + program.microbatch[producer]
    slot[np.where(forward, 0, 1), sender] = np.arange(t)
    kind, stage, mb = comms.kind.astype(np.int64), comms.stage.astype(np.int64), comms.microbatch.astype(np.int64)
    # a receive names the receiving stage: its sender is one stage before (F) or after (B)
    sending_stage = stage + np.select([kind == RECV_F, kind == RECV_B], [-1, 1], 0)
    direction = np.where((kind == SEND_F) | (kind == RECV_F), 0, 1)
    valid = (stage < S) & (mb < m) & (sending_stage >= 0) & (sending_stage < S)
    which = np.full(len(kind), -1, np.int64)
    which[valid] = slot[direction[valid], (sending_stage * m + mb)[valid]]
    is_send = (kind == SEND_F) | (kind == SEND_B)
    index = np.arange(len(kind))
    send_of = np.full(t, -1, np.int64)
    recv_of = np.full(t, -1, np.int64)
    for ops, mine, end in ((is_send, send_of, "send"), (~is_send, recv_of, "receive")):
        hits = index[ops & (which >= 0)]
        counts = np.bincount(which[hits], minlength=t)
        if (counts > 1).any():
            twice = hits[which[hits] == int(np.argmax(counts > 1))]
            raise _error(program, int(twice[1]), f"it runs twice (also at {_where(program, int(twice[0]))}); each "
                                                 f"transfer has one {end}")
        mine[which[hits]] = hits
    if (which < 0).any():
        c = int(np.argmax(which < 0))
        raise _error(program, c, _no_transfer(program, c, S, m))
    device = program.device
    src, dst = device[producer], device[consumer]
    for mine, on, op, what in ((send_of, src, producer, "send"), (recv_of, dst, consumer, "receive")):
        missing = mine < 0
        if missing.any():
            k = int(np.argmax(missing))
            raise _missing(program, int(producer[k]), int(consumer[k]), what)
        wrong = comms.device[mine] != on
        if wrong.any():
            k = int(np.argmax(wrong))
            raise _error(program, int(mine[k]), f"it belongs on device {int(on[k])}, which runs "
                                                f"{program.action_at(int(op[k]))}")
    send_before, recv_before = comms.before[send_of], comms.before[recv_of]
    # the producer's whole action (an F&B pair is one) comes before the send, the consumer's after the receive
    last_of_producer = producer + (program.pair[producer] & (producer + 1 < len(program))).astype(np.int64)
    early = send_before <= last_of_producer
    if early.any():
        k = int(np.argmax(early))
        raise _error(program, int(send_of[k]), f"it sends the output of {program.action_at(int(producer[k]))}, "
                                               f"which comes after it on device {int(src[k])}; put the send after it")
    first_of_consumer = consumer - np.r_[False, program.pair[:-1]][consumer].astype(np.int64)
    late = recv_before > first_of_consumer
    if late.any():
        k = int(np.argmax(late))
        raise _error(program, int(recv_of[k]), f"{program.action_at(int(consumer[k]))} needs what it receives and "
                                               f"comes before it on device {int(dst[k])}; put the receive before it")
    # a link serves its transfers in the order of their sends
    order = np.lexsort((comms.order[send_of], send_before, src))
    return Plan(producer[order], consumer[order], src[order], dst[order], send_before[order], recv_before[order])


def _where(program: Program, c: int) -> str:
    """``device d, position k`` of communication op ``c``, counting every action of the device in
    torch's ``pipeline_order_with_comms`` (compute and communication)."""
    comms = _comms(program)
    index, offsets = comms.ordered()
    d = int(comms.device[c])
    rank = int(np.flatnonzero(index[offsets[d]:offsets[d + 1]] == c)[0])
    lo = int(program.offsets[d])
    before = int(comms.before[c])
    computes = before - lo - int(np.count_nonzero(program.pair[lo:before]))
    return f"device {d}, position {computes + rank}"


def _error(program: Program, c: int, reason: str) -> ProgramError:
    comms = _comms(program)
    where = _where(program, c)
    d, position = (int(x.split()[-1]) for x in where.split(", "))
    return ProgramError(f"{where} ({comms.action_at(c)}): {reason}", device=d, position=position)


def _no_transfer(program: Program, c: int, S: int, m: int) -> str:
    comms = _comms(program)
    kind, stage, mb = int(comms.kind[c]), int(comms.stage[c]), int(comms.microbatch[c])
    if stage >= S or mb >= m:
        return f"stage must be in 0..{S - 1} and microbatch in 0..{m - 1}"
    name = COMM_KINDS[kind]
    peer = {SEND_F: stage + 1, RECV_F: stage - 1, SEND_B: stage - 1, RECV_B: stage + 1}[kind]
    if not 0 <= peer < S:
        return (f"stage {stage} has no stage {peer} to {'send to' if name.startswith('SEND') else 'receive from'}; "
                f"remove it")
    return (f"stages {min(stage, peer)} and {max(stage, peer)} of microbatch {mb} run on one device, so nothing "
            f"moves between them; remove it")


def _missing(program: Program, producer: int, consumer: int, what: str) -> ProgramError:
    forward = program.kind[consumer] == F
    s_send, s_recv, mb = int(program.stage[producer]), int(program.stage[consumer]), int(program.microbatch[producer])
    send = comm_action(SEND_F if forward else SEND_B, s_send, mb)
    recv = comm_action(RECV_F if forward else RECV_B, s_recv, mb)
    d, position = program.locate(consumer)
    src = int(program.device[producer])
    return ProgramError(
        f"device {d}, compute position {position} ({program.action_at(consumer)}): its input comes from device {src} "
        f"({action(int(program.kind[producer]), s_send, mb)}) but the program has no {what} for it; a program with "
        f"communication ops needs {send} on device {src} after the producer and {recv} on device {d} before the "
        f"consumer for every transfer (or no communication ops at all: then ppviz adds them)", device=d,
        position=position)


@checked_arguments
@dataclass(frozen=True)
class Transfers(Queue):
    """The simulated transfers, one row each, as equal-length columns.

    ``src`` and ``dst`` (devices), ``stage`` (the sending stage) and ``microbatch``, ``kind``
    (``"F"``: an activation to the next stage, ``"B"``: a gradient to the previous one),
    ``bytes``, ``ready`` (the data exists, the send is posted and the receive is posted),
    ``start`` (``ready``, or later when the link was busy), ``end``, and ``producer`` /
    ``consumer``, the flat indices of the ops (``Result.ops`` rows) it connects.
    """

    src: np.ndarray
    dst: np.ndarray
    stage: np.ndarray
    microbatch: np.ndarray
    kind: np.ndarray
    bytes: np.ndarray
    ready: np.ndarray
    start: np.ndarray
    end: np.ndarray
    producer: np.ndarray
    consumer: np.ndarray

    COLUMNS = ("src", "dst", "stage", "microbatch", "kind", "bytes", "ready", "start", "end", "producer", "consumer")
    EMPTY = ("int32", "int32", "int32", "int32", "<U1", "float64", "float64", "float64", "float64", "int64", "int64")
