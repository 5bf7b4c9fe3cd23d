"""ppviz.charts: the data inside each chart spec is checked against the Result numbers."""

import contextlib
import re
import shutil
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET

import altair as alt
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import ppviz
from ppviz.charts.style import CHART
from ppviz import Config, PpvizError, Program, charts, simulate
from ppviz.core.errors import ScheduleConstraintError, UnknownScheduleError

from .helpers import png_size

P, M = 4, 8


def cfg(schedule, p=P, m=M, **kw):
    return Config(schedule=schedule, devices=p, microbatches=m, **kw)


@pytest.fixture(scope="module")
def trio():
    return [simulate(cfg("1f1b")), simulate(cfg("interleaved-1f1b", stages_per_device=2)), simulate(cfg("zb-h1"))]


def custom_result():
    prog = Program.from_text("device 0: 0F0 0F1 0B0 0B1\ndevice 1: 1F0 1B0 1F1 1B1")
    return simulate(prog, f=1, b=2, w=0)


# Reading specs back -------------------------------------------------------------------------

def rows_of(spec: dict, datasets: dict | None = None) -> list[dict]:
    """The data rows a (sub-)spec draws, resolving Altair's named datasets."""
    datasets = spec.get("datasets", datasets or {})
    data = spec["data"]
    return data["values"] if "values" in data else datasets[data["name"]]


def sub_specs(spec: dict) -> list[dict]:
    """The leaf (layer-holding) specs of a concat chart, with datasets resolved."""
    out = []
    for key in ("vconcat", "hconcat"):
        for sub in spec.get(key, []):
            out += sub_specs({**sub, "datasets": spec["datasets"]})
    return out or [spec]


def encodings(spec: dict) -> list[dict]:
    """Every encoding block anywhere in a spec (layers, concats, facets)."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("encoding"), dict):
                found.append(node["encoding"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(spec)
    return found


def color_scales(spec: dict) -> list[dict]:
    return [enc["color"]["scale"] for enc in encodings(spec) if "scale" in enc.get("color", {})]


def by_name(rows, **match):
    return {r["name"]: r for r in rows if all(r[k] == v for k, v in match.items())}


# Bubble -------------------------------------------------------------------------------------

@pytest.mark.parametrize("metric, attr", [("fraction", "bubble_fraction"), ("rate", "bubble_rate")])
def test_bubble_rows_equal_simulated_and_closed_form(trio, metric, attr):
    spec = charts.bubble_chart(trio, metric=metric).to_dict()
    rows = by_name(rows_of(spec))
    assert set(rows) == {"1f1b", "interleaved-1f1b", "zb-h1"}
    for r in trio:
        row = rows[r.config.display_name]
        assert row["simulated"] == getattr(r, attr)
        assert row["closed"] == getattr(r.closed_form, attr)
        assert row["closed_applies"] is True
    # the definition plotted is named on the axis
    x_title = spec["layer"][0]["encoding"]["x"]["title"]
    assert x_title.startswith("bubble " + metric)
    assert ("p × makespan" in x_title) == (metric == "fraction")


def test_bubble_bars_sorted_best_first_and_ticks_only_where_published(trio):
    custom = custom_result()
    spec = charts.bubble_chart([*trio, custom]).to_dict()
    rows = by_name(rows_of(spec))
    assert rows["custom"]["closed"] is None and rows["custom"]["formula"] == "none published"
    order = spec["layer"][0]["encoding"]["y"]["sort"]
    assert order == sorted(rows, key=lambda n: rows[n]["simulated"])
    tick = spec["layer"][1]
    assert tick["mark"]["type"] == "tick"
    assert {"filter": "isValid(datum.closed)"} in tick["transform"]


def test_bubble_closed_form_faded_when_assumptions_fail():
    r = simulate(cfg("1f1b", comm=0.5))
    spec = charts.bubble_chart(r).to_dict()
    (row,) = rows_of(spec)
    assert row["closed_applies"] is False
    assert row["simulated"] > row["closed"]  # comm lengthens the run; the formula ignores it
    opacity = spec["layer"][1]["encoding"]["opacity"]["scale"]
    assert dict(zip(opacity["domain"], opacity["range"]))[False] < 1


# Peak memory --------------------------------------------------------------------------------

def test_memory_rows_equal_peaks_and_closed_form(trio):
    spec = charts.memory_chart(trio).to_dict()
    rows = rows_of(spec)
    assert len(rows) == sum(r.devices for r in trio)
    for r in trio:
        mine = sorted((row for row in rows if row["name"] == r.config.display_name), key=lambda row: row["device"])
        assert [row["peak"] for row in mine] == list(r.peak_memory)
        assert [row["closed"] for row in mine] == [float(x) for x in r.closed_form.peak_activation]
    assert "activation units" in spec["layer"][0]["encoding"]["y"]["title"]


def test_memory_of_more_runs_than_colours_is_a_table_naming_each_run():
    from ppviz.charts.style import SERIES

    results = [simulate(cfg(s, m=m)) for m in (8, 9) for s in ("1f1b", "zb-h1", "gpipe", "v-half", "v-min", "zb-v")]
    assert len(results) > len(SERIES)  # so that runs share colours
    spec = charts.memory_chart(results).to_dict()
    cells, labels = spec["layer"]
    assert cells["mark"]["type"] == "rect" and labels["mark"]["type"] == "text"
    # a row per run, in the runs' order: the row tells the run, not the colour
    from ppviz.charts.inputs import display_names

    names = display_names([r.config for r in results])  # "1f1b (m=8)" … where schedules repeat
    assert cells["encoding"]["y"]["field"] == "name" and cells["encoding"]["y"]["sort"] == names
    assert cells["encoding"]["color"]["field"] == "peak"
    rows = rows_of(spec)
    for name, r in zip(names, results):
        mine = sorted((row for row in rows if row["name"] == name), key=lambda row: row["device"])
        assert [row["peak"] for row in mine] == list(r.peak_memory)
        assert [row["label"].split(" ")[0] for row in mine] == [f"{x:.4g}" for x in r.peak_memory]
    # the comparison names its runs in every chart, so no run legend (one of repeated colours could
    # not tell them apart); the Pareto still tells runs of one colour apart by shape
    full = charts.comparison_charts(results).to_dict()
    legends = [enc["color"].get("legend", "none") for enc in encodings(full) if enc.get("color", {}).get("field") == "name"]
    assert legends and all(legend is None for legend in legends)
    assert any("shape" in enc for enc in encodings(full))
    svg = charts.to_svg(charts.comparison_charts(results))
    assert all(svg.count(f">{name}<") >= 3 for name in names)  # bubble axis, Pareto label, memory row


def test_a_wide_memory_table_names_one_device_in_a_few_so_its_labels_do_not_run_together():
    # before, at p = 64 the 64 labels ran into one another: "…9101112131415…"
    names = ("1f1b", "zb-h1", "gpipe", "v-half", "v-min", "zb-v")
    for p, step in ((8, 1), (24, 1), (32, 2), (64, 4)):
        results = [simulate(cfg(s, p=p, m=m)) for m in (p, p + 1) for s in names]
        cells = charts.memory_chart(results).to_dict()["layer"][0]
        assert cells["encoding"]["x"]["axis"]["values"] == list(range(0, p, step))


def test_memory_includes_static_and_converts_to_bytes():
    gib = 2 ** 30
    runs = [simulate(cfg(s, params=3, activation_bytes=gib / 4)) for s in ("1f1b", "zb-h1")]
    spec = charts.memory_chart(runs).to_dict()
    rows = rows_of(spec)
    for r in runs:
        mine = sorted((row for row in rows if row["name"] == r.config.schedule), key=lambda row: row["device"])
        assert [row["peak"] for row in mine] == pytest.approx(list(r.peak_memory_bytes / gib))
        assert [row["static"] for row in mine] == pytest.approx([3 / 4] * P)
        cf = r.closed_form.peak_activation
        assert [row["closed"] for row in mine] == pytest.approx([(c + 3) / 4 for c in cf])
    y_title = spec["layer"][0]["encoding"]["y"]["title"]
    assert "GiB" in y_title and "static" in y_title


def test_memory_falls_back_to_units_when_some_bytes_are_missing():
    runs = [simulate(cfg("1f1b", activation_bytes=1e6)), simulate(cfg("zb-h1"))]
    spec = charts.memory_chart(runs).to_dict()
    assert "activation units" in spec["layer"][0]["encoding"]["y"]["title"]
    assert max(row["peak"] for row in rows_of(spec)) == P


# Pareto -------------------------------------------------------------------------------------

def test_pareto_front_on_a_hand_made_set():
    bubble = [0.10, 0.20, 0.15, 0.30, 0.10, 0.05, 0.10 + 1e-17]
    memory = [8.0, 4.0, 10.0, 4.0, 8.0, 20.0, 8.0]
    # 0.15/10 is beaten by 0.10/8; 0.30/4 by 0.20/4; equal points (incl. float noise) all stay on it
    assert charts.pareto_front(bubble, memory).tolist() == [True, True, False, False, True, True, True]


def test_pareto_front_rejects_mismatched_lengths():
    with pytest.raises(PpvizError, match="one memory value per bubble value"):
        charts.pareto_front([0.1, 0.2], [1.0])


def test_pareto_chart_flags_match_front():
    runs = [simulate(cfg(s, p=8, m=32)) for s in ("gpipe", "1f1b", "zb-h1")]
    runs.append(simulate(cfg("interleaved-1f1b", p=8, m=32, stages_per_device=2)))
    rows = by_name(rows_of(charts.pareto_chart(runs).to_dict()))
    assert rows["zb-h1"]["front"] is True  # lowest bubble at 1F1B's memory
    assert rows["gpipe"]["front"] is False and rows["1f1b"]["front"] is False
    for r in runs:
        row = rows[r.config.schedule]
        assert row["bubble"] == r.bubble_fraction
        assert row["memory"] == r.peak_memory.max()
    # every run is named by a placed label
    shown = [line for r in rows.values() if r["place"] >= 0 for line in r["text"].split("\n")]
    assert sorted(shown) == sorted(rows)


def _drawn_labels(svg: str) -> list[tuple[float, float, float, float, str]]:
    """The boxes of the placed labels as the SVG draws them (their text over the halo): from
    each line's baseline, a font size up and a quarter down, an average glyph wide."""
    boxes = []
    for element in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text"):
        if element.get("aria-roledescription") != "text mark" or element.get("stroke"):
            continue
        x, y = map(float, re.match(r"translate\(([-\d.e]+),([-\d.e]+)\)", element.get("transform")).groups())
        lines = [t.text for t in element] or [element.text]
        size = float(element.get("font-size").rstrip("px"))
        width = 0.55 * size * max(map(len, lines))
        left = {"start": x, "middle": x - width / 2, "end": x - width}[element.get("text-anchor")]
        boxes.append((left, y - size, left + width, y + 13 * (len(lines) - 1) + size / 4, "/".join(lines)))
    return boxes


@pytest.mark.parametrize("draw", ["frontier", "pareto"])
def test_labels_are_drawn_where_they_were_placed_clear_of_each_other(draw):
    # Vega draws a multi-line label's first line by its baseline and the rest below it: labels
    # placed above their point ran down over the next point's label
    if draw == "frontier":
        chart = ppviz.frontier(Config(devices=8, microbatches=32)).chart()
    else:
        chart = charts.pareto_chart([Config(schedule=s, devices=8, microbatches=32) for s in
                                     ("1f1b", "zb-h1", "zb-v", "v-half", "v-min", "interleaved-1f1b", "dualpipe-v")])
    boxes = _drawn_labels(charts.to_svg(chart))
    assert len(boxes) >= 4 and any("/" in b[4] for b in boxes) == (draw == "frontier")
    for i, a in enumerate(boxes):
        for b in boxes[:i]:
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (a[4], b[4])


def test_pareto_labels_stay_apart_and_close_points_share_one():
    from ppviz.charts.labels import PLACES, place_labels

    xs, ys = [100, 104, 300, 355, 200], [100, 97, 100, 30, 200]
    names = ["a", "b", "c", "far-right", "d"]
    texts, place, _ = place_labels(xs, ys, names, [0, 0, 1, 1, 1], 360, 260)
    assert texts[:2] == ["b\na", ""]  # within a marker of each other: one label, top point first
    assert place[1] == -1 and all(k >= 0 for k in place[:1] + place[2:])
    assert PLACES[place[3]][0] == "right"  # no room to its right: label goes left
    # a crowded row: whatever gets placed must not overlap (boxes from the same glyph estimate)
    xs, ys = [50 + 20 * i for i in range(7)], [50] * 7
    texts, place, _ = place_labels(xs, ys, [f"run-{i}" for i in range(7)], [0] * 7, 360, 260)
    assert all(texts) and sum(k >= 0 for k in place) >= 4
    boxes = []
    for x, y, t, k in zip(xs, ys, texts, place):
        if k < 0:
            continue
        align, baseline, dx, dy = PLACES[k]
        w, h = 0.55 * 11 * len(t), 13
        x0 = x + dx - {"left": 0, "center": w / 2, "right": w}[align]
        y0 = y + dy - {"bottom": h, "middle": h / 2, "top": 0}[baseline]
        boxes.append((x0, y0, x0 + w, y0 + h))
    for i, a in enumerate(boxes):
        for b in boxes[:i]:
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3])


def test_a_crowd_of_points_is_named_with_leader_lines():
    # were left out (named only by the tooltip, which a PNG has not): compare --all on llama-3-8b
    # at p = 4, m = 16 left 4 of its 19 runs in one cluster unnamed
    from ppviz.charts.labels import LEADER_FROM, PLACES, point_labels

    xs, ys = [0.15 + 0.009 * i for i in range(10)], [80.0 + (i % 2) * 4 for i in range(10)]
    labels = point_labels(xs, ys, [f"schedule-{i}" for i in range(10)], [0] * 10, x_end=0.3, y_end=250, width=320,
                          height=300)
    assert all(label["place"] >= 0 for label in labels)  # 3 were left out
    assert any(label["place"] >= LEADER_FROM for label in labels)
    for label, x, y in zip(labels, xs, ys):
        if label["place"] < LEADER_FROM:
            assert label["lead_x"] is None and label["from_x"] is None
            continue
        # the leader runs from the marker's edge, 7 px from its centre, to the label's anchor
        _, _, dx, dy = PLACES[label["place"]]
        assert label["lead_x"] == pytest.approx(x + dx / 320 * 0.3)
        assert label["lead_y"] == pytest.approx(y - dy / 300 * 250)
        assert np.hypot((label["from_x"] - x) / 0.3 * 320, (label["from_y"] - y) / 250 * 300) == pytest.approx(7.0)
    # drawn: every run named, the labels apart, a leader layer under the markers
    model, gpu = ppviz.Transformer.preset("llama-3-8b"), ppviz.Hardware.preset("h100-sxm")
    runs = []
    for spec in ppviz.list_schedules():
        if spec.builder is not None and not spec.forward_only:
            with contextlib.suppress(ppviz.PpvizError):
                runs.append(Config.from_model(model, gpu, schedule=spec.name, devices=4, microbatches=16))
    assert len(runs) == 25
    chart = charts.comparison_charts(runs)
    pareto = chart.to_dict()["vconcat"][0]["hconcat"][1]
    leaders = [k for k, layer in enumerate(pareto["layer"]) if layer["encoding"].get("x2", {}).get("field") == "lead_x"]
    points = [k for k, layer in enumerate(pareto["layer"]) if layer["mark"]["type"] == "point"]
    assert len(leaders) == 1 and leaders[0] < min(points)
    rows = [row for data in chart.to_dict()["datasets"].values() for row in data if "lead_x" in row]
    assert len(rows) == 25 and 1 <= sum(row["place"] >= LEADER_FROM for row in rows) <= 6
    names = {r.schedule for r in runs}
    boxes = [b for b in _drawn_labels(charts.to_svg(chart)) if set(b[4].split("/")) <= names]
    assert {name for b in boxes for name in b[4].split("/")} == names
    for i, a in enumerate(boxes):
        for b in boxes[:i]:
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (a[4], b[4])


# Colours and names --------------------------------------------------------------------------

def test_colours_follow_the_schedule_and_are_shared_in_the_comparison(trio):
    a = charts.schedule_colors([cfg("1f1b"), cfg("zb-h1")])
    b = charts.schedule_colors([cfg("gpipe"), cfg("zb-h1"), cfg("1f1b")])
    assert a["1f1b"] == b["1f1b"] and a["zb-h1"] == b["zb-h1"]
    assert set(a.values()) <= set(charts.PALETTE)
    spec = charts.comparison_charts(trio).to_dict()
    scales = color_scales(spec)
    assert len(scales) >= 3
    expected = charts.schedule_colors(trio)
    for scale in scales:
        assert dict(zip(scale["domain"], scale["range"])) == expected
    assert spec["resolve"]["scale"]["color"] == "shared"


def test_comparison_embeds_the_three_charts_with_result_numbers(trio):
    spec = charts.comparison_charts(trio).to_dict()
    leaves = sub_specs(spec)
    marks = [[layer["mark"]["type"] for layer in leaf["layer"]] for leaf in leaves]
    assert marks[0][:2] == ["bar", "tick"] and "point" in marks[1] and marks[2] == ["bar", "tick"]
    bubble, pareto, memory = (by_name(rows_of(leaf)) for leaf in leaves)
    for r in trio:
        name = r.config.display_name
        assert bubble[name]["simulated"] == r.bubble_fraction
        assert pareto[name]["memory"] == r.peak_memory.max()



def title_tops(svg: str, titles: list[str]) -> dict[str, float]:
    """The rendered y (px from the top) of each chart title, by adding up its groups' translations."""
    found = {}

    def walk(node, y):
        move = re.match(r"translate\(([-\d.e]+),\s*([-\d.e]+)\)", node.get("transform", ""))
        y += float(move.group(2)) if move else 0.0
        if (node.text or "").strip() in titles:
            found[node.text.strip()] = y
        for child in node:
            walk(child, y)

    walk(ET.fromstring(svg), 0.0)
    return found


def test_comparison_top_row_titles_line_up():
    # the scatter's memory axis title, rotated, once overhung its plot and lifted its chart title
    # about 25 px above the bar chart's
    runs = [cfg(s, p=8, m=32) for s in ("1f1b", "interleaved-1f1b", "zb-h1", "zb-v", "dualpipe-v")]
    titles = ["Bubble fraction per schedule", "Bubble fraction vs peak memory"]
    tops = title_tops(charts.to_svg(charts.comparison_charts(runs)), titles)
    assert set(tops) == set(titles)
    assert abs(tops[titles[0]] - tops[titles[1]]) <= 1

def test_equal_display_names_are_told_apart():
    runs = [cfg("1f1b", m=8), cfg("1f1b", m=16), cfg("zb-h1"), cfg("zb-h1")]
    colors = charts.schedule_colors(runs)
    assert list(colors) == ["1f1b (m=8)", "1f1b (m=16)", "zb-h1 #1", "zb-h1 #2"]
    assert len(set(colors.values())) == 4


def test_labels_are_data_and_render_as_text():
    label = "<b>mine</b> & co"
    spec = charts.bubble_chart(cfg("1f1b", label=label)).to_dict()
    assert rows_of(spec)[0]["name"] == label
    root = ET.fromstring(charts.to_svg(charts.bubble_chart(cfg("1f1b", label=label))))
    texts = ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert label in texts
    assert not any(el.tag.endswith("}b") for el in root.iter())


def test_charts_stay_restylable(trio):
    chart = charts.bubble_chart(trio).properties(width=500).configure_axis(labelFontSize=14)
    spec = chart.to_dict()
    assert spec["width"] == 500 and spec["config"]["axis"]["labelFontSize"] == 14
    # they compose as any Altair charts do, and the composition still renders with both inside
    side_by_side = alt.hconcat(charts.bubble_chart(trio), charts.memory_chart(trio))
    svg = charts.to_svg(side_by_side)
    assert "bubble fraction" in svg and "peak activation" in svg


# Bad input ----------------------------------------------------------------------------------

@pytest.mark.parametrize("call, words", [
    (lambda: charts.bubble_chart([]), ["runs=[]", "empty", "one or more runs"]),
    (lambda: charts.bubble_chart([cfg("1f1b"), 3]), ["runs[1]=3", "an int is not a run", "Config, Program or Result"]),
    (lambda: charts.memory_chart(42), ["runs=42", "an int is neither a run nor a list of runs"]),
    (lambda: charts.bubble_chart(cfg("1f1b"), metric="idle"), ["metric='idle'", "'fraction'", "'rate'"]),
    (lambda: charts.pareto_chart(cfg("1f1b"), metric="ratio"), ["metric='ratio'"]),
    (lambda: charts.comparison_charts([cfg("1f1b")], metric=None), ["metric=None"]),
    (lambda: charts.memory_curve_chart([cfg("1f1b"), cfg("zb-h1")]), ["run=[", "a list is not a run"]),
    (lambda: charts.sweep_chart("1f1b", []), ["microbatches=[]", "empty"]),
    (lambda: charts.sweep_chart("1f1b", [4, 0]), ["whole numbers >= 1"]),
    (lambda: charts.sweep_chart("1f1b", [4], metric="bubble"), ["'makespan'", "'fraction'"]),
    (lambda: charts.sweep_chart("1f1b", [4], microbatch=3), ["microbatch=3", "Config fields"]),
    (lambda: charts.summarize_steps([0, 1], [0, 1], max_points=3), ["max_points=3", ">= 4"]),
    (lambda: charts.to_png(charts.bubble_chart(cfg("1f1b")), scale=0), ["scale=0"]),
    (lambda: charts.to_svg("chart.json"), ["Altair chart"]),
])
def test_bad_input_names_what_was_wrong(call, words):
    with pytest.raises(PpvizError) as info:
        call()
    assert isinstance(info.value, ValueError)
    for w in words:
        assert w in str(info.value)


# Sweep --------------------------------------------------------------------------------------

def test_sweep_makespans_equal_simulate_and_closed_form():
    ms = [4, 8, 12, 16]
    spec = charts.sweep_chart(["1f1b", Config(schedule="zb-h1", devices=2, f=2)], microbatches=ms, devices=P,
                              f=1.5).to_dict()
    rows = rows_of(spec)
    for schedule in ("1f1b", "zb-h1"):
        sim = {r["m"]: r["value"] for r in rows if r["schedule"] == schedule and r["kind"] == "simulated"}
        closed = {r["m"]: r["value"] for r in rows if r["schedule"] == schedule and r["kind"] == "closed form"}
        assert sorted(sim) == ms
        for m in ms:
            res = simulate(cfg(schedule, m=m, f=1.5))
            assert sim[m] == res.makespan
            assert closed[m] == res.closed_form.makespan
    shapes = spec["layer"][1]["encoding"]["shape"]["scale"]
    assert len(set(shapes["range"])) == 2


def test_sweep_skips_refused_microbatches_and_says_so():
    # interleaved-1f1b with p=4 refuses m=9 (neither a multiple of p nor of m // p rounds)
    with pytest.raises(ScheduleConstraintError):
        cfg("interleaved-1f1b", m=9, stages_per_device=2)
    chart = charts.sweep_chart(["interleaved-1f1b", "1f1b"], microbatches=[8, 9, 12], devices=P, metric="fraction")
    spec = chart.to_dict()
    rows = rows_of(spec)
    inter = [r for r in rows if r["schedule"] == "interleaved-1f1b" and r["kind"] == "simulated"]
    assert [r["m"] for r in inter] == [8, 12] and {r["not_run"] for r in inter} == {"9"}
    assert [r["value"] for r in inter] == [simulate(cfg("interleaved-1f1b", m=m, stages_per_device=2)).bubble_fraction
                                          for m in (8, 12)]
    assert [r["m"] for r in rows if r["schedule"] == "1f1b" and r["kind"] == "simulated"] == [8, 9, 12]
    notes = spec["title"]["subtitle"]
    assert any(n.startswith("interleaved-1f1b not run at m = 9:") for n in notes)


def test_sweep_errors_when_nothing_runs_and_on_unknown_names():
    with pytest.raises(ScheduleConstraintError, match="no schedule accepts any of them"):
        charts.sweep_chart("interleaved-1f1b", microbatches=[9, 11], devices=P)
    with pytest.raises(UnknownScheduleError, match="1f1x"):
        charts.sweep_chart(["1f1b", "1f1x"], microbatches=[8])


def test_sweep_runs_whatever_the_registry_holds():
    names = [s.name for s in ppviz.list_schedules() if s.builder is not None]
    spec = charts.sweep_chart(names, microbatches=[8, 16], devices=P).to_dict()
    drawn = {r["schedule"] for r in rows_of(spec)}
    noted = " ".join(spec["title"]["subtitle"])
    assert all(n in drawn or n in noted for n in names)


@pytest.fixture(scope="module")
def swept():
    return ppviz.sweep({"schedule": ["1f1b", "dualpipe"], "devices": [2, 3, 4], "microbatches": [4, 8]},
                       n_jobs=1, progress=False)


def test_the_sweep_heatmap_marks_refused_cells_with_their_reason(swept):
    # was blank: the notebook's heatmap drew only the rows that ran, a refused cell read as missing
    from ppviz.core.numbers import number, share

    chart = charts.sweep_heatmap(swept)
    spec = chart.to_dict()
    rows = rows_of(spec)
    assert len(rows) == len(swept) == 12
    for row, (_, want) in zip(rows, swept.iterrows()):
        assert (row["facet"], row["x"], row["y"]) == (want.schedule, want.microbatches, want.devices)
        if isinstance(want.refusal, str):
            assert row["refused"] and row["label"] == "×" and row["why"] == want.refusal and row["value"] is None
        else:
            assert not row["refused"] and row["value"] == want.bubble_fraction and row["label"] == share(want.bubble_fraction)
    refused = [row for row in rows if row["refused"]]
    assert {(row["x"], row["y"]) for row in refused} == {(4, 3), (8, 3), (4, 4)}  # odd p; m < 2p
    assert "dualpipe needs an even number of devices" in refused[0]["why"]
    # drawn: a cell for every row, the refused ones grey under a cross, the reason in the tooltip
    layers = spec["spec"]["layer"]
    assert [layer["transform"][0]["filter"] for layer in layers[:2]] == ["!datum.refused", "datum.refused"]
    assert layers[1]["mark"]["fill"] == CHART["reference"]
    assert {t["field"] for t in layers[1]["encoding"]["tooltip"]} >= {"why", "x", "y", "facet"}
    assert "× on grey: refused by the schedule (hover for why)" in " ".join(" ".join(spec["title"]["subtitle"]).split())
    root = ET.fromstring(charts.to_svg(chart))
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert texts.count("×") == 3  # a cross in each refused cell (the subtitle names it in a line of its own)
    assert sum(text == share(v) for text in texts for v in swept.bubble_fraction.dropna().unique()) >= 9
    # makespan too, in the run's numbers
    spec = charts.sweep_heatmap(swept, metric="makespan", x="devices", y="microbatches").to_dict()
    assert [r["label"] for r in rows_of(spec) if not r["refused"]] == [number(x) for x in swept.makespan.dropna()]
    assert [r["label"] for r in rows_of(spec)][:2] == ["15", "27"]  # m(f+b+w) + (p−1)(f+b+w) at p = 2


@pytest.mark.parametrize("call, words", [
    (lambda f: charts.sweep_heatmap(f.drop(columns="refusal")), ["DataFrame ppviz.sweep returns"]),
    (lambda f: charts.sweep_heatmap([1, 2]), ["frame='list'"]),
    (lambda f: charts.sweep_heatmap(f, x="m"), ["x='m'", "schedule, devices, microbatches"]),
    (lambda f: charts.sweep_heatmap(f, y="makespan", metric="makespan"), ["y='makespan'"]),
    (lambda f: charts.sweep_heatmap(f, x="devices"), ["three different columns"]),
    (lambda f: charts.sweep_heatmap(f, metric="bubble"), ["metric='bubble'", "'fraction'"]),
    (lambda f: charts.sweep_heatmap(f.iloc[:0]), ["empty"]),
    (lambda f: charts.sweep_heatmap(f.assign(comm=[0.0] * 6 + [0.1] * 6).assign(devices=2)),
     ["several rows share a cell", "differ in comm", "frame[frame.comm == ...]"]),
])
def test_the_sweep_heatmap_refuses_a_frame_it_cannot_draw(swept, call, words):
    with pytest.raises(PpvizError) as info:
        call(swept)
    for w in words:
        assert w in str(info.value)


# Summarising memory curves ------------------------------------------------------------------

@st.composite
def step_curves(draw):
    n = draw(st.integers(1, 300))
    gaps = draw(st.lists(st.integers(1, 1000), min_size=n, max_size=n))
    times = np.cumsum(gaps, dtype=float) - gaps[0]
    value = st.one_of(st.integers(-4, 4).map(float), st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False))
    values = np.array(draw(st.lists(value, min_size=n, max_size=n)))
    return times, values, draw(st.integers(4, 80))


def value_at(times, values, t):
    k = np.searchsorted(times, t, side="right") - 1
    return values[k], times[k]


@given(step_curves())
def test_summary_keeps_peaks_on_the_true_curve(curve):
    times, values, max_points = curve
    st_, sv = charts.summarize_steps(times, values, max_points)
    assert len(st_) <= max_points
    assert np.all(np.diff(st_) > 0)
    for t, v in zip(st_, sv):
        on, at = value_at(times, values, t)
        assert at == t and on == v  # a real change point, with the curve's own value
    assert sv.max() == values.max() and sv.min() == values.min()
    assert times[np.argmax(values)] in st_  # the global peak, at the first time it is reached
    assert st_[0] == times[0] and st_[-1] == times[-1]
    if len(times) <= max_points:
        assert np.array_equal(st_, times) and np.array_equal(sv, values)


@given(step_curves())
def test_summary_keeps_every_time_buckets_min_and_max(curve):
    # the documented cut: (max_points - 2) // 2 equal time buckets over the curve's span
    times, values, max_points = curve
    st_, sv = charts.summarize_steps(times, values, max_points)
    buckets, span = (max_points - 2) // 2, times[-1] - times[0]
    assume(len(times) > max_points and span > 0)

    def bucket(t):
        return np.minimum(((t - times[0]) / span * buckets).astype(int), buckets - 1)

    of_true, of_kept = bucket(times), bucket(st_)
    for b in np.unique(of_true):
        kept = sv[of_kept == b]
        assert kept.max() == values[of_true == b].max() and kept.min() == values[of_true == b].min()


def test_memory_curve_of_a_long_run_stays_under_altairs_row_limit():
    r = simulate(cfg("zb-h1", p=8, m=4200))
    assert len(r.ops) > 100_000 and len(r.memory.times) > 5000
    chart = charts.memory_curve_chart(r)
    spec = chart.to_dict()  # Altair's default transformer raises MaxRowsError above 5000 rows
    rows = rows_of(spec)
    assert len(rows) <= charts.MAX_ROWS + r.devices
    for d in range(r.devices):
        mine = [row for row in rows if row["device"] == d]
        assert max(row["memory"] for row in mine) == r.peak_activation[d]
        peak = [row for row in mine if row["peak"]]
        assert len(peak) == 1 and peak[0]["memory"] == r.peak_activation[d]
        assert f"peak {r.peak_activation[d]:.4g}" in peak[0]["row"]
        for row in mine[:: max(1, len(mine) // 50)]:
            assert row["memory"] == r.memory.at(row["time"])[d]
    assert "summarised" in " ".join(spec["title"]["subtitle"])


def test_memory_curve_small_run_is_exact_and_in_bytes():
    r = simulate(cfg("1f1b", params=2, activation_bytes=2 ** 20))
    spec = charts.memory_curve_chart(r).to_dict()
    rows = rows_of(spec)
    for d in range(P):
        times, values = r.memory.curve(d)
        mine = [row for row in rows if row["device"] == d]
        assert [row["time"] for row in mine[: len(times)]] == list(times)
        assert [row["memory"] for row in mine[: len(times)]] == list((values + r.static_memory[d]))
        assert mine[-1]["time"] == r.makespan
    assert "MiB" in " ".join(spec["title"]["subtitle"])
    assert not any("summarised" in s for s in spec["title"]["subtitle"])


# Offline export -----------------------------------------------------------------------------

def test_svg_and_png_export_offline(trio, no_network, tmp_path):
    chart = charts.comparison_charts(trio)
    root = ET.fromstring(charts.to_svg(chart))
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    texts = {"".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")}
    assert {"1f1b", "interleaved-1f1b", "zb-h1"} <= texts
    w1, h1 = png_size(charts.to_png(chart, scale=1))
    w2, h2 = png_size(charts.to_png(chart, scale=2))
    assert w1 > 600 and h1 > 400
    assert (w2, h2) == (2 * w1, 2 * h1)
    chart.save(tmp_path / "c.svg")  # Altair's own save goes through vl-convert too
    chart.save(tmp_path / "c.png")
    ET.parse(tmp_path / "c.svg")
    assert png_size((tmp_path / "c.png").read_bytes())[0] > 600


def test_export_refuses_external_data():
    chart = alt.Chart("https://example.com/data.json").mark_point().encode(x="a:Q")
    with pytest.raises(ValueError, match="not allowed"):
        charts.to_svg(chart)


@pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("unshare") is None,
                    reason="needs Linux user namespaces to cut the network")
def test_export_in_a_process_with_no_network(tmp_path):
    # vl-convert is Rust: blocking Python's socket module would not stop it, a network namespace does
    if subprocess.run(["unshare", "-rn", "true"], capture_output=True).returncode != 0:
        pytest.skip("unprivileged user namespaces are disabled here")
    code = textwrap.dedent(f"""
        import ppviz
        from ppviz import charts
        c = charts.comparison_charts([ppviz.Config(schedule=s, devices=4, microbatches=8) for s in ("1f1b", "zb-h1")])
        svg, png = charts.to_svg(c), charts.to_png(c)
        c.save({str(tmp_path / "c.svg")!r})
        print(svg[:4], png[1:4].decode(), len(png) > 10_000)
    """)
    out = subprocess.run(["unshare", "-rn", sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["<svg", "PNG", "True"]
    ET.parse(tmp_path / "c.svg")


# Offline widget -----------------------------------------------------------------------------

URL_IMPORT = re.compile(r"""(?:^|[;\s])import\b[^;]*?from\s*["']https?://|import\(\s*["']https?://""")


def test_offline_widget_leaves_jupyterchart_alone(trio):
    esm_before, offline_before = alt.JupyterChart._esm, alt.JupyterChart._is_offline
    assert URL_IMPORT.search(esm_before)  # Altair's own widget loads vega from a CDN
    w = charts.widget(charts.bubble_chart(trio))
    assert alt.JupyterChart._esm is esm_before and alt.JupyterChart._is_offline is offline_before
    assert "_esm" not in alt.JupyterChart.__dict__ or alt.JupyterChart.__dict__["_esm"] is esm_before
    assert isinstance(w, alt.JupyterChart) and charts.OfflineChart._is_offline
    assert w._esm == charts.OfflineChart._esm != esm_before
    assert not URL_IMPORT.search(w._esm) and "esm.sh" not in w._esm
    assert alt.JupyterChart(charts.bubble_chart(trio))._esm == esm_before
    assert w.spec["datasets"]  # the chart's data travels with the widget


def test_display_shows_the_offline_widget(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", shown.append)
    assert charts.display(charts.bubble_chart(cfg("1f1b"))) is None
    assert len(shown) == 1 and isinstance(shown[0], charts.OfflineChart)
    assert not URL_IMPORT.search(shown[0]._esm)


def test_offline_widget_ignores_jupyterchart_switching_back():
    bundle = charts.widget(charts.bubble_chart(cfg("1f1b")))._esm
    was_offline = alt.JupyterChart._is_offline
    try:
        alt.JupyterChart.enable_offline(True)
        alt.JupyterChart.enable_offline(False)
        assert URL_IMPORT.search(alt.JupyterChart._esm)
        assert charts.widget(charts.bubble_chart(cfg("1f1b")))._esm == bundle
    finally:
        alt.JupyterChart.enable_offline(was_offline)


def test_import_ppviz_does_not_import_altair_until_charts_are_used():
    code = ("import sys, ppviz; print('altair' in sys.modules, 'vl_convert' in sys.modules); "
            "ppviz.charts.bubble_chart; print('altair' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "True"]


# Communication ------------------------------------------------------------------------------

def test_communication_chart_rows_are_the_results_idle_split_and_volume():
    link = ppviz.Topology(devices_per_node=2, intra=ppviz.Link(0.2, bandwidth=8.0), inter=ppviz.Link(1.0, bandwidth=2.0))
    runs = [simulate(cfg("1f1b", topology=link, comm_bytes=4.0)),
            simulate(cfg("interleaved-1f1b", stages_per_device=2, topology=link, comm_bytes=4.0)),
            simulate(cfg("zb-h1", comm=0.5))]
    spec = charts.communication_chart(runs).to_dict()
    exposed, volume = sub_specs(spec)
    parts = rows_of(exposed["layer"][0], spec["datasets"])
    for r, name in zip(runs, ["1f1b", "interleaved-1f1b", "zb-h1"]):
        total = r.devices * r.makespan
        mine = {row["part"]: row for row in parts if row["name"] == name}
        assert mine["waiting for communication"]["share"] == pytest.approx(r.exposed_comm.sum() / total)
        assert mine["waiting for compute"]["share"] == pytest.approx(r.idle_compute.sum() / total)
        # the two parts make the bubble fraction
        assert sum(row["share"] for row in mine.values()) == pytest.approx(r.bubble_fraction)
    bars = by_name(rows_of(volume, spec["datasets"]))
    # 1F1B: 3 boundaries × 8 microbatches × 2 directions of 4 bytes; interleaved v = 2 has 7 boundaries
    assert (bars["1f1b"]["transfers"], bars["1f1b"]["bytes"]) == (48, 192.0)
    assert (bars["interleaved-1f1b"]["transfers"], bars["interleaved-1f1b"]["bytes"]) == (112, 448.0)
    # nodes {0, 1} and {2, 3}: 1F1B crosses at stages 1|2; interleaved (stage s on device s mod 4)
    # at 1|2, 3|4 (device 3 to 0) and 5|6; each both ways for 8 microbatches
    assert bars["1f1b"]["across"] == 1 * 2 * 8 and bars["interleaved-1f1b"]["across"] == 3 * 2 * 8
    assert bars["zb-h1"]["label"] == "no transfers (bare comm)" and bars["zb-h1"]["bytes"] == 0.0
    root = ET.fromstring(charts.to_svg(charts.communication_chart(runs)))
    text = " ".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))
    assert "Exposed communication per schedule" in text and "112 transfers" in text


# Every chart ppviz returns shows offline, as a cell's last expression too ------------------------------

def every_chart(trio):
    """(name, the chart as ppviz.charts returns it, the chart its undecorated function builds)"""
    from ppviz.charts import comparison, gantt

    calls = [("bubble_chart", (trio,)), ("memory_chart", (trio,)), ("pareto_chart", (trio,)),
             ("comparison_charts", (trio,)), ("memory_curve_chart", (trio[1],)),
             ("sweep_chart", (["1f1b", "zb-h1"], [4, 8]), {"devices": 4}), ("gantt_chart", (trio[2],)),
             ("gantt_chart", (trio[0],), {"memory": False})]
    for name, args, *kw in calls:
        kwargs = kw[0] if kw else {}
        plain = getattr(comparison, name, None) or getattr(gantt, name)
        yield name, getattr(charts, name)(*args, **kwargs), plain.__wrapped__(*args, **kwargs)


def test_charts_are_altairs_own_classes_with_unchanged_specs(trio):
    for name, chart, plain in every_chart(trio):
        assert type(chart) is not type(plain) and isinstance(chart, type(plain)), name
        assert type(plain).__module__.startswith("altair.")
        assert chart.to_dict() == plain.to_dict(), name
        assert repr(chart) == repr(plain)


def test_a_chart_as_a_cells_last_expression_is_the_offline_widget(trio, monkeypatch):
    from ppviz.charts import offline

    made, real = [], offline.widget

    def recording(*args, **kwargs):  # the real widget, kept to look at
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(offline, "widget", recording)
    user_renderer, user_esm = alt.renderers.active, alt.JupyterChart._esm
    assert user_renderer == "default"
    for name, chart, _ in every_chart(trio):
        bundle, _metadata = chart._repr_mimebundle_(include=None, exclude=None)
        shown = made[-1]
        assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == shown.model_id
        assert isinstance(shown, charts.OfflineChart) and shown.spec == chart.to_dict(), name
        assert not URL_IMPORT.search(shown._esm) and shown.embed_options == {"renderer": "svg"}
    # nothing global changed: the user's own charts still go through the user's renderer
    assert alt.renderers.active == user_renderer and alt.JupyterChart._esm is user_esm
    assert "text/html" in alt.Chart(alt.Data(values=[{"a": 1}])).mark_point()._repr_mimebundle_()



def test_a_renderer_the_user_chose_that_works_offline_is_kept(trio):
    chart = charts.bubble_chart(trio)
    with alt.renderers.enable("svg"):
        bundle = chart._repr_mimebundle_()
    assert set(bundle) == {"image/svg+xml"} and bundle["image/svg+xml"].startswith("<svg")


def test_altairs_methods_and_operators_keep_the_offline_display(trio):
    bubble, memory = charts.bubble_chart(trio), charts.memory_chart(trio)
    for derived, base in [(bubble.properties(width=300), alt.LayerChart), (bubble | memory, alt.HConcatChart),
                          (bubble & memory, alt.VConcatChart), (bubble + bubble, alt.LayerChart),
                          (bubble.configure_axis(grid=False), alt.LayerChart)]:
        assert isinstance(derived, base) and type(derived).__module__ == "ppviz.charts.offline"
        assert "application/vnd.jupyter.widget-view+json" in derived._repr_mimebundle_()[0]
    assert (bubble | memory).to_dict() == alt.hconcat(bubble, memory).to_dict()


def test_the_comparison_adds_communication_when_a_run_models_its_links(trio):
    link = ppviz.Topology(devices_per_node=2, intra=ppviz.Link(0.2, bandwidth=8.0), inter=ppviz.Link(1.0, bandwidth=2.0))
    runs = [simulate(cfg("1f1b", topology=link, comm_bytes=4.0)), simulate(cfg("zb-h1", comm=0.5))]
    spec = charts.comparison_charts(runs).to_dict()
    assert len(spec["vconcat"]) == 3
    exposed, volume = sub_specs(spec)[3:]
    assert by_name(rows_of(volume, spec["datasets"]))["1f1b"]["transfers"] == 48  # as communication_chart's
    assert len(charts.comparison_charts(trio).to_dict()["vconcat"]) == 2  # no run with links: no such row
    # the row's two titles line up, as the top row's do
    titles = ["Exposed communication per schedule", "Communication volume per schedule"]
    tops = title_tops(charts.to_svg(charts.comparison_charts(runs)), titles)
    assert set(tops) == set(titles) and abs(tops[titles[0]] - tops[titles[1]]) <= 1


def test_runs_beyond_the_palette_differ_in_shape_on_the_pareto(trio):
    from ppviz.charts.style import SERIES

    runs = [cfg("1f1b", m=m) for m in range(4, 4 + len(SERIES) + 3)]  # more runs than colours
    spec = charts.pareto_chart(runs).to_dict()
    points = [layer for layer in spec["layer"] if layer["mark"]["type"] == "point"]
    # front, the grey edges of the dominated markers, dominated: each in the runs' shapes
    assert len(points) == 3 and all("shape" in layer["encoding"] for layer in points)
    assert points[1]["mark"]["color"] == CHART["markerEdge"] and "color" not in points[1]["encoding"]
    for layer in (points[0], points[2]):
        color, shape = layer["encoding"]["color"]["scale"], layer["encoding"]["shape"]["scale"]
        assert color["domain"] == shape["domain"] and len(color["domain"]) == len(runs)
        pairs = list(zip(color["range"], shape["range"]))
        assert len(set(pairs)) == len(runs) and len(set(color["range"])) == len(SERIES)
    # while every run has a colour of its own, no shapes
    assert all("shape" not in layer["encoding"] for layer in charts.pareto_chart(trio).to_dict()["layer"])


def _subtitle(spec) -> str:
    """A chart's subtitle as one text, its wrapped lines joined again."""
    return " ".join(line.strip() for line in spec["title"]["subtitle"])


def test_a_long_capacity_note_wraps_within_the_chart():
    # was one line naming every run over the capacity: with the whole registry, 1,250 px wider
    # than the Pareto chart, and Vega widened the view to fit it
    names = ["gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-h2", "interleaved-zb", "zb-v", "dualpipe-v", "v-half",
             "chimera", "bitpipe", "1f1b-overlap"]
    runs = [cfg(name, memory_capacity=0.5, **({"stages_per_device": 2} if name.startswith("interleaved") else {}))
            for name in names]
    for chart in (charts.pareto_chart(runs), charts.memory_chart(runs)):
        spec = chart.to_dict()
        lines = spec["title"]["subtitle"]
        assert len(lines) > 4 and max(map(len, lines)) <= 120
        text = _subtitle(spec)
        assert all(f"{name}," in text or f"{name} exceed" in text for name in names)
    # more runs than colours: the memory chart is a table, and it outlines the devices over the capacity
    table = charts.memory_chart(runs).to_dict()
    outlines = [layer for layer in table["layer"] if layer["mark"] == {"type": "rect", "filled": False,
                                                                      "stroke": CHART["capacity"], "strokeWidth": 2}]
    assert len(outlines) == 1 and outlines[0]["transform"] == [{"filter": "datum.peak > 0.5"}]
    assert _subtitle(table).count("red outline: over the device's capacity, 0.5 activation units") == 1


def test_side_by_side_the_titles_stand_level_however_long_a_subtitle():
    # the Pareto chart's capacity note wraps to more lines than the bubble chart's three, and
    # Vega lines up the plots: the bubble chart's title stood that many lines lower
    names = ["gpipe", "1f1b", "zb-h1", "zb-h2", "zb-v", "dualpipe-v", "v-half", "chimera"]
    runs = [cfg(name, memory_capacity=0.5) for name in names]
    bubble, pareto = charts.comparison_charts(runs).to_dict()["vconcat"][0]["hconcat"]
    shown = [[line for line in chart["title"]["subtitle"] if line.strip()] for chart in (bubble, pareto)]
    assert len(shown[0]) == 3 and len(shown[1]) > 3
    assert len(bubble["title"]["subtitle"]) == len(pareto["title"]["subtitle"])
    assert bubble["title"]["subtitle"][:3] == shown[0] and pareto["title"]["subtitle"] == shown[1]


def test_the_device_capacity_is_drawn_on_the_memory_and_pareto_charts():
    # was only in the widget's lanes: the comparison's charts left "which fits?" to the tooltips
    runs = [cfg(name, memory_capacity=3.5) for name in ("1f1b", "zb-h1", "v-half")]
    over = [r.config.schedule for r in map(ppviz.simulate, runs) if r.out_of_memory]
    assert over == ["1f1b", "zb-h1"]  # peaks 4 and 4 against 3.5; v-half's 3 fits
    for chart in (charts.memory_chart(runs), charts.pareto_chart(runs)):
        spec = chart.to_dict()
        rules = [layer for layer in spec["layer"] if layer["mark"]["type"] == "rule" and "x2" not in layer["encoding"]]
        assert len(rules) == 1 and spec["datasets"][rules[0]["data"]["name"]] == [{"capacity": 3.5}]
        assert rules[0]["mark"]["color"] == CHART["capacity"]
        assert "red dashes: the device's capacity, 3.5 activation units; 1f1b, zb-h1 exceed it" in \
            _subtitle(spec)
    # in GiB with activation_bytes; a run that fits says so
    gib = [cfg("v-half", memory_capacity=5, activation_bytes=2**30)]
    assert "red dashes: the device's capacity, 5 GiB; every run fits" in _subtitle(charts.memory_chart(gib).to_dict())
    # no rule without a capacity, or where the runs' capacities differ
    for plain in ([cfg("1f1b"), cfg("zb-h1")], [cfg("1f1b", memory_capacity=5), cfg("zb-h1", memory_capacity=6)],
                  [cfg("1f1b", memory_capacity=5), cfg("zb-h1")]):
        for chart in (charts.memory_chart(plain), charts.pareto_chart(plain)):
            spec = chart.to_dict()
            assert not any(layer["mark"]["type"] == "rule" and "x2" not in layer["encoding"] for layer in spec["layer"])
            assert "capacity" not in " ".join(spec["title"].get("subtitle", []))


def test_runs_over_the_capacity_are_left_off_the_pareto_front():
    # zb-v has the lowest bubble and so sat on the front, above the red line: not a choice
    runs = [cfg(name, memory_capacity=3.5) for name in ("1f1b", "zb-v", "v-half")]
    def points(chart):
        spec = chart.to_dict()
        return spec, by_name(next(rows for layer in spec["layer"] if "front" in (rows := rows_of(layer, spec["datasets"]))[0]))

    spec, rows = points(charts.pareto_chart(runs))
    assert {n: (r["front"], r["status"]) for n, r in rows.items()} == {
        "1f1b": (False, "over the capacity"), "zb-v": (False, "over the capacity"), "v-half": (True, "Pareto front")}
    assert "hollow: dominated, or over the capacity" in spec["title"]["subtitle"]
    # with room for all three, zb-v is back on the front
    _, roomy = points(charts.pareto_chart([c.replace(memory_capacity=8) for c in runs]))
    assert roomy["zb-v"]["front"] and roomy["v-half"]["front"] and roomy["1f1b"]["status"] == "dominated"
    # none fits: no front at all
    _, tight = points(charts.pareto_chart([c.replace(memory_capacity=1) for c in runs]))
    assert not any(r["front"] for r in tight.values())


def test_a_light_runs_hollow_marker_is_edged_to_show_on_white():
    # zb-h1's yellow ring alone was faint: 1.3:1 against white, under WCAG's 3:1 for graphics
    from ppviz.charts.style import SERIES
    from ppviz.core.style import luminance, rgb

    def contrast(a, b):
        hi, lo = sorted((luminance(rgb(a)), luminance(rgb(b))), reverse=True)
        return (hi + 0.05) / (lo + 0.05)

    assert min(contrast(c, "#ffffff") for c in SERIES) < 1.4
    assert contrast(CHART["markerEdge"], "#ffffff") >= 3
    # every dominated marker gets an edge, drawn beneath its ring
    runs = [cfg(name) for name in ("zb-v", "zb-h1", "1f1b", "v-half")]
    layers = charts.pareto_chart(runs).to_dict()["layer"]
    points = [(i, layer) for i, layer in enumerate(layers) if layer["mark"]["type"] == "point"]
    (_, front), (edge_at, edge), (ring_at, ring) = points
    assert edge_at < ring_at and edge["transform"] == ring["transform"] == [{"filter": "!datum.front"}]
    assert edge["mark"]["strokeWidth"] > ring["mark"]["strokeWidth"] and edge["mark"]["size"] == ring["mark"]["size"]
