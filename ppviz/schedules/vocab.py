"""1F1B with Vocabulary Parallelism: the output layer split over every device, in passes S and T.

Source: Yeung, Qi, Lin, Wan, "Balancing Pipeline Parallelism with Vocabulary Parallelism",
MLSys'25 (arXiv 2411.05288), and its code, sail-sg/VocabularyParallelism
(``megatron/core/pipeline_parallel/vocab_parallel_schedule.py``,
``forward_backward_pipelining_with_vocab_parallel``).

Without it, the last stage also runs the output layer (a GEMM of hidden × vocabulary and the
softmax over the vocabulary) and holds its weights: at a 256k vocabulary that is several
transformer layers' time and memory on one device, and every other device waits for it. With
it, every device runs its 1/p of the output layer for every microbatch: an S pass (its shard's
logits, their maximum and sum of exponentials) and a T pass (its shard's weight gradient and
its part of the input gradient), joined by all-reduces over the pipeline group that run on a
stream of their own (:mod:`ppviz.core.vocab` gives the rules). The paper ships two variants,
named as its evaluation names them:

* ``vocab-1`` (the paper's Algorithm 1, the code's ``--disable-backward-fusion``): two
  barriers, C0 after S (the softmax statistics) and C1 after T (the input gradient the last
  stage's backward needs). Rank r runs one more warm-up forward than ``vocab-2``.
* ``vocab-2`` (Algorithm 2, the code's default): one barrier; S computes its shard of the
  input gradient from the local statistics and C0 reduces it with them, so the last stage's
  backward need not wait for T.

Each rank's order is the authors' loop: p − r warm-up forwards (plus one per barrier), the first
S, then 1F1B, each steady step's backward and forward with the output layer's step beside them
(T of the microbatch before and S of the next, fused in one call of theirs), placed before or
after the forward by the FSM of ``is_bsf`` and ``offsets`` that the code runs on its estimates
f = 1, b = 2 (before profiling). The input embedding's passes, which the code also splits over
the devices (each rank looks up the tokens of its shard and the results are all-reduced to the
first stage), stay in stage 0's F and B here: ppviz splits the embedding's parameters but not
its time (a lookup, and a weight gradient the roofline times at 5.6 ms per microbatch for
Gemma 2 9B on an H100, beside 37 ms for the stage's layers).

For comparison the repository ships the interlaced pipeline (Lin et al., OSDI'24:
``interlaced_schedule.py``, ``--use-interlaced-schedule``), registered here as ``interlaced``:
the output layer split the same way but run tensor-parallel style, one blocking step of S then
T on every device together (``Program.vocab_synchronous``), ⌊3p/2⌋ − r warm-up forwards so
that the steps fit the 1F1B steady state.

Closed forms (the repository's README table): the bubble is 1F1B's, (p−1)(f+b+w) per device
beside each device's m(f+b+w+s+t) of work, and device 0 holds p + 2 (``vocab-1``) or p + 1
(``vocab-2``) microbatches' activations, the interlaced pipeline 1.5p, against 1F1B's p; ``vocab_closed_form`` says when
they hold exactly (the memory always; the bubble where the code's estimates b = 2f hold and S
and T fit in a forward).
"""

from __future__ import annotations

from ..core.closed_form import ClosedForm, base, held
from ..core.errors import ScheduleConstraintError
from ..core.placement import Placement
from ..core.program import DeviceOps, Program
from ..core.registry import ScheduleSpec, lookup, no_microbatch_groups, register, require

#: the code's estimates of f and b before its timers have profiled a step (the S passes' placement)
_F, _B = 1, 2
REFERENCE = "https://github.com/sail-sg/VocabularyParallelism (arXiv 2411.05288)"


def s_placement(p: int) -> tuple[list[bool], list[int]]:
    """The code's ``is_bsf`` and ``offsets`` per rank: whether rank r's S pass of a steady step
    runs after its backward and before its forward (BSF) or after the forward (BFS)."""
    offset, is_bsf, offsets = 0, [True], [0]
    while len(is_bsf) < p:
        if offset - _F >= -_B:
            offset -= _F
            is_bsf.append(True)
            offsets.append(offset)
        else:
            is_bsf.append(False)
            offsets.append(offset)
            offset += _B - _F
            is_bsf.append(True)
            offsets.append(offset)
    return is_bsf[:p][::-1], offsets[:p][::-1]


def warmup_s_passes(p: int, is_bsf: list[bool]) -> list[int]:
    """The code's ``num_warmup_s_pass``: S passes each rank runs before its first backward."""
    out = [0] * p
    for r in range(p - 2, -1, -1):
        out[r] = out[r + 1] + (0 if (not is_bsf[r + 1]) and is_bsf[r] else 1)
    return out


def rank_order(r: int, p: int, m: int, barriers: int) -> DeviceOps:
    """Rank r's ops, in the order the authors' loop calls them."""
    is_bsf, _ = s_placement(p)  # the offsets move only the all-reduces and the input embedding
    bsf = is_bsf[r]
    extra = barriers - 1  # the code's warmup_offset
    ops = DeviceOps()
    done_s = 0  # the code's m − num_remaining_s_pass: the next output-layer step's microbatch

    def output_layer() -> None:
        # lm_head_step_helper(k): T of microbatch k − 1, then S of microbatch k
        nonlocal done_s
        if done_s > 0:
            ops.t(r, done_s - 1)
        if done_s < m:
            ops.s(r, done_s)
        done_s += 1

    warmup = min(p - r, m)
    steady = max(0, m - warmup - 1 - extra)
    for i in range(warmup):
        ops.f(r, i)
    output_layer()
    for k in range(1, 1 + extra):
        if warmup + k <= m:
            ops.f(r, warmup + k - 1)
        output_layer()
    if warmup + 1 + extra <= m:
        ops.f(r, warmup + extra)
    for _ in range(warmup_s_passes(p, is_bsf)[r]):
        if done_s <= m - 1 + extra:
            output_layer()
    for i in range(steady):
        ops.b(r, i)
        if bsf:
            output_layer()
        ops.f(r, i + warmup + 1 + extra)
        if not bsf:
            output_layer()
    for i in range(steady, m):
        ops.b(r, i)
        if done_s <= m - 1 + extra:
            output_layer()
    if barriers == 1:
        output_layer()
    return ops


def interlaced_order(r: int, p: int, m: int) -> DeviceOps:
    """Rank r's ops in the interlaced pipeline's loop: ⌊3p/2⌋ − r warm-up forwards, then one
    output-layer step (S then T of a microbatch, every rank together) per microbatch, placed
    after each steady step's forward and backward (their order alternating over the ranks).
    A backward runs the oldest microbatch stored, whatever the id the loop names it by."""
    warmup = min(p * 3 // 2 - r, m)
    cooldown = min(p - r, m)
    waiting = max(0, warmup - cooldown - (p - r - 1) // 2)
    remaining = m - warmup
    ops = DeviceOps()
    backwards = iter(range(m))

    def output_layer(mb: int) -> None:
        ops.s(r, mb)
        ops.t(r, mb)

    for i in range(warmup):
        ops.f(r, i)
    for i in range(cooldown):
        output_layer(i)
    for i in range(waiting):
        ops.b(r, next(backwards))
        output_layer(i + cooldown)
    forward_first = r % 2 == p % 2
    for i in range(remaining):
        if forward_first:
            ops.f(r, i + warmup)
        ops.b(r, next(backwards))
        if not forward_first:
            ops.f(r, i + warmup)
        output_layer(i + cooldown + waiting)
    for i in range(warmup - cooldown - waiting):
        ops.b(r, next(backwards))
        output_layer(i + cooldown + waiting + remaining)
    for _ in range(cooldown):
        ops.b(r, next(backwards))
    return ops


def build(config) -> Program:
    p, m = config.devices, config.microbatches
    spec = lookup(config.schedule)
    order = interlaced_order if spec.vocab_synchronous else \
        (lambda r, p, m: rank_order(r, p, m, spec.vocab_barriers))
    return Program.from_device_ops([order(r, p, m) for r in range(p)], stages=p, microbatches=m,
                                   placement=Placement.contiguous(p, 1), vocab_barriers=spec.vocab_barriers,
                                   vocab_synchronous=spec.vocab_synchronous)


def barriers_of(name: str) -> int:
    return lookup(name).vocab_barriers


def _validate(config) -> None:
    """The sizes the authors' code runs: p >= 2 (it asserts it), one stage per device (it refuses
    interleaving), and m >= p + 1 with one barrier, p + 2 with two: below that its warm-up calls
    the input embedding's forward of a microbatch m, past the last (``tests/vocab_reference.py``)."""
    require(config.stages_per_device == 1, config, "stages_per_device",
            "use 1 (the authors' code refuses Vocabulary Parallelism with interleaving)", "holds one stage per device")
    no_microbatch_groups(config)
    require(config.topology is None, config, "topology", "leave it out: a bare comm latency times the broadcasts",
            "does not yet time transfers over links beside its vocabulary passes' all-reduces")
    require(config.offload is None, config, "offload", "leave it out",
            "does not yet time activation offload beside its vocabulary passes")
    p, m = config.devices, config.microbatches
    if p < 2:
        raise ScheduleConstraintError("devices", p, "use 2 or more",
                                      reason=f"{config.schedule} splits the vocabulary over the pipeline ranks; the "
                                             "authors' code asserts pipeline parallel size > 1")
    if lookup(config.schedule).vocab_synchronous:
        least, rule = p * 3 // 2 + 1, "⌊3p/2⌋ + 1"
        what = f"the input embedding of min(⌊3p/2⌋, m) + 1 microbatches"
    else:
        least, rule = p + barriers_of(config.schedule), f"p + {barriers_of(config.schedule)}"
        what = f"the input embedding of min(p, m) + {least - p} microbatches"
    if m < least:
        raise ScheduleConstraintError(
            "microbatches", m, f"use {least} or more ({rule})",
            reason=f"the authors' {config.schedule} warm-up runs {what} before any other pass, so it needs "
                   f"m >= {rule} (p = {p})")


def vocab_closed_form(config) -> ClosedForm:
    """The README's table: bubble B, 1F1B's (p−1)(f+b+w) per device, beside m(f+b+w+s+t) of
    work; activation memory p + 2 microbatches (vocab-1), p + 1 (vocab-2) or 1.5p (interlaced)
    on device 0: rank r runs p − r + 2, p − r + 1 or ⌊3p/2⌋ − r forwards before its first
    backward frees one (m >= p + 2, p + 1 and ⌊3p/2⌋ + 1, as the code runs). The bubble holds
    where the code's placement of the output layer's passes is exact: its estimates b = 2f (a
    backward twice a forward, which is what b + w = 2f is here) and S and T within a forward
    (s + t <= f). Outside them the memory still holds, and the bubble is the simulation's."""
    p, m, _, f, b, w, a = base(config)
    spec = lookup(config.schedule)
    if spec.vocab_synchronous:
        held_on = [p * 3 // 2 - r for r in range(p)]
        memory, source = "⌊3p/2⌋−r on rank r", "Lin et al., OSDI'24 (nnScaler)"
    else:
        held_on = [p - r + spec.vocab_barriers for r in range(p)]
        memory, source = f"p−r+{spec.vocab_barriers} on rank r", "Yeung et al., MLSys'25 (arXiv 2411.05288)"
    s, t = config.s, config.t
    conditions = {"b + w = 2f": abs(b + w - 2 * f) <= 1e-12 * f, "s + t <= f": s + t <= f,
                  "vocab_comm = 0": config.vocab_comm == 0, "vocab_activation = 0": config.vocab_activation == 0}
    return ClosedForm(
        schedule=config.schedule,
        idle=(p - 1) * (f + b + w),
        ideal=m * (f + b + w + s + t),
        peak_activation=tuple(k * a for k in held_on),
        bubble_formula="(p−1)(f+b+w), as 1F1B's",
        memory_formula=memory,
        source=f"{source}; README of sail-sg/VocabularyParallelism",
        assumptions="uniform stage costs, comm = 0, vocab_comm = 0, vocab_activation = 0, b + w = 2f, s + t <= f",
        **held(config, conditions),
    )


register(ScheduleSpec(
    name="vocab-1",
    summary="1F1B with Vocabulary Parallelism, two all-reduce barriers (the paper's Algorithm 1)",
    reference=REFERENCE + " vocab_parallel_schedule.py --disable-backward-fusion",
    builder=build,
    aliases=("vocab-parallel-1", "vp-1"),
    validate=_validate,
    closed_form=vocab_closed_form,
    constraints="v = 1, p >= 2, m >= p + 2",
    vocab_barriers=2,
))

register(ScheduleSpec(
    name="vocab-2",
    summary="1F1B with Vocabulary Parallelism, one all-reduce barrier (the paper's Algorithm 2, the code's default)",
    reference=REFERENCE + " vocab_parallel_schedule.py",
    builder=build,
    aliases=("vocab-parallel-2", "vp-2", "vocab-parallel"),
    validate=_validate,
    closed_form=vocab_closed_form,
    constraints="v = 1, p >= 2, m >= p + 1",
    vocab_barriers=1,
))


register(ScheduleSpec(
    name="interlaced",
    summary="1F1B with the output layer as one synchronous tensor-parallel-style step on every device "
            "(the interlaced pipeline)",
    reference=REFERENCE + " interlaced_schedule.py --use-interlaced-schedule (Lin et al., OSDI'24)",
    builder=build,
    aliases=("interlaced-pipeline", "interlaced-1f1b"),
    validate=_validate,
    closed_form=vocab_closed_form,
    constraints="v = 1, p >= 2, m >= ⌊3p/2⌋ + 1",
    vocab_barriers=2,
    vocab_synchronous=True,
))
