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
from ..charts.plan import PICK
from ..core.errors import ConfigError
from .picked import PickedView

#: rows the list shows (the table holds them all)
ROWS = 12


class PlanView(PickedView):
    """The plan's chart above its top rows and the Gantt chart of the row last picked
    (``selected``: its index in ``plan.table``, -1 for none; set it from Python to open one)."""

    selected = traitlets.Int(-1)
    none = -1

    def __init__(self, plan: Plan):
        if not isinstance(plan, Plan):
            raise ConfigError("plan", plan, "give what ppviz.plan returns")
        self.plan = plan
        shown = min(ROWS, len(plan.table))
        self.rows = ipywidgets.Select(options=[(f"{i + 1}. {plan.label(i)}", i) for i in range(shown)], value=None,
                                      rows=shown, layout=ipywidgets.Layout(width="100%"))
        self.rows.add_class("ppviz-plan-rows")
        super().__init__(plan.chart(), PICK, "ppviz-plan", between=(self.rows,))
        self.rows.observe(self._on_row, names="value")

    def _picked(self, row: dict) -> int:
        return int(row["row"])

    def _result(self, key: int):
        return self.plan.result(key)

    def _on_row(self, change) -> None:
        self.selected = self.none if change["new"] is None else int(change["new"])

    def _on_selected(self, change) -> None:
        i = change["new"]
        if i >= len(self.plan.table) or i < -1:
            raise ConfigError("selected", i, f"give a row of the plan's table, 0 to {len(self.plan.table) - 1}, or -1")
        if self.rows.value != (None if i < 0 else i) and (i < 0 or i < len(self.rows.options)):
            self.rows.value = None if i < 0 else i
        super()._on_selected(change)


__all__ = ["PlanView"]
