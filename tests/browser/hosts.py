"""The notebook hosts the browser tests drive: a real Jupyter server (JupyterLab 4 and Notebook 7
are both its front ends) and a real marimo server, each on a free port of 127.0.0.1, and pages
on which every request off this machine is refused.

One server serves a whole test module (module-scoped fixtures); each test writes its own
notebook into its own folder, so what one kernel writes is never read by another test.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from .conftest import ARTIFACTS, ROOT

#: the checkout's ppviz in every kernel
PYTHONPATH = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_until_up(url: str, proc: subprocess.Popen, log: Path, what: str, timeout: float = 90) -> None:
    deadline = time.time() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if proc.poll() is not None or time.time() > deadline:
            pytest.fail(f"{what} did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.3)


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


#: the first cell of every test notebook: its output says that the page reaches the kernel
PROBE = '"kernel connected"'


def notebook_json(source: str) -> str:
    """A notebook of two cells: :data:`PROBE`, then ``source`` (see :func:`run_cell`)."""
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": code}
             for code in (PROBE, source)]
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return json.dumps({"cells": cells, "metadata": {"kernelspec": kernel}, "nbformat": 4, "nbformat_minor": 5})


class JupyterServer:
    """A Jupyter server with no token on a free port, serving ``base / "root"``; JupyterLab opens a
    notebook at ``/lab/tree/...``, Notebook 7 at ``/notebooks/...``."""

    def __init__(self, base: Path):
        self.base = base
        self.root = base / "root"
        self.root.mkdir()
        config = base / "config"
        self.settings = config / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
        self.settings.mkdir(parents=True)
        # no "get notified about Jupyter news?" toast over the outputs
        (self.settings / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
        self._count = itertools.count()
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(base / "runtime"), "JUPYTER_CONFIG_DIR": str(config),
               "PYTHONPATH": PYTHONPATH}
        self.log_path = base / "server.log"
        self._log = open(self.log_path, "w")
        # Notebook 7 is a server extension: this server serves both front ends. Without a token
        # the REST API still asks unsafe methods for an XSRF cookie; the tests shut kernels down
        # through it, on 127.0.0.1 only
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1",
             "--ServerApp.port_retries=0", "--allow-root", "--IdentityProvider.token=", "--ServerApp.password=",
             "--ServerApp.disable_check_xsrf=True", f"--ServerApp.root_dir={self.root}",
             "--LabApp.workspaces_dir=" + str(base / "workspaces")],
            stdout=self._log, stderr=subprocess.STDOUT, env=env, cwd=self.root)
        try:
            _wait_until_up(f"{self.url}/api/status", self.proc, self.log_path, "jupyter")
        except BaseException:
            self.close()
            raise

    def notebook(self, app: str, source: str) -> tuple[str, Path]:
        """A one-cell notebook of ``source`` in a folder of its own (the kernel's working
        directory); returns the URL that opens it in ``app`` ("lab" or "notebook") and the folder."""
        folder = self.root / f"nb{next(self._count)}"
        folder.mkdir()
        (folder / "chart.ipynb").write_text(notebook_json(source))
        path = f"{folder.name}/chart.ipynb"
        return (f"{self.url}/lab/tree/{path}?reset" if app == "lab" else f"{self.url}/notebooks/{path}"), folder

    @contextlib.contextmanager
    def dark_lab(self):
        """JupyterLab opens in its dark theme while inside (a user setting, read when a page loads)."""
        themes = self.settings / "themes.jupyterlab-settings"
        themes.write_text(json.dumps({"theme": "JupyterLab Dark"}))
        try:
            yield
        finally:
            themes.unlink()

    def shutdown_kernels(self) -> None:
        with urllib.request.urlopen(f"{self.url}/api/kernels", timeout=10) as r:
            kernels = json.load(r)
        for kernel in kernels:
            request = urllib.request.Request(f"{self.url}/api/kernels/{kernel['id']}", method="DELETE")
            with contextlib.suppress(OSError):
                urllib.request.urlopen(request, timeout=30).close()

    def close(self) -> None:
        _stop(self.proc)
        self._log.close()


@contextlib.contextmanager
def jupyter(app, tmp_path, source):
    """A Jupyter server of its own serving one notebook of ``source``: yields {"url", "root",
    "app"}, the URL opening it in ``app`` and the kernel's working directory."""
    server = JupyterServer(tmp_path)
    try:
        url, folder = server.notebook(app, source)
        yield {"url": url, "root": folder, "app": app}
    finally:
        server.close()


#: marimo's settings for the tests: run the notebook's cells when it opens, as `marimo run` does
#: and as a user's "run all" would
MARIMO_CONFIG = '[runtime]\nauto_instantiate = true\n[display]\ntheme = "{theme}"\n'


class MarimoServer:
    """``marimo edit`` (the notebook editor users run) with no token on a free port, serving the
    folder ``base / "notebooks"``; a session (and its kernel) ends when its page closes."""

    def __init__(self, base: Path):
        self.folder = base / "notebooks"
        self.folder.mkdir()
        self.home = base / "home"
        # marimo reads its user settings from $XDG_CONFIG_HOME/marimo/marimo.toml (a ~/.marimo.toml
        # comes first, so HOME is a fresh folder too)
        self.config = self.home / ".config" / "marimo" / "marimo.toml"
        self.config.parent.mkdir(parents=True)
        self.theme("light")
        self._count = itertools.count()
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "HOME": str(self.home), "XDG_CONFIG_HOME": str(self.home / ".config"),
               "PYTHONPATH": PYTHONPATH}
        self.log_path = base / "marimo.log"
        self._log = open(self.log_path, "w")
        marimo = Path(sys.executable).with_name("marimo")
        self.proc = subprocess.Popen(
            [str(marimo), "edit", str(self.folder), "--headless", "--no-token", "--host", "127.0.0.1",
             "--port", str(port), "--skip-update-check", "--session-ttl", "0"],
            stdout=self._log, stderr=subprocess.STDOUT, env=env, cwd=self.folder)
        try:
            _wait_until_up(f"{self.url}/health", self.proc, self.log_path, "marimo")
        except BaseException:
            self.close()
            raise

    def theme(self, name: str) -> None:
        """marimo's display theme ("light" or "dark") for the pages opened from now on."""
        self.config.write_text(MARIMO_CONFIG.format(theme=name))

    def notebook(self, cells: list[str]) -> str:
        """A marimo notebook of ``cells`` (Python source each); returns the URL that opens it."""
        name = f"nb{next(self._count)}.py"
        body = "".join(f"\n\n@app.cell\ndef _():\n{textwrap.indent(cell.rstrip(), '    ')}\n    return\n"
                       for cell in cells)
        (self.folder / name).write_text(f'import marimo\n\napp = marimo.App(width="full")\n{body}')
        return f"{self.url}/?file={name}"

    def close(self) -> None:
        _stop(self.proc)
        self._log.close()


#: errors Notebook 7.6's own front end raises on opening a notebook (one of `1 + 1`, no ppviz
#: loaded): a page of Notebook 7 may raise these and no other
NOTEBOOK_7_ERRORS = frozenset({"Cannot read properties of undefined (reading 'schema')",
                               "Command 'filebrowser:open-path' not registered."})


@contextlib.contextmanager
def offline_page(browser, viewport, failure_shot: Path, host_errors=frozenset()):
    """A page on which every request off this machine is refused: once the test is done it must
    have asked for nothing off this machine and raised no error but the ``host_errors`` the
    host raises by itself; if anything fails, a screenshot of the page is saved at ``failure_shot``."""
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
    try:
        yield page
        assert external == [], f"the page tried to reach the network: {external}"
        assert set(errors) <= host_errors, f"errors in the page: {errors}"
    except BaseException:
        failure_shot.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(Exception):
            page.screenshot(path=str(failure_shot))
        raise
    finally:
        context.close()


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


def run_cell(page, output, timeout=60_000):
    """Run a test notebook's cell (the one after the probe) until ``output`` (a locator in its
    output) shows."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    cells = page.locator(".jp-Notebook .jp-Cell")
    cells.nth(1).locator(".cm-content").wait_for(timeout=60_000)
    seen: list[str] = []
    # a cell run before the page's session reaches the kernel is dropped without a trace (its
    # prompt may even show "[*]:"), and no indicator tells when it does: run the probe, which
    # answers at once, until it answers; then the cell, once
    probe = cells.nth(0).locator(".jp-OutputArea-output", has_text=PROBE.strip('"'))
    for attempt in range(8):
        dismiss_dialogs(page, seen)
        cells.nth(0).locator(".cm-content").click()
        page.keyboard.press("Control+Enter")
        try:
            probe.wait_for(timeout=10_000)
            break
        except PlaywrightTimeout:
            continue
    else:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "run_cell-failure.png"))
        pytest.fail(f"the kernel never answered the probe in 8 tries; dialogs the host showed: {seen or 'none'}")
    cells.nth(1).locator(".cm-content").click()
    page.keyboard.press("Control+Enter")
    output.wait_for(timeout=timeout)


def op_point(gantt, k) -> tuple[float, float]:
    """The page coordinates of op ``k``'s centre in the Gantt chart ``gantt`` (a locator, which
    pierces marimo's shadow roots), scrolled into view."""
    gantt.scroll_into_view_if_needed()
    box = gantt.evaluate("(e, k) => e.ppviz.opBox(k)", k)
    assert box is not None, f"op {k} has no box"
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


def op_tooltip(page, gantt, k) -> str:
    """Hover op ``k`` of ``gantt``; the text of the tooltip that shows."""
    page.mouse.move(*op_point(gantt, k))
    tip = gantt.locator(".ppviz-tooltip")
    tip.wait_for(state="visible")
    return " ".join(tip.inner_text().split())


def cell_output(page):
    """The output of the test notebook's cell (the one after the probe)."""
    return page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea-output").first


def wait_for_file(path, expected, timeout=30.0, *, page=None):
    """Wait until the kernel has written ``expected`` to ``path``. Give the ``page`` where its
    host sends widget changes over HTTP (marimo): the offline page's route handler, which lets
    them through, runs only while Playwright is called, so the wait goes through the page."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.exists() and path.read_text() == expected:
            return
        if page is None:
            time.sleep(0.1)
        else:
            page.wait_for_timeout(100)
    got = path.read_text() if path.exists() else "(no file)"
    pytest.fail(f"the kernel never saw {path.stem}={expected}; {path.name}: {got}")


def wait_for(page, predicate, what, timeout=15.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        page.wait_for_timeout(100)
    pytest.fail(f"timed out waiting for {what}")
