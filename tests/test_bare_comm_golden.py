"""A bare ``comm`` (no topology, no bytes) keeps the meaning it had before communication became
transfers: the times of every op, bit for bit, on a grid of every registry schedule, sizes, costs
and latencies (``tests/data/bare_comm_golden.json``, written by
``scripts/write_bare_comm_golden.py`` from the code before transfers existed)."""

import importlib.util
import json
import pathlib

import pytest

import ppviz

ROOT = pathlib.Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("write_bare_comm_golden", ROOT / "scripts" / "write_bare_comm_golden.py")
writer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(writer)
GOLDEN = json.loads(writer.PATH.read_text(encoding="utf-8"))


def test_the_grid_is_the_one_the_file_was_written_for():
    assert sorted(key for key, _ in writer.grid()) == sorted(GOLDEN)


@pytest.mark.parametrize("engine", ["events", "lockstep"])
def test_bare_comm_times_are_unchanged_bit_for_bit(engine):
    changed = []
    for key, cfg in writer.grid():
        program = cfg.build()
        if engine == "lockstep" and program.pair.any():
            continue
        if writer.digest(ppviz.simulate(program, cfg, engine=engine)) != GOLDEN[key]:
            changed.append(key)
    assert not changed, f"{len(changed)} runs changed, e.g. {changed[:3]}"
