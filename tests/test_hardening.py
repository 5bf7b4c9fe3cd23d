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
