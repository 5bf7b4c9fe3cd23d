"""The static picture of an overlay (``ppviz.show(measured, against=...)``): the measured Gantt
chart with, in a strip at the bottom of each bar's row, each op's simulated span coloured by its
end residual, as the widget draws it (js/src/overlay.ts). Used for the pictures stored beside
notebook widgets (``ppviz.widgets.static``) and for SVG / PNG export."""

from __future__ import annotations

import altair as alt
import numpy as np

from ..analysis.residuals import Residuals
from ..core.errors import ConfigError, checked_arguments
from ..core.result import unit_suffix
from .gantt import _BAR_INSET_PX, gantt_chart
from .offline import shown_offline
from .style import THEMES

#: the ghost strip's share of a bar's height (the widget's is about the same)
STRIP = 0.3


@checked_arguments
@shown_offline
def overlay_chart(res: Residuals, *, width: int = 900, theme: str = "light") -> alt.LayerChart:
    """The measured run's Gantt chart (:func:`ppviz.charts.gantt_chart`, no memory lanes) with its
    simulation under each bar; ``res`` is what :func:`ppviz.residuals` returns."""
    if not isinstance(res, Residuals):
        raise ConfigError("res", type(res).__name__, "give what ppviz.residuals returns")
    if theme not in THEMES:
        raise ConfigError("theme", theme, "give 'light' or 'dark'")
    measured, simulated = res.measured, res.simulated
    chart = gantt_chart(measured, memory=False, width=width, theme=theme)
    p = measured.devices
    row = int(np.clip(480 // p, 16, 34))  # gantt_chart's default row height
    pad = _BAR_INSET_PX / row if row >= 14 else 0.1
    bottom = 1 - pad
    top = bottom - STRIP * (1 - 2 * pad)
    program = measured.program
    # one ghost per slot: an F&B pair's second op is drawn with its first
    keep = ~np.r_[False, program.pair[:-1]]
    end = simulated.ops.end.copy()
    pair = np.flatnonzero(program.pair)
    end[pair] = np.maximum(end[pair], end[pair + 1])
    late = measured.ops.end - end
    late[pair] = np.maximum(measured.ops.end[pair], measured.ops.end[pair + 1]) - end[pair]
    scale = max(float(np.abs(late[keep]).max()), 1e-12)
    colours = THEMES[theme]
    rows = [{"device": int(d), "start": float(s), "end": float(e), "late": float(x),
             "strength": 0.15 + 0.85 * min(1.0, abs(float(x)) / scale),
             "action": program.action_at(int(k))}
            for k, d, s, e, x in zip(np.flatnonzero(keep), measured.ops.device[keep], simulated.ops.start[keep],
                                     end[keep], late[keep])]
    makespan = measured.makespan
    x_scale = alt.Scale(domain=[0, makespan], nice=False, zero=False)
    y_scale = alt.Scale(domain=[0, p], reverse=True, nice=False, zero=False)

    def on_strip(data) -> alt.Chart:
        return alt.Chart(data).transform_calculate(strip_top=f"datum.device + {top}",
                                                   strip_bottom=f"datum.device + {bottom}")

    y = {"y": alt.Y("strip_top:Q", scale=y_scale, axis=None), "y2": alt.Y2("strip_bottom:Q")}
    lanes = on_strip({"values": [{"device": d, "start": 0.0, "end": makespan} for d in range(p)]}).mark_rect(
        color=colours["background"]).encode(alt.X("start:Q", scale=x_scale), x2="end:Q", **y)
    ghost_bg = on_strip({"values": [{"device": d, "start": 0.0, "end": makespan} for d in range(p)]}).mark_rect(
        color=colours["overlayGhost"]).encode(alt.X("start:Q", scale=x_scale), x2="end:Q", **y)
    ghosts = on_strip({"values": rows}).mark_rect(stroke=colours["overlaySimulated"], strokeWidth=0.6,
                                                   clip=True).encode(
        alt.X("start:Q", scale=x_scale), x2="end:Q", **y,
        color=alt.condition("datum.late > 0", alt.value(colours["residualLate"]), alt.value(colours["residualEarly"])),
        fillOpacity=alt.FillOpacity("strength:Q", scale=None),
        tooltip=[alt.Tooltip("action:N", title="simulated op"), alt.Tooltip("start:Q", format=".4~g"),
                 alt.Tooltip("end:Q", format=".4~g"), alt.Tooltip("late:Q", title="end residual", format="+.3~g")])
    chart.layer.extend([lanes, ghost_bg, ghosts])
    tm, ts = res.pipeline_time
    title = chart.title
    unit = unit_suffix(res.time_unit)
    text = [f"under each bar: the simulation of the same op ({ts:.4g}{unit} against {tm:.4g}{unit} measured); "
            "red: ends later than simulated, teal: earlier"]
    if isinstance(title, alt.TitleParams) or isinstance(title, dict):
        sub = title["subtitle"] if isinstance(title, dict) else title.subtitle
        sub = [] if sub is alt.Undefined or sub is None else ([sub] if isinstance(sub, str) else list(sub))
        if isinstance(title, dict):
            title["subtitle"] = sub + text
        else:
            title.subtitle = sub + text
    return chart
