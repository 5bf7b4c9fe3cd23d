"""The frontier chart: bubble against peak activation for library schedules and search results,
the Pareto front joined by a staircase, and a click selection that names the run clicked."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import altair as alt

from ..analysis.frontier import METRICS, Frontier
from ..core.errors import ConfigError, checked_arguments
from .inputs import BUBBLE_METRICS, PALETTE
from .labels import UNLABELLED, label_marks, leader_marks, point_labels
from .style import CHART, LABEL_SIZE

#: The point selection a click fills, with the field ``name`` (the widget observes it).
PICK = "ppviz_frontier_pick"
_SOURCES = ("library", "search")


@checked_arguments
def frontier_chart(points: Frontier, *, width: int = 460, height: int = 320) -> alt.LayerChart:
    """Bubble (x) against the busiest device's peak memory (y), one point per run.

    Library schedules and search results have their own colour; runs on the Pareto front
    are filled and joined by a dashed staircase, dominated runs are hollow; the front's
    runs are named beside their points. Clicking a point selects its run (``PICK``).
    Memory is the peak activation, or activation and static memory together where the
    config has static memory (``points.memory``); in GiB where it gives ``activation_bytes``.
    With a ``memory_capacity`` a rule marks it and runs over it are crosses, never on the front.
    """
    if not isinstance(points, Frontier):
        raise ConfigError("points", points, "give what ppviz.frontier returns")
    attr = METRICS[points.metric]
    _, label, definition = BUBBLE_METRICS[points.metric]
    table = points.table
    config = points.config
    unit_bytes = None if config is None else config.activation_bytes
    scale = unit_bytes / 2**30 if unit_bytes else 1.0  # activation units to the axis' unit
    capacity = None if config is None or config.memory_capacity is None else config.memory_capacity * scale
    what = "peak memory" if points.memory == "peak_memory" else "peak activation"
    unit = "GiB" if unit_bytes else "activation units"
    records: Iterable[Any] = table.itertuples()  # pandas types each field as any scalar
    rows: list[dict[str, Any]] = [{"name": r.name, "source": r.source, "bubble": float(getattr(r, attr)),
             "memory": float(getattr(r, points.memory)) * scale, "makespan": float(r.makespan),
             "limit": None if r.memory_limit != r.memory_limit else float(r.memory_limit) * scale,
             "v": int(r.stages_per_device), "front": bool(r.pareto), "fits": bool(r.fits),
             "status": "Pareto front" if r.pareto else "dominated" if r.fits else "over the device's memory"}
            for r in records]
    top_x = max((row["bubble"] for row in rows), default=0.0)
    top_y = max([row["memory"] for row in rows] + ([capacity] if capacity is not None else []), default=0.0)
    x_end, y_end = top_x * 1.12 if top_x > 0 else 1.0, top_y * 1.1 if top_y > 0 else 1.0
    # the front's names, placed clear of each other and of every marker (coinciding runs share one label)
    front = [row for row in rows if row["front"]]
    for row in rows:
        row.update(UNLABELLED)
    labels = point_labels([r["bubble"] for r in front], [r["memory"] for r in front], [r["name"] for r in front],
                          [False] * len(front), x_end=x_end, y_end=y_end, width=width, height=height,
                          others=[(r["bubble"], r["memory"]) for r in rows if not r["front"]]
                          # the capacity's rule, as points along it for the labels to keep clear of
                          + ([(x_end * k / 16, capacity) for k in range(17)] if capacity is not None else []))
    for row, placed in zip(front, labels):
        row.update(placed)
    pick = alt.selection_point(name=PICK, fields=["name"], on="click", clear="dblclick")
    tooltip = [alt.Tooltip("name:N", title="run"), alt.Tooltip("source:N"),
               alt.Tooltip("bubble:Q", title=label, format=".2%"),
               alt.Tooltip("memory:Q", title=f"{what}, busiest device ({unit})", format=".4~g"),
               alt.Tooltip("makespan:Q", format=".5~g"),
               alt.Tooltip("limit:Q", title=f"activation limit ({unit})", format=".4~g"),
               alt.Tooltip("v:Q", title="stages per device"), alt.Tooltip("status:N")]
    base = alt.Chart({"values": rows}).encode(
        x=alt.X("bubble:Q", title=f"{label} = {definition}", axis=alt.Axis(format="%", tickCount=6),
                scale=alt.Scale(domain=[0, x_end], nice=False)),
        y=alt.Y("memory:Q", title=f"{what}, busiest device ({unit})",
                scale=alt.Scale(domain=[0, y_end], nice=False)))
    color = alt.Color("source:N", scale=alt.Scale(domain=list(_SOURCES), range=list(PALETTE[:2])),
                      legend=alt.Legend(title=None, orient="top-right", symbolType="circle"))
    line = base.transform_filter("datum.front").mark_line(
        interpolate="step-after", color=CHART["reference"], strokeDash=[4, 3], strokeWidth=1.5).encode(order="bubble:Q")
    marks = base.mark_point(size=120, strokeWidth=2, cursor="pointer").encode(
        color=color, fill=alt.condition("datum.front", color, alt.value("transparent")),
        shape=alt.condition("datum.fits", alt.value("circle"), alt.value("cross")),
        opacity=alt.condition(pick, alt.value(1.0), alt.value(0.35)), tooltip=tooltip).add_params(pick)
    layers = [line, leader_marks(base), marks, *label_marks(base)]
    subtitle = ["lower left is better; filled: on the Pareto front, hollow: dominated",
                "click a point to open its Gantt chart"]
    if capacity is not None:
        size = f"{capacity:.4g} GiB" if unit_bytes else f"{capacity:.4g}"
        rule = alt.Chart({"values": [{"capacity": capacity, "text": f"memory capacity {size}"}]})
        layers[:0] = [rule.mark_rule(color=CHART["reference"], strokeDash=[6, 4], strokeWidth=1.5).encode(
                          y=alt.Y("capacity:Q")),
                      rule.mark_text(align="left", baseline="bottom", dx=4, dy=-3, fontSize=LABEL_SIZE,
                                     color=CHART["subtitle"]).encode(x=alt.value(0), y="capacity:Q", text="text:N")]
        if not all(row["fits"] for row in rows):
            subtitle[0] += "; crosses: over the device's memory"
    return alt.layer(*layers).properties(
        width=width, height=height,
        title=alt.TitleParams(f"{label.capitalize()} vs {what}", anchor="start", subtitle=subtitle,
                              subtitleColor=CHART["subtitle"], subtitleFontSize=LABEL_SIZE))


__all__ = ["frontier_chart", "PICK"]
