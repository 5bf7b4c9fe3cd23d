"""Every registry schedule on the grid p in {2, 4, 8, 16}, each v it accepts (up to 4), and m from
the smallest it accepts up to 8p: it builds, validates, simulates and satisfies the execution
model; where its closed form applies, the simulation equals it."""

import numpy as np
import pytest

from ppviz import Config, ScheduleConstraintError, simulate
from ppviz.core.registry import all_specs

from .test_properties import check_timeline

GRID_P = (2, 4, 8, 16)
SPECS = [s for s in all_specs() if s.builder is not None]


def grid(spec):
    for p in GRID_P:
        for v in range(spec.v_min, min(spec.v_max or 4, 4) + 1):
            accepted = []
            for m in range(1, 8 * p + 1):
                try:
                    accepted.append(Config(schedule=spec.name, devices=p, microbatches=m, stages_per_device=v))
                except ScheduleConstraintError:
                    continue
            # the full range for small p; for p = 16 every other m keeps the suite fast
            yield from accepted if p < 16 else accepted[::2] + accepted[-1:]


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_schedule_on_the_grid(spec):
    configs = list(grid(spec))
    assert configs, f"{spec.name} accepts no configuration on the grid"
    checked = 0
    for cfg in configs:
        res = simulate(cfg)
        check_timeline(res)
        cf = res.closed_form
        if cf is not None and cf.applies:
            assert res.makespan == pytest.approx(cf.makespan, rel=1e-12), cfg
            if cf.peak_activation is not None:
                assert np.allclose(res.peak_activation, cf.peak_activation), cfg
            checked += 1
    if spec.closed_form is not None:
        assert checked, f"{spec.name}'s closed form applies nowhere on the grid"
