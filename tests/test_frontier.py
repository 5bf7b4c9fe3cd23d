"""``ppviz.frontier``: a Pareto-correct table of library runs and search results, its chart, and the
widget that opens the Gantt chart of the point clicked."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

import ppviz
from ppviz import Config, ConfigError, simulate
from ppviz.analysis.frontier import pareto_front
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
    spec = front.chart().to_dict()
    (data,) = spec["datasets"].values()
    assert sorted(r["name"] for r in data) == sorted(front.table.name)
    params = spec.get("params", []) + [p for layer in spec["layer"] for p in layer.get("params", [])]
    assert [p["name"] for p in params] == [PICK]
    svg = ppviz.charts.to_svg(front.chart())
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


@pytest.fixture(scope="module")
def model_front():
    # Llama 3 8B on four H100s: stages with static memory, a device of 80 GiB
    cfg = Config.from_model(ppviz.Transformer.preset("llama-3-8b"), ppviz.Hardware.preset("h100-sxm"), devices=4,
                            microbatches=8)
    return cfg, ppviz.frontier(cfg)


def test_with_static_memory_and_a_capacity_the_front_is_on_peak_memory_among_the_runs_that_fit(model_front):
    cfg, front = model_front
    table = front.table
    assert front.memory == "peak_memory"
    for row in table.itertuples():
        res = front.result(row.name)
        assert res.peak_memory.max() == pytest.approx(row.peak_memory, rel=1e-12)
        assert row.fits == (not res.out_of_memory) == bool((res.peak_memory <= cfg.memory_capacity).all())
    # Chimera holds the least activation of the library's schedules, but its two replicas hold the
    # parameters twice: 97 GiB on an 80 GiB device, so it is no choice (it was on the front by activation)
    chimera = table.set_index("name").loc["chimera"]
    assert not chimera.fits and not chimera.pareto
    assert chimera.peak_memory * cfg.activation_bytes / 2**30 == pytest.approx(97.197, abs=1e-3)
    fit = table[table.fits]
    assert not table.pareto[~table.fits].any() and len(fit) < len(table)
    pts = list(zip(fit.bubble_fraction, fit.peak_memory))
    for point, row in zip(pts, fit.itertuples()):
        assert row.pareto == (not any(beats(q, point) for q in pts))


def test_the_chart_of_a_model_config_is_in_gib_with_the_capacity_and_the_runs_over_it(model_front):
    cfg, front = model_front
    spec = front.chart().to_dict()
    datasets = list(spec["datasets"].values())
    runs = next(d for d in datasets if d and "name" in d[0])
    gib = cfg.activation_bytes / 2**30
    by_name = {r["name"]: r for r in runs}
    for row in front.table.itertuples():
        assert by_name[row.name]["memory"] == pytest.approx(row.peak_memory * gib, rel=1e-12)
        assert by_name[row.name]["status"] == ("Pareto front" if row.pareto else "dominated" if row.fits
                                               else "over the device's memory")
    (rule,) = [d for d in datasets if d and "capacity" in d[0]]
    assert rule[0]["capacity"] == pytest.approx(80.0) and rule[0]["text"] == "memory capacity 80 GiB"
    svg = ppviz.charts.to_svg(front.chart())
    assert "peak memory, busiest device (GiB)" in svg and "crosses: over the device's memory" in svg


def test_schedules_and_memory_choose_the_rows_and_bad_input_is_refused():
    points = ppviz.frontier(Config(devices=4, microbatches=8), schedules=["1f1b", "ZB1P"], memory=[])
    assert list(points.table.name) == ["1f1b", "zb-h1"] or set(points.table.name) == {"1f1b", "zb-h1"}
    with pytest.raises(ConfigError, match="give at least 1"):
        ppviz.frontier(Config(devices=4, microbatches=8), schedules=[], memory=[0.5])
    with pytest.raises(ConfigError, match="metric"):
        ppviz.frontier(Config(), metric="bubbles")
    with pytest.raises(ConfigError, match="schedules"):
        ppviz.frontier(Config(), schedules="1f1b")
    with pytest.raises(ppviz.UnknownScheduleError):
        ppviz.frontier(Config(), schedules=["zb-h3"])
    with pytest.raises(ConfigError, match="nothing to put"):
        ppviz.frontier(Config(), schedules=[], memory=[])
