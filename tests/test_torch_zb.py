"""looped-bfs and interleaved-zb against torch's ScheduleLoopedBFS and ScheduleInterleavedZeroBubble.

torch builds each multi-stage schedule's ``pipeline_order`` in its constructor; we build it with
one mock stage standing for each local stage, as torch's visualiser does (also for v = 1, which
the classes accept and the visualiser does not), drop its idle steps and compare the compute
actions device by device on p in {2, 3, 4, 5, 8}, v in 1..4, m in 1..3p. Where torch refuses
the sizes ppviz must refuse them with a ScheduleConstraintError, and where torch accepts them
ppviz must build.
"""

import warnings

import pytest

import ppviz
from ppviz import Config, ScheduleConstraintError

GRID_P = (2, 3, 4, 5, 8)
GRID_V = (1, 2, 3, 4)


@pytest.fixture(scope="module")
def build_torch(torch_pipelining):
    from unittest import mock

    from torch.distributed.pipelining.stage import PipelineStage

    # one autospec'd stage serves every build (creating one costs ~0.1 s)
    stage = mock.create_autospec(PipelineStage, instance=True)
    stage.group_rank, stage.submod = 0, None

    def build(name, p, m, v):
        stage.group_size, stage.num_stages = p, p * v
        cls = torch_pipelining.get_schedule_class(name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            schedule = cls([stage] * v, m)
        return {r: [str(a) for a in schedule.pipeline_order[r] if a is not None] for r in range(p)}

    return build


def compare(build_torch, torch_name, schedule):
    matched = refused = 0
    for p in GRID_P:
        for v in GRID_V:
            for m in range(1, 3 * p + 1):
                try:
                    expected = build_torch(torch_name, p, m, v)
                except (ValueError, RuntimeError, AssertionError):
                    with pytest.raises(ScheduleConstraintError):
                        Config(schedule=schedule, devices=p, microbatches=m, stages_per_device=v)
                    refused += 1
                    continue
                ours = Config(schedule=schedule, devices=p, microbatches=m, stages_per_device=v).build().to_actions()
                assert ours == expected, (schedule, p, v, m)
                matched += 1
    return matched, refused


def test_looped_bfs_matches_torch_everywhere(build_torch):
    matched, refused = compare(build_torch, "LoopedBFS", "looped-bfs")
    # torch refuses nothing on this grid: every (p, v, m) builds and matches
    assert (matched, refused) == (len(GRID_V) * sum(3 * p for p in GRID_P), 0)


def test_interleaved_zb_matches_torch_and_refuses_with_it(build_torch):
    matched, refused = compare(build_torch, "InterleavedZeroBubble", "interleaved-zb")
    # torch needs m to be a multiple of its number of rounds max(1, m // p); on this grid that
    # fails for p=2: m=5; p=3: 7; p=4: 9, 11; p=5: 11, 13; p=8: 17, 19, 21, 23 — 10 per v
    assert refused == len(GRID_V) * 10
    assert matched == len(GRID_V) * sum(3 * p for p in GRID_P) - refused


def test_interleaved_zb_refusal_says_what_would_work():
    with pytest.raises(ScheduleConstraintError) as err:
        Config(schedule="ScheduleInterleavedZeroBubble", devices=3, microbatches=7, stages_per_device=2)
    text = str(err.value)
    assert "microbatches=7" in text and "interleaved-zb" in text
    assert "use m = 6 or 8" in text


@pytest.mark.parametrize("name, schedule, v", [
    ("LoopedBFS", "looped-bfs", 3), ("ScheduleInterleavedZeroBubble", "interleaved-zb", 2),
    ("Interleaved1F1B", "interleaved-1f1b", 2), ("GPipe", "gpipe", 1), ("1F1B", "1f1b", 1),
])
def test_from_torch_returns_what_the_registry_builds(torch_pipelining, name, schedule, v):
    program = ppviz.from_torch(name, devices=4, microbatches=8, stages_per_device=v)
    ours = Config(schedule=schedule, devices=4, microbatches=8, stages_per_device=v).build()
    assert program == ours and program.placement == ours.placement
