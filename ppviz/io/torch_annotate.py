"""``ppviz.annotate(stage)``: profiler spans around a pipeline stage's own computation.

torch's ``Schedule1F1B`` records no span per op, and ``ScheduleGPipe``'s ``Forward i`` spans hold
the receive and the wait as well as the computation. One line before building the schedule
makes every stage's computation visible to :func:`ppviz.load_trace`::

    stage = ppviz.annotate(PipelineStage(module, stage_index, num_stages, device))
    schedule = Schedule1F1B(stage, n_microbatches, loss_fn=loss_fn)

Each ``forward_one_chunk`` / ``backward_one_chunk`` / ``backward_weight_one_chunk`` call then
runs inside ``torch.profiler.record_function("PP:<stage><F|B|I|W><microbatch>")``, the names
torch's multi-stage schedules use, so the loader reads both alike (where both record a span for
one op, the inner one, without the wait, is used). The spans cost about a microsecond each and
record only while a profiler runs. Annotating a stage twice changes nothing.
"""

from __future__ import annotations

import functools

from ..core.errors import ConfigError, checked_arguments

_MARK = "_ppviz_annotated"


@checked_arguments
def annotate(stage):
    """Wrap a ``torch.distributed.pipelining`` stage's compute calls in ``PP:<action>`` spans;
    returns the stage (see the module docstring). Works on single- and multi-stage schedules."""
    try:
        from torch.profiler import record_function
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("ppviz.annotate needs PyTorch (pip install torch)") from exc
    missing = [name for name in ("stage_index", "forward_one_chunk", "backward_one_chunk")
               if not hasattr(stage, name)]
    if missing:
        raise ConfigError("stage", type(stage).__name__,
                          f"give a torch.distributed.pipelining stage (PipelineStage); it has no {missing[0]}")
    if getattr(stage, _MARK, False):
        return stage
    index = stage.stage_index

    def spanned(method, name_of):
        @functools.wraps(method)
        def call(chunk_id, *args, **kwargs):
            with record_function(f"PP:{index}{name_of(kwargs)}{chunk_id}"):
                return method(chunk_id, *args, **kwargs)

        return call

    stage.forward_one_chunk = spanned(stage.forward_one_chunk, lambda kw: "F")
    stage.backward_one_chunk = spanned(stage.backward_one_chunk,
                                       lambda kw: "B" if kw.get("full_backward", True) else "I")
    if hasattr(stage, "backward_weight_one_chunk"):
        stage.backward_weight_one_chunk = spanned(stage.backward_weight_one_chunk, lambda kw: "W")
    setattr(stage, _MARK, True)
    return stage
