"""Placements written out by hand, every text-format variant round-tripped, exports read back
in their units, and every CLI flag reaching the simulation."""

import io
import json

import numpy as np
import pytest

from ppviz import Config, ParseError, Placement, Program, simulate
from ppviz.cli import main

from . import oracle

# Placements --------------------------------------------------------------------------------


@pytest.mark.parametrize("p, v, expected", [
    (3, 1, [0, 1, 2]),
    (3, 2, [0, 1, 2, 2, 1, 0]),
    (3, 3, [0, 1, 2, 2, 1, 0, 0, 1, 2]),
    (2, 4, [0, 1, 1, 0, 0, 1, 1, 0]),
    (4, 3, [0, 1, 2, 3, 3, 2, 1, 0, 0, 1, 2, 3]),
])
def test_v_placement_zigzags_on_every_lap(p, v, expected):
    assert list(Placement.v_shape(p, v).stage_device) == expected


@pytest.mark.parametrize("p, v, expected", [
    (3, 3, [0, 1, 2, 0, 1, 2, 0, 1, 2]),
    (2, 4, [0, 1, 0, 1, 0, 1, 0, 1]),
])
def test_loop_placement_is_round_robin(p, v, expected):
    assert list(Placement.loop(p, v).stage_device) == expected


@pytest.mark.parametrize("p, v, expected", [
    (3, 3, [0, 0, 0, 1, 1, 1, 2, 2, 2]),
    (2, 4, [0, 0, 0, 0, 1, 1, 1, 1]),
])
def test_contiguous_placement_is_blocks(p, v, expected):
    assert list(Placement.contiguous(p, v).stage_device) == expected


def test_bidirectional_placement_runs_the_second_half_upwards():
    pl = Placement.bidirectional(4, 8)
    assert pl.device_of(np.array([0, 1, 2, 3]), 0).tolist() == [0, 1, 2, 3]
    assert pl.device_of(np.array([0, 1, 2, 3]), 4).tolist() == [3, 2, 1, 0]
    assert pl.device_of(0, 3) == 0 and pl.device_of(0, 4) == 3
    assert [pl.replicas_on(d) for d in range(4)] == [2, 2, 2, 2]
    assert pl.describe(1) == "stages 1↓ 2↑"


@pytest.mark.parametrize("p, v", [(2, 3), (3, 3), (2, 4), (4, 4)])
def test_custom_mapping_recognises_each_named_style(p, v):
    for make in (Placement.contiguous, Placement.loop, Placement.v_shape):
        named = make(p, v)
        assert Placement.from_mapping(p, named.stage_device) == named


@pytest.mark.parametrize("v", [3, 4])
def test_v_shaped_interleaved_zb_programs_follow_the_zigzag(v):
    # the interleaved zero-bubble schedule accepts any v; on a V placement each device holds
    # the stages the zigzag gives it (checked through a text program with that placement)
    p = 2
    prog = Config(schedule="interleaved-zb", devices=p, microbatches=4, stages_per_device=v).build()
    stages_on = {d: sorted(set(prog.stage[prog.device == d].tolist())) for d in range(p)}
    assert stages_on == {d: [s for s in range(p * v) if s % p == d] for d in range(p)}
    mapping = Placement.v_shape(p, v).stage_device
    text = "\n".join(
        f"device {d}: " + " ".join(a for s in range(p * v) if mapping[s] == d for a in (f"{s}F0",))
        for d in range(p))
    assert Program.from_text(text, placement="v").placement.stage_device == mapping


# Text formats ------------------------------------------------------------------------------

VARIANTS = {
    "plain lines": "0F0 0F1 0B0 0B1\n1F0 1B0 1F1 1B1",
    "device prefixes": "device 0: 0F0 0F1 0B0 0B1\ndevice 1: 1F0 1B0 1F1 1B1",
    "rank prefixes": "rank 0: 0F0 0F1 0B0 0B1\nrank 1: 1F0 1B0 1F1 1B1",
    "dev prefixes, commas": "dev 0: 0F0, 0F1, 0B0, 0B1\ndev 1: 1F0,1B0,1F1,1B1",
    "comments and blank lines": "# a 1F1B\n\ndevice 0: 0F0 0F1 0B0 0B1\n\n  # rank 1\ndevice 1: 1F0 1B0 1F1 1B1\n",
    "dict of strings": {0: "0F0 0F1 0B0 0B1", 1: "1F0 1B0 1F1 1B1"},
    "dict of lists": {0: ["0F0", "0F1", "0B0", "0B1"], 1: ["1F0", "1B0", "1F1", "1B1"]},
    "torch idle steps and comms": {0: ["0F0", None, "0F1", "0SEND_F1", "0B0", "", "0B1"],
                                    1: ["1RECV_F0", "1F0", "1B0", "1F1", "1B1", "1SEND_B1"]},
}


@pytest.mark.parametrize("name", VARIANTS)
def test_text_variants_parse_to_one_program_and_round_trip(name):
    expected = Config(schedule="1f1b", devices=2, microbatches=2).build()
    prog = Program.from_text(VARIANTS[name]) if name != "torch idle steps and comms" else \
        Program.from_actions(VARIANTS[name])
    assert prog == expected
    assert Program.from_text(prog.to_text()) == prog
    assert Program.from_actions(prog.to_actions()) == prog
    buf = io.StringIO()
    prog.to_torch_csv(buf)
    assert Program.from_torch_csv(io.StringIO(buf.getvalue())) == prog


PAIRS = """
device 0: 0F0 0F1 0F2 (0F3;0I0)OVERLAP_F_B 0W0 (0F4;0B1)OVERLAP_F_B 0I2 0W2 0B3 0B4
device 1: 1F0 1I0 1W0 1F1 1B1 1F2 1I2 1W2 1F3 1B3 1F4 1B4
"""


def test_overlapped_pairs_with_an_i_or_a_b_backward_parse_and_round_trip():
    prog = Program.from_text(PAIRS)
    actions = prog.to_actions()[0]
    assert "(0F3;0I0)OVERLAP_F_B" in actions and "(0F4;0B1)OVERLAP_F_B" in actions
    assert int(prog.pair.sum()) == 2
    first = np.flatnonzero(prog.pair)
    assert "".join("FBIW"[k] for k in prog.kind[first + 1]) == "IB"
    assert Program.from_text(prog.to_text()) == prog
    buf = io.StringIO()
    prog.to_torch_csv(buf)
    assert Program.from_torch_csv(io.StringIO(buf.getvalue())) == prog
    cfg = Config(schedule="custom", devices=2, microbatches=5, fb=2.0)
    res = simulate(prog, cfg)
    ref = oracle.run(prog, cfg)
    assert np.allclose(res.ops.start, ref.start) and np.allclose(res.ops.end, ref.end)


def test_program_equality_sees_pairing():
    paired = Program.from_text({0: "0F0 (0F1;0B0)OVERLAP_F_B 0B1"})
    plain = Program.from_text({0: "0F0 0F1 0B0 0B1"})
    assert np.array_equal(paired.kind, plain.kind) and np.array_equal(paired.stage, plain.stage)
    assert paired != plain
    assert paired == Program.from_text({0: "0F0 (0F1;0B0)OVERLAP_F_B 0B1"})


def test_program_equality_sees_every_field():
    base = Program.from_text({0: "0F0 0F1 0B0 0B1", 1: "1F0 1B0 1F1 1B1"})
    assert base != Program.from_text({0: "0F0 0F1 0B0 0B1", 1: "1F0 1F1 1B0 1B1"})  # order
    assert base != Program.from_text({0: "0F0 0F1 0B1 0B0", 1: "1F0 1B0 1F1 1B1"})  # microbatch
    assert base != Program.from_text({0: "0F0 0F1 0B0 0B1", 1: "1F0 1B0 1F1 1B1", 2: "2F0 2B0 2F1 2B1"})
    assert base != Program.from_text({0: "0F0 0F1 0I0 0I1", 1: "1F0 1B0 1F1 1B1"})  # kind


@pytest.mark.parametrize("bad, where", [
    ("device 0: 0F0 0X1", "line 1, column 15: '0X1'"),
    ("device 0: 0F0 (0F1;0W0)OVERLAP_F_B", "line 1, column 15: '\\(0F1;0W0\\)OVERLAP_F_B'"),
    ("device 0: 0F0\ndevice 0: 0B0", "line 2"),
])
def test_malformed_text_names_where(bad, where):
    with pytest.raises(ParseError, match=where):
        Program.from_text(bad)


# Exports in their units --------------------------------------------------------------------


@pytest.mark.parametrize("unit", [1.0, 2.5, 1000.0])
def test_chrome_trace_scales_ops_and_memory_counters_to_the_time_unit(tmp_path, unit):
    res = simulate(Config(schedule="zb-h1", devices=3, microbatches=4, f=1.5, b=1.0, w=0.5))
    path = tmp_path / "t.json"
    res.to_chrome_trace(path, time_unit_us=unit)
    trace = json.loads(path.read_text())
    assert trace["otherData"]["time_unit_us"] == unit
    events = trace["traceEvents"]
    spans = sorted((e["tid"], e["ts"], e["ts"] + e["dur"]) for e in events if e["ph"] == "X")
    ops = sorted(zip(res.ops.device.tolist(), (res.ops.start * unit).tolist(), (res.ops.end * unit).tolist()))
    assert np.allclose(np.array(spans), np.array(ops))
    for d in range(3):
        counters = [e for e in events if e["ph"] == "C" and e["tid"] == d]
        times, values = res.memory.curve(d)
        assert np.allclose([c["ts"] for c in counters], times * unit)
        assert [c["args"]["activation"] for c in counters] == values.tolist()
    last = max(e["ts"] + e.get("dur", 0) for e in events if e["ph"] in "XC")
    assert last == pytest.approx(res.makespan * unit)


def test_torch_csv_export_reads_back(tmp_path):
    res = simulate(Config(schedule="interleaved-1f1b", devices=2, microbatches=4, stages_per_device=2))
    path = tmp_path / "p.csv"
    res.to_torch_csv(path)
    rows = path.read_text().splitlines()
    assert rows[0].split(",") == res.program.to_actions()[0]
    assert Program.from_torch_csv(path) == res.program


# CLI flags ---------------------------------------------------------------------------------

FLAG_CASES = [
    (["1f1b", "-p", "3", "-m", "5"], dict(schedule="1f1b", devices=3, microbatches=5)),
    (["interleaved-1f1b", "-p", "2", "-m", "4", "-v", "3"],
     dict(schedule="interleaved-1f1b", devices=2, microbatches=4, stages_per_device=3)),
    (["zb-h1", "--f", "1.5"], dict(schedule="zb-h1", f=1.5)),
    (["zb-h1", "--b", "2.5"], dict(schedule="zb-h1", b=2.5)),
    (["zb-h1", "--w", "0.25"], dict(schedule="zb-h1", w=0.25)),
    (["1f1b", "--comm", "0.5"], dict(schedule="1f1b", comm=0.5)),
    (["dualpipe", "-m", "16", "--fb", "2.4"], dict(schedule="dualpipe", microbatches=16, fb=2.4)),
    (["interleaved-1f1b", "-p", "2", "-m", "6", "-v", "2", "--group-size", "3"],
     dict(schedule="interleaved-1f1b", devices=2, microbatches=6, stages_per_device=2, microbatch_group_size=3)),
    (["zb-h1", "--w-share", "0.5"], dict(schedule="zb-h1", w_share=0.5)),
    (["1f1b", "--params", "2"], dict(schedule="1f1b", params=2.0)),
    (["1f1b", "--memory-capacity", "3"], dict(schedule="1f1b", memory_capacity=3.0)),
    (["1f1b", "--memory-capacity", "3", "--activation-bytes", "1e9"],
     dict(schedule="1f1b", memory_capacity=3.0, activation_bytes=1e9)),
    (["zb-h1", "--recompute", "full"], dict(schedule="zb-h1", recompute="full")),
    (["seq1f1b", "--segments", "2"], dict(schedule="seq1f1b", segments=2)),
    (["1f1b", "--time-unit", "ms"], dict(schedule="1f1b", time_unit="ms")),
]


@pytest.mark.parametrize("args, fields", FLAG_CASES, ids=lambda x: " ".join(x) if isinstance(x, list) else "")
def test_every_cli_flag_reaches_the_config(capsys, args, fields):
    assert main(["run", *args]) == 0
    out = capsys.readouterr().out
    expected = simulate(Config(**fields))
    default = simulate(Config(schedule=fields["schedule"], microbatches=fields.get("microbatches", 8)))
    # (the command line wraps the summary to 80 columns; the words are the summary's)
    assert " ".join(expected.summary().split()) in " ".join(out.split())
    # each case changes something the summary shows, so an ignored flag cannot pass
    if len(fields) > 1 and set(fields) - {"schedule", "microbatches"}:
        assert expected.summary() != default.summary()


def test_cli_width_and_exports(tmp_path, capsys):
    trace, csv = tmp_path / "t.json", tmp_path / "p.csv"
    assert main(["run", "1f1b", "-p", "2", "-m", "3", "--width", "60", "--trace", str(trace), "--csv", str(csv)]) == 0
    out = capsys.readouterr().out
    res = simulate(Config(schedule="1f1b", devices=2, microbatches=3))
    assert res.to_text_gantt(width=60) in out
    assert max(len(line) for line in res.to_text_gantt(width=60).splitlines()) <= 60
    assert f"wrote {trace}" in out and f"wrote {csv}" in out
    assert json.loads(trace.read_text())["otherData"]["makespan"] == res.makespan
    assert Program.from_torch_csv(csv) == res.program


def test_cli_program_flag_takes_costs(tmp_path, capsys):
    path = tmp_path / "mine.txt"
    path.write_text("0F0 0F1 0B0 0B1\n1F0 1B0 1F1 1B1\n")
    assert main(["run", "--program", str(path), "--b", "2", "--comm", "0.5"]) == 0
    out = capsys.readouterr().out
    res = simulate(Program.from_text(path.read_text()), b=2.0, comm=0.5, label="mine.txt")
    assert res.summary() in out
