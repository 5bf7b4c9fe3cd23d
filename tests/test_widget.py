"""The widget's Python side: the binary formats, the metrics it sends, show() and its controls."""

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ppviz
from ppviz.core.engine import dependencies
from ppviz.core.registry import all_specs
from ppviz.widgets import GanttWidget, Viewer, standalone_html
from ppviz.widgets.wire import (
    BYTES_PER_OP,
    FLAG_PAIR_B,
    FLAG_PAIR_F,
    FLAG_REVERSE,
    FLAG_WAITED,
    MEMORY_MAGIC,
    TIMELINE_MAGIC,
    describe,
    encode_memory,
    encode_timeline,
)

from .browser.programs import dualpipe_like



def parse_timeline(data: bytes) -> dict:
    """An independent reader of the layout in ARCHITECTURE.md, "Wire format"."""
    magic, version, n, p, widths, k = (int(x) for x in np.frombuffer(data, "<u4", count=6))
    mb_bytes, stage_bytes, dur_bytes, dep_bytes = widths & 0xFF, widths >> 8 & 0xFF, widths >> 16 & 0xFF, widths >> 24
    table = np.frombuffer(data, "<f4", count=k, offset=24)
    pos = 24 + 4 * k
    cols = {"offsets": np.frombuffer(data, "<u4", count=p + 1, offset=pos)}
    pos += 4 * (p + 1)
    unsigned = {1: "u1", 2: "<u2", 4: "<u4"}
    for name, dtype in (("start", "<f4"), ("dur", "<f4" if dur_bytes == 4 else unsigned[dur_bytes]),
                        ("dep", unsigned[dep_bytes]),
                        ("mb", unsigned[mb_bytes]), ("stage", unsigned[stage_bytes]), ("flags", "u1")):
        assert pos % 4 == 0, f"column {name} starts unaligned at {pos}"
        cols[name] = np.frombuffer(data, dtype, count=n, offset=pos)
        pos += cols[name].nbytes
        pos += -pos % 4
    if dur_bytes != 4:
        cols["dur"] = table[cols["dur"]]
    # a dependency is its rank among its microbatch's ops in program order (the width's largest
    # value for none)
    of_microbatch: dict[int, list[int]] = {}
    for k, j in enumerate(cols["mb"].tolist()):
        of_microbatch.setdefault(j, []).append(k)
    none = (1 << 8 * dep_bytes) - 1
    cols["dep"] = np.array([-1 if r == none else of_microbatch[j][r] for r, j in zip(cols["dep"].tolist(), cols["mb"].tolist())])
    t = int(np.frombuffer(data, "<u4", count=1, offset=pos)[0])  # the transfers section (tests/test_wire_golden.py)
    pos += 4
    for dtype in ("<f4", "<f4", "<f4", "<u4", "<u4", "<u2", "<u2", "u1"):
        pos += t * np.dtype(dtype).itemsize
        pos += -pos % 4
    assert pos == len(data)
    return {"magic": magic, "version": version, "n": n, "p": p, "transfers": t, "widths": (mb_bytes, stage_bytes, dur_bytes, dep_bytes),
            "table": table, **cols}


@pytest.mark.parametrize("config", [
    ppviz.Config(schedule="1f1b", devices=4, microbatches=8, comm=0.25),
    ppviz.Config(schedule="interleaved-1f1b", devices=4, microbatches=8, stages_per_device=2),
    ppviz.Config(schedule="zb-h1", devices=3, microbatches=6, f=1, b=1.5, w=0.5),
])
def test_timeline_bytes_hold_every_column(config):
    res = ppviz.simulate(config)
    t = parse_timeline(encode_timeline(res))
    ops = res.ops
    assert (t["magic"], t["version"], t["n"], t["p"]) == (TIMELINE_MAGIC, 5, len(ops), res.devices)
    np.testing.assert_array_equal(t["offsets"], res.program.offsets)
    np.testing.assert_allclose(t["start"], ops.start, rtol=1e-7)
    np.testing.assert_allclose(t["dur"], ops.end - ops.start, rtol=1e-7)
    np.testing.assert_array_equal(t["dep"], dependencies(res.program))
    np.testing.assert_array_equal(t["mb"], ops.microbatch)
    np.testing.assert_array_equal(t["stage"], ops.stage)
    np.testing.assert_array_equal(t["flags"] & 3, res.program.kind)
    np.testing.assert_array_equal((t["flags"] & FLAG_WAITED) > 0, ops.waited_for >= 0)
    waited = ops.waited_for >= 0
    np.testing.assert_array_equal(t["dep"][waited], ops.waited_for[waited])
    for d in range(res.devices):
        lane = slice(int(t["offsets"][d]), int(t["offsets"][d + 1]))
        assert np.all(np.diff(t["start"][lane]) >= 0), "the front end's culling needs sorted starts per device"


def test_a_simulated_timeline_costs_10_bytes_per_op():
    """u16 microbatches, u8 stages, durations as u8 indices into a table of the distinct ones and
    dependencies as u8 ranks in their microbatches."""
    res = ppviz.simulate(ppviz.Config(schedule="1f1b", devices=8, microbatches=512, f=1.5, b=2.25))
    n, p = len(res.ops), res.devices
    data = encode_timeline(res)
    t = parse_timeline(data)
    assert t["widths"] == (2, 1, 1, 1) and t["table"].tolist() == [1.5, 2.25 + res.config.w]  # F, and B = I + W
    assert len(data) == 24 + 4 * 2 + 4 * (p + 1) + 10 * n + 4
    np.testing.assert_array_equal(t["dur"], (res.ops.end - res.ops.start).astype(np.float32))


@pytest.mark.parametrize("case", ["measured", "microbatches", "stages", "distinct durations"])
def test_columns_widen_where_their_values_need_it(case):
    if case == "measured":  # each op its own duration: no table, f4 durations
        res, widths = ppviz.load_trace(ppviz.example_trace()), (2, 1, 4, 1)
    elif case == "microbatches":  # microbatch indices past 65535 need u32
        res, widths = ppviz.simulate(ppviz.Config(schedule="gpipe", devices=1, microbatches=70_000)), (4, 1, 1, 1)
    elif case == "stages":  # 512 stages need u16, and a microbatch's 1,024 ops u16 dependency ranks
        res, widths = ppviz.simulate(ppviz.Config(schedule="interleaved-1f1b", devices=2, stages_per_device=256,
                                                  microbatches=4)), (2, 2, 1, 2)
    else:  # a forward time per stage: 300 distinct durations need u16 indices
        res, widths = ppviz.simulate(ppviz.Config(schedule="interleaved-1f1b", devices=2, stages_per_device=150,
                                                  microbatches=4, stage_costs={s: {"f": 1 + s / 512} for s in range(300)})), \
            (2, 2, 2, 2)
    t = parse_timeline(encode_timeline(res))
    assert t["widths"] == widths
    assert BYTES_PER_OP == 19  # the widest layout
    np.testing.assert_array_equal(t["dur"], (res.ops.end - res.ops.start).astype(np.float32))
    np.testing.assert_array_equal(t["mb"], res.ops.microbatch)
    np.testing.assert_array_equal(t["stage"], res.ops.stage)
    np.testing.assert_array_equal(t["start"], res.ops.start.astype(np.float32))
    np.testing.assert_array_equal(t["dep"], res.dependencies)


def test_the_second_direction_of_a_bidirectional_placement_is_flagged():
    res = ppviz.simulate(ppviz.Config(schedule="dualpipe", devices=4, microbatches=10))
    t = parse_timeline(encode_timeline(res))
    up = (t["flags"] & FLAG_REVERSE) > 0
    # DualPipe's second half of the microbatches runs on the reverse replica: stage s on device p-1-s
    np.testing.assert_array_equal(up, res.ops.microbatch >= 5)
    np.testing.assert_array_equal(res.ops.device[up], 3 - res.ops.stage[up])
    np.testing.assert_array_equal(res.ops.device[~up], res.ops.stage[~up])
    one_way = parse_timeline(encode_timeline(ppviz.simulate(ppviz.Config(schedule="zb-v", devices=4, microbatches=8))))
    assert not (one_way["flags"] & FLAG_REVERSE).any()


def test_describe_gives_the_time_of_an_f_and_b_pair_where_the_program_has_pairs():
    dualpipe = dict(schedule="dualpipe", devices=4, microbatches=8, f=1, b=1.5, w=0.5)
    assert describe(ppviz.simulate(ppviz.Config(**dualpipe, fb=2.25)))["fb"] == 2.25
    assert describe(ppviz.simulate(ppviz.Config(**dualpipe)))["fb"] == 3.0  # by default f + b + w
    assert describe(ppviz.simulate(ppviz.Config(schedule="1f1b", fb=2.0)))["fb"] is None


def test_describe_gives_the_time_unit():
    assert describe(ppviz.simulate(ppviz.Config(time_unit="ms")))["time_unit"] == "ms"
    assert describe(ppviz.simulate(ppviz.Config()))["time_unit"] == ""


def test_pairs_are_flagged_on_both_ops():
    res = ppviz.simulate(dualpipe_like(4, 8))
    t = parse_timeline(encode_timeline(res))
    heads = np.flatnonzero(res.program.pair)
    assert len(heads) > 0
    np.testing.assert_array_equal(np.flatnonzero(t["flags"] & FLAG_PAIR_F), heads)
    np.testing.assert_array_equal(np.flatnonzero(t["flags"] & FLAG_PAIR_B), heads + 1)
    np.testing.assert_array_equal(t["start"][heads], t["start"][heads + 1])


def test_memory_bytes_hold_each_curve():
    res = ppviz.simulate(ppviz.Config(schedule="zb-h1", devices=4, microbatches=8))
    data = encode_memory(res)
    magic, version, p = np.frombuffer(data, "<u4", count=3)
    assert (magic, version, p) == (MEMORY_MAGIC, 5, 4)
    offsets = np.frombuffer(data, "<u4", count=p + 1, offset=12)
    k = int(offsets[-1])
    times = np.frombuffer(data, "<f4", count=k, offset=12 + 4 * (p + 1))
    values = np.frombuffer(data, "<f4", count=k, offset=12 + 4 * (p + 1) + 4 * k)
    for d in range(p):
        t, v = res.memory.curve(d)
        lane = slice(int(offsets[d]), int(offsets[d + 1]))
        np.testing.assert_allclose(times[lane], t, rtol=1e-7)
        np.testing.assert_allclose(values[lane], v, rtol=1e-6)


def test_describe_is_json_with_simulated_and_closed_form_figures():
    res = ppviz.simulate(ppviz.Config(schedule="1f1b", devices=4, microbatches=8))
    meta = json.loads(json.dumps(describe(res)))
    assert meta["makespan"] == res.makespan
    assert meta["rows"] == ["stage 0", "stage 1", "stage 2", "stage 3"]
    assert meta["closed_form"]["makespan"] == res.closed_form.makespan
    assert meta["closed_form"]["applies"] is True
    assert meta["peak_activation"] == list(res.peak_activation)
    custom = describe(ppviz.simulate(dualpipe_like(4, 8)))
    assert custom["closed_form"] is None
    assert custom["rows"][0] == "stages 0↓ 3↑"


def test_the_bundle_is_built_and_points_anywidget_at_a_file():
    path = Path(ppviz.__file__).parent / "static" / "widget.js"
    assert path.is_file(), "ppviz/static/widget.js is missing: run `npm run build` in js/ (pip install does it)"
    text = path.read_text()
    assert "export" in text and "ppviz-gantt" in text
    assert "https://" not in text and "http://" not in text, "the bundle must not fetch anything at run time"
    w = GanttWidget(ppviz.simulate(ppviz.Config()))
    assert "ppviz-gantt" in str(w._esm)


def test_show_accepts_config_program_and_result():
    cfg = ppviz.Config(schedule="zb-h1", devices=4, microbatches=8)
    for x in (cfg, ppviz.simulate(cfg), dualpipe_like(4, 8)):
        viewer = ppviz.show(x)
        assert isinstance(viewer, Viewer)
        assert viewer.gantt._meta["ops"] == len(viewer.result.ops)
        assert viewer.gantt._timeline == encode_timeline(viewer.result)


def test_show_without_controls_is_just_the_chart():
    viewer = ppviz.show(ppviz.Config(), controls=False)
    assert viewer.controls is None
    assert list(viewer.children) == [viewer.gantt]


def test_show_takes_one_run_and_rejects_other_things_clearly():
    assert ppviz.show("zb-h1", controls=False).result.makespan == 27  # a name runs at the default sizes
    with pytest.raises(ppviz.ConfigError, match="run=42: an int is not a run; give a ppviz.Config, Program or Result"):
        ppviz.show(42)
    with pytest.raises(ppviz.UnknownScheduleError):
        ppviz.show("zb-h3")


def test_controls_resimulate_and_redraw():
    viewer = ppviz.show(ppviz.Config(schedule="1f1b", devices=4, microbatches=8))
    fields = viewer.controls.fields
    fields["devices"].value = 6
    assert viewer.result.devices == 6
    assert viewer.gantt._meta["devices"] == 6
    fields["microbatches"].value = 12
    fields["comm"].value = 0.5
    assert viewer.result.config.microbatches == 12
    assert viewer.gantt._meta["comm"] == 0.5
    assert parse_timeline(viewer.gantt._timeline)["n"] == len(viewer.result.ops)


def test_a_cost_shows_the_formatters_text_and_runs_its_full_value():
    # Config.from_model's costs have many digits: the box showed 41.522575225, clipped
    viewer = ppviz.show(ppviz.Config(devices=4, microbatches=8, f=41.522575225, b=83.04, w=40.1, time_unit="ms"))
    f = viewer.controls.fields["f"]
    assert f.box.value == "41.5 ms" and f.value == viewer.config.f == 41.522575225
    assert viewer.controls.fields["b"].box.value == "83 ms"
    before = viewer.result
    f.box.value = " 41.5 ms "  # what it shows, sent back (a blur, an Enter): nothing runs
    assert viewer.result is before and viewer.config.f == 41.522575225
    f.box.value = "42"  # another number, with or without the unit, runs
    assert viewer.config.f == 42.0 and f.box.value == "42 ms"
    f.box.value = "1,250.5 ms"
    assert viewer.config.f == 1250.5 and f.box.value == "1,251 ms"
    f.box.value = "fast"
    assert viewer.config.f == 1250.5 and f.box.value == "1,251 ms"
    assert viewer.gantt.error == "f='fast' is not accepted; give a number, e.g. 1.5 ms"
    f.box.value = "-1"  # a number the config refuses: its refusal, the box back to the run's
    assert viewer.config.f == 1250.5 and f.box.value == "1,251 ms" and "f=-1" in viewer.gantt.error


def test_with_a_topology_the_comm_control_is_off_and_says_why():
    viewer = ppviz.show(ppviz.Config(devices=4, microbatches=8, topology="dgx-h100", comm_bytes=64e6, time_unit="s",
                                     f=2e-3, b=2e-3, w=2e-3))
    comm = viewer.controls.fields["comm"]
    assert comm.disabled and comm.box.value == "topology"
    assert "each transfer costs its link's latency" in comm.box.tooltip
    assert viewer.controls.fields["f"].box.value == "0.002 s" and not viewer.controls.fields["f"].disabled
    # without one it is a number again
    plain = ppviz.show(ppviz.Config(devices=4, microbatches=8, comm=0.25))
    assert not plain.controls.fields["comm"].disabled and plain.controls.fields["comm"].box.value == "0.25"


def test_switching_schedule_picks_a_valid_v():
    viewer = ppviz.show(ppviz.Config(schedule="1f1b", devices=4, microbatches=8))
    controls = viewer.controls
    assert controls.fields["stages_per_device"].disabled
    controls.schedule.value = "interleaved-1f1b"
    assert viewer.gantt.error == ""
    assert viewer.result.config.schedule == "interleaved-1f1b"
    assert viewer.result.config.stages_per_device >= 2
    assert not controls.fields["stages_per_device"].disabled
    controls.schedule.value = "gpipe"
    assert viewer.result.config.stages_per_device == 1


def controls_config(viewer) -> dict:
    """What the controls show, as Config fields."""
    shown = {name: field.value for name, field in viewer.controls.fields.items()}
    return {"schedule": viewer.controls.schedule.value, **shown}


def config_fields(config) -> dict:
    return {"schedule": config.schedule, "devices": config.devices, "microbatches": config.microbatches,
            "stages_per_device": config.stages_per_device, "f": config.f, "b": config.b, "w": config.w,
            "comm": config.comm}


def test_an_invalid_combination_shows_the_error_keeps_the_chart_and_puts_the_controls_back():
    viewer = ppviz.show(ppviz.Config(schedule="interleaved-1f1b", devices=4, microbatches=8, stages_per_device=2))
    viewer.controls.fields["f"].value = 0
    viewer.controls.fields["b"].value = 0
    before = viewer.result
    viewer.controls.fields["w"].value = 0
    assert "f+b+w" in viewer.gantt.error
    assert viewer.result is before
    assert viewer.controls.fields["w"].value == 1.0
    assert controls_config(viewer) == config_fields(viewer.result.config)
    viewer.controls.fields["microbatches"].value = 12
    assert viewer.gantt.error == ""
    assert viewer.result.config.microbatches == 12 and viewer.result.config.w == 1.0


@pytest.mark.parametrize("name, value, words", [
    ("stages_per_device", 1, "use v >= 2"),  # the schedule refuses v
    ("microbatches", 10**6, "over the budget"),  # the size budget refuses it before any work
    ("devices", 5, None),  # accepted: the control for comparison
])
def test_a_refused_control_change_never_escapes_and_the_controls_show_the_config_on_display(name, value, words):
    viewer = ppviz.show(ppviz.Config(schedule="interleaved-1f1b", devices=4, microbatches=8, stages_per_device=2))
    viewer.controls.fields[name].value = value  # an observer's exception would propagate here
    assert controls_config(viewer) == config_fields(viewer.result.config)
    if words is None:
        assert getattr(viewer.result.config, name) == value and viewer.gantt.error == ""
    else:
        assert words in viewer.gantt.error and viewer.gantt.busy == ""
        assert viewer.result.config == ppviz.Config(schedule="interleaved-1f1b", devices=4, microbatches=8,
                                                    stages_per_device=2)
        assert viewer.gantt._meta["microbatches"] == 8 and viewer.gantt._meta["stages_per_device"] == 2


def test_a_schedule_the_sizes_refuse_snaps_the_dropdown_back():
    viewer = ppviz.show(ppviz.Config(schedule="1f1b", devices=5, microbatches=10))
    viewer.controls.schedule.value = "dualpipe"  # needs an even p
    assert "even number of devices" in viewer.gantt.error
    assert viewer.controls.schedule.value == "1f1b" and viewer.result.config.schedule == "1f1b"
    assert controls_config(viewer) == config_fields(viewer.result.config)


def test_running_out_of_memory_is_a_refusal_shown_in_the_chart(monkeypatch):
    # fault injection: the kernel's allocator failing inside simulate (a real one takes seconds and GBs)
    import ppviz.widgets.viewer as viewer_module

    def out_of_memory(*args, **kwargs):
        raise MemoryError

    viewer = ppviz.show(ppviz.Config(schedule="1f1b", devices=4, microbatches=8))
    monkeypatch.setattr(viewer_module, "simulate", out_of_memory)
    viewer.controls.fields["microbatches"].value = 4000
    assert "ran out of memory" in viewer.gantt.error and "m=4000" in viewer.gantt.error
    assert viewer.controls.fields["microbatches"].value == 8 and viewer.result.config.microbatches == 8
    with pytest.raises(ppviz.ConfigError, match="ran out of memory"):
        viewer.update(microbatches=4000)


def test_update_moves_the_controls_and_returns_the_viewer_or_raises_the_refusal():
    viewer = ppviz.show(ppviz.Config(schedule="zb-h1", devices=4, microbatches=8))
    assert viewer.update(microbatches=16, comm=0.5) is viewer
    assert viewer.result.config.microbatches == 16 and viewer.config.comm == 0.5
    assert controls_config(viewer) == config_fields(viewer.result.config)
    assert viewer.gantt._meta["microbatches"] == 16
    with pytest.raises(ppviz.ScheduleConstraintError, match="dualpipe needs an even number"):
        viewer.update(schedule="dualpipe", devices=5)
    assert "even number" in viewer.gantt.error
    assert viewer.result.config.microbatches == 16 and controls_config(viewer)["schedule"] == "zb-h1"
    with pytest.raises(ppviz.ArgumentError, match=r"micro_batches=4: Config\(\) has no such argument; did you mean "
                                                  r"'microbatches'"):
        viewer.update(micro_batches=4)
    viewer.update(schedule="interleaved-1f1b", stages_per_device=2)
    assert controls_config(viewer)["schedule"] == "interleaved-1f1b"
    assert not viewer.controls.fields["stages_per_device"].disabled


def test_a_slow_change_shows_the_busy_state_before_its_result():
    viewer = ppviz.show(ppviz.Config(schedule="1f1b", devices=8, microbatches=16))
    seen = []
    viewer.gantt.observe(lambda change: seen.append((change["new"], viewer.gantt._meta["microbatches"])), names="busy")
    viewer.controls.fields["microbatches"].value = 24  # 384 ops: quick, no busy state
    assert seen == []
    viewer.controls.fields["microbatches"].value = 20_000  # 320,000 ops: about half a second
    # busy was shown while the old chart was still on display, and cleared with the new result
    assert seen == [("simulating 320,000 ops…", 24), ("", 20_000)]
    assert viewer.gantt.busy == ""


def test_the_widget_refuses_more_devices_or_chunks_than_it_draws():
    viewer = ppviz.show(ppviz.Config(schedule="1f1b", devices=4, microbatches=8))
    with pytest.raises(ppviz.ConfigError, match="the widget draws at most 1024"):
        viewer.update(devices=2000, microbatches=1)
    assert viewer.result.devices == 4


def test_program_controls_keep_the_program_and_change_costs():
    prog = dualpipe_like(4, 8)
    viewer = ppviz.show(prog)
    assert viewer.controls.schedule.disabled
    assert viewer.controls.fields["devices"].disabled
    viewer.controls.fields["b"].value = 2.0
    assert viewer.result.program is prog
    assert viewer.result.config.b == 2.0


def test_selection_is_mirrored_on_the_viewer_and_reset_when_out_of_range():
    viewer = ppviz.show(ppviz.Config(schedule="1f1b", devices=4, microbatches=8))
    seen = []
    viewer.observe(lambda change: seen.append(change["new"]), names="selected_microbatch")
    viewer.gantt.selected_microbatch = 7
    assert viewer.selected_microbatch == 7 and seen == [7]
    viewer.controls.fields["microbatches"].value = 4
    assert viewer.gantt.selected_microbatch == -1


def test_standalone_page_cannot_be_broken_out_of_by_user_text():
    label = "</script><script>alert(1)</script>"
    page = standalone_html(ppviz.Config(label=label))
    assert "</script><script>alert(1)" not in page
    assert page.count("</script>") == 1


def test_device_selection_and_time_window_are_traits_reset_with_new_data():
    viewer = ppviz.show(ppviz.Config(schedule="1f1b", devices=6, microbatches=8))
    gantt = viewer.gantt
    gantt.selected_device = 5
    gantt.time_window = [2.0, 9.5]
    assert viewer.selected_device == 5
    with pytest.raises(ppviz.ConfigError, match=r"\[t0, t1\]"):
        gantt.time_window = [3.0, 3.0]
    with pytest.raises(ppviz.ConfigError):
        gantt.time_window = [1.0]
    assert gantt.time_window == [2.0, 9.5]
    viewer.controls.fields["devices"].value = 4
    assert gantt.selected_device == -1 and gantt.time_window == []
    # a chart with nothing to draw says why
    empty = GanttWidget(None, _meta={"title": "dualpipe"}, error="devices=5: needs an even number")
    assert empty.result is None and empty._timeline == b"" and empty.error.startswith("devices=5")


CONTROL_CHANGES = st.lists(st.one_of(
    st.tuples(st.just("schedule"), st.sampled_from([s.name for s in all_specs() if s.builder is not None])),
    st.tuples(st.just("devices"), st.integers(1, 1024)),
    st.tuples(st.just("microbatches"), st.integers(1, 10**9)),
    st.tuples(st.just("stages_per_device"), st.integers(1, 64)),
    st.tuples(st.sampled_from(["f", "b", "w", "comm"]), st.floats(0, 1e6, allow_nan=False)),
), min_size=1, max_size=6)


@settings(max_examples=40)
@given(changes=CONTROL_CHANGES)
def test_any_sequence_of_control_changes_leaves_controls_chart_and_result_agreeing(changes):
    ppviz.set_budget(max_ops=5_000)  # keeps every accepted run small; the rest is refused before work
    try:
        viewer = ppviz.show(ppviz.Config(schedule="1f1b", devices=2, microbatches=4))
        for name, value in changes:
            before = viewer.result
            target = viewer.controls.schedule if name == "schedule" else viewer.controls.fields[name]
            target.value = value  # nothing may escape the observer
            result = viewer.result
            assert controls_config(viewer) == config_fields(result.config)
            assert viewer.gantt.busy == ""
            assert viewer.gantt._meta["ops"] == len(result.ops)
            assert parse_timeline(viewer.gantt._timeline)["n"] == len(result.ops)
            if result is before:
                # refused, or no change at all (a value the control already showed)
                assert viewer.gantt.error != "" or getattr(result.config, name) == value
            else:
                assert viewer.gantt.error == ""
    finally:
        ppviz.set_budget(None)
