"""``ppviz.residuals(measured, against)``: a measured run beside its simulation, op by op.

The simulation runs the measured program (same ops, same per-device order) with the costs of
``against`` — a :class:`Calibration`, a :class:`Config` (its costs; its schedule is ignored), or
a simulated :class:`Result` of the same program — so op ``k`` of one is op ``k`` of the other
and every residual is measured − simulated.

Where the difference in pipeline time comes from is split by three re-simulations of the
measured program, each changing one thing towards the measurement, so that the parts add up
exactly to the difference:

1. **compute variance**: every op takes its measured duration instead of its stage's fitted
   cost (run-to-run and microbatch-to-microbatch variation, contention);
2. **communication**: every transfer a device waited for — its input came after the device was
   free, or its span waited for the receive — takes its measured time (the consumer's start −
   the producer's end) instead of ``comm``; on gloo, transfers between two ranks that send both
   ways queue behind each other, and some take many times the fitted latency;
3. **host overhead**: what is left — gaps on a device while its next op's input was there
   (posting sends and receives, the loss, Python, a rank descheduled by the OS).

Per device, ``compute_excess`` (measured − simulated busy time) and ``host_gaps`` name the
stragglers: the device whose excess holds up everyone after it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.config import Config
from ..core.engine import execute, simulate
from ..core.errors import ConfigError, checked_arguments
from ..core.measured import Measured
from ..core.result import Result, unit_suffix
from .calibrate import Calibration, gap_words


@dataclass(frozen=True)
class Attribution:
    """The pipeline-time difference (in the run's time unit) split into parts that sum to it
    (module docstring)."""

    compute_variance: float
    communication: float
    host_overhead: float

    @property
    def total(self) -> float:
        return self.compute_variance + self.communication + self.host_overhead


@checked_arguments
class Residuals:
    """Measured − simulated, per op and per device, with a summary.

    ``measured`` and ``simulated`` (Results of one program); per op (program order, the
    Results' op index): ``start``, ``end``, ``duration`` residuals; per device: ``busy``,
    ``idle`` and ``finish`` (last op end) residuals, ``compute_excess`` and ``host_gaps``;
    ``pipeline_time`` (measured, simulated), ``bubble_fraction`` (measured, simulated),
    ``attribution`` (:class:`Attribution`) and ``straggler`` (the device with the largest compute
    excess, or None when no device is more than 5 % of the step slower than modelled).
    """

    def __init__(self, measured: Measured, simulated: Result):
        self.measured, self.simulated = measured, simulated
        mo, so = measured.ops, simulated.ops
        self.start = mo.start - so.start
        self.end = mo.end - so.end
        self.duration = mo.duration - so.duration
        p = measured.devices
        self.busy = measured.busy - simulated.busy
        self.idle = measured.idle - simulated.idle
        last = measured.program.offsets[1:] - 1
        self.finish = mo.end[last] - so.end[last]
        self.pipeline_time = (measured.makespan, simulated.makespan)
        self.bubble_fraction = (measured.bubble_fraction, simulated.bubble_fraction)
        self.compute_excess = self.busy
        gaps = _host_gaps(measured)
        self.host_gaps = np.bincount(mo.device, weights=gaps, minlength=p)
        self.attribution = _attribute(measured, simulated)
        worst = int(np.argmax(self.compute_excess))
        self.straggler = worst if self.compute_excess[worst] > 0.05 * measured.makespan else None

    @property
    def difference(self) -> float:
        """Measured − simulated pipeline time, in the measured run's time unit (ms for a real trace)."""
        return self.pipeline_time[0] - self.pipeline_time[1]

    @property
    def time_unit(self) -> str | None:
        """The measured run's time unit: ms for a real trace, None for a unitless run's."""
        return self.measured.config.time_unit

    def summary(self) -> str:
        tm, ts = self.pipeline_time
        bm, bs = self.bubble_fraction
        a = self.attribution
        unit = unit_suffix(self.time_unit)
        lines = [f"pipeline time  measured {tm:.4g}{unit}, simulated {ts:.4g}{unit} ({gap_words(ts, tm, unit)})",
                 f"bubble         measured {bm:.1%}, simulated {bs:.1%}",
                 "the difference, re-simulating with one measured quantity at a time:",
                 f"  compute variance  {a.compute_variance:+.4g}{unit}  (ops' measured durations instead of the fit)",
                 f"  communication     {a.communication:+.4g}{unit}  (measured transfers instead of comm)",
                 f"  host overhead     {a.host_overhead:+.4g}{unit}  (gaps while the next op was ready)",
                 f"per device{f' ({self.time_unit})' if self.time_unit else ''}: " + "  ".join(
                     f"d{d}: compute {c:+.3g}, gaps {g:.3g}" for d, (c, g) in
                     enumerate(zip(self.compute_excess, self.host_gaps)))]
        if self.straggler is not None:
            lines.append(f"straggler: device {self.straggler} computes {self.compute_excess[self.straggler]:+.3g}{unit} "
                         f"more than modelled")
        return "\n".join(lines)

    def describe(self) -> dict:
        """The summary as JSON-ready numbers (for the widget's overlay)."""
        a = self.attribution
        return {"pipeline_time": list(map(float, self.pipeline_time)),
                "bubble_fraction": list(map(float, self.bubble_fraction)),
                "attribution": {"compute_variance": a.compute_variance, "communication": a.communication,
                                "host_overhead": a.host_overhead},
                "compute_excess": self.compute_excess.tolist(), "host_gaps": self.host_gaps.tolist(),
                "finish": self.finish.tolist(), "straggler": self.straggler}

    def __repr__(self) -> str:
        tm, ts = self.pipeline_time
        unit = unit_suffix(self.time_unit)
        return f"<Residuals: measured {tm:.4g}{unit}, simulated {ts:.4g}{unit}>"


@checked_arguments
def residuals(measured: Measured, against) -> Residuals:
    """The measured run against a simulation of its own program (module docstring)."""
    if not isinstance(measured, Measured):
        raise ConfigError("measured", type(measured).__name__, "give what ppviz.load_trace returns")
    if isinstance(against, Calibration):
        against = against.config
    if isinstance(against, Config):
        for field, wanted in (("devices", measured.devices), ("microbatches", measured.program.microbatches)):
            if getattr(against, field) != wanted:
                raise ConfigError(f"against.{field}", getattr(against, field),
                                  f"the measured run has {wanted} {field}: give a config of the same size")
        simulated = simulate(measured.program, against)
    elif isinstance(against, Result):
        if against.program != measured.program:
            raise ConfigError("against", repr(against), "give a Result of the measured program (or a Config or "
                                                        "Calibration, which are simulated with it)")
        simulated = against
    else:
        raise ConfigError("against", type(against).__name__, "give a Calibration, a Config or a Result")
    return Residuals(measured, simulated)


def _waited_for_transfer(measured: Measured) -> np.ndarray:
    """Ops that waited for an input from another device: it came after their device was free,
    or their span waited for its receive (a transfer held up behind others on the link)."""
    program, dep = measured.program, measured.dependencies
    has = dep >= 0
    cross = has.copy()
    cross[has] = program.device[dep[has]] != program.device[has]
    return cross & ((measured.ops.waited_for >= 0) | (measured.wait > 0))


def _host_gaps(measured: Measured) -> np.ndarray:
    """Per op, the time its device sat idle before it although its input was there."""
    program, ops = measured.program, measured.ops
    n = len(ops)
    prev_end = np.r_[np.nan, ops.end[:-1]]
    prev_end[program.offsets[:-1][program.offsets[:-1] < n]] = np.nan
    second = np.flatnonzero(program.pair) + 1
    prev_end[second] = ops.start[second]
    gaps = np.maximum(np.nan_to_num(ops.start - measured.wait - prev_end), 0.0)
    return np.where(ops.waited_for >= 0, 0.0, gaps)


def _attribute(measured: Measured, simulated: Result) -> Attribution:
    program = measured.program
    config = simulated.config
    cost = measured.ops.duration.copy()
    cost[np.r_[False, program.pair[:-1]]] = 0.0
    _, with_durations, _ = execute(program, cost, config.comm)
    dep = measured.dependencies
    latency = np.full(len(program), float(config.comm))
    # a transfer the consumer waited for took (its start − the producer's end); the others did
    # not hold anything up, and keep the model's latency
    waited = _waited_for_transfer(measured)
    latency[waited] = measured.ops.start[waited] - measured.ops.end[dep[waited]]
    _, with_transfers, _ = execute(program, cost, np.maximum(latency, 0.0))
    t_sim, t_durations, t_transfers = simulated.makespan, float(with_durations.max()), float(with_transfers.max())
    return Attribution(t_durations - t_sim, t_transfers - t_durations, measured.makespan - t_transfers)
