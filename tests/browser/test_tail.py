"""A training step's tail in the real bundle (Debian's Chromium, the page Result.to_html writes):
each device's data-parallel reduction, optimizer step and parameter gather drawn after its ops,
counted, named in the legend and told in its tooltip with the times Python simulated; screenshots
of Llama 3 70B over DGX H100 nodes with data parallelism at p = 8 and p = 64."""

import numpy as np
import pytest

import ppviz
from ppviz.core.numbers import number
from ppviz.core.numbers import share as percent

from .conftest import ARTIFACTS, open_chart

SHOTS = ARTIFACTS / "tail"


def llama(p, m, **options):
    """Llama 3 70B on DGX H100 nodes: tensor parallel 8 in a node, data parallel 4 across nodes."""
    layout = {} if 80 % p == 0 else {"layout": "balanced"}
    return ppviz.simulate(ppviz.Config.from_model(
        ppviz.Transformer.preset("llama-3-70b"), ppviz.Hardware.preset("h100-sxm"), devices=p, microbatches=m,
        tensor_parallel=8, data_parallel=4, topology="dgx-h100", **layout, **options))


def hooks(page, call: str):
    return page.evaluate(f"document.querySelector('.ppviz-gantt').ppviz.{call}")


def show_end(page, res, span):
    """The detail view on the step's last `span` ms (its end: the step time, no set-up here)."""
    end = res.step_time
    hooks(page, f"setView({end - span}, {end})")
    hooks(page, "redraw()")
    return end


def tooltip(page) -> str:
    tip = page.locator(".ppviz-tooltip")
    tip.wait_for(state="visible")
    return " ".join(tip.inner_text().split())


def ms(x) -> str:
    """A time as the tooltips give it (format.ts's PRECISE: six significant digits)."""
    return number(float(x), "ms", digits=6)


def test_each_devices_tail_is_drawn_and_told(page, tmp_path):
    # the distributed optimizer with its gather in the step: reduce-scatter, optimizer, all-gather
    res = llama(8, 16, zero_stage=1, overlap_param_gather=False)
    t = res.tails
    assert len(t) == 3 * 8 and set(t.kind.tolist()) == {"reduce", "optimizer", "gather"}
    root = open_chart(page, res, tmp_path, name="tail")
    assert root.get_attribute("data-tail-parts") == str(len(t))
    legend = " ".join(root.locator(".ppviz-legend").inner_text().split())
    for text in ("gradient reduce-scatter (DP tail; band: overlapped with the last backwards)",
                 "optimizer step (DP tail)", "parameter all-gather (DP tail)",
                 "TP/EP traffic (dark band: its share of the op)"):
        assert text in legend
    # the opening window is the run's start: no tail is in it
    assert root.get_attribute("data-tail") == "0"
    show_end(page, res, 800)
    assert root.get_attribute("data-tail") == str(len(t))
    # device 0's reduction: a band under its last B, then a bar after it
    hidden = t.hidden(res.last_op_end)
    i = int(np.flatnonzero((t.device == 0) & (t.kind == "reduce"))[0])
    boxes = hooks(page, f"tailBoxes({i})")
    assert [b["under"] for b in boxes] == ([True] if hidden[i] >= t.end[i] - t.start[i] else [True, False])
    band = boxes[0]
    page.mouse.move(band["x"] + band["width"] / 2, band["y"] + band["height"] - 1)
    text = tooltip(page)
    assert "gradient reduce-scatter · device 0 · stage 0" in text
    assert f"start {ms(t.start[i])} end {ms(t.end[i])} duration {ms(t.end[i] - t.start[i])}" in text
    assert f"collective {ms(res.config.step.reduce[0])}" in text
    after = t.end[i] - t.start[i] - hidden[i]
    assert ("overlapped all of it, under the device's ops" in text) if after <= 0 else \
        (f"overlapped {ms(hidden[i])} ({percent(hidden[i] / (t.end[i] - t.start[i]))}) under" in text)
    assert f"step ends at {ms(res.step_time)}; step time {number(res.step_time, 'ms')}" in text
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "p8_reduce_tooltip.png"), full_page=True)
    # the gather, the last part of device 7's step
    j = int(np.flatnonzero((t.device == 7) & (t.kind == "gather"))[0])
    (bar,) = hooks(page, f"tailBoxes({j})")
    page.mouse.move(bar["x"] + bar["width"] / 2, bar["y"] + bar["height"] / 2)
    text = tooltip(page)
    assert "parameter all-gather · device 7" in text
    assert f"start {ms(t.start[j])} end {ms(t.end[j])}" in text
    page.mouse.move(5, 5)
    page.screenshot(path=str(SHOTS / "p8_end.png"), full_page=True)


def test_a_step_without_its_tail_in_view_draws_none(page, tmp_path):
    res = ppviz.simulate(ppviz.Config("1f1b", devices=4, microbatches=8, time_unit="ms"))
    root = open_chart(page, res, tmp_path, name="plain")
    assert root.get_attribute("data-tail-parts") == "0" and root.get_attribute("data-tail") == "0"
    assert "DP tail" not in root.locator(".ppviz-legend").inner_text()


@pytest.mark.parametrize("p, m", [(8, 16), (64, 128)])
def test_screenshots_of_the_tail(page, tmp_path, p, m):
    res = llama(p, m)
    root = open_chart(page, res, tmp_path, name=f"p{p}")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"p{p}_open.png"), full_page=True)
    show_end(page, res, 300 if p == 64 else 700)
    shown = int(root.get_attribute("data-tail"))
    t = res.tails
    # the parts that end in the last span of the step are drawn
    assert shown == int((t.end >= res.step_time - (300 if p == 64 else 700)).sum()) > 0
    page.screenshot(path=str(SHOTS / f"p{p}_end.png"), full_page=True)
