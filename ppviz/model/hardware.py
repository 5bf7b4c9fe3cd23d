"""``ppviz.Hardware``: one accelerator's achievable compute rate and memory, and common ones as presets.

An op of ``x`` FLOPs takes ``x / (peak · efficiency)``: ``peak_tflops`` is the vendor's dense
(not 2:4-sparse) 16-bit tensor-core peak, and ``efficiency`` the share of it that a training
step's kernels sustain *while computing*. The pipeline's idle time (the bubble) and, later,
its communication are simulated by ppviz, so they must not be folded into ``efficiency``.

The default, :data:`DEFAULT_EFFICIENCY` = 0.5, is a round figure below what large dense models
reach end to end, bubble and communication included: 44–52 % of the A100's peak in Narayanan
et al. 2021 (Table 1, 1.7B–1T GPT models) and 38–43 % BF16 model-FLOPs utilisation on 16K H100s
for Llama 3 405B (Dubey et al. 2024, Table 4). Measure your own kernels' rate and give it when
you can: it scales every time ppviz reports.

``host_gbps`` is the bandwidth of the device's link to host memory, in GB/s (10^9 bytes) per
direction, which activation offload (``Config.offload``) copies over. Datasheets give PCIe's
bandwidth for both directions together (H100 SXM: "PCIe Gen5: 128GB/s"), so a preset's figure is
half of it: 64 GB/s for PCIe Gen5 x16, 32 GB/s for Gen4 x16. These are link rates; pinned-memory
copies reach somewhat less (measure ``cudaMemcpyAsync`` on your machine and give it).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..core.config import MAX_COST
from ..core.errors import ConfigError, checked_arguments
from .catalog import from_catalog

#: Share of the peak a training step's kernels sustain while computing (see the module docstring).
DEFAULT_EFFICIENCY = 0.5
GIB = 2**30


@checked_arguments
@dataclass(frozen=True, kw_only=True)
class Hardware:
    """An accelerator: ``peak_tflops`` (dense 16-bit tensor TFLOP/s), ``memory_gib`` (device
    memory, GiB) and ``efficiency`` (share of the peak sustained while computing).

    ``Hardware.preset("h100-sxm")`` gives a published one; ``Hardware.presets()`` lists them.
    """

    peak_tflops: float = field(kw_only=False)
    memory_gib: float
    efficiency: float = DEFAULT_EFFICIENCY
    name: str | None = field(default=None, compare=False)
    source: str | None = field(default=None, compare=False, repr=False)
    host_gbps: float | None = None

    def __post_init__(self):
        for name in ("peak_tflops", "memory_gib", "efficiency", "host_gbps"):
            value = getattr(self, name)
            if value is None and name == "host_gbps":
                continue
            # bounded so that rates and sizes derived from it (× 1e12, × 2**30) stay finite
            top = 1 if name == "efficiency" else MAX_COST
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= top:
                # one message per field, whichever side of its range the value falls
                raise ConfigError(name, value, "give a share of the peak, in (0, 1]" if name == "efficiency" else
                                  f"give a finite number > 0 and at most {MAX_COST:g}" +
                                  (" (GB/s per direction) or None" if name == "host_gbps" else ""))

    @property
    def flops_per_ms(self) -> float:
        """FLOPs computed per millisecond at the sustained rate."""
        return self.peak_tflops * 1e12 * self.efficiency / 1e3

    @property
    def memory_bytes(self) -> float:
        return self.memory_gib * GIB

    @property
    def host_link(self):
        """The device's link to host memory as a :class:`ppviz.Link` in seconds (latency 0:
        copies of an activation, tens of MB or more, are bandwidth-bound), or None."""
        from ..core.topology import Link

        return None if self.host_gbps is None else Link(0.0, bandwidth=self.host_gbps * 1e9, unit="s")

    def replace(self, **changes) -> "Hardware":
        """A copy with some fields changed, e.g. ``hardware.replace(efficiency=0.6)``."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def preset(cls, name: str, **changes) -> "Hardware":
        """A published accelerator by name (see :meth:`presets`), e.g. ``Hardware.preset("h100-sxm",
        efficiency=0.55)``."""
        return from_catalog(PRESETS, "hardware", name, cls, changes)

    @staticmethod
    def presets() -> dict[str, str]:
        """The preset names, each with its source."""
        return {name: entry["source"] for name, entry in PRESETS.items()}


#: Published figures: the dense BF16 tensor-core peak (vendors print the 2:4-sparse figure,
#: twice it, beside it) and the memory. Memory is the datasheet's "GB", which for these parts
#: is binary: an A100 80GB reports 81,920 MiB.
PRESETS: dict[str, dict] = {
    "a100-80gb": dict(peak_tflops=312.0, memory_gib=80.0, host_gbps=32.0,
                      source="NVIDIA A100 Tensor Core GPU datasheet (SXM): BF16 312 TFLOPS dense, 80GB HBM2e; "
                             "PCIe Gen4 64GB/s (both directions)"),
    "h100-sxm": dict(peak_tflops=989.4, memory_gib=80.0, host_gbps=64.0,
                     source="NVIDIA H100 Tensor Core GPU datasheet (SXM): BF16 1,979 TFLOPS with sparsity, "
                            "989.4 dense; 80GB HBM3; PCIe Gen5 128GB/s (both directions)"),
    "h200": dict(peak_tflops=989.4, memory_gib=141.0, host_gbps=64.0,
                 source="NVIDIA H200 Tensor Core GPU datasheet (SXM): BF16 1,979 TFLOPS with sparsity, 989.4 dense; "
                        "141GB HBM3e; PCIe Gen5 128GB/s (both directions)"),
    "b200": dict(peak_tflops=2250.0, memory_gib=180.0,
                 source="NVIDIA HGX B200 datasheet (1,000 W): BF16 4.5 PFLOPS with sparsity, 2.25 dense; 180GB "
                        "HBM3e per GPU (1,440GB per 8-GPU board)"),
    "mi300x": dict(peak_tflops=1307.4, memory_gib=192.0, host_gbps=64.0,
                   source="AMD Instinct MI300X datasheet: BF16 1,307.4 TFLOPS dense (2,614.9 with sparsity), "
                          "192GB HBM3; PCIe Gen5 x16 128GB/s (both directions)"),
}
