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
    magic, version, n, p = struct.unpack_from("<4I", data, 0)
    assert (data[:4], version, n, p) == (b"PPVT", 2, len(want["ops"]), want["devices"])
    at = 16
    offsets = struct.unpack_from(f"<{p + 1}I", data, at)
    at += 4 * (p + 1)
    columns = {}
    for name, fmt, size in (("start", "f", 4), ("duration", "f", 4), ("dep", "i", 4), ("microbatch", "I", 4),
                            ("stage", "H", 2), ("flags", "B", 1)):
        columns[name] = struct.unpack_from(f"<{n}{fmt}", data, at)
        at += size * n
        at += -at % 4  # every column starts on a 4-byte boundary
    assert at == len(data) and list(offsets) == want["offsets"]
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
    assert (mem[:4], version, p) == (b"PPVM", 2, want["devices"])
    offsets = struct.unpack_from(f"<{p + 1}I", mem, 12)
    k = offsets[-1]
    times = np.frombuffer(mem, "<f4", k, 12 + 4 * (p + 1))
    values = np.frombuffer(mem, "<f4", k, 12 + 4 * (p + 1) + 4 * k)
    for d, curve in enumerate(want["memory"]):
        assert times[offsets[d]:offsets[d + 1]].tolist() == curve["times"]
        assert values[offsets[d]:offsets[d + 1]].tolist() == curve["values"]
