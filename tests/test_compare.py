"""ppviz.compare: which runs it makes (a Comparison: rows, ranking, the text summary), the shared
time axis and the links between its view's widgets, the linked Altair spec (rendered with
vl-convert), and its errors. The browser side is tested in
js/test (vitest) and tests/browser/test_notebook_hosts.py (a real JupyterLab)."""

import json
import re
import subprocess
import sys

import ipywidgets
import numpy as np
import pytest
import vl_convert

import ppviz
from ppviz.core.numbers import number
from ppviz import charts
from ppviz.analysis.comparison import Comparison
from ppviz.widgets.comparison import SHARED, ComparisonView, CompareState
from ppviz.core.errors import ConfigError, PpvizError, ScheduleConstraintError, UnknownScheduleError
from ppviz.widgets import GanttWidget, describe

from .browser.programs import dualpipe_like

FIVE = ["1f1b", "interleaved-1f1b", "zb-h1", "zb-v", "dualpipe-v"]


@pytest.fixture(scope="module")
def five():
    return ppviz.compare(ppviz.Config(devices=8, microbatches=32), schedules=FIVE).view()


def marks(spec: dict, **params) -> list[tuple[str, float]]:
    """(aria-label, opacity) of every data mark in the SVG vl-convert draws for `spec` with
    `params` set: the spec is compiled and rendered by Vega itself, with no browser."""
    spec = json.loads(json.dumps(spec))
    for p in spec["params"]:
        if p["name"] in params:
            p["value"] = params[p["name"]]
    svg = vl_convert.vegalite_to_svg(spec, vl_version="6.4")
    out = []
    for label, attrs in re.findall(r'<path aria-label="([^"]*)"([^>]*)>', svg):
        opacity = re.search(r' opacity="([\d.]+)"', attrs)
        out.append((label, float(opacity.group(1)) if opacity else 1.0))
    return out


# Which runs -------------------------------------------------------------------------------------

def test_one_config_and_schedule_names_run_every_schedule_with_its_sizes_and_costs():
    base = ppviz.Config(devices=8, microbatches=32, f=1.0, b=2.0, w=0.5, comm=0.1)
    cmp = ppviz.compare(base, schedules=FIVE)
    assert cmp.names == FIVE and cmp.refused == {}
    for name, r in zip(FIVE, cmp.results):
        c = r.config
        assert (c.schedule, c.devices, c.microbatches, c.f, c.b, c.w, c.comm) == (name, 8, 32, 1.0, 2.0, 0.5, 0.1)
        # v=1 breaks the rule of the V-shaped and interleaved schedules: they take their default
        assert c.stages_per_device == c.spec.default_v
        assert r.makespan == ppviz.simulate(c).makespan


def test_the_configs_v_is_kept_where_a_schedule_accepts_it():
    base = ppviz.Config(schedule="interleaved-1f1b", devices=4, microbatches=8, stages_per_device=4)
    cmp = ppviz.compare(base, schedules=["interleaved-1f1b", "1f1b", "looped-bfs", "zb-v"])
    assert [r.config.stages_per_device for r in cmp.results] == [4, 1, 4, 2]


def test_a_schedule_that_refuses_the_sizes_is_reported_in_its_place_as_text():
    cmp = ppviz.compare(ppviz.Config(devices=5, microbatches=10), schedules=["1f1b", "dualpipe", "zb-h1"])
    assert cmp.names == ["1f1b", "zb-h1"]
    assert list(cmp.refused) == ["dualpipe"]
    assert "even number of devices" in cmp.refused["dualpipe"]
    table = cmp.table
    assert list(table.name) == ["1f1b", "dualpipe", "zb-h1"]
    assert table.refused[1] == cmp.refused["dualpipe"] and table.refused.isna()[[0, 2]].all()
    assert "refused by 1 (these sizes or options):\n  dualpipe: " in cmp.summary()
    view = cmp.view()
    refused = view.gantts[1]
    assert refused.result is None and refused._timeline == b""
    assert refused._meta == {"title": "dualpipe"} and refused._run_name == "dualpipe"
    assert refused.error == cmp.refused["dualpipe"]
    assert [g._run_name for g in view.gantts] == ["1f1b", "dualpipe", "zb-h1"]
    # the charts show the runs that ran
    assert sorted(row["name"] for row in view.chart.spec["datasets"][_bubble_data(view)]) == ["1f1b", "zb-h1"]


def _bubble_data(cmp) -> str:
    bubble = cmp.chart.spec["vconcat"][0]  # the view's charts are stacked, the bubble chart first
    return bubble["data"]["name"]


def test_the_views_charts_fit_a_600_px_output_with_no_text_under_11_px(five):
    # two columns were 826 px wide, scaled to about 7 px text in a 600 px output
    import re

    from ppviz.charts import to_svg
    spec = five.chart.spec
    assert [chart.get("title", {}).get("text", "") for chart in spec["vconcat"][:2]] == [
        "Bubble fraction per schedule", "Bubble fraction vs peak memory"]
    svg = to_svg(five.chart.chart)
    assert float(re.search(r'<svg[^>]* width="([\d.]+)"', svg).group(1)) <= 560
    sizes = [float(x) for x in re.findall(r'font-size="([\d.]+)px"', svg)]
    assert sizes and min(sizes) >= 11


def test_when_no_schedule_runs_the_error_gives_every_reason():
    with pytest.raises(ScheduleConstraintError, match=r"none of them runs: dualpipe: .*even.*dualpipe-v: .*m >="):
        ppviz.compare(ppviz.Config(devices=5, microbatches=4), schedules=["dualpipe", "dualpipe-v"])


def test_items_may_be_configs_programs_and_results():
    result = ppviz.simulate(ppviz.Config(schedule="zb-h1", devices=4, microbatches=8))
    program = dualpipe_like(4, 8)
    cmp = ppviz.compare([ppviz.Config(devices=4, microbatches=8), result, program, ppviz.Config(devices=4, microbatches=16)])
    assert cmp.results[1] is result
    assert cmp.results[2].program is program
    assert cmp.results[3].config.microbatches == 16
    # equal schedule names are told apart as in the charts' legend
    assert cmp.names == ["1f1b (m=8)", "zb-h1", "dualpipe-like", "1f1b (m=16)"]  # a program keeps its name
    assert cmp.names == list(charts.schedule_colors(cmp.results))
    single = ppviz.compare(result)
    assert single.results == [result]


def test_options_replace_config_fields_in_every_run():
    result = ppviz.simulate(ppviz.Config(schedule="zb-h1", devices=4, microbatches=8))
    cmp = ppviz.compare([ppviz.Config(devices=4, microbatches=8), result, dualpipe_like(4, 8)], comm=0.5, b=2.0)
    assert [(r.config.comm, r.config.b) for r in cmp.results] == [(0.5, 2.0)] * 3
    assert cmp.results[1] is not result and cmp.results[1].config.schedule == "zb-h1"
    cmp = ppviz.compare([ppviz.Config(devices=4, microbatches=8)], microbatches=12)
    assert cmp.results[0].config.microbatches == 12
    # the option makes dualpipe-v refuse: shown, not raised
    cmp = ppviz.compare([ppviz.Config(devices=4, microbatches=8), ppviz.Config(schedule="dualpipe-v", devices=4,
                                                                                microbatches=8)], microbatches=4)
    assert list(cmp.refused) == ["dualpipe-v"]


# One time axis, linked views ----------------------------------------------------------------------

def test_the_shared_time_axis_reaches_the_last_steps_end():
    # a training step goes on after the ops (each device's tail): the axis runs to the step's end
    step = ppviz.Step(reduce=(6.0,) * 4, optimizer=(2.0,) * 4)
    a = ppviz.Config("1f1b", devices=4, microbatches=8, step=step)
    cmp = ppviz.compare([a, a.replace(schedule="zb-h1")])
    ends = [r.step_end for r in cmp.results]
    assert cmp.time_extent == max(ends) > max(r.makespan for r in cmp.results)
    # 1F1B: device 0's last B ends at 33; its reduction of 6 runs 31..37, its optimizer to 39
    assert cmp.results[0].step_end == 39.0 == cmp.results[0].step_time


def test_the_gantt_charts_share_one_time_axis_the_longest_makespan(five):
    cmp = five.comparison
    makespans = [r.makespan for r in cmp.results]
    assert cmp.time_extent == max(makespans) == 117.0
    colors = charts.schedule_colors(cmp.results)
    for gantt, name, result in zip(five.gantts, cmp.names, cmp.results):
        assert isinstance(gantt, GanttWidget)
        assert gantt.time_extent == cmp.time_extent
        assert gantt._compact and gantt._run_name == name and gantt._color == colors[name]
        assert gantt._meta == describe(result)
        assert gantt._meta["makespan"] == result.makespan
    stack = five.children[1]
    assert list(stack.children) == five.gantts and five.children[2] is five.chart


def test_every_gantt_chart_and_the_altair_chart_are_jslinked_to_the_state(five):
    links = {(link.source[0].model_id, link.source[1], link.target[0].model_id, link.target[1]) for link in five.links}
    assert all(isinstance(link, ipywidgets.widgets.widget_link.Link) for link in five.links)
    state = five.state.model_id
    for gantt in five.gantts:
        # and the span the charts open on, which they share so that they open on one window
        for trait in (*SHARED, "_opening_span"):
            assert (state, trait, gantt.model_id, trait) in links
    assert (five.chart.model_id, "_vl_selections", state, "_chart_selections") in links
    assert (five.chart.model_id, "_params", state, "_chart_params") in links
    assert len(links) == len(five.gantts) * (len(SHARED) + 1) + 2
    assert isinstance(five.state, CompareState) and five.state._ppviz_role == "compare-state"


def test_python_sees_the_selection_made_in_the_browser_and_can_make_one(five):
    seen = []
    five.observe(lambda change: seen.append((change["name"], change["new"])), names=list(SHARED))
    # what the front end does: the state's traits change (the jslinks carry them on)
    five.state.selected_schedule = "zb-v"
    five.state.selected_device = 3
    five.state.time_window = [10.0, 20.0]
    assert seen == [("selected_schedule", "zb-v"), ("selected_device", 3), ("time_window", [10.0, 20.0])]
    five.selected_schedule = ""
    five.selected_microbatch = 5
    assert five.state.selected_schedule == "" and five.state.selected_microbatch == 5
    with pytest.raises(ConfigError, match="one of: 1f1b, interleaved-1f1b"):
        five.selected_schedule = "gpipe"
    with pytest.raises(ConfigError, match="device 0..7"):
        five.selected_device = 8
    with pytest.raises(ConfigError, match=r"\[t0, t1\]"):
        five.time_window = [5.0, 1.0]
    five.state.selected_device = -1
    five.time_window = []


def test_the_linked_chart_dims_what_is_not_selected(five):
    spec = five.chart.spec
    assert five.chart._params == {"ppviz_schedule": "", "ppviz_device": -1, "ppviz_dark": False}
    picks = {p["name"]: p["select"]["fields"] for p in spec["params"] if "select" in p}
    assert picks == {"ppviz_pick_0": ["name"], "ppviz_pick_1": ["name"], "ppviz_pick_2": ["name", "device"]}
    assert set(five.chart._vl_selections) == set(picks)

    plain = marks(spec)
    assert plain and all(opacity == 1.0 for label, opacity in plain if "closed_applies: false" not in label)
    chosen = marks(spec, ppviz_schedule="zb-h1")
    bars = [(label, o) for label, o in chosen if "bubble fraction (simulated)" in label and label.startswith("bubble")]
    points = [(label, o) for label, o in chosen if "status:" in label]
    assert len(bars) == len(points) == 5
    for label, opacity in bars + points:
        assert opacity == (1.0 if "schedule: zb-h1;" in label else 0.2), label
    # the grey edges of the hollow (dominated) markers dim with their rings
    edges = [(label, o) for label, o in chosen if "busiest device" in label and label.split("; ")[-1].startswith("name: ")]
    assert len(edges) == sum("status: dominated" in label for label, _ in points) == 4
    for label, opacity in edges:
        assert opacity == (1.0 if label.endswith("name: zb-h1") else 0.2), label
    # bars and their closed-form ticks
    memory = [(label, o) for label, o in marks(spec, ppviz_device=3) if label.startswith("device (pipeline rank)")]
    assert len(memory) == 2 * 5 * 8
    for label, opacity in memory:
        assert opacity == (1.0 if label.startswith("device (pipeline rank): 3;") else 0.2), label
    both = [(label, o) for label, o in marks(spec, ppviz_device=3, ppviz_schedule="zb-v")
            if label.startswith("device (pipeline rank)") and o == 1.0]
    assert len(both) == 2 and all("name: zb-v;" in label for label, _ in both)


def test_the_linked_chart_follows_the_theme_through_a_param():
    light = ppviz.compare(ppviz.Config(devices=4, microbatches=8), schedules=["1f1b", "zb-h1"], theme="light").view()
    dark = ppviz.compare(ppviz.Config(devices=4, microbatches=8), schedules=["1f1b", "zb-h1"]).view(theme="dark")
    assert dark.chart._params["ppviz_dark"] is True and light.chart._params["ppviz_dark"] is False
    assert dark.state.theme == "dark" and all(g.theme == "dark" for g in dark.gantts)
    text = json.dumps(light.chart.spec)
    # the dark ink ppviz.charts writes became expressions of the theme
    assert '"#333333"' not in text and '"black"' not in text and '"#555555"' not in text
    svg_light = vl_convert.vegalite_to_svg(light.chart.spec, vl_version="6.4")
    svg_dark = vl_convert.vegalite_to_svg(dark.chart.spec, vl_version="6.4")
    assert 'fill="#1c2128"' in svg_light and 'fill="#e6e9ee"' not in svg_light
    assert 'fill="#e6e9ee"' in svg_dark and 'fill="#1c2128"' not in svg_dark
    # the halo under the Pareto chart's names is the page's colour: white on a dark page hid them
    from ppviz.charts.style import THEMES as PAGE
    assert '"white"' not in text
    assert f'stroke="{PAGE["dark"]["background"]}"' in svg_dark and 'stroke="white"' not in svg_dark


def test_user_text_reaches_the_views_as_data_only():
    label = '<img src=x onerror="alert(1)">'
    cmp = ppviz.compare([ppviz.Config(devices=4, microbatches=8, label=label), ppviz.Config(devices=4, microbatches=8)])
    view = cmp.view()
    assert cmp.names[0] == label and view.gantts[0]._run_name == label
    hint = view.children[0]
    assert isinstance(hint, ipywidgets.HTML) and "<img" not in hint.value


# Errors and imports ------------------------------------------------------------------------------

@pytest.mark.parametrize("call, error, message", [
    (lambda: ppviz.compare([]), ConfigError, "the list is empty"),
    (lambda: ppviz.compare({"schedule": "1f1b"}), ConfigError, "a dict is not a run"),
    (lambda: ppviz.compare([ppviz.Config(), 3]), ConfigError, r"runs\[1\]=3: an int is not a run"),
    (lambda: ppviz.compare(["1f1b", "zb-h3"]), UnknownScheduleError, "did you mean"),
    (lambda: ppviz.compare([ppviz.Config(), ppviz.Config()], schedules=["1f1b"]), ConfigError, "give one ppviz.Config"),
    (lambda: ppviz.compare(ppviz.Config(), schedules="1f1b"), ConfigError, "list of schedule names"),
    (lambda: ppviz.compare(ppviz.Config(), schedules=[]), ConfigError, "list of schedule names"),
    (lambda: ppviz.compare(ppviz.Config(), schedules=["1f1b", 2]), ConfigError, r"schedules\[1\]"),
    (lambda: ppviz.compare(ppviz.Config(), schedules=["1f1b", "zb-h3"]), UnknownScheduleError, "did you mean"),
    (lambda: ppviz.compare([ppviz.Config()], micro_batches=8), ConfigError, "Config fields.*microbatches"),
    (lambda: ppviz.compare([ppviz.Config()], schedule="zb-h1"), ConfigError, "schedules=\\[...\\]"),
    (lambda: ppviz.compare([dualpipe_like(4, 8)], devices=8), ConfigError, "devices=8 .*the program has 4 devices"),
    (lambda: ppviz.compare([ppviz.simulate(dualpipe_like(4, 8))], devices=8), ConfigError,
     "result of a program, which fixes .*costs and memory"),
    (lambda: ppviz.compare([ppviz.Config()], theme="blue"), ConfigError, "'auto', 'light' or 'dark'"),
    (lambda: ppviz.compare([ppviz.Config()], metric="percent"), ConfigError, "'fraction' or 'rate'"),
    (lambda: ppviz.compare([ppviz.Config()], devices=0), ConfigError, "devices=0"),
])
def test_bad_input_says_what_was_wrong_and_what_is_accepted(call, error, message):
    with pytest.raises(error, match=message) as info:
        call()
    assert isinstance(info.value, PpvizError) and isinstance(info.value, ValueError)


def test_a_comparison_loads_no_widget_chart_or_table_library_until_it_is_viewed():
    code = ("import sys, ppviz; c = ppviz.compare(['1f1b', 'zb-h1']); s = c.summary(); "
            "print(*(m in sys.modules for m in ('anywidget', 'altair', 'pandas'))); c.table; print('pandas' in "
            "sys.modules, 'altair' in sys.modules); c.view(); print('anywidget' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False", "False", "True", "False", "True"]


def test_show_takes_one_run_and_names_compare_for_a_list():
    with pytest.raises(ConfigError, match=r"^run=\[.*a list is not a run; .*to compare runs, give the list to "
                                          r"ppviz.compare$"):
        ppviz.show([ppviz.Config(devices=4, microbatches=8), ppviz.Config(schedule="zb-h1")])


def test_a_comparison_is_data_with_views():
    cmp = ppviz.compare(["1f1b", "zb-h1", "dualpipe"], devices=4, microbatches=8)
    assert isinstance(cmp, Comparison) and cmp.names == ["1f1b", "zb-h1", "dualpipe"]
    assert cmp.ranking == ["dualpipe", "zb-h1", "1f1b"] and cmp.fits is None and cmp.out_of_memory == {}
    table = cmp.table
    assert list(table.columns[:3]) == ["name", "schedule", "devices"]
    for row, result in zip(table.itertuples(), cmp.results):
        assert (row.makespan, row.bubble_fraction, row.peak_activation) == (
            result.makespan, result.bubble_fraction, float(result.peak_activation.max()))
        assert row.closed_form_makespan == result.closed_form.makespan
    assert list(table["rank"]) == [3, 2, 1]
    assert cmp.result("zb-h1") is cmp.results[1]
    lines = cmp.summary(order="makespan").splitlines()
    assert lines[0] == "3 schedules at p=4 m=8; in brackets: the published closed form where it applies"
    assert [line.split()[0] for line in lines[3:6]] == ["dualpipe", "zb-h1", "1f1b"]
    assert lines[3].split()[2:4] == ["26", "(26)"]
    assert repr(cmp).startswith("<Comparison of 3 runs>\n3 schedules at p=4 m=8")
    assert isinstance(cmp.view(), ComparisonView) and cmp._display_().comparison is cmp
    assert cmp.chart().to_dict()["vconcat"]
    with pytest.raises(ConfigError, match="give one of: 1f1b, zb-h1, dualpipe"):
        cmp.result("gpipe")


def test_with_a_capacity_the_table_says_which_fit_and_the_summary_gives_the_verdict():
    model, gpu = ppviz.Transformer.preset("llama-3-8b"), ppviz.Hardware.preset("h100-sxm")
    cfg = ppviz.Config.from_model(model, gpu, schedule="1f1b", devices=4, microbatches=8)
    cmp = ppviz.compare(cfg, schedules=["1f1b", "zb-h1", "chimera"])
    table = cmp.table
    assert list(table.fits) == [True, False, False] and cmp.ranking == ["1f1b"] and cmp.fits is False
    chimera = cmp.result("chimera")
    assert table.excess[2] == float(chimera.excess_bytes.max()) == cmp.out_of_memory["chimera"]
    assert table.peak_memory_bytes[2] == pytest.approx(97.197 * 2**30, rel=1e-4)
    # a config from a model has a step (its optimizer after the pipeline): runs rank by it
    step = cmp.result("1f1b").step_time
    assert step > cmp.result("1f1b").makespan
    assert cmp.verdict() == f"1 of 3 fit the capacity; the fastest of them: 1f1b, step {number(step, 'ms')}"
    summary = cmp.summary()
    assert "peak memory (GiB)     fits 80 GiB" in summary and "97.2  no (+17.2 GiB)" in summary


def test_runs_with_and_without_a_capacity_say_so_in_the_summary():
    # a run without a capacity has nothing to fit: it was an AttributeError when the first run had one
    with_cap = ppviz.Config("1f1b", devices=4, microbatches=8, memory_capacity=3)
    without = ppviz.Config("gpipe", devices=4, microbatches=8)
    for runs in ([with_cap, without], [without, with_cap]):
        lines = ppviz.compare(runs).summary().splitlines()
        assert lines[2].split()[-1] == "fits"  # the capacities differ: the heading names none
        cells = {line.split()[0]: line.split("  ")[-1].strip() for line in lines[3:5]}
        assert cells == {"1f1b": "no (+1)", "gpipe": "no capacity"}
        assert lines[-1] == "1 of 2 fit the capacity; the fastest of them: gpipe, makespan 33"


def test_a_bad_option_is_the_callers_mistake_not_a_refusal():
    with pytest.raises(ConfigError, match="devices=0") as info:
        ppviz.compare(ppviz.Config(), schedules=["1f1b", "zb-h1"], devices=0)
    assert not isinstance(info.value, ScheduleConstraintError)


def test_runs_in_different_time_units_are_refused_not_ranked_on_one_axis():
    # before, 27 µs, 33 ms and 33 (no unit) were ranked on one axis: zb-h1 "fastest"
    runs = [ppviz.Config("1f1b", time_unit="ms"), ppviz.Config("zb-h1", time_unit="us"), ppviz.Config("gpipe")]
    for make in (ppviz.compare, ppviz.charts.bubble_chart):
        with pytest.raises(ppviz.ConfigError) as info:
            make(runs)
        message = str(info.value)
        assert "1f1b in ms, zb-h1 in us, gpipe in no unit" in message
        assert "give every run the same time_unit" in message
    same = ppviz.compare([ppviz.Config("1f1b", time_unit="ms"), ppviz.Config("zb-h1", time_unit="ms")])
    assert same.ranking == ["zb-h1", "1f1b"]


def test_a_comparison_of_model_runs_splits_each_devices_step():
    model, gpu = ppviz.Transformer.preset("llama-3-8b"), ppviz.Hardware.preset("h100-sxm")
    cfg = ppviz.Config.from_model(model, gpu, schedule="1f1b", devices=4, microbatches=8, tensor_parallel=2,
                                  data_parallel=2, topology="dgx-h100")
    cmp = ppviz.compare(cfg, schedules=["1f1b", "zb-h1"])
    parts = cmp.breakdown
    assert list(parts.columns) == ["name", "device", "compute", "tp_comm", "p2p_wait", "idle", "dp_tail"]
    for name in ("1f1b", "zb-h1"):
        mine = parts[parts.name == name].drop(columns=["name", "device"])
        res = cmp.result(name)
        assert len(mine) == 4 and np.allclose(mine.sum(axis=1), res.step_time, rtol=1e-12)
        row = cmp.table.set_index("name").loc[name]
        assert row.tp_comm == float(res.tp_comm.max()) > 0
    # zero bubble fills 1F1B's bubble: less idle on the busiest device, the same compute
    idle = parts.groupby("name").idle.max()
    assert idle["zb-h1"] < idle["1f1b"]
