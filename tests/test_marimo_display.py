"""marimo's display protocol (``_display_``, ppviz/widgets/marimo.py): what each view gives marimo
to draw, and the links that run in the kernel there. tests/browser/test_marimo.py draws them in a
real marimo."""

import altair as alt
import marimo as mo

import ppviz
from ppviz import charts
from ppviz.widgets import GanttWidget
from ppviz.widgets.frontier import FrontierView

TRIO = [ppviz.Config(schedule=s, devices=4, microbatches=8) for s in ("1f1b", "zb-h1", "interleaved-1f1b")]


def test_a_chart_shows_in_marimo_as_the_offline_widget_of_its_spec():
    chart = charts.bubble_chart(TRIO)
    shown = chart._display_()
    assert isinstance(shown, charts.OfflineChart) and isinstance(shown, alt.JupyterChart)
    assert shown.spec == chart.to_dict() and shown.embed_options == {"renderer": "svg"}
    assert charts.OfflineChart._is_offline  # vega from vl-convert's bundle


def test_in_marimo_a_renderer_the_user_chose_that_works_offline_is_kept():
    chart = charts.bubble_chart(TRIO) | charts.memory_chart(TRIO)
    with alt.renderers.enable("svg"):
        shown = chart._display_()
    # Altair's own class, which marimo draws through the user's renderer
    assert type(shown) is alt.HConcatChart and shown.to_dict() == chart.to_dict()
    assert type(chart).__module__ == "ppviz.charts.offline"  # the chart itself is left as it was


def test_show_gives_marimo_its_chart():
    viewer = ppviz.show(TRIO[0])
    assert viewer._display_() is viewer.gantt and len(viewer.gantt.result.ops) == 64


def test_a_frontier_shows_in_marimo_as_its_view_with_one_gantt_chart_that_follows_the_click():
    front = ppviz.frontier(ppviz.Config(devices=4, microbatches=8, comm=0.2), memory=[2])
    view = front._display_()
    assert isinstance(view, FrontierView)
    shown = view._display_()
    assert isinstance(shown, mo.Html) and 'class="ppviz-frontier"' in shown.text
    detail = view._marimo_detail
    assert detail.result is None and detail._meta == {} and detail._timeline == b""  # drawn as nothing
    view.selected = "zb-h1"
    assert detail.result.config.schedule == "zb-h1" and len(detail.result.ops) == len(front.result("zb-h1").ops)
    assert view.detail.children == ()  # the ipywidgets box, which marimo cannot draw, stays empty
    view.selected = ""
    assert detail.result is None and detail._meta == {}
    assert view._display_().text.count("ppviz-frontier") == 1 and view._marimo_detail is detail


def test_a_comparison_in_marimo_links_its_views_in_the_kernel():
    cmp = ppviz.compare(ppviz.Config(devices=4, microbatches=8), schedules=["1f1b", "zb-h1", "interleaved-1f1b"]).view()
    # in Jupyter the links are jslinks, in the browser: a change in Python reaches no other view
    cmp.gantts[0].selected_device = 2
    assert [g.selected_device for g in cmp.gantts] == [2, -1, -1] and cmp.selected_device == -1
    cmp.gantts[0].selected_device = -1
    shown = cmp._display_()
    assert isinstance(shown, mo.Html) and "One time axis" in shown.text
    for trait, value in [("selected_device", 3), ("selected_schedule", "zb-h1"), ("selected_microbatch", 5),
                         ("time_window", [1.0, 9.0])]:
        setattr(cmp.gantts[1], trait, value)
        assert [getattr(g, trait) for g in cmp.gantts] == [value] * 3, trait
        assert getattr(cmp, trait) == value and getattr(cmp.state, trait) == value
    cmp.chart._params = {"ppviz_schedule": "1f1b"}
    assert cmp.state._chart_params == {"ppviz_schedule": "1f1b"}
    links = cmp._kernel_links
    cmp._display_()
    assert cmp._kernel_links is links  # displayed again: no second set of links


def test_a_gantt_widget_set_to_none_draws_nothing():
    gantt = GanttWidget(ppviz.simulate(TRIO[0]), selected_microbatch=3)
    gantt.set_result(None)
    assert gantt.result is None and gantt._meta == {} and gantt._timeline == gantt._memory == gantt._overlay == b""
    assert (gantt.error, gantt.busy, gantt.selected_microbatch, gantt.selected_op) == ("", "", -1, -1)
    assert gantt.time_window == []
    gantt.set_result(ppviz.simulate(TRIO[1]))
    assert gantt._meta["devices"] == 4 and len(gantt._timeline) > 0
