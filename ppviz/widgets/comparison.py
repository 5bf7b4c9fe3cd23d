"""``ppviz.compare``: several runs on one shared time axis above the Altair comparison charts,
linked so that a selection made in one view shows in all of them.

    ppviz.compare(ppviz.Config(devices=8, microbatches=32),
                  schedules=["1f1b", "interleaved-1f1b", "zb-h1", "zb-v", "dualpipe-v"])

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
:class:`Comparison`'s ``selected_*`` traits) and can make one (set them). marimo has no jslink:
there the same pairs are linked in the kernel when marimo displays the comparison
(``Comparison._display_``, ppviz/widgets/marimo.py), so a selection reaches the other views by
way of Python.
"""

from __future__ import annotations

import dataclasses
import itertools
from html import escape

import anywidget
import ipywidgets
import traitlets

from ..charts import BUBBLE_METRICS, comparison_charts, schedule_colors
from ..charts import widget as chart_widget
from ..charts.inputs import one_time_unit
from ..charts.style import CHART, FONT_FAMILY, TEXT_SIZE
from ..charts.style import THEMES as PALETTES
from ..core.config import Config, positive_int
from ..core.engine import simulate
from ..core.errors import ConfigError, ScheduleConstraintError, checked_arguments
from ..core.program import Program
from ..core.registry import lookup
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
_DARK_LITERALS = {CHART["text"]: "fg", CHART["closedForm"]: "fg", CHART["subtitle"]: "muted"}

_ACCEPTED = ("give a list of ppviz.Config, ppviz.Program or ppviz.Result (configs and programs are simulated), "
             "or one ppviz.Config with schedules=[names]")
#: a Program fixes these; options may change its costs and memory only
_PROGRAM_FIXED = ("devices", "microbatches", "stages_per_device", "microbatch_group_size")


@dataclasses.dataclass(frozen=True)
class _Run:
    name: str  # before names are made unique
    result: Result | None
    refusal: str = ""


# Items -----------------------------------------------------------------------------------------

def _checked_options(options: dict) -> dict:
    fields = sorted(f.name for f in dataclasses.fields(Config) if f.name not in ("schedule", "label"))
    for key, value in options.items():
        if key not in fields:
            hint = " (name schedules with schedules=[...])" if key == "schedule" else ""
            raise ConfigError(key, value, f"options are Config fields applied to every run{hint}: {', '.join(fields)}")
    return options


def _refusal(name: str, exc: ScheduleConstraintError) -> _Run:
    return _Run(name, None, str(exc))


def _from_schedules(base, schedules, options: dict) -> list[_Run]:
    if isinstance(base, (list, tuple)) and len(base) == 1:
        base = base[0]
    if not isinstance(base, Config):
        raise ConfigError("items", base, "with schedules=[names], give one ppviz.Config: its sizes and costs go "
                          "to every schedule", reason=f"a {type(base).__name__} is not one Config")
    if isinstance(schedules, str) or not isinstance(schedules, (list, tuple)) or not schedules:
        raise ConfigError("schedules", schedules, "give a non-empty list of schedule names, e.g. ['1f1b', 'zb-h1']")
    specs = []
    for i, name in enumerate(schedules):
        if not isinstance(name, str):
            raise ConfigError(f"schedules[{i}]", name, "give schedule names (strings); see ppviz.list_schedules()")
        specs.append(lookup(name))  # an unknown name is a mistake to report, not a refusal to show
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(Config)}
    fields.update(options, label=None)
    # the sizes pick each schedule's v and stage count before its Config checks them
    positive_int("devices", fields["devices"])
    positive_int("stages_per_device", fields["stages_per_device"], allow_none=True)
    runs = []
    for spec in specs:
        v = spec.v_or_default(fields["stages_per_device"])
        stages = spec.stage_count(fields["devices"], v)
        if fields["stage_costs"] and stages != base.stages:
            # per-stage costs (from_model's layers per stage) describe the base schedule's stages
            runs.append(_Run(spec.name, None, f"the config's stage_costs describe {base.stages} stages and "
                             f"{spec.name} has {stages}: build its config with Config.from_model(..., "
                             f"schedule={spec.name!r}) and compare the configs"))
            continue
        try:
            config = Config(**{**fields, "schedule": spec.name, "stages_per_device": v})
        except ScheduleConstraintError as exc:
            runs.append(_refusal(spec.name, exc))
            continue
        runs.append(_Run(config.display_name, simulate(config)))
    return runs


def _from_items(items, options: dict) -> list[_Run]:
    allowed = (Config, Program, Result)
    if isinstance(items, allowed):
        items = [items]
    if isinstance(items, (str, bytes, dict)) or not isinstance(items, (list, tuple)):
        hint = "; to compare schedules by name, give one Config and schedules=[names]" if isinstance(items, str) else ""
        raise ConfigError("items", items, _ACCEPTED + hint, reason=f"a {type(items).__name__} is not a list of runs")
    if not items:
        raise ConfigError("items", items, _ACCEPTED, reason="the list is empty")
    runs = []
    for i, x in enumerate(items):
        if not isinstance(x, allowed):
            hint = " (to compare schedules by name, give one Config and schedules=[names])" if isinstance(x, str) else ""
            raise ConfigError(f"items[{i}]", x, _ACCEPTED + hint,
                              reason=f"a {type(x).__name__} is not a Config, Program or Result")
        if isinstance(x, Result) and not options:
            runs.append(_Run(x.config.display_name, x))
            continue
        # a Result is run again from what made it, with the options
        program = x if isinstance(x, Program) else x.program if isinstance(x, Result) and x.config.schedule == "custom" \
            else None
        config = x.config if isinstance(x, Result) else x if isinstance(x, Config) else None
        fixed = [k for k in _PROGRAM_FIXED if k in options] if program is not None else []
        if fixed:
            raise ConfigError(fixed[0], options[fixed[0]], f"items[{i}] is a program, which fixes devices, "
                              "microbatches and stages; give it costs and memory options only")
        try:
            result = simulate(program, config, **options) if program is not None else simulate(config, **options)
        except ScheduleConstraintError as exc:
            runs.append(_refusal(config.display_name, exc))
            continue
        runs.append(_Run(result.config.display_name, result))
    return runs


def _unique(runs: list[_Run]) -> list[str]:
    """The display names of ppviz.charts for the runs that ran, and plain names for refusals."""
    ran = [r.result for r in runs if r.result is not None]
    names = iter(schedule_colors(ran)) if ran else iter(())
    return [next(names) if r.result is not None else r.name for r in runs]


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
    chart.config = {
        "font": FONT_FAMILY,
        "title": {"color": fg, "subtitleColor": muted},
        "axis": {"labelColor": muted, "titleColor": fg, "domainColor": _theme_expr("axis"),
                 "tickColor": _theme_expr("axis"), "gridColor": _theme_expr("grid")},
        "legend": {"labelColor": fg, "titleColor": fg},
        "view": {"stroke": _theme_expr("grid")},
    }
    return chart


def _chart(results: list[Result], metric: str, dark: bool):
    # SVG keeps the marks in the DOM (tests click them); no actions menu, whose editor link
    # would go online (ppviz.charts.to_svg / to_png export offline)
    chart = chart_widget(_link(comparison_charts(results, metric=metric), dark=dark),
                   embed_options={"renderer": "svg", "actions": False})
    chart.add_class("ppviz-compare-charts")
    return chart


# Widgets ---------------------------------------------------------------------------------------

#: the traits every Gantt chart of a comparison shares with its CompareState
SHARED = ("selected_schedule", "selected_device", "selected_microbatch", "time_window")


class CompareState(anywidget.AnyWidget):
    """The selection and view a comparison's widgets share, kept in the browser.

    Never displayed: its front end (``initialize`` in the widget bundle) links the Altair
    chart to the Gantt charts, as this module's docstring describes.
    ``chart_selections`` and ``chart_params`` mirror the chart's ``_vl_selections`` and
    ``_params``.
    """

    _esm = BUNDLE

    _ppviz_role = traitlets.Unicode("compare-state").tag(sync=True)
    selected_schedule = traitlets.Unicode("").tag(sync=True)
    selected_device = traitlets.Int(-1).tag(sync=True)
    selected_microbatch = traitlets.Int(-1).tag(sync=True)
    time_window = traitlets.List(traitlets.Float()).tag(sync=True)
    theme = traitlets.Enum(list(THEMES), default_value="auto").tag(sync=True)
    chart_selections = traitlets.Dict().tag(sync=True)
    chart_params = traitlets.Dict().tag(sync=True)

    @traitlets.validate("time_window")
    def _valid_window(self, proposal):
        return valid_window(proposal["value"])


@checked_arguments
class Comparison(ipywidgets.VBox):
    """What :func:`compare` returns: the Gantt charts above the Altair charts, linked.

    ``results`` and ``names`` are the runs that ran (names as in the charts' legend),
    ``refused`` maps each run a schedule refused to the reason, shown in its place;
    ``gantts`` holds one :class:`~ppviz.widgets.GanttWidget` per run, in order (refused runs
    included), ``chart`` the Altair JupyterChart, ``state`` the shared :class:`CompareState`
    and ``links`` the jslinks that tie them (kept here: ipywidgets closes a link Python no
    longer holds; in marimo the same pairs are linked in the kernel instead). ``time_extent``
    is the longest makespan: every Gantt chart's time axis
    spans [0, time_extent].

    ``ranking`` lists the runs that fit their device memory (``Config.memory_capacity``; every
    run without one), fastest first; ``out_of_memory`` maps each run that does not fit to its
    largest excess (bytes when its config gives ``activation_bytes``, else activation units).

    ``selected_schedule`` ("" for none), ``selected_device`` (−1), ``selected_microbatch``
    (−1) and ``time_window`` ([] for all of time) follow clicks, zoom and pan in any view;
    observe them, or set them to make the views follow.
    """

    selected_schedule = traitlets.Unicode("")
    selected_device = traitlets.Int(-1)
    selected_microbatch = traitlets.Int(-1)
    time_window = traitlets.List(traitlets.Float())

    def __init__(self, runs: list[_Run], *, theme: str = "auto", metric: str = "fraction"):
        names = _unique(runs)
        ran = [(name, r.result) for name, r in zip(names, runs) if r.result is not None]
        if not ran:
            raise ScheduleConstraintError("schedules", [r.name for r in runs], "try other sizes or schedules",
                                          reason="none of them runs: " + "; ".join(f"{r.name}: {r.refusal}" for r in runs))
        self.results = list(one_time_unit([result for _, result in ran], [name for name, _ in ran]))
        self.names = [name for name, _ in ran]
        self.refused = {name: r.refusal for name, r in zip(names, runs) if r.result is None}
        self.time_extent = max(result.makespan for result in self.results)
        self.ranking, self.out_of_memory = _rank(self.names, self.results)
        colors = schedule_colors(self.results)
        self.state = CompareState(theme=theme)
        self.chart = _chart(self.results, metric, dark=theme == "dark")
        self.gantts = []
        for name, r in zip(names, runs):
            options = dict(compact=True, theme=theme, time_extent=self.time_extent, run_name=name)
            if r.result is None:
                gantt = GanttWidget(None, meta={"title": name}, error=r.refusal, **options)
            else:
                gantt = GanttWidget(r.result, color=colors[name], **options)
            self.gantts.append(gantt)
        self._linked = [((self.state, trait), (gantt, trait)) for gantt in self.gantts for trait in SHARED]
        self._linked += [((self.chart, "_vl_selections"), (self.state, "chart_selections")),
                         ((self.chart, "_params"), (self.state, "chart_params"))]
        self.links = [ipywidgets.jslink(source, target) for source, target in self._linked]
        self._kernel_links = None
        fit = ""
        if any(r.fits is not None for r in self.results):
            fastest = f"; fastest that fits: <b>{escape(self.ranking[0])}</b>" if self.ranking else ""
            fit = f"<b>{len(self.ranking)} of {len(self.results)} fit</b> in device memory{fastest} · "
        self.hint = hint = ipywidgets.HTML(
            f"{fit}<b>One time axis</b>, 0 to {self.time_extent:g} (the longest makespan) · click a run's name, bar or "
            "point to emphasise it · a device's label or an op to highlight that device everywhere · Ctrl + scroll "
            "(or + / −) to zoom and drag to pan all the timelines · Esc clears")
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
        if name and name not in self.names:
            raise ConfigError("selected_schedule", name, f"give '' or one of: {', '.join(self.names)}")
        return name

    @traitlets.validate("selected_device")
    def _valid_device(self, proposal):
        d = proposal["value"]
        p = max(r.devices for r in self.results)
        if not -1 <= d < p:
            raise ConfigError("selected_device", d, f"give -1 (none) or a device 0..{p - 1}")
        return d

    @traitlets.validate("time_window")
    def _valid_window(self, proposal):
        return valid_window(proposal["value"])


def _rank(names: list[str], results: list[Result]) -> tuple[list[str], dict[str, float]]:
    """The names of the runs that fit, fastest first, and each other run's largest excess."""
    order = sorted(range(len(results)), key=lambda k: results[k].makespan)
    ranking = [names[k] for k in order if not results[k].out_of_memory]
    over = {}
    for name, r in zip(names, results):
        if r.out_of_memory:
            excess = r.excess_bytes if r.excess_bytes is not None else r.excess
            over[name] = float(excess.max())
    return ranking, over


@checked_arguments
def compare(items, *, schedules=None, theme: str = "auto", metric: str = "fraction", **config_options) -> Comparison:
    """Several runs side by side: Gantt charts on one time axis above the bubble, Pareto and
    peak-memory charts, linked (see the module docstring for what a click does).

    ``items`` is a list of Configs, Programs and Results (configs and programs are simulated),
    or one Config with ``schedules=[names]``: each schedule then runs with that config's sizes
    and costs, and with its own default v where the config's v breaks its rule. A schedule
    that refuses the sizes is shown as a notice in its place rather than raising. With a
    device memory (``Config.memory_capacity``, set by ``Config.from_model``) the comparison's
    ``ranking`` lists the runs that fit, fastest first, and ``out_of_memory`` the others.
    ``config_options`` (any Config field but ``schedule`` and ``label``) replace those fields
    in every run, e.g. ``compare(configs, microbatches=32)``. ``theme`` is ``"auto"`` (follow
    the host), ``"light"`` or ``"dark"``; ``metric`` is the bubble metric of the charts,
    ``"fraction"`` or ``"rate"``.
    """
    if not isinstance(theme, str) or theme not in THEMES:
        raise ConfigError("theme", theme, "give 'auto', 'light' or 'dark'")
    if not isinstance(metric, str) or metric not in BUBBLE_METRICS:
        raise ConfigError("metric", metric, "give " + " or ".join(repr(k) for k in BUBBLE_METRICS))
    options = _checked_options(config_options)
    runs = _from_items(items, options) if schedules is None else _from_schedules(items, schedules, options)
    return Comparison(runs, theme=theme, metric=metric)


__all__ = ["Comparison", "CompareState", "compare", "SHARED"]
