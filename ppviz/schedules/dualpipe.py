"""DualPipe and DualPipeV: DeepSeek's bidirectional schedules with overlapped F&B pairs.

Sources: DeepSeek-V3 technical report (arXiv 2412.19437) and deepseek-ai/DualPipe
(``dualpipe/dualpipe.py``, ``dualpipev.py``); DualPipeV ("cut-in-half", credited to Sea AI Lab)
exactly as torch's ``ScheduleDualPipeV`` builds it (per-device order equal to torch's, op for op).

Both run DeepSeek's eight steps on every device. A device has two "phases", the two model
pieces it holds; with h its half-rank and N the number of half-ranks (defined below):

1. 2(N−h−1) forwards of phase 0;            5. N−h−1 × (B of phase 1; F1&B0 pair);
2. h+1 × (F phase 0, F phase 1);             6. h+1 × (B1, B0), switching to I (zero bubble)
3. N−h−1 × (I phase 1, W, F phase 1);           halfway (before B1 when h is odd, before B0
4. C−2N+h+1 × (F0&B1 pair, F1&B0 pair);         when h is even);
   on the middle device(s) the very first    7. N−h−1 × (W, I phase 0);
   F0 and B1 run one after the other;        8. h+1 × W.

The F&B pairs hold an F and a full backward B (DeepSeek overlaps them as one slot; their cost
is ``Config.fb``), and DeepSeek overlaps the pipeline's communication with that compute
(``comm.isend``/``irecv`` posted around each step, waited for at the next), so with transfers
(``Config.topology``) both schedules default to ``p2p="overlapped"``; the zero-bubble steps split B into I and W, and every W runs the oldest
pending I's weight gradient (DeepSeek's ``WeightGradStore`` queue).

``dualpipe`` — two replicas of the model (2× parameters; ``replicas=2``). Microbatches
0..m/2−1 flow down the first replica (stage s on device s), m/2..m−1 up the second (stage s
on device p−1−s), ppviz's numbering (ARCHITECTURE.md). Device r: h = min(r, p−1−r), N = p/2, C = m/2; its
phase 0 is the direction that starts at its own end of the pipeline (down for r < p/2, up
otherwise); the middle devices are p/2−1 and p/2. Needs even p and even m >= 2p (DeepSeek's
asserts).

* Bubble (DeepSeek's notation, B = full backward = b + w, F&B = ``fb``): idle
  (p/2 − 1)(F&B + B − 3W) per device; p = 8, m = 20, f = b = w = 1 (F&B = 3): idle 6,
  makespan 66 (DualPipe README). Exact on every device when f = b, w <= f and there is no
  overlap gain (fb = f + b + w). With a gain, devices that run more pairs finish their work
  sooner and one figure no longer fits every device (p = 8, m = 20, fb = 2.4: the formula's
  4.2 is the middle devices' idle; the outer ones idle 3).
* Memory: p + 1 activation units (DeepSeek's PP+1; 1F1B's PP) on every device, whatever
  W keeps, beside 2× parameters.

``dualpipe-v`` — one model cut into 2p stages in a V (device r holds stages r and 2p−1−r),
so parameters are 1× per device but two half-size stages. Device r: h = r, N = p, C = m,
phase 0 = stage r, phase 1 = stage 2p−1−r; the middle device is p−1. Needs m >= 2p
(torch: m >= number of stages; DeepSeek: num_chunks >= 2·num_ranks).

* Bubble: (PP/2 − 1)(F&B + B − 3W) with PP = 2p stages and stage costs half of f, b, w,
  fb: (p − 1)(fb + b − 2w)/2, under the same conditions as DualPipe's. p = 4, m = 10,
  f = b = w = 1: makespan 33, idle 3 per device.
* Memory: 2p + 1 chunks (PP+1 stages' activations, each half a unit), i.e. p + ½
  activation units on every device, whatever W keeps; counting F − (B|I) along torch's
  ``dualpipev_4rank_10mb.csv`` gives the same 9 chunks.

``dualpipe-v-unsplit`` — DualPipeV with every backward a full B: DeepSeek's eight steps run with
``enable_zb=False`` throughout (so step 3 is B1 F1, step 6 never switches to I, step 7 is B0
alone and step 8 is empty). It is what DeepSpeed's ``DualPipeVSchedule`` (deepspeedai/DeepSpeed
PR #8576) runs with ordinary layers, whose ``WeightGradStore`` receives nothing to defer, so every
backward is whole (tests/test_dualpipe.py compares the two); DeepSeek's, torch's and d9d's
DualPipeV split the backward. It is the baseline that shows what the split buys.

* Bubble (no published figure; read off the construction, checked by simulation):
  (PP/2 − 1)(F&B + B) with PP = 2p half-size stages, i.e. (p − 1)(fb + b + w)/2 per device,
  less f/2 when b + w >= 2f (the middle device's unpaired first F and B); exact when fb =
  f + b + w and b + w = f or b + w >= 2f. p = 4, m = 10, f = b = w = 1: idle 7 against the
  split version's 3.
* Memory: 2p + 1 chunks = p + ½ activation units on every device, as with the split.
"""

from __future__ import annotations

from collections import deque

from ..core.program import DeviceOps, Program
from ..core.placement import Placement
from ..core.closed_form import ClosedForm, base, held
from ..core.registry import ScheduleSpec, register, require
from .splice import spliced_builder


def _eight_steps(ops: DeviceOps, phases, h: int, halves: int, chunks: int, middle: bool,
                 zero_bubble: bool = True) -> None:
    """DeepSeek's eight steps on one device.

    ``phases[k]`` is (stage, first microbatch) of phase k; each phase numbers its microbatches
    upwards from there, separately for forwards and backwards. Without ``zero_bubble`` every
    backward is a full B (DeepSeek's ``enable_zb=False`` throughout), so steps 3 and 7 lose their
    W's and step 8 is empty.
    """
    forwards = [0, 0]
    backwards = [0, 0]
    pending_w: deque[tuple[int, int]] = deque()

    def f(k):
        stage, first = phases[k]
        ops.f(stage, first + forwards[k])
        forwards[k] += 1

    def backward(k, split):
        stage, first = phases[k]
        mb = first + backwards[k]
        backwards[k] += 1
        if split:
            ops.i(stage, mb)
            pending_w.append((stage, mb))
        else:
            ops.b(stage, mb)

    def w():
        ops.w(*pending_w.popleft())

    def pair(fk, bk):
        f_stage, f_first = phases[fk]
        b_stage, b_first = phases[bk]
        ops.fb(f_stage, f_first + forwards[fk], b_stage, b_first + backwards[bk])
        forwards[fk] += 1
        backwards[bk] += 1

    lead = halves - h - 1
    for _ in range(2 * lead):
        f(0)
    for _ in range(h + 1):
        f(0)
        f(1)
    for _ in range(lead):
        backward(1, split=zero_bubble)
        if zero_bubble:
            w()
        f(1)
    for i in range(chunks - 2 * halves + h + 1):
        if i == 0 and middle:
            # DeepSeek: "We don't overlap these two chunks to further reduce bubble size."
            f(0)
            backward(1, split=False)
        else:
            pair(0, 1)
        pair(1, 0)
    for _ in range(lead):
        backward(1, split=False)
        pair(1, 0)
    split = False
    for i in range(h + 1):
        if i == (h + 1) // 2 and h % 2 == 1:
            split = zero_bubble
        backward(1, split)
        if i == (h + 1) // 2 and h % 2 == 0:
            split = zero_bubble
        backward(0, split)
    for _ in range(lead):
        if zero_bubble:
            w()
        backward(0, split=zero_bubble)
    for _ in range(h + 1 if zero_bubble else 0):
        w()


def build_dualpipe(config) -> Program:
    p, m = config.devices, config.microbatches
    half_m, halves = m // 2, p // 2
    devices = []
    for r in range(p):
        down, up = (r, 0), (p - 1 - r, half_m)
        phases = (down, up) if r < halves else (up, down)
        ops = DeviceOps()
        _eight_steps(ops, phases, min(r, p - 1 - r), halves, half_m, middle=r in (halves - 1, halves))
        devices.append(ops)
    return Program.from_device_ops(devices, stages=p, microbatches=m, placement=Placement.bidirectional(p, m))


def build_dualpipe_v(config) -> Program:
    return _dualpipe_v(config, zero_bubble=True)


def build_dualpipe_v_unsplit(config) -> Program:
    return _dualpipe_v(config, zero_bubble=False)


def _dualpipe_v(config, zero_bubble: bool) -> Program:
    p, m = config.devices, config.microbatches
    devices = []
    for r in range(p):
        ops = DeviceOps()
        _eight_steps(ops, ((r, 0), (2 * p - 1 - r, 0)), r, p, m, middle=r == p - 1, zero_bubble=zero_bubble)
        devices.append(ops)
    return Program.from_device_ops(devices, stages=2 * p, microbatches=m, placement=Placement.v_shape(p, 2))


def _validate_dualpipe(config) -> None:
    p, m = config.devices, config.microbatches
    require(config.stages_per_device == 1, config, "stages_per_device",
            "use 1 (each replica holds one stage per device), or dualpipe-v for two stages per device",
            "holds one stage of each of its two replicas per device")
    require(p % 2 == 0, config, "devices", "use " + " or ".join(map(str, sorted({max(2, p - 1), p + 1}))),
            f"needs an even number of devices; got {p}")
    near = [k for k in (m - 1, m + 1) if k >= 2 * p] or [2 * p]
    require(m % 2 == 0, config, "microbatches", "use " + " or ".join(map(str, near)),
            f"sends half of the microbatches each way, so it needs an even number of them; got {m}")
    require(m >= 2 * p, config, "microbatches", f"use an even m >= {2 * p}",
            f"needs at least 2p = {2 * p} microbatches (DeepSeek: num_chunks >= 2 * num_ranks); got {m}")


def _validate_dualpipe_v(config) -> None:
    p, m = config.devices, config.microbatches
    require(config.stages_per_device == 2, config, "stages_per_device", "use 2 (leave it unset)",
            "places exactly two stages per device in a V")
    require(m >= 2 * p, config, "microbatches", f"use m >= {2 * p}",
            f"needs at least as many microbatches as stages (2p = {2 * p}); got {m}")


# Closed forms, from the papers' formulas (independent of the builders above) ----------

def dualpipe_closed_form(config) -> ClosedForm:
    p, m, _, f, b, w, a = base(config)
    pair = f + b + w if config.fb is None else config.fb
    return ClosedForm(
        schedule="dualpipe",
        idle=(p / 2 - 1) * (pair + (b + w) - 3 * w),
        ideal=m * (f + b + w),
        peak_activation=tuple((p + 1) * a for _ in range(p)),
        bubble_formula="(p/2 − 1)(F&B + B − 3W), B = b + w, W = w, F&B = fb",
        memory_formula="p + 1 on every device (PP+1), beside 2× parameters",
        source="DeepSeek-V3 (arXiv 2412.19437) Table 2; deepseek-ai/DualPipe README",
        assumptions=("uniform stage costs, comm = 0, f = b, w <= f, fb = f+b+w (with an overlap gain the devices' "
                     "busy times differ and one idle figure no longer describes them all)"),
        **held(config, {"f = b": f == b, "w <= f": w <= f, "fb = f+b+w": pair == f + b + w}),
    )


def dualpipe_v_closed_form(config) -> ClosedForm:
    p, m, _, f, b, w, a = base(config)
    pair = f + b + w if config.fb is None else config.fb
    return ClosedForm(
        schedule="dualpipe-v",
        idle=(p - 1) * (pair + (b + w) - 3 * w) / 2,
        ideal=m * (f + b + w),
        peak_activation=tuple((p + 0.5) * a for _ in range(p)),
        bubble_formula="(PP/2 − 1)(F&B + B − 3W) with PP = 2p half-size stages: (p − 1)(fb + b − 2w)/2",
        memory_formula="2p + 1 chunks (PP+1) = p + ½ on every device",
        source="deepseek-ai/DualPipe README (DualPipeV); torch ScheduleDualPipeV",
        assumptions=("uniform stage costs, comm = 0, f = b, w <= f, fb = f+b+w (with an overlap gain the devices' "
                     "busy times differ and one idle figure no longer describes them all)"),
        **held(config, {"f = b": f == b, "w <= f": w <= f, "fb = f+b+w": pair == f + b + w}),
    )


register(ScheduleSpec(
    name="dualpipe",
    summary="bidirectional: two model replicas, overlapped F&B pairs, zero-bubble tail",
    reference="DeepSeek-V3 (arXiv 2412.19437); deepseek-ai/DualPipe dualpipe.py",
    builder=build_dualpipe,
    aliases=("DualPipe",),
    validate=_validate_dualpipe,
    closed_form=dualpipe_closed_form,
    constraints="v = 1; even p; even m >= 2p",
    replicas=2,
    split_backward=True,
    overlapped_p2p=True,
))

register(ScheduleSpec(
    name="dualpipe-v",
    summary="DualPipe cut in half: one model in 2p stages placed in a V",
    reference="deepseek-ai/DualPipe dualpipev.py (Sea AI Lab's cut-in-half); torch ScheduleDualPipeV",
    builder=spliced_builder(build_dualpipe_v),
    aliases=("DualPipeV", "ScheduleDualPipeV", "cut-in-half"),
    default_v=2,
    v_min=2,
    v_max=2,
    validate=_validate_dualpipe_v,
    closed_form=dualpipe_v_closed_form,
    constraints="v = 2; m >= 2p",
    split_backward=True,
    overlapped_p2p=True,
))


def dualpipe_v_unsplit_closed_form(config) -> ClosedForm:
    """No published figure: DeepSeek's (PP/2 − 1)(F&B + B − 3W) without the −3W that the W's
    win back, less half a forward that the middle device's unpaired first F and B save when a
    backward takes at least two forwards. Read off the construction and checked by simulation."""
    p, m, _, f, b, w, a = base(config)
    pair = f + b + w if config.fb is None else config.fb
    full = b + w
    saved = f / 2 if full >= 2 * f and p > 1 else 0.0
    return ClosedForm(
        schedule="dualpipe-v-unsplit",
        idle=(p - 1) * (pair + full) / 2 - saved,
        ideal=m * (f + b + w),
        peak_activation=tuple((p + 0.5) * a for _ in range(p)),
        bubble_formula="(PP/2 − 1)(F&B + B) with PP = 2p half-size stages, less f/2 when B >= 2f",
        memory_formula="2p + 1 chunks (PP+1) = p + ½ on every device",
        source="deepseek-ai/DualPipe dualpipev.py with enable_zb=False; DeepSeek-V3 Table 2 without the −3W",
        assumptions="uniform stage costs, comm = 0, fb = f+b+w, and b + w = f or b + w >= 2f",
        **held(config, {"fb = f+b+w": pair == f + b + w, "b + w = f or b + w >= 2f": full == f or full >= 2 * f}),
    )


register(ScheduleSpec(
    name="dualpipe-v-unsplit",
    summary="DualPipeV with every backward a full B (no I/W split, no zero-bubble steps)",
    reference="deepseek-ai/DualPipe dualpipev.py run with enable_zb=False",
    builder=spliced_builder(build_dualpipe_v_unsplit),
    aliases=("DualPipeV-unsplit", "DualPipeV-noZB", "dualpipe-v-full-backward"),
    default_v=2,
    v_min=2,
    v_max=2,
    validate=_validate_dualpipe_v,
    closed_form=dualpipe_v_unsplit_closed_form,
    constraints="v = 2; m >= 2p",
))
