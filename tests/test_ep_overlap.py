"""Expert parallelism's all-to-all in the step: timed by NCCL's model on the EP group's link,
exposed by schedules without F&B pairs and hidden by DeepSeek-V3's overlap rule in the pairs of
DualPipe and DualPipeV (ppviz.core.engine.overlapped_pairs); the DeepSeek-V3 preset's counts
(MLA, dense first layers) by hand."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import ppviz
from ppviz import Config, ConfigError, Hardware, Link, ScheduleConstraintError, Topology, Transformer
from ppviz.core.engine import exposed_a2a
from ppviz.core.metrics import metrics
from ppviz.core.program import KINDS
from ppviz.model import flops
from ppviz.model.collectives import BASE_LATENCY, NCCL_EFFICIENCY
from ppviz.model.costs import COMM_SMS, Training, item_costs

from . import oracle

H100 = Hardware.preset("h100-sxm")
H800 = Hardware.preset("h800")
# two layers of 8 experts, top 2: each MoE layer's F and I dispatch and combine T·k·h 16-bit values
SMALL = Transformer(2, hidden=1024, heads=8, experts=8, top_k=2, gated_mlp=True, ffn_hidden=2048, vocab=1024,
                    seq_len=1024)
A2A_BYTES = 1024 * 2 * 1024 * 2  # T · top_k · h · 2 bytes
EP = 8
LATENCY = 1e-6  # at most NCCL's base latency: the collective costs the base, no per-step latency beyond it
SHARE = COMM_SMS / 132


def a2a_ms(bandwidth: float) -> float:
    """One all-to-all of the small model over 8 ranks across the network, by hand: NCCL's base
    latency, then (n − 1)/n of the buffer at 47/50 of the line rate (collectives' docstring)."""
    assert LATENCY <= BASE_LATENCY
    return (LATENCY + A2A_BYTES * (EP - 1) / EP / (bandwidth * NCCL_EFFICIENCY["inter"])) * 1e3


def cluster(bandwidth: float) -> Topology:
    # 4 GPUs per node: the 8-rank expert-parallel group crosses the network, whose bandwidth varies
    return Topology(4, intra=Link(LATENCY, bandwidth=450e9, unit="s"), inter=Link(LATENCY, bandwidth=bandwidth, unit="s"))


def small(schedule: str, bandwidth: float, layout: str, devices: int = 1, microbatches: int = 4) -> Config:
    return Config.from_model(SMALL, H100, schedule=schedule, devices=devices, microbatches=microbatches,
                             expert_parallel=EP, data_parallel=EP, topology=cluster(bandwidth), layout=layout)


def rule(own_f: float, m_f: float, own_b: float, m_b: float, share: float = SHARE) -> float:
    """The pair's duration by DeepSeek-V3's overlap, written out: the computation loses 20 of 132
    SMs while an all-to-all runs; each op's chain; the communication."""
    c_f, c_b = own_f - m_f, own_b - m_b
    return max(c_f + c_b + share * (m_f + m_b), c_f + m_f, c_b + m_b, m_f + m_b)


def own_and_a2a(config: Config, kind: str, stage: int) -> tuple[float, float]:
    """An op's own time and its all-to-all, from its stage's costs (no recompute, gaps or warm-ups)."""
    s = config.stage_costs[stage]
    own = {"F": s["f"], "B": s["b"] + s["w"], "I": s["b"], "W": s["w"]}[kind]
    a2a = {"F": s["f_a2a"], "B": s["b_a2a"] + s["w_a2a"], "I": s["b_a2a"], "W": s["w_a2a"]}[kind]
    return own, a2a


def kind_names(program) -> np.ndarray:
    return np.array(list(KINDS))[program.kind]


def single_device_makespan(config: Config) -> tuple[float, list[str]]:
    """One device runs its slots back to back: the makespan is their sum (a pair by the rule), and
    which term of the rule each pair took."""
    program = config.build()
    total, terms, i = 0.0, [], 0
    while i < len(program):
        kind, stage = kind_names(program)[i], int(program.stage[i])
        own, a2a = own_and_a2a(config, kind, stage)
        if program.pair[i]:
            own_b, a2a_b = own_and_a2a(config, kind_names(program)[i + 1], int(program.stage[i + 1]))
            c_f, c_b = own - a2a, own_b - a2a_b
            options = {"compute": c_f + c_b + SHARE * (a2a + a2a_b), "F chain": c_f + a2a, "B chain": c_b + a2a_b,
                       "comm": a2a + a2a_b}
            terms.append(max(options, key=options.get))
            total += rule(own, a2a, own_b, a2a_b)
            i += 2
        else:
            total += own
            i += 1
    return total, terms


#: all-to-alls each op of a one-MoE-layer stage runs: dispatch and combine (their gradients in I)
ALL_TO_ALLS = {"F": 2, "B": 2, "I": 2, "W": 0}


def assert_by_hand(configs, term: str) -> None:
    """Each config's simulated makespan is its single device's slots summed by hand, every pair
    taking the rule's ``term``."""
    for config in configs:
        expected, terms = single_device_makespan(config)
        assert ppviz.simulate(config).makespan == pytest.approx(expected, rel=1e-12)
        assert terms and set(terms) == {term}


def test_the_all_to_all_parts_are_ncclS_time_of_each_moe_layers_dispatch_and_combine():
    config = small("1f1b", 100e9, "Et*2L")
    stage = config.stage_costs[0]
    # two MoE layers, each with a dispatch and a combine in F and their gradients in I; none in W
    assert stage["f_a2a"] == pytest.approx(4 * a2a_ms(100e9), rel=1e-12)
    assert stage["b_a2a"] == pytest.approx(4 * a2a_ms(100e9), rel=1e-12)
    assert stage["w_a2a"] == 0.0
    assert stage["a2a_sm_share"] == SHARE == 20 / 132
    # the all-to-all is all of the stage's exposed communication here (no tensor parallelism)
    assert stage["f_comm"] == stage["f_a2a"] and stage["b_comm"] == stage["b_a2a"]


def test_without_pairs_a_slower_expert_link_adds_every_all_to_all_to_the_step():
    # 1F1B on one device: the makespan is m · (f + b + w), and each microbatch runs 8 all-to-alls
    fast, slow = small("1f1b", 200e9, "Et*2L"), small("1f1b", 100e9, "Et*2L")
    assert ppviz.simulate(fast).makespan == pytest.approx(4 * (fast.f + fast.b + fast.w), rel=1e-12)
    delta = ppviz.simulate(slow).makespan - ppviz.simulate(fast).makespan
    assert delta == pytest.approx(4 * 8 * (a2a_ms(100e9) - a2a_ms(200e9)), rel=1e-9)
    program = slow.build()
    assert np.sum(exposed_a2a(program, slow)) == pytest.approx(4 * 8 * a2a_ms(100e9), rel=1e-12)


def test_in_dualpipe_v_pairs_hide_the_all_to_all_while_the_other_ops_computation_covers_it():
    # fast links: every pair is compute-bound, so the link's change reaches the step through the
    # unpaired ops, each by its own all-to-alls, and the pairs only by the SMs the all-to-all holds
    fast, faster = small("dualpipe-v", 1e12, "Et|tL"), small("dualpipe-v", 2e12, "Et|tL")
    assert_by_hand((fast, faster), "compute")
    program = fast.build()
    paired = program.pair | np.r_[False, program.pair[:-1]]
    alone = sum(ALL_TO_ALLS[k] for k in kind_names(program)[~paired])
    in_pairs = sum(ALL_TO_ALLS[k] for k in kind_names(program)[paired])
    step = a2a_ms(1e12) - a2a_ms(2e12)
    delta = ppviz.simulate(fast).makespan - ppviz.simulate(faster).makespan
    assert delta == pytest.approx((alone + SHARE * in_pairs) * step, rel=1e-9)
    # a pair exposes only the SMs' share of its all-to-all; the unpaired ops all of theirs
    exposed = exposed_a2a(program, fast)
    assert exposed.sum() == pytest.approx((alone + SHARE * in_pairs) * a2a_ms(1e12), rel=1e-12)


def test_in_dualpipe_v_pairs_expose_the_all_to_all_beyond_the_computation():
    # slow links: the communication is longer than the computation, the pairs take it in a row
    slow, slower = small("dualpipe-v", 5e9, "Et|tL"), small("dualpipe-v", 2.5e9, "Et|tL")
    assert_by_hand((slow, slower), "comm")
    # every all-to-all of the step is then on the critical path: the change is all of them
    program = slow.build()
    count = sum(ALL_TO_ALLS[k] for k in kind_names(program))
    delta = ppviz.simulate(slower).makespan - ppviz.simulate(slow).makespan
    assert delta == pytest.approx(count * (a2a_ms(2.5e9) - a2a_ms(5e9)), rel=1e-9)


@pytest.mark.parametrize("bandwidth", [5e9, 50e9, 1e12])
def test_dualpipes_f_and_b_pairs_take_the_rules_duration(bandwidth):
    config = small("dualpipe", bandwidth, "Et|tL", devices=2, microbatches=4)
    result = ppviz.simulate(config)
    program, ops = result.program, result.ops
    firsts = np.flatnonzero(program.pair)
    assert len(firsts) > 0
    for i in firsts:
        own_f, m_f = own_and_a2a(config, kind_names(program)[i], int(program.stage[i]))
        own_b, m_b = own_and_a2a(config, kind_names(program)[i + 1], int(program.stage[i + 1]))
        assert ops.end[i] - ops.start[i] == pytest.approx(rule(own_f, m_f, own_b, m_b), rel=1e-12)
    # a pair is never longer than its two ops one after the other, and shorter once it has an
    # all-to-all to hide
    for i in firsts:
        own_f, m_f = own_and_a2a(config, kind_names(program)[i], int(program.stage[i]))
        own_b, m_b = own_and_a2a(config, kind_names(program)[i + 1], int(program.stage[i + 1]))
        assert ops.end[i] - ops.start[i] <= own_f + own_b
        if m_f + m_b > 0:
            assert ops.end[i] - ops.start[i] < own_f + own_b


@pytest.mark.parametrize("model, ep", [(Transformer(2, hidden=512, heads=8, vocab=1000, seq_len=256), 1), (SMALL, 1)])
def test_without_expert_parallelism_a_pair_costs_its_two_ops(model, ep):
    config = Config.from_model(model, H100, schedule="dualpipe-v", devices=1, microbatches=2, layout="Et|tL",
                               expert_parallel=ep)
    assert not any(k in s for s in config.stage_costs.values() for k in ("f_a2a", "b_a2a", "a2a_sm_share"))
    result = ppviz.simulate(config)
    program, costs = result.program, config.stage_costs
    for i in np.flatnonzero(program.pair):
        f_stage, b_stage = int(program.stage[i]), int(program.stage[i + 1])
        own_b = costs[b_stage]["b"] + (costs[b_stage]["w"] if kind_names(program)[i + 1] == "B" else 0.0)
        assert result.ops.end[i] - result.ops.start[i] == pytest.approx(costs[f_stage]["f"] + own_b, rel=1e-12)


def test_the_pair_rules_inputs_are_checked():
    config = small("dualpipe-v", 50e9, "Et|tL")
    with pytest.raises(ConfigError, match="fb=.*leave fb out, or the stages' all-to-all parts"):
        config.replace(fb=1.0)
    costs = {s: dict(c) for s, c in config.stage_costs.items()}
    costs[0]["a2a_sm_share"] = 1.0
    with pytest.raises(ConfigError, match=r"a2a_sm_share'\]=1.0: no SM would be left for computation; give the share of the SMs"):
        config.replace(stage_costs=costs)
    costs[0]["a2a_sm_share"] = SHARE
    costs[1]["f_a2a"] = costs[1]["f"] * 2
    with pytest.raises(ConfigError, match="an op's all-to-all is longer than the op"):
        ppviz.simulate(config.replace(stage_costs=costs))
    with pytest.raises(ConfigError, match="comm_sms=132: no SM would be left for computation; give fewer than the hardware's 132 SMs"):
        Config.from_model(SMALL, H100, schedule="dualpipe-v", devices=1, microbatches=2, expert_parallel=EP,
                          data_parallel=EP, layout="Et|tL", comm_sms=132)


# DeepSeek-V3 ------------------------------------------------------------------------------

DSV3 = Transformer.preset("deepseek-v3")


def test_deepseek_v3_has_671b_parameters_and_37b_activated_by_hand():
    h, a, d, r, qr, kvr, vocab = 7168, 128, 128, 64, 1536, 512, 129280
    attention = h * qr + qr + qr * a * (d + r) + h * (kvr + r) + kvr + kvr * a * 2 * d + a * d * h
    expert = 3 * h * 2048
    moe = attention + 2 * h + h * 256 + (256 + 1) * expert
    dense = attention + 2 * h + 3 * h * 18432
    assert attention == 187_107_328 and DSV3.attention_params() == attention
    assert DSV3.layer_params() == moe and DSV3.dense().layer_params() == dense
    main = vocab * h + 3 * dense + 58 * moe + h + vocab * h
    assert DSV3.params - DSV3.mtp_params() == main == 671_026_404_352
    assert abs(main / 671e9 - 1) < 0.01  # the report: "671B total parameters"
    active = vocab * h + 3 * dense + 58 * (attention + 2 * h + h * 256 + 9 * expert) + h + vocab * h
    assert DSV3.active_params - DSV3.mtp_params() == active == 37_552_282_624
    # "37B activated for each token": what a token's products pass through (the embedding is a
    # lookup) is 36.63B, 1.0 % below 37 and 37B to the report's billion; with the lookup 37.55B
    assert round((active - vocab * h) / 1e9) == 37
    # the MTP module: "11.5B unique parameters" (README_WEIGHTS.md)
    assert round(DSV3.mtp_params() / 1e9, 1) == 11.6 and abs(DSV3.mtp_params() / 11.5e9 - 1) < 0.01


def test_deepseek_v3_flops_are_twice_the_active_weights_plus_mlas_attention_core():
    T, s = DSV3.tokens, DSV3.seq_len
    weights = DSV3.layer_params(active=True) - 2 * DSV3.hidden - (1536 + 512)  # norms are no products
    core = 2 * s * s * 128 * ((128 + 64) + 128)  # Q·Kᵀ 192 deep per head, P·V 128 wide
    assert flops.layer(DSV3).f == 2 * T * weights + core
    assert flops.layer(DSV3) == flops.Flops(2 * T * weights + core, 2 * T * weights + 2 * core, 2 * T * weights)
    dense_weights = DSV3.dense().layer_params() - 2 * DSV3.hidden - (1536 + 512)
    assert flops.dense_layer(DSV3).f == 2 * T * dense_weights + core
    per_mb = (3 * flops.dense_layer(DSV3).total + 58 * flops.layer(DSV3).total + flops.head(DSV3).total
              + flops.mtp(DSV3).total)
    assert flops.iteration(DSV3, 3) == 3 * per_mb


def test_deepseek_v3s_dense_first_layers_cost_their_own_items_on_the_first_stage():
    training = Training(expert_parallel=64, data_parallel=128, pipeline_parallel=16, fp8=True,
                        cluster=Topology.preset("h800-ib"))
    per = item_costs(DSV3, H800, training)
    assert set(per) == {"E", "t", "m", "L", "d"}
    assert per["d"][4] == (0.0, 0.0, 0.0, 0.0) and per["t"][4][0] > 0  # a dense layer has no all-to-all
    assert per["d"][2] == DSV3.dense().layer_params()
    config = Config.from_model(DSV3, H800, schedule="1f1b", devices=16, microbatches=32, expert_parallel=64,
                               data_parallel=128, zero_stage=1, fp8=True, layout="Et*3|(t*4|)*14,t*2mL")
    first, second = config.stage_costs[0], config.stage_costs[1]
    assert first["f"] == pytest.approx(per["E"][0][0] + 3 * per["d"][0][0], rel=1e-12)
    assert first.get("f_a2a", 0.0) == 0.0
    assert second["f"] == pytest.approx(4 * per["t"][0][0], rel=1e-12)
    assert second["f_a2a"] == pytest.approx(4 * per["t"][4][0], rel=1e-12)


def test_dualpipe_v_exposes_less_expert_parallel_traffic_than_1f1b_on_deepseek_v3():
    # PP16 × EP64 over 2,048 H800s with ZeRO-1 data parallelism, as DeepSeek trained it
    options = dict(devices=16, microbatches=64, expert_parallel=64, data_parallel=128, zero_stage=1, fp8=True)
    exposed = {}
    for schedule, layout in (("1f1b", "Et*3|(t*4|)*14,t*2mL"), ("dualpipe-v", "Et*3|(tt|)*29,m|L")):
        config = Config.from_model(DSV3, H800, schedule=schedule, layout=layout, **options)
        program = config.build()
        exposed[schedule] = float(exposed_a2a(program, config).sum())
        total = sum(own_and_a2a(config, k, int(s))[1] for k, s in zip(kind_names(program), program.stage))
        if schedule == "1f1b":
            assert exposed[schedule] == pytest.approx(total, rel=1e-12)  # no pair: all of it exposed
        else:
            assert exposed[schedule] < 0.6 * total
    assert exposed["dualpipe-v"] < exposed["1f1b"]


@pytest.mark.parametrize("parts, expected", [
    # (F's own time and all-to-all, B's (b + w) and its), the pair by hand, σ = 0.25
    ((10.0, 8.0, 3.0, 0.0), 10.0),                 # F's chain: its 8 of all-to-all hide under B's 3 only
    ((4.0, 1.0, 6.0, 2.0), 3 + 4 + 0.25 * 3),      # computation, less the SMs the all-to-all holds: 7.75
    ((2.0, 1.5, 3.0, 2.5), 4.0),                   # communication in a row
    ((2.0, 0.0, 3.0, 0.0), 5.0),                   # nothing to hide: the two ops' sum
])
def test_the_pair_rule_on_costs_given_by_hand(parts, expected):
    own_f, m_f, own_b, m_b = parts
    # one device, DualPipeV's two stages at m = 2: its one pair is F of stage 1 with B of stage 0
    # (w = 1 of B's time)
    costs = {1: {"f": own_f, "b": 1.0, "w": 1.0, "f_a2a": m_f, "b_a2a": 0.0, "w_a2a": 0.0, "a2a_sm_share": 0.25},
             0: {"f": 1.0, "b": own_b - 1.0, "w": 1.0, "f_a2a": 0.0, "b_a2a": m_b, "w_a2a": 0.0, "a2a_sm_share": 0.25}}
    config = Config("dualpipe-v", devices=1, microbatches=2, stage_costs=costs)
    program = config.build()
    cost = ppviz.core.engine.op_costs(program, config)
    pairs = [(int(i), kind_names(program)[i], int(program.stage[i]), kind_names(program)[i + 1],
              int(program.stage[i + 1])) for i in np.flatnonzero(program.pair)]
    assert [p[1:] for p in pairs] == [("F", 1, "B", 0)]
    i = pairs[0][0]
    assert cost[i] == pytest.approx(expected, rel=1e-12) and cost[i + 1] == 0.0


PAIR_SCHEDULES = ["dualpipe", "dualpipe-v", "dualpipe-v-unsplit", "1f1b-overlap", "interleaved-1f1b-overlap"]
times = st.sampled_from([0.0, 0.5, 1.0, 2.0]) | st.floats(0.01, 4.0, allow_nan=False)
shares = st.sampled_from([0.0, 0.0, 0.5, 1.0]) | st.floats(0.0, 1.0, allow_nan=False)


@st.composite
def pair_configs(draw):
    name = draw(st.sampled_from(PAIR_SCHEDULES))
    p = draw(st.integers(1, 4))
    m = draw(st.integers(1, 4 * p))
    f, b, w = draw(times), draw(times), draw(times)
    assume(f + b + w > 0)
    try:
        base = Config(schedule=name, devices=p, microbatches=m, f=f, b=b, w=w, comm=draw(st.sampled_from([0.0, 0.5])))
    except ScheduleConstraintError:
        assume(False)
    frac = p / base.stages
    costs = {}
    for s in range(base.stages):
        own = {"f": draw(times) if draw(st.booleans()) else f * frac, "b": b * frac, "w": w * frac}
        # each all-to-all a share of its op (at most all of it), the SMs' share below 1
        costs[s] = {**own, "f_a2a": own["f"] * draw(shares), "b_a2a": own["b"] * draw(shares),
                    "w_a2a": own["w"] * draw(shares), "a2a_sm_share": draw(st.floats(0.0, 0.9))}
    return base.replace(stage_costs=costs)


@settings(max_examples=150, deadline=None)
@given(pair_configs())
def test_the_pair_rule_matches_the_oracle_and_the_metrics_fast_path(config):
    result = ppviz.simulate(config)
    ref = oracle.run(result.program, config)
    assert np.allclose(result.ops.start, ref.start, rtol=1e-12, atol=1e-12)
    assert np.allclose(result.ops.end, ref.end, rtol=1e-12, atol=1e-12)
    assert metrics(config).makespan == result.makespan
    # a pair never takes longer than its two ops one after the other, nor less than either
    plain = ppviz.simulate(config.replace(stage_costs={s: {k: v for k, v in c.items() if k in "fbw"}
                                                       for s, c in config.stage_costs.items()}))
    assert result.makespan <= plain.makespan * (1 + 1e-12)


def nccl(nbytes: float, ranks: int, latency: float, bandwidth: float, efficiency: float) -> float:
    """An all-to-all, all-gather or reduce-scatter by NCCL's model, by hand, in seconds: the base
    latency, n − 1 steps of the rest of the link's latency, (n − 1)/n of the buffer at the bus
    bandwidth."""
    base = min(BASE_LATENCY, latency)
    return base + (ranks - 1) * (latency - base) + nbytes * (ranks - 1) / ranks / (bandwidth * efficiency)


def test_node_limited_dispatch_crosses_the_network_once_per_target_node():
    cluster = Topology.preset("h800-ib")
    groups = Training(expert_parallel=64, data_parallel=128, pipeline_parallel=16).groups
    nbytes = 4096 * 8 * 7168 * 2  # a microbatch's 8 copies of each token, 16-bit
    network = nccl(nbytes * 4 / 8, 8, cluster.inter.latency, 50e9, 47 / 50)  # 4 of 8 nodes
    nvlink = nccl(nbytes, 8, cluster.intra.latency, 200e9, 370 / 450)
    assert network > nvlink  # the network is the bottleneck: its half of the bytes at a quarter of the rate
    assert groups.node_limited_all_to_all(nbytes, 8, 4, cluster) == pytest.approx(max(network, nvlink), rel=1e-12)
    # unlimited routing over 8 nodes, or a limit above the copies, sends all 8 copies: 1/8 stays home
    assert groups.node_limited_all_to_all(nbytes, 8, 8, cluster) == pytest.approx(
        nccl(nbytes, 8, cluster.inter.latency, 50e9, 47 / 50), rel=1e-12)
    # inside one node it is the plain all-to-all over NVLink
    inside = Training(expert_parallel=8, data_parallel=8).groups
    assert inside.node_limited_all_to_all(nbytes, 8, 4, cluster) == pytest.approx(
        nccl(nbytes, 8, cluster.intra.latency, 200e9, 370 / 450), rel=1e-12)
    # the preset's MoE layers time each of their four all-to-alls so
    config = Config.from_model(DSV3, H800, schedule="1f1b", devices=16, microbatches=32, expert_parallel=64,
                               data_parallel=128, zero_stage=1, layout="Et*3|(t*4|)*14,t*2mL")
    assert config.stage_costs[1]["f_a2a"] == pytest.approx(4 * 2 * max(network, nvlink) * 1e3, rel=1e-12)
    plain = Config.from_model(DSV3.replace(routed_nodes=None), H800, schedule="1f1b", devices=16, microbatches=32,
                              expert_parallel=64, data_parallel=128, zero_stage=1, layout="Et*3|(t*4|)*14,t*2mL")
    assert plain.stage_costs[1]["f_a2a"] == pytest.approx(
        4 * 2 * nccl(nbytes, 64, cluster.inter.latency, 50e9, 47 / 50) * 1e3, rel=1e-12)


def test_expert_parallelism_splits_the_experts_static_memory_and_their_gradient_reduction():
    cluster = Topology.preset("h800-ib")
    options = dict(schedule="1f1b", devices=16, microbatches=32, data_parallel=128, zero_stage=1,
                   layout="Et*3|(t*4|)*14,t*2mL")
    config = Config.from_model(DSV3, H800, expert_parallel=64, **options)
    experts = 4 * 256 * 3 * 7168 * 2048  # stage 1's four MoE layers' routed experts
    dense = 4 * DSV3.layer_params() - experts
    # ZeRO-1: 4 bytes a parameter + 12 over the ranks sharing the optimizer state: 128 for the dense
    # part, 128 / 64 = 2 for the experts, of which each rank holds 1/64
    static = dense * (4 + Fraction(12, 128)) + Fraction(experts, 64) * (4 + Fraction(12, 2))
    assert config.stage_costs[1]["params"] * config.activation_bytes == pytest.approx(float(static), rel=1e-12)
    # gradients: the dense part reduce-scattered over the 128 data-parallel ranks, the experts' over
    # the 2 ranks 64 apart that hold the same experts (both across nodes)
    net = (cluster.inter.latency, 50e9, 47 / 50)
    reduce = (nccl(dense * 2, 128, *net) + nccl(experts / 64 * 2, 2, *net)) * 1e3
    assert config.step.reduce[1] == pytest.approx(reduce, rel=1e-12)
    with pytest.raises(ConfigError, match="expert_parallel=64: .*give a divisor of data_parallel × context_parallel"):
        Config.from_model(DSV3, H800, expert_parallel=64, **{**options, "data_parallel": 96})


def test_whole_experts_take_their_expert_parallel_group_from_the_tensor_and_data_parallel_ranks():
    """NVIDIA's DeepSeek-V3 recipe on H100s: t = 2, EP = 64 over d = 32, expert TP 1 (each expert
    whole): the experts' memory is split over 64, not 2 · 64, their state sharded over the
    2 · 32 / 64 = 1 rank holding the same experts, and the group spans 64 consecutive ranks, 8 nodes."""
    from ppviz.model.collectives import Groups
    options = dict(schedule="1f1b", devices=8, microbatches=128, data_parallel=32, zero_stage=1,
                   tensor_parallel=2, expert_parallel=64, layout=[8] * 7 + [5])
    with pytest.raises(ConfigError, match="expert_parallel=64: .*give a divisor of data_parallel × context_parallel "
                                          "= 32"):
        Config.from_model(DSV3, H800, **options)
    config = Config.from_model(DSV3, H800, expert_tensor_parallel=1, **options)
    experts = 8 * 256 * 3 * 7168 * 2048  # stage 1's eight MoE layers' routed experts
    dense = 8 * DSV3.layer_params() - experts
    static = Fraction(dense, 2) * (4 + Fraction(12, 32)) + Fraction(experts, 64) * (4 + 12)
    assert config.stage_costs[1]["params"] * config.activation_bytes == pytest.approx(float(static), rel=1e-12)
    groups = Groups(tp=2, dp=32, ep=64, pp=8, etp=1)
    assert (groups.edp, groups.stride("ep"), groups.inside_node("ep", 8)) == (1, 1, False)
    assert Groups(tp=2, dp=32, ep=4, pp=8, etp=1).inside_node("ep", 8)  # 4 consecutive ranks
    assert Groups(tp=2, dp=32, ep=8, pp=8).stride("ep") == 2  # with the experts split over t, t apart


def test_mla_under_tensor_and_sequence_parallelism_duplicates_its_down_projections():
    from ppviz.model.kernels import item_kernels

    layer = item_kernels(DSV3, Training(tensor_parallel=2, expert_parallel=8))["t"]["F"]
    gemms = {k.name: (k.m, k.n, k.k) for k in layer.kernels if k.kind == "gemm"}
    T = 4096
    assert gemms["Q down-projection"] == (T // 2, 1536, 7168)  # each rank's own tokens, the whole matrix
    assert gemms["KV down-projection"] == (T // 2, 512 + 64, 7168)
    assert gemms["Q up-projection"] == (T, 128 * 192 // 2, 1536)  # column-parallel over the gathered latent
    assert gemms["KV up-projection"] == (T, 128 * 256 // 2, 512)
    assert gemms["output projection"] == (T, 7168, 128 * 128 // 2)
    gathered = {c.name: c.bytes for c in layer.collectives if c.kind == "all-gather"}
    assert gathered["Q up-projection input"] == T * 1536 * 2 and gathered["KV up-projection input"] == T * 512 * 2
    core = next(k for k in layer.kernels if k.kind == "attention")
    assert core.flops == 2 * 4096 * 4096 * 64 * (192 + 128) // 2  # causal half, 64 heads a rank


@pytest.mark.parametrize("fields, message", [
    (dict(q_lora_rank=64), "q_lora_rank=64: it describes multi-head latent attention; give kv_lora_rank too"),
    (dict(rope_head_dim=16), "rope_head_dim=16: it describes multi-head latent attention; give kv_lora_rank too"),
    (dict(kv_lora_rank=64, kv_heads=2), "kv_heads=2 is not accepted; leave kv_heads out with kv_lora_rank"),
    (dict(dense_layers=1), "dense_layers=1 is not accepted; give experts >= 1 too"),
    (dict(experts=4, dense_layers=3), "dense_layers=3 is not accepted; give a whole number from 0 to 2"),
    (dict(routed_nodes=2), "experts=0 is not accepted; give experts >= 1 for a mixture of experts"),
    (dict(experts=4, routed_nodes=0), "routed_nodes=0 is not accepted; give a whole number from 1"),
])
def test_the_new_model_fields_refuse_what_they_cannot_describe(fields, message):
    with pytest.raises(ConfigError) as info:
        Transformer(2, hidden=256, heads=4, **fields)
    assert str(info.value).startswith(message)
