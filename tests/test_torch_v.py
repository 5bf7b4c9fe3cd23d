"""zb-v and dualpipe-v against torch.distributed.pipelining, and torch's DualPipeV artifact.

torch builds ``ScheduleZBVZeroBubble`` and ``ScheduleDualPipeV`` orders without GPUs through
``_schedule_visualizer.get_schedule_ops`` (mock stages); its idle steps (None) and communication
actions are dropped and the compute actions compared device by device, F&B pairs included.
"""

import csv
import warnings
from pathlib import Path

import numpy as np
import pytest

from ppviz import Config, Program, ScheduleConstraintError, simulate

GRID_P = (2, 3, 4, 5, 8)
DATA = Path(__file__).parent / "data"


def torch_orders(name, p, m, v):
    from torch.distributed.pipelining._schedule_visualizer import get_schedule_ops

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ops = get_schedule_ops(name, p, m, v)
    return {r: [str(a) for a in ops[r] if a is not None and a.is_compute_op] for r in range(p)}


def compare_grid(torch_name, schedule):
    """Every p in GRID_P, m from 1 to 4p, v in 1..3: equal orders, or refused by both."""
    matched = refused = 0
    for p in GRID_P:
        for v in (1, 2, 3):
            for m in range(1, 4 * p + 1):
                try:
                    expected = torch_orders(torch_name, p, m, v)
                except (ValueError, AssertionError):
                    with pytest.raises(ScheduleConstraintError):
                        Config(schedule=schedule, devices=p, microbatches=m, stages_per_device=v)
                    refused += 1
                    continue
                ours = Config(schedule=schedule, devices=p, microbatches=m, stages_per_device=v).build()
                assert ours.to_actions() == expected, (schedule, p, m, v)
                matched += 1
    return matched, refused


def test_zb_v_matches_torch(torch_pipelining):
    matched, refused = compare_grid("ZBVZeroBubble", "zb-v")
    # torch accepts every m with v = 2 (below 2p−1 it drops the missing microbatches' ops)
    assert matched == sum(4 * p for p in GRID_P) == 88
    assert refused == 2 * 88


def test_dualpipe_v_matches_torch(torch_pipelining):
    matched, refused = compare_grid("DualPipeV", "dualpipe-v")
    # with v = 2 torch needs m >= 2p: 2p+1 values of m in 1..4p per p
    assert matched == sum(2 * p + 1 for p in GRID_P) == 49
    assert refused == sum(2 * p - 1 for p in GRID_P) + 2 * 88


# torch's DualPipeV artifact -----------------------------------------------------------------

def artifact_rows():
    with open(DATA / "dualpipev_4rank_10mb.csv", newline="") as fh:
        return list(csv.reader(fh))


def test_dualpipe_v_reproduces_torch_artifact_action_for_action():
    rows = artifact_rows()
    assert [len(r) for r in rows] == [38, 36, 34, 33]
    ours = Config(schedule="dualpipe-v", devices=4, microbatches=10).build()
    assert ours.to_actions() == dict(enumerate(rows))
    artifact = Program.from_actions(rows).validate()
    assert artifact == ours
    assert artifact.placement.style == "v" and ours.placement.style == "v"


def test_torch_still_writes_the_artifact(torch_pipelining):
    # the file is a copy; torch's generator today must still produce it
    assert torch_orders("DualPipeV", 4, 10, 2) == dict(enumerate(artifact_rows()))


def test_artifact_peak_is_pp_plus_one_chunks():
    # landscape §3: counting F − (B|I) along each rank's actions gives 9 = PP+1 chunks everywhere
    peaks = []
    for row in artifact_rows():
        level = peak = 0
        for action in row:
            for op in action.removeprefix("(").split(")")[0].split(";"):
                level += 1 if "F" in op else -1 if ("B" in op or "I" in op) else 0
                peak = max(peak, level)
        peaks.append(peak)
    assert peaks == [9, 9, 9, 9]
    # ppviz's timed memory curve agrees: a chunk is half an activation unit, and w_share = 0
    # frees everything at the I, as the count above does
    program = Program.from_actions(artifact_rows())
    res = simulate(program, Config(schedule="custom", devices=4, microbatches=10, w_share=0.0))
    assert np.array_equal(res.peak_activation * 2, [9, 9, 9, 9])
