"""ppviz.widgets.static: the pictures stored beside widgets in notebooks, made only where
enabled (a live kernel stays as fast as without them)."""

import base64
import struct

import altair as alt
import ipywidgets
import pytest
from IPython.core.interactiveshell import InteractiveShell

import ppviz
from ppviz.widgets import static

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture
def shell():
    shell = InteractiveShell.instance()
    yield shell
    static.disable()


def _png_size(data: str) -> tuple[int, int]:
    png = base64.b64decode(data)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    return struct.unpack(">II", png[16:24])


def _titles(spec) -> list[str]:
    """Every chart title in a Vega-Lite spec, outermost first."""
    found = []
    if isinstance(spec, dict):
        title = spec.get("title")
        if title is not None:
            found.append(title if isinstance(title, str) else title.get("text"))
        for key in ("vconcat", "hconcat", "layer"):
            for child in spec.get(key, []):
                found += _titles(child)
    return found


def test_without_enable_a_widget_shows_no_picture(shell):
    data, _ = shell.display_formatter.format(ppviz.show(ppviz.Config("1f1b"), controls=False))
    assert WIDGET_VIEW in data and "image/png" not in data


def test_enabled_a_widget_carries_the_static_gantt_of_its_run(shell):
    static.enable()
    view = ppviz.show(ppviz.Config("zb-h1", devices=4, microbatches=8))
    data, metadata = shell.display_formatter.format(view)
    assert WIDGET_VIEW in data and "text/plain" in data
    width, height = _png_size(data["image/png"])
    assert 900 < width < 1300 and 300 < height < 900
    spec = static.static_chart(view).to_dict()
    assert metadata["image/png"]["ppviz"] == {"spec_sha256": static.spec_digest(spec), "renderer": static.RENDERER}
    # the picture is of the run on display, with its figures in the title
    assert spec["title"]["text"] == "zb-h1" and "makespan 27 (closed form 27)" in spec["title"]["subtitle"][1]
    view.update(microbatches=16)  # a later display shows the run then on display
    assert "makespan 51" in static.static_chart(view).to_dict()["title"]["subtitle"][1]


def test_enabled_an_altair_chart_is_stored_as_its_picture_only(shell):
    static.enable(scale=0.5)
    chart = ppviz.charts.bubble_chart([ppviz.Config("1f1b"), ppviz.Config("zb-h1")])
    data, _ = shell.display_formatter.format(chart)
    assert set(data) == {"text/plain", "image/png"}  # no HTML that loads Vega from a CDN
    full = static.fallback(chart, scale=1.0)[0]["image/png"]
    assert _png_size(data["image/png"])[0] == pytest.approx(_png_size(full)[0] / 2, abs=1)


def test_enabled_other_objects_are_left_alone(shell):
    static.enable()
    for obj in (ipywidgets.IntSlider(3), 42, "text"):
        data, _ = shell.display_formatter.format(obj)
        assert "image/png" not in data
    assert static.static_chart(ppviz.widgets.GanttWidget(None, error="refused")) is None


def test_a_comparison_is_pictured_on_one_time_scale_above_its_charts():
    view = ppviz.compare(ppviz.Config(devices=4, microbatches=8), schedules=["1f1b", "zb-h1", "zb-v"])
    spec = static.static_chart(view).to_dict()
    *gantts, charts = spec["vconcat"]
    assert [g["title"]["text"] for g in gantts] == ["1f1b", "zb-h1", "zb-v"]
    # one pixel is the same time in every chart: each plot is as wide as its makespan is long
    widths = [g["width"] for g in gantts]
    for width, result in zip(widths, view.results):
        assert width == round(900 * result.makespan / view.time_extent)
    assert "Bubble fraction per schedule" in _titles(charts)


def test_a_comparison_names_the_runs_it_could_not_run():
    view = ppviz.compare(ppviz.Config(devices=4, microbatches=4), schedules=["1f1b", "dualpipe-v"])
    spec = static.static_chart(view).to_dict()
    assert spec["title"]["text"] == "Not run" and spec["title"]["subtitle"][0].startswith("dualpipe-v: ")


def test_a_frontier_is_pictured_by_its_chart():
    # Frontier.chart is a method: the picture was of the bound method (an AttributeError)
    front = ppviz.frontier(ppviz.Config(devices=4, microbatches=8), memory=[])
    spec = static.static_chart(front.view()).to_dict()
    assert spec == front.chart().to_dict()
    data, metadata = static.fallback(front.view())
    assert metadata["image/png"]["ppviz"]["spec_sha256"] == static.spec_digest(spec)
    assert _png_size(data["image/png"])[0] > 400


def test_enable_refuses_a_bad_scale():
    with pytest.raises(ppviz.ConfigError, match="scale"):
        static.enable(scale=0)
