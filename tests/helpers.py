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


def accepted_sizes(draw, spec, *, max_devices: int, microbatches_per_device: int) -> tuple[int, int, int]:
    """(p, m, v) drawn for a hypothesis strategy, drawn again (up to 8 times) where ``spec``
    refuses them, so that lists of configs are not mostly filtered out (several schedules take
    only some p and m); the last draw stands, for the caller's own refusal to filter."""
    from hypothesis import strategies as st

    for _ in range(8):
        p = draw(st.integers(1, max_devices))
        m = draw(st.integers(1, microbatches_per_device * p))
        v = draw(st.integers(spec.v_min, min(spec.v_max or 4, 4)))
        try:
            ppviz.Config(schedule=spec.name, devices=p, microbatches=m, stages_per_device=v)
            break
        except ppviz.ScheduleConstraintError:
            continue
    return p, m, v
