"""The chart's input in a real browser (Debian's Chromium, the standalone page): the wheel
belongs to the page unless Ctrl or ⌘ is held, keys zoom and pan while the chart has focus and
go no further, a double-click resets without selecting text, and the busy state dims the chart.
"""

import ppviz

from .conftest import open_chart

SPACER = "document.body.append(Object.assign(document.createElement('div'), {style: 'height: 3000px'}))"
VIEW = "document.querySelector('.ppviz-gantt').ppviz.getView()"


def view(page) -> dict:
    return page.evaluate(VIEW)


def box(page, k) -> dict:
    return page.evaluate(f"document.querySelector('.ppviz-gantt').ppviz.opBox({k})")


def span(v) -> float:
    return v["t1"] - v["t0"]


def test_a_plain_wheel_scrolls_the_page_and_ctrl_wheel_zooms_around_the_pointer(page, tmp_path):
    root = open_chart(page, ppviz.Config(schedule="1f1b", devices=4, microbatches=8), tmp_path)
    page.evaluate(SPACER)
    full = view(page)
    k = 40  # an op in the middle of the run
    b = box(page, k)
    page.mouse.move(b["x"], b["y"] + b["height"] / 2)
    page.mouse.wheel(0, 200)
    page.wait_for_function("window.scrollY > 0")
    assert view(page) == full
    assert root.get_attribute("data-hint") == "zoom"
    assert "scroll to zoom" in root.locator(".ppviz-hint").inner_text()

    page.evaluate("window.scrollTo(0, 0)")
    page.wait_for_function("window.scrollY === 0")
    b = box(page, k)
    x = round(b["x"])  # the pointer sits on whole pixels
    page.mouse.move(x, b["y"] + b["height"] / 2)
    page.keyboard.down("Control")
    page.mouse.wheel(0, -300)
    page.keyboard.up("Control")
    page.wait_for_function(f"(v => v.t1 - v.t0 < {span(full) / 1.5})({VIEW})")
    assert page.evaluate("window.scrollY") == 0
    # the time under the pointer stays under it: the op's start is still at the pointer
    zoomed = box(page, k)
    factor = span(full) / span(view(page))
    assert abs(zoomed["x"] - (x + (b["x"] - x) * factor)) < 0.5
    assert zoomed["width"] > b["width"] * 1.5


def test_keys_zoom_pan_and_reset_while_focused_and_go_no_further(page, tmp_path):
    root = open_chart(page, ppviz.Config(schedule="zb-h1", devices=4, microbatches=12), tmp_path)
    page.evaluate("window.__keys = []; document.addEventListener('keydown', e => window.__keys.push(e.key))")
    full = view(page)
    canvas = root.locator("canvas").bounding_box()
    # focus the chart with a click on idle time, then rest the pointer over the plot
    page.mouse.click(canvas["x"] + canvas["width"] - 30, canvas["y"] + 12)
    page.mouse.move(canvas["x"] + canvas["width"] * 0.5, canvas["y"] + 12)
    page.keyboard.press("+")
    zoomed = view(page)
    assert abs(span(full) / span(zoomed) - 1.5) < 1e-6
    page.keyboard.press("ArrowRight")
    panned = view(page)
    assert abs((panned["t0"] - zoomed["t0"]) - 0.2 * span(zoomed)) < 1e-6
    page.keyboard.press("-")
    assert abs(span(view(page)) - span(full)) < 1e-6
    page.keyboard.press("=")
    page.keyboard.press("0")
    assert view(page) == full
    page.keyboard.press("a")  # not the chart's: it goes on to the host
    assert page.evaluate("window.__keys") == ["a"]


def test_double_click_resets_the_view_without_selecting_text(page, tmp_path):
    root = open_chart(page, ppviz.Config(schedule="1f1b", devices=4, microbatches=8), tmp_path)
    full = view(page)
    page.evaluate("document.querySelector('.ppviz-gantt').ppviz.setView(3, 9)")
    canvas = root.locator("canvas").bounding_box()
    page.mouse.dblclick(canvas["x"] + canvas["width"] * 0.6, canvas["y"] + 14)
    assert view(page) == full
    assert page.evaluate("window.getSelection().toString()") == ""
    # how: the second press of a double-click, whose default is to select a word, is cancelled,
    # and the canvas is not selectable
    prevented = page.evaluate("""(() => { const e = new MouseEvent('mousedown', {detail: 2, bubbles: true,
        cancelable: true}); document.querySelector('.ppviz-gantt canvas').dispatchEvent(e); return e.defaultPrevented; })()""")
    assert prevented
    assert root.locator("canvas").evaluate("e => getComputedStyle(e).userSelect") == "none"


def test_the_busy_state_dims_the_chart_and_says_why(page, tmp_path):
    root = open_chart(page, ppviz.Config(schedule="1f1b", devices=4, microbatches=8), tmp_path)
    busy = root.locator(".ppviz-busy")
    assert busy.is_hidden()
    page.evaluate("window.ppvizModel.set('busy', 'simulating 400,000 ops…')")
    assert root.get_attribute("data-busy") == "simulating 400,000 ops…"
    assert busy.inner_text() == "simulating 400,000 ops…"
    page.wait_for_function("Number(getComputedStyle(document.querySelector('.ppviz-gantt canvas')).opacity) < 0.5")
    page.evaluate("window.ppvizModel.set('busy', '')")
    assert root.get_attribute("data-busy") is None and busy.is_hidden()
    page.wait_for_function("getComputedStyle(document.querySelector('.ppviz-gantt canvas')).opacity === '1'")
