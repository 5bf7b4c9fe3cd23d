"""ppviz.model's formulas reproduce the cited papers' own figures exactly (or within the rounding
the paper prints), computed through the package's functions, not re-typed formulas.

Sources: Narayanan et al. 2021 (arXiv 2104.04473), Table 1 and the FLOPs-per-iteration
equation of §5.1; Korthikanti et al. 2022 (arXiv 2205.05198), Tables 2 and 3 and §5;
Rajbhandari et al. 2020, ZeRO (arXiv 1910.02054), Figure 1 and Table 1; Qi et al. 2024,
zero bubble (arXiv 2401.10241), Table 1; the presets' published parameter counts.
"""

from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

import pytest

from ppviz import Transformer
from ppviz.model import activations, flops
from ppviz.model.activations import Parallel
from ppviz.model.static_memory import bytes_per_param, static_bytes


def printed(value, digits: int) -> str:
    """``value`` (exact) rounded half up to ``digits`` decimals, as the papers print."""
    exact = Decimal(Fraction(value).numerator) / Decimal(Fraction(value).denominator)
    return str(exact.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def megatron_gpt(layers, hidden, heads, *, seq_len=2048, vocab=51200, micro_batch_size=1):
    """The GPT models of Narayanan et al. and Korthikanti et al.: vocabulary 51,200, sequence
    2,048, MLP 4h, biases, LayerNorm, learned positions, tied embeddings, dropout."""
    return Transformer(layers=layers, hidden=hidden, heads=heads, vocab=vocab, seq_len=seq_len,
                       micro_batch_size=micro_batch_size, bias=True, norm="layernorm", learned_positions=True,
                       tied_embeddings=True, dropout=True)


# Narayanan et al. 2021, Table 1: parameters (billion), heads, hidden, layers, and batch size
NARAYANAN_TABLE_1 = [
    ("1.7", 24, 2304, 24, 512), ("3.6", 32, 3072, 30, 512), ("7.5", 32, 4096, 36, 512),
    ("18.4", 48, 6144, 40, 1024), ("39.1", 64, 8192, 48, 1536), ("76.1", 80, 10240, 60, 1792),
    ("145.6", 96, 12288, 80, 2304), ("310.1", 128, 16384, 96, 2160), ("529.6", 128, 20480, 105, 2520),
    ("1008.0", 160, 25600, 128, 3072),
]


@pytest.mark.parametrize("billions, heads, hidden, layers, batch", NARAYANAN_TABLE_1)
def test_narayanan_table_1_parameter_counts(billions, heads, hidden, layers, batch):
    model = megatron_gpt(layers, hidden, heads)
    assert printed(Fraction(model.params, 10**9), 1) == billions


@pytest.mark.parametrize("billions, heads, hidden, layers, batch", NARAYANAN_TABLE_1)
def test_narayanan_flops_per_iteration_with_recompute(billions, heads, hidden, layers, batch):
    # F = 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)): forward, backward and the full recompute of
    # every layer, and the LM head's forward and backward
    model = megatron_gpt(layers, hidden, heads)
    s, l, h, V, B = 2048, layers, hidden, 51200, batch
    paper = 96 * B * s * l * h * h * (1 + Fraction(s, 6 * h) + Fraction(V, 16 * l * h))
    assert flops.iteration(model, microbatches=batch, recompute="full") == paper


@pytest.mark.parametrize("billions, heads, hidden, layers, batch", NARAYANAN_TABLE_1[::3])
def test_model_flops_without_recompute(billions, heads, hidden, layers, batch):
    # Korthikanti et al., "model FLOPs": 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h))
    model = megatron_gpt(layers, hidden, heads)
    s, l, h, V, B = 2048, layers, hidden, 51200, batch
    paper = 72 * B * s * l * h * h * (1 + Fraction(s, 6 * h) + Fraction(V, 12 * l * h))
    assert flops.iteration(model, microbatches=batch) == paper


@pytest.mark.parametrize("b, s, h, a", [(1, 2048, 12288, 96), (4, 2048, 6144, 64), (2, 4096, 4096, 32), (3, 7, 8, 2)])
def test_zero_bubble_table_1_flops_and_memory_per_layer(b, s, h, a):
    # F = sbh(24h + 4s), B (our I) = sbh(24h + 8s), W = sbh(24h); M_B = 34sbh + 5as²b, M_W = 32sbh
    model = megatron_gpt(1, h, a, seq_len=s, micro_batch_size=b)
    layer = flops.layer(model)
    assert (layer.f, layer.i, layer.w) == (s * b * h * (24 * h + 4 * s), s * b * h * (24 * h + 8 * s), s * b * h * 24 * h)
    assert layer.backward == 2 * layer.f
    assert activations.layer_bytes(model) == 34 * s * b * h + 5 * a * s * s * b
    assert activations.weight_gradient_bytes(model) == 32 * s * b * h
    assert activations.weight_gradient_share(model, flash_attention=True) == pytest.approx(32 / 34, rel=1e-15)


# Korthikanti et al. 2022, Table 3: heads, hidden, layers, tensor-parallel size, micro-batch size
KORTHIKANTI_TABLE_3 = {"22B": (64, 6144, 48, 8, 4), "175B": (96, 12288, 96, 8, 1), "530B": (128, 20480, 105, 8, 1),
                       "1T": (160, 25600, 128, 8, 1)}


@pytest.mark.parametrize("name", list(KORTHIKANTI_TABLE_3))
def test_korthikanti_table_2_activations_per_layer(name):
    a, h, layers, t, b = KORTHIKANTI_TABLE_3[name]
    s = 2048
    model = megatron_gpt(layers, h, a, micro_batch_size=b)
    sbh = s * b * h
    tp, tp_sp = Parallel(t), Parallel(t, sequence=True)
    table_2 = [
        (Parallel(), {}, sbh * (34 + Fraction(5 * a * s, h))),
        (tp, {}, sbh * (10 + Fraction(24, t) + Fraction(5 * a * s, h * t))),
        (tp_sp, {}, sbh * (Fraction(34, t) + Fraction(5 * a * s, h * t))),
        (tp, {"recompute": "selective"}, sbh * (10 + Fraction(24, t))),
        (tp_sp, {"recompute": "selective"}, sbh * Fraction(34, t)),
        (Parallel(), {"recompute": "full"}, sbh * 2),
    ]
    for parallel, options, paper in table_2:
        assert activations.layer_bytes(model, parallel, **options) == paper, (parallel, options)
    # flash attention stores none of the s²-sized terms either
    assert activations.layer_bytes(model, tp_sp, flash_attention=True) == sbh * Fraction(34, t)


@pytest.mark.parametrize("name, ratio, saved", [("175B", 80, "70%"), ("530B", 64, "65%")])
def test_korthikanti_selective_recompute_saving(name, ratio, saved):
    # §5: 5as/h is 80 for GPT-3 and 64 for MT-NLG, so selective recompute saves 70% and 65% of
    # the activation memory (34 + 5as/h → 34 per s·b·h)
    a, h, layers, t, b = KORTHIKANTI_TABLE_3[name]
    model = megatron_gpt(layers, h, a, micro_batch_size=b)
    sbh = 2048 * b * h
    full = activations.layer_bytes(model, Parallel(t, sequence=True))
    selective = activations.layer_bytes(model, Parallel(t, sequence=True), recompute="selective")
    assert full / (sbh / t) == 34 + ratio
    assert printed(100 * (1 - selective / full), 0) + "%" == saved


@pytest.mark.parametrize("t, sequence", [(1, False), (8, True)])
def test_korthikanti_input_and_output_layers(t, sequence):
    # §4.3: the embedding's dropout mask s·b·h/t and the output layer's 4·s·b·h/t·(1 + V/h)
    a, h, layers, _, b = KORTHIKANTI_TABLE_3["175B"]
    model = megatron_gpt(layers, h, a, micro_batch_size=b)
    sbh = 2048 * b * h
    parallel = Parallel(t, sequence=sequence)
    assert activations.embedding_bytes(model, parallel) == Fraction(sbh, t)
    assert activations.head_bytes(model, parallel) == Fraction(4 * sbh, t) * (1 + Fraction(51200, h))


def test_zero_paper_example_7_5b_on_64_gpus():
    # Figure 1: Ψ = 7.5B, N_d = 64, K = 12: baseline 120 GB, P_os 31.4 GB, P_os+g 16.6 GB
    psi = 7_500_000_000
    assert static_bytes(psi) == 120 * 10**9
    assert printed(static_bytes(psi, 1, 64) / 10**9, 1) == "31.4"
    assert printed(static_bytes(psi, 2, 64) / 10**9, 1) == "16.6"
    assert static_bytes(psi, 1, 64) == 4 * psi + Fraction(12 * psi, 64)  # 31.40625 GB exactly


@pytest.mark.parametrize("n_d, os_gb, os_g_gb", [(1, "120.0", "120.0"), (4, "52.5", "41.3"), (16, "35.6", "21.6"),
                                                 (64, "31.4", "16.6"), (256, "30.4", "15.4"), (1024, "30.1", "15.1")])
def test_zero_table_1_for_the_7_5b_model(n_d, os_gb, os_g_gb):
    psi = 7_500_000_000
    assert printed(static_bytes(psi, 1, n_d) / 10**9, 1) == os_gb
    assert printed(static_bytes(psi, 2, n_d) / 10**9, 1) == os_g_gb


def test_mixed_precision_adam_is_16_bytes_per_parameter():
    assert bytes_per_param() == 16 and bytes_per_param(1, 1) == 16 and bytes_per_param(2, 1) == 16
    assert bytes_per_param(1, 4) == 7 and bytes_per_param(2, 7) == 4


@pytest.mark.parametrize("name, published, digits", [
    ("gpt-3-175b", "175", 0),      # Brown et al. 2020: "175B"
    ("llama-3-8b", "8.03", 2),     # Meta-Llama-3-8B model card: 8.03B
    ("llama-3-70b", "70.6", 1),    # Meta-Llama-3-70B model card: 70.6B
    ("mixtral-8x7b", "46.7", 1),   # Mistral AI, "Mixtral of experts": 46.7B total parameters
    ("gemma-2-9b", "9.24", 2),     # Gemma 2, Table 2: 917,962,752 + 8,324,201,984 parameters
])
def test_preset_parameter_counts_match_the_published_figures(name, published, digits):
    assert printed(Fraction(Transformer.preset(name).params, 10**9), digits) == published


def test_gemma_2_s_embedding_is_its_published_count():
    # Gemma 2, Table 2: the 9B model's embedding parameters, its 256,128 tokens x 3,584
    assert Transformer.preset("gemma-2-9b").embedding_params() == 917_962_752


def test_llama_3_405b_and_mixtral_active_parameters():
    # the 405B model has 405.85B parameters: the name truncates; Mixtral uses 12.9B per token
    assert int(Transformer.preset("llama-3-405b").params / 1e9) == 405
    assert printed(Fraction(Transformer.preset("mixtral-8x7b").active_params, 10**9), 1) == "12.9"
    assert Transformer.preset("llama-3-70b").active_params == Transformer.preset("llama-3-70b").params
