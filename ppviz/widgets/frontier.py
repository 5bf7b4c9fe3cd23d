"""The view of a :class:`ppviz.Frontier`: the bubble-vs-memory chart, where clicking a point
opens that run's Gantt chart below it.

    front = ppviz.frontier(ppviz.Config(devices=8, microbatches=32, comm=0.1))
    front.table          # pandas DataFrame: one row per run, ``pareto`` marks the front
    front.chart()        # the Altair chart (ppviz.charts.frontier_chart)
    front                # in a notebook (Jupyter or marimo): this view, front.view()

The click travels as Altair's own ``JupyterChart`` selection (``ppviz_frontier_pick``),
observed from Python; the Gantt chart is :func:`ppviz.show`'s.
"""

from __future__ import annotations

import ipywidgets
import traitlets

from ..analysis.frontier import Frontier
from ..charts import widget as chart_widget
from ..charts.frontier import PICK
from ..core.errors import ConfigError
from . import marimo
from .gantt import GanttWidget
from .viewer import Viewer


class FrontierView(ipywidgets.VBox):
    """The frontier chart above the Gantt chart of the run last clicked (``selected`` names it;
    set it from Python to open a run, or to ``""`` to close it)."""

    selected = traitlets.Unicode("")

    def __init__(self, front: Frontier):
        if not isinstance(front, Frontier):
            raise ConfigError("front", front, "give what ppviz.frontier returns")
        self.front = front
        self.chart = chart_widget(front.chart(), embed_options={"renderer": "svg", "actions": False})
        self.chart.add_class("ppviz-frontier-chart")
        self.detail = ipywidgets.VBox()
        # marimo draws no ipywidgets container: there one Gantt chart, empty until a click, is
        # the detail (made when marimo first displays the view)
        self._marimo_detail: GanttWidget | None = None
        super().__init__(children=[self.chart, self.detail])
        self.chart.selections.observe(self._on_pick, names=[PICK])
        self.observe(self._on_selected, names="selected")

    def _on_pick(self, change) -> None:
        picked = change["new"].value
        self.selected = picked[0]["name"] if picked else ""

    def _on_selected(self, change) -> None:
        name = change["new"]
        if self._marimo_detail is not None:
            self._marimo_detail.set_result(self.front.result(name) if name else None)
        else:
            self.detail.children = [Viewer(self.front.result(name), controls=False)] if name else []

    def _display_(self):
        if self._marimo_detail is None:
            self._marimo_detail = GanttWidget(self.front.result(self.selected) if self.selected else None)
        return marimo.stack([self.chart, self._marimo_detail], "ppviz-frontier")


__all__ = ["FrontierView"]
