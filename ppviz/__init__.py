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
    "schedules",
    "simulate",
]
