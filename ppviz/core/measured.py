"""``ppviz.Measured``: a measured pipeline step, shaped like a simulated :class:`Result`.

A measured run is a Result whose program is the per-device op order that was observed and whose
start and end times were measured (in milliseconds, from the step's first op start; a Chrome
trace ppviz wrote of a unitless run reads back in that run's units, ``config.time_unit`` None), so
everything that takes a Result — ``ppviz.show``, ``ppviz.compare``, the charts, the exports —
takes it unchanged. On top of a Result it carries what only a measurement has:

* ``wait``: per op, how long its annotated span waited for its input before computing (torch's
  schedules wait for the receive inside the compute span; the loaders split it off, so ``start``
  is when the computation began);
* ``transfers``: the communication found in the trace, in the table a simulation returns
  (:class:`~ppviz.core.transfers.Transfers`; ``bytes`` is NaN: a trace does not say);
* ``steps``: every complete step the trace holds (:class:`Steps`), of which this object is one
  (``step``), and ``samples``: every op of every complete step, for calibration;
* ``clock_offsets``: what was added to each device's clock to align hosts (ms).

Build one with :func:`ppviz.load_trace`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .columns import Columns
from .config import Config
from .program import Program
from .result import Result, unit_suffix
from .transfers import Transfers
from .errors import checked_arguments

MS = "ms"


@dataclass(frozen=True)
class Steps(Columns):
    """One row per complete step in the trace: its ``label`` (the profiler's step number, or
    0, 1, … in order), ``pipeline_time`` (first op start to last op end, ms), ``busy`` (summed op
    time over devices, ms), ``bubble_fraction`` (1 − busy / (p × pipeline_time)) and, where the
    trace holds each step's span (the profiler's ``ProfilerStep#N``), the ``step_time`` (its
    longest rank's span: the pipeline and the work around it, such as the optimizer step), split
    into ``before_ops`` (from the step's start to its first op, on that op's rank), the pipeline
    time and ``after_ops`` (the rest); NaN where the trace has no step spans."""

    label: np.ndarray
    pipeline_time: np.ndarray
    busy: np.ndarray
    bubble_fraction: np.ndarray
    step_time: np.ndarray
    before_ops: np.ndarray
    after_ops: np.ndarray

    def summary(self, time_unit: str | None = MS) -> str:
        t = self.pipeline_time
        unit = unit_suffix(time_unit)
        spans = not np.isnan(self.step_time).any()
        lines = [f"{len(self)} complete step(s): pipeline time median {np.median(t):.4g}{unit}, "
                 f"min {t.min():.4g}, max {t.max():.4g}"
                 + (f"; step time median {np.median(self.step_time):.4g}{unit}" if spans else "")]
        lines += [f"  step {int(k)}: {x:.4g}{unit}, bubble {b:.1%}" + (f", step {s:.4g}{unit}" if spans else "")
                  for k, x, b, s in zip(self.label, t, self.bubble_fraction, self.step_time)]
        return "\n".join(lines)


@dataclass(frozen=True)
class Samples(Columns):
    """Every op of every complete step (for calibration): ``step`` (index into ``Steps``),
    ``device``, ``stage``, ``microbatch``, ``kind`` ("F", "B", "I", "W"), ``pair`` (True on both
    ops of an overlapped F&B), ``start``, ``end`` (ms from that step's first op) and ``wait``."""

    step: np.ndarray
    device: np.ndarray
    stage: np.ndarray
    microbatch: np.ndarray
    kind: np.ndarray
    pair: np.ndarray
    start: np.ndarray
    end: np.ndarray
    wait: np.ndarray



@checked_arguments
class Measured(Result):
    """A measured step (see the module docstring); everything a :class:`Result` has, and
    ``wait``, ``transfers``, ``steps``, ``step``, ``samples``, ``clock_offsets``, ``sources``
    (the files read) and ``pipeline_time`` (first op start to last op end, = ``makespan``).
    ``step_time`` is the step's measured span where the trace holds one (``steps.step_time``:
    the pipeline and the work around it), else the pipeline time."""

    def __init__(self, config: Config, program: Program, start: np.ndarray, end: np.ndarray, *, wait: np.ndarray,
                 transfers: Transfers, steps: Steps, step: int, samples: Samples, clock_offsets: np.ndarray,
                 sources: tuple[str, ...], dependencies: np.ndarray):
        cost = end - start
        second = np.r_[False, program.pair[:-1]]
        cost[second] = 0.0  # a pair is one slot: its first op carries the time
        super().__init__(config, program, start, end, dependencies, cost)
        self.ops = dataclasses.replace(self.ops, waited_for=_measured_waits(program, start, end, dependencies))
        self.ops.waited_for.flags.writeable = False
        self.wait = wait
        self.transfers = transfers
        self.steps = steps
        self.step = step
        self.samples = samples
        self.clock_offsets = clock_offsets
        self.sources = sources
        measured_step = float(steps.step_time[step])
        if not np.isnan(measured_step):
            self.step_time = measured_step
        for array in (wait, clock_offsets, *(getattr(x, f.name) for x in (transfers, steps, samples)
                                             for f in dataclasses.fields(x))):
            array.flags.writeable = False

    @property
    def pipeline_time(self) -> float:
        """First op start to last op end (the step's ``makespan``), in ``config.time_unit``: ms, or
        none for a unitless run's Chrome trace."""
        return self.makespan

    def summary(self) -> str:
        p = self.devices
        unit = unit_suffix(self.config.time_unit)
        lines = [f"measured {self.program.name}: p={p} m={self.program.microbatches} stages={self.program.stages} "
                 f"({len(self.ops)} ops, step {int(self.steps.label[self.step])} of {len(self.steps)})",
                 f"  pipeline time    {self.makespan:.6g}{unit}",
                 *([f"  step time        {self.step_time:.6g}{unit} ({self.steps.before_ops[self.step]:.4g}{unit} "
                    f"before the first op, {self.steps.after_ops[self.step]:.4g}{unit} after the last)"]
                   if self.step_time != self.makespan else []),
                 f"  bubble fraction  {self.bubble_fraction:.4f}",
                 "  busy per device  " + " ".join(f"{x:.4g}" for x in self.busy) + unit,
                 "  waits in spans   " + " ".join(f"{x:.4g}" for x in np.bincount(
                     self.ops.device, weights=self.wait, minlength=p)) + unit,
                 f"  transfers        {len(self.transfers)}"
                 + (f", median {np.median(self.transfers.duration):.4g}{unit}" if len(self.transfers) else "")]
        if len(self.steps) > 1:
            lines.append("  " + self.steps.summary(self.config.time_unit).replace("\n", "\n  "))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"<Measured {self.program.name}: {self.devices} devices, pipeline time "
                f"{self.makespan:.6g}{unit_suffix(self.config.time_unit)}, "
                f"bubble {self.bubble_fraction:.1%}, {len(self.steps)} step(s)>")


def _measured_waits(program: Program, start, end, dep) -> np.ndarray:
    """For each op, the dependency it waited for (−1 if none): its input arrived after the
    device's previous op had ended, and the op started after that input was produced."""
    n = len(start)
    prev_end = np.full(n, -np.inf)
    prev_end[1:] = end[:-1]
    prev_end[program.offsets[:-1][program.offsets[:-1] < n]] = -np.inf
    second = np.flatnonzero(program.pair) + 1
    prev_end[second] = prev_end[second - 1]
    has = dep >= 0
    ready = np.full(n, -np.inf)
    ready[has] = end[dep[has]]
    binding = has & (ready > prev_end) & (ready <= start + 1e-9)
    return np.where(binding, dep, -1)
