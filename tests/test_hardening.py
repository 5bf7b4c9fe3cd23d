"""Regression tests for the edges a user reaches: each failed before its fix (a silent wrong
answer, a traceback that is not ppviz's, a hang or a runaway allocation)."""

import io
import json
import math
import time

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
    for bad in (3, 2.5, b"run.json"):
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
    assert Program.from_torch_csv(path).to_actions() == {0: ["0F0", "0B0"], 1: ["1F0", "1B0"]}
    # a non-breaking space (two UTF-8 bytes) around a cell is white space, as an editor shows it
    path.write_bytes("0F0,\u00a00B0\n1F0,1B0\n".encode("utf-8"))
    assert Program.from_torch_csv(path).to_actions()[0] == ["0F0", "0B0"]
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
    table = ppviz.list_schedules()
    lines = table.to_text().splitlines()  # unwrapped
    header = lines[0]
    assert header.startswith("name") and "  v  " in header
    # the description column starts where the aliases column ends, two spaces after its widest entry
    start = header.index("what it is")
    widest_alias = max(len(", ".join(s.aliases)) for s in table)
    assert start == header.index("aliases") + max(widest_alias, len("aliases")) + 2
    assert all(len(line) >= start for line in lines if line.split()[0] in table.names())
    # its repr wraps to 100 columns, as ppviz list prints it
    assert repr(table) == table.to_text(width=100) and max(map(len, repr(table).splitlines())) <= 100


def test_memory_before_the_start_is_zero():
    res = simulate(Config(devices=2, microbatches=2, params=0.5))
    assert res.memory.at(-0.5).tolist() == [0.0, 0.0]
    assert res.memory_at(-0.5).tolist() == [0.5, 0.5]


def test_the_package_of_families_is_not_a_call():
    # ppviz.schedules() was a shim for a release that never happened
    assert not callable(ppviz.schedules) and "schedules" not in ppviz.__all__


def test_result_exports_write_their_formats(tmp_path):
    res = simulate(Config(devices=2, microbatches=2))
    assert res.to_html(tmp_path / "a.html", theme="dark") is None  # written: pandas' rule
    page = (tmp_path / "a.html").read_text()
    assert page == res.to_html(theme="dark")  # no path: the text itself
    assert page.startswith("<!doctype html>") and '"dark"' in page
    with pytest.raises(ConfigError, match="theme"):
        res.to_html(tmp_path / "b.html", theme="blue")
    assert not (tmp_path / "b.html").exists()
    assert res.to_svg(tmp_path / "a.svg", width=400) is None
    assert (tmp_path / "a.svg").read_text() == res.to_svg(width=400) and res.to_svg().startswith("<svg")
    assert res.to_png(tmp_path / "a.png", scale=1) is None
    assert (tmp_path / "a.png").read_bytes() == res.to_png(scale=1) and res.to_png()[:8] == b"\x89PNG\r\n\x1a\n"
    assert res.to_torch_csv(tmp_path / "a.csv") is None
    assert (tmp_path / "a.csv").read_text().splitlines() == ["0F0,0F1,0B0,0B1", "1F0,1B0,1F1,1B1"]
    assert res.to_torch_csv() == (tmp_path / "a.csv").read_bytes().decode()  # torch's \r\n rows
    assert res.to_text_gantt(tmp_path / "a.txt") is None and (tmp_path / "a.txt").read_text() == res.to_text_gantt()
    assert res.program.to_text(tmp_path / "p.txt") is None and (tmp_path / "p.txt").read_text() == res.program.to_text()


def test_an_export_into_a_folder_or_a_missing_folder_is_a_config_error(tmp_path):
    # before: a bare IsADirectoryError / FileNotFoundError from open, after the export was rendered
    res = simulate(Config(devices=2, microbatches=2))
    exports = (res.to_html, res.to_svg, res.to_chrome_trace, res.to_torch_csv)
    for export in exports:
        with pytest.raises(ConfigError) as info:
            export(tmp_path)
        assert str(info.value) == f"path={str(tmp_path)!r}: it is a folder; give a file name (a file inside it, for one)"
        missing = tmp_path / "no such folder" / "run.out"
        with pytest.raises(ConfigError) as info:
            export(missing)
        assert f"there is no folder {missing.parent}; create the folder first" in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_budget_refusals_name_the_value(monkeypatch):
    try:
        assert ppviz.set_budget(1) == 1
        with pytest.raises(ConfigError) as info:
            ppviz.set_budget(0)
        assert str(info.value) == "max_ops=0 is not accepted; give a whole number >= 1, or None for the default"
    finally:
        ppviz.set_budget(None)


def test_many_devices_are_refused_by_what_they_cost_not_only_by_their_ops(monkeypatch):
    from ppviz.core import budget

    monkeypatch.delenv("PPVIZ_MAX_OPS", raising=False)
    # 1F1B at p = 500,000, m = 4 is 4M ops, within the budget, but each device costs about 32 ops
    # more: it took 28 s (its build alone 7 s)
    with pytest.raises(ConfigError) as info:
        Config(devices=500_000, microbatches=4)
    assert str(info.value) == (
        "devices=500000: each device costs about as much as 32 ops on its own, so 500,000 devices are over the "
        "budget of 4,000,000 ops; use at most 125,000 devices, or raise the budget with ppviz.set_budget(max_ops=...)")
    assert Config(devices=125_000, microbatches=4).devices == 125_000
    try:
        ppviz.set_budget(8 * budget.DEVICE_OPS * 1000)  # the ops decide below the device floor
        assert Config(devices=budget.MIN_DEVICES, microbatches=1).devices == 1024
    finally:
        ppviz.set_budget(None)


def test_a_refusal_for_size_names_the_segments_apart_from_the_microbatches(monkeypatch):
    monkeypatch.delenv("PPVIZ_MAX_OPS", raising=False)
    # it printed m·k as m ("m=800000000" for m = 8 in 10^8 segments)
    with pytest.raises(ConfigError) as info:
        Config(schedule="seq1f1b", microbatches=8, segments=10**8)
    assert str(info.value).startswith("size='p=4, v=1, m=8, segments=100000000': too large to simulate here; that "
                                      "is about 6,400,000,000 ops, over the budget of 4,000,000; use fewer devices, "
                                      "stages or microbatches or segments")


def test_v_half_and_v_min_count_their_construction_grid_against_the_budget():
    from ppviz.core.registry import lookup as get_spec
    from ppviz.schedules import v_shape

    # the construction lays out p × (its block's span + 6 per further microbatch) slots: at
    # p = 20,000, m = 8 that is 2.4G (tens of GB) for 960,000 ops
    for name, block in (("v-half", v_shape._block_v_half), ("v-min", v_shape._block_v_min)):
        for p, m in ((1, 1), (4, 3), (7, 9), (12, 5)):
            pos = block(p)[:, :, None] + 6 * np.arange(m)
            assert get_spec(name).grid_cells(p, m) == p * (int(pos.max()) + 1)
        with pytest.raises(ConfigError, match=f"{name} lays its order out on a grid of about [0-9,]+ slots first"):
            Config(schedule=name, devices=20_000, microbatches=8)
    assert get_spec("v-half").grid_cells(20_000, 8) == 2_400_880_000
    assert Config(schedule="v-half", devices=512, microbatches=512).build().devices == 512


def test_zb_v_with_few_microbatches_does_not_loop_over_the_ones_it_drops():
    # torch builds ZB-V for max(2p − 1, m) microbatches and drops the extra ones; counting them one
    # by one took p² steps (p = 2,000, m = 8: 16 s; p = 4,000: about a minute)
    from .test_hostile import time_bound

    with time_bound(20):
        program = Config(schedule="zb-v", devices=4000, microbatches=8).build()
    assert len(program) == 6 * 4000 * 8


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
            Program.from_actions({0: ["0F0", "0B0"], 1: ["1F0", token]})
        assert (info.value.device, info.value.position) == (1, 1)
        assert "has an index ppviz cannot hold" in str(info.value)


@pytest.mark.parametrize("field", ["stages", "microbatches"])
def test_a_shape_given_beyond_what_ppviz_holds_is_refused_before_anything_is_built(field):
    from ppviz.core.program import MAX_MICROBATCH, MAX_STAGE

    most = {"stages": MAX_STAGE, "microbatches": MAX_MICROBATCH}[field] + 1
    # stages=10**9 once built a placement of 10**9 stages (25 s, 16 GB) before finding it unused
    for given in (most + 1, 10**9 if field == "stages" else 10**12, 2**63):
        with pytest.raises(ProgramError, match=f"{field}={given}.*from 1 to {most}"):
            Program.from_text("0F0 0B0", **{field: given})
    assert Program.from_text("0F0 0B0", microbatches=3).microbatches == 3


def test_a_pair_whose_cost_overflows_a_float_is_refused_by_name():
    # an F&B pair costs fb·(its stage's f + b)/(f + b + w): here 1e200·(1e200 + 1)/3, beyond a float
    config = Config(schedule="dualpipe", devices=4, microbatches=8, f=1.0, b=1.0, w=1.0, fb=1e200,
                    stage_costs={0: {"f": 1e200}})
    with np.errstate(over="ignore"), pytest.raises(ConfigError) as info:
        simulate(config)
    assert info.value.field == "costs"
    assert str(info.value).endswith("give smaller times: summed over this run they overflow a float")


def test_a_program_naming_far_more_pairs_than_it_has_ops_is_refused_without_counting_them():
    # 1024 stages and microbatch indices up to 2047 (a typo's 0F2047) in 1025 ops: ~2 million
    # (stage, microbatch) pairs, which would need 64 MiB of counters to check one by one
    import tracemalloc

    program = Program.from_text("device 0: " + " ".join(f"{s}F0" for s in range(1024)) + " 0F2047")
    tracemalloc.start()
    try:
        with pytest.raises(ProgramError) as info:
            program.validate()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(info.value) == ("stage 0 microbatch 1 is never forwarded: no 0F1 on any device; the actions name stages "
                               "0..1023 and microbatches 0..2047, so every one of those 1024×2048 pairs needs an F and "
                               "a backward (4194304 ops; the program has 1025)")
    assert peak < 16 * 2**20


def test_the_cli_shows_a_program_files_escape_sequences_instead_of_running_them(tmp_path, capsys):
    # the summary's header is the --program file's name; the text Gantt and the summary pass
    # through the same escaping as the "wrote" lines
    path = tmp_path / "evil\x1b[31mred.txt"
    path.write_text("0F0 0B0\n")
    assert main(["run", "--program", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "evil\\x1b[31mred.txt: p=1 m=1" in out


@pytest.mark.parametrize("call, words", [
    # a row per device: at p = 2000 vl-convert's V8 ran out of memory and killed the process (70 s)
    (lambda: ppviz.charts.memory_curve_chart(Config(devices=513, microbatches=1)), "devices=513: memory_curve_chart"),
    (lambda: ppviz.show(Config(), theme="blue"), "theme='blue'"),  # was traitlets' TraitError
    (lambda: ppviz.compare(Config(), schedules=["1f1b", "gpipe"], devices=None), "devices=None"),  # TypeError
    (lambda: ppviz.compare([Config(), Config()], metric=[]), "metric=[]"),  # unhashable TypeError
    (lambda: ppviz.charts.gantt_chart(Config(), theme=[]), "theme=[]"),
    (lambda: ppviz.charts.widget(0), "chart=0"),  # TraitError
    (lambda: ppviz.charts.to_svg({}), "Vega-Lite cannot render it"),  # vl-convert's plain ValueError
    (lambda: ppviz.charts.to_png({"mark": "point"}, scale=1e-300), "scale=1e-300"),  # a panic in vl-convert's thread
    (lambda: simulate(Config()).to_svg("x.svg", nope=1), "nope=1: not an option of the Gantt chart"),  # TypeError
])
def test_more_entry_points_refuse_by_name(call, words):
    with pytest.raises(PpvizError) as info:
        call()
    assert words in str(info.value)


def test_from_torch_refuses_sizes_torch_would_take_minutes_to_build(torch_pipelining):
    # torch builds a few thousand ops a second: microbatches=10**9 allocated 8 GB for minutes
    with pytest.raises(ConfigError) as info:
        ppviz.from_torch("GPipe", devices=2, microbatches=10**9)
    assert str(info.value).startswith("size='devices=2, microbatches=1000000000, stages_per_device=1': too large "
                                      "to build through torch here; that is up to 6,000,000,000 ops, over 40,000")
    assert len(ppviz.from_torch("Interleaved1F1B", devices=8, microbatches=256, stages_per_device=2)) == 8192


def test_controls_show_every_cost_the_viewer_runs():
    # the cost fields were bounded at 1e6: update(f=1000001) ran f = 1000001 while the control showed 1e6
    viewer = ppviz.show(Config(devices=2, microbatches=4))
    viewer.update(f=1_000_001.0)
    assert viewer.controls.fields["f"].value == viewer.config.f == 1_000_001.0
    assert ppviz.show(Config(f=5e6)).controls.fields["f"].value == 5e6


@pytest.mark.parametrize("call, start, accepted", [
    # integers too large for a float: float() raised OverflowError
    (lambda: ppviz.Link(10**400, bandwidth=1), "latency=1000", "at most 1e200"),
    (lambda: ppviz.Link(1, bandwidth=10**400), "bandwidth=1000", "at most 1e200"),
    (lambda: ppviz.Hardware(peak_tflops=10**400, memory_gib=80), "peak_tflops=1000", "at most 1e+200"),
    (lambda: ppviz.Hardware(peak_tflops=1000, memory_gib=80, host_gbps=-10**400), "host_gbps=-1000",
     "a finite number > 0"),
    (lambda: Config.from_model(ppviz.Transformer.preset("llama-3-8b"), ppviz.Hardware.preset("h100-sxm"),
                               devices=4, tensor_parallel=10**400), "tensor_parallel=1000",
     "from 1 to 1,000,000,000"),
    (lambda: ppviz.search(Config(devices=2, microbatches=4), max_memory=10**400), "max_memory=1000", "at most 1e+200"),
    (lambda: ppviz.frontier(Config(devices=2, microbatches=4), memory=[2, 10**400]), "memory=1000",
     "at most 1e+200"),
    # were TypeErrors (unhashable, not iterable, not a path)
    (lambda: ppviz.Topology.preset([]), "topology=[]", "use one of dgx-h100"),
    (lambda: Program.from_actions(3), "actions=3", "a dict {rank: [action, ...]}"),
    (lambda: simulate(Config(devices=2, microbatches=2)).to_torch_csv(3), "path=3", "give a file name"),
    (lambda: ppviz.Layout(3), "layout=3", "a tuple of strings"),
    # read silently wrong: a layout of one stage per character
    (lambda: ppviz.Layout("EtL"), "layout='EtL'", "Layout.parse reads a layout string"),
    # numpy's own ValueError
    (lambda: ppviz.analysis.frontier.pareto_front("x", [1.0]), "bubble='x'", "a list of numbers"),
])
def test_hostile_arguments_are_refused_by_name(call, start, accepted):
    with pytest.raises(ConfigError) as info:
        call()
    assert str(info.value).startswith(start) and accepted in info.value.accepted


def test_memory_at_refuses_what_is_not_a_time_and_takes_any_real_one():
    res = simulate(Config(devices=2, microbatches=2))
    # None was a TypeError from numpy, 'x' and nan gave zero memory
    for bad in (None, "x", math.nan, True):
        with pytest.raises(ConfigError, match=r"^t=.* give a time, a number in the run's time unit \(the run "
                                              r"spans 0 to 9\)$"):
            res.memory_at(bad)
    assert res.memory_at(np.float32(1.0)).tolist() == res.memory_at(1).tolist() == [2.0, 1.0]
    assert res.memory_at(10**400).tolist() == res.memory_at(math.inf).tolist()
    assert res.memory_at(-10**400).tolist() == [0.0, 0.0]


def test_a_carriage_return_inside_a_csv_line_is_a_parse_error_naming_where():
    # csv's own Error escaped: an open text file that does not end lines at \r hands it to csv whole
    with pytest.raises(ParseError) as info:
        Program.from_torch_csv(io.StringIO("0F0,0B0\n1F0,1B\r0\n"))
    assert str(info.value).startswith("line 2, column 7: a carriage return inside the line")


def test_a_gzip_trace_is_read_in_chunks_whatever_max_bytes_allows(tmp_path, monkeypatch):
    import gzip
    import tracemalloc

    from ppviz.io import trace_records

    # gz.read(max_bytes + 1) allocated max_bytes up front: a MemoryError for a 25 KB file
    tracemalloc.start()
    try:
        measured = ppviz.load_trace(ppviz.example_trace(), max_bytes=2**40)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert measured.devices == 4 and peak < 200 * 2**20
    data = b'{"traceEvents": []}' * 100
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(data))
    monkeypatch.setattr(trace_records, "_GZIP_CHUNK", 7)  # many chunks, the last one partial
    assert trace_records.read_bytes(str(path), max_bytes=len(data)) == data
    with pytest.raises(ParseError, match=f"more than {len(data) - 1:,} bytes"):
        trace_records.read_bytes(str(path), max_bytes=len(data) - 1)


def test_search_and_frontier_bound_their_effort_and_stages_per_device():
    config = Config(devices=2, microbatches=4)
    # effort=10**9 ran the frontier for minutes, stages_per_device=10**5 the search for 39 s
    efforts = []
    for call in (lambda: ppviz.search(config, 2, effort=10**9), lambda: ppviz.frontier(config, effort=10**9)):
        with pytest.raises(ConfigError) as info:
            call()
        efforts.append(str(info.value))
    with pytest.raises(ConfigError) as info:
        ppviz.search(config, 2, stages_per_device=257)
    from ppviz.analysis.search import MAX_EFFORT, MAX_STAGES_PER_DEVICE

    assert all(text.startswith(f"effort=1000000000 is not accepted; give a whole number from 0 to {MAX_EFFORT:,}")
               for text in efforts)
    assert MAX_STAGES_PER_DEVICE == 256 and "give a whole number from 1 to 256, or None" in str(info.value)
    assert ppviz.search(config, 2, effort=MAX_EFFORT).max_memory == 2


def test_search_and_frontier_refuse_runs_over_their_size_limit_before_any_work():
    from ppviz.analysis.search import MAX_SEARCH_WORK, search_work

    # p = 2, m = 40,000 searched for 44 s; p = 64, m = 1,041 (within the old limit of 3 · p · m =
    # 200,000 ops) for minutes: each of its some 270 candidates runs over all the ops
    import pandas  # noqa: F401  (imports, which take seconds on a loaded machine, are not the work timed)

    search, frontier = ppviz.search, ppviz.frontier
    for p in (2, 64):
        most = max(m for m in range(1, 40_000) if search_work(p, m) <= MAX_SEARCH_WORK)
        too_big = Config(devices=p, microbatches=most + 1)
        # a frontier runs a search per limit: the limit holds for all of them together
        fewer = max(m for m in range(1, most + 1) if 3 * search_work(p, m) <= MAX_SEARCH_WORK)
        for call, most_here, text in ((lambda: search(too_big, 2), most, ""),
                                      (lambda: frontier(too_big, memory=[2, 3, 4]), fewer, " for 3 limits")):
            started = time.perf_counter()
            with pytest.raises(ConfigError) as info:
                call()
            assert time.perf_counter() - started < 1.0  # refused before simulating anything
            assert f"give at most {most_here:,} microbatches at p = {p}{text}" in str(info.value)
            assert f"over the limit of {MAX_SEARCH_WORK:,}" in str(info.value)
    # asked for many stages per device, the library's runs have that many times the ops
    with pytest.raises(ConfigError, match=r"at most \d[\d,]* microbatches at p = 8, v = 64"):
        search(Config(devices=8, microbatches=300), 8, stages_per_device=64)
    assert ppviz.search(Config(devices=2, microbatches=most // 100), 2).max_memory == 2
    # the size budget scales it: a machine that simulates twice the ops searches twice the work
    from ppviz.analysis.search import checked_size
    from ppviz.core.budget import DEFAULT_MAX_OPS

    over = Config(devices=64, microbatches=288)
    with pytest.raises(ConfigError, match=r"ppviz\.set_budget\(max_ops=\.\.\.\), which scales this limit too"):
        checked_size(over)
    try:
        ppviz.set_budget(max_ops=2 * DEFAULT_MAX_OPS)
        assert checked_size(over) is over
    finally:
        ppviz.set_budget(None)


def test_a_loose_limit_adds_no_candidate_per_microbatch():
    """GPipe in waves of k was a candidate for every k the limit held, up to m: at p = 2,
    m = 5,000 and a limit of 5,000, a search of 30,000 ops ran for minutes. A limit that holds p
    activations holds 1F1B, so waves stop at p; and capped ZB-H1 orders whose warm-up alone is
    over the limit are not built."""
    found = ppviz.search(Config(devices=4, microbatches=400), 400, progress=False)
    waves = sorted(int(c.name.split()[-1]) for c in found.candidates if c.name.startswith("GPipe in waves of"))
    assert waves == [2, 3, 4]  # were 2 … 400: 429 candidates
    assert len(found.candidates) < 60
    from ppviz.analysis.capped import capped_orders
    from ppviz.analysis.orders import Problem
    from ppviz.core.placement import Placement

    config = Config(devices=8, microbatches=16, schedule="custom")
    problem = Problem(config, Placement.contiguous(8, 1))
    names = [name for name, _ in capped_orders(problem, 3)]
    # a cap c holds c + 1 activations on rank 0: caps 0, 1 and 2 fit a limit of 3
    assert {name.split(" in flight")[0] for name in names} == {f"capped ZB-H1 (≤ {k}" for k in (1, 2, 3)}
    every = [name for name, _ in capped_orders(problem, 100)]
    assert len(every) == 2 * 7 and len(set(every)) == len(every)


def test_search_starts_from_a_library_schedule_a_rounding_error_over_the_limit():
    # interleaved-zb at v = 10 peaks at 2.0000000000000004: it fits within the search's slack,
    # and the local search refused it as a start with a plain ValueError
    found = ppviz.search(Config(devices=2, microbatches=4), 2, stages_per_device=10)
    assert found.peak_activation.max() <= 2 + 1e-9 and found.config.stages_per_device == 10


def test_sweep_refuses_more_jobs_than_it_allows_before_starting_any(monkeypatch):
    import os

    import joblib

    def started(*args, **kwargs):
        raise AssertionError("worker processes were started")

    # n_jobs=40 started 42 processes on 2 cores, and n_jobs=10**9 had no bound
    monkeypatch.setattr(joblib, "Parallel", started)
    most = 4 * (os.cpu_count() or 1)
    for n_jobs in (10**9, most + 1):
        with pytest.raises(ConfigError, match=f"^n_jobs={n_jobs} is not accepted; give a whole number from 1 to "
                                              f"{most} "):
            ppviz.sweep({"devices": [2, 4]}, n_jobs=n_jobs, progress=False)


def test_a_long_search_says_what_it_is_doing(capsys):
    from ppviz.analysis.search import PROGRESS_FROM_WORK, search_work

    small = Config(devices=4, microbatches=8)
    ppviz.search(small, 3)
    assert "ppviz.search" not in capsys.readouterr().err  # a fraction of a second: no bar
    found = ppviz.search(small, 3, progress=True)
    bar = capsys.readouterr().err
    # library schedules, placements and local searches, counted to the end
    assert "ppviz.search" in bar and "100%" in bar and found.peak_activation.max() <= 3
    # the default shows it from seconds of work on
    assert search_work(8, 1024) >= PROGRESS_FROM_WORK > search_work(4, 8)
    with pytest.raises(ConfigError, match="progress='yes'"):
        ppviz.search(small, 3, progress="yes")
