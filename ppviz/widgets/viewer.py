"""``ppviz.show``: the Gantt chart under live controls that re-simulate on every change."""

from __future__ import annotations

import ipywidgets
import traitlets

from ..core.engine import simulate
from ..core.registry import all_specs, lookup
from ..core.result import Result
from .gantt import GanttWidget, as_result


class Viewer(ipywidgets.VBox):
    """What :func:`show` returns: the chart, optionally under live controls.

    ``viewer.gantt`` is the chart widget, ``viewer.result`` the result on display, and
    ``viewer.selected_microbatch`` / ``selected_op`` / ``selected_device`` mirror the chart's
    selection (observe them with ``viewer.observe(callback, "selected_microbatch")``).
    """

    selected_microbatch = traitlets.Int(-1)
    selected_op = traitlets.Int(-1)
    selected_device = traitlets.Int(-1)

    def __init__(self, x, *, controls: bool = True, theme: str = "auto"):
        result = as_result(x)
        self.gantt = GanttWidget(result, theme=theme)
        self._config = result.config
        self._program = result.program if result.config.schedule == "custom" else None
        self.controls = _Controls(self) if controls else None
        children = [self.controls.box, self.gantt] if self.controls else [self.gantt]
        super().__init__(children=children)
        traitlets.link((self.gantt, "selected_microbatch"), (self, "selected_microbatch"))
        traitlets.link((self.gantt, "selected_op"), (self, "selected_op"))
        traitlets.link((self.gantt, "selected_device"), (self, "selected_device"))

    @property
    def result(self) -> Result:
        return self.gantt.result

    def update(self, **changes) -> Result | None:
        """Re-simulate with some config fields changed (as ``Config.replace``); on an
        invalid combination the chart keeps the last good result and shows the error."""
        try:
            config = self._config.replace(**changes)
            result = simulate(self._program, config) if self._program is not None else simulate(config)
        except ValueError as exc:
            self.gantt.error = str(exc)
            return None
        self._config = config
        self.gantt.set_result(result)
        return result


class _Controls:
    """ipywidgets for schedule, p, m, v, f/b/w and comm; each change re-simulates."""

    def __init__(self, viewer: Viewer):
        self.viewer = viewer
        c = viewer._config
        custom = viewer._program is not None
        style = {"description_width": "initial"}
        narrow = ipywidgets.Layout(width="120px")
        names = [s.name for s in all_specs() if s.builder is not None]
        self.schedule = ipywidgets.Dropdown(options=names if not custom else ["custom"],
                                            value=c.schedule if not custom else "custom",
                                            description="schedule", style=style,
                                            layout=ipywidgets.Layout(width="230px"), disabled=custom)
        self.fields = {
            "devices": ipywidgets.BoundedIntText(c.devices, min=1, max=1024, description="p", style=style,
                                                 layout=narrow, disabled=custom),
            "microbatches": ipywidgets.BoundedIntText(c.microbatches, min=1, max=1_000_000, description="m",
                                                      style=style, layout=narrow, disabled=custom),
            "stages_per_device": ipywidgets.BoundedIntText(c.stages_per_device, min=1, max=64, description="v",
                                                           style=style, layout=narrow, disabled=custom),
            "f": ipywidgets.BoundedFloatText(c.f, min=0, max=1e6, step=0.1, description="f", style=style, layout=narrow),
            "b": ipywidgets.BoundedFloatText(c.b, min=0, max=1e6, step=0.1, description="b", style=style, layout=narrow),
            "w": ipywidgets.BoundedFloatText(c.w, min=0, max=1e6, step=0.1, description="w", style=style, layout=narrow),
            "comm": ipywidgets.BoundedFloatText(c.comm, min=0, max=1e6, step=0.1, description="comm", style=style,
                                                layout=narrow),
        }
        self._quiet = False
        self.schedule.observe(self._on_schedule, names="value")
        for name, field in self.fields.items():
            field.observe(lambda change, name=name: self._on_field(name, change["new"]), names="value")
        self.box = ipywidgets.HBox([self.schedule, *self.fields.values()],
                                   layout=ipywidgets.Layout(flex_flow="row wrap", align_items="center"))
        self._sync_v_rule()

    def _sync_v_rule(self) -> None:
        if self.viewer._program is not None:
            return
        spec = self.viewer._config.spec
        self.fields["stages_per_device"].disabled = spec.v_min == spec.v_max

    def _on_schedule(self, change) -> None:
        spec = lookup(change["new"])
        v = spec.v_or_default(self.fields["stages_per_device"].value)
        self._set_quietly("stages_per_device", v)
        self.viewer.update(schedule=spec.name, stages_per_device=v)
        self._sync_v_rule()

    def _on_field(self, name: str, value) -> None:
        if not self._quiet:
            self.viewer.update(**{name: value})

    def _set_quietly(self, name: str, value) -> None:
        self._quiet = True
        try:
            self.fields[name].value = value
        finally:
            self._quiet = False


def show(x, controls: bool = True, *, theme: str = "auto"):
    """The interactive Gantt chart of a schedule name, Config, Program or Result.

    With ``controls`` the chart sits under widgets for schedule, p, m, v, f, b, w and comm
    that re-simulate and redraw; an invalid combination shows its error in the chart.
    A list or tuple of them goes to :func:`ppviz.compare` (``controls`` does not apply there).
    """
    if isinstance(x, (list, tuple)):
        from .comparison import compare

        return compare(x, theme=theme)
    return Viewer(x, controls=controls, theme=theme)
