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
        peak_activation=tuple(((p - r) + r * s) * a if m >= p else None for r in range(p)) if m >= p else None,
        bubble_formula="(p−1)(f+b−w)",
        memory_formula="p on rank 0; (p−r) + r·w_share on rank r",
        source="Zero Bubble PP (arXiv 2401.10241) §3, ZB-H1",
        assumptions="uniform stage costs, comm = 0, m >= p, w <= min(f, b)",
        applies=_uniform(config) and m >= p and w <= min(f, b),
    )
