"""``ppviz.show``: the Gantt chart under live controls that re-simulate on every change.

The viewer keeps one config it has simulated (``viewer.result.config``); the controls always
show it. A change is applied in this order: the new config is checked (a refusal, e.g. beyond
the size budget of ``ppviz.set_budget``, comes before any work), a change expected to keep the
kernel busy for a while first puts the chart in its busy state, then the run is simulated and
sent. A refused change leaves the chart, the result and the controls as they were, and shows
why in the chart.
"""

from __future__ import annotations

import time

import ipywidgets
import traitlets

from ..core.budget import estimate_ops
from ..core.config import Config
from ..core.engine import as_run, simulate
from ..core.errors import ConfigError, PpvizError, checked_arguments
from ..core.numbers import number
from ..core.registry import all_specs, lookup
from ..core.result import Result
from .gantt import GanttWidget

#: A change whose simulation and encoding are expected to take longer than this shows the
#: chart's busy state first (the message reaches the browser while the kernel works; with the
#: browser's share the user waits about 1.5 times this before the new chart shows).
BUSY_AFTER_S = 0.1
#: The kernel's seconds per op before the viewer has measured its own (a laptop's figure), and
#: the size from which a run measures it (below, fixed costs dominate and overstate it).
FIRST_SECONDS_PER_OP = 1.5e-6
RATE_FROM_OPS = 20_000
#: The controls' fields, in order: Config field, label, integer or not.
FIELDS = (("devices", "p", True), ("microbatches", "m", True), ("stages_per_device", "v", True),
          ("f", "f", False), ("b", "b", False), ("w", "w", False), ("comm", "comm", False))
#: What the widget draws at most (rows and chunks); the size budget bounds the rest.
MAX_DEVICES, MAX_V = 1024, 64
#: The controls' widths: all of them on one line in a notebook cell of a 1,400 px window
#: (JupyterLab with its side bar open leaves about 1,000 px)
_WIDTHS = {"schedule": "205px", "whole": "82px", "cost": "104px", "comm": "116px"}
#: What the comm control says with a topology, where transfers over its links take comm's place
_TOPOLOGY = "topology"
_TOPOLOGY_WHY = ("with a topology, each transfer costs its link's latency + comm_bytes / bandwidth; the bare comm "
                 "latency does not apply (Config.comm stays 0)")


@checked_arguments
class Viewer(ipywidgets.VBox):
    """What :func:`show` returns: the chart, optionally under live controls.

    ``viewer.gantt`` is the chart widget, ``viewer.result`` the result on display, and
    ``viewer.selected_microbatch`` / ``selected_op`` / ``selected_device`` mirror the chart's
    selection (observe them with ``viewer.observe(callback, "selected_microbatch")``).
    ``viewer.update(m=..)`` re-simulates from Python; the controls follow. In marimo, which
    draws no ipywidgets, the viewer shows as its chart alone (``_display_``).
    """

    selected_microbatch = traitlets.Int(-1)
    selected_op = traitlets.Int(-1)
    selected_device = traitlets.Int(-1)

    def __init__(self, run, *, controls: bool = True, theme: str = "auto", against=None):
        if not isinstance(theme, str) or theme not in ("auto", "light", "dark"):
            raise ConfigError("theme", theme, "give 'auto', 'light' or 'dark'")
        result = as_run(run)
        self.gantt = GanttWidget(result, theme=theme, against=against)
        # an overlay compares this measured run with its simulation: the controls, which
        # would replace the run by a simulation, are left out
        controls = controls and against is None
        self._program = result.program if result.config.schedule == "custom" else None
        self._seconds_per_op = FIRST_SECONDS_PER_OP
        self.controls = _Controls(self, result.config) if controls else None
        children = [self.controls.box, self.gantt] if self.controls else [self.gantt]
        super().__init__(children=children)
        traitlets.link((self.gantt, "selected_microbatch"), (self, "selected_microbatch"))
        traitlets.link((self.gantt, "selected_op"), (self, "selected_op"))
        traitlets.link((self.gantt, "selected_device"), (self, "selected_device"))

    def _display_(self):
        # marimo draws the chart, not the ipywidgets controls (ppviz/widgets/marimo.py): there a
        # config is changed with marimo's own UI elements, which re-run the cell
        return self.gantt

    @property
    def result(self) -> Result:
        assert self.gantt.result is not None  # a viewer's chart always holds a run
        return self.gantt.result

    @property
    def config(self) -> Config:
        """The config of the run on display (the last change that was accepted)."""
        return self.result.config

    def update(self, **changes) -> "Viewer":
        """Re-simulate with some config fields changed (as ``Config.replace``), redraw, and
        set the controls to the new config; returns the viewer.

        A change ppviz refuses (an invalid combination, a size over the budget) raises its
        :class:`ppviz.PpvizError` after showing the message in the chart; the chart, the
        result and the controls keep the last accepted config.
        """
        refusal = self._apply(changes)
        if refusal is not None:
            raise refusal
        return self

    def _apply(self, changes: dict) -> PpvizError | None:
        """Apply a change; returns the refusal (shown in the chart) or None."""
        try:
            config = self.config.replace(**changes)
            ops = self._ops(config)
            expected = ops * self._seconds_per_op
            if expected > BUSY_AFTER_S:
                self.gantt.busy = f"simulating {ops:,} ops…"
            started = time.perf_counter()
            if self._program is not None:
                result = simulate(self._program, config)
            else:
                result = simulate(config)
            self.gantt.set_result(result)
            if len(result.ops) >= RATE_FROM_OPS:
                self._seconds_per_op = (time.perf_counter() - started) / len(result.ops)
        except PpvizError as exc:
            return self._refuse(exc)
        except MemoryError:
            return self._refuse(ConfigError(
                "size", _sizes(changes, self.config), "use fewer devices, stages or microbatches",
                reason="the kernel ran out of memory simulating it"))
        if self.controls is not None:
            self.controls.show(config)
        return None

    def _ops(self, config: Config) -> int:
        if self._program is not None:
            return len(self._program)
        for name, top in (("devices", MAX_DEVICES), ("stages_per_device", MAX_V)):
            if getattr(config, name) > top:
                raise ConfigError(name, getattr(config, name), f"the widget draws at most {top}; "
                                  "use ppviz.simulate for larger runs")
        assert config.stages_per_device is not None  # Config sets the schedule's default
        return estimate_ops(config.spec, config.devices, config.stages_per_device,
                            config.microbatches * config.segments, transfers=config.transfers)

    def _refuse(self, exc: PpvizError) -> PpvizError:
        self.gantt.busy = ""
        self.gantt.error = str(exc)
        if self.controls is not None:
            self.controls.show(self.config)
        return exc


def _sizes(changes: dict, config: Config) -> str:
    merged = {name: changes.get(name, getattr(config, name)) for name in ("devices", "stages_per_device",
                                                                           "microbatches")}
    return "p={devices}, v={stages_per_device}, m={microbatches}".format(**merged)


class _CostField:
    """A cost's control (f, b, w, comm): the shared formatter's text of the config's value with its
    unit ("41.5 ms" for 41.522575225, which stays the value run), in a box that holds it. Typing
    another number runs it; the text of the value on display runs nothing. ``value`` is the number,
    as on ipywidgets' number boxes: setting it from Python runs it as typing would."""

    def __init__(self, name: str, label: str, value: float, unit: str | None, on_change, width: str):
        self.name = name
        self.unit = unit
        self._value = float(value)
        self._on_change = on_change
        self._showing = False
        # the label beside the box rather than the box's description: ipywidgets puts a Text's
        # tooltip (why comm is off) on its input only when it has no description
        self.box = ipywidgets.Text(self._text(self._value), continuous_update=False,
                                   layout=ipywidgets.Layout(width="auto", flex="1 1 auto"))
        name_label = ipywidgets.Label(label, layout=ipywidgets.Layout(width="auto", flex="0 0 auto", margin="0 4px 0 2px"))
        self.widget = ipywidgets.HBox([name_label, self.box],
                                      layout=ipywidgets.Layout(width=width, align_items="center"))
        self.widget.add_class(f"ppviz-control-{name}")
        self.box.observe(self._typed, names="value")

    def _text(self, value: float) -> str:
        return number(value, self.unit or None)

    @property
    def value(self) -> float:
        return self._value

    @value.setter
    def value(self, value) -> None:
        changed = float(value) != self._value
        self._value = float(value)
        self._show(self._text(self._value))
        if changed:
            self._on_change(self._value)

    @property
    def disabled(self) -> bool:
        return self.box.disabled

    def _show(self, text: str) -> None:
        self._showing = True
        try:
            self.box.value = text
        finally:
            self._showing = False

    def show(self, value: float, *, why_not: str = "") -> None:
        """Show ``value`` without running it; with ``why_not`` the control is off and says so."""
        self._value = float(value)
        self.box.disabled = bool(why_not)
        self.box.tooltip = why_not or f"{self.name} = {self._value!r}{' ' + self.unit if self.unit else ''}"
        self._show(_TOPOLOGY if why_not else self._text(self._value))

    def _typed(self, change) -> None:
        if self._showing or self.box.disabled:
            return
        text = change["new"].strip()
        if text == self._text(self._value):
            return  # the value on display, as the formatter writes it: nothing to run
        try:
            typed = float(text.removesuffix(self.unit).strip().replace(",", "")) if text else float("nan")
        except ValueError:
            typed = float("nan")
        if not typed == typed:  # NaN: not a number
            self._show(self._text(self._value))
            self._on_change(text, refused=True)
            return
        self.value = typed


class _Controls:
    """ipywidgets for schedule, p, m, v, f/b/w and comm; each change re-simulates, and a
    refused one puts every control back to the config on display. Whole numbers are number boxes;
    the costs are :class:`_CostField`, which show the shared formatter's text."""

    def __init__(self, viewer: Viewer, config: Config):
        self.viewer = viewer
        custom = viewer._program is not None
        style = {"description_width": "initial"}
        names = [s.name for s in all_specs() if s.builder is not None]
        self.schedule = ipywidgets.Dropdown(options=names if not custom else ["custom"],
                                            value=config.schedule if not custom else "custom",
                                            description="schedule", style=style,
                                            layout=ipywidgets.Layout(width=_WIDTHS["schedule"]), disabled=custom)
        self.schedule.add_class("ppviz-control-schedule")
        tops = {"devices": MAX_DEVICES, "stages_per_device": MAX_V, "microbatches": 10**9}
        self.fields = {}
        for name, label, whole in FIELDS:
            if whole:
                field = ipywidgets.BoundedIntText(getattr(config, name), min=1, max=tops[name], description=label,
                                                  style=style, layout=ipywidgets.Layout(width=_WIDTHS["whole"]),
                                                  disabled=custom)
                field.add_class(f"ppviz-control-{name}")
            else:
                field = _CostField(name, label, getattr(config, name), config.time_unit, self._cost(name),
                                   _WIDTHS["comm" if name == "comm" else "cost"])
            self.fields[name] = field
        self._quiet = False
        self.schedule.observe(self._on_schedule, names="value")
        for name, field in self.fields.items():
            if not isinstance(field, _CostField):
                field.observe(lambda change, name=name: self._on_field(name, change["new"]), names="value")
        self.box = ipywidgets.HBox([self.schedule, *(getattr(f, "widget", f) for f in self.fields.values())],
                                   layout=ipywidgets.Layout(flex_flow="row wrap", align_items="center"))
        self.box.add_class("ppviz-controls")
        self.show(config)

    def _cost(self, name: str):
        def changed(value, refused: bool = False) -> None:
            if refused:
                unit = self.viewer.config.time_unit or None
                self.viewer._refuse(ConfigError(name, value, f"give a number, e.g. {number(1.5, unit)}"))
            else:
                self._on_field(name, value)
        return changed

    def show(self, config: Config) -> None:
        """Set every control to ``config`` without re-simulating."""
        self._quiet = True
        try:
            if self.viewer._program is None:
                self.schedule.value = config.schedule
            for name, field in self.fields.items():
                if isinstance(field, _CostField):
                    # with a topology, comm does not apply: the control says so rather than 0
                    field.show(getattr(config, name), why_not=_TOPOLOGY_WHY if name == "comm" and config.transfers else "")
                else:
                    field.value = getattr(config, name)
        finally:
            self._quiet = False
        self._sync_v_rule(config)

    def _sync_v_rule(self, config: Config) -> None:
        if self.viewer._program is not None:
            return
        spec = config.spec
        self.fields["stages_per_device"].disabled = spec.v_min == spec.v_max

    def _on_schedule(self, change) -> None:
        if not self._quiet:
            spec = lookup(change["new"])
            v = spec.v_or_default(self.fields["stages_per_device"].value)
            self._change({"schedule": spec.name, "stages_per_device": v})

    def _on_field(self, name: str, value) -> None:
        if not self._quiet:
            self._change({name: value})

    def _change(self, changes: dict) -> None:
        # an observer's exception would only reach the kernel's log and leave the controls
        # showing a config that is not on display: every failure ends in the chart instead
        try:
            self.viewer._apply(changes)
        except Exception as exc:  # a bug in ppviz (refusals are handled in _apply): said where the user looks
            self.viewer._refuse(ConfigError("change", changes, "please report this as a bug in ppviz",
                                            reason=f"it failed with {type(exc).__name__}: {exc}"))


@checked_arguments
def show(run, controls: bool = True, *, theme: str = "auto", against=None) -> Viewer:
    """The interactive Gantt chart of one run: a Config, Program, Result or schedule name.

    With ``controls`` the chart sits under widgets for schedule, p, m, v, f, b, w and comm
    that re-simulate and redraw; a change that would take a while dims the chart with
    "simulating…" first, and a refused one (an invalid combination, a size over the budget)
    shows why in the chart while the controls go back to the config on display.

    ``against`` (a measured run only: what :func:`ppviz.load_trace` returns) draws the
    simulation of the measured program in the same chart: each op's simulated span on its row,
    the residuals (measured − simulated) in its tooltip, and above the chart the step time and
    bubble, measured and simulated, and where the difference comes from
    (:func:`ppviz.residuals`). Give a :class:`ppviz.Calibration`, a :class:`ppviz.Config` (its
    costs run the measured program) or a simulated Result of the measured program; anything
    else of another size or program is refused, naming what differs. The chart then has no
    controls.
    """
    return Viewer(run, controls=controls, theme=theme, against=against)
