"""The plan chart: each fitting layout's step time against its busiest device's peak memory,
coloured by schedule, faceted by tensor- or pipeline-parallel size, with the device's capacity
and the Pareto front; a click selection names the row clicked."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import altair as alt

from ..analysis.plan import Plan
from ..core.errors import ConfigError, checked_arguments
from .inputs import PALETTE
from .style import CHART, LABEL_SIZE

#: The point selection a click fills, with the field ``row`` (the table's row; the widget observes it).
PICK = "ppviz_plan_pick"
FACETS = {"t": "tensor parallel", "p": "pipeline stages", None: None}


@checked_arguments
def plan_chart(plan: Plan, *, facet: str | None = "t", width: int = 460, height: int = 320):
    """Step time (x, seconds) against peak memory (y, GiB), one point per layout of ``plan``.

    Colour: the schedule; filled points are on the Pareto front (no other layout is both
    faster and lighter), the best is ringed and named in the subtitle. ``facet``: ``"t"`` or ``"p"`` draws
    one panel per tensor-parallel or pipeline size, None one panel. The device's capacity is a
    rule. Clicking a point selects its row (``PICK``)."""
    if not isinstance(plan, Plan):
        raise ConfigError("plan", plan, "give what ppviz.plan returns")
    if facet not in FACETS:
        raise ConfigError("facet", facet, "give 't', 'p' or None")
    capacity = plan.hardware.memory_bytes / 2**30
    records: Iterable[Any] = plan.table.itertuples()  # pandas types each field as any scalar
    rows: list[dict[str, Any]] = [{"row": i, "step": float(r.step_time) / 1e3, "memory": float(r.peak_memory) / 2**30,
             "schedule": r.schedule, "t": int(r.t), "p": int(r.p), "d": int(r.d), "v": int(r.v),
             "b": int(r.micro_batch_size), "m": int(r.m), "recompute": r.recompute, "zero": int(r.zero_stage),
             "mfu": float(r.mfu), "front": bool(r.pareto), "best": i == 0}
            for i, r in enumerate(records)]
    schedules = sorted({str(row["schedule"]) for row in rows})
    palette = list(PALETTE) * (len(schedules) // len(PALETTE) + 1)
    color = alt.Color("schedule:N", scale=alt.Scale(domain=schedules, range=palette[: len(schedules)]),
                      legend=alt.Legend(title="schedule", orient="right"))
    pick = alt.selection_point(name=PICK, fields=["row"], on="click", clear="dblclick")
    top = max([row["memory"] for row in rows] + [capacity]) * 1.08
    fastest = min(row["step"] for row in rows)
    slowest = max(row["step"] for row in rows)
    pad = max((slowest - fastest) * 0.08, fastest * 0.01)
    base = alt.Chart().encode(
        x=alt.X("step:Q", title="step time (s)", scale=alt.Scale(domain=[fastest - pad, slowest + pad], nice=False)),
        y=alt.Y("memory:Q", title="peak memory, busiest device (GiB)", scale=alt.Scale(domain=[0, top], nice=False)))
    tooltip = [alt.Tooltip("row:Q", title="row"), alt.Tooltip("schedule:N"), alt.Tooltip("t:Q"), alt.Tooltip("p:Q"),
               alt.Tooltip("d:Q"), alt.Tooltip("v:Q"), alt.Tooltip("b:Q", title="micro-batch size"),
               alt.Tooltip("m:Q", title="microbatches"), alt.Tooltip("recompute:N"),
               alt.Tooltip("zero:Q", title="ZeRO stage"), alt.Tooltip("step:Q", title="step (s)", format=".4~g"),
               alt.Tooltip("mfu:Q", title="MFU", format=".1%"),
               alt.Tooltip("memory:Q", title="peak memory (GiB)", format=".4~g")]
    marks = base.mark_point(size=90, strokeWidth=1.8, cursor="pointer").encode(
        color=color, fill=alt.condition("datum.front", color, alt.value("transparent")),
        opacity=alt.condition(pick, alt.value(1.0), alt.value(0.35)), tooltip=tooltip).add_params(pick)
    best = base.transform_filter("datum.best").mark_point(size=360, strokeWidth=1.5, color=CHART["reference"])
    rule = alt.Chart().mark_rule(color=CHART["reference"], strokeDash=[6, 4], strokeWidth=1.5).encode(
        y=alt.datum(capacity))
    layered = alt.layer(rule, marks, best, data={"values": rows})
    title = alt.TitleParams(
        f"{plan.model.name or 'model'} on {plan.gpus:,} × {plan.hardware.name or 'accelerator'}: step time vs memory",
        anchor="start", subtitleColor=CHART["subtitle"], subtitleFontSize=LABEL_SIZE,
        subtitle=[f"ringed, the best: {plan.label(0)}",
                  f"every fitting layout within {plan.within:g}× of it; left is faster, the dashed rule is the "
                  f"device's {capacity:.4g} GiB", "filled: on the Pareto front; click a point to open its Gantt chart"])
    if facet is None:
        return layered.properties(width=width, height=height, title=title)
    panels = sorted({row[facet] for row in rows})
    each = max(160, width // max(1, len(panels)))
    return layered.properties(width=each, height=height).facet(
        column=alt.Column(f"{facet}:O", title=FACETS[facet])).properties(title=title)


__all__ = ["plan_chart", "PICK", "FACETS"]
