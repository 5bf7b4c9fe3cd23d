"""End to end: a real Jupyter server and kernel, ppviz.show in a notebook, driven in Chromium.

Hovering an op shows the tooltip; clicking one sends the selection to the kernel, where an
observer writes it to a file; editing the p control re-simulates in Python and redraws.
"""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest

import ppviz

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


def notebook(path):
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": CELL}
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path.write_text(json.dumps({"cells": [cell], "metadata": {"kernelspec": kernel}, "nbformat": 4,
                                "nbformat_minor": 5}))


@pytest.fixture(params=["lab", "notebook"])
def server(request, tmp_path):
    """A Jupyter server on a random free port, a temporary root dir, no token."""
    app = request.param
    root = tmp_path / "root"
    root.mkdir()
    notebook(root / "chart.ipynb")
    port = free_port()
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
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


def wait_for_file(path, expected, timeout=30.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.exists() and path.read_text() == expected:
            return
        time.sleep(0.1)
    got = path.read_text() if path.exists() else "(no file)"
    pytest.fail(f"the kernel never saw selected_microbatch={expected}; {path.name}: {got}")


def test_show_in_a_real_notebook(browser, server):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        page.goto(server["url"])
        editor = page.locator(".jp-Notebook .jp-Cell .cm-content").first
        editor.wait_for(timeout=60_000)
        root = page.locator(".jp-OutputArea-output .ppviz-gantt")
        # a cell run before the kernel's session is connected is dropped without a trace,
        # and no indicator tells reliably when it is: run it again until the chart shows
        for attempt in range(6):
            editor.click()
            page.keyboard.press("Shift+Enter")
            try:
                root.wait_for(timeout=15_000)
                break
            except PlaywrightTimeout:
                if attempt == 5:
                    raise
        page.wait_for_function("Number(document.querySelector('.ppviz-gantt')?.dataset.draws) >= 1", timeout=30_000)
        assert root.get_attribute("data-ops") == "64"

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
        page.wait_for_function("document.querySelector('.ppviz-gantt').dataset.ops === '96'", timeout=30_000)
    except Exception:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"failed-{server['app']}.png"))
        raise
    finally:
        context.close()
