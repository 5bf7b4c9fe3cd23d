"""The Gantt chart widget (an anywidget): one simulated result, drawn by the front end in
``js/`` (bundled into ``ppviz/static/widget.js``), which reports selections and zoom back
through synced traits."""

from __future__ import annotations

import pathlib

import anywidget
import numpy as np
import traitlets

from ..core.errors import ConfigError
from ..core.result import Result
from ..analysis.residuals import Residuals
from .overlay import against_label, describe_overlay, encode_overlay, overlay_of
from .wire import describe, encode_memory, encode_timeline

#: the front end's bundle, built from js/ by esbuild (the wheel carries it; no Node at install)
BUNDLE = pathlib.Path(__file__).resolve().parent.parent / "static" / "widget.js"


class GanttWidget(anywidget.AnyWidget):
    """The canvas Gantt chart of one simulated result.

    Public traits are what a user observes and sets:

    - ``selected_microbatch`` (−1 for none) and ``selected_op`` (an index into ``result.ops``,
      −1 for none) follow clicks in the chart; ``selected_device`` (−1 for none) follows clicks
      on a device's row label or an op. Set them from Python to make the chart follow.
    - ``time_window`` is the span of time in the detail view, ``[t0, t1]``, or ``[]`` for all of
      it; it follows zoom, pan and the overview, and can be set from Python. A run too dense to
      read whole opens on a readable window (ops wide enough for their labels) from its start,
      which the chart writes here. The time axis spans ``[0, max(makespan, time_extent)]``, so
      charts given the same ``time_extent`` share one scale.
    - ``theme`` is ``"auto"`` (follow the host), ``"light"`` or ``"dark"``.
    - ``error`` is "" or a message the chart shows in a banner (``GanttWidget(None,
      error=...)`` is a chart with nothing to draw that shows why; with no error and no
      ``_meta["title"]`` either it draws nothing at all: ``set_result(None)`` empties a chart);
      ``busy`` is "" or what the kernel is doing for it (e.g. "simulating 1,000,000 ops…"): the
      chart dims and says so until the next result arrives.
    - ``selected_schedule`` is the run emphasised in a comparison (:func:`ppviz.compare`).

    The rest is the chart's wire and is private: ``_timeline``, ``_memory`` and ``_overlay``
    (binary, ARCHITECTURE.md's "Wire format"), ``_meta`` (labels and metrics), and what a
    comparison sets up (``_compact``: a one-line header and no memory lanes or replay bar;
    ``_run_name`` and ``_color``: clicking the title selects the run, and while another run is
    selected the chart is dimmed; ``_opening_span``: the span the front end chose to open on,
    which a comparison's charts share so that they open on one window). ``_overlay`` is empty,
    or a measured run's simulation and residuals per op (``set_result(measured, against=...)``);
    its summary is ``_meta["overlay"]``. ``self.result`` is the Result on display.
    """

    _esm = BUNDLE

    error = traitlets.Unicode("").tag(sync=True)
    busy = traitlets.Unicode("").tag(sync=True)
    selected_microbatch = traitlets.Int(-1).tag(sync=True)
    selected_op = traitlets.Int(-1).tag(sync=True)
    selected_device = traitlets.Int(-1).tag(sync=True)
    selected_schedule = traitlets.Unicode("").tag(sync=True)
    theme = traitlets.Enum(["auto", "light", "dark"], default_value="auto").tag(sync=True)
    time_extent = traitlets.Float(0.0, min=0.0).tag(sync=True)
    time_window = traitlets.List(traitlets.Float()).tag(sync=True)
    _timeline = traitlets.Bytes(b"").tag(sync=True)
    _memory = traitlets.Bytes(b"").tag(sync=True)
    _overlay = traitlets.Bytes(b"").tag(sync=True)
    _meta = traitlets.Dict().tag(sync=True)
    _compact = traitlets.Bool(False).tag(sync=True)
    _run_name = traitlets.Unicode("").tag(sync=True)
    _color = traitlets.Unicode("").tag(sync=True)
    _opening_span = traitlets.Float(0.0, min=0.0).tag(sync=True)

    def __init__(self, result: Result | None, *, against=None, **kwargs):
        super().__init__(**kwargs)
        self.result: Result | None = None
        self.residuals: Residuals | None = None
        if result is not None:
            self.set_result(result, against=against)

    @traitlets.validate("time_window")
    def _valid_window(self, proposal):
        return valid_window(proposal["value"])

    def set_result(self, result: Result | None, *, against=None) -> None:
        """Show another result; the front end redraws once with all of it. With ``against``
        (a measured result only), the simulation of its program is drawn over it and
        ``self.residuals`` holds :func:`ppviz.residuals`' answer. ``None`` empties the chart."""
        if result is None:
            self.result = self.residuals = None
            with self.hold_sync():
                self._timeline = self._memory = self._overlay = b""
                self._meta, self.error, self.busy = {}, "", ""
                self.selected_microbatch = self.selected_op = self.selected_device = -1
                self.time_window = []
            return
        residuals = overlay_of(result, against) if against is not None else None
        self.result = result
        self.residuals = residuals
        with self.hold_sync():
            self._timeline = encode_timeline(result)
            self._memory = encode_memory(result)
            meta = describe(result)
            if residuals is not None:
                meta["overlay"] = describe_overlay(residuals, against_label(against))
            self._overlay = encode_overlay(residuals) if residuals is not None else b""
            self._meta = meta
            self.error = ""
            self.busy = ""
            if self.selected_microbatch >= result.program.microbatches:
                self.selected_microbatch = -1
            if self.selected_device >= result.devices:
                self.selected_device = -1
            # op indices of a new timeline name other ops
            self.selected_op = -1
            # a new run opens on its own readable window
            self.time_window = []
            self._opening_span = 0.0


def valid_window(window) -> list[float]:
    """A time window as the ``time_window`` trait holds it: [t0, t1] with 0 <= t0 < t1, or []."""
    window = list(window)
    if window and not (len(window) == 2 and 0 <= window[0] < window[1] and all(np.isfinite(window))):
        raise ConfigError("time_window", window, "give [t0, t1] with 0 <= t0 < t1, or [] for the whole time axis")
    return window

