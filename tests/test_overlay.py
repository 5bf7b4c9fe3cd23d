"""``ppviz.show(measured, against=...)``: the simulation of a measured program drawn in the same
chart. The arrays sent are checked against ``ppviz.residuals`` and the simulation itself, read
with an independent decoder of the documented layout (ppviz/widgets/overlay.py)."""

import base64
import json
import re
import struct

import numpy as np
import pytest

import ppviz
from ppviz.widgets import standalone_html
from ppviz.widgets.overlay import COLUMNS, OVERLAY_MAGIC, decode_overlay


@pytest.fixture(scope="module")
def measured():
    return ppviz.load_trace(ppviz.example_trace())


@pytest.fixture(scope="module")
def cal(measured):
    return ppviz.calibrate(measured)


def parse(data: bytes) -> dict:
    """The overlay bytes read with struct, from the layout in the module docstring."""
    magic, version, n = struct.unpack_from("<3I", data, 0)
    assert (magic, version) == (OVERLAY_MAGIC, 1)
    assert data[:4] == b"PPVO"
    assert len(data) == 12 + 6 * 4 * n
    out = {}
    for i, name in enumerate(COLUMNS):
        out[name] = np.array(struct.unpack_from(f"<{n}f", data, 12 + 4 * n * i))
    return out


def f32(x):
    return np.asarray(x, dtype=np.float32).astype(np.float64)


def test_show_against_a_calibration_sends_the_simulation_and_residuals(measured, cal):
    viewer = ppviz.show(measured, against=cal)
    gantt = viewer.gantt
    sent = parse(gantt._overlay)
    simulated = cal.simulate()
    res = ppviz.residuals(measured, cal)
    n = len(measured.ops)
    assert all(len(col) == n for col in sent.values())
    np.testing.assert_array_equal(sent["sim_start"], f32(simulated.ops.start))
    np.testing.assert_array_equal(sent["sim_end"], f32(simulated.ops.end))
    np.testing.assert_array_equal(sent["start_residual"], f32(measured.ops.start - simulated.ops.start))
    np.testing.assert_array_equal(sent["duration_residual"], f32(res.duration))
    # residuals are sent as computed in float64, not as differences of rounded times
    assert np.abs(sent["start_residual"]).max() > 1.0
    # the communication column: the transfer an op waited for, beyond the fitted latency
    dep = measured.dependencies
    waited = sent["comm_excess"] != 0
    assert waited.any()
    for k in np.flatnonzero(waited):
        assert dep[k] >= 0 and measured.ops.device[dep[k]] != measured.ops.device[k]
        assert sent["comm_excess"][k] == pytest.approx(
            measured.ops.start[k] - measured.ops.end[dep[k]] - cal.config.comm, abs=1e-4)
    assert (sent["host_gap"] >= 0).all() and sent["host_gap"].sum() == pytest.approx(res.host_gaps.sum(), rel=1e-5)
    # the same columns through the module's own decoder
    for name, col in decode_overlay(gantt._overlay).items():
        np.testing.assert_array_equal(col.astype(np.float64), sent[name])

    summary = gantt._meta["overlay"]
    json.dumps(summary)
    assert summary["pipeline_time"] == pytest.approx([measured.makespan, simulated.makespan])
    assert summary["bubble_fraction"] == pytest.approx([measured.bubble_fraction, simulated.bubble_fraction])
    parts = summary["attribution"]
    assert sum(parts.values()) == pytest.approx(measured.makespan - simulated.makespan)
    assert parts["compute_variance"] == pytest.approx(res.attribution.compute_variance)
    assert summary["finish"] == pytest.approx(res.finish.tolist())
    assert summary["label"] == "calibrated simulation"
    # the overlay compares a measurement: no controls that would replace it by a simulation
    assert viewer.controls is None and viewer.children == (gantt,)
    assert gantt.residuals is not None and gantt.residuals.difference == pytest.approx(res.difference)


def test_a_config_runs_the_measured_program_and_a_result_of_it_is_taken_as_it_is(measured, cal):
    uniform = ppviz.Config("1f1b", devices=4, microbatches=8, f=measured.config.f, b=measured.config.b,
                           time_unit="ms")
    sent = parse(ppviz.show(measured, against=uniform).gantt._overlay)
    expected = ppviz.simulate(measured.program, uniform)
    np.testing.assert_array_equal(sent["sim_start"], f32(expected.ops.start))
    # uniform stages on a run whose last stage is twice the first: far larger residuals
    calibrated = parse(ppviz.show(measured, against=cal).gantt._overlay)
    assert np.abs(sent["start_residual"]).max() > 10 * np.abs(calibrated["start_residual"]).max()

    result = cal.simulate()
    via_result = parse(ppviz.show(measured, against=result).gantt._overlay)
    np.testing.assert_array_equal(via_result["sim_end"], f32(result.ops.end))


def test_a_simulation_of_another_program_is_refused_naming_the_first_difference(measured):
    gpipe = ppviz.simulate(ppviz.Config("gpipe", devices=4, microbatches=8))
    a, b = measured.program, gpipe.program
    differ = ((a.device != b.device) | (a.stage != b.stage) | (a.kind != b.kind) | (a.microbatch != b.microbatch))
    k = int(np.flatnonzero(differ)[0])
    with pytest.raises(ppviz.PpvizError) as info:
        ppviz.show(measured, against=gpipe)
    message = str(info.value)
    assert f"op {k}: measured {a.action_at(k)} on device {a.device[k]}, against {b.action_at(k)} on device " \
           f"{b.device[k]}" in message


@pytest.mark.parametrize("change, named", [
    ({"devices": 2}, "against.devices"),
    ({"microbatches": 4}, "against.microbatches"),
    ({"schedule": "gpipe"}, "against.schedule"),
])
def test_a_config_of_another_size_or_schedule_is_refused(measured, change, named):
    config = ppviz.Config(**{**{"schedule": "1f1b", "devices": 4, "microbatches": 8}, **change})
    with pytest.raises(ppviz.PpvizError, match=re.escape(named)) as info:
        ppviz.show(measured, against=config)
    assert str(next(iter(change.values()))) in str(info.value)


def test_against_needs_a_measured_run_and_one_chart(measured, cal):
    with pytest.raises(ppviz.PpvizError, match="measured run"):
        ppviz.show(cal.simulate(), against=cal)
    with pytest.raises(ppviz.PpvizError, match="a list is not a run"):
        ppviz.show([measured, measured], against=cal)
    with pytest.raises(ppviz.PpvizError, match="Calibration, a Config or a Result"):
        ppviz.show(measured, against="1f1b")


def test_without_against_and_after_an_update_there_is_no_overlay(measured, cal):
    plain = ppviz.show(measured, controls=False).gantt
    assert plain._overlay == b"" and "overlay" not in plain._meta
    gantt = ppviz.show(measured, against=cal).gantt
    gantt.set_result(cal.simulate())
    assert gantt._overlay == b"" and "overlay" not in gantt._meta and gantt.residuals is None


def test_the_standalone_page_carries_the_overlay(measured, cal):
    page = standalone_html(measured, against=cal)
    charts = json.loads(re.search(r"const charts = (\[.*?\]);\n", page).group(1))
    assert len(charts) == 1
    sent = parse(base64.b64decode(charts[0]["overlay"]))
    np.testing.assert_array_equal(sent["sim_start"], f32(cal.simulate().ops.start))
    assert charts[0]["meta"]["overlay"]["pipeline_time"][0] == pytest.approx(measured.makespan)
    plain = json.loads(re.search(r"const charts = (\[.*?\]);\n", standalone_html(measured)).group(1))
    assert plain[0]["overlay"] == ""


def test_result_to_html_writes_the_overlay_too(measured, cal, tmp_path):
    page = (tmp_path / "overlay.html")
    measured.to_html(page, against=cal)
    charts = json.loads(re.search(r"const charts = (\[.*?\]);\n", page.read_text()).group(1))
    sent = parse(base64.b64decode(charts[0]["overlay"]))
    np.testing.assert_array_equal(sent["sim_end"], f32(cal.simulate().ops.end))


def test_the_static_picture_draws_the_simulation_under_each_bar(measured, cal):
    from ppviz.charts import overlay_chart, to_svg
    from ppviz.widgets.static import static_chart

    viewer = ppviz.show(measured, against=cal)
    chart = static_chart(viewer)
    spec = chart.to_dict()
    ghosts = next(layer for layer in spec["layer"] if layer.get("mark", {}).get("stroke") is not None
                  and "late" in json.dumps(layer.get("encoding", {})))
    rows = spec["datasets"][ghosts["data"]["name"]] if "name" in ghosts["data"] else ghosts["data"]["values"]
    simulated = cal.simulate()
    assert [r["start"] for r in rows] == pytest.approx(simulated.ops.start.tolist())
    late = measured.ops.end - simulated.ops.end
    assert [r["late"] for r in rows] == pytest.approx(late.tolist())
    assert f"{simulated.makespan:.4g} ms against {measured.makespan:.4g} ms measured" in json.dumps(spec["title"])
    assert "554.2 ms against 553.9 ms measured" in json.dumps(spec["title"])  # the shipped run's figures
    assert "<svg" in to_svg(overlay_chart(viewer.gantt.residuals))
    # without against, the picture is the plain Gantt chart
    plain = json.dumps(static_chart(ppviz.show(measured, controls=False)).to_dict())
    assert '"late"' not in plain and '"late"' in json.dumps(spec)
