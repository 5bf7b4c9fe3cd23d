"""The timing kernel (ppviz/core/kernel.py) is the model of time; every fast path equals it bit for
bit on random configs: the compute engines (events, its plain loop, lockstep, relaxation), the
transfer engines (events, general and lean lockstep; blocking and overlapped P2P), offload's
copies (alone and beside transfers), the metrics' Plan (one config, and many as vectors) and
the search's Problem. The step's data-parallel tails have no fast path: the kernel times them,
checked against the oracle's."""

import math

import numpy as np
import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

from ppviz import Config, ConfigError, DeadlockError, Link, Offload, Program, Step, Topology, simulate
from ppviz.analysis.orders import Problem, orders_of
from ppviz.core import comm_engine, engine, kernel, metrics, offload, relaxation, step, vocab
from ppviz.core.dependencies import dependencies, latencies
from ppviz.core.lowering import add_comms
from ppviz.core.registry import find
from ppviz.core.topology import durations
from ppviz.core.transfers import plan as transfer_plan

from . import oracle
from .helpers import config_at_least
from .test_properties import SCHEDULES, configs

EXAMPLES = 40
PAIRED = ("dualpipe", "dualpipe-v")
gaps = st.sampled_from([0.0, 0.05, 0.3]) | st.floats(0.0, 1.0, allow_nan=False)


def same(a, b) -> bool:
    """The same doubles, not merely equal ones (array_equal takes −0.0 for 0.0)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def _searchable(name: str) -> bool:
    if name in VOCABULARY:
        return False  # their ops wait for several others: neither the search nor a fast path but their own takes them
    try:
        return orders_of(Config(schedule=name, devices=4, microbatches=8).build()) is not None
    except ConfigError:
        return False


#: Vocabulary Parallelism's schedules: their passes wait for every device's (core/vocab.py), timed on
#: their own path, checked against the kernel below; the other tests draw from the rest
VOCABULARY = tuple(name for name in SCHEDULES if find(name).vocab_barriers)
PIPELINE = tuple(name for name in SCHEDULES if name not in VOCABULARY)
#: the schedules whose programs the search takes (one op per action, one replica, no segments)
SEARCHABLE = tuple(name for name in SCHEDULES if _searchable(name))


@st.composite
def compute_configs(draw, schedules=None):
    """Registry schedules at random sizes and costs (test_properties.configs: f, b, w, comm, a stage's
    own costs, segments), half of them with F&B pairs, with host gaps, first-microbatch warm-ups
    and recompute on some stages."""
    if schedules is not None:
        cfg = draw(configs(schedules=schedules))
    else:
        cfg = draw(configs(schedules=PAIRED) if draw(st.booleans()) else configs(schedules=PIPELINE))
    stages = cfg.devices * cfg.stages_per_device
    extra = {s: dict(over) for s, over in cfg.stage_costs.items()}
    for s in draw(st.lists(st.integers(0, stages - 1), max_size=3, unique=True)):
        keys = draw(st.lists(st.sampled_from(["gap_f", "gap_b", "gap_w", "warmup_f", "warmup_b", "warmup_w"]),
                             min_size=1, max_size=3, unique=True))
        extra.setdefault(s, {}).update({key: draw(gaps) for key in keys})
    options = {"stage_costs": extra}
    if draw(st.booleans()):
        options["recompute"] = draw(st.sampled_from(["full", "selective"]))
    try:
        return cfg.replace(**options)
    except ConfigError:
        assume(False)


def latency(draw, cfg: Config, program: Program):
    """The config's bare comm, or one latency per op (a measured run's transfers)."""
    if draw(st.booleans()):
        return cfg.comm
    values = draw(st.lists(st.sampled_from([0.0, 0.1, 0.7]) | st.floats(0.0, 2.0), min_size=len(program),
                           max_size=len(program)))
    return np.array(values)


# Compute: the engines, relaxation, metrics.Plan, orders.Problem --------------------------------

@settings(max_examples=EXAMPLES * 2, deadline=None)
@given(compute_configs(), st.data())
def test_every_compute_engine_is_the_kernel(cfg, data):
    program = cfg.build()
    cost = engine.op_costs(program, cfg)
    comm = latency(data.draw, cfg, program)
    dep = dependencies(program)
    want, want_end, _ = kernel.compute(program, cost, comm, dep)
    cross = latencies(program, dep, comm)
    runs = {"events": engine._events(program, dep, cross, cost)}  # the plain loop where nothing crosses
    if not program.pair.any():
        runs["lockstep"] = engine._lockstep(program, dep, cross, cost)
        if not cross.any():
            runs["plain"] = engine._events_plain(program, dep, cost)
            relaxed = relaxation.times(program, dep, cost)  # it may decline (None): then the loop runs
            if relaxed is not None:
                runs["relaxation"] = relaxed
    for start, end in runs.values():
        assert same(start, want) and same(end, want_end)
    res = simulate(program, cfg.replace(comm=0.0) if isinstance(comm, np.ndarray) else cfg, engine="kernel")
    if not isinstance(comm, np.ndarray):
        auto = simulate(cfg)
        assert same(res.ops.start, auto.ops.start) and same(res.ops.end, auto.ops.end)


@settings(max_examples=EXAMPLES, deadline=None)
@given(compute_configs())
def test_the_metrics_plan_is_the_kernel(cfg):
    program = cfg.build()
    cost = engine.op_costs(program, cfg)
    start, end, _ = kernel.compute(program, cost, cfg.comm, dependencies(program))
    plan = metrics.Plan(program)
    got = plan.times(cost, cfg.comm)
    assert same(got[0], start) and same(got[1], end)
    # many configs as vectors, one wave of independent ops at a time
    other = cfg.replace(f=cfg.f * 1.5 + 0.25, comm=cfg.comm + 0.1)
    other_cost = engine.op_costs(program, other)
    second = kernel.compute(program, other_cost, other.comm, dependencies(program))
    starts, ends = plan.times_many(np.stack([cost, other_cost]), np.array([cfg.comm, other.comm]))
    assert same(starts[0], start) and same(ends[0], end) and same(starts[1], second[0]) and same(ends[1], second[1])
    if not program.forward_only:
        assert plan.batch([cfg, other]).makespan.tolist() == [float(end.max()), float(second[1].max())]


@settings(max_examples=EXAMPLES, deadline=None)
@given(compute_configs(SEARCHABLE))
def test_the_search_problem_is_the_kernel(cfg):
    program = cfg.build()
    orders = orders_of(program)
    assume(orders is not None)
    timing = Problem(cfg, program.placement).evaluate(orders)
    start, end, _ = kernel.compute(program, engine.op_costs(program, cfg), cfg.comm, dependencies(program))
    lo = program.offsets
    for d in range(program.devices):
        assert same(timing.start[d], start[lo[d]:lo[d + 1]]) and same(timing.end[d], end[lo[d]:lo[d + 1]])
    assert timing.makespan == float(end.max(initial=0.0))


@settings(max_examples=EXAMPLES, deadline=None)
@given(compute_configs(SEARCHABLE), st.data())
def test_the_search_problem_is_the_kernel_on_orders_the_search_could_try(cfg, data):
    # the search moves ops about: a registry order shuffled locally (each F still before its I,
    # each I before its W), which may deadlock: the Problem says None where the kernel is stuck
    program = cfg.build()
    orders = orders_of(program)
    assume(orders is not None)
    problem = Problem(cfg, program.placement)
    spread = data.draw(st.sampled_from([0.5, 4.0, 64.0]))
    shuffled = []
    for order in orders:
        keys = [k + data.draw(st.floats(0.0, spread)) for k in range(len(order))]
        chains: dict[tuple[int, int], list[int]] = {}
        for k, (_, s, mb) in enumerate(order):
            chains.setdefault((s, mb), []).append(k)
        for members in chains.values():  # the chain's ops keep their order (F, I, W) in its keys
            for k, key in zip(members, sorted(keys[k] for k in members)):
                keys[k] = key
        shuffled.append([order[k] for k in sorted(range(len(order)), key=keys.__getitem__)])
    timing = problem.evaluate(shuffled)
    moved = problem.program(shuffled)
    cost = engine.op_costs(moved, cfg)
    event("deadlock" if timing is None else "runs")
    if timing is None:
        with pytest.raises(DeadlockError):
            kernel.compute(moved, cost, cfg.comm, dependencies(moved))
        return
    start, end, _ = kernel.compute(moved, cost, cfg.comm, dependencies(moved))
    lo = moved.offsets
    for d in range(moved.devices):
        assert same(timing.start[d], start[lo[d]:lo[d + 1]]) and same(timing.end[d], end[lo[d]:lo[d + 1]])


# Transfers: the comm engine's three engines --------------------------------------------------

link = st.builds(Link, st.sampled_from([0.0, 0.1, 0.5, 2.0]), bandwidth=st.sampled_from([0.5, 1.0, 4.0, math.inf]))


@st.composite
def transfer_configs(draw, base=None):
    cfg = draw(base if base is not None else compute_configs())
    topology = draw(link | st.builds(Topology, st.integers(1, 4), intra=link, inter=link))
    try:
        return cfg.replace(comm=0.0, topology=topology, comm_bytes=draw(st.sampled_from([0.0, 1.0, 3.0])),
                           p2p=draw(st.sampled_from(["blocking", "overlapped"])))
    except ConfigError:
        assume(False)


def graph_of(cfg: Config, defer: bool):
    """The comm engine's graph of a config, as comm_engine.run builds it; ``defer=False`` puts
    the receives where torch's rounds do (blocking P2P then holds a device at a receive before
    its consumer's action, as a program read from torch with its own comms can)."""
    program = cfg.build()
    cost = engine.op_costs(program, cfg)
    blocking = cfg.p2p_mode == "blocking"
    dep = dependencies(program)
    program = add_comms(program, defer=defer, dep=dep)
    plan = transfer_plan(program, receives=blocking)
    duration = durations(cfg.topology, cfg.time_unit, plan.src, plan.dst, float(cfg.comm_bytes) / program.segments)
    return program, comm_engine.Graph(program, cost, plan, duration, dep, blocking)


def timelines_equal(a, b):
    for name in ("slot_start", "slot_end", "t_start", "t_end"):
        assert same(getattr(a, name), getattr(b, name)), name


@settings(max_examples=EXAMPLES * 2, deadline=None)
@given(transfer_configs(), st.booleans())
def test_every_transfer_engine_is_the_kernel(cfg, defer):
    program, graph = graph_of(cfg, defer)
    want = comm_engine._kernel(graph, None)
    timelines_equal(comm_engine._events(graph), want)
    if graph.lockstep_ready():
        timelines_equal(comm_engine._lockstep(graph), want)
    if graph.single_input():
        timelines_equal(comm_engine._single_input(graph), want)
    res, ref = simulate(program, cfg, engine="kernel"), simulate(program, cfg)
    for name in ("start", "end"):
        assert same(getattr(res.ops, name), getattr(ref.ops, name))
        assert same(getattr(res.transfers, name), getattr(ref.transfers, name))


# Offload: the copies alone and beside transfers --------------------------------------------------

@st.composite
def offload_configs(draw):
    cfg = draw(compute_configs())
    assume(not cfg.spec.forward_only)
    share = draw(st.sampled_from([0.25, 0.5, 1.0]) | st.floats(0.01, 1.0))
    host = Link(draw(st.sampled_from([0.0, 0.1, 0.5])), bandwidth=draw(st.sampled_from([0.5, 1.0, 2.0, 8.0, math.inf])))
    return cfg.replace(offload=Offload(share, link=host))


def copies_equal(a, b):
    for name in ("device", "stage", "microbatch", "kind", "op"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    for name in ("bytes", "ready", "start", "end", "held"):
        assert same(getattr(a, name), getattr(b, name)), name


@settings(max_examples=EXAMPLES, deadline=None)
@given(offload_configs())
def test_offload_is_the_kernel(cfg):
    program = cfg.build()
    cost = engine.op_costs(program, cfg)
    fast = offload.run(program, cfg, cost, cfg.comm, "events")
    ref = offload.run(program, cfg, cost, cfg.comm, "kernel")
    assert same(fast[0], ref[0]) and same(fast[1], ref[1])
    copies_equal(fast[3], ref[3])


@settings(max_examples=EXAMPLES, deadline=None)
@given(transfer_configs(offload_configs()))
def test_offload_beside_transfers_is_the_kernel(cfg):
    fast, ref = simulate(cfg, engine="events"), simulate(cfg, engine="kernel")
    for name in ("start", "end"):
        assert same(getattr(fast.ops, name), getattr(ref.ops, name))
        assert same(getattr(fast.transfers, name), getattr(ref.transfers, name))
    copies_equal(fast.host_copies, ref.host_copies)


# The step's tails --------------------------------------------------------------------------------

@st.composite
def steps(draw, stages: int):
    times = st.sampled_from([0.0, 0.5, 2.0]) | st.floats(0.0, 5.0)
    per_stage = st.lists(times, min_size=stages, max_size=stages)
    return Step(reduce=draw(per_stage), optimizer=draw(per_stage), gather=draw(st.just(()) | per_stage),
                overlap_grad_reduce=draw(st.booleans()), overlap_param_gather=draw(st.booleans()))


@settings(max_examples=EXAMPLES, deadline=None)
@given(compute_configs(), st.data())
def test_the_step_tails_are_the_oracles(cfg, data):
    # the kernel is the tails' only implementation (step.tails runs it): checked against the
    # oracle's, written from the model
    program = cfg.build()
    tail = data.draw(steps(program.stages))
    start, end, _ = kernel.compute(program, engine.op_costs(program, cfg), cfg.comm, dependencies(program))
    got, got_end = step.tails(program, start, end, tail)
    lo = program.offsets.tolist()
    per_device = [(start[a:b].tolist(), end[a:b].tolist()) for a, b in zip(lo[:-1], lo[1:])]
    want, want_end = oracle.step_tails(oracle.program_rows(program), [s for s, _ in per_device],
                                       [e for _, e in per_device], tail)
    assert same(got_end, want_end)
    assert list(zip(got.device.tolist(), got.stage.tolist(), got.kind.tolist(), got.start.tolist(),
                    got.end.tolist())) == want


# The kernel itself -------------------------------------------------------------------------------

def test_an_action_starts_when_its_resources_are_free_and_its_inputs_are_there():
    k = kernel.Kernel()
    device, link = k.resource(), k.resource()
    a = k.action((device,), 2.0)
    b = k.action((device,), 1.0)
    x = k.action((link,), 3.0)
    y = k.action((link,), 0.5)
    k.wait(x, a)  # a transfer after a
    k.wait(y, b, delay=0.25)
    c = k.action((device,), 1.0)
    k.wait(c, x)
    d = k.action((device,), 0.0)
    k.wait(d, c, edge=kernel.START)
    k.floor(d, y)
    k.run()
    assert k.start == [0.0, 2.0, 2.0, 5.0, 5.0, 6.0]
    assert k.end == [2.0, 3.0, 5.0, 5.5, 6.0, 6.0]


def test_two_resources_one_action_waits_for_both():
    k = kernel.Kernel()
    r1, r2 = k.resource(), k.resource()
    k.action((r1,), 4.0)
    k.action((r2,), 1.0)
    both = k.action((r1, r2), 1.0)
    k.run()
    assert (k.start[both], k.end[both]) == (4.0, 5.0)


def test_a_program_that_cannot_finish_raises_the_engines_deadlock():
    program = Program.from_text({0: "0F0 0B0 0F1 0B1", 1: "1F1 1B1 1F0 1B0"})
    with pytest.raises(DeadlockError) as events:
        simulate(program, engine="events")
    with pytest.raises(DeadlockError) as ref:
        simulate(program, engine="kernel")
    assert str(ref.value) == str(events.value)
    assert ref.value.blocked == events.value.blocked


def test_a_cycle_of_actions_is_stuck_not_hung():
    k = kernel.Kernel()
    r = k.resource()
    a, b = k.action((r,), 1.0), k.action((), 1.0)
    k.wait(a, b)
    k.wait(b, a)
    with pytest.raises(kernel.Stuck) as stuck:
        k.run()
    assert stuck.value.position == [0] and stuck.value.end == [-1.0, -1.0]


def test_with_transfers_a_stuck_program_names_what_waits_for_what():
    program = Program.from_text({0: "0F0 0B0 0F1 0B1", 1: "1F1 1B1 1F0 1B0"})
    cfg = {"topology": Link(0.1, bandwidth=1.0), "comm_bytes": 1.0}
    with pytest.raises(DeadlockError) as events:
        simulate(program, engine="events", **cfg)
    with pytest.raises(DeadlockError) as ref:
        simulate(program, engine="kernel", **cfg)
    assert str(ref.value) == str(events.value)


@pytest.mark.parametrize("bad", ["fast", "Kernel", None, 3])
def test_an_unknown_engine_is_refused_with_the_accepted_names(bad):
    with pytest.raises(ConfigError) as err:
        simulate("1f1b", engine=bad)
    assert err.value.field == "engine"
    assert "use one of 'auto', 'events', 'lockstep', 'kernel'" in str(err.value)


def test_the_kernel_runs_every_registry_schedule():
    for name in SCHEDULES:
        cfg = config_at_least(find(name), microbatches=8, devices=4, comm=0.1)
        res, ref = simulate(cfg, engine="kernel"), simulate(cfg)
        assert same(res.ops.start, ref.ops.start) and same(res.ops.end, ref.ops.end), name


@settings(max_examples=EXAMPLES, deadline=None)
@given(configs(schedules=VOCABULARY), st.sampled_from([0.0, 0.25, 1.0]), st.sampled_from([0.0, 0.3]),
       st.sampled_from([0.0, 0.2, 1.5]))
def test_the_vocabulary_passes_path_is_the_kernel(cfg, s_cost, t_cost, barrier):
    try:
        cfg = cfg.replace(s=s_cost, t=t_cost, vocab_comm=barrier)
        program = cfg.build()
    except ConfigError:
        assume(False)
    cost = engine.op_costs(program, cfg)
    ptr, on, lag = vocab.edges(program, cfg.comm, cfg.vocab_comm)
    want, want_end = kernel.several_inputs(program, cost, ptr, on, lag)
    got, got_end = vocab._times(program, cost, ptr, on, lag)
    assert same(got, want) and same(got_end, want_end)
    res, auto = simulate(cfg, engine="kernel"), simulate(cfg)
    assert same(res.ops.start, auto.ops.start) and same(res.ops.end, auto.ops.end)
    assert np.array_equal(res.dependencies, auto.dependencies)
