"""``ppviz.calibrate(measured)``: the costs a measured run implies, as a :class:`ppviz.Config`.

Op durations are fitted robustly, delays by their expectation, over every op of every complete
step the trace holds:

* **Per stage and kind**: the median duration of F, B, I and W of each stage (overlapped F&B
  slots are left out of these and fitted as a ratio, ``fb``), so that a descheduled op or a
  garbage collection does not move the fit.
* **Host overhead**: the gap before an op on its device when it was not waiting for an input
  (posting sends and receives, the loss, Python) is time the simulator has no other place
  for; its mean per stage and kind is added to the op's cost (reported as ``overhead``).
* **Communication**: the mean gap between a producer's end and its consumer's start on another
  device, over the dependencies the consumer was waiting for — its device had nothing else to
  do, or its span waited longer than a transfer's typical latency for the receive (on gloo,
  transfers between two ranks that send both ways queue behind each other) — so that busy
  consumers do not inflate it.

Delays are means, not medians: they add up along the pipeline's critical path, and on a busy
host a few transfers stall for milliseconds (a send that takes 4 ms to post) — the median
drops exactly the stalls that lengthen the step, and re-simulating with it comes out short.
* A run with full backwards (B) cannot tell I from W: ``w_fraction`` of each B (default ½, the
  zero-bubble paper's T_W ≈ T_B, arXiv 2401.10241 §2) is given to W so that split schedules can
  be predicted; it does not change any schedule with full backwards.

The result is a :class:`Calibration`: ``config`` (the measured schedule's name when ppviz knows
it, else "custom" with ``program``), ``simulate()`` (the measured schedule re-simulated), the
relative ``error`` of its pipeline time, ``report()``, and :meth:`Calibration.config_for`, the
same costs for another schedule, microbatch count or stage count (costs follow the model's
layers: a stage of a different size takes its share of the measured stages it spans).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core.config import Config
from ..core.engine import dependencies, simulate
from ..core.errors import ConfigError, checked_arguments
from ..core.measured import Measured
from ..core.program import Program
from ..core.result import Result

_KINDS = "FBIW"


@dataclass(frozen=True)
class StageFit:
    """Per stage (rows) and kind (columns F, B, I, W): the ``median`` duration, the ``spread``
    (median absolute deviation), the number of samples ``count`` and the mean host
    ``overhead`` before such ops; NaN where the run has no such op."""

    median: np.ndarray
    spread: np.ndarray
    count: np.ndarray
    overhead: np.ndarray


@checked_arguments
@dataclass(frozen=True)
class Calibration:
    """What :func:`calibrate` returns (see the module docstring); ``config`` is the fitted
    costs on the measured schedule and sizes (``config_for()``)."""

    program: Program
    measured: Measured
    stages: StageFit
    comm: float
    comm_samples: int
    fb_ratio: float | None
    w_fraction: float
    config: Config = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "config", self.config_for())

    @property
    def schedule(self) -> str:
        """The measured schedule's registry name, or "custom" (then ``program`` is it)."""
        return self.program.name if self.program.name != "measured" else "custom"

    def simulate(self) -> Result:
        """The measured schedule simulated with the fitted costs."""
        if self.config.schedule == "custom":
            return simulate(self.program, self.config)
        return simulate(self.config)

    @property
    def error(self) -> float:
        """(simulated − measured) / measured pipeline time of the measured schedule."""
        return self.simulate().makespan / self.measured.makespan - 1.0

    def stage_costs(self, stages: int | None = None) -> dict[int, dict[str, float]]:
        """Per-stage ``{"f", "b", "w"}`` (b = I, or the part of B that is not W) for ``stages``
        stages (default: the measured count); other counts redistribute the costs over the
        model's depth, each new stage taking the measured stages' costs in proportion to the
        share of them it spans."""
        f, b, w = _effective(self.stages, self.w_fraction)
        S = len(f)
        target = S if stages is None else stages
        if isinstance(target, bool) or not isinstance(target, int) or target < 1:
            raise ConfigError("stages", stages, "give a whole number of stages >= 1")
        edges_old = np.arange(S + 1) / S
        edges_new = np.arange(target + 1) / target
        # overlap[s_new, s_old] = share of old stage s_old inside new stage s_new
        lo = np.maximum(edges_new[:-1, None], edges_old[None, :-1])
        hi = np.minimum(edges_new[1:, None], edges_old[None, 1:])
        share = np.clip(hi - lo, 0, None) * S
        return {s: {"f": float(share[s] @ f), "b": float(share[s] @ b), "w": float(share[s] @ w)}
                for s in range(target)}

    def config_for(self, schedule: str | None = None, *, devices: int | None = None,
                   microbatches: int | None = None, stages_per_device: int | None = None, **options) -> Config:
        """The calibrated costs for another schedule (a registry name), device, microbatch or
        stage count; ``options`` replace other Config fields. The stage count is the target
        schedule's (p·v, or the V schedules' 2p); costs are redistributed when it differs."""
        p = self.program.devices if devices is None else devices
        name = self.schedule if schedule is None else schedule
        if schedule is None and stages_per_device is None and name != "custom":
            stages_per_device = self.program.stages // self.program.devices
        probe = Config(schedule=name, devices=p,
                       microbatches=self.program.microbatches if microbatches is None else microbatches,
                       stages_per_device=stages_per_device, comm=self.comm,
                       time_unit=self.measured.config.time_unit)  # ms for a real trace; none for a unitless run
        stages = probe.stages if probe.stages is not None else self.program.stages
        costs = self.stage_costs(stages)
        uniform = {k: float(np.mean([c[k] for c in costs.values()])) * stages / p for k in ("f", "b", "w")}
        fb = None if self.fb_ratio is None else self.fb_ratio * sum(uniform.values())
        fields = dict(f=uniform["f"], b=uniform["b"], w=uniform["w"], fb=fb, stage_costs=costs,
                      label=options.pop("label", f"{probe.schedule} (calibrated)"))
        fields.update(options)
        return probe.replace(**fields)

    def __repr__(self) -> str:
        return (f"<Calibration of {self.schedule}: {self.program.stages} stages, comm {self.comm:.3g} ms, "
                f"re-simulated {self.error:+.1%}>")

    def report(self) -> str:
        """The fit in a few lines: per-stage medians and spreads, overheads, comm, the error."""
        st = self.stages
        lines = [f"calibrated from {len(self.measured.steps)} step(s), "
                 f"{len(self.measured.samples)} ops (ms; median ± median absolute deviation)"]
        for s in range(len(st.median)):
            cells = [f"{k} {st.median[s, j]:.3g}±{st.spread[s, j]:.2g} (+{st.overhead[s, j]:.2g})"
                     for j, k in enumerate(_KINDS) if st.count[s, j]]
            lines.append(f"  stage {s}: " + ", ".join(cells))
        lines.append("  (+x) is the host overhead before such ops, added to their cost")
        lines.append(f"  comm {self.comm:.3g} ms (mean of {self.comm_samples} waited-for transfers)")
        if self.fb_ratio is not None:
            lines.append(f"  overlapped F&B: {self.fb_ratio:.3f} × (F + B)")
        if np.all(st.count[:, 2] == 0) and np.any(st.count[:, 1]):
            lines.append(f"  full backwards only: W taken as {self.w_fraction:g} of B for split schedules")
        sim = self.simulate()
        lines.append(f"  measured pipeline time {self.measured.makespan:.4g} ms, simulated {sim.makespan:.4g} ms "
                     f"({gap_words(sim.makespan, self.measured.makespan)})")
        return "\n".join(lines)


def gap_words(simulated: float, measured: float, unit: str | None = None) -> str:
    """How far the simulated time is from the measured one, in words rather than a sign that
    reads either way: "0.7% under the measured", or with the amount in ``unit`` (a suffix such
    as " ms", or "" for a unitless run) "3.6 ms, 0.7% under the measured"."""
    if simulated == measured:
        return "equal to the measured"
    side = "under" if simulated < measured else "over"
    share = f"{abs(simulated - measured) / measured:.1%}" if measured else "∞"
    amount = f"{abs(simulated - measured):.4g}{unit}, " if unit is not None else ""
    return f"{amount}{share} {side} the measured"


def _effective(fit: StageFit, w_fraction: float):
    """Per-stage f, b (I), w costs with overheads, B split by ``w_fraction`` where I/W are absent."""
    cost = np.nan_to_num(fit.median) + np.nan_to_num(fit.overhead)
    has_split = fit.count[:, 2] > 0
    f = cost[:, 0]
    b = np.where(has_split, cost[:, 2], cost[:, 1] * (1 - w_fraction))
    w = np.where(has_split, cost[:, 3], cost[:, 1] * w_fraction)
    return f, b, w


def _kind_codes(kind: np.ndarray) -> np.ndarray:
    """"F", "B", "I", "W" → the program's kind codes 0..3."""
    return np.select([kind == k for k in _KINDS], range(4), -1).astype(np.int8)


def _mad(x: np.ndarray) -> float:
    return float(np.median(np.abs(x - np.median(x))))


@checked_arguments
def calibrate(measured: Measured, *, w_fraction: float = 0.5) -> Calibration:
    """Fit per-stage costs and comm to a measured run (module docstring); returns a
    :class:`Calibration` whose ``config`` reproduces the run when simulated."""
    if not isinstance(measured, Measured):
        raise ConfigError("measured", type(measured).__name__, "give what ppviz.load_trace returns")
    if isinstance(w_fraction, bool) or not isinstance(w_fraction, (int, float)) or not 0 <= w_fraction <= 1:
        raise ConfigError("w_fraction", w_fraction, "give the share of a full backward that is W: 0 to 1")
    program = measured.program
    S = program.stages
    samples = measured.samples
    prev_end, ready = _gaps(measured)
    comm, waited, comm_samples = _comm_fit(samples, prev_end, ready)
    gaps = samples.start - prev_end
    kind_index = _kind_codes(samples.kind)
    median = np.full((S, 4), np.nan)
    spread = np.full((S, 4), np.nan)
    count = np.zeros((S, 4), np.int64)
    overhead = np.full((S, 4), np.nan)
    solo = ~samples.pair
    duration = samples.duration
    all_gaps = gaps[~waited & ~np.isnan(gaps)]
    fallback = float(np.mean(all_gaps)) if len(all_gaps) else 0.0
    for s in range(S):
        for j in range(4):
            sel = solo & (samples.stage == s) & (kind_index == j)
            if not sel.any():
                continue
            median[s, j] = np.median(duration[sel])
            spread[s, j] = _mad(duration[sel])
            count[s, j] = int(sel.sum())
            g = gaps[sel & ~waited & ~np.isnan(gaps)]
            overhead[s, j] = float(np.mean(g)) if len(g) else fallback
    fit = StageFit(median, spread, count, overhead)
    fb_ratio = _fb_ratio(samples, fit, kind_index, w_fraction)
    return Calibration(program=program, measured=measured, stages=fit, comm=comm, comm_samples=comm_samples,
                       fb_ratio=fb_ratio, w_fraction=float(w_fraction))


def _gaps(measured: Measured):
    """Per sample: when its device's previous op ended (NaN for a device's first op), and when
    its input from another device was produced (NaN if it has none)."""
    samples = measured.samples
    n = len(samples)
    prev_end = np.full(n, np.nan)
    ready = np.full(n, np.nan)
    program = measured.program
    for k in range(len(measured.steps)):
        rows = np.flatnonzero(samples.step == k)
        # samples of a step are in program order: rebuild the step's program to get its dependencies
        step_program = Program(_kind_codes(samples.kind[rows]),
                               samples.stage[rows], samples.microbatch[rows],
                               samples.pair[rows] & (samples.kind[rows] == "F"),
                               np.r_[0, np.cumsum(np.bincount(samples.device[rows], minlength=program.devices))],
                               stages=program.stages, microbatches=program.microbatches,
                               forward_only=program.forward_only)
        dep = dependencies(step_program)
        end, device = samples.end[rows], samples.device[rows]
        before = np.r_[np.nan, end[:-1]]
        before[step_program.offsets[:-1][step_program.offsets[:-1] < len(rows)]] = np.nan
        second = np.flatnonzero(step_program.pair) + 1
        before[second] = before[second - 1]
        prev_end[rows] = before
        cross = dep >= 0
        cross[cross] = device[dep[cross]] != device[cross]
        step_ready = np.full(len(rows), np.nan)
        step_ready[cross] = end[dep[cross]]
        ready[rows] = step_ready
    return prev_end, ready


def _waited(prev_end, ready, wait, latency: float) -> np.ndarray:
    """Ops that waited for their input from another device: produced ``latency`` earlier, it
    came after their device was free, or their span waited longer than ``latency`` for its
    receive (a transfer held up behind others on the link, not just the receive's posting)."""
    held_up = (wait > latency) if latency > 0 else np.zeros(len(wait), bool)
    return ~np.isnan(ready) & (~(ready + latency <= prev_end) | held_up)


def _comm_fit(samples, prev_end, ready):
    """The mean latency of the transfers ops waited for, and which ops waited. First the ops
    whose input was produced after their device was free; then, with that latency, also those
    whose input was produced before but arrived after (one refinement)."""
    start = samples.start
    comm = 0.0
    waited = _waited(prev_end, ready, samples.wait, comm)
    for _ in range(2):
        gaps = start[waited] - ready[waited]
        comm = max(0.0, float(np.mean(gaps))) if len(gaps) else 0.0
        waited = _waited(prev_end, ready, samples.wait, comm)
    return comm, waited, int(waited.sum())


def _fb_ratio(samples, fit: StageFit, kind_index, w_fraction) -> float | None:
    """Median of (pair time) / (its F + its backward, fitted) over overlapped pairs."""
    firsts = np.flatnonzero(samples.pair & (samples.kind == "F"))
    firsts = firsts[firsts + 1 < len(samples)]
    if not len(firsts):
        return None
    f, b, w = _effective(fit, w_fraction)
    back = firsts + 1
    back_stage = samples.stage[back]
    parts = f[samples.stage[firsts]] + np.where(kind_index[back] == 1, b[back_stage] + w[back_stage], b[back_stage])
    ok = parts > 0
    return float(np.median(samples.duration[firsts][ok] / parts[ok])) if ok.any() else None
