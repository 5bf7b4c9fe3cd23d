"""The collective cost model (model/collectives.py): nccl-tests' bus-bandwidth factors, the time
of a collective by hand, and which link a parallel group crosses in Megatron-LM's rank order."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ppviz import ConfigError, Link, Topology
from ppviz.model.collectives import NCCL_EFFICIENCY, Groups, bus_factor, collective_time

DGX_H100 = Topology.preset("dgx-h100")


def test_the_bus_factors_are_nccl_tests():
    # PERFORMANCE.md: all-reduce 2(n-1)/n; reduce-scatter, all-gather and all-to-all (n-1)/n
    assert bus_factor("all-reduce", 8) == 2 * 7 / 8
    assert bus_factor("reduce-scatter", 8) == bus_factor("all-gather", 8) == bus_factor("all-to-all", 8) == 7 / 8
    with pytest.raises(ConfigError, match="all-reduce"):
        bus_factor("broadcast-ish", 4)


def test_a_collective_by_hand():
    link = Link(18e-6, bandwidth=100e9, unit="s")
    # all-reduce of 1 GB over 4 ranks: NCCL's base latency, 6 ring steps of 9.6 µs, 1e9 · 1.5 / 100e9
    assert collective_time("all-reduce", 1e9, 4, link) == pytest.approx(8.4e-6 + 6 * 9.6e-6 + 0.015)
    assert collective_time("all-gather", 1e9, 4, link, efficiency=0.5) == pytest.approx(
        8.4e-6 + 3 * 9.6e-6 + 1e9 * 0.75 / 50e9)
    assert collective_time("all-reduce", 1e9, 1, link) == 0.0  # a group of one moves nothing


@given(st.sampled_from(["all-reduce", "all-gather", "reduce-scatter", "all-to-all"]), st.integers(2, 512),
       st.floats(1.0, 1e12), st.floats(1e6, 1e12))
def test_time_grows_with_bytes_and_falls_with_bandwidth(kind, n, nbytes, bandwidth):
    link = Link(1e-6, bandwidth=bandwidth, unit="s")
    t = collective_time(kind, nbytes, n, link)
    assert collective_time(kind, 2 * nbytes, n, link) > t
    assert collective_time(kind, nbytes, n, Link(1e-6, bandwidth=2 * bandwidth, unit="s")) < t
    # the bandwidth term is at most twice the bytes over the bandwidth (all-reduce) whatever n
    assert t - (2 * (n - 1) if kind == "all-reduce" else n - 1) * 1e-6 <= 2 * nbytes / bandwidth * (1 + 1e-12) + 1e-15


def test_groups_follow_megatrons_rank_order():
    g = Groups(tp=8, dp=4, pp=8)
    assert (g.stride("tp"), g.stride("cp"), g.stride("dp"), g.stride("pp")) == (1, 8, 8, 32)
    assert g.gpus == 256
    assert g.inside_node("tp", 8) and not g.inside_node("dp", 8) and not g.inside_node("pp", 8)
    assert g.link("tp", DGX_H100) == (DGX_H100.intra, NCCL_EFFICIENCY["intra"])
    assert g.link("dp", DGX_H100) == (DGX_H100.inter, NCCL_EFFICIENCY["inter"])
    small = Groups(tp=2, dp=4, pp=2)  # 8 GPUs: tensor and data parallelism inside the node, stages apart
    assert small.inside_node("dp", 8) and not small.inside_node("pp", 8)
    assert small.pipeline_topology(DGX_H100).devices_per_node == 1
    assert Groups(tp=2, pp=4).pipeline_topology(DGX_H100).devices_per_node == 4  # 4 stages in a node
    # an NVL72 domain holds a data-parallel group a DGX cannot
    assert Groups(tp=8, dp=8, pp=1).inside_node("dp", 72) and not Groups(tp=8, dp=8).inside_node("dp", 8)


def test_a_data_parallel_all_reduce_across_nodes_by_hand():
    # 8 GB of gradients over 8 H100 nodes' 400 Gb/s NICs (50 GB/s, 47 reached): 2·7/8·8e9/47e9
    g = Groups(tp=8, dp=8)
    t = g.time("dp", "all-reduce", 8e9, DGX_H100)
    latency = 8.4e-6 + 14 * (DGX_H100.inter.latency - 8.4e-6)
    assert t == pytest.approx(latency + 8e9 * 14 / 8 / 47e9)
    # halving the network's bandwidth (nearly) doubles it; NVLink's does not change it
    slower = Topology(8, intra=DGX_H100.intra, inter=Link(DGX_H100.inter.latency, bandwidth=25e9, unit="s"))
    assert g.time("dp", "all-reduce", 8e9, slower) == pytest.approx(latency + 2 * 8e9 * 14 / 8 / 47e9)
    assert math.isclose(g.time("tp", "all-reduce", 1e6, slower), g.time("tp", "all-reduce", 1e6, DGX_H100))
