"""BitPipe: two V-shaped interleaved pipelines in opposite directions, one per model replica.

Source: Wu et al., "BitPipe: Bidirectional Interleaved Pipeline Parallelism for Accelerating
Large Models Training" (arXiv 2410.19367, 2024) and its code (wuhouming/BitPipe,
``megatron/core/pipeline_parallel/bitpipe_schedule.py``, ``forward_backward_pipelining_with_BitPipe``
with its "V_shaped" layer assignment in ``megatron/model/transformer.py``). Chosen over the other
2024–2025 hybrids because its reference code is public and its order is fully determined by
that one function; the per-device orders here equal the paper's README figure (p = 4, m = 4)
and its index lists equal the ones the code's comments print.

Placement (the code's four model chunks per device): the model is cut into 2p stages of half
of 1/p; the "down" replica (microbatches < m/2) runs stage s on device s for s < p and on
device 2p−1−s after (a V from device 0), the "up" replica (the rest) on device p−1−s and then
s−p (a V from device p−1). Every device holds two stages of each replica: 2× parameters,
``replicas=2``, v = 2.

Order (rank r, half = p/2, the code's ``num_initial`` lead = half−r for r < half, else
r−half+1): the code numbers 2m "virtual" microbatches, id i on chunk ((i mod p) div half) + 2·[i
>= m]; ids i and i+m are one microbatch on its replica's two legs. Per unit of p microbatches
it lists the forward ids as lead of its own first leg, then pairs (other replica's first leg,
own first leg), pairs (other first leg, other second leg), pairs (own second leg, other second
leg), and lead of its own second leg; backwards mirror that with the legs swapped. Rank r runs
W = 3p/2 + min(r, p−1−r) warm-up forwards, then per unit (direct concatenation) 1F1B steps,
a backward drain and a forward refill, then the last 1F1B steps and the cooldown — the code's
control flow, loop for loop. The code's two gradient-sync markers are not compute and are left out.

* Bubble (the code publishes none; read off the construction and checked by simulation on
  every m a multiple of p, p <= 10 and 125 cost triples): idle
  (p/2 − 1)(max(f, B) + (m/p − 1)·|B − f|) per device, B = b + w. One unit of p microbatches
  idles (p/2 − 1)·max(f, B) — half of Chimera's (p − 2)·B, from the half-size stages — and each
  further unit of direct concatenation adds (p/2 − 1)|B − f|.
* Memory: rank r holds its W + 1 = 3p/2 + min(r, p−1−r) + 1 half-size activations at the
  start of its first backward: (3p/2 + min(r, p−1−r) + 1)/2 activation units, from
  (3p/2 + 1)/2 on the outer devices to p on the middle ones; 2× parameters. Exact for every
  m a multiple of p.
"""

from __future__ import annotations

import numpy as np

from ..core.closed_form import ClosedForm, base, uniform_costs
from ..core.placement import Placement
from ..core.program import B, F, Program
from ..core.registry import ScheduleSpec, even_devices_whole_units, no_microbatch_groups, register, require


def _unit_lists(rank: int, p: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The code's ``get_microbatch_idx`` and ``get_bkmicrobatch_idx`` (without the sync markers)
    for one unit: rank ``rank``'s forwards and backwards as (chunk, i), the i-th of the unit's
    p/2 microbatches of that chunk. Every unit repeats them, one unit's microbatches further."""
    half = p // 2
    own = rank // half
    lead = half - rank if rank < half else rank - half + 1
    lists = []
    for legs in ((own, 1 - own, 3 - own, 2 + own), (2 + own, 3 - own, 1 - own, own)):
        a, b, c, d = legs
        order = [(a, i) for i in range(lead)]
        for i in range(half - lead):
            order += [(b, i), (a, i + lead)]
        for i in range(lead):
            order += [(b, i + half - lead), (c, i)]
        for i in range(half - lead):
            order += [(d, i), (c, i + lead)]
        order += [(d, i + half - lead) for i in range(lead)]
        lists.append(order)
    return lists[0], lists[1]


def _control_flow(rank: int, p: int, units: int) -> tuple[np.ndarray, np.ndarray]:
    """Rank ``rank``'s passes as (is a backward, position in its forward or backward list), the
    code's control flow: warm-up forwards, per unit but the last 1F1B steps, a backward drain and
    a forward refill, then the last 1F1B steps and the cooldown. Every unit but the last runs one
    pattern, 2p positions further each time; it is laid out once and repeated."""
    warmup = p + p // 2 + min(rank, p - 1 - rank)
    remaining = 2 * p - warmup
    drain = warmup - remaining + 1

    def one_f_one_b(steps, f_first, b_first):
        k = np.arange(steps)
        return np.tile([0, 1], steps), np.stack([f_first + k, b_first + k], axis=1).ravel()

    def run(kind, first, steps):
        return np.full(steps, kind), first + np.arange(steps)

    pieces = [one_f_one_b(remaining, warmup, 0), run(1, remaining, drain),
              one_f_one_b(remaining - 1, 2 * p, warmup + 1), run(0, 2 * p + remaining - 1, drain)]
    unit_kind, unit_position = (np.concatenate(parts) for parts in zip(*pieces))
    middle = (units - 1) * 2 * p
    repeats = np.arange(units - 1)[:, None] * 2 * p
    parts = [run(0, 0, warmup), (np.tile(unit_kind, units - 1), (unit_position + repeats).ravel()),
             one_f_one_b(remaining, warmup + middle, middle), run(1, middle + remaining, 2 * p - remaining)]
    kind, position = (np.concatenate(x) for x in zip(*parts))
    return kind, position


def build_bitpipe(config) -> Program:
    p, m = config.devices, config.microbatches
    half, units = p // 2, m // p
    per_device = []
    for rank in range(p):
        # chunks 0, 2: the down replica (microbatches 0..m/2−1), 1, 3: the up replica; per unit
        # u the i-th microbatch of a chunk is u·p/2 + i of its replica
        stage_of = np.array([rank, p - 1 - rank, 2 * p - 1 - rank, p + rank])
        lists = [np.array(order) for order in _unit_lists(rank, p)]
        backward, position = _control_flow(rank, p, units)
        chunk_i = np.where(backward[:, None] == 1, lists[1][position % (2 * p)], lists[0][position % (2 * p)])
        chunk, i = chunk_i[:, 0], chunk_i[:, 1]
        microbatch = (chunk % 2) * (m // 2) + (position // (2 * p)) * half + i
        per_device.append((np.where(backward == 1, B, F).astype(np.int8), stage_of[chunk], microbatch))
    return Program.from_arrays(per_device, stages=2 * p, microbatches=m, placement=bidirectional_v(p, m))


def bidirectional_v(p: int, m: int) -> Placement:
    """Two replicas, each in a V over 2p stages: down from device 0, up from device p−1."""
    down = tuple(s if s < p else 2 * p - 1 - s for s in range(2 * p))
    up = tuple(p - 1 - s if s < p else s - p for s in range(2 * p))
    return Placement("bidirectional-v", devices=p, stage_device=down, reverse_device=up, split=m // 2)


def _validate(config) -> None:
    require(config.stages_per_device == 2, config, "stages_per_device", "use 2 (leave it unset)",
            "places two stages of each of its two replicas on every device (the code's four model chunks)")
    no_microbatch_groups(config)
    even_devices_whole_units(
        config, "splits the devices into two halves that lead the two directions, so it needs an even number",
        f"concatenates units of p = {config.devices} microbatches "
        "(the code: 'not divisible by pipeline-model-parallel-size')")


def bitpipe_closed_form(config) -> ClosedForm:
    p, m, _, f, b, w, a = base(config)
    full = b + w
    return ClosedForm(
        schedule="bitpipe",
        idle=(p / 2 - 1) * (max(f, full) + (m // p - 1) * abs(full - f)),
        ideal=m * (f + b + w),
        peak_activation=tuple((3 * p / 2 + min(r, p - 1 - r) + 1) / 2 * a for r in range(p)),
        bubble_formula="(p/2 − 1)(max(f, B) + (m/p − 1)|B − f|), B = b + w",
        memory_formula="(3p/2 + min(r, p−1−r) + 1)/2 on device r; 2× parameters",
        source="read off wuhouming/BitPipe bitpipe_schedule.py (arXiv 2410.19367) and checked by simulation",
        assumptions="uniform stage costs, comm = 0",
        applies=uniform_costs(config),
    )


register(ScheduleSpec(
    name="bitpipe",
    summary="bidirectional interleaved: two replicas, each in a V over 2p half-size stages",
    reference="Wu et al., BitPipe (arXiv 2410.19367); wuhouming/BitPipe bitpipe_schedule.py",
    builder=build_bitpipe,
    aliases=("BitPipe", "bidirectional-interleaved"),
    default_v=2,
    v_min=2,
    v_max=2,
    validate=_validate,
    closed_form=bitpipe_closed_form,
    constraints="v = 2; even p; m a multiple of p",
    replicas=2,
))
