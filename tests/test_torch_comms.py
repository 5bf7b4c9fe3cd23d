"""ppviz's send and receive ops against what torch.distributed.pipelining runs, for every schedule
torch ships, on a grid of sizes.

- Multi-stage schedules: ppviz's lowering of its own program (``p2p="overlapped"``: receives as
  early as torch puts them) equals torch's ``pipeline_order_with_comms`` (its FSDP actions
  UNSHARD/RESHARD/REDUCE_GRAD left out, as ppviz models no sharding), action for action.
- Deferred receives (``p2p="blocking"``) against torch's ``defer_pp_recv=True``: equal, except
  where torch moves a receive from a higher rank before a send to that rank (its deadlock rule
  for in-order NCCL streams); undoing exactly those moves gives ppviz's program.
- Single-stage schedules (GPipe, 1F1B): the deferred program equals the P2P batches torch's
  ``_step_microbatches`` posts, in order (recorded by ``ppviz.from_torch(..., comms=True)``).

Sizes torch refuses are refused by ppviz too. Needs torch (see tests/test_torch.py).
"""

import re
import warnings

import pytest

import ppviz
from ppviz import Config, ScheduleConstraintError
from ppviz.core.lowering import add_comms

# torch's name, ppviz's name, stages per device, microbatches for p devices
MULTI = [
    ("Interleaved1F1B", "interleaved-1f1b", (2, 3), lambda p: range(1, 2 * p + 3)),
    ("LoopedBFS", "looped-bfs", (1, 2, 3), lambda p: range(1, 2 * p + 3)),
    ("InterleavedZeroBubble", "interleaved-zb", (2, 3), lambda p: range(1, 2 * p + 3)),
    ("ZBVZeroBubble", "zb-v", (2,), lambda p: range(1, 2 * p + 3)),
    ("DualPipeV", "dualpipe-v", (2,), lambda p: range(1, 3 * p + 1)),
]
SINGLE = [("GPipe", "gpipe", lambda p: range(1, 2 * p + 2)), ("1F1B", "1f1b", lambda p: range(1, 2 * p + 2))]
GRID_P = (2, 3, 4, 5)
FSDP = re.compile(r"UNSHARD|RESHARD|REDUCE_GRAD")
REFUSALS = (ValueError, RuntimeError, AssertionError)


def torch_lowered(schedules, name, p, m, v, defer):
    from unittest import mock

    from torch.distributed.pipelining.stage import PipelineStage

    stage = mock.create_autospec(PipelineStage, instance=True)
    stage.group_rank, stage.group_size, stage.num_stages, stage.submod = 0, p, p * v, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        built = schedules.get_schedule_class(name)([stage] * v, m, defer_pp_recv=defer)
    return {r: [str(a) for a in acts if not FSDP.search(str(a))] for r, acts in built.pipeline_order_with_comms.items()}


def ours(schedule, p, m, v, defer):
    program = Config(schedule=schedule, devices=p, microbatches=m, stages_per_device=v).build()
    return add_comms(program, defer=defer).to_actions(comms=True)


ACTION = re.compile(r"^(\d+)(SEND_F|RECV_F|SEND_B|RECV_B)(\d+)$")


def undo_flushes(actions: dict[int, list[str]], stage_device: dict[int, int]) -> dict[int, list[str]]:
    """torch's deferred lists with the receives its rank-parity rule moved put back just before
    their consumer: a receive from a higher rank that sits in a run of receives ending at a send
    to that rank."""
    out = {}
    for rank, row in actions.items():
        moved, kept = {}, []
        for k, action in enumerate(row):
            match = ACTION.match(action)
            if match and match.group(2).startswith("RECV"):
                stage, kind, mb = int(match.group(1)), match.group(2), int(match.group(3))
                peer = stage_device[stage - 1 if kind == "RECV_F" else stage + 1]
                following = next((a for a in row[k + 1:] if not ACTION.match(a) or "RECV" not in a), "")
                send = ACTION.match(following)
                if peer > rank and send and send.group(2).startswith("SEND") and \
                        stage_device[int(send.group(1)) + (1 if send.group(2) == "SEND_F" else -1)] == peer:
                    moved[(stage, kind[-1], mb)] = action
                    continue
            kept.append(action)
        row = []
        for action in kept:
            for (stage, direction, mb), recv in list(moved.items()):
                compute = re.findall(r"(\d+)([FBI])(\d+)", action) if not ACTION.match(action) else []
                if any(int(s) == stage and (k == "F") == (direction == "F") and int(b) == mb for s, k, b in compute):
                    row.append(recv)
                    del moved[(stage, direction, mb)]
            row.append(action)
        out[rank] = row
    return out


def test_lowering_equals_torchs_on_every_multi_stage_schedule(torch_pipelining):
    counts = {}
    for torch_name, schedule, vs, ms in MULTI:
        equal = flushed = refused = 0
        for p in GRID_P:
            for v in vs:
                for m in ms(p):
                    try:
                        early = torch_lowered(torch_pipelining, torch_name, p, m, v, defer=False)
                        late = torch_lowered(torch_pipelining, torch_name, p, m, v, defer=True)
                    except REFUSALS:
                        with pytest.raises(ScheduleConstraintError):
                            ours(schedule, p, m, v, False)
                        refused += 1
                        continue
                    assert ours(schedule, p, m, v, False) == early, (schedule, p, m, v)
                    deferred = ours(schedule, p, m, v, True)
                    if deferred == late:
                        equal += 1
                        continue
                    devices = dict(enumerate(Config(schedule=schedule, devices=p, microbatches=m,
                                                    stages_per_device=v).build().placement.stage_device))
                    assert deferred == undo_flushes(late, devices), (schedule, p, m, v)
                    flushed += 1
        counts[schedule] = (equal, flushed, refused)
        assert equal + flushed > 0
    print("lowered like torch (early receives equal everywhere; deferred: equal, equal but for torch's "
          "rank-parity moves, refused by both):", counts)
    total = sum(e + f for e, f, _ in counts.values())
    assert total >= 150


def test_deferred_lowering_equals_what_single_stage_schedules_post(torch_pipelining):
    counts = {}
    for torch_name, schedule, ms in SINGLE:
        equal = refused = 0
        for p in GRID_P:
            for m in ms(p):
                try:
                    executed = ppviz.from_torch(torch_name, devices=p, microbatches=m, comms=True)
                except ScheduleConstraintError:
                    refused += 1  # 1F1B with m < p: torch refuses it, ppviz runs it as Megatron does
                    continue
                assert ours(schedule, p, m, 1, True) == executed.to_actions(comms=True), (schedule, p, m)
                equal += 1
        counts[schedule] = (equal, refused)
    print("deferred lowering equal to the P2P torch posts (equal, refused by torch):", counts)
    assert counts["gpipe"][0] == sum(2 * p + 1 for p in GRID_P)
    assert counts["1f1b"][0] == sum(p + 2 for p in GRID_P)


def test_a_torch_program_with_comms_runs_its_own_sends_and_receives(torch_pipelining):
    # torch's own lowered program simulates; blocking runs wait where its receives sit, which
    # (as early as torch puts them) is before the consumers ppviz's blocking lowering waits at
    program = ppviz.from_torch("Interleaved1F1B", devices=4, microbatches=8, stages_per_device=2, comms=True)
    link = ppviz.Link(0.25, bandwidth=4.0)
    config = Config(schedule="custom", devices=4, microbatches=8, topology=link, comm_bytes=1.0)
    torchs = ppviz.simulate(program, config.replace(p2p="overlapped"))
    assert torchs.program.to_actions(comms=True) == program.to_actions(comms=True)
    # overlapped: where the receives sit does not matter, so torch's program times like ppviz's
    ppviz_lowered = ppviz.simulate(program.without_comms(), config.replace(p2p="overlapped"))
    assert torchs.makespan == ppviz_lowered.makespan
    assert len(torchs.transfers) == 2 * (4 * 2 - 1) * 8  # each of the 7 stage boundaries, both ways, per microbatch


def torch_passes(schedules, program):
    """torch's lowering passes (as _prepare_schedule_with_comms runs them) applied to a ppviz program."""
    actions = {d: [schedules._Action.from_str(a) for a in program.device_actions(d)] for d in range(program.devices)}
    lowered = {d: schedules._add_reduce_grad(schedules._add_unshard_reshard(acts), program.microbatches)
               for d, acts in actions.items()}
    stage_device = program.placement.stage_device
    out = schedules._add_send_recv(lowered, stage_to_rank=lambda s: stage_device[s], num_stages=program.stages)
    return {d: [str(a) for a in acts if not FSDP.search(str(a))] for d, acts in out.items()}


def test_every_registry_schedule_is_lowered_as_torchs_passes_lower_it(torch_pipelining):
    # DualPipe's two replicas map a stage to a device by microbatch, which torch's passes cannot say;
    # torch's action strings have no vocabulary passes
    names = [s.name for s in ppviz.core.registry.all_specs()
             if s.builder is not None and s.replicas == 1 and not s.vocab_barriers]
    checked = 0
    for name in names:
        spec = ppviz.core.registry.lookup(name)
        for p in (2, 3, 4):
            for v in range(spec.v_min, min(spec.v_max or 3, 3) + 1):
                for m in (1, p, 2 * p + 1):
                    try:
                        program = Config(schedule=name, devices=p, microbatches=m, stages_per_device=v).build()
                    except ScheduleConstraintError:
                        continue
                    assert add_comms(program).to_actions(comms=True) == torch_passes(torch_pipelining, program), \
                        (name, p, v, m)
                    checked += 1
    assert checked >= 100
