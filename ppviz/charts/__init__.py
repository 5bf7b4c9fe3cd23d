"""Altair charts of bubble and memory, for comparing schedules.

Every chart function takes results or configs (configs are simulated) and returns an ordinary
Altair chart, so ``.properties(...)``, ``.configure_*(...)`` and ``alt.hconcat`` work as usual::

    from ppviz import charts
    runs = [ppviz.Config(schedule=s, devices=8, microbatches=32) for s in ("1f1b", "zb-h1")]
    charts.bubble_chart(runs)             # simulated bubble per schedule, closed form ticked
    charts.memory_chart(runs)             # peak memory per device
    charts.pareto_chart(runs)             # bubble vs peak memory, Pareto front highlighted
    charts.memory_curve_chart(runs[0])    # memory over time per device
    charts.sweep_chart(["1f1b", "zb-h1"], microbatches=[8, 16, 32], devices=8)
    charts.sweep_heatmap(ppviz.sweep({...}))  # a sweep's bubble over m and p, refused cells marked
    charts.comparison_charts(runs)        # bubble, Pareto and memory laid out together
    charts.communication_chart(runs)      # exposed communication and volume (with Config.topology)
    charts.gantt_chart(runs[0])           # a static Gantt chart in the widget's look (SVG/PNG export)
    charts.overlay_chart(ppviz.residuals(measured, cal))  # a measured run over its simulation
    charts.frontier_chart(points)         # ppviz.frontier's chart: library runs and search results
    charts.plan_chart(ppviz.plan(...))    # step time against memory for every fitting layout

Each schedule keeps one colour in every chart (:func:`schedule_colors`), drawn from a
colour-blind-safe palette. Memory is in activation units (one microbatch's activations
through 1/p of the model), in bytes when every config gives ``activation_bytes``, and
includes static memory (parameters, gradients, optimizer state) when ``params > 0``.

Offline: every chart returned here shows in a notebook (as a cell's last expression too) through
a JupyterChart subclass whose JavaScript is bundled by vl-convert, so nothing is fetched from a
CDN; the user's own charts and renderer stay as they were (``alt.renderers.enable("jupyter",
offline=True)`` opts them in). :func:`widget` / :func:`display` show any chart that way. :func:`to_svg` and :func:`to_png` export without a
browser or network (``chart.save("x.svg")`` / ``"x.png"`` also works offline: Altair uses
vl-convert for it).
"""


from .comparison import (
    bubble_chart,
    communication_chart,
    comparison_charts,
    memory_chart,
    memory_curve_chart,
    pareto_chart,
    sweep_chart,
    sweep_heatmap,
)
from .frontier import frontier_chart
from .plan import plan_chart
from .gantt import GANTT_THEMES, gantt_chart
from .inputs import BUBBLE_METRICS, MAX_ROWS, PALETTE, SWEEP_METRICS, pareto_front, schedule_colors, summarize_steps
from .offline import OfflineChart, display, widget
from .overlay import overlay_chart
from .render import to_png, to_svg

__all__ = [
    "BUBBLE_METRICS", "GANTT_THEMES", "MAX_ROWS", "OfflineChart", "PALETTE", "SWEEP_METRICS", "bubble_chart",
    "communication_chart", "comparison_charts", "display", "frontier_chart", "gantt_chart", "memory_chart", "plan_chart",
    "memory_curve_chart", "overlay_chart", "pareto_chart",
    "pareto_front", "schedule_colors", "summarize_steps", "sweep_chart", "sweep_heatmap", "to_png", "to_svg", "widget",
]
