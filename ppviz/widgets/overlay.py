"""The overlay: a measured run and a simulation of its own program in one Gantt chart.

``ppviz.show(measured, against=...)`` draws the measured ops as usual and, on the same rows,
each op's simulated span (a ghost bar), with the residuals (measured − simulated, from
:func:`ppviz.residuals`) in the tooltip and a summary above the chart. ``against`` is a
:class:`ppviz.Calibration`, a :class:`ppviz.Config` (its costs run the measured program) or a
simulated :class:`ppviz.Result` of the measured program; anything of another size or program is
refused with a :class:`ppviz.ConfigError` naming what differs.

Wire format of the ``overlay`` trait (little-endian, each column on a 4-byte boundary, op ``k`` is
op ``k`` of the timeline):

==========================  =====  =====
magic ``"PPVO"``             u32    1
version (1)                  u32    1
n, the number of ops         u32    1
simulated start              f32    n
simulated end                f32    n
start residual (m − s)       f32    n
duration residual (m − s)    f32    n
communication excess         f32    n
host gap                     f32    n
==========================  =====  =====

The communication excess of an op is the measured transfer it waited for (its start − its
producer's end) − the modelled ``comm``, 0 if it waited for none; its host gap is how long its
device sat idle before it although its input was there.

Residuals are computed in float64 and rounded once, so they keep their precision on long steps.
The JSON summary goes in ``meta["overlay"]`` (:func:`describe_overlay`).
"""

from __future__ import annotations

import numpy as np

from ..analysis.calibrate import Calibration
from ..analysis.residuals import Residuals, _host_gaps, _waited_for_transfer, residuals
from ..core.config import Config
from ..core.errors import ConfigError
from ..core.measured import Measured
from ..core.result import Result

OVERLAY_MAGIC = 0x4F565050  # b"PPVO" read as little-endian u32
OVERLAY_VERSION = 1
#: the per-op f32 columns, in wire order
COLUMNS = ("sim_start", "sim_end", "start_residual", "duration_residual", "comm_excess", "host_gap")


def _action(program, k: int) -> str:
    d, _ = program.locate(k)
    return f"{program.action_at(k)} on device {d}"


def _first_difference(a, b) -> str:
    """The first op (in program order) where two programs of the same size differ."""
    n = min(len(a), len(b))
    for k in range(n):
        if (a.device[k], a.stage[k], a.kind[k], a.microbatch[k]) != (b.device[k], b.stage[k], b.kind[k],
                                                                       b.microbatch[k]):
            return f"op {k}: measured {_action(a, k)}, against {_action(b, k)}"
    return f"measured has {len(a)} ops, against {len(b)}"


def check_against(measured, against) -> None:
    """Refuse an ``against`` that does not describe the measured program, naming what differs."""
    if not isinstance(measured, Measured):
        raise ConfigError("against", type(against).__name__,
                          "against= compares a measured run (what ppviz.load_trace returns) with a simulation "
                          f"of its program; this chart shows a {type(measured).__name__}")
    if isinstance(against, Calibration):
        against = against.config
    program = measured.program
    if isinstance(against, Config):
        sizes = (("devices", program.devices), ("microbatches", program.microbatches),
                 ("stages_per_device", program.stages // max(program.devices, 1)))
        for field, wanted in sizes:
            if getattr(against, field) != wanted:
                raise ConfigError(f"against.{field}", getattr(against, field),
                                  f"the measured run has {field}={wanted}: give a config of the measured run's sizes")
        if against.schedule not in ("custom", program.name):
            raise ConfigError("against.schedule", against.schedule,
                              f"the measured run is {program.name!r}: give a config of that schedule (its costs "
                              "run the measured program), or compare other schedules with ppviz.compare")
        return
    if isinstance(against, Result):
        other = against.program
        for field in ("devices", "microbatches", "stages"):
            if getattr(other, field) != getattr(program, field):
                raise ConfigError(f"against.program.{field}", getattr(other, field),
                                  f"the measured run has {field}={getattr(program, field)}: give a Result of the "
                                  "measured program (or a Config, which is simulated with it)")
        if other != program:
            raise ConfigError("against.program", other.name,
                              f"it is not the measured program ({_first_difference(program, other)}): give a Result "
                              "of the measured program, or a Config, which is simulated with it")
        return
    raise ConfigError("against", type(against).__name__, "give a Calibration, a Config or a Result of the measured "
                                                         "program")


def overlay_of(measured, against) -> Residuals:
    """The residuals the overlay draws (checks ``against`` first; see :func:`check_against`)."""
    check_against(measured, against)
    return residuals(measured, against)


def per_op(res: Residuals) -> dict[str, np.ndarray]:
    """The overlay's per-op columns (float64), by name (:data:`COLUMNS`)."""
    measured, simulated = res.measured, res.simulated
    comm = float(simulated.config.comm)
    waited = _waited_for_transfer(measured)
    dep = measured.dependencies
    excess = np.zeros(len(measured.ops))
    excess[waited] = measured.ops.start[waited] - measured.ops.end[dep[waited]] - comm
    return {
        "sim_start": simulated.ops.start, "sim_end": simulated.ops.end,
        "start_residual": res.start, "duration_residual": res.duration,
        "comm_excess": excess, "host_gap": _host_gaps(measured),
    }


def encode_overlay(res: Residuals) -> bytes:
    """The ``overlay`` trait's bytes (module docstring)."""
    columns = per_op(res)
    n = len(res.measured.ops)
    header = np.array([OVERLAY_MAGIC, OVERLAY_VERSION, n], dtype="<u4").tobytes()
    # f32 columns are 4-byte multiples, so every column stays aligned
    return header + b"".join(np.asarray(columns[name], dtype="<f4").tobytes() for name in COLUMNS)


def decode_overlay(data: bytes) -> dict[str, np.ndarray]:
    """The per-op columns back from :func:`encode_overlay`'s bytes (for tests and tools)."""
    magic, version, n = np.frombuffer(data[:12], dtype="<u4")
    if magic != OVERLAY_MAGIC or version != OVERLAY_VERSION:
        raise ConfigError("overlay", f"magic {magic:#x}, version {version}",
                          f"give bytes written by encode_overlay (version {OVERLAY_VERSION})")
    body = np.frombuffer(data[12:], dtype="<f4")
    if len(body) != len(COLUMNS) * n:
        raise ConfigError("overlay", f"{len(data)} bytes", f"{12 + 4 * len(COLUMNS) * n} bytes for {n} ops")
    return {name: body[i * n:(i + 1) * n] for i, name in enumerate(COLUMNS)}


def describe_overlay(res: Residuals, label: str) -> dict:
    """The summary the widget prints above the overlay (``meta["overlay"]``)."""
    out = res.describe()
    out["label"] = label
    out["difference"] = float(res.difference)
    out["idle"] = [float(x) for x in res.idle]
    out["busy"] = [float(x) for x in res.busy]
    out["simulated_idle"] = [float(x) for x in res.simulated.idle]
    out["comm"] = float(res.simulated.config.comm)
    return out


def against_label(against) -> str:
    """How the summary names the simulation."""
    if isinstance(against, Calibration):
        return "calibrated simulation"
    config = against.config if isinstance(against, Result) else against
    return config.label or (f"{config.schedule} simulation" if config.schedule != "custom" else "simulation")
