"""Every closed form on a deterministic grid: where it says it applies, it is exact.

Random sampling (``test_properties.py``) rarely lands on the edge of a formula's conditions; a
grid over p, m, v and cost triples does, so a condition written too loosely (a formula that
claims exactness where it is not exact) fails here. Each formula must also apply somewhere on
its grid, so a condition written too tightly to ever hold fails too.
"""

import itertools

import numpy as np
import pytest

from ppviz import Config, Link, Offload, ScheduleConstraintError, simulate
from ppviz.core.registry import all_specs

COSTS = (0.5, 1.0, 2.0)
TRIPLES = list(itertools.product(COSTS, repeat=3))
#: schedules whose closed form gives the peak memory wherever it applies (V-Min: unless p mod 3 = 2
#: and w_share < 1, where the published figure counts activations until their W)
PUBLISHES_PEAKS = {"gpipe", "1f1b", "interleaved-1f1b", "looped-bfs", "zb-h1", "zb-h2", "zb-v", "v-half", "v-min",
                   "dualpipe", "dualpipe-v", "1f1b-overlap", "interleaved-1f1b-overlap"}
WITH_FORMS = [s for s in all_specs() if s.builder is not None and s.closed_form is not None]


def grid(spec):
    v_values = range(spec.v_min, (spec.v_max or 3) + 1)
    for p, v in itertools.product((2, 3, 4), v_values):
        for m in sorted({1, p - 1, p, p + 1, 2 * p - 1, 2 * p, 2 * p + 1, 2 * p + 2, 3 * p} - {0}):
            try:
                Config(schedule=spec.name, devices=p, microbatches=m, stages_per_device=v)
            except ScheduleConstraintError:
                continue
            yield p, m, v


def exact(res, cf) -> bool:
    if not np.isclose(res.makespan, cf.makespan, rtol=1e-9, atol=1e-9):
        return False
    if not np.allclose(res.idle, cf.idle, rtol=1e-9, atol=1e-9):
        return False
    if cf.peak_activation is not None and not np.allclose(res.peak_activation, cf.peak_activation, atol=1e-9):
        return False
    return True


@pytest.mark.parametrize("spec", WITH_FORMS, ids=lambda s: s.name)
def test_closed_form_is_exact_wherever_it_applies(spec):
    applied = wrong = 0
    failures = []
    for p, m, v in grid(spec):
        for f, b, w in TRIPLES:
            # activation 2: peaks in units of a, so a formula that drops or divides by it fails
            cfg = Config(schedule=spec.name, devices=p, microbatches=m, stages_per_device=v, f=f, b=b, w=w,
                         activation=2.0)
            res = simulate(cfg)
            cf = res.closed_form
            if not cf.applies:
                continue
            applied += 1
            if spec.name in PUBLISHES_PEAKS and not (spec.name == "v-min" and p % 3 == 2):
                assert cf.peak_activation is not None, (spec.name, p, m, v)
            if not exact(res, cf):
                wrong += 1
                failures.append((p, m, v, f, b, w, res.makespan, cf.makespan))
    assert wrong == 0, f"{spec.name}: claims exactness but differs on {failures[:5]}"
    assert applied > 0, f"{spec.name}: the closed form applies nowhere on its grid"


def test_zb_h1_applies_exactly_where_it_is_exact():
    # the ZB-H1 form (p−1)(f+b−w) is exact iff m >= p and w <= min(f, b) (uniform, comm = 0);
    # both directions, on every cost triple of the grid
    disagreements = []
    for p, m, _ in grid(next(s for s in all_specs() if s.name == "zb-h1")):
        if m < p:
            continue
        for f, b, w in TRIPLES:
            res = simulate(Config(schedule="zb-h1", devices=p, microbatches=m, f=f, b=b, w=w))
            cf = res.closed_form
            assert cf.applies == (w <= min(f, b))
            is_exact = np.isclose(res.makespan, cf.makespan) and np.allclose(res.idle, cf.idle)
            if is_exact != cf.applies:
                disagreements.append((p, m, f, b, w))
    assert not disagreements, disagreements[:5]


def test_closed_forms_refuse_to_apply_with_comm_or_uneven_stages():
    for spec in WITH_FORMS:
        p, m, v = [(p, m, v) for p, m, v in grid(spec) if m >= 2 * p][0]  # STP's least is 3p
        base = Config(schedule=spec.name, devices=p, microbatches=m, stages_per_device=v)
        assert not simulate(base.replace(comm=0.5)).closed_form.applies, spec.name
        assert not simulate(base.replace(stage_costs={0: {"f": 3.0}})).closed_form.applies, spec.name
        assert not simulate(base.replace(stage_costs={0: {"activation": 3.0}})).closed_form.applies, spec.name


@pytest.mark.parametrize("change, breaks", [
    ({"comm": 0.5}, "comm = 0.5"),
    ({"stage_costs": {0: {"f": 3.0}}}, "per-stage costs"),
    ({"stage_costs": {1: {"activation": 3.0}}}, "per-stage activation"),
    ({"recompute": "selective"}, "selective recompute"),
    ({"offload": Offload(0.25, link=Link(0.0, bandwidth=1.0))}, "offload = 0.25"),
    ({"topology": "dgx-h100", "time_unit": "ms", "comm_bytes": 1e6}, "transfers over a topology"),
])
def test_a_closed_form_that_does_not_apply_says_what_in_the_config_breaks_it(change, breaks):
    """It said "this config does not meet all of it" beside assumptions the config seemed to meet
    (offload or recompute were not among them): the user could not tell what to change."""
    from ppviz.charts import gantt_chart
    from ppviz.core.closed_form import caveat

    config = Config(schedule="1f1b", devices=4, microbatches=8, **change)
    res = simulate(config)
    text = caveat(res.closed_form, config)
    assert text.endswith(f"; this config has {breaks}"), text
    assert text.startswith("the closed form assumes uniform stage costs, comm = 0")
    assert f"({text})" in res.summary()
    subtitle = " ".join(gantt_chart(res).to_dict()["title"]["subtitle"])
    assert " ".join(f"* {text}".split()) in " ".join(subtitle.split())
    # the published form holds for the same run without the change: no caveat
    plain = simulate(Config(schedule="1f1b", devices=4, microbatches=8))
    assert plain.closed_form.applies and caveat(plain.closed_form, plain.config) is None


def test_a_condition_of_the_formula_itself_is_named_when_it_fails():
    from ppviz.core.closed_form import caveat

    config = Config(schedule="zb-h1", devices=4, microbatches=8, w=2.0)
    assert caveat(simulate(config).closed_form, config) == (
        "the closed form assumes uniform stage costs, comm = 0, m >= p, w <= min(f, b); w <= min(f, b) does not hold")
    config = Config(schedule="zb-h2", devices=4, microbatches=4, w=2.0, comm=0.5)
    assert caveat(simulate(config).closed_form, config) == (
        "the closed form assumes uniform stage costs, comm = 0, m >= 2p−1, w <= f; this config has comm = 0.5; "
        "m >= 2p−1 and w <= f do not hold")


@pytest.mark.parametrize("spec", WITH_FORMS, ids=lambda s: s.name)
def test_a_formula_applies_exactly_when_no_condition_of_its_own_fails(spec):
    """``unmet`` names each failed condition as ``assumptions`` writes it, and with uniform
    costs the formula applies exactly when none fails: the caveat never blames a condition that
    holds, nor stays silent about one that fails."""
    from ppviz.core.closed_form import caveat, uniform_costs

    for p, m, v in grid(spec):
        for f, b, w in TRIPLES:
            try:
                config = Config(schedule=spec.name, devices=p, microbatches=m, stages_per_device=v, f=f, b=b, w=w)
            except ScheduleConstraintError:
                continue
            cf = spec.closed_form(config)
            assert uniform_costs(config)
            assert cf.applies == (not cf.unmet), (spec.name, p, m, v, f, b, w, cf.unmet)
            assert all(name in cf.assumptions for name in cf.unmet), (spec.name, cf.unmet, cf.assumptions)
            text = caveat(cf, config)
            assert (text is None) == cf.applies
            if cf.unmet:
                assert text.endswith("not hold") and all(name in text.split("; ")[-1] for name in cf.unmet)
