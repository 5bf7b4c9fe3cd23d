"""What ppviz tells a user when it refuses: the whole message, as a reader sees it.

These are the user-facing texts themselves (the deadlock grid, refusals of sizes and names),
so they are compared in full: a message that loses a device, a position or an ellipsis is a
regression even when the exception type is right.
"""

import pytest

from ppviz import Config, DeadlockError, Program, simulate


def one_f_one_b_with_device_5_reordered():
    # 1F1B on 11 devices, device 5 runs its first backward right after its first forward: 5B0
    # waits for 6B0, which runs after 6F1, which waits for 5F1, queued behind 5B0
    actions = Config("1f1b", devices=11, microbatches=12).build().to_actions()
    actions[5].remove("5B0")
    actions[5].insert(1, "5B0")
    return Program.from_actions(actions)


GRID = """\
deadlock: no device can make progress; 212 ops never run. Each stuck device's next op is in [brackets]:
device 0 : … 0F8 0F9 0F10 [0B0] 0F11 0B1 0B2 …   0B0 waits for 1B0 (device 1, position 10)
device 1 : … 1F7 1F8 1F9 [1B0] 1F10 1B1 1F11 …   1B0 waits for 2B0 (device 2, position 9)
device 2 : … 2F6 2F7 2F8 [2B0] 2F9 2B1 2F10 …   2B0 waits for 3B0 (device 3, position 8)
device 3 : … 3F5 3F6 3F7 [3B0] 3F8 3B1 3F9 …   3B0 waits for 4B0 (device 4, position 7)
device 4 : … 4F4 4F5 4F6 [4B0] 4F7 4B1 4F8 …   4B0 waits for 5B0 (device 5, position 1)
device 5 : 5F0 [5B0] 5F1 5F2 5F3 …   5B0 waits for 6B0 (device 6, position 5)
device 6 : 6F0 [6F1] 6F2 6F3 6F4 …   6F1 waits for 5F1 (device 5, position 2)
device 7 : 7F0 [7F1] 7F2 7F3 7B0 …   7F1 waits for 6F1 (device 6, position 1)
device 8 : 8F0 [8F1] 8F2 8B0 8F3 …   8F1 waits for 7F1 (device 7, position 1)
device 9 : 9F0 [9F1] 9B0 9F2 9B1 …   9F1 waits for 8F1 (device 8, position 1)
device 10: 10F0 10B0 [10F1] 10B1 10F2 10B2 …   10F1 waits for 9F1 (device 9, position 1)"""


@pytest.mark.parametrize("engine", ["events", "lockstep"])
def test_deadlock_grid_shows_every_device_with_context_and_what_it_waits_for(engine):
    # 11 devices: 264 ops, of which 11 + 10 + 9 + 8 + 7 + 1 + 4·1 + 2 = 52 run
    with pytest.raises(DeadlockError) as info:
        simulate(one_f_one_b_with_device_5_reordered(), engine=engine)
    assert str(info.value) == GRID
    assert info.value.blocked[5] == ("5B0", "6B0") and info.value.blocked[10] == ("10F1", "9F1")
    assert len(info.value.blocked) == 11


PAIR_GRID = """\
deadlock: no device can make progress; 11 ops never run. Each stuck device's next op is in [brackets]:
device 0: 0F0 0F1 0F2 [0B0] 0B1 0B2   0B0 waits for 1B0 (device 1, position 2)
device 1: 1F0 1F1 [(1F2;1B0)OVERLAP_F_B] 1B1 1B2   (1F2;1B0)OVERLAP_F_B waits for 2B0 (device 2, position 3)
device 2: 2F0 2F1 [2F2] 2B0 2B1 2B2   2F2 waits for (1F2;1B0)OVERLAP_F_B (device 1, position 2)"""


def test_a_pair_stuck_on_its_backward_names_that_input_and_positions_count_actions():
    # the pair's forward input (0F2) has run; its backward 1B0 waits for 2B0, behind 2F2, which
    # waits for the pair. Positions count actions: the pair is device 1's third (position 2)
    prog = Program.from_text("""
        device 0: 0F0 0F1 0F2 0B0 0B1 0B2
        device 1: 1F0 1F1 (1F2;1B0)OVERLAP_F_B 1B1 1B2
        device 2: 2F0 2F1 2F2 2B0 2B1 2B2
    """)
    with pytest.raises(DeadlockError) as info:
        simulate(prog)
    assert str(info.value) == PAIR_GRID
    assert info.value.blocked == {0: ("0B0", "1B0"), 1: ("(1F2;1B0)OVERLAP_F_B", "2B0"),
                                  2: ("2F2", "(1F2;1B0)OVERLAP_F_B")}


DONE_FIRST = """\
deadlock: no device can make progress; 3 ops never run. Each stuck device's next op is in [brackets]:
device 0: done
device 1: 1F0 [1B0]   1B0 waits for 2B0 (device 2, position 3)
device 2: 0F0 2F0 [0B0] 2B0   0B0 waits for 1B0 (device 1, position 1)"""


@pytest.mark.parametrize("engine", ["events", "lockstep"])
def test_a_finished_device_before_stuck_ones_is_listed_and_the_rest_still_shown(engine):
    prog = Program.from_text("device 0: 3F0 3B0\ndevice 1: 1F0 1B0\ndevice 2: 0F0 2F0 0B0 2B0")
    with pytest.raises(DeadlockError) as info:
        simulate(prog, engine=engine)
    assert str(info.value) == DONE_FIRST


FIRST_OP_GRID = """\
deadlock: no device can make progress; 6 ops never run. Each stuck device's next op is in [brackets]:
device 0: [1F0] 1B0   1F0 waits for 0F0 (device 1, position 1)
device 1: [2F0] 0F0 0B0 2B0   2F0 waits for 1F0 (device 0, position 0)"""


def test_waiting_for_the_programs_very_first_op_is_reported():
    # device 1's 2F0 waits for 1F0, flat op 0 of the whole program
    prog = Program.from_text("device 0: 1F0 1B0\ndevice 1: 2F0 0F0 0B0 2B0")
    with pytest.raises(DeadlockError) as info:
        simulate(prog)
    assert str(info.value) == FIRST_OP_GRID


def test_a_pair_whose_forward_input_finished_at_time_zero_reports_its_backward_input():
    # with f = 0 the forwards end at t = 0: "finished" must not be confused with "not run"
    prog = Program.from_text("""
        device 0: 0F0 0F1 0F2 0B0 0B1 0B2
        device 1: 1F0 1F1 (1F2;1B0)OVERLAP_F_B 1B1 1B2
        device 2: 2F0 2F1 2F2 2B0 2B1 2B2
    """)
    with pytest.raises(DeadlockError) as info:
        simulate(prog, f=0.0)
    assert str(info.value) == PAIR_GRID
