"""Write tests/data/bare_comm_golden.json: a digest of every op's start and end time for each
registry schedule on a grid of sizes, costs and bare ``comm`` latencies.

The file was first written by the code before communication became transfers (issue 12), so
``tests/test_bare_comm_golden.py`` shows that a bare ``comm`` still gives those exact times, bit
for bit. Rewrite it only after a deliberate change of the bare-latency model:

    python scripts/write_bare_comm_golden.py
"""

import hashlib
import json
import pathlib

import numpy as np

import ppviz
from ppviz.core.registry import all_specs

PATH = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "bare_comm_golden.json"
COSTS = ({"f": 1.0, "b": 1.0, "w": 1.0}, {"f": 1.0, "b": 2.0, "w": 0.7, "fb": 2.9})
COMMS = (0.0, 0.3, 1.25)


def grid():
    """(key, Config) for every accepted combination on the grid."""
    for spec in all_specs():
        if spec.builder is None:
            continue
        for p in (2, 3, 4, 6):
            for v in range(spec.v_min, min(spec.v_max or 3, 3) + 1):
                for m in (1, p, 2 * p + 2):
                    for c, costs in enumerate(COSTS):
                        for comm in COMMS:
                            try:
                                cfg = ppviz.Config(schedule=spec.name, devices=p, microbatches=m,
                                                   stages_per_device=v, comm=comm, **costs)
                            except ppviz.ScheduleConstraintError:
                                continue
                            yield f"{spec.name} p={p} v={v} m={m} costs={c} comm={comm}", cfg


def digest(result) -> str:
    times = np.concatenate([result.ops.start, result.ops.end]).astype("<f8")
    return hashlib.sha256(times.tobytes()).hexdigest()[:24]


def main() -> None:
    table = {key: digest(ppviz.simulate(cfg)) for key, cfg in grid()}
    PATH.write_text(json.dumps(table, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {len(table)} digests to {PATH}")


if __name__ == "__main__":
    main()
