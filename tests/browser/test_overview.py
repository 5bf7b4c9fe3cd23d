"""Overview and detail in Debian's Chromium (the standalone page): a run too dense to read whole
opens on a readable window from its start, with the whole run in the strip above; small runs look
as before; at p = 64 the rows keep a readable height and scroll. Saves artifacts/overview/*.png."""

import pytest

import ppviz

from .conftest import ARTIFACTS

SHOTS = ARTIFACTS / "overview"
CELL = 800  # px: the width of a notebook cell's output on a laptop


def in_cell(page, x, tmp_path, *, theme="light", name="chart"):
    from ppviz.widgets import standalone_html

    page.set_viewport_size({"width": CELL + 48, "height": 1000})
    path = tmp_path / f"{name}.html"
    path.write_text(standalone_html(x, theme=theme, width=f"{CELL}px"))
    page.goto(path.as_uri())
    page.wait_for_function("window.ppvizReady === true")
    page.wait_for_function("Number(document.querySelector('.ppviz-gantt')?.dataset.draws) >= 1")
    root = page.locator(".ppviz-gantt")
    assert root.bounding_box()["width"] == CELL
    return root


HOOKS = "document.querySelector('.ppviz-gantt').ppviz"


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_interleaved_p8_m32_v2_opens_readable_in_an_800_px_cell(page, tmp_path, theme):
    cfg = ppviz.Config(schedule="interleaved-1f1b", devices=8, microbatches=32, stages_per_device=2)
    root = in_cell(page, cfg, tmp_path, theme=theme)
    # 1,024 ops: all of them drew 0 labels across 800 px; the opening window labels most of its ops
    assert int(root.get_attribute("data-labels")) >= 150
    assert root.get_attribute("data-overview") == "shown"
    view = page.evaluate(f"{HOOKS}.getView()")
    assert view["t0"] == 0 and view["t1"] < ppviz.simulate(cfg).makespan / 4
    # Python hears of the window the chart opened on
    assert page.evaluate("window.ppvizModel.get('time_window')") == [view["t0"], view["t1"]]
    SHOTS.mkdir(parents=True, exist_ok=True)
    root.screenshot(path=str(SHOTS / f"interleaved-p8-{theme}.png"))

    # dragging the overview's window moves the detail view, whose ops stay labelled
    box = page.evaluate(f"{HOOKS}.overviewWindow()")
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + 200, y, steps=5)
    page.mouse.up()
    moved = page.evaluate(f"{HOOKS}.getView()")
    assert moved["t0"] > view["t1"] and moved["t1"] - moved["t0"] == pytest.approx(view["t1"] - view["t0"])
    assert int(root.get_attribute("data-labels")) >= 150  # the steady state is busier than the start
    root.screenshot(path=str(SHOTS / f"interleaved-p8-{theme}-moved.png"))


def test_a_small_run_looks_as_before(page, tmp_path):
    res = ppviz.simulate(ppviz.Config(schedule="1f1b", devices=4, microbatches=8))
    root = in_cell(page, res, tmp_path)
    assert root.get_attribute("data-overview") == "none"
    assert int(root.get_attribute("data-labels")) == len(res.ops)
    assert page.evaluate(f"{HOOKS}.getView()") == {"t0": 0, "t1": res.makespan}
    assert page.evaluate("window.ppvizModel.get('time_window')") == []
    SHOTS.mkdir(parents=True, exist_ok=True)
    root.screenshot(path=str(SHOTS / "p4.png"))


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_at_p64_rows_stay_legible_and_scroll(page, tmp_path, theme):
    root = in_cell(page, ppviz.Config(schedule="1f1b", devices=64, microbatches=128), tmp_path, theme=theme)
    g = page.evaluate(f"{HOOKS}.geometry()")
    # rows were 10 px with 9 px labels; now 20 px with 11 px labels, the bars labelled too
    assert g["rowHeight"] >= 20 and g["rowLabelPx"] >= 11
    assert g["scrollMax"] > 0 and g["rowsBottom"] - g["rowsTop"] <= 480
    assert int(root.get_attribute("data-labels")) >= 150
    assert root.get_attribute("data-clipped") == "0"
    first, last = map(int, root.get_attribute("data-rows").split("-"))
    assert first == 0 and 16 <= last < 63  # 21 rows of 64 in view
    SHOTS.mkdir(parents=True, exist_ok=True)
    root.screenshot(path=str(SHOTS / f"1f1b-p64-{theme}.png"))
    # a plain wheel over the rows scrolls them to the last device, then the page scrolls on
    page.mouse.move(500, (g["rowsTop"] + g["rowsBottom"]) / 2)
    for _ in range(12):
        page.mouse.wheel(0, 400)
    page.wait_for_function(f"{HOOKS}.getScroll() === {g['scrollMax']}")
    assert root.get_attribute("data-rows").endswith("-63")
    root.screenshot(path=str(SHOTS / f"1f1b-p64-{theme}-scrolled.png"))
