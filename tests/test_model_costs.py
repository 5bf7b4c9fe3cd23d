"""Config.from_model: a model and a machine give per-stage milliseconds and bytes, simulate reports
them with the device memory (fits, out of memory), recompute trades time for memory, and bad
input is refused with the argument named."""

from fractions import Fraction

import numpy as np
import pytest

import ppviz
from ppviz import Config, ConfigError, Hardware, LayoutError, Topology, Transformer, simulate
from ppviz.core.numbers import number
from ppviz.model import activations, flops, roofline
from ppviz.model.activations import Parallel
from ppviz.model.costs import Training, item_costs
from ppviz.model.static_memory import bytes_per_param
from ppviz.widgets.wire import describe

H100 = Hardware.preset("h100-sxm")
GIB = 2**30
LLAMA_70B = Transformer.preset("llama-3-70b", seq_len=4096)
SIZES = dict(schedule="1f1b", devices=8, microbatches=16, tensor_parallel=8, data_parallel=4, zero_stage=1)


def test_stage_times_are_the_kernels_and_collectives_of_the_items_they_hold():
    cfg = Config.from_model(LLAMA_70B, H100, **SIZES)
    cluster = ppviz.Topology.preset("dgx-h100")  # the H100's reference system: no topology was given
    training = Training(tensor_parallel=8, data_parallel=4, zero_stage=1, pipeline_parallel=8, cluster=cluster)
    timed = roofline.item_times(LLAMA_70B, H100, training)

    def phase(item, name):
        compute, collectives = timed[item][name]
        comm = sum(training.groups.time(c.group, c.kind, c.bytes, cluster) for c in collectives) * 1e3
        return compute + comm, comm

    assert cfg.time_unit == "ms" and cfg.stages == 8
    # 80 layers on 8 stages: 10 each, the embedding on the first and the head with the loss on the last
    assert cfg.stage_costs[0]["f"] == pytest.approx(phase("E", "F")[0] + 10 * phase("t", "F")[0], rel=1e-12)
    assert cfg.stage_costs[3]["b"] == pytest.approx(10 * phase("t", "I")[0], rel=1e-12)
    assert cfg.stage_costs[7]["w"] == pytest.approx(10 * phase("t", "W")[0] + phase("L", "W")[0], rel=1e-12)
    # each stage's exposed tensor-parallel traffic is kept apart for the charts
    assert cfg.stage_costs[3]["f_comm"] == pytest.approx(10 * phase("t", "F")[1], rel=1e-12)
    assert cfg.stage_costs[3]["b_comm"] == pytest.approx(10 * phase("t", "I")[1], rel=1e-12)
    assert 0 < cfg.stage_costs[3]["f_comm"] < cfg.stage_costs[3]["f"]
    # f, b, w are per 1/p of the model: the stages' mean
    assert cfg.f == pytest.approx(sum(cfg.stage_costs[s]["f"] for s in range(8)) / 8, rel=1e-12)
    assert not cfg.uniform  # the last stage differs, so the closed forms do not apply
    res = simulate(cfg)
    assert res.closed_form is not None and not res.closed_form.applies


def test_the_step_adds_the_data_parallel_tail_and_gives_the_mfu():
    cfg = Config.from_model(LLAMA_70B, H100, **SIZES)
    step = cfg.step
    # 70B over t = 8 and p = 8: each stage's 16-bit gradients reduce-scattered over d = 4 (ZeRO-1)
    cluster = ppviz.Topology.preset("dgx-h100")
    groups = Training(tensor_parallel=8, data_parallel=4, pipeline_parallel=8).groups
    params = (LLAMA_70B.layer_params() * 10) / 8
    assert step.reduce[3] == pytest.approx(groups.time("dp", "reduce-scatter", params * 2, cluster) * 1e3, rel=1e-9)
    assert step.gather[3] == pytest.approx(groups.time("dp", "all-gather", params * 2, cluster) * 1e3, rel=1e-9)
    assert step.optimizer[3] == pytest.approx(params / 4 * 30 / (3350e9 * H100.memory_share) * 1e3, rel=1e-9)
    assert step.gpus == 256 and step.tokens == 4 * 16 * 4096
    res = simulate(cfg)
    assert res.step_time >= res.makespan and res.mfu == pytest.approx(
        4 * flops.iteration(LLAMA_70B, 16) / (256 * 989.4e12 * res.step_time / 1e3), rel=1e-9)


def test_memory_in_bytes_and_the_device_capacity():
    cfg = Config.from_model(LLAMA_70B, H100, **SIZES)
    res = simulate(cfg)
    par = Parallel(8, sequence=True)
    layer = activations.layer_bytes(LLAMA_70B, par, flash_attention=True)
    first = 10 * layer + activations.embedding_bytes(LLAMA_70B, par)
    static = Fraction(LLAMA_70B.embedding_params() + 10 * LLAMA_70B.layer_params(), 8) * bytes_per_param(1, 4)
    # 1F1B: rank 0 holds p = 8 microbatches at its peak
    assert res.peak_memory_bytes[0] == pytest.approx(float(8 * first + static), rel=1e-12)
    assert res.static_memory[0] * cfg.activation_bytes == pytest.approx(float(static), rel=1e-12)
    assert cfg.memory_capacity * cfg.activation_bytes == 80 * GIB
    assert res.fits.all() and not res.out_of_memory and res.excess.max() == 0
    text = res.summary()
    # one unit system: ms, and every amount of memory in GiB
    gib = " ".join(number(x / GIB) for x in res.peak_memory_bytes)
    assert f"  makespan         {number(res.makespan, 'ms')}" in text and f"  peak memory      {gib} GiB" in text
    assert f"memory capacity  80 GiB per device: fits (highest peak {number(res.peak_memory_bytes.max() / GIB)} GiB" in text


def test_out_of_memory_names_the_devices_and_the_excess():
    small = H100.replace(memory_gib=15.0)  # 1F1B's first two ranks peak above it (18.3 and 16.1 GiB)
    res = simulate(Config.from_model(LLAMA_70B, small, **SIZES))
    capacity = 15 * GIB
    over = res.peak_memory_bytes > capacity
    assert res.out_of_memory and over.any() and not over.all()
    assert res.fits.tolist() == (~over).tolist()
    assert np.allclose(res.excess_bytes, np.maximum(res.peak_memory_bytes - capacity, 0), rtol=1e-12)
    devices = ", ".join(str(d) for d in np.flatnonzero(over))
    assert f"OUT OF MEMORY on devices {devices} (up to {res.excess_bytes.max() / GIB:.3g} GiB over, on device 0)" \
        in res.summary()
    meta = describe(res)
    assert meta["fits"] == res.fits.tolist() and meta["excess"] == pytest.approx(res.excess.tolist())
    assert meta["memory_capacity"] == pytest.approx(capacity / res.config.activation_bytes)


def _items(model, **training):
    """Each item kind's (f, i, w, recompute) in ms on the H100's reference system."""
    cluster = ppviz.Topology.preset("dgx-h100")
    return {k: v[0] for k, v in item_costs(model, H100, Training(cluster=cluster, **training)).items()}


def test_full_recompute_trades_time_for_memory():
    plain = Config.from_model(LLAMA_70B, H100, **SIZES)
    full = Config.from_model(LLAMA_70B, H100, recompute="full", **SIZES)
    items = _items(LLAMA_70B, tensor_parallel=8, data_parallel=4, zero_stage=1, pipeline_parallel=8,
                   recompute="full")
    # each stage's layers run their forward again (kernels and collectives) before the backward;
    # the embedding and the head are not recomputed
    assert items["t"][3] == items["t"][0] and items["E"][3] == items["L"][3] == 0
    assert full.stage_costs[7]["recompute"] == pytest.approx(10 * items["t"][0], rel=1e-12)
    assert full.stage_costs[0]["recompute"] == pytest.approx(10 * items["t"][0], rel=1e-12)
    a, b = simulate(plain), simulate(full)
    assert b.makespan > a.makespan
    busy = (b.busy - a.busy)[0]
    assert busy == pytest.approx(16 * full.stage_costs[0]["recompute"], rel=1e-9)  # once per microbatch
    # F keeps each layer's input, 2·s·b·h / t (sequence parallel) instead of the full activations
    stored = full.stage_costs[1]["activation"] * full.activation_bytes
    assert stored == pytest.approx(10 * 2 * 4096 * 8192 / 8, rel=1e-12)
    assert b.peak_memory_bytes.max() < 0.5 * a.peak_memory_bytes.max()


def test_selective_recompute_without_flash_attention_drops_the_attention_scores():
    gpt = Transformer.preset("gpt-3-175b")
    sizes = dict(schedule="1f1b", devices=8, microbatches=8, tensor_parallel=8, sequence_parallel=True)
    plain = Config.from_model(gpt, H100, flash_attention=False, **sizes)
    selective = Config.from_model(gpt, H100, flash_attention=False, recompute="selective", **sizes)
    sbh = 2048 * 12288
    per_stage = 12  # 96 layers on 8 stages
    kept = selective.stage_costs[1]["activation"] * selective.activation_bytes
    assert kept == pytest.approx(per_stage * sbh * 34 / 8, rel=1e-12)  # Korthikanti: sbh·34/t
    assert plain.stage_costs[1]["activation"] * plain.activation_bytes == pytest.approx(per_stage * sbh * (34 + 80) / 8)
    # what is recomputed is the attention core's kernels of the forward, nothing else
    training = Training(tensor_parallel=8, sequence_parallel=True, flash_attention=False, recompute="selective",
                        pipeline_parallel=8, cluster=ppviz.Topology.preset("dgx-h100"))
    table = roofline.kernel_table(gpt, H100, training)
    again = [(r["kernel"], r["ms"]) for r in table if (r["item"], r["phase"]) == ("t", "R")]
    core = ["attention scores Q·Kᵀ", "scale-mask-softmax", "attention dropout", "attention over values P·V"]
    assert [name for name, _ in again] == core
    forward = {r["kernel"]: r["ms"] for r in table if (r["item"], r["phase"]) == ("t", "F")}
    assert all(forward[name] == ms for name, ms in again)
    assert selective.stage_costs[1]["recompute"] == pytest.approx(per_stage * sum(ms for _, ms in again), rel=1e-12)


def test_recompute_in_abstract_units():
    # p = 2, m = 1, 1F1B: B costs b + w + the recompute (f by default under full recompute)
    res = simulate(Config(devices=2, microbatches=1, f=1, b=2, w=1, recompute="full"))
    assert res.makespan == 2 * 1 + 2 * (1 + 2 + 1)
    assert res.peak_activation.tolist() == pytest.approx([2 / 34, 2 / 34])
    res = simulate(Config(devices=2, microbatches=1, f=1, b=2, w=1, recompute="selective", recompute_cost=0.5,
                          recompute_activation=0.25))
    assert res.makespan == 2 + 2 * (0.5 + 2 + 1)
    assert res.peak_activation.tolist() == [0.25, 0.25]
    # with no cost or activation given, selective recompute changes nothing (flash attention assumed)
    assert simulate(Config(recompute="selective")).makespan == simulate(Config()).makespan
    assert simulate(Config(recompute="full")).closed_form.applies is False


def test_dualpipe_holds_each_stage_twice():
    cfg = Config.from_model(LLAMA_70B, H100, schedule="dualpipe", devices=8, microbatches=16, tensor_parallel=8)
    res = simulate(cfg)
    per_stage = [cfg.stage_costs[s]["params"] for s in range(8)]
    assert res.static_memory[0] == pytest.approx(per_stage[0] + per_stage[7], rel=1e-12)
    assert res.static_memory[3] == pytest.approx(per_stage[3] + per_stage[4], rel=1e-12)


def test_layout_strings_set_the_stages():
    cfg = Config.from_model(LLAMA_70B, H100, schedule="interleaved-1f1b", devices=4, microbatches=8,
                            layout="Et*9|(t*10|)*6t*11L", tensor_parallel=8)
    assert cfg.stages_per_device == 2 and cfg.stages == 8
    items = _items(LLAMA_70B, tensor_parallel=8, pipeline_parallel=4)
    layer, embedding, head = items["t"][0], items["E"][0], items["L"][0]
    expected = [embedding + 9 * layer] + [10 * layer] * 6 + [11 * layer + head]
    assert [cfg.stage_costs[s]["f"] for s in range(8)] == pytest.approx(expected, rel=1e-12)
    counts = Config.from_model(LLAMA_70B, H100, schedule="1f1b", devices=4, microbatches=8,
                               layout=[19, 20, 21, 20], tensor_parallel=8)
    assert counts.stage_costs[2]["f"] == pytest.approx(21 * layer, rel=1e-12)
    first = Config.from_model(LLAMA_70B, H100, schedule="1f1b", devices=8, microbatches=8, first_stage_layers=7,
                              last_stage_layers=7, tensor_parallel=8)
    assert first.stage_costs[0]["f"] == pytest.approx(embedding + 7 * layer, rel=1e-12)
    assert first.stage_costs[1]["f"] == pytest.approx(11 * layer, rel=1e-12)  # (80 − 14) / 6


def test_compare_ranks_the_schedules_that_fit():
    small = H100.replace(memory_gib=24.0)  # 1F1B and interleaved fit it, ZB-H2 and GPipe do not
    configs = [Config.from_model(LLAMA_70B, small, schedule=s, devices=8, microbatches=16, tensor_parallel=8,
                                 data_parallel=4, zero_stage=1, stages_per_device=v)
               for s, v in (("1f1b", 1), ("zb-h2", 1), ("interleaved-1f1b", 2), ("gpipe", 1))]
    results = [simulate(c) for c in configs]
    comparison = ppviz.compare(configs)
    fitting = sorted((r.makespan, c.schedule) for c, r in zip(configs, results) if not r.out_of_memory)
    assert comparison.ranking == [name for _, name in fitting]
    assert set(comparison.out_of_memory) == {c.schedule for c, r in zip(configs, results) if r.out_of_memory}
    assert comparison.out_of_memory and comparison.ranking  # the sizes above make both non-empty
    assert comparison.verdict().startswith(f"{len(fitting)} of 4 fit the capacity")
    assert f"{len(fitting)} of 4 fit" in comparison.view().children[0].value


def test_compare_by_name_refuses_stage_costs_of_another_stage_count():
    cfg = Config.from_model(LLAMA_70B, H100, schedule="1f1b", devices=8, microbatches=16, tensor_parallel=8)
    comparison = ppviz.compare(cfg, schedules=["1f1b", "zb-h1", "interleaved-1f1b"])
    assert comparison.names == ["1f1b", "zb-h1"]
    assert "stage_costs describe 8 stages and interleaved-1f1b has 16" in comparison.refused["interleaved-1f1b"]


# Refusals -------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, words", [
    (dict(layers=-1, hidden=64, heads=4), "layers=-1"),
    (dict(layers=2, hidden=0, heads=4), "hidden=0"),
    (dict(layers=2, hidden=100, heads=3), "heads=3: the heads do not divide the hidden size"),
    (dict(layers=2, hidden=64, heads=8, kv_heads=3), "kv_heads=3: kv_heads does not divide heads"),
    (dict(layers=2, hidden=64, heads=4, kv_heads=8), "kv_heads=8"),
    (dict(layers=2, hidden=64, heads=4, experts=4, top_k=5), "top_k=5"),
    (dict(layers=2, hidden=64, heads=4, shared_experts=1), "experts=0"),
    (dict(layers=2, hidden=64, heads=4, dtype="fp32"), "dtype='fp32'"),
    (dict(layers=2.5, hidden=64, heads=4), "layers=2.5"),
    (dict(layers=100_001, hidden=64, heads=4), "give a whole number from 1 to 100,000"),
    (dict(layers=2, hidden=64, heads=4, seq_len=10**10), "seq_len=10000000000"),
])
def test_bad_model_dimensions(kwargs, words):
    with pytest.raises(ConfigError) as info:
        Transformer(**kwargs)
    assert words in str(info.value)


def test_a_misspelt_dimension_is_a_wrong_call_that_suggests_the_field():
    with pytest.raises(ppviz.ArgumentError, match=r"^layerz=2: Transformer\(\) has no such argument; did you mean "
                                                  r"'layers'\? Transformer\(\) takes layers, hidden, heads"):
        Transformer(layers=2, hidden=64, heads=4, layerz=2)
    with pytest.raises(TypeError, match=r"Transformer\(\) takes 1 argument by position, 3 were given"):
        Transformer(2, 64, 4)


def test_unknown_presets_suggest_the_known_ones():
    with pytest.raises(ConfigError, match="did you mean 'llama-3-70b'.*known presets: gpt-3-175b"):
        Transformer.preset("llama3-70")
    with pytest.raises(ConfigError, match="hardware='tpu': no preset has this name; known presets: a100-80gb"):
        Hardware.preset("tpu")
    with pytest.raises(ppviz.ArgumentError, match=r"seqlen=4096: Transformer\(\) has no such argument; did you mean "
                                                  r"'seq_len'"):
        Transformer.preset("llama-3-8b", seqlen=4096)
    assert Transformer.preset("Llama 3 8B").name == "llama-3-8b" and Hardware.preset("H100_SXM").peak_tflops == 989.4
    with pytest.raises(ConfigError, match="efficiency=1.5"):
        Hardware(peak_tflops=100, memory_gib=16, efficiency=1.5)


@pytest.mark.parametrize("options, words", [
    (dict(zero_stage=3), "zero_stage=3"),
    (dict(data_parallel=0), "data_parallel=0"),
    (dict(tensor_parallel=0), "tensor_parallel=0"),
    (dict(sequence_parallel=True), "sequence_parallel=True"),
    (dict(recompute="some"), "recompute='some'"),
    (dict(f=3.0), "f=3.0: set by from_model"),
    (dict(layout="Et*40|t*40L", devices=4), "it has 2 stages"),
    (dict(layout="Et*40|t*40L", first_stage_layers=3), "give either a layout or first/last stage layers"),
    (dict(layout="t*40E||t*40L", devices=3), "the embedding must come first and the loss last"),
    (dict(layout="Et*4O|t*40L", devices=2), "at position 4"),
    (dict(layout=3.5), "a float is not a layout"),
    (dict(devices=3), "80 layers do not split evenly over 3 stages"),
    (dict(schedule="custom"), "give a registered schedule"),
])
def test_bad_from_model_options(options, words):
    sizes = dict(schedule="1f1b", devices=2, microbatches=4)
    with pytest.raises(ConfigError) as info:
        Config.from_model(LLAMA_70B, H100, **{**sizes, **options})
    assert words in str(info.value)


def test_bad_model_or_hardware_objects():
    with pytest.raises(ConfigError, match="give a ppviz.Transformer"):
        Config.from_model("llama", H100)
    with pytest.raises(ConfigError, match="give a ppviz.Hardware"):
        Config.from_model(LLAMA_70B, "h100")
    with pytest.raises(LayoutError):
        Config.from_model(LLAMA_70B, H100, layout=[40, 41], devices=2)


@pytest.mark.parametrize("name", ["llama-3-8b", "llama-3-405b", "mixtral-8x7b"])
def test_a_layers_forward_is_twice_its_active_weights_plus_the_attention_core(name):
    # without biases every weight of a layer a token passes through is one multiply-add per
    # token (2 FLOPs), norms aside; the attention core adds 4·b·s²·(a·head size)
    model = Transformer.preset(name, seq_len=1024)
    weights = model.layer_params(active=True) - 2 * model.hidden  # two RMSNorms
    assert flops.layer(model).f == 2 * model.tokens * weights + 4 * 1024 ** 2 * model.query_size
    assert flops.head(model).f == 2 * model.tokens * model.vocab * model.hidden


def test_an_mtp_layer_costs_a_projection_a_layer_and_the_head():
    model = Transformer(layers=4, hidden=256, heads=4, vocab=1000, seq_len=128, mtp_layers=1, gated_mlp=True,
                        ffn_hidden=512)
    cfg = Config.from_model(model, H100, schedule="1f1b", devices=3, microbatches=3, layout="Et*2|t*2m|L")
    table = roofline.kernel_table(model, H100, Training())

    def forward(item):
        return [r for r in table if (r["item"], r["phase"]) == (item, "F")]

    # DeepSeek-V3's MTP module: embed the next tokens, normalise both inputs, concatenate and
    # project 2h → h, then a whole layer and the shared head with its loss
    mtp, names = forward("m"), [r["kernel"] for r in forward("m")]
    own = ["embedding lookup", "MTP embedding norm", "MTP hidden norm", "MTP concatenation", "MTP projection"]
    assert names == own + [r["kernel"] for r in forward("t")] + [r["kernel"] for r in forward("L")]
    projection = next(r for r in mtp if r["kernel"] == "MTP projection")
    assert projection["model_flops"] == 2 * 128 * 2 * 256 * 256
    items = _items(model)
    assert items["m"][0] == pytest.approx(sum(r["ms"] for r in mtp), rel=1e-12)
    assert cfg.stage_costs[1]["f"] == pytest.approx(2 * items["t"][0] + items["m"][0], rel=1e-12)
    assert cfg.stage_costs[2]["f"] == pytest.approx(items["L"][0], rel=1e-12)
    assert model.params == (model.embedding_params() + 4 * model.layer_params() + model.head_params()
                            + 2 * 256 + 2 * 256 * 256 + model.layer_params())
    with pytest.raises(LayoutError, match="0 × m"):
        Config.from_model(model, H100, schedule="1f1b", devices=3, microbatches=3, layout="Et*2|t*2|L")


def test_from_model_takes_a_topology_and_names_its_own_options_when_one_is_misspelt():
    # before, the topology was checked before from_model set the unit (ms), and refused
    model, gpu = Transformer.preset("llama-3-70b"), Hardware.preset("h100-sxm")
    sizes = dict(schedule="1f1b", devices=4, microbatches=8, tensor_parallel=8)
    cfg = Config.from_model(model, gpu, **sizes, topology="dgx-h100", comm_bytes=1e8, p2p="overlapped")
    plain = Config.from_model(model, gpu, **sizes)
    # t = 8 fills a DGX H100's node: one stage rank per node, so every stage boundary crosses the network
    dgx = Topology.preset("dgx-h100")
    assert (cfg.topology.devices_per_node, cfg.topology.intra, cfg.topology.inter) == (1, dgx.intra, dgx.inter)
    assert cfg.topology.name == "dgx-h100, 1 stage per node"
    assert cfg == plain.replace(topology=cfg.topology, comm_bytes=1e8, p2p="overlapped")
    assert cfg.time_unit == "ms" and simulate(cfg).makespan > simulate(plain).makespan
    with pytest.raises(ConfigError) as info:
        Config.from_model(model, gpu, **{**sizes, "tensor_parallel": 1}, tensor_paralel=8)
    message = str(info.value)
    assert message.startswith("tensor_paralel=8: from_model has no such option; did you mean 'tensor_parallel'?")
    for option in ("data_parallel", "zero_stage", "layout", "topology", "comm_bytes"):
        assert option in message
    assert "time_unit" not in message.split("from_model takes")[1]  # set by from_model, not an option


def test_from_model_sends_the_models_hidden_states_over_a_topology():
    # was a refusal: "a topology needs the size of what crosses it", though the model knows it.
    # Megatron-LM's get_tensor_shapes: (seq_length / t under sequence parallelism,
    # micro_batch_size, hidden_size) in the pipeline's 16-bit dtype
    model, gpu = Transformer.preset("llama-3-8b"), Hardware.preset("h100-sxm")
    sizes = dict(schedule="1f1b", devices=4, microbatches=8, topology="dgx-h100")
    whole = model.seq_len * model.micro_batch_size * model.hidden * 2
    assert whole == 8192 * 1 * 4096 * 2
    assert Config.from_model(model, gpu, **sizes).comm_bytes == whole
    assert Config.from_model(model, gpu, **sizes, tensor_parallel=2).comm_bytes == whole // 2  # sequence parallel
    assert Config.from_model(model, gpu, **sizes, tensor_parallel=2, sequence_parallel=False).comm_bytes == whole
    bigger = model.replace(micro_batch_size=2, seq_len=4096)
    assert Config.from_model(bigger, gpu, **sizes).comm_bytes == 4096 * 2 * 4096 * 2
    # every transfer carries them; a comm_bytes given is kept; no topology, no bytes
    res = simulate(Config.from_model(model, gpu, **sizes))
    assert len(res.transfers) == 48 and set(res.transfers.bytes.tolist()) == {whole}
    assert Config.from_model(model, gpu, **sizes, comm_bytes=1e6).comm_bytes == 1e6
    assert Config.from_model(model, gpu, schedule="1f1b", devices=4, microbatches=8).comm_bytes is None


@pytest.mark.parametrize("name, t, what", [("llama-3-8b", 3, "32 attention heads"), ("llama-3-8b", 16, "8 key/value heads"),
                                            ("gpt-3-175b", 64, "96 attention heads")])
def test_tensor_parallel_must_split_the_heads_evenly(name, t, what):
    # was accepted: llama-3-8b at t = 3 gave costs for 10⅔ heads per rank, a run Megatron-LM refuses
    model, gpu = Transformer.preset(name), Hardware.preset("h100-sxm")
    with pytest.raises(ConfigError) as info:
        Config.from_model(model, gpu, tensor_parallel=t)
    assert str(info.value).startswith(f"tensor_parallel={t}: the model's {what} do not split evenly over {t} ranks")
    kv = model.kv_heads or model.heads
    divisors = [d for d in range(1, kv + 1) if model.heads % d == 0 and kv % d == 0]
    assert str(info.value).endswith("give a size that divides them: " + ", ".join(map(str, divisors)))
    for ok in divisors:
        assert Config.from_model(model, gpu, tensor_parallel=ok).devices == 4


def test_a_preset_the_name_begins_is_suggested_first():
    # before: "did you mean 'h200', 'h100-sxm'?" for H100
    # (the second is the closest other name: 'h800' now that there is an H800)
    with pytest.raises(ConfigError, match=r"did you mean 'h100-sxm', 'h800'\?"):
        Hardware.preset("H100")


def _dgx_h100(intra_gbps: float = 450, inter_gbps: float = 50) -> Topology:
    dgx = Topology.preset("dgx-h100")
    return Topology(8, intra=ppviz.Link(dgx.intra.latency, bandwidth=intra_gbps * 1e9, unit="s"),
                    inter=ppviz.Link(dgx.inter.latency, bandwidth=inter_gbps * 1e9, unit="s"))


def _ms_per_byte(kind: str, ranks: int, gbps: float, efficiency: float) -> float:
    """nccl-tests' bus bytes per byte of a collective, over the bus bandwidth NCCL reaches, in ms."""
    factor = 2 * (ranks - 1) / ranks if kind == "all-reduce" else (ranks - 1) / ranks
    return factor / (gbps * 1e9 * efficiency) * 1e3


def test_halving_nvlink_slows_each_tensor_parallel_layer_by_its_collectives_bytes_over_the_bandwidth():
    # Llama 3 70B (4,096-token sequences), t = 8 with sequence parallelism inside a DGX H100's node: per layer F all-gathers
    # and reduce-scatters the (sequence, micro-batch, hidden) activations twice (before QKV and the MLP,
    # after the out projection and the MLP), I six times (Megatron's backward re-gathers the inputs of
    # the column-parallel GEMMs for their weight gradients)
    sizes = dict(schedule="1f1b", devices=4, microbatches=8, tensor_parallel=8, data_parallel=2)
    fast = Config.from_model(LLAMA_70B, H100, topology=_dgx_h100(450), **sizes)
    slow = Config.from_model(LLAMA_70B, H100, topology=_dgx_h100(225), **sizes)
    nbytes = 4096 * 1 * 8192 * 2  # LLAMA_70B here: sequences of 4,096
    per = nbytes * (_ms_per_byte("all-gather", 8, 225, 370 / 450) - _ms_per_byte("all-gather", 8, 450, 370 / 450))
    for stage in (1, 2):  # the middle stages hold 20 layers and nothing else
        assert slow.stage_costs[stage]["f"] - fast.stage_costs[stage]["f"] == pytest.approx(20 * 4 * per, rel=1e-9)
        assert slow.stage_costs[stage]["b"] - fast.stage_costs[stage]["b"] == pytest.approx(20 * 6 * per, rel=1e-9)
        assert slow.stage_costs[stage]["w"] == fast.stage_costs[stage]["w"]  # W runs no collective
        assert slow.stage_costs[stage]["f_comm"] - fast.stage_costs[stage]["f_comm"] == pytest.approx(20 * 4 * per)
    assert simulate(slow).step_time > simulate(fast).step_time


def test_a_slower_network_slows_the_data_parallel_reduction_by_its_bytes_over_the_bandwidth():
    # t = 8 fills a node, so the data-parallel group (d = 4, 8 ranks apart) crosses the network
    sizes = dict(schedule="1f1b", devices=4, microbatches=8, tensor_parallel=8, data_parallel=4, zero_stage=1)
    fast = Config.from_model(LLAMA_70B, H100, topology=_dgx_h100(inter_gbps=50), **sizes)
    slow = Config.from_model(LLAMA_70B, H100, topology=_dgx_h100(inter_gbps=25), **sizes)
    params = LLAMA_70B.layer_params() * 20 / 8  # a middle stage's shard of 20 layers per tensor-parallel rank
    per = _ms_per_byte("reduce-scatter", 4, 25, 47 / 50) - _ms_per_byte("reduce-scatter", 4, 50, 47 / 50)
    assert slow.step.reduce[1] - fast.step.reduce[1] == pytest.approx(params * 2 * per, rel=1e-9)
    assert slow.step.gather[1] - fast.step.gather[1] == pytest.approx(params * 2 * per, rel=1e-9)
    # compute and the tensor-parallel traffic inside the node are unchanged
    assert [c["f"] for c in slow.stage_costs.values()] == [c["f"] for c in fast.stage_costs.values()]
    assert simulate(slow).step_time > simulate(fast).step_time


def test_a_slower_expert_parallel_link_exposes_each_moe_layers_all_to_alls():
    # Mixtral 8x7B, EP = 8 inside a node: each MoE layer's F dispatches and combines its tokens
    # (top 2 of 32,768 × 4,096 in 16 bits) by two all-to-alls, and I sends their gradients back by two
    mixtral = Transformer.preset("mixtral-8x7b")
    sizes = dict(schedule="1f1b", devices=4, microbatches=8, expert_parallel=8, data_parallel=8)
    fast = Config.from_model(mixtral, H100, topology=_dgx_h100(450), **sizes)
    slow = Config.from_model(mixtral, H100, topology=_dgx_h100(150), **sizes)
    nbytes = 32768 * 4096 * 2 * 2
    per = nbytes * (_ms_per_byte("all-to-all", 8, 150, 370 / 450) - _ms_per_byte("all-to-all", 8, 450, 370 / 450))
    for stage in (1, 2):  # 8 layers each
        assert slow.stage_costs[stage]["f"] - fast.stage_costs[stage]["f"] == pytest.approx(8 * 2 * per, rel=1e-9)
        assert slow.stage_costs[stage]["b"] - fast.stage_costs[stage]["b"] == pytest.approx(8 * 2 * per, rel=1e-9)
    assert simulate(slow).step_time > simulate(fast).step_time


@pytest.mark.parametrize("schedule, v", [("1f1b", None), ("zb-h1", None), ("interleaved-1f1b", 2), ("dualpipe-v", 2)])
def test_the_breakdown_splits_each_devices_step_into_compute_traffic_waits_and_its_tail(schedule, v):
    cfg = Config.from_model(LLAMA_70B, H100, schedule=schedule, devices=4, microbatches=8, stages_per_device=v,
                            tensor_parallel=8, data_parallel=2, topology="dgx-h100")
    res = simulate(cfg)
    parts = res.breakdown
    assert list(parts.columns) == ["device", "compute", "tp_comm", "p2p_wait", "idle", "dp_tail"]
    assert np.allclose(parts.drop(columns="device").sum(axis=1), res.step_time, rtol=1e-12)
    assert (parts.drop(columns="device") >= -1e-9).all().all()
    # each device runs every microbatch's F and backward of each stage it holds, once (DualPipe-V:
    # its two chunks); the TP traffic is those ops' stage shares
    stages = {d: sorted({int(s) for s in res.ops.stage[res.ops.device == d]}) for d in range(res.devices)}
    for d, held in stages.items():
        expected = 8 * sum(cfg.stage_costs[s]["f_comm"] + cfg.stage_costs[s]["b_comm"] + cfg.stage_costs[s]["w_comm"]
                           for s in held)
        assert parts.tp_comm[d] == pytest.approx(expected, rel=1e-12)
    assert (parts.dp_tail == res.tail).all()


def test_the_widget_is_told_the_step_and_the_longest_tails_split():
    from ppviz.widgets.wire import describe

    res = simulate(Config.from_model(LLAMA_70B, H100, **SIZES))
    step = describe(res)["step"]
    worst = int(np.argmax(res.tail))
    row = res.breakdown.iloc[worst]
    tail = step.pop("tail")
    assert step == {"time": res.step_time, "mfu": res.mfu, "tokens_per_second": res.tokens_per_second,
                    "device": worst, "compute": row.compute, "tp_comm": row.tp_comm, "p2p_wait": row.p2p_wait,
                    "idle": row.idle, "dp_tail": row.dp_tail, "setup": 0.0, "end": res.step_time,
                    "overlap_grad_reduce": True, "overlap_param_gather": True,
                    "names": {"reduce": "gradient reduce-scatter", "optimizer": "optimizer step",
                              "gather": "parameter all-gather"}}
    # each device's tail as the chart draws it: Result.tails, exactly, and how much of each part runs
    # under the device's ops (the reductions, overlapped with the last backwards)
    t = res.tails
    assert tail["device"] == t.device.tolist() and tail["stage"] == t.stage.tolist()
    assert tail["kind"] == t.kind.tolist() and set(tail["kind"]) == {"reduce", "optimizer"}  # the gather overlaps
    assert tail["start"] == t.start.tolist() and tail["end"] == t.end.tolist()
    assert tail["time"] == [res.config.step.reduce[s] if k == "reduce" else e - b
                            for s, k, b, e in zip(t.stage, t.kind, t.start, t.end)]
    last = res.ops.end[res.ops.device == 0].max()
    first = t.device == 0
    assert tail["hidden"][int(np.flatnonzero(first)[0])] == min(t.end[first][0], last) - t.start[first][0] > 0
    assert tail["hidden"] == t.hidden(res.last_op_end).tolist()
    assert describe(simulate(Config(schedule="1f1b", devices=4, microbatches=8)))["step"] is None
