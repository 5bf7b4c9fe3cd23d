"""Regression tests for the edges a user reaches: each failed before its fix (a silent wrong
answer, a traceback that is not ppviz's, a hang or a runaway allocation)."""

import io
import json
import math

import numpy as np
import pytest

import ppviz
from ppviz import Config, ConfigError, ParseError, PpvizError, Program, ProgramError, simulate
from ppviz.cli import main


def test_stage_costs_apply_to_a_custom_program():
    prog = Program.from_text("0F0 0F1 0B0 0B1\n1F0 1B0 1F1 1B1")
    res = simulate(prog, stage_costs={1: {"f": 2.0}})
    spans = {(d, k, mb): (s, e) for d, k, mb, s, e in zip(res.ops.device.tolist(), res.ops.kind.tolist(),
                                                         res.ops.microbatch.tolist(), res.ops.start.tolist(),
                                                         res.ops.end.tolist())}
    assert spans[(1, "F", 0)] == (1.0, 3.0)
    with pytest.raises(ConfigError, match="stage keys must be integers 0..1"):
        simulate(prog, stage_costs={2: {"f": 2.0}})


def test_torch_csv_ignores_trailing_blank_lines_and_commas_and_refuses_an_empty_rank():
    plain = Program.from_torch_csv(io.StringIO("0F0,0B0\n1F0,1B0\n"))
    assert Program.from_torch_csv(io.StringIO("0F0,0B0\n1F0,1B0\n\n\n")) == plain
    assert Program.from_torch_csv(io.StringIO("0F0,0B0,\n1F0,1B0,,\n")) == plain
    assert simulate(Program.from_torch_csv(io.StringIO("0F0,0B0\n1F0,1B0\n\n"))).bubble_fraction == \
        simulate(plain).bubble_fraction
    with pytest.raises(ParseError) as info:
        Program.from_torch_csv(io.StringIO("0F0,0B0\n,,\n2F0,2B0\n"))
    assert "line 2" in str(info.value) and "rank 1" in str(info.value)
    with pytest.raises(ParseError, match="line 2"):
        Program.from_torch_csv(io.StringIO("0F0,0B0\n\n2F0,2B0\n"))


def test_huge_device_numbers_in_text_are_refused_without_allocating():
    with pytest.raises(ParseError) as info:
        Program.from_text("device 0: 0F0 0B0\ndevice 99999999999: 1F0 1B0")
    assert "device 1 has no row" in str(info.value)
    with pytest.raises(ParseError):
        Program.from_text({10**12: "0F0"})
    with pytest.raises(ProgramError):
        Program.from_text("0F99999999 0B99999999").validate()


def test_simulate_checks_that_the_config_matches_the_program():
    prog = Program.from_text("0F0 0F1 0B0 0B1\n1F0 1B0 1F1 1B1")
    with pytest.raises(ConfigError, match="devices"):
        simulate(prog, Config(schedule="custom", devices=4, microbatches=2))
    with pytest.raises(ConfigError, match="microbatches"):
        simulate(prog, Config(schedule="custom", devices=2, microbatches=3))
    assert simulate(prog, Config(schedule="custom", devices=2, microbatches=2, b=2.0)).makespan == 12.0


def test_costs_whose_sums_overflow_are_refused():
    with pytest.raises(ConfigError, match="overflow|too large"):
        simulate(Config(f=1e308, b=1e308))
    with pytest.raises(ConfigError, match="overflow|too large"):
        simulate(Config(f=1e306, microbatches=1000))
    with pytest.raises(ConfigError, match="at most 1e\\+200"):
        Config(f=1e300)
    res = simulate(Config(f=1e150))
    assert math.isfinite(res.makespan)
    from ppviz.io.chrome_trace import chrome_trace

    trace = json.loads(json.dumps(chrome_trace(res), allow_nan=False))
    assert trace["otherData"]["makespan"] == res.makespan


@pytest.mark.parametrize("call, field", [
    (lambda: Config(devices=10**400), "devices"),
    (lambda: Config(f=10**400), "f"),
    (lambda: Config(stages_per_device=10**400), "stages_per_device"),
    (lambda: Config(foo=1), "foo"),
    (lambda: simulate(Config(), foo=1), "foo"),
    (lambda: simulate(Program.from_text("0F0 0B0"), devices=3), "devices"),
    (lambda: Program.from_text("0F0 0B0", stages="x"), "stages"),
    (lambda: Program.from_text("0F0 0B0", microbatches=-1), "microbatches"),
    (lambda: simulate(Config(), engine="fast"), "engine"),
])
def test_every_refusal_is_a_ppviz_error_naming_the_argument(call, field):
    with pytest.raises(PpvizError) as info:
        call()
    assert field in str(info.value)


def test_positions_in_text_and_csv_name_line_and_column():
    with pytest.raises(ParseError) as info:
        Program.from_text("# two devices\n0F0 0B0\n1F0  1X0")
    assert "line 3, column 6" in str(info.value) and "'1X0'" in str(info.value)
    with pytest.raises(ParseError) as info:
        Program.from_torch_csv(io.StringIO("0F0,0B0\n1F0,1X0\n"))
    assert "line 2, cell 2" in str(info.value)


def test_exports_refuse_bad_paths_and_escape_user_text(tmp_path, capsys):
    res = simulate(Config(devices=2, microbatches=2))
    for bad in (3, None, 2.5):
        with pytest.raises(ConfigError, match="path"):
            res.to_chrome_trace(bad)
    import ppviz.widgets

    page = ppviz.widgets.standalone_html(res, width="900px")
    assert "max-width: 900px" in page or "900px" in page
    with pytest.raises(ConfigError, match="width"):
        ppviz.widgets.standalone_html(res, width="1px}</style><script>alert(1)</script>")
    name = tmp_path / "evil\x1b[2Jname.json"
    assert main(["run", "1f1b", "-p", "2", "-m", "2", "--trace", str(name)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "evil\\x1b[2Jname.json" in out


def test_result_arrays_are_read_only():
    prog = Config(devices=2, microbatches=2).build()
    a, b = simulate(prog), simulate(prog, b=2.0)
    for arr in (a.ops.start, a.ops.end, a.ops.device, a.ops.kind, a.busy, a.idle, a.peak_activation,
                a.static_memory, a.memory.values, a.program.kind):
        with pytest.raises(ValueError):
            arr[0] = 99
    assert not np.shares_memory(a.ops.start, b.ops.start)


def test_the_size_budget_is_configurable_and_refuses_with_the_estimate(monkeypatch):
    from ppviz.core import budget

    monkeypatch.delenv("PPVIZ_MAX_OPS", raising=False)
    assert ppviz.set_budget(None) == budget.DEFAULT_MAX_OPS == 4_000_000
    try:
        assert ppviz.set_budget(63) == 63
        with pytest.raises(ConfigError) as info:
            Config(devices=4, microbatches=8)  # 1F1B: F and B for 4 stages × 8 microbatches = 64 ops
        assert str(info.value) == ("size='p=4, v=1, m=8': too large to simulate here; that is about 64 ops, over the "
                                   "budget of 63; use fewer devices, stages or microbatches, or raise the budget "
                                   "with ppviz.set_budget(max_ops=...)")
        ppviz.set_budget(64)
        assert simulate(Config(devices=4, microbatches=8)).makespan == 33
        with pytest.raises(ConfigError, match="about 96 ops"):  # ZB-H1 splits B: F, I and W
            Config(schedule="zb-h1", devices=4, microbatches=8)
        with pytest.raises(ConfigError, match="about 128 ops"):  # 8 stages of 1/2 on 4 devices
            Config(schedule="interleaved-1f1b", devices=4, microbatches=8)
        for bad in (0, -3, 2.5, True, "10"):
            with pytest.raises(ConfigError, match="max_ops"):
                ppviz.set_budget(bad)
        ppviz.set_budget(None)
        monkeypatch.setenv("PPVIZ_MAX_OPS", "100")
        assert budget.max_ops() == 100
        monkeypatch.setenv("PPVIZ_MAX_OPS", "lots")
        assert budget.max_ops() == budget.DEFAULT_MAX_OPS
    finally:
        ppviz.set_budget(None)


def test_csv_files_are_read_as_utf8_and_other_inputs_refused(tmp_path):
    path = tmp_path / "p.csv"
    path.write_bytes(b"0F0,0B0\r\n1F0,1B0\r\n")
    assert Program.from_torch_csv(path).to_torch() == {0: ["0F0", "0B0"], 1: ["1F0", "1B0"]}
    # a non-breaking space (two UTF-8 bytes) around a cell is white space, as an editor shows it
    path.write_bytes("0F0,\u00a00B0\n1F0,1B0\n".encode("utf-8"))
    assert Program.from_torch_csv(path).to_torch()[0] == ["0F0", "0B0"]
    path.write_bytes(b"0F0,0B0\xff\n")
    with pytest.raises(ParseError) as info:
        Program.from_torch_csv(path)
    assert str(info.value) == f"the CSV {path} is not UTF-8 text (invalid start byte at byte 7)"
    with pytest.raises(ParseError) as info:
        Program.from_torch_csv(42)
    assert str(info.value) == "from_torch_csv expects a file name or an open text file; got int"
    empty = tmp_path / "empty.csv"
    empty.write_text("\n\n")
    with pytest.raises(ParseError) as info:
        Program.from_torch_csv(empty)
    assert str(info.value) == f"the CSV {empty} holds no rows; torch's format has one row per rank"
    with open(empty, newline="") as fh:
        with pytest.raises(ParseError) as info:
            Program.from_torch_csv(fh)
    assert str(info.value) == f"the CSV {empty} holds no rows; torch's format has one row per rank"


def test_torch_csv_is_written_with_csv_line_endings(tmp_path):
    path = tmp_path / "out.csv"
    Program.from_text("0F0 0B0\n1F0 1B0").to_torch_csv(path)
    assert path.read_bytes() == b"0F0,0B0\r\n1F0,1B0\r\n"


def test_dict_programs_keep_their_shape_options():
    prog = Program.from_text({0: "0F0 0B0", 1: "1F0 1B0"}, microbatches=3, stages=2, name="mine")
    assert (prog.microbatches, prog.stages, prog.name) == (3, 2, "mine")
    assert Program.from_text({0: "0F0 0B0"}).name == "custom"
    loop = Program.from_text({0: "0F0 0F1 2F0 2F1 2B0 2B1 0B0 0B1", 1: "1F0 1F1 3F0 3F1 3B0 3B1 1B0 1B1"},
                             placement="loop")
    assert loop.placement.style == "loop"


def test_long_tokens_are_cut_in_messages():
    token = "0X" + "9" * 100
    with pytest.raises(ParseError) as info:
        Program.from_text(token)
    shown = "'" + token[:56] + "…'"
    assert str(info.value).startswith(f"line 1, column 1: {shown} is not an action")
    exactly = "0X" + "9" * 56  # its repr is 60 characters: shown whole
    with pytest.raises(ParseError) as info:
        Program.from_text(exactly)
    assert f"'{exactly}' is not an action" in str(info.value)
    one_more = exactly + "9"
    with pytest.raises(ParseError) as info:
        Program.from_text(one_more)
    assert f"'{one_more[:56]}…' is not an action" in str(info.value)


def test_unknown_schedule_names_suggest_only_when_close():
    with pytest.raises(ppviz.UnknownScheduleError) as info:
        Config(schedule="qqqqqq")
    assert str(info.value).startswith("schedule='qqqqqq': no schedule has this name; known schedules: gpipe, 1f1b")
    with pytest.raises(ppviz.UnknownScheduleError) as info:
        Config(schedule="1f1bb")
    assert "did you mean '1f1b'" in str(info.value)


def test_registry_table_columns_fit_their_widest_entry():
    lines = repr(ppviz.list_schedules()).splitlines()
    header = lines[0]
    assert header.startswith("name") and "  v  " in header
    # the description column starts where the aliases column ends, two spaces after its widest entry
    start = header.index("what it is")
    widest_alias = max(len(", ".join(s.aliases[:4])) for s in ppviz.list_schedules())
    assert start == header.index("aliases") + max(widest_alias, len("aliases")) + 2
    assert all(len(line) >= start for line in lines)


def test_memory_before_the_start_is_zero():
    res = simulate(Config(devices=2, microbatches=2, params=0.5))
    assert res.memory.at(-0.5).tolist() == [0.0, 0.0]
    assert res.memory_at(-0.5).tolist() == [0.5, 0.5]


def test_the_old_listing_call_warns_and_still_lists():
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = ppviz.schedules()
    assert [w.category for w in caught] == [DeprecationWarning]
    assert caught[0].filename == __file__  # the warning points at the caller
    assert str(caught[0].message) == ("ppviz.schedules() is deprecated: call ppviz.list_schedules(); ppviz.schedules "
                                      "is now the package of schedule families")
    assert table.names() == ppviz.list_schedules().names()


def test_result_exports_write_their_formats(tmp_path):
    res = simulate(Config(devices=2, microbatches=2))
    html = res.to_html(tmp_path / "a.html", theme="dark")
    assert html == str(tmp_path / "a.html")
    page = (tmp_path / "a.html").read_text()
    assert page.startswith("<!doctype html>") and '"dark"' in page
    with pytest.raises(ConfigError, match="theme"):
        res.to_html(tmp_path / "b.html", theme="blue")
    assert not (tmp_path / "b.html").exists()
    svg = res.to_svg(tmp_path / "a.svg", width=400)
    assert svg == str(tmp_path / "a.svg") and (tmp_path / "a.svg").read_text().startswith("<svg")
    png = res.to_png(tmp_path / "a.png", scale=1)
    assert png == str(tmp_path / "a.png") and (tmp_path / "a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_budget_refusals_name_the_value(monkeypatch):
    try:
        assert ppviz.set_budget(1) == 1
        with pytest.raises(ConfigError) as info:
            ppviz.set_budget(0)
        assert str(info.value) == "max_ops=0 is not accepted; give a whole number >= 1, or None for the default"
    finally:
        ppviz.set_budget(None)


def test_an_empty_rank_between_ranks_carries_its_device():
    with pytest.raises(ParseError) as info:
        Program.from_torch_csv(io.StringIO("0F0,0B0\n\n\n3F0,3B0\n"))
    assert str(info.value).startswith("line 2: rank 1 has no actions")
    assert info.value.device == 1


def test_index_limits_are_exact_and_refusals_carry_their_place():
    from ppviz.core.program import MAX_MICROBATCH, MAX_STAGE

    # the largest microbatch index parses (the program is then refused for what it lacks)
    for token in (f"0F{MAX_MICROBATCH}", "0F1000000000"):
        with pytest.raises(ProgramError) as info:
            Program.from_text(f"{token} 0B0").validate()
        assert not isinstance(info.value, ParseError)
    for token in (f"0F{MAX_MICROBATCH + 1}", f"{MAX_STAGE + 1}F0", "0F" + "9" * 11):
        with pytest.raises(ParseError) as info:
            Program.from_torch({0: ["0F0", "0B0"], 1: ["1F0", token]})
        assert (info.value.device, info.value.position) == (1, 1)
        assert "has an index ppviz cannot hold" in str(info.value)
