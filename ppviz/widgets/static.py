"""Static pictures of ppviz's widgets and charts, stored beside them in a notebook so that it
reads well where no kernel runs (GitHub, nbviewer, ``jupyter nbconvert``).

A widget's output in a saved notebook is a reference to a model that lives in a kernel; without
one there is nothing to draw. With :func:`enable`, every widget a notebook displays also carries
a PNG of what it shows (the static Gantt chart of :func:`ppviz.charts.gantt_chart`, or the
chart itself for an Altair widget), in the same output. Jupyter draws the live widget; a
renderer without a kernel skips the widget view for the next format it can show, the picture
(nbconvert and nbviewer do so whenever the notebook stores no widget state, which is how
``scripts/store-notebooks`` stores ppviz's notebooks).

Rendering takes a few tenths of a second a chart (vl-convert, offline), so it happens only
where :func:`enable` was called: ``scripts/store-notebooks`` calls it in the kernel that
executes the notebooks it stores, and a live ``ppviz.show(...)`` stays as fast as without it.
"""

from __future__ import annotations

import base64
import hashlib
import json

import altair as alt
import ipywidgets
import vl_convert

from ..charts import comparison_charts, gantt_chart, overlay_chart, to_png
from ..charts.gantt import readable_span
from ..charts.render import compact_png
from ..core.errors import ConfigError
from ..analysis.comparison import Comparison
from .comparison import ComparisonView
from .frontier import FrontierView
from .gantt import GanttWidget
from .viewer import Viewer

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
PNG = "image/png"
#: where a stored picture says what it was rendered from: the Vega-Lite spec's digest and the
#: renderer's version (``tests/test_notebooks.py`` compares both when it checks for staleness)
METADATA_KEY = "ppviz"
RENDERER = f"vl-convert {vl_convert.__version__}"  # type: ignore[attr-defined]  # its stub omits the module's __version__
_WIDTH = 900  # the plot's width in pixels, as the widget's on a laptop screen

_original_format = None


def static_chart(obj) -> alt.TopLevelMixin | None:
    """The Altair chart that shows what ``obj`` shows, or None for anything ppviz cannot draw
    statically (another library's widget, a chart that shows only a refusal). A box of widgets
    is pictured by the first chart inside it; a frontier by its chart."""
    if isinstance(obj, Viewer):
        obj = obj.gantt
    if isinstance(obj, GanttWidget) and obj.residuals is not None:
        return overlay_chart(obj.residuals, width=_WIDTH)
    if isinstance(obj, GanttWidget):
        return None if obj.result is None else gantt_chart(obj.result, width=_WIDTH)
    if isinstance(obj, ComparisonView):
        obj = obj.comparison
    if isinstance(obj, Comparison):
        return _comparison_chart(obj)
    if isinstance(obj, alt.JupyterChart):
        # an Altair chart, though the trait is typed as any Vega-Lite spec
        return obj.chart if isinstance(obj.chart, alt.TopLevelMixin) else None
    if isinstance(obj, alt.TopLevelMixin):
        return obj
    if isinstance(obj, FrontierView):
        return obj.front.chart()
    if isinstance(obj, ipywidgets.Box):
        # a layout of widgets (controls beside a chart): the first of its charts stands for it
        return next((chart for chart in map(static_chart, obj.children) if chart is not None), None)
    return None


def _comparison_chart(comparison: Comparison) -> alt.VConcatChart:
    """The runs' Gantt charts on one time scale (each plot as wide as its makespan is long
    against the longest, or, where the densest run is not readable whole, each the window from
    the start in which it is, under its overview strip, as the view opens), above the bubble,
    Pareto and memory charts."""
    span = min(comparison.time_extent, *(readable_span(r, _WIDTH) for r in comparison.results))
    gantts = []
    for r in comparison.results:
        end = min(span, r.step_end)
        window = "all" if end == r.step_end and span >= comparison.time_extent else (0.0, end)
        gantt = gantt_chart(r, memory=False, width=max(200, round(_WIDTH * end / span)), window=window)
        background = gantt.background
        gantt.padding = gantt.background = alt.Undefined  # top-level properties: the stack's own
        gantts.append(gantt)
    # each Gantt chart keeps its legend of the kinds it draws
    stack = alt.vconcat(*gantts, comparison_charts(comparison.results), spacing=28).resolve_scale(color="independent")
    stack = stack.properties(background=background, padding=16)
    if comparison.refused:
        refused = [f"{name}: {reason}" for name, reason in comparison.refused.items()]
        stack = stack.properties(title=alt.TitleParams("Not run", subtitle=refused, anchor="start"))
    return stack


def fallback(obj, scale: float = 1.0) -> tuple[dict, dict] | None:
    """``({"image/png": base64 text}, {"image/png": metadata})`` picturing ``obj`` at ``scale``
    × its size, or None when :func:`static_chart` has nothing for it. The metadata names the
    spec the picture was rendered from (its SHA-256) and the renderer."""
    chart = static_chart(obj)
    if chart is None:
        return None
    spec = chart.to_dict()
    png = compact_png(to_png(spec, scale=scale))
    metadata = {METADATA_KEY: {"spec_sha256": spec_digest(spec), "renderer": RENDERER}}
    return {PNG: base64.b64encode(png).decode("ascii")}, {PNG: metadata}


def spec_digest(spec: dict) -> str:
    """The SHA-256 of a Vega-Lite spec, written canonically."""
    return hashlib.sha256(json.dumps(spec, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def enable(scale: float = 1.0) -> None:
    """From now on in this IPython kernel, every widget's output and every Altair chart's
    carries a PNG of itself (see the module's docstring). An Altair chart shown by a renderer
    that draws it with scripts from the internet (Altair's default) is stored as its picture
    alone: a notebook read without a kernel cannot count on either. Calling it again changes
    only the scale."""
    global _original_format
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not 0.01 <= scale <= 4:
        raise ConfigError("scale", scale, "give a number from 0.01 to 4")
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        raise ConfigError("shell", None, "call enable() in IPython: a notebook's kernel",
                          reason="no IPython shell is running")
    formatter = shell.display_formatter
    if _original_format is None:
        _original_format = formatter.format

    def format_with_fallback(obj, include=None, exclude=None):
        data, metadata = _original_format(obj, include=include, exclude=exclude)
        is_widget = WIDGET_VIEW in data and isinstance(obj, ipywidgets.Widget)
        if not (is_widget or isinstance(obj, alt.TopLevelMixin)):
            return data, metadata
        picture = fallback(obj, scale)
        if picture is None:
            return data, metadata
        image, image_metadata = picture
        if not is_widget:  # the chart's scripts would load from a CDN: keep the picture and its text
            data = {key: value for key, value in data.items() if key == "text/plain"}
        return {**data, **image}, {**metadata, **image_metadata}

    formatter.format = format_with_fallback


def disable() -> None:
    """Undo :func:`enable` in this kernel."""
    global _original_format
    from IPython import get_ipython

    shell = get_ipython()
    if shell is not None and _original_format is not None:
        shell.display_formatter.format = _original_format
    _original_format = None


__all__ = ["METADATA_KEY", "RENDERER", "WIDGET_VIEW", "disable", "enable", "fallback", "spec_digest",
           "static_chart"]
