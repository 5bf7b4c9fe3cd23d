import json

from ppviz.cli import main


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
