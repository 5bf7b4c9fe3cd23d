import json
import struct
import xml.etree.ElementTree as ET

from ppviz import Config, simulate
from ppviz.cli import main
from ppviz.widgets import standalone_html


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
    for flag in ("--html", "--svg", "--png"):
        target = tmp_path / "missing" / "g"
        code, _, err = run(capsys, "run", "1f1b", flag, str(target))
        assert code == 2 and err == f"ppviz: error: {target}: No such file or directory\n"


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
    assert "transfers        480 of 6.71089e+07 bytes" in out and "p2p blocking" in out
    assert "dgx-h100: 8 devices per node" in out
    first = csv.read_text().splitlines()[0].split(",")
    assert first[:3] == ["0F0", "0SEND_F0", "0F1"]
    code, _, err = run(capsys, "run", "1f1b", "--topology", "dgx-h100", "--comm-bytes", "1")
    assert code == 2 and "set time_unit" in err
