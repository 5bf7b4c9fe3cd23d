"""The overlay in the real bundle: the shipped trace over its calibrated simulation, read back
from the tooltip and the summary (ppviz.show(measured, against=...); standalone page, no kernel)."""

import numpy as np
import pytest

import ppviz
from ppviz.core.numbers import number, share
from ppviz.widgets import standalone_html

from .conftest import op_centre


@pytest.fixture(scope="module")
def run():
    measured = ppviz.load_trace(ppviz.example_trace())
    cal = ppviz.calibrate(measured)
    return measured, cal, ppviz.residuals(measured, cal)


def js_num(x: float, digits: int = 3) -> str:
    """The widget's number(): the float32 sent, through the shared formatter."""
    return number(float(np.float32(x)), digits=digits)


def signed(x: float) -> str:
    return ("+" if np.float32(x) > 0 else "") + js_num(x)


def open_overlay(page, measured, against, tmp_path):
    path = tmp_path / "overlay.html"
    path.write_text(standalone_html(measured, against=against))
    page.goto(path.as_uri())
    page.wait_for_function("window.ppvizReady === true")
    page.wait_for_function("Number(document.querySelector('.ppviz-gantt')?.dataset.draws) >= 1")


def tooltip_of(page, k):
    x, y = op_centre(page, k)
    page.mouse.move(x, y - 4)  # the measured bar, above the ghost strip
    tip = page.locator(".ppviz-tooltip")
    tip.wait_for(state="visible")
    return tip.inner_text().replace("\n", " ").replace("\t", " ")


def test_hovering_a_late_op_reads_its_residuals(page, tmp_path, run):
    measured, cal, res = run
    simulated = res.simulated
    open_overlay(page, measured, cal, tmp_path)
    # the op that starts furthest from its simulated start, and one that ends earliest
    for k in (int(np.argmax(np.abs(res.start))), int(np.argmin(res.end))):
        text = tooltip_of(page, k)
        assert measured.program.action_at(k) in text
        assert abs(res.start[k]) > 0.05  # a residual the text must show, not 0
        expected = (f"residual start {signed(res.start[k])} · duration {signed(res.duration[k])} · "
                    f"end {signed(res.end[k])} ms")
        assert expected in text, text
        assert (f"simulated {js_num(simulated.ops.start[k], 6)} – {js_num(simulated.ops.end[k], 6)} ms") in text
        d = int(measured.ops.device[k])
        assert f"device {d} ends {signed(res.finish[d])}" in text
        assert "attribution" in text


def test_the_summary_reads_step_time_bubble_and_the_split(page, tmp_path, run):
    measured, cal, res = run
    open_overlay(page, measured, cal, tmp_path)
    box = page.locator(".ppviz-overlay")
    assert box.is_visible()
    text = box.inner_text().replace("\n", " ")
    tm, ts = res.pipeline_time
    assert f"{number(tm, 'ms')} measured" in text
    assert f"{number(ts, 'ms')} calibrated simulation" in text
    assert f"{share(res.bubble_fraction[0])} measured" in text
    assert f"{share(res.bubble_fraction[1])} simulated" in text
    a = res.attribution
    for name, value in (("compute variance", a.compute_variance), ("communication", a.communication),
                        ("host overhead", a.host_overhead)):
        assert f"{name} {signed(value)} ms" in text.replace("\t", " "), text
    assert "overlay" not in page.evaluate("document.querySelector('canvas').getAttribute('aria-label')")
    assert "calibrated simulation under each bar" in page.evaluate(
        "document.querySelector('canvas').getAttribute('aria-label')")


OVERLAY_CELL = """\
import ppviz
measured = ppviz.load_trace(ppviz.example_trace())
ppviz.show(measured, against=ppviz.calibrate(measured))
"""


def test_the_overlay_reaches_jupyterlab_through_its_trait(browser, tmp_path, run):
    """The overlay trait goes through a real kernel's comm (bytes as a DataView), not the page."""
    from .hosts import jupyter, run_cell

    measured, _, res = run
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        with jupyter("lab", tmp_path, OVERLAY_CELL) as server:
            page.goto(server["url"])
            run_cell(page, page.locator(".jp-OutputArea-output .ppviz-overlay"), timeout=60_000)
            page.wait_for_function("Number(document.querySelector('.ppviz-gantt')?.dataset.draws) >= 1",
                                   timeout=30_000)
            summary = " ".join(page.locator(".ppviz-overlay").inner_text().split())
            assert f"{number(res.pipeline_time[0], 'ms')} measured" in summary
            k = int(np.argmax(np.abs(res.start)))
            text = tooltip_of(page, k)
            assert f"residual start {signed(res.start[k])} · duration {signed(res.duration[k])}" in text, text
    finally:
        context.close()
