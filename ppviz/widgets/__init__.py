"""The notebook widgets: the Gantt chart (:func:`show`), the view of a comparison
(:class:`ComparisonView`, ``ppviz.compare(...).view()``) and of the Pareto frontier
(:class:`FrontierView`, ``ppviz.frontier(...).view()``), their wire format and the standalone page."""

from .comparison import CompareState, ComparisonView
from .frontier import FrontierView
from .gantt import BUNDLE, GanttWidget
from .page import standalone_html
from .viewer import Viewer, show
from .wire import BYTES_PER_OP, describe, encode_memory, encode_timeline

__all__ = ["BUNDLE", "BYTES_PER_OP", "CompareState", "ComparisonView", "FrontierView", "GanttWidget",
           "Viewer", "describe", "encode_memory", "encode_timeline", "show", "standalone_html"]
