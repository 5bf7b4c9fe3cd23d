"""End to end in JupyterLab 4 and Notebook 7: a real Jupyter server and kernel (one server for the
module, both front ends served by it), ppviz.show, ppviz.compare, ppviz.frontier and a chart of
ppviz.charts in a notebook, driven in Chromium with every request off this machine refused.

show: hovering an op shows the tooltip; clicking one sends the selection to the kernel, where
an observer writes it to a file; editing the p control re-simulates in Python and redraws.
compare: five Gantt charts on one time axis and the Altair charts render; a device, a run or a
zoom chosen in one view shows in the others and reaches the kernel (in JupyterLab, in both
themes, with screenshots in artifacts/compare/; in Notebook 7, a run chosen in the chart).
A chart: drawn with the vega that vl-convert bundles, its tooltip on hover. frontier: clicking
a point opens that run's Gantt chart through the kernel. marimo is test_marimo.py.
"""

import contextlib
import json

import numpy as np
import pytest

import ppviz
from ppviz.core.numbers import number, share

from .conftest import ARTIFACTS, op_centre
from .hosts import (NOTEBOOK_7_ERRORS, JupyterServer, cell_output, offline_page, op_tooltip, run_cell, wait_for,
                    wait_for_file)

APPS = ["lab", "notebook"]
#: screenshots of each output in each host, and what a failure leaves to look at
HOSTS = ARTIFACTS / "hosts"
FAILED = HOSTS / "failed"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = JupyterServer(tmp_path_factory.mktemp("jupyter"))
    try:
        yield s
    finally:
        s.close()


@contextlib.contextmanager
def hosted(browser, server, app, source, failure_shot, *, viewport=None):
    """A new notebook of ``source`` in ``app`` ("lab" or "notebook") and an offline page
    (hosts.offline_page) to open it on; yields (page, url, folder), the folder being the kernel's
    working directory. The kernels are shut down after, so that they do not pile up on the
    module's server."""
    url, folder = server.notebook(app, source)
    try:
        with offline_page(browser, viewport or {"width": 1600, "height": 2600}, failure_shot,
                          NOTEBOOK_7_ERRORS if app == "notebook" else frozenset()) as page:
            yield page, url, folder
    finally:
        server.shutdown_kernels()


CELL = """\
import pathlib
import ppviz
viewer = ppviz.show(ppviz.Config(schedule="1f1b", devices=4, microbatches=8))
viewer.observe(lambda change: pathlib.Path("selection.txt").write_text(str(change["new"])),
               names="selected_microbatch")
viewer
"""


@pytest.mark.parametrize("app", APPS)
def test_show_in_a_real_notebook(browser, server, app):
    with hosted(browser, server, app, CELL, FAILED / f"show-{app}.png",
                viewport={"width": 1400, "height": 1000}) as (page, url, folder):
        page.goto(url)
        root = page.locator(".jp-OutputArea-output .ppviz-gantt")
        run_cell(page, root)
        page.wait_for_function("Number(document.querySelector('.ppviz-gantt')?.dataset.draws) >= 1", timeout=30_000)
        assert root.get_attribute("data-run-ops") == "64"

        # the kernel simulates the same config, so the ops are in the same order as here
        ops = ppviz.simulate(ppviz.Config(schedule="1f1b", devices=4, microbatches=8)).ops
        k = int(np.flatnonzero((ops.device == 1) & (ops.kind == "B") & (ops.microbatch == 5))[0])
        text = op_tooltip(page, root, k)
        assert "1B5" in text and "microbatch 5" in text and "device 1 (stage 1)" in text
        HOSTS.mkdir(parents=True, exist_ok=True)
        cell_output(page).screenshot(path=str(HOSTS / f"show-{app}.png"))

        page.mouse.click(*op_centre(page, k))
        sel = folder / "selection.txt"
        wait_for_file(sel, "5")
        page.locator(".ppviz-gantt").press("Escape")
        wait_for_file(sel, "-1")

        # the p control re-simulates in the kernel and the chart redraws with 6 devices
        field = page.locator(".widget-inline-hbox", has_text="p").locator("input").nth(0)
        field.fill("6")
        field.press("Enter")
        page.wait_for_function("document.querySelector('.ppviz-gantt').dataset.runOps === '96'", timeout=30_000)


COMPARE = """\
import pathlib
import ppviz
cmp = ppviz.compare(ppviz.Config(devices=8, microbatches=32),
                    schedules=["1f1b", "interleaved-1f1b", "zb-h1", "zb-v", "dualpipe-v"]).view()
cmp.observe(lambda change: pathlib.Path(change["name"] + ".txt").write_text(str(change["new"])),
            names=["selected_schedule", "selected_device", "selected_microbatch", "time_window"])
cmp
"""
FIVE = ["1f1b", "interleaved-1f1b", "zb-h1", "zb-v", "dualpipe-v"]
SHOTS = ARTIFACTS / "compare"


def gantt_states(page):
    return page.evaluate("""[...document.querySelectorAll('.ppviz-gantt')].map(e => ({
        emphasis: e.dataset.emphasis, device: e.dataset.selectedDevice, theme: e.dataset.theme,
        draws: Number(e.dataset.draws), view: e.ppviz.getView(), overview: e.dataset.overview,
        labels: Number(e.dataset.labels), canvas: (({left, width}) => ({left, width}))(
            e.querySelector('canvas').getBoundingClientRect())}))""")


def open_compare(page, url, runs=5, *, app="lab"):
    """Run the compare cell and wait for its Gantt charts (``runs`` of them) and the Altair
    charts; hides JupyterLab's side bar so the output is wide (Notebook 7 opens without one)."""
    page.goto(url)
    run_cell(page, page.locator(".jp-OutputArea-output .ppviz-compare"), timeout=30_000)
    page.wait_for_function("[...document.querySelectorAll('.ppviz-gantt')].filter(e => Number(e.dataset.draws) >= 1)"
                           f".length === {runs}", timeout=60_000)
    # the chart's marks, from vega bundled by vl-convert (a CDN import would have been refused)
    page.locator(".ppviz-compare-charts svg path[aria-label]").first.wait_for(timeout=60_000)
    if app == "lab":
        page.keyboard.press("Control+b")
        page.wait_for_timeout(500)
    return page.locator(".jp-OutputArea-output").filter(has=page.locator(".ppviz-compare"))


def mark_opacity(page, prefix):
    """{aria-label: opacity} of the chart's marks whose label starts with prefix."""
    return page.evaluate("""prefix => Object.fromEntries([...document.querySelectorAll(
        '.ppviz-compare-charts svg path[aria-label]')].map(e => [e.getAttribute('aria-label'), e.getAttribute('opacity')])
        .filter(([label]) => label.startsWith(prefix)))""", prefix)


def assert_charts_unclipped(page):
    """Every text of the Altair panel (titles, subtitles, axis and legend labels) lies inside the
    panel, and the panel neither scrolls nor cuts its content."""
    found = page.evaluate("""(() => {
        const panel = document.querySelector('.ppviz-compare-charts');
        const box = panel.getBoundingClientRect();
        const texts = [...panel.querySelectorAll('svg text')].filter(t => t.textContent.trim());
        const out = texts.filter(t => { const r = t.getBoundingClientRect();
            return r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5; })
          .map(t => t.textContent);
        return {texts: texts.length, out, scroll: panel.scrollWidth - panel.clientWidth,
                svg: panel.querySelector('svg').getBoundingClientRect().width, panel: box.width};
    })()""")
    assert found["texts"] > 20 and found["out"] == [], found
    assert found["scroll"] <= 1 and found["svg"] <= found["panel"], found


def test_compare_in_jupyterlab_offline_and_linked(browser, server):
    results = [ppviz.simulate(ppviz.Config(schedule=s, devices=8, microbatches=32)) for s in FIVE]
    extent = max(r.makespan for r in results)
    with hosted(browser, server, "lab", COMPARE, SHOTS / "failed-light.png") as (page, url, root):
        output = open_compare(page, url)
        states = gantt_states(page)
        # one time axis: the same window and the same pixels for it in every chart. 1,024 ops or
        # more each in 1,600 px are too dense to read whole: they open on one readable window from
        # the start (the span the densest run needs), with each run whole in its overview strip
        opening = states[0]["view"]
        assert opening["t0"] == 0 and opening["t1"] < extent / 3
        assert [s["view"] for s in states] == [opening] * 5
        assert len({(s["canvas"]["left"], s["canvas"]["width"]) for s in states}) == 1
        assert [s["overview"] for s in states] == ["shown"] * 5
        assert min(s["labels"] for s in states) >= 40, states
        wait_for(page, lambda: (root / "time_window.txt").exists() and np.allclose(
            json.loads((root / "time_window.txt").read_text()), [0, opening["t1"]]), "the window in Python")
        # the headers and the chart give the numbers of the results
        names = page.locator(".ppviz-gantt .ppviz-name").all_inner_texts()
        assert names == FIVE
        for i, r in enumerate(results):
            values = page.locator(".ppviz-gantt").nth(i).locator(".ppviz-metric-value").all_inner_texts()
            assert values[0] == number(r.makespan) and values[1] == share(r.bubble_fraction)
        bubble = mark_opacity(page, "bubble fraction = idle")
        for name, r in zip(FIVE, results):
            assert any(f"name: {name};" in label and f"bubble fraction (simulated): {100 * r.bubble_fraction:.2f}%"
                       in label for label in bubble), name
        SHOTS.mkdir(parents=True, exist_ok=True)
        output.screenshot(path=str(SHOTS / "compare-light.png"))
        assert_charts_unclipped(page)

        # a device's row label in the first chart: that row in every chart, and its bars in
        # the peak-memory chart
        ops = results[0].ops
        k = int(np.flatnonzero(ops.device == 3)[0])
        row = page.evaluate(f"document.querySelectorAll('.ppviz-gantt')[0].ppviz.opBox({k})")
        canvas = page.locator(".ppviz-gantt canvas").first.bounding_box()
        page.mouse.click(canvas["x"] + 40, row["y"] + row["height"] / 2)
        wait_for(page, lambda: [s["device"] for s in gantt_states(page)] == ["3"] * 5, "device 3 in every chart")
        wait_for_file(root / "selected_device.txt", "3")
        memory = mark_opacity(page, "device (pipeline rank)")
        wait_for(page, lambda: all((o == "1") == label.startswith("device (pipeline rank): 3;")
                                   for label, o in mark_opacity(page, "device (pipeline rank)").items()),
                 "the peak-memory chart to highlight device 3")
        assert len(memory) == 2 * 5 * 8

        # a run's bar in the bubble chart: its Gantt chart stands out, the others dim
        bar = page.locator('.ppviz-compare-charts svg path[aria-label^="bubble fraction = idle"]'
                           '[aria-label*="name: zb-h1;"]').first
        bar.click()
        wait_for(page, lambda: [s["emphasis"] for s in gantt_states(page)] ==
                 ["dimmed", "dimmed", "selected", "dimmed", "dimmed"], "zb-h1 emphasised")
        wait_for_file(root / "selected_schedule.txt", "zb-h1")
        # an op: its microbatch, in the kernel through the shared state
        zb = results[2].ops
        j = int(np.flatnonzero((zb.microbatch == 9) & (zb.kind == "F") & (zb.device == 5))[0])
        box = page.evaluate(f"document.querySelectorAll('.ppviz-gantt')[2].ppviz.opBox({j})")
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        wait_for_file(root / "selected_microbatch.txt", "9")
        wait_for_file(root / "selected_device.txt", "5")
        page.mouse.move(canvas["x"] + 5, canvas["y"] - 30)
        page.wait_for_timeout(300)
        output.screenshot(path=str(SHOTS / "compare-light-selected.png"))

        # the run's title clears it again (a second click on the same run)
        page.locator(".ppviz-gantt").nth(2).locator(".ppviz-name-button").click()
        wait_for(page, lambda: {s["emphasis"] for s in gantt_states(page)} == {"none"}, "no run emphasised")
        wait_for_file(root / "selected_schedule.txt", "")

        # zoom in one chart: all of them follow, in the browser; Python sees the window
        second = page.locator(".ppviz-gantt canvas").nth(1).bounding_box()
        page.mouse.move(second["x"] + second["width"] * 0.6, second["y"] + 30)
        page.keyboard.down("Control")  # a plain wheel scrolls the notebook
        page.mouse.wheel(0, -700)
        page.keyboard.up("Control")
        wait_for(page, lambda: len({json.dumps(s["view"]) for s in gantt_states(page)}) == 1
                 and gantt_states(page)[0]["view"]["t1"] - gantt_states(page)[0]["view"]["t0"] < extent / 2,
                 "every chart zoomed alike")
        view = gantt_states(page)[4]["view"]
        wait_for(page, lambda: (root / "time_window.txt").exists() and np.allclose(
            json.loads((root / "time_window.txt").read_text()), [view["t0"], view["t1"]]), "the window in Python")
        output.screenshot(path=str(SHOTS / "compare-light-zoomed.png"))

        # a 1,000 px window with the side bar open: the charts fit at full size, no text under
        # 11 px (two columns were scaled to about 7 px), no title, subtitle, label or legend cut
        page.set_viewport_size({"width": 1000, "height": 2600})
        page.keyboard.press("Control+b")
        page.wait_for_timeout(800)
        assert page.locator(".jp-FileBrowser").first.is_visible()
        assert_charts_unclipped(page)
        sizes = page.evaluate("""(() => {
            const svg = document.querySelector('.ppviz-compare-charts svg');
            const scale = svg.getBoundingClientRect().width / Number(svg.getAttribute('width'));
            return {scale, smallest: Math.min(...[...svg.querySelectorAll('text')].filter(t => t.textContent.trim())
                .map(t => parseFloat(getComputedStyle(t).fontSize) * scale))};
        })()""")
        assert sizes["smallest"] >= 11, sizes
        output.screenshot(path=str(SHOTS / "compare-light-narrow.png"))


def test_compare_in_notebook_7_offline_and_linked(browser, server):
    results = [ppviz.simulate(ppviz.Config(schedule=s, devices=8, microbatches=32)) for s in FIVE]
    with hosted(browser, server, "notebook", COMPARE, FAILED / "compare-notebook.png") as (page, url, root):
        output = open_compare(page, url, app="notebook")
        assert page.locator(".ppviz-gantt .ppviz-name").all_inner_texts() == FIVE
        bubble = mark_opacity(page, "bubble fraction = idle")
        for name, r in zip(FIVE, results):
            assert any(f"name: {name};" in label and f"bubble fraction (simulated): {100 * r.bubble_fraction:.2f}%"
                       in label for label in bubble), name
        assert_charts_unclipped(page)
        # a run's bar: its Gantt chart stands out in the browser, and the kernel hears of it
        page.locator('.ppviz-compare-charts svg path[aria-label^="bubble fraction = idle"]'
                     '[aria-label*="name: zb-v;"]').first.click()
        wait_for(page, lambda: [s["emphasis"] for s in gantt_states(page)] ==
                 ["dimmed", "dimmed", "dimmed", "selected", "dimmed"], "zb-v emphasised")
        wait_for_file(root / "selected_schedule.txt", "zb-v")
        page.mouse.move(5, 5)
        HOSTS.mkdir(parents=True, exist_ok=True)
        output.screenshot(path=str(HOSTS / "compare-notebook.png"))


COMPARE_LINKS = """\
import pathlib
import ppviz
cfg = ppviz.Config(devices=8, microbatches=16, f=2e-3, b=2e-3, w=2e-3, time_unit="s", topology="dgx-h100",
                   comm_bytes=64e6)
cmp = ppviz.compare(cfg, schedules=["1f1b", "zb-h1", "interleaved-1f1b"]).view()
cmp.observe(lambda change: pathlib.Path(change["name"] + ".txt").write_text(str(change["new"])),
            names=["selected_schedule"])
cmp
"""


def test_compare_over_real_links_shows_and_links_communication(browser, server):
    with hosted(browser, server, "lab", COMPARE_LINKS, SHOTS / "failed-links.png") as (page, url, root):
        output = open_compare(page, url, runs=3)
        volume = page.locator('.ppviz-compare-charts svg path[aria-label^="moved between devices"]')
        assert volume.count() == 3
        exposed = mark_opacity(page, "idle / (p × makespan), split by what it waits for")
        assert len(exposed) == 2 * 3  # waiting for communication, waiting for compute, per run
        assert_charts_unclipped(page)
        # a run's volume bar emphasises its Gantt chart, as the other charts' marks do
        page.locator('.ppviz-compare-charts svg path[aria-label^="moved between devices"]'
                     '[aria-label*="name: zb-h1;"]').first.click()
        wait_for(page, lambda: [s["emphasis"] for s in gantt_states(page)] == ["dimmed", "selected", "dimmed"],
                 "zb-h1 emphasised")
        wait_for_file(root / "selected_schedule.txt", "zb-h1")
        SHOTS.mkdir(parents=True, exist_ok=True)
        output.screenshot(path=str(SHOTS / "compare-links.png"))


def test_compare_follows_jupyterlab_dark_theme(browser, server):
    with server.dark_lab(), hosted(browser, server, "lab", COMPARE, SHOTS / "failed-dark.png") as (page, url, root):
        output = open_compare(page, url)
        assert {s["theme"] for s in gantt_states(page)} == {"dark"}
        # the charts' text is drawn in the dark palette's ink (set through ppviz_dark)
        page.wait_for_function("""[...document.querySelectorAll('.ppviz-compare-charts svg text')]
            .some(t => t.getAttribute('fill') === '#e6e9ee')""", timeout=15_000)
        SHOTS.mkdir(parents=True, exist_ok=True)
        output.screenshot(path=str(SHOTS / "compare-dark.png"))
        page.locator('.ppviz-compare-charts svg path[aria-label^="device (pipeline rank): 6;"]'
                     '[aria-label*="name: zb-v;"]').first.click()
        wait_for(page, lambda: [(s["emphasis"], s["device"]) for s in gantt_states(page)] ==
                 [("dimmed", "6")] * 3 + [("selected", "6"), ("dimmed", "6")], "zb-v and device 6 selected")
        wait_for_file(root / "selected_schedule.txt", "zb-v")
        page.mouse.move(5, 5)
        page.wait_for_timeout(300)
        output.screenshot(path=str(SHOTS / "compare-dark-selected.png"))


CHART = """\
import ppviz
from ppviz import charts
charts.bubble_chart([ppviz.Config(schedule=s, devices=4, microbatches=8) for s in ("1f1b", "zb-h1", "interleaved-1f1b")])
"""


@pytest.mark.parametrize("app", APPS)
def test_a_standalone_chart_draws_offline_with_its_tooltip(browser, server, app):
    # an Altair chart from ppviz.charts as the cell's last expression, every request off this
    # machine refused: Altair's default renderer would load vega from a CDN ("Error loading script")
    results = {s: ppviz.simulate(ppviz.Config(schedule=s, devices=4, microbatches=8))
               for s in ("1f1b", "zb-h1", "interleaved-1f1b")}
    with hosted(browser, server, app, CHART, FAILED / f"chart-{app}.png",
                viewport={"width": 1200, "height": 900}) as (page, url, root):
        page.goto(url)
        bars = page.locator('.jp-OutputArea-output svg path[aria-label^="bubble fraction = idle"]')
        run_cell(page, bars.first, timeout=60_000)
        labels = bars.evaluate_all("marks => marks.map(m => m.getAttribute('aria-label'))")
        for name, r in results.items():
            assert sum(f"name: {name};" in label and
                       f"bubble fraction (simulated): {100 * r.bubble_fraction:.2f}%" in label
                       for label in labels) == 1, (name, labels)
        output = page.locator(".jp-OutputArea-output").filter(
            has=page.locator('svg path[aria-label^="bubble fraction = idle"]'))
        assert "Error loading script" not in output.inner_text()
        HOSTS.mkdir(parents=True, exist_ok=True)
        output.screenshot(path=str(HOSTS / f"chart-{app}.png"))
        assert_tooltip(page, bars, "zb-h1", results["zb-h1"])


def assert_tooltip(page, bars, name, result):
    """Hovering ``name``'s bar shows vega's tooltip with its bubble fraction (vega-tooltip, from
    the bundle: there is no other)."""
    bars.and_(page.locator(f'[aria-label*="name: {name};"]')).first.hover()
    tip = page.locator("#vg-tooltip-element.visible")
    tip.wait_for(timeout=10_000)
    text = " ".join(tip.inner_text().split())
    assert name in text and f"{100 * result.bubble_fraction:.2f}%" in text, text


FRONTIER = """\
import pathlib
import ppviz
front = ppviz.frontier(ppviz.Config(devices=4, microbatches=8, comm=0.2), memory=[2, 4])
view = front.view()
view.observe(lambda change: pathlib.Path("selected.txt").write_text(change["new"]), names="selected")
view
"""


@pytest.mark.parametrize("app", APPS)
def test_clicking_a_frontier_point_opens_its_gantt_chart(browser, server, app):
    # the click travels as the JupyterChart's selection to the kernel, which opens the Gantt chart
    with hosted(browser, server, app, FRONTIER, FAILED / f"frontier-{app}.png",
                viewport={"width": 1300, "height": 1400}) as (page, url, root):
        page.goto(url)
        run_cell(page, page.locator(".jp-OutputArea-output .ppviz-frontier-chart"), timeout=60_000)
        points = page.locator('.ppviz-frontier-chart svg path[aria-label*="; run: "]')
        points.first.wait_for(timeout=60_000)
        labels = points.evaluate_all("els => els.map(e => e.getAttribute('aria-label'))")
        assert any("; run: zb-h1;" in label for label in labels)
        assert page.locator(".ppviz-gantt").count() == 0
        page.locator('.ppviz-frontier-chart svg path[aria-label*="; run: search ≤ 4;"]').first.click()
        wait_for_file(root / "selected.txt", "search ≤ 4")
        gantt = page.locator(".ppviz-gantt")
        gantt.first.wait_for(timeout=30_000)
        wait_for(page, lambda: page.locator(".ppviz-gantt .ppviz-name").all_inner_texts() == ["search ≤ 4"],
                 "the search result's Gantt chart")
        HOSTS.mkdir(parents=True, exist_ok=True)
        cell_output(page).screenshot(path=str(HOSTS / f"frontier-{app}.png"))
        page.locator('.ppviz-frontier-chart svg path[aria-label*="; run: zb-h1;"]').first.click()
        wait_for_file(root / "selected.txt", "zb-h1")
        wait_for(page, lambda: page.locator(".ppviz-gantt .ppviz-name").all_inner_texts() == ["zb-h1"],
                 "zb-h1's Gantt chart")


PLAN = """\
import pathlib
import ppviz
tiny = ppviz.Transformer(8, hidden=2048, heads=16, seq_len=2048, vocab=32000, name="tiny")
found = ppviz.plan(tiny, ppviz.Hardware.preset("h100-sxm").replace(memory_gib=3), gpus=8, global_batch=32,
                   schedules=["1f1b", "zb-h1", "interleaved-1f1b", "zb-v"], progress=False, n_jobs=1)
view = found.view()
view.observe(lambda change: pathlib.Path("selected.txt").write_text(str(change["new"])), names="selected")
view
"""


def test_a_plans_point_and_row_open_their_gantt_charts_in_jupyterlab(browser, server):
    # a point's click travels as the JupyterChart's selection, a row's as the Select's value
    with hosted(browser, server, "lab", PLAN, FAILED / "plan-lab.png",
                viewport={"width": 1300, "height": 1500}) as (page, url, root):
        page.goto(url)
        run_cell(page, page.locator(".jp-OutputArea-output .ppviz-plan-chart"), timeout=90_000)
        points = page.locator('.ppviz-plan-chart svg path[aria-label*="row: "]')
        points.first.wait_for(timeout=60_000)
        labels = points.evaluate_all("els => els.map(e => e.getAttribute('aria-label'))")
        rows = sorted({int(label.split("row: ")[1].split(";")[0]) for label in labels})
        options = page.locator(".ppviz-plan-rows select option")
        assert rows == list(range(options.count())) and rows  # every layout a point, and a row
        assert page.locator(".ppviz-gantt").count() == 0
        page.locator('.ppviz-plan-chart svg path[aria-label*="row: 0;"]').first.click()
        wait_for_file(root / "selected.txt", "0")
        page.locator(".ppviz-gantt").first.wait_for(timeout=30_000)
        HOSTS.mkdir(parents=True, exist_ok=True)
        page.mouse.move(5, 5)
        cell_output(page).screenshot(path=str(HOSTS / "plan-lab.png"))
        if options.count() > 1:
            options.nth(1).click()
            wait_for_file(root / "selected.txt", "1")
