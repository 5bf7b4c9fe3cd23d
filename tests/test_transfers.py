"""Communication as transfers: links and topologies, the durations and queueing of transfers,
blocking and overlapped P2P, programs that carry their own sends and receives, and the engines
against the reference simulator (tests/oracle.py) on random inputs."""

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import ppviz
from ppviz import Config, ConfigError, Link, Program, ProgramError, Topology, simulate

from . import oracle
from .test_oracle import configs


# Links, topologies and their validation -----------------------------------------------------

def test_a_transfer_costs_latency_plus_bytes_over_the_bandwidth_of_the_link_it_crosses():
    # two devices per node: 0-1 and 2-3 share a node, 1-2 crosses nodes
    topology = Topology(devices_per_node=2, intra=Link(1.0, bandwidth=4.0), inter=Link(3.0, bandwidth=2.0))
    res = simulate(Config(schedule="gpipe", devices=4, microbatches=2, topology=topology, comm_bytes=8.0))
    t = res.transfers
    inter = (t.src // 2) != (t.dst // 2)
    assert len(t) == 2 * 3 * 2 and inter.sum() == 2 * 2
    assert np.array_equal(t.duration[~inter], np.full(8, 1.0 + 8.0 / 4.0))
    assert np.array_equal(t.duration[inter], np.full(4, 3.0 + 8.0 / 2.0))
    assert set(zip(t.src[inter].tolist(), t.dst[inter].tolist())) == {(1, 2), (2, 1)}


def test_a_preset_converts_seconds_to_the_configs_time_unit():
    # DGX H100: NVLink 450 GB/s each way, NDR InfiniBand 400 Gb/s = 50 GB/s; NCCL's latencies
    config = Config(schedule="1f1b", devices=16, microbatches=4, topology="dgx-h100", comm_bytes=9e6, time_unit="us")
    t = simulate(config).transfers
    across = (t.src // 8) != (t.dst // 8)
    assert set(t.src[across].tolist()) == {7, 8}
    assert np.allclose(t.duration[~across], 11.8 + 9e6 / 450e3, rtol=1e-12)
    assert np.allclose(t.duration[across], 18.0 + 9e6 / 50e3, rtol=1e-12)
    in_ms = simulate(config.replace(time_unit="ms", f=1e-3, b=1e-3, w=1e-3)).transfers
    assert np.allclose(in_ms.duration * 1000, t.duration, rtol=1e-12)


def test_presets_and_their_sources():
    assert set(ppviz.core.topology.PRESETS) == {"dgx-h100", "dgx-a100", "roce-h100", "dgx-b200", "gb200-nvl72",
                                                 "h800-ib"}
    nvl72 = Topology.preset("gb200-nvl72")
    assert (nvl72.devices_per_node, nvl72.intra.bandwidth) == (72, 900e9)
    a100 = Topology.preset("DGX-A100")
    assert (a100.devices_per_node, a100.intra.bandwidth, a100.inter.bandwidth) == (8, 300e9, 25e9)
    source = open(ppviz.core.topology.__file__, encoding="utf-8").read()
    for fact in ("900 GB/s", "ConnectX-7", "arXiv 2407.21783", "tuning.cc"):
        assert fact in source


@pytest.mark.parametrize("options, field, fragment", [
    ({"topology": "dgx-h100", "comm_bytes": 1e6}, "time_unit", "set time_unit"),
    ({"topology": "dgx-h100", "comm_bytes": 1e6, "time_unit": "step"}, "time_unit", "cannot convert seconds"),
    ({"comm_bytes": 5.0}, "comm_bytes", "give topology= too"),
    ({"p2p": "blocking"}, "p2p", "give topology= and comm_bytes="),
    ({"topology": Link(1, bandwidth=2)}, "comm_bytes", "give the bytes of one transfer"),
    ({"topology": Link(1, bandwidth=2), "comm_bytes": 3, "comm": 0.5}, "comm", "leave comm at 0"),
    ({"topology": Link(1, bandwidth=2), "comm_bytes": 3, "p2p": "async"}, "p2p", "'blocking' or 'overlapped'"),
    ({"topology": Link(1, bandwidth=2), "comm_bytes": -3}, "comm_bytes", ">= 0"),
    ({"topology": "dgx-h200", "comm_bytes": 3}, "topology", "dgx-h100, dgx-a100, roce-h100"),
    ({"topology": 5, "comm_bytes": 3}, "topology", "ppviz.Topology, a ppviz.Link"),
])
def test_transfer_settings_are_checked(options, field, fragment):
    with pytest.raises(ConfigError) as info:
        Config(schedule="1f1b", **options)
    assert info.value.field == field and fragment in str(info.value)


@pytest.mark.parametrize("make, field", [
    (lambda: Link(-1, bandwidth=2), "latency"), (lambda: Link(1, bandwidth=0), "bandwidth"), (lambda: Link(1, bandwidth=math.nan), "bandwidth"),
    (lambda: Link(1, bandwidth=2, unit="hours"), "unit"), (lambda: Link("1", bandwidth=2), "latency"),
    (lambda: Topology(0, intra=Link(1, bandwidth=2), inter=Link(1, bandwidth=2)), "devices_per_node"),
    (lambda: Topology(8, intra=Link(1, bandwidth=2), inter="fast"), "inter"), (lambda: Topology.preset("tpu"), "topology"),
])
def test_links_and_topologies_are_checked(make, field):
    with pytest.raises(ConfigError) as info:
        make()
    assert info.value.field == field


def test_a_config_with_transfers_stays_hashable():
    config = Config(schedule="1f1b", topology="dgx-a100", comm_bytes=1e6, time_unit="ms")
    assert hash(config) == hash(config.replace())
    assert config.p2p_mode == "blocking" and Config(schedule="1f1b").p2p_mode is None


# Queueing, blocking and overlapped P2P, by hand -----------------------------------------------

def queueing_config(p2p):
    # each F takes 1 and each transfer 4 (no latency, 4 bytes at 1 byte per unit of time)
    return Config(schedule="gpipe", devices=2, microbatches=3, f=1.0, b=1.0, w=0.0, topology=Link(0.0, bandwidth=1.0),
                  comm_bytes=4.0, p2p=p2p)


def test_transfers_queue_on_a_busy_link():
    res = simulate(queueing_config("overlapped"))
    t = res.transfers
    forward = t.kind == "F"
    # device 0 posts its activations at 1, 2, 3; the link serves them one after another
    assert t.ready[forward].tolist() == [1.0, 2.0, 3.0]
    assert t.start[forward].tolist() == [1.0, 5.0, 9.0]
    assert t.end[forward].tolist() == [5.0, 9.0, 13.0]
    assert t.queued[forward].tolist() == [0.0, 3.0, 6.0]
    # the gradients queue on the link the other way, 1 → 0, independently
    assert t.start[~forward].tolist() == [15.0, 19.0, 23.0]
    assert res.makespan == 28.0
    assert "queued for a busy link 18" in res.summary()


def test_transfers_of_different_model_chunks_queue_on_the_one_link_between_two_devices():
    # p = 2, v = 2 (stage s on device s mod 2): the link 0 → 1 carries stage 0's and stage 2's
    # activations and stage 2's gradients, the link 1 → 0 the others. Each stage op takes 1,
    # each transfer 4 (4 bytes at 1 byte per unit of time), overlapped P2P.
    program = Program.from_text("device 0: 0F0 0F1 0F2 2F0 2F1 2F2 2B0 2B1 2B2 0B0 0B1 0B2\n"
                                "device 1: 1F0 1F1 1F2 3F0 3F1 3F2 3B0 3B1 3B2 1B0 1B1 1B2")
    config = Config(schedule="custom", devices=2, microbatches=3, f=2.0, b=2.0, w=0.0, topology=Link(0.0, bandwidth=1.0),
                    comm_bytes=4.0, p2p="overlapped")
    for engine in ("events", "lockstep"):
        res = simulate(program, config, engine=engine)
        t = res.transfers
        rows = {(str(k), int(s), int(m)): (r, a, e) for k, s, m, r, a, e in
                zip(t.kind, t.stage, t.microbatch, t.ready, t.start, t.end)}
        # stage 0's activations leave at 1, 2, 3 and take the link 0 → 1 until 13
        assert [rows["F", 0, m] for m in range(3)] == [(1.0, 1.0, 5.0), (2.0, 5.0, 9.0), (3.0, 9.0, 13.0)]
        # stage 2's first activation is ready at 11 (2F0 runs 10–11, after 1F0's transfer 6–10)
        # and waits for stage 0's last one: the link is shared by the two model chunks
        assert [rows["F", 2, m] for m in range(3)] == [(11.0, 13.0, 17.0), (15.0, 17.0, 21.0), (19.0, 21.0, 25.0)]
        # the same on the link 1 → 0: stage 1's gradients (1B0 runs 36–37) queue behind
        # stage 3's, which 3B0–3B2 post at 27, 28, 29 and the link serves 27–39
        assert [rows["B", 3, m] for m in range(3)] == [(27.0, 27.0, 31.0), (28.0, 31.0, 35.0), (29.0, 35.0, 39.0)]
        assert [rows["B", 1, m] for m in range(3)] == [(37.0, 39.0, 43.0), (41.0, 43.0, 47.0), (45.0, 47.0, 51.0)]
        assert res.makespan == 52.0  # 0B2 runs 51–52


def test_blocking_p2p_holds_both_devices_for_their_transfers():
    res = simulate(queueing_config("blocking"))
    ops = res.ops
    got = {(int(d), str(k), int(m)): (s, e) for d, k, m, s, e in zip(ops.device, ops.kind, ops.microbatch, ops.start,
                                                                    ops.end)}
    # device 0 waits for each send before its next forward: F at 0, 5, 10
    assert [got[(0, "F", m)][0] for m in range(3)] == [0.0, 5.0, 10.0]
    assert [got[(1, "F", m)][0] for m in range(3)] == [5.0, 10.0, 15.0]
    # device 1 waits for each gradient's send; device 0 for each gradient's arrival
    assert [got[(1, "B", m)][0] for m in range(3)] == [16.0, 21.0, 26.0]
    assert [got[(0, "B", m)][0] for m in range(3)] == [21.0, 26.0, 31.0]
    assert res.makespan == 32.0 and not res.transfers.queued.any()
    # blocked for 4 after each send and (device 0) waiting for the gradients: communication
    # exposed: device 0 after each send (3 × 4) and for the two later gradients' transfers (2 × 4) and the
    # first's (4, after it waited 6 for device 1's compute); device 1 for each activation's and
    # each of its own gradients' transfers (6 × 4, the last after its last op)
    assert res.exposed_comm.tolist() == [20.0, 24.0] and res.idle_compute.tolist() == [6.0, 2.0]
    assert np.allclose(res.idle, res.exposed_comm + res.idle_compute)


def test_overlap_schedules_default_to_overlapped_p2p_and_say_so():
    for name in ("1f1b-overlap", "interleaved-1f1b-overlap", "dualpipe", "dualpipe-v"):
        config = Config(schedule=name, devices=4, microbatches=8, topology=Link(0.1, bandwidth=10.0), comm_bytes=1.0)
        assert config.p2p_mode == "overlapped" and config.spec.overlapped_p2p
        assert f"p2p overlapped ({name}'s default: its published version overlaps communication" in \
            simulate(config).summary()
    plain = Config(schedule="zb-h1", devices=4, microbatches=8, topology=Link(0.1, bandwidth=10.0), comm_bytes=1.0)
    assert plain.p2p_mode == "blocking" and "p2p blocking (the default" in simulate(plain).summary()


def test_the_idle_split_with_a_bare_latency_by_hand():
    # 1F1B, p = 2, m = 1: F0 on 0 [0, 1]; on 1 [1.5, 2.5], B0 [2.5, 4.5]; B0 on 0 [5, 7]
    res = simulate(Config(schedule="1f1b", devices=2, microbatches=1, comm=0.5))
    assert res.makespan == 7.0 and res.idle.tolist() == [4.0, 4.0]
    assert res.exposed_comm.tolist() == [0.5, 0.5] and res.idle_compute.tolist() == [3.5, 3.5]
    assert len(res.transfers) == 0 and "transfers" not in res.summary()


# Programs that carry their own sends and receives --------------------------------------------

TEXT = """
device 0: 0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0B0 0RECV_B1 0B1
device 1: 1RECV_F0 1F0 1B0 1SEND_B0 1RECV_F1 1F1 1B1 1SEND_B1
"""


def test_a_programs_own_communication_ops_run_when_transfers_are_simulated():
    program = Program.from_text(TEXT)
    assert program.to_actions(comms=True) == {0: TEXT.split("\n")[1].split()[2:], 1: TEXT.split("\n")[2].split()[2:]}
    assert program.to_actions() == {0: ["0F0", "0F1", "0B0", "0B1"], 1: ["1F0", "1B0", "1F1", "1B1"]}
    link = Link(0.5, bandwidth=2.0)
    res = simulate(program, Config(schedule="custom", devices=2, microbatches=2, topology=link, comm_bytes=1.0))
    assert len(res.transfers) == 4 and np.all(res.transfers.duration == 1.0)
    assert res.program.to_actions(comms=True) == program.to_actions(comms=True)
    # the same program with a bare latency runs its compute ops alone, as before
    bare = simulate(program, comm=1.0)
    assert np.array_equal(bare.ops.start, simulate(program.without_comms(), comm=1.0).ops.start)


@pytest.mark.parametrize("text, fragment", [
    (TEXT.replace(" 0RECV_B1", ""), "(0B1): its input comes from device 1 (1B1) but the program has no receive"),
    (TEXT.replace("1SEND_B0 ", ""), "(0B0): its input comes from device 1 (1B0) but the program has no send"),
    (TEXT.replace("0F0 0SEND_F0", "0SEND_F0 0F0"), "0SEND_F0): it sends the output of 0F0, which comes after it"),
    (TEXT.replace("1RECV_F1 1F1", "1F1 1RECV_F1"), "1RECV_F1): 1F1 needs what it receives"),
    (TEXT.replace("0RECV_B0", "1RECV_B0"), "(1RECV_B0): stage 1 has no stage 2 to receive from"),
    (TEXT.replace("0B1", "0B1 0SEND_F1"), "0SEND_F1): it runs twice"),
    (TEXT.replace("0B1\n", "0B1 1SEND_B0\n").replace(" 1SEND_B0 1RECV_F1", " 1RECV_F1"), "belongs on device 1"),
])
def test_communication_ops_that_do_not_describe_the_transfers_are_refused_by_name(text, fragment):
    program = Program.from_text(text)
    with pytest.raises(ProgramError) as info:
        simulate(program, Config(schedule="custom", devices=2, microbatches=2, topology=Link(0.5, bandwidth=2.0), comm_bytes=1))
    assert fragment in str(info.value)
    assert info.value.device is not None and info.value.position is not None


def test_a_program_that_cannot_finish_names_what_waits_with_transfers():
    program = Program.from_text("device 0: 0F0 0B0 0F1 0B1\ndevice 1: 1F1 1B1 1F0 1B0")
    for engine in ("events", "lockstep"):
        with pytest.raises(ppviz.DeadlockError) as info:
            simulate(program, Config(schedule="custom", devices=2, microbatches=2, topology=Link(0.5, bandwidth=2.0),
                                     comm_bytes=1.0), engine=engine)
        assert "device 1: [1F1] waits for a transfer sent after 0F1 on device 0, which has not run" in str(info.value)
        assert info.value.blocked[0][0] == "0B0"


def test_the_transfers_table():
    res = simulate(queueing_config("overlapped"))
    frame = res.transfers.to_pandas()
    assert list(frame.columns) == list(ppviz.Transfers.COLUMNS)
    assert frame["bytes"].tolist() == [4.0] * 6 and frame["kind"].tolist() == ["F"] * 3 + ["B"] * 3
    # producer and consumer are rows of res.ops: a transfer leaves after its producer ends
    assert np.all(res.ops.end[res.transfers.producer] <= res.transfers.start)
    assert np.all(res.ops.start[res.transfers.consumer] >= res.transfers.end)
    with pytest.raises(ValueError):
        res.transfers.start[0] = 1.0


# Against the reference simulator, both engines, on random inputs ------------------------------

@st.composite
def transfer_configs(draw):
    config = draw(configs())
    # the vocabulary passes' schedules refuse links (tests/test_vocab.py checks the refusal)
    assume(not ppviz.core.registry.lookup(config.schedule).vocab_barriers)
    link = st.builds(Link, st.sampled_from([0.0, 0.1, 0.5, 2.0]), bandwidth=st.sampled_from([0.5, 1.0, 4.0, math.inf]))
    topology = draw(link | st.builds(Topology, st.integers(1, 4), intra=link, inter=link))
    return config.replace(comm=0.0, topology=topology, comm_bytes=draw(st.sampled_from([0.0, 1.0, 3.0])),
                          p2p=draw(st.sampled_from(["blocking", "overlapped", None])))


@given(transfer_configs(), st.sampled_from(["events", "lockstep", "auto"]))
def test_transfers_equal_the_reference_simulator(config, engine):
    res = simulate(config, engine=engine)
    ref = oracle.run_transfers(res.program, config, config.p2p_mode == "blocking")
    assert np.allclose(res.ops.start, ref.start, rtol=1e-12, atol=1e-12)
    assert np.allclose(res.ops.end, ref.end, rtol=1e-12, atol=1e-12)
    t = res.transfers
    assert len(t) == len(ref.transfers)
    for kind, stage, mb, src, dst, start, end in zip(t.kind, t.stage, t.microbatch, t.src, t.dst, t.start, t.end):
        want = ref.transfers[(str(kind), int(stage), int(mb))]
        assert (int(src), int(dst)) == want[:2]
        assert start == pytest.approx(want[2], rel=1e-12, abs=1e-12)
        assert end == pytest.approx(want[3], rel=1e-12, abs=1e-12)
    assert np.allclose(res.idle, res.exposed_comm + res.idle_compute, rtol=1e-9, atol=1e-9)


@given(transfer_configs())
def test_the_engines_agree_bit_for_bit(config):
    runs = [simulate(config, engine=engine) for engine in ("events", "lockstep")]
    for name in ("start", "end"):
        assert np.array_equal(getattr(runs[0].ops, name), getattr(runs[1].ops, name))
        assert np.array_equal(getattr(runs[0].transfers, name), getattr(runs[1].transfers, name))


@given(transfer_configs())
def test_overlapped_transfers_that_never_queue_are_a_bare_latency(config):
    # a flat link, overlapped, and no transfer waiting for its link: each costs its duration as
    # a bare comm would, so the times are the bare model's bit for bit
    link = config.topology if isinstance(config.topology, Link) else config.topology.intra
    config = config.replace(topology=link, p2p="overlapped")
    res = simulate(config)
    assume(not res.transfers.queued.any() and len(res.transfers))
    # a sequence segment moves 1/k of the bytes
    latency = link.duration(config.comm_bytes / config.segments)
    bare = simulate(config.replace(topology=None, comm_bytes=None, p2p=None, comm=latency))
    assert np.array_equal(res.ops.start, bare.ops.start) and np.array_equal(res.ops.end, bare.ops.end)


def test_the_chrome_trace_shows_transfers_on_a_thread_per_sender_with_flows_to_their_consumers(tmp_path):
    import json

    res = simulate(queueing_config("overlapped"))
    events = json.loads(res.to_chrome_trace(time_unit_us=10.0))["traceEvents"]
    threads = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert threads[2] == "device 0: transfers out" and threads[3] == "device 1: transfers out"
    sent = [e for e in events if e.get("cat") == "transfer" and e["ph"] == "X"]
    assert [(e["tid"], e["ts"], e["dur"]) for e in sent if e["tid"] == 2] == [(2, 10.0, 40.0), (2, 50.0, 40.0),
                                                                            (2, 90.0, 40.0)]
    assert sent[1]["args"]["queued for the link"] == 30.0 and sent[1]["args"]["consumer"] == "1F1"
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    finishes = {e["id"]: e for e in events if e["ph"] == "f"}
    assert set(starts) == set(finishes) == set(range(6))
    # the flow ends where the consumer starts: the transfer's end, as nothing else held it
    assert finishes[1]["tid"] == 1 and finishes[1]["ts"] == 90.0
    simulate(Config()).to_chrome_trace(tmp_path / "bare.json")
    bare = json.loads(open(tmp_path / "bare.json", encoding="utf-8").read())["traceEvents"]
    assert not [e for e in bare if e.get("cat") == "transfer"]


def test_transfers_count_towards_the_size_budget():
    # 1F1B, p = 4, m = 8: 64 ops; with transfers, a transfer per stage and microbatch each way (+64)
    try:
        ppviz.set_budget(100)
        Config(schedule="1f1b", devices=4, microbatches=8)
        with pytest.raises(ConfigError, match="about 128 ops, over the budget of 100"):
            Config(schedule="1f1b", devices=4, microbatches=8, topology=Link(1.0, bandwidth=1.0), comm_bytes=1.0)
    finally:
        ppviz.set_budget(None)


@given(transfer_configs())
def test_the_general_lockstep_engine_agrees_too(config):
    # programs without F&B pairs take the lean lockstep engine; force the general one on them
    from unittest import mock

    from ppviz.core import comm_engine

    events = simulate(config, engine="events")
    with mock.patch.object(comm_engine.Graph, "single_input", lambda self: False):
        general = simulate(config, engine="lockstep")
    for name in ("start", "end"):
        assert np.array_equal(getattr(events.ops, name), getattr(general.ops, name))
        assert np.array_equal(getattr(events.transfers, name), getattr(general.transfers, name))


def test_a_bad_link_or_node_size_is_named_with_what_would_be_accepted():
    with pytest.raises(ConfigError) as info:
        Link(1, bandwidth="fast")
    assert info.value.field == "bandwidth"
    assert str(info.value) == "bandwidth='fast' is not accepted; give a number > 0 (math.inf for no limit)"
    with pytest.raises(ConfigError) as info:
        Link(1, bandwidth=0)
    assert info.value.field == "bandwidth"
    assert str(info.value).endswith("give a finite number > 0 and at most 1e200, or math.inf for no limit")
    # a node of up to a billion devices, not one more
    assert Topology(10**9, intra=Link(1, bandwidth=2), inter=Link(1, bandwidth=2)).devices_per_node == 10**9
    with pytest.raises(ConfigError, match="from 1 to 1,000,000,000") as info:
        Topology(10**9 + 1, intra=Link(1, bandwidth=2), inter=Link(1, bandwidth=2))
    assert info.value.field == "devices_per_node"


def test_a_send_between_two_stages_of_one_device_is_refused_by_name():
    program = Program.from_text("device 0: 0F0 1F0 1B0 1SEND_B0 0B0")
    with pytest.raises(ProgramError) as info:
        simulate(program, Config(schedule="custom", devices=1, microbatches=1, topology=Link(0.5, bandwidth=2.0), comm_bytes=1))
    assert ("device 0, position 3 (1SEND_B0): stages 0 and 1 of microbatch 0 run on one device, so nothing moves "
            "between them; remove it") in str(info.value)
    assert (info.value.device, info.value.position) == (0, 3)


@pytest.mark.parametrize("engine", ["events", "lockstep"])
def test_a_pair_whose_backward_needs_its_own_forward_never_runs_with_transfers(engine):
    # the last stage's B0 needs F0 of the same slot: the pair can never start, and device 0
    # waits for its gradient forever
    program = Program.from_text("device 0: 0F0 0B0\ndevice 1: (1F0;1B0)OVERLAP_F_B")
    config = Config(schedule="custom", devices=2, microbatches=1, topology=Link(0.5, bandwidth=2.0), comm_bytes=1.0)
    with pytest.raises(ppviz.DeadlockError) as info:
        simulate(program, config, engine=engine)
    assert "[(1F0;1B0)OVERLAP_F_B] waits for (1F0;1B0)OVERLAP_F_B, which comes later on device 1" in str(info.value)


def test_the_lockstep_engine_refuses_by_name_an_action_that_waits_for_more_than_eight_transfers():
    # device 1 receives nine forwards before it runs the first: blocking P2P holds 1F0 back for all nine
    m = 9
    first = " ".join(f"0F{i} 0SEND_F{i}" for i in range(m)) + " " + " ".join(f"0RECV_B{i} 0B{i}" for i in range(m))
    second = " ".join(f"1RECV_F{i}" for i in range(m)) + " " + " ".join(f"1F{i} 1B{i} 1SEND_B{i}" for i in range(m))
    program = Program.from_text(f"device 0: {first}\ndevice 1: {second}")
    config = Config(schedule="custom", devices=2, microbatches=m, topology=Link(0.5, bandwidth=2.0), comm_bytes=1.0,
                    p2p="blocking")
    with pytest.raises(ConfigError) as info:
        simulate(program, config, engine="lockstep")
    assert info.value.field == "engine"
    assert str(info.value).startswith("engine='lockstep' is not accepted; use 'events' or 'auto': an action of this "
                                      "program waits for or sends more than 8 transfers")
    assert simulate(program, config, engine="auto").makespan == simulate(program, config, engine="events").makespan


def test_an_op_that_waited_for_a_transfer_names_its_producer():
    # 1F1B, p = 2, m = 1; each transfer takes 0.5 + 1/2 = 1: 0F0 [0, 1], its activation [1, 2],
    # 1F0 [2, 3], 1B0 [3, 5], the gradient [5, 6], 0B0 [6, 8]. The bare latency is 0, so only the
    # transfers' arrival tells what 1F0 and 0B0 waited for
    res = simulate(Config(schedule="1f1b", devices=2, microbatches=1, topology=Link(0.5, bandwidth=2.0), comm_bytes=1.0))
    assert res.ops.start.tolist() == [0.0, 6.0, 2.0, 3.0]  # 0F0, 0B0, 1F0, 1B0
    assert res.ops.waited_for.tolist() == [-1, 3, 0, 2]


def test_comm_bytes_is_kept_as_a_float_like_every_other_number_field():
    from fractions import Fraction

    for given in (np.float32(0.5), Fraction(1, 2), 1):
        config = Config(schedule="1f1b", topology=Link(1.0, bandwidth=2.0), comm_bytes=given, f=given)
        assert type(config.comm_bytes) is float and config.comm_bytes == float(given)
        assert type(config.f) is float


def test_a_links_description_reads_the_same_whatever_unit_it_was_written_in():
    # one PCIe-like link, 11.8 µs and 25 GB/s, written in seconds, milliseconds and microseconds
    for unit, scale in (("s", 1.0), ("ms", 1e3), ("us", 1e6)):
        link = ppviz.Link(11.8e-6 * scale, bandwidth=25e9 / scale, unit=unit)
        assert link.describe() == "latency 11.8 µs, 25 GB/s", unit
    assert ppviz.Link(0.02, bandwidth=1e9, unit="s").describe() == "latency 20 ms, 1 GB/s"
    assert ppviz.Link(2.0, bandwidth=math.inf, unit="ms").describe() == "latency 2 ms, no bandwidth limit"
    assert ppviz.Link(3.0, bandwidth=2.0).describe("ms") == "latency 3 ms, 2 bytes per ms"  # no unit: the config's


def test_summaries_say_sizes_in_binary_units():
    from ppviz.core.numbers import size

    assert [size(x) for x in (0, 512, 1024, 1536, 64 * 2**20, 1.5 * 2**30, 3 * 2**40)] == [
        "0 B", "512 B", "1 KiB", "1.5 KiB", "64 MiB", "1.5 GiB", "3 TiB"]
    res = ppviz.simulate(ppviz.Config(schedule="1f1b", devices=4, microbatches=8, time_unit="ms",
                                      topology="dgx-h100", comm_bytes=64 * 2**20))
    # 2 · (p − 1) · m = 48 transfers of 64 MiB: 3 GiB
    assert "transfers        48 of 64 MiB (3 GiB in all)" in res.summary()
