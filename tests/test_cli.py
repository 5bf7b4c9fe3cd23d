import json
import os
import re
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import ppviz
import ppviz.io.text_gantt as text_gantt_module
from ppviz import Config, Program, simulate
from ppviz.cli import main
from ppviz.core.numbers import number, share
from ppviz.core.result import number_text
from ppviz.io.text_gantt import text_gantt
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
    assert "bubble fraction  27.3 %   closed form 27.3 %" in out


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
        assert code == 2 and out == "" and \
            err == (f"ppviz: error: {flag} {target}: there is no folder {target.parent}; create the folder first, "
                    "or write to an existing one\n")


@pytest.mark.parametrize("flag, ending", [("--html", ".html"), ("--svg", ".svg"), ("--png", ".png"),
                                          ("--trace", ".json"), ("--csv", ".csv")])
def test_a_folder_given_as_an_export_is_refused_before_any_work_naming_the_option(tmp_path, capsys, flag, ending):
    folder = tmp_path / "adir"
    folder.mkdir()
    code, out, err = run(capsys, "run", "1f1b", flag, str(folder))
    assert code == 2 and out == ""
    assert err == f"ppviz: error: {flag} {folder}: it is a folder; give a file name (e.g. {folder / ('run' + ending)})\n"


@pytest.mark.parametrize("argv, message", [
    (("run", "1f1b", "--png", "x.svg"),
     "--png x.svg: --png writes PNG, not .svg; give a name ending in .png (or no ending), or use --svg for SVG"),
    (("run", "1f1b", "--svg", "x.PNG"),
     "--svg x.PNG: --svg writes SVG, not .png; give a name ending in .svg (or no ending), or use --png for PNG"),
    (("run", "1f1b", "--trace", "t.csv"), "--trace t.csv: --trace writes a Chrome trace (JSON), not .csv; give a name "
                                          "ending in .json (or no ending), or use --csv for CSV"),
    (("run", "1f1b", "--csv", "p.json"), "--csv p.json: --csv writes CSV, not .json; give a name ending in .csv "
                                         "(or no ending), or use --trace for a Chrome trace (JSON)"),
    (("run", "1f1b", "--html", "page.pdf"),
     "--html page.pdf: --html writes HTML, not .pdf; give a name ending in .html or .htm (or no ending)"),
    # compare has no --html: the advice names only its own options
    (("compare", "1f1b", "zb-h1", "--png", "c.html"),
     "--png c.html: --png writes PNG, not .html; give a name ending in .png (or no ending)"),
    (("run", "1f1b", "--png", ""), "--png needs a file name, e.g. --png run.png; got an empty one"),
    (("compare", "1f1b", "zb-h1", "--svg", ""), "--svg needs a file name, e.g. --svg run.svg; got an empty one"),
])
def test_an_export_named_for_another_format_or_not_named_is_refused(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *argv)
    assert (code, out, err) == (2, "", f"ppviz: error: {message}\n")
    assert list(tmp_path.iterdir()) == []


def test_an_export_without_an_ending_or_with_its_own_is_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "run", "1f1b", "-p", "2", "-m", "2", "--png", "picture", "--html", "page.htm",
                       "--trace", "T.JSON")
    assert code == 0 and out.splitlines()[-3:] == ["wrote T.JSON", "wrote page.htm", "wrote picture"]
    assert Path("picture").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_errors_are_one_line_with_non_zero_exit(capsys, tmp_path):
    for argv, fragment in [
        (("run", "zb-h3"), "'zb-h1'"),
        (("run", "1f1b", "-p", "0"), "-p 0 is not accepted"),
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
    assert err == ("ppviz: error: --time-unit not given: the topology 'dgx-h100' is in seconds and bytes per second, "
                   "and f, b, w have no unit; set --time-unit (one of s, ms, us, µs, μs, ns) to use the topology "
                   "'dgx-h100': ppviz converts its latency and bandwidth to the unit of f, b and w\n") and code == 2


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
    for argv in (("--help",), ("run", "--help"), ("compare", "--help"), ("search", "--help"), ("plan", "--help")):
        with pytest.raises(SystemExit) as info:
            main(list(argv))
        assert info.value.code == 0
        out = capsys.readouterr().out
        examples = [line.strip() for line in out[out.index("examples:"):].splitlines()[1:]]
        assert len(examples) >= 4
        assert max(map(len, out.splitlines())) <= 100, argv  # was 267: descriptions unwrapped
    # each example is a command, then (after two spaces or more) what it shows; each one runs
    monkeypatch.chdir(tmp_path)
    Program.from_text("0F0 0F1 0B0 0B1\n1F0 1B0 1F1 1B1").to_torch_csv("my_schedule.csv")
    for example in examples:
        command = example.split("  ")[0].split()
        assert command[0] == "ppviz"
        code, out, err = run(capsys, *command[1:])
        assert code == 0 and err == "" and out, example
        # no line of what an example prints is wider than 100 columns (search's were 140)
        assert max(map(len, out.splitlines())) <= 100, example


def test_search_prints_what_ppviz_search_finds_with_the_candidates_it_ranked(capsys, tmp_path):
    code, out, err = run(capsys, "search", "-p", "4", "-m", "8", "--b", "1.2", "--w", "0.8", "--max-memory", "3",
                         "--html", str(tmp_path / "found.html"))
    assert code == 0 and err == ""
    found = ppviz.search(Config(devices=4, microbatches=8, b=1.2, w=0.8), 3)
    assert f"search ≤ 3: p=4 m=8 v={found.config.stages_per_device}" in out
    assert f"makespan         {number_text(found.makespan)}" in out
    assert len([line for line in out.splitlines() if line.startswith("dev ")]) == 4
    table = out[out.index(f"{len(found.candidates)} candidates, "):].splitlines()
    assert table[0] == (f"{len(found.candidates)} candidates, {sum(c.fits for c in found.candidates)} fit; the "
                        "fastest of each kind, up to 5 that fit and 5 that do not:")
    # each column says its unit under its name: the run's time unit, activation units without bytes
    assert table[1].split() == ["candidate", "makespan", "peak", "activation", "fits"]
    assert table[2].split() == ["(time", "units)", "(activations)"]
    rows = [line.split() for line in table[3:] if line.strip() and not line.startswith("wrote")]
    # fitting first, fastest first; every one that fits is within the limit
    fits = [row[-1] for row in rows]
    assert fits == sorted(fits, key=lambda x: x != "yes") and "yes" in fits and "no" in fits
    assert all(float(row[-2]) <= 3 for row in rows if row[-1] == "yes")
    assert (tmp_path / "found.html").stat().st_size > 0 and f"wrote {tmp_path / 'found.html'}" in out


def test_search_with_a_model_fits_the_device_and_takes_sizes_in_bytes(capsys):
    code, out, err = run(capsys, "search", "-p", "4", "-m", "8", "--model", "llama-3-8b")
    assert code == 0 and err == ""
    assert "search, fits 80 GiB: p=4 m=8 v=1" in out and "memory capacity  80 GiB per device: fits" in out
    chimera = next(line for line in out.splitlines() if line.startswith("chimera "))
    assert chimera.split()[-2:] == ["97.2", "no"]  # two replicas: the parameters twice, over 80 GiB
    code, out, err = run(capsys, "search", "-p", "4", "-m", "8", "--model", "llama-3-8b", "-v", "2",
                         "--max-memory", "30GiB")
    assert code == 0 and "search ≤ 30 GiB: p=4 m=8 v=2" in out


def test_search_with_a_model_speaks_ms_and_gib_in_100_columns_without_internal_names(capsys):
    # was 140 columns: "zb-auto (allow_bubble_before_first_b+prioritize_b+no_bubble_greedy; limit 3.95564)",
    # a makespan without its unit and peaks headed (GiB) beside a summary in activation units
    code, out, err = run(capsys, "search", "--model", "llama-3-8b", "-p", "4", "-m", "16")
    assert code == 0 and err == "" and max(map(len, out.splitlines())) <= 100
    for internal in ("zb-auto", "allow_bubble", "prioritize_b", "no_bubble_greedy", "limit ", "warm-up ≤", "flags"):
        assert internal not in out
    table = out.splitlines()[out.splitlines().index(next(line for line in out.splitlines()
                                                          if line.startswith("candidate "))):]
    assert table[0].split() == ["candidate", "makespan", "peak", "activation", "peak", "memory", "fits"]
    assert table[1].split() == ["(ms)", "(GiB)", "(GiB)"]
    found = ppviz.search(Config.from_model(ppviz.Transformer.preset("llama-3-8b"), ppviz.Hardware.preset("h100-sxm"),
                                           devices=4, microbatches=16), progress=False)
    gib = found.config.activation_bytes / 2**30
    by_name = {c.name: c for c in found.candidates}
    for line in table[2:]:
        if not line.strip():
            break
        name, makespan, activation, memory, fits = re.fullmatch(r"(.+?)\s{2,}(\S+)\s+(\S+)\s+(\S+)\s+(yes|no)", line).groups()
        c = by_name[name]
        assert (makespan, activation, memory, fits) == (
            ppviz.core.numbers.number(c.makespan), ppviz.core.numbers.number(c.peak_activation * gib),
            ppviz.core.numbers.number(c.peak_memory * gib), "yes" if c.fits else "no")
    # the candidates are named for what they are, in the config's units
    names = [c.name for c in found.candidates]
    assert any(re.fullmatch(r"zero-bubble heuristic \(≤ [\d.]+ GiB, variant [1-8]\)", n) for n in names)
    assert any(re.fullmatch(r"capped ZB-H1 \(≤ \d+ in flight(, W's held back ≤ \d+)?\)", n) for n in names)
    assert "GPipe in waves of 2" in names and "one microbatch at a time" in names
    assert f"(best candidate {found.best_candidate.name}: " in repr(found)


@pytest.mark.parametrize("argv, message", [
    (["--max-memory", "30GiB"], "--max-memory '30GiB': a size in bytes needs the bytes of one activation unit, and "
                                "this config has none; give a number of activation units, or set the config's "
                                "--activation-bytes (--model does) to give sizes in bytes"),
    ([], "--max-memory not given: nothing to search under: no limit and no memory capacity"),
    (["--max-memory", "lots"], "--max-memory 'lots' is not accepted; give a number of activation units, or a size"),
    (["--max-memory", "0.5"], "--max-memory 0.5: no schedule fits: every one needs more on some device; give at "
                              "least 1, the least peak activation of any schedule here (one microbatch at a time)"),
    (["--max-memory", "3", "--group-size", "2"], "--group-size sets an interleaved schedule's microbatch groups; "
                                                 "the search builds its own orders: drop it"),
    (["--max-memory", "3", "--effort", "-1"], "--effort -1 is not accepted; give a whole number from 0 to"),
    (["--max-memory", "40000000000", "--model", "llama-3-8b"], "--max-memory 40000000000.0: more than a device's "
                                                                 "whole memory"),
])
def test_search_refusals_are_one_line_in_the_words_of_the_command_line(capsys, argv, message):
    code, out, err = run(capsys, "search", "-p", "4", "-m", "8", *argv)
    assert code == 2 and out == ""
    assert err.startswith(f"ppviz: error: {message}") and err.count("\n") == 1


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
        lines = res.to_text_gantt(width=width).splitlines()
        assert [line.split()[:2] for line in lines[:12]] == [["dev", str(d)] for d in range(12)]
        assert max(len(line) for line in lines) <= width


@pytest.mark.parametrize("argv, fragment", [
    (("run", "1f1b", "-p", "1e9"), "give a whole number of devices"),
    (("run", "1f1b", "--f", "1e308"), "--f 1e+308 is not accepted"),
    (("run", "1f1b", "--width", "100000"), "--width 100000 is not accepted"),
    (("run", "1f1b", "-m", "99999999999"), "-m 99999999999 is not accepted"),
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


@pytest.mark.parametrize("argv, suggestion", [
    (("run", "1f1b", "--microbatches", "8"), "unrecognized arguments: --microbatches 8; did you mean '-m'?"),
    (("run", "1f1b", "--devices=4"), "unrecognized arguments: --devices=4; did you mean '-p'?"),
    (("run", "interleaved-1f1b", "--stages-per-device", "2"), "did you mean '-v'?"),
    (("search", "--max-memory", "3", "--widht", "50"), "unrecognized arguments: --widht 50; did you mean '--width'?"),
    (("compare", "1f1b", "zb-h1", "--sortt", "memory"), "did you mean '--sort'?"),
    (("compare", "1f1b", "zb-h1", "--microbatch-group-size", "4"), "did you mean '--group-size'?"),
    (("run", "1f1b", "--tensor-paralel", "2"), "did you mean '--tensor-parallel'?"),
])
def test_an_unknown_option_gets_the_nearest_one_its_command_takes(capsys, argv, suggestion):
    with pytest.raises(SystemExit) as info:
        main(list(argv))
    err = capsys.readouterr().err
    assert info.value.code == 2 and suggestion in err and err.count("\n") == 1
    assert err.endswith(f"(see ppviz {argv[0]} --help)\n")


def test_an_option_like_no_other_gets_no_suggestion(capsys):
    for argv in (("run", "1f1b", "--bogus"), ("list", "--width", "80"), ("compare", "1f1b", "zb-h1", "--window", "0:")):
        with pytest.raises(SystemExit) as info:
            main(list(argv))
        err = capsys.readouterr().err
        assert info.value.code == 2 and "unrecognized arguments" in err and "did you mean" not in err, err


# compare ------------------------------------------------------------------------------------

def pct(x: float) -> str:
    """A share as a table row's cell reads: the formatter's "27.3 %" as one word."""
    return share(x).replace(" %", "%")


def table_rows(out: str) -> dict[str, list[str]]:
    """``ppviz compare``'s table as {schedule: cells}, in printed order."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("schedule "))
    rows = {}
    for line in lines[start + 1:]:
        if not line.strip():
            break
        # a share is "27.3 %": one cell
        name, v, *rest = line.replace(" %", "%").split()
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
        assert simulated == [f"{r.program.stages_per_device:g}", number(r.makespan), pct(r.bubble_fraction),
                             number(r.peak_activation.max())]
        # the published figures, in brackets, only where their assumptions hold
        expected = [number(cf.makespan), pct(cf.bubble_fraction)] if cf.applies else []
        if cf.applies and cf.peak_activation:
            expected.append(number(max(cf.peak_activation)))
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
    # need m >= 2p, m = kp, m = p or 2kp, m >= 3p − 1, or m >= ⌊3p/2⌋ + 1
    assert set(skipped) == {"dualpipe", "dualpipe-v", "dualpipe-v-unsplit", "chimera", "chimera-forward-doubling",
                            "chimera-backward-halving", "bitpipe", "stp", "interlaced"}
    assert f"skipped {len(skipped)} that refuse" in out
    peaks = [float([cell for cell in cells if not cell.startswith("(")][-1]) for cells in rows.values()]
    assert peaks == sorted(peaks)  # --sort memory
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"wrote {png}" in out


@pytest.mark.parametrize("argv, fragment", [
    (("compare",), "name two or more schedules to compare, or give --all for every one in the registry"),
    (("compare", "1f1b"), "name two or more schedules to compare, or give --all for every one in the registry; "
                          "got only 1f1b (ppviz run 1f1b shows one)"),
    (("compare", "1f1b", "--all"), "--all compares every schedule in the registry and takes no names; drop 1f1b or --all"),
    (("compare", "--all", "1f1b", "zb-h1"), "takes no names; drop 1f1b zb-h1 or --all"),
    (("compare", "1f1b", "Schedule1F1B", "1F1B"), "1f1b, Schedule1F1B, 1F1B: each names 1f1b; name two or more "
                                                   "different schedules to compare"),
    (("compare", "1f1b", "dualpipe", "-p", "4", "-m", "6"), "dualpipe needs at least 2p = 8 microbatches"),
    (("compare", "--all", "-m", "99999999999999"), "no schedule in the registry accepts"),
    (("compare", "1f1b", "zb-h1", "--sort", "speed"), "invalid choice: 'speed'"),
    (("compare", "1f1b", "zb-h1", "--png", "/nonexistent/dir/all.png"),
     "--png /nonexistent/dir/all.png: there is no folder /nonexistent/dir; create the folder first, or write to an "
     "existing one"),
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


def test_compare_takes_the_same_options_as_run_without_flags_named_as_keywords(capsys):
    code, out, err = run(capsys, "compare", "1f1b", "zb-h1", "-p", "0")
    assert (code, out, err) == (2, "", "ppviz: error: -p 0 is not accepted; give a whole number from 1 to 1,000,000,000\n")


def test_compare_memory_capacity_says_which_schedules_fit_and_by_how_much_they_do_not(capsys):
    # was no --memory-capacity in compare: "which of these fits my memory" needed Python
    names = ("1f1b", "zb-h1", "v-half", "v-min")
    code, out, err = run(capsys, "compare", *names, "-p", "8", "-m", "16", "--memory-capacity", "5", "--params", "0.5")
    assert code == 0 and err == ""
    header = next(line for line in out.splitlines() if line.startswith("schedule "))
    assert header.split()[-2:] == ["fits", "5"]
    cells = {name: row[-2:] for name, row in table_rows(out).items()}
    for name in names:
        res = simulate(Config(schedule=name, devices=8, microbatches=16, memory_capacity=5, params=0.5))
        if res.out_of_memory:
            assert cells[name] == ["no", f"(+{number(float(res.excess.max()))})"], name
        else:
            assert cells[name][-1] == "yes", name
    # both answers occur: v-min (peak 3 + 0.5) fits, 1f1b (8 + 0.5) is 3.5 over
    assert cells["v-min"][-1] == "yes" and cells["1f1b"] == ["no", "(+3.5)"]
    # without a capacity there is no such column
    code, out, _ = run(capsys, "compare", *names, "-p", "8", "-m", "16")
    assert "fits" not in out


def test_compare_segments_split_seq1f1b_and_leave_the_others_whole(capsys):
    code, out, err = run(capsys, "compare", "1f1b", "seq1f1b", "zb-h1", "-p", "4", "-m", "8", "--segments", "4")
    assert code == 0 and err == ""
    rows = table_rows(out)
    for name, segments in (("seq1f1b", 4), ("1f1b", 1), ("zb-h1", 1)):
        res = simulate(Config(schedule=name, devices=4, microbatches=8, segments=segments))
        assert rows[name][1] == number(res.makespan), name
    assert rows["seq1f1b"][1] == "26.3" and rows["1f1b"][1] == "33"  # seq1f1b k = 4 (26.25) against whole microbatches
    assert out.splitlines()[-2:] == [
        "--segments 4: seq1f1b splits each microbatch into 4 sequence segments; the",
        "  others run whole microbatches"]
    # asked of schedules none of which split microbatches, it would change nothing: refused
    code, out, err = run(capsys, "compare", "1f1b", "zb-h1", "--segments", "4")
    assert (code, out) == (2, "") and err == (
        "ppviz: error: --segments 4: none of 1f1b, zb-h1 splits microbatches into sequence segments; add seq1f1b, "
        "or drop --segments\n")


def test_compare_recompute_is_the_configs(capsys):
    code, out, err = run(capsys, "compare", "1f1b", "zb-h1", "-p", "4", "-m", "8", "--recompute", "full")
    assert code == 0 and err == ""
    rows = table_rows(out)
    for name in ("1f1b", "zb-h1"):
        res = simulate(Config(schedule=name, devices=4, microbatches=8, recompute="full"))
        plain = simulate(Config(schedule=name, devices=4, microbatches=8))
        # full recompute: the forwards run again, so no closed form applies and the peaks drop
        assert rows[name] == ["1", number(res.makespan), pct(res.bubble_fraction), number(res.peak_activation.max())]
        assert res.peak_activation.max() < plain.peak_activation.max()


def test_compare_heading_wraps_to_the_output_but_the_table_rows_stay_whole(capsys):
    # was a 92-column heading whatever the output
    code, out, _ = run(capsys, "compare", "--all", "-p", "16", "-m", "128", "--memory-capacity", "6")
    lines, rows = out.splitlines(), table_rows(out)
    assert code == 0 and len(rows) >= 10 and lines[:2] == [
        f"{len(rows)} schedules at p=16 m=128; in brackets: the published closed form where it",
        "  applies"]
    table = lines[lines.index("") + 1:lines.index("") + 2 + len(rows)]
    assert table[0].startswith("schedule ") and len(table[0]) > 80
    assert {len(line) for line in table} == {len(table[0])}  # every row whole, as wide as the header


# --model: costs from a model and a machine --------------------------------------------------------

def test_run_model_simulates_the_configs_from_model(capsys):
    # was no way to the model's costs from the command line: f, b, w had to be worked out by hand
    code, out, err = run(capsys, "run", "zb-v", "-p", "8", "-m", "32", "--model", "llama-3-70b",
                         "--tensor-parallel", "8", "--hardware", "a100-80gb", "--layout", "balanced")
    config = Config.from_model(ppviz.Transformer.preset("llama-3-70b"), ppviz.Hardware.preset("a100-80gb"),
                               schedule="zb-v", devices=8, microbatches=32, tensor_parallel=8, layout="balanced")
    res = simulate(config)
    assert code == 0 and err == ""
    assert " ".join(" ".join(summary_lines(out)).split()) == " ".join(res.summary().split())
    assert summary_lines(out)[0].startswith("zb-v: p=8 m=32 v=2 ") and " ms  (1,536 ops)" in summary_lines(out)[0]
    assert "memory capacity  80 GiB per device" in out
    # the default machine is an H100, and a topology carries the model's hidden states
    code, out, _ = run(capsys, "run", "1f1b", "--model", "llama-3-8b", "--topology", "dgx-h100")
    h100 = simulate(Config.from_model(ppviz.Transformer.preset("llama-3-8b"), ppviz.Hardware.preset("h100-sxm"),
                                      schedule="1f1b", devices=4, microbatches=8, topology="dgx-h100"))
    assert code == 0 and " ".join(out.split()).endswith(" ".join(h100.summary().split()))
    assert "transfers        48 of 64 MiB" in out


def test_compare_model_answers_which_schedules_fit_the_device_in_gib(capsys):
    code, out, err = run(capsys, "compare", "1f1b", "zb-h1", "v-half", "-p", "4", "-m", "16", "--model", "llama-3-8b")
    assert code == 0 and err == ""
    header = next(line for line in out.splitlines() if line.startswith("schedule "))
    assert header.split() == ["schedule", "v", "makespan", "(ms)", "step", "(ms)", "MFU", "bubble", "peak", "memory",
                              "(GiB)", "fits", "80", "GiB"]
    rows = table_rows(out)
    model, gpu = ppviz.Transformer.preset("llama-3-8b"), ppviz.Hardware.preset("h100-sxm")
    for name in ("1f1b", "zb-h1", "v-half"):
        res = simulate(Config.from_model(model, gpu, schedule=name, devices=4, microbatches=16))
        gib = float(res.peak_memory_bytes.max()) / 2**30
        fits = ["yes"] if res.fits.all() else ["no", f"(+{number(float(res.excess_bytes.max()) / 2**30)}", "GiB)"]
        assert rows[name][1:] == [number(res.makespan), number(res.step_time), *pct(res.mfu).split(),
                                  pct(res.bubble_fraction), number(gib), *fits], name
    # the answer a practitioner came for: v-half fits where zb-h1 does not, and its step is faster than 1f1b's
    assert rows["v-half"][-1] == "yes" and rows["zb-h1"][-3] == "no" and \
        float(rows["v-half"][2].replace(",", "")) < float(rows["1f1b"][2].replace(",", ""))
    assert out.splitlines()[-1] == f"2 of 3 fit the capacity; the fastest of them: v-half, step {rows['v-half'][2]} ms"


def test_compare_says_when_nothing_fits_which_run_comes_closest(capsys):
    code, out, _ = run(capsys, "compare", "1f1b", "zb-h1", "v-min", "-p", "4", "-m", "8", "--memory-capacity", "1.5")
    results = {n: simulate(Config(schedule=n, devices=4, microbatches=8, memory_capacity=1.5)) for n in ("1f1b", "zb-h1",
                                                                                                     "v-min")}
    assert all(r.out_of_memory for r in results.values())
    closest = min(results, key=lambda n: (results[n].excess.max(), results[n].makespan))
    assert closest == "v-min" and code == 0
    assert out.splitlines()[-1] == (f"none fits the capacity; the closest: v-min, over by "
                                    f"{number(results['v-min'].excess.max())} activation units")
    # without a capacity there is no verdict
    code, out, _ = run(capsys, "compare", "1f1b", "zb-h1")
    assert "fit the capacity" not in out and "none fits" not in out


@pytest.mark.parametrize("argv, message", [
    (("run", "1f1b", "--model", "llama-3-8b", "--f", "2", "--w-share", "0.5"),
     "--f and --w-share cannot be given with --model: the model and the hardware set them"),
    (("compare", "1f1b", "zb-h1", "--model", "llama-3-8b", "--memory-capacity", "3"),
     "--memory-capacity cannot be given with --model"),
    (("run", "1f1b", "--tensor-parallel", "2", "--zero-stage", "1"),
     "--tensor-parallel and --zero-stage describe the training of a model: give --model NAME too"),
    (("run", "1f1b", "--hardware", "h200"), "--hardware describes the training of a model: give --model NAME too"),
    (("run", "1f1b", "--model", "llama3"), "--model 'llama3': no preset has this name; did you mean 'llama-3-8b'"),
    (("run", "1f1b", "--model", "llama-3-8b", "--hardware", "H100"),
     "--hardware 'H100': no preset has this name; did you mean 'h100-sxm'"),
    (("run", "1f1b", "--model", "llama-3-8b", "--tensor-parallel", "3"),
     "--tensor-parallel 3: the model's 32 attention heads do not split evenly over 3 ranks; give a size that "
     "divides them: 1, 2, 4, 8"),
    (("run", "--program", "p.txt", "--model", "llama-3-8b"), "--model builds the costs of a registry schedule's"),
    (("run", "1f1b", "--model", "llama-3-8b", "--zero-stage", "3"), "argument --zero-stage: invalid choice: 3"),
    # the advice in the command line's words, not the Python call's
    (("run", "1f1b", "--model", "llama-3-8b", "-p", "6"),
     "32 layers do not split evenly over 6 stages (Megatron's default needs them to); give --layout balanced, or a "
     "layout string with --layout"),
])
def test_model_options_refused_in_one_line(capsys, tmp_path, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.txt").write_text("0F0 0B0\n")
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's own
        code = exc.code
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err, err


# the text Gantt ----------------------------------------------------------------------------------


def chart_rows(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("dev ")]


def test_a_column_several_ops_share_is_marked_and_the_width_that_shows_them_named():
    # one device: three forwards of 0.5 then three backwards of 3; at 20 columns a column is one
    # time unit, so F0 and F1 share the first column (marked ':'), F2 fills the middle of the next
    res = simulate(Program.from_text("0F0 0F1 0F2 0B0 0B1 0B2"), f=0.5, b=3, w=0)
    assert text_gantt(res, 20, window=(0, None)) == "\n".join([
        "dev 0 :FB0B1BBB2·",
        "      0      10.5",
        ": several ops in a",
        "column of 1 time",
        "unit; width=28 shows",
        "each op",
        "F forward",
        "B backward",
        "I input-grad",
        "W weight-grad",
        "# F&B pair  · idle"])
    # the width named shows each op, and then there is no note; the forwards touch, and one label
    # does not fit, so none is drawn (a bare F beside an F2 would read as part of F2)
    assert text_gantt(res, 28) == "\n".join([
        "dev 0 FFFB0BBBBB1BBBBB2BBBB",
        "      0                10.5",
        "F forward  B backward",
        "I input-grad  W weight-grad",
        "# F&B pair  · idle"])
    # the command line names its option and the unit of the times
    timed = simulate(Program.from_text("0F0 0F1 0F2 0B0 0B1 0B2"), f=0.5, b=3, w=0, time_unit="ms")
    cli = text_gantt_module.Hints("--width {}", "--window {}:{}", "--window 0:")
    assert text_gantt(timed, 24, window=(0, None), hints=cli).splitlines()[:5] == [
        "dev 0 :FB0B1BBB2·",
        "      0      10.5",
        ": several ops in a",
        "column of 1 ms;",
        "--width 28 shows each op"]  # the option and its value are not split


def test_each_devices_tail_follows_its_row_in_characters_of_its_own():
    # ZB-H1, p = 4, m = 8, unit costs: every device's last W runs 26..27; its reduction of 3 starts
    # with that W (overlapped) and runs on to 29, then the optimizer (2) and the gather (1.5):
    # the axis goes on to the step's end, 32.5, and the parts after the ops are drawn there
    step = ppviz.Step(reduce=(3,) * 4, optimizer=(2,) * 4, gather=(1.5,) * 4)
    res = simulate(Config(schedule="zb-h1", devices=4, microbatches=8, step=step))
    assert res.step_time == 32.5 and res.last_op_end.tolist() == [27.0] * 4
    assert text_gantt(res, 72).splitlines() == [
        "dev 0 F0F1F2F3······I0W0F4I1W1F5I2W2F6I3W3F7I4W4I5W5I6W6I7W7~~~~oooo^^^",
        "dev 1 ··F0F1F2····I0F3I1W0F4I2W1F5I3W2F6I4W3F7I5W4I6W5I7W6W7~~~~oooo^^^",
        "dev 2 ····F0F1··I0F2I1F3I2W0F4I3W1F5I4W2F6I5W3F7I6W4I7W5W6W7~~~~oooo^^^",
        "dev 3 ······F0I0F1I1F2I2F3I3W0F4I4W1F5I5W2F6I6W3F7I7W4W5W6W7~~~~oooo^^^",
        "      0                                                            32.5",
        "F forward  B backward  I input-grad  W weight-grad  # F&B pair  · idle",
        "~ DP reduce-scatter  o optimizer  ^ DP all-gather"]
    # without a gather the reduction is an all-reduce; without overlap it waits for the last op
    plain = simulate(Config(schedule="zb-h1", devices=4, microbatches=8,
                            step=ppviz.Step(reduce=(3,) * 4, optimizer=(2,) * 4, overlap_grad_reduce=False)))
    lines = text_gantt(plain, 72).splitlines()
    assert lines[0].endswith("W7~~~~~~oooo") and lines[-1] == "~ DP all-reduce  o optimizer"
    # coloured, each part in its own colours
    coloured = text_gantt(res, 72, color="truecolor")
    theme = ppviz.charts.style.THEMES["light"]
    for key in ("tailReduce", "tailOptimizer", "tailGather"):
        r, g, b = (int(theme[key][i:i + 2], 16) for i in (1, 3, 5))
        assert f"48;2;{r};{g};{b}m" in coloured
    # a window before the tail has none, nor its legend
    assert "~" not in text_gantt(res, 72, window=(0, 20))


def test_run_marks_merged_columns_instead_of_dropping_ops(capsys):
    # was `dev 7 ····FBFBFBFBB4B5BFBFBF...`: device 7 alternates F and B, but most forwards are
    # narrower than a column and were dropped, and two backwards looked labelled side by side
    code, out, _ = run(capsys, "run", "1f1b", "-p", "8", "-m", "32", "--window", "0:")
    lines = out.splitlines()
    assert code == 0 and lines[7:10] == [
        "dev 7 ····FBFBFBF::::::FBFBFBFBF::::::FBFBFBFBF::::::FBFBFBFBF::::::FB·········",
        "      0                                                                     117",
        ": several ops in a column of 1.6 time units; --width 124 shows each op"]
    code, out, _ = run(capsys, "run", "1f1b", "-p", "8", "-m", "32", "--width", "124")
    assert code == 0 and ": several ops" not in out
    assert chart_rows(out)[7] == ("dev 7 ·······FB0FB1FB2FB3FB4FB5FB6FB7FB8FB9FBBFBBFBBFBBFBBFBBFBBFBBFBBFBBFBBFBBFBBFBB"
                                  "FBBFBBFBBFBBFBBFBBFBBFBB··············")


def test_run_at_60_columns_shows_every_forward(capsys):
    # was: F1 and F5 of device 11 lost (`dev 11 ········FB0B1FBFBFB4B5...`)
    code, out, _ = run(capsys, "run", "1f1b", "-p", "12", "-m", "12", "--width", "60", "--window", "0:")
    assert code == 0 and out.splitlines()[:15] == [
        "dev 0  F::F::F::·················B·B·B2B3·B·B·B6B7·B·B·BBBB",
        "dev 1  ·::F::F::···············B::B·B·B·B4B5·B·B·B8B9·B·B··",
        "dev 2  ·F:F::F::··············BFBFB2B3·B·B·B6B7·B·B·BBBB···",
        "dev 3  ··FF::F::············B::BFBFB·B4B5·B·B·B8B9·B·B·····",
        "dev 4  ···F::F::···········BFBFB::BFB·B·B6B7·B·B·BBBB······",
        "dev 5  ····::F::·········B::BFBFBFB::B·B·B·B8B9·B·B········",
        "dev 6  ····F:F::········BFBFB::BFBFBFB6B7·B·B·BBBB·········",
        "dev 7  ·····FF::······B::BFBFBFB::BFBFB·B8B9·B·B···········",
        "dev 8  ······F::·····BFBFB::BFBFBFB::BFB·B·BBBB············",
        "dev 9  ·······::···B::BFBFBFB::BFBFBFB::B·B·B··············",
        "dev 10 ·······F:··BFBFB::BFBFBFB::BFBFBFBBBB···············",
        "dev 11 ········FB::BFBFBFB::BFBFBFB::BFBFB·················",
        "       0                                                 69",
        ": several ops in a column of 1.33 time units; --width 77",
        "shows each op"]


def test_touching_ops_of_one_kind_are_labelled_all_or_none(capsys):
    # was `dev 0 FF1FF3FF5FFI0W...`: forwards alternately one and two columns wide, the narrow
    # ones unlabelled, so each pair read as one op (F1, F3, F5); now a run of forwards that cannot
    # all be labelled is drawn bare
    code, out, _ = run(capsys, "run", "zb-v", "-p", "4", "-m", "8")
    assert code == 0 and out.splitlines()[:6] == [
        "dev 0 FFFFFFFFFFFI0WF1IW1FIW2FI3WF7IWF4IW4IW1FI5WIW2FI6WI3WFI7WI4WI5WIW6IW7····",
        "dev 1 ·FFFFFFFFFFFFIW0FI1WFI2WF6IW0FIW3FI1WF5IW4IWF6IW5IW3FIW6IIIIW4IWI7WWWW···",
        "dev 2 ···FFFFFFFFFFFI0WF3IWF5IW0FI2WFI1WF5IW3FI2WFI4WI3WF7IWIIIIIIIIWIWWWWWWWW·",
        "dev 3 ····FFFFFFFFFFFFIW0FIW0FI1WF5IWF5IW2FI2WF6IWF7IW3FI4WIIIIIIIIIIWWWWWWWWWW",
        "      0                                                                    25.5",
        "F forward  B backward  I input-grad  W weight-grad  # F&B pair  · idle"]


def check_every_op_drawn_honestly(res, width: int, window=None) -> None:
    """Every op that takes time in the span drawn shows, in a column it reaches, its letter or ':';
    a column shows a letter only where one op of that kind is alone in it or covers its middle,
    and ':' where an op narrower than a column shares it."""
    start, end, ops, drawn = text_gantt_module.chart(res, width, window)
    lw = len(f"dev {res.devices - 1} ")
    rows = [line[lw:] for line in text_gantt(res, width, window=window).splitlines()[:res.devices]]
    assert [len(row) for row in rows] == [drawn.grid.shape[1]] * res.devices
    assert 0 <= start < end <= res.makespan
    # the ops in the span are those of the run that reach into it, cut at its edges
    inside = (res.ops.end > start) & (res.ops.start < end) & (res.ops.end > res.ops.start) & ~res.program.pair
    assert len(ops["start"]) == inside.sum() - np.sum(inside & (np.minimum(res.ops.end, end) -
                                                                 np.maximum(res.ops.start, start) <= 1e-9 * end))
    scale = drawn.scale
    eps = 1e-6
    reach = {}
    for d, s, e, k in zip(ops["device"], ops["start"] * scale, ops["end"] * scale, ops["kind"]):
        cols = range(max(0, int(np.floor(s + eps))), min(len(rows[d]), max(int(np.floor(s + eps)) + 1,
                                                                            int(np.ceil(e - eps)))))
        narrow = np.rint(e) <= np.rint(s)
        assert any(rows[d][c] in (k, ":") for c in cols), (d, s / scale, k)
        for c in cols:
            reach.setdefault((int(d), c), []).append((s, e, k, narrow))
    for d, row in enumerate(rows):
        for c, char in enumerate(row):
            there = reach.get((d, c), [])
            if char == "·":
                assert not any(n or s <= c + 0.5 < e for s, e, _, n in there), (d, c)
            elif char == ":":
                assert len(there) >= 2 and any(n for *_, n in there), (d, c)
            else:
                assert not (len(there) >= 2 and any(n for *_, n in there)), (d, c)
                if char.isdigit():
                    continue
                assert (len(there) == 1 and there[0][2] == char) or \
                    any(k == char and s <= c + 0.5 < e for s, e, k, _ in there), (d, c, char)


@pytest.mark.parametrize("window", [(0, None), None, (7.25, 19.5)], ids=["whole run", "chosen", "asked for"])
@pytest.mark.parametrize("config, width", [
    (dict(schedule="1f1b", devices=12, microbatches=12), 60),
    (dict(schedule="1f1b", devices=8, microbatches=32), 80),
    (dict(schedule="zb-v", devices=4, microbatches=8), 80),
    (dict(schedule="interleaved-1f1b", devices=4, microbatches=8, stages_per_device=2, comm=0.3), 45),
    (dict(schedule="interleaved-1f1b", devices=8, microbatches=32, stages_per_device=2), 80),
    (dict(schedule="zb-h1", devices=12, microbatches=3, f=1234567.5), 33),
    (dict(schedule="1f1b-overlap", devices=4, microbatches=16, b=1.7), 50),
])
def test_no_op_is_dropped_or_merged_into_another_letter(config, width, window):
    res = simulate(Config(**config))
    if window is not None and window[0] >= res.makespan:
        window = (res.makespan / 3, res.makespan / 2)
    check_every_op_drawn_honestly(res, width, window)


def filler(chart: str) -> float:
    """The share of a chart's row cells (after ``dev N ``) that are ``:``, several ops in one column."""
    cells = "".join(line.split(" ", 2)[2] for line in chart.splitlines() if line.startswith("dev "))
    return cells.count(":") / len(cells)


def test_the_chart_at_80_columns_draws_ops_not_filler_and_says_how_to_see_the_rest(capsys):
    # was 86 % ':' at 80 columns (and "--width 220 shows each op"): 1,024 ops in 73 columns
    res = simulate(Config(schedule="interleaved-1f1b", devices=8, microbatches=32, stages_per_device=2))
    assert filler(text_gantt(res, 80, window=(0, None))) > 0.8
    code, out, err = run(capsys, "run", "interleaved-1f1b", "-p", "8", "-m", "32", "-v", "2")
    assert code == 0 and err == "" and max(map(len, out.splitlines())) <= 80
    rows = chart_rows(out)
    assert len(rows) == 8 and filler(out) == 0
    # half the ops drawn carry their microbatch: F0, B3 ...
    start, end, ops, drawn = text_gantt_module.chart(res, 80)
    assert (start, end) == (0, 18) and 2 * drawn.labelled >= drawn.shown > 150
    assert out.splitlines()[8:11] == [
        "      0                                                                     18",
        "time 0 to 18 of 107 time units shown; --window 18:36 the next, --window 0: the",
        "whole run"]
    # the windows the notes name tile the run, each as readable, the last ending with the run
    seen, window = [], "18:36"
    while window is not None:
        code, out, _ = run(capsys, "run", "interleaved-1f1b", "-p", "8", "-m", "32", "-v", "2", "--window", window)
        note = " ".join(line for line in out.splitlines() if line.startswith(("time ", "--window", "whole")))
        assert code == 0 and filler(out) == 0 and note.startswith(f"time {window.replace(':', ' to ').replace('108', '107')} of 107 time units shown"), note
        seen.append(window)
        following = re.search(r"--window (\S+) the next", note)
        window = following and following[1]
    assert seen == ["18:36", "36:54", "54:72", "72:90", "90:108"]
    assert "--window 72:90 the one before" in note
    # the whole run is still there for those who ask, merged where it must be
    code, out, _ = run(capsys, "run", "interleaved-1f1b", "-p", "8", "-m", "32", "-v", "2", "--window", "0:")
    assert code == 0 and filler(out) > 0.8 and "--width 220 shows each op" in out and "the next" not in out


@pytest.mark.parametrize("argv, message", [
    (["--window", "20"], "--window '20': give START:END, times in the run's unit from 0, e.g. 0:20"),
    (["--window", "5:3"], "--window 5:3: the start must come before the end"),
    (["--window=-1:3"], "--window '-1:3': give START:END"),
    (["--window", "nan:"], "--window 'nan:': give START:END"),
    (["--window", "40:"], "--window 40: starts where the run has ended (at 33); give a start before that"),
])
def test_a_window_the_run_cannot_show_is_one_line(capsys, argv, message):
    if argv[-1][0] == "4":  # known to be past the end only once the run is simulated
        code, out, err = run(capsys, "run", "1f1b", *argv)
    else:  # refused as the options are read
        with pytest.raises(SystemExit) as info:
            main(["run", "1f1b", *argv])
        code, (out, err) = info.value.code, capsys.readouterr()
    assert code == 2 and out == "" and message in err and err.count("\n") == 1


def test_a_window_cuts_the_ops_at_its_edges_and_names_its_neighbours():
    res = simulate(Config(schedule="1f1b", devices=2, microbatches=4))
    # F = 1 and B = 2 at 4 columns per time unit: the window 3.5 to 8.5 starts half a unit before
    # device 0's B0 and cuts device 1's B0 and B2 at its edges
    assert text_gantt(res, 27, window=(3.5, 8.5)).splitlines()[:13] == [
        "dev 0 ··B0BBBBBBF2FFB1BBBB",
        "dev 1 B0F1FFB1BBBBBBF2FFB2",
        "      3.5              8.5",
        "time 3.5 to 8.5 of 15 time",
        "units shown;",
        "window=(8.5, 13.5) the",  # an option and its value stay on one line
        "next, window=(0, 3.5) the",
        "one before,",
        "window=(0, None) the whole",
        "run",
        "F forward  B backward",
        "I input-grad  W weight-grad",
        "# F&B pair  · idle"]
    # an end past the run's stops there; the whole run has no note
    assert text_gantt(res, 80, window=(0, 100)) == text_gantt(res, 80, window=(None, None)) == text_gantt(res, 80)
    with pytest.raises(ppviz.ConfigError, match=r"window=\(3, 2\) is not accepted; give \(start, end\)"):
        text_gantt(res, 27, window=(3, 2))
    for bad in ((15, None), (-1, 2), (0, float("nan")), (True, 3), "0:3", (1, 2, 3)):
        with pytest.raises(ppviz.ConfigError, match="window="):
            text_gantt(res, 27, window=bad)


def test_ops_too_short_for_any_readable_window_draw_the_whole_run_within_the_width():
    # f = 1e-12 beside b = 1e12: a window showing every forward would be 1e-23 of the run
    res = simulate(Config(schedule="1f1b", devices=4, microbatches=8, f=1e-12, b=1e12, w=0))
    assert text_gantt(res, 80) == text_gantt(res, 80, window=(0, None))
    for width in (20, 21, 33, 80):
        chart = text_gantt(res, width)
        assert ": several ops in a column" in " ".join(chart.split()) and max(map(len, chart.splitlines())) <= width
    # tiny but even ops do get windows; at 20 columns their options break rather than overflow
    tiny = simulate(Config(schedule="1f1b", devices=4, microbatches=8, f=1e-300, b=1e-300, w=1e-300))
    for width in (20, 21, 33):
        chart = text_gantt(tiny, width)
        assert "time 0 to " in chart and max(map(len, chart.splitlines())) <= width, chart


def test_the_time_axis_starts_under_the_first_column(capsys):
    # the axis began one column right of the rows: the labels already hold their trailing space
    code, out, _ = run(capsys, "run", "gpipe", "-p", "2", "-m", "2", "--width", "30")
    assert code == 0 and out.splitlines()[:3] == ["dev 0 F0F1······B0BBB1BB",
                                                  "dev 1 ··F0F1B0BBB1BB····",
                                                  "      0                9"]
    lines = simulate(Config(schedule="1f1b", devices=12, microbatches=3)).to_text_gantt(width=40).splitlines()
    assert lines[12].index("0") == len("dev 11 ") and len(lines[12]) == len(lines[0])


# the summary's numbers -----------------------------------------------------------------------------

def test_numbers_print_whole_or_with_their_whole_part(capsys):
    assert [number_text(x) for x in (1234.0, 1234.5, 1234.56, 3.9375, 0.5, 0.0123, 2.0, -3.0, 1e20)] == \
        ["1234", "1234.5", "1234.6", "3.94", "0.5", "0.0123", "2", "-3", "1e+20"]
    # was `peak activation  1.23e+03 1.23e+03` where compare printed 1234; the summary's numbers
    # are core.numbers': thousands grouped, three significant digits, shares in per cent
    code, out, _ = run(capsys, "run", "gpipe", "-p", "2", "-m", "1234", "--f", "1.5")
    assert code == 0 and out.splitlines()[-7:] == [
        "gpipe: p=2 m=1234 v=1 f=1.5 b=1 w=1 comm=0  (4,936 ops)",
        "  makespan         4,323   closed form 4,323",  # 4,322.5 (m + p − 1)(f + b + w), whole
        "  bubble fraction  0.081 %   closed form 0.081 %  [idle per device:",
        "                   (p−1)(f+b+w)]",
        "  bubble rate      0.081 %   closed form 0.081 %",
        "  peak activation  1,234 1,234", "    closed form    1,234 1,234  [m]"]
    code, out, _ = run(capsys, "compare", "gpipe", "1f1b", "-p", "2", "-m", "1234", "--f", "1.5")
    assert code == 0 and table_rows(out)["gpipe"][-2:] == ["1,234", "(1,234)"]


def test_many_devices_summarise_their_peaks(capsys):
    # was one value per device: about 800 characters at p = 200
    code, out, _ = run(capsys, "run", "1f1b", "-p", "200", "-m", "4")
    assert code == 0 and out.splitlines()[-3:] == [  # its closed form's note wrapped to 80 columns
        "  peak activation  max 4 (device 0), min 1 (device 199) of 200 devices",
        "    closed form    max 4 (device 0), min 1 (device 199) of 200 devices",
        "                   [min(p−r, m) on rank r]"]
    code, out, _ = run(capsys, "run", "gpipe", "-p", "17", "-m", "4")
    assert out.splitlines()[-2] == "  peak activation  4 on each of 17 devices"
    code, out, _ = run(capsys, "run", "1f1b", "-p", "16", "-m", "4")  # 16 devices are still listed
    assert out.splitlines()[-2] == "  peak activation  4 4 4 4 4 4 4 4 4 4 4 4 4 3 2 1"


# errors in the command line's words ------------------------------------------------------------

def test_a_deadlock_keeps_its_lines(tmp_path, capsys):
    prog = tmp_path / "dl.txt"
    prog.write_text("device 0: 0F0 0B0 0F1 0B1\ndevice 1: 1F1 1F0 1B0 1B1\n")
    code, out, err = run(capsys, "run", "--program", str(prog))
    assert code == 2 and out == "" and err.splitlines() == [
        "ppviz: error: deadlock: no device can make progress; 7 ops never run. Each stuck device's next op is in "
        "[brackets]:",
        "  device 0: 0F0 [0B0] 0F1 0B1   0B0 waits for 1B0 (device 1, position 2)",
        "  device 1: [1F1] 1F0 1B0 1B1   1F1 waits for 0F1 (device 0, position 2)"]


def test_control_characters_are_still_shown_not_run(tmp_path, capsys):
    from ppviz.cli import _error_text
    from ppviz.core.errors import DeadlockError

    assert _error_text(DeadlockError("deadlock\x1b[2J:\ndevice 0: 0F0\r", {})) == \
        "deadlock\\x1b[2J:\n  device 0: 0F0\\r"
    # a line break in the user's own text stays escaped: one line
    code, _, err = run(capsys, "run", "--program", str(tmp_path / "a\nb\x1b[31m.txt"))
    assert code == 2 and err == f"ppviz: error: cannot read {tmp_path}/a\\nb\\x1b[31m.txt: No such file or directory\n"


@pytest.mark.parametrize("options, named", [
    (("-p", "8", "-m", "3"), "-p and -m"), (("-p", "2"), "-p"), (("-v", "2"), "-v"),
    (("--group-size", "2"), "--group-size"), (("-m", "2", "-v", "1", "--group-size", "2"), "-m and -v and --group-size"),
    (("--segments", "2"), "--segments"),  # the program's ops are its segments
])
def test_a_program_file_refuses_the_sizes_it_sets(tmp_path, capsys, options, named):
    # these were ignored: `--program prog.txt -p 8 -m 3` ran p = 2, m = 2 with exit code 0
    prog = tmp_path / "prog.txt"
    prog.write_text("0F0 0F1 0B0 0B1\n1F0 1B0 1F1 1B1\n")
    code, out, err = run(capsys, "run", "--program", str(prog), *options)
    assert (code, out) == (2, "") and err == (
        f"ppviz: error: {named} cannot be given with --program: the program file sets the devices, microbatches, "
        "stages per device and the order of the ops\n")


@pytest.mark.parametrize("argv, message", [
    (("run", "1f1b", "-p", "0"), "-p 0 is not accepted; give a whole number from 1 to 1,000,000,000"),
    (("run", "1f1b", "-v", "3"), "-v 3: 1f1b holds one stage per device; use 1, or interleaved-1f1b for v >= 2"),
    (("run", "1f1b", "--group-size", "2"),
     "--group-size 2: 1f1b has no microbatch groups; leave it unset (it applies to interleaved schedules)"),
    (("run", "1f1b", "--w-share", "2"), "--w-share 2.0 is not accepted; give a share between 0 and 1"),
    (("run", "1f1b", "--segments", "2"), "--segments 2: 1f1b does not split microbatches into sequence segments; "
                                         "use 1, or the seq1f1b schedule to split sequences"),
    (("run", "seq1f1b", "--segments", "0"),
     "--segments 0 is not accepted; give a whole number from 1 to 1,000,000,000"),
    (("run", "1f1b", "--memory-capacity", "0"), "--memory-capacity 0.0 is not accepted; give a finite number > 0"),
    (("run", "custom"), "custom is a program of your own: give it with --program FILE (a torch CSV, or text with "
                        "one line of ops per device)"),
    (("run", "1f1b", "-m", "100000000"),
     "size='p=4, v=1, m=100000000': too large to simulate here; that is about 800,000,000 ops, over the budget of "
     "4,000,000; use fewer devices, stages or microbatches, or raise the budget with the environment variable "
     "PPVIZ_MAX_OPS (a number of ops)"),
])
def test_errors_name_the_options_not_the_python_keywords(capsys, monkeypatch, argv, message):
    monkeypatch.delenv("PPVIZ_MAX_OPS", raising=False)
    code, out, err = run(capsys, *argv)
    assert (code, out, err) == (2, "", f"ppviz: error: {message}\n")


def test_the_budget_variable_named_in_the_error_is_honoured(capsys, monkeypatch):
    monkeypatch.setenv("PPVIZ_MAX_OPS", "10")
    code, out, err = run(capsys, "run", "1f1b", "-p", "2", "-m", "4")
    assert code == 2 and "that is about 16 ops, over the budget of 10;" in err


# --version -------------------------------------------------------------------------------------

def test_version_is_the_installed_distributions(capsys, monkeypatch):
    from importlib import metadata

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out == f"ppviz {metadata.version('pp-schedule-viz')}\n"

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)  # a checkout on the path, not installed
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out == f"ppviz {ppviz.__version__}\n"


# run's memory, recompute and segment options ---------------------------------------------------

def summary_lines(out: str) -> list[str]:
    """``ppviz run``'s summary: the lines after the chart's blank line."""
    lines = out.splitlines()
    return lines[lines.index("") + 1:]


def test_run_segments_splits_seq1f1bs_microbatches(capsys):
    # was no --segments: `ppviz run seq1f1b` was 1F1B (k = 1), makespan 33
    code, out, err = run(capsys, "run", "seq1f1b", "-p", "4", "-m", "8", "--segments", "4")
    res = simulate(Config(schedule="seq1f1b", devices=4, microbatches=8, segments=4))
    plain = simulate(Config(schedule="1f1b", devices=4, microbatches=8))
    assert code == 0 and err == "" and res.makespan != plain.makespan
    assert summary_lines(out)[:2] == ["seq1f1b: p=4 m=8 k=4 segments v=1 f=1 b=1 w=1 comm=0  (256 ops)",
                                      "  makespan         26.3   closed form 26.3"]
    assert res.makespan == 26.25


def test_run_memory_capacity_says_which_devices_fit(capsys):
    # was no --memory-capacity: the fits / over line of the Python summary could not be had
    code, out, err = run(capsys, "run", "1f1b", "-p", "4", "-m", "8", "--memory-capacity", "4")
    fit = simulate(Config(schedule="1f1b", devices=4, microbatches=8, memory_capacity=4)).summary().splitlines()[-1]
    assert code == 0 and err == "" and summary_lines(out)[-1] == fit == \
        "  memory capacity  4 per device: fits (highest peak 4 on device 0)"
    # static memory counts: over on device 0, the line wrapped under its label
    code, out, err = run(capsys, "run", "1f1b", "-p", "4", "-m", "8", "--memory-capacity", "4", "--params", "0.5")
    assert code == 0 and err == "" and summary_lines(out)[-3:] == [
        "  peak memory      4.5 3.5 2.5 1.5",
        "  memory capacity  4 per device: OUT OF MEMORY on device 0 (up to 0.5 over, on",
        "                   device 0)"]


def test_run_activation_bytes_reports_the_memory_in_gib(capsys):
    # was no --activation-bytes: the capacity and the peaks could only be read in activation units
    code, out, err = run(capsys, "run", "1f1b", "-p", "4", "-m", "8", "--memory-capacity", "3",
                         "--activation-bytes", str(2**31))
    res = simulate(Config(schedule="1f1b", devices=4, microbatches=8, memory_capacity=3, activation_bytes=2**31))
    lines = summary_lines(out)
    # one unit system: with the bytes of an activation unit every amount of memory is in GiB
    assert code == 0 and err == "" and lines[4:6] == ["  peak activation  8 6 4 2 GiB",
                                                      "    closed form    8 6 4 2 GiB  [min(p−r, m) on rank r]"]
    assert " ".join(" ".join(lines).split()) == " ".join(res.summary().split())
    assert "memory capacity  6 GiB per device: OUT OF MEMORY on device 0" in out
    code, out, err = run(capsys, "run", "1f1b", "--activation-bytes", "0")
    assert (code, out) == (2, "") and "--activation-bytes 0.0 is not accepted; give a finite number > 0" in err


def test_run_recompute_and_memory_capacity_go_with_a_program(tmp_path, capsys):
    prog = tmp_path / "prog.txt"
    prog.write_text("0F0 0F1 0B0 0B1\n1F0 1B0 1F1 1B1\n")
    code, out, err = run(capsys, "run", "--program", str(prog), "--recompute", "full", "--memory-capacity", "1.5")
    res = simulate(Program.from_text(prog.read_text()), label="prog.txt", recompute="full", memory_capacity=1.5)
    assert code == 0 and err == "" and summary_lines(out) == res.summary().splitlines()
    assert summary_lines(out)[1:3] == ["  settings         recompute=full", "  makespan         12"]  # 8 without
    assert summary_lines(out)[-1] == "  memory capacity  1.5 per device: fits (highest peak 0.118 on device 0)"


@pytest.mark.parametrize("mode", ["full", "selective"])
def test_run_recompute_is_the_configs(capsys, mode):
    code, out, err = run(capsys, "run", "zb-h1", "-p", "4", "-m", "8", "--recompute", mode)
    res = simulate(Config(schedule="zb-h1", devices=4, microbatches=8, recompute=mode))
    plain = simulate(Config(schedule="zb-h1", devices=4, microbatches=8))
    assert code == 0 and err == "" and " ".join(summary_lines(out)).split() == res.summary().split()
    assert summary_lines(out)[1] == f"  settings         recompute={mode}"
    assert summary_lines(out)[2] == f"  makespan         {res.makespan:.6g}   closed form {plain.makespan:.6g}"
    assert summary_lines(out)[5] == "  peak activation  " + " ".join(number_text(x) for x in res.peak_activation)
    # full recompute runs each forward again before its backward; selective has nothing to redo here
    assert (res.makespan > plain.makespan) == (mode == "full")
    with pytest.raises(SystemExit) as info:  # argparse's own usage error
        main(["run", "zb-h1", "--recompute", "half"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and \
        "argument --recompute: invalid choice: 'half' (choose from 'full', 'selective')" in err


def test_run_help_names_the_new_options_in_one_line_each(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = capsys.readouterr().out
    for line in ("  --memory-capacity X   memory per device in activation units (default none)",
                 "                        activation recomputation (default none)",
                 "  --segments K          segments per microbatch, > 1 for seq1f1b (default 1)"):
        assert line in out.splitlines()


# the summary wrapped to the terminal -------------------------------------------------------------

ZB_V_BUBBLE = ["  bubble fraction  5.9 %   closed form 5.9 %  [idle per device: (p−1)·f/2: only",
               "                   the fill, p−1 half-stage forwards before device p−1 starts]"]


def test_run_wraps_its_summary_to_80_columns_when_not_a_terminal(capsys, monkeypatch):
    # was a 139-column bubble line: the closed form's note in brackets
    monkeypatch.setenv("COLUMNS", "200")  # a terminal's width, but the output is no terminal
    code, out, err = run(capsys, "run", "zb-v", "-p", "4", "-m", "8")
    assert code == 0 and err == "" and max(len(line) for line in out.splitlines()) <= 80
    summary = summary_lines(out)
    assert summary[2:4] == ZB_V_BUBBLE
    # nothing is lost: the wrapped lines read back as the library's summary
    whole = simulate(Config(schedule="zb-v", devices=4, microbatches=8)).summary()
    assert " ".join(" ".join(summary).split()) == " ".join(whole.split())
    # a note without a label continues two columns in
    code, out, _ = run(capsys, "run", "1f1b", "--recompute", "full")
    assert summary_lines(out)[-2:] == [
        "  (the closed form assumes uniform stage costs, comm = 0, no recompute; this",
        "    config has full recompute)"]


def test_run_draws_its_chart_as_wide_as_the_terminal_unless_told(capsys, monkeypatch):
    # was 80 columns whatever the terminal: at m = 32 the labels only showed with --width
    import ppviz.cli as cli

    monkeypatch.setenv("NO_COLOR", "1")  # the width alone: a terminal would be in colour
    code, out, _ = run(capsys, "run", "1f1b", "-p", "4", "-m", "32")
    narrow = chart_rows(out)
    assert code == 0 and max(len(row) for row in narrow) <= 80
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setattr(cli.shutil, "get_terminal_size", lambda fallback=(80, 24): os.terminal_size((200, 40)))
    code, out, _ = run(capsys, "run", "1f1b", "-p", "4", "-m", "32")
    wide = chart_rows(out)
    result = simulate(Config(schedule="1f1b", devices=4, microbatches=32))
    assert code == 0 and wide == chart_rows(text_gantt(result, 200)) and 160 < max(len(row) for row in wide) <= 200
    code, out, _ = run(capsys, "run", "1f1b", "-p", "4", "-m", "32", "--width", "80")
    assert chart_rows(out) == narrow


SGR = re.compile(r"\x1b\[([0-9;]*)m")


def cells(line: str) -> list[tuple[str, str]]:
    """A coloured line as (character, the escape's parameters in force, "" for none) per column."""
    out, current, at = [], "", 0
    for found in SGR.finditer(line):
        out += [(c, current) for c in line[at:found.start()]]
        current = "" if found[1] in ("", "0") else found[1]
        at = found.end()
    return out + [(c, current) for c in line[at:]]


def test_the_chart_is_in_the_widgets_colours_on_a_terminal_only(capsys, monkeypatch):
    from ppviz.core.style import STYLE, kind_paints

    for name in ("NO_COLOR", "COLORTERM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    argv = ("run", "zb-v", "-p", "4", "-m", "8")
    code, plain, _ = run(capsys, *argv)
    assert code == 0 and "\x1b" not in plain  # a pipe (captured here) is never coloured
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    code, out, _ = run(capsys, *argv)
    assert code == 0 and "\x1b[" in out and SGR.sub("", out) == plain  # the same chart, painted
    for name, value in (("NO_COLOR", "1"), ("TERM", "dumb")):
        with monkeypatch.context() as m:
            m.setenv(name, value)
            assert run(capsys, *argv)[1] == plain
    assert run(capsys, *argv, "--no-color")[1] == plain
    monkeypatch.setenv("NO_COLOR", "")  # no-color.org: set and not empty
    assert run(capsys, *argv)[1] == out
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    assert run(capsys, *argv, "--color")[1] == out  # asked for, into a pipe (less -R)

    # 24-bit where the terminal says so: each op in its kind's colour and microbatch shade, with
    # the widget's ink on it; idle plain
    monkeypatch.setenv("COLORTERM", "truecolor")
    code, out, _ = run(capsys, *argv, "--color")
    theme = STYLE["themes"]["light"]
    paints = kind_paints(theme["kinds"], theme["shadeSteps"])

    def sgr(fill: str, ink: str) -> str:
        r, g, b, ir, ig, ib = (int(c[k:k + 2], 16) for c in (fill, ink) for k in (1, 3, 5))
        return f"38;2;{ir};{ig};{ib};48;2;{r};{g};{b}"

    slot_of = {"F": "F", "B": "B", "I": "B", "W": "W"}
    res = simulate(Config(schedule="zb-v", devices=4, microbatches=8))
    rows = [cells(line)[6:] for line in out.splitlines()[:4]]
    scale = len(rows[0]) / res.makespan
    o = res.ops
    for d, row in enumerate(rows):
        for col, (char, painted) in enumerate(row):
            middle = (col + 0.5) / scale
            op = np.flatnonzero((o.device == d) & (o.start <= middle) & (o.end > middle))
            if char == "·":
                assert painted == "" and len(op) == 0
                continue
            k = op[0]
            assert char in (o.kind[k], *"0123456789"), (d, col)
            shade = STYLE["shadeOrder"][int(o.microbatch[k]) % len(STYLE["shadeOrder"])]
            assert painted == sgr(*paints[slot_of[o.kind[k]], shade]), (d, col, char)
    legend = out.splitlines()[5]
    assert SGR.sub("", legend) == "F forward  B backward  I input-grad  W weight-grad  # F&B pair  · idle"
    assert [painted for char, painted in cells(legend) if char in "FBIW#"][:5] == [
        sgr(*paints[slot, 0]) for slot in ("F", "B", "B", "W", "F&B")]


def test_run_wraps_its_summary_to_the_terminals_width(capsys, monkeypatch):
    import ppviz.cli as cli

    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setattr(cli.shutil, "get_terminal_size", lambda fallback=(80, 24): os.terminal_size((160, 40)))
    code, out, _ = run(capsys, "run", "zb-v", "-p", "4", "-m", "8")
    whole = simulate(Config(schedule="zb-v", devices=4, microbatches=8)).summary().splitlines()
    assert code == 0 and summary_lines(out) == whole and len(whole[2]) > 80  # fits 160 columns unwrapped
    monkeypatch.setattr(cli.shutil, "get_terminal_size", lambda fallback=(80, 24): os.terminal_size((60, 40)))
    code, out, _ = run(capsys, "run", "zb-v", "-p", "4", "-m", "8")
    summary = summary_lines(out)
    assert code == 0 and max(len(line) for line in summary) <= 60 and summary[2:4] == [
        "  bubble fraction  5.9 %   closed form 5.9 %  [idle per",
        "                   device: (p−1)·f/2: only the fill, p−1"]


# list -------------------------------------------------------------------------------------------

def list_rows(out: str) -> dict[str, list[str]]:
    """``ppviz list`` as {name: its lines}."""
    rows: dict[str, list[str]] = {}
    for line in out.splitlines()[1:]:
        if not line.startswith(" "):
            rows[line.split()[0]] = []
        rows[list(rows)[-1]].append(line)
    return rows


def column(lines: list[str], start: int, end: int | None = None) -> str:
    """The words of a column of a row's lines, joined."""
    return " ".join(" ".join(line[start:end].split()) for line in lines if line[start:end].strip())


def test_list_says_hanayo_needs_an_even_v(capsys):
    # was `hanayo  >= 2`, while v = 3 is refused
    code, out, err = run(capsys, "list")
    header = out.splitlines()[0]
    v, aliases = header.index("v "), header.index("aliases")
    rows = list_rows(out)
    assert code == 0 and err == "" and [line[v:aliases].strip() for line in rows["hanayo"][:2]] == ["even", ">= 2"]
    assert column(rows["hanayo"], v, aliases) == "even >= 2"
    with pytest.raises(ppviz.ScheduleConstraintError):
        Config(schedule="hanayo", stages_per_device=3)
    # the other unbounded ones take every v from their least
    assert {name: column(rows[name], v, aliases) for name in
            ("interleaved-1f1b", "looped-bfs", "interleaved-zb", "interleaved-1f1b-overlap", "custom")} == \
        {"interleaved-1f1b": ">= 2", "looped-bfs": "any", "interleaved-zb": "any",
         "interleaved-1f1b-overlap": ">= 2", "custom": "any"}


def test_list_shows_every_alias_and_every_constraint(capsys):
    # was: aliases cut to four (interleaved-zb's fifth, interleaved-zero-bubble, missing), no constraints
    code, out, _ = run(capsys, "list")
    header = out.splitlines()[0]
    aliases, what = header.index("aliases"), header.index("what it is")
    rows = list_rows(out)
    assert code == 0 and list(rows) == [s.name for s in ppviz.list_schedules()]
    for spec in ppviz.list_schedules():
        lines = rows[spec.name]
        assert column(lines, aliases, what) == ", ".join(spec.aliases), spec.name
        described = column(lines, what)
        if spec.constraints:
            assert described == f"{spec.summary} constraints: {spec.constraints}", spec.name
        else:
            assert described == spec.summary and "constraints" not in described
    assert "interleaved-zero-bubble" in column(rows["interleaved-zb"], aliases, what)
    assert rows["hanayo"][-2:] == [" " * what + "constraints: v = 2W even (W waves);",
                                   " " * what + "  m >= p (m = p in the paper)"]
    assert max(len(line) for line in out.splitlines()) <= 100


def test_offload_from_the_command_line_goes_over_the_accelerators_pcie_link(capsys):
    args = ("compare", "1f1b", "interleaved-1f1b", "-p", "4", "-m", "16", "--model", "llama-3-8b", "--topology", "dgx-h100")
    code, kept, _ = run(capsys, *args)
    assert code == 0
    code, offloaded, err = run(capsys, *args, "--offload", "1")
    assert code == 0 and err == ""
    model, machine = ppviz.Transformer.preset("llama-3-8b"), ppviz.Hardware.preset("h100-sxm")
    for schedule, v in (("1f1b", 1), ("interleaved-1f1b", 2)):
        res = simulate(Config.from_model(model, machine, schedule=schedule, devices=4, microbatches=16,
                                         stages_per_device=v, topology="dgx-h100", offload=1.0))
        assert len(res.transfers) and len(res.host_copies)
        assert f" {number(res.makespan)} " in offloaded and f" {number(res.makespan)} " not in kept
    # offload lowers interleaved-1F1B's peak under the H100's 80 GiB
    assert "1 of 2 fit the capacity" in kept and "2 of 2 fit the capacity" in offloaded
    code, out, _ = run(capsys, "run", "1f1b", "-p", "4", "-m", "8", "--model", "llama-3-8b", "--offload", "0.5")
    assert code == 0 and "offload          0.5 of each activation to the host over latency 0 µs, 64 GB/s" in out
    # without a model there is no PCIe link to copy over; a share past 1 is refused in one line
    code, _, err = run(capsys, "run", "1f1b", "--offload", "1")
    assert code == 2 and err == "ppviz: error: --offload describes the training of a model: give --model NAME too " \
                                "(see --help for the presets)\n"
    code, _, err = run(capsys, "run", "1f1b", "--model", "llama-3-8b", "--offload", "2")
    assert code == 2 and len(err.splitlines()) == 1 and "from 0 to 1" in err
