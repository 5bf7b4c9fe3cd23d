"""The automatic layer balancer: its slowest stage is the least possible (against brute force),
its local search never ends worse than where it started, and on a sweep of models and
schedules its layout's simulated step is never slower than Megatron's even split.

``benchmarks/balance.py`` runs a larger sweep and prints its size and the largest gain.
"""

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ppviz import Config, Hardware, Transformer, simulate
from ppviz.model.balance import candidates

item_costs = st.lists(st.integers(0, 20).map(float), min_size=3, max_size=9)


def every_cut(n: int, stages: int):
    """All cut points with the first item on stage 0 and the last on stage S−1."""
    for inner in itertools.combinations_with_replacement(range(1, n), stages - 1):
        yield [0, *inner, n]


def stage_sums(costs, cuts):
    return [sum(costs[a:b]) for a, b in zip(cuts, cuts[1:])]


@given(item_costs, st.integers(1, 4))
def test_the_slowest_stage_is_the_least_possible(costs, stages):
    n = len(costs)
    best = min(max(stage_sums(costs, c)) for c in every_cut(n, stages))
    found = candidates(costs, stages)[0]
    assert found[0] == 0 and found[-1] == n and found[1] >= 1 and found[-2] <= n - 1
    assert sorted(found) == found and len(found) == stages + 1
    assert max(stage_sums(costs, found)) == best


@given(item_costs, st.integers(2, 3), st.integers(2, 3), st.data())
def test_candidates_are_never_worse_than_the_start_on_their_objective(costs, devices, v, data):
    stages = devices * v
    n = len(costs)
    weights = np.zeros((devices, stages))
    for s in range(stages):
        weights[s % devices, s] = 1.0  # looped placement
    start = data.draw(st.sampled_from(list(every_cut(n, stages))))
    found = candidates(costs, stages, weights, [start])

    def objective(cuts):
        per_stage = np.array(stage_sums(costs, cuts))
        return max(per_stage), max(weights @ per_stage)

    assert objective(found[0]) <= objective(start)  # (slowest stage, busiest device)
    assert objective(found[1])[::-1] <= objective(start)[::-1]  # (busiest device, slowest stage)
    assert start in found


H100 = Hardware.preset("h100-sxm")
SWEEP_MODELS = [Transformer(layers=layers, hidden=hidden, heads=16, kv_heads=4, vocab=vocab, seq_len=seq,
                            gated_mlp=True, ffn_hidden=hidden * 7 // 2)
                for layers, hidden, vocab, seq in itertools.product([8, 16, 32], [1024, 4096], [32000, 128256],
                                                                     [2048, 8192])]
SWEEP_SCHEDULES = [("1f1b", 1), ("interleaved-1f1b", 2), ("zb-h1", 1), ("zb-v", 2), ("dualpipe-v", 2)]


def test_the_balancer_is_never_slower_than_megatrons_even_split():
    runs, gains, rescued = 0, [], 0
    for model in SWEEP_MODELS:
        for (schedule, v), p in itertools.product(SWEEP_SCHEDULES, (2, 4)):
            if model.layers % (p * v):
                continue
            sizes = dict(schedule=schedule, devices=p, microbatches=2 * p, stages_per_device=v)
            even = simulate(Config.from_model(model, H100, **sizes))
            balanced = simulate(Config.from_model(model, H100, layout="balanced", **sizes))
            runs += 1
            if even.out_of_memory and not balanced.out_of_memory:
                rescued += 1  # the balancer prefers a layout that fits to a faster one that does not
                continue
            assert balanced.makespan <= even.makespan * (1 + 1e-12), (model, sizes)
            gains.append(1 - balanced.makespan / even.makespan)
    assert runs == 240
    # the imbalance the head causes is real: on some models the balancer saves a fifth of the step
    assert max(gains) > 0.2 and sum(g > 0.01 for g in gains) > runs // 4


@pytest.mark.parametrize("links", [dict(offload=1.0), dict(topology="dgx-h100")], ids=["offload", "topology"])
def test_the_balancer_simulates_the_runs_offload_and_links(links):
    # the candidates were simulated without them: with offload the "balanced" layout was slower
    # than the even split on 134 of 384 such runs (up to 50 %: 27.4 ms against 41.0 ms)
    runs = 0
    for model in SWEEP_MODELS[:8]:
        for (schedule, v), p in itertools.product([("1f1b", 1), ("interleaved-1f1b", 2), ("zb-v", 2)], (2, 4)):
            sizes = dict(schedule=schedule, devices=p, microbatches=2 * p, stages_per_device=v, **links)
            even = simulate(Config.from_model(model, H100, **sizes))
            balanced = simulate(Config.from_model(model, H100, layout="balanced", **sizes))
            runs += 1
            assert (balanced.out_of_memory, balanced.makespan) <= (even.out_of_memory, even.makespan * (1 + 1e-12)), \
                (model, sizes)
    assert runs == 48


def test_llama_3_8b_on_8_stages_moves_layers_off_the_head():
    model = Transformer.preset("llama-3-8b")
    sizes = dict(schedule="1f1b", devices=8, microbatches=32, tensor_parallel=4)
    even = Config.from_model(model, H100, **sizes)
    balanced = Config.from_model(model, H100, layout="balanced", **sizes)
    counts = [balanced.stage_costs[s]["f"] for s in range(8)]
    # the last stage (4 layers + a head of 2.4 layers' FLOPs) was the slowest; now it is not
    assert int(np.argmax([even.stage_costs[s]["f"] for s in range(8)])) == 7
    assert int(np.argmax(counts)) != 7
    assert simulate(balanced).makespan < 0.9 * simulate(even).makespan


@pytest.mark.parametrize("schedule, v", [("interleaved-1f1b", 2), ("zb-v", 2), ("dualpipe", 1)])
def test_balanced_layouts_follow_the_schedules_stage_count(schedule, v):
    model = Transformer.preset("llama-3-8b", seq_len=4096)
    cfg = Config.from_model(model, H100, schedule=schedule, devices=4, microbatches=8, stages_per_device=v,
                            layout="balanced", tensor_parallel=2)
    assert cfg.stages == len(cfg.stage_costs) == (4 * v if schedule != "dualpipe" else 4)
    assert simulate(cfg).makespan > 0


def test_memory_comes_first_the_balancer_finds_llama_3s_405b_layout():
    # Dubey et al. 2024 (§3.3.2) trained the 405B model on 16 stages with one layer fewer on the
    # first and the last stage; on H100s with TP 8 and ZeRO-1 over DP 8, 1F1B's first stage
    # (p microbatches in flight) fits only with 7 layers, and the balancer finds that layout; timed
    # from the shapes, the last stage's LM head and loss make it the time-balanced cut too
    model = Transformer.preset("llama-3-405b")
    sizes = dict(devices=16, microbatches=32, tensor_parallel=8, data_parallel=8, zero_stage=1)
    from ppviz.model import choose_layout

    chosen = choose_layout(model, H100, layout="balanced", **sizes)
    assert chosen.counts() == [7] + [8] * 14 + [7]
    assert not simulate(Config.from_model(model, H100, layout="balanced", **sizes)).out_of_memory
    unbounded = H100.replace(memory_gib=10_000)
    assert choose_layout(model, unbounded, layout="balanced", **sizes).counts() == chosen.counts()
    # 8 layers on the first stage does not fit
    assert simulate(Config.from_model(model, H100, layout=[8] * 15 + [6], **sizes)).out_of_memory
