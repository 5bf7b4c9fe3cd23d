"""The kernels of each item and phase (ppviz.model.kernels): their model FLOPs sum to
ppviz.model.flops' count exactly on random shapes and every preset, the executed FLOPs follow
causal masking and flash attention's recomputation, the shapes and collectives follow
Megatron's tensor, sequence and expert parallelism, and configurations Megatron refuses are
refused."""

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppviz import ConfigError, Transformer
from ppviz.model import flops
from ppviz.model.costs import Training
from ppviz.model.kernels import CAUSAL, FLASH_BACKWARD, HALF, item_kernels

REFERENCE = {"E": lambda m: flops.NONE, "t": flops.layer, "m": flops.mtp, "L": flops.head}


def assert_model_flops_match(model, training):
    t = training.parallel.tensor
    for item, phases in item_kernels(model, training).items():
        counted = REFERENCE[item](model)
        for phase, attr in zip("FIW", "fiw"):
            assert phases[phase].model_flops * t == getattr(counted, attr), (item, phase)
        again = 0 if item in "EL" else flops.recomputed(model, training.recompute)
        assert phases["R"].model_flops * t == again, (item, "R")
        for phase in phases.values():
            assert all(k.flops >= 0 and k.bytes > 0 for k in phase.kernels)
            assert all(k.model_flops == 0 for k in phase.kernels if k.kind == "memory")


@st.composite
def models_and_trainings(draw):
    kv = draw(st.integers(1, 8))
    heads = kv * draw(st.integers(1, 4))
    experts = draw(st.sampled_from([0, 0, 2, 4, 8, 16]))
    model = Transformer(
        draw(st.integers(1, 3)), hidden=draw(st.integers(8, 2048)), heads=heads, kv_heads=kv,
        head_dim=draw(st.sampled_from([8, 16, 64, 128])), ffn_hidden=draw(st.integers(1, 8192)),
        vocab=draw(st.integers(2, 200_000)), seq_len=draw(st.integers(1, 4096)),
        micro_batch_size=draw(st.integers(1, 4)), gated_mlp=draw(st.booleans()), experts=experts,
        top_k=draw(st.integers(1, experts)) if experts else 1,
        shared_experts=draw(st.integers(0, 2)) if experts else 0, mtp_layers=draw(st.integers(0, 1)),
        dropout=draw(st.booleans()), norm=draw(st.sampled_from(["rmsnorm", "layernorm"])),
        learned_positions=draw(st.booleans()), bias=draw(st.booleans()))
    t = draw(st.sampled_from([d for d in (1, 2, 4, 8) if heads % d == 0 and kv % d == 0]))
    sp = True if experts and t > 1 else draw(st.sampled_from([None, False] + ([True] if t > 1 else [])))
    e = draw(st.sampled_from([d for d in (1, 2, 4, 8) if experts and experts % d == 0] or [1]))
    training = Training(tensor_parallel=t, sequence_parallel=sp, expert_parallel=e,
                        expert_tensor_parallel=draw(st.sampled_from([None, 1])),
                        recompute=draw(st.sampled_from([None, "selective", "full"])),
                        flash_attention=draw(st.booleans()), fp8=draw(st.booleans()))
    return model, training


@settings(max_examples=150, deadline=None)
@given(models_and_trainings())
def test_the_model_flops_of_each_phase_are_the_flops_modules_count_on_random_shapes(case):
    assert_model_flops_match(*case)


@pytest.mark.parametrize("name", sorted(Transformer.presets()))
@pytest.mark.parametrize("training", [
    Training(), Training(tensor_parallel=8), Training(tensor_parallel=2, sequence_parallel=True),
    Training(tensor_parallel=4, recompute="full", fp8=True, expert_parallel=2),
    Training(tensor_parallel=2, flash_attention=False, recompute="selective", expert_parallel=8)])
def test_the_model_flops_of_each_phase_are_the_flops_modules_count_on_every_preset(name, training):
    model = Transformer.preset(name, mtp_layers=1)
    if not model.moe and training.expert_parallel > 1:
        training = Training(**{**training.__dict__, "expert_parallel": 1})
    if model.moe and training.parallel.tensor > 1 and not training.parallel.sequence:
        pytest.skip("Megatron refuses MoE under tensor parallelism without sequence parallelism (tested below)")
    assert_model_flops_match(model, training)


LLAMA_8B = Transformer.preset("llama-3-8b")  # s = 8192, h = 4096, 32 heads of 128, 8 KV heads, ffn 14336


def kernel(phases, phase, name):
    (found,) = [k for k in phases[phase].kernels if k.name == name]
    return found


def test_flash_attention_executes_half_the_causal_products_and_recomputes_them_in_its_backward():
    layer = item_kernels(LLAMA_8B, Training())["t"]
    forward, backward = kernel(layer, "F", "flash attention"), kernel(layer, "I", "flash attention backward")
    model_f = 4 * 8192**2 * 4096  # 4·b·s²·(a·head size)
    assert forward.model_flops == model_f and forward.flops == model_f * CAUSAL
    assert backward.model_flops == 2 * model_f and backward.flops == forward.flops * FLASH_BACKWARD == 5 * model_f / 4


def test_unfused_attention_runs_every_score_in_four_batched_gemms_backward():
    layer = item_kernels(LLAMA_8B, Training(flash_attention=False, tensor_parallel=4))["t"]
    scores = kernel(layer, "F", "attention scores Q·Kᵀ")
    # 8 query heads per rank, each an s × s × head-size GEMM; the causal mask is computed whole
    assert (scores.batch, scores.m, scores.n, scores.k) == (8, 8192, 8192, 128)
    assert scores.flops == scores.model_flops == 2 * 8 * 8192**2 * 128
    backward = [k for k in layer["I"].kernels if k.name.startswith("attention d")]
    assert len(backward) == 4 and sum(k.model_flops for k in backward) == 4 * scores.model_flops
    softmax = kernel(layer, "F", "scale-mask-softmax")
    assert softmax.bytes == 2 * 8 * 8192**2 * HALF  # reads and writes the rank's scores in 16 bits


def test_gemm_shapes_follow_megatrons_column_and_row_parallel_split():
    layer = item_kernels(LLAMA_8B, Training(tensor_parallel=8))["t"]
    shapes = {k.name: (k.m, k.n, k.k) for p in "FIW" for k in layer[p].kernels if k.kind == "gemm"}
    T = 8192
    assert shapes["QKV"] == (T, (4096 + 2 * 1024) // 8, 4096)  # column-parallel: outputs split
    assert shapes["output projection"] == (T, 4096, 4096 // 8)  # row-parallel: inputs split
    assert shapes["MLP FC1"] == (T, 2 * 14336 // 8, 4096)  # gate and up in one GEMM
    assert shapes["MLP FC2"] == (T, 4096, 14336 // 8)
    assert shapes["MLP FC1 dgrad"] == (T, 4096, 2 * 14336 // 8)
    assert shapes["MLP FC1 wgrad"] == (4096, 2 * 14336 // 8, T)


def test_the_lm_head_runs_over_the_padded_vocabulary_shard():
    head = item_kernels(LLAMA_8B, Training(tensor_parallel=8))["L"]
    lm = kernel(head, "F", "LM head")
    # 128,256 padded to a multiple of 128 · 8 = 1,024: 129,024, i.e. 16,128 per rank
    assert (lm.m, lm.n, lm.k) == (8192, 16128, 4096)
    assert lm.model_flops == Fraction(2 * 8192 * 4096 * 128256, 8) < lm.flops
    assert not lm.fp8


def collectives(phases, phase):
    return [(c.kind, c.bytes, c.after) for c in phases[phase].collectives]


def test_sequence_parallelism_all_gathers_and_reduce_scatters_the_hidden_states():
    layer = item_kernels(LLAMA_8B, Training(tensor_parallel=4))["t"]
    full = 8192 * 4096 * HALF  # T × h in 16 bits: nccl-tests' size of each
    f = collectives(layer, "F")
    assert [(kind, size) for kind, size, _ in f] == [("all-gather", full), ("reduce-scatter", full)] * 2
    names = [k.name for k in layer["F"].kernels]
    assert names[f[0][2] - 1] == "attention norm" and names[f[0][2]] == "QKV"  # gathered between norm and GEMM
    assert names[f[1][2] - 1] == "output projection"
    # I: the output gradient of each row-parallel GEMM gathered, each column-parallel input gathered
    # again for its weight gradient and its gradient reduce-scattered
    assert [kind for kind, _, _ in collectives(layer, "I")] == ["all-gather", "all-gather", "reduce-scatter"] * 2
    assert collectives(layer, "W") == [] and layer["W"].kernels
    norm = kernel(layer, "F", "attention norm")
    assert norm.bytes == 2 * (8192 // 4) * 4096 * HALF + (8192 // 4) * 4  # T/t tokens in and out, and 1/rms


def test_without_sequence_parallelism_forward_outputs_and_input_gradients_are_all_reduced():
    layer = item_kernels(LLAMA_8B, Training(tensor_parallel=4, sequence_parallel=False))["t"]
    full = 8192 * 4096 * HALF
    assert [(k, b) for k, b, _ in collectives(layer, "F")] == [("all-reduce", full)] * 2
    assert [(k, b) for k, b, _ in collectives(layer, "I")] == [("all-reduce", full)] * 2
    assert kernel(layer, "F", "attention norm").bytes == 2 * 8192 * 4096 * HALF + 8192 * 4
    assert all(not p.collectives for p in item_kernels(LLAMA_8B, Training())["t"].values())


def test_cross_entropy_runs_in_32_bits_over_the_rank_s_logits_with_two_all_reduces():
    head = item_kernels(LLAMA_8B, Training(tensor_parallel=2))["L"]
    logits = 8192 * 128256 // 2  # 128,256 = 501 · 256 needs no padding at t = 2
    assert kernel(head, "F", "logits to FP32").bytes == logits * (2 + 4)
    assert kernel(head, "F", "cross entropy softmax").bytes == 2 * logits * 4
    assert [(k, b) for k, b, _ in collectives(head, "F")] == [
        ("all-gather", 8192 * 4096 * HALF), ("all-reduce", 8192 * 4), ("all-reduce", 2 * 8192 * 4)]


MOE = Transformer(2, hidden=1024, heads=16, kv_heads=4, ffn_hidden=512, vocab=32000, seq_len=4096,
                  micro_batch_size=2, gated_mlp=True, experts=64, top_k=6, shared_experts=2)


def test_experts_are_grouped_gemms_of_tokens_times_top_k_over_experts_per_expert_parallel_rank():
    t, e = 2, 8
    layer = item_kernels(MOE, Training(tensor_parallel=t, expert_parallel=e))["t"]
    fc1 = kernel(layer, "F", "expert FC1")
    T = 2 * 4096
    assert (fc1.batch, fc1.m, fc1.n, fc1.k) == (64 // e, T * 6 * e // 64, 2 * 512 // t, 1024)
    assert fc1.model_flops == Fraction(2 * T * 6 * 1024 * 2 * 512, t)
    shared = kernel(layer, "F", "shared expert FC1")
    assert (shared.m, shared.n) == (T, 2 * 2 * 512 // t)  # one dense MLP of 2 · 512
    router = kernel(layer, "F", "router")
    assert (router.m, router.n, router.k) == (T // t, 64, 1024) and not router.fp8
    copies = T // t * 6 * 1024 * HALF  # the rank's top-k token copies, 16 bits
    f = [(c.kind, c.group, c.bytes) for c in layer["F"].collectives]
    assert ("all-to-all", "ep", copies) in f and ("all-gather", "tp", t * copies) in f
    assert sum(1 for c in f if c[0] == "all-to-all") == 2 == sum(1 for c in layer["I"].collectives
                                                                 if c.kind == "all-to-all")
    assert all(c.group == "tp" for c in item_kernels(MOE, Training(tensor_parallel=t))["t"]["F"].collectives)


def test_with_expert_tensor_parallelism_1_each_rank_sends_its_own_tokens_to_whole_experts():
    t, e = 2, 8
    split = item_kernels(MOE, Training(tensor_parallel=t, expert_parallel=e))["t"]
    whole = item_kernels(MOE, Training(tensor_parallel=t, expert_parallel=e, expert_tensor_parallel=1))["t"]
    T = 2 * 4096
    fc1 = kernel(whole, "F", "expert FC1")
    # the rank's T / t tokens' copies, to 64 / e experts of full width
    assert (fc1.batch, fc1.m, fc1.n, fc1.k) == (64 // e, T // t * 6 * e // 64, 2 * 512, 1024)
    assert fc1.model_flops == kernel(split, "F", "expert FC1").model_flops  # the same share of the work
    copies = T // t * 6 * 1024 * HALF
    for phase in "FI":
        got = [(c.kind, c.group, c.bytes) for c in whole[phase].collectives if c.group == "ep"]
        assert got == [("all-to-all", "ep", copies)] * 2
        # no tensor-parallel collective of the experts' tokens: only attention's and the shared expert's
        tp = [c for c in whole[phase].collectives if c.group == "tp"]
        assert len(tp) == len([c for c in split[phase].collectives if c.group == "tp"]) - 2
    assert whole["F"].model_flops == split["F"].model_flops
    with pytest.raises(ConfigError, match="expert_tensor_parallel=4: ppviz splits each expert .*; give 1 .* or tensor_parallel = 2"):
        Training(tensor_parallel=2, expert_tensor_parallel=4)


def test_fp8_puts_transformer_engine_gemms_at_the_fp8_rate_and_keeps_the_rest_16_bit():
    phases = item_kernels(MOE, Training(tensor_parallel=2, expert_parallel=2, fp8=True))
    gemms = {k.name: k for item in ("t", "L") for p in "FIW" for k in phases[item][p].kernels if k.kind == "gemm"}
    assert {n for n, k in gemms.items() if not k.fp8} == {"router", "router dgrad", "router wgrad", "LM head",
                                                          "LM head dgrad", "LM head wgrad"}
    qkv = gemms["QKV"]
    assert qkv.bytes == (qkv.m * qkv.k + qkv.k * qkv.n) * 1 + qkv.m * qkv.n * HALF
    wgrad = gemms["QKV wgrad"]  # accumulated into the 32-bit main gradient: read and written
    assert wgrad.bytes == (wgrad.m * wgrad.k + wgrad.k * wgrad.n) * 1 + wgrad.m * wgrad.n * 8
    f = phases["t"]["F"]
    assert f.collectives[0].bytes == MOE.tokens * 1024 * 1  # the norm's output gathered in FP8
    assert "output projection input FP8 cast" in [k.name for k in f.kernels]


def test_selective_recompute_runs_the_attention_core_again_and_full_recompute_the_whole_forward():
    selective = item_kernels(LLAMA_8B, Training(tensor_parallel=2, recompute="selective"))["t"]
    assert [k.name for k in selective["R"].kernels] == ["flash attention"] and not selective["R"].collectives
    full = item_kernels(LLAMA_8B, Training(tensor_parallel=2, recompute="full"))["t"]
    assert full["R"] == full["F"]


@pytest.mark.parametrize("training, field", [
    (Training(tensor_parallel=2, sequence_parallel=False), "sequence_parallel"),
    (Training(expert_parallel=3), "expert_parallel")])
def test_configurations_megatron_refuses_are_refused(training, field):
    with pytest.raises(ConfigError, match=field):
        item_kernels(MOE, training)


def test_expert_parallelism_is_refused_for_a_dense_model_and_bad_values_by_training():
    with pytest.raises(ConfigError, match="expert_parallel=2: expert parallelism splits"):
        item_kernels(LLAMA_8B, Training(expert_parallel=2))
    for bad in (0, 1.5, True):
        with pytest.raises(ConfigError, match="expert_parallel"):
            Training(expert_parallel=bad)
    with pytest.raises(ConfigError, match="fp8"):
        Training(fp8="yes")


def test_collectives_are_of_the_kinds_and_groups_the_communication_model_times():
    from ppviz.model.collectives import KINDS

    for training in (Training(tensor_parallel=2, expert_parallel=4), Training(tensor_parallel=2, fp8=True)):
        for phases in item_kernels(MOE, training).values():
            for phase in phases.values():
                assert {c.kind for c in phase.collectives} <= set(KINDS)
                assert {c.group for c in phase.collectives} <= {"tp", "ep"}
                assert all(0 <= c.after <= len(phase.kernels) and c.bytes > 0 for c in phase.collectives)
