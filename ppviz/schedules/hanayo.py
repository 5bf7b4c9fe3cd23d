"""Hanayo: one pipeline that turns at each end of the devices, in W waves, without model replicas.

Source: Liu, Cheng, Zhou & You, "Hanayo: Harnessing Wave-like Pipeline Parallelism for Enhanced
Large Model Training Efficiency" (SC'23, doi 10.1145/3581784.3607073, arXiv 2308.15762): §3.2–3.4,
Table 1, Figures 3(d), 3(e) and 6, Eq. (1). The authors publish no code; the order below is the
rule of the one public generator, topal-team/elf (``elf/scheduling/schedulers.py``,
``generate_hanayo_schedule``), which equals the paper's Figures 3(d) (p = 4, one wave), 3(e)
(p = 4, two waves) and 6(a) (p = 8, two waves) op for op (``tests/test_hanayo.py`` holds the three
figures as op orders, and the generator, which it equals on 320 (p, m, W)).

Placement (Table 1: W = S / 2P waves): the model is cut into S = 2Wp stages; a microbatch goes
down the devices (stage s on device s), turns on device p−1 (stages p−1 and p there), comes back
up to device 0, turns again, and so on: ``Placement.v_shape(p, 2W)``, torch's "v" style. Each
device holds 2W chunks, two per wave, so ``stages_per_device`` is v = 2W (one wave: v = 2); a
chunk costs f/2W, b/2W, w/2W and holds 1/2W of an activation unit. One set of weights: no
replicas (Chimera's second replica becomes data parallelism, §3.2 and Figure 5).

Order (rank r; chunk c is its c-th stage in model order, so the even chunks are the down legs and
the odd ones the up legs; backwards are full B's):

1. min(p − r, m) forwards of chunk 0, microbatches 0, 1, …;
2. for each wave w and each microbatch j: the forward of (chunk 2w+1, j), then the next
   down-leg forward still to run (down legs in order, microbatches in order within a leg) or,
   once all of those have run, the next up-leg backward (up legs from the last, microbatches in
   order);
3. for each wave w and each microbatch j: the backward of (chunk 2W−2−2w, j), then the next
   up-leg backward still to run, if any.

Microbatches: the paper draws and analyses only m = p ("employing the corresponding number of
micro-batches", every figure has B = P). Larger m follows the elf generator's rule above, under
which a device issues all m·W down-leg forwards before its first backward: the bubble stays that
of m = p, but activation memory grows with m, as GPipe's does. m < p is refused.

* Bubble (paper, Eq. (1): the bubbles of zones A, B and C in Figure 7, for B = P microbatches):
  ratio [T_B/W + (…)T_C] / [P/(P−1)·T_F + (1/2W + P/(P−1))·T_B + (…)T_C], T_F and T_B a whole
  forward / backward divided by P (ppviz's f and b + w); with T_B = 2T_F and T_C = 0 the paper
  writes (2P−2)/(3PW+P−1). Multiplied by P−1, its numerator is the idle time per device,
  (p−1)·T_B/W, and that is exact here: idle (p−1)·max(f, b+w)/W per device (zone B assumes
  T_B >= T_F; when the forward is the longer pass it takes T_B's place), for comm = 0, uniform
  costs and every m >= p (checked by simulation: p = 1…8, W = 1…4, m from p to 4p, 119 cost
  triples). The denominator counts only half of that idle beside the work (its 1/2W term), so
  the printed ratio is above the simulated bubble fraction: at P = 4, W = 1, T_B = 2T_F the paper
  gives 6/15 = 0.4 where Figure 3(d)'s schedule idles 6 of 18 time units (1/3). The closed form
  is the idle; ``bubble_formula`` also prints the paper's ratio for the config when m = p.
* Memory (paper, §3.4: M_w and M_a as in mainstream schemes, Figure 3(d)/(e) M_a bars): device r
  peaks at m − (p−1−r)/2W activation units, from m − (p−1)/2W on device 0 to m on device p−1;
  at m = p that is at most p, 1F1B's (DAPPLE's) peak. Exact for every m >= p.
"""

from __future__ import annotations

import numpy as np

from ..core.closed_form import ClosedForm, base, held
from ..core.placement import Placement
from ..core.program import B, F, Program
from ..core.registry import ScheduleSpec, no_microbatch_groups, register, require


def hanayo_order(rank: int, p: int, m: int, waves: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rank ``rank``'s passes in order, as arrays: is each a forward, its chunk, its microbatch.

    The rule above, counted out: with T = W·m and d = min(p − rank, m) first forwards, step 2's
    t-th extra pass is down-leg forward d + t while t < T − d, then up-leg backward t − (T − d);
    step 3 starts at up-leg backward d, so its t-th extra pass is up-leg backward d + t while
    t < T − d, and none after."""
    first = min(p - rank, m)
    total = m * waves
    t = np.arange(total)
    mid = total - first  # the passes of step 2 that still issue a down-leg forward
    up_chunk = 2 * waves - 1  # the last chunk: the first up leg to run backwards
    # each step's two passes are a pair of rows, interleaved column by column (ravel in Fortran
    # order); while t < mid, step 2's second pass is a forward and step 3 has a second pass
    early = np.stack([np.ones(total, bool), t < mid]).ravel("F")
    # step 2: (F, chunk 2w + 1, j) then the next down-leg forward or up-leg backward
    extra = np.where(t < mid, first + t, t - mid)
    step2_chunk = np.stack([2 * (t // m) + 1, np.where(t < mid, 2 * (extra // m), up_chunk - 2 * (extra // m))])
    step2_mb = np.stack([t % m, extra % m])
    # step 3: (B, chunk 2W − 2 − 2w, j) then the next up-leg backward while any is left
    later = first + t[:mid]
    step3_chunk = np.stack([2 * waves - 2 - 2 * (t // m), np.r_[up_chunk - 2 * (later // m), np.zeros(first, int)]])
    step3_mb = np.stack([t % m, np.r_[later % m, np.zeros(first, int)]])
    forward = np.r_[np.ones(first, bool), early, np.zeros(int(early.sum()), bool)]
    chunk = np.r_[np.zeros(first, int), step2_chunk.ravel("F"), step3_chunk.ravel("F")[early]]
    mb = np.r_[np.arange(first), step2_mb.ravel("F"), step3_mb.ravel("F")[early]]
    return forward, chunk, mb


def build_hanayo(config) -> Program:
    p, m, v = config.devices, config.microbatches, config.stages_per_device
    per_device = []
    for rank in range(p):
        forward, chunk, mb = hanayo_order(rank, p, m, v // 2)
        # down legs (even chunks) at stage chunk·p + rank, up legs at chunk·p + p − 1 − rank
        stage = chunk * p + np.where(chunk % 2 == 0, rank, p - 1 - rank)
        per_device.append((np.where(forward, F, B).astype(np.int8), stage, mb))
    return Program.from_arrays(per_device, stages=p * v, microbatches=m, placement=Placement.v_shape(p, v))


def _validate(config) -> None:
    p, m, v = config.devices, config.microbatches, config.stages_per_device
    near = sorted({max(2, v - 1), v + 1})  # the even neighbours of an odd v
    require(v >= 2 and v % 2 == 0, config, "stages_per_device",
            "use " + " or ".join(map(str, near)) + " (v = 2 × waves: 2 for one wave, 4 for two, …)",
            f"holds two chunks per wave on every device (down the devices and back up), so v must be "
            f"an even number >= 2; got {v}")
    no_microbatch_groups(config)
    require(m >= p, config, "microbatches", f"use m >= {p} (m = p = {p} is the paper's scheme)",
            f"runs at least one microbatch per device (the paper's figures all have m = p); got {m} for p = {p}")


def hanayo_closed_form(config) -> ClosedForm:
    p, m, v, f, b, w, a = base(config)
    waves = v // 2
    full = b + w
    exact = "(p−1)·max(f, b+w)/W, W = v/2 waves (Eq. (1)'s numerator × (P−1)), idle"
    if p > 1 and m == p:  # Eq. (1) describes the paper's setting, B = P
        paper = (full / waves) / (p / (p - 1) * f + (1 / (2 * waves) + p / (p - 1)) * full)
        exact = f"Eq. (1) gives {paper:.4g} here; exact: " + exact
    return ClosedForm(
        schedule="hanayo",
        idle=(p - 1) * max(f, full) / waves,
        ideal=m * (f + b + w),
        peak_activation=tuple((m - (p - 1 - r) / (2 * waves)) * a for r in range(p)),
        bubble_formula=exact,
        memory_formula="m − (p−1−r)/2W on device r: at m = p, up to p (1F1B's); grows with m beyond p",
        source="Liu et al., Hanayo (SC'23) Eq. (1), Figures 3(d)/(e); topal-team/elf generate_hanayo_schedule",
        assumptions="uniform stage costs, comm = 0 (m >= p, as the schedule requires)",
        **held(config, {"m >= p": m >= p}),
    )


register(ScheduleSpec(
    name="hanayo",
    summary="wave-like: one pipeline turns at each end of the devices, W waves, no replicas",
    reference="Liu et al., Hanayo (SC'23, arXiv 2308.15762); topal-team/elf generate_hanayo_schedule",
    builder=build_hanayo,
    aliases=("Hanayo", "wave-like", "wave-pipeline", "hanayo-wave"),
    default_v=2,
    v_min=2,
    v_max=None,
    v_step=2,
    validate=_validate,
    closed_form=hanayo_closed_form,
    constraints="v = 2W even (W waves); m >= p (m = p in the paper)",
))
