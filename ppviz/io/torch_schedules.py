"""The program torch.distributed.pipelining runs, as a ppviz Program.

``from_torch(schedule)`` takes a torch schedule object, a schedule class, or a name torch's
``get_schedule_class`` knows (``"Interleaved1F1B"``, ``"ZBVZeroBubble"`` …; case, ``_`` and ``-``
do not matter and the ``Schedule`` prefix is optional) with the sizes to build it for. Multi-stage schedules are read from their
``pipeline_order`` (torch's own IR; idle steps dropped), or with ``comms=True`` from the
``pipeline_order_with_comms`` torch's lowering makes of it and its runtime executes.
Single-stage schedules (``ScheduleGPipe``, ``Schedule1F1B``) are read from what they execute:
their ``_step_microbatches`` runs for every rank against a mock stage that records each
``forward_one_chunk`` / ``backward_one_chunk`` call (and with ``comms=True`` each batch of
send and receive ops it posts), because their ``pipeline_order`` is only a drawing aid (for
1F1B with m = p it skips F0 on the last rank and invents F_m).

torch is imported only when this module is used; without it the call raises ImportError.
"""

from __future__ import annotations

import difflib
import re
import warnings
from collections.abc import Mapping

from ..core.budget import max_ops
from ..core.config import positive_int
from ..core.errors import ConfigError, ScheduleConstraintError, checked_arguments
from ..core.program import Program

# torch raises these for sizes a schedule does not support (ValueError for most, AssertionError
# from its checks, RuntimeError from lowering)
_TORCH_REFUSALS = (ValueError, RuntimeError, AssertionError)


def _pipelining():
    try:
        from torch.distributed.pipelining import schedules
        from torch.distributed.pipelining.stage import PipelineStage
    except ImportError as exc:
        raise ImportError(
            "ppviz.from_torch needs PyTorch with torch.distributed.pipelining (pip install torch); "
            "the rest of ppviz works without it") from exc
    return schedules, PipelineStage


def _concrete_classes(schedules) -> dict[str, type]:
    """torch's runnable schedule classes by their short name (``"GPipe"``, ``"Interleaved1F1B"`` …)."""
    base = schedules._PipelineSchedule
    return {name[len("Schedule"):]: cls for name, cls in vars(schedules).items()
            if name.startswith("Schedule") and isinstance(cls, type) and issubclass(cls, base)}


def _key(name: str) -> str:
    return re.sub(r"[\s_\-]+", "", re.sub(r"^schedule", "", name.strip(), flags=re.IGNORECASE)).lower()


def _schedule_class(schedules, schedule) -> type:
    known = _concrete_classes(schedules)
    if isinstance(schedule, type):
        bases = (schedules._PipelineSchedule, schedules.PipelineScheduleSingle, schedules.PipelineScheduleMulti,
                 schedules._PipelineScheduleRuntime)
        if issubclass(schedule, schedules._PipelineSchedule) and schedule not in bases:
            return schedule
        raise ConfigError("schedule", schedule.__name__,
                          f"give a concrete torch schedule class or one of torch's names: {', '.join(known)}")
    names = {_key(name): name for name in known}
    key = _key(schedule)
    if key in names:
        return known[names[key]]
    close = difflib.get_close_matches(key, list(names), n=2, cutoff=0.5)
    hint = f"did you mean {' or '.join(repr(names[c]) for c in close)}? " if close else ""
    raise ConfigError("schedule", schedule, f"{hint}torch's schedules are {', '.join(known)}",
                      reason="torch.distributed.pipelining has no schedule of this name")


def _mock_stage(PipelineStage, devices: int, stages: int, index: int = 0):
    from unittest import mock

    stage = mock.create_autospec(PipelineStage, instance=True)
    stage.group_rank, stage.group_size, stage.num_stages = index % devices, devices, stages
    stage.stage_index, stage.is_first, stage.is_last, stage.submod = index, index == 0, index == stages - 1, None
    return stage


def _refused(cls, devices, microbatches, v, exc) -> ScheduleConstraintError:
    sizes = f"devices={devices}, microbatches={microbatches}, stages_per_device={v}"
    first_line = next(iter(str(exc).splitlines()), "")
    return ScheduleConstraintError("sizes", sizes, "choose sizes torch accepts for this schedule",
                                   reason=f"torch {cls.__name__} refuses them ({type(exc).__name__}: {first_line})")


def _executed_orders(schedules, PipelineStage, cls, devices: int, microbatches: int,
                     comms: bool = False) -> dict[int, list[str]]:
    """The F/B calls each rank of a single-stage schedule makes, loss handling stubbed out; P2P
    stubbed out too, its ops recorded in the order they are posted when ``comms``."""
    from unittest import mock

    orders = {}
    for rank in range(devices):
        stage = _mock_stage(PipelineStage, devices, devices, rank)
        calls: list[str] = []
        stage.forward_one_chunk.side_effect = lambda i, *a, _r=rank, _c=calls, **k: _c.append(f"{_r}F{i}")
        stage.backward_one_chunk.side_effect = lambda i, *a, _r=rank, _c=calls, **k: _c.append(f"{_r}B{i}")
        # each get_*_ops call answers with the action string of the op torch would post (none
        # where the stage has no peer); posting a batch records them in order
        for getter, name, peer in (("get_fwd_recv_ops", "RECV_F", rank > 0), ("get_fwd_send_ops", "SEND_F", rank < devices - 1),
                                   ("get_bwd_recv_ops", "RECV_B", rank < devices - 1), ("get_bwd_send_ops", "SEND_B", rank > 0)):
            getattr(stage, getter).side_effect = lambda i, *a, _n=name, _r=rank, _p=peer, **k: [f"{_r}{_n}{i}"] if _p else []

        def post(ops, *args, _c=calls, **kwargs):
            if comms:
                _c.extend(ops)
            return []

        try:
            schedule = cls(stage, microbatches, loss_fn=lambda output, target: 0)
        except _TORCH_REFUSALS as exc:
            raise _refused(cls, devices, microbatches, 1, exc) from None
        with mock.patch.object(schedules, "_batch_p2p", side_effect=post), \
                mock.patch.object(schedules, "_sorted_batch_p2p", side_effect=lambda ops, *a, **k: post(ops) or {}), \
                mock.patch.object(schedules, "_wait_batch_p2p"), \
                mock.patch.multiple(schedule, _maybe_compute_loss=mock.DEFAULT, _maybe_get_loss=mock.DEFAULT,
                                    _update_losses=mock.DEFAULT, _initialize_stage=mock.DEFAULT):
            schedule._step_microbatches([()] * microbatches, [{}] * microbatches, None, None)
        orders[rank] = calls
    return orders


#: torch builds a schedule's order in Python, a few thousand ops a second (ppviz simulates
#: about a million): sizes are refused above this share of ppviz's size budget
TORCH_BUDGET_SHARE = 100


def _sizes(devices, microbatches, stages_per_device, default_v: int) -> tuple[int, int, int]:
    p = positive_int("devices", devices)
    m = positive_int("microbatches", microbatches)
    v = positive_int("stages_per_device", stages_per_device, allow_none=True)
    v = default_v if v is None else v
    estimate = 3 * p * v * m  # at most an F, an I and a W per stage and microbatch
    limit = max(1, max_ops() // TORCH_BUDGET_SHARE)
    if estimate > limit:
        raise ConfigError("size", f"devices={p}, microbatches={m}, stages_per_device={v}",
                          f"that is up to {estimate:,} ops, over {limit:,} (1/{TORCH_BUDGET_SHARE} of the size budget: "
                          f"torch builds a few thousand ops a second); use smaller sizes, or raise the budget with "
                          f"ppviz.set_budget(max_ops=...)", reason="too large to build through torch here")
    return p, m, v


@checked_arguments
def from_torch(schedule, *, devices: int | None = None, microbatches: int | None = None,
               stages_per_device: int | None = None, comms: bool = False) -> Program:
    """The per-device compute order torch runs, as a validated :class:`ppviz.Program`.

    ``from_torch(schedule_object)`` reads an existing torch schedule (its sizes come with it);
    ``from_torch("Interleaved1F1B", devices=4, microbatches=8, stages_per_device=2)`` builds one
    with mock stages first (``stages_per_device`` defaults to 1 for single-stage schedules and 2
    for the others, as torch's visualiser does). A dict ``{rank: [actions]}`` is read as
    torch's ``pipeline_order``. Sizes torch refuses raise ScheduleConstraintError with torch's
    reason. ``comms=True`` keeps the send and receive ops torch runs (``Program.comms``): its
    lowered ``pipeline_order_with_comms``, or the P2P batches a single-stage schedule posts.
    """
    if isinstance(schedule, Mapping):
        return Program.from_actions(schedule).validate()
    schedules, PipelineStage = _pipelining()
    if isinstance(schedule, (str, type)):
        cls = _schedule_class(schedules, schedule)
        single = issubclass(cls, schedules.PipelineScheduleSingle)
        p, m, v = _sizes(devices, microbatches, stages_per_device, 1 if single else 2)
        if single:
            if v != 1:
                raise ScheduleConstraintError("stages_per_device", v, "use 1", reason=f"torch {cls.__name__} "
                                              "runs one stage per rank (PipelineScheduleSingle)")
            actions = _executed_orders(schedules, PipelineStage, cls, p, m, comms)
        else:
            stage = _mock_stage(PipelineStage, p, p * v)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # about the mock stages, not the schedule
                    built = cls([stage] * v, m)
            except _TORCH_REFUSALS as exc:
                raise _refused(cls, p, m, v, exc) from None
            actions = built.pipeline_order_with_comms if comms else built.pipeline_order
        return Program.from_actions(actions, microbatches=m, stages=p * v, name=cls.__name__).validate()

    for name, value in (("devices", devices), ("microbatches", microbatches), ("stages_per_device", stages_per_device)):
        if value is not None:
            raise ConfigError(name, value, "leave the sizes out when passing a schedule object; they come with it")
    cls = type(schedule)
    if isinstance(schedule, schedules.PipelineScheduleSingle):
        p, m = schedule._num_stages, schedule._n_microbatches
        actions = _executed_orders(schedules, PipelineStage, cls, p, m, comms)
        return Program.from_actions(actions, microbatches=m, stages=p, name=cls.__name__).validate()
    order = getattr(schedule, "pipeline_order_with_comms" if comms else "pipeline_order", None)
    if not isinstance(order, Mapping) or not order:
        raise ConfigError("schedule", cls.__name__,
                          "give a torch schedule object with a pipeline_order, a schedule class or a schedule name")
    microbatches = getattr(schedule, "_n_microbatches", None)
    stages = getattr(schedule, "_num_stages", None)
    return Program.from_actions(order, microbatches=microbatches, stages=stages, name=cls.__name__).validate()


__all__ = ["from_torch"]
