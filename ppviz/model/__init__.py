"""From a model and a machine to costs: ``Transformer`` and ``Hardware`` descriptions, the
FLOPs, activation and static-memory formulas (each module cites its paper), the kernels each item
runs and their times on the hardware (``kernels``, ``roofline``), pipeline layouts
(Megatron's layout strings, even and first/last splits, the automatic balancer), and
``costs``, which turns them into a :class:`ppviz.Config` in milliseconds and bytes
(``ppviz.Config.from_model``)."""

from .costs import StageCosts, Training, balanced_layout, choose_layout, stage_costs
from .hardware import Hardware
from .layout import Layout
from .transformer import Transformer

__all__ = ["Hardware", "Layout", "StageCosts", "Training", "Transformer", "balanced_layout", "choose_layout", "stage_costs"]
