"""What the views of a set of runs share: an Altair chart whose click picks one run, and that
run's Gantt chart below it (:class:`ppviz.widgets.frontier.FrontierView`,
:class:`ppviz.widgets.plan.PlanView`).

The click travels as Altair's own ``JupyterChart`` selection (the chart's ``pick`` parameter),
observed from Python; it sets ``selected``, which a subclass declares with its own type and
value for "none". In marimo, which draws no ipywidgets container, one Gantt chart, empty until a
pick, is the detail (made when marimo first displays the view).
"""

from __future__ import annotations

from typing import Any

import altair as alt
import ipywidgets

from ..charts import widget as chart_widget
from ..core.result import Result
from . import marimo
from .gantt import GanttWidget
from .viewer import Viewer


class PickedView(ipywidgets.VBox):
    """``between`` (widgets shown between the chart and the detail) and the subclass's
    ``selected`` trait, ``none`` (its value when nothing is picked), :meth:`_picked` (the
    selection's row → a value of ``selected``) and :meth:`_result` (a value → its run)."""

    none: Any

    def __init__(self, chart: alt.TopLevelMixin, pick: str, name: str, between: tuple = ()):
        self.chart = chart_widget(chart, embed_options={"renderer": "svg", "actions": False})
        self.chart.add_class(f"{name}-chart")
        self.detail = ipywidgets.VBox()
        self._name = name
        self._marimo_detail: GanttWidget | None = None
        super().__init__(children=[self.chart, *between, self.detail])
        self.chart.selections.observe(self._on_pick, names=[pick])
        self.observe(self._on_selected, names="selected")

    def _picked(self, row: dict) -> Any:
        raise NotImplementedError

    def _result(self, key: Any) -> Result:
        raise NotImplementedError

    def _on_pick(self, change) -> None:
        picked = change["new"].value
        self.selected = self._picked(picked[0]) if picked else self.none

    def _on_selected(self, change) -> None:
        key = change["new"]
        run = None if key == self.none else self._result(key)
        if self._marimo_detail is not None:
            self._marimo_detail.set_result(run)
        else:
            self.detail.children = [Viewer(run, controls=False)] if run is not None else []

    def _display_(self):
        if self._marimo_detail is None:
            self._marimo_detail = GanttWidget(None if self.selected == self.none else self._result(self.selected))
        return marimo.stack([self.chart, self._marimo_detail], self._name)


__all__ = ["PickedView"]
