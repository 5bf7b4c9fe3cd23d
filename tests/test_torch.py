"""ppviz's per-device compute orders against torch.distributed.pipelining's own generators.

torch builds each schedule's ``pipeline_order`` without GPUs through
``_schedule_visualizer.get_schedule_ops`` (mock stages). We drop its idle steps (None) and
compare the compute actions device by device. Needs torch; skipped without it unless
PPVIZ_REQUIRE_TORCH=1 (set by .ci/run), where a missing torch fails.
"""

import warnings

import pytest

from ppviz import Config, ScheduleConstraintError

GRID_P = (2, 3, 4, 5, 8)


def executed_orders(schedules, name, p, m, v):
    """What torch's single-stage schedules actually run: the order of forward_one_chunk and
    backward_one_chunk calls in ``_step_microbatches``, with a mock stage and P2P stubbed out.

    (Their ``_get_pipeline_order`` is only a drawing aid and is wrong for 1F1B's last rank when
    m = p: it skips F0 and invents F_m.)
    """
    from unittest import mock

    from torch.distributed.pipelining.stage import PipelineStage

    cls = schedules.get_schedule_class(name)
    orders = {}
    for r in range(p):
        stage = mock.create_autospec(PipelineStage, instance=True)
        stage.group_rank, stage.group_size, stage.num_stages, stage.stage_index = r, p, p, r
        stage.is_first, stage.is_last, stage.submod = r == 0, r == p - 1, None
        calls = []
        stage.forward_one_chunk.side_effect = lambda i, *a, _r=r, _c=calls, **k: _c.append(f"{_r}F{i}")
        stage.backward_one_chunk.side_effect = lambda i, *a, _r=r, _c=calls, **k: _c.append(f"{_r}B{i}")
        schedule = cls(stage, m, loss_fn=lambda out, target: 0)
        with mock.patch.object(schedules, "_batch_p2p", return_value=[]), \
                mock.patch.object(schedules, "_wait_batch_p2p"), \
                mock.patch.multiple(schedule, _maybe_compute_loss=mock.DEFAULT, _maybe_get_loss=mock.DEFAULT,
                                    _update_losses=mock.DEFAULT, _initialize_stage=mock.DEFAULT):
            schedule._step_microbatches([()] * m, [{}] * m, None, None)
        orders[r] = calls
    return orders


def torch_orders(schedules, name, p, m, v):
    from torch.distributed.pipelining._schedule_visualizer import get_schedule_ops

    if name in ("GPipe", "1F1B"):
        return executed_orders(schedules, name, p, m, v)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ops = get_schedule_ops(name, p, m, v)
    return {r: [str(a) for a in ops[r] if a is not None and a.is_compute_op] for r in range(p)}


def ppviz_orders(schedule, p, m, v):
    return Config(schedule=schedule, devices=p, microbatches=m, stages_per_device=v).build().to_actions()


def compare_grid(torch_pipelining, torch_name, schedule, vs, ms_for):
    matched = refused_by_both = 0
    for p in GRID_P:
        for v in vs:
            for m in ms_for(p):
                try:
                    expected = torch_orders(torch_pipelining, torch_name, p, m, v)
                except (ValueError, RuntimeError, AssertionError):
                    with pytest.raises(ScheduleConstraintError):
                        ppviz_orders(schedule, p, m, v)
                    refused_by_both += 1
                    continue
                assert ppviz_orders(schedule, p, m, v) == expected, (schedule, p, v, m)
                matched += 1
    return matched, refused_by_both


def test_gpipe_matches_torch(torch_pipelining):
    matched, _ = compare_grid(torch_pipelining, "GPipe", "gpipe", (1,), lambda p: range(1, 3 * p + 1))
    assert matched == sum(3 * p for p in GRID_P)


def test_1f1b_matches_torch(torch_pipelining):
    # torch refuses m < p for 1F1B; ppviz accepts it (Megatron does) and is tested for it below
    matched, _ = compare_grid(torch_pipelining, "1F1B", "1f1b", (1,), lambda p: range(p, 3 * p + 1))
    assert matched == sum(2 * p + 1 for p in GRID_P)


def test_1f1b_with_fewer_microbatches_than_devices_runs_like_megatron():
    # Megatron: warmup = min(p − r − 1, m); torch raises for m < p. The order is all F then all B.
    assert ppviz_orders("1f1b", 4, 2, 1)[0] == ["0F0", "0F1", "0B0", "0B1"]


def test_interleaved_1f1b_matches_torch(torch_pipelining):
    matched, refused = compare_grid(torch_pipelining, "Interleaved1F1B", "interleaved-1f1b", (2, 3, 4),
                                    lambda p: range(1, 3 * p + 1))
    assert matched >= 150 and refused >= 5
    print(f"interleaved-1f1b: {matched} configurations equal to torch, {refused} refused by both")


def test_zb_h1_matches_torch_zero_bubble_rule(torch_pipelining):
    """ZB-H1 at v = 1 is torch's ZB1P rule (_get_1f1b_rank_ops with enable_zero_bubble, W delayed by rank)."""
    from torch.distributed.pipelining.schedules import _get_1f1b_rank_ops, _get_warmup_ops

    count = 0
    for p in GRID_P:
        for m in range(p, 3 * p + 1):
            ours = ppviz_orders("zb-h1", p, m, 1)
            for r in range(p):
                warmup = _get_warmup_ops(r, 1, m, p, m, multiply_factor=1)
                ops = _get_1f1b_rank_ops(1, p, warmup, m - warmup, warmup, r, lambda step: r, lambda step: r,
                                         num_1f1b_microbatches=r, enable_zero_bubble=True)
                assert ours[r] == [str(a) for a in ops if a is not None], (p, m, r)
            count += 1
    assert count == sum(2 * p + 1 for p in GRID_P)
