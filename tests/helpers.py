"""Helpers shared by the tests."""

import struct

import ppviz


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height of a PNG, after checking its signature."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def config_at_least(spec, *, microbatches: int, **fields) -> ppviz.Config:
    """The spec's config with ``microbatches``, or with the fewest more it accepts (STP needs
    m >= 3p − 1), as the gallery draws it."""
    for m in range(microbatches, 8 * microbatches):
        try:
            return ppviz.Config(schedule=spec.name, microbatches=m, **fields)
        except ppviz.ScheduleConstraintError:
            continue
    raise AssertionError(f"{spec.name} accepts none of m = {microbatches}..{8 * microbatches - 1}")
