"""``ppviz.Hardware``: one accelerator's peaks, memory and links, the shares of those peaks its
kernels reach, and common accelerators as presets.

``Config.from_model`` times each kernel a microbatch runs (:mod:`ppviz.model.kernels`) by a
roofline (:mod:`ppviz.model.roofline`) on the fields below: ``peak_tflops`` (the vendor's dense,
not 2:4-sparse, 16-bit tensor-core peak), ``hbm_gbps``, ``sms``, ``tile``, ``fp8_tflops`` and the
curve's shares ``gemm_share`` (the share of the peak a training step's largest 16-bit GEMMs
sustain, η_max), ``gemm_share_fp8``, ``attention_share`` and ``attention_backward_share`` (flash
attention's forward and backward), ``memory_share`` (of the HBM bandwidth, for memory-bound
kernels) and ``kernel_us`` (a fixed cost per kernel). The bubble and the communication are
simulated, so none of these folds them in. A curve share left ``None`` falls back:
``gemm_share_fp8`` to ``gemm_share``, ``attention_backward_share`` to ``attention_share``, and
those two to ``efficiency`` (default :data:`DEFAULT_EFFICIENCY` = 0.5) — so a
``Hardware(peak_tflops=..., memory_gib=..., hbm_gbps=...)`` built by hand times its GEMMs and
attention at ``efficiency`` of the peak, after the shapes' tile and wave quantization. Each
preset's ``source`` names where every figure comes from.

The defaults shared by every preset:

- :data:`SUSTAINED_GEMM` and :data:`MEMORY_SHARE`, the calibration: fitted once
  (``scripts/calibrate_hardware.py``) to the zero-bubble paper's measured per-pass profile on
  A100s (Qi et al. 2024, Table 9), a training step's GEMMs sustain 0.941 of the benchmarks' best
  (so each preset's ``gemm_share`` is 0.941 of its measured maximum, flash attention's shares
  too) and its memory-bound kernels 0.593 of the HBM bandwidth. That sits where it should:
  QuACK's speed-of-light kernels (Guo, Zadouri, Dao 2025, "Getting Memory-bound Kernels to
  Speed-of-Light", sysml.cs.princeton.edu/blogs/memory-bound-kernels.html) reach about 0.9 of
  an H100's bandwidth and run 33–50 % faster than torch.compile's and Liger's kernels, i.e.
  those reach 0.6–0.68; Megatron's framework kernels are of that kind.
- :data:`KERNEL_US` = 4 µs per kernel (launch path and tail): "every time the CPU submits a kernel
  to the GPU ... this process takes about 4-6 μs" (susun-blog.com, "pegainfer (3): From Launch
  Overhead to CUDA Graph", RTX 5070 Ti, CUDA 13.0); on a B200 a ~24 µs kernel measured 28.3 µs per
  call launched directly and 25.8 µs from a CUDA graph (dogacel.github.io, 2026-03-14), i.e.
  2–4 µs of launch path per kernel.
- :data:`TILE` = 256 × 128 output elements per thread block: NVIDIA's "Matrix Multiplication
  Background User's Guide" (DU-09799-001, §2.3 "Typical Tile Dimensions In cuBLAS And
  Performance") names 256×128 and 128×256 the most efficient cuBLAS tiles; its chapter 3 (tile
  and wave quantization) is what :func:`ppviz.model.roofline.gemm_share` computes.

``host_gbps`` is the bandwidth of the device's link to host memory, in GB/s (10^9 bytes) per
direction, which activation offload (``Config.offload``) copies over. Datasheets give PCIe's
bandwidth for both directions together (H100 SXM: "PCIe Gen5: 128GB/s"), so a preset's figure is
half of it: 64 GB/s for PCIe Gen5 x16, 32 GB/s for Gen4 x16. These are link rates; pinned-memory
copies reach somewhat less (measure ``cudaMemcpyAsync`` on your machine and give it).
``nvlink_gbps`` is the scale-up link's bandwidth per GPU per direction (half the datasheet's
bidirectional total) and ``nvlink_domain`` how many GPUs it joins: 8 in a DGX/HGX box, 72 in a
GB200 NVL72 rack; the tensor-, expert- and data-parallel traffic models read them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..core.config import MAX_COST
from ..core.errors import ConfigError, checked_arguments
from .catalog import from_catalog

#: Share of the peak a training step's kernels sustain while computing (see the module docstring).
DEFAULT_EFFICIENCY = 0.5
#: The step model's one calibration (scripts/calibrate_hardware.py, fitted once to the per-pass
#: profile of Qi et al. 2024, Table 9, on A100s: 12 passes, rms error 7.0 %): the share of the
#: benchmarks' best GEMM a training step's GEMMs sustain, which every preset applies to its own
#: measured maxima (GEMMs and flash attention), and the share of the HBM bandwidth memory-bound
#: kernels reach.
SUSTAINED_GEMM = 0.941
MEMORY_SHARE = 0.593
#: Fixed cost of one kernel, microseconds: its launch path and tail (see the module docstring).
KERNEL_US = 4.0
#: Output tile of one thread block, rows × columns (see the module docstring).
TILE = (256, 128)
GIB = 2**30

_SHARES = ("efficiency", "gemm_share", "gemm_share_fp8", "attention_share", "attention_backward_share",
           "memory_share")
_RATES = ("peak_tflops", "memory_gib", "host_gbps", "hbm_gbps", "fp8_tflops", "nvlink_gbps")
_COUNTS = ("sms", "nvlink_domain")
_OPTIONAL = {"host_gbps", "hbm_gbps", "fp8_tflops", "nvlink_gbps", "gemm_share", "gemm_share_fp8",
             "attention_share", "attention_backward_share", "sms", "nvlink_domain"}


@checked_arguments
@dataclass(frozen=True, kw_only=True)
class Hardware:
    """An accelerator: ``peak_tflops`` (dense 16-bit tensor TFLOP/s), ``memory_gib`` (device
    memory, GiB) and ``efficiency`` (share of the peak sustained while computing, the constant
    model's), and for the step model from shapes: ``hbm_gbps`` (HBM GB/s), ``sms`` (streaming
    multiprocessors, or compute units), ``fp8_tflops`` (dense FP8 tensor TFLOP/s, None without
    FP8), ``gemm_share`` / ``gemm_share_fp8`` (share of the peak the largest GEMMs reach),
    ``attention_share`` / ``attention_backward_share`` (flash attention's), ``memory_share`` (of
    the HBM bandwidth), ``kernel_us`` (fixed cost per kernel, µs), ``tile`` (a thread block's
    output tile), ``nvlink_gbps`` (scale-up link GB/s per direction) and ``nvlink_domain`` (GPUs
    it joins). The module docstring says how each is used and what a share left None means.

    ``Hardware.preset("h100-sxm")`` gives a published one; ``Hardware.presets()`` lists them.
    """

    peak_tflops: float = field(kw_only=False)
    memory_gib: float
    efficiency: float = DEFAULT_EFFICIENCY
    name: str | None = field(default=None, compare=False)
    source: str | None = field(default=None, compare=False, repr=False)
    host_gbps: float | None = None
    hbm_gbps: float | None = None
    sms: int | None = None
    fp8_tflops: float | None = None
    gemm_share: float | None = None
    gemm_share_fp8: float | None = None
    attention_share: float | None = None
    attention_backward_share: float | None = None
    memory_share: float = MEMORY_SHARE
    kernel_us: float = KERNEL_US
    tile: tuple = TILE
    nvlink_gbps: float | None = None
    nvlink_domain: int | None = None

    def __post_init__(self):
        for name in _RATES + _SHARES:
            value = getattr(self, name)
            if value is None and name in _OPTIONAL:
                continue
            # bounded so that rates and sizes derived from it (× 1e12, × 2**30) stay finite
            top = 1 if name in _SHARES else MAX_COST
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= top:
                # one message per field, whichever side of its range the value falls
                raise ConfigError(name, value, "give a share of the peak, in (0, 1]" if name in _SHARES else
                                  f"give a finite number > 0 and at most {MAX_COST:g}" +
                                  (" (GB/s per direction) or None" if name in ("host_gbps", "nvlink_gbps") else
                                   " or None" if name in _OPTIONAL else ""))
        for name in _COUNTS:
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or not 1 <= value <= 10**6):
                raise ConfigError(name, value, "give a whole number from 1 to 1,000,000, or None")
        us = self.kernel_us
        if isinstance(us, bool) or not isinstance(us, (int, float)) or not 0 <= us <= 1e6:
            raise ConfigError("kernel_us", us, "give the fixed cost of one kernel in microseconds, from 0 to 1e6")
        tile = tuple(self.tile) if isinstance(self.tile, (tuple, list)) else self.tile
        if (not isinstance(tile, tuple) or len(tile) != 2
                or any(isinstance(x, bool) or not isinstance(x, int) or not 1 <= x <= 4096 for x in tile)):
            raise ConfigError("tile", self.tile, "give a thread block's output tile as two whole numbers from "
                              "1 to 4096, rows and columns, e.g. (256, 128)")
        object.__setattr__(self, "tile", tile)

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


# Sources the presets share; each figure is read where named.
_MAMF = ("Bekman, 'Machine Learning Engineering' (github.com/stas00/ml-engineering), Maximum Achievable "
         "Matmul FLOPS tables (BF16 matmul, best shape of a brute-force search)")
_FA2 = ("Dao 2023, 'FlashAttention-2' (arXiv 2307.08691), §4.1: forward up to 73 % and backward up to 63 % of "
        "the A100's theoretical peak")
_FA3 = ("Shah et al. 2024, 'FlashAttention-3' (arXiv 2407.08608), Figure 5, head dim 128, sequence 8k, H100 SXM5: "
        "causal forward 602 TFLOP/s (646 non-causal), backward 559 TFLOP/s")
_DGXC = "NVIDIA dgxc-benchmarking README (peak table 'based on non-sparse specifications'; reference architectures)"

# The curves of a generation's parts (measured on one of them, as each preset's source says).
def _sustained(best: float, peak: float) -> float:
    """A benchmark's best rate as the share of the peak a training step sustains (SUSTAINED_GEMM)."""
    return round(best / peak * SUSTAINED_GEMM, 4)


_FA3_SHARES = dict(attention_share=_sustained(602, 989.4), attention_backward_share=_sustained(559, 989.4))
_HOPPER = dict(sms=132, fp8_tflops=1978.9, gemm_share=_sustained(794.5, 989.4),
               gemm_share_fp8=_sustained(1453.4, 1978.9), **_FA3_SHARES)
_BLACKWELL = dict(sms=148, gemm_share=_sustained(1745.0, 2250), gemm_share_fp8=_sustained(3432.5, 4500),
                  **_FA3_SHARES)

#: Published figures: the dense BF16 tensor-core peak (vendors print the 2:4-sparse figure,
#: twice it, beside it), the memory (the datasheet's "GB", which for these parts is binary: an A100
#: 80GB reports 81,920 MiB), and the step model's curve with the source of each number; the
#: GEMM and attention shares are the sources' best rates times SUSTAINED_GEMM (the calibration).
PRESETS: dict[str, dict] = {
    "a100-80gb": dict(
        peak_tflops=312.0, memory_gib=80.0, host_gbps=32.0, hbm_gbps=2039.0, sms=108,
        gemm_share=_sustained(267.9, 312), attention_share=_sustained(0.73, 1), attention_backward_share=_sustained(0.63, 1),
        nvlink_gbps=300.0, nvlink_domain=8,
        source="NVIDIA A100 Tensor Core GPU datasheet (SXM): BF16 312 TFLOPS dense, 80GB HBM2e at 2,039 GB/s, "
               "108 SMs, no FP8; PCIe Gen4 64GB/s (both directions); NVLink 600 GB/s (300 per direction), 8 GPUs "
               f"on NVSwitch in a DGX A100. GEMMs: {_MAMF}: A100 SXM 267.9 of 312 (85.9 %). Attention: {_FA2}"),
    "h100-sxm": dict(
        peak_tflops=989.4, memory_gib=80.0, host_gbps=64.0, hbm_gbps=3350.0, **_HOPPER, nvlink_gbps=450.0,
        nvlink_domain=8,
        source="NVIDIA H100 Tensor Core GPU datasheet (SXM): BF16 1,979 TFLOPS with sparsity, 989.4 dense; FP8 "
               "1,978.9 dense; 80GB HBM3 at 3.35 TB/s; 132 SMs; PCIe Gen5 128GB/s (both directions); NVLink 900 "
               f"GB/s (450 per direction, 18 links), 8 GPUs in a DGX H100 ({_DGXC}). GEMMs: {_MAMF}: H100/H200 SXM "
               "BF16 794.5 (80.3 %), FP8 1,453.4 of 1,979 (73.4 %, measured on H200, the same GH100 compute). "
               f"Attention: {_FA3}"),
    "h800": dict(
        peak_tflops=989.4, memory_gib=80.0, host_gbps=64.0, hbm_gbps=3350.0, **_HOPPER, nvlink_gbps=200.0,
        nvlink_domain=8,
        source="H800 SXM: NVLink 400 GB/s bidirectional, 'unidirectional peak BW 200GB/s' (NVIDIA/nccl issue "
               "1374); no datasheet was read, so its compute, HBM, SMs and curve are the H100 SXM's (the H800 is "
               "the H100 with a cut NVLink). H100 figures: see the h100-sxm preset"),
    "h200": dict(
        peak_tflops=989.4, memory_gib=141.0, host_gbps=64.0, hbm_gbps=4800.0, **_HOPPER, nvlink_gbps=450.0,
        nvlink_domain=8,
        source="NVIDIA H200 Tensor Core GPU datasheet (SXM): BF16 1,979 TFLOPS with sparsity, 989.4 dense; FP8 "
               "3,958 with sparsity, 1,978.9 dense; 141GB HBM3e at 4.8 TB/s; PCIe Gen5 128GB/s (both directions); "
               "NVLink 900 GB/s (450 per direction), 8 GPUs; 132 SMs (the GH100 of the H100). GEMMs: "
               f"{_MAMF}: H100/H200 SXM BF16 794.5 (80.3 %), H200 FP8 1,453.4 (73.4 %). Attention: {_FA3} (the "
               "H100's: the same SMs)"),
    "b200": dict(
        peak_tflops=2250.0, memory_gib=180.0, hbm_gbps=7700.0, **_BLACKWELL, fp8_tflops=4500.0, nvlink_gbps=900.0,
        nvlink_domain=8,
        source="NVIDIA HGX B200 datasheet (1,000 W): BF16 4.5 PFLOPS with sparsity, 2.25 dense; FP8 4.5 dense; 180GB "
               f"HBM3e per GPU (1,440GB per 8-GPU board); {_DGXC}: DGX B200 'Memory bandwidth 7.7 TB/s per GPU', "
               "NVLink 5th generation 1.8 TB/s per GPU (900 per direction), 8 GPUs; 148 SMs (Mirage persistent "
               f"kernel paper, Table 1). GEMMs: {_MAMF}: B200 BF16 1,745.0 (77.6 %), FP8 3,432.5 (76.3 %). "
               "Attention: no Blackwell measurement was found; the H100's FlashAttention-3 shares are assumed "
               f"({_FA3})"),
    "gb200": dict(
        peak_tflops=2450.0, memory_gib=186.0, hbm_gbps=8000.0, **_BLACKWELL, fp8_tflops=4900.0, nvlink_gbps=900.0,
        nvlink_domain=72,
        source=f"GB200 NVL72, per B200 GPU ({_DGXC}): BF16 2,450 and FP8 4,900 TFLOPS dense (NVIDIA computes its "
               "GB200 MFU against these), 186 GB HBM3e at 8 TB/s, NVLink 1.8 TB/s per GPU (900 per direction) over "
               "the rack's 72 GPUs; 148 SMs as the B200. GEMMs: the B200's measurement (same chip; "
               f"{_MAMF}: 77.6 % BF16, 76.3 % FP8); attention: the H100's FlashAttention-3 shares, assumed ({_FA3})"),
    "mi300x": dict(
        peak_tflops=1307.4, memory_gib=192.0, host_gbps=64.0, hbm_gbps=5300.0, sms=304, fp8_tflops=2614.9,
        gemm_share=_sustained(781.9, 1307.4), nvlink_gbps=448.0, nvlink_domain=8,
        source="AMD Instinct MI300X datasheet: BF16 1,307.4 TFLOPS dense (2,614.9 with sparsity), FP8 2,614.9 "
               "dense, 192GB HBM3 at 5.3 TB/s, 304 compute units; PCIe Gen5 x16 128GB/s (both directions); 7 "
               "Infinity Fabric links, 896 GB/s aggregate (448 per direction), 8 GPUs fully connected. GEMMs: "
               f"{_MAMF}: MI300X 781.9 TFLOPS (ROCm 6.2). No FP8 GEMM or flash-attention measurement was found: "
               "FP8 GEMMs take the BF16 share and attention the efficiency"),
}
