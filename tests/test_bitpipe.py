"""bitpipe: Wu et al., arXiv 2410.19367, and its code (wuhouming/BitPipe, bitpipe_schedule.py)."""

import numpy as np
import pytest

from ppviz import Config, ScheduleConstraintError, simulate
from ppviz.schedules.bitpipe import _control_flow, _unit_lists


def run(p, m, **kw):
    return simulate(Config(schedule="bitpipe", devices=p, microbatches=m, **kw))


def _chunk(i, p, m):
    """The code's ``get_model_chunk_id`` of virtual microbatch i: 0/1 the down/up replica's first
    leg, 2/3 their second."""
    return (i % p) // (p // 2) + (0 if i < m else 2)


def _index_lists(rank, p, m):
    """The code's virtual ids of rank ``rank``'s forwards and backwards, from ppviz's per-unit
    lists: the i-th microbatch of chunk c in unit u is id (c >= 2)·m + u·p + (c mod 2)·p/2 + i."""
    return tuple([(c >= 2) * m + u * p + (c % 2) * (p // 2) + i for u in range(m // p) for c, i in order]
                 for order in _unit_lists(rank, p))


def _passes(rank, p, m):
    """Rank ``rank``'s passes as (F or B, virtual id), from ppviz's control flow."""
    forwards, backwards = _index_lists(rank, p, m)
    backward, position = _control_flow(rank, p, m // p)
    return [("B", backwards[k]) if b else ("F", forwards[k]) for b, k in zip(backward.tolist(), position.tolist())]


def test_index_lists_are_the_ones_the_codes_comments_print():
    # get_microbatch_idx / get_bkmicrobatch_idx for 4 ranks and 16 virtual microbatches (m = 8),
    # as printed in the code's comments (the sync markers left out)
    forwards = [[0, 1, 2, 10, 3, 11, 8, 9, 4, 5, 6, 14, 7, 15, 12, 13],
                [0, 2, 1, 3, 10, 8, 11, 9, 4, 6, 5, 7, 14, 12, 15, 13],
                [2, 0, 3, 1, 8, 10, 9, 11, 6, 4, 7, 5, 12, 14, 13, 15],
                [2, 3, 0, 8, 1, 9, 10, 11, 6, 7, 4, 12, 5, 13, 14, 15]]
    backwards = [[8, 9, 10, 2, 11, 3, 0, 1, 12, 13, 14, 6, 15, 7, 4, 5],
                 [8, 10, 9, 11, 2, 0, 3, 1, 12, 14, 13, 15, 6, 4, 7, 5],
                 [10, 8, 11, 9, 0, 2, 1, 3, 14, 12, 15, 13, 4, 6, 5, 7],
                 [10, 11, 8, 0, 9, 1, 2, 3, 14, 15, 12, 4, 13, 5, 6, 7]]
    for rank in range(4):
        assert _index_lists(rank, 4, 8) == (forwards[rank], backwards[rank])
    # and for 8 virtual microbatches (m = 4): "0, 1, 2, 6, 3, 7, 4, 5" on rank 0, and so on
    assert [_index_lists(r, 4, 4)[0] for r in range(4)] == [
        [0, 1, 2, 6, 3, 7, 4, 5], [0, 2, 1, 3, 6, 4, 7, 5], [2, 0, 3, 1, 4, 6, 5, 7], [2, 3, 0, 4, 1, 5, 6, 7]]


def test_readme_figure_p4_m4():
    # docs/BitPipe_images/BitPipe-v.svg ("BitPipe", P1..P4, microbatches 1..4: 1, 2 down, 3, 4 up)
    # read cell by cell; ' marks the second leg of the V (the lighter colour), B a backward.
    # P1: 1 2 3 3' 4 4' 1' B1' 2' B2' B3' B3 B4' B4 B1 B2
    figure = {
        0: "F1 F2 F3 F3' F4 F4' F1' B1' F2' B2' B3' B3 B4' B4 B1 B2",
        1: "F1 F3 F2 F4 F3' F1' F4' F2' B1' B3' B2' B4' B3 B1 B4 B2",
        2: "F3 F1 F4 F2 F1' F3' F2' F4' B3' B1' B4' B2' B1 B3 B2 B4",
        3: "F3 F4 F1 F1' F2 F2' F3' B3' F4' B4' B1' B1 B2' B2 B3 B4",
    }
    p = 4
    program = Config(schedule="bitpipe", devices=p, microbatches=4).build()
    for device, cells in figure.items():
        expected = []
        for cell in cells.split():
            kind, mb, second = cell[0], int(cell[1]) - 1, cell.endswith("'")
            down = mb < 2
            # stage of this leg on this device: down V 0..p−1 then p..2p−1 back; up V from device p−1
            if down:
                stage = 2 * p - 1 - device if second else device
            else:
                stage = p + device if second else p - 1 - device
            expected.append(f"{stage}{kind}{mb}")
        assert program.device_actions(device) == expected, device
    assert program.placement.describe(0) == "stages 0↓ 7↓ 3↑ 4↑"


def test_bubble_and_memory_read_off_the_construction():
    # f = b = w = 1 (B = 2f): one unit idles (p/2 − 1)·B, each further unit (p/2 − 1)(B − f)
    res = run(4, 8, params=1.0)
    assert list(res.idle) == [3.0] * 4 and res.makespan == 27.0
    assert list(res.peak_activation) == [3.5, 4.0, 4.0, 3.5]
    assert list(res.static_memory) == [2.0] * 4  # two replicas
    chimera = simulate(Config(schedule="chimera", devices=4, microbatches=8))
    assert res.makespan < chimera.makespan  # half-size stages halve Chimera's bubble
    cf = res.closed_form
    assert cf.applies and cf.makespan == 27.0 and list(cf.peak_activation) == [3.5, 4.0, 4.0, 3.5]


@pytest.mark.parametrize("p", [2, 4, 6, 8])
def test_closed_form_on_a_grid(p):
    for units in (1, 2, 3):
        for f, b, w in [(1, 1, 1), (1, 0.5, 0.5), (2, 1, 0.5), (1, 2, 2), (0.5, 0.25, 0)]:
            res = run(p, p * units, f=f, b=b, w=w)
            full = b + w
            assert np.allclose(res.idle, (p / 2 - 1) * (max(f, full) + (units - 1) * abs(full - f)))
            assert np.allclose(res.peak_activation, [(1.5 * p + min(r, p - 1 - r) + 1) / 2 for r in range(p)])


def test_refusals_name_what_works():
    with pytest.raises(ScheduleConstraintError, match=r"devices=3.*use 2 or 4"):
        Config(schedule="bitpipe", devices=3, microbatches=6)
    with pytest.raises(ScheduleConstraintError, match=r"microbatches=10.*use 8 or 12 \(a multiple of p\)"):
        Config(schedule="bitpipe", devices=4, microbatches=10)
    with pytest.raises(ScheduleConstraintError, match=r"stages_per_device=1.*use 2"):
        Config(schedule="bitpipe", devices=4, microbatches=8, stages_per_device=1)


# The code's control flow, run: forward_backward_pipelining_with_BitPipe of wuhouming/BitPipe
# (megatron/core/pipeline_parallel/bitpipe_schedule.py) executed for every rank with torch, megatron's
# parallel_state (BitPipe's own is_pipeline_first/last_stage rules) and the P2P calls stubbed, forward_step and
# backward_step recording the model chunk they run: 0/1 the down/up replica's first leg, 2/3 their second legs.
# Several units of p microbatches, so direct concatenation (drain and refill between units) is covered; within
# a chunk the code runs its microbatches in order, so the chunks fix the order.
CODE = {
    (4, 12): {
        0: "F0F0F1F3F1F3F2B2F2B2B3B1B3B1B0F0B0F0F1F3F1F3F2B2F2B2B3B1B3B1B0F0B0F0F1F3F1F3F2B2F2B2B3B1B3B1B0B0",
        1: "F0F1F0F1F3F2F3F2B2B3B2B3B1B0B1B0F0F1F0F1F3F2F3F2B2B3B2B3B1B0B1B0F0F1F0F1F3F2F3F2B2B3B2B3B1B0B1B0",
        2: "F1F0F1F0F2F3F2F3B3B2B3B2B0B1B0B1F1F0F1F0F2F3F2F3B3B2B3B2B0B1B0B1F1F0F1F0F2F3F2F3B3B2B3B2B0B1B0B1",
        3: "F1F1F0F2F0F2F3B3F3B3B2B0B2B0B1F1B1F1F0F2F0F2F3B3F3B3B2B0B2B0B1F1B1F1F0F2F0F2F3B3F3B3B2B0B2B0B1B1",
    },
    (6, 12): {
        0: "F0F0F0F1F3F1F3F1F3F2B2F2B2F2B2B3B1B3B1B3B1B0F0B0F0B0F0F1F3F1F3F1F3F2B2F2B2F2B2B3B1B3B1B3B1B0B0B0",
        1: "F0F0F1F0F1F3F1F3F2F3F2B2F2B2B3B2B3B1B3B1B0B1B0F0B0F0F1F0F1F3F1F3F2F3F2B2F2B2B3B2B3B1B3B1B0B1B0B0",
        2: "F0F1F0F1F0F1F3F2F3F2F3F2B2B3B2B3B2B3B1B0B1B0B1B0F0F1F0F1F0F1F3F2F3F2F3F2B2B3B2B3B2B3B1B0B1B0B1B0",
        3: "F1F0F1F0F1F0F2F3F2F3F2F3B3B2B3B2B3B2B0B1B0B1B0B1F1F0F1F0F1F0F2F3F2F3F2F3B3B2B3B2B3B2B0B1B0B1B0B1",
        4: "F1F1F0F1F0F2F0F2F3F2F3B3F3B3B2B3B2B0B2B0B1B0B1F1B1F1F0F1F0F2F0F2F3F2F3B3F3B3B2B3B2B0B2B0B1B0B1B1",
        5: "F1F1F1F0F2F0F2F0F2F3B3F3B3F3B3B2B0B2B0B2B0B1F1B1F1B1F1F0F2F0F2F0F2F3B3F3B3F3B3B2B0B2B0B2B0B1B1B1",
    },
}


@pytest.mark.parametrize("p, m", sorted(CODE))
def test_the_codes_control_flow_unit_after_unit(p, m):
    for rank, calls in CODE[p, m].items():
        assert "".join(f"{kind}{_chunk(i, p, m)}" for kind, i in _passes(rank, p, m)) == calls
        # and each chunk's passes run its virtual microbatches in order, as the code's index lists do
        for kind in "FB":
            for chunk in range(4):
                ids = [i for k, i in _passes(rank, p, m) if k == kind and _chunk(i, p, m) == chunk]
                assert ids == sorted(ids) and len(ids) == m // 2


def _positions_loop_for_loop(rank, p, units):
    """The code's control flow written loop for loop (ppviz's first builder): (F or B, position in
    the rank's forward or backward list)."""
    warmup = p + p // 2 + min(rank, p - 1 - rank)
    remaining = 2 * p - warmup
    middle = (units - 1) * 2 * p
    out = [("F", k) for k in range(warmup)]

    def one_f_one_b(steps, f_first, b_first):
        for k in range(steps):
            out.extend([("F", f_first + k), ("B", b_first + k)])

    for unit in range(units - 1):
        offset = unit * 2 * p
        one_f_one_b(remaining, warmup + offset, offset)
        out.extend(("B", offset + remaining + k) for k in range(warmup - remaining + 1))
        one_f_one_b(remaining - 1, 2 * p + offset, warmup + 1 + offset)
        out.extend(("F", 2 * p + offset + remaining - 1 + k) for k in range(warmup - remaining + 1))
    one_f_one_b(remaining, warmup + middle, middle)
    out.extend(("B", k) for k in range(middle + remaining, units * 2 * p))
    return out


@pytest.mark.parametrize("p", [2, 4, 6, 8, 10, 16])
@pytest.mark.parametrize("units", [1, 2, 3, 5])
def test_the_vectorised_builder_follows_the_control_flow_loop_for_loop(p, units):
    # the builder lays out one unit's pattern and repeats it (3.8M ops took 7 s loop for loop, 0.5 s now)
    m = p * units
    program = Config(schedule="bitpipe", devices=p, microbatches=m).build().to_actions()
    for rank in range(p):
        forwards, backwards = _index_lists(rank, p, m)
        expected = []
        for kind, k in _positions_loop_for_loop(rank, p, units):
            i = (forwards if kind == "F" else backwards)[k]
            chunk = _chunk(i, p, m)
            unit, position = divmod(i % m, p)
            microbatch = unit * (p // 2) + position if chunk in (0, 2) else m // 2 + unit * (p // 2) + position - p // 2
            stage = (rank, p - 1 - rank, 2 * p - 1 - rank, p + rank)[chunk]
            expected.append(f"{stage}{kind}{microbatch}")
        assert program[rank] == expected, rank
