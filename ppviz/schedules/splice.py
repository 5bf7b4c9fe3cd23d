"""Many microbatches from few: a builder's order at m made from its orders at a few microbatches.

A pipeline schedule's per-device order is a warm-up, a steady phase and a cool-down. Past the
warm-up, ``period`` more microbatches add one more stretch of the steady phase to every device
and leave the rest as it was, its microbatches ``period`` on. So the order at m is the order at a
base size with (m − base) / period such stretches inserted where the orders at base and at
base + period first differ, device by device.

The splice is taken only where it reproduces the builder's own orders at base + period and
base + 2·period exactly; otherwise (a schedule whose order is not of that shape at these sizes)
the builder runs at m. Builders that lay out every op in Python take seconds at the size budget's
edge (ZB-V at p = 8, m = 83,333: 5 s); three builds at the base take milliseconds.
"""

from __future__ import annotations

import functools

import numpy as np

from ..core.errors import PpvizError
from ..core.program import Program

#: splice only from this many times the base's microbatches: below, the three builds at the base
#: cost about as much as one at m
SPLICE_FACTOR = 4


def splice_base(devices: int) -> int:
    """Microbatches well past every schedule's warm-up (which lasts up to about 2p microbatches)."""
    return 4 * devices + 16


def spliced_builder(build, period=None):
    """``build`` (config → Program), made to splice many microbatches from few (module docstring).
    ``period``: config → the microbatches one steady stretch adds (default one; the interleaved
    schedules run microbatches in groups). The unspliced builder is ``__wrapped__``."""

    @functools.wraps(build)
    def builder(config) -> Program:
        m = config.microbatches
        step = 1 if period is None else period(config)
        base = splice_base(config.devices)
        base += (m - base) % step  # the base and m a whole number of periods apart
        if m >= SPLICE_FACTOR * base:
            made = splice(build, config, base, step)
            if made is not None:
                return made
        return build(config)

    return builder


def splice(build, config, base: int, period: int) -> Program | None:
    """The program at ``config.microbatches``, spliced from builds at base, base + period and
    base + 2·period microbatches; None where the splice does not reproduce the latter two."""
    m = config.microbatches
    try:
        built = [build(config.replace(microbatches=base + k * period)) for k in range(3)]
    except PpvizError:
        return None  # a size the schedule refuses (the builder at m says why, if it refuses m too)
    if any(b.comms is not None for b in built):
        return None  # communication ops refer to positions in the order: not spliced
    columns = [_columns(b) for b in built]
    stretch = [_stretch(columns[0][d], columns[1][d]) for d in range(built[0].devices)]
    if any(extra < 0 for _, extra in stretch):
        return None
    for count in (1, 2):
        made = _insert(columns[0], columns[1], stretch, count, period)
        if not all(_same(x, y) for x, y in zip(made, columns[count])):
            return None
    made = _insert(columns[0], columns[1], stretch, (m - base) // period, period)
    first = built[0]
    lengths = [len(kind) for kind, _, _, _ in made]
    return Program(np.concatenate([c[0] for c in made]), np.concatenate([c[1] for c in made]),
                   np.concatenate([c[2] for c in made]), np.concatenate([c[3] for c in made]),
                   np.r_[0, np.cumsum(lengths)], stages=first.stages, microbatches=m, placement=first.placement,
                   name=first.name, forward_only=first.forward_only, segments=first.segments)


def _columns(program: Program) -> list[tuple[np.ndarray, ...]]:
    """Per device: its ops' kind, stage, microbatch and pair flag."""
    cuts = program.offsets.tolist()
    return [(program.kind[a:b], program.stage[a:b], program.microbatch[a:b], program.pair[a:b])
            for a, b in zip(cuts[:-1], cuts[1:])]


def _stretch(before, after) -> tuple[int, int]:
    """Where ``after`` (one period more) first differs from ``before``, and how many ops longer it is."""
    n, extra = len(before[0]), len(after[0]) - len(before[0])
    if extra < 0:
        return n, extra
    differ = np.zeros(n, bool)
    for x, y in zip(before, after):
        differ |= x != y[:n]
    return (int(differ.argmax()) if differ.any() else n), extra


def _insert(base_columns, next_columns, stretch, count: int, period: int) -> list[tuple[np.ndarray, ...]]:
    """Per device: the base order with ``count`` copies of its steady stretch inserted, each a
    period of microbatches on from the one before, and the rest ``count`` periods on."""
    out: list[tuple[np.ndarray, ...]] = []
    for (kind, stage, mb, pair), (kind1, stage1, mb1, pair1), (at, extra) in zip(base_columns, next_columns, stretch):
        piece = slice(at, at + extra)
        shift = np.repeat(np.arange(count, dtype=np.int64) * period, extra)
        out.append((np.concatenate([kind[:at], np.tile(kind1[piece], count), kind[at:]]),
                    np.concatenate([stage[:at], np.tile(stage1[piece], count), stage[at:]]),
                    np.concatenate([mb[:at], np.tile(mb1[piece], count) + shift, mb[at:] + count * period]),
                    np.concatenate([pair[:at], np.tile(pair1[piece], count), pair[at:]])))
    return out


def _same(made, built) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(made, built))


def group_period(config) -> int:
    """The interleaved schedules' period: their microbatch group (at the sizes spliced, p unless
    given: torch's rounds of m // (m // p) are refused there unless p divides m); one microbatch
    at one stage per device."""
    return 1 if config.stages_per_device == 1 else config.group_size
