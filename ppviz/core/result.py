"""``ppviz.Result``: the simulated timeline with its metrics, memory curves and closed forms."""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

import numpy as np

from .columns import Columns
from .config import Config
from .paths import exported
from .step import Tails, tails
from .topology import SECONDS
from .errors import ConfigError, checked_arguments
from .closed_form import caveat
from .memory import MemoryCurves, activation_curves, static_memory
from .numbers import number, share, size
from .offload import HostCopies
from .offload import curves as offload_curves
from .program import KINDS, Program
from .topology import Offload
from .topology import describe as describe_topology
from .transfers import Transfers

_KIND_CHARS = np.array(list(KINDS))


@dataclass(frozen=True)
class Ops(Columns):
    """The timeline as equal-length columns, one row per op (a pair is its two ops, same times)."""

    device: np.ndarray
    stage: np.ndarray
    microbatch: np.ndarray
    kind: np.ndarray  # "F", "B", "I", "W"
    start: np.ndarray
    end: np.ndarray
    pair: np.ndarray  # True on both ops of an F&B pair
    waited_for: np.ndarray  # index of the op whose result this op waited for, −1 if none

    COLUMNS = ("device", "stage", "microbatch", "kind", "start", "end")


#: the order a stage's own settings are named in
_STAGE_KEYS = ("f", "b", "w", "recompute", "activation", "params", "gap_f", "gap_b", "gap_w", "warmup_f", "warmup_b",
               "warmup_w")


#: the settings that are amounts of memory: in GiB where the config gives an activation's bytes
_MEMORY_KEYS = ("activation", "recompute_activation", "params")


def _setting(config, key: str, value) -> str:
    """``key=value`` as a summary names a setting: a number as people read it, an amount of memory
    in GiB where the config gives an activation's bytes (``params=33.5 GiB``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{key}={value}"
    if key in _MEMORY_KEYS and config.activation_bytes is not None:
        return f"{key}={number(value * config.activation_bytes / 2**30, 'GiB')}"
    return f"{key}={number(value)}"


def _settings_text(config) -> str:
    """The cost and memory settings a summary's first line leaves out, where they are not the
    defaults: ``fb=2.5 w_share=0.5 recompute=full; stage 3 f=2`` (empty when all are). Stages
    next to each other with the same settings are named together (``stages 1–14 f=75.6 ...``),
    and a stage's recompute time only under recompute (a model's config gives every stage all
    of its costs)."""
    defaults = {f.name: f.default for f in dataclasses.fields(config)}
    words = [_setting(config, name, getattr(config, name))
             for name in ("fb", "activation", "w_share", "recompute", "recompute_cost", "recompute_activation")
             if getattr(config, name) != defaults[name]]
    groups: list[list] = []  # [first stage, last stage, their settings]
    for stage, over in sorted(config.stage_costs.items()):
        text = " ".join(_setting(config, key, over[key]) for key in _STAGE_KEYS
                        if key in over and (key != "recompute" or config.recompute is not None))
        if groups and groups[-1][1] == stage - 1 and groups[-1][2] == text:
            groups[-1][1] = stage
        elif text:
            groups.append([stage, stage, text])
    stages = [f"stage {first} {text}" if first == last else f"stages {first}–{last} {text}"
              for first, last, text in groups]
    return "; ".join(part for part in (" ".join(words), "; ".join(stages)) if part)


def unit_suffix(time_unit: str | None) -> str:
    """What follows a time: its unit (`` ms``), or nothing for a unitless run."""
    return f" {time_unit}" if time_unit else ""


def number_text(x: float) -> str:
    """A number as one reads it: a whole value whole (1234, not 1.23e+03), others to three
    significant digits but never fewer than their whole part needs (3.94, 1234.5)."""
    x = float(x)
    if x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    whole = len(str(int(abs(x)))) if math.isfinite(x) and abs(x) >= 1 else 0
    return f"{x:.{min(15, max(3, whole + 1))}g}"


#: a summary lists a value per device up to this many devices; beyond, their maximum and minimum
LISTED_DEVICES = 16


def per_device_text(values, unit: str | None = None) -> str:
    """Values per device (in ``unit``, said once after a list): all of them for a few devices, else
    where the largest and smallest are (a list of hundreds is unreadable in a terminal)."""
    values = [float(x) for x in values]
    if len(values) <= LISTED_DEVICES:
        return " ".join(number(x) for x in values) + (f" {unit}" if unit else "")
    hi, lo = int(np.argmax(values)), int(np.argmin(values))
    if values[hi] == values[lo]:
        return f"{number(values[hi], unit)} on each of {len(values)} devices"
    return (f"max {number(values[hi], unit)} (device {hi}), min {number(values[lo], unit)} (device {lo}) "
            f"of {len(values)} devices")


def traffic(config: Config, stages: int) -> np.ndarray:
    """Per stage (rows) and op kind (columns F, B, I, W), the time one op spends in tensor- and
    expert-parallel collectives, from the stages' costs (``Config.from_model`` gives them; zeros
    otherwise): F its ``f_comm``, I its ``b_comm``, W its ``w_comm``, an unsplit B both, and a
    backward under recompute its recomputed forward's ``recompute_comm`` too."""
    costs = config.stage_costs or {}

    def column(key: str) -> np.ndarray:
        return np.array([float(costs.get(s, {}).get(key, 0.0)) for s in range(stages)])

    f, b, w = column("f_comm"), column("b_comm"), column("w_comm")
    r = column("recompute_comm") if config.recompute is not None else np.zeros(stages)
    return np.stack([f, b + w + r, b + r, w], axis=1)


@checked_arguments
class Result:
    """What :func:`ppviz.simulate` returns.

    Attributes: ``config``, ``program``, ``ops`` (the timeline), ``makespan``, ``busy`` and
    ``idle`` (per device), ``bubble_fraction`` (idle / (p × makespan)), ``bubble_rate``
    ((makespan − ideal) / ideal), ``ideal`` (the busiest device's compute; m·(f+b+w) for
    uniform costs), ``peak_activation``, ``static_memory`` and ``peak_memory`` (their sum), one
    value per device in activation units, ``memory`` (curves over time) and ``closed_form``
    (the published figures for this schedule, or None). ``dependencies`` gives, per op, the
    index of the op it waits for (−1 for none), as the simulator computed it.

    A forward-only (inference) program also has ``time_to_first_output`` (when the last stage
    finishes its first microbatch) and ``throughput`` (steady-state microbatches per unit of
    time: m − 1 outputs over the time from the first output to the last; None for m = 1); both
    are None for training programs. Its bubble is the fill and drain of this one batch: the
    idle time a stream of batches through a full pipeline would not pay, which is why latency
    and throughput, not the bubble, describe inference.
    With ``Config.memory_capacity``: ``fits`` (per device, peak memory <= capacity), ``excess``
    (per device, how far the peak exceeds the capacity, 0 where it fits; activation units,
    ``excess_bytes`` in bytes) and ``out_of_memory`` (some device does not fit); without a
    capacity ``fits`` and ``excess`` are None and ``out_of_memory`` is False.

    Communication: ``transfers`` (a :class:`~ppviz.core.transfers.Transfers` table, empty unless
    the config has a ``topology``), and per device ``exposed_comm`` (the idle time spent waiting
    for communication: a latency or transfer after its data was computed, a link busy with other
    transfers, a blocking send or receive) and ``idle_compute`` (waiting for other devices'
    compute, or done early), which sum to ``idle``.

    Activation offload (``Config.offload``): ``host_copies`` (a
    :class:`~ppviz.core.offload.HostCopies` table of the offloads and reloads, empty without
    offload); ``memory`` and the peaks count an offloaded share as freed from its offload's end
    to its reload's start; a backward waiting for its reload counts in ``exposed_comm``.
    """

    def __init__(self, config: Config, program: Program, start: np.ndarray, end: np.ndarray, dep: np.ndarray,
                 cost: np.ndarray, *, transfers: Transfers | None = None,
                 device_end: np.ndarray | None = None, host_copies: HostCopies | None = None,
                 arrival: np.ndarray | None = None, hidden: np.ndarray | None = None):
        self.config = config
        self.program = program
        # per op, how much shorter it runs than alone, by overlap with another op (an F&B pair's,
        # on its first op; STP's braided units): the collectives it hides (engine.hidden_costs)
        self._hidden = hidden
        self.transfers = transfers if transfers is not None else Transfers.empty()
        self.host_copies = host_copies if host_copies is not None else HostCopies.empty()
        # with transfers: per op, when its cross-device input arrived; each device's last batch's end
        # arrival (vocabulary passes): per op, when the input that set its start was ready
        if transfers is not None and len(transfers):
            arrival = np.full(len(start), -np.inf)
            arrival[transfers.consumer] = transfers.end
        self._arrival = arrival
        self._device_end = device_end
        p = program.devices
        pair = program.pair.copy()
        pair[1:] |= program.pair[:-1]
        self.ops = Ops(
            device=program.device,
            stage=program.stage,
            microbatch=program.microbatch,
            kind=_KIND_CHARS[program.kind],
            start=start,
            end=end,
            pair=pair,
            waited_for=_binding_dependency(program, start, end, dep, config.comm, arrival),
        )
        self.dependencies = dep  # per op, the index of the op it waits for (−1 for none)
        self.makespan = float(end.max()) if len(end) else 0.0
        step = config.step
        if step is not None:
            self.tails, self.device_step_end = tails(program, start, end, step)
        else:
            self.tails, self.device_step_end = Tails.empty(), np.zeros(program.devices)
            np.maximum.at(self.device_step_end, program.device, end)
        setup = step.setup if step is not None else 0.0
        self.step_time = setup + max(self.makespan, float(self.device_step_end.max(initial=0.0)))
        self.busy = np.bincount(program.device, weights=cost, minlength=p)
        self.idle = self.makespan - self.busy
        self.ideal = float(self.busy.max())
        self.bubble_fraction = float(self.idle.sum() / (p * self.makespan)) if self.makespan else 0.0
        self.bubble_rate = (self.makespan - self.ideal) / self.ideal if self.ideal else 0.0
        self.memory: MemoryCurves = activation_curves(program, config, start, end) if host_copies is None else \
            offload_curves(program, config, start, end, host_copies)
        self.peak_activation = self.memory.peaks()
        self.static_memory = static_memory(program, config)
        self.peak_memory = self.peak_activation + self.static_memory
        self.time_to_first_output, self.throughput = _output_times(program, end)
        capacity = config.memory_capacity
        self.fits = None if capacity is None else self.peak_memory <= capacity
        self.excess = None if capacity is None else np.maximum(self.peak_memory - capacity, 0.0)
        spec = config.spec
        self.closed_form = spec.closed_form(config) if spec.closed_form is not None and spec.name == program.name else None
        # a result is a record: its arrays (and the program's, shared by every result of it) are read-only
        for array in (*(getattr(self.ops, f.name) for f in dataclasses.fields(self.ops)), self.dependencies, self.busy,
                      self.idle, self.peak_activation, self.static_memory, self.peak_memory, self.memory.times,
                      *((self.fits, self.excess) if capacity is not None else ()),
                      self.memory.values, self.memory.offsets, program.kind, program.stage, program.microbatch,
                      program.pair, program.offsets, program.device,
                      *(getattr(self.transfers, f.name) for f in dataclasses.fields(self.transfers)),
                      *(getattr(self.host_copies, f.name) for f in dataclasses.fields(self.host_copies))):
            array.flags.writeable = False

    @functools.cached_property
    def _idle_split(self) -> tuple[np.ndarray, np.ndarray]:
        comm = _exposed_comm(self.program, self.ops.start, self.ops.end, self.dependencies, self.makespan,
                             self._device_end)
        comm.flags.writeable = False
        compute = self.idle - comm
        compute.flags.writeable = False
        return comm, compute

    @property
    def exposed_comm(self) -> np.ndarray:
        """Per device, the idle time spent waiting for communication (see the class docstring)."""
        return self._idle_split[0]

    @property
    def idle_compute(self) -> np.ndarray:
        """Per device, the idle time spent waiting for compute: ``idle − exposed_comm``."""
        return self._idle_split[1]

    @functools.cached_property
    def last_op_end(self) -> np.ndarray:
        """Per device, when its last pipeline op ends (0 for a device without ops); its tail
        (:attr:`tails`) runs after it."""
        last = np.zeros(self.devices)
        np.maximum.at(last, self.program.device, self.ops.end)
        last.flags.writeable = False
        return last

    @property
    def step_end(self) -> float:
        """Where the step ends on the ops' time axis: when the last device's tail ends (the step
        time less its set-up, which runs before t = 0); the makespan without a ``Config.step``.
        Every picture's time axis runs to it."""
        return max(self.makespan, float(self.device_step_end.max(initial=0.0)))

    @property
    def tail(self) -> np.ndarray:
        """Per device, how long its step goes on after its last pipeline op: the data-parallel
        gradient reduction that its backwards did not hide, the optimizer step and the
        parameter gather (``Config.step``; zeros without one)."""
        return self.device_step_end - self.last_op_end

    @property
    def mfu(self) -> float | None:
        """Model-FLOPs utilisation of the step: the model's FLOPs (``Config.step.model_flops``)
        over every GPU's peak for the step time; None when the config does not give them."""
        step = self.config.step
        if step is None or step.model_flops is None or step.gpus is None or step.peak_flops is None \
                or not self.step_time:
            return None
        return step.model_flops / (step.gpus * step.peak_flops * self.step_time)

    @property
    def tokens_per_second(self) -> float | None:
        """Tokens trained per second (``Config.step.tokens`` over the step time, converted from
        the config's ``time_unit``); None without tokens or a time unit in seconds' family."""
        step = self.config.step
        unit = self.config.time_unit
        if step is None or step.tokens is None or unit not in SECONDS or not self.step_time:
            return None
        return step.tokens / (self.step_time * SECONDS[unit])

    @property
    def devices(self) -> int:
        return self.program.devices

    @property
    def peak_memory_bytes(self) -> np.ndarray | None:
        b = self.config.activation_bytes
        return None if b is None else self.peak_memory * b

    @property
    def out_of_memory(self) -> bool:
        """True when some device's peak memory exceeds ``Config.memory_capacity``."""
        return self.fits is not None and not bool(self.fits.all())

    @property
    def excess_bytes(self) -> np.ndarray | None:
        b = self.config.activation_bytes
        return None if b is None or self.excess is None else self.excess * b

    def memory_at(self, t: float) -> np.ndarray:
        """Activation + static memory of each device at time t."""
        if isinstance(t, (bool, np.bool_)) or not isinstance(t, (int, float, np.integer, np.floating)) or t != t:
            raise ConfigError("t", t, "give a time, a number in the run's time unit (the run spans 0 to "
                              f"{self.makespan:g})")
        try:
            t = float(t)
        except OverflowError:  # an int beyond any float is before the start or after the end
            t = math.inf if t > 0 else -math.inf
        return self.memory.at(t) + self.static_memory

    @functools.cached_property
    def traffic(self) -> np.ndarray:
        """Per stage (rows) and op kind (columns F, B, I, W), the time one op spends in tensor-
        and expert-parallel collectives: :func:`traffic`."""
        out = traffic(self.config, self.program.stages)
        out.flags.writeable = False
        return out

    @functools.cached_property
    def tp_comm(self) -> np.ndarray:
        """Per device, the time its ops spend in tensor- and expert-parallel collectives
        (:attr:`traffic`, op by op), less what overlap hides (an F&B pair's, STP's braided units:
        hidden under the other op's compute). Part of its busy time, not of its idle time."""
        o = self.ops
        column = np.select([o.kind == "F", o.kind == "B", o.kind == "I", o.kind == "W"], [0, 1, 2, 3], 0)
        # the vocabulary passes (S, T) carry no tensor-parallel traffic in the model
        vocab = (o.kind == "S") | (o.kind == "T")
        per_op = np.where(vocab, 0.0, self.traffic[o.stage, column])
        if self._hidden is not None:
            # what an overlap hides is not spent in the device's time: an F&B pair's traffic is its
            # two ops', on its first, less what the pair hides
            first = np.flatnonzero(self.program.pair)
            per_op[first] += per_op[first + 1]
            per_op[first + 1] = 0.0
            per_op = np.maximum(0.0, per_op - self._hidden)
        out = np.zeros(self.devices)
        np.add.at(out, o.device, per_op)
        out.flags.writeable = False
        return out

    @property
    def breakdown(self):
        """Why the step takes what it takes: per device (a pandas DataFrame), its ``compute``,
        ``tp_comm`` (tensor- and expert-parallel collectives inside its ops), ``p2p_wait`` (idle
        waiting for transfers between stages), ``idle`` (waiting for another device's compute: the
        bubble, and after its tail for the step's end), ``dp_tail`` (its data-parallel reduction,
        optimizer and gather after its last op); each row sums to ``step_time`` (less the step's
        ``setup`` before the ops, which measured runs have: ``Config.step.setup``)."""
        import pandas as pd

        last = self.last_op_end
        held = np.zeros(self.devices) if self._device_end is None else \
            np.clip(np.minimum(self._device_end, self.makespan) - last, 0.0, None)
        p2p = self.exposed_comm - held  # a blocking batch's hold after the last op falls in the tail
        setup = self.config.step.setup if self.config.step is not None else 0.0
        waiting = last - self.busy - p2p
        tail = self.device_step_end - last
        return pd.DataFrame({"device": np.arange(self.devices), "compute": self.busy - self.tp_comm,
                             "tp_comm": np.asarray(self.tp_comm), "p2p_wait": p2p,
                             "idle": waiting + (self.step_time - setup - self.device_step_end), "dp_tail": tail})

    def to_pandas(self):
        """The timeline as a pandas DataFrame (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("Result.to_pandas needs pandas: pip install pandas") from exc
        o = self.ops
        return pd.DataFrame({"device": o.device, "stage": o.stage, "microbatch": o.microbatch, "kind": o.kind,
                             "start": o.start, "end": o.end, "pair": o.pair})

    def summary(self) -> str:
        """A few lines of text: makespan, bubble and peak memory, simulated and closed form."""
        c = self.config
        cf = self.closed_form
        name = c.display_name
        v = self.program.stages_per_device
        v_text = f"{v:g}" if self.program.placement is None or self.program.placement.reverse_device is None \
            else f"{v:g} (2 replicas)"
        k_text = f" k={self.program.segments} segments" if self.program.segments > 1 else ""
        unit = unit_suffix(c.time_unit)

        def time(x: float) -> str:
            return number(x, c.time_unit)

        # one unit system: memory in GiB where the config gives an activation's bytes (a model's
        # does), else in activation units, the run's own as its times are
        gib = None if c.activation_bytes is None else c.activation_bytes / 2**30

        def memory(values) -> str:
            return per_device_text(values, None) if gib is None else \
                per_device_text([float(x) * gib for x in values], "GiB")

        lines = [f"{name}: p={self.devices} m={self.program.whole_microbatches}{k_text} v={v_text} "
                 f"f={number(c.f)} b={number(c.b)} w={number(c.w)} comm={number(c.comm)}{unit}  "
                 f"({number(len(self.ops))} ops)"]
        settings = _settings_text(c)
        if settings:
            lines.append(f"  settings         {settings}")
        lines.append(f"  makespan         {time(self.makespan)}" + (f"   closed form {time(cf.makespan)}" if cf else ""))
        if c.step is not None:
            lines.extend(self._step_lines(time))
        lines.append(f"  bubble fraction  {share(self.bubble_fraction)}" +
                     (f"   closed form {share(cf.bubble_fraction)}  [idle per device: {cf.bubble_formula}]" if cf else ""))
        lines.append(f"  bubble rate      {share(self.bubble_rate)}" +
                     (f"   closed form {share(cf.bubble_rate)}" if cf else ""))
        lines.append(f"  peak activation  {memory(self.peak_activation)}")
        if cf and cf.peak_activation:
            lines.append(f"    closed form    {memory(cf.peak_activation)}  [{cf.memory_formula}]")
        if self.static_memory.any():
            lines.append(f"  peak memory      {memory(self.peak_memory)}")
        if self.time_to_first_output is not None:
            lines.append(f"  first output     {time(self.time_to_first_output)}" +
                         (f"   closed form {time(cf.first_output)}" if cf and cf.first_output is not None else ""))
        if self.throughput is not None:
            noun = "microbatch" if number(self.throughput) == "1" else "microbatches"
            per = f" {noun} per{unit}" if unit else f" {noun} per unit of time"
            lines.append(f"  throughput       {number(self.throughput)}{per}" +
                         (f"   closed form {number(cf.throughput)}" if cf and cf.throughput is not None else ""))
        if self.fits is not None:
            lines.append("  " + self.fit_summary())
        why_not = caveat(cf, c)
        if why_not is not None:
            lines.append(f"  ({why_not})")
        if c.transfers:
            lines.extend(self._transfer_lines(unit))
        if c.offload is not None:
            lines.extend(self._offload_lines(c.offload))
        return "\n".join(lines)

    def _step_lines(self, time) -> list[str]:
        """The step beyond the pipeline: its time, each device's tail and what it spends it on,
        throughput and MFU."""
        t = self.tails
        tail = self.tail
        worst = int(np.argmax(tail))
        parts = []
        for kind in ("reduce", "optimizer", "gather"):
            mine = (t.device == worst) & (t.kind == kind)
            if mine.any():
                parts.append(f"{'gradient reduction' if kind == 'reduce' else kind} "
                             f"{time(float(t.duration[mine].sum()))}")
        setup = self.config.step.setup if self.config.step is not None else 0.0
        lines = [f"  step time        {time(self.step_time)}   " + (f"set-up {time(setup)} before the ops, " if setup else "")
                 + f"data-parallel tail up to {time(float(tail.max()))} "
                 f"(device {worst}" + (f": {', '.join(parts)}" if parts else "") + ")"]
        rates = []
        if self.tokens_per_second is not None:
            rates.append(f"{number(self.tokens_per_second)} tokens/s")
        if self.mfu is not None:
            rates.append(f"MFU {share(self.mfu)}")
        if rates:
            lines.append(f"  throughput       {', '.join(rates)}")
        parts = self.breakdown.iloc[worst]
        lines.append(f"  device {worst}'s step  compute {time(float(parts.compute))}, TP/EP traffic "
                     f"{time(float(parts.tp_comm))}, P2P wait {time(float(parts.p2p_wait))}, idle "
                     f"{time(float(parts.idle))}, DP tail {time(float(parts.dp_tail))}")
        return lines

    def _offload_lines(self, offload: Offload) -> list[str]:
        c = self.config
        h = self.host_copies
        off = h.kind == "offload"
        reload = ~off
        late = float(h.held.sum())  # how long backwards waited for their reloads alone
        # without activation_bytes a copy moves activation units, and the link carries those
        in_bytes = c.activation_bytes is not None
        moved = float(h.bytes[off].sum())
        amount = size(moved) if in_bytes else number(moved, "activation units")
        time = c.time_unit
        lines = [f"  offload          {offload.describe(c.time_unit, 'bytes' if in_bytes else 'activation units')}",
                 f"    copies         {number(int(off.sum()))} offloads, {number(int(reload.sum()))} reloads "
                 f"({amount} each way); queued {number(float(h.queued.sum()), time)} in all"]
        lines.append(f"    backwards wait {number(late, time)} in all for their reloads")
        return lines

    def fit_summary(self) -> str:
        """One line: whether every device's peak memory fits ``Config.memory_capacity`` (None: no capacity)."""
        capacity = self.config.memory_capacity
        # fits and excess are set with a capacity, both None without one
        if capacity is None or self.fits is None or self.excess is None:
            return "memory capacity  none given"
        b = self.config.activation_bytes

        def amount(x: float) -> str:
            return number(x * b / 2**30, "GiB") if b is not None else number(x)

        head = f"memory capacity  {amount(capacity)} per device: "
        if not self.out_of_memory:
            worst = int(np.argmax(self.peak_memory))
            return head + f"fits (highest peak {amount(self.peak_memory[worst])} on device {worst})"
        over = np.flatnonzero(~self.fits)
        worst = int(over[np.argmax(self.excess[over])])
        devices = ", ".join(map(str, over.tolist()))
        return head + (f"OUT OF MEMORY on device{'s' if len(over) > 1 else ''} {devices} "
                       f"(up to {amount(self.excess[worst])} over, on device {worst})")

    def _transfer_lines(self, unit: str) -> list[str]:
        c = self.config
        mode = c.p2p_mode
        if c.p2p is not None:
            why = "as configured"
        elif mode == "overlapped":
            why = f"{c.schedule}'s default: its published version overlaps communication with compute"
        else:
            why = "the default: communication waited for in batches"
        t = self.transfers
        volume = float(t.bytes.sum())
        assert c.comm_bytes is not None  # Config refuses a topology without it
        one = c.comm_bytes / self.program.segments
        time = c.time_unit
        lines = [f"  transfers        {number(len(t))} of {size(one)} ({size(volume)} in all), p2p {mode} ({why})",
                 f"    links          {describe_topology(c.topology, c.time_unit)}"]
        if len(t):
            lines.append(f"    duration       {number(float(t.duration.min()))} to "
                         f"{number(float(t.duration.max()), time)}, "
                         f"queued for a busy link {number(float(t.queued.sum()), time)} in all")
        total = self.devices * self.makespan

        def part(x) -> str:
            return share(float(x.sum()) / total if total else 0.0)

        lines.append(f"  idle             waiting for compute {number(float(self.idle_compute.sum()), time)} "
                     f"({part(self.idle_compute)}), for communication {number(float(self.exposed_comm.sum()), time)} "
                     f"({part(self.exposed_comm)})")
        lines.append("  exposed comm     " + per_device_text(self.exposed_comm, time))
        return lines

    # Exports: pandas' rule, to_x(path=None) returns the text or bytes, or writes them to path

    def to_text_gantt(self, path=None, *, width: int = 80, window=None) -> str | None:
        """A text Gantt chart ``width`` characters wide: one row per device, ops as kind+microbatch.
        Where the whole run does not fit, a readable window from 0, and a note naming the
        ``window=(start, end)`` of the next; ``window=(0, None)`` draws the whole run."""
        from ..io.text_gantt import text_gantt

        return exported(path, text_gantt(self, width, window=window))

    def to_torch_csv(self, path=None, *, comms: bool = False) -> str | None:
        """The program in torch's ``compute_only`` CSV format (one row per device), or with
        ``comms=True`` its ``compute_comms`` form with the sends and receives the run used."""
        return self.program.to_torch_csv(path, comms=comms)

    def to_chrome_trace(self, path=None, *, time_unit_us: float | None = None) -> str | None:
        """A Chrome trace (Perfetto, chrome://tracing) as JSON: a track per device, memory as
        counters. Times are converted from the config's ``time_unit`` to microseconds (a unitless
        run draws one unit as 1 ms); ``time_unit_us`` gives the microseconds in one unit instead.
        Written to ``path`` a block at a time (a 10^6-op trace is never held whole)."""
        from ..io.chrome_trace import chrome_trace_text, write_chrome_trace

        if path is None:
            return "".join(chrome_trace_text(self, time_unit_us))
        write_chrome_trace(self, path, time_unit_us)
        return None

    def to_svg(self, path=None, **options) -> str | None:
        """The static Gantt chart as SVG, rendered offline by vl-convert (no browser);
        ``options`` (``memory``, ``labels``, ``width``, ``theme``, ...) go to
        :func:`ppviz.charts.gantt_chart`."""
        from ..charts.render import gantt_svg

        return exported(path, gantt_svg(self, **options))

    def to_png(self, path=None, *, scale: float = 2, **options) -> bytes | None:
        """The static Gantt chart as PNG at ``scale`` × its size (2: sharp on high-DPI
        screens), rendered offline by vl-convert; ``options`` as for :meth:`to_svg`."""
        from ..charts.render import gantt_png

        return exported(path, gantt_png(self, scale, **options))

    def to_html(self, path=None, *, theme: str = "light", against=None) -> str | None:
        """The interactive chart (tooltips, selection, zoom, replay) as one standalone HTML page
        with everything inlined: it opens offline, without Python. ``theme`` is ``"light"``,
        ``"dark"`` or ``"auto"`` (the reader's system setting); ``against`` (a calibration,
        Config or Result of the same program) overlays its simulation on a measured run, as
        ``ppviz.show(measured, against=...)`` does."""
        from ..widgets.page import standalone_html

        return exported(path, standalone_html(self, theme=theme, against=against))

    def __repr__(self) -> str:
        return (f"<Result {self.config.display_name}: makespan {number(self.makespan, self.config.time_unit)}, "
                f"bubble {share(self.bubble_fraction)}, peak activation {number(self.peak_activation.max())}>")


def _output_times(program, end) -> tuple[float | None, float | None]:
    """Time to first output and steady-state throughput of a forward-only program (else None, None)."""
    if not program.forward_only:
        return None, None
    outputs = np.sort(end[(program.stage == program.stages - 1) & (program.kind == 0)])
    first = float(outputs[0])
    span = float(outputs[-1]) - first
    return first, ((len(outputs) - 1) / span if len(outputs) > 1 and span > 0 else None)


def _binding_dependency(program, start, end, dep, comm, arrival=None) -> np.ndarray:
    """For each op, the dependency that set its start (−1 if the device itself was the limit).
    ``arrival``: with transfers, when each op's cross-device input arrived (−inf where none)."""
    n = len(start)
    has = dep >= 0
    # whole-array passes, not masked gathers (a run of 10^6 ops pays for each pass): an op
    # without a dependency reads the last op's end here, and `has` leaves it out below
    ready = end[dep] if n else np.zeros(0)
    if comm:
        device = program.device
        ready = ready + np.where(device[dep] != device, comm, 0.0)
    if arrival is not None:
        ready = np.where(arrival > -np.inf, arrival, ready)
    prev_end = np.zeros(n)
    prev_end[1:] = end[:-1]
    first = program.offsets[:-1]
    prev_end[first[first < n]] = 0.0
    # the second op of a pair follows its partner, so its device limit is the partner's predecessor
    second = np.flatnonzero(program.pair) + 1
    prev_end[second] = prev_end[second - 1]
    # np.isclose(ready, start) with its tolerances, spelled out: the same test on finite times
    # without isclose's handling of infinities, a third of this function's time
    close = np.abs(ready - start) <= 1e-8 + 1e-5 * np.abs(start)
    binding = has & (ready >= prev_end) & (ready > 0) & close
    return np.where(binding, dep, -1)


def _exposed_comm(program, start, end, dep, makespan, device_end) -> np.ndarray:
    """Per device, the idle time after an action's inputs were computed (and its device was free)
    until it started: time spent waiting for latency, transfers, links and blocking batches; plus,
    after a device's last action, the time its last blocking batch held it."""
    p = program.devices
    n = len(start)
    first = program.actions.first
    has = dep >= 0
    computed = np.where(has, end[np.where(has, dep, 0)], 0.0)
    # an action's inputs are computed when the later of its ops' inputs is
    computed = np.maximum.reduceat(computed, first) if n else computed
    a_start, a_end = start[first], end[first]
    a_device = program.device[first]
    prev_end = np.zeros(len(first))
    prev_end[1:] = a_end[:-1]
    leads = np.ones(len(first), bool)
    leads[1:] = a_device[1:] != a_device[:-1]
    prev_end[leads] = 0.0
    wait = np.maximum(a_start - np.maximum(prev_end, computed), 0.0)
    comm = np.bincount(a_device, weights=wait, minlength=p)
    if device_end is not None:
        last = np.zeros(p)
        np.maximum.at(last, a_device, a_end)
        comm += np.clip(np.minimum(device_end, makespan) - last, 0.0, None)
    return comm
