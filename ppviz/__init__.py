"""ppviz: simulate and visualise pipeline-parallel training schedules.

See a schedule::

    import ppviz
    cfg = ppviz.Config(schedule="zb-h1", devices=4, microbatches=8)   # f = b = w = 1 by default
    ppviz.show(cfg)                       # the interactive Gantt chart, with controls
    res = ppviz.simulate(cfg)             # a Result: makespan, bubble_fraction, peak_memory, ...
    print(res.summary())                  # simulated beside the published closed forms
    ppviz.list_schedules()                # every schedule: names, aliases, constraints

Choose one::

    ppviz.compare([cfg, cfg.replace(schedule="v-half")])   # side by side, with charts
    ppviz.frontier(cfg)                   # bubble against peak activation, Pareto front
    ppviz.search(cfg, max_memory=2)       # the fastest order found within a memory limit
    ppviz.sweep({"schedule": ["1f1b", "zb-h1"], "microbatches": [8, 16, 32]},
                base=cfg)                 # a DataFrame; joblib processes, or a Dask client

With your model, hardware and links::

    cfg = ppviz.Config.from_model(ppviz.Transformer.preset("llama-3-8b"),
                                  ppviz.Hardware.preset("h100-sxm"),
                                  schedule="zb-h1", devices=4, microbatches=16,
                                  topology="dgx-h100")   # transfers over real links
    print(ppviz.simulate(cfg).fit_summary())   # ms and GiB: does it fit?

With your measured run: ``ppviz.load_trace(path)`` (torch profiler traces), then
``ppviz.calibrate(...)`` and ``ppviz.show(measured, against=...)``; your own schedule:
``ppviz.Program.from_text(...)``, ``Program.from_actions(...)`` (torch's action strings) or
``ppviz.from_torch(...)`` (torch's own schedule classes; needs torch). Exports follow pandas'
``to_x(path=None)``: ``res.to_html``, ``to_svg``, ``to_png``, ``to_chrome_trace``,
``to_torch_csv``, ``to_text_gantt``; charts: ``ppviz.charts``. The
command line: ``ppviz run zb-h1 -p 4 -m 8``, ``ppviz compare 1f1b zb-h1 v-half``, ``ppviz list``.
Sizes beyond a budget are refused before any work (``ppviz.set_budget``); every refusal is a
:class:`ppviz.PpvizError` that names what to change: a wrong value is also a ``ValueError``, a
wrong call (an argument a function does not take) also a ``TypeError``.
"""

from . import schedules  # noqa: F401  (importing the families registers them)
from .analysis.calibrate import Calibration, calibrate
from .analysis.comparison import Comparison, compare
from .analysis.frontier import Frontier, frontier
from .analysis.residuals import Residuals, residuals
from .analysis.search import SearchResult, search
from .core.budget import set_budget
from .core.config import Config
from .core.engine import simulate
from .core.measured import Measured
from .core.errors import (
    ArgumentError,
    ConfigError,
    DeadlockError,
    LayoutError,
    ParseError,
    PpvizError,
    ProgramError,
    ScheduleConstraintError,
    UnknownScheduleError,
)
from .core.placement import Placement
from .core.program import Program
from .core.registry import list_schedules
from .core.result import Result
from .core.step import Step
from .core.topology import Link, Offload, Topology
from .core.transfers import Transfers
from .io.torch_annotate import annotate
from .io.torch_schedules import from_torch
from .io.traces import example_trace, load_trace
from .model import Hardware, Layout, Transformer

__version__ = "0.1.0"

__all__ = [
    "ArgumentError",
    "Calibration",
    "Comparison",
    "Config",
    "ConfigError",
    "DeadlockError",
    "Frontier",
    "Measured",
    "Offload",
    "Hardware",
    "Layout",
    "LayoutError",
    "Link",
    "ParseError",
    "Placement",
    "PpvizError",
    "Program",
    "ProgramError",
    "Residuals",
    "Result",
    "ScheduleConstraintError",
    "Step",
    "SearchResult",
    "Transformer",
    "Topology",
    "Transfers",
    "UnknownScheduleError",
    "annotate",
    "calibrate",
    "charts",
    "compare",
    "example_trace",
    "from_torch",
    "frontier",
    "list_schedules",
    "load_trace",
    "residuals",
    "search",
    "set_budget",
    "show",
    "simulate",
    "sweep",
]


def __getattr__(name):
    # the widgets import anywidget and ipywidgets, the charts altair (about a second): load
    # them only when they are used
    if name == "show":
        from .widgets.viewer import show

        return show
    # pandas, joblib, tqdm and Altair load with the sweep, not with ppviz
    if name == "sweep":
        from .analysis.sweep import sweep

        return sweep
    if name in ("charts", "widgets"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'ppviz' has no attribute {name!r}")


def __dir__():
    # the lazily loaded names too, so that tab completion offers ppviz.show and ppviz.compare
    return sorted(set(globals()) | set(__all__) | {"widgets"})
