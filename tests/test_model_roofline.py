"""Kernel times on a Hardware (ppviz.model.roofline): the GEMM curve's tile and wave
quantization, the roofline's memory leg, flash attention's and FP8's rates, the fixed cost per
kernel, the Hardware fields the timing needs; and the figures it gives against published
measurements (NVIDIA's Llama 3.1 8B run on H100, the zero-bubble paper's profiled A100 passes)."""

import importlib.util
from pathlib import Path

import pytest

from ppviz import ConfigError, Hardware, Transformer
from ppviz.model import flops
from ppviz.model.costs import Training
from ppviz.model.hardware import MEMORY_SHARE, SUSTAINED_GEMM
from ppviz.model.kernels import Kernel, item_kernels
from ppviz.model.roofline import (
    gemm_share,
    item_times,
    kernel_table,
    kernel_time,
    quantization,
)

ROOT = Path(__file__).resolve().parents[1]
H100 = Hardware.preset("h100-sxm")
A100 = Hardware.preset("a100-80gb")


def gemm(m, n, k, *, batch=1, fp8=False):
    return Kernel("g", "gemm", flops=2 * m * n * k * batch, bytes=batch * 2 * (m * k + k * n + m * n), m=m, n=n, k=k,
                  batch=batch, fp8=fp8)


def test_a_large_gemm_reaches_the_measured_share_less_its_last_wave():
    # 8192² in 256 × 128 tiles: 2,048 tiles, 15.5 waves of 132 SMs run as 16
    assert quantization(H100, 8192, 8192, k=8192) == pytest.approx(2048 / (16 * 132), rel=1e-15)
    # MAMF's best BF16 GEMM on an H100, 794.5 of 989.4 TFLOPS, at the share a training step sustains
    assert H100.gemm_share == round(794.5 / 989.4 * SUSTAINED_GEMM, 4)
    assert gemm_share(H100, 8192, 8192, k=8192) == pytest.approx(H100.gemm_share * 2048 / (16 * 132), rel=1e-15)
    assert gemm_share(H100, 8192, 8192, k=8192) > 0.96 * H100.gemm_share
    timed = kernel_time(gemm(8192, 8192, 8192), H100)
    assert timed.bound == "compute"
    assert timed.ms == pytest.approx((2 * 8192**3 / (989.4e12 * gemm_share(H100, 8192, 8192, k=8192)) + 4e-6) * 1e3)


def test_one_tile_past_a_full_wave_costs_a_second_wave():
    # 7 × 19 = 133 tiles of 256 × 128 on 132 SMs: two waves, the second nearly empty
    assert quantization(H100, 7 * 256, 19 * 128, k=4096) == pytest.approx(133 / 264)
    # 12 × 11 = 132 tiles fill one wave exactly
    assert quantization(H100, 12 * 256, 11 * 128, k=4096) == 1.0
    # tiles round up: 257 × 257 takes 2 × 3 tiles of 256 × 128 (or 3 × 2 of 128 × 256), two thirds idle
    assert quantization(Hardware(peak_tflops=1, memory_gib=1), 257, 257) == pytest.approx(257**2 / (6 * 256 * 128))


def test_a_skinny_gemm_is_slower_per_flop():
    big, skinny = kernel_time(gemm(8192, 8192, 8192), H100), kernel_time(gemm(8192, 128, 8192), H100)
    per_flop = (skinny.ms / (2 * 8192 * 128 * 8192)) / (big.ms / (2 * 8192**3))
    assert per_flop > 2 and skinny.bound == "memory"  # A (8192 × 8192) is read for 128 columns of output
    # too few tiles for a wave: K is split over the idle SMs rather than left idle
    assert quantization(H100, 8192, 128, k=8192) == pytest.approx(8192 * 128 * 4 / (132 * 256 * 128))


def test_a_memory_bound_kernel_takes_its_bytes_over_the_achieved_bandwidth_and_every_kernel_its_fixed_cost():
    norm = Kernel("norm", "memory", bytes=10**9)
    assert kernel_time(norm, H100).ms == pytest.approx((1e9 / (3350e9 * MEMORY_SHARE) + 4e-6) * 1e3, rel=1e-12)
    faster = H100.replace(memory_share=0.9, kernel_us=0)
    assert kernel_time(norm, faster).ms == pytest.approx(1e9 / (3350e9 * 0.9) * 1e3)
    assert kernel_time(norm, H100).bound == "memory"
    assert kernel_time(Kernel("tiny", "memory", bytes=1), H100).ms == pytest.approx(4e-3, rel=1e-6)


def test_flash_attention_runs_its_executed_flops_at_its_measured_shares():
    layer = item_kernels(Transformer.preset("llama-3-8b"), Training())["t"]
    forward = next(k for k in layer["F"].kernels if k.kind == "attention")
    backward = next(k for k in layer["I"].kernels if k.kind == "attention_backward")
    # FA3's measured 602 and 559 TFLOPS on H100, FA2's 73 % of an A100's peak, each at the sustained share
    assert kernel_time(forward, H100).ms == pytest.approx(
        (forward.flops / (602e12 * SUSTAINED_GEMM) + 4e-6) * 1e3, rel=1e-3)
    assert kernel_time(backward, H100).ms == pytest.approx(
        (backward.flops / (559e12 * SUSTAINED_GEMM) + 4e-6) * 1e3, rel=1e-3)
    assert kernel_time(forward, A100).ms == pytest.approx(
        (forward.flops / (312e12 * 0.73 * SUSTAINED_GEMM) + 4e-6) * 1e3, rel=1e-3)


def test_fp8_gemms_run_at_the_fp8_peak_and_share_and_need_an_fp8_rate():
    g = gemm(8192, 8192, 8192, fp8=True)
    rate = 1978.9e12 * gemm_share(H100, 8192, 8192, k=8192, fp8=True)
    assert kernel_time(g, H100).ms == pytest.approx((g.flops / rate + 4e-6) * 1e3)
    assert gemm_share(H100, 8192, 8192, k=8192, fp8=True) / gemm_share(H100, 8192, 8192, k=8192) == \
        pytest.approx(round(1453.4 / 1978.9 * SUSTAINED_GEMM, 4) / H100.gemm_share)
    with pytest.raises(ConfigError, match="fp8=True: a100-80gb has no FP8 rate"):
        kernel_time(g, A100)
    with pytest.raises(ConfigError, match="fp8=True: a100-80gb has no FP8 rate"):
        item_times(Transformer.preset("llama-3-8b"), A100, Training(fp8=True))


def test_a_hardware_without_its_curve_times_compute_at_its_efficiency_and_needs_a_bandwidth():
    mine = Hardware(peak_tflops=100, memory_gib=16, efficiency=0.4, hbm_gbps=1000)
    assert gemm_share(mine, 8192, 8192) == 0.4  # no SM count: tile quantization only, and 8192 fills its tiles
    layer = item_kernels(Transformer.preset("llama-3-8b"), Training())["t"]
    forward = next(k for k in layer["F"].kernels if k.kind == "attention")
    assert kernel_time(forward, mine).ms == pytest.approx((forward.flops / 40e12 + 4e-6) * 1e3)
    assert gemm_share(mine.replace(gemm_share=0.9), 8192, 8192) == 0.9
    with pytest.raises(ConfigError, match="hbm_gbps=None: this hardware has no memory bandwidth"):
        item_times(Transformer.preset("llama-3-8b"), Hardware(peak_tflops=100, memory_gib=16), Training())


@pytest.mark.parametrize("field, bad", [("tile", (256,)), ("tile", (0, 128)), ("sms", 0), ("sms", 1.5),
                                        ("gemm_share", 1.2), ("memory_share", 0), ("kernel_us", -1),
                                        ("hbm_gbps", -5), ("fp8_tflops", "fast"), ("nvlink_domain", True)])
def test_bad_curve_fields_are_refused_by_name(field, bad):
    with pytest.raises(ConfigError, match=f"^{field}="):
        Hardware(peak_tflops=100, memory_gib=16, **{field: bad})


def test_every_preset_has_what_the_step_model_needs():
    for name in Hardware.presets():
        hw = Hardware.preset(name)
        assert hw.hbm_gbps and hw.sms and hw.gemm_share and hw.nvlink_gbps and hw.nvlink_domain, name
    assert Hardware.preset("gb200").nvlink_domain == 72 and Hardware.preset("h800").nvlink_gbps == 200


def test_item_times_are_the_kernels_times_summed_with_the_phases_collectives():
    model, training = Transformer.preset("llama-3-70b"), Training(tensor_parallel=8)
    times, rows = item_times(model, H100, training), kernel_table(model, H100, training)
    for item in "EtmL":
        for phase in "FIWR":
            ms, collectives = times[item][phase]
            assert ms == pytest.approx(sum(r["ms"] for r in rows if r["item"] == item and r["phase"] == phase),
                                       rel=1e-12)
            assert collectives == list(item_kernels(model, training)[item][phase].collectives)
    assert {r["bound"] for r in rows} == {"compute", "memory"}
    assert sum(r["model_flops"] for r in rows if r["item"] == "t" and r["phase"] == "F") * 8 == \
        pytest.approx(flops.layer(model).f)


# -- against published measurements -------------------------------------------------------

def test_llama_3_8b_on_h100_lands_between_nvidias_measured_step_and_the_literature_ceiling():
    """NVIDIA dgxc-benchmarking, Llama 3.1 8B BF16 on 8 H100 (NeMo 24.12; TP 1, PP 1, CP 2, MBS 1,
    GBS 128, sequence 8,192): 12.78 s per step, i.e. 16 sequences per GPU in 798.75 ms each, and
    MFU 128 · 4.74e14 / 12.78 / 8 / 989e12 = 60.0 % with its model FLOPs (attention counted
    non-causal, as ppviz counts it). The step also exchanges K/V over the CP pair, reduces the
    gradients over DP, steps the optimizer and loads data, all outside the compute model, so the
    prediction must be faster, and within 25 %: with TP = PP = 1 the CP and DP traffic is
    overlapped (Megatron's defaults in that recipe), leaving a step that is mostly compute.
    Ceiling for one layer: its GEMMs at the best measured matmul rate (794.5 TFLOP/s, Bekman's
    MAMF table) and flash attention at FlashAttention-3's measured rates (602 forward, 559
    backward, Figure 5), nothing else."""
    model = Transformer.preset("llama-3-8b")
    times = item_times(model, H100, Training())
    sequence = sum(model.layers * times["t"][p][0] + times["E"][p][0] + times["L"][p][0] for p in "FIW")
    assert 0.75 < sequence / 798.75 < 1.0
    layer_ms = sum(times["t"][p][0] for p in "FIW")
    mfu = flops.layer(model).total / (layer_ms * 1e-3) / 989e12
    rows = [r for r in kernel_table(model, H100, Training()) if r["item"] == "t" and r["phase"] in "FIW"]
    ceiling_ms = sum(r["flops"] / {"gemm": 794.5e12, "attention": 602e12, "attention_backward": 559e12}[r["kind"]]
                     for r in rows if r["kind"] != "memory") * 1e3
    assert 0.600 < mfu < flops.layer(model).total / (ceiling_ms * 1e-3) / 989e12
    assert layer_ms > ceiling_ms


def test_the_stored_calibration_is_the_fit_to_the_zero_bubble_papers_profiled_a100_passes():
    """Qi et al. 2024 (zero bubble, arXiv 2401.10241), Table 9: twelve profiled passes (T_F, T_B,
    T_W of four GPT models) on A100s. scripts/calibrate_hardware.py fits the two shares to them
    once; the stored constants are that fit, and with them every pass lands within 15 %."""
    spec = importlib.util.spec_from_file_location("calibrate_hardware", ROOT / "scripts" / "calibrate_hardware.py")
    calibration = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(calibration)
    sustained, memory, rms = calibration.fit()
    assert (round(sustained, 3), round(memory, 3)) == (SUSTAINED_GEMM, MEMORY_SHARE)
    assert rms < 0.08
    errors = calibration.predicted(A100) / calibration.measured() - 1
    assert len(errors) == 12 and max(abs(errors)) < 0.15
