import json
import os
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import ppviz
from ppviz import Config, Program, simulate
from ppviz.cli import main
from ppviz.widgets import standalone_html

ROOT = Path(__file__).resolve().parent.parent


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_run_prints_a_legible_80_column_gantt_and_metrics(capsys):
    code, out, err = run(capsys, "run", "1f1b", "-p", "4", "-m", "8")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert all(len(line) <= 80 for line in lines)
    rows = [line for line in lines if line.startswith("dev ")]
    assert len(rows) == 4
    # f = b = w = 1 with makespan 33 fits 2 columns per time unit: every microbatch label shows
    for mb in range(8):
        assert f"F{mb}" in rows[0] and f"B{mb}" in rows[0]
    assert "makespan         33   closed form 33" in out
    assert "bubble fraction  0.2727" in out


def test_exports_and_program_round_trip(tmp_path, capsys):
    trace, csv = tmp_path / "t.json", tmp_path / "p.csv"
    code, out, _ = run(capsys, "run", "zb-h1", "-p", "2", "-m", "3", "--trace", str(trace), "--csv", str(csv))
    assert code == 0 and f"wrote {trace}" in out
    assert json.loads(trace.read_text())["otherData"]["makespan"] == 10  # m(f+b+w) + (p−1)(f+b−w) = 9 + 1
    assert csv.read_text().splitlines()[1].startswith("1F0,1I0")
    code, out, _ = run(capsys, "run", "--program", str(csv))
    assert code == 0 and "makespan         10" in out


def test_page_and_picture_exports(tmp_path, capsys):
    html, svg, png = tmp_path / "g.html", tmp_path / "g.svg", tmp_path / "g.png"
    code, out, err = run(capsys, "run", "zb-v", "-p", "4", "-m", "8", "--comm", "0.5",
                         "--html", str(html), "--svg", str(svg), "--png", str(png))
    assert code == 0 and err == ""
    assert out.splitlines()[-3:] == [f"wrote {html}", f"wrote {svg}", f"wrote {png}"]
    res = simulate(Config(schedule="zb-v", devices=4, microbatches=8, comm=0.5))
    assert html.read_text() == standalone_html(res, theme="light")
    texts = ["".join(t.itertext()) for t in ET.parse(svg).getroot().iter("{http://www.w3.org/2000/svg}text")]
    assert "zb-v" in texts and "device 3" in texts
    assert any(t.startswith("p=4 · m=8 · v=2 · f=1 b=1 w=1 · comm=0.5") for t in texts)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">I", data[16:20])[0] > 1800  # 2x scale


def test_an_export_that_cannot_be_written_is_one_line(tmp_path, capsys):
    for flag in ("--html", "--svg", "--png", "--trace", "--csv"):
        target = tmp_path / "missing" / "g"
        code, out, err = run(capsys, "run", "1f1b", flag, str(target))
        # refused before any work: nothing printed first
        assert code == 2 and out == "" and err == f"ppviz: error: cannot write {target}: there is no folder {target.parent}\n"
    # a file that cannot be opened for another reason still gets one line
    (tmp_path / "dir").mkdir()
    code, _, err = run(capsys, "run", "1f1b", "--png", str(tmp_path / "dir"))
    assert code == 2 and err.count("\n") == 1 and err.startswith(f"ppviz: error: {tmp_path / 'dir'}")


def test_errors_are_one_line_with_non_zero_exit(capsys, tmp_path):
    for argv, fragment in [
        (("run", "zb-h3"), "'zb-h1'"),
        (("run", "1f1b", "-p", "0"), "devices=0"),
        (("run",), "name a schedule"),
        (("run", "--program", str(tmp_path / "missing.csv")), "No such file"),
        (("run", "1f1b", "--program", "x.csv"), "not both"),
    ]:
        code, out, err = run(capsys, *argv)
        assert code == 2 and out == ""
        assert err.startswith("ppviz: error: ") and fragment in err and err.count("\n") == 1


def test_list_shows_the_registry(capsys):
    code, out, _ = run(capsys, "list")
    assert code == 0 and "interleaved-1f1b" in out and "ZB1P" in out


def test_run_with_transfers_over_a_preset_writes_the_sends_and_receives(tmp_path, capsys):
    csv = tmp_path / "comms.csv"
    code, out, err = run(capsys, "run", "1f1b", "-p", "16", "-m", "16", "--time-unit", "ms", "--topology", "dgx-h100",
                         "--comm-bytes", "67108864", "--csv", str(csv))
    assert code == 0 and err == ""
    assert "transfers        480 of 64 MiB (30 GiB in all)" in out and "p2p blocking" in out
    assert "dgx-h100: 8 devices per node" in out
    first = csv.read_text().splitlines()[0].split(",")
    assert first[:3] == ["0F0", "0SEND_F0", "0F1"]
    code, _, err = run(capsys, "run", "1f1b", "--topology", "dgx-h100", "--comm-bytes", "1")
    assert code == 2 and "set time_unit" in err


def ppviz_process(*argv, **kw):
    """``ppviz ...`` as a real process (``python -m ppviz``) on this checkout."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen([sys.executable, "-m", "ppviz", *argv], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, **kw)


@pytest.mark.parametrize("argv", [("run", "1f1b", "-p", "64", "-m", "512"), ("list",)])
def test_a_closed_pipe_ends_quietly_with_success(argv):
    # `ppviz run 1f1b -p 64 -m 512 | head -1`: the reader closes the pipe after one line
    proc = ppviz_process(*argv)
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0
    assert first and err == b""


def test_list_fits_100_columns_and_names_every_schedule(capsys):
    code, out, err = run(capsys, "list")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 100
    assert lines[0].split() == ["name", "v", "aliases", "what", "it", "is"]
    names = [line.split()[0] for line in lines[1:] if not line.startswith(" ")]
    assert names == [s.name for s in ppviz.list_schedules()]
    # a wrapped description reads back whole, its continuation lines under its column
    column = lines[0].index("what it is")
    zb_h2 = next(i for i, line in enumerate(lines) if line.startswith("zb-h2 "))
    text = [lines[zb_h2][column:]] + [line[column:] for line in lines[zb_h2 + 1:] if line.startswith(" " * column)]
    assert " ".join(text).startswith(ppviz.list_schedules()[5].summary)


def test_help_shows_examples_that_run(capsys, tmp_path, monkeypatch):
    for argv in (("--help",), ("run", "--help"), ("compare", "--help")):
        with pytest.raises(SystemExit) as info:
            main(list(argv))
        assert info.value.code == 0
        out = capsys.readouterr().out
        examples = [line.strip() for line in out[out.index("examples:"):].splitlines()[1:]]
        assert len(examples) >= 4
    # each example is a command, then (after two spaces or more) what it shows; each one runs
    monkeypatch.chdir(tmp_path)
    Program.from_text("0F0 0F1 0B0 0B1\n1F0 1B0 1F1 1B1").to_torch_csv("my_schedule.csv")
    for example in examples:
        command = example.split("  ")[0].split()
        assert command[0] == "ppviz"
        code, out, err = run(capsys, *command[1:])
        assert code == 0 and err == "" and out, example


def test_the_text_gantt_keeps_the_labels_that_fit(capsys):
    # f = 1.5: at whole columns per time unit a forward is 1.5 columns (half the labels lost);
    # filling the width gives it about three, and every op keeps its label
    code, out, _ = run(capsys, "run", "1f1b", "-p", "4", "-m", "8", "--f", "1.5")
    rows = [line for line in out.splitlines() if line.startswith("dev ")]
    for d, row in enumerate(rows):
        assert [f"F{mb}" in row for mb in range(8)] == [True] * 8, row
        assert [f"B{mb}" in row for mb in range(8)] == [True] * 8, row
        assert len(row) <= 80
    # one row per device however many there are, each labelled, within the width at every width
    res = simulate(Config(schedule="zb-h1", devices=12, microbatches=3, f=1234567.5))
    for width in (20, 21, 33, 80):
        lines = res.to_text(width).splitlines()
        assert [line.split()[:2] for line in lines[:12]] == [["dev", str(d)] for d in range(12)]
        assert max(len(line) for line in lines) <= width


@pytest.mark.parametrize("argv, fragment", [
    (("run", "1f1b", "-p", "1e9"), "give a whole number of devices"),
    (("run", "1f1b", "--f", "1e308"), "f=1e+308"),
    (("run", "1f1b", "--width", "100000"), "width=100000"),
    (("run", "1f1b", "-m", "99999999999"), "microbatches=99999999999"),
    (("run", "1f1b", "-m", "100000000"), "budget"),
    (("run", "--program", "{latin1}"), "not UTF-8 text"),
    (("run", "1f1b", "--bogus"), "unrecognized arguments: --bogus"),
    (("nope",), "invalid choice"),
])
def test_hostile_arguments_get_one_line_and_exit_code_2(tmp_path, argv, fragment):
    latin1 = tmp_path / "prog.txt"
    latin1.write_bytes("0F0 0B0 # café\n".encode("latin-1"))
    proc = ppviz_process(*(a.format(latin1=latin1) for a in argv))
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and out == b""
    assert err.count(b"\n") == 1 and b"error: " in err and fragment.encode() in err, err


# compare ------------------------------------------------------------------------------------

def table_rows(out: str) -> dict[str, list[str]]:
    """``ppviz compare``'s table as {schedule: cells}, in printed order."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("schedule "))
    rows = {}
    for line in lines[start + 1:]:
        if not line.strip():
            break
        name, v, *rest = line.split()
        rows[name] = [v, *rest]
    return rows


def test_compare_prints_each_schedules_numbers_beside_its_closed_form(capsys):
    names = ("1f1b", "zb-h1", "v-half", "v-min", "zb-v")
    code, out, err = run(capsys, "compare", *names, "-p", "8", "-m", "32", "--b", "1.5")
    assert code == 0 and err == ""
    rows = table_rows(out)
    results = {n: simulate(Config(schedule=n, devices=8, microbatches=32, b=1.5)) for n in names}
    # fastest first
    assert list(rows) == sorted(names, key=lambda n: (results[n].makespan, results[n].peak_memory.max()))
    for name, cells in rows.items():
        r, cf = results[name], results[name].closed_form
        simulated = [cell for cell in cells if not cell.startswith("(")]
        published = [cell.strip("()") for cell in cells if cell.startswith("(")]
        assert simulated == [f"{r.program.stages_per_device:g}", f"{r.makespan:.6g}", f"{r.bubble_fraction:.1%}",
                             f"{r.peak_activation.max():.4g}"]
        # the published figures, in brackets, only where their assumptions hold
        expected = [f"{cf.makespan:.6g}", f"{cf.bubble_fraction:.1%}"] if cf.applies else []
        if cf.applies and cf.peak_activation:
            expected.append(f"{max(cf.peak_activation):.4g}")
        assert published == expected, name
    assert any(results[n].closed_form.applies for n in names) and "v-min" in rows


def test_compare_all_runs_the_registry_and_says_what_refused_the_sizes(capsys, tmp_path):
    png = tmp_path / "all.png"
    code, out, err = run(capsys, "compare", "--all", "-p", "8", "-m", "12", "--sort", "memory", "--png", str(png))
    assert code == 0 and err == ""
    rows = table_rows(out)
    training = [s.name for s in ppviz.list_schedules() if s.builder is not None and not s.forward_only]
    skipped = [line.split(":")[0].strip() for line in out.splitlines() if line.startswith("  ") and ":" in line]
    assert sorted(rows) == sorted(set(training) - set(skipped)) and "inference" not in rows
    assert set(skipped) == {"dualpipe", "dualpipe-v", "dualpipe-v-unsplit", "chimera", "bitpipe"}  # need m >= 2p or m = kp
    assert f"skipped {len(skipped)} that refuse" in out
    peaks = [float([cell for cell in cells if not cell.startswith("(")][-1]) for cells in rows.values()]
    assert peaks == sorted(peaks)  # --sort memory
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"wrote {png}" in out


@pytest.mark.parametrize("argv, fragment", [
    (("compare",), "name two or more schedules"),
    (("compare", "1f1b", "--all"), "or give --all"),
    (("compare", "1f1b", "dualpipe", "-p", "4", "-m", "6"), "dualpipe needs at least 2p = 8 microbatches"),
    (("compare", "--all", "-m", "99999999999999"), "no schedule in the registry accepts"),
    (("compare", "1f1b", "zb-h1", "--sort", "speed"), "invalid choice: 'speed'"),
    (("compare", "1f1b", "zb-h1", "--png", "/nonexistent/dir/all.png"), "there is no folder /nonexistent/dir"),
])
def test_compare_refusals_are_one_line(capsys, argv, fragment):
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's own usage errors
        code = exc.code
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and fragment in err, err


def test_compare_gives_a_schedule_named_twice_one_row(capsys):
    code, out, _ = run(capsys, "compare", "1f1b", "Schedule1F1B", "zb-h1", "1F1B", "-p", "4", "-m", "8")
    assert code == 0 and list(table_rows(out)) == ["zb-h1", "1f1b"]
    assert out.startswith("2 schedules at p=4 m=8")
