"""Placement: which device runs each (stage, microbatch).

Most schedules map a stage to one device. DualPipe keeps two replicas of the model that
number their stages the same way, so the device also depends on the microbatch: the first
``split`` microbatches use the "down" replica (stage s on device s) and the rest the "up"
replica (stage s on device p-1-s).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import ConfigError, checked_arguments

@checked_arguments
@dataclass(frozen=True, kw_only=True)
class Placement:
    """Stage → device map, optionally with a second replica for microbatches >= ``split``."""

    style: str = field(kw_only=False)
    devices: int
    stage_device: tuple[int, ...]
    reverse_device: tuple[int, ...] | None = None
    split: int | None = None

    @property
    def stages(self) -> int:
        return len(self.stage_device)

    # Constructors -----------------------------------------------------------------------

    @classmethod
    def contiguous(cls, devices: int, stages_per_device: int = 1) -> "Placement":
        """Device d holds stages d·v … d·v+v−1 (a plain pipeline when v = 1)."""
        v = stages_per_device
        return cls("contiguous", devices=devices, stage_device=tuple(s // v for s in range(devices * v)))

    @classmethod
    def loop(cls, devices: int, stages_per_device: int) -> "Placement":
        """Round-robin (Megatron's virtual pipeline): stage s on device s mod p."""
        return cls("loop", devices=devices, stage_device=tuple(s % devices for s in range(devices * stages_per_device)))

    @classmethod
    def v_shape(cls, devices: int, stages_per_device: int = 2) -> "Placement":
        """Zig-zag as torch's ``generate_stage_to_rank_mapping(style="v")``: 0..p−1, p−1..0, …"""
        p = devices
        mapping = []
        for s in range(p * stages_per_device):
            lap, k = divmod(s, p)
            mapping.append(k if lap % 2 == 0 else p - 1 - k)
        return cls("v", devices=p, stage_device=tuple(mapping))

    @classmethod
    def bidirectional(cls, devices: int, microbatches: int) -> "Placement":
        """DualPipe's two replicas: microbatches < m/2 flow down (stage s on device s), the rest up."""
        p = devices
        return cls(
            "bidirectional",
            devices=p,
            stage_device=tuple(range(p)),
            reverse_device=tuple(p - 1 - s for s in range(p)),
            split=microbatches // 2,
        )

    @classmethod
    def from_mapping(cls, devices: int, stage_device) -> "Placement":
        """A custom stage → device map; recognised as a named style when it matches one."""
        mapping = tuple(int(d) for d in stage_device)
        stages = len(mapping)
        if stages == 0:
            raise ConfigError("placement", mapping, "give at least one stage")
        if any(not 0 <= d < devices for d in mapping):
            raise ConfigError("placement", mapping, f"every device must be in 0..{devices - 1}")
        if stages % devices == 0:
            v = stages // devices
            for candidate in (cls.contiguous(devices, v), cls.loop(devices, v), cls.v_shape(devices, v)):
                if candidate.stage_device == mapping:
                    return candidate
        return cls("custom", devices=devices, stage_device=mapping)

    # Queries ----------------------------------------------------------------------------

    def device_of(self, stage, microbatch):
        """Device(s) of (stage, microbatch); works on scalars and numpy arrays."""
        down = np.asarray(self.stage_device)[stage]
        if self.reverse_device is None:
            return down
        up = np.asarray(self.reverse_device)[stage]
        return np.where(np.asarray(microbatch) < self.split, down, up)

    def stages_on(self, device: int) -> list[int]:
        """Stages whose ops run on ``device`` (both replicas for DualPipe)."""
        found = [s for s, d in enumerate(self.stage_device) if d == device]
        if self.reverse_device is not None:
            found += [s for s, d in enumerate(self.reverse_device) if d == device]
        return sorted(set(found))

    def replicas_on(self, device: int) -> int:
        """Number of (replica, stage) slices the device holds: its static memory multiplier."""
        return int(self.replica_counts()[device])

    def replica_counts(self) -> np.ndarray:
        """:meth:`replicas_on` of every device, as one array."""
        counts = np.bincount(self.stage_device, minlength=self.devices)
        if self.reverse_device is not None:
            counts = counts + np.bincount(self.reverse_device, minlength=self.devices)
        return counts

    def describe(self, device: int) -> str:
        """Short row label, e.g. ``"stages 0, 4"`` or ``"stages 0↓ 3↑"`` for DualPipe."""
        if self.reverse_device is None:
            stages = self.stages_on(device)
            return ("stage " if len(stages) == 1 else "stages ") + ", ".join(map(str, stages))
        down = [s for s, d in enumerate(self.stage_device) if d == device]
        up = [s for s, d in enumerate(self.reverse_device) if d == device]
        return "stages " + " ".join([f"{s}↓" for s in down] + [f"{s}↑" for s in up])
