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
from ..core.config import MAX_COST, Config
from ..core.engine import simulate
from ..core.errors import ConfigError, PpvizError, checked_arguments
from ..core.registry import all_specs, lookup
from ..core.result import Result
from .gantt import GanttWidget, as_result

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

    def __init__(self, x, *, controls: bool = True, theme: str = "auto", against=None):
        if not isinstance(theme, str) or theme not in ("auto", "light", "dark"):
            raise ConfigError("theme", theme, "give 'auto', 'light' or 'dark'")
        result = as_result(x)
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
        return self.gantt.result

    @property
    def config(self) -> Config:
        """The config of the run on display (the last change that was accepted)."""
        return self.gantt.result.config

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


class _Controls:
    """ipywidgets for schedule, p, m, v, f/b/w and comm; each change re-simulates, and a
    refused one puts every control back to the config on display."""

    def __init__(self, viewer: Viewer, config: Config):
        self.viewer = viewer
        custom = viewer._program is not None
        style = {"description_width": "initial"}
        narrow = ipywidgets.Layout(width="120px")
        names = [s.name for s in all_specs() if s.builder is not None]
        self.schedule = ipywidgets.Dropdown(options=names if not custom else ["custom"],
                                            value=config.schedule if not custom else "custom",
                                            description="schedule", style=style,
                                            layout=ipywidgets.Layout(width="230px"), disabled=custom)
        self.schedule.add_class("ppviz-control-schedule")
        tops = {"devices": MAX_DEVICES, "stages_per_device": MAX_V, "microbatches": 10**9}
        self.fields = {}
        for name, label, whole in FIELDS:
            if whole:
                field = ipywidgets.BoundedIntText(getattr(config, name), min=1, max=tops[name], description=label,
                                                  style=style, layout=narrow, disabled=custom)
            else:
                # as high as Config accepts: a bound below it would show another value than the one run
                field = ipywidgets.BoundedFloatText(getattr(config, name), min=0, max=MAX_COST, step=0.1,
                                                    description=label, style=style, layout=narrow)
            field.add_class(f"ppviz-control-{name}")
            self.fields[name] = field
        self._quiet = False
        self.schedule.observe(self._on_schedule, names="value")
        for name, field in self.fields.items():
            field.observe(lambda change, name=name: self._on_field(name, change["new"]), names="value")
        self.box = ipywidgets.HBox([self.schedule, *self.fields.values()],
                                   layout=ipywidgets.Layout(flex_flow="row wrap", align_items="center"))
        self.box.add_class("ppviz-controls")
        self._sync_v_rule(config)

    def show(self, config: Config) -> None:
        """Set every control to ``config`` without re-simulating."""
        self._quiet = True
        try:
            if self.viewer._program is None:
                self.schedule.value = config.schedule
            for name, field in self.fields.items():
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
def show(x, controls: bool = True, *, theme: str = "auto", against=None):
    """The interactive Gantt chart of a schedule name, Config, Program or Result.

    With ``controls`` the chart sits under widgets for schedule, p, m, v, f, b, w and comm
    that re-simulate and redraw; a change that would take a while dims the chart with
    "simulating…" first, and a refused one (an invalid combination, a size over the budget)
    shows why in the chart while the controls go back to the config on display.
    A list or tuple of them goes to :func:`ppviz.compare` (``controls`` does not apply there).

    ``against`` (a measured run only: what :func:`ppviz.load_trace` returns) draws the
    simulation of the measured program in the same chart: each op's simulated span on its row,
    the residuals (measured − simulated) in its tooltip, and above the chart the step time and
    bubble, measured and simulated, and where the difference comes from
    (:func:`ppviz.residuals`). Give a :class:`ppviz.Calibration`, a :class:`ppviz.Config` (its
    costs run the measured program) or a simulated Result of the measured program; anything
    else of another size or program is refused, naming what differs. The chart then has no
    controls.
    """
    if against is not None and isinstance(x, (list, tuple)):
        raise ConfigError("against", type(against).__name__, "against= overlays one measured run; give one, not a list")
    if isinstance(x, (list, tuple)):
        from .comparison import compare

        return compare(x, theme=theme)
    return Viewer(x, controls=controls, theme=theme, against=against)
