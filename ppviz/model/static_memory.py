"""Static memory of mixed-precision Adam: bytes per parameter, sharded by ZeRO over data parallelism.

Source: Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter
Models" (arXiv 1910.02054), §3.1 and Figure 1. Mixed-precision Adam keeps per parameter its
16-bit weight (2 bytes) and gradient (2 bytes) and K = 12 bytes of optimizer state (a 32-bit
copy of the weight, momentum and variance): (2 + 2 + K)·Ψ = 16·Ψ bytes for Ψ parameters. ZeRO
partitions over the N_d data-parallel replicas:

* stage 1 (P_os), the optimizer state: 4·Ψ + K·Ψ/N_d;
* stage 2 (P_os+g), the gradients too: 2·Ψ + (2 + K)·Ψ/N_d.

Their example, Ψ = 7.5B, N_d = 64: 120 GB, 31.4 GB, 16.6 GB. (Stage 3 also partitions the
weights but gathers them for every layer's forward and backward, which this model of time
does not include, so it is not offered.) Megatron's distributed optimizer is stage 1.
"""

from __future__ import annotations

from fractions import Fraction

from ..core.errors import ConfigError

WEIGHT = 2
GRADIENT = 2
OPTIMIZER = 12  # K: fp32 weight copy, momentum and variance
ZERO_STAGES = (0, 1, 2)


def bytes_per_param(zero_stage: int = 0, data_parallel: int = 1) -> Fraction:
    """Static bytes per parameter on one device: 16 without ZeRO, 4 + 12/N_d with stage 1,
    2 + 14/N_d with stage 2."""
    if zero_stage not in ZERO_STAGES or isinstance(zero_stage, bool):
        raise ConfigError("zero_stage", zero_stage, "give 0 (no sharding), 1 (optimizer state) or 2 (and "
                          "gradients); stage 3 is not modelled: its weight gathers take time this model omits")
    if isinstance(data_parallel, bool) or not isinstance(data_parallel, int) or data_parallel < 1:
        raise ConfigError("data_parallel", data_parallel, "give a whole number >= 1")
    d = data_parallel
    if zero_stage == 0:
        return Fraction(WEIGHT + GRADIENT + OPTIMIZER)
    if zero_stage == 1:
        return WEIGHT + GRADIENT + Fraction(OPTIMIZER, d)
    return WEIGHT + Fraction(GRADIENT + OPTIMIZER, d)


def static_bytes(params: int, zero_stage: int = 0, data_parallel: int = 1) -> Fraction:
    """Weights, gradients and optimizer state of ``params`` parameters on one device."""
    return params * bytes_per_param(zero_stage, data_parallel)
