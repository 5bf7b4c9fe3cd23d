"""The step model against published measurements (benchmarks/published_runs.py over
benchmarks/data/published_runs.json): every row ppviz models, predicted from the model's shapes,
the layout and the accelerator preset alone, and the bounds that hold today.

The issue's targets are tighter than these bounds on two counts (≤ 3 % on the ratios between a
setting's schedules, and every measured ranking): the benchmark prints where they miss. The bounds
here are what the model holds, so that a change that makes it worse fails."""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("published_runs", ROOT / "benchmarks" / "published_runs.py")
published_runs = importlib.util.module_from_spec(_spec)
sys.modules["published_runs"] = published_runs  # its dataclass looks its module up
_spec.loader.exec_module(published_runs)


@pytest.fixture(scope="module")
def outcomes():
    return published_runs.evaluate(published_runs.rows())


def test_the_rows_span_sources_and_accelerator_generations(outcomes):
    modelled = [o for o in outcomes if o.error is not None]
    assert len(modelled) >= 145
    assert len({o.row["source"] for o in modelled}) >= 6
    assert {o.row["accelerator"].split(" ")[0].split("-")[0] for o in modelled} >= {"A100", "H100", "GB200"}
    for o in outcomes:
        assert o.row["source"] and o.row["quote"], o.row["id"]  # every figure says where it was read


def test_absolute_step_times_are_within_ten_percent_on_average(outcomes):
    modelled = [o for o in outcomes if o.error is not None]
    assert published_runs.mape(modelled) <= 0.09
    dense = [o for o in modelled if not o.row["experts"]]
    assert published_runs.mape(dense) <= 0.07
    hopper = [o for o in dense if o.row["accelerator"].startswith("H100")]
    assert published_runs.mape(hopper) <= 0.05
    # the dense rows that miss most (GB200's, with no measured Blackwell GEMM curve) miss by under 30 %
    assert max(abs(o.error) for o in dense) < 0.30
    # NVIDIA's DeepSeek-V3 recipes run 2 to 4 times slower than the step model predicts (the rows
    # that miss: see docs/concepts/model.md), and no slower than that
    moe = [o for o in modelled if o.row["experts"]]
    assert len(moe) == 5 and all(0.2 < o.predicted / o.measured < 0.6 for o in moe)


def test_schedule_comparisons_keep_their_ratios_and_most_rankings(outcomes):
    grouped = published_runs.groups(outcomes)
    assert len(grouped) >= 20
    ratios = [abs(e) for members in grouped.values() for e in published_runs.ratio_errors(members)]
    assert sum(ratios) / len(ratios) <= 0.06 and max(ratios) < 0.15
    assert sum(published_runs.same_ranking(m) for m in grouped.values()) >= 7
    # a ranking counts measured ties as misses; pairs of schedules measured more than 3 % apart are
    # predicted in the measured order nearly always
    agree, pairs = map(sum, zip(*(published_runs.pair_orders(m) for m in grouped.values())))
    assert pairs >= 100 and agree >= 0.85 * pairs
