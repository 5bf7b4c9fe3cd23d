"""The chart as one standalone offline page: the front end's bundle and the data inlined,
no kernel; for sharing, documentation, browser tests and benchmarks."""

from __future__ import annotations

import base64
import json
import os

from ..charts.style import THEMES
from ..core.errors import ConfigError
from ..io.files import write_file
from .gantt import BUNDLE, as_result
from .wire import describe, encode_memory, encode_timeline

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
    if theme not in ("light", "dark", "auto"):
        raise ConfigError("theme", theme, "use 'light', 'dark' or 'auto'")
    result = as_result(x)

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode("ascii")

    # "<" escaped so that no user text (a label, a schedule name) can close the script
    meta = json.dumps(describe(result)).replace("<", "\\u003c")
    return _PAGE.format(
        background=THEMES[theme]["pageBackground"] if theme in THEMES else "Canvas",
        width=width, theme=theme, meta=meta,
        timeline=b64(encode_timeline(result)), memory=b64(encode_memory(result)),
        bundle=b64(BUNDLE.read_bytes()),
    )


def write_html(result, path: str | os.PathLike, theme: str = "light") -> str:
    """Write the interactive chart as a standalone offline page; returns the path.

    ``theme="auto"`` follows the reader's system setting.
    """
    if theme not in ("light", "dark", "auto"):
        raise ConfigError("theme", theme, "give 'light', 'dark' or 'auto' (follow the reader's system)")
    return write_file(path, standalone_html(result, theme=theme))
