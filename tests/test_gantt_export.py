"""The static Gantt chart and the SVG / PNG / HTML exports: spec data read back against the timeline."""

import json
import math
import re
import shutil
import struct
import subprocess
import sys
import textwrap
import zlib
import xml.etree.ElementTree as ET

import altair as alt
import numpy as np
import pytest

import ppviz
from ppviz import Config, ConfigError, Program, charts, simulate
from ppviz.charts.style import THEMES
from ppviz.core.numbers import number, share

from .helpers import png_size

SVG = "{http://www.w3.org/2000/svg}"
SHADE_ORDER = (0, 2, 1, 3)
SLOT = {"F": "F", "B": "B", "I": "B", "W": "W", "F&B": "F&B"}


def cfg(schedule, p=4, m=8, **kw):
    return Config(schedule=schedule, devices=p, microbatches=m, **kw)


@pytest.fixture(scope="module")
def big():
    res = simulate(cfg("1f1b", p=8, m=6250))
    assert len(res.ops) == 100_000
    return res


# Reading the spec back ----------------------------------------------------------------------

def layers(spec: dict) -> list[dict]:
    """Every leaf layer of a (possibly concatenated) spec, with its data rows resolved."""
    datasets = spec.get("datasets", {})
    out = []

    def walk(node):
        for key in ("vconcat", "layer"):
            for sub in node.get(key, []):
                walk(sub)
        if "mark" in node:
            data = node["data"]
            out.append({**node, "rows": data["values"] if "values" in data else datasets[data["name"]]})

    walk(spec)
    return out


def rows_with(spec: dict, field: str, mark: str | None = None) -> list[dict]:
    found = [x for x in layers(spec) if x["rows"] and field in x["rows"][0]
             and (mark is None or (x["mark"]["type"] if isinstance(x["mark"], dict) else x["mark"]) == mark)]
    distinct = [x["rows"] for i, x in enumerate(found) if all(x["rows"] != y["rows"] for y in found[:i])]
    assert len(distinct) <= 1, f"{len(distinct)} datasets have rows with {field!r}"
    return distinct[0] if distinct else []


def op_rows(spec):
    return rows_with(spec, "op")


def band_rows(spec):
    return rows_with(spec, "run_ops")


def gap_rows(spec):
    return [r for x in layers(spec) if x["rows"] and set(x["rows"][0]) == {"device", "start", "end"}
            for r in x["rows"]]


def slots(res):
    """The timeline as drawn slots (an F&B pair is one), from the Result's own columns."""
    o, pair = res.ops, res.program.pair
    out = []
    k = 0
    while k < len(o):
        if pair[k]:
            out.append((int(o.device[k]), float(o.start[k]), float(o.end[k]), "F&B", int(o.stage[k]),
                        int(o.microbatch[k])))
            assert (o.start[k + 1], o.end[k + 1]) == (o.start[k], o.end[k])
            k += 2
        else:
            out.append((int(o.device[k]), float(o.start[k]), float(o.end[k]), str(o.kind[k]), int(o.stage[k]),
                        int(o.microbatch[k])))
            k += 1
    return out


def true_gaps(res, eps=1e-9):
    """Every idle interval of every device, from the op columns."""
    out = []
    for d in range(res.devices):
        mine = sorted((s, e) for dev, s, e, *_ in slots(res) if dev == d)
        t = 0.0
        for s, e in mine:
            if s - t > eps * res.makespan:
                out.append((d, t, s))
            t = max(t, e)
        if res.makespan - t > eps * res.makespan:
            out.append((d, t, res.makespan))
    return out


def title_text(spec) -> str:
    title = spec["title"]
    return " ".join([title["text"], *title.get("subtitle", [])])


# The spec's data is the timeline ------------------------------------------------------------

CASES = {
    "1f1b": cfg("1f1b"),
    "interleaved-1f1b": cfg("interleaved-1f1b", stages_per_device=2),
    "zb-h1": cfg("zb-h1", m=12),
    "zb-v": cfg("zb-v"),
    "dualpipe-v": cfg("dualpipe-v", m=10, comm=0.25),
    "dualpipe": cfg("dualpipe", p=8, m=16),
}


@pytest.mark.parametrize("name", CASES)
def test_op_rows_are_the_timeline(name):
    res = simulate(CASES[name])
    spec = charts.gantt_chart(res, window="all").to_dict()
    rows = op_rows(spec)
    drawn = sorted((r["device"], r["start"], r["end"], r["kind"], r["stage"], r["microbatch"]) for r in rows)
    assert drawn == sorted(slots(res))
    if name.startswith("dualpipe"):
        assert any(r["kind"] == "F&B" for r in rows)
    for r in rows:
        # coloured by kind (I with B), shaded by microbatch as the widget does
        assert r["paint"] == f"{SLOT[r['kind']]}{SHADE_ORDER[r['microbatch'] % 4]}"
    # few ops: nothing merged, and every idle interval is drawn exactly
    assert band_rows(spec) == []
    assert sorted((g["device"], g["start"], g["end"]) for g in gap_rows(spec)) == sorted(true_gaps(res))


def test_segments_of_one_microbatch_share_its_shade():
    # Seq1F1B numbers its bars by segment (microbatch·k + segment); the shade follows the microbatch
    rows = op_rows(charts.gantt_chart(simulate(cfg("seq1f1b", m=4, segments=2))).to_dict())
    shade = {(r["kind"], r["microbatch"]): r["paint"] for r in rows if r["device"] == 0}
    assert shade["F", 0] == shade["F", 1] != shade["F", 2] == shade["F", 3]
    assert shade["F", 1] == f"{SLOT['F']}{SHADE_ORDER[0]}" and shade["F", 6] == f"{SLOT['F']}{SHADE_ORDER[3]}"


def test_memory_lanes_show_the_capacity_as_the_widget_does():
    # 1F1B at p = 4 peaks at 4, 3, 2, 1 activation units; with 1 unit of static memory each, a
    # capacity of 4.5 leaves device 0 half a unit over
    res = simulate(cfg("1f1b", m=8, params=1, memory_capacity=4.5))
    marks = layers(charts.gantt_chart(res).to_dict())
    curve = next(x["rows"] for x in marks if x["rows"] and set(x["rows"][0]) == {"device", "time", "memory", "static"})
    for d in range(P := 4):
        values = [row["memory"] for row in curve if row["device"] == d]
        assert min(values) == 1 and max(values) == res.peak_memory[d] == 5 - d  # stacked on the static unit
    capacity = next(x for x in marks if x["rows"] and set(x["rows"][0]) == {"device", "cap", "colour", "alpha"})
    over_colour = THEMES["light"]["oom"]
    assert [(row["cap"], row["colour"] == over_colour) for row in capacity["rows"]] == [(4.5, d == 0) for d in range(P)]
    red = next(x for x in marks if x["rows"] and "cap" in x["rows"][0] and "memory" in x["rows"][0])
    assert {row["device"] for row in red["rows"]} == {0}
    heads = [row["text"] for x in marks if x["rows"] and "text" in x["rows"][0] for row in x["rows"]
             if str(row["text"]).startswith("device ")]
    assert heads == ["device 0  peak 5  +0.5 over", "device 1  peak 4", "device 2  peak 3", "device 3  peak 2"]
    # without a capacity the lanes keep activations alone, and nothing is red
    plain = layers(charts.gantt_chart(simulate(cfg("1f1b", m=8, params=1))).to_dict())
    assert not [x for x in plain if x["rows"] and "cap" in x["rows"][0]]
    assert max(row["memory"] for x in plain if x["rows"] and "static" in x["rows"][0] for row in x["rows"]) == 4


def test_pairs_name_both_ops():
    res = simulate(cfg("dualpipe", p=4, m=8))
    o = res.ops
    rows = {(r["device"], r["start"]): r for r in op_rows(charts.gantt_chart(res).to_dict())}
    heads = np.flatnonzero(res.program.pair)
    assert len(heads) > 0
    for k in heads.tolist():
        r = rows[(int(o.device[k]), float(o.start[k]))]
        assert r["kind"] == "F&B" and r["microbatch"] == o.microbatch[k]
        assert r["backward_microbatch"] == o.microbatch[k + 1]
        assert r["op"] == f"{o.stage[k]}F{o.microbatch[k]} & {o.stage[k + 1]}{o.kind[k + 1]}{o.microbatch[k + 1]}"


def test_labels_name_the_microbatch_of_the_bar_under_them():
    res = simulate(cfg("dualpipe", p=4, m=8))
    spec = charts.gantt_chart(res).to_dict()
    texts = rows_with(spec, "ink")
    assert len(texts) > len(op_rows(spec)) / 2  # at 900 px most bars of 96 slots have room
    for t in texts:
        (under,) = [r for r in op_rows(spec) if r["device"] == t["device"] and r["start"] < t["x"] < r["end"]]
        expected = str(under["microbatch"]) if under["kind"] != "F&B" else \
            f"{under['microbatch']}|{under['backward_microbatch']}"
        assert t["text"] == expected
    assert rows_with(charts.gantt_chart(res, labels=False).to_dict(), "ink") == []


def test_rows_are_labelled_with_stages_and_idle():
    res = simulate(cfg("zb-v"))
    spec = charts.gantt_chart(res).to_dict()
    heads = rows_with(spec, "detail")
    placement = res.program.placement
    assert [(h["device"], h["name"]) for h in heads] == [(d, f"device {d}") for d in range(4)]
    for h in heads:
        d = h["device"]
        assert h["detail"] == f"{placement.describe(d)} · {share(res.idle[d] / res.makespan)} idle"
    assert heads[0]["detail"].startswith("stages 0, 7")  # the V: device 0 holds the first and last stage


def test_title_gives_simulated_and_closed_form_metrics():
    res = simulate(cfg("1f1b"))
    text = title_text(charts.gantt_chart(res).to_dict())
    assert text.startswith("1f1b ")
    assert "p=4 · m=8 · f=1 b=1 w=1 · 64 ops" in text
    assert "makespan 33 (closed form 33)" in text
    assert "bubble 27.3 % of p × makespan (closed form 27.3 %)" in text
    assert "peak memory 4 (closed form 4)" in text
    # where the formula's assumptions fail, the closed form is starred and the reason given
    text = title_text(charts.gantt_chart(simulate(cfg("1f1b", comm=0.5))).to_dict())
    assert "(closed form 33*)" in text and "* the closed form assumes" in text
    custom = simulate(Program.from_text("device 0: 0F0 0B0\ndevice 1: 1F0 1B0"), label="mine")
    text = title_text(charts.gantt_chart(custom).to_dict())
    assert text.startswith("mine ") and "closed form" not in text


def legend_of(spec):
    colors = [x["encoding"]["color"] for x in layers(spec) if "color" in x.get("encoding", {})
              and "legend" in x["encoding"]["color"]]
    assert colors
    return colors[0]


@pytest.mark.parametrize("schedule, entries", [
    ("1f1b", ["F forward", "B backward", "idle (bubble)"]),
    ("zb-h1", ["F forward", "I backward (inputs)", "W backward (weights)", "idle (bubble)"]),
    ("dualpipe", ["F forward", "B / I backward", "W backward (weights)", "F&B overlapped pair", "idle (bubble)"]),
])
def test_legend_lists_the_kinds_present(schedule, entries):
    color = legend_of(charts.gantt_chart(simulate(cfg(schedule))).to_dict())
    legend = color["legend"]
    names = dict(re_pairs(legend["labelExpr"]))
    assert [names[v] for v in legend["values"]] == entries
    fills = dict(zip(color["scale"]["domain"], color["scale"]["range"]))
    # the widget's light palette, unshaded for the first microbatch shade
    assert [fills[k] for k in ("F0", "B0", "W0", "F&B0", "S0", "T0")] == list(THEMES["light"]["kinds"])
    assert len({fills[f"F{s}"] for s in range(4)}) == 4  # four microbatch shades


def re_pairs(expr: str):
    return re.findall(r"'([^']+)': '([^']+)'", expr)


def test_memory_lanes_follow_the_curves():
    res = simulate(cfg("zb-h1"))
    spec = charts.gantt_chart(res, window="all").to_dict()
    rows = rows_with(spec, "memory")
    for d in range(4):
        times, values = res.memory.curve(d)
        mine = [(r["time"], r["memory"]) for r in rows if r["device"] == d]
        expected = list(zip(times.tolist(), values.tolist()))
        if times[-1] < res.makespan:
            expected.append((res.makespan, float(values[-1])))
        assert mine == expected
    closed = rows_with(spec, "closed")
    assert [r["closed"] for r in closed] == list(res.closed_form.peak_activation)
    heads = rows_with(spec, "peak")
    assert [(h["peak"], h["text"]) for h in heads] == \
        [(res.peak_activation[d], f"device {d}  peak {number(res.peak_activation[d])}") for d in range(4)]
    without = charts.gantt_chart(res, memory=False)
    assert isinstance(without, alt.LayerChart) and rows_with(without.to_dict(), "memory") == []


def test_hatch_strokes_stay_inside_idle_gaps_at_45_degrees():
    res = simulate(cfg("1f1b"))
    width, row = 900, 34
    spec = charts.gantt_chart(res, width=width, row_height=row).to_dict()
    strokes = rows_with(spec, "x2")
    gaps = gap_rows(spec)
    assert len(strokes) > 50
    px = width / res.makespan
    for s in strokes:
        d = math.floor(min(s["y"], s["y2"]))
        inside = [g for g in gaps if g["device"] == d
                  and g["start"] - 1e-9 <= s["x"] < s["x2"] <= g["end"] + 1e-9]
        assert len(inside) == 1
        # rising one pixel per pixel
        assert (s["x2"] - s["x"]) * px == pytest.approx((s["y"] - s["y2"]) * row)


# Large runs ---------------------------------------------------------------------------------

def busy_by_device(spec, p):
    busy = np.zeros(p)
    for r in op_rows(spec):
        busy[r["device"]] += r["end"] - r["start"]
    for b in band_rows(spec):
        if b["kind"] != "idle":
            busy[b["device"]] += b["time"]
    return busy


def check_bands(spec):
    runs = {}
    for b in band_rows(spec):
        runs.setdefault((b["device"], b["start"], b["end"]), []).append(b)
    for (_, start, end), bands in runs.items():
        # the bands stack from top to bottom of the bar, each as tall as its share of the run
        assert bands[0]["top"] == 0 and bands[-1]["bottom"] == pytest.approx(1)
        assert all(a["bottom"] == pytest.approx(b["top"]) for a, b in zip(bands, bands[1:]))
        total = sum(b["time"] for b in bands)
        assert total == pytest.approx(end - start)
        for b in bands:
            assert b["bottom"] - b["top"] == pytest.approx(b["time"] / total)
    return runs


def test_a_hundred_thousand_ops_merge_into_a_small_exact_spec(big):
    chart = charts.gantt_chart(big, window="all")
    spec = chart.to_dict()  # Altair would refuse more than 5000 rows in any dataset
    size = len(json.dumps(spec))
    assert size < 300_000, size
    assert all(len(x["rows"]) <= charts.MAX_ROWS for x in layers(spec))
    runs = check_bands(spec)
    assert 0 < len(runs) < 100
    assert busy_by_device(spec, 8) == pytest.approx(big.busy, rel=1e-12)
    # no gap is merged away: the drawn gaps are the timeline's, one for one
    assert sorted((g["device"], g["start"], g["end"]) for g in gap_rows(spec)) == sorted(true_gaps(big))
    # an op drawn on its own is one of the timeline's, and a pixel wide or cut off by idle
    # time from any narrow neighbour (the drain's ops here, one unit apart)
    px = 900 / big.makespan
    timeline = set(slots(big))
    edges = {(g["device"], g["start"]) for g in gap_rows(spec)} | {(g["device"], g["end"]) for g in gap_rows(spec)}
    for r in op_rows(spec):
        assert (r["device"], r["start"], r["end"], r["kind"], r["stage"], r["microbatch"]) in timeline
        if (r["end"] - r["start"]) * px < 1:
            assert (r["device"], r["start"]) in edges or (r["device"], r["end"]) in edges
    narrow = {(r["device"], r["start"], r["end"]) for r in op_rows(spec) if (r["end"] - r["start"]) * px < 1}
    assert not any((d, e) == (d2, s2) for d, _, e in narrow for d2, s2, _ in narrow)  # touching ones merge
    merged = sum(b["ops"] for b in band_rows(spec))
    assert merged + len(op_rows(spec)) == 100_000
    assert f"{merged:,} ops narrower than a pixel are drawn as {len(runs):,} runs" in title_text(spec)


def test_many_small_gaps_join_their_runs_with_the_idle_kept():
    res = simulate(cfg("1f1b", p=8, m=6250, comm=0.1))  # a comm gap after almost every op
    width = 4000  # the fill and drain gaps are wider than a pixel here
    spec = charts.gantt_chart(res, width=width, window="all").to_dict()
    assert all(len(x["rows"]) <= charts.MAX_ROWS for x in layers(spec))
    check_bands(spec)
    assert busy_by_device(spec, 8) == pytest.approx(res.busy, rel=1e-9)
    idle = np.zeros(8)
    for g in gap_rows(spec):
        idle[g["device"]] += g["end"] - g["start"]
    for b in band_rows(spec):
        if b["kind"] == "idle":
            idle[b["device"]] += b["time"]
    assert idle == pytest.approx(res.idle, rel=1e-9)
    assert any(b["kind"] == "idle" for b in band_rows(spec))
    # a gap a pixel wide or more is still drawn exactly
    pixel = res.makespan / width
    drawn = {(g["device"], g["start"], g["end"]) for g in gap_rows(spec)}
    wide = [g for g in true_gaps(res) if g[2] - g[1] >= pixel]
    assert wide and all(g in drawn for g in wide)
    assert "idle gaps narrower than a pixel are inside runs" in title_text(spec)


def test_merging_keeps_wide_ops_whole():
    res = simulate(cfg("zb-h1", m=40, f=1, b=1, w=6))  # W much wider than F and I
    spec = charts.gantt_chart(res, width=200, merge_above=0, window="all").to_dict()
    pixel = res.makespan / 200
    runs = check_bands(spec)
    assert runs
    assert {r["kind"] for r in op_rows(spec)} >= {"W"}
    assert all(r["end"] - r["start"] >= pixel for r in op_rows(spec) if r["kind"] == "W")
    assert all(b["kind"] in ("F", "I") for b in band_rows(spec))
    assert busy_by_device(spec, 4) == pytest.approx(res.busy)
    assert sorted((g["device"], g["start"], g["end"]) for g in gap_rows(spec)) == sorted(true_gaps(res))


# Rendering and export -----------------------------------------------------------------------

def svg_texts(path_or_text) -> list[str]:
    root = ET.parse(path_or_text).getroot() if not str(path_or_text).lstrip().startswith("<") \
        else ET.fromstring(path_or_text)
    assert root.tag == f"{SVG}svg"
    return ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]


def test_svg_png_and_html_files_offline(no_network, tmp_path):
    res = simulate(cfg("interleaved-1f1b", stages_per_device=2))
    assert res.to_svg(tmp_path / "g.svg") is None
    texts = svg_texts(tmp_path / "g.svg")
    for d in range(4):
        assert f"device {d}" in texts and f"stages {d}, {d + 4} · 15.8 % idle" in texts
    assert "interleaved-1f1b" in texts and "F forward" in texts
    assert "makespan 28.5 (closed form 28.5)" in " ".join(texts)

    res.to_png(tmp_path / "g1.png", scale=1)
    res.to_png(tmp_path / "g2.png")
    w1, h1 = png_size((tmp_path / "g1.png").read_bytes())
    w2, h2 = png_size((tmp_path / "g2.png").read_bytes())
    assert w1 > 900 and h1 > 400  # the 900 px plot plus its row labels; Gantt above memory lanes
    assert (w2, h2) == (2 * w1, 2 * h1)

    from ppviz.widgets import standalone_html

    assert res.to_html(tmp_path / "g.html", theme="dark") is None
    assert (tmp_path / "g.html").read_text() == standalone_html(res, theme="dark")


def png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    out, at = [], 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at:at + 4])
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + length]
        assert struct.unpack(">I", data[at + 8 + length:at + 12 + length])[0] == zlib.crc32(kind + body)
        out.append((kind, body))
        at += 12 + length
    return out


def test_png_files_hold_vl_converts_pixels_in_fewer_bytes(tmp_path):
    res = simulate(cfg("zb-v"))
    rendered = charts.to_png(charts.gantt_chart(res))
    res.to_png(tmp_path / "g.png")
    written = (tmp_path / "g.png").read_bytes()
    assert written[:8] == rendered[:8]
    before, after = png_chunks(rendered), png_chunks(written)
    kinds = [k for k, _ in before]
    # the same chunks in the same order, the image data in one IDAT
    assert [k for k, _ in after] == [k for i, k in enumerate(kinds) if k != b"IDAT" or kinds[i - 1] != b"IDAT"]
    assert [c for c in after if c[0] != b"IDAT"] == [c for c in before if c[0] != b"IDAT"]

    def pixels(chunks):
        return zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))

    assert pixels(after) == pixels(before)
    assert len(written) < len(rendered) / 2


def test_options_reach_the_picture(tmp_path):
    res = simulate(cfg("1f1b"))
    res.to_svg(tmp_path / "dark.svg", theme="dark", memory=False)
    text = (tmp_path / "dark.svg").read_text()
    assert 'fill="#15171c"' in text  # the widget's dark background
    assert not any(t.startswith("device 0  peak") for t in svg_texts(tmp_path / "dark.svg"))
    narrow, wide = tmp_path / "narrow.png", tmp_path / "wide.png"
    res.to_png(narrow, scale=1, width=1000)
    res.to_png(wide, scale=1, width=1400)
    assert png_size(wide.read_bytes())[0] - png_size(narrow.read_bytes())[0] == 400


def test_a_hundred_thousand_ops_export(big, tmp_path):
    big.to_png(tmp_path / "big.png")
    w, h = png_size((tmp_path / "big.png").read_bytes())
    assert w > 1800 and h > 800
    assert "device 7" in svg_texts(charts.to_svg(charts.gantt_chart(big)))


@pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("unshare") is None,
                    reason="needs Linux user namespaces to cut the network")
def test_exports_in_a_process_with_no_network(tmp_path):
    # vl-convert is Rust: blocking Python's socket module would not stop it, a network namespace does
    if subprocess.run(["unshare", "-rn", "true"], capture_output=True).returncode != 0:
        pytest.skip("unprivileged user namespaces are disabled here")
    code = textwrap.dedent(f"""
        import ppviz
        res = ppviz.simulate(ppviz.Config(schedule="zb-v", devices=4, microbatches=8))
        res.to_svg({str(tmp_path / "g.svg")!r})
        res.to_png({str(tmp_path / "g.png")!r})
        res.to_html({str(tmp_path / "g.html")!r})
    """)
    out = subprocess.run(["unshare", "-rn", sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "device 3" in svg_texts(tmp_path / "g.svg")
    assert png_size((tmp_path / "g.png").read_bytes())[0] > 1800
    assert (tmp_path / "g.html").stat().st_size > 10_000


def test_user_text_stays_text(tmp_path):
    label = "<script>alert('x')</script> & \"quotes\""
    res = simulate(Program.from_text("device 0: 0F0 0B0\ndevice 1: 1F0 1B0"), label=label)
    res.to_svg(tmp_path / "g.svg")
    raw = (tmp_path / "g.svg").read_text()
    assert "<script" not in raw
    assert label in svg_texts(tmp_path / "g.svg")


# Bad input ----------------------------------------------------------------------------------

@pytest.mark.parametrize("options, fragment", [
    ({"theme": "sepia"}, "theme='sepia'"),
    ({"width": 50}, "width=50"),
    ({"width": 900.5}, "whole number"),
    ({"row_height": 2}, "row_height=2"),
    ({"merge_above": -1}, "merge_above=-1"),
    ({"memory": "yes"}, "True or False"),
])
def test_bad_options_are_named(options, fragment):
    with pytest.raises(ConfigError, match=fragment.replace("(", r"\(")):
        charts.gantt_chart(simulate(cfg("1f1b")), **options)


def test_bad_input_is_named_and_writes_nothing(tmp_path):
    with pytest.raises(ConfigError, match=r"^run=3.5: a float is not a run; give a ppviz.Config, Program or Result, "
                                          r"or a schedule name"):
        charts.gantt_chart(3.5)
    with pytest.raises(ConfigError, match="a list is not a run"):
        charts.gantt_chart([simulate(cfg("1f1b")), simulate(cfg("zb-h1"))])
    res = simulate(cfg("1f1b"))
    with pytest.raises(ConfigError, match="'light', 'dark' or 'auto'"):
        res.to_html(tmp_path / "x.html", theme="blue")
    with pytest.raises(ConfigError, match="scale"):
        res.to_png(tmp_path / "x.png", scale=0)
    with pytest.raises(ConfigError, match="width"):
        res.to_svg(tmp_path / "x.svg", width=-3)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ConfigError, match="colour='red': not an option of the Gantt chart; the Gantt chart's "
                                          "options are memory, labels, width"):
        res.to_svg(tmp_path / "x.svg", colour="red")
    assert list(tmp_path.iterdir()) == []


def test_configs_and_programs_are_simulated():
    config = cfg("zb-h1")
    program = ppviz.Program.from_text("device 0: 0F0 0F1 0B0 0B1\ndevice 1: 1F0 1B0 1F1 1B1")
    assert op_rows(charts.gantt_chart(config).to_dict()) == op_rows(charts.gantt_chart(simulate(config)).to_dict())
    assert len(op_rows(charts.gantt_chart(program, memory=False).to_dict())) == 8


def axis_titles(spec) -> list[str]:
    """Every axis title in a Vega-Lite spec, wherever it is nested."""
    found = []
    if isinstance(spec, dict):
        axis = spec.get("axis")
        if isinstance(axis, dict) and isinstance(axis.get("title"), str):
            found.append(axis["title"])
        if isinstance(spec.get("title"), str) and "field" in spec:
            found.append(spec["title"])
        for value in spec.values():
            found += axis_titles(value)
    elif isinstance(spec, list):
        for value in spec:
            found += axis_titles(value)
    return found


@pytest.mark.parametrize("unit, title", [("ms", "time (ms)"), (None, "time (units of f, b, w)")])
def test_time_axes_carry_the_time_unit(unit, title):
    r = simulate(Config(schedule="zb-h1", devices=4, microbatches=8, time_unit=unit))
    assert title in axis_titles(charts.gantt_chart(r).to_dict())
    assert title in axis_titles(charts.memory_curve_chart(r).to_dict())


def test_an_inference_chart_says_what_an_inference_batch_is_measured_by():
    """No backward: the title gives f alone, the first output and the throughput, and calls the
    idle share what it is for one batch (the fill and the drain), not a training bubble."""
    res = ppviz.simulate(ppviz.Config(schedule="inference", devices=4, microbatches=8, f=2.0))
    sizes, metrics = ppviz.charts.gantt_chart(res).to_dict()["title"]["subtitle"][:2]
    assert sizes == "p=4 · m=8 · f=2 · 32 ops"
    # the last stage's first output after p forwards; then one output per f
    assert "first output 8 · throughput 0.5 per unit of time · fill + drain 27.3 % of p × makespan" in metrics
    assert "bubble" not in metrics


def test_an_inference_chart_of_one_microbatch_has_no_throughput_to_give():
    # one output has no steady state (Result.throughput is None): the title was a TypeError
    res = ppviz.simulate(ppviz.Config(schedule="inference", devices=4, microbatches=1))
    metrics = ppviz.charts.gantt_chart(res).to_dict()["title"]["subtitle"][1]
    assert "first output 4 · throughput – · fill + drain 75 % of p × makespan" in metrics
    assert res.to_svg().startswith("<svg")


# The lane under each row: transfers and host copies -------------------------------------------

def lane_layers(spec):
    halves = [x for x in layers(spec) if x["rows"] and "half" in x["rows"][0]]
    return [x for x in halves if "paint" not in x["rows"][0]], [x for x in halves if "paint" in x["rows"][0]]


def covered(res, width):
    """Per (device, band, pixel column): the kinds of what covers it, each piece at least one column
    wide. A run with both transfers and host copies has four bands per lane: sends, offloads,
    reloads, receives; else two: sends or offloads (0), receives or reloads (1)."""
    px = width / res.makespan
    t, h = res.transfers, res.host_copies
    split = len(t) and len(h)
    pieces = [(int(s), 0, a, b, str(k)) for s, a, b, k in zip(t.src, t.start, t.end, t.kind)]
    pieces += [(int(d), 3 if split else 1, a, b, str(k)) for d, a, b, k in zip(t.dst, t.start, t.end, t.kind)]
    pieces += [(int(d), (2 if k == "reload" else 1) if split else int(k == "reload"), a, b, "host")
               for d, a, b, k in zip(h.device, h.start, h.end, h.kind)]
    out = {}
    for device, band, a, b, kind in pieces:
        x0 = min(math.floor(a * px), width - 1)
        for c in range(x0, min(max(math.ceil(b * px), x0 + 1), width)):
            out.setdefault((device, band, c), set()).add(kind)
    return out


@pytest.mark.parametrize("p2p", ["overlapped", "blocking"])
def test_transfers_and_host_copies_fill_the_lane_under_each_row(p2p):
    """With both, each half has a band for the transfers and one for the host copies: a send and
    an offload start together after a forward, and neither hides the other."""
    res = simulate(cfg("1f1b", topology=ppviz.Link(0.3, bandwidth=2.0), comm_bytes=1.0, p2p=p2p,
                       offload=ppviz.Offload(1.0, link=ppviz.Link(0.0, bandwidth=2.0))))
    width = 900
    spec = charts.gantt_chart(res, width=width).to_dict()
    (rails,), (lane,) = lane_layers(spec)
    assert sorted((r["device"], r["half"]) for r in rails["rows"]) == [(d, h) for d in range(4) for h in (0, 1)]
    px = width / res.makespan
    painted = {(r["device"], r["band"], c): r["paint"] for r in lane["rows"]
               for c in range(round(r["start"] * px), round(r["end"] * px))}
    assert all(r["half"] == r["band"] // 2 for r in lane["rows"])
    want = covered(res, width)
    assert painted.keys() == want.keys()
    # the host copies' bands show host copies only; a column only gradients cover, a gradient
    names = {"host": "host copy", "F": "activation", "B": "gradient"}
    for (device, band, c), kinds in want.items():
        assert (painted[device, band, c] == "host copy") == (band in (1, 2))
        if len(kinds) == 1:
            assert painted[device, band, c] == names[next(iter(kinds))]
    # the columns where a device sends and offloads at once show both
    both = [(d, c) for (d, band, c) in want if band == 0 and (d, 1, c) in want]
    assert both and all(painted[d, 0, c] != "host copy" == painted[d, 1, c] for d, c in both)
    legend = legend_of(spec)["legend"]
    names = dict(re_pairs(legend["labelExpr"]))
    assert [names[v] for v in legend["values"]][-3:] == ["activation transfer", "gradient transfer", "host copy"]
    fills = dict(zip(legend_of(spec)["scale"]["domain"], legend_of(spec)["scale"]["range"]))
    assert [fills[k] for k in ("activation", "gradient", "host copy")] == [
        THEMES["light"][k] for k in ("transferF", "transferB", "hostCopy")]
    assert "the lane under each row: sends, offloads to host (top half); reloads, receives (bottom half)" in \
        title_text(spec)


def test_host_copies_alone_fill_the_halves():
    res = simulate(cfg("1f1b", offload=ppviz.Offload(1.0, link=ppviz.Link(0.0, bandwidth=2.0))))
    spec = charts.gantt_chart(res, width=900).to_dict()
    (_,), (lane,) = lane_layers(spec)
    assert {r["paint"] for r in lane["rows"]} == {"host copy"} and "band" not in lane["rows"][0]
    px = 900 / res.makespan
    painted = {(r["device"], r["half"], c) for r in lane["rows"] for c in range(round(r["start"] * px), round(r["end"] * px))}
    assert painted == covered(res, 900).keys()
    assert "the lane under each row: host copies, sent (top half)" in title_text(spec)


def test_the_bars_end_above_the_lane_and_a_run_without_links_has_none():
    res = simulate(cfg("zb-h1", topology=ppviz.Link(0.3, bandwidth=2.0), comm_bytes=1.0))
    spec = charts.gantt_chart(res).to_dict()
    (rails,), (lane,) = lane_layers(spec)
    assert {r["paint"] for r in lane["rows"]} == {"activation", "gradient"}
    assert "the lane under each row: transfers, sent" in title_text(spec)

    def offsets(name):  # "datum.device + x" (or "… ? a : b") of a calculated y field, in rows
        exprs = [t["calculate"] for x in layers(spec) for t in x.get("transform", []) if t.get("as") == name]
        return {float(v) for e in exprs for v in re.findall(r"(?<![\w.])(\d+\.\d+|\d+)(?![\w.])", e)}

    assert max(offsets("device_bottom")) < min(offsets("link_top"))
    assert max(offsets("link_bottom")) <= 1
    plain = charts.gantt_chart(simulate(cfg("zb-h1"))).to_dict()
    assert lane_layers(plain) == ([], [])
    assert "lane" not in title_text(plain)


# Overview and a readable window ---------------------------------------------------------------

def x_domains(spec) -> list[list[float]]:
    return [x["encoding"]["x"]["scale"]["domain"] for x in layers(spec)
            if isinstance(x.get("encoding", {}).get("x"), dict) and "scale" in x["encoding"]["x"]]


def test_a_dense_run_draws_the_whole_run_above_a_readable_window():
    # interleaved 1F1B at p = 8, m = 32, v = 2: 1,024 ops, none wide enough for a label across 900 px
    res = simulate(cfg("interleaved-1f1b", p=8, m=32, stages_per_device=2))
    spec = charts.gantt_chart(res).to_dict()
    span = charts.gantt.readable_span(res, 900)
    assert 0 < span < res.makespan / 3
    overview, detail = ({**part, "datasets": spec["datasets"]} for part in spec["vconcat"][:2])
    assert [0, res.makespan] in x_domains(overview)
    assert all(d == [0, span] for d in x_domains(detail))
    # the window outlined on the strip is the span drawn below
    marked = [x for x in layers(overview) if x["rows"] == [{"a": 0.0, "b": span}]]
    assert len(marked) == 1 and marked[0]["mark"]["stroke"]
    # its ops: every one that overlaps the window, and 90 % of them labelled
    ops = op_rows(spec)
    assert ops and all(r["end"] > 0 and r["start"] < span for r in ops)
    assert len(ops) == sum(1 for s in slots(res) if s[1] < span)
    labels = rows_with(spec, "ink")
    inside = [r for r in ops if r["end"] <= span]
    assert len(labels) >= 0.9 * len(inside) and len(labels) >= 150
    assert f"the first {number(span)}, where its ops have room for their labels" in title_text(spec)
    # the strip holds the whole run's busy time
    strip = [r for x in layers(overview) for r in x["rows"] if "colour" in r and "top" not in r]
    assert sum(r["end"] - r["start"] for r in strip) == pytest.approx(float(res.busy.sum()), rel=1e-9)


def test_a_run_readable_whole_is_drawn_whole_without_a_strip():
    res = simulate(cfg("1f1b"))
    spec = charts.gantt_chart(res).to_dict()
    assert spec == charts.gantt_chart(res, window="all").to_dict()
    assert all(d == [0, res.makespan] for d in x_domains(spec))
    assert "whole run" not in json.dumps(spec)


def test_a_window_given_draws_that_span_under_the_strip_and_bad_ones_are_named():
    res = simulate(cfg("zb-h1", m=12))
    spec = charts.gantt_chart(res, window=(10, 20)).to_dict()
    detail = {**spec["vconcat"][1], "datasets": spec["datasets"]}
    assert all(d == [10, 20] for d in x_domains(detail))
    assert sorted((r["device"], r["start"]) for r in op_rows(spec)) == sorted(
        (s[0], s[1]) for s in slots(res) if s[2] > 10 and s[1] < 20)
    # idle in the window is the window's: no gap reaches outside it
    assert all(10 <= g["start"] and g["end"] <= 20 for g in gap_rows(spec))
    assert f"above, the whole run ({number(res.makespan)}) with the window drawn below marked: 10 to 20 (window=" \
        in title_text(spec)
    for bad in [(5, 5), (-1, 3), "some", (1, float("nan"))]:
        with pytest.raises(ConfigError, match=r"window=.*give \(t0, t1\) with 0 <= t0 < t1 \(the run ends at 39\)"):
            charts.gantt_chart(res, window=bad)


def test_a_pairs_time_is_in_the_title():
    res = simulate(cfg("dualpipe", p=8, m=16, fb=2.2))
    assert "f=1 b=1 w=1 fb=2.2 · " in title_text(charts.gantt_chart(res).to_dict())
    assert "fb=" not in title_text(charts.gantt_chart(simulate(cfg("1f1b"))).to_dict())


# A training step: each device's tail, each op's TP share, the step's figures ------------------

def stepped(**step):
    # 1F1B, p = 4, m = 8: device 0's last B runs 31..33; a reduction of 5 starts with it
    return Config("1f1b", devices=4, microbatches=8, time_unit="ms",
                  step=ppviz.Step(reduce=(5.0,) * 4, optimizer=(1.0,) * 4, gather=(0.5,) * 4, **step))


def tail_pieces(res):
    """Each tail part as drawn, from Result.tails: its stretch under its device's ops (a band),
    then the rest (a bar), with the part's own start and end."""
    t = res.tails
    hidden = t.hidden(res.last_op_end)
    out = []
    for d, kind, a, b, h in zip(t.device.tolist(), t.kind.tolist(), t.start.tolist(), t.end.tolist(), hidden.tolist()):
        split = min(b, a + h)
        out += [(d, kind, under, lo, hi, a, b) for lo, hi, under in ((a, split, True), (split, b, False)) if hi > lo]
    return sorted(out)


def test_each_devices_tail_is_drawn_after_its_ops_at_its_times():
    res = simulate(stepped())
    spec = charts.gantt_chart(res, window="all").to_dict()
    rows = rows_with(spec, "part_start")
    drawn = sorted((r["device"], r["paint"], r["under"], r["start"], r["end"], r["part_start"], r["part_end"])
                   for r in rows)
    assert drawn == tail_pieces(res)
    # by hand: device 0 reduces 31..36, under its last B until 33; then its optimizer and gather
    assert [row for row in drawn if row[0] == 0] == [
        (0, "gather", False, 37.0, 37.5, 37.0, 37.5), (0, "optimizer", False, 36.0, 37.0, 36.0, 37.0),
        (0, "reduce", False, 33.0, 36.0, 31.0, 36.0), (0, "reduce", True, 31.0, 33.0, 31.0, 36.0)]
    assert {r["part"] for r in rows} == {"gradient reduce-scatter", "optimizer step", "parameter all-gather"}
    # the time axis runs to the step's end (37.5), marked with the step time; idle to it after a tail
    assert res.step_time == 37.5
    assert rows_with(spec, "t") == [{"t": 37.5, "text": "step 37.5 ms"}]  # its rule and its text
    assert {x["encoding"]["x"]["scale"]["domain"][1] for x in layers(spec)
            if "x" in x.get("encoding", {}) and "scale" in x["encoding"]["x"]
            and "domain" in x["encoding"]["x"]["scale"]} == {37.5}
    assert (3, 27.0, 37.5) in {(g["device"], g["start"], g["end"]) for g in gap_rows(spec)}  # idle under its tail, to the end
    # in the legend, in the theme's colours
    legend = legend_of(spec)
    names = dict(re_pairs(legend["legend"]["labelExpr"]))
    assert [names[v] for v in legend["legend"]["values"] if v in ("reduce", "optimizer", "gather")] == [
        "gradient reduce-scatter (DP tail)", "optimizer step (DP tail)", "parameter all-gather (DP tail)"]
    assert ("after each device's ops, its data-parallel tail: gradient reduce-scatter (a band under the bars where "
            "it overlaps the last backwards), optimizer step, parameter all-gather") in title_text(spec)
    fills = dict(zip(legend["scale"]["domain"], legend["scale"]["range"]))
    assert [fills[k] for k in ("reduce", "optimizer", "gather")] == [
        THEMES["light"][k] for k in ("tailReduce", "tailOptimizer", "tailGather")]


def test_a_reductions_stripes_and_a_gathers_dots_stay_inside_their_bars():
    res = simulate(stepped(overlap_grad_reduce=False))
    spec = charts.gantt_chart(res, window="all", width=900).to_dict()
    bars = [r for r in rows_with(spec, "part_start") if not r["under"]]
    assert not any(r["under"] for r in rows_with(spec, "part_start"))  # nothing overlaps without overlap
    strokes = [r for x in layers(spec) if x["rows"] and {"x2", "ink"} <= set(x["rows"][0]) for r in x["rows"]]
    dots = [r for x in layers(spec) if x["rows"] and set(x["rows"][0]) == {"x", "y", "ink"} for r in x["rows"]]
    assert strokes and dots
    px, row = 900 / res.step_time, int(np.clip(480 // 4, 16, 34))

    def inside(kind, x, y):
        return any(b["paint"] == kind and b["start"] - 1e-9 <= x <= b["end"] + 1e-9 and b["device"] <= y <= b["device"] + 1
                   for b in bars)

    for s in strokes:
        assert inside("reduce", s["x"], s["y"]) and inside("reduce", s["x2"], s["y2"])
        assert (s["x2"] - s["x"]) * px == pytest.approx((s["y2"] - s["y"]) * row)  # 45°, down to the right
    assert all(inside("gather", d["x"], d["y"]) for d in dots)


def test_each_ops_tp_share_is_a_band_as_long_as_its_traffic():
    res = simulate(Config.from_model(ppviz.Transformer.preset("llama-3-70b"), ppviz.Hardware.preset("h100-sxm"),
                                     schedule="zb-h1", devices=4, microbatches=8, tensor_parallel=8, data_parallel=2))
    spec = charts.gantt_chart(res, window="all").to_dict()
    ops = {(r["device"], r["start"]): r for r in op_rows(spec)}
    tp = rows_with(spec, "traffic")
    column = {"F": 0, "B": 1, "I": 2, "W": 3}
    with_traffic = [r for r in ops.values() if res.traffic[r["stage"], column[r["kind"]]] > 0]
    o = res.ops
    assert len(tp) == len(with_traffic) == int((res.traffic[o.stage, [column[k] for k in o.kind]] > 0).sum()) > 0
    for band in tp:
        op = ops[band["device"], band["start"]]
        traffic = float(res.traffic[op["stage"], column[op["kind"]]])
        assert band["traffic"] == traffic and band["tp_end"] == op["start"] + traffic
        assert band["share"] == traffic / (op["end"] - op["start"]) and band["of_op"] == op["op"]
    names = dict(re_pairs(legend_of(spec)["legend"]["labelExpr"]))
    assert names["tp"] == "TP/EP traffic share"
    assert "the dark band along a bar's top: the share of the op spent in TP/EP collectives" in title_text(spec)
    # the step card's figures in the subtitle, as the summary gives them
    worst = int(np.argmax(res.tail))
    parts = res.breakdown.iloc[worst]
    ms = lambda x: number(float(x), "ms")  # noqa: E731
    assert (f"step {ms(res.step_time)} · MFU {share(res.mfu)} · {number(res.tokens_per_second)} tokens/s · device "
            f"{worst} (the longest tail): compute {ms(parts.compute)}, TP/EP traffic {ms(parts.tp_comm)}, P2P wait "
            f"{ms(parts.p2p_wait)}, DP tail {ms(parts.dp_tail)}, idle {ms(parts.idle)}") in title_text(spec)


def test_a_run_without_a_step_has_no_tail_nor_step_mark():
    spec = charts.gantt_chart(simulate(cfg("1f1b")), window="all").to_dict()
    assert rows_with(spec, "part_start") == [] and rows_with(spec, "traffic") == []
    assert "step " not in title_text(spec)
