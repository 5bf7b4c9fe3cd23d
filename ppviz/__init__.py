"""ppviz: simulate and visualise pipeline-parallel training schedules."""

from .config import Config
from .errors import (
    ConfigError,
    DeadlockError,
    ParseError,
    PpvizError,
    ProgramError,
    ScheduleConstraintError,
    UnknownScheduleError,
)
from .ir import Program
from .placement import Placement
from .result import Result
from .schedules.registry import schedules
from .simulate import simulate
from .torch_interop import from_torch

__version__ = "0.1.0"

__all__ = [
    "Config",
    "ConfigError",
    "DeadlockError",
    "ParseError",
    "Placement",
    "PpvizError",
    "Program",
    "ProgramError",
    "Result",
    "ScheduleConstraintError",
    "UnknownScheduleError",
    "charts",
    "compare",
    "from_torch",
    "schedules",
    "show",
    "simulate",
]


def __getattr__(name):
    # the widget imports anywidget and ipywidgets; load them only when the widget is used
    if name == "show":
        from .widget import show

        return show
    if name == "compare":
        from .comparison import compare

        return compare
    if name == "charts":  # imports altair (about a second); only when charts are used
        import importlib

        return importlib.import_module(f"{__name__}.charts")
    raise AttributeError(f"module 'ppviz' has no attribute {name!r}")
