"""``ppviz.calibrate(measured)``: the costs a measured run implies, as a :class:`ppviz.Config`.

A step's time is made of parts that scale differently with its size, and the fit keeps them
apart so that its predictions of other microbatch counts and schedules carry each part over by
its own rule. Op durations are fitted robustly, delays by their expectation, over every op of
every complete step the trace holds:

* **Per stage and kind**: the median duration of F, B, I and W of each stage over every
  microbatch but the first (overlapped F&B slots are left out of these and fitted as a ratio,
  ``fb``), so that a descheduled op or a garbage collection does not move the fit. These follow
  the model's layers: a stage of another size takes its share of them.
* **Warm-up**: how much longer the first microbatch's op of each kind takes on each stage than
  the others (the median over steps; an allocator, lazy initialisation, cold caches; none where
  that is within three standard errors of that median, from the others' spread), given to the
  config as ``stage_costs[s]["warmup_f"]`` (``"warmup_b"``, ``"warmup_w"``): once per step,
  whatever the microbatch count. It follows the layers too.
* **Host gap**: the gap before an op on its device when it was not waiting for an input
  (posting sends and receives, the loss, Python) is time the simulator has no other place
  for; its mean per stage and kind is added to the op's cost (reported as ``overhead``; for a
  kind that always waits, such as 1F1B's backwards on all but the last stage, its wait beyond
  the communication latency). It is a cost per op, not per layer: a stage of another size pays
  the gaps of the stages it spans, on average, on each of its ops, and a split schedule's I and
  W each pay a full backward's.
* **Per-step fixed cost**: where the trace holds each step's span (the profiler's steps), the
  time from the step's start to its first op (zero_grad, the schedule's set-up: ``setup``) and
  from its last op to the step's end (the optimizer step, the schedule's tear-down: ``tail``),
  medians over steps, given to the config as a :class:`ppviz.Step`: the set-up before the
  pipeline and the tail as each device's ``optimizer`` time, fixed whatever the microbatches
  or the schedule.
* **Communication**: the mean gap between a producer's end and its consumer's start on another
  device, over the dependencies the consumer was waiting for (its input came later than its
  device was free), so that busy consumers do not inflate it; less the consumer's host gap,
  which the simulation adds to the consumer's cost once its input is there. An op whose input
  was there before its device was free but whose span still waited for the receive (the
  receive's own time; on gloo, a transfer queued behind the other direction's) lost that time
  at the op: it is in the op's host gap, not in the latency, which it would inflate by all the
  time the device was busy before.
* A run with full backwards (B) cannot tell I from W: ``w_fraction`` of each B (default ½, the
  zero-bubble paper's T_W ≈ T_B, arXiv 2401.10241 §2) is given to W so that split schedules can
  be predicted; it does not change any schedule with full backwards.

Delays are means, not medians: they add up along the pipeline's critical path, and on a busy
host a few transfers stall for milliseconds (a send that takes 4 ms to post) — the median
drops exactly the stalls that lengthen the step, and re-simulating with it comes out short.

The result is a :class:`Calibration`: ``config`` (the measured schedule's name when ppviz knows
it, else "custom" with ``program``), ``simulate()`` (the measured schedule re-simulated), the
relative ``error`` of its pipeline time and ``step_error`` of its step time, ``report()``, and
:meth:`Calibration.config_for`, the same costs for another schedule, microbatch count or stage
count (costs follow the model's layers: a stage of a different size takes its share of the
measured stages it spans).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core.config import Config
from ..core.engine import dependencies, simulate
from ..core.errors import ConfigError, checked_arguments
from ..core.measured import Measured
from ..core.program import Program
from ..core.result import Result, unit_suffix
from ..core.step import Step

_KINDS = "FBIW"
#: a first microbatch's op is warmed up when its median over the steps is above the others' median
#: by more than three standard errors of a median of that many samples (a standard deviation is
#: 1.4826 median absolute deviations, a median's standard error 1.2533 σ/√n): less is their spread
_SIGNIFICANT = 3 * 1.4826 * 1.2533


@dataclass(frozen=True)
class StageFit:
    """Per stage (rows) and kind (columns F, B, I, W): the ``median`` duration of every
    microbatch's op but the first's, the ``spread`` (median absolute deviation), the number of
    samples ``count``, the mean host ``overhead`` (the gap) before such ops and the ``warmup``,
    what the first microbatch's op takes on top of the median (0 where it is not slower); NaN
    where the run has no such op."""

    median: np.ndarray
    spread: np.ndarray
    count: np.ndarray
    overhead: np.ndarray
    warmup: np.ndarray


@dataclass(frozen=True)
class FixedCost:
    """The step's time outside its pipeline ops, medians over the measured steps: ``setup``
    (from the step's start to its first op) and ``tail`` (from its last op to the step's end);
    ``measured`` is False when the trace holds no step spans (both are 0 then)."""

    setup: float
    tail: float
    measured: bool


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
    fixed: FixedCost = FixedCost(0.0, 0.0, False)
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

    @property
    def step_error(self) -> float:
        """(simulated − measured) / measured step time (the pipeline time where the trace holds
        no step spans)."""
        return self.simulate().step_time / self.measured.step_time - 1.0

    def stage_costs(self, stages: int | None = None) -> dict[int, dict[str, float]]:
        """Per-stage ``{"f", "b", "w"}`` (the computation; b = I, or the part of B that is not
        W) and, where not 0, the host gaps per op ``"gap_f"``, ``"gap_b"``, ``"gap_w"`` and the
        warm-ups ``"warmup_f"``, ``"warmup_b"``, ``"warmup_w"`` (``Config``'s ``stage_costs``), for
        ``stages`` stages (default: the measured count); other counts redistribute the costs
        over the model's depth, each new stage taking the measured stages' computation and
        warm-up in proportion to the share of them it spans, and their host gap per op as the
        mean over that share."""
        S = len(self.stages.median)
        target = S if stages is None else stages
        if isinstance(target, bool) or not isinstance(target, int) or target < 1:
            raise ConfigError("stages", stages, "give a whole number of stages >= 1")
        edges_old = np.arange(S + 1) / S
        edges_new = np.arange(target + 1) / target
        # overlap[s_new, s_old] = share of old stage s_old inside new stage s_new
        lo = np.maximum(edges_new[:-1, None], edges_old[None, :-1])
        hi = np.minimum(edges_new[1:, None], edges_old[None, 1:])
        share = np.clip(hi - lo, 0, None) * S
        mean = share / share.sum(axis=1, keepdims=True)
        compute = _split(self.stages, np.nan_to_num(self.stages.median), self.w_fraction)
        warm = _split(self.stages, np.nan_to_num(self.stages.warmup), self.w_fraction)
        gap = _per_op(self.stages, np.nan_to_num(self.stages.overhead))
        out = {}
        for s in range(target):
            costs = {k: float(share[s] @ c) for k, c in zip("fbw", compute)}
            costs.update({f"gap_{k}": float(mean[s] @ g) for k, g in zip("fbw", gap) if mean[s] @ g > 0})
            costs.update({f"warmup_{k}": float(share[s] @ x) for k, x in zip("fbw", warm) if share[s] @ x > 0})
            out[s] = costs
        return out

    def step_for(self, program: Program) -> Step | None:
        """The measured per-step fixed cost for ``program``: its ``setup``, and its ``tail`` as
        each device's optimizer time, shared among the stages the device holds (None when the
        trace holds no step spans)."""
        if not self.fixed.measured:
            return None
        held = [len(np.unique(program.stage[program.device == d])) for d in range(program.devices)]
        share = self.fixed.tail / float(np.mean(held))
        return Step(setup=self.fixed.setup, optimizer=(share,) * program.stages)

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
        config = probe.replace(**fields)
        if "step" in options or not self.fixed.measured:
            return config
        return config.replace(step=self.step_for(self.program if name == "custom" else config.build()))

    def __repr__(self) -> str:
        return (f"<Calibration of {self.schedule}: {self.program.stages} stages, comm {self.comm:.3g} ms, "
                f"re-simulated {self.error:+.1%}>")

    def report(self) -> str:
        """The fit in a few lines: per-stage medians and spreads, host gaps and warm-ups, comm,
        the per-step fixed cost, and the re-simulated pipeline and step times."""
        st = self.stages
        unit = unit_suffix(self.measured.config.time_unit)
        lines = [f"calibrated from {len(self.measured.steps)} step(s), {len(self.measured.samples)} ops "
                 f"({unit.strip() + '; ' if unit else ''}median ± median absolute deviation)"]
        for s in range(len(st.median)):
            cells = [f"{k} {st.median[s, j]:.3g}±{st.spread[s, j]:.2g} (+{st.overhead[s, j]:.2g}"
                     + (f", first +{st.warmup[s, j]:.2g}" if st.warmup[s, j] > 0 else "") + ")"
                     for j, k in enumerate(_KINDS) if st.count[s, j]]
            lines.append(f"  stage {s}: " + ", ".join(cells))
        gaps = st.overhead[st.count > 0]
        lines.append(f"  (+x) is the host gap before such ops, added to their cost: {np.mean(gaps):.3g}{unit} per op "
                     f"on average; it scales with the ops")
        warm = np.nan_to_num(st.warmup)
        lines.append(f"  warm-up: the first microbatch's ops (first +x) take {warm.sum():.4g}{unit} more in all, "
                     f"{warm[:, 0].sum():.4g}{unit} of it in forwards; once per step, whatever the microbatches")
        lines.append(f"  comm {self.comm:.3g}{unit} (mean of {self.comm_samples} waited-for transfers, less their "
                     f"consumers' host gaps)")
        if self.fb_ratio is not None:
            lines.append(f"  overlapped F&B: {self.fb_ratio:.3f} × (F + B)")
        if np.all(st.count[:, 2] == 0) and np.any(st.count[:, 1]):
            lines.append(f"  full backwards only: W taken as {self.w_fraction:g} of B for split schedules")
        fixed = self.fixed
        if fixed.measured:
            lines.append(f"  per-step fixed cost {fixed.setup + fixed.tail:.4g}{unit}: {fixed.setup:.4g}{unit} before the "
                         f"first op (set-up), {fixed.tail:.4g}{unit} after the last (optimizer, tear-down); fixed "
                         f"whatever the microbatches or the schedule")
        else:
            lines.append("  per-step fixed cost: not measured (the trace holds no step spans: profile with a "
                         "torch.profiler schedule, whose ProfilerStep#N spans hold each step)")
        sim = self.simulate()
        lines.append(f"  measured pipeline time {self.measured.makespan:.4g} ms, simulated {sim.makespan:.4g} ms "
                     f"({gap_words(sim.makespan, self.measured.makespan)})")
        if fixed.measured:
            lines.append(f"  measured step time {self.measured.step_time:.4g}{unit}, simulated {sim.step_time:.4g}{unit} "
                         f"({gap_words(sim.step_time, self.measured.step_time)})")
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
    """Per-stage f, b (I), w costs with host gaps, B split by ``w_fraction`` where I/W are absent."""
    return _split(fit, np.nan_to_num(fit.median) + np.nan_to_num(fit.overhead), w_fraction)


def _split(fit: StageFit, cost: np.ndarray, w_fraction: float):
    """Per-stage f, b (I), w of a (stage, kind) table: I and W as measured, or a full B's split
    by ``w_fraction`` where the run has no I/W."""
    has_split = fit.count[:, 2] > 0
    f = cost[:, 0]
    b = np.where(has_split, cost[:, 2], cost[:, 1] * (1 - w_fraction))
    w = np.where(has_split, cost[:, 3], cost[:, 1] * w_fraction)
    return f, b, w


def _per_op(fit: StageFit, value: np.ndarray):
    """Per-stage f, b (I), w of a (stage, kind) table of times each op pays (a host gap): a full
    B's for I and W each where the run has no I/W, as each is an op of its own."""
    has_split = fit.count[:, 2] > 0
    return value[:, 0], np.where(has_split, value[:, 2], value[:, 1]), np.where(has_split, value[:, 3], value[:, 1])


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
    kind_index = _kind_codes(samples.kind)
    solo = ~samples.pair
    overhead, comm, comm_samples = _delays(samples, prev_end, ready, kind_index, solo, S)
    median = np.full((S, 4), np.nan)
    spread = np.full((S, 4), np.nan)
    count = np.zeros((S, 4), np.int64)
    warmup = np.full((S, 4), np.nan)
    first = samples.microbatch == 0
    duration = samples.duration
    for s in range(S):
        for j in range(4):
            sel = solo & (samples.stage == s) & (kind_index == j)
            if not sel.any():
                overhead[s, j] = np.nan
                continue
            rest = sel & ~first if (sel & ~first).any() else sel  # one microbatch: nothing to tell it from
            median[s, j] = np.median(duration[rest])
            spread[s, j] = _mad(duration[rest])
            count[s, j] = int(sel.sum())
            firsts = duration[sel & first]
            excess = float(np.median(firsts)) - median[s, j] if len(firsts) else 0.0
            significant = _SIGNIFICANT * spread[s, j] / np.sqrt(max(len(firsts), 1))
            warmup[s, j] = excess if excess > significant else 0.0
    fit = StageFit(median, spread, count, overhead, warmup)
    fb_ratio = _fb_ratio(samples, fit, kind_index, w_fraction)
    return Calibration(program=program, measured=measured, stages=fit, comm=comm, comm_samples=comm_samples,
                       fb_ratio=fb_ratio, w_fraction=float(w_fraction), fixed=_fixed_cost(measured, fit))


def _fixed_cost(measured: Measured, fit: StageFit) -> FixedCost:
    """The median time of the measured steps before their first op and after their last; the
    host gap before the first op is its own, in its cost, not the set-up's."""
    steps = measured.steps
    if np.isnan(steps.step_time).any():
        return FixedCost(0.0, 0.0, False)
    first = int(np.argmin(measured.ops.start))
    gap = np.nan_to_num(fit.overhead)[measured.program.stage[first], measured.program.kind[first]]
    return FixedCost(max(0.0, float(np.median(steps.before_ops)) - float(gap)), float(np.median(steps.after_ops)),
                     True)


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


def _waited(prev_end, ready, latency: float) -> np.ndarray:
    """Ops that waited for their input from another device: produced ``latency`` earlier, it
    came after their device was free, or as it became free (a device's first op always waits
    for its input). A tie counts as a wait: where every op of a kind ties, as a simulated run's
    do when a faster stage feeds a slower one, a gap and a latency explain the starts equally
    well, and the latency is what the run had."""
    return ~np.isnan(ready) & ~(ready + latency < prev_end)


#: rounds of the delays' fit (each classifies the ops by the last round's latency); the fit
#: settles in two or three on real runs, and a simulated run's in as many as its ops need
_ROUNDS = 8


def _delays(samples, prev_end, ready, kind_index, solo, S: int):
    """The host gap per stage and kind, the communication latency and the number of waiting
    ops it is fitted on (module docstring). An op that did not wait shows its gap as the time from its
    device's previous op; one that waited shows latency + gap from its input's producer (its
    device spent the gap while it waited, and the simulation adds it to the op's cost), so the
    latency is fitted on the waiting ops of kinds whose gap is seen, and the gap of a kind that
    always waits (1F1B's backwards on every stage but the last) from the latency. The ops that
    waited are those whose input came later than their device was free, by the latency of the
    round before, starting from none."""
    start = samples.start
    gaps = start - prev_end
    cell = samples.stage * 4 + kind_index
    # from above: no op starts sooner after its input than the latency (plus its gap), so the least
    # such delay bounds the latency; from below (none), ops that waited for a latency look like
    # ops with a host gap, and the rounds settle on a latency split between the two
    delay = start - ready
    comm = max(0.0, float(np.nanmin(delay))) if (~np.isnan(delay)).any() else 0.0
    waited = None
    for _ in range(_ROUNDS):
        now = _waited(prev_end, ready, comm)
        if waited is not None and np.array_equal(now, waited):
            break
        waited = now
        seen = solo & ~waited & ~np.isnan(gaps)
        total = np.bincount(cell[seen], weights=gaps[seen], minlength=4 * S)
        n = np.bincount(cell[seen], minlength=4 * S)
        gap = np.maximum(np.divide(total, n, out=np.zeros(4 * S), where=n > 0), 0.0)  # below 0 is rounding
        known = waited & (n[cell] > 0)
        fitted_on = known if known.any() else waited  # no gap seen: latency and gap are one
        if fitted_on.any():
            comm = max(0.0, float(np.mean(start[fitted_on] - ready[fitted_on] - gap[cell[fitted_on]])))
    blind = waited & solo & (n[cell] == 0)
    total = np.bincount(cell[blind], weights=start[blind] - ready[blind] - comm, minlength=4 * S)
    count = np.bincount(cell[blind], minlength=4 * S)
    from_latency = (n == 0) & (count > 0)
    gap[from_latency] = np.maximum(total[from_latency] / count[from_latency], 0.0)
    # a kind seen neither way (a device's only op): the mean gap of those seen
    gap[(n == 0) & (count == 0)] = float(np.mean(gap[n > 0])) if (n > 0).any() else 0.0
    return gap.reshape(S, 4), comm, int(fitted_on.sum())


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
