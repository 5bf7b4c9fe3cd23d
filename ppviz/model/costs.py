"""From a model and a machine to a :class:`ppviz.Config` in real units: per-stage times in
milliseconds and memory in bytes, with the device's capacity for "will it fit?".

Per stage s (model chunk s), for one microbatch on one device of its tensor-parallel group: the
F, I and W times (and the recompute before a backward) are the kernels of the items the stage
holds (``ppviz.model.kernels``) timed by the roofline (``ppviz.model.roofline``), plus the
tensor- and expert-parallel collectives those passes issue, timed by NCCL's model over their
groups' links (``ppviz.model.collectives``: Megatron-LM's rank order over the cluster's nodes)
less the share ``tp_comm_overlap`` hides; under context parallelism a rank runs 1/cp of each
sequence and passes keys and values round a ring. ``stage_costs`` keeps each stage's exposed
communication apart (``f_comm``, ``b_comm``) for the charts, and its expert-parallel all-to-all
(``f_a2a``, ``b_a2a``, ``w_a2a``, with the SMs' share ``a2a_sm_share``), from which an F&B pair
is timed by DeepSeek-V3's overlap rule (:func:`ppviz.core.engine.overlapped_pairs`). A mixture
of experts' dense first layers are items of their own (``d``), wherever the layout puts them.
The activation bytes the stage's F stores come from ``ppviz.model.activations``; its static
bytes are parameters / t × the bytes per parameter of mixed-precision Adam under ZeRO
(``ppviz.model.static_memory``), the routed experts' also split over the expert-parallel group
and their state sharded over the ranks that hold the same experts. The embedding sits
on the first stage and the LM head with the loss on the last, so those stages differ; with tied
embeddings the last stage keeps its own copy of the matrix (Megatron shares it between the first
and last stage) unless they are one stage.

The step beyond the pipeline (:class:`ppviz.Step`, from :func:`step_of`): each stage's gradients
reduced over its data-parallel group, the optimizer step and the distributed optimizer's
parameter gather, and the step's tokens and model FLOPs for throughput and MFU. Given a
``topology`` (the cluster: GPUs per NVLink domain, the NVLink and the network per GPU), the
pipeline's transfers cross it as its stage ranks sit on it (``Groups.pipeline_topology``);
without one, the collectives cross the hardware's reference system (:data:`REFERENCE_SYSTEMS`).

Not modelled: ZeRO-3 (and FSDP), the transient memory of the one layer being recomputed during a
backward, and, under full recompute with a split backward (I, then W later), the recomputed
activations W still needs in between (the zero-bubble paper's M_W): W is taken to keep
``w_share`` of what F stored.

Activation offload (``offload=α``, PipeOffload, arXiv 2503.01328) copies α of each stage's
stored activation bytes over the hardware's PCIe link (``Hardware.host_link``), or over the link
of a :class:`ppviz.Offload` given instead; the simulation of the copies is
:mod:`ppviz.core.offload`. The layout balancer simulates its candidates with the run's offload
and links, as it will run.
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..core.config import Config
from ..core.errors import ConfigError, LayoutError, did_you_mean
from ..core.registry import lookup
from ..core.step import Step
from ..core.topology import Link, Offload, Topology, checked_topology
from . import activations, flops, roofline
from .activations import Parallel, boundary_bytes
from .balance import MemoryLimit, candidates
from .collectives import Groups
from .hardware import Hardware
from .layout import Layout
from .static_memory import bytes_per_param
from .transformer import Transformer, checked_count

LAYOUT_KEYWORDS = ("even", "balanced")
#: SMs DeepSeek-V3 gives communication while an F&B pair overlaps its all-to-all with computation:
#: "we only need 20 SMs to be sufficient for utilizing the full bandwidths of IB and NVLink"
#: (arXiv 2412.19437, §3.2.2; an H800 has 132), which the computation lacks meanwhile (§3.2.1,
#: "manually adjust the ratio of GPU SMs dedicated to communication versus computation")
COMM_SMS = 20
#: An H800's SMs, the share's denominator for hardware that does not give its own
DEEPSEEK_SMS = 132


@dataclass(frozen=True)
class StageCosts:
    """One microbatch through each stage: times in ms (``f``, ``i``, ``w``, ``recompute``; each
    its compute and its exposed tensor-, context- and expert-parallel communication, which
    ``f_comm``, ``i_comm``, ``w_comm``, ``recompute_comm`` give alone), ``activation`` bytes stored by F, ``static`` bytes
    (weights, gradients, optimizer state) and ``params`` (parameters), on one device of the
    stage's tensor-parallel group; ``layout`` says what each stage holds; ``a2a`` (stages × F, I,
    W, recompute) the expert-parallel all-to-all among the exposed communication, and
    ``expert_params`` the routed experts' share of ``params``, split over the expert-parallel
    group too."""

    layout: Layout
    f: np.ndarray
    i: np.ndarray
    w: np.ndarray
    recompute: np.ndarray
    activation: np.ndarray
    static: np.ndarray
    f_comm: np.ndarray
    i_comm: np.ndarray
    w_comm: np.ndarray
    recompute_comm: np.ndarray
    params: np.ndarray
    a2a: np.ndarray
    expert_params: np.ndarray


@dataclass(frozen=True, kw_only=True)
class Training:
    """How the model is trained, beyond the pipeline: the parallel groups (tensor, sequence,
    context, expert, data and pipeline parallel sizes, laid out in Megatron-LM's rank order over
    ``cluster``'s nodes), recompute, the attention kernel, FP8, ZeRO, and which communication
    hides under compute: ``tp_comm_overlap`` (the share of the tensor-parallel collectives
    Transformer Engine's userbuffers overlap with their GEMMs: 0 by default, as in Megatron-LM;
    NVIDIA's performance recipes turn it on), ``overlap_grad_reduce`` and ``overlap_param_gather``
    (Megatron-LM's, for the data-parallel tail: :class:`ppviz.Step`), and ``comm_sms``, the SMs
    communication holds while it runs under computation: an overlapped F&B pair's expert-parallel
    all-to-all, STP's braided collectives (DeepSeek-V3's 20: :data:`COMM_SMS`)."""

    tensor_parallel: int = 1
    sequence_parallel: bool | None = None  # None: on when tensor_parallel > 1
    data_parallel: int = 1
    zero_stage: int = 0
    recompute: str | None = None
    flash_attention: bool = True
    expert_parallel: int = 1  # the experts of each MoE layer split over this many devices
    expert_tensor_parallel: int | None = None  # each expert split over this many (None: tensor_parallel)
    fp8: bool = False  # Transformer Engine's FP8: GEMMs at the FP8 rate, everything else 16-bit
    context_parallel: int = 1  # the sequence split over this many devices, attention's keys and values passed round a ring
    pipeline_parallel: int = 1
    cluster: Topology | None = None
    tp_comm_overlap: float = 0.0
    overlap_grad_reduce: bool = True
    overlap_param_gather: bool = True
    comm_sms: int = COMM_SMS

    def __post_init__(self):
        for name in ("flash_attention", "fp8", "overlap_grad_reduce", "overlap_param_gather"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(name, getattr(self, name), "give True or False")
        checked_count("expert_parallel", self.expert_parallel, minimum=1)
        if self.expert_tensor_parallel not in (None, 1, self.tensor_parallel):
            raise ConfigError("expert_tensor_parallel", self.expert_tensor_parallel,
                              f"give 1 (each expert whole on its rank) or tensor_parallel = {self.tensor_parallel} "
                              "(None: the same)", reason="ppviz splits each expert over the tensor-parallel "
                              "group or not at all")
        checked_count("context_parallel", self.context_parallel, minimum=1)
        checked_count("pipeline_parallel", self.pipeline_parallel, minimum=1)
        checked_count("comm_sms", self.comm_sms, minimum=0)
        if self.sequence_parallel is not None and not isinstance(self.sequence_parallel, bool):
            raise ConfigError("sequence_parallel", self.sequence_parallel,
                              "give True, False or None (on when tensor_parallel > 1)")
        Parallel(self.tensor_parallel, bool(self.sequence_parallel))  # refuses bad tensor-parallel sizes
        bytes_per_param(self.zero_stage, self.data_parallel)  # checks ZeRO's stage and data parallelism
        if self.recompute not in flops.RECOMPUTE:
            raise ConfigError("recompute", self.recompute, "give None, 'selective' or 'full'")
        share = self.tp_comm_overlap
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
            raise ConfigError("tp_comm_overlap", share, "give the share of the tensor-parallel collectives hidden "
                              "under their GEMMs, from 0 (Megatron-LM's default) to 1")
        if self.cluster is not None and not isinstance(self.cluster, Topology):
            raise ConfigError("cluster", self.cluster, "give a ppviz.Topology")

    @property
    def parallel(self) -> Parallel:
        sp = self.tensor_parallel > 1 if self.sequence_parallel is None else self.sequence_parallel
        return Parallel(self.tensor_parallel, sp)

    @property
    def groups(self) -> Groups:
        return Groups(tp=self.tensor_parallel, cp=self.context_parallel, ep=self.expert_parallel,
                      dp=self.data_parallel, pp=self.pipeline_parallel, etp=self.expert_tensor_parallel)

    @property
    def expert_tp(self) -> int:
        """Over how many ranks each expert is split (Megatron-LM's expert tensor parallelism)."""
        return self.groups.expert_tp


#: The systems the accelerators' presets are built into, whose links the parallel groups' collectives
#: cross when ``from_model`` is given no topology: NVIDIA's reference designs (ppviz.core.topology)
REFERENCE_SYSTEMS = {"a100-80gb": "dgx-a100", "h100-sxm": "dgx-h100", "h200": "dgx-h100", "b200": "dgx-b200",
                     "gb200": "gb200-nvl72", "h800": "h800-ib"}
#: Bytes an Adam step reads and writes per parameter of its shard (fused multi-tensor Adam, as
#: Megatron-LM's distributed optimizer runs it): the fp32 gradient (4), the fp32 master weight
#: and the two fp32 moments, each read and written (3 × 8), and the 16-bit weight written back (2)
OPTIMIZER_BYTES = 30
#: Bytes of a gradient element as the data-parallel group reduces it: 16-bit, Megatron-LM's
#: default (``grad_reduce_in_fp32=False``)
GRADIENT_BYTES = 2
PARAMETER_BYTES = 2


def cluster_of(hardware: Hardware, topology) -> Topology | None:
    """The cluster whose links the parallel groups' collectives cross: ``topology`` (a preset name,
    a Topology or a Link), or the hardware's reference system, or None when neither is known."""
    if topology is not None:
        return _as_topology(checked_topology(topology))
    name = REFERENCE_SYSTEMS.get(hardware.name or "")
    if name is not None:
        return Topology.preset(name)
    if hardware.nvlink_gbps is not None:
        nvlink = Link(11.8e-6, bandwidth=hardware.nvlink_gbps * 1e9, unit="s")
        return Topology(hardware.nvlink_domain or 8, intra=nvlink, inter=nvlink, name=None)
    return None


def _as_topology(topology) -> Topology:
    if isinstance(topology, Link):
        return Topology(10**9, intra=topology, inter=topology)
    return topology


def item_costs(model: Transformer, hardware: Hardware, training: Training) -> dict[str, tuple]:
    """Per item kind (E, t, m, L, and d for a mixture of experts' dense first layers): (f, i, w,
    recompute) in ms, stored activation bytes, parameters, the exposed communication inside (f, i,
    w, recompute), in ms, and the expert-parallel all-to-all among it (f, i, w, recompute).

    Compute is each phase's kernels timed by the roofline (:func:`ppviz.model.roofline.item_times`);
    the tensor- and expert-parallel collectives a phase issues are timed by NCCL's model over their
    groups' links (:mod:`ppviz.model.collectives`) and add to it, less the share
    ``tp_comm_overlap`` hides under compute. Under context parallelism each rank runs 1/cp of the
    sequence, attends to all of it (its attention kernels cp times those of the shortened
    sequence, as Megatron-LM's load-balanced causal split gives each rank 1/cp of the work) and
    passes its keys and values round the ring, hidden under that attention where it can be."""
    cp = training.context_parallel
    per_rank = model if cp == 1 else model.replace(seq_len=_split_sequence(model, cp))
    timed = roofline.item_times(per_rank, hardware, training)
    attention = _attention_ms(per_rank, hardware, training) if cp > 1 else {}
    par, flash, mode = training.parallel, training.flash_attention, training.recompute
    act = {"E": activations.embedding_bytes(per_rank, par),
           "t": activations.layer_bytes(per_rank, par, flash_attention=flash, recompute=mode),
           "m": activations.mtp_bytes(per_rank, par, flash_attention=flash, recompute=mode),
           "L": activations.head_bytes(per_rank, par)}
    params = {"E": model.embedding_params(), "t": model.layer_params(), "m": model.mtp_params(),
              "L": model.head_params()}
    if model.dense_layers:
        # a dense first layer is the dense model's layer: no experts, so no expert parallelism
        dense, dense_training = per_rank.dense(), dataclasses.replace(training, expert_parallel=1)
        timed = {**timed, "d": roofline.item_times(dense, hardware, dense_training)["t"]}
        if cp > 1:
            attention.update({("d", phase): ms for (item, phase), ms in
                              _attention_ms(dense, hardware, dense_training).items() if item == "t"})
        act["d"] = activations.layer_bytes(dense, par, flash_attention=flash, recompute=mode)
        params["d"] = model.dense().layer_params()
    out = {}
    for item in timed:
        times, comms, a2a = [], [], []
        for phase in ("F", "I", "W", "R"):
            compute, collectives = timed[item][phase]
            exposed, all_to_all = 0.0, 0.0
            for group in ("tp", "ep"):
                ms = sum(_collective_ms(training.groups, c, training.cluster, model) for c in collectives
                         if c.group == group)
                hidden = min(ms * training.tp_comm_overlap, compute) if group == "tp" else 0.0
                exposed += ms - hidden
                if group == "ep":
                    all_to_all = ms
            if cp > 1:
                extra = (cp - 1) * attention.get((item, phase), 0.0)
                ring = _ring_ms(per_rank, training, phase) if item in "tmd" else 0.0
                compute += extra
                exposed += max(0.0, ring - (extra + attention.get((item, phase), 0.0)))
            times.append(compute + exposed)
            comms.append(exposed)
            a2a.append(all_to_all)
        out[item] = (tuple(times), act[item], params[item], tuple(comms), tuple(a2a))
    return out


def item_sequence(model: Transformer) -> list[str]:
    """The item kind of each item of the model in order: E, the layers (d for a mixture of
    experts' dense first layers, t for the rest), the MTP layers m, L."""
    return ["E", *"d" * model.dense_layers, *"t" * (model.layers - model.dense_layers), *"m" * model.mtp_layers, "L"]


def _split_sequence(model: Transformer, cp: int) -> int:
    if model.seq_len % cp:
        raise ConfigError("context_parallel", cp, f"give a size that divides the sequence of {model.seq_len}",
                          reason="context parallelism splits every sequence evenly over its ranks")
    return model.seq_len // cp


def _attention_ms(model: Transformer, hardware: Hardware, training: Training) -> dict:
    """(item, phase) → the time of its attention kernels, for context parallelism's extra work."""
    out: dict = {}
    for row in roofline.kernel_table(model, hardware, training):
        if row["kind"] in ("attention", "attention_backward"):
            key = (row["item"], row["phase"])
            out[key] = out.get(key, 0.0) + row["ms"]
    return out


def _collective_ms(groups: Groups, collective, cluster: Topology | None, model: Transformer) -> float:
    if getattr(groups, collective.group) <= 1:
        return 0.0
    if collective.group == "ep" and collective.kind == "all-to-all" and model.routed_nodes is not None:
        return groups.node_limited_all_to_all(collective.bytes, model.top_k, model.routed_nodes,
                                              _known(cluster, "ep")) * 1e3
    return groups.time(collective.group, collective.kind, collective.bytes, _known(cluster, collective.group)) * 1e3


def _known(cluster: Topology | None, group: str) -> Topology:
    """The cluster the ``group``'s collectives cross, which they cannot be timed without."""
    if cluster is None:
        raise ConfigError("topology", None, "give topology= (a preset such as 'dgx-h100', or a ppviz.Topology): "
                          f"the {group} group's collectives need its links",
                          reason="the hardware has no reference system and no NVLink bandwidth")
    return cluster


def _ring_ms(model: Transformer, training: Training, phase: str) -> float:
    """Context parallelism's ring exchange in one layer's phase: cp − 1 steps, each passing a
    rank's keys and values (F) or their gradients too (I: twice the bytes), 16-bit, over the
    context-parallel group's link (Megatron-LM's ring attention, Liu et al. 2023)."""
    if phase not in ("F", "I"):
        return 0.0
    groups, cluster = training.groups, _known(training.cluster, "cp")
    kv = 2 * model.tokens * model.kv_size // training.parallel.tensor * activations.BYTES
    nbytes = kv * (2 if phase == "I" else 1)
    link, efficiency = groups.link("cp", cluster)
    step = link.latency + nbytes / (link.bandwidth * efficiency)
    return (groups.cp - 1) * step * 1e3


def stage_costs(model: Transformer, hardware: Hardware, layout: Layout, training: Training = Training(),
                per_item: dict | None = None) -> StageCosts:
    """Each stage's times and memory for ``layout`` (checked against the model); ``per_item``:
    :func:`item_costs` of the same model, hardware and training, when already computed."""
    layout.check(model.layers, model.mtp_layers)
    per = item_costs(model, hardware, training) if per_item is None else per_item
    groups = training.groups
    per_param = bytes_per_param(training.zero_stage, training.data_parallel)
    split = model.moe and (groups.ep > 1 or groups.expert_tp != groups.tp)
    if split:
        _check_expert_split(groups)
    # the experts' optimizer state is sharded over the ranks that hold the same experts
    per_expert_param = bytes_per_param(training.zero_stage, groups.edp) if split else per_param
    experts = {c: model.expert_params() if c in "tm" else 0 for c in per}
    tied_copy = model.tied_embeddings and layout.counts("E").index(1) != layout.counts("L").index(1)
    rows, before = [], 0
    for items in layout.stages:
        count = {c: items.count(c) for c in per}  # a stage's cost is its items' costs, kind by kind
        if "d" in per:  # the model's first layers, wherever they sit, are dense
            count["d"] = min(count["t"], max(0, model.dense_layers - before))
            count["t"] -= count["d"]
        before += items.count("t")
        times = [sum(count[c] * per[c][0][k] for c in per) for k in range(4)]
        comm = [sum(count[c] * per[c][3][k] for c in per) for k in range(4)]
        a2a = [sum(count[c] * per[c][4][k] for c in per) for k in range(4)]
        act = sum((count[c] * per[c][1] for c in per), Fraction(0))
        params = sum(count[c] * per[c][2] for c in per) + (model.vocab * model.hidden if tied_copy and "L" in items else 0)
        expert = sum(count[c] * experts[c] for c in per) if split else 0
        rank_dense = Fraction(params - expert, training.parallel.tensor)
        rank_expert = Fraction(expert, training.expert_tp * groups.ep)
        rows.append((*times, float(act), float(rank_dense * per_param + rank_expert * per_expert_param), *comm,
                     float(rank_dense + rank_expert), *a2a, float(rank_expert)))
    columns = [np.array(col, dtype=float) for col in zip(*rows)]
    f, i, w, r, act, static, f_comm, i_comm, w_comm, r_comm, params = columns[:11]
    return StageCosts(layout, f, i, w, r, act, static, f_comm, i_comm, w_comm, r_comm, params,
                      np.stack(columns[11:15], axis=1), columns[15])


def _check_expert_split(groups: Groups) -> None:
    """Refuses groups whose stage ranks do not split into expert-parallel groups
    (:attr:`Groups.expert_ranks`)."""
    if not groups.holds_expert_groups:
        across = "tensor_parallel × " if groups.expert_tp != groups.tp else ""
        raise ConfigError("expert_parallel", groups.ep, f"give a divisor of {across}data_parallel × context_parallel"
                          f"{' / expert_tensor_parallel' if across else ''} = {groups.expert_ranks}",
                          reason="Megatron-LM splits each expert-parallel group's experts over a stage's ranks, "
                          "and these do not divide into such groups")


def step_of(costs: StageCosts, hardware: Hardware, training: Training, microbatches: int,
            model: Transformer) -> Step:
    """The data-parallel tail of each stage (:class:`ppviz.Step`, times in ms) and the step's
    throughput figures: a stage's gradients (16-bit) are all-reduced over its data-parallel group,
    or reduce-scattered under ZeRO-1/2 (Megatron-LM's distributed optimizer), which then
    all-gathers the updated 16-bit weights; under expert parallelism the routed experts' share
    goes over the expert-data-parallel group instead (cp · dp / ep ranks a whole expert-parallel
    group apart). The optimizer step is memory-bound, its shard's :data:`OPTIMIZER_BYTES` per
    parameter at the HBM bandwidth memory-bound kernels reach."""
    groups, d = training.groups, training.data_parallel
    cluster = _known(training.cluster, "dp") if d > 1 else None
    sharded = training.zero_stage >= 1
    kind = "reduce-scatter" if sharded else "all-reduce"

    def over(group: str, collective: str, nbytes: float) -> float:
        if cluster is None or getattr(groups, group) <= 1:
            return 0.0
        return groups.time(group, collective, nbytes, cluster) * 1e3

    reduce, optimizer, gather = [], [], []
    for params, expert in zip(costs.params, costs.expert_params):
        # the experts' gradients are reduced (and their weights gathered) among the ranks that hold
        # the same experts (Megatron-LM's expert-data-parallel group), the rest over the data-parallel one
        dense = params - expert
        reduce.append(over("dp", kind, dense * GRADIENT_BYTES) + over("edp", kind, expert * GRADIENT_BYTES))
        gather.append(over("dp", "all-gather", dense * PARAMETER_BYTES) + over("edp", "all-gather",
                                                                               expert * PARAMETER_BYTES)
                      if sharded else 0.0)
        shard = dense / d + (expert / groups.edp if expert else 0.0) if sharded else params
        optimizer.append(shard * OPTIMIZER_BYTES / (hardware.hbm_gbps * 1e9 * hardware.memory_share) * 1e3
                         if hardware.hbm_gbps is not None else 0.0)
    gpus = groups.gpus
    tokens = d * microbatches * model.tokens
    return Step(reduce=tuple(reduce), optimizer=tuple(optimizer), gather=tuple(gather),
                overlap_grad_reduce=training.overlap_grad_reduce, overlap_param_gather=training.overlap_param_gather,
                tokens=float(tokens), model_flops=float(d * flops.iteration(model, microbatches)),
                gpus=gpus, peak_flops=hardware.peak_tflops * 1e12 / 1e3)


def _sequence(model: Transformer) -> str:
    return "E" + "t" * model.layers + "m" * model.mtp_layers + "L"


def layout_candidates(model: Transformer, hardware: Hardware, config: Config,
                      training: Training = Training()) -> list[Layout]:
    """The balancer's candidate layouts for ``config``'s schedule and sizes
    (:func:`ppviz.model.balance.candidates`), best first by its cost model; Megatron's even
    split is among them when the layers divide."""
    per = item_costs(model, hardware, training)
    sequence = _sequence(model)
    kinds = item_sequence(model)
    stages = config.stages
    costs = [sum(per[c][0]) for c in kinds]
    starts = []
    if model.layers % stages == 0:
        each = model.layers // stages
        starts.append([0] + [1 + each * k for k in range(1, stages)] + [len(costs)])
    weights = placement_weights(config)
    per_param = float(bytes_per_param(training.zero_stage, training.data_parallel)) / training.parallel.tensor
    memory = MemoryLimit([float(per[c][1]) for c in kinds], [per[c][2] * per_param for c in kinds],
                         held_at_peak(config), (weights > 0).astype(float), hardware.memory_bytes)
    layouts = [Layout(tuple(sequence[a:b] for a, b in zip(cuts, cuts[1:])))
               for cuts in candidates(costs, stages, weights, starts, memory)]
    return list(dict.fromkeys(layouts))


def held_at_peak(config: Config) -> np.ndarray:
    """devices × stages: the microbatches' activations of each stage a device holds when its
    activation memory peaks, in a run of ``config``'s schedule with uniform costs (a share
    ``w_share`` between a microbatch's I and W)."""
    from ..core.engine import simulate

    uniform = Config(schedule=config.schedule, devices=config.devices, microbatches=config.microbatches,
                     stages_per_device=config.stages_per_device, microbatch_group_size=config.microbatch_group_size)
    result = simulate(uniform)
    ops = result.ops
    held = np.zeros((config.devices, config.stages))
    for d in range(config.devices):
        times, values = result.memory.curve(d)
        peak = times[int(np.argmax(values))]
        mine = ops.device == d
        live: dict[tuple[int, int], float] = {}
        for stage, mb, kind, start, end in zip(ops.stage[mine], ops.microbatch[mine], ops.kind[mine],
                                               ops.start[mine], ops.end[mine]):
            key = (int(stage), int(mb))
            if kind == "F" and start <= peak:
                live.setdefault(key, 1.0)
            elif kind in "BI" and end <= peak:
                live[key] = uniform.w_share if kind == "I" else 0.0
            elif kind == "W" and end <= peak:
                live[key] = 0.0
        for (stage, _), share in live.items():
            held[d, stage] += share
    return held


def balanced_layout(model: Transformer, hardware: Hardware, config: Config, training: Training = Training(),
                    links: dict | None = None) -> Layout:
    """The automatic balancer: of :func:`layout_candidates` for ``config``'s schedule and sizes,
    the layout whose simulated step is fastest (among those that fit ``config.memory_capacity``
    when some do). Megatron's even split is a candidate whenever it exists, so the result is
    never slower than it. ``links``: the run's transfers and offload (Config fields), with which
    each candidate is simulated."""
    from ..core.engine import simulate

    best, best_key = None, None
    for layout in layout_candidates(model, hardware, config, training):
        result = simulate(_config_for(model, hardware, config, layout, training, links))
        key = (result.out_of_memory, result.makespan)
        if best_key is None or key < best_key:
            best, best_key = layout, key
    assert best is not None  # the balancer always has candidates
    return best


def placement_weights(config: Config) -> np.ndarray:
    """devices × stages: the share of microbatches each device runs through each stage."""
    placement = config.build().placement
    p, S, m = config.devices, config.stages, config.microbatches
    out = np.zeros((p, S))
    down = 1.0 if placement.reverse_device is None else placement.split / m
    for s, d in enumerate(placement.stage_device):
        out[d, s] += down
    if placement.reverse_device is not None:
        for s, d in enumerate(placement.reverse_device):
            out[d, s] += 1.0 - down
    return out


def _layout(model: Transformer, hardware: Hardware, training: Training, base: Config, layout,
            first: int | None, last: int | None, links: dict) -> Layout:
    S = base.stages
    if (first is not None or last is not None) and layout not in (None, "even"):
        raise ConfigError("first_stage_layers" if first is not None else "last_stage_layers", first if first is not None
                          else last, "give either a layout or first/last stage layers, not both")
    if layout is None or layout == "even":
        return Layout.uneven(model.layers, S, first, last, model.mtp_layers)
    if layout == "balanced":
        return balanced_layout(model, hardware, base, training, links)
    if isinstance(layout, Layout):
        return layout
    if isinstance(layout, str):
        return Layout.parse(layout)
    if isinstance(layout, (list, tuple)):
        return Layout.from_counts(layout, model.mtp_layers)
    raise LayoutError(layout, "give a Megatron layout string, a list of transformer layers per stage, a Layout, "
                      "'even' or 'balanced'", reason=f"a {type(layout).__name__} is not a layout")


def _stages_per_device(spec, devices: int, v: int | None, layout) -> int | None:
    """v from the layout's stage count when it is not given (and the layout names its stages)."""
    if v is not None or layout is None or isinstance(layout, str) and layout in LAYOUT_KEYWORDS:
        return v
    stages = len(layout) if isinstance(layout, (Layout, list, tuple)) else len(Layout.parse(layout)) \
        if isinstance(layout, str) else None
    if stages is None:
        return v
    for candidate in (spec.default_v, stages // devices):
        allowed = spec.v_min <= candidate and (spec.v_max is None or candidate <= spec.v_max)
        if allowed and spec.stage_count(devices, candidate) == stages:
            return candidate
    return v


def config_from_model(model: Transformer, hardware: Hardware, **options) -> Config:
    """The implementation of :meth:`ppviz.Config.from_model` (see there)."""
    return plan(model, hardware, **options)[0]


def choose_layout(model: Transformer, hardware: Hardware, **options) -> Layout:
    """The layout ``Config.from_model(model, hardware, **options)`` uses, e.g. what
    ``layout="balanced"`` chose: ``print(choose_layout(...))`` shows it as a Megatron string."""
    return plan(model, hardware, **options)[1]


def _check_heads_split(model: Transformer, t: int) -> None:
    """Tensor parallelism gives each rank whole attention heads and whole key/value groups:
    Megatron-LM refuses ``num_attention_heads % tensor_model_parallel_size != 0`` (its
    arguments check) and splits ``num_query_groups`` with ``divide``, which asserts the same."""
    kv = model.kv_heads if model.kv_heads is not None else model.heads
    for what, count in (("attention heads", model.heads), ("key/value heads", kv)):
        if count % t:
            fits = [d for d in range(1, count + 1) if model.heads % d == 0 and kv % d == 0]
            raise ConfigError("tensor_parallel", t, f"give a size that divides them: {', '.join(map(str, fits))}",
                              reason=f"the model's {count} {what} do not split evenly over {t} ranks")


def plan(model: Transformer, hardware: Hardware, *, schedule: str = "1f1b", devices: int = 4,
         microbatches: int = 8, stages_per_device: int | None = None, data_parallel: int = 1,
         tensor_parallel: int = 1, sequence_parallel: bool | None = None, context_parallel: int = 1,
         expert_parallel: int = 1, expert_tensor_parallel: int | None = None, zero_stage: int = 0, recompute: str | None = None, flash_attention: bool = True,
         fp8: bool = False, tp_comm_overlap: float = 0.0, overlap_grad_reduce: bool = True,
         overlap_param_gather: bool = True, comm_sms: int = COMM_SMS, layout=None, first_stage_layers: int | None = None,
         last_stage_layers: int | None = None, **options) -> tuple[Config, Layout]:
    """The config of :meth:`ppviz.Config.from_model` and the layout it places the model by."""
    if not isinstance(model, Transformer):
        raise ConfigError("model", model, "give a ppviz.Transformer, e.g. ppviz.Transformer.preset('llama-3-70b')")
    if not isinstance(hardware, Hardware):
        raise ConfigError("hardware", hardware, "give a ppviz.Hardware, e.g. ppviz.Hardware.preset('h100-sxm')")
    taken = {"f", "b", "w", "stage_costs", "activation", "activation_bytes", "params", "w_share", "memory_capacity",
             "recompute_cost", "recompute_activation", "time_unit"}
    for key in options:
        if key in taken:
            raise ConfigError(key, options[key], "from_model derives it from the model and the hardware; change "
                              "them, or build the Config yourself", reason="set by from_model")
    fields = [f.name for f in dataclasses.fields(Config) if f.init]
    unknown = [key for key in options if key not in fields]
    if unknown:
        own = [name for name in inspect.signature(plan).parameters if name not in ("model", "hardware", "options")]
        accepted = own + [f for f in fields if f not in taken and f not in own]
        raise ConfigError(unknown[0], options[unknown[0]],
                          f"{did_you_mean(unknown[0], accepted)}from_model takes {', '.join(accepted)}",
                          reason="from_model has no such option")
    # transfers need the unit, which the costs below bring: they are set last
    transfers: dict[str, object] = {key: options.pop(key) for key in ("topology", "comm_bytes", "p2p") if key in options}
    offload = _offload(options.pop("offload", None), hardware)
    if not isinstance(devices, int) or isinstance(devices, bool) or devices < 1:
        raise ConfigError("devices", devices, "give a whole number of pipeline stages >= 1")
    training = Training(tensor_parallel=tensor_parallel, sequence_parallel=sequence_parallel,
                        data_parallel=data_parallel, zero_stage=zero_stage, recompute=recompute,
                        flash_attention=flash_attention, expert_parallel=expert_parallel,
                        expert_tensor_parallel=expert_tensor_parallel, fp8=fp8,
                        context_parallel=context_parallel, pipeline_parallel=devices,
                        cluster=cluster_of(hardware, transfers.get("topology")), tp_comm_overlap=tp_comm_overlap,
                        overlap_grad_reduce=overlap_grad_reduce, overlap_param_gather=overlap_param_gather,
                        comm_sms=comm_sms)
    _check_heads_split(model, training.parallel.tensor)
    if transfers.get("topology") is not None and training.cluster is not None:
        # the topology is the cluster's: a node holds as many pipeline stages as its GPUs hold
        # stage ranks (one, when a stage's tensor- and data-parallel ranks fill it)
        transfers["topology"] = training.groups.pipeline_topology(training.cluster)
        if "comm_bytes" not in transfers:
            # what crosses the links is the model's own: its hidden states, sharded as the training shards them
            cp = training.context_parallel
            transfers["comm_bytes"] = boundary_bytes(model, training.parallel) // cp
    # the run's links and offload: the balancer simulates its candidates with them, so that the
    # layout it keeps is the fastest (and fits) in this run, not in one without them
    links = {**transfers, **({"offload": offload} if offload is not None else {})}
    spec = lookup(schedule) if isinstance(schedule, str) else None
    if spec is not None and spec.builder is None:
        raise ConfigError("schedule", schedule, "give a registered schedule; for your own program, simulate it with "
                          "a config from_model built for a schedule with the same stages")
    v = _stages_per_device(spec, devices, stages_per_device, layout) if spec is not None else stages_per_device
    base = Config(schedule=schedule, devices=devices, microbatches=microbatches, stages_per_device=v,
                  recompute=recompute, **options)
    chosen = _layout(model, hardware, training, base, layout, first_stage_layers, last_stage_layers, links)
    return _config_for(model, hardware, base, chosen, training, links), chosen


def _offload(offload, hardware: Hardware) -> Offload | None:
    """from_model's ``offload``: an :class:`Offload`, or a share copied over the hardware's PCIe link."""
    if offload is None or isinstance(offload, Offload):
        return offload
    if isinstance(offload, bool) or not isinstance(offload, (int, float)):
        raise ConfigError("offload", offload, "give a share from 0 to 1 (copied over the hardware's PCIe link), a "
                          "ppviz.Offload(share, link=...), or None")
    if not offload:
        return None
    if hardware.host_link is None:
        raise ConfigError("offload", offload, "give ppviz.Offload(share, link=ppviz.Link(latency, bandwidth=..., unit="
                          "unit='s')), or a Hardware with host_gbps (its PCIe bandwidth per direction, GB/s)",
                          reason=f"{hardware.name or 'this hardware'} has no host link bandwidth")
    return Offload(offload, link=hardware.host_link)


def _sm_share(hardware: Hardware, training: Training) -> float:
    """The share of the SMs ``training.comm_sms`` takes of the hardware's (of an H800's 132 when
    it does not say)."""
    sms = hardware.sms or DEEPSEEK_SMS
    if training.comm_sms >= sms:
        raise ConfigError("comm_sms", training.comm_sms, f"give fewer than the hardware's {sms} SMs (DeepSeek-V3 "
                          "gives communication 20 of an H800's 132)", reason="no SM would be left for computation")
    return training.comm_sms / sms


def _overlap_share(costs: StageCosts, stage: int, hardware: Hardware, training: Training) -> dict[str, float]:
    """Stage ``stage``'s ``comm_sm_share`` for :func:`ppviz.core.engine.braided`: the SMs its
    tensor/expert-parallel collectives hold while they run under another op's computation (the
    same ``comm_sms`` an F&B pair gives its all-to-all); none without such collectives."""
    traffic = costs.f_comm[stage] + costs.i_comm[stage] + costs.w_comm[stage] + costs.recompute_comm[stage]
    return {"comm_sm_share": _sm_share(hardware, training)} if traffic > 0 else {}


def _a2a_parts(costs: StageCosts, stage: int, hardware: Hardware, training: Training) -> dict[str, float]:
    """Stage ``stage``'s all-to-all parts for :func:`ppviz.core.engine.overlapped_pairs`: the
    expert-parallel all-to-all inside its F, I (with its recompute's) and W, and the share of the
    SMs ``training.comm_sms`` takes of the hardware's (of an H800's 132 when it does not say);
    none without expert parallelism."""
    if not costs.a2a.any():
        return {}
    f, i, w, r = (float(x) for x in costs.a2a[stage])
    return {"f_a2a": f, "b_a2a": i + (r if training.recompute is not None else 0.0), "w_a2a": w,
            "a2a_sm_share": _sm_share(hardware, training)}


def _config_for(model: Transformer, hardware: Hardware, base: Config, layout: Layout, training: Training,
                links: dict | None = None) -> Config:
    """``base`` (schedule and sizes) with the costs of ``layout``, in ms and bytes, and ``links``
    (transfers, offload: Config fields set once the costs have given the time unit)."""
    layout.check(model.layers, model.mtp_layers, stages=base.stages)
    per_item = item_costs(model, hardware, training)
    costs = stage_costs(model, hardware, layout, training, per_item)
    p = base.devices
    barriers = lookup(base.schedule).vocab_barriers
    vocab: dict = {}
    if barriers:
        costs, vocab = vocabulary_parallel(model, costs, per_item, training, barriers, p)
    unit = float(costs.activation.sum()) / p  # bytes of one microbatch through 1/p of the model
    if vocab:
        vocab["vocab_activation"] = vocab.pop("vocab_activation_bytes") / unit
    per_stage = {s: {"f": float(costs.f[s]), "b": float(costs.i[s]), "w": float(costs.w[s]),
                     "recompute": float(costs.recompute[s]), "activation": float(costs.activation[s]) / unit,
                     "params": float(costs.static[s]) / unit, "f_comm": float(costs.f_comm[s]),
                     "b_comm": float(costs.i_comm[s]), "w_comm": float(costs.w_comm[s]),
                     "recompute_comm": float(costs.recompute_comm[s]), **_a2a_parts(costs, s, hardware, training),
                     **_overlap_share(costs, s, hardware, training)}
                 for s in range(base.stages)}
    config = base.replace(
        f=float(costs.f.sum()) / p, b=float(costs.i.sum()) / p, w=float(costs.w.sum()) / p,
        stage_costs=per_stage, activation=1.0, activation_bytes=unit, params=float(costs.static.sum()) / p / unit,
        w_share=activations.weight_gradient_share(model, flash_attention=training.flash_attention),
        memory_capacity=hardware.memory_bytes / unit, time_unit="ms", recompute=training.recompute,
        step=step_of(costs, hardware, training, base.microbatches, model), **vocab)
    return config.replace(**links) if links else config


def vocabulary_parallel(model: Transformer, costs: StageCosts, per_item: dict, training: Training, barriers: int,
                        p: int) -> tuple[StageCosts, dict]:
    """Vocabulary Parallelism (Yeung et al., MLSys'25, arXiv 2411.05288): the output layer and the
    loss leave the last stage, and every device runs 1/p of them as the passes S and T; the
    input and output embeddings' parameters (and their gradients and optimizer state) are split
    over the p devices too. The S and T times are the layer's own kernels over 1/p of the
    vocabulary: its logits GEMM and softmax in S; with one barrier (the paper's Algorithm 2) S
    also computes its shard's input gradient, leaving T the weight gradient, and with two
    (Algorithm 1) T computes both. The embedding's lookup stays in stage 0's F and B (a gather
    and a scatter-add: no GEMM). ``vocab_comm`` is one all-reduce over the pipeline group of a
    microbatch's hidden states (16-bit; the input gradient the barrier reduces), on the
    pipeline group's links where the cluster is known. S holds 1/p of the layer's saved
    activation (its logits' shard) until T. Returns the costs without the layer, the Config
    fields ``s``, ``t``, ``vocab_comm`` and that activation in bytes."""
    (f, i, w, r), act, params, (f_c, i_c, w_c, r_c), _ = per_item["L"]  # no all-to-all: the layer has no experts
    holds = np.array(["L" in items for items in costs.layout.stages])
    embeds = np.array(["E" in items for items in costs.layout.stages])
    per_param = bytes_per_param(training.zero_stage, training.data_parallel)
    tensor = training.parallel.tensor
    moved = params + model.embedding_params()  # the output layer's and the input embedding's
    static_of = {"L": float(Fraction(params, tensor) * per_param),
                 "E": float(Fraction(model.embedding_params(), tensor) * per_param)}
    shared_params = float(Fraction(moved, tensor)) / p
    tied_copy = model.tied_embeddings and not (holds == embeds).all()
    # the last stage's own copy of a tied matrix goes too: every device holds 1/p of the one matrix
    tied = float(Fraction(model.vocab * model.hidden, tensor)) if tied_copy else 0.0
    # the layer holds no experts: the all-to-all and the experts' parameters stay as they are
    trimmed = dataclasses.replace(
        costs, f=costs.f - holds * f, i=costs.i - holds * i, w=costs.w - holds * w,
        recompute=costs.recompute - holds * r, activation=costs.activation - holds * float(act),
        static=costs.static - holds * (static_of["L"] + tied * float(per_param)) - embeds * static_of["E"]
        + shared_params * float(per_param),
        f_comm=costs.f_comm - holds * f_c, i_comm=costs.i_comm - holds * i_c, w_comm=costs.w_comm - holds * w_c,
        recompute_comm=costs.recompute_comm - holds * r_c,
        params=costs.params - holds * (float(Fraction(params, tensor)) + tied)
        - embeds * float(Fraction(model.embedding_params(), tensor)) + shared_params)
    s, t = (f + i, w) if barriers == 1 else (f, i + w)
    cluster = training.cluster
    nbytes = model.tokens * model.hidden * activations.BYTES // tensor
    barrier = training.groups.time("pp", "all-reduce", nbytes, cluster) * 1e3 if cluster is not None and p > 1 else 0.0
    return trimmed, {"s": s / p, "t": t / p, "vocab_comm": barrier, "vocab_activation_bytes": float(act) / p}
