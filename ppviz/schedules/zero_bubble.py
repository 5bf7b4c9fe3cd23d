"""Zero-bubble schedules with the backward split into I (inputs) and W (weights).

Source: Qi et al., "Zero Bubble Pipeline Parallelism" (arXiv 2401.10241), handcrafted
schedules; torch ``ScheduleInterleavedZeroBubble`` (ZB1P) for the W placement rule.

ZB-H1 runs 1F1B's forwards and input-backwards and delays each W so that rank r starts
its W's r steps into the steady state (torch's ``num_1f1b_microbatches = rank``); the W's
then fill the tail bubble. Per device: warmup min(p−r−1, m) forwards, then F, I (and a W
once r steady steps have passed), then the remaining I's and W's.

* Bubble (ZB notation, b = time of I): idle (p−1)(f + b − w) per device; one third of
  1F1B's when f = b = w. This holds exactly when m >= p and w <= min(f, b) (checked by
  simulation over every cost triple of {¼, ½, 1, 1½, 2, 3}³ and p in 2..6): a W longer than
  an F or an I no longer fits the slots this fixed order leaves for it.
* Memory: the same as 1F1B, p activations on device 0. Rank r holds p−r activations
  waiting for I and r waiting for W, which keep ``w_share`` of theirs: (p−r) + r·w_share.
"""

from __future__ import annotations

from collections import deque

from ..ir import DeviceOps, Program
from ..placement import Placement
from .registry import ScheduleSpec, register, require


def _zb_h1_device(rank: int, p: int, m: int) -> DeviceOps:
    ops = DeviceOps()
    warmup = min(p - 1 - rank, m)
    pending_w: deque[int] = deque()
    next_f = next_i = 0
    for step in range(m + warmup):
        if step < m:
            ops.f(rank, next_f)
            next_f += 1
        if step >= warmup:
            ops.i(rank, next_i)
            pending_w.append(next_i)
            next_i += 1
            if step - warmup >= rank:
                ops.w(rank, pending_w.popleft())
    while pending_w:
        ops.w(rank, pending_w.popleft())
    return ops


def build_zb_h1(config) -> Program:
    p, m = config.devices, config.microbatches
    devices = [_zb_h1_device(r, p, m) for r in range(p)]
    return Program.from_device_ops(devices, stages=p, microbatches=m, placement=Placement.contiguous(p, 1))


def _validate_zb_h1(config) -> None:
    require(config.stages_per_device == 1, config, "stages_per_device",
            "use 1, or interleaved-zb / zb-v for more stages per device", "holds one stage per device")


def _closed_zb_h1(config):
    from ..formulas import zb_h1

    return zb_h1(config)


register(ScheduleSpec(
    name="zb-h1",
    summary="zero bubble, 1F1B memory: W's delayed to fill the drain bubble",
    reference="Zero Bubble PP (arXiv 2401.10241) ZB-H1; torch ScheduleInterleavedZeroBubble rule",
    builder=build_zb_h1,
    aliases=("ZB1P", "zbh1", "zero-bubble-h1"),
    validate=_validate_zb_h1,
    closed_form=_closed_zb_h1,
    constraints="v = 1",
    split_backward=True,
))
