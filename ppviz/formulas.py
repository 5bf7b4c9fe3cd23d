"""Published closed-form bubble and memory figures, shown next to the simulated ones.

Notation: p devices, m microbatches, v stages per device, f/b/w the times of F, I and W for
1/p of the model (full backward = b + w). Idle time is per device; the bubble fraction is
idle / makespan and the bubble rate idle / ideal, with ideal = m·(f+b+w). Memory is in
activation units (one microbatch through 1/p of the model).

Each formula holds for uniform stage costs and ``comm = 0``; ``ClosedForm.applies`` says
whether this config meets every assumption the formula makes, so that the simulated value
must equal it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ClosedForm:
    schedule: str
    idle: float
    ideal: float
    peak_activation: tuple[float, ...] | None
    bubble_formula: str
    memory_formula: str | None
    source: str
    assumptions: str
    applies: bool

    @property
    def makespan(self) -> float:
        return self.ideal + self.idle

    @property
    def bubble_fraction(self) -> float:
        return self.idle / self.makespan if self.makespan else 0.0

    @property
    def bubble_rate(self) -> float:
        return self.idle / self.ideal if self.ideal else 0.0


def _base(config) -> tuple[int, int, int, float, float, float, float]:
    return config.devices, config.microbatches, config.stages_per_device, config.f, config.b, config.w, config.activation


def _uniform(config) -> bool:
    return config.uniform and config.comm == 0 and not any("activation" in c for c in config.stage_costs.values())


def gpipe(config) -> ClosedForm:
    p, m, _, f, b, w, a = _base(config)
    return ClosedForm(
        schedule="gpipe",
        idle=(p - 1) * (f + b + w),
        ideal=m * (f + b + w),
        peak_activation=tuple(m * a for _ in range(p)),
        bubble_formula="(p−1)(f+b+w)",
        memory_formula="m",
        source="GPipe (arXiv 1811.06965); Ultra-Scale Playbook",
        assumptions="uniform stage costs, comm = 0",
        applies=_uniform(config),
    )


def one_f_one_b(config) -> ClosedForm:
    p, m, _, f, b, w, a = _base(config)
    return ClosedForm(
        schedule="1f1b",
        idle=(p - 1) * (f + b + w),
        ideal=m * (f + b + w),
        peak_activation=tuple(min(p - r, m) * a for r in range(p)),
        bubble_formula="(p−1)(f+b+w)",
        memory_formula="min(p−r, m) on rank r",
        source="PipeDream-Flush (arXiv 2006.09503); torch Schedule1F1B warmup",
        assumptions="uniform stage costs, comm = 0",
        applies=_uniform(config),
    )


def interleaved(config) -> ClosedForm:
    from .schedules.one_f_one_b import group_size, interleaved_warmup

    p, m, v, f, b, w, a = _base(config)
    g = group_size(config)
    peaks = tuple(min(interleaved_warmup(r, p, v, m, g) + 1, m * v) * a / v for r in range(p))
    return ClosedForm(
        schedule="interleaved-1f1b",
        idle=(p - 1) * (f + b + w) / v,
        ideal=m * (f + b + w),
        peak_activation=peaks,
        bubble_formula="(p−1)(f+b+w)/v",
        memory_formula="min(2(p−r−1) + (v−1)g + 1, m·v)/v on rank r; p + (p−1)/v on rank 0 with g = p",
        source="Megatron-LM (arXiv 2104.04473); Ultra-Scale Playbook",
        assumptions="uniform stage costs, comm = 0, m a multiple of p, g = p",
        applies=_uniform(config) and m % p == 0 and g == p,
    )


def zb_h1(config) -> ClosedForm:
    p, m, _, f, b, w, a = _base(config)
    s = config.w_share
    return ClosedForm(
        schedule="zb-h1",
        idle=(p - 1) * (f + b - w),
        ideal=m * (f + b + w),
        peak_activation=tuple(((p - r) + r * s) * a for r in range(p)) if m >= p else None,
        bubble_formula="(p−1)(f+b−w)",
        memory_formula="p on rank 0; (p−r) + r·w_share on rank r",
        source="Zero Bubble PP (arXiv 2401.10241) §3, ZB-H1",
        assumptions="uniform stage costs, comm = 0, m >= p, w <= min(f, b)",
        applies=_uniform(config) and m >= p and w <= min(f, b),
    )


def looped_bfs(config) -> ClosedForm:
    p, m, v, f, b, w, a = _base(config)
    return ClosedForm(
        schedule="looped-bfs",
        idle=(p - 1) * (f + b + w) / v,
        ideal=m * (f + b + w),
        peak_activation=tuple(m * a for _ in range(p)),
        bubble_formula="(p−1)(f+b+w)/v",
        memory_formula="m",
        source="derived for torch ScheduleLoopedBFS (Breadth-First PP, arXiv 2211.05953); checked by simulation",
        assumptions="uniform stage costs, comm = 0, m >= p or v = 1",
        applies=_uniform(config) and (m >= p or v == 1),
    )


def zb_h2(config) -> ClosedForm:
    p, m, _, f, b, w, a = _base(config)
    s = config.w_share
    full = m >= 2 * p - 1
    return ClosedForm(
        schedule="zb-h2",
        idle=(p - 1) * max(f, f + b - 2 * w),
        ideal=m * (f + b + w),
        peak_activation=tuple(((2 * p - 2 * r - 1) + 2 * r * s) * a for r in range(p)) if full else None,
        bubble_formula="(p−1)·max(f, f+b−2w)",
        memory_formula="(2p−2r−1) + 2r·w_share on rank r; 2p−1 on rank 0",
        source=("Zero Bubble PP (arXiv 2401.10241) §2.2–2.3, ZB-H2. Table 2's (p−1)(f+b−2w) is per stage, from "
                "each stage's own first F; timed from t = 0 the last stage's (p−1)·f fill is added where larger"),
        assumptions="uniform stage costs, comm = 0, m >= 2p−1, w <= f",
        applies=_uniform(config) and full and w <= f,
    )


def interleaved_zb(config) -> ClosedForm:
    p, m, v, f, b, w, _ = _base(config)
    return ClosedForm(
        schedule="interleaved-zb",
        idle=(p - 1) * (f + b - w) / v,
        ideal=m * (f + b + w),
        peak_activation=None,
        bubble_formula="(p−1)(f+b−w)/v",
        memory_formula=None,
        source="ZB-H1's (p−1)(f+b−w) (arXiv 2401.10241) over v chunks; not published for v > 1, checked by simulation",
        assumptions="uniform stage costs, comm = 0, m >= p, w <= min(f, b)",
        applies=_uniform(config) and m >= p and w <= min(f, b),
    )


def overlap_1f1b(config) -> ClosedForm:
    from .schedules.one_f_one_b import group_size, interleaved_warmup

    p, m, v, f, b, w, a = _base(config)
    g = group_size(config)
    full = f + b + w
    pair = full if config.fb is None else config.fb
    warmups = [min(interleaved_warmup(r, p, v, m, g) + 1, m * v) for r in range(p)]
    busiest = max(k * full + (m * v - k) * pair for k in warmups) / v
    outside = p * (v - 1) + 1
    makespan = ((p - 1) * full + outside * full + (m * v - outside) * pair) / v
    makespan_holds = _uniform(config) and pair >= max(f, b + w) and (v == 1 or (m % p == 0 and g == p))
    return ClosedForm(
        schedule=config.schedule,
        idle=makespan - busiest,
        ideal=busiest,
        peak_activation=tuple(min(k + 1, m * v) * a / v for k in warmups),
        bubble_formula="(p−1)(f+b+w)/v + (n−k)(f+b+w−fb)/v, n = p(v−1)+1, k = its forwards outside F&B slots",
        memory_formula="min(warmup_r + 1, m·v)/v on rank r; warmup_r = min(2(p−r−1) + (v−1)g + 1, m·v)",
        source="Victarry/PP-Schedule-Visualization formula.py, overlap_1f1b_execution_time_by_formula",
        assumptions=("uniform stage costs, comm = 0, fb >= max(f, b+w), m a multiple of p and g = p when v > 1; "
                     "the makespan holds there for any such fb, but idle is the busiest device's and matches "
                     "every device only when fb = f+b+w (no overlap gain)"),
        applies=makespan_holds and pair == full,
    )


def zb_v(config) -> ClosedForm:
    p, m, _, f, b, w, a = _base(config)
    full = m >= 2 * p - 1
    return ClosedForm(
        schedule="zb-v",
        idle=(p - 1) * f / 2,
        ideal=m * (f + b + w),
        peak_activation=tuple(p * a for _ in range(p)) if full else None,
        bubble_formula="(p−1)·f/2: only the fill, p−1 half-stage forwards before device p−1 starts",
        memory_formula="p on every device (2p chunks of ½), 1F1B's peak",
        source=("ZB-V, Zero Bubble PP (arXiv 2401.10241) §6, as torch ScheduleZBVZeroBubble orders it; the "
                "published bubble 0 (f = b = w) leaves out the fill; this form is checked by simulation"),
        assumptions="uniform stage costs, comm = 0, m >= 2p−1, f = b, f/2 <= w <= f",
        applies=_uniform(config) and full and f == b and f / 2 <= w <= f,
    )


def _v_family(config, name: str, passes: int, peaks: tuple | None, least_m: int, bubble: str,
              memory: str) -> ClosedForm:
    p, m, _, f, b, w, a = _base(config)
    return ClosedForm(
        schedule=name,
        idle=passes * f / 2,
        ideal=m * (f + b + w),
        peak_activation=None if peaks is None else tuple(x * a for x in peaks),
        bubble_formula=bubble,
        memory_formula=memory,
        source=("Pipeline Parallelism with Controllable Memory (arXiv 2405.15362) and its HF Space: memory as "
                "published, bubble published only as a rate; the exact idle is read off the authors' "
                "construction and checked by simulation for p <= 32"),
        assumptions=f"uniform stage costs, comm = 0, f = b = w, m >= {least_m}",
        applies=_uniform(config) and f == b == w and m >= least_m,
    )


def v_half(config) -> ClosedForm:
    p = config.devices
    passes = 0 if p == 1 else 1 if p == 2 else 6 * ((p + 1) // 2) - 7
    return _v_family(
        config, "v-half", passes, tuple((p + 2) // 2 for _ in range(p)), p + 2,
        bubble="(6⌈p/2⌉ − 7)·f/2 for p >= 3 (f/2 at p = 2): ≈ p/(2m) of the makespan",
        memory="(p+2)//2 on every device, ≈ half of 1F1B's p (any w_share)")


def v_min(config) -> ClosedForm:
    p = config.devices
    passes = 0 if p == 1 else 4 * p - 5 - 2 * (p % 3 == 0)
    base = (p + 4) // 3
    peaks = None
    if config.w_share == 1 or p % 3 != 2:
        peaks = tuple(base - 0.5 if (d == 0 and p % 3 == 2) else base for d in range(p))
    return _v_family(
        config, "v-min", passes, peaks, p + 1,
        bubble="(4p − 5 − 2·[3 divides p])·f/2 for p >= 2: ≈ 2p/(3m) of the makespan",
        memory=("(p+4)//3 on every device, ≈ a third of 1F1B's p; device 0 holds half a unit less when "
                "p mod 3 = 2 (the figures count an activation until its W: w_share = 1)"))


def dualpipe(config) -> ClosedForm:
    p, m, _, f, b, w, a = _base(config)
    pair = f + b + w if config.fb is None else config.fb
    return ClosedForm(
        schedule="dualpipe",
        idle=(p / 2 - 1) * (pair + (b + w) - 3 * w),
        ideal=m * (f + b + w),
        peak_activation=tuple((p + 1) * a for _ in range(p)),
        bubble_formula="(p/2 − 1)(F&B + B − 3W), B = b + w, W = w, F&B = fb",
        memory_formula="p + 1 on every device (PP+1), beside 2× parameters",
        source="DeepSeek-V3 (arXiv 2412.19437) Table 2; deepseek-ai/DualPipe README",
        assumptions=("uniform stage costs, comm = 0, f = b, w <= f, fb = f+b+w (with an overlap gain the devices' "
                     "busy times differ and one idle figure no longer describes them all)"),
        applies=_uniform(config) and pair == f + b + w and f == b and w <= f,
    )


def dualpipe_v(config) -> ClosedForm:
    p, m, _, f, b, w, a = _base(config)
    pair = f + b + w if config.fb is None else config.fb
    return ClosedForm(
        schedule="dualpipe-v",
        idle=(p - 1) * (pair + (b + w) - 3 * w) / 2,
        ideal=m * (f + b + w),
        peak_activation=tuple((p + 0.5) * a for _ in range(p)),
        bubble_formula="(PP/2 − 1)(F&B + B − 3W) with PP = 2p half-size stages: (p − 1)(fb + b − 2w)/2",
        memory_formula="2p + 1 chunks (PP+1) = p + ½ on every device",
        source="deepseek-ai/DualPipe README (DualPipeV); torch ScheduleDualPipeV",
        assumptions=("uniform stage costs, comm = 0, f = b, w <= f, fb = f+b+w (with an overlap gain the devices' "
                     "busy times differ and one idle figure no longer describes them all)"),
        applies=_uniform(config) and pair == f + b + w and f == b and w <= f,
    )
