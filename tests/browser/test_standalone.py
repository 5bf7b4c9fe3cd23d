"""The real bundle in headless Chromium, fed by the real Python encoder (no kernel)."""

import numpy as np
import pytest

import ppviz

from .conftest import ARTIFACTS, open_chart, op_centre
from .programs import dualpipe_like


def action(res, k):
    return f"{res.ops.stage[k]}{res.ops.kind[k]}{res.ops.microbatch[k]}"


def fmt(x):
    return f"{x:.6g}"


def tooltip_of(page, k):
    x, y = op_centre(page, k)
    page.mouse.move(x, y)
    tip = page.locator(".ppviz-tooltip")
    tip.wait_for(state="visible")
    return tip.inner_text().replace("\n", " ").replace("\t", " ")


def test_tooltips_show_what_python_simulated(page, tmp_path):
    res = ppviz.simulate(ppviz.Config(schedule="interleaved-1f1b", devices=4, microbatches=8, stages_per_device=2,
                                      comm=0.25))
    open_chart(page, res, tmp_path)
    rng = np.random.default_rng(0)
    for k in rng.choice(len(res.ops), 12, replace=False):
        k = int(k)
        text = tooltip_of(page, k)
        d = int(res.ops.device[k])
        assert action(res, k) in text
        assert f"device {d} ({res.program.placement.describe(d)})" in text
        assert f"start {fmt(res.ops.start[k])}" in text
        assert f"end {fmt(res.ops.end[k])}" in text
        waited = int(res.ops.waited_for[k])
        if waited >= 0:
            assert f"waited for {action(res, waited)} on device {res.ops.device[waited]}" in text
        else:
            first = k == res.program.offsets[d]
            expected = "first op on its device" if first else \
                f"waited for its device, busy with {action(res, k - 1)} until {fmt(res.ops.end[k - 1])}"
            assert expected in text


def test_pairs_show_both_ops(page, tmp_path):
    res = ppviz.simulate(dualpipe_like(4, 8))
    open_chart(page, res, tmp_path)
    head = int(np.flatnonzero(res.program.pair)[0])
    text = tooltip_of(page, head)
    assert f"F&B pair · {action(res, head)} with {action(res, head + 1)}" in text
    assert "F&B overlapped pair" in page.locator(".ppviz-legend").inner_text()


def test_click_selects_and_escape_clears(page, tmp_path):
    res = ppviz.simulate(ppviz.Config(schedule="1f1b", devices=4, microbatches=8))
    root = open_chart(page, res, tmp_path)
    k = int(np.flatnonzero((res.ops.kind == "B") & (res.ops.microbatch == 5))[0])
    page.mouse.click(*op_centre(page, k))
    assert page.evaluate("window.ppvizModel.get('selected_microbatch')") == 5
    assert page.evaluate("window.ppvizModel.get('selected_op')") == k
    root.press("Escape")
    assert page.evaluate("window.ppvizModel.get('selected_microbatch')") == -1


def test_a_hundred_thousand_ops_draw_and_zoom(page, tmp_path):
    res = ppviz.simulate(ppviz.Config(schedule="1f1b", devices=8, microbatches=6250))
    assert len(res.ops) == 100_000
    root = open_chart(page, res, tmp_path)
    # it opens on a readable window, the whole run in the overview strip (drawn in the same frame)
    assert root.get_attribute("data-overview") == "shown"
    assert int(root.get_attribute("data-ops")) < 1000 <= int(root.get_attribute("data-labels")) * 10
    # a loose guard against pathological slowness; benchmarks/render.py measures properly
    assert float(root.get_attribute("data-draw-ms")) < 1000
    # all of it in the detail view
    page.evaluate(f"document.querySelector('.ppviz-gantt').ppviz.setView(0, {res.makespan})")
    page.evaluate("document.querySelector('.ppviz-gantt').ppviz.redraw()")
    assert int(root.get_attribute("data-ops")) == 100_000
    assert float(root.get_attribute("data-draw-ms")) < 1000
    box = root.locator("canvas").bounding_box()
    draws = int(root.get_attribute("data-draws"))
    rows = page.evaluate("document.querySelector('.ppviz-gantt').ppviz.geometry()")
    page.mouse.move(box["x"] + box["width"] / 2, rows["rowsTop"] + 10)
    page.keyboard.down("Control")
    page.mouse.wheel(0, -1500)
    page.keyboard.up("Control")
    page.wait_for_function(f"Number(document.querySelector('.ppviz-gantt').dataset.draws) > {draws}")
    assert int(root.get_attribute("data-ops")) < 100_000


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("name", ["1f1b", "interleaved", "dualpipe-like"])
def test_screenshots(page, tmp_path, name, theme):
    """Saves artifacts/<name>-<theme>.png to look at; checks the theme reached the page."""
    x = {
        "1f1b": ppviz.Config(schedule="1f1b", devices=4, microbatches=8),
        "interleaved": ppviz.Config(schedule="interleaved-1f1b", devices=4, microbatches=8, stages_per_device=2),
        "dualpipe-like": dualpipe_like(8, 16),
    }[name]
    page.set_viewport_size({"width": 1280, "height": 1000})
    root = open_chart(page, x, tmp_path, theme=theme)
    assert root.get_attribute("data-theme") == theme
    background = root.evaluate("e => getComputedStyle(e).backgroundColor")
    assert background == ("rgb(255, 255, 255)" if theme == "light" else "rgb(21, 23, 28)")
    assert int(root.get_attribute("data-labels")) > 0
    ARTIFACTS.mkdir(exist_ok=True)
    root.screenshot(path=str(ARTIFACTS / f"{name}-{theme}.png"))

    # then interacting: a microbatch selected with its dependency path, the scrubber at 45 %,
    # and the tooltip of another op
    res = ppviz.simulate(x)
    chosen = int(np.flatnonzero(res.ops.microbatch == 3)[0])
    page.mouse.click(*op_centre(page, chosen))
    assert page.evaluate("window.ppvizModel.get('selected_microbatch')") == 3
    scrub = root.locator(".ppviz-scrub")
    scrub.fill("450")
    assert root.locator(".ppviz-time").inner_text().startswith("t = ")
    hovered = int(np.flatnonzero((res.ops.microbatch == 3) & (res.ops.kind != "F"))[-1])
    page.mouse.move(*op_centre(page, hovered))
    root.locator(".ppviz-tooltip").wait_for(state="visible")
    root.screenshot(path=str(ARTIFACTS / f"{name}-{theme}-interacting.png"))
