"""The chart as one standalone offline page: the front end's bundle and the data inlined,
no kernel; for sharing, documentation, browser tests and benchmarks."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from ..charts.style import THEMES
from ..core.errors import ConfigError
from ..core.engine import as_runs
from .gantt import BUNDLE
from .overlay import against_label, describe_overlay, encode_overlay, overlay_of
from .wire import describe, encode_memory, encode_timeline

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ppviz</title>
<style>body {{ margin: 0; padding: 24px; background: {background}; }}
.ppviz-page {{ max-width: {width}; margin-bottom: 24px; }}</style>
</head><body>{slots}
<script type="module">
const bytes = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
const charts = {charts};
const url = URL.createObjectURL(new Blob([bytes("{bundle}")], {{ type: "text/javascript" }}));
const widget = (await import(url)).default;
// one model and one view per chart, as a notebook gives each output its own
window.ppvizModels = [];
window.ppvizCleanups = [];
for (const [i, chart] of charts.entries()) {{
  const state = {{
    _timeline: new DataView(bytes(chart.timeline).buffer),
    _memory: new DataView(bytes(chart.memory).buffer),
    _overlay: new DataView(bytes(chart.overlay).buffer),
    _meta: chart.meta, error: "", busy: "", selected_microbatch: -1, selected_op: -1, selected_device: -1,
    theme: "{theme}", _compact: false, time_extent: 0, time_window: [], _run_name: "", _color: "",
    selected_schedule: "",
  }};
  const listeners = {{}};
  const model = {{
    get: (k) => state[k],
    set(k, v) {{ state[k] = v; for (const f of listeners["change:" + k] ?? []) f(); }},
    save_changes() {{}},
    on(e, f) {{ (listeners[e] ??= []).push(f); }},
    off(e, f) {{ listeners[e] = (listeners[e] ?? []).filter((g) => g !== f); }},
  }};
  window.ppvizModels.push(model);
  window.ppvizCleanups.push(await widget.render({{ model, el: document.getElementById("ppviz-" + i) }}));
}}
window.ppvizModel = window.ppvizModels[0];
window.ppvizCleanup = window.ppvizCleanups[0];
window.ppvizReady = true;
</script></body></html>
"""

_WIDTH = re.compile(r"\d+(\.\d+)?(px|%|em|rem|vw)")


def standalone_html(x, *, theme: str = "light", width: str = "1200px", against=None) -> str:
    """The chart as one offline HTML page (the bundle and data inlined, no kernel): for
    sharing, documentation, browser tests and benchmarks. Selection stays in the page.
    A list gives one chart under another, each with its own state. ``against`` overlays the
    simulation of a measured run's program, as ``ppviz.show(measured, against=...)`` does
    (one chart only)."""
    if theme not in ("light", "dark", "auto"):
        raise ConfigError("theme", theme, "use 'light', 'dark' or 'auto'")
    if not isinstance(width, str) or not _WIDTH.fullmatch(width):
        raise ConfigError("width", width, "give a CSS length such as '1200px', '100%' or '80em'")
    results = as_runs(x, name="x")

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode("ascii")

    if against is not None and len(results) != 1:
        raise ConfigError("against", type(against).__name__, "against= overlays one measured run; give one, not a list")
    charts: list[dict[str, Any]] = [{"timeline": b64(encode_timeline(r)), "memory": b64(encode_memory(r)), "meta": describe(r),
               "overlay": ""} for r in results]
    if against is not None:
        residuals = overlay_of(results[0], against)
        charts[0]["overlay"] = b64(encode_overlay(residuals))
        charts[0]["meta"]["overlay"] = describe_overlay(residuals, against_label(against))
    # "<" escaped so that no user text (a label, a schedule name) can close the script
    data = json.dumps(charts).replace("<", "\\u003c")
    slots = "".join(f'<div class="ppviz-page" id="ppviz-{i}"></div>' for i in range(len(results)))
    return _PAGE.format(
        background=THEMES[theme]["pageBackground"] if theme in THEMES else "Canvas",
        width=width, theme=theme, charts=data, slots=slots, bundle=b64(BUNDLE.read_bytes()),
    )
