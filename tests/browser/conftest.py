"""Headless Debian Chromium driven by Playwright, never a downloaded browser.

Without the browser or Playwright these tests skip on a developer machine; under CI=true
they fail, so a missing install step cannot pass as green.
"""

import os
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("PPVIZ_CHROMIUM", "/usr/bin/chromium")
# without the networking flags Chromium keeps calling out from this machine's closed network
ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-quic"]
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"


def _unavailable(why: str):
    if os.environ.get("CI", "").lower() not in ("", "0", "false"):
        pytest.fail(f"CI=true but {why}")
    pytest.skip(why)


@pytest.fixture(scope="session")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install -e '.[test]')")
    if not Path(CHROMIUM).exists():
        _unavailable(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set PPVIZ_CHROMIUM)")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, device_scale_factor=1)
    pg = context.new_page()
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.errors = errors
    yield pg
    context.close()
    assert not errors, f"errors in the page: {errors}"


def open_chart(page, x, tmp_path, *, theme="light", name="chart"):
    """Load the standalone page of x and wait for its first draw; returns the root locator."""
    from ppviz.widgets import standalone_html

    path = tmp_path / f"{name}.html"
    path.write_text(standalone_html(x, theme=theme))
    page.goto(path.as_uri())
    page.wait_for_function("window.ppvizReady === true")
    root = page.locator(".ppviz-gantt")
    page.wait_for_function("Number(document.querySelector('.ppviz-gantt')?.dataset.draws) >= 1")
    return root


def op_centre(page, k):
    box = page.evaluate("k => document.querySelector('.ppviz-gantt').ppviz.opBox(k)", k)
    assert box is not None, f"op {k} has no box"
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
