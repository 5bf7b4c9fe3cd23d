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
    #: the formula's own conditions (of those in ``assumptions``) this config breaks, as written
    #: there: what :func:`caveat` names beside the costs and memory the config changes
    unmet: tuple[str, ...] = ()

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


def broken_assumptions(config) -> list[str]:
    """What in the config breaks the assumptions every closed form makes on costs and memory, as
    the user set it; empty when none does (:func:`uniform_costs`; a formula may still not apply
    for a condition of its own, such as m >= 2p−1: :func:`held`)."""
    out = []
    if any(k in ("f", "b", "w") for costs in config.stage_costs.values() for k in costs):
        out.append("per-stage costs")
    if any("activation" in costs for costs in config.stage_costs.values()):
        out.append("per-stage activation")
    if any(k.startswith("gap_") for costs in config.stage_costs.values() for k in costs):
        out.append("host gaps per op")
    if any(k.startswith("warmup_") for costs in config.stage_costs.values() for k in costs):
        out.append("a first-microbatch warm-up")
    if config.comm != 0:
        out.append(f"comm = {config.comm:g}")
    if config.transfers:
        out.append("transfers over a topology")
    if config.recompute is not None:
        out.append(f"{config.recompute} recompute")
    if config.offload is not None:
        out.append(f"offload = {config.offload.share:g}")
    return out


def held(config, conditions: dict[str, bool]) -> dict:
    """``applies`` and ``unmet`` of a :class:`ClosedForm` whose formula holds for uniform costs
    (``uniform_costs``) and these conditions of its own, each named as ``assumptions`` writes it."""
    unmet = tuple(name for name, holds in conditions.items() if not holds)
    return {"applies": uniform_costs(config) and not unmet, "unmet": unmet}


def caveat(closed_form, config) -> str | None:
    """Why a closed form does not hold for this config, in a sentence (None where it holds): what
    it assumes, what in the config breaks it, and which of the formula's own conditions fail."""
    if closed_form is None or closed_form.applies:
        return None
    also = [text for text, there in ((", no transfers", config.transfers), (", no recompute", config.recompute is not None),
                                     (", no offload", config.offload is not None)) if there]
    reasons = []
    broken = broken_assumptions(config)
    if broken:
        reasons.append(f"this config has {', '.join(broken)}")
    unmet = closed_form.unmet
    if unmet:
        reasons.append(f"{' and '.join(unmet)} {'does' if len(unmet) == 1 else 'do'} not hold")
    why = "; ".join(reasons) if reasons else "this config does not meet all of it"
    return f"the closed form assumes {closed_form.assumptions}{''.join(also)}; {why}"


def uniform_costs(config) -> bool:
    """True when the formulas' assumptions on costs and memory hold: nothing in
    :func:`broken_assumptions` (no per-stage override, comm, transfers, recompute or offload)."""
    return not broken_assumptions(config)
