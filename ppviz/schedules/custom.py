"""``custom``: a program written by the user (torch action strings or a torch CSV).

There is nothing to build: pass the program to :func:`ppviz.simulate` with a config whose
schedule is ``"custom"`` to give it costs and memory parameters.
"""

from ..core.registry import ScheduleSpec, register

register(ScheduleSpec(
    name="custom",
    summary="your own program: torch action strings (0F1, 3I0, 2W5) or a torch CSV",
    reference="torch.distributed.pipelining action format",
    builder=None,
    aliases=("text", "csv"),
    v_max=None,
))
