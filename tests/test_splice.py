"""Many microbatches spliced from few (ppviz.schedules.splice): equal to the builder's own order,
op for op, wherever it is taken, and refused (the builder runs) wherever it would not be."""

import pytest
from hypothesis import given, reject, settings
from hypothesis import strategies as st

import ppviz
from ppviz import Config
from ppviz.core.registry import _REGISTRY
from ppviz.schedules import gpipe
from ppviz.schedules.splice import SPLICE_FACTOR, splice, splice_base, spliced_builder

SPLICED = sorted(name for name, spec in _REGISTRY.items() if hasattr(spec.builder, "__wrapped__"))
INTERLEAVED = ("interleaved-1f1b-overlap", "interleaved-zb")


def test_the_slow_builders_splice():
    # the builders that lay out every op in Python: at p = 8 and the budget's edge they took 0.5 to
    # 5 s (ZB-V at m = 83,333: 5.2 s), spliced 0.01 to 0.05 s
    assert SPLICED == sorted(["1f1b-overlap", "interleaved-1f1b-overlap", "zb-h1", "zb-h2", "interleaved-zb", "zb-v",
                              "v-half", "v-min", "dualpipe-v", "dualpipe-v-unsplit", "inference", "stp"])


def sizes(name, p):
    """Microbatch counts from the splice's threshold on, each a whole number of periods from the
    base (for the interleaved schedules, multiples of p: their group is p)."""
    base = splice_base(p)
    if name in INTERLEAVED:
        base += -base % p
        return [SPLICE_FACTOR * base, SPLICE_FACTOR * base + p, 5 * base + 3 * p]
    return [SPLICE_FACTOR * base, SPLICE_FACTOR * base + 1, 5 * base + 3]


@pytest.mark.parametrize("name", SPLICED)
def test_spliced_equals_built_and_is_taken(name):
    spec = _REGISTRY[name]
    for p in (1, 2, 3, 4, 5, 8, 12, 32):
        try:
            Config(schedule=name, devices=p, microbatches=sizes(name, p)[0])
        except ppviz.PpvizError:
            continue  # a device count the schedule refuses (DualPipe-V at p = 1)
        for m in sizes(name, p):
            config = Config(schedule=name, devices=p, microbatches=m)
            built = spec.builder.__wrapped__(config)
            assert config.build() == built, (p, m)
            base = splice_base(p) + (m - splice_base(p)) % (p if name in INTERLEAVED else 1)
            period = p if name in INTERLEAVED else 1
            assert splice(spec.builder.__wrapped__, config, base, period) is not None, (p, m)  # not the fallback


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(SPLICED), st.integers(1, 10), st.integers(0, 200))
def test_spliced_equals_built_on_random_sizes(name, p, extra):
    m = SPLICE_FACTOR * splice_base(p) + extra
    if name in INTERLEAVED:
        m += -m % p
    try:
        config = Config(schedule=name, devices=p, microbatches=m)
    except ppviz.PpvizError:
        reject()  # counted: a run of only refusals fails hypothesis's health check
    assert config.build() == _REGISTRY[name].builder.__wrapped__(config)


def test_an_interleaved_schedule_splices_whole_groups():
    # its order repeats per group of microbatches: five at a time for microbatch_group_size=5
    grouped = Config(schedule="interleaved-zb", devices=4, microbatches=400, microbatch_group_size=5)
    build = _REGISTRY["interleaved-zb"].builder.__wrapped__
    assert grouped.build() == build(grouped)
    base = splice_base(4) + 3  # 35: whole groups, as 400 is
    assert splice(build, grouped, base, 5) is not None


@pytest.mark.parametrize("name", ["zb-v", "zb-h1", "1f1b-overlap", "v-half"])
def test_a_base_inside_the_warm_up_is_refused_never_wrong(name):
    # the splice is checked against the builds at base + 1 and base + 2: from a base inside the
    # warm-up the order is not yet a repeating stretch, and the check refuses it
    build = _REGISTRY[name].builder.__wrapped__
    refused = taken = 0
    for p in (4, 8):
        config = Config(schedule=name, devices=p, microbatches=40 * p)
        built = build(config)
        for base in range(1, 2 * p + 2):
            try:
                Config(schedule=name, devices=p, microbatches=base)
            except ppviz.PpvizError:
                continue
            made = splice(build, config, base, 1)
            if made is None:
                refused += 1
            else:
                taken += 1
                assert made == built, (p, base)
    assert refused > 0 and taken > 0, (refused, taken)


def test_a_schedule_of_another_shape_falls_back_to_its_builder():
    # GPipe's order is all forwards, then all backwards: two stretches grow, not one
    config = Config(schedule="gpipe", devices=4, microbatches=500)
    assert splice(gpipe.build, config, splice_base(4), 1) is None
    assert spliced_builder(gpipe.build)(config) == gpipe.build(config)


def test_a_spliced_program_simulates_as_the_built_one():
    config = Config(schedule="zb-v", devices=4, microbatches=400, f=1.0, b=1.3, w=0.7)
    spliced = ppviz.simulate(config)
    built = ppviz.simulate(_REGISTRY["zb-v"].builder.__wrapped__(config), config)
    assert spliced.makespan == built.makespan and spliced.program.name == "zb-v"
    assert (spliced.peak_memory == built.peak_memory).all()
