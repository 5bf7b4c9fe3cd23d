"""What a collective costs over the link its group crosses, and which link that is.

**The cost** is NCCL's bus-bandwidth model (nccl-tests, ``doc/PERFORMANCE.md``): a collective of
``S`` bytes over ``n`` ranks moves ``S · factor(n)`` bytes through each rank's bottleneck link,
with factor 2(n − 1)/n for an all-reduce and (n − 1)/n for an all-gather, a reduce-scatter
(``S`` the whole gathered or scattered array) and an all-to-all; "this is independent of the
algorithm used (ring, tree, or other) as long as they use point-to-point operations". Its time is
NCCL's own cost model's (``src/graph/tuning.cc``): a base latency of :data:`BASE_LATENCY` per
collective, a hardware latency per ring step (2(n − 1) steps for an all-reduce, n − 1 for the
others; the link's latency less the base: 3.4 µs over NVLink, 9.6 µs over the network, as
``ppviz.core.topology``'s presets take them from the same file), and ``S · factor / busbw``, with
``busbw`` the bus bandwidth NCCL reaches on the bottleneck link: :data:`NCCL_EFFICIENCY` of the
link's line rate. A group of one rank costs nothing.

**The link**: ranks are laid out as Megatron-LM lays them out by default (``order =
"tp-cp-ep-dp-pp"``: tensor-parallel ranks adjacent, then context, expert and data parallel,
pipeline stages outermost), nodes (NVLink domains: 8 GPUs in a DGX, 72 in a GB200 NVL72) hold
consecutive ranks, and a group whose members are ``stride`` ranks apart stays inside one node when
``stride · size`` ranks fit in it. A group inside a node runs over NVLink (the topology's
``intra`` link), any other over the network (``inter``): when a ring leaves the node its slowest
hops are the NICs, one per GPU.

**Node-limited routing** (DeepSeek-V3, arXiv 2412.19437, §2.1.2 and §3.2.2): a mixture of experts
whose router sends each token to experts on at most M nodes dispatches it "via IB to the GPUs
with the same in-node index on its target nodes", once per node, and NVLink forwards it there to
its experts, "IB and NVLink communication fully overlapped"
(:meth:`Groups.node_limited_all_to_all`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import ConfigError
from ..core.topology import Link, Topology

KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all")
#: NCCL's base latency of one collective with the Simple protocol (tuning.cc, commit 01afd20)
BASE_LATENCY = 8.4e-6
#: Bus bandwidth NCCL reaches, as a share of the line rate: "With the protocol overhead (~20%)
#: NCCL can get an effective NVLink bandwidth of 370GB/s" of H100's 450 (S. Jeaugey, NVIDIA,
#: nccl-tests issue 212; 368.8 GB/s measured in nccl-tests issue 309); "For NDR @ 400Gbps you
#: should see 46-48GB/s per NIC" of 50 (NVIDIA, nccl-tests issue 290).
NCCL_EFFICIENCY = {"intra": 370 / 450, "inter": 47 / 50}
#: Megatron-LM's default rank order (``--rank-ordering`` absent: tp-cp-ep-dp-pp)
ORDER = ("tp", "cp", "ep", "dp", "pp")


def bus_factor(kind: str, ranks: int) -> float:
    """nccl-tests' factor between the algorithm bandwidth (S / t) and the bus bandwidth."""
    if kind not in KINDS:
        raise ConfigError("kind", kind, f"give one of {', '.join(KINDS)}")
    n = ranks
    return 2 * (n - 1) / n if kind == "all-reduce" else (n - 1) / n


def collective_time(kind: str, nbytes: float, ranks: int, link: Link, efficiency: float = 1.0) -> float:
    """Time of one collective of ``nbytes`` over ``ranks`` ranks whose bottleneck is ``link``
    (in the link's units), at ``efficiency`` of its bandwidth."""
    if ranks <= 1 or nbytes <= 0:
        return 0.0
    steps = 2 * (ranks - 1) if kind == "all-reduce" else ranks - 1
    base = min(BASE_LATENCY, link.latency)
    return base + steps * (link.latency - base) + nbytes * bus_factor(kind, ranks) / (link.bandwidth * efficiency)


@dataclass(frozen=True)
class Groups:
    """The sizes of a training run's parallel groups, laid out in Megatron-LM's rank order."""

    tp: int = 1
    cp: int = 1
    ep: int = 1
    dp: int = 1
    pp: int = 1
    etp: int | None = None  # expert tensor parallelism: the experts' own TP size (None: tp)

    @property
    def expert_tp(self) -> int:
        return self.tp if self.etp is None else self.etp

    @property
    def expert_ranks(self) -> int:
        """The ranks of a stage the expert-parallel groups are carved from, tp · cp · dp / expert
        tp: Megatron-LM carves them out of its data- and context-parallel ranks, and with an
        expert tensor parallelism below t out of its tensor-parallel ones too."""
        return self.tp * self.cp * self.dp // self.expert_tp

    @property
    def holds_expert_groups(self) -> bool:
        """Whether a stage's ranks split into whole expert-parallel groups."""
        return self.expert_ranks % self.ep == 0

    @property
    def edp(self) -> int:
        """The expert-data-parallel group's size: the ranks of a pipeline stage that hold the same
        experts, tp · cp · dp / (ep · expert tp) (Megatron-LM: world / (pp · ep · expert tp))."""
        return self.expert_ranks // self.ep

    def stride(self, group: str) -> int:
        """Ranks between consecutive members of ``group`` (1 for tensor parallelism); the expert-
        data-parallel group's members are a whole expert-parallel group apart. The experts' ranks
        are laid out as Megatron-LM's expert rank generator lays them (``etp-ep-dp-pp``): with an
        expert tensor parallelism other than t, the expert-parallel ranks are expert-tp apart."""
        if self.etp is not None and self.etp != self.tp and group in ("ep", "edp"):
            return self.etp if group == "ep" else self.etp * self.ep
        if group == "edp":
            return self.tp * self.cp * self.ep
        stride = 1
        for name in ORDER:
            if name == group:
                return stride
            if name == "ep":  # expert parallelism splits the data-parallel ranks: it adds no dimension
                continue
            stride *= getattr(self, name)
        raise ConfigError("group", group, f"give one of {', '.join(ORDER)}")

    @property
    def gpus(self) -> int:
        return self.tp * self.cp * self.dp * self.pp

    def inside_node(self, group: str, gpus_per_node: int) -> bool:
        """Whether every member of ``group`` shares a node (an NVLink domain)."""
        return self.stride(group) * getattr(self, group) <= gpus_per_node

    def link(self, group: str, topology: Topology) -> tuple[Link, float]:
        """The link ``group``'s collectives cross, and the share of its bandwidth NCCL reaches."""
        if self.inside_node(group, topology.devices_per_node):
            return topology.intra, NCCL_EFFICIENCY["intra"]
        return topology.inter, NCCL_EFFICIENCY["inter"]

    def time(self, group: str, kind: str, nbytes: float, topology: Topology) -> float:
        """One collective of ``group`` in seconds (``topology`` in seconds, as its presets are)."""
        ranks = getattr(self, group)
        link, efficiency = self.link(group, topology)
        return collective_time(kind, nbytes, ranks, link, efficiency)

    def node_limited_all_to_all(self, nbytes: float, copies: int, nodes_per_token: int, topology: Topology) -> float:
        """An expert-parallel all-to-all of ``nbytes`` (``copies`` of each token) under node-limited
        routing, in seconds: when the group spans n nodes, an all-to-all over the network between
        the n GPUs of one in-node index, of one copy per target node (min(copies,
        ``nodes_per_token``, n) of them), overlapped with the all-to-all over NVLink inside each
        node that forwards every copy to its expert's GPU; inside one node, the plain all-to-all."""
        per_node = max(1, min(self.ep, topology.devices_per_node // self.stride("ep")))
        nodes = -(-self.ep // per_node)
        if nodes == 1:
            return self.time("ep", "all-to-all", nbytes, topology)
        network = nbytes * min(copies, nodes_per_token, nodes) / copies
        return max(collective_time("all-to-all", network, nodes, topology.inter, NCCL_EFFICIENCY["inter"]),
                   collective_time("all-to-all", nbytes, per_node, topology.intra, NCCL_EFFICIENCY["intra"]))

    def pipeline_topology(self, topology: Topology) -> Topology:
        """The topology of the pipeline's stages, as ppviz's devices (one per stage rank): stage
        ranks are ``stride("pp")`` GPUs apart, so a node holds ``gpus_per_node // stride`` of them
        (one, when a stage's tensor- and data-parallel ranks fill a node or more)."""
        per_node = max(1, topology.devices_per_node // self.stride("pp"))
        if per_node == topology.devices_per_node:
            return topology
        name = f"{topology.name}, {per_node} stage{'s' if per_node > 1 else ''} per node" if topology.name else None
        return Topology(per_node, intra=topology.intra, inter=topology.inter, name=name)


__all__ = ["BASE_LATENCY", "KINDS", "NCCL_EFFICIENCY", "ORDER", "Groups", "bus_factor", "collective_time"]
