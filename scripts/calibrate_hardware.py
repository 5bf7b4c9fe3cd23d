"""The step model's one calibration: the shares of their measured maxima that a training step's
GEMMs and memory-bound kernels sustain, fitted once to a measured per-pass profile.

    python scripts/calibrate_hardware.py        # prints the fit; ppviz/model/hardware.py stores it

The profile: Qi et al. 2024, "Zero Bubble Pipeline Parallelism" (ICLR'24, arXiv 2401.10241),
Table 9 — the profiled time of one pipeline stage's forward (T_F), input-gradient backward (T_B)
and weight-gradient backward (T_W) per microbatch, on A100 SXM 80GB GPUs running Megatron-LM
(fp16, dropout, Megatron's fused softmax), for four GPT models at sequence length 1024 with
their stated micro-batch sizes; a middle stage holds (layers + 2) / p transformer layers (the
paper's §5.1: the first and last stages hold one layer fewer). The fit, in log space over these
twelve times, sets ``gemm_share`` (of the A100's peak) and ``memory_share`` (of its HBM
bandwidth), with the per-kernel cost kept at its sourced 4 µs. ``ppviz.model.hardware`` stores
``SUSTAINED_GEMM`` = the fitted GEMM share over the A100's benchmark maximum (Bekman's Maximum
Achievable Matmul FLOPS, 267.9 of 312 TFLOP/s), which every preset applies to its own measured
maxima, and ``MEMORY_SHARE``. tests/test_model_roofline.py checks the stored values are this
fit's. Nothing in benchmarks/published_runs.py is fitted: its rows are other runs.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import least_squares

import ppviz
from ppviz.model import roofline
from ppviz.model.costs import Training

#: Qi et al. 2024 Table 9: model → (hidden, heads, micro-batch, layers of a middle stage, T_F, T_B, T_W) ms
PROFILE = {
    "1.5B": (2304, 24, 6, 3, 18.52, 18.09, 9.34),
    "6.2B": (4096, 32, 3, 4, 29.72, 29.44, 19.93),
    "14.6B": (5120, 40, 1, 3, 11.35, 11.25, 8.13),
    "28.3B": (6144, 48, 1, 2, 10.42, 10.21, 7.72),
}
A100_MAMF = 267.9 / 312  # the A100's measured best BF16 GEMM, as a share of its peak


def predicted(hardware: ppviz.Hardware) -> np.ndarray:
    out = []
    for hidden, heads, batch, layers, *_ in PROFILE.values():
        model = ppviz.Transformer(24, hidden=hidden, heads=heads, seq_len=1024, micro_batch_size=batch,
                                  norm="layernorm", bias=True, dropout=True, learned_positions=True)
        times = roofline.item_times(model, hardware, Training(flash_attention=False))["t"]
        out += [layers * times[phase][0] for phase in ("F", "I", "W")]
    return np.array(out)


def measured() -> np.ndarray:
    return np.array([t for row in PROFILE.values() for t in row[4:]])


def fit() -> tuple[float, float, float]:
    """(gemm share over the A100's maximum, memory share, rms error of the fit in log space)."""
    base = ppviz.Hardware.preset("a100-80gb")
    truth = measured()

    def residuals(x):
        return np.log(predicted(base.replace(gemm_share=x[0], memory_share=x[1])) / truth)

    found = least_squares(residuals, [0.8, 0.6], bounds=([0.3, 0.2], [1.0, 1.0]))
    return float(found.x[0] / A100_MAMF), float(found.x[1]), float(np.sqrt(np.mean(found.fun ** 2)))


if __name__ == "__main__":
    sustained, memory, rms = fit()
    print(f"SUSTAINED_GEMM = {sustained:.3f}  (GEMM share {sustained * A100_MAMF:.4f} of the A100's peak)")
    print(f"MEMORY_SHARE   = {memory:.3f}")
    print(f"rms error over the {len(measured())} passes: {rms:.1%}")
