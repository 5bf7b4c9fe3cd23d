"""Relaxation (ppviz/core/relaxation.py): the events engine's times by whole-array passes, bit for
bit, or None so that the loop runs."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ppviz import Config, DeadlockError, Program, simulate
from ppviz.core import relaxation
from ppviz.core.engine import _events, dependencies, execute, op_costs

from .test_properties import configs


def loop_and_relaxed(cfg: Config, program: Program | None = None):
    program = cfg.build() if program is None else program
    dep = dependencies(program)
    cost = op_costs(program, cfg)
    return _events(program, dep, np.zeros(len(program)), cost), relaxation.times(program, dep, cost)


def same(a, b) -> bool:
    # bit for bit: the same doubles, not merely equal ones (array_equal takes -0.0 for 0.0)
    return all(x.dtype == y.dtype and x.tobytes() == y.tobytes() for x, y in zip(a, b))


@st.composite
def uneven(draw):
    """A schedule without communication at sizes where devices run long, with every stage's own
    f and b (floats that round when added, so ties between a device and its input are near ties)."""
    cfg = draw(configs())
    assume(not cfg.build().pair.any())
    m = draw(st.integers(cfg.devices, 24 * cfg.devices))
    stages = cfg.devices * (cfg.stages_per_device or 1)
    spread = st.floats(0.05, 4.0, allow_nan=False)
    overrides = {s: {"f": draw(spread), "b": draw(spread)} for s in range(stages)} if draw(st.booleans()) else {}
    try:
        return cfg.replace(comm=0.0, microbatches=m * cfg.segments, stage_costs=overrides)
    except ValueError:
        assume(False)


@settings(max_examples=150, deadline=None)
@given(uneven())
def test_relaxation_is_the_loop_bit_for_bit_or_declines(cfg):
    loop, relaxed = loop_and_relaxed(cfg)
    assert relaxed is None or same(relaxed, loop)


@pytest.mark.parametrize("schedule,v", [("1f1b", 1), ("gpipe", 1), ("zb-h1", 1), ("zb-h2", 1),
                                        ("interleaved-1f1b", 2), ("looped-bfs", 2), ("zb-v", 2),
                                        ("interleaved-zb", 2), ("hanayo", 2)])
@pytest.mark.parametrize("costs", [{}, {"f": 1.3, "b": 2.7, "w": 0.9},
                                   {"stage_costs": {0: {"f": 1.5, "b": 3.1}}},
                                   {"stage_costs": {7: {"f": 1.7, "b": 3.3}}}])
def test_relaxation_settles_on_the_library_schedules(schedule, v, costs):
    # the cases it is for (p = 8, m >> p, no latency between devices): it must not decline them,
    # or the widget's loop at 10^6 ops would run the loop after all
    cfg = Config(schedule=schedule, devices=8, microbatches=256, stages_per_device=v, **costs)
    loop, relaxed = loop_and_relaxed(cfg)
    assert relaxed is not None
    assert same(relaxed, loop)


def test_relaxation_declines_a_deadlock_of_free_ops():
    # a cycle of ops that cost nothing (execute takes any costs, e.g. a measured run's): every end
    # 0 solves the equations, but the loop cannot run them; ends that do not rise along the
    # cycle are refused, and the loop names the deadlock
    program = Program.from_text({0: "0F0 0B0 0F1 0B1", 1: "1F1 1B1 1F0 1B0"})
    free = np.zeros(len(program))
    assert relaxation.times(program, dependencies(program), free) is None
    with pytest.raises(DeadlockError, match=r"\[0B0\]"):
        execute(program, free, 0.0)
    # with costs, the passes rise without end and give up
    assert relaxation.times(program, dependencies(program), np.ones(len(program))) is None


def test_relaxation_declines_when_passes_do_not_settle():
    # 1F1B whose last device waits on every op, with costs whose sums round: a tie broken by a
    # rounding on every op; if relaxation gives up, it gives None rather than other times
    cfg = Config(schedule="1f1b", devices=8, microbatches=64, f=0.1, b=0.2)
    loop, relaxed = loop_and_relaxed(cfg)
    assert relaxed is None or same(relaxed, loop)


def test_auto_runs_relaxation_where_it_applies():
    cfg = Config(schedule="1f1b", devices=4, microbatches=2048)
    program = cfg.build()
    assert relaxation.applies(program, np.zeros(len(program)))
    auto, events = simulate(cfg), simulate(cfg, engine="events")
    assert same((auto.ops.start, auto.ops.end), (events.ops.start, events.ops.end))
    assert auto.makespan == (2048 + 3) * 3  # (m + p − 1)(f + b + w): B is I + W
    # with a latency between devices each pass settles only a few microbatches: not tried
    assert not relaxation.applies(program, np.full(len(program), 0.1))
    # nor where two replicas flow opposite ways through every device: passes do not settle
    for schedule in ("chimera", "bitpipe"):
        twoway = Config(schedule=schedule, devices=4, microbatches=4096).build()
        assert not relaxation.applies(twoway, np.zeros(len(twoway)))
    # nor with few ops per device, where the loop is faster
    small = Config(schedule="1f1b", devices=8, microbatches=64).build()
    assert not relaxation.applies(small, np.zeros(len(small)))
