"""The wire format pinned from the Python side: the encoder writes the committed golden bytes
exactly, and an independent reader of the layout (ARCHITECTURE.md, "Wire format") finds in them
what the JSON says. js/test/wire.test.ts decodes the same bytes with the widget's decoder."""

import importlib.util
import json
import pathlib
import struct

import numpy as np

from ppviz.widgets.wire import encode_memory, encode_timeline

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
spec = importlib.util.spec_from_file_location("write_wire_golden", ROOT / "scripts" / "write_wire_golden.py")
writer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(writer)


def test_the_encoder_writes_the_golden_bytes():
    result = writer.golden_result()
    assert encode_timeline(result) == (DATA / "wire_golden.timeline.bin").read_bytes()
    assert encode_memory(result) == (DATA / "wire_golden.memory.bin").read_bytes()
    assert json.loads((DATA / "wire_golden.json").read_text()) == writer.expected(result)


def test_the_golden_bytes_follow_the_documented_layout():
    data = (DATA / "wire_golden.timeline.bin").read_bytes()
    want = json.loads((DATA / "wire_golden.json").read_text())
    magic, version, n, p, widths, k = struct.unpack_from("<6I", data, 0)
    assert (data[:4], version, n, p) == (b"PPVT", 5, len(want["ops"]), want["devices"])
    # the golden run fits the narrowest layout: u16 microbatches, u8 stages, u8 duration indices,
    # u8 dependency ranks
    assert widths == 2 | 1 << 8 | 1 << 16 | 1 << 24
    table = struct.unpack_from(f"<{k}f", data, 24)
    assert list(table) == sorted({op["duration"] for op in want["ops"]})
    at = 24 + 4 * k
    offsets = struct.unpack_from(f"<{p + 1}I", data, at)
    at += 4 * (p + 1)
    columns = {}
    for name, fmt, size in (("start", "f", 4), ("duration", "B", 1), ("dep", "B", 1), ("microbatch", "H", 2),
                            ("stage", "B", 1), ("flags", "B", 1)):
        columns[name] = struct.unpack_from(f"<{n}{fmt}", data, at)
        at += size * n
        at += -at % 4  # every column starts on a 4-byte boundary
    columns["duration"] = [table[i] for i in columns["duration"]]
    # a dependency is sent as its rank among its microbatch's ops, 255 for none
    of_microbatch: dict[int, list[int]] = {}
    for k, j in enumerate(columns["microbatch"]):
        of_microbatch.setdefault(j, []).append(k)
    columns["dep"] = [-1 if r == 255 else of_microbatch[j][r] for r, j in zip(columns["dep"], columns["microbatch"])]
    (t,) = struct.unpack_from("<I", data, at)
    at += 4
    transfers = {}
    for name, fmt, size in (("ready", "f", 4), ("start", "f", 4), ("end", "f", 4), ("producer", "I", 4),
                            ("consumer", "I", 4), ("src", "H", 2), ("dst", "H", 2), ("kind", "B", 1)):
        transfers[name] = struct.unpack_from(f"<{t}{fmt}", data, at)
        at += size * t
        at += -at % 4
    assert at == len(data) and list(offsets) == want["offsets"]
    assert t == len(want["transfers"]) > 0
    for i, tr in enumerate(want["transfers"]):
        assert "FB"[transfers["kind"][i]] == tr["kind"]
        for name in ("ready", "start", "end", "producer", "consumer", "src", "dst"):
            assert transfers[name][i] == tr[name], (i, name)
    # the fixture exercises both kinds, both directions and a link that queues
    assert {tr["kind"] for tr in want["transfers"]} == {"F", "B"}
    assert {(tr["src"], tr["dst"]) for tr in want["transfers"]} == {(0, 1), (1, 0)}
    assert any(tr["start"] > tr["ready"] for tr in want["transfers"])
    for k, op in enumerate(want["ops"]):
        flags = columns["flags"][k]
        assert "FBIW"[flags & 3] == op["kind"]
        assert (bool(flags & 4), bool(flags & 8), bool(flags & 16), bool(flags & 32)) == (
            op["pair_forward"], op["pair_backward"], op["waited"], op["reverse"])
        assert columns["start"][k] == op["start"] and columns["duration"][k] == op["duration"]
        assert (columns["dep"][k], columns["microbatch"][k], columns["stage"][k]) == (op["dep"], op["microbatch"],
                                                                                     op["stage"])
    mem = (DATA / "wire_golden.memory.bin").read_bytes()
    magic, version, p = struct.unpack_from("<3I", mem, 0)
    assert (mem[:4], version, p) == (b"PPVM", 5, want["devices"])
    offsets = struct.unpack_from(f"<{p + 1}I", mem, 12)
    k = offsets[-1]
    times = np.frombuffer(mem, "<f4", k, 12 + 4 * (p + 1))
    values = np.frombuffer(mem, "<f4", k, 12 + 4 * (p + 1) + 4 * k)
    for d, curve in enumerate(want["memory"]):
        assert times[offsets[d]:offsets[d + 1]].tolist() == curve["times"]
        assert values[offsets[d]:offsets[d + 1]].tolist() == curve["values"]


def test_a_run_without_transfers_carries_an_empty_section():
    import ppviz

    res = ppviz.simulate(ppviz.Config(schedule="1f1b", devices=2, microbatches=2, comm=0.5))
    data = encode_timeline(res)
    assert struct.unpack_from("<I", data, len(data) - 4) == (0,)


def transfer_section(data: bytes, res) -> dict[str, np.ndarray]:
    """The transfers section's columns, read from a timeline of ``res`` with its widths checked
    (microbatch u2, stage u1, duration indices u1 into a table, dependency ranks u1)."""
    n, p = len(res.ops), res.devices
    widths, k = struct.unpack_from("<2I", data, 16)
    assert widths == 2 | 1 << 8 | 1 << 16 | 1 << 24
    at = 24 + 4 * k + 4 * (p + 1)
    for size in (4, 1, 1, 2, 1, 1):
        at += size * n
        at += -at % 4
    (t,) = struct.unpack_from("<I", data, at)
    at += 4
    cols = {}
    for name, dtype in (("ready", "<f4"), ("start", "<f4"), ("end", "<f4"), ("producer", "<u4"), ("consumer", "<u4"),
                        ("src", "<u2"), ("dst", "<u2"), ("kind", "u1")):
        cols[name] = np.frombuffer(data, dtype, t, at)
        at += cols[name].nbytes
        at += -at % 4
    assert at == len(data)
    return cols


def test_offloads_host_copies_travel_in_the_transfers_section():
    """A run with offload: the section holds Result.host_copies, kinds 2 (offload) and 3 (reload),
    each on its own device and naming the op it serves; describe() gives the share and the link."""
    import ppviz
    from ppviz.widgets.wire import HOST_OFFLOAD, HOST_RELOAD, describe

    res = ppviz.simulate(ppviz.Config(schedule="1f1b", devices=4, microbatches=8, offload=ppviz.Offload(0.5, link=ppviz.Link(0.0, bandwidth=1.0)),
                                      activation_bytes=1.0))
    h = res.host_copies
    cols = transfer_section(encode_timeline(res), res)
    assert len(cols["kind"]) == len(h) > 0
    assert cols["kind"].tolist() == [HOST_OFFLOAD if k == "offload" else HOST_RELOAD for k in h.kind.tolist()]
    for name in ("ready", "start", "end"):
        assert cols[name].tolist() == getattr(h, name).astype(np.float32).tolist()
    assert cols["src"].tolist() == cols["dst"].tolist() == h.device.tolist()
    assert cols["producer"].tolist() == cols["consumer"].tolist() == h.op.tolist()
    kinds = res.ops.kind[cols["producer"]]
    assert set(kinds[cols["kind"] == HOST_OFFLOAD].tolist()) == {"F"}
    assert set(kinds[cols["kind"] == HOST_RELOAD].tolist()) == {"B"}
    assert describe(res)["offload"] == {"share": 0.5, "link": res.config.offload.link.describe(None), "count": len(h)}
    assert describe(ppviz.simulate(ppviz.Config(devices=2, microbatches=2)))["offload"] is None


def test_a_run_with_transfers_and_offload_sends_the_transfers_then_the_host_copies():
    import ppviz
    from ppviz.widgets.wire import HOST_OFFLOAD, HOST_RELOAD, TRANSFER_B, TRANSFER_F

    res = ppviz.simulate(ppviz.Config(schedule="zb-h1", devices=4, microbatches=8, offload=ppviz.Offload(0.5, link=ppviz.Link(0.0, bandwidth=1.0)),
                                      topology=ppviz.Link(0.1, bandwidth=2.0), comm_bytes=1.0))
    t, h = res.transfers, res.host_copies
    cols = transfer_section(encode_timeline(res), res)
    assert len(t) > 0 and len(h) > 0 and len(cols["kind"]) == len(t) + len(h)
    first, rest = slice(0, len(t)), slice(len(t), None)
    assert cols["kind"][first].tolist() == [TRANSFER_F if k == "F" else TRANSFER_B for k in t.kind.tolist()]
    assert cols["kind"][rest].tolist() == [HOST_OFFLOAD if k == "offload" else HOST_RELOAD for k in h.kind.tolist()]
    for name in ("ready", "start", "end"):
        assert cols[name].tolist() == np.concatenate([getattr(t, name), getattr(h, name)]).astype(np.float32).tolist()
    assert cols["src"][first].tolist() == t.src.tolist() and cols["dst"][first].tolist() == t.dst.tolist()
    assert cols["src"][rest].tolist() == cols["dst"][rest].tolist() == h.device.tolist()
    assert cols["consumer"][first].tolist() == t.consumer.tolist()
    assert cols["producer"][rest].tolist() == h.op.tolist()


def test_the_transfers_section_is_what_the_simulation_returned():
    """A run across nodes: every transfer's fields come back from the bytes, in Result.transfers order."""
    import ppviz
    from ppviz.widgets.wire import BYTES_PER_TRANSFER, describe

    topology = ppviz.Topology(devices_per_node=2, intra=ppviz.Link(0.25, bandwidth=8.0), inter=ppviz.Link(0.5, bandwidth=2.0))
    res = ppviz.simulate(ppviz.Config(schedule="interleaved-1f1b", devices=4, microbatches=8, stages_per_device=2,
                                      topology=topology, comm_bytes=2.0))
    tr = res.transfers
    data = encode_timeline(res)
    n, p = len(res.ops), res.devices
    widths, k = struct.unpack_from("<2I", data, 16)
    assert widths == 2 | 1 << 8 | 1 << 16 | 1 << 24
    cols = transfer_section(data, res)
    t = len(cols["kind"])
    assert t == len(tr) == 2 * (4 * 2 - 1) * 8  # one per cross-device dependency, F and B
    assert len(data) - 24 - 4 * k - 4 * (p + 1) <= 10 * n + BYTES_PER_TRANSFER * t + 4 + 3 * 9
    for name in ("ready", "start", "end"):
        assert cols[name].tolist() == getattr(tr, name).astype(np.float32).tolist()
    for name in ("producer", "consumer", "src", "dst"):
        assert cols[name].tolist() == getattr(tr, name).tolist()
    assert ["FB"[k] for k in cols["kind"]] == tr.kind.tolist()
    # inter-node transfers (devices 1 and 2, 3 and 0) last 0.5 + 2 / 2, intra-node ones 0.25 + 2 / 8
    inter = (cols["src"] // 2) != (cols["dst"] // 2)
    assert inter.any() and (~inter).any()
    assert set((cols["end"] - cols["start"])[inter].tolist()) == {1.5}
    assert set((cols["end"] - cols["start"])[~inter].tolist()) == {0.5}
    comm = describe(res)["communication"]
    assert comm["count"] == t and comm["devices_per_node"] == 2 and comm["bytes"] == 2.0
    assert comm["exposed_comm"] == res.exposed_comm.tolist()
    assert describe(ppviz.simulate(ppviz.Config(schedule="1f1b", devices=2, microbatches=2)))["communication"] is None
