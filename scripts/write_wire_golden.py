"""Write the golden wire fixture: tests/data/wire_golden.{timeline,memory}.bin and
tests/data/wire_golden.json (what a decoder must read from them).

Run after a deliberate change of the wire format (ARCHITECTURE.md, "Wire format"); the Python
test re-encodes the same program and compares byte for byte, the TypeScript test decodes the
files and compares with the JSON.

    python scripts/write_wire_golden.py
"""

import json
import pathlib

import numpy as np

import ppviz
from ppviz.widgets.wire import encode_memory, encode_timeline

DATA = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data"

#: DualPipe's two directions on two devices (microbatches 0 and 1 flow down, 2 and 3 up), every
#: op kind, an F&B pair whose backward is an I, W's, costs that are not integers, and transfers of
#: both kinds both ways over a slow link that queues them, so every field and flag of the format varies
PROGRAM = """
device 0: 0F0 0F1 1F2 1I2 (1F3;0I0)OVERLAP_F_B 1W2 1B3 0B1 0W0
device 1: 1F0 0F2 1B0 0F3 1F1 1B1 0I2 0B3 0W2
"""


def golden_result():
    program = ppviz.Program.from_text(PROGRAM, placement="bidirectional")
    # each device a node of its own: every transfer crosses the inter-node link, 0.125 + 4.5 / 2
    topology = ppviz.Topology(devices_per_node=1, intra=ppviz.Link(0.125, bandwidth=8.0), inter=ppviz.Link(0.125, bandwidth=2.0))
    return ppviz.simulate(program, f=1.25, b=1.5, w=0.75, fb=3.0, topology=topology, comm_bytes=4.5,
                          p2p="overlapped", stage_costs={1: {"f": 2.0, "activation": 1.5}})


def expected(result) -> dict:
    ops, program = result.ops, result.program
    memory = []
    for d in range(result.devices):
        times, values = result.memory.curve(d)
        memory.append({"times": times.astype(np.float32).tolist(), "values": values.astype(np.float32).tolist()})
    return {
        "devices": result.devices,
        "offsets": program.offsets.tolist(),
        "ops": [
            {"device": int(ops.device[k]), "stage": int(ops.stage[k]), "microbatch": int(ops.microbatch[k]),
             "kind": str(ops.kind[k]), "start": float(np.float32(ops.start[k])),
             "duration": float(np.float32(ops.end[k] - ops.start[k])), "dep": int(result.dependencies[k]),
             "waited": bool(ops.waited_for[k] >= 0), "pair_forward": bool(program.pair[k]),
             "pair_backward": bool(k > 0 and program.pair[k - 1]),
             "reverse": bool(ops.microbatch[k] >= program.placement.split)}
            for k in range(len(ops))
        ],
        "memory": memory,
        "transfers": [
            {"src": int(t.src[i]), "dst": int(t.dst[i]), "kind": str(t.kind[i]),
             "ready": float(np.float32(t.ready[i])), "start": float(np.float32(t.start[i])),
             "end": float(np.float32(t.end[i])), "producer": int(t.producer[i]), "consumer": int(t.consumer[i])}
            for t in [result.transfers] for i in range(len(t))
        ],
    }


def main() -> None:
    result = golden_result()
    (DATA / "wire_golden.timeline.bin").write_bytes(encode_timeline(result))
    (DATA / "wire_golden.memory.bin").write_bytes(encode_memory(result))
    (DATA / "wire_golden.json").write_text(json.dumps(expected(result), indent=1) + "\n")
    print(f"wrote {DATA}/wire_golden.*: {len(result.ops)} ops and {len(result.transfers)} transfers on "
          f"{result.devices} devices")


if __name__ == "__main__":
    main()
