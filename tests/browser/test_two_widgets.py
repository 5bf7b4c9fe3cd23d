"""Two charts on one page keep to themselves: hovering, selecting and zooming one neither
repaints the other nor changes its state (each view owns its caches and state)."""

import ppviz
from ppviz.widgets import standalone_html

from .conftest import ARTIFACTS


def draws(page, i):
    return page.evaluate(f"Number(document.querySelectorAll('.ppviz-gantt')[{i}].dataset.draws)")


def centre_of(page, i, k):
    box = page.evaluate(f"k => document.querySelectorAll('.ppviz-gantt')[{i}].ppviz.opBox(k)", k)
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


def state(page, i):
    return page.evaluate(f"""(() => {{ const m = window.ppvizModels[{i}];
        return [m.get('selected_microbatch'), m.get('selected_op'), m.get('time_window')]; }})()""")


def test_interacting_with_one_chart_leaves_the_other_alone(page, tmp_path):
    a = ppviz.simulate(ppviz.Config(schedule="1f1b", devices=4, microbatches=8))
    b = ppviz.simulate(ppviz.Config(schedule="zb-v", devices=4, microbatches=8))
    path = tmp_path / "two.html"
    path.write_text(standalone_html([a, b]))
    page.goto(path.as_uri())
    page.wait_for_function("window.ppvizReady === true")
    page.wait_for_function("[...document.querySelectorAll('.ppviz-gantt')].every(e => Number(e.dataset.draws) >= 1)")
    assert page.locator(".ppviz-gantt").count() == 2
    page.wait_for_timeout(300)  # let both settle (fonts, resize observers)
    before_b = draws(page, 1)
    before_a = draws(page, 0)

    x, y = centre_of(page, 0, 5)
    page.mouse.move(x, y)
    page.locator(".ppviz-tooltip").first.wait_for(state="visible")
    page.mouse.click(x, y)
    page.keyboard.down("Control")  # a plain wheel scrolls the page; Ctrl + wheel zooms
    page.mouse.wheel(0, -240)
    page.keyboard.up("Control")
    page.wait_for_timeout(300)

    mb = int(a.ops.microbatch[5])
    selected, op, window = state(page, 0)
    assert (selected, op) == (mb, 5)
    assert len(window) == 2 and window[1] - window[0] < a.makespan
    assert draws(page, 0) > before_a
    # the other chart did not repaint and kept its own state
    assert draws(page, 1) == before_b
    assert state(page, 1) == [-1, -1, []]
    # and it still answers on its own: selecting in it changes it alone
    x, y = centre_of(page, 1, 3)
    page.mouse.click(x, y)
    page.wait_for_timeout(200)
    assert state(page, 1)[:2] == [int(b.ops.microbatch[3]), 3]
    assert state(page, 0)[:2] == [mb, 5]
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "two_widgets.png"), full_page=True)
