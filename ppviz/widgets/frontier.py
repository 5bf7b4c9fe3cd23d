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

import traitlets

from ..analysis.frontier import Frontier
from ..charts.frontier import PICK
from ..core.errors import ConfigError
from .picked import PickedView


class FrontierView(PickedView):
    """The frontier chart above the Gantt chart of the run last clicked (``selected`` names it;
    set it from Python to open a run, or to ``""`` to close it)."""

    selected = traitlets.Unicode("")
    none = ""

    def __init__(self, front: Frontier):
        if not isinstance(front, Frontier):
            raise ConfigError("front", front, "give what ppviz.frontier returns")
        self.front = front
        super().__init__(front.chart(), PICK, "ppviz-frontier")

    def _picked(self, row: dict) -> str:
        return row["name"]

    def _result(self, key: str):
        return self.front.result(key)


__all__ = ["FrontierView"]
