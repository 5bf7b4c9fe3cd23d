"""The metrics-only fast path gives exactly what ``simulate`` gives, and refuses what it refuses."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ppviz
from ppviz import Config, DeadlockError, Program, simulate
from ppviz.core import metrics as fast

from .test_oracle import configs


def assert_same(m, res):
    # equal floats, not close ones: sweeps and search rank runs by these numbers
    assert m.makespan == res.makespan
    assert m.ideal == res.ideal
    assert m.bubble_fraction == res.bubble_fraction
    assert m.bubble_rate == res.bubble_rate
    for name in ("busy", "idle", "peak_activation", "static_memory", "peak_memory"):
        assert np.array_equal(getattr(m, name), getattr(res, name)), name


@given(configs())
def test_metrics_equal_simulate_bit_for_bit(cfg):
    assert_same(fast.metrics(cfg), simulate(cfg))


@given(configs(), st.sampled_from([0.0, 0.3, 2.0]), st.sampled_from([None, 0.4, 2.5]))
def test_a_plan_reused_over_costs_equals_simulate(cfg, comm, fb):
    plan = fast.plan_for(cfg)
    changed = cfg.replace(comm=comm, fb=fb, f=cfg.f * 1.5 + 0.25, w=0.0)
    assert plan is fast.plan_for(changed)  # one program per shape, whatever the costs
    assert_same(fast.metrics(plan, changed), simulate(changed))


@given(st.lists(configs(), min_size=1, max_size=12), st.integers(0, 2**32 - 1))
def test_configs_run_together_equal_simulate_bit_for_bit(batch, seed):
    # several configs of one shape (the batch path), mixed with others
    rng = np.random.default_rng(seed)
    more = [c.replace(f=float(rng.choice([0.0, 0.7, 1.3])) + 0.5, w=float(rng.choice([0.0, 0.4])),
                      comm=float(rng.choice([0.0, 0.3]))) for c in batch for _ in range(2)]
    every = batch + more
    for m, cfg in zip(fast.metrics_many(every), every):
        assert_same(m, simulate(cfg))


def test_every_op_at_zero_time_and_ties_follow_the_memory_curves():
    # zero-time ops make allocations and releases meet out of program order
    for name in ("1f1b", "zb-h1", "zb-v", "dualpipe", "1f1b-overlap"):
        cfg = Config(schedule=name, devices=4, microbatches=8, f=1.0, b=0.0, w=0.0, fb=1.0)
        assert_same(fast.metrics(cfg), simulate(cfg))


def test_custom_programs_and_the_simulate_signature():
    prog = Program.from_text("device 0: 0F0 0F1 0B0 0B1\ndevice 1: 1F0 1B0 1F1 1B1")
    assert_same(fast.metrics(prog, b=2, w=1), simulate(prog, b=2, w=1))
    cfg = Config(schedule="1f1b", devices=2, microbatches=2)
    assert_same(fast.metrics(prog, cfg, comm=0.5), simulate(prog, cfg, comm=0.5))
    # unit costs, F 1 and B 2: device 1 runs F0 1–2, B0 2–4, F1 4–5, B1 5–7; device 0 B1 7–9
    assert fast.metrics(prog).makespan == 9.0


def test_a_deadlock_is_the_engines_deadlock():
    prog = Program.from_text("device 0: 0F0 0B0 0F1 0B1\ndevice 1: 1F1 1F0 1B0 1B1")
    with pytest.raises(DeadlockError) as fast_error:
        fast.metrics(prog)
    with pytest.raises(DeadlockError) as full_error:
        simulate(prog)
    assert str(fast_error.value) == str(full_error.value)


def test_refusals_are_simulates():
    prog = Program.from_text("device 0: 0F0 0B0\ndevice 1: 1F0 1B0")
    with pytest.raises(ppviz.ConfigError, match="the program has 2 devices"):
        fast.metrics(prog, devices=3)
    with pytest.raises(ppviz.ConfigError, match="stage keys"):
        fast.metrics(prog, stage_costs={5: {"f": 1.0}})
    with pytest.raises(ppviz.ConfigError, match="metrics takes"):
        fast.metrics("1f1b")


def test_fields_it_does_not_model_take_the_full_path(monkeypatch):
    cfg = Config(schedule="zb-h1", devices=4, microbatches=8, comm=0.5)
    assert fast.modelled(cfg)
    # a field added to Config later (communication links, say) is not modelled here
    monkeypatch.setattr(fast, "MODELLED", fast.MODELLED - {"comm"})
    assert not fast.modelled(cfg)
    assert fast.modelled(cfg.replace(comm=0.0))  # at its default it changes nothing
    calls = []
    real = fast.simulate
    monkeypatch.setattr(fast, "simulate", lambda *a, **k: calls.append(a) or real(*a, **k))
    assert_same(fast.metrics(cfg), simulate(cfg))
    assert calls, "the full path ran"


# communication as transfers over links (topology, comm_bytes, p2p) runs in the comm engine: the
# fast path leaves those configs to simulate, which the test below shows
TRANSFER_FIELDS = {"topology", "comm_bytes", "p2p"}
# activation offload runs in core/offload.py's engine: also simulate's path
# (tests/test_offload.py::test_the_metrics_fast_path_sends_offload_configs_to_simulate)
OFFLOAD_FIELDS = {"offload"}
# the step's data-parallel tail (core/step.py) is timed after the ops, by simulate
STEP_FIELDS = {"step"}


def test_modelled_names_every_config_field_today():
    assert {f.name for f in dataclasses.fields(Config)} - TRANSFER_FIELDS - OFFLOAD_FIELDS - STEP_FIELDS <= fast.MODELLED
    assert not (TRANSFER_FIELDS | OFFLOAD_FIELDS | STEP_FIELDS) & fast.MODELLED


def test_transfers_take_the_full_path_with_its_numbers():
    from ppviz import Link

    cfg = Config(schedule="interleaved-1f1b", devices=4, microbatches=8, topology=Link(0.2, bandwidth=4.0), comm_bytes=2.0)
    assert not fast.modelled(cfg)
    assert_same(fast.metrics(cfg), simulate(cfg))
    assert fast.metrics(cfg).makespan != fast.metrics(cfg.replace(topology=None, comm_bytes=None)).makespan
