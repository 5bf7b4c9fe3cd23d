"""``ppviz.frontier``: a Pareto-correct table of library runs and search results, its chart, and the
widget that opens the Gantt chart of the point clicked."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

import ppviz
from ppviz import Config, ConfigError, simulate
from ppviz.analysis.frontier import frontier_points, pareto_front
from ppviz.charts.frontier import PICK


def dominates(a, b) -> bool:
    """a is at most b on both axes and below it on one (exact comparisons)."""
    return a[0] <= b[0] and a[1] <= b[1] and (a[0] < b[0] or a[1] < b[1])


def close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-12 + 1e-9 * abs(b)


def beats(a, b) -> bool:
    """a is at most b on both axes and below it on one, values within 1e-9 counting as equal
    (so float noise cannot put a run on or off the front)."""
    le = all(x <= y or close(x, y) for x, y in zip(a, b))
    return le and any(x < y and not close(x, y) for x, y in zip(a, b))


values = st.sampled_from([0.0, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0]) | st.floats(0, 10, allow_nan=False)
grid_values = st.sampled_from([0.0, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0])


@given(st.lists(st.tuples(values, values), min_size=1, max_size=30))
def test_the_front_is_exactly_the_points_nothing_beats(points):
    front = pareto_front([x for x, _ in points], [y for _, y in points])
    assert front.tolist() == [not any(beats(b, a) for b in points) for a in points]


@given(st.lists(st.tuples(grid_values, grid_values), min_size=1, max_size=30))
def test_every_point_off_the_front_is_beaten_by_one_on_it(points):
    front = pareto_front([x for x, _ in points], [y for _, y in points])
    on = [p for p, f in zip(points, front) if f]
    assert on
    for p, f in zip(points, front):
        assert f or any(dominates(q, p) for q in on)


@pytest.fixture(scope="module")
def front():
    return ppviz.frontier(Config(devices=4, microbatches=8, comm=0.2, f=1.0, b=1.3, w=0.7), memory=[2, 4, 7])


def test_the_table_is_pareto_correct_and_its_runs_are_real(front):
    table = front.table
    assert {"library", "search"} == set(table.source)
    pts = list(zip(table.bubble_fraction, table.peak_activation))
    for i, row in enumerate(table.itertuples()):
        beaten = any(dominates(q, pts[i]) for q in pts)
        assert row.pareto == (not beaten)
        res = front.result(row.name)
        assert (res.makespan, res.bubble_fraction) == (row.makespan, row.bubble_fraction)
        assert res.peak_activation.max() == row.peak_activation
        if row.source == "search":
            assert row.peak_activation <= row.memory_limit
    # the searches are on the front or beaten only by runs at most as large as their limits
    for row in table[table.source == "search"].itertuples():
        better = table[(table.bubble_fraction < row.bubble_fraction) & (table.peak_activation <= row.memory_limit)]
        assert better.empty or row.pareto is False
    zb_h1 = simulate(Config(schedule="zb-h1", devices=4, microbatches=8, comm=0.2, f=1.0, b=1.3, w=0.7))
    assert table.set_index("name").loc["zb-h1", "makespan"] == zb_h1.makespan


def test_the_chart_draws_every_run_and_names_the_front(front):
    spec = front.chart.to_dict()
    (data,) = spec["datasets"].values()
    assert sorted(r["name"] for r in data) == sorted(front.table.name)
    params = spec.get("params", []) + [p for layer in spec["layer"] for p in layer.get("params", [])]
    assert [p["name"] for p in params] == [PICK]
    svg = ppviz.charts.to_svg(front.chart)
    for name in front.table[front.table.pareto].name:
        assert name.replace("≤", "&lt;=") in svg or name in svg


def test_clicking_a_point_opens_its_gantt_chart(front):
    view = front.view()
    assert view.detail.children == ()
    name = front.table.name[front.table.source == "search"].iloc[0]
    # what Vega-Lite's point selection sends when a point is clicked
    view.chart._vl_selections = {PICK: {"value": {"vlPoint": {"or": [{"name": name}]}},
                                        "store": [{"unit": "layer_1", "fields": [{"field": "name", "type": "E"}],
                                                   "values": [name]}]}}
    assert view.selected == name
    (viewer,) = view.detail.children
    assert viewer.result.makespan == front.table.set_index("name").loc[name, "makespan"]
    view.chart._vl_selections = {PICK: {"value": None, "store": []}}
    assert view.selected == "" and view.detail.children == ()


def test_schedules_and_memory_choose_the_rows_and_bad_input_is_refused():
    points = frontier_points(Config(devices=4, microbatches=8), schedules=["1f1b", "ZB1P"], memory=[])
    assert list(points.table.name) == ["1f1b", "zb-h1"] or set(points.table.name) == {"1f1b", "zb-h1"}
    with pytest.raises(ConfigError, match="give at least 1"):
        frontier_points(Config(devices=4, microbatches=8), schedules=[], memory=[0.5])
    with pytest.raises(ConfigError, match="metric"):
        frontier_points(Config(), metric="bubbles")
    with pytest.raises(ConfigError, match="schedules"):
        frontier_points(Config(), schedules="1f1b")
    with pytest.raises(ppviz.UnknownScheduleError):
        frontier_points(Config(), schedules=["zb-h3"])
    with pytest.raises(ConfigError, match="nothing to put"):
        frontier_points(Config(), schedules=[], memory=[])
