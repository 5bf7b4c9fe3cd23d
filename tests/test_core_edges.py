"""Small public behaviours of the core that the larger tests pass over: placements' edges,
memory lookups at and around steps, the timeline's column access, and config values as keys."""

import numpy as np
import pytest

from ppviz import Config, ConfigError, Placement, Program, simulate


def test_custom_mapping_is_checked_and_kept():
    with pytest.raises(ConfigError) as info:
        Placement.from_mapping(2, [])
    assert str(info.value) == "placement=() is not accepted; give at least one stage"
    with pytest.raises(ConfigError) as info:
        Placement.from_mapping(2, [0, 2])  # device 2 of 2 does not exist
    assert str(info.value) == "placement=(0, 2) is not accepted; every device must be in 0..1"
    with pytest.raises(ConfigError):
        Placement.from_mapping(2, [0, -1])
    custom = Placement.from_mapping(2, [1, 0, 0])
    assert custom.style == "custom" and custom.stage_device == (1, 0, 0) and custom.stages == 3
    assert custom.stages_on(0) == [1, 2] and custom.replicas_on(0) == 2 and custom.describe(1) == "stage 0"
    assert Placement.from_mapping(2, [0, 1, 1, 0]).style == "v"
    assert Placement.from_mapping(2, [0, 1, 0, 1]).style == "loop"
    assert Placement.from_mapping(2, [0, 0, 1, 1]).style == "contiguous"


def test_bidirectional_split_with_an_odd_microbatch_count():
    pl = Placement.bidirectional(2, 7)
    assert pl.split == 3 and isinstance(pl.split, int)
    assert pl.device_of(0, 2) == 0 and pl.device_of(0, 3) == 1


def test_memory_at_reads_the_step_function_and_adds_static_memory():
    res = simulate(Config(schedule="gpipe", devices=2, microbatches=2, params=1.5))
    # device 0: F0 [0,1] F1 [1,2] allocate at their starts; B's free at their ends
    assert res.memory.at(-1.0).tolist() == [0.0, 0.0]
    assert res.memory_at(-1.0).tolist() == [1.5, 1.5]
    assert res.memory.at(0.0)[0] == 1.0
    assert res.memory.at(0.5)[0] == 1.0 and res.memory.at(1.0)[0] == 2.0
    assert res.memory_at(res.makespan).tolist() == [1.5, 1.5]
    assert res.memory.at(0.5)[1] == 0.0  # device 1 has not started


def test_timeline_columns_by_name():
    res = simulate(Config(schedule="1f1b", devices=2, microbatches=2))
    assert list(res.ops.keys()) == ["device", "stage", "microbatch", "kind", "start", "end"]
    for name in res.ops.keys():
        assert res.ops[name] is getattr(res.ops, name)
    assert np.array_equal(res.ops.duration, res.ops.end - res.ops.start)
    assert len(res.ops) == 8
    df = res.to_pandas()
    assert list(df.columns) == ["device", "stage", "microbatch", "kind", "start", "end", "pair"]
    assert df["end"].max() == res.makespan


def test_stage_costs_compare_and_hash_by_value():
    a = Config(stage_costs={0: {"f": 2.0}, 3: {"b": 1.5}})
    b = Config(stage_costs={3: {"b": 1.5}, 0: {"f": 2.0}})
    c = Config(stage_costs={0: {"f": 2.5}})
    assert a == b and hash(a) == hash(b)
    assert a != c and hash(a) != hash(c)
    assert hash(Config(stage_costs={0: {"f": 1.0}})) != hash(Config(stage_costs={1: {"f": 1.0}}))
    assert a.stage_costs == {0: {"f": 2.0}, 3: {"b": 1.5}}
    assert a.stage_costs != [(0, {"f": 2.0})]
    assert repr(a.stage_costs) == "{0: {'f': 2.0}, 3: {'b': 1.5}}"
    assert len({a, b, c}) == 2


def test_program_with_a_custom_placement_simulates_with_its_stage_sizes():
    prog = Program.from_text("0F0 2F0 2B0 0B0\n1F0 1B0")
    assert prog.placement.style == "custom" and prog.placement.stage_device == (0, 1, 0)
    # three stages of 1/3 of the model on 2 devices: each op costs 2/3 of f or of b + w
    assert simulate(prog).makespan == pytest.approx(3 * 2 / 3 + 3 * 4 / 3)


def test_static_memory_without_a_placement_counts_the_stages_each_device_runs():
    from ppviz.core.memory import static_memory

    for cfg in (Config(schedule="interleaved-1f1b", devices=4, microbatches=8, stages_per_device=3, params=2.0),
                Config(schedule="dualpipe", devices=4, microbatches=8, params=2.0),
                Config(schedule="zb-v", devices=5, microbatches=9, params=2.0)):
        program = cfg.build()
        bare = Program(program.kind, program.stage, program.microbatch, program.pair, program.offsets,
                       stages=program.stages, microbatches=program.microbatches)
        held = [len(set(program.stage[program.device == d].tolist())) for d in range(program.devices)]
        assert static_memory(bare, cfg).tolist() == [2.0 * program.devices / program.stages * h for h in held]
        # with the placement: (replica, stage) slices, so DualPipe's device 0 holds stages 0 and p−1 twice over
        replicas = [program.placement.replicas_on(d) for d in range(program.devices)]
        assert static_memory(program, cfg).tolist() == [2.0 * program.devices / program.stages * r for r in replicas]
