"""Activation offload to host memory (``Config.offload``, ``ppviz.core.offload``).

Hand-computed small runs (every copy's start and end, every op's time, the exact peaks), the
queueing of copies on one host link, the reference simulator in ``tests/oracle.py`` on random
configs, properties (an infinitely fast link changes no time and never raises memory), the
refusals, the metrics fast path, and real units from a model and a machine.
"""

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import ppviz
from ppviz import Config, ConfigError, Link, Offload, simulate
from ppviz.core import metrics as fast
from ppviz.core.registry import lookup
from ppviz.widgets.wire import describe

from . import oracle
from .test_oracle import assert_curves_match
from .test_oracle import configs as oracle_configs

INF = Link(0.0, bandwidth=math.inf)


def gpipe(link, m=4, **options):
    return Config(schedule="gpipe", devices=2, microbatches=m, offload=Offload(1.0, link=link), **options)


def times(res, device, kind):
    o = res.ops
    sel = (o.device == device) & (o.kind == kind)
    order = np.argsort(o.microbatch[sel])
    return o.start[sel][order].tolist(), o.end[sel][order].tolist()


def copies(res, device, kind):
    h = res.host_copies
    sel = (h.device == device) & (h.kind == kind)
    order = np.argsort(h.microbatch[sel])
    return (h.ready[sel][order].tolist(), h.start[sel][order].tolist(), h.end[sel][order].tolist())


# Hand-computed runs -----------------------------------------------------------------------------
#
# GPipe, p = 2, m = 4, f = b = w = 1 (B = 2), one activation unit per F, 1 byte per unit.
# Without offload: device 0 runs F0..F3 in [0, 4] and B0..B3 in [7, 15]; device 1 F0..F3 in
# [1, 5], B0..B3 in [5, 13]; makespan 15 and each device holds all 4 activations at t = 3 (4).


def test_bare_gpipe_reference_figures():
    res = simulate(Config(schedule="gpipe", devices=2, microbatches=4))
    assert res.makespan == 15.0
    assert res.peak_activation.tolist() == [4.0, 4.0]
    assert len(res.host_copies) == 0


def test_a_link_that_keeps_up_changes_no_time_and_lowers_the_peak():
    # bandwidth 1 byte per time unit: each copy lasts 1. Device 0: offloads [1,2] [2,3] [3,4] [4,5];
    # the reload of mb 0 is issued at the start of F3 (3), the action before B0, and lasts [3, 4];
    # the reload of mb k+1 at the start of Bk: [7,8], [9,10], [11,12]. At t = 3 the device holds
    # F2 (its offload ends at 4), F3 and the reloaded mb 0: 3, its peak.
    res = simulate(gpipe(Link(0.0, bandwidth=1.0)))
    bare = simulate(Config(schedule="gpipe", devices=2, microbatches=4))
    assert res.makespan == 15.0
    np.testing.assert_array_equal(res.ops.start, bare.ops.start)
    np.testing.assert_array_equal(res.ops.end, bare.ops.end)
    assert copies(res, 0, "offload") == ([1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [2.0, 3.0, 4.0, 5.0])
    assert copies(res, 0, "reload") == ([3.0, 7.0, 9.0, 11.0], [3.0, 7.0, 9.0, 11.0], [4.0, 8.0, 10.0, 12.0])
    # device 1: F's in [1,5], offloads [2,3]..[5,6]; reloads issued at F3's start (4) and B0..B2's
    # starts (5, 7, 9), each the moment its offload is done or later
    assert copies(res, 1, "offload") == ([2.0, 3.0, 4.0, 5.0], [2.0, 3.0, 4.0, 5.0], [3.0, 4.0, 5.0, 6.0])
    assert copies(res, 1, "reload") == ([4.0, 5.0, 7.0, 9.0], [4.0, 5.0, 7.0, 9.0], [5.0, 6.0, 8.0, 10.0])
    assert res.peak_activation.tolist() == [3.0, 3.0]
    assert res.host_copies.bytes.tolist() == [1.0] * 16
    # the curve of device 0, point by point (an instant whose events cancel out is no point)
    t, v = res.memory.curve(0)
    assert list(zip(t.tolist(), v.tolist())) == [(0.0, 1.0), (1.0, 2.0), (3.0, 3.0), (4.0, 2.0), (5.0, 1.0),
                                                 (7.0, 2.0), (13.0, 1.0), (15.0, 0.0)]


def test_an_infinitely_fast_link_frees_each_activation_until_the_action_before_its_backward():
    res = simulate(gpipe(INF))
    assert res.makespan == 15.0
    # device 0 holds F3 and the reloaded mb 0 during F3, then one reloaded activation beside
    # the one its backward is using
    assert res.peak_activation.tolist() == [2.0, 2.0]
    t, v = res.memory.curve(0)
    assert list(zip(t.tolist(), v.tolist())) == [(0.0, 1.0), (3.0, 2.0), (4.0, 1.0), (7.0, 2.0), (13.0, 1.0),
                                                 (15.0, 0.0)]
    assert res.memory.at(3.5).tolist() == [2.0, 1.0]
    assert res.memory.at(2.5).tolist() == [1.0, 1.0]


def test_a_slow_link_delays_each_backward_by_exactly_its_reload_wait():
    # bandwidth 0.25: each copy lasts 4, so the offloads queue on the device-to-host link:
    # device 0's are ready at 1, 2, 3, 4 and run [1,5] [5,9] [9,13] [13,17]
    res = simulate(gpipe(Link(0.0, bandwidth=0.25)))
    assert copies(res, 0, "offload") == ([1.0, 2.0, 3.0, 4.0], [1.0, 5.0, 9.0, 13.0], [5.0, 9.0, 13.0, 17.0])
    assert copies(res, 1, "offload") == ([2.0, 3.0, 4.0, 5.0], [2.0, 6.0, 10.0, 14.0], [6.0, 10.0, 14.0, 18.0])
    # device 1: mb 0's reload is issued at 4 (F3 starts) but its offload ends at 6: [6, 10];
    # B0 could start at 5 and starts at 10, 5 later; each next reload is issued when the
    # backward before it starts, once its offload is done: [10,14] [14,18] [18,22]
    assert copies(res, 1, "reload") == ([4.0, 10.0, 14.0, 18.0], [6.0, 10.0, 14.0, 18.0], [10.0, 14.0, 18.0, 22.0])
    assert times(res, 1, "B") == ([10.0, 14.0, 18.0, 22.0], [12.0, 16.0, 20.0, 24.0])
    # device 0: B_k waits for device 1's B_k (12, 16, 20, 24) and its reload ([5,9], then issued
    # at B_{k-1}'s start: [12,16], [16,20], [20,24])
    assert copies(res, 0, "reload") == ([3.0, 12.0, 16.0, 20.0], [5.0, 12.0, 16.0, 20.0], [9.0, 16.0, 20.0, 24.0])
    assert times(res, 0, "B") == ([12.0, 16.0, 20.0, 24.0], [14.0, 18.0, 22.0, 26.0])
    assert res.makespan == 26.0
    # the forwards are not held up by the copies (a separate copy engine)
    assert times(res, 0, "F") == ([0.0, 1.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0])
    # nothing leaves device 0 before t = 5, so it still holds all four activations at t = 3
    assert res.peak_activation.tolist() == [4.0, 4.0]
    # the waits for reloads are idle time spent on communication: device 1 waits 5 + 2 + 2 + 2;
    # its other idle time is the fill (1) and the end after its last backward (2)
    assert res.idle[1] == 14.0
    assert res.exposed_comm[1] == 11.0
    assert "backwards wait" in res.summary()


def test_copies_of_one_device_queue_in_order_and_directions_do_not_block_each_other():
    res = simulate(gpipe(Link(0.0, bandwidth=0.25)))
    h = res.host_copies
    for d in (0, 1):
        for kind in ("offload", "reload"):
            sel = (h.device == d) & (h.kind == kind)
            s, e = h.start[sel], h.end[sel]
            order = np.argsort(s)
            # one copy at a time on each direction of a device's link, never idle while one waits
            assert (s[order][1:] >= e[order][:-1]).all()
        # an offload and a reload of one device overlap in time: the two directions are separate links
        off = (h.device == d) & (h.kind == "offload")
        rel = (h.device == d) & (h.kind == "reload")
        assert any(a < y and x < b for a, b in zip(h.start[off], h.end[off]) for x, y in zip(h.start[rel], h.end[rel]))
    assert h.queued[(h.device == 0) & (h.kind == "offload")].tolist() == [0.0, 3.0, 6.0, 9.0]


def test_latency_and_bandwidth_both_count():
    # latency 0.5 + 1 byte / 2 bytes per unit = 1, the same copies as bandwidth 1
    a = simulate(gpipe(Link(0.5, bandwidth=2.0)))
    b = simulate(gpipe(Link(0.0, bandwidth=1.0)))
    np.testing.assert_array_equal(a.host_copies.start, b.host_copies.start)
    np.testing.assert_array_equal(a.host_copies.end, b.host_copies.end)
    assert a.peak_activation.tolist() == b.peak_activation.tolist() == [3.0, 3.0]


def test_a_share_offloads_that_share():
    # α = 0.5 over an infinitely fast link: 0.5 of each activation stays; device 0 at t = 3 holds
    # 0.5 (F0) + 0.5 (F1) + 0.5 (F2) + 1 (F3) + 0.5 (mb 0's reloaded half) = 3
    res = simulate(gpipe(INF).replace(offload=Offload(0.5, link=INF)))
    assert res.peak_activation.tolist() == [3.0, 3.0]
    assert res.host_copies.bytes.tolist() == [0.5] * 16
    assert res.makespan == 15.0


def test_1f1b_offloads_only_what_waits_behind_another_action():
    # 1F1B, p = 2, m = 4: device 1 (the last stage) runs each F right before its B, so nothing is
    # offloaded there; device 0 runs F0 F1 B0 F2 B1 F3 B2 B3 and offloads all four
    res = simulate(Config(schedule="1f1b", devices=2, microbatches=4, offload=Offload(1.0, link=INF)))
    h = res.host_copies
    assert set(h.device.tolist()) == {0}
    assert sorted(h.microbatch[h.kind == "offload"].tolist()) == [0, 1, 2, 3]
    bare = simulate(Config(schedule="1f1b", devices=2, microbatches=4))
    assert res.makespan == bare.makespan == 15.0
    # device 0 reloads mb 0 when F1 starts (the action before B0), so its peak stays 2: with a
    # one-action lookahead 1F1B at p = 2 gains nothing at its peak; it holds 1 instead of 2 while
    # B0 waits for device 1 (F0 offloaded at 1, F1 at 2)
    assert bare.peak_activation.tolist() == res.peak_activation.tolist() == [2.0, 1.0]
    t, v = res.memory.curve(0)
    assert list(zip(t.tolist(), v.tolist())) == [(0.0, 1.0), (1.0, 2.0), (2.0, 1.0), (6.0, 2.0), (7.0, 1.0),
                                                 (9.0, 2.0), (12.0, 1.0), (15.0, 0.0)]
    assert bare.memory.at(3.0).tolist() == [2.0, 1.0]
    assert res.memory.at(3.0).tolist() == [1.0, 1.0]


def test_offload_in_seconds_converts_to_the_time_unit():
    # 64 MB per activation over 64 GB/s: 1 ms per copy
    link = Link(0.0, bandwidth=64e9, unit="s")
    cfg = gpipe(link, time_unit="ms", activation_bytes=64e6)
    res = simulate(cfg)
    assert copies(res, 0, "offload")[2] == [2.0, 3.0, 4.0, 5.0]
    assert res.peak_activation.tolist() == [3.0, 3.0]
    assert res.host_copies.bytes.tolist() == [64e6] * 16


# Oracle and properties --------------------------------------------------------------------------


@st.composite
def offload_configs(draw):
    cfg = draw(oracle_configs())
    # the vocabulary passes' schedules refuse offload (tests/test_vocab.py checks the refusal)
    assume(not lookup(cfg.schedule).forward_only and not lookup(cfg.schedule).vocab_barriers)
    alpha = draw(st.sampled_from([0.25, 0.5, 1.0]) | st.floats(0.01, 1.0))
    link = Link(draw(st.sampled_from([0.0, 0.1, 0.5])), bandwidth=draw(st.sampled_from([0.5, 1.0, 2.0, 8.0, math.inf])))
    return cfg.replace(offload=Offload(alpha, link=link))


def assert_copies_match(h, ref):
    """Result.host_copies against the reference's copies {(device, stage, mb, kind): (start, end)}
    and its reloads' holds {(device, stage, mb): held}."""
    got = {(int(d), int(s), int(mb), str(k)): (float(a), float(b))
           for d, s, mb, k, a, b in zip(h.device, h.stage, h.microbatch, h.kind, h.start, h.end)}
    assert got.keys() == ref.copies.keys()
    for key, (a, b) in got.items():
        assert math.isclose(a, ref.copies[key][0], rel_tol=1e-9, abs_tol=1e-9)
        assert math.isclose(b, ref.copies[key][1], rel_tol=1e-9, abs_tol=1e-9)
    for d, s, mb, kind, held in zip(h.device, h.stage, h.microbatch, h.kind, h.held):
        want = ref.held[(int(d), int(s), int(mb))] if kind == "reload" else 0.0
        assert math.isclose(held, want, rel_tol=1e-9, abs_tol=1e-9)


@settings(max_examples=80, deadline=None)
@given(offload_configs())
def test_matches_the_reference_simulator(cfg):
    res = simulate(cfg)
    ref = oracle.run_offload(res.program, cfg)
    np.testing.assert_allclose(res.ops.start, ref.start, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(res.ops.end, ref.end, rtol=1e-9, atol=1e-9)
    assert math.isclose(res.makespan, ref.makespan, rel_tol=1e-9, abs_tol=1e-9)
    np.testing.assert_allclose(res.peak_activation, ref.peak_activation, rtol=1e-9, atol=1e-9)
    assert_curves_match(res.memory, ref.curves)
    assert_copies_match(res.host_copies, ref)


@settings(max_examples=80, deadline=None)
@given(offload_configs())
def test_an_infinitely_fast_link_keeps_every_time_and_never_raises_memory(cfg):
    cfg = cfg.replace(offload=Offload(cfg.offload.share, link=INF))
    bare = simulate(cfg.replace(offload=None))
    res = simulate(cfg)
    assert res.makespan == bare.makespan
    np.testing.assert_array_equal(res.ops.start, bare.ops.start)
    np.testing.assert_array_equal(res.ops.end, bare.ops.end)
    assert (res.peak_activation <= bare.peak_activation + 1e-9 * np.maximum(1.0, bare.peak_activation)).all()


@settings(max_examples=40, deadline=None)
@given(offload_configs())
def test_copies_only_slow_a_run_down(cfg):
    bare = simulate(cfg.replace(offload=None))
    res = simulate(cfg)
    assert res.makespan >= bare.makespan
    assert (res.ops.start >= bare.ops.start - 1e-9).all()
    # every reload ends before its backward starts; every offload starts after its F ends
    h = res.host_copies
    rel = h.kind == "reload"
    assert (res.ops.start[h.op[rel]] >= h.end[rel]).all()
    off = ~rel
    assert (h.start[off] >= res.ops.end[h.op[off]]).all()


# Bare configs, the fast path, refusals -------------------------------------------------------------


def test_offload_zero_is_no_offload_bit_for_bit():
    cfg = Config(schedule="zb-h1", devices=4, microbatches=8, offload=Offload(0, link=Link(0.0, bandwidth=1.0)))
    assert cfg.offload is None
    assert cfg == Config(schedule="zb-h1", devices=4, microbatches=8)
    assert fast.modelled(cfg)


def test_the_metrics_fast_path_sends_offload_configs_to_simulate():
    cfg = Config(schedule="interleaved-1f1b", devices=4, microbatches=8, offload=Offload(0.7, link=Link(0.1, bandwidth=0.5)))
    assert not fast.modelled(cfg)
    got, want = fast.metrics(cfg), simulate(cfg)
    assert got.makespan == want.makespan
    np.testing.assert_array_equal(got.peak_activation, want.peak_activation)
    many = fast.metrics_many([cfg, cfg.replace(offload=None)])
    assert many[0].makespan == want.makespan
    assert many[1].makespan == simulate(cfg.replace(offload=None)).makespan
    assert want.makespan > many[1].makespan  # a slow link shows in the fast path's numbers too


@pytest.mark.parametrize("make, field", [
    (lambda: Offload(1.5, link=INF), "share"),
    (lambda: Offload(-0.1, link=INF), "share"),
    (lambda: Offload(True, link=INF), "share"),
    (lambda: Offload(math.nan, link=INF), "share"),
    (lambda: Offload(1.0, link="pcie"), "link"),
    (lambda: Offload(1.0, link=ppviz.Topology(8, intra=INF, inter=INF)), "link"),
    # a bare share says nothing of the link its copies cross
    (lambda: Config(schedule="1f1b", devices=2, microbatches=4, offload=1.0), "offload"),
    (lambda: Config(schedule="1f1b", devices=2, microbatches=4,
                    offload=Offload(1.0, link=Link(0.0, bandwidth=64e9, unit="s"))), "time_unit"),
])
def test_invalid_offload_is_refused_naming_the_field(make, field):
    with pytest.raises(ConfigError) as err:
        make()
    assert err.value.field == field


def test_an_offload_without_its_link_is_a_wrong_call():
    with pytest.raises(ppviz.ArgumentError, match="Offload\\(\\) needs link"):
        Offload(1.0)


def test_forward_only_and_lockstep_are_refused():
    with pytest.raises(ConfigError, match="forward-only"):
        Config(schedule="inference", devices=2, microbatches=4, offload=Offload(1.0, link=INF))
    with pytest.raises(ConfigError, match="events"):
        simulate(gpipe(INF), engine="lockstep")


# Real units ---------------------------------------------------------------------------------------


def test_hardware_presets_carry_pcie_per_direction():
    h100 = ppviz.Hardware.preset("h100-sxm")
    assert h100.host_gbps == 64.0
    assert h100.host_link == Link(0.0, bandwidth=64e9, unit="s")
    assert ppviz.Hardware.preset("a100-80gb").host_gbps == 32.0
    assert ppviz.Hardware.preset("b200").host_link is None
    with pytest.raises(ConfigError):
        ppviz.Hardware(peak_tflops=1.0, memory_gib=1.0, host_gbps=0.0)


def test_from_model_offloads_real_bytes_over_pcie():
    model = ppviz.Transformer.preset("llama-3-70b")
    gpu = ppviz.Hardware.preset("h100-sxm")
    opts = dict(schedule="gpipe", devices=8, microbatches=16, tensor_parallel=8, data_parallel=4, zero_stage=1)
    bare = Config.from_model(model, gpu, **opts)
    cfg = Config.from_model(model, gpu, **opts, offload=1.0)
    assert cfg.offload == Offload(1.0, link=gpu.host_link)
    res, ref = simulate(cfg), simulate(bare)
    h = res.host_copies
    stage0 = h.stage == 0
    act0 = cfg.stage_costs[0]["activation"] * cfg.activation_bytes
    np.testing.assert_allclose(h.bytes[stage0], act0)
    # a copy lasts bytes / 64 GB/s, in ms
    np.testing.assert_allclose(h.duration[stage0], act0 / 64e9 * 1e3)
    assert (res.peak_memory_bytes < ref.peak_memory_bytes).all()
    assert res.makespan >= ref.makespan
    with pytest.raises(ConfigError) as err:
        Config.from_model(model, ppviz.Hardware.preset("b200"), **opts, offload=1.0)
    assert err.value.field == "offload" and "has no host link bandwidth" in str(err.value)


def test_the_chrome_trace_shows_every_host_copy_and_what_each_reload_holds_up(tmp_path):
    import json

    # a slow host link: copies queue, and some backwards wait for their reloads
    res = simulate(gpipe(Link(0.0, bandwidth=0.5), m=4))
    path = tmp_path / "offload.json"
    res.to_chrome_trace(path)
    events = json.loads(path.read_text(encoding="utf-8"))["traceEvents"]
    h, p = res.host_copies, res.devices
    threads = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    assert all(threads[2 * p + d] == f"device {d}: host copies" for d in range(p))
    shown = [e for e in events if e.get("cat") == "host copy" and e["ph"] == "X"]
    assert len(shown) == len(h) == 2 * 2 * 4  # an offload and a reload per device and microbatch
    for e, i in zip(shown, range(len(h))):
        kind, stage, mb, op = str(h.kind[i]), int(h.stage[i]), int(h.microbatch[i]), int(h.op[i])
        assert e["tid"] == 2 * p + int(h.device[i])
        assert e["name"] == f"{kind} {stage}F{mb} {'→' if kind == 'offload' else '←'} host"
        assert e["ts"] == pytest.approx(h.start[i] * 1000) and e["dur"] == pytest.approx((h.end[i] - h.start[i]) * 1000)
        assert e["args"]["queued for the link"] == pytest.approx((h.start[i] - h.ready[i]) * 1000)
        assert e["args"]["after" if kind == "offload" else "for"] == res.program.action_at(op)
        assert e["args"].get("held up its backward") == (None if kind == "offload" else pytest.approx(h.held[i] * 1000))
    assert any(e["args"]["queued for the link"] > 0 for e in shown)
    # each reload's arrow ends where its backward starts, on the backward's device
    ends = {e["id"]: e for e in events if e.get("cat") == "host copy" and e["ph"] == "f"}
    reloads = np.flatnonzero(h.kind == "reload")
    assert len(ends) == len(reloads)
    for i in reloads:
        end = ends[len(res.transfers) + int(i)]
        assert end["tid"] == int(h.device[i]) and end["ts"] == pytest.approx(res.ops.start[h.op[i]] * 1000)
    # read back, the trace is the ops alone, at their times
    back = ppviz.load_trace(path)
    assert len(back.program) == len(res.program) and back.makespan == pytest.approx(res.makespan)


def test_without_activation_bytes_the_copies_are_counted_in_activation_units_not_bytes():
    # before, the summary read "12 bytes each way" and "2 bytes per time unit" for 12 activation units
    link = ppviz.Link(0.1, bandwidth=2.0)
    result = ppviz.simulate(ppviz.Config("1f1b", devices=4, microbatches=8, offload=Offload(0.5, link=link)))
    moved = float(result.host_copies.bytes[result.host_copies.kind == "offload"].sum())
    assert moved == 12.0  # 24 offloads of half an activation unit
    text = result.summary()
    assert "latency 0.1 time unit, 2 activation units per time unit (per direction)" in text
    assert "24 offloads, 24 reloads (12 activation units each way)" in text
    assert "bytes" not in text
    assert describe(result)["offload"]["link"] == "latency 0.1 time unit, 2 activation units per time unit"
    in_bytes = ppviz.simulate(ppviz.Config("1f1b", devices=4, microbatches=8, offload=Offload(0.5, link=link),
                                           activation_bytes=2**20))
    assert "(12 MiB each way)" in in_bytes.summary() and "2 bytes per time unit" in in_bytes.summary()


# Offload beside transfers (a topology) ------------------------------------------------------------
#
# The host copies run on each device's own PCIe link, apart from the links between devices. The
# reference simulator runs both from their definitions; two properties pin the composition to the
# two models alone: with an infinitely fast host link the run is the topology's alone, and with
# free links between devices it is offload's alone.


@st.composite
def offload_transfer_configs(draw):
    cfg = draw(offload_configs())
    link = st.builds(Link, st.sampled_from([0.0, 0.1, 0.5]), bandwidth=st.sampled_from([0.5, 1.0, 4.0, math.inf]))
    topology = draw(link | st.builds(ppviz.Topology, st.integers(1, 4), intra=link, inter=link))
    return cfg.replace(comm=0.0, topology=topology, comm_bytes=draw(st.sampled_from([0.0, 1.0, 3.0])),
                       p2p=draw(st.sampled_from(["blocking", "overlapped", None])))


@settings(max_examples=60, deadline=None)
@given(offload_transfer_configs(), st.sampled_from(["events", "auto"]))
def test_offload_over_transfers_matches_the_reference_simulator(cfg, engine):
    res = simulate(cfg, engine=engine)
    ref = oracle.run_transfers(res.program, cfg, cfg.p2p_mode == "blocking")
    np.testing.assert_allclose(res.ops.start, ref.start, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(res.ops.end, ref.end, rtol=1e-9, atol=1e-9)
    t = res.transfers
    assert len(t) == len(ref.transfers)
    for kind, stage, mb, start, end in zip(t.kind, t.stage, t.microbatch, t.start, t.end):
        want = ref.transfers[(str(kind), int(stage), int(mb))]
        assert math.isclose(start, want[2], rel_tol=1e-9, abs_tol=1e-9)
        assert math.isclose(end, want[3], rel_tol=1e-9, abs_tol=1e-9)
    assert_copies_match(res.host_copies, ref)
    np.testing.assert_allclose(res.peak_activation, ref.peak_activation, rtol=1e-9, atol=1e-9)
    assert_curves_match(res.memory, ref.curves)
    assert np.allclose(res.idle, res.exposed_comm + res.idle_compute, rtol=1e-9, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(offload_transfer_configs())
def test_over_transfers_an_infinitely_fast_host_link_leaves_the_topologys_run(cfg):
    res = simulate(cfg.replace(offload=Offload(cfg.offload.share, link=INF)))
    alone = simulate(cfg.replace(offload=None))
    for name in ("start", "end"):
        np.testing.assert_array_equal(getattr(res.ops, name), getattr(alone.ops, name))
        np.testing.assert_array_equal(getattr(res.transfers, name), getattr(alone.transfers, name))
    assert (res.peak_activation <= alone.peak_activation + 1e-9 * np.maximum(1.0, alone.peak_activation)).all()


@settings(max_examples=40, deadline=None)
@given(offload_configs(), st.sampled_from(["blocking", "overlapped"]))
def test_over_free_links_offload_runs_as_it_does_alone(cfg, p2p):
    cfg = cfg.replace(comm=0.0)
    res = simulate(cfg.replace(topology=INF, comm_bytes=1.0, p2p=p2p))
    alone = simulate(cfg)
    np.testing.assert_array_equal(res.ops.start, alone.ops.start)
    np.testing.assert_array_equal(res.ops.end, alone.ops.end)
    for name in ("device", "stage", "microbatch", "kind", "ready", "start", "end", "op"):
        np.testing.assert_array_equal(getattr(res.host_copies, name), getattr(alone.host_copies, name))
    np.testing.assert_array_equal(res.peak_activation, alone.peak_activation)


def test_over_transfers_a_slow_host_link_delays_the_backwards_by_their_reloads():
    """GPipe p = 2, m = 4, the devices on two nodes 0.5 apart (overlapped P2P), a host link of 2
    per copy (a unit over 0.5). Without offload: device 1's F's in [1.5, 5.5], its B's in
    [5.5, 13.5]; device 0's B's start as each gradient lands, 8 … 14; makespan 16. Every F is
    offloaded (another action runs before its backward on both devices)."""
    topology = ppviz.Topology(1, intra=Link(0.0, bandwidth=math.inf), inter=Link(0.5, bandwidth=math.inf))
    options = dict(topology=topology, comm_bytes=1.0, p2p="overlapped")
    bare = simulate(Config(schedule="gpipe", devices=2, microbatches=4, **options))
    assert bare.makespan == 16.0
    res = simulate(gpipe(Link(0.0, bandwidth=0.5), **options))
    # device 1: offloads queue after each F's end; B0's reload, issued at F3's start (4.5), holds
    # B0 to 6.5, one later than without offload, and each next reload is issued as a B starts
    assert copies(res, 1, "offload")[1:] == ([2.5, 4.5, 6.5, 8.5], [4.5, 6.5, 8.5, 10.5])
    assert copies(res, 1, "reload") == ([4.5, 6.5, 8.5, 10.5], [4.5, 6.5, 8.5, 10.5], [6.5, 8.5, 10.5, 12.5])
    assert times(res, 1, "B") == ([6.5, 8.5, 10.5, 12.5], [8.5, 10.5, 12.5, 14.5])
    # device 0: the gradients land at 9, 11, 13, 15, as do (from B1 on) the reloads
    assert copies(res, 0, "reload") == ([3.0, 9.0, 11.0, 13.0], [3.0, 9.0, 11.0, 13.0], [5.0, 11.0, 13.0, 15.0])
    assert times(res, 0, "B") == ([9.0, 11.0, 13.0, 15.0], [11.0, 13.0, 15.0, 17.0])
    assert res.makespan == 17.0
    # device 1's wait for B0's reload counts as exposed communication
    assert res.exposed_comm[1] == pytest.approx(bare.exposed_comm[1] + 1.0)
    h = res.host_copies
    assert {(int(d), int(mb)): x for d, mb, x in zip(h.device, h.microbatch, h.held) if x} == {(1, 0): 1.0}
    assert "backwards wait 1 in all for their reloads" in res.summary()
    with pytest.raises(ConfigError, match="events"):
        simulate(res.config, engine="lockstep")
    text = res.summary()
    assert "transfers        8 of 1" in text and "offload          1 of each activation" in text


def test_the_chrome_trace_of_a_run_with_both_keeps_transfers_and_host_copies_apart(tmp_path):
    import json

    res = simulate(gpipe(Link(0.0, bandwidth=0.5), topology=Link(0.5, bandwidth=math.inf), comm_bytes=1.0))
    events = json.loads(res.to_chrome_trace())["traceEvents"]
    p = res.devices
    threads = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    assert {tid: name for tid, name in threads.items() if tid >= p} == {
        **{p + d: f"device {d}: transfers out" for d in range(p)},
        **{2 * p + d: f"device {d}: host copies" for d in range(p)}}
    shown = [e for e in events if e.get("ph") == "X"]
    assert sum(e.get("cat") == "transfer" for e in shown) == len(res.transfers) == 8
    assert sum(e.get("cat") == "host copy" for e in shown) == len(res.host_copies) == 16
    # every flow's start has its one end, transfers' and reloads' alike
    starts = [(e["cat"], e["id"]) for e in events if e.get("ph") == "s"]
    ends = [(e["cat"], e["id"]) for e in events if e.get("ph") == "f"]
    assert len(set(starts)) == len(starts) == 8 + 8 and sorted(starts) == sorted(ends)
    assert len({i for _, i in starts}) == len(starts)  # ids apart, whatever a viewer keys them by
