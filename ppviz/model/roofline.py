"""A kernel's time on a :class:`ppviz.Hardware`: a roofline, and each item's phases timed from the
kernels :mod:`ppviz.model.kernels` lists.

- A GEMM takes max(executed FLOPs / (peak · η(M, N)), bytes / (HBM bandwidth · memory share)):
  η(M, N) = η_max · q(M, N), η_max the share of the peak the largest GEMMs reach
  (``Hardware.gemm_share``, or ``gemm_share_fp8`` at the FP8 peak for an FP8 GEMM) and q the
  dimension quantization of NVIDIA's "Matrix Multiplication Background User's Guide"
  (DU-09799-001, ch. 3): the output is computed in tiles of ``Hardware.tile`` (256 × 128, its
  §2.3's most efficient cuBLAS tile, in whichever orientation fits better), one tile per SM at a
  time, so ceil(M/Mt) · ceil(N/Nt) tiles per GEMM of the batch run in ceil(tiles / SMs) waves and
  q = M · N · batch / (waves · SMs · Mt · Nt), the share of the tile slots doing useful work (tile
  quantization is the rounding of M and N up to whole tiles, wave quantization that of the tiles
  up to whole waves). The largest GEMMs' q is about 1, where η_max was measured; a skinny GEMM
  (2·132 + 1 tiles on 132 SMs) wastes most of its last wave, and one too small to fill a
  wave splits its K dimension (:func:`quantization`).
- Flash attention's forward and backward kernels run their executed FLOPs at
  ``attention_share`` / ``attention_backward_share`` of the 16-bit peak — shares measured against
  the same executed-FLOPs count (FlashAttention-2 on A100, FlashAttention-3 on H100: see the
  presets' sources), memory permitting.
- A memory-bound kernel takes bytes / (HBM bandwidth · ``memory_share``).
- Every kernel costs ``kernel_us`` more: its launch path and tail (sources in
  :mod:`ppviz.model.hardware`).

A phase's compute time is the sum of its kernels' (one stream, in order); its collectives are
returned beside it, untimed, for the communication model.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..core.errors import ConfigError
from .hardware import Hardware
from .kernels import Kernel, item_kernels
from .transformer import Transformer

#: Smallest piece of K a split-K GEMM gives one thread block.
SPLIT_K_MIN = 256


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def quantization(hardware: Hardware, m: int, n: int, batch: int = 1, k: int | None = None) -> float:
    """q(M, N): the share of the tile slots of its waves a GEMM (``batch`` of them in one launch)
    keeps busy, in the better of the tile's two orientations (module docstring); without ``sms``
    only tile quantization counts.

    A problem smaller than the tile takes a tile no larger than itself (rounded up to 16, the
    tensor cores' granularity), and one that fills less than a wave splits its K dimension
    (``k``) over the idle SMs, in pieces of at least :data:`SPLIT_K_MIN` — the split-K and
    stream-K decompositions cuBLAS and CUTLASS use for such shapes (Osama et al. 2023,
    "Stream-K: Work-centric Parallel Decomposition for Dense Matrix-Matrix Multiplication on the
    GPU", PPoPP'23). Their partial sums' reduction is not counted."""
    rows, cols = hardware.tile
    best = 0.0
    for tm, tn in {(rows, cols), (cols, rows)}:
        tm, tn = min(tm, _ceil(m, 16) * 16), min(tn, _ceil(n, 16) * 16)
        tiles = _ceil(m, tm) * _ceil(n, tn) * batch
        splits = 1
        if hardware.sms is not None and k is not None and tiles < hardware.sms:
            splits = max(1, min(hardware.sms // tiles, k // SPLIT_K_MIN))
        work = tiles * splits
        slots = work if hardware.sms is None else _ceil(work, hardware.sms) * hardware.sms
        best = max(best, m * n * batch * splits / (slots * tm * tn))
    return best


def _share(hardware: Hardware, name: str) -> float:
    """A curve share, or what it falls back to (module docstring of :mod:`ppviz.model.hardware`)."""
    fallback = {"gemm_share_fp8": "gemm_share", "attention_backward_share": "attention_share",
                "gemm_share": "efficiency", "attention_share": "efficiency"}
    while getattr(hardware, name) is None:
        name = fallback[name]
    return getattr(hardware, name)


def gemm_share(hardware: Hardware, m: int, n: int, batch: int = 1, k: int | None = None, *,
               fp8: bool = False) -> float:
    """η(M, N) = η_max · q(M, N): the share of the (16-bit, or with ``fp8`` the FP8) peak a GEMM
    of an M × N output (K deep) reaches."""
    return _share(hardware, "gemm_share_fp8" if fp8 else "gemm_share") * quantization(hardware, m, n, batch, k)


@dataclass(frozen=True)
class Timed:
    """A kernel's time on one hardware: ``ms`` in all, and whether the larger roofline leg was
    ``"compute"`` or ``"memory"``."""

    kernel: Kernel
    ms: float
    bound: str


def _peak(hardware: Hardware, fp8: bool) -> float:
    if not fp8:
        return hardware.peak_tflops
    if hardware.fp8_tflops is None:
        raise ConfigError("fp8", True, "give fp8=False, or a Hardware with fp8_tflops (its dense FP8 peak)",
                          reason=f"{hardware.name or 'this hardware'} has no FP8 rate")
    return hardware.fp8_tflops


def _hbm_gbps(hardware: Hardware) -> float:
    if hardware.hbm_gbps is None:
        raise ConfigError("hbm_gbps", None, "give the hardware's HBM bandwidth in GB/s (e.g. Hardware.preset("
                          "'h100-sxm') has 3,350): memory-bound kernels are timed by it",
                          reason=f"{hardware.name or 'this hardware'} has no memory bandwidth")
    return hardware.hbm_gbps


def kernel_time(kernel: Kernel, hardware: Hardware) -> Timed:
    """The kernel's time on ``hardware`` (module docstring)."""
    memory = kernel.bytes / (_hbm_gbps(hardware) * 1e9 * hardware.memory_share)
    if kernel.kind == "gemm":
        share = gemm_share(hardware, kernel.m, kernel.n, kernel.batch, kernel.k, fp8=kernel.fp8)
        rate = _peak(hardware, kernel.fp8) * share
    elif kernel.kind == "attention":
        rate = hardware.peak_tflops * _share(hardware, "attention_share")
    elif kernel.kind == "attention_backward":
        rate = hardware.peak_tflops * _share(hardware, "attention_backward_share")
    else:
        rate = None
    compute = 0.0 if rate is None else kernel.flops / (rate * 1e12)
    seconds = max(compute, memory) + hardware.kernel_us * 1e-6
    return Timed(kernel, seconds * 1e3, "compute" if compute > memory else "memory")


@functools.lru_cache(maxsize=512)
def _timed(model: Transformer, hardware: Hardware, training) -> dict:
    if training.fp8:
        _peak(hardware, True)
    return {item: {phase: ([kernel_time(k, hardware) for k in p.kernels], p.collectives)
                   for phase, p in phases.items()}
            for item, phases in item_kernels(model, training).items()}


def item_times(model: Transformer, hardware: Hardware, training) -> dict[str, dict[str, tuple[float, list]]]:
    """``{item: {phase: (compute_ms, [Collective, ...])}}`` for the items ``E``, ``t``, ``m``,
    ``L`` and the phases ``F``, ``I``, ``W``, ``R`` of one microbatch on one device of its
    tensor-parallel group (``training`` a :class:`ppviz.model.costs.Training`): the kernels' times
    summed, and the collectives the phase issues, each with the number of kernels before it."""
    return {item: {phase: (sum(t.ms for t in timed), list(collectives))
                   for phase, (timed, collectives) in phases.items()}
            for item, phases in _timed(model, hardware, training).items()}


def kernel_table(model: Transformer, hardware: Hardware, training) -> list[dict]:
    """One row per kernel of every item and phase, in order: ``item``, ``phase``, ``kernel``,
    ``kind``, ``shape`` (a GEMM's M × N × K), executed ``flops``, ``model_flops``, ``bytes``,
    ``ms`` and ``bound`` ("compute" or "memory")."""
    return [dict(item=item, phase=phase, kernel=t.kernel.name, kind=t.kernel.kind, shape=t.kernel.shape,
                 flops=t.kernel.flops, model_flops=float(t.kernel.model_flops), bytes=t.kernel.bytes, ms=t.ms,
                 bound=t.bound)
            for item, phases in _timed(model, hardware, training).items()
            for phase, (timed, _) in phases.items() for t in timed]

