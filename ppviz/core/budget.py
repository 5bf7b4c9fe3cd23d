"""The size budget: configs beyond it are refused before any work starts, with the estimate.

A run of n ops takes about a second and some hundreds of bytes per op per million ops to build,
simulate and draw; far beyond that a notebook kernel freezes or runs out of memory. The default
budget, ``DEFAULT_MAX_OPS`` ops, keeps a run within a few seconds on a laptop; raise it with
:func:`set_budget` (or the ``PPVIZ_MAX_OPS`` environment variable) for bigger machines.
"""

from __future__ import annotations

import os

from .errors import ConfigError, checked_arguments

DEFAULT_MAX_OPS = 4_000_000
#: what a device costs on its own, in ops: building and drawing each device's order takes about
#: as long as 15 to 30 ops (measured for 1F1B, interleaved 1F1B and ZB-V at p = 50,000, m = 4);
#: the budget allows max_ops / DEVICE_OPS devices, and never fewer than MIN_DEVICES (below that
#: the ops decide)
DEVICE_OPS = 32
MIN_DEVICES = 1024
#: a builder's grid cells (``ScheduleSpec.grid_cells``) allowed per op of the budget: a cell costs
#: about a quarter of an op's time and memory
CELLS_PER_OP = 4
_max_ops = None


def max_ops() -> int:
    """The current budget, in ops."""
    if _max_ops is not None:
        return _max_ops
    env = os.environ.get("PPVIZ_MAX_OPS", "")
    return int(env) if env.isdigit() and int(env) > 0 else DEFAULT_MAX_OPS


@checked_arguments
def set_budget(max_ops: int | None = None) -> int:
    """Set the largest run, in ops, that ppviz builds (``None``: back to the default). Returns it."""
    global _max_ops
    if max_ops is not None and (isinstance(max_ops, bool) or not isinstance(max_ops, int) or max_ops < 1):
        raise ConfigError("max_ops", max_ops, "give a whole number >= 1, or None for the default")
    _max_ops = max_ops
    return globals()["max_ops"]()


def estimate_ops(spec, devices: int, v: int, microbatches: int, *, transfers: bool = False) -> int:
    """The ops a schedule builds for these sizes, from its stage count alone (nothing is built). With
    transfers each F and backward also moves its output, about a transfer per op: they count too."""
    stages = spec.stage_count(devices, v) or devices * v
    per_pair = 3 if spec.split_backward else 2  # F and B, or F, I and W
    estimate = per_pair * stages * microbatches
    if transfers:
        estimate += 2 * stages * microbatches
    return estimate


def check_size(spec, devices: int, v: int, microbatches: int, *, transfers: bool = False, segments: int = 1) -> None:
    """Refuse a schedule whose op count, device count or construction grid would exceed the
    budget, before it is built; each of ``segments`` parts of a microbatch counts as one."""
    estimate = estimate_ops(spec, devices, v, microbatches * segments, transfers=transfers)
    limit = max_ops()
    if estimate > limit:
        parts = f", segments={segments}" if segments > 1 else ""
        raise ConfigError(
            "size", f"p={devices}, v={v}, m={microbatches}{parts}",
            f"that is about {estimate:,} ops, over the budget of {limit:,}; use fewer devices, stages or "
            f"microbatches{' or segments' if parts else ''}, or raise the budget with ppviz.set_budget(max_ops=...)",
            reason="too large to simulate here")
    most = max(MIN_DEVICES, limit // DEVICE_OPS)
    if devices > most:
        raise ConfigError(
            "devices", devices,
            f"use at most {most:,} devices, or raise the budget with ppviz.set_budget(max_ops=...)",
            reason=f"each device costs about as much as {DEVICE_OPS} ops on its own, so {devices:,} devices are "
                   f"over the budget of {limit:,} ops")
    cells = spec.grid_cells(devices, microbatches) if spec.grid_cells is not None else 0
    if cells > CELLS_PER_OP * limit:
        raise ConfigError(
            "size", f"p={devices}, m={microbatches}",
            f"{spec.name} lays its order out on a grid of about {cells:,} slots first (it grows as p × (p + m)), "
            f"over the budget of {CELLS_PER_OP * limit:,} ({CELLS_PER_OP} per op of the budget); use fewer devices or "
            "microbatches, or raise the budget with ppviz.set_budget(max_ops=...)",
            reason="too large to construct here")
