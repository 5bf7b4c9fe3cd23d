"""Properties of every simulated schedule over random configurations (hypothesis)."""

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from ppviz import Config, ScheduleConstraintError, simulate
from ppviz.core.registry import all_specs

from .helpers import accepted_sizes

SCHEDULES = [s.name for s in all_specs() if s.builder is not None]
costs = st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0]) | st.floats(0.01, 4.0, allow_nan=False)


@st.composite
def configs(draw, schedules=tuple(SCHEDULES), uniform=False):
    name = draw(st.sampled_from(schedules))
    spec = next(s for s in all_specs() if s.name == name)
    p, m, v = accepted_sizes(draw, spec, max_devices=8, microbatches_per_device=4)
    f, b, w = draw(costs), draw(costs), draw(costs)
    assume(f + b + w > 0)
    comm = 0.0 if uniform else draw(st.sampled_from([0.0, 0.0, 0.1, 0.5]))
    overrides = {}
    if not uniform and draw(st.booleans()):
        s = draw(st.integers(0, p * v - 1))
        overrides = {s: {"f": draw(costs), "b": draw(costs)}}
    try:
        return Config(schedule=name, devices=p, microbatches=m, stages_per_device=v, f=f, b=b, w=w, comm=comm,
                      stage_costs=overrides, w_share=draw(st.sampled_from([0.0, 0.5, 1.0, 32 / 34])),
                      segments=draw(st.integers(1, 4)) if spec.segmented else 1)
    except ScheduleConstraintError:
        assume(False)


def check_timeline(res):
    prog, ops, cfg = res.program, res.ops, res.config
    n = len(prog)
    # every (stage, microbatch) runs F once and B once (or I and W once): validate() enforces it,
    # and the op count is exactly what that implies
    split = int(np.count_nonzero(prog.kind == 2))
    # with Vocabulary Parallelism, every device also runs an S and a T of every microbatch
    vocab = 2 * prog.devices * prog.microbatches if (prog.kind >= 4).any() else 0
    assert n == (1 if prog.forward_only else 2) * prog.stages * prog.microbatches + split + vocab
    from ppviz.core.engine import dependencies, op_costs
    from ppviz.core.vocab import edges

    cost = op_costs(prog, cfg)
    if vocab:
        # an op waits for several (the all-reduce barriers): ready when the last of them is
        ptr, on, lag = edges(prog, cfg.comm, cfg.vocab_comm)
        arrive = ops.end[on] + lag
        ready = np.array([arrive[ptr[i]:ptr[i + 1]].max(initial=0.0) for i in range(n)])
    else:
        dep = dependencies(prog)
        has = dep >= 0
        cross = np.where(has & (prog.device != prog.device[np.maximum(dep, 0)]), cfg.comm, 0.0)
        ready = np.where(has, ops.end[np.maximum(dep, 0)] + cross, 0.0)
    # dependencies respected
    assert np.all(ops.start >= ready)
    # durations are the op costs (a pair: both ops share the pair's slot)
    first = prog.pair
    second = np.r_[False, prog.pair[:-1]]
    alone = ~first & ~second
    assert np.array_equal(ops.end[alone], ops.start[alone] + cost[alone])
    # one op at a time per device, in program order, and each starts exactly when the device
    # is free and its inputs are ready (no unexplained idle time)
    prev_end = np.r_[0.0, ops.end[:-1]]
    prev_end[prog.offsets[:-1][prog.offsets[:-1] < n]] = 0.0
    prev_end[second] = prev_end[np.flatnonzero(second) - 1]
    ready_pair = ready.copy()
    idx = np.flatnonzero(first)
    ready_pair[idx] = np.maximum(ready[idx], ready[idx + 1])
    ready_pair[idx + 1] = ready_pair[idx]
    assert np.all(ops.start >= prev_end)
    assert np.array_equal(ops.start, np.maximum(prev_end, ready_pair))
    # the makespan is at least every microbatch's own critical path and every device's work
    for mb in range(prog.microbatches):
        sel = prog.microbatch == mb
        chain = cost[sel & (prog.kind == 0)].sum() + cost[sel & ((prog.kind == 1) | (prog.kind == 2))].sum()
        assert res.makespan >= chain - 1e-9
    assert res.makespan >= res.busy.max() - 1e-9
    assert np.allclose(res.idle, res.makespan - res.busy)
    # memory returns to zero and never goes negative
    assert np.all(res.memory.values >= -1e-9)
    for d in range(prog.devices):
        assert abs(res.memory.curve(d)[1][-1]) < 1e-9


@given(configs())
def test_every_schedule_satisfies_the_execution_model(cfg):
    check_timeline(simulate(cfg))


@given(configs())
def test_engines_agree_bit_for_bit(cfg):
    assume(not cfg.build().pair.any())  # the lockstep engine does not run F&B pairs
    a = simulate(cfg, engine="events")
    b = simulate(cfg, engine="lockstep")
    assert np.array_equal(a.ops.start, b.ops.start) and np.array_equal(a.ops.end, b.ops.end)


@given(configs(uniform=True))
def test_closed_forms_hold_when_their_assumptions_do(cfg):
    res = simulate(cfg)
    cf = res.closed_form
    assert cf is not None
    assume(cf.applies)
    assert res.makespan == pytest.approx(cf.makespan, rel=1e-9, abs=1e-9)
    assert res.bubble_fraction == pytest.approx(cf.bubble_fraction, rel=1e-9, abs=1e-12)
    assert np.allclose(res.idle, cf.idle)
    if cf.peak_activation is not None:
        assert np.allclose(res.peak_activation, cf.peak_activation)
