"""Reading the chart (Debian's Chromium, the standalone page): model chunks patterned and
listed, DualPipe's two directions marked, the memory lanes' scale and hover values, the heat
strip above 16 devices, times with their unit, gutter labels whole at any width, a model that
does not fit its GPUs in red with its excess, Seq1F1B's segments numbered microbatch.segment and
an inference pipeline's latency and throughput. Saves the screenshots artifacts/reading/*.png to
look at."""

import re

import numpy as np
import pytest

import ppviz
from ppviz.core.numbers import number

from .conftest import ARTIFACTS, op_centre, open_chart

SHOTS = ARTIFACTS / "reading"

PIXELS = """([x0, x1, y]) => {
  const c = document.querySelector('.ppviz-gantt canvas');
  const r = c.getBoundingClientRect();
  const data = c.getContext('2d').getImageData(Math.round(x0 - r.left), Math.round(y - r.top), Math.round(x1 - x0), 1).data;
  const colours = new Set();
  for (let i = 0; i < data.length; i += 4) colours.add(`${data[i]},${data[i + 1]},${data[i + 2]}`);
  return colours.size;
}"""


def colours_across(page, k) -> int:
    """Distinct colours along a line through op k's bar, above its label."""
    b = page.evaluate(f"document.querySelector('.ppviz-gantt').ppviz.opBox({k})")
    return page.evaluate(PIXELS, [b["x"] + 4, b["x"] + b["width"] - 5, b["y"] + 3])


def tooltip_of(page, k) -> str:
    page.mouse.move(*op_centre(page, k))
    tip = page.locator(".ppviz-tooltip")
    tip.wait_for(state="visible")
    return " ".join(tip.inner_text().split())


def test_later_model_chunks_are_patterned_and_listed(page, tmp_path):
    res = ppviz.simulate(ppviz.Config(schedule="interleaved-1f1b", devices=4, microbatches=8, stages_per_device=2))
    root = open_chart(page, res, tmp_path)
    legend = root.locator(".ppviz-legend").inner_text()
    assert "chunk 0" in legend and "chunk 1" in legend
    ops = res.ops
    # microbatch 0's forward on device 0: stage 0 (its first chunk) and stage 4 (its second)
    first = int(np.flatnonzero((ops.stage == 0) & (ops.microbatch == 0) & (ops.kind == "F"))[0])
    second = int(np.flatnonzero((ops.stage == 4) & (ops.microbatch == 0) & (ops.kind == "F"))[0])
    assert colours_across(page, first) == 1
    assert colours_across(page, second) >= 2  # stripes
    assert "chunk 1 of 2" in tooltip_of(page, second)


def test_dualpipes_two_directions_are_marked(page, tmp_path):
    res = ppviz.simulate(ppviz.Config(schedule="dualpipe", devices=4, microbatches=10))
    root = open_chart(page, res, tmp_path)
    legend = " ".join(root.locator(".ppviz-legend").inner_text().split())
    assert "down: device 0 → 3 (first replica)" in legend and "up: device 3 → 0 (second replica)" in legend
    assert "F&B overlapped pair" in legend
    # the two swatches tell the directions apart at a glance: each a small bar with its mark
    # inside and its band where the bars carry it (top for down, bottom for up)
    swatches = root.locator(".ppviz-legend-direction .ppviz-swatch").evaluate_all("""els => els.map(e => {
        const r = e.getBoundingClientRect(); const shadow = getComputedStyle(e).boxShadow;
        return {text: e.textContent, width: r.width, height: r.height, band: Number(shadow.match(/(-?\\d+)px -?\\d+px 0px inset|inset 0px (-?\\d+)px/)?.slice(1).find(Boolean))}; })""")
    assert [w["text"] for w in swatches] == ["▼", "▲"]
    assert all(w["width"] >= 24 and w["height"] >= 14 for w in swatches)
    assert swatches[0]["band"] > 0 > swatches[1]["band"], swatches
    SHOTS.mkdir(parents=True, exist_ok=True)
    root.locator(".ppviz-legend").screenshot(path=str(SHOTS / "dualpipe-legend.png"))
    ops = res.ops
    up = int(np.flatnonzero((ops.microbatch == 7) & (ops.kind == "F") & ~res.program.pair)[0])
    down = int(np.flatnonzero((ops.microbatch == 1) & (ops.kind == "F") & ~res.program.pair)[0])
    assert "▲ up (second replica)" in tooltip_of(page, up)
    assert "▼ down (first replica)" in tooltip_of(page, down)
    # one way only: no direction marks
    one_way = open_chart(page, ppviz.Config(schedule="zb-v", devices=4, microbatches=8), tmp_path, name="zbv")
    assert "▼" not in one_way.locator(".ppviz-legend").inner_text()


def test_memory_lanes_show_their_scale_and_the_value_under_the_pointer(page, tmp_path):
    res = ppviz.simulate(ppviz.Config(schedule="zb-h1", devices=4, microbatches=8, time_unit="ms"))
    root = open_chart(page, res, tmp_path)
    assert root.get_attribute("data-memory") == "lanes"
    assert root.locator(".ppviz-metric-value").first.inner_text() == number(res.makespan, "ms")
    assert "start 0 ms" in tooltip_of(page, 0)
    canvas = root.locator("canvas").bounding_box()
    # device 2's lane: below the Gantt rows, found by walking down until the tooltip names it
    x = canvas["x"] + canvas["width"] * 0.45
    for y in range(int(canvas["y"] + canvas["height"] * 0.45), int(canvas["y"] + canvas["height"])):
        page.mouse.move(x, y)
        tip = page.locator(".ppviz-tooltip")
        if tip.is_visible() and "device 2 · activation memory" in tip.inner_text():
            break
    else:
        pytest.fail("no memory lane of device 2 under the pointer")
    text = " ".join(tip.inner_text().split())
    t = float(re.search(r"time ([\d.,]+) ms", text).group(1).replace(",", ""))
    shown = re.search(r"memory ([\d.]+)", text).group(1)
    times, values = res.memory.curve(2)
    expected = values[np.searchsorted(times, t, side="right") - 1]
    # the shared formatter's text, as the cards and the lanes' labels give it
    assert shown == number(float(np.float32(expected)))
    assert f"device's peak {number(res.peak_activation[2])}" in text


def test_many_devices_collapse_the_memory_lanes_into_a_heat_strip(page, tmp_path):
    res = ppviz.simulate(ppviz.Config(schedule="1f1b", devices=32, microbatches=64))
    root = open_chart(page, res, tmp_path)
    assert root.get_attribute("data-memory") == "heat"
    root.locator("canvas").evaluate("e => e.scrollIntoView({block: 'end'})")
    canvas = root.locator("canvas").bounding_box()
    page.mouse.move(canvas["x"] + canvas["width"] * 0.5, canvas["y"] + canvas["height"] - 14)
    tip = page.locator(".ppviz-tooltip")
    tip.wait_for(state="visible")
    assert re.search(r"device \d+ · activation memory", tip.inner_text())


@pytest.mark.parametrize("width", [360, 700, 1400])
@pytest.mark.parametrize("config", [
    ppviz.Config(schedule="1f1b", devices=4, microbatches=8),
    ppviz.Config(schedule="interleaved-1f1b", devices=64, microbatches=64, stages_per_device=4),
    ppviz.Config(schedule="dualpipe-v", devices=8, microbatches=16),
], ids=["p4", "p64-v4", "dualpipe-v"])
def test_gutter_labels_are_whole_at_every_width(page, tmp_path, width, config):
    page.set_viewport_size({"width": width + 48, "height": 900})
    root = open_chart(page, config, tmp_path)
    assert root.get_attribute("data-clipped") == "0"
    # nothing in the HTML around the canvas runs past the chart either
    overflow = root.evaluate("""e => [...e.querySelectorAll('.ppviz-header *, .ppviz-legend *')]
        .filter(x => x.scrollWidth > x.clientWidth + 1 && getComputedStyle(x).overflow !== 'visible').length""")
    assert overflow == 0
    assert root.evaluate("e => e.scrollWidth <= e.clientWidth + 1")


SCREENSHOTS = {
    "p4": ppviz.Config(schedule="zb-h1", devices=4, microbatches=8, time_unit="ms"),
    "p64": ppviz.Config(schedule="interleaved-1f1b", devices=64, microbatches=128, stages_per_device=2),
    "dualpipe": ppviz.Config(schedule="dualpipe", devices=8, microbatches=20, fb=2.2),
    "interleaved-v2": ppviz.Config(schedule="interleaved-1f1b", devices=4, microbatches=8, stages_per_device=2),
}


@pytest.mark.parametrize("name", list(SCREENSHOTS))
def test_screenshots_for_reading(page, tmp_path, name):
    page.set_viewport_size({"width": 1300, "height": 1000})
    root = open_chart(page, SCREENSHOTS[name], tmp_path)
    assert root.get_attribute("data-clipped") == "0"
    SHOTS.mkdir(parents=True, exist_ok=True)
    root.screenshot(path=str(SHOTS / f"{name}.png"))


LLAMA_70B_ON_8_H100 = dict(devices=8, microbatches=32, tensor_parallel=8, data_parallel=4, zero_stage=1)

OOM_PIXELS = """([r, g, b]) => {
  const root = document.querySelector('.ppviz-gantt');
  const c = root.querySelector('canvas');
  const data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 0; i < data.length; i += 4) if (data[i] === r && data[i + 1] === g && data[i + 2] === b) n++;
  return n;
}"""


def _rgb(hex_colour: str) -> list[int]:
    return [int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)]


def test_a_schedule_that_does_not_fit_is_red_with_its_excess(page, tmp_path):
    from ppviz.charts.style import THEMES

    model, gpu = ppviz.Transformer.preset("llama-3-70b"), ppviz.Hardware.preset("h100-sxm")
    gpipe = ppviz.simulate(ppviz.Config.from_model(model, gpu, schedule="gpipe", **LLAMA_70B_ON_8_H100))
    root = open_chart(page, gpipe, tmp_path, name="gpipe")
    badge = root.locator(".ppviz-fit")
    assert badge.inner_text() == "does not fit: device 7 over by 28.2 GiB"
    assert "ppviz-fit-over" in badge.get_attribute("class")
    assert "8 of 8 devices peak above the capacity of 80 GiB" in badge.get_attribute("title")
    assert root.locator(".ppviz-metric-over .ppviz-metric-value").inner_text() == "108 GiB"
    assert root.get_attribute("data-clipped") == "0"  # "device 7  peak 108 GiB" and "+28.2 GiB over" whole
    red = _rgb(THEMES["light"]["oom"])
    assert page.evaluate(OOM_PIXELS, red) > 500  # the capacity lines, excess and labels of 8 lanes
    # device 7's lane under the pointer: its memory in GiB, the capacity and the excess
    canvas = root.locator("canvas").bounding_box()
    x = canvas["x"] + canvas["width"] * 0.5
    for y in range(int(canvas["y"] + canvas["height"] * 0.5), int(canvas["y"] + canvas["height"])):
        page.mouse.move(x, y)
        tip = page.locator(".ppviz-tooltip")
        if tip.is_visible() and "device 7 · memory" in tip.inner_text():
            break
    else:
        pytest.fail("no memory lane of device 7 under the pointer")
    text = " ".join(tip.inner_text().split())
    assert "capacity 80 GiB: does not fit, +28.2 GiB over" in text
    assert "device's peak 108 GiB" in text
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.mouse.move(0, 0)
    root.screenshot(path=str(SHOTS / "llama-70b-gpipe-out-of-memory.png"))

    fits = ppviz.simulate(ppviz.Config.from_model(model, gpu, schedule="1f1b", **LLAMA_70B_ON_8_H100))
    root = open_chart(page, fits, tmp_path, name="1f1b")
    assert root.locator(".ppviz-fit").inner_text() == "fits in 80 GiB"
    assert root.locator(".ppviz-metric-over").count() == 0
    assert page.evaluate(OOM_PIXELS, red) == 0
    root.screenshot(path=str(SHOTS / "llama-70b-1f1b-fits.png"))


def test_segments_are_numbered_microbatch_dot_segment(page, tmp_path):
    res = ppviz.simulate(ppviz.Config(schedule="seq1f1b", microbatches=4, segments=2))
    root = open_chart(page, res, tmp_path)
    sizes = root.locator(".ppviz-sizes").inner_text()
    assert sizes.startswith("p=4 · m=4 · k=2 segments (bars: microbatch.segment)")
    assert "m=8" not in sizes
    ops = res.ops
    k = int(np.flatnonzero((ops.microbatch == 7) & (ops.kind == "F") & (ops.stage == 0))[0])
    text = tooltip_of(page, k)
    assert "microbatch 3, segment 1 of 2 (3.1)" in text
    assert int(root.get_attribute("data-labels")) == len(ops)  # every bar has room for its "3.1"


def test_a_forward_only_program_shows_latency_and_throughput_not_a_backward(page, tmp_path):
    res = ppviz.simulate(ppviz.Config(schedule="inference", devices=4, microbatches=8))
    root = open_chart(page, res, tmp_path)
    legend = root.locator(".ppviz-legend").inner_text()
    assert "F forward" in legend and "backward" not in legend and "idle (fill + drain)" in legend
    assert root.locator(".ppviz-sizes").inner_text() == "p=4 · m=8 · f=1 · 32 ops"
    labels = root.locator(".ppviz-metric-label").all_inner_texts()
    assert [x.lower() for x in labels] == ["makespan", "first output", "throughput", "fill + drain", "peak memory"]
    values = root.locator(".ppviz-metric-value").all_inner_texts()
    assert values[1:3] == [number(res.time_to_first_output), number(res.throughput, "per unit of time")]
    bubble = root.locator(".ppviz-metric").nth(3).get_attribute("title")
    assert "the fill and drain of this one batch" in bubble
