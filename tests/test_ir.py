import numpy as np
import pytest

import ppviz
from ppviz import Config, ParseError, Program, ProgramError


def test_round_trip_through_torch_strings():
    for name, v in [("gpipe", 1), ("1f1b", 1), ("interleaved-1f1b", 2), ("zb-h1", 1)]:
        program = Config(schedule=name, devices=4, microbatches=8, stages_per_device=v).build()
        back = Program.from_actions(program.to_actions())
        assert back == program
        assert Program.from_text(program.to_text()) == program
        assert back.placement.style == program.placement.style


def test_to_torch_uses_action_strings():
    actions = Config(schedule="1f1b", devices=2, microbatches=3).build().to_actions()
    assert actions == {0: ["0F0", "0F1", "0B0", "0F2", "0B1", "0B2"], 1: ["1F0", "1B0", "1F1", "1B1", "1F2", "1B2"]}


def test_pairs_parse_and_print_like_torch():
    text = """
    device 0: 0F0 0F1 (0F2;0B0)OVERLAP_F_B 0B1 0B2
    device 1: 1F0 1B0 1F1 1B1 1F2 1B2
    """
    program = Program.from_text(text)
    assert program.to_actions()[0][2] == "(0F2;0B0)OVERLAP_F_B"
    assert len(program) == 12
    program.validate()


def test_idle_steps_and_comm_actions_are_dropped():
    program = Program.from_actions({0: ["0F0", None, "", "0SEND_F0", "0B0"], 1: ["1RECV_F0", "1F0", "1B0", "1SEND_B0"]})
    assert program.to_actions() == {0: ["0F0", "0B0"], 1: ["1F0", "1B0"]}


def test_dict_of_strings_and_commas():
    program = Program.from_text({0: "0F0, 0B0", 1: ["1F0", "1B0"]})
    assert program.devices == 2 and program.stages == 2 and program.microbatches == 1


@pytest.mark.parametrize("text, fragment", [
    ("0F0 0X0 0B0", "line 1, column 5: '0X0' is not an action"),
    ("0F0 0B0\n1F0 F1", "line 2, column 5: 'F1' is not an action"),
    ("device 0: 0F0\ndevice 0: 0B0", "device 0 appears twice"),
    ("", "holds no devices"),
    ("device 1: 1F0 1B0", "device 0 has no row"),
])
def test_parse_errors_name_line_and_column(text, fragment):
    with pytest.raises(ParseError) as err:
        Program.from_text(text)
    assert fragment in str(err.value)


@pytest.mark.parametrize("rows, fragment", [
    ({0: "0F0 0I0 0F1 0B1", 1: "1F0 1I0 1W0 1F1 1B1"}, "device 0, position 1 (0I0): W is missing for this I; add 0W0"),
    ({0: "0F0 0B0", 1: "1F0 1B0 1B1"}, "stage 0 microbatch 1 is never forwarded"),
    ({0: "0F0 0B0 0F1", 1: "1F0 1B0 1F1 1B1"}, "stage 0 microbatch 1 is never backwarded"),
    ({0: "0F0 0B0 0F1 0B1", 1: "1F0 1B0 1F1 1B1 1F0"}, "runs twice"),
    ({0: "0B0 0F0", 1: "1F0 1B0"}, "device 0, position 0 (0B0): the backward runs before its forward 0F0"),
    ({0: "0F0 0W0 0I0", 1: "1F0 1B0"}, "device 0, position 1 (0W0): W runs before its I 0I0"),
    ({0: "0F0 0B0 1F1 1B1", 1: "1F0 1B0 0F1 0B1"}, "device 1, position 2 (0F1): stage 0 already runs on device 0"),
    ({0: "0F0 0B0 0F1 0B1", 1: "1F0 1B0 1F1 1W1"}, "W without an I"),
    ({0: "0F0 0I0 0W0 0B0", 1: "1F0 1B0"}, "both a full backward B and a split I/W"),
])
def test_validation_names_the_rule(rows, fragment):
    with pytest.raises(ProgramError) as err:
        Program.from_text(rows).validate()
    assert fragment in str(err.value)


def test_validation_catches_placement_mismatch():
    program = Config(schedule="1f1b", devices=2, microbatches=2).build()
    program.placement = ppviz.Placement.from_mapping(2, [1, 0])
    with pytest.raises(ProgramError, match="belongs on device 1 under the custom placement"):
        program.validate()


def test_bidirectional_placement_for_two_replicas():
    # microbatch 0 flows down (stage s on device s), microbatch 1 up (stage s on device 1 - s)
    text = {0: "0F0 1F1 1B1 0B0", 1: "0F1 1F0 1B0 0B1"}
    with pytest.raises(ProgramError, match="already runs on device"):
        Program.from_text(text)
    program = Program.from_text(text, placement="bidirectional").validate()
    assert program.placement.describe(0) == "stages 0↓ 1↑"
    res = ppviz.simulate(program)
    # by hand: device 0 runs 0F0 [0,1], 1F1 [1,2] (after 0F1 on device 1), 1B1 [2,4], 0B0 [4,6]
    # (after 1B0 on device 1); device 1 mirrors it, so the two replicas leave no bubble
    assert res.makespan == 6.0
    assert list(res.ops.start[:4]) == [0.0, 1.0, 2.0, 4.0]
    assert res.bubble_fraction == 0.0


@pytest.mark.parametrize("flag_at, message", [
    # one pair flag each: 0B1 (device 0's last op) with 1F0, device 1's first; 1B1 with nothing
    # after it; 0F0 with 0F1, two forwards
    (3, "device 0, position 3: an F&B pair needs two ops on the same device"),
    (7, "device 1, position 3: an F&B pair needs two ops on the same device"),
    (0, "device 0, position 0 ((0F0;0F1)OVERLAP_F_B): an overlapped pair is one F and one B or I"),
])
def test_a_single_malformed_pair_is_refused(flag_at, message):
    base = Program.from_text("device 0: 0F0 0F1 0B0 0B1\ndevice 1: 1F0 1B0 1F1 1B1")
    pair = [k == flag_at for k in range(len(base))]
    program = Program(base.kind, base.stage, base.microbatch, pair, base.offsets, stages=2, microbatches=2)
    with pytest.raises(ProgramError) as info:
        program.validate()
    assert str(info.value).startswith(message)


def test_actions_count_an_overlapped_pair_once():
    prog = ppviz.Config(schedule="dualpipe", devices=4, microbatches=8).build()
    actions = prog.actions
    assert prog.pair.any() and len(actions) == len(prog) - int(prog.pair.sum())
    np.testing.assert_array_equal(actions.of_op[actions.first], np.arange(len(actions)))
    # a pair's second op belongs to its first op's action; every action starts on its own device
    second = np.flatnonzero(prog.pair) + 1
    np.testing.assert_array_equal(actions.of_op[second], actions.of_op[second - 1])
    for d in range(prog.devices):
        mine = actions.first[actions.offsets[d]:actions.offsets[d + 1]]
        on_d = prog.device == d
        assert (prog.device[mine] == d).all() and len(mine) == on_d.sum() - prog.pair[on_d].sum()
    assert prog.actions is actions and not actions.first.flags.writeable
