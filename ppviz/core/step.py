"""What a training step adds to the pipeline's ops: each device's data-parallel tail, and the
figures that turn a step time into throughput and model-FLOPs utilisation.

A pipeline's ops end at the makespan; the step goes on. Each stage's gradients are reduced over
its data-parallel group (an all-reduce, or a reduce-scatter under ZeRO-1/2 and Megatron's
distributed optimizer), then the optimizer steps, then (distributed optimizer) the updated
parameters are all-gathered. :class:`Step` gives these times per stage; :func:`tails` times
them on each device after its pipeline ops:

- **Gradient reduction.** A device's data-parallel link (one per device: the group's
  collectives run one at a time, in the order their gradients are ready) reduces each
  (replica, stage) it holds once that stage's last weight-gradient op (its last W, or B where
  the backward is not split) has run. With ``overlap_grad_reduce`` (Megatron-LM's
  ``--overlap-grad-reduce``: buckets are reduced while the backward of the last microbatch
  still runs, as each bucket's gradients are ready) a stage's reduction may start when that
  last op starts and ends no earlier than the op does; without it, reductions wait for the
  device's last op.
- **Optimizer step**, once every reduction of the device has ended (and its last op): the sum
  of its stages' ``optimizer`` times.
- **Parameter gather** (``gather``, zero without a distributed optimizer) after the optimizer
  step; with ``overlap_param_gather`` (Megatron's ``--overlap-param-gather``) it is hidden under
  the next step's forwards and left out.

The step ends when the last device's tail does: :attr:`ppviz.Result.step_time`, which also
counts the step's ``setup`` once: the work before its pipeline's first op (zero_grad, the
schedule's set-up), which every device does at once, so the ops start that much later and keep
their times relative to one another. Times are in the config's unit, as every cost is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .columns import Columns
from .errors import ConfigError, checked_arguments
from .kernel import step_tails

#: the parts of a device's tail, in the order they run
TAIL_KINDS = ("reduce", "optimizer", "gather")


def _time(name: str, x) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float, np.floating, np.integer)) or not (
            math.isfinite(float(x)) and 0 <= float(x) <= 1e200):
        raise ConfigError(name, x, "give a finite time >= 0")
    return float(x)


def _times(name: str, values) -> tuple[float, ...]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise ConfigError(name, values, "give one time per stage, e.g. (1.5, 1.5, 1.5, 2.0)")
    return tuple(_time(f"{name}[{i}]", x) for i, x in enumerate(values))


def _optional(name: str, value, *, integer: bool = False):
    if value is None:
        return None
    ok = isinstance(value, (int, np.integer)) if integer else isinstance(value, (int, float, np.floating))
    if isinstance(value, bool) or not ok or not 0 < float(value) <= 1e200:
        raise ConfigError(name, value, f"give a {'whole number' if integer else 'finite number'} > 0, or None")
    return int(value) if integer else float(value)


@checked_arguments
@dataclass(frozen=True, kw_only=True)
class Step:
    """A training step beyond its pipeline ops (see the module docstring): per stage, the
    data-parallel gradient ``reduce`` time, the ``optimizer`` step and the parameter ``gather``
    (zero, or left out, without a distributed optimizer), in the config's time unit; whether
    Megatron-LM overlaps the reduction with the last backwards (``overlap_grad_reduce``, its
    default in recent releases) and the gather with the next step (``overlap_param_gather``);
    ``setup``, the step's time before its pipeline's first op (one time: every device sets up at
    once), such as ``ppviz.calibrate`` measures.

    ``tokens`` (per step: global batch × sequence length), ``model_flops`` (per step, every GPU
    together: the model's FLOPs, not the recomputed ones), ``gpus`` and ``peak_flops`` (one GPU's
    dense peak, FLOPs per time unit) turn the step time into ``Result.tokens_per_second`` and
    ``Result.mfu``. ``Config.from_model`` fills all of it from the model, the parallel layout
    and the links.
    """

    reduce: tuple[float, ...] = field(default=())
    optimizer: tuple[float, ...] = ()
    gather: tuple[float, ...] = ()
    setup: float = 0.0
    overlap_grad_reduce: bool = True
    overlap_param_gather: bool = False
    tokens: float | None = None
    model_flops: float | None = None
    gpus: int | None = None
    peak_flops: float | None = None

    def __post_init__(self):
        set_ = object.__setattr__
        for name in ("reduce", "optimizer", "gather"):
            set_(self, name, _times(name, getattr(self, name)))
        stages = {len(getattr(self, name)) for name in ("reduce", "optimizer", "gather") if getattr(self, name)}
        if len(stages) > 1:
            raise ConfigError("reduce", self.reduce, "give reduce, optimizer and gather one time per stage each "
                              f"(they have {', '.join(str(len(getattr(self, n))) for n in TAIL_KINDS)})")
        set_(self, "setup", _time("setup", self.setup))
        for name in ("overlap_grad_reduce", "overlap_param_gather"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(name, getattr(self, name), "give True or False")
        for name in ("tokens", "model_flops", "peak_flops"):
            set_(self, name, _optional(name, getattr(self, name)))
        set_(self, "gpus", _optional("gpus", self.gpus, integer=True))

    @property
    def stages(self) -> int | None:
        """The stages the tail times describe (None when it gives none)."""
        for name in TAIL_KINDS:
            if getattr(self, name):
                return len(getattr(self, name))
        return None

    def time(self, kind: str, stage: int) -> float:
        values = getattr(self, kind)
        return values[stage] if values else 0.0

    @property
    def reduction(self) -> str:
        """The gradients' collective: a reduce-scatter where the step gathers parameters after
        its optimizer (a distributed optimizer, ZeRO-1/2), else an all-reduce."""
        return "reduce-scatter" if any(self.gather) else "all-reduce"

    def part_name(self, kind: str) -> str:
        """A tail part's name as people read it: "gradient all-reduce", "optimizer step",
        "parameter all-gather"."""
        return {"reduce": f"gradient {self.reduction}", "optimizer": "optimizer step",
                "gather": "parameter all-gather"}[kind]


@checked_arguments
@dataclass(frozen=True)
class Tails(Columns):
    """Each device's tail after its pipeline ops, one row per part: ``device``, ``stage`` (the
    stage a reduction is for; −1 for the optimizer step and the gather, which are the device's),
    ``kind`` ("reduce", "optimizer", "gather"), ``start``, ``end``."""

    device: np.ndarray
    stage: np.ndarray
    kind: np.ndarray
    start: np.ndarray
    end: np.ndarray

    def hidden(self, last: np.ndarray) -> np.ndarray:
        """Per part, how long it runs under its device's pipeline ops (``last``: each device's last
        op's end): a reduction overlapped with the last backwards (``overlap_grad_reduce``) up to
        that end; the rest of a part is what the tail adds to the device's step."""
        return np.clip(np.minimum(self.end, last[self.device]) - self.start, 0.0, None) if len(self.device) \
            else np.zeros(0)

    @classmethod
    def empty(cls) -> "Tails":
        return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, object), np.zeros(0), np.zeros(0))


def tails(program, start: np.ndarray, end: np.ndarray, step: Step) -> tuple[Tails, np.ndarray]:
    """The tails of a run (see the module docstring), timed by :func:`ppviz.core.kernel.step_tails`,
    and each device's end, tail included."""
    S = program.stages
    if step.stages is not None and step.stages != S:
        raise ConfigError("step", step.stages, f"give the tail's times for the program's {S} stages",
                          reason=f"the step describes {step.stages} stages")
    rows, out_end = step_tails(program, start, end, step)
    if not rows:
        return Tails.empty(), out_end
    cols = list(zip(*rows))
    return Tails(np.array(cols[0], np.int64), np.array(cols[1], np.int64), np.array(cols[2], object),
                 np.array(cols[3], np.float64), np.array(cols[4], np.float64)), out_end


__all__ = ["Step", "Tails", "tails", "TAIL_KINDS"]
