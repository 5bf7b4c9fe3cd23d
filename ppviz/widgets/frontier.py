"""``ppviz.frontier``: the bubble-vs-memory Pareto frontier as a table and a chart; in a notebook,
clicking a point opens that run's Gantt chart below it.

    front = ppviz.frontier(ppviz.Config(devices=8, microbatches=32, comm=0.1))
    front.table          # pandas DataFrame: one row per run, ``pareto`` marks the front
    front.chart          # the Altair chart (ppviz.charts.frontier_chart)
    front                # in a notebook (Jupyter or marimo): the chart, and the Gantt chart
                         # of the point clicked

The click travels as Altair's own ``JupyterChart`` selection (``ppviz_frontier_pick``),
observed from Python; the Gantt chart is :func:`ppviz.show`'s.
"""

from __future__ import annotations

import ipywidgets
import traitlets

from ..analysis.frontier import FrontierPoints, frontier_points
from ..analysis.search import DEFAULT_EFFORT
from ..charts import widget as chart_widget
from ..charts.frontier import PICK, frontier_chart
from ..core.config import Config
from ..core.engine import simulate
from ..core.errors import ConfigError, checked_arguments
from ..core.result import Result
from . import marimo
from .gantt import GanttWidget
from .viewer import Viewer


@checked_arguments
class Frontier:
    """What :func:`frontier` returns: ``table`` (a pandas DataFrame), ``chart`` (Altair),
    ``result(name)`` (a run's full :class:`ppviz.Result`) and ``view()`` (the linked widget,
    which is also how a notebook displays it)."""

    def __init__(self, points: FrontierPoints):
        self.points = points
        self.table = points.table
        self.chart = frontier_chart(points)

    def result(self, name: str) -> Result:
        """The run named ``name`` (a row of ``table``), simulated in full."""
        if name not in self.points.runs:
            raise ConfigError("name", name, f"give one of the table's names: {', '.join(self.table.name)}")
        run = self.points.runs[name]
        return run if isinstance(run, Result) else simulate(run)

    def view(self) -> "FrontierView":
        return FrontierView(self)

    def _ipython_display_(self):
        from IPython.display import display

        display(self.view())

    def _display_(self):
        # marimo's display protocol: the view, which has its own _display_ (ppviz/widgets/marimo.py)
        return self.view()

    def __repr__(self) -> str:
        return f"<Frontier: {len(self.table)} runs, {int(self.table.pareto.sum())} on the Pareto front>\n" + \
            self.table.to_string(index=False)


class FrontierView(ipywidgets.VBox):
    """The frontier chart above the Gantt chart of the run last clicked (``selected`` names it;
    set it from Python to open a run, or to ``""`` to close it)."""

    selected = traitlets.Unicode("")

    def __init__(self, front: Frontier):
        self.front = front
        self.chart = chart_widget(front.chart, embed_options={"renderer": "svg", "actions": False})
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


@checked_arguments
def frontier(config: Config, schedules=None, memory=None, *, metric: str = "fraction",
             effort: int = DEFAULT_EFFORT) -> Frontier:
    """The Pareto frontier of bubble against peak memory for ``config``'s sizes and costs.

    Runs every library schedule that accepts the sizes (``schedules``: only these names) and
    :func:`ppviz.search` at each limit of ``memory`` (default: about p/3, p/2, p and 2p − 1
    activation units; ``[]`` for none). Memory is the busiest device's peak activation, or its
    activation and static memory together where the config has static memory (in GiB on the
    chart where it gives ``activation_bytes``); with a ``memory_capacity`` the runs that do
    not fit are never on the front. ``metric``: ``"fraction"`` or ``"rate"``. Returns a
    :class:`Frontier`: ``.table``, ``.chart``, and in a notebook the chart whose points open
    their Gantt charts when clicked.
    """
    return Frontier(frontier_points(config, schedules, memory, metric=metric, effort=effort))


__all__ = ["Frontier", "FrontierView", "frontier"]
