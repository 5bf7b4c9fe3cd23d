"""The program IR: for each device, the ordered list of compute ops it runs.

Ops are F (forward), B (full backward), I (backward for inputs) and W (backward for
weights) of one (stage, microbatch); two ops may form an F&B pair that runs as one slot.
Vocabulary Parallelism (Yeung et al., MLSys'25, arXiv 2411.05288) adds the output layer's two
passes, split over every device: S (its shard of the logits and the softmax statistics) and T
(its shard of the gradients), named ``3S5``, ``3T5`` by the lowest stage of the device that runs
them (its shard); :mod:`ppviz.core.vocab` says what they wait for.
The text form is torch's action strings: ``0F1`` is stage 0 forward microbatch 1, ``2I0``,
``2W0``, ``3B5``, and a pair ``(0F7;7B3)OVERLAP_F_B``. The CSV form is torch's
``compute_only`` file (``PipelineScheduleMulti._dump_csv`` / ``_load_csv``): row r holds rank
r's actions, one per cell, an empty cell being an idle step.

A program is stored as flat numpy columns in device order (``offsets[d]:offsets[d+1]`` are
device d's ops) so that a million ops build, validate and simulate in well under a second.

Two flags widen what a program may be, each explicitly (a training program keeps every rule):

- ``forward_only``: an inference pipeline. Every (stage, microbatch) has one F and no backward
  at all; a backward op is refused.
- ``segments = k > 1``: every microbatch is split into k sequence segments (Seq1F1B), and the
  microbatch index i stands for segment i mod k of microbatch i // k (``microbatches`` counts
  the m·k indices). Causal attention orders the segments of one microbatch on every stage:
  their forwards run in segment order and their backwards in reverse order, on one device.

Two more say how a program's vocabulary passes meet: ``vocab_barriers``, what the last stage's
backward waits for (1, the all-reduce after every device's S, the paper's Algorithm 2; 2, the
second one after every T, Algorithm 1), and ``vocab_synchronous``, the output layer run as one
blocking collective step on every device (the interlaced pipeline's), not on a stream of its own.

torch's text and CSV formats have no place for these flags: set them on the program read back.

A program may also carry point-to-point communication ops, torch's ``SEND_F``, ``RECV_F``,
``SEND_B`` and ``RECV_B`` actions (``1SEND_F0``: stage 1 sends microbatch 0's activation on;
``2RECV_B3``: stage 2 receives microbatch 3's gradient), in :class:`CommOps`, columns of their
own placed between the compute ops: compute-only programs keep their columns and rules
unchanged. They are read from torch's ``compute_comms`` form, added by ``ppviz.core.lowering``
(never by a schedule builder), and run only when communication is simulated as transfers.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

from .errors import ConfigError, ParseError, ProgramError, checked_arguments
from .paths import exported
from .placement import Placement

F, B, I, W, S, T = 0, 1, 2, 3, 4, 5
KINDS = "FBIWST"
#: the vocabulary passes (Vocabulary Parallelism's S and T), which every device runs once per microbatch
VOCAB_KINDS = (S, T)

_STAGE_BITS = 20
_PAIR_BIT = 1 << 3
#: Largest stage and microbatch index the packed op codes hold.
MAX_STAGE = (1 << _STAGE_BITS) - 1
MAX_MICROBATCH = (1 << 31) - 1


#: communication ops, torch's names: a send of a stage's output (F) or input gradient (B), and
#: the receive of it on the next (F) or previous (B) stage's device
SEND_F, RECV_F, SEND_B, RECV_B = 0, 1, 2, 3
COMM_KINDS = ("SEND_F", "RECV_F", "SEND_B", "RECV_B")


def action(kind: int, stage: int, microbatch: int) -> str:
    """torch's action string of one op, e.g. ``action(F, 0, 1) == "0F1"``."""
    return f"{stage}{KINDS[kind]}{microbatch}"


def comm_action(kind: int, stage: int, microbatch: int) -> str:
    """torch's action string of one communication op, e.g. ``comm_action(SEND_F, 0, 1) == "0SEND_F1"``."""
    return f"{stage}{COMM_KINDS[kind]}{microbatch}"


class CommOps:
    """A program's communication ops as columns: ``kind`` (:data:`SEND_F` …), ``stage`` and
    ``microbatch`` in torch's convention (a send names the sending stage, a receive the receiving
    one), the ``device`` that runs each, and ``before``, the flat index of the compute op it
    precedes on that device (the device's end offset after its last op). ``order`` ranks the ops
    of one gap between two compute ops of a device; the columns themselves may be in any order
    (:meth:`ordered` sorts them by device, ``before`` and ``order``).

    The lowering builds them from its transfers (:meth:`of_transfers`, kept in :attr:`placed`)
    and spells the columns out only when they are read.
    """

    __slots__ = ("_columns", "_ordered", "_source", "_placement", "placed")
    _columns: tuple[np.ndarray, ...] | None
    _ordered: tuple[np.ndarray, np.ndarray] | None
    _source: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None
    _placement: Callable[[], tuple[np.ndarray, np.ndarray, np.ndarray]] | None
    placed: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None] | None

    def __init__(self, kind, stage, microbatch, device, before, order):
        self._columns = (np.asarray(kind, dtype=np.int8), np.asarray(stage, dtype=np.int32),
                         np.asarray(microbatch, dtype=np.int32), np.asarray(device, dtype=np.int32),
                         np.asarray(before, dtype=np.int64), np.asarray(order, dtype=np.int64))
        self._ordered = None
        self._source = None
        self._placement = None
        #: for lowered ops, per transfer (in the order of the sends on each device): the producer
        #: and consumer op, the compute op each send precedes, and (None until needed) each
        #: receive's; None for ops read from text
        self.placed = None

    @classmethod
    def of_rows(cls, rows: Sequence[tuple[int, int, int, int, int]]) -> "CommOps":
        """From (kind, stage, microbatch, device, before) rows, each gap's ops in the order given."""
        kind, stage, microbatch, device, before = zip(*rows)
        return cls(kind, stage, microbatch, device, before, np.arange(len(rows)))

    @classmethod
    def of_transfers(cls, program, producer, consumer, send_before, placement, recv_before=None) -> "CommOps":
        """A send after each ``producer`` op and a receive before each ``consumer`` op (one pair per
        transfer, in the order of the sends on each device). ``placement()`` gives (receive
        positions, send order, receive order), the orders ranking the ops of one gap between two
        compute ops; it runs when the columns are first read (or ``recv_before`` is needed)."""
        comms = cls.__new__(cls)
        comms._columns = None
        comms._ordered = None
        comms._source = (program.kind, program.stage, program.microbatch, program.device)
        comms._placement = placement
        comms.placed = (producer, consumer, send_before, recv_before)
        return comms

    def receive_positions(self) -> np.ndarray:
        """For lowered ops, the compute op each transfer's receive precedes."""
        assert self.placed is not None, "only lowered ops have transfers"
        recv_before = self.placed[3]
        return self._place()[0] if recv_before is None else recv_before

    def _place(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        assert self.placed is not None and self._placement is not None, "only lowered ops are placed"
        recv_before, send_order, recv_order = self._placement()
        self.placed = (*self.placed[:3], recv_before)
        return recv_before, send_order, recv_order

    def _spelled(self) -> tuple[np.ndarray, ...]:
        if self._columns is None:
            # columns are spelled out only for lowered ops: of_transfers set the source and placed
            assert self._source is not None and self.placed is not None
            kind, stage, microbatch, device = self._source
            producer, consumer, send_before, _ = self.placed
            recv_before, send_order, recv_order = self._place()
            forward = kind[consumer] == F
            self._columns = (
                np.concatenate([np.where(forward, SEND_F, SEND_B), np.where(forward, RECV_F, RECV_B)]).astype(np.int8),
                np.concatenate([stage[producer], stage[consumer]]),
                np.concatenate([microbatch[producer], microbatch[consumer]]),
                np.concatenate([device[producer], device[consumer]]),
                np.concatenate([send_before, recv_before]),
                np.concatenate([send_order, recv_order]))
        return self._columns

    kind = property(lambda self: self._spelled()[0])
    stage = property(lambda self: self._spelled()[1])
    microbatch = property(lambda self: self._spelled()[2])
    device = property(lambda self: self._spelled()[3])
    before = property(lambda self: self._spelled()[4])
    order = property(lambda self: self._spelled()[5])

    def __len__(self) -> int:
        if self._columns is None:
            assert self.placed is not None  # lowered ops: of_transfers set them
            return 2 * len(self.placed[0])
        return len(self._columns[0])

    def ordered(self) -> tuple[np.ndarray, np.ndarray]:
        """(indices in each device's order, device d's being ``offsets[d]:offsets[d+1]`` of them)."""
        if self._ordered is None:
            index = np.lexsort((self.order, self.before, self.device))
            devices = int(self.device.max(initial=-1)) + 1
            offsets = np.searchsorted(self.device[index], np.arange(devices + 1))
            self._ordered = (index, offsets)
        return self._ordered

    def action_at(self, index: int) -> str:
        return comm_action(int(self.kind[index]), int(self.stage[index]), int(self.microbatch[index]))


class DeviceOps:
    """Collects one device's ops in order; schedules are written against this small API.

    Each op is packed into one Python int so that building long programs stays cheap.
    """

    __slots__ = ("codes", "comms")

    def __init__(self):
        self.codes: list[int] = []
        self.comms: list[tuple[int, int, int, int]] = []  # (ops before it, kind, stage, microbatch), parsed only

    def _add(self, kind: int, stage: int, microbatch: int, pair: int = 0) -> None:
        self.codes.append((((microbatch << _STAGE_BITS) | stage) << 4) | pair | kind)

    def f(self, stage: int, microbatch: int) -> None:
        self._add(F, stage, microbatch)

    def b(self, stage: int, microbatch: int) -> None:
        self._add(B, stage, microbatch)

    def i(self, stage: int, microbatch: int) -> None:
        self._add(I, stage, microbatch)

    def w(self, stage: int, microbatch: int) -> None:
        self._add(W, stage, microbatch)

    def s(self, stage: int, microbatch: int) -> None:
        self._add(S, stage, microbatch)

    def t(self, stage: int, microbatch: int) -> None:
        self._add(T, stage, microbatch)

    def fb(self, f_stage: int, f_microbatch: int, b_stage: int, b_microbatch: int, *, split: bool = False) -> None:
        """An overlapped F&B pair; the backward is a full B, or an I when ``split``."""
        self._add(F, f_stage, f_microbatch, _PAIR_BIT)
        self._add(I if split else B, b_stage, b_microbatch)

    def __len__(self) -> int:
        return len(self.codes)


def _decode(codes: list[int]) -> tuple[np.ndarray, ...]:
    x = np.array(codes, dtype=np.int64)
    kind = (x & 7).astype(np.int8)
    pair = (x & _PAIR_BIT).astype(bool)
    stage = ((x >> 4) & ((1 << _STAGE_BITS) - 1)).astype(np.int32)
    microbatch = (x >> (4 + _STAGE_BITS)).astype(np.int32)
    return kind, stage, microbatch, pair


class Actions:
    """A program's actions (see :attr:`Program.actions`): ``first``, each action's first op;
    ``of_op``, each op's action; ``offsets``, device d's actions are ``offsets[d]:offsets[d + 1]``.
    Read-only, as they are shared by everything that reads the program."""

    __slots__ = ("first", "of_op", "offsets")

    def __init__(self, first: np.ndarray, of_op: np.ndarray, offsets: np.ndarray):
        for array in (first, of_op, offsets):
            array.flags.writeable = False
        self.first, self.of_op, self.offsets = first, of_op, offsets

    def __len__(self) -> int:
        return len(self.first)


@checked_arguments
class Program:
    """Per-device op orders plus the placement they assume.

    Build one with :meth:`from_device_ops` (schedules), :meth:`from_text` /
    :meth:`from_torch` (users), or :meth:`from_arrays`.
    """

    __slots__ = ("kind", "stage", "microbatch", "pair", "offsets", "stages", "microbatches", "placement", "name",
                 "forward_only", "segments", "vocab_barriers", "vocab_synchronous", "_device", "_actions", "comms")

    def __init__(self, kind: ArrayLike, stage: ArrayLike, microbatch: ArrayLike, pair: ArrayLike | None,
                 offsets: ArrayLike, *, stages: int, microbatches: int,
                 placement: Placement | None = None, name: str = "custom", forward_only: bool = False,
                 segments: int = 1, comms: CommOps | None = None, vocab_barriers: int = 1,
                 vocab_synchronous: bool = False):
        self.kind = np.asarray(kind, dtype=np.int8)
        self.stage = np.asarray(stage, dtype=np.int32)
        self.microbatch = np.asarray(microbatch, dtype=np.int32)
        self.pair = np.zeros(len(self.kind), bool) if pair is None else np.asarray(pair, dtype=bool)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.stages = int(stages)
        self.microbatches = int(microbatches)
        self.placement = placement
        self.name = name
        self.forward_only = bool(forward_only)
        self.segments = int(segments)
        self.vocab_barriers = int(vocab_barriers)
        self.vocab_synchronous = bool(vocab_synchronous)
        self._device: np.ndarray | None = None
        self._actions: Actions | None = None
        #: the communication ops (torch's SEND/RECV actions), or None for a compute-only program
        self.comms = comms

    # Construction -----------------------------------------------------------------------

    @classmethod
    def from_device_ops(cls, ops: Sequence[DeviceOps], **meta) -> "Program":
        codes: list[int] = []
        offsets = [0]
        comms: list[tuple[int, int, int, int, int]] = []
        for d, device_ops in enumerate(ops):
            comms.extend((kind, stage, mb, d, len(codes) + before) for before, kind, stage, mb in device_ops.comms)
            codes.extend(device_ops.codes)
            offsets.append(len(codes))
        kind, stage, microbatch, pair = _decode(codes)
        if comms:
            meta["comms"] = CommOps.of_rows(comms)
        return cls(kind, stage, microbatch, pair, offsets, **meta)

    @classmethod
    def from_arrays(cls, per_device: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]], **meta) -> "Program":
        """From (kind, stage, microbatch) arrays per device; used by vectorised schedules."""
        lengths = [len(k) for k, _, _ in per_device]
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        kind = np.concatenate([k for k, _, _ in per_device]) if per_device else np.zeros(0)
        stage = np.concatenate([s for _, s, _ in per_device]) if per_device else np.zeros(0)
        microbatch = np.concatenate([m for _, _, m in per_device]) if per_device else np.zeros(0)
        return cls(kind, stage, microbatch, None, offsets, **meta)

    @classmethod
    def from_text(cls, text: str | Mapping[int, str | Sequence[str]], *, microbatches: int | None = None,
                  stages: int | None = None, placement: Placement | str | None = None,
                  name: str = "custom") -> "Program":
        """Parse torch action strings.

        ``text`` is either a string with one device per line (an optional ``"device 0:"`` or
        ``"rank 0:"`` prefix; actions separated by spaces or commas), or a dict
        ``{device: "0F0 0F1 ..." or ["0F0", "0F1", ...]}``.
        """
        if isinstance(text, str):
            return cls._from_rows(_rows_from_text(text), microbatches, stages, placement, name)
        if isinstance(text, Mapping):
            return cls.from_actions(_rows_from_mapping(text), microbatches=microbatches, stages=stages,
                                  placement=placement, name=name)
        raise ParseError(
            f"from_text expects a string (one device per line) or a dict {{device: actions}}; "
            f"got {type(text).__name__}"
        )

    @classmethod
    def from_actions(cls, actions: Mapping[int, Sequence] | Sequence[Sequence], *, microbatches: int | None = None,
                   stages: int | None = None, placement: Placement | str | None = None,
                   name: str = "custom") -> "Program":
        """From torch's ``pipeline_order``: ``{rank: [action or None, ...]}``.

        Actions may be strings or torch ``_Action`` objects. ``None`` and empty strings
        (torch's idle steps) are dropped. Point-to-point actions (``SEND_F``, ``RECV_F``,
        ``SEND_B``, ``RECV_B``, as in torch's ``pipeline_order_with_comms``) are kept in
        :attr:`comms` and run when communication is simulated as transfers (a config with a
        ``topology``); FSDP's ``UNSHARD``, ``RESHARD`` and ``REDUCE_GRAD`` are dropped (ppviz
        models no sharding).
        """
        if isinstance(actions, (str, bytes)) or not isinstance(actions, Iterable):
            raise ConfigError("actions", actions, "give torch's pipeline_order: a dict {rank: [action, ...]} or a "
                              "list of per-rank action lists (Program.from_text reads a string)")
        if isinstance(actions, Mapping):
            keys = list(actions)
            bad = [k for k in keys if not isinstance(k, (int, np.integer)) or k < 0]
            if bad:
                raise ParseError(f"device keys must be integers 0..p-1; got {bad[0]!r}")
            _check_no_gap(sorted(int(k) for k in keys), "list")
            rows = [actions[d] for d in range(len(keys))]
        else:
            rows = list(actions)
        parsed = []
        for d, row in enumerate(rows):
            if isinstance(row, str):
                row = _split_actions(row)
            elif not isinstance(row, Sequence):
                raise ParseError(f"device {d}: expected a list of actions or a string of them; "
                                 f"got {type(row).__name__} {row!r}", device=d)
            parsed.append(_Row.of_items(row, lambda i, d=d: f"device {d}, position {i}"))
        return cls._from_rows(parsed, microbatches, stages, placement, name)

    @classmethod
    def _from_rows(cls, rows: list["_Row"], microbatches, stages, placement, name) -> "Program":
        """From one :class:`_Row` per device: plain rows in one vectorised pass, the others (and any
        error, with where it was written) action by action."""
        if not rows:
            raise ParseError("the program has no devices; give at least one row of actions")
        columns = []
        comms: list[tuple[int, int, int, int, int]] = []  # (kind, stage, microbatch, device, before)
        base = 0
        for d, row in enumerate(rows):
            plain = _plain_actions(row.plain) if row.plain is not None else None
            if plain is None:
                ops = DeviceOps()
                for position, (item, where) in enumerate(row.located()):
                    _parse_into(ops, item, d, position, where)
                columns.append(_decode(ops.codes))
                comms.extend((kind, stage, mb, d, base + before) for before, kind, stage, mb in ops.comms)
            else:
                columns.append((*plain, np.zeros(len(plain[0]), bool)))
            base += len(columns[-1][0])
        offsets = np.cumsum([0] + [len(c[0]) for c in columns])
        kind, stage, microbatch, pair = (np.concatenate([c[k] for c in columns]) for k in range(4))
        program = cls(kind, stage, microbatch, pair, offsets, stages=1, microbatches=1, name=name,
                      comms=CommOps.of_rows(comms) if comms else None)
        return program._with_inferred_shape(microbatches, stages, placement)

    @classmethod
    def from_torch_csv(cls, path, *, microbatches: int | None = None, stages: int | None = None,
                       placement: Placement | str | None = None, name: str = "custom") -> "Program":
        """Read torch's ``compute_only`` CSV, as ``PipelineScheduleMulti._load_csv`` reads it.

        Row r is rank r (a blank line is a rank with no actions); each cell is an action string,
        an empty cell is an idle step. ``path`` is a file name or an open text file. Errors name
        the rank (device) and the cell (position) as torch's own validation does. A
        ``compute_comms`` file reads too: its SEND/RECV cells become :attr:`comms` (see
        :meth:`from_torch`), its UNSHARD/RESHARD/REDUCE_GRAD cells are dropped.
        """
        if hasattr(path, "read"):
            rows = _csv_rows(path)
        elif isinstance(path, (str, os.PathLike)):
            try:
                with open(os.fspath(path), newline="", encoding="utf-8") as fh:
                    rows = _csv_rows(fh)
            except UnicodeDecodeError as exc:
                raise ParseError(f"the CSV {os.fspath(path)} is not UTF-8 text ({exc.reason} at byte {exc.start})") \
                    from None
        else:
            raise ParseError(f"from_torch_csv expects a file name or an open text file; got {type(path).__name__}")
        # trailing blank lines (and cells) are what editors and writers leave; a blank line or a
        # row of empty cells between ranks is a rank with nothing to do, which no schedule has
        while rows and not any(cell.strip() for cell in rows[-1]):
            rows.pop()
        if not rows:
            where = getattr(path, "name", None) if hasattr(path, "read") else os.fspath(path)
            raise ParseError(f"the CSV {where or '(text)'} holds no rows; torch's format has one row per rank")
        parsed = []
        for line, row in enumerate(rows, 1):
            columns = [c for c, cell in enumerate(row, 1) if cell.strip()]
            if not columns:
                raise ParseError(f"line {line}: rank {line - 1} has no actions; every rank needs at least one "
                                 f"(blank lines are allowed only at the end)", device=line - 1)
            cells = row if len(columns) == len(row) else [row[c - 1] for c in columns]
            parsed.append(_Row.of_items(cells, lambda i, line=line, columns=columns: f"line {line}, cell {columns[i]}"))
        return cls._from_rows(parsed, microbatches, stages, placement, name)

    def to_torch_csv(self, path=None, *, comms: bool = False) -> str | None:
        """torch's ``compute_only`` CSV: one row per device, as ``_dump_csv`` writes it;
        ``comms=True`` gives the ``compute_comms`` form with the SEND/RECV actions. The text,
        or written to ``path`` (a file name or an open file) and None.

        torch's ``_load_csv`` reads the file back into this program's ``pipeline_order`` (pairs as
        ``OVERLAP_F_B`` actions); ppviz programs have no idle steps, so there are no empty cells.
        """
        text = io.StringIO()
        csv.writer(text).writerows(self.device_actions(d, comms=comms) for d in range(self.devices))
        return exported(path, text.getvalue())

    def _with_inferred_shape(self, microbatches, stages, placement) -> "Program":
        if len(self.kind) == 0:
            raise ParseError("the program has no compute actions; write actions such as 0F0 0B0")
        used_stages, used_microbatches = int(self.stage.max()) + 1, int(self.microbatch.max()) + 1
        for name, given, used, most in (("stages", stages, used_stages, MAX_STAGE + 1),
                                        ("microbatches", microbatches, used_microbatches, MAX_MICROBATCH + 1)):
            # bounded above too: the placement and the memory tables are built per stage
            if given is not None and (isinstance(given, bool) or not isinstance(given, (int, np.integer))
                                      or not used <= given <= most):
                raise ProgramError(f"{name}={given!r} is not accepted; the program's actions use {used} {name} "
                                   f"(0..{used - 1}): give a whole number from {used} to {most}, or leave it out "
                                   "to infer it")
        self.stages = used_stages if stages is None else int(stages)
        self.microbatches = used_microbatches if microbatches is None else int(microbatches)
        p = self.devices
        if isinstance(placement, Placement):
            self.placement = placement
        elif placement in (None, "infer"):
            self.placement = self._infer_placement()
        elif placement == "bidirectional":
            self.placement = Placement.bidirectional(p, self.microbatches)
        elif placement in ("contiguous", "loop", "v"):
            if self.stages % p:
                raise ProgramError(f"placement {placement!r} needs stages divisible by devices; got {self.stages} stages on {p} devices")
            v = self.stages // p
            self.placement = {"contiguous": Placement.contiguous, "loop": Placement.loop, "v": Placement.v_shape}[placement](p, v)
        else:
            raise ProgramError(
                f"placement={placement!r} is not accepted; use a Placement, 'infer', 'contiguous', 'loop', 'v' or 'bidirectional'"
            )
        return self

    def _infer_placement(self) -> Placement:
        device = self.device
        seen = np.full(self.stages, -1, dtype=np.int64)
        order = np.argsort(self.stage, kind="stable")
        stages_sorted = self.stage[order]
        first = np.ones(len(order), bool)
        first[1:] = stages_sorted[1:] != stages_sorted[:-1]
        seen[stages_sorted[first]] = device[order[first]]
        clash = device[order] != seen[stages_sorted]
        if clash.any():
            k = order[np.argmax(clash)]
            s = int(self.stage[k])
            d, pos = self.locate(k)
            p, S = self.devices, self.stages
            # the bidirectional schedules run two replicas of the model, one down and one up the
            # devices, so one stage number lives on two devices; only their placement says which
            if S == p:
                two_way = "placement='bidirectional' (DualPipe and Chimera: one stage of each replica per device)"
            elif S == 2 * p:
                two_way = (f"placement=ppviz.schedules.bitpipe.bidirectional_v({p}, {self.microbatches}) (BitPipe: "
                           f"two stages of each replica per device)")
            else:
                two_way = "a ppviz.Placement with a reverse_device for the second replica"
            raise ProgramError(
                f"device {d}, position {pos} ({self.action_at(k)}): stage {s} already runs on device {int(seen[s])}; "
                f"a stage lives on one device, unless the schedule runs two replicas of the model in opposite "
                f"directions (DualPipe, Chimera, BitPipe): for this program's {S} stage{'s' * (S != 1)} on {p} devices "
                f"pass {two_way}",
                device=d, position=pos,
            )
        missing = np.flatnonzero(seen < 0)
        if len(missing):
            raise ProgramError(
                f"stage {int(missing[0])} has no ops on any device; stages must be numbered 0..{self.stages - 1} without gaps"
            )
        return Placement.from_mapping(self.devices, seen)

    # Queries ----------------------------------------------------------------------------

    @property
    def devices(self) -> int:
        return len(self.offsets) - 1

    @property
    def device(self) -> np.ndarray:
        """Device of each op (derived from the offsets)."""
        if self._device is None:
            self._device = np.repeat(np.arange(self.devices, dtype=np.int32), np.diff(self.offsets))
        return self._device

    @property
    def actions(self) -> "Actions":
        """The program's actions, what a device runs one at a time: an F&B pair is one, any other
        op is one (computed once; the engines, the lowering and offload all read them)."""
        if self._actions is None:
            second = np.zeros(len(self.kind), bool)
            second[1:] = self.pair[:-1]
            first = np.flatnonzero(~second)
            of_op = np.cumsum(~second) - 1
            self._actions = Actions(first, of_op, np.searchsorted(first, self.offsets))
        return self._actions

    @property
    def whole_microbatches(self) -> int:
        """Microbatches before any split into sequence segments (``microbatches // segments``)."""
        return self.microbatches // self.segments

    @property
    def stages_per_device(self) -> float:
        return self.stages / self.devices

    def __len__(self) -> int:
        return len(self.kind)

    def locate(self, index: int) -> tuple[int, int]:
        """(device, position) of flat op ``index``, the position counting actions as torch and
        the text form do: an F&B pair is one action, and both its ops are at its position."""
        d = int(np.searchsorted(self.offsets, index, side="right") - 1)
        lo = int(self.offsets[d])
        pairs_before = int(np.count_nonzero(self.pair[lo:index]))
        return d, int(index - lo - pairs_before)

    def action_at(self, index: int) -> str:
        """torch action string of flat op ``index`` (a pair prints as its overlapped form)."""
        if self.pair[index]:
            return f"({action(self.kind[index], self.stage[index], self.microbatch[index])};" \
                   f"{action(self.kind[index + 1], self.stage[index + 1], self.microbatch[index + 1])})OVERLAP_F_B"
        return action(int(self.kind[index]), int(self.stage[index]), int(self.microbatch[index]))

    def device_actions(self, device: int, *, comms: bool = False) -> list[str]:
        """One device's actions in torch's string format; a pair is one entry. ``comms=True``
        interleaves the program's communication ops (torch's ``pipeline_order_with_comms``); a
        compute-only program has none (a simulation with a ``topology`` adds them: its result's
        program has them)."""
        lo, hi = int(self.offsets[device]), int(self.offsets[device + 1])
        mine: list[int] = []
        ops = self.comms if comms else None
        if ops is not None:
            index, offsets = ops.ordered()
            if device + 1 < len(offsets):
                mine = index[offsets[device]:offsets[device + 1]].tolist()
        before = ops.before if ops is not None and mine else np.empty(0, np.int64)
        out = []
        i, c = lo, 0
        while i < hi or c < len(mine):
            if ops is not None and c < len(mine) and before[mine[c]] <= i:
                out.append(ops.action_at(mine[c]))
                c += 1
                continue
            out.append(self.action_at(i))
            i += 2 if self.pair[i] else 1
        return out

    def to_actions(self, *, comms: bool = False) -> dict[int, list[str]]:
        """``{device: ["0F0", "0F1", ...]}`` in torch's action-string format (its ``pipeline_order``);
        ``comms=True`` adds the communication ops (its ``pipeline_order_with_comms``)."""
        return {d: self.device_actions(d, comms=comms) for d in range(self.devices)}

    def to_text(self, path=None, *, comms: bool = False) -> str | None:
        """The program as text, one line per device of torch's action strings, readable back by
        :meth:`from_text`; written to ``path`` when one is given (then None is returned)."""
        return exported(path, "\n".join(f"device {d}: " + " ".join(acts)
                                        for d, acts in self.to_actions(comms=comms).items()))

    def without_comms(self) -> "Program":
        """This program's compute ops alone (the arrays are shared, not copied)."""
        return Program(self.kind, self.stage, self.microbatch, self.pair, self.offsets, stages=self.stages,
                       microbatches=self.microbatches, placement=self.placement, name=self.name,
                       forward_only=self.forward_only, segments=self.segments, vocab_barriers=self.vocab_barriers,
                       vocab_synchronous=self.vocab_synchronous)

    def __eq__(self, other) -> bool:
        """Equal compute orders: the same ops in the same order on every device. Communication ops
        are not compared (compare ``to_actions(comms=True)`` for that): they are how a program's
        data moves, not what it computes, and a bare ``comm`` simulation does not run them."""
        if not isinstance(other, Program):
            return NotImplemented
        return (np.array_equal(self.offsets, other.offsets) and np.array_equal(self.kind, other.kind)
                and np.array_equal(self.stage, other.stage) and np.array_equal(self.microbatch, other.microbatch)
                and np.array_equal(self.pair, other.pair) and self.forward_only == other.forward_only
                and self.segments == other.segments and self.vocab_barriers == other.vocab_barriers
                and self.vocab_synchronous == other.vocab_synchronous)

    __hash__ = None  # type: ignore[assignment]  # unhashable (mutable arrays), as typeshed marks list

    def __repr__(self) -> str:
        return (f"<Program {self.name!r}: {self.devices} devices, {self.stages} stages, "
                f"{self.microbatches} microbatches, {len(self)} ops>")

    # Validation -------------------------------------------------------------------------

    def validate(self) -> "Program":
        """Check the rules torch's ``_validate_schedule`` checks, and say exactly what is wrong.

        Every (stage, microbatch) has one F and either one B or one I and one W, on the device
        the placement assigns; on that device F comes before B/I and I before W. A
        ``forward_only`` program has the F's and no backward; a program of ``segments`` k > 1
        also keeps each microbatch's segments in causal order (module docstring). Returns self.
        """
        n = len(self)
        S, m = self.stages, self.microbatches
        if n == 0:
            raise ProgramError("the program has no ops")
        if self.segments < 1 or m % self.segments:
            raise ProgramError(f"segments={self.segments} does not divide the {m} microbatch indices; a program of "
                               f"k segments numbers m·k indices (segment i mod k of microbatch i // k)")
        self._check_pairs()
        bad = (self.stage < 0) | (self.stage >= S) | (self.microbatch < 0) | (self.microbatch >= m)
        if bad.any():
            k = int(np.argmax(bad))
            d, pos = self.locate(k)
            raise ProgramError(
                f"device {d}, position {pos} ({self.action_at(k)}): stage must be in 0..{S - 1} "
                f"and microbatch in 0..{m - 1}", device=d, position=pos)
        if (1 if self.forward_only else 2) * S * m > n and S * m > max(4 * n, 1 << 20):
            # some (stage, microbatch) cannot have both an F and a backward: name one without
            # allocating S·m counters (a typo such as 0F99999999 would ask for gigabytes)
            for s in range(S):
                have = np.unique(self.microbatch[(self.stage == s) & (self.kind == F)])
                gap = np.flatnonzero(have != np.arange(len(have)))
                missing = int(gap[0]) if len(gap) else len(have)
                if missing < m:
                    raise ProgramError(
                        f"stage {s} microbatch {missing} is never forwarded: no {action(F, s, missing)} on any device; "
                        f"the actions name stages 0..{S - 1} and microbatches 0..{m - 1}, so every one of those "
                        f"{S}×{m} pairs needs an F{'' if self.forward_only else ' and a backward'} "
                        f"({(1 if self.forward_only else 2) * S * m} ops; the program has {n})")
        key = self.stage.astype(np.int64) * m + self.microbatch
        counts = np.bincount(self.kind.astype(np.int64) * (S * m) + key,
                             minlength=len(KINDS) * S * m).reshape(len(KINDS), S * m)
        for kind in range(len(KINDS)):
            dup = counts[kind] > 1
            if dup.any():
                k0 = int(np.argmax(dup))
                hits = np.flatnonzero((key == k0) & (self.kind == kind))
                d1, p1 = self.locate(int(hits[0]))
                d2, p2 = self.locate(int(hits[1]))
                raise ProgramError(
                    f"device {d2}, position {p2} ({self.action_at(int(hits[1]))}): {KINDS[kind]} of stage {k0 // m} "
                    f"microbatch {k0 % m} runs twice (first at device {d1}, position {p1}); each op runs exactly once",
                    device=d2, position=p2)
        f_, b_, i_, w_ = counts[:4]
        missing_f = f_ == 0
        if missing_f.any():
            k0 = int(np.argmax(missing_f))
            where, located = self._key_location(key, k0)
            raise ProgramError(
                f"{where}stage {k0 // m} microbatch {k0 % m} is never forwarded: "
                f"no {k0 // m}F{k0 % m} on any device; every (stage, microbatch) needs one F", **located)
        if self.forward_only:
            backward = self.kind != F
            if backward.any():
                k = int(np.argmax(backward))
                d, pos = self.locate(k)
                raise ProgramError(
                    f"device {d}, position {pos} ({self.action_at(k)}): a forward-only (inference) program has no "
                    f"backward ops; remove it, or build a training program (forward_only=False)", device=d, position=pos)
            self._check_placement()
            self._check_local_order(key)
            return self
        both = (b_ > 0) & ((i_ > 0) | (w_ > 0))
        if both.any():
            k0 = int(np.argmax(both))
            where, located = self._key_location(key, k0, B)
            raise ProgramError(
                f"{where}stage {k0 // m} microbatch {k0 % m} has both a full backward B "
                f"and a split I/W; use one B or one I plus one W", **located)
        i_without_w = (i_ > 0) & (w_ == 0)
        if i_without_w.any():
            k0 = int(np.argmax(i_without_w))
            k = int(np.flatnonzero((key == k0) & (self.kind == I))[0])
            d, pos = self.locate(k)
            raise ProgramError(
                f"device {d}, position {pos} ({self.action_at(k)}): W is missing for this I; "
                f"add {k0 // m}W{k0 % m} after it on device {d}", device=d, position=pos)
        w_without_i = (w_ > 0) & (i_ == 0)
        if w_without_i.any():
            k0 = int(np.argmax(w_without_i))
            k = int(np.flatnonzero((key == k0) & (self.kind == W))[0])
            d, pos = self.locate(k)
            raise ProgramError(
                f"device {d}, position {pos} ({self.action_at(k)}): W without an I for stage {k0 // m} "
                f"microbatch {k0 % m}; split backwards need {k0 // m}I{k0 % m} before the W", device=d, position=pos)
        no_backward = (b_ == 0) & (i_ == 0)
        if no_backward.any():
            k0 = int(np.argmax(no_backward))
            where, located = self._key_location(key, k0)
            raise ProgramError(
                f"{where}stage {k0 // m} microbatch {k0 % m} is never backwarded: "
                f"add {k0 // m}B{k0 % m} (or {k0 // m}I{k0 % m} and {k0 // m}W{k0 % m})", **located)
        self._check_placement()
        self._check_local_order(key)
        self._check_vocab(counts[VOCAB_KINDS[0]], counts[VOCAB_KINDS[1]])
        return self

    def _check_vocab(self, s_: np.ndarray, t_: np.ndarray) -> None:
        """The vocabulary passes, where a program has any: every device runs one S and, after it,
        one T of every microbatch, named by the device's lowest stage (its vocabulary shard)."""
        if self.vocab_barriers not in (1, 2):
            raise ProgramError(f"vocab_barriers={self.vocab_barriers!r} is not accepted; give 1 (one all-reduce after "
                               f"S, the paper's Algorithm 2) or 2 (another after T, Algorithm 1)")
        is_s, is_t = self.kind == VOCAB_KINDS[0], self.kind == VOCAB_KINDS[1]
        has = is_s | is_t
        if not has.any():
            return
        m = self.microbatches
        device = self.device
        shard = np.full(self.devices, self.stages, np.int64)
        np.minimum.at(shard, device, self.stage.astype(np.int64))
        wrong = has & (self.stage != shard[device])
        if wrong.any():
            k = int(np.argmax(wrong))
            d, pos = self.locate(k)
            raise ProgramError(
                f"device {d}, position {pos} ({self.action_at(k)}): a vocabulary pass is named by the lowest stage of "
                f"the device that runs it (its shard of the vocabulary): write {KINDS[self.kind[k]]} with stage "
                f"{int(shard[d])}", device=d, position=pos)
        need = np.zeros(self.stages * m, bool)
        need[(shard[:, None] * m + np.arange(m)).ravel()] = True
        for kind, counts in zip(VOCAB_KINDS, (s_, t_)):
            missing = need & (counts == 0)
            if missing.any():
                k0 = int(np.argmax(missing))
                raise ProgramError(
                    f"stage {k0 // m} microbatch {k0 % m} has no {action(kind, k0 // m, k0 % m)}: with Vocabulary "
                    f"Parallelism every device runs an S and a T of every microbatch (its shard of the output "
                    f"layer)", device=int(np.flatnonzero(shard == k0 // m)[0]))
        key = self.stage.astype(np.int64) * m + self.microbatch
        idx = np.arange(len(self), dtype=np.int64)
        pos_s = np.full(self.stages * m, -1, np.int64)
        pos_t = np.full(self.stages * m, -1, np.int64)
        pos_s[key[is_s]] = idx[is_s]
        pos_t[key[is_t]] = idx[is_t]
        early = (pos_t >= 0) & (pos_t < pos_s)
        if early.any():
            k0 = int(np.argmax(early))
            d, pos = self.locate(int(pos_t[k0]))
            raise ProgramError(
                f"device {d}, position {pos} ({self.action_at(int(pos_t[k0]))}): T runs before its S "
                f"{action(VOCAB_KINDS[0], k0 // m, k0 % m)}; S must come first (T needs the softmax statistics the "
                f"all-reduce after S gives)", device=d, position=pos)

    def _key_location(self, key: np.ndarray, k0: int, kind: int | None = None) -> tuple[str, dict]:
        """Where the first op of (stage, microbatch) ``k0`` is: a message prefix and ProgramError's keywords."""
        hits = key == k0
        if kind is not None:
            hits &= self.kind == kind
        found = np.flatnonzero(hits)
        if not len(found):
            return "", {}
        d, pos = self.locate(int(found[0]))
        return f"device {d}, position {pos} ({self.action_at(int(found[0]))}): ", {"device": d, "position": pos}

    def _check_pairs(self) -> None:
        starts = np.flatnonzero(self.pair)
        if len(starts) == 0:
            return
        seconds = starts + 1
        ok = seconds < len(self)
        ok[ok] &= np.searchsorted(self.offsets, starts[ok], side="right") == np.searchsorted(self.offsets, seconds[ok], side="right")
        if not ok.all():
            k = int(starts[np.argmin(ok)])
            d, pos = self.locate(k)
            raise ProgramError(f"device {d}, position {pos}: an F&B pair needs two ops on the same device", device=d, position=pos)
        if self.pair[seconds].any():
            k = int(seconds[np.argmax(self.pair[seconds])])
            d, pos = self.locate(k)
            raise ProgramError(f"device {d}, position {pos}: F&B pairs cannot nest", device=d, position=pos)
        kinds_ok = (self.kind[starts] == F) & np.isin(self.kind[seconds], (B, I))
        if not kinds_ok.all():
            k = int(starts[np.argmin(kinds_ok)])
            d, pos = self.locate(k)
            raise ProgramError(
                f"device {d}, position {pos} ({self.action_at(k)}): an overlapped pair is one F and one B or I, "
                f"written (sFm;sBm)OVERLAP_F_B", device=d, position=pos)

    def _check_placement(self) -> None:
        if self.placement is None:
            return
        pl = self.placement
        if pl.devices != self.devices or pl.stages != self.stages:
            raise ProgramError(
                f"the placement is for {pl.devices} devices and {pl.stages} stages but the program has "
                f"{self.devices} devices and {self.stages} stages")
        expected = pl.device_of(self.stage, self.microbatch)
        wrong = expected != self.device
        if wrong.any():
            k = int(np.argmax(wrong))
            d, pos = self.locate(k)
            raise ProgramError(
                f"device {d}, position {pos} ({self.action_at(k)}): stage {int(self.stage[k])} "
                f"{'for this microbatch ' if pl.reverse_device is not None else ''}belongs on device {int(expected[k])} "
                f"under the {pl.style} placement", device=d, position=pos)

    def _check_local_order(self, key: np.ndarray) -> None:
        size = self.stages * self.microbatches
        idx = np.arange(len(self), dtype=np.int64)
        pos_f = np.full(size, -1, np.int64)
        pos_g = np.full(size, -1, np.int64)
        pos_w = np.full(size, -1, np.int64)
        is_f = self.kind == F
        is_g = (self.kind == B) | (self.kind == I)
        is_w = self.kind == W
        pos_f[key[is_f]] = idx[is_f]
        pos_g[key[is_g]] = idx[is_g]
        pos_w[key[is_w]] = idx[is_w]
        early = (pos_g >= 0) & (pos_g < pos_f)  # forward-only programs have no backward to order
        if early.any():
            k0 = int(np.argmax(early))
            k = int(pos_g[k0])
            d, pos = self.locate(k)
            fd, fpos = self.locate(int(pos_f[k0]))
            raise ProgramError(
                f"device {d}, position {pos} ({self.action_at(k)}): the backward runs before its forward "
                f"{k0 // self.microbatches}F{k0 % self.microbatches} (device {fd}, position {fpos}); "
                f"F must come first", device=d, position=pos)
        has_w = pos_w >= 0
        early_w = has_w & (pos_w < pos_g)
        if early_w.any():
            k0 = int(np.argmax(early_w))
            k = int(pos_w[k0])
            d, pos = self.locate(k)
            raise ProgramError(
                f"device {d}, position {pos} ({self.action_at(k)}): W runs before its I "
                f"{k0 // self.microbatches}I{k0 % self.microbatches}; I must come first", device=d, position=pos)
        if self.segments > 1:
            self._check_segment_order(pos_f, pos_g)

    def _check_segment_order(self, pos_f: np.ndarray, pos_g: np.ndarray) -> None:
        """Causal attention (Seq1F1B): on each stage, segment j's forward needs segment j−1's keys
        and values, and segment j's backward needs segment j+1's gradient of them. Both are local
        to the stage, so the engine needs no new edge: the two ops sit on one device, in order."""
        k, m = self.segments, self.microbatches
        later = np.flatnonzero(np.arange(self.stages * m) % k)  # keys (stage, index) of segments j >= 1
        earlier = later - 1
        rules = [("forward", pos_f[earlier], pos_f[later], "after segment {j_1}'s forward")]
        if not self.forward_only:
            rules.append(("backward", pos_g[later], pos_g[earlier], "after segment {j}'s backward"))
        device = self.device
        for what, first, then, rule in rules:
            wrong = (device[first] != device[then]) | (then < first)
            if not wrong.any():
                continue
            bad = int(np.argmax(wrong))
            s, i = int(later[bad]) // m, int(later[bad]) % m
            j = i % k
            op = int(then[bad])
            d, pos = self.locate(op)
            segment = j if what == "forward" else j - 1
            raise ProgramError(
                f"device {d}, position {pos} ({self.action_at(op)}): the {what} of segment {segment} of microbatch "
                f"{i // k} on stage {s} must run on the same device and "
                + rule.format(j=j, j_1=j - 1)
                + f" (causal attention; index = microbatch·{k} + segment)", device=d, position=pos)


# Parsing helpers -----------------------------------------------------------------------

_ACTION_RE = re.compile(r"^(\d+)([FBIWST])(\d+)$")
_PAIR_RE = re.compile(r"^\((\d+)F(\d+);(\d+)([BI])(\d+)\)OVERLAP_F_B$")
_P2P_RE = re.compile(r"^(\d+)(SEND_F|RECV_F|SEND_B|RECV_B)(\d+)$")
#: FSDP's actions in torch's lowered programs: ppviz models no sharding, so they are read and dropped
_FSDP_RE = re.compile(r"^\d+(UNSHARD|RESHARD|REDUCE_GRAD)\d*$")
#: a token of the text form: a pair contains ';' but never spaces or commas
_TOKEN_RE = re.compile(r"[^\s,]+")
_PREFIX_RE = re.compile(r"^\s*(?:device|rank|dev)?\s*(\d+)\s*:\s*", re.IGNORECASE)


def _split_actions(row: str) -> list[str]:
    # a pair contains ';' but never spaces or commas, so splitting on those is safe
    return [tok for tok in re.split(r"[\s,]+", row.strip()) if tok]


def _rows_from_text(text: str) -> list["_Row"]:
    """One row per device, its actions located at "line L, column C" as an editor numbers them
    (both from 1)."""
    rows: dict[int, _Row] = {}
    first_line: dict[int, int] = {}
    next_device = 0
    for line_number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _PREFIX_RE.match(line)
        start = 0
        if match:
            device = int(match.group(1))
            start = match.end()
        else:
            device = next_device
        if device in rows:
            raise ParseError(f"line {line_number}: device {device} appears twice (first on line "
                             f"{first_line[device]}); give each device one line")
        rows[device] = _Row(line[start:] + " " if _PLAIN_LINE.fullmatch(line, start) else None,
                            lambda line=line, start=start, n=line_number: [
                                (m.group(0), f"line {n}, column {m.start() + 1}") for m in _TOKEN_RE.finditer(line, start)])
        first_line[device] = line_number
        next_device = device + 1
    if not rows:
        raise ParseError("the text holds no devices; write one line of actions per device, e.g. '0F0 0F1 0B0 0B1'")
    _check_no_gap(sorted(rows), "line")
    return [rows[d] for d in range(len(rows))]


class _Row:
    """One device's actions as written. ``plain`` is their text when it holds nothing but plain
    actions (``0F1``) between separators, for :func:`_plain_actions`, else None; ``located()``
    gives each action with where it was written, for the action-by-action parse and its errors."""

    __slots__ = ("plain", "located")

    def __init__(self, plain: str | None, located):
        self.plain = plain
        self.located = located

    @classmethod
    def of_items(cls, items: Sequence, where) -> "_Row":
        """A row of separate actions; ``where(i)`` names the i-th."""
        try:
            joined = "\n".join(items)
        except TypeError:  # None (an idle step), a torch _Action, or something to refuse by name
            joined = None
        # an item with a line break inside would pass for two
        plain = joined + "\n" if joined is not None and _PLAIN_ITEMS.fullmatch(joined) and \
            joined.count("\n") == len(items) - 1 else None
        return cls(plain, lambda: [(item, where(i)) for i, item in enumerate(items)])


# the plain actions _plain_actions reads at once: digits only (\d would take other scripts' digits),
# and at most as many as the index limits allow (longer ones go the slow way, to be refused)
_PLAIN = r"[0-9]{1,7}[FBIWST][0-9]{1,10}"
_PLAIN_ITEMS = re.compile(rf"(?:{_PLAIN}\n)*{_PLAIN}")
_PLAIN_LINE = re.compile(rf"[ \t,]*(?:{_PLAIN}[ \t,]+)*(?:{_PLAIN})?")
_KIND_OF_BYTE = np.full(256, -1, np.int8)
_KIND_OF_BYTE[[ord(k) for k in KINDS]] = range(len(KINDS))
_POWERS_OF_TEN = 10 ** np.arange(10, dtype=np.int64)


def _plain_actions(text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(kind, stage, microbatch) of every action in ``text``, plain actions between non-digit
    separators and nothing else (as ``_Row.plain`` is), all at once; None if an index is beyond
    what ppviz holds, for the action-by-action parse to refuse by position."""
    code = np.frombuffer(text.encode("ascii"), np.uint8)
    kind = _KIND_OF_BYTE[code]
    digit = (code >= ord("0")) & (code <= ord("9"))
    edge = np.diff(digit.view(np.int8), prepend=0, append=0)
    first, end = np.flatnonzero(edge == 1), np.flatnonzero(edge == -1)
    # each action is two runs of digits, its stage and its microbatch: their values, digit by digit
    length = end - first
    value = np.zeros(len(first), np.int64)
    for k in range(int(length.max(initial=0))):
        has = length > k
        value[has] += (code[end[has] - 1 - k] - ord("0")).astype(np.int64) * _POWERS_OF_TEN[k]
    stage, microbatch = value[0::2], value[1::2]
    if (stage > MAX_STAGE).any() or (microbatch > MAX_MICROBATCH).any():
        return None
    return kind[kind >= 0], stage.astype(np.int32), microbatch.astype(np.int32)


def _csv_rows(lines) -> list[list[str]]:
    """The rows of a CSV; csv's own error (a carriage return inside a line of a text file that
    does not end lines there) becomes a ParseError naming the line and column."""
    last = ""

    def remembered():
        nonlocal last
        for last in lines:
            yield last

    reader = csv.reader(remembered())
    try:
        return list(reader)
    except csv.Error as exc:
        column = last.find("\r") + 1
        if 0 < column < len(last.rstrip("\r\n")) + 1:
            raise ParseError(f"line {reader.line_num}, column {column}: a carriage return inside the line; torch's "
                             f"CSV has one rank per line (end lines with \\n or \\r\\n)") from None
        raise ParseError(f"line {reader.line_num}: {exc}") from None


def _check_no_gap(keys: list[int], what: str) -> None:
    """Devices must be 0..p−1; the first missing one is named (without building range(p))."""
    for expected, key in enumerate(keys):
        if key != expected:
            raise ParseError(f"device {expected} has no row; give every device 0..{keys[-1]} a (possibly empty) "
                             f"{what}")


def _rows_from_mapping(mapping: Mapping) -> list:
    try:
        keys = sorted(int(k) for k in mapping)
    except (TypeError, ValueError):
        raise ParseError(f"device keys must be integers; got {list(mapping)!r}") from None
    lookup = {int(k): v for k, v in mapping.items()}
    if keys and keys[0] < 0:
        raise ParseError(f"device keys must be integers 0..p-1; got {keys[0]!r}")
    _check_no_gap(keys, "row")
    return [_split_actions(lookup[d]) if isinstance(lookup[d], str) else list(lookup[d]) for d in range(len(keys))]


def _check_indices(token: str, device: int, position: int, where: str, stages, microbatches) -> None:
    # compared as text first: int() of a thousand digits is slow, and such a token is refused anyway
    if any(len(s) > 7 or int(s) > MAX_STAGE for s in stages) or \
            any(len(mb) > 10 or int(mb) > MAX_MICROBATCH for mb in microbatches):
        raise ParseError(
            f"{where}: {_shown(token)} has an index ppviz cannot hold; stages must be at most {MAX_STAGE} and "
            f"microbatches at most {MAX_MICROBATCH}", device=device, position=position)


def _shown(token) -> str:
    """A token as an error message shows it: its repr (quoted, escapes visible), long ones cut."""
    text = repr(token)
    return text if len(text) <= 60 else text[:57] + "…'"


def _parse_into(ops: DeviceOps, item, device: int, position: int, where: str) -> None:
    if item is None:
        return
    if not isinstance(item, str):
        if hasattr(item, "computation_type") and hasattr(item, "stage_index"):
            item = str(item)  # a torch _Action prints as its action string
        else:
            raise ParseError(f"{where}: expected an action string such as '0F1'; "
                             f"got {type(item).__name__} {_shown(item)}", device=device, position=position)
    token = item.strip()
    if not token:
        return
    match = _ACTION_RE.match(token)
    if match:
        stage, kind, microbatch = match.groups()
        _check_indices(token, device, position, where, (stage,), (microbatch,))
        ops._add(KINDS.index(kind), int(stage), int(microbatch))
        return
    match = _PAIR_RE.match(token)
    if match:
        fs, fm, bs, bk, bm = match.groups()
        _check_indices(token, device, position, where, (fs, bs), (fm, bm))
        ops.fb(int(fs), int(fm), int(bs), int(bm), split=bk == "I")
        return
    match = _P2P_RE.match(token)
    if match:
        stage, kind, microbatch = match.groups()
        _check_indices(token, device, position, where, (stage,), (microbatch,))
        ops.comms.append((len(ops.codes), COMM_KINDS.index(kind), int(stage), int(microbatch)))
        return
    if _FSDP_RE.match(token):
        return
    raise ParseError(
        f"{where}: {_shown(token)} is not an action; write [stage][F|B|I|W|S|T][microbatch] "
        f"such as '0F1', '3I0' or '2S4', or a pair '(0F7;7B3)OVERLAP_F_B'", device=device, position=position)
