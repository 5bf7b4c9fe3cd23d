"""The exact solver (HiGHS through scipy) on small instances: the search's answers against the optimum,
and the lower bound below it."""

import pytest

import ppviz
from ppviz import Config, ConfigError, simulate
from ppviz.analysis.exact import solve
from ppviz.analysis.orders import Problem
from ppviz.analysis.search import lower_bound
from ppviz.core.placement import Placement

CASES = [(2, 2, 2.0, 0.0, (1.0, 1.0, 1.0)), (2, 3, 1.5, 0.5, (1.0, 2.0, 0.5)), (3, 3, 3.0, 0.0, (1.0, 1.0, 1.0)),
         (3, 3, 2.0, 0.25, (2.0, 1.0, 1.5))]


@pytest.mark.parametrize("p, m, limit, comm, costs", CASES)
def test_search_meets_the_optimum_and_the_bound_stays_below_it(p, m, limit, comm, costs):
    f, b, w = costs
    cfg = Config(devices=p, microbatches=m, f=f, b=b, w=w, comm=comm)
    exact = solve(cfg, limit, time_limit=60)
    assert exact.optimal
    # the optimal orders make a valid program within the limit, with the optimal makespan
    problem = Problem(cfg.replace(schedule="custom"), Placement.contiguous(p, 1))
    run = simulate(problem.program(exact.orders), cfg.replace(schedule="custom"))
    assert run.makespan == pytest.approx(exact.makespan) and run.peak_activation.max() <= limit + 1e-9
    found = ppviz.search(cfg, limit, stages_per_device=1)
    assert lower_bound(problem, limit) <= exact.makespan + 1e-9
    # on these instances the search finds the optimum, or beats it with two replicas of the model
    # (Chimera, DualPipe: outside the solver's one pipeline)
    assert found.makespan <= exact.makespan + 1e-9
    if found.program.placement.reverse_device is None:
        assert found.makespan >= exact.makespan - 1e-9


def test_sizes_beyond_the_solver_are_refused():
    with pytest.raises(ConfigError, match="too large to solve exactly"):
        solve(Config(devices=8, microbatches=32), 8)
