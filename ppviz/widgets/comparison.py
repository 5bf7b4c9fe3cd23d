"""The view of a :class:`ppviz.Comparison` (what ``ppviz.compare`` returns): its runs on one
shared time axis above the Altair comparison charts, linked so that a selection made in one
view shows in all of them.

    ppviz.compare(ppviz.Config(devices=8, microbatches=32),
                  schedules=["1f1b", "interleaved-1f1b", "zb-h1", "zb-v", "dualpipe-v"]).view()

One compact Gantt chart per run, all drawn on the same time scale (0 to the longest
makespan), then the bubble, Pareto and peak-memory charts of
:func:`ppviz.charts.comparison_charts`, in the same colours. Clicking a run's bar or point in
those charts, or a Gantt chart's title, emphasises that run (the other Gantt charts and marks
dim; a second click clears it); clicking a device's row label or an op highlights that device
in every Gantt chart and in the peak-memory chart; clicking an op also follows its microbatch
in every Gantt chart, and a bar of the peak-memory chart selects its run and device. Zoom and
pan move all the Gantt charts together.

Every link runs in the browser, so the views stay linked while the kernel is busy:

- the Gantt charts and a :class:`CompareState` share ``selected_schedule``,
  ``selected_device``, ``selected_microbatch`` and ``time_window`` through
  ``ipywidgets.jslink`` (a star with the state at its centre);
- the state's front end turns clicks in the Altair charts (the point selections
  ``ppviz_pick_<n>``, whose values reach it through a jslink to the chart's
  ``_vl_selections``) into that selection, and writes the selection and the theme
  into the chart's params ``ppviz_schedule``, ``ppviz_device`` and ``ppviz_dark`` (a jslink
  to the chart's ``_params``), of which the marks' opacity and the charts' colours are
  expressions.

Each linked model still syncs to the kernel, so Python sees every change (observe the
:class:`ComparisonView`'s ``selected_*`` traits) and can make one (set them). marimo has no
jslink: there the same pairs are linked in the kernel when marimo displays the view
(``ComparisonView._display_``, ppviz/widgets/marimo.py), so a selection reaches the other views
by way of Python.
"""

from __future__ import annotations

import itertools
from html import escape

import anywidget
import ipywidgets
import traitlets

from ..analysis.comparison import Comparison
from ..charts import comparison_charts, schedule_colors
from ..charts import widget as chart_widget
from ..charts.style import CHART, FONT_FAMILY, LABEL_SIZE, TEXT_SIZE
from ..charts.style import THEMES as PALETTES
from ..core.errors import ConfigError, checked_arguments
from ..core.numbers import number
from ..core.result import Result
from . import marimo
from .gantt import BUNDLE, GanttWidget, valid_window

#: Vega-Lite params of the linked charts: the emphasised run ("" for none), the highlighted
#: device (−1 for none) and whether to draw in dark colours; click selections are named
#: PICK + a number, and pick the fields ``name`` (a run) or ``name`` and ``device`` (a bar).
SCHEDULE_PARAM = "ppviz_schedule"
DEVICE_PARAM = "ppviz_device"
DARK_PARAM = "ppviz_dark"
PICK = "ppviz_pick_"

THEMES = ("auto", "light", "dark")
_DIM = 0.2
#: (light, dark) colours of the charts' chrome, the same as the Gantt chart's palettes
_INK = {role: (PALETTES["light"][key], PALETTES["dark"][key])
        for role, key in (("background", "background"), ("fg", "foreground"), ("muted", "muted"), ("axis", "axis"),
                          ("grid", "chartGrid"))}
#: colours ppviz.charts gives text and closed-form marks, redrawn light on dark
_DARK_LITERALS = {CHART["text"]: "fg", CHART["closedForm"]: "fg", CHART["subtitle"]: "muted",
                  # the halo that keeps a point's name clear of the marks is the page's colour
                  CHART["labelHalo"]: "background"}

# The linked Altair charts ----------------------------------------------------------------------

def _units(chart, layer: int = -1, counter=None):
    """(unit, layer) for each single-mark chart inside an Altair chart, depth first; ``layer``
    numbers the layer chart the unit belongs to (−1 for none)."""
    import altair as alt

    counter = counter if counter is not None else itertools.count()
    if isinstance(chart, alt.Chart):
        yield chart, layer
        return
    if isinstance(chart, alt.LayerChart):
        layer = next(counter)
    for key in ("layer", "hconcat", "vconcat", "concat"):
        for child in chart._get(key, []) or []:
            yield from _units(child, layer, counter)


def _titled(chart):
    """The charts inside ``chart`` (itself included) that carry a title."""
    import altair as alt

    if chart._get("title") is not alt.Undefined:
        yield chart
    for key in ("layer", "hconcat", "vconcat", "concat"):
        for child in chart._get(key, []) or []:
            yield from _titled(child)


def _theme_expr(role: str) -> dict:
    light, dark = _INK[role]
    return {"expr": f"{DARK_PARAM} ? '{dark}' : '{light}'"}


def _themed(props: dict) -> dict:
    """Mark or title properties with the dark ink ppviz.charts writes replaced by theme expressions."""
    return {key: _theme_expr(_DARK_LITERALS[value])
            if key in ("color", "fill", "stroke", "subtitleColor") and isinstance(value, str) and value in _DARK_LITERALS
            else value for key, value in props.items()}


def _link(chart, *, dark: bool = False):
    """An Altair comparison chart with the params that link it to the Gantt charts (built
    from ``chart``, which is changed on the way).

    Marks coloured by run (bars and points, and the edges of hollow points), their closed-form
    ticks and their value labels dim unless they belong to the run named by ``ppviz_schedule``
    (and, where they are per device, to the device ``ppviz_device``). Clicking a chart's run
    marks fills its point selection ``ppviz_pick_<n>`` of the field ``name``, or of ``name``
    and ``device`` where the marks are per device. ``ppviz_dark`` switches the colours of text, axes, grid and
    background between the light and the dark palette.
    """
    import altair as alt

    run = f"({SCHEDULE_PARAM} === '' || datum.name === {SCHEDULE_PARAM})"
    device = f"({DEVICE_PARAM} < 0 || datum.device === {DEVICE_PARAM})"
    # a click anywhere in a layer selects the datum under it, and a selection may be defined
    # on one unit of a layer only (Vega-Lite would declare its signals twice in one scope)
    picked_layers = set()
    picks = itertools.count()
    for unit, layer in _units(chart):
        mark = unit.mark
        mark = {"type": mark} if isinstance(mark, str) else _themed(mark.to_dict(validate=False))
        enc = unit.encoding.to_dict(validate=False) if unit._get("encoding") is not alt.Undefined else {}

        def field(channel):
            return enc.get(channel, {}).get("field") if isinstance(enc.get(channel), dict) else None

        kind = mark["type"]
        per_device = field("x") == "device"
        by_run = field("color") == "name" and kind in ("bar", "point")
        labels_run = kind == "text" and field("y") == "name"
        closed_form = kind == "tick" and field("opacity") == "closed_applies"
        edges = kind == "point" and field("detail") == "name"  # a hollow marker's grey edge
        if by_run or labels_run or closed_form or edges:
            match = f"{run} && {device}" if per_device else run
            unit.encoding.opacity = {**enc.get("opacity", {"value": 1}),
                                     "condition": {"test": f"!({match})", "value": _DIM}}
        if by_run:
            mark["cursor"] = "pointer"
            if layer not in picked_layers or layer < 0:
                picked_layers.add(layer)
                fields = ["name", "device"] if per_device else ["name"]
                select = alt.PointSelectionConfig(type="point", fields=fields, on="click", clear=False)
                unit.params = [alt.SelectionParameter(name=f"{PICK}{next(picks)}", select=select)]
        unit.mark = mark
    for titled in _titled(chart):
        title = titled.title
        titled.title = title if isinstance(title, str) else _themed(title.to_dict(validate=False))
    # building the chart again lifts the units' selections to the top, with the views they
    # apply to, where JupyterChart finds them
    chart = chart.copy(deep=True)
    params = [] if chart._get("params") is alt.Undefined else list(chart.params)
    chart.params = params + [alt.VariableParameter(name=SCHEDULE_PARAM, value=""),
                             alt.VariableParameter(name=DEVICE_PARAM, value=-1),
                             alt.VariableParameter(name=DARK_PARAM, value=bool(dark))]
    chart.background = _theme_expr("background")
    # room between the panel's border and the titles, axis labels and legend
    chart.padding = {"left": 14, "right": 14, "top": 12, "bottom": 10}
    fg, muted = _theme_expr("fg"), _theme_expr("muted")
    # no text under 11 px: Vega-Lite's axis labels default to 10
    chart.config = {
        "font": FONT_FAMILY,
        "title": {"color": fg, "subtitleColor": muted, "subtitleFontSize": LABEL_SIZE},
        "axis": {"labelColor": muted, "titleColor": fg, "domainColor": _theme_expr("axis"),
                 "tickColor": _theme_expr("axis"), "gridColor": _theme_expr("grid"),
                 "labelFontSize": LABEL_SIZE, "titleFontSize": LABEL_SIZE},
        "legend": {"labelColor": fg, "titleColor": fg, "labelFontSize": LABEL_SIZE, "titleFontSize": LABEL_SIZE},
        "header": {"labelFontSize": LABEL_SIZE, "titleFontSize": LABEL_SIZE},
        "view": {"stroke": _theme_expr("grid")},
    }
    return chart


def _chart(results: list[Result], metric: str, dark: bool):
    # SVG keeps the marks in the DOM (tests click them); no actions menu, whose editor link
    # would go online (ppviz.charts.to_svg / to_png export offline). One column: about 560 px,
    # so that a 600 px output (a 1,000 px window with JupyterLab's side bar open) shows its text
    # at full size; the SVG shrinks to fit anything narrower
    chart = chart_widget(_link(comparison_charts(results, metric=metric, columns=1), dark=dark),
                   embed_options={"renderer": "svg", "actions": False})
    chart.add_class("ppviz-compare-charts")
    return chart


# Widgets ---------------------------------------------------------------------------------------

#: the traits every Gantt chart of a comparison shares with its CompareState (and the Comparison)
SHARED = ("selected_schedule", "selected_device", "selected_microbatch", "time_window")
#: shared by the charts only: the span they open on, the smallest any of them chose (so that
#: every run's ops carry their labels in the one window they open on)
_OPENING = "_opening_span"


class CompareState(anywidget.AnyWidget):
    """The selection and view a comparison's widgets share, kept in the browser.

    Never displayed: its front end (``initialize`` in the widget bundle) links the Altair
    chart to the Gantt charts, as this module's docstring describes. The selection, the time
    window and the theme are public, as on the Gantt charts; ``_chart_selections`` and
    ``_chart_params`` are private mirrors of the chart's ``_vl_selections`` and ``_params``.
    """

    _esm = BUNDLE

    _ppviz_role = traitlets.Unicode("compare-state").tag(sync=True)
    selected_schedule = traitlets.Unicode("").tag(sync=True)
    selected_device = traitlets.Int(-1).tag(sync=True)
    selected_microbatch = traitlets.Int(-1).tag(sync=True)
    time_window = traitlets.List(traitlets.Float()).tag(sync=True)
    theme = traitlets.Enum(list(THEMES), default_value="auto").tag(sync=True)
    _opening_span = traitlets.Float(0.0, min=0.0).tag(sync=True)
    _chart_selections = traitlets.Dict().tag(sync=True)
    _chart_params = traitlets.Dict().tag(sync=True)

    @traitlets.validate("time_window")
    def _valid_window(self, proposal):
        return valid_window(proposal["value"])


@checked_arguments
class ComparisonView(ipywidgets.VBox):
    """The widget of a :class:`ppviz.Comparison` (``comparison.view()``; what a notebook
    shows): the Gantt charts above the Altair charts, linked.

    ``comparison`` is the data it draws; ``gantts`` holds one
    :class:`~ppviz.widgets.GanttWidget` per run, in order (refused runs included, each showing
    its reason), ``chart`` the Altair JupyterChart, ``state`` the shared :class:`CompareState`
    and ``links`` the jslinks that tie them (kept here: ipywidgets closes a link Python no
    longer holds; in marimo the same pairs are linked in the kernel instead). Every Gantt
    chart's time axis spans [0, ``comparison.time_extent``].

    ``selected_schedule`` ("" for none), ``selected_device`` (−1), ``selected_microbatch``
    (−1) and ``time_window`` ([] for all of time) follow clicks, zoom and pan in any view;
    observe them, or set them to make the views follow.
    """

    selected_schedule = traitlets.Unicode("")
    selected_device = traitlets.Int(-1)
    selected_microbatch = traitlets.Int(-1)
    time_window = traitlets.List(traitlets.Float())

    def __init__(self, comparison: Comparison, *, theme: str = "auto"):
        if not isinstance(comparison, Comparison):
            raise ConfigError("comparison", comparison, "give what ppviz.compare returns")
        self.comparison = comparison
        results = comparison.results
        colors = schedule_colors(results)
        self.state = CompareState(theme=theme)
        self.chart = _chart(results, comparison.metric, dark=theme == "dark")
        self.gantts = []
        for name, result, refusal in comparison.entries:
            options = dict(_compact=True, theme=theme, time_extent=comparison.time_extent, _run_name=name)
            if result is None:
                gantt = GanttWidget(None, _meta={"title": name}, error=refusal, **options)
            else:
                gantt = GanttWidget(result, _color=colors[name], **options)
            self.gantts.append(gantt)
        self._linked = [((self.state, trait), (gantt, trait)) for gantt in self.gantts for trait in (*SHARED, _OPENING)]
        self._linked += [((self.chart, "_vl_selections"), (self.state, "_chart_selections")),
                         ((self.chart, "_params"), (self.state, "_chart_params"))]
        self.links = [ipywidgets.jslink(source, target) for source, target in self._linked]
        self._kernel_links: list[traitlets.link] | None = None
        fit = ""
        if comparison.fits is not None:
            ranking = comparison.ranking
            fastest = f"; fastest that fits: <b>{escape(ranking[0])}</b>" if ranking else ""
            fit = f"<b>{len(ranking)} of {len(results)} fit</b> in device memory{fastest} · "
        extent = number(comparison.time_extent, comparison.time_unit)
        # a training step goes on after the ops, each device's tail: the axis runs to its end
        longest = "the longest step" if any(r.config.step is not None for r in comparison.results) \
            else "the longest makespan"
        self.hint = hint = ipywidgets.HTML(
            f"{fit}<b>One time axis</b>, 0 to {escape(extent)} ({longest}), "
            "each run whole in the strip above its rows · click a run's name, bar or point to emphasise it · a device's "
            "label or an op to highlight that device everywhere · Ctrl + scroll (or + / −), drag, or the strip's "
            "window to move all the timelines · Esc clears")
        hint.add_class("ppviz-compare-hint")
        stack = ipywidgets.VBox(self.gantts)
        stack.add_class("ppviz-compare-gantts")
        super().__init__(children=[hint, stack, self.chart])
        self.add_class("ppviz-compare")
        for trait in SHARED:
            traitlets.link((self.state, trait), (self, trait))

    def _display_(self):
        # marimo (ppviz/widgets/marimo.py): the anywidgets under the hint, the state among them
        # so that its front end runs, linked through the kernel where jslinks do not exist
        if self._kernel_links is None:
            self._kernel_links = marimo.link_in_kernel(self._linked)
        # a block of its own: marimo's stack is a flex column, which would put each of the
        # hint's bold parts on a line of its own
        hint = f'<div class="ppviz-compare-hint" style="font-size: {TEXT_SIZE}px">{self.hint.value}</div>'
        return marimo.stack([hint, *self.gantts, self.chart, self.state], "ppviz-compare")

    @traitlets.validate("selected_schedule")
    def _valid_schedule(self, proposal):
        name = proposal["value"]
        if name and name not in self.comparison.names:
            raise ConfigError("selected_schedule", name, f"give '' or one of: {', '.join(self.comparison.names)}")
        return name

    @traitlets.validate("selected_device")
    def _valid_device(self, proposal):
        d = proposal["value"]
        p = max(r.devices for r in self.comparison.results)
        if not -1 <= d < p:
            raise ConfigError("selected_device", d, f"give -1 (none) or a device 0..{p - 1}")
        return d

    @traitlets.validate("time_window")
    def _valid_window(self, proposal):
        return valid_window(proposal["value"])


__all__ = ["ComparisonView", "CompareState", "SHARED"]
