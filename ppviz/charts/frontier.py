"""The frontier chart: bubble against peak activation for library schedules and search results,
the Pareto front joined by a staircase, and a click selection that names the run clicked."""

from __future__ import annotations

import altair as alt

from ..analysis.frontier import METRICS, FrontierPoints
from ..core.errors import ConfigError, checked_arguments
from .inputs import BUBBLE_METRICS, PALETTE
from .labels import UNLABELLED, label_marks, leader_marks, point_labels
from .style import CHART, LABEL_SIZE

#: The point selection a click fills, with the field ``name`` (the widget observes it).
PICK = "ppviz_frontier_pick"
_SOURCES = ("library", "search")


@checked_arguments
def frontier_chart(points: FrontierPoints, *, width: int = 460, height: int = 320) -> alt.LayerChart:
    """Bubble (x) against the busiest device's peak activation (y), one point per run.

    Library schedules and search results have their own colour; runs on the Pareto front
    are filled and joined by a dashed staircase, dominated runs are hollow; the front's
    runs are named beside their points. Clicking a point selects its run (``PICK``).
    """
    if not isinstance(points, FrontierPoints):
        raise ConfigError("points", points, "give what ppviz.analysis.frontier.frontier_points returns")
    attr = METRICS[points.metric]
    _, label, definition = BUBBLE_METRICS[points.metric]
    table = points.table
    rows = [{"name": r.name, "source": r.source, "bubble": float(getattr(r, attr)), "memory": float(r.peak_activation),
             "makespan": float(r.makespan), "limit": None if r.memory_limit != r.memory_limit else float(r.memory_limit),
             "v": int(r.stages_per_device), "front": bool(r.pareto),
             "status": "Pareto front" if r.pareto else "dominated"} for r in table.itertuples()]
    top_x = max((row["bubble"] for row in rows), default=0.0)
    top_y = max((row["memory"] for row in rows), default=0.0)
    x_end, y_end = top_x * 1.12 if top_x > 0 else 1.0, top_y * 1.1 if top_y > 0 else 1.0
    # the front's names, placed clear of each other and of every marker (coinciding runs share one label)
    front = [row for row in rows if row["front"]]
    for row in rows:
        row.update(UNLABELLED)
    labels = point_labels([r["bubble"] for r in front], [r["memory"] for r in front], [r["name"] for r in front],
                          [False] * len(front), x_end=x_end, y_end=y_end, width=width, height=height,
                          others=[(r["bubble"], r["memory"]) for r in rows if not r["front"]])
    for row, placed in zip(front, labels):
        row.update(placed)
    pick = alt.selection_point(name=PICK, fields=["name"], on="click", clear="dblclick")
    tooltip = [alt.Tooltip("name:N", title="run"), alt.Tooltip("source:N"),
               alt.Tooltip("bubble:Q", title=label, format=".2%"),
               alt.Tooltip("memory:Q", title="peak activation, busiest device", format=".4~g"),
               alt.Tooltip("makespan:Q", format=".5~g"), alt.Tooltip("limit:Q", title="memory limit", format=".4~g"),
               alt.Tooltip("v:Q", title="stages per device"), alt.Tooltip("status:N")]
    base = alt.Chart({"values": rows}).encode(
        x=alt.X("bubble:Q", title=f"{label} = {definition}", axis=alt.Axis(format="%", tickCount=6),
                scale=alt.Scale(domain=[0, x_end], nice=False)),
        y=alt.Y("memory:Q", title="peak activation, busiest device (activation units)",
                scale=alt.Scale(domain=[0, y_end], nice=False)))
    color = alt.Color("source:N", scale=alt.Scale(domain=list(_SOURCES), range=list(PALETTE[:2])),
                      legend=alt.Legend(title=None, orient="top-right"))
    line = base.transform_filter("datum.front").mark_line(
        interpolate="step-after", color=CHART["reference"], strokeDash=[4, 3], strokeWidth=1.5).encode(order="bubble:Q")
    marks = base.mark_point(size=120, strokeWidth=2, cursor="pointer").encode(
        color=color, fill=alt.condition("datum.front", color, alt.value("transparent")),
        opacity=alt.condition(pick, alt.value(1.0), alt.value(0.35)), tooltip=tooltip).add_params(pick)
    return alt.layer(line, leader_marks(base), marks, *label_marks(base)).properties(
        width=width, height=height,
        title=alt.TitleParams(f"{label.capitalize()} vs peak activation", anchor="start",
                              subtitle=["lower left is better; filled: on the Pareto front, hollow: dominated",
                                        "click a point to open its Gantt chart"],
                              subtitleColor=CHART["subtitle"], subtitleFontSize=LABEL_SIZE))


__all__ = ["frontier_chart", "PICK"]
