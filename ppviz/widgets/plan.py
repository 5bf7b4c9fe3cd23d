"""The view of a :class:`ppviz.Plan`: its chart and its top rows, where clicking a point or a
row opens that layout's Gantt chart (with the step's breakdown in its summary) below them.

    best = ppviz.plan(model, hardware, gpus=256, global_batch=1024)
    best            # in a notebook (Jupyter or marimo): this view, best.view()

The click on the chart travels as Altair's own ``JupyterChart`` selection (``ppviz_plan_pick``);
the row list is an ipywidgets ``Select``; both set ``selected``, observed from Python.
"""

from __future__ import annotations

import ipywidgets
import traitlets

from ..analysis.plan import Plan
from ..charts import widget as chart_widget
from ..charts.plan import PICK
from ..core.errors import ConfigError
from . import marimo
from .gantt import GanttWidget
from .viewer import Viewer

#: rows the list shows (the table holds them all)
ROWS = 12


class PlanView(ipywidgets.VBox):
    """The plan's chart above its top rows and the Gantt chart of the row last picked
    (``selected``: its index in ``plan.table``, -1 for none; set it from Python to open one)."""

    selected = traitlets.Int(-1)

    def __init__(self, plan: Plan):
        if not isinstance(plan, Plan):
            raise ConfigError("plan", plan, "give what ppviz.plan returns")
        self.plan = plan
        self.chart = chart_widget(plan.chart(), embed_options={"renderer": "svg", "actions": False})
        self.chart.add_class("ppviz-plan-chart")
        shown = min(ROWS, len(plan.table))
        self.rows = ipywidgets.Select(options=[(f"{i + 1}. {plan.label(i)}", i) for i in range(shown)], value=None,
                                      rows=shown, layout=ipywidgets.Layout(width="100%"))
        self.rows.add_class("ppviz-plan-rows")
        self.detail = ipywidgets.VBox()
        self._marimo_detail: GanttWidget | None = None
        super().__init__(children=[self.chart, self.rows, self.detail])
        self.chart.selections.observe(self._on_pick, names=[PICK])
        self.rows.observe(self._on_row, names="value")
        self.observe(self._on_selected, names="selected")

    def _on_pick(self, change) -> None:
        picked = change["new"].value
        self.selected = int(picked[0]["row"]) if picked else -1

    def _on_row(self, change) -> None:
        self.selected = -1 if change["new"] is None else int(change["new"])

    def _on_selected(self, change) -> None:
        i = change["new"]
        if i >= len(self.plan.table) or i < -1:
            raise ConfigError("selected", i, f"give a row of the plan's table, 0 to {len(self.plan.table) - 1}, or -1")
        if self.rows.value != (None if i < 0 else i) and (i < 0 or i < len(self.rows.options)):
            self.rows.value = None if i < 0 else i
        if self._marimo_detail is not None:
            self._marimo_detail.set_result(self.plan.result(i) if i >= 0 else None)
        else:
            self.detail.children = [Viewer(self.plan.result(i), controls=False)] if i >= 0 else []

    def _display_(self):
        if self._marimo_detail is None:
            self._marimo_detail = GanttWidget(self.plan.result(self.selected) if self.selected >= 0 else None)
        return marimo.stack([self.chart, self._marimo_detail], "ppviz-plan")


__all__ = ["PlanView"]
