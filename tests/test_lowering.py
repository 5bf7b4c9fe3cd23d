"""The lowering pass (ppviz.core.lowering): where sends and receives go, found without torch.
(tests/test_torch_comms.py compares it with torch's own passes.)"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ppviz import Config, DeadlockError, Program, ScheduleConstraintError
from ppviz.core import lowering
from ppviz.core.dependencies import dependencies
from ppviz.core.registry import all_specs

SCHEDULES = [s.name for s in all_specs() if s.builder is not None]


@st.composite
def programs(draw):
    name = draw(st.sampled_from(SCHEDULES))
    spec = next(s for s in all_specs() if s.name == name)
    p = draw(st.integers(1, 6))
    v = draw(st.integers(spec.v_min, min(spec.v_max or 3, 3)))
    m = draw(st.integers(1, 3 * p))
    try:
        return Config(schedule=name, devices=p, microbatches=m, stages_per_device=v).build()
    except ScheduleConstraintError:
        return Config(schedule="1f1b", devices=p, microbatches=m).build()


@given(programs())
def test_the_sweeps_find_the_rounds_torchs_round_by_round_walk_finds(program):
    actions = lowering.ActionTransfers(program, dependencies(program))
    steps = lowering.fsdp_steps(program, actions)
    swept = lowering.rounds(program, actions, steps)
    # the walk as torch does it, one action of each rank per round, ranks in order
    walked = walk_rounds(program, actions, steps)
    assert swept.tolist() == walked


def walk_rounds(program, actions, steps):
    """torch's _add_send_recv loop, written out: in each round rank 0, 1, … runs its next action
    when its inputs were produced in an earlier round or by a lower rank this round; FSDP steps
    take a round each before their action."""
    first = actions.first.tolist()
    ends = np.append(actions.first[1:], len(program)).tolist()
    dep = actions.dep.tolist()
    of_op = actions.of_op.tolist()
    device = program.device.tolist()
    todo = [list(range(actions.offsets[d], actions.offsets[d + 1])) for d in range(program.devices)]
    pending = [steps[a[0]] if a else 0 for a in todo]
    done_round = [None] * actions.count
    r = 0
    while any(todo):
        for d in range(program.devices):
            if not todo[d]:
                continue
            if pending[d]:
                pending[d] -= 1
                continue
            a = todo[d][0]
            ready = True
            for op in range(first[a], ends[a]):
                j = dep[op]
                if j < 0:
                    continue
                pr = done_round[of_op[j]]
                if pr is None or (pr == r and device[j] > d) or (device[j] == d and pr is None):
                    ready = False
            if ready:
                done_round[a] = r
                todo[d].pop(0)
                if todo[d]:
                    pending[d] = int(steps[todo[d][0]])
        r += 1
        assert r < 10 * (actions.count + int(steps.sum()) + 10), "torch's walk would stall here"
    return done_round


def test_the_round_by_round_pass_agrees_where_the_sweeps_would_stop_early(monkeypatch):
    program = Config(schedule="interleaved-zb", devices=5, microbatches=12, stages_per_device=3).build()
    actions = lowering.ActionTransfers(program, dependencies(program))
    steps = lowering.fsdp_steps(program, actions)
    expected = lowering.rounds(program, actions, steps)
    monkeypatch.setattr(lowering, "MAX_SWEEPS", 0)
    assert lowering.rounds(program, actions, steps).tolist() == expected.tolist()


def test_an_order_that_cannot_finish_is_a_deadlock_when_its_early_receives_are_placed():
    program = Program.from_text("device 0: 0F0 0B0 0F1 0B1\ndevice 1: 1F1 1B1 1F0 1B0")
    lowered = lowering.add_comms(program)  # the sends are placed at once, the receives when read
    with pytest.raises(DeadlockError, match=r"1F1 waits for 0F1 \(device 0, position 2\)"):
        lowered.to_actions(comms=True)


def test_deferred_receives_sit_just_before_their_consumers_and_early_ones_are_found_when_read():
    program = Config(schedule="interleaved-1f1b", devices=4, microbatches=8).build()
    late = lowering.add_comms(program, defer=True)
    producer, consumer, send_before, recv_before = late.comms.placed
    assert np.array_equal(recv_before, consumer) and np.array_equal(send_before, producer + 1)
    early = lowering.add_comms(program)
    assert early.comms.placed[3] is None
    rows = early.to_actions(comms=True)
    assert early.comms.placed[3] is not None
    # an early receive comes before its consumer, never after
    assert np.all(early.comms.placed[3] <= consumer)
    assert rows[1][:3] == ["1RECV_F0", "1F0", "1SEND_F0"]
    assert late.to_actions(comms=True)[0][:4] == ["0F0", "0SEND_F0", "0F1", "0SEND_F1"]


@pytest.mark.parametrize("text, expected", [
    # two stages a device: both unsharded before the first action; stage 2 resharded and its
    # gradient reduced before 0B0 (stage 0's last action ends the device's list: nothing after it)
    ("device 0: 0F0 2F0 2B0 0B0\ndevice 1: 1F0 3F0 3B0 1B0", [2, 0, 0, 2, 2, 0, 0, 2]),
    # four stages on one device, at most three unsharded: the next three stages to run are
    # {0, 1, 2}, then {1, 2, 3} from 1F0 on (two changes), {2, 1, 0} from 2B0 on (two, and stage
    # 3's REDUCE_GRAD), then {1, 0} and {0} (one each, and the REDUCE_GRAD of stages 2 and 1)
    ("device 0: 0F0 1F0 2F0 3F0 3B0 2B0 1B0 0B0", [3, 2, 0, 0, 0, 3, 2, 2]),
])
def test_the_fsdp_steps_by_hand(text, expected):
    # torch's _add_unshard_reshard (max_active_stages=3) and _add_reduce_grad, counted by hand
    program = Program.from_text(text)
    actions = lowering.ActionTransfers(program, dependencies(program))
    assert lowering.fsdp_steps(program, actions).tolist() == expected
