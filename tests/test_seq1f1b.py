"""seq1f1b: Sun et al., arXiv 2406.03488, and MayDomine/Seq1F1B's schedule.

Index i·k + j is segment j of microbatch i. The code's rule (schedules.py,
``forward_backward_pipelining_without_interleaving`` with pipe_sp_splits = k): rank r runs
p − r + k − 2 warm-up forwards, then 1F1B; forwards in index order, backwards popped from
``sp_queue``: the oldest microbatch, its newest segment first.
"""

import numpy as np
import pytest

from ppviz import Config, ProgramError, ScheduleConstraintError, simulate, Program


def run(p, m, k, **kw):
    return simulate(Config(schedule="seq1f1b", devices=p, microbatches=m, segments=k, **kw))


def test_figure_p4_two_segments_two_microbatches():
    # the paper's Fig. 1 setting (p = 4, sequences split in two), written out by hand from the rule:
    # indices 0, 1 = microbatch 0 segments 0, 1; 2, 3 = microbatch 1; backwards 1 0 3 2
    program = Config(schedule="seq1f1b", devices=4, microbatches=2, segments=2).build()
    assert program.to_torch() == {
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


def test_segments_must_be_a_whole_number():
    from ppviz import ConfigError

    for bad in (0, -1, 1.5, "2"):
        with pytest.raises(ConfigError, match=r"segments=.*give a whole number from 1"):
            Config(schedule="seq1f1b", devices=4, microbatches=4, segments=bad)
