"""``Result.to_html``: the exported page draws the chart in headless Chromium with the network off,
and its tooltips, selection and zoom work there from file://."""

import numpy as np
import pytest

import ppviz

from ppviz.charts.style import THEMES

from .conftest import op_centre

# F of microbatch 0 is drawn in the light palette's F blue, unshaded
F_BLUE = tuple(int(THEMES["light"]["kinds"][0][i:i + 2], 16) for i in (1, 3, 5))


@pytest.fixture
def offline(browser):
    """A page that can reach nothing: the context is offline and every request but the file
    under test is aborted; ``page.requests`` lists every URL the page asked for."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, offline=True)
    allowed = set()
    requests = []

    def handle(route):
        requests.append(route.request.url)
        if route.request.url in allowed:
            route.continue_()
        else:
            route.abort()

    context.route("**/*", handle)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.allowed, page.requests, page.errors = allowed, requests, errors
    yield page
    context.close()


def test_the_harness_sees_requests_to_the_network(offline, tmp_path):
    # otherwise "no request was attempted" below would prove nothing
    path = tmp_path / "fetches.html"
    path.write_text('<!doctype html><img src="https://example.com/x.png"><script src="http://127.0.0.1:9/x.js"></script>')
    offline.allowed.add(path.as_uri())
    offline.goto(path.as_uri())
    offline.wait_for_load_state("load")
    assert offline.requests[0] == path.as_uri()
    assert {"https://example.com/x.png", "http://127.0.0.1:9/x.js"} <= set(offline.requests)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_exported_page_draws_offline(offline, tmp_path, theme):
    res = ppviz.simulate(ppviz.Config(schedule="interleaved-1f1b", devices=4, microbatches=8, stages_per_device=2))
    path = tmp_path / "chart.html"
    assert res.to_html(path, theme=theme) is None
    offline.allowed.add(path.as_uri())
    offline.goto(path.as_uri())
    offline.wait_for_function("window.ppvizReady === true")
    offline.wait_for_function("Number(document.querySelector('.ppviz-gantt')?.dataset.draws) >= 1")
    root = offline.locator(".ppviz-gantt")
    assert int(root.get_attribute("data-ops")) == len(res.ops) == 128
    assert float(root.get_attribute("data-draw-ms")) >= 0
    assert root.get_attribute("data-theme") == theme
    assert offline.requests == [path.as_uri()]
    assert offline.errors == []
    assert "interleaved-1f1b" in root.inner_text()
    if theme == "light":
        # the canvas holds the bars, not just an empty frame
        blue = offline.evaluate("""rgb => {
            const c = document.querySelector('.ppviz-gantt canvas');
            const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            let n = 0;
            for (let i = 0; i < px.length; i += 4)
                if (px[i] === rgb[0] && px[i + 1] === rgb[1] && px[i + 2] === rgb[2]) n++;
            return n;
        }""", list(F_BLUE))
        assert blue > 200


def test_exported_page_stays_interactive_offline(offline, tmp_path):
    # what a reader of the file does with no network and no kernel: hover, click, zoom
    res = ppviz.simulate(ppviz.Config(schedule="interleaved-1f1b", devices=4, microbatches=8, stages_per_device=2))
    path = tmp_path / "chart.html"
    res.to_html(path)
    offline.allowed.add(path.as_uri())
    offline.goto(path.as_uri())
    offline.wait_for_function("Number(document.querySelector('.ppviz-gantt')?.dataset.draws) >= 1")
    root = offline.locator(".ppviz-gantt")
    ops = res.ops
    k = int(np.flatnonzero((ops.device == 2) & (ops.kind == "B") & (ops.microbatch == 6))[0])
    offline.mouse.move(*op_centre(offline, k))
    tip = root.locator(".ppviz-tooltip")
    tip.wait_for(state="visible")
    text = " ".join(tip.inner_text().split())
    assert f"{ops.stage[k]}B6" in text and f"start {ops.start[k]:.6g}" in text and f"end {ops.end[k]:.6g}" in text
    offline.mouse.click(*op_centre(offline, k))
    assert offline.evaluate("window.ppvizModel.get('selected_microbatch')") == 6
    assert root.get_attribute("data-selected-device") == "2"
    full = root.evaluate("e => e.ppviz.getView()")
    box = root.locator("canvas").bounding_box()
    offline.mouse.move(box["x"] + box["width"] / 2, box["y"] + 40)
    offline.keyboard.down("Control")
    offline.mouse.wheel(0, -600)
    offline.keyboard.up("Control")
    offline.wait_for_function(f"(() => {{ const v = document.querySelector('.ppviz-gantt').ppviz.getView();"
                              f" return v.t1 - v.t0 < {(full['t1'] - full['t0']) / 2}; }})()")
    root.press("Escape")
    assert offline.evaluate("window.ppvizModel.get('selected_microbatch')") == -1
    assert offline.requests == [path.as_uri()] and offline.errors == []
