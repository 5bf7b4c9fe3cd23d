"""seq1f1b: Sun et al., arXiv 2406.03488, and MayDomine/Seq1F1B's schedule.

Index i·k + j is segment j of microbatch i. The code's rule (schedules.py,
``forward_backward_pipelining_without_interleaving`` with pipe_sp_splits = k): rank r runs
p − r + k − 2 warm-up forwards, then 1F1B; forwards in index order, backwards popped from
``sp_queue``: the oldest microbatch, its newest segment first.
"""

import numpy as np
import pytest

import ppviz
from ppviz import Config, ProgramError, ScheduleConstraintError, simulate, Program


def run(p, m, k, **kw):
    return simulate(Config(schedule="seq1f1b", devices=p, microbatches=m, segments=k, **kw))


def test_figure_p4_two_segments_two_microbatches():
    # the paper's Fig. 1 setting (p = 4, sequences split in two), written out by hand from the rule:
    # indices 0, 1 = microbatch 0 segments 0, 1; 2, 3 = microbatch 1; backwards 1 0 3 2
    program = Config(schedule="seq1f1b", devices=4, microbatches=2, segments=2).build()
    assert program.to_actions() == {
        0: ["0F0", "0F1", "0F2", "0F3", "0B1", "0B0", "0B3", "0B2"],        # warmup 4 + 2 − 2 = 4 (all)
        1: ["1F0", "1F1", "1F2", "1F3", "1B1", "1B0", "1B3", "1B2"],        # warmup 3, one F B, drain
        2: ["2F0", "2F1", "2F2", "2B1", "2F3", "2B0", "2B3", "2B2"],        # warmup 2
        3: ["3F0", "3F1", "3B1", "3F2", "3B0", "3F3", "3B3", "3B2"],        # warmup 1: the last stage
    }
    assert program.segments == 2 and program.microbatches == 4 and program.whole_microbatches == 2


def test_segments_one_is_1f1b():
    for p, m in [(2, 3), (4, 8), (5, 2)]:
        assert Config(schedule="seq1f1b", devices=p, microbatches=m).build() == \
            Config(schedule="1f1b", devices=p, microbatches=m).build()


def test_lower_activation_memory_and_smaller_bubble_than_1f1b():
    one = simulate(Config(schedule="1f1b", devices=4, microbatches=8))
    seq = run(4, 8, 2)
    # (p + k − 1)/k = 2.5 units on device 0 against 1F1B's p = 4
    assert list(one.peak_activation) == [4, 3, 2, 1]
    assert list(seq.peak_activation) == [2.5, 2.0, 1.5, 1.0] == list(seq.closed_form.peak_activation)
    # fill and drain in half-size steps: idle (p−1)(f+b+w)/k = 4.5 against 9
    assert list(one.idle) == [9.0] * 4 and list(seq.idle) == [4.5] * 4
    assert seq.bubble_fraction == pytest.approx(3 / (2 * 8 + 3))  # (p−1)/(k·m + p − 1)
    assert seq.closed_form.applies and seq.makespan == seq.closed_form.makespan == 28.5


@pytest.mark.parametrize("k", [1, 2, 3, 4, 8])
def test_closed_form_on_a_grid(k):
    for p in (1, 2, 3, 4, 8):
        for m in (1, p - 1, p, 2 * p + 1):
            if m < 1:
                continue
            res = run(p, m, k, f=1.0, b=2.0, w=0.5, activation=2.0)
            cf = res.closed_form
            assert np.allclose(res.idle, (p - 1) * 3.5 / k)
            assert np.allclose(res.peak_activation, [min(p - r + k - 1, m * k) * 2.0 / k for r in range(p)])
            assert cf.applies and np.isclose(cf.makespan, res.makespan)


def test_causal_order_is_a_program_rule():
    good = "0F0 0F1 0B1 0B0\n1F0 1F1 1B1 1B0"
    prog = Program.from_text(good)
    prog.segments = 2
    # each segment costs half of f and b: F0 F1 on device 0 by 1, device 1 done by 2.5, device 0 B1 B0 by 3
    assert simulate(prog, f=1, b=1, w=0).makespan == 3.0
    swapped_forward = Program.from_text("0F1 0F0 0B1 0B0\n1F0 1F1 1B1 1B0")
    swapped_forward.segments = 2
    with pytest.raises(ProgramError, match=r"device 0, position 0 \(0F1\): the forward of segment 1 of microbatch 0 "
                                           r"on stage 0 must run on the same device and after segment 0's forward"):
        swapped_forward.validate()
    swapped_backward = Program.from_text("0F0 0F1 0B0 0B1\n1F0 1F1 1B1 1B0")
    swapped_backward.segments = 2
    with pytest.raises(ProgramError, match=r"\(0B0\): the backward of segment 0 of microbatch 0 on stage 0 must run "
                                           r"on the same device and after segment 1's backward"):
        swapped_backward.validate()
    odd = Program.from_text("0F0 0F1 0F2 0B2 0B1 0B0")
    odd.segments = 2
    with pytest.raises(ProgramError, match=r"segments=2 does not divide the 3 microbatch indices"):
        odd.validate()


def test_refusals():
    with pytest.raises(ScheduleConstraintError, match=r"segments=2.*use 1, or the seq1f1b schedule"):
        Config(schedule="1f1b", devices=4, microbatches=4, segments=2)
    with pytest.raises(ScheduleConstraintError, match=r"stages_per_device=2.*use 1"):
        Config(schedule="seq1f1b", devices=4, microbatches=4, stages_per_device=2, segments=2)
    with pytest.raises(ScheduleConstraintError) as info:
        Config(schedule="seq1f1b", devices=4, microbatches=8, microbatch_group_size=4, segments=2)
    assert (info.value.field, info.value.value) == ("microbatch_group_size", 4)
    assert str(info.value) == ("microbatch_group_size=4: seq1f1b has no microbatch groups; leave it unset (it applies "
                               "to interleaved schedules)")


def test_segments_must_be_a_whole_number():
    from ppviz import ConfigError

    for bad in (0, -1, 1.5, "2"):
        with pytest.raises(ConfigError, match=r"segments=.*give a whole number from 1"):
            Config(schedule="seq1f1b", devices=4, microbatches=4, segments=bad)


def test_a_segment_transfers_its_share_of_the_activation():
    # a segment of s/k tokens moves s/k of the microbatch's activation (b·s·h bytes) between stages
    link = ppviz.Link(1.0, bandwidth=4.0)
    whole = ppviz.simulate(ppviz.Config("1f1b", devices=2, microbatches=2, topology=link, comm_bytes=8.0))
    split = ppviz.simulate(ppviz.Config("seq1f1b", devices=2, microbatches=2, segments=2, topology=link, comm_bytes=8.0))
    assert set(whole.transfers.bytes.tolist()) == {8.0} and set(split.transfers.bytes.tolist()) == {4.0}
    assert set((split.transfers.end - split.transfers.start).tolist()) == {1.0 + 4.0 / 4.0}
    assert len(split.transfers) == 2 * len(whole.transfers)


# The code's order, run: the three loops of forward_backward_pipelining_without_interleaving in MayDomine/Seq1F1B
# (megatron/core/pipeline_parallel/schedules.py: p − r + k − 2 warm-up forwards, then one forward and one
# backward, then the cooldown backwards) with its own sp_queue class (sp_utils.py) holding the forwards: each
# forward appends its index, each backward runs the index sp_queue.pop() returns.
CODE = {
    (4, 3, 3): {
        0: "0F0 0F1 0F2 0F3 0F4 0F5 0B2 0F6 0B1 0F7 0B0 0F8 0B5 0B4 0B3 0B8 0B7 0B6",
        1: "1F0 1F1 1F2 1F3 1F4 1B2 1F5 1B1 1F6 1B0 1F7 1B5 1F8 1B4 1B3 1B8 1B7 1B6",
        2: "2F0 2F1 2F2 2F3 2B2 2F4 2B1 2F5 2B0 2F6 2B5 2F7 2B4 2F8 2B3 2B8 2B7 2B6",
        3: "3F0 3F1 3F2 3B2 3F3 3B1 3F4 3B0 3F5 3B5 3F6 3B4 3F7 3B3 3F8 3B8 3B7 3B6",
    },
    (3, 2, 4): {
        0: "0F0 0F1 0F2 0F3 0F4 0F5 0B3 0F6 0B2 0F7 0B1 0B0 0B7 0B6 0B5 0B4",
        1: "1F0 1F1 1F2 1F3 1F4 1B3 1F5 1B2 1F6 1B1 1F7 1B0 1B7 1B6 1B5 1B4",
        2: "2F0 2F1 2F2 2F3 2B3 2F4 2B2 2F5 2B1 2F6 2B0 2F7 2B7 2B6 2B5 2B4",
    },
}


@pytest.mark.parametrize("p, m, k", sorted(CODE))
def test_orders_are_the_codes_sp_queue_order(p, m, k):
    program = Config(schedule="seq1f1b", devices=p, microbatches=m, segments=k).build()
    assert program.to_actions() == {r: actions.split() for r, actions in CODE[p, m, k].items()}
