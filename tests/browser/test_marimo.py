"""End to end in marimo, anywidget's native host: a real ``marimo edit`` server and kernel (one
server for the module), a notebook whose cells end in ppviz.show, a chart of ppviz.charts,
ppviz.frontier and ppviz.compare, driven in Chromium with every request off this machine refused.

marimo draws anywidgets and no other Jupyter widget, and shows an object through its
``_display_`` (ppviz/widgets/marimo.py): each test checks that the output is drawn with the
numbers the kernel simulated, and that one interaction works — a hover's tooltip, a click that
reaches the kernel, a click in one view that shows in the others by way of the kernel.
marimo renders each anywidget in a shadow root: the locators below pierce it, and scripts run
on the elements they find (``locator.evaluate``), never on ``document.querySelector``.
"""

import importlib.util

import numpy as np
import pytest

import ppviz

from .conftest import ARTIFACTS, _unavailable
from .hosts import MarimoServer, offline_page, op_point, op_tooltip, wait_for, wait_for_file

HOSTS = ARTIFACTS / "hosts"
FAILED = HOSTS / "failed"
#: marimo starts a kernel per page and imports ppviz, Altair and vl-convert there
FIRST_OUTPUT_MS = 120_000


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if importlib.util.find_spec("marimo") is None:
        _unavailable("marimo is not installed (pip install -e '.[test]')")
    s = MarimoServer(tmp_path_factory.mktemp("marimo"))
    try:
        yield s
    finally:
        s.close()


def output_of(page, inner):
    """The marimo cell output that holds ``inner`` (a selector)."""
    return page.locator(".output-area").filter(has=page.locator(inner))


def gantt_states(page):
    return page.locator(".ppviz-gantt").evaluate_all("""els => els.map(e => ({emphasis: e.dataset.emphasis,
        theme: e.dataset.theme, draws: Number(e.dataset.draws), ops: e.dataset.runOps, hidden: e.hidden}))""")


def test_show_draws_in_marimo_and_a_click_reaches_the_kernel(browser, server, tmp_path):
    config = 'ppviz.Config(schedule="1f1b", devices=4, microbatches=8)'
    url = server.notebook([
        "import pathlib\nimport ppviz",
        f"ppviz.show({config})",  # the cell's last expression, as a user writes it
        f"viewer = ppviz.show({config})\n"
        f"viewer.observe(lambda change: pathlib.Path({str(tmp_path / 'selection.txt')!r}).write_text("
        "str(change['new'])), names='selected_microbatch')\nviewer",
    ])
    with offline_page(browser, {"width": 1400, "height": 1600}, FAILED / "show-marimo.png") as page:
        page.goto(url)
        gantts = page.locator(".ppviz-gantt")
        gantts.nth(1).wait_for(timeout=FIRST_OUTPUT_MS)
        wait_for(page, lambda: [(s["ops"], s["draws"] >= 1) for s in gantt_states(page)] == [("64", True)] * 2,
                 "both charts drawn", timeout=30)
        ops = ppviz.simulate(ppviz.Config(schedule="1f1b", devices=4, microbatches=8)).ops
        k = int(np.flatnonzero((ops.device == 1) & (ops.kind == "B") & (ops.microbatch == 5))[0])
        text = op_tooltip(page, gantts.nth(0), k)
        assert "1B5" in text and "microbatch 5" in text and "device 1 (stage 1)" in text
        HOSTS.mkdir(parents=True, exist_ok=True)
        output_of(page, ".ppviz-gantt").first.screenshot(path=str(HOSTS / "show-marimo.png"))

        second = gantts.nth(1)
        page.mouse.click(*op_point(second, k))
        wait_for_file(tmp_path / "selection.txt", "5", page=page)
        second.press("Escape")
        wait_for_file(tmp_path / "selection.txt", "-1", page=page)


def test_a_chart_draws_in_marimo_offline_with_its_tooltip(browser, server):
    names = ("1f1b", "zb-h1", "interleaved-1f1b")
    results = {s: ppviz.simulate(ppviz.Config(schedule=s, devices=4, microbatches=8)) for s in names}
    url = server.notebook(["import ppviz",
                           "ppviz.charts.bubble_chart([ppviz.Config(schedule=s, devices=4, microbatches=8)\n"
                           f"                           for s in {names!r}])"])
    with offline_page(browser, {"width": 1200, "height": 900}, FAILED / "chart-marimo.png") as page:
        page.goto(url)
        # the vega that vl-convert bundles draws SVG marks, labelled for screen readers
        bars = page.locator('svg path[aria-label^="bubble fraction = idle"]')
        bars.first.wait_for(timeout=FIRST_OUTPUT_MS)
        labels = bars.evaluate_all("marks => marks.map(m => m.getAttribute('aria-label'))")
        for name, r in results.items():
            assert sum(f"name: {name};" in label and f"bubble fraction (simulated): {100 * r.bubble_fraction:.2f}%"
                       in label for label in labels) == 1, (name, labels)
        HOSTS.mkdir(parents=True, exist_ok=True)
        output_of(page, 'svg path[aria-label^="bubble fraction = idle"]').first.screenshot(
            path=str(HOSTS / "chart-marimo.png"))
        bars.and_(page.locator('[aria-label*="name: zb-h1;"]')).first.hover()
        tip = page.locator("#vg-tooltip-element.visible")
        tip.wait_for(timeout=10_000)
        text = " ".join(tip.inner_text().split())
        assert "zb-h1" in text and f"{100 * results['zb-h1'].bubble_fraction:.2f}%" in text, text


def test_a_frontier_draws_in_marimo_and_a_click_opens_its_gantt_chart(browser, server):
    # the data object as the cell's last expression: marimo shows its view (Frontier._display_)
    url = server.notebook(["import ppviz",
                           "front = ppviz.frontier(ppviz.Config(devices=4, microbatches=8, comm=0.2), memory=[2, 4])\n"
                           "front"])
    front = ppviz.frontier(ppviz.Config(devices=4, microbatches=8, comm=0.2), memory=[2, 4])
    with offline_page(browser, {"width": 1300, "height": 1500}, FAILED / "frontier-marimo.png") as page:
        page.goto(url)
        points = page.locator('.ppviz-frontier svg path[aria-label*="; run: "]')
        points.first.wait_for(timeout=FIRST_OUTPUT_MS)
        labels = points.evaluate_all("els => els.map(e => e.getAttribute('aria-label'))")
        assert sorted(label.split("; run: ")[1].split(";")[0] for label in labels) == sorted(front.table.name)
        # the Gantt chart below the chart is empty until a click
        assert [s["hidden"] for s in gantt_states(page)] == [True]
        page.locator('.ppviz-frontier svg path[aria-label*="; run: search ≤ 4;"]').first.click()
        gantt = page.locator(".ppviz-gantt")
        wait_for(page, lambda: gantt.locator(".ppviz-name").all_inner_texts() == ["search ≤ 4"],
                 "the search result's Gantt chart", timeout=30)
        search = front.result("search ≤ 4")
        wait_for(page, lambda: gantt_states(page)[0]["ops"] == str(len(search.ops)), "its ops drawn")
        page.mouse.move(5, 5)
        HOSTS.mkdir(parents=True, exist_ok=True)
        output_of(page, ".ppviz-frontier").first.screenshot(path=str(HOSTS / "frontier-marimo.png"))
        page.locator('.ppviz-frontier svg path[aria-label*="; run: zb-h1;"]').first.click()
        wait_for(page, lambda: gantt.locator(".ppviz-name").all_inner_texts() == ["zb-h1"], "zb-h1's Gantt chart",
                 timeout=30)


FIVE = ["1f1b", "interleaved-1f1b", "zb-h1", "zb-v", "dualpipe-v"]


def test_compare_draws_in_marimo_dark_and_links_through_the_kernel(browser, server, tmp_path):
    results = [ppviz.simulate(ppviz.Config(schedule=s, devices=8, microbatches=32)) for s in FIVE]
    url = server.notebook([
        "import pathlib\nimport ppviz",
        f"cmp = ppviz.compare(ppviz.Config(devices=8, microbatches=32), schedules={FIVE!r}).view()\n"
        f"cmp.observe(lambda change: (pathlib.Path({str(tmp_path)!r}) / (change['name'] + '.txt')).write_text("
        "str(change['new'])), names=['selected_schedule', 'selected_device'])\ncmp",
    ])
    server.theme("dark")
    try:
        with offline_page(browser, {"width": 1500, "height": 2400}, FAILED / "compare-marimo.png") as page:
            page.goto(url)
            page.locator(".ppviz-compare svg path[aria-label]").first.wait_for(timeout=FIRST_OUTPUT_MS)
            wait_for(page, lambda: [s["draws"] >= 1 for s in gantt_states(page)] == [True] * 5, "five charts drawn",
                     timeout=30)
            assert page.locator(".ppviz-gantt .ppviz-name").all_inner_texts() == FIVE
            assert [s["ops"] for s in gantt_states(page)] == [str(len(r.ops)) for r in results]
            # marimo's dark theme reaches the Gantt charts and, through the shared state, the charts
            assert {s["theme"] for s in gantt_states(page)} == {"dark"}
            dark_ink = page.locator('.ppviz-compare svg text[fill="#e6e9ee"]')
            wait_for(page, lambda: dark_ink.count() > 0, "the charts' text in the dark palette's ink")
            assert "One time axis" in page.locator(".ppviz-compare").inner_text()
            # a run's bar: the kernel hears of it and its Gantt chart stands out, the others dim
            page.locator('.ppviz-compare svg path[aria-label^="bubble fraction = idle"]'
                         '[aria-label*="name: zb-h1;"]').first.click()
            wait_for_file(tmp_path / "selected_schedule.txt", "zb-h1", page=page)
            wait_for(page, lambda: [s["emphasis"] for s in gantt_states(page)] ==
                     ["dimmed", "dimmed", "selected", "dimmed", "dimmed"], "zb-h1 emphasised", timeout=30)
            # a device's row label in one chart: that row in every chart, by way of the kernel
            first = page.locator(".ppviz-gantt").nth(0)
            first.scroll_into_view_if_needed()
            k = int(np.flatnonzero(results[0].ops.device == 3)[0])
            row = first.evaluate("(e, k) => e.ppviz.opBox(k)", k)
            canvas = first.locator("canvas").bounding_box()
            page.mouse.click(canvas["x"] + 40, row["y"] + row["height"] / 2)
            wait_for_file(tmp_path / "selected_device.txt", "3", page=page)
            wait_for(page, lambda: page.locator(".ppviz-gantt").evaluate_all(
                "els => els.map(e => e.dataset.selectedDevice)") == ["3"] * 5, "device 3 in every chart", timeout=30)
            page.mouse.move(5, 5)
            HOSTS.mkdir(parents=True, exist_ok=True)
            output_of(page, ".ppviz-compare").first.screenshot(path=str(HOSTS / "compare-marimo.png"))
    finally:
        server.theme("light")
