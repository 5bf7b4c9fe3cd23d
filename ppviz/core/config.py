"""``ppviz.Config``: everything needed to build and simulate one schedule, validated on construction."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from .errors import ConfigError, ScheduleConstraintError, checked_arguments
from .budget import check_size
from .registry import ScheduleSpec, lookup
from .step import Step
from .topology import Link, Offload, Topology, checked_topology

#: Default share of a microbatch's activation that W still needs after I. The zero-bubble
#: paper (arXiv 2401.10241, Table 1) gives M_B = 34sbh + 5as²b and M_W = 32sbh per layer;
#: with flash attention the 5as²b term is not stored, leaving M_W / M_B = 32/34.
DEFAULT_W_SHARE = 32 / 34
#: Default share of the activation full recompute keeps: each layer's input, 2sbh of a
#: flash-attention layer's 34sbh (Korthikanti et al. 2022, arXiv 2205.05198, Table 2).
FULL_RECOMPUTE_SHARE = 2 / 34
RECOMPUTE = (None, "selective", "full")

#: the per-stage times a stage's ops pay besides their computation: a host gap on every op, a
#: warm-up on the first microbatch's (see ``Config``)
PER_OP_KEYS = ("gap_f", "gap_b", "gap_w", "warmup_f", "warmup_b", "warmup_w")
#: the tensor/expert-parallel share of a stage's ops (Config.from_model), for the breakdown and the tooltips
COMM_KEYS = ("f_comm", "b_comm", "w_comm", "recompute_comm")
#: the expert-parallel all-to-all inside a stage's F, I (with its recompute) and W, and the share of
#: the SMs communication takes while an F&B pair overlaps it (``engine.op_costs``' pair rule)
A2A_KEYS = ("f_a2a", "b_a2a", "w_a2a", "a2a_sm_share")
#: the share of the SMs a stage's tensor/expert-parallel collectives take while they run under
#: another op's computation (STP's braided units: ``engine.braided``)
OVERLAP_KEYS = ("comm_sm_share",)
_STAGE_COST_KEYS = ("f", "b", "w", "s", "t", "activation", "params", "recompute", *PER_OP_KEYS, *COMM_KEYS, *A2A_KEYS,
                    *OVERLAP_KEYS)
#: Largest count (devices, microbatches, stages per device, group size) accepted; the size
#: budget (ppviz.set_budget) usually refuses far smaller runs first.
MAX_COUNT = 10**9
#: Largest time or size accepted: a run sums millions of them and must stay finite.
MAX_COST = 1e200
#: a time unit is a short name shown beside numbers: letters only, so it can never carry markup
_UNIT_RE = re.compile(r"[A-Za-zµμ]{1,8}")
#: how a transfer uses the devices at its two ends (``Config.p2p``)
P2P_MODES = ("blocking", "overlapped")


class FrozenMapping(Mapping):
    """A read-only, hashable mapping (keeps ``Config`` hashable and immutable)."""

    __slots__ = ("_data", "_hash")

    def __init__(self, data=()):
        self._data = dict(data)
        self._hash = None

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)

    def __hash__(self):
        if self._hash is None:
            self._hash = hash(tuple(sorted(self._data.items(), key=lambda kv: repr(kv[0]))))
        return self._hash

    def __eq__(self, other):
        return isinstance(other, Mapping) and dict(self._data) == dict(other)

    def __repr__(self):
        return repr(self._data)


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) or (hasattr(x, "__index__") and not isinstance(x, (bool, float)))


def _number(name: str, value, *, minimum: float = 0.0, strict: bool = False, allow_none: bool = False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
        raise ConfigError(name, value, f"give a number {'>' if strict else '>='} {minimum:g}")
    try:
        x = float(value)
    except (OverflowError, ValueError, TypeError):
        x = math.inf
    if x > MAX_COST:
        raise ConfigError(name, value, f"give a finite number {'>' if strict else '>='} {minimum:g} and at most "
                                       f"{MAX_COST:g} (sums of larger times overflow)")
    if not math.isfinite(x) or x < minimum or (strict and x == minimum):
        raise ConfigError(name, value, f"give a finite number {'>' if strict else '>='} {minimum:g}")
    return x


def positive_int(name: str, value, *, allow_none: bool = False):
    """``value`` as an int >= 1 (or None where allowed); otherwise a ConfigError naming ``name``."""
    if value is None and allow_none:
        return None
    if not _is_int(value) or not 1 <= int(value) <= MAX_COUNT:
        raise ConfigError(name, value, f"give a whole number from 1 to {MAX_COUNT:,}")
    return int(value)


@checked_arguments
@dataclass(frozen=True, kw_only=True)
class Config:
    """One pipeline-parallel run to build and simulate.

    Times ``f``, ``b`` and ``w`` are the forward, backward-for-inputs and backward-for-weights
    time of one microbatch through 1/p of the model (so a full backward B costs ``b + w``).
    A stage holding 1/(v·p) of the model costs 1/v of them, so schedules with different v
    compare on the same model. Memory is counted in activation units: the activation of one
    microbatch through 1/p of the model.

    Every field but ``schedule`` is a keyword: ``Config("zb-h1", devices=4, microbatches=8)``.

    Parameters
    ----------
    schedule : registry name or alias (case-insensitive): ``"1f1b"``, ``"Interleaved1F1B"``, ``"ZB1P"`` …,
        or an entry of ``ppviz.list_schedules()``.
    devices : p, the number of pipeline ranks.
    microbatches : m.
    stages_per_device : v; ``None`` takes the schedule's default (1, or 2 for V-shaped schedules).
    f, b, w : op times as above.
    comm : latency added to every dependency that crosses devices.
    fb : time of an overlapped F&B pair whose ops each hold 1/p of the model; ``None`` means
        f + b + w (no gain from overlapping). Pairs of smaller stages scale in proportion.
    stage_costs : per-stage overrides, ``{stage: {"f": .., "b": .., "w": .., "activation": ..}}``,
        absolute values for that stage (e.g. an expensive loss head on the last stage).
    microbatch_group_size : Megatron's ``microbatch_group_size_per_vp_stage`` for interleaved
        schedules; ``None`` means p (or torch's round size when m is not a multiple of p).
    activation : activation units one microbatch allocates through 1/p of the model.
    w_share : share of that activation W still needs after I (I frees the rest, W frees this share).
    params : static memory (parameters, gradients, optimizer state) of 1/p of the model, in
        activation units; doubled on devices that hold two replicas (DualPipe).
    activation_bytes : bytes in one activation unit, to report memory in bytes too.
    label : a display name for charts and comparisons (defaults to the schedule name).
    time_unit : the unit of ``f``, ``b``, ``w``, ``comm`` and ``fb`` (``"ms"``, ``"us"``, ``"s"`` …),
        shown beside times in summaries, charts and the widget; ``None`` (the default) leaves
        times unitless.
    segments : k, the sequence segments each microbatch is split into (Seq1F1B); each segment's
        passes cost 1/k of the microbatch's and hold 1/k of its activation. Only schedules that
        split sequences accept k > 1.
    recompute : activation recomputation (Korthikanti et al. 2022, arXiv 2205.05198): ``None``;
        ``"full"``, each stage's forward runs again before its backward (I or B), which costs
        ``recompute_cost`` more, and F stores only the layers' inputs, ``recompute_activation``;
        ``"selective"``, only the attention core is recomputed and its s²-sized activations are
        not stored. In abstract units the defaults assume flash attention, as ``w_share``'s
        does: full recompute costs f (the stage's own f) and keeps 2/34 of ``activation`` (each
        layer's 2sbh input of its 34sbh); selective recompute then has nothing to recompute
        (cost 0, activation unchanged) unless you give both. ``Config.from_model`` gives
        them per stage from the model. W after I keeps ``w_share`` of what F stored.
    recompute_cost : time of the recompute before each backward, per 1/p of the model
        (``None``: f under full recompute, 0 under selective); per stage: ``stage_costs[s]["recompute"]``.
    recompute_activation : activation units F stores per 1/p of the model under recompute
        (``None``: the defaults above); per stage, ``stage_costs[s]["activation"]`` as usual.
    s, t : time of a device's vocabulary passes S and T for one microbatch (Vocabulary Parallelism:
        the output layer split over the p devices, each pass on 1/p of the vocabulary; only the
        ``vocab-*`` schedules run them); per device, ``stage_costs[s]["s"]`` and ``["t"]`` for
        the device's lowest stage ``s``.
    vocab_activation : activation units a device's S holds until its T of the same microbatch
        (its shard of the output layer's saved tensors; ``Config.from_model`` gives it).
    vocab_comm : time of one all-reduce barrier of the vocabulary passes (C0 after S, C1 after
        T), a collective over the pipeline group on its own stream: a latency between the passes
        it reduces and what waits for its result, never a device's time.
    memory_capacity : each device's memory, in activation units like ``params`` (with
        ``activation_bytes``, capacity in bytes / activation_bytes); ``None``: unlimited. The
        result then says which devices fit (``Result.fits``) and by how much the others do not.

    ``stage_costs`` may also give a stage's static memory (``"params"``, activation units,
    absolute), its recompute time (``"recompute"``), and what its ops pay besides their
    computation, as ``ppviz.calibrate`` measures it: ``"gap_f"``, ``"gap_b"``, ``"gap_w"``, the
    host time (Python, launching, posting sends and receives) added to each of its F, I (and a
    full B: one op, one gap) and W, whatever the stage's size or the segments; and ``"warmup_f"``,
    ``"warmup_b"``, ``"warmup_w"``, the time the stage's first microbatch's F, I (or the input
    part of its B) and W take on top of the others' (lazy initialisation, the allocator, cold
    caches: a slower first op of each kind in every step).
    topology : model communication as transfers over links: a :class:`ppviz.Topology` (devices
        grouped into nodes, an intra- and an inter-node link), a :class:`ppviz.Link` (one link
        between every pair of devices) or a preset name (``"dgx-h100"``, ``"dgx-a100"``,
        ``"roce-h100"``). Each activation (forward) and gradient (backward) that crosses devices
        is then a transfer of ``comm_bytes`` costing the link's latency + bytes / bandwidth; it
        waits for a busy link. Presets are in seconds: set ``time_unit``. ``None`` (the default)
        keeps the bare ``comm`` latency.
    comm_bytes : bytes of one transfer (micro-batch × sequence × hidden × bytes per element for a
        transformer's activation); given with ``topology``.
    p2p : ``"blocking"`` (a transfer also holds the sending and receiving devices, as batched
        send/recv calls that are waited for at once do) or ``"overlapped"`` (only the link is
        busy; compute goes on). ``None`` takes the schedule's default: overlapped for schedules
        whose published version overlaps communication (the overlap variants, DualPipe), else
        blocking.
    offload : activation offload to host memory (PipeOffload, Wan et al. 2025, arXiv 2503.01328):
        a :class:`ppviz.Offload`, the share of every stored activation copied to the host after
        its forward over each device's host link, and copied back before the backward that needs
        it; ``None`` (the default): nothing is offloaded. See :mod:`ppviz.core.offload` for the
        timing rules.
    step : a :class:`ppviz.Step`, what the training step adds after the pipeline's ops: each
        stage's data-parallel gradient reduction, the optimizer step and the parameter gather,
        timed on each device after its last backward (``Result.step_time``, ``Result.tails``),
        and the tokens, FLOPs and GPUs that give ``Result.mfu``. ``None``: the step is the
        pipeline's makespan. ``Config.from_model`` fills it.
    """

    # sizes and costs by position would be unreadable: every field but the schedule is a keyword
    schedule: str = field(default="1f1b", kw_only=False)
    devices: int = 4
    microbatches: int = 8
    stages_per_device: int | None = None
    f: float = 1.0
    b: float = 1.0
    w: float = 1.0
    comm: float = 0.0
    fb: float | None = None
    stage_costs: Mapping[int, Mapping[str, float]] = field(default_factory=FrozenMapping)
    microbatch_group_size: int | None = None
    activation: float = 1.0
    w_share: float = DEFAULT_W_SHARE
    params: float = 0.0
    activation_bytes: float | None = None
    label: str | None = None
    time_unit: str | None = None
    segments: int = 1
    recompute: str | None = None
    recompute_cost: float | None = None
    recompute_activation: float | None = None
    memory_capacity: float | None = None
    #: a Link or a preset name is taken as the Topology it describes
    topology: Topology | Link | str | None = None
    comm_bytes: float | None = None
    p2p: str | None = None
    offload: Offload | None = None
    step: Step | None = None
    s: float = 0.5
    t: float = 0.5
    vocab_comm: float = 0.0
    vocab_activation: float = 0.0

    def __post_init__(self):
        set_ = object.__setattr__
        if isinstance(self.schedule, ScheduleSpec):  # an entry of ppviz.list_schedules()
            set_(self, "schedule", self.schedule.name)
        if not isinstance(self.schedule, str):
            raise ConfigError("schedule", self.schedule, "give a schedule name such as '1f1b', or an entry of "
                              "ppviz.list_schedules()")
        spec = lookup(self.schedule)
        set_(self, "schedule", spec.name)
        set_(self, "devices", positive_int("devices", self.devices))
        set_(self, "microbatches", positive_int("microbatches", self.microbatches))
        v = positive_int("stages_per_device", self.stages_per_device, allow_none=True)
        v = spec.default_v if v is None else v
        set_(self, "stages_per_device", v)
        set_(self, "segments", positive_int("segments", self.segments))
        if self.segments > 1 and not spec.segmented:
            raise ScheduleConstraintError("segments", self.segments, "use 1, or the seq1f1b schedule to split sequences",
                                          reason=f"{spec.name} does not split microbatches into sequence segments")
        self._check_transfers()
        self._check_offload(spec)
        if self.step is not None:
            if not isinstance(self.step, Step):
                raise ConfigError("step", self.step, "give a ppviz.Step (the data-parallel tail: per stage a gradient "
                                  "reduction, optimizer step and parameter gather), or None; Config.from_model fills "
                                  "one from the model and its data-parallel layout")
            stages = spec.stage_count(self.devices, self.stages_per_device if self.stages_per_device is not None
                                      else spec.default_v)
            if self.step.stages is not None and stages is not None and self.step.stages != stages:
                raise ConfigError("step", self.step.stages, f"give the step's times for {stages} stages",
                                  reason=f"{spec.name} at these sizes has {stages} stages and the step describes "
                                         f"{self.step.stages}")
        check_size(spec, self.devices, v, self.microbatches, transfers=self.transfers,
                   segments=self.segments)
        for name in ("f", "b", "w", "comm", "activation", "params", "s", "t", "vocab_comm", "vocab_activation"):
            set_(self, name, _number(name, getattr(self, name)))
        if self.f + self.b + self.w <= 0:
            raise ConfigError("f+b+w", self.f + self.b + self.w, "at least one of f, b, w must be > 0")
        set_(self, "fb", _number("fb", self.fb, strict=True, allow_none=True))
        set_(self, "activation_bytes", _number("activation_bytes", self.activation_bytes, strict=True, allow_none=True))
        try:
            share = _number("w_share", self.w_share)
        except ConfigError:
            share = math.nan  # one message for every value out of range, below or above
        if not 0 <= share <= 1:
            raise ConfigError("w_share", self.w_share, "give a share between 0 and 1")
        set_(self, "w_share", share)
        set_(self, "microbatch_group_size",
             positive_int("microbatch_group_size", self.microbatch_group_size, allow_none=True))
        if self.label is not None and not isinstance(self.label, str):
            raise ConfigError("label", self.label, "give a string or None")
        if self.time_unit is not None and not (isinstance(self.time_unit, str) and _UNIT_RE.fullmatch(self.time_unit)):
            raise ConfigError("time_unit", self.time_unit,
                              "give a short unit name such as 'ms', 'us' or 's' (letters, at most 8), or None")
        if self.recompute not in RECOMPUTE:
            raise ConfigError("recompute", self.recompute, "give None, 'selective' or 'full'")
        for name in ("recompute_cost", "recompute_activation"):
            set_(self, name, _number(name, getattr(self, name), allow_none=True))
        if self.recompute is None:
            for name in ("recompute_cost", "recompute_activation"):
                if getattr(self, name) is not None:
                    raise ConfigError(name, getattr(self, name), "give recompute='full' or 'selective' too, or leave "
                                      f"{name} out", reason="it is a setting of recompute, and recompute is off")
        set_(self, "memory_capacity", _number("memory_capacity", self.memory_capacity, strict=True, allow_none=True))
        set_(self, "stage_costs", self._checked_stage_costs(spec))
        spec.check(self)

    def _check_transfers(self) -> None:
        """``topology``, ``comm_bytes`` and ``p2p`` come together and do not mix with a bare ``comm``."""
        set_ = object.__setattr__
        if self.topology is None:
            for name, accepted in (("comm_bytes", "give topology= too (a ppviz.Topology, a ppviz.Link or a preset "
                                                  "name such as 'dgx-h100'): a transfer's time needs a bandwidth"),
                                   ("p2p", "give topology= and comm_bytes= too: p2p says how transfers use the "
                                           "devices, and a bare comm latency has no transfers")):
                if getattr(self, name) is not None:
                    raise ConfigError(name, getattr(self, name), accepted, reason="it needs a topology")
            return
        topology = checked_topology(self.topology)
        set_(self, "topology", topology)
        topology.in_unit(self.time_unit)  # a preset on a unitless config is refused here
        if self.comm_bytes is None:
            raise ConfigError("comm_bytes", None, "give the bytes of one transfer (micro-batch × sequence × hidden × "
                              "bytes per element for a transformer), or 0 for latency only",
                              reason="a topology needs the size of what crosses it")
        set_(self, "comm_bytes", _number("comm_bytes", self.comm_bytes))
        comm = _number("comm", self.comm)
        if comm != 0:
            raise ConfigError("comm", self.comm, "leave comm at 0 with a topology: each transfer costs its link's "
                              "latency + comm_bytes / bandwidth", reason="comm is the bare latency model")
        if self.p2p is not None and self.p2p not in P2P_MODES:
            raise ConfigError("p2p", self.p2p, f"use {' or '.join(map(repr, P2P_MODES))}, or None for the "
                              f"schedule's default")

    def _check_offload(self, spec) -> None:
        """``offload`` is an :class:`Offload` (or None); one that offloads nothing is None."""
        if self.offload is None:
            return
        if not isinstance(self.offload, Offload):
            raise ConfigError("offload", self.offload, "give ppviz.Offload(share, link=ppviz.Link(...)) (the share of "
                              "each activation copied to host memory, over each device's host link), or None; "
                              "Config.from_model(..., offload=share) takes the hardware's PCIe link")
        if spec.forward_only:
            raise ConfigError("offload", self.offload, "leave offload out for forward-only schedules",
                              reason=f"{spec.name} keeps no activation for a backward, so there is nothing to offload")
        if self.offload.share == 0:
            object.__setattr__(self, "offload", None)
            return
        self.offload.link.in_unit(self.time_unit, "the offload link")  # a Link in seconds needs a time unit

    def _checked_stage_costs(self, spec) -> FrozenMapping:
        raw = self.stage_costs
        if raw is None:
            return FrozenMapping()
        if not isinstance(raw, Mapping):
            raise ConfigError("stage_costs", raw, "give a dict {stage: {'f': .., 'b': .., 'w': .., 'activation': .., "
                              "'params': .., 'recompute': .., 'gap_f': .., 'warmup_f': ..}}")
        # a custom schedule's stage count comes with its program: simulate() checks the keys then
        stages = spec.stage_count(self.devices, self.stages_per_device)
        out = {}
        for stage, costs in raw.items():
            if not _is_int(stage) or int(stage) < 0 or (stages is not None and int(stage) >= stages):
                accepted = f"0..{stages - 1}" if stages is not None else ">= 0"
                raise ConfigError("stage_costs", raw, f"stage keys must be integers {accepted}; got {stage!r}")
            if not isinstance(costs, Mapping):
                raise ConfigError(f"stage_costs[{stage}]", costs, "give a dict such as {'f': 1.5}")
            entry = {}
            for key, value in costs.items():
                if key not in _STAGE_COST_KEYS:
                    raise ConfigError(f"stage_costs[{stage}]", dict(costs),
                                      f"keys must be among {', '.join(_STAGE_COST_KEYS)}; got {key!r}")
                entry[key] = _number(f"stage_costs[{stage}][{key!r}]", value)
            for share in ("a2a_sm_share", "comm_sm_share"):
                if not entry.get(share, 0.0) < 1:
                    raise ConfigError(f"stage_costs[{stage}][{share!r}]", entry[share],
                                      "give the share of the SMs communication takes while computation runs beside "
                                      "it, from 0 to below 1 (DeepSeek-V3: 20 of an H800's 132)",
                                      reason="no SM would be left for computation")
            out[int(stage)] = FrozenMapping(entry)
        if self.fb is not None and any(key in A2A_KEYS for costs in out.values() for key in costs):
            raise ConfigError("fb", self.fb, "leave fb out, or the stages' all-to-all parts (f_a2a, b_a2a, w_a2a, "
                              "a2a_sm_share) out: with them an F&B pair costs what the overlap rule gives",
                              reason="both say what an F&B pair costs")
        return FrozenMapping(out)

    # Derived values ---------------------------------------------------------------------

    @property
    def spec(self):
        return lookup(self.schedule)

    @property
    def stages(self) -> int:
        """Number of distinct stages S (p·v; DualPipe's two replicas share stage numbers)."""
        return self.spec.stage_count(self.devices, self.stages_per_device)

    @property
    def group_size(self) -> int:
        """The interleaved microbatch group size g: ``microbatch_group_size``, else p (Megatron)
        when p divides m, else torch's round size m // (m // p)."""
        p, m = self.devices, self.microbatches
        if self.microbatch_group_size is not None:
            return self.microbatch_group_size
        if m % p == 0:
            return p
        return m // max(1, m // p)

    @property
    def transfers(self) -> bool:
        """True when communication is modelled as transfers over links (``topology`` is given)."""
        return self.topology is not None

    @property
    def p2p_mode(self) -> str | None:
        """``p2p``, or the schedule's default when it is None; None without transfers."""
        if not self.transfers:
            return None
        if self.p2p is not None:
            return self.p2p
        return "overlapped" if self.spec.overlapped_p2p else "blocking"

    @property
    def display_name(self) -> str:
        return self.label if self.label is not None else self.schedule

    @property
    def uniform(self) -> bool:
        """True when no per-stage override changes a cost and no recompute or offload can lengthen
        the backward (closed forms assume this)."""
        return self.recompute is None and self.offload is None and not any(
            k in ("f", "b", "w", *PER_OP_KEYS) for costs in self.stage_costs.values() for k in costs)

    @classmethod
    def from_model(cls, model, hardware, **options) -> "Config":
        """A config in real units from a model and an accelerator: times in ms, memory in bytes,
        the device memory as ``memory_capacity``.

        ``model`` is a :class:`ppviz.Transformer`, ``hardware`` a :class:`ppviz.Hardware`.
        Options: ``schedule``, ``devices`` (pipeline stages p), ``microbatches``,
        ``stages_per_device`` (taken from a layout string when not given), ``data_parallel``
        and ``zero_stage`` (0, 1 or 2: ZeRO sharding of the optimizer state and gradients),
        ``tensor_parallel`` and ``sequence_parallel`` (default: on when tensor_parallel > 1),
        ``recompute`` (None, ``"selective"``, ``"full"``), ``flash_attention`` (default True),
        ``layout`` (None or ``"even"``: Megatron's even split; ``"balanced"``: the automatic
        balancer; a Megatron layout string such as ``"Et*9|(t*10|)*6t*9L"``; a list of
        transformer layers per stage; a :class:`ppviz.model.Layout`), ``first_stage_layers`` /
        ``last_stage_layers``, ``expert_parallel``, ``expert_tensor_parallel`` (None: each expert
        split over the tensor-parallel group, Megatron's default; 1: whole experts, the expert-
        parallel group drawn from the tensor- and data-parallel ranks) and ``comm_sms`` (the SMs
        communication holds while it runs under computation, DeepSeek-V3's 20: an F&B pair's
        all-to-all then costs the overlap rule of ``ppviz.core.engine.overlapped_pairs``, and what
        STP's braided units hide costs that share of itself, ``engine.braided``), and any other
        Config field (``comm``, ``label``, ...). With a
        ``topology``, ``comm_bytes`` defaults to what one stage sends the next: the hidden
        states of a microbatch, s·b·h 16-bit values, split over the tensor-parallel group under
        sequence parallelism (as Megatron-LM sends them).

        f, b, w are the model's F, I, W times per 1/p of it; ``stage_costs`` holds every
        stage's own times, activation, static memory and recompute time (the embedding makes
        the first stage differ, the LM head and loss the last). The formulas and their sources
        are in ``ppviz.model``'s modules.
        """
        from ..model.costs import config_from_model

        return config_from_model(model, hardware, **options)

    def replace(self, **changes) -> "Config":
        """A copy with some fields changed (validated again). A new ``schedule`` brings its own
        default ``stages_per_device`` unless v is changed too or was set away from the old
        schedule's default (1f1b's v = 1 is not carried into a V-shaped schedule)."""
        if "schedule" in changes and "stages_per_device" not in changes \
                and self.stages_per_device == self.spec.default_v:
            changes["stages_per_device"] = None
        return dataclasses.replace(self, **changes)

    def build(self):
        """The program (per-device op orders) this config's schedule produces."""
        return self.spec.build_program(self)
