"""End to end: a real Jupyter server and kernel, ppviz.show and ppviz.compare in a notebook,
driven in Chromium.

show: hovering an op shows the tooltip; clicking one sends the selection to the kernel, where
an observer writes it to a file; editing the p control re-simulates in Python and redraws.
compare (JupyterLab, with every request off this machine refused): five Gantt charts on one
time axis and the Altair charts render; a device, a run or a zoom chosen in one view shows in
the others and reaches the kernel; screenshots of both themes go to artifacts/compare/.
"""

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import numpy as np
import pytest

import ppviz
from ppviz.core.numbers import number, share

from .conftest import ARTIFACTS, op_centre

CELL = """\
import pathlib
import ppviz
viewer = ppviz.show(ppviz.Config(schedule="1f1b", devices=4, microbatches=8))
viewer.observe(lambda change: pathlib.Path("selection.txt").write_text(str(change["new"])),
               names="selected_microbatch")
viewer
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def notebook(path, source=CELL):
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path.write_text(json.dumps({"cells": [cell], "metadata": {"kernelspec": kernel}, "nbformat": 4,
                                "nbformat_minor": 5}))


@contextlib.contextmanager
def jupyter(app, tmp_path, source=CELL, *, dark=False):
    """A Jupyter server (JupyterLab or Notebook 7) on a random free port, serving a temporary
    root dir holding chart.ipynb (one cell, `source`), with no token; `dark` starts
    JupyterLab in its dark theme."""
    root = tmp_path / "root"
    root.mkdir()
    notebook(root / "chart.ipynb", source)
    config = tmp_path / "config"
    settings = config / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    # no "get notified about Jupyter news?" toast over the outputs
    (settings / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
    if dark:
        (settings / "themes.jupyterlab-settings").write_text(json.dumps({"theme": "JupyterLab Dark"}))
    port = free_port()
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "JUPYTER_CONFIG_DIR": str(config),
           "PYTHONPATH": os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))}
    module = "jupyterlab" if app == "lab" else "notebook"
    log = open(tmp_path / "server.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", module, "--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1",
         "--ServerApp.port_retries=0", "--allow-root", "--IdentityProvider.token=", "--ServerApp.password=",
         f"--ServerApp.root_dir={root}", "--LabApp.workspaces_dir=" + str(tmp_path / "workspaces")],
        stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.time() > deadline:
                log.flush()
                pytest.fail(f"jupyter {app} did not start:\n{(tmp_path / 'server.log').read_text()[-3000:]}")
            time.sleep(0.3)
        url = f"{base}/lab/tree/chart.ipynb?reset" if app == "lab" else f"{base}/notebooks/chart.ipynb"
        yield {"url": url, "root": root, "app": app}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(params=["lab", "notebook"])
def server(request, tmp_path):
    with jupyter(request.param, tmp_path) as s:
        yield s


def dismiss_dialogs(page, seen: list[str]) -> None:
    """Accept any modal dialog the host put up (a kernel chooser, a kernel restart notice…),
    remembering its text so that a failure can say what the host showed."""
    dialog = page.locator(".jp-Dialog")
    if dialog.count() and dialog.first.is_visible():
        seen.append(" ".join(dialog.first.inner_text().split()))
        accept = dialog.first.locator(".jp-Dialog-button.jp-mod-accept")
        if accept.count():
            accept.first.click()
        else:
            page.keyboard.press("Escape")
        dialog.first.wait_for(state="detached", timeout=10_000)


def run_cell(page, output, timeout=15_000):
    """Run the notebook's one cell until `output` (a locator in its output) shows."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    editor = page.locator(".jp-Notebook .jp-Cell .cm-content").first
    editor.wait_for(timeout=60_000)
    # the kernel indicator turns idle once the session is connected; both hosts have it
    with contextlib.suppress(PlaywrightTimeout):
        page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first.wait_for(timeout=60_000)
    seen: list[str] = []
    # a cell run before the kernel's session is connected is dropped without a trace,
    # and no indicator tells reliably when it is: run it again until the output shows
    for attempt in range(6):
        dismiss_dialogs(page, seen)
        editor.click()
        page.keyboard.press("Shift+Enter")
        try:
            output.wait_for(timeout=timeout)
            return
        except PlaywrightTimeout:
            if attempt == 5:
                ARTIFACTS.mkdir(exist_ok=True)
                page.screenshot(path=str(ARTIFACTS / "run_cell-failure.png"))
                pytest.fail(f"the cell's output never showed after 6 runs; dialogs the host showed: {seen or 'none'}")


def wait_for_file(path, expected, timeout=30.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.exists() and path.read_text() == expected:
            return
        time.sleep(0.1)
    got = path.read_text() if path.exists() else "(no file)"
    pytest.fail(f"the kernel never saw {path.stem}={expected}; {path.name}: {got}")


def test_show_in_a_real_notebook(browser, server):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        page.goto(server["url"])
        root = page.locator(".jp-OutputArea-output .ppviz-gantt")
        run_cell(page, root)
        page.wait_for_function("Number(document.querySelector('.ppviz-gantt')?.dataset.draws) >= 1", timeout=30_000)
        assert root.get_attribute("data-run-ops") == "64"

        # the kernel simulates the same config, so the ops are in the same order as here
        ops = ppviz.simulate(ppviz.Config(schedule="1f1b", devices=4, microbatches=8)).ops
        k = int(np.flatnonzero((ops.device == 1) & (ops.kind == "B") & (ops.microbatch == 5))[0])
        page.mouse.move(*op_centre(page, k))
        tip = page.locator(".ppviz-tooltip")
        tip.wait_for(state="visible")
        text = " ".join(tip.inner_text().split())
        assert "1B5" in text and "microbatch 5" in text and "device 1 (stage 1)" in text

        page.mouse.click(*op_centre(page, k))
        sel = server["root"] / "selection.txt"
        wait_for_file(sel, "5")
        page.locator(".ppviz-gantt").press("Escape")
        wait_for_file(sel, "-1")

        # the p control re-simulates in the kernel and the chart redraws with 6 devices
        field = page.locator(".widget-inline-hbox", has_text="p").locator("input").nth(0)
        field.fill("6")
        field.press("Enter")
        page.wait_for_function("document.querySelector('.ppviz-gantt').dataset.runOps === '96'", timeout=30_000)
    except Exception:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"failed-{server['app']}.png"))
        raise
    finally:
        context.close()


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


def offline_page(browser, viewport):
    """A page on which every request off this machine is refused and recorded, and page
    errors are recorded."""
    context = browser.new_context(viewport=viewport)
    external, errors = [], []

    def route(r):
        host = urllib.parse.urlsplit(r.request.url).hostname
        if host in ("127.0.0.1", "localhost"):
            return r.continue_()
        external.append(r.request.url)
        return r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    return context, page, external, errors


def gantt_states(page):
    return page.evaluate("""[...document.querySelectorAll('.ppviz-gantt')].map(e => ({
        emphasis: e.dataset.emphasis, device: e.dataset.selectedDevice, theme: e.dataset.theme,
        draws: Number(e.dataset.draws), view: e.ppviz.getView(), overview: e.dataset.overview,
        labels: Number(e.dataset.labels), canvas: (({left, width}) => ({left, width}))(
            e.querySelector('canvas').getBoundingClientRect())}))""")


@contextlib.contextmanager
def offline_lab(browser, tmp_path, source, failure_shot, *, viewport=None, dark=False):
    """JupyterLab serving a notebook of ``source`` and an offline page (:func:`offline_page`) to
    open it on; yields (server, page). Once the test is done the page must have reached nothing
    off this machine and raised no error; if anything fails, a screenshot of the page is saved
    at ``failure_shot``."""
    context, page, external, errors = offline_page(browser, viewport or {"width": 1600, "height": 2600})
    with jupyter("lab", tmp_path, source, dark=dark) as server:
        try:
            yield server, page
            assert external == [], f"the page tried to reach the network: {external}"
            assert errors == []
        except Exception:
            failure_shot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(failure_shot))
            raise
        finally:
            context.close()


def open_compare(page, url, runs=5):
    """Run the compare cell and wait for its Gantt charts (``runs`` of them) and the Altair
    charts; hides JupyterLab's side bar so the output is wide."""
    page.goto(url)
    run_cell(page, page.locator(".jp-OutputArea-output .ppviz-compare"), timeout=30_000)
    page.wait_for_function("[...document.querySelectorAll('.ppviz-gantt')].filter(e => Number(e.dataset.draws) >= 1)"
                           f".length === {runs}", timeout=60_000)
    # the chart's marks, from vega bundled by vl-convert (a CDN import would have been refused)
    page.locator(".ppviz-compare-charts svg path[aria-label]").first.wait_for(timeout=60_000)
    page.keyboard.press("Control+b")
    page.wait_for_timeout(500)
    return page.locator(".jp-OutputArea-output").filter(has=page.locator(".ppviz-compare"))


def mark_opacity(page, prefix):
    """{aria-label: opacity} of the chart's marks whose label starts with prefix."""
    return page.evaluate("""prefix => Object.fromEntries([...document.querySelectorAll(
        '.ppviz-compare-charts svg path[aria-label]')].map(e => [e.getAttribute('aria-label'), e.getAttribute('opacity')])
        .filter(([label]) => label.startsWith(prefix)))""", prefix)


def wait_for(page, predicate, what, timeout=15.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        page.wait_for_timeout(100)
    pytest.fail(f"timed out waiting for {what}")


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


def test_compare_in_jupyterlab_offline_and_linked(browser, tmp_path):
    results = [ppviz.simulate(ppviz.Config(schedule=s, devices=8, microbatches=32)) for s in FIVE]
    extent = max(r.makespan for r in results)
    with offline_lab(browser, tmp_path, COMPARE, SHOTS / "failed-light.png") as (server, page):
        output = open_compare(page, server["url"])
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
        wait_for(page, lambda: (server["root"] / "time_window.txt").exists() and np.allclose(
            json.loads((server["root"] / "time_window.txt").read_text()), [0, opening["t1"]]), "the window in Python")
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
        root = server["root"]

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


def test_compare_over_real_links_shows_and_links_communication(browser, tmp_path):
    with offline_lab(browser, tmp_path, COMPARE_LINKS, SHOTS / "failed-links.png") as (server, page):
        output = open_compare(page, server["url"], runs=3)
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
        wait_for_file(server["root"] / "selected_schedule.txt", "zb-h1")
        SHOTS.mkdir(parents=True, exist_ok=True)
        output.screenshot(path=str(SHOTS / "compare-links.png"))


def test_compare_follows_jupyterlab_dark_theme(browser, tmp_path):
    with offline_lab(browser, tmp_path, COMPARE, SHOTS / "failed-dark.png", dark=True) as (server, page):
        output = open_compare(page, server["url"])
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
        wait_for_file(server["root"] / "selected_schedule.txt", "zb-v")
        page.mouse.move(5, 5)
        page.wait_for_timeout(300)
        output.screenshot(path=str(SHOTS / "compare-dark-selected.png"))


CHART = """\
import ppviz
from ppviz import charts
charts.bubble_chart([ppviz.Config(schedule=s, devices=4, microbatches=8) for s in ("1f1b", "zb-h1", "interleaved-1f1b")])
"""


def test_a_standalone_chart_draws_in_jupyterlab_offline(browser, tmp_path):
    # an Altair chart from ppviz.charts as the cell's last expression, every request off this
    # machine refused: Altair's default renderer would load vega from a CDN ("Error loading script")
    results = {s: ppviz.simulate(ppviz.Config(schedule=s, devices=4, microbatches=8))
               for s in ("1f1b", "zb-h1", "interleaved-1f1b")}
    with offline_lab(browser, tmp_path, CHART, ARTIFACTS / "failed-standalone-chart.png",
                     viewport={"width": 1200, "height": 900}) as (server, page):
        page.goto(server["url"])
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
        shots = ARTIFACTS / "charts"
        shots.mkdir(parents=True, exist_ok=True)
        output.screenshot(path=str(shots / "bubble-chart-offline.png"))
