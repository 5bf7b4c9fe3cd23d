"""The closed-form figures a schedule family publishes, shown next to the simulated ones.

Notation: p devices, m microbatches, v stages per device, f/b/w the times of F, I and W for
1/p of the model (full backward = b + w). Idle time is per device; the bubble fraction is
idle / makespan and the bubble rate idle / ideal, with ideal = m·(f+b+w). Memory is in
activation units (one microbatch through 1/p of the model).

Each formula holds for uniform stage costs and ``comm = 0``; ``ClosedForm.applies`` says
whether this config meets every assumption the formula makes, so that the simulated value
must equal it. Each family module in ``ppviz.schedules`` writes its own closed forms from
the papers' formulas, independently of its builder, and registers them with its spec.
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
    #: forward-only pipelines: time to the first output and steady-state microbatches per unit of time
    first_output: float | None = None
    throughput: float | None = None

    @property
    def makespan(self) -> float:
        return self.ideal + self.idle

    @property
    def bubble_fraction(self) -> float:
        return self.idle / self.makespan if self.makespan else 0.0

    @property
    def bubble_rate(self) -> float:
        return self.idle / self.ideal if self.ideal else 0.0


def base(config) -> tuple[int, int, int, float, float, float, float]:
    """(p, m, v, f, b, w, activation) of a config, the symbols of the published formulas."""
    return config.devices, config.microbatches, config.stages_per_device, config.f, config.b, config.w, config.activation


def uniform_costs(config) -> bool:
    """True when the formulas' assumptions on costs hold: no per-stage override, no comm."""
    return config.uniform and config.comm == 0 and not any("activation" in c for c in config.stage_costs.values())
