"""From a model and a machine to a :class:`ppviz.Config` in real units: per-stage times in
milliseconds and memory in bytes, with the device's capacity for "will it fit?".

Per stage s (model chunk s), for one microbatch: F, I and W times from the FLOPs of the items
the stage holds (``ppviz.model.flops``) at the hardware's sustained rate, divided over the t
tensor-parallel ranks; the recompute time (forward FLOPs run again before the backward); the
activation bytes the stage's F stores (``ppviz.model.activations``); and its static bytes,
parameters / t × the bytes per parameter of mixed-precision Adam under ZeRO
(``ppviz.model.static_memory``). The embedding sits on the first stage and the LM head with the
loss on the last, so those stages differ; with tied embeddings the last stage keeps its own copy
of the matrix (Megatron shares it between the first and last stage) unless they are one stage.

Not modelled: tensor-parallel and data-parallel communication (fold their cost into
``Hardware.efficiency``), expert parallelism (every expert of a stage's MoE layers is on each
of its devices), ZeRO-3, the transient memory of the one layer being
recomputed during a backward, and, under full recompute with a split backward (I, then W
later), the recomputed activations W still needs in between (the zero-bubble paper's M_W):
W is taken to keep ``w_share`` of what F stored.

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
from ..core.topology import Offload
from . import activations, flops
from .activations import Parallel, boundary_bytes
from .balance import MemoryLimit, candidates
from .hardware import Hardware
from .layout import Layout
from .static_memory import bytes_per_param
from .transformer import Transformer, checked_count

LAYOUT_KEYWORDS = ("even", "balanced")


@dataclass(frozen=True)
class StageCosts:
    """One microbatch through each stage: times in ms (``f``, ``i``, ``w``, ``recompute``),
    ``activation`` bytes stored by F, ``static`` bytes (weights, gradients, optimizer state),
    on one device of the stage's tensor-parallel group; ``layout`` says what each stage holds."""

    layout: Layout
    f: np.ndarray
    i: np.ndarray
    w: np.ndarray
    recompute: np.ndarray
    activation: np.ndarray
    static: np.ndarray


@dataclass(frozen=True)
class Training:
    """How the model is trained, beyond the pipeline: parallelism, recompute, attention kernel, ZeRO."""

    tensor_parallel: int = 1
    sequence_parallel: bool | None = None  # None: on when tensor_parallel > 1
    data_parallel: int = 1
    zero_stage: int = 0
    recompute: str | None = None
    flash_attention: bool = True
    expert_parallel: int = 1  # the experts of each MoE layer split over this many devices
    fp8: bool = False  # Transformer Engine's FP8: GEMMs at the FP8 rate, everything else 16-bit

    def __post_init__(self):
        for name in ("flash_attention", "fp8"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(name, getattr(self, name), "give True or False")
        checked_count("expert_parallel", self.expert_parallel, minimum=1)
        if self.sequence_parallel is not None and not isinstance(self.sequence_parallel, bool):
            raise ConfigError("sequence_parallel", self.sequence_parallel,
                              "give True, False or None (on when tensor_parallel > 1)")
        Parallel(self.tensor_parallel, bool(self.sequence_parallel))  # refuses bad tensor-parallel sizes
        bytes_per_param(self.zero_stage, self.data_parallel)  # checks ZeRO's stage and data parallelism
        if self.recompute not in flops.RECOMPUTE:
            raise ConfigError("recompute", self.recompute, "give None, 'selective' or 'full'")

    @property
    def parallel(self) -> Parallel:
        sp = self.tensor_parallel > 1 if self.sequence_parallel is None else self.sequence_parallel
        return Parallel(self.tensor_parallel, sp)


def item_costs(model: Transformer, hardware: Hardware, training: Training) -> dict[str, tuple]:
    """Per item kind (E, t, m, L): (f, i, w, recompute) in ms, stored activation bytes, parameters."""
    t = training.parallel.tensor
    rate = hardware.flops_per_ms * t
    mode = training.recompute
    fl = {"E": flops.NONE, "t": flops.layer(model), "m": flops.mtp(model), "L": flops.head(model)}
    again = {"E": 0, "t": flops.recomputed(model, mode), "m": flops.recomputed(model, mode), "L": 0}
    par, flash = training.parallel, training.flash_attention
    act = {"E": activations.embedding_bytes(model, par),
           "t": activations.layer_bytes(model, par, flash_attention=flash, recompute=mode),
           "m": activations.mtp_bytes(model, par, flash_attention=flash, recompute=mode),
           "L": activations.head_bytes(model, par)}
    params = {"E": model.embedding_params(), "t": model.layer_params(), "m": model.mtp_params(),
              "L": model.head_params()}
    return {k: ((fl[k].f / rate, fl[k].i / rate, fl[k].w / rate, again[k] / rate), act[k], params[k]) for k in fl}


def stage_costs(model: Transformer, hardware: Hardware, layout: Layout, training: Training = Training()) -> StageCosts:
    """Each stage's times and memory for ``layout`` (checked against the model)."""
    layout.check(model.layers, model.mtp_layers)
    per = item_costs(model, hardware, training)
    per_param = bytes_per_param(training.zero_stage, training.data_parallel)
    tied_copy = model.tied_embeddings and layout.counts("E").index(1) != layout.counts("L").index(1)
    rows = []
    for items in layout.stages:
        count = {c: items.count(c) for c in per}  # a stage's cost is its items' costs, kind by kind
        times = [sum(count[c] * per[c][0][k] for c in per) for k in range(4)]
        act = sum((count[c] * per[c][1] for c in per), Fraction(0))
        params = sum(count[c] * per[c][2] for c in per) + (model.vocab * model.hidden if tied_copy and "L" in items else 0)
        rows.append((*times, float(act), float(Fraction(params, training.parallel.tensor) * per_param)))
    f, i, w, r, act, static = (np.array(col, dtype=float) for col in zip(*rows))
    return StageCosts(layout, f, i, w, r, act, static)


def _sequence(model: Transformer) -> str:
    return "E" + "t" * model.layers + "m" * model.mtp_layers + "L"


def layout_candidates(model: Transformer, hardware: Hardware, config: Config,
                      training: Training = Training()) -> list[Layout]:
    """The balancer's candidate layouts for ``config``'s schedule and sizes
    (:func:`ppviz.model.balance.candidates`), best first by its cost model; Megatron's even
    split is among them when the layers divide."""
    per = item_costs(model, hardware, training)
    sequence = _sequence(model)
    stages = config.stages
    costs = [sum(per[c][0]) for c in sequence]
    starts = []
    if model.layers % stages == 0:
        each = model.layers // stages
        starts.append([0] + [1 + each * k for k in range(1, stages)] + [len(costs)])
    weights = placement_weights(config)
    per_param = float(bytes_per_param(training.zero_stage, training.data_parallel)) / training.parallel.tensor
    memory = MemoryLimit([float(per[c][1]) for c in sequence], [per[c][2] * per_param for c in sequence],
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
         tensor_parallel: int = 1, sequence_parallel: bool | None = None, zero_stage: int = 0,
         recompute: str | None = None, flash_attention: bool = True, layout=None,
         first_stage_layers: int | None = None, last_stage_layers: int | None = None,
         **options) -> tuple[Config, Layout]:
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
    training = Training(tensor_parallel, sequence_parallel, data_parallel, zero_stage, recompute, flash_attention)
    _check_heads_split(model, training.parallel.tensor)
    if transfers.get("topology") is not None and "comm_bytes" not in transfers:
        # what crosses the links is the model's own: its hidden states, sharded as the training shards them
        transfers["comm_bytes"] = boundary_bytes(model, training.parallel)
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


def _config_for(model: Transformer, hardware: Hardware, base: Config, layout: Layout, training: Training,
                links: dict | None = None) -> Config:
    """``base`` (schedule and sizes) with the costs of ``layout``, in ms and bytes, and ``links``
    (transfers, offload: Config fields set once the costs have given the time unit)."""
    layout.check(model.layers, model.mtp_layers, stages=base.stages)
    costs = stage_costs(model, hardware, layout, training)
    p = base.devices
    unit = float(costs.activation.sum()) / p  # bytes of one microbatch through 1/p of the model
    per_stage = {s: {"f": float(costs.f[s]), "b": float(costs.i[s]), "w": float(costs.w[s]),
                     "recompute": float(costs.recompute[s]), "activation": float(costs.activation[s]) / unit,
                     "params": float(costs.static[s]) / unit} for s in range(base.stages)}
    config = base.replace(
        f=float(costs.f.sum()) / p, b=float(costs.i.sum()) / p, w=float(costs.w.sum()) / p,
        stage_costs=per_stage, activation=1.0, activation_bytes=unit, params=float(costs.static.sum()) / p / unit,
        w_share=activations.weight_gradient_share(model, flash_attention=training.flash_attention),
        memory_capacity=hardware.memory_bytes / unit, time_unit="ms", recompute=training.recompute)
    return config.replace(**links) if links else config
