"""torch interop: the compute_only CSV both ways, ppviz.from_torch, and errors for malformed programs.

Two CSVs are torch's own test artifacts (pytorch/pytorch
``test/distributed/pipelining/artifacts/``), copied verbatim: ``zb1p_2rank_2stagep_compute.csv``
(ScheduleInterleavedZeroBubble, 2 ranks × 2 stages, 8 microbatches, with idle cells; the version
that writes the input backward as ``I`` — an older one used ``B`` for it) and
``dualpipev_4rank_10mb.csv`` (ScheduleDualPipeV, 4 ranks, 10 microbatches, OVERLAP_F_B pairs; read
from tests/data/, where its source is recorded).
"""

import io
import pathlib
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

import ppviz
from ppviz import Config, ParseError, PpvizError, Program, ProgramError, ScheduleConstraintError, simulate
from ppviz.core.registry import all_specs

ZB1P_2RANK_2STAGE = (
    "0F0,0F1,2F0,,2F1,2I0,2W0,0F2,2I1,2W1,0F3,0I0,0W0,2F2,0I1,0W1,2F3,2I2,2W2,0F4,2I3,2W3,0F5,0I2,0W2,2F4,0I3,"
    "0W3,2F5,2I4,2W4,0F6,2I5,2W5,0F7,0I4,0W4,2F6,0I5,0W5,2F7,2I6,2W6,2I7,2W7,0I6,0W6,0I7,0W7\n"
    ",1F0,1F1,3F0,3I0,3F1,3I1,3W0,1F2,1I0,3W1,1F3,1I1,1W0,3F2,3I2,1W1,3F3,3I3,3W2,1F4,1I2,3W3,1F5,1I3,1W2,3F4,"
    "3I4,1W3,3F5,3I5,3W4,1F6,1I4,3W5,1F7,1I5,1W4,3F6,3I6,1W5,3F7,3I7,3W6,1I6,3W7,1I7,1W6,1W7\n"
)

DUALPIPEV_4RANK_10MB = (pathlib.Path(__file__).parent / "data" / "dualpipev_4rank_10mb.csv").read_text()

SPECS = [s for s in all_specs() if s.builder is not None]


def write(tmp_path, text, name="schedule.csv"):
    path = tmp_path / name
    path.write_text(text, newline="")
    return path


# The CSV format ---------------------------------------------------------------------------------

@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_every_schedule_round_trips_through_csv(tmp_path, spec):
    cfg = Config(schedule=spec.name, devices=4, microbatches=24, stages_per_device=spec.default_v)  # all accept it
    program = cfg.build()
    program.to_torch_csv(tmp_path / "p.csv")
    # the file holds no placement; it is inferred, except for two replicas (DualPipe, Chimera,
    # BitPipe), whose stage numbers repeat across devices (torch has no such schedule to write one)
    two_replicas = program.placement.reverse_device is not None
    back = Program.from_torch_csv(tmp_path / "p.csv", placement=program.placement if two_replicas else None)
    # torch's format has no place for the forward-only and sequence-segment flags: they are set
    # on the program read back (and a program differs from its copy without them)
    if program.forward_only or program.segments > 1:
        assert back != program
        back.forward_only, back.segments = program.forward_only, program.segments
    # nor for the vocabulary passes' all-reduce barriers (read as one) and the interlaced pipeline's
    # synchronous output layer
    if (program.vocab_barriers, program.vocab_synchronous) != (1, False):
        assert back != program
        back.vocab_barriers, back.vocab_synchronous = program.vocab_barriers, program.vocab_synchronous
    assert back == program
    assert back.placement == program.placement


def test_csv_is_what_torch_writes():
    # csv.writer's rows: cells joined by commas, "\r\n" after each rank; a pair is one cell
    out = io.StringIO()
    Config(schedule="1f1b-overlap", devices=2, microbatches=2).build().to_torch_csv(out)
    assert out.getvalue() == "0F0,0F1,0B0,0B1\r\n1F0,(1F1;1B0)OVERLAP_F_B,1B1\r\n"


def test_torch_artifact_zb1p_is_interleaved_zb(tmp_path):
    program = Program.from_torch_csv(write(tmp_path, ZB1P_2RANK_2STAGE))
    # the empty cells are idle steps: dropped, as torch's runtime skips them
    assert program == Config(schedule="interleaved-zb", devices=2, microbatches=8, stages_per_device=2).build()
    assert program.placement.style == "loop"


def test_torch_artifact_dualpipev_reads_and_simulates(tmp_path):
    program = Program.from_torch_csv(write(tmp_path, DUALPIPEV_4RANK_10MB)).validate()
    assert (program.devices, program.stages, program.microbatches) == (4, 8, 10)
    assert program.placement.style == "v"
    assert int(program.pair.sum()) == DUALPIPEV_4RANK_10MB.count("OVERLAP_F_B") == 41
    assert program.device_actions(0)[17] == "(0F7;7B3)OVERLAP_F_B"
    # unit costs: every op still runs once and the pairs hold both their ops' slots
    res = simulate(program)
    assert res.makespan > 0 and len(res.ops) == 2 * 8 * 10 + int((program.kind == 2).sum())


def test_csv_ignores_trailing_blank_lines_and_refuses_an_empty_rank_between():
    # csv.reader (and so torch's _load_csv) reads a blank line as a rank without actions; at the
    # end of a file that is an editor's newline (and made every cost double: p/S with a phantom
    # rank), between ranks it is a rank no schedule leaves idle
    program = Program.from_torch_csv(io.StringIO("0F0,0B0\r\n\r\n"))
    assert program.devices == 1
    with pytest.raises(ParseError, match="line 2: rank 1 has no actions"):
        Program.from_torch_csv(io.StringIO("0F0,0B0\r\n\r\n1F0,1B0\r\n"))


# Errors ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, error, fragment", [
    ("0F0,0X0,0B0\n", ParseError, "line 1, cell 2: '0X0' is not an action"),
    ("0F0,0B0\n1F0,,1Q0\n", ParseError, "line 2, cell 3: '1Q0' is not an action"),
    ("0F0,(0F1;0F2)OVERLAP_F_B\n", ParseError, "line 1, cell 2"),
    ("1048576F0,1048576B0\n", ParseError, "line 1, cell 1: '1048576F0' has an index ppviz cannot hold"),
    ("", ParseError, "holds no rows"),
    ("0F0,0I0,0F1,0B1\n1F0,1I0,1W0,1F1,1B1\n", ProgramError,
     "device 0, position 1 (0I0): W is missing for this I; add 0W0 after it on device 0"),
    ("0F0,0B0,0B1\n1F0,1B0,1F1,1B1\n", ProgramError,
     "device 0, position 2 (0B1): stage 0 microbatch 1 is never forwarded: no 0F1 on any device"),
    ("0F0,0B0,0F1\n1F0,1B0,1F1,1B1\n", ProgramError, "device 0, position 2 (0F1): stage 0 microbatch 1 is never backwarded"),
    ("0F0,0B0,1F1,1B1\n1F0,1B0,0F1,0B1\n", ProgramError, "device 1, position 2 (0F1): stage 0 already runs on device 0"),
    ("0F0,0I0,0W0,0B0\n1F0,1B0\n", ProgramError, "device 0, position 3 (0B0): stage 0 microbatch 0 has both"),
])
def test_malformed_csv_names_line_cell_and_rule(tmp_path, text, error, fragment):
    with pytest.raises(error) as err:
        Program.from_torch_csv(write(tmp_path, text)).validate()
    assert fragment in str(err.value)


def test_error_carries_device_and_position():
    with pytest.raises(ProgramError) as err:
        Program.from_text({0: "0F0 0B0 0B1", 1: "1F0 1B0 1F1 1B1"}).validate()
    assert (err.value.device, err.value.position) == (0, 2)


@pytest.mark.parametrize("schedule", ["dualpipe", "chimera", "bitpipe"])
def test_a_stage_on_two_devices_points_every_bidirectional_schedule_at_its_placement(tmp_path, schedule):
    # before: every one was told "for DualPipe's two replicas pass placement='bidirectional'"
    config = Config(schedule=schedule, devices=4, microbatches=8)
    path = tmp_path / f"{schedule}.csv"
    simulate(config).to_torch_csv(path)
    with pytest.raises(ProgramError) as err:
        Program.from_torch_csv(path)
    head = ("device 3, position 0 (0F4): stage 0 already runs on device 0; a stage lives on one device, unless the "
            "schedule runs two replicas of the model in opposite directions (DualPipe, Chimera, BitPipe): ")
    if schedule == "bitpipe":
        from ppviz.schedules.bitpipe import bidirectional_v

        assert str(err.value) == head + ("for this program's 8 stages on 4 devices pass placement=ppviz.schedules."
                                         "bitpipe.bidirectional_v(4, 8) (BitPipe: two stages of each replica per device)")
        placement = bidirectional_v(4, 8)
    else:
        assert str(err.value) == head + ("for this program's 4 stages on 4 devices pass placement='bidirectional' "
                                         "(DualPipe and Chimera: one stage of each replica per device)")
        placement = "bidirectional"
    assert Program.from_torch_csv(path, placement=placement) == config.build()  # the advice works


def test_a_row_that_is_not_a_list_is_named():
    with pytest.raises(ParseError, match=r"device 1: expected a list of actions or a string of them; got int 5"):
        Program.from_actions({0: ["0F0", "0B0"], 1: 5})


TOKENS = ["0F0", "0F1", "1F0", "1F1", "0B0", "0B1", "1B0", "1B1", "0I0", "0W0", "1I1", "1W1", "2F0", "0F", "X",
          "(0F1;1B0)OVERLAP_F_B", "(1F0;1I1)OVERLAP_F_B", "(0B0;0F1)OVERLAP_F_B", "0SEND_F0", "", None, "5W9"]


@given(st.lists(st.lists(st.sampled_from(TOKENS), max_size=8), min_size=1, max_size=3))
def test_any_program_text_fails_only_with_ppviz_errors(rows):
    # whatever the rows hold, reading, validating and simulating either works or raises a
    # PpvizError that names what is wrong — never a traceback from deep inside numpy or the engine
    try:
        simulate(Program.from_actions(rows).validate())
    except PpvizError as err:
        assert str(err)


# ppviz.from_torch --------------------------------------------------------------------------------

def test_from_torch_without_torch_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.distributed.pipelining", None)
    with pytest.raises(ImportError, match="ppviz.from_torch needs PyTorch"):
        ppviz.from_torch("GPipe", devices=2, microbatches=2)


def test_from_torch_reads_a_pipeline_order_mapping_without_torch():
    program = ppviz.from_torch({0: ["0F0", None, "0B0"], 1: ["1F0", "1B0"]})
    assert program.to_actions() == {0: ["0F0", "0B0"], 1: ["1F0", "1B0"]}


def test_from_torch_names_and_classes(torch_pipelining):
    by_name = ppviz.from_torch("ScheduleInterleaved1F1B", devices=4, microbatches=8, stages_per_device=2)
    by_class = ppviz.from_torch(torch_pipelining.ScheduleInterleaved1F1B, devices=4, microbatches=8, stages_per_device=2)
    by_spelling = ppviz.from_torch("interleaved_1f1b", devices=4, microbatches=8)  # v defaults to 2
    assert by_name == by_class == by_spelling == Config(schedule="interleaved-1f1b", devices=4, microbatches=8).build()
    assert by_name.name == "ScheduleInterleaved1F1B"
    with pytest.raises(ppviz.ConfigError, match="give a concrete torch schedule class"):
        ppviz.from_torch(torch_pipelining.PipelineScheduleMulti, devices=4, microbatches=8)


def test_from_torch_reads_schedule_objects(torch_pipelining):
    from unittest import mock

    from torch.distributed.pipelining.stage import PipelineStage

    stage = mock.create_autospec(PipelineStage, instance=True)
    stage.group_rank, stage.group_size, stage.num_stages, stage.stage_index, stage.submod = 1, 4, 4, 1, None
    # a single-stage schedule is one rank's object; ppviz replays every rank's executed order
    one_f_one_b = torch_pipelining.Schedule1F1B(stage, 4)
    assert ppviz.from_torch(one_f_one_b) == Config(schedule="1f1b", devices=4, microbatches=4).build()
    stage.num_stages = 8
    bfs = torch_pipelining.ScheduleLoopedBFS([stage, stage], 4)
    assert ppviz.from_torch(bfs) == Config(schedule="looped-bfs", devices=4, microbatches=4).build()
    with pytest.raises(ppviz.ConfigError, match="leave the sizes out when passing a schedule object"):
        ppviz.from_torch(bfs, devices=4)


@pytest.mark.parametrize("args, error, fragments", [
    (("ZBV",), ppviz.ConfigError, ("no schedule of this name", "ZBVZeroBubble")),
    (("Interleaved1F1", 4, 8, 2), ppviz.ConfigError, ("did you mean 'Interleaved1F1B'",)),
    (("1F1B", 4, 2), ScheduleConstraintError, ("torch Schedule1F1B refuses them", "Number of microbatches (2)")),
    (("DualPipeV", 4, 4), ScheduleConstraintError, ("torch ScheduleDualPipeV refuses them",)),
    (("GPipe", 2, 2, 2), ScheduleConstraintError, ("stages_per_device=2", "runs one stage per rank")),
    (("GPipe", 0, 2), ppviz.ConfigError, ("devices=0", "give a whole number from 1")),
])
def test_from_torch_refusals(torch_pipelining, args, error, fragments):
    name, *sizes = args
    kw = dict(zip(("devices", "microbatches", "stages_per_device"), sizes))
    with pytest.raises(error) as err:
        ppviz.from_torch(name, **kw)
    for fragment in fragments:
        assert fragment in str(err.value)


def test_from_torch_refuses_other_objects(torch_pipelining):
    with pytest.raises(ppviz.ConfigError, match="give a torch schedule object with a pipeline_order"):
        ppviz.from_torch(object())


# Against torch's own CSV reader and writer -------------------------------------------------------

@pytest.fixture
def torch_schedule(torch_pipelining):
    """A torch runtime schedule for p ranks × v stages, built on mock stages."""
    import warnings
    from unittest import mock

    from torch.distributed.pipelining.stage import PipelineStage

    def build(cls, p, m, v):
        stage = mock.create_autospec(PipelineStage, instance=True)
        stage.group_rank, stage.group_size, stage.num_stages, stage.submod = 0, p, p * v, None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return cls([stage] * v, m)

    return build


@pytest.mark.parametrize("schedule, v", [
    ("looped-bfs", 2), ("interleaved-zb", 3), ("interleaved-1f1b", 2), ("1f1b-overlap", 1),
    ("interleaved-1f1b-overlap", 2), ("zb-h2", 1),
])
def test_torch_load_csv_reads_what_ppviz_writes(tmp_path, torch_pipelining, torch_schedule, schedule, v):
    program = Config(schedule=schedule, devices=4, microbatches=8, stages_per_device=v).build()
    program.to_torch_csv(tmp_path / "ours.csv")
    # torch's runtime loads it, validates it (_validate_schedule) and lowers it to send/recv actions
    runtime = torch_schedule(torch_pipelining.ScheduleLoopedBFS, 4, 8, v)
    runtime._load_csv(str(tmp_path / "ours.csv"), format="compute_only")
    assert {r: [str(a) for a in acts] for r, acts in runtime.pipeline_order.items()} == program.to_actions()
    assert runtime.stage_index_to_group_rank == dict(enumerate(program.placement.stage_device))


@pytest.mark.parametrize("name, v", [("InterleavedZeroBubble", 2), ("ZBVZeroBubble", 2), ("DualPipeV", 2),
                                     ("LoopedBFS", 3)])
def test_ppviz_reads_what_torch_dumps(tmp_path, torch_pipelining, torch_schedule, name, v):
    schedule = torch_schedule(torch_pipelining.get_schedule_class(name), 4, 8, v)
    schedule._dump_csv(str(tmp_path / "compute.csv"), format="compute_only")
    ours = Program.from_torch_csv(tmp_path / "compute.csv").validate()
    assert ours == ppviz.from_torch(schedule)
    # the lowered file with SEND/RECV/REDUCE_GRAD actions reads to the same compute order
    schedule._dump_csv(str(tmp_path / "comms.csv"), format="compute_comms")
    assert Program.from_torch_csv(tmp_path / "comms.csv") == ours


def test_torch_dualpipev_equals_its_artifact(tmp_path, torch_pipelining):
    # what torch's own test_csv_compare checks, read through ppviz
    artifact = Program.from_torch_csv(write(tmp_path, DUALPIPEV_4RANK_10MB))
    assert ppviz.from_torch("DualPipeV", devices=4, microbatches=10) == artifact
