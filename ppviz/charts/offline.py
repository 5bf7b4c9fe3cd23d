"""Showing charts in a notebook with no internet: every chart ``ppviz.charts`` returns draws with
the vega, vega-lite and vega-embed that vl-convert bundles, never with Altair's CDN scripts.

Altair shows a chart through its active renderer; the default one writes HTML that loads vega
from a CDN, which fails offline ("Error loading script"). The charts ppviz returns are instances
of Altair's own classes, subclassed (:func:`offline`) only to be displayed through
:class:`OfflineChart`, a ``JupyterChart`` widget whose JavaScript comes from vl-convert. Their
specs, methods and compositions are Altair's. Nothing global changes: the user's own charts keep
the user's renderer, and a user who chose a renderer that works offline (``"png"``, ``"svg"``,
``"json"``, ``"mimetype"``, or ``"jupyter"`` after ``alt.JupyterChart.enable_offline()``) gets
it for ppviz's charts too. To show every Altair chart offline, opt in with Altair's own
``alt.renderers.enable("jupyter", offline=True)``.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import altair as alt

from ..core.errors import ConfigError, checked_arguments


class OfflineChart(alt.JupyterChart):
    """A JupyterChart whose vega / vega-lite / vega-embed come bundled from vl-convert.

    Altair's ``enable_offline`` is a classmethod that stores the bundle on the class it is
    called on; calling it on this subclass keeps ``alt.JupyterChart`` (and the user's other
    charts) exactly as they were. The class attribute below is this class's own, so its state
    never follows ``alt.JupyterChart.enable_offline(...)`` either.
    """

    _is_offline = False


#: Altair's chart classes (every subclass of its ``TopLevelMixin``)
_CHART_TYPES = (alt.Chart, alt.LayerChart, alt.HConcatChart, alt.VConcatChart, alt.ConcatChart, alt.FacetChart,
                alt.RepeatChart)


@checked_arguments
def widget(chart, **options) -> OfflineChart:
    """A JupyterChart widget of ``chart`` that renders with no internet (selections and params
    sync to Python as with ``alt.JupyterChart``). The JavaScript is bundled once per process."""
    if not isinstance(chart, _CHART_TYPES):
        raise ConfigError("chart", chart, "give an Altair chart, such as one that ppviz.charts draws")
    OfflineChart.enable_offline()
    return OfflineChart(chart, **options)


@checked_arguments
def display(chart, **options) -> None:
    """Show ``chart`` in the notebook offline (see :func:`widget`)."""
    from IPython.display import display as show

    show(widget(chart, **options))


# renderers that draw without a CDN: a user who chose one keeps it
_OFFLINE_RENDERERS = frozenset({"png", "svg", "json", "mimetype"})


def _user_renderer_is_offline() -> bool:
    active = alt.renderers.active
    return active in _OFFLINE_RENDERERS or (active == "jupyter" and alt.JupyterChart._is_offline)


if TYPE_CHECKING:
    # the checker sees what every offline class derives from besides this mixin (_offline_class)
    _Altair = alt.TopLevelMixin
else:
    _Altair = object


class _ShownOffline(_Altair):
    """Displayed through :class:`OfflineChart`; everything else is the Altair class it precedes.
    Altair's copies keep the class (``properties``, ``configure_*``, ``interactive``…), and the
    operators below keep it for charts composed from ppviz's."""

    def _repr_mimebundle_(self, *args, **kwargs):
        if _user_renderer_is_offline():
            return super()._repr_mimebundle_(*args, **kwargs)
        # SVG, as in ppviz.compare: crisp text, and every mark labelled for screen readers
        return widget(self, embed_options={"renderer": "svg"})._repr_mimebundle_(**kwargs)

    def _display_(self):
        # marimo's display protocol: the same widget (marimo draws anywidgets), or where the
        # user chose an offline renderer, the chart as Altair's own class, which marimo shows
        if _user_renderer_is_offline():
            return _as_altair(self)
        return widget(self, embed_options={"renderer": "svg"})

    def __add__(self, other):
        return offline(super().__add__(other))

    def __and__(self, other):
        return offline(super().__and__(other))

    def __or__(self, other):
        return offline(super().__or__(other))


def _offline_class(base: type) -> type:
    return type(base.__name__, (_ShownOffline, base), {
        "__module__": __name__, "__doc__": f"An ``alt.{base.__name__}`` shown offline in notebooks."})


_CLASSES = {base: _offline_class(base) for base in _CHART_TYPES}


def _as_altair(chart):
    """A copy of ``chart`` of the Altair class its offline class derives from."""
    copy = chart.copy(deep=False)
    object.__setattr__(copy, "__class__", next(base for base, cls in _CLASSES.items() if cls is type(chart)))
    return copy


def offline(chart):
    """``chart`` as the same object of its offline-displaying subclass (a chart class Altair
    adds later is returned as it is)."""
    cls = _CLASSES.get(type(chart))
    if cls is not None:
        object.__setattr__(chart, "__class__", cls)  # Altair's own __setattr__ would store it in the spec
    return chart


def shown_offline(chart_function):
    """Decorates a function that returns a chart: the chart comes back :func:`offline`."""
    @functools.wraps(chart_function)
    def chart(*args, **kwargs):
        return offline(chart_function(*args, **kwargs))
    return chart
