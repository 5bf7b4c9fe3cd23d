"""``ppviz.show``: the interactive Gantt chart (an anywidget) and its live controls.

Python owns the truth: it simulates, packs the timeline and memory curves into two binary
traits, and puts the metrics in ``meta``. The front end (``js/``, bundled into
``ppviz/static/widget.js``) only draws and reports interactions back through
``selected_microbatch`` / ``selected_op``.

Timeline bytes (little-endian), 19 bytes per op plus a header::

    u32 magic "PPVT", u32 version, u32 n ops, u32 p devices, u32 offsets[p + 1]
    f32 start[n], f32 duration[n], i32 dep[n], u32 microbatch[n], u16 stage[n], u8 flags[n]

Ops are in program order, so device d's ops are ``offsets[d]:offsets[d+1]`` (the device
costs no bytes) and each device's starts and ends are sorted, which the front end's
binary-search culling relies on. ``dep`` is the op this one depends on (−1 for none);
flags hold the kind (bits 0–1, ``FBIW``), the F and the B/I of an F&B pair (bits 2, 3) and
whether the dependency set the start (bit 4: the op waited for it). Times are float32:
exact for integer and dyadic times below 2^24, otherwise within one part in 10^7. Each
column starts on a 4-byte boundary so the browser maps it without copying.

Memory bytes::

    u32 magic "PPVM", u32 version, u32 p, u32 offsets[p + 1], f32 times[k], f32 values[k]
"""

from __future__ import annotations

import pathlib

import anywidget
import ipywidgets
import numpy as np
import traitlets

from .config import Config
from .errors import ConfigError
from .ir import Program
from .result import Result
from .simulate import simulate

_STATIC = pathlib.Path(__file__).parent / "static"

TIMELINE_MAGIC = 0x54565050  # b"PPVT" read as little-endian u32
MEMORY_MAGIC = 0x4D565050  # b"PPVM"
FORMAT_VERSION = 1
BYTES_PER_OP = 19

FLAG_PAIR_F = 1 << 2
FLAG_PAIR_B = 1 << 3
FLAG_WAITED = 1 << 4


def _aligned(*parts: bytes) -> bytes:
    out = bytearray()
    for part in parts:
        out += part
        out += b"\0" * (-len(out) % 4)
    return bytes(out)


def encode_timeline(result: Result) -> bytes:
    """The timeline in the binary layout described in this module's docstring."""
    ops = result.ops
    program = result.program
    n = len(ops)
    if program.stages > 0xFFFF:
        raise ConfigError("stages", program.stages, "the widget draws at most 65535 stages")
    flags = program.kind.astype(np.uint8)  # ir's codes are the kind's index in KINDS ("FBIW")
    flags[program.pair] |= FLAG_PAIR_F
    flags[np.flatnonzero(program.pair) + 1] |= FLAG_PAIR_B
    flags[ops.waited_for >= 0] |= FLAG_WAITED
    header = np.array([TIMELINE_MAGIC, FORMAT_VERSION, n, program.devices], dtype="<u4")
    return _aligned(
        header.tobytes(),
        program.offsets.astype("<u4").tobytes(),
        ops.start.astype("<f4").tobytes(),
        (ops.end - ops.start).astype("<f4").tobytes(),
        result.dependencies.astype("<i4").tobytes(),
        ops.microbatch.astype("<u4").tobytes(),
        ops.stage.astype("<u2").tobytes(),
        flags.tobytes(),
    )


def encode_memory(result: Result) -> bytes:
    """Each device's activation-memory step function, in the layout of the module docstring."""
    curves = result.memory
    p = result.devices
    header = np.array([MEMORY_MAGIC, FORMAT_VERSION, p], dtype="<u4")
    return _aligned(
        header.tobytes(),
        curves.offsets.astype("<u4").tobytes(),
        curves.times.astype("<f4").tobytes(),
        curves.values.astype("<f4").tobytes(),
    )


def _floats(values) -> list[float | None]:
    return [None if v is None else float(v) for v in values]


def describe(result: Result) -> dict:
    """The JSON-sized part: labels, sizes and metrics (simulated and closed form)."""
    c = result.config
    program = result.program
    placement = program.placement
    cf = result.closed_form
    closed = None
    if cf is not None:
        closed = {
            "makespan": cf.makespan,
            "bubble_fraction": cf.bubble_fraction,
            "bubble_rate": cf.bubble_rate,
            "peak_activation": None if cf.peak_activation is None else _floats(cf.peak_activation),
            "bubble_formula": cf.bubble_formula,
            "memory_formula": cf.memory_formula,
            "assumptions": cf.assumptions,
            "applies": bool(cf.applies),
            "source": cf.source,
        }
    return {
        "title": c.label if c.label is not None else (program.name if c.schedule == "custom" else c.schedule),
        "schedule": program.name,
        "devices": program.devices,
        "microbatches": program.microbatches,
        "stages": program.stages,
        "stages_per_device": c.stages_per_device,
        "f": c.f, "b": c.b, "w": c.w, "comm": c.comm,
        "rows": [placement.describe(d) if placement is not None else "" for d in range(program.devices)],
        "ops": len(result.ops),
        "makespan": result.makespan,
        "ideal": result.ideal,
        "bubble_fraction": result.bubble_fraction,
        "bubble_rate": result.bubble_rate,
        "idle": _floats(result.idle),
        "peak_activation": _floats(result.peak_activation),
        "static_memory": _floats(result.static_memory),
        "peak_memory": _floats(result.peak_memory),
        "activation_bytes": c.activation_bytes,
        "closed_form": closed,
    }


class GanttWidget(anywidget.AnyWidget):
    """The canvas Gantt chart of one simulated result.

    ``selected_microbatch`` (−1 for none) and ``selected_op`` (an index into
    ``result.ops``, −1 for none) follow clicks in the chart and can be set from Python;
    ``selected_device`` (−1 for none) follows clicks on a device's row label or an op.
    ``theme`` is ``"auto"`` (follow the host), ``"light"`` or ``"dark"``.

    ``time_window`` is the span of time in view, ``[t0, t1]``, or ``[]`` for all of it; it
    follows zoom and pan and can be set from Python. The time axis spans
    ``[0, max(makespan, time_extent)]``, so charts given the same ``time_extent`` share one
    scale. ``compact`` draws a one-line header and no memory lanes or replay bar.
    ``run_name``, ``color`` and ``selected_schedule`` place the chart in a comparison
    (:func:`ppviz.compare`): clicking its title selects ``run_name``, and while another run
    is selected the chart is dimmed.

    ``GanttWidget(None, error=...)`` is a chart with nothing to draw that shows why.
    """

    _esm = _STATIC / "widget.js"

    timeline = traitlets.Bytes(b"").tag(sync=True)
    memory = traitlets.Bytes(b"").tag(sync=True)
    meta = traitlets.Dict().tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)
    selected_microbatch = traitlets.Int(-1).tag(sync=True)
    selected_op = traitlets.Int(-1).tag(sync=True)
    selected_device = traitlets.Int(-1).tag(sync=True)
    theme = traitlets.Enum(["auto", "light", "dark"], default_value="auto").tag(sync=True)
    compact = traitlets.Bool(False).tag(sync=True)
    time_extent = traitlets.Float(0.0, min=0.0).tag(sync=True)
    time_window = traitlets.List(traitlets.Float()).tag(sync=True)
    run_name = traitlets.Unicode("").tag(sync=True)
    color = traitlets.Unicode("").tag(sync=True)
    selected_schedule = traitlets.Unicode("").tag(sync=True)

    def __init__(self, result: Result | None, **kwargs):
        super().__init__(**kwargs)
        self.result = None
        if result is not None:
            self.set_result(result)

    @traitlets.validate("time_window")
    def _valid_window(self, proposal):
        return _valid_window(proposal["value"])

    def set_result(self, result: Result) -> None:
        """Show another result; the front end redraws once with all of it."""
        self.result = result
        with self.hold_sync():
            self.timeline = encode_timeline(result)
            self.memory = encode_memory(result)
            self.meta = describe(result)
            self.error = ""
            if self.selected_microbatch >= result.program.microbatches:
                self.selected_microbatch = -1
            if self.selected_device >= result.devices:
                self.selected_device = -1
            # op indices of a new timeline name other ops
            self.selected_op = -1
            self.time_window = []


def _valid_window(window) -> list[float]:
    window = list(window)
    if window and not (len(window) == 2 and 0 <= window[0] < window[1] and all(np.isfinite(window))):
        raise ConfigError("time_window", window, "give [t0, t1] with 0 <= t0 < t1, or [] for the whole time axis")
    return window


def _as_result(x) -> Result:
    if isinstance(x, Result):
        return x
    if isinstance(x, (Config, Program)):
        return simulate(x)
    if isinstance(x, str):  # a schedule name, at the default sizes
        return simulate(Config(schedule=x))
    raise ConfigError("x", type(x).__name__,
                      "give a schedule name, a ppviz.Config, Program or Result, or a list of them to compare")


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
        result = _as_result(x)
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
        from .schedules.registry import all_specs

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
        from .schedules.registry import lookup

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


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ppviz</title>
<style>body {{ margin: 0; padding: 24px; background: {background}; }} #ppviz {{ max-width: {width}; }}</style>
</head><body><div id="ppviz"></div>
<script type="module">
const bytes = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
const state = {{
  timeline: new DataView(bytes("{timeline}").buffer),
  memory: new DataView(bytes("{memory}").buffer),
  meta: {meta}, error: "", selected_microbatch: -1, selected_op: -1, selected_device: -1, theme: "{theme}",
  compact: false, time_extent: 0, time_window: [], run_name: "", color: "", selected_schedule: "",
}};
const listeners = {{}};
const model = {{
  get: (k) => state[k],
  set(k, v) {{ state[k] = v; for (const f of listeners["change:" + k] ?? []) f(); }},
  save_changes() {{}},
  on(e, f) {{ (listeners[e] ??= []).push(f); }},
  off(e, f) {{ listeners[e] = (listeners[e] ?? []).filter((g) => g !== f); }},
}};
window.ppvizModel = model;
const url = URL.createObjectURL(new Blob([bytes("{bundle}")], {{ type: "text/javascript" }}));
const widget = (await import(url)).default;
window.ppvizCleanup = await widget.render({{ model, el: document.getElementById("ppviz") }});
window.ppvizReady = true;
</script></body></html>
"""


def standalone_html(x, *, theme: str = "light", width: str = "1200px") -> str:
    """The chart as one offline HTML page (the bundle and data inlined, no kernel): for
    sharing, documentation, browser tests and benchmarks. Selection stays in the page."""
    import base64
    import json

    if theme not in ("light", "dark", "auto"):
        raise ConfigError("theme", theme, "use 'light', 'dark' or 'auto'")
    result = _as_result(x)

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode("ascii")

    # "<" escaped so that no user text (a label, a schedule name) can close the script
    meta = json.dumps(describe(result)).replace("<", "\\u003c")
    return _PAGE.format(
        background={"dark": "#0e1014", "light": "#ffffff"}.get(theme, "Canvas"),
        width=width, theme=theme, meta=meta,
        timeline=b64(encode_timeline(result)), memory=b64(encode_memory(result)),
        bundle=b64((_STATIC / "widget.js").read_bytes()),
    )


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


__all__ = ["GanttWidget", "Viewer", "show", "encode_timeline", "encode_memory", "describe", "standalone_html", "BYTES_PER_OP"]
