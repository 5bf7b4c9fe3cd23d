"""One input convention: every entry point that takes a run — ppviz.simulate, show, compare and
every chart — takes the same kinds (a Config, a Program, a Result, a schedule name) through one
coercion, draws the same run from each, and refuses anything else naming what it was given and
what is taken. The entry points are enumerated (a public function whose first argument is
``run`` or ``runs``), so one added later is covered."""

import inspect

import pytest

import ppviz
import ppviz.charts
from ppviz.core.engine import RUN_KINDS

CONFIG = ppviz.Config("zb-h1", devices=4, microbatches=8)
RESULT = ppviz.simulate(CONFIG)
KINDS = {"config": CONFIG, "program": CONFIG.build(), "result": RESULT,
         "name": "zb-h1"}  # at the default sizes, p = 4 and m = 8 with f = b = w = 1, as CONFIG


def _entry_points():
    out = []
    for module, prefix in ((ppviz, "ppviz"), (ppviz.charts, "ppviz.charts")):
        for name in module.__all__:
            fn = getattr(module, name)
            if inspect.isfunction(fn):
                first = next(iter(inspect.signature(fn).parameters), None)
                if first in ("run", "runs"):
                    out.append((f"{prefix}.{name}", fn, first == "runs"))
    return out


ENTRY_POINTS = _entry_points()
IDS = [label for label, _, _ in ENTRY_POINTS]


def test_the_enumeration_finds_every_entry_point_that_takes_runs():
    assert {"ppviz.simulate", "ppviz.show", "ppviz.compare", "ppviz.charts.gantt_chart", "ppviz.charts.bubble_chart",
            "ppviz.charts.memory_chart", "ppviz.charts.pareto_chart", "ppviz.charts.comparison_charts",
            "ppviz.charts.communication_chart", "ppviz.charts.memory_curve_chart", "ppviz.charts.sweep_chart",
            "ppviz.charts.schedule_colors"} <= set(IDS)


#: what a chart's data say of the run itself (its times, memory and name), whatever made it: a
#: program has no registry schedule, so no closed form and its own colour
FACTS = {"name", "makespan", "simulated", "idle", "start", "end", "device", "stage", "microbatch", "kind", "peak",
         "activation", "bubble", "memory", "time", "comm_time", "compute_time"}


def _facts(spec: dict) -> list:
    rows = [tuple(sorted((k, v) for k, v in row.items() if k in FACTS))
            for rows in spec.get("datasets", {}).values() for row in rows]
    assert any(rows)
    return sorted(set(rows), key=repr)  # a closed-form mark may repeat a row the program's run lacks


def _drawn(fn, x, many):
    """What the entry point made of run ``x`` (alone, or in a list of two), as something comparable
    across kinds: the result's makespan and name, or what the chart's data say of the run."""
    if fn is ppviz.charts.sweep_chart:
        return fn(x, [8, 16]).to_dict()
    out = fn([x, x] if many else x)
    if isinstance(out, ppviz.Result):
        return out.makespan, out.config.display_name
    if isinstance(out, ppviz.Comparison):
        return [(r.makespan, name) for r, name in zip(out.results, out.names)]
    if hasattr(out, "result") and isinstance(out.result, ppviz.Result):  # the viewer
        return out.result.makespan, out.result.config.display_name
    if isinstance(out, dict):  # schedule_colors: the names only, a program has its own colour
        return list(out)
    return _facts(out.to_dict())


@pytest.mark.parametrize("label, fn, many", ENTRY_POINTS, ids=IDS)
def test_every_kind_of_run_draws_the_same_run(label, fn, many):
    kinds = dict(KINDS)
    if fn is ppviz.charts.sweep_chart:
        kinds.pop("program")  # a program fixes its microbatches: it has no sweep (refused below)
    drawn = {kind: _drawn(fn, x, many) for kind, x in kinds.items()}
    assert all(value == drawn["config"] for value in drawn.values()), label


@pytest.mark.parametrize("label, fn, many", ENTRY_POINTS, ids=IDS)
@pytest.mark.parametrize("wrong", [42, {"schedule": "1f1b"}, None, b"zb-h1"])
def test_anything_else_is_refused_naming_what_was_given_and_what_is_taken(label, fn, many, wrong):
    with pytest.raises(ppviz.ConfigError) as info:
        fn(wrong, [8]) if fn is ppviz.charts.sweep_chart else fn(wrong)
    message = str(info.value)
    assert type(wrong).__name__ in message and repr(wrong)[:20] in message
    if fn is not ppviz.charts.sweep_chart:
        assert RUN_KINDS in message


def test_a_list_goes_to_compare_not_to_show():
    with pytest.raises(ppviz.ConfigError, match="to compare runs, give the list to ppviz.compare"):
        ppviz.show([CONFIG, "1f1b"])
    cmp = ppviz.compare([CONFIG, "1f1b", RESULT, KINDS["program"]])
    assert [r.makespan for r in cmp.results] == [27, 33, 27, 27]
    # the program's run is a custom schedule named after its program; equal runs are numbered
    assert cmp.names == ["zb-h1 (schedule=zb-h1) #1", "1f1b", "zb-h1 (schedule=zb-h1) #2", "zb-h1 (schedule=custom)"]
