"""``ppviz.plan``: the whole parallel layout of a model on N accelerators, ranked by its step.

A layout is the tensor-parallel size t (inside a node, dividing the heads and key/value groups),
the pipeline's p stages and their layer layout, the data-parallel d = gpus / (t · p), the
virtual stages v, the micro-batch size b and so the microbatches m = global_batch / (d · b), the
schedule, the recompute mode and the ZeRO stage. :func:`plan` enumerates every combination the
constraints allow and that makes sense, and finds the fastest that fits in three steps:

1. **Bounds, without simulating.** The model's per-item costs are computed once per (t, b,
   recompute) and summed per stage for each layer layout, vectorised over the layouts. Each
   layout gets a lower bound on its peak memory — the heaviest device's static memory plus one
   microbatch's activations, which every training schedule holds at its peak — and each (layout,
   schedule) a lower bound on its step — m times the busiest device's compute, since a device
   runs each of its ops once per microbatch and the step ends no earlier than its pipeline. A
   layout whose memory bound passes the device is dropped: no schedule can fit it.
2. **Simulation in order of the time bound.** The candidates are simulated with the step model
   (``Config.from_model``: kernels, collectives, the data-parallel tail) in waves, fastest bound
   first, on joblib's processes or a Dask cluster (``client=``), until the next bound passes
   ``within`` times the fastest fitting step found: nothing left can be within that, so nothing
   left can be the best. The table holds every fitting layout whose step is within ``within`` of
   the best (and no other), the same on one process or many.
3. **A Plan**, shaped like :class:`ppviz.Frontier`: ``.table`` (fastest first), ``.best`` (its
   Config), ``.result(i)``, ``.chart()`` (step against peak memory, the Pareto front named) and
   ``.view()`` (the chart and the top rows; picking one opens its Gantt chart).

Rules that prune without losing the best: t stays inside a node (across nodes, tensor
parallelism's per-layer collectives would run on the network); ZeRO-2 only without a pipeline
(DeepSpeed's PipelineEngine refuses ZeRO-2 and ZeRO-3 with more than one stage: "ZeRO-2 and
ZeRO-3 are incompatible with pipeline parallelism", as gradients accumulate over microbatches)
and ZeRO only with d > 1; a layer layout is Megatron's even split, or where the layers do not
divide, its split with the embedding and the loss counted as layers (first and last stages one
layer lighter; ``account_for_embedding_in_pipeline_split``); v only where the schedule takes it.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import os
import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.budget import estimate_ops, max_ops
from ..core.config import Config
from ..core.engine import simulate
from ..core.errors import ConfigError, PpvizError, ScheduleConstraintError, checked_arguments, did_you_mean
from ..core.registry import all_specs, lookup
from ..core.result import Result
from ..model import Hardware, Transformer
from ..model.collectives import Groups
from ..model.costs import Training, cluster_of, item_costs, stage_costs
from ..model.layout import Layout
from .frontier import pareto_front

if TYPE_CHECKING:
    import pandas as pd

#: what ``plan``'s constraints may pin or restrict, each to one value or a list
DIMENSIONS = ("tensor_parallel", "pipeline_parallel", "data_parallel", "stages_per_device", "micro_batch_size",
              "schedules", "recompute", "zero_stage")
#: the limits a constraint may set instead of a list
LIMITS = ("max_pipeline", "max_tensor", "max_stages_per_device")
#: options every layout shares, passed to ``Config.from_model`` as given
SHARED = ("sequence_parallel", "context_parallel", "expert_parallel", "expert_tensor_parallel", "fp8",
          "flash_attention", "tp_comm_overlap", "overlap_grad_reduce", "overlap_param_gather", "comm_sms")
MICRO_BATCH_SIZES = (1, 2, 4, 8)
RECOMPUTE = (None, "selective", "full")
#: virtual stages tried: Megatron's interleaving takes any v whose p · v chunks split the layers
#: (NVIDIA's recipes run 5 for Llama 3.1 70B and 8 for 405B)
STAGES_PER_DEVICE = (1, 2, 3, 4, 5, 6, 7, 8)
#: the largest grid plan enumerates (layouts × schedules), refused before any work beyond it
MAX_CANDIDATES = 500_000
COLUMNS = ("t", "p", "d", "v", "micro_batch_size", "m", "schedule", "recompute", "zero_stage", "layout", "step_time",
           "tokens_per_second", "mfu", "peak_memory", "headroom", "bubble", "tp_comm", "dp_tail", "pareto")


@dataclass(frozen=True)
class _Shape:
    """A layout before its schedule: everything the costs and the bounds depend on."""

    t: int
    p: int
    d: int
    v: int
    b: int
    m: int
    recompute: str | None
    zero: int
    counts: tuple[int, ...]  # transformer layers per stage

    def options(self, schedule: str, shared: dict) -> dict:
        return dict(schedule=schedule, devices=self.p, microbatches=self.m, tensor_parallel=self.t,
                    data_parallel=self.d, stages_per_device=self.v if self.v > 1 else None, recompute=self.recompute,
                    zero_stage=self.zero, layout=list(self.counts), **shared)


@checked_arguments
@dataclass
class Plan:
    """What :func:`plan` returns: the fitting layouts within ``within`` of the best, fastest first.

    ``table`` is a pandas DataFrame (:data:`COLUMNS`: step time in ms, peak memory and headroom
    in bytes on the busiest device, ``tp_comm`` the busiest device's tensor- and expert-parallel
    collectives its ops expose (``Result.tp_comm``), ``dp_tail`` the step after the pipeline, ``pareto`` the layouts no
    other beats on both step and memory); ``best`` the fastest's Config; ``result(i)`` row
    ``i``'s full :class:`ppviz.Result`; ``chart()`` and ``view()`` draw it. ``enumerated``,
    ``pruned`` and ``simulated`` count the work in (layout, schedule) pairs: considered, ruled
    out by the memory bound, and simulated (``out_of_memory`` of them did not
    fit). A row that a row of the same layout and schedule beats on both step and memory (only its
    recompute or ZeRO stage differ) is left out: it is no choice."""

    table: pd.DataFrame
    _: dataclasses.KW_ONLY
    configs: list[Config]
    model: Transformer
    hardware: Hardware
    gpus: int
    global_batch: int
    within: float
    enumerated: int = 0
    pruned: int = 0
    simulated: int = 0
    out_of_memory: int = 0
    _results: dict[int, Result] = field(default_factory=dict, repr=False)

    @property
    def best(self) -> Config:
        """The fastest fitting layout's Config."""
        return self.configs[0]

    def result(self, i: int = 0) -> Result:
        """Row ``i`` (0: the best) simulated in full."""
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not -len(self.configs) <= i < len(self.configs):
            raise ConfigError("i", i, f"give a row of the table, 0 to {len(self.configs) - 1}")
        i = int(i) % len(self.configs)
        if i not in self._results:
            self._results[i] = simulate(self.configs[i])
        return self._results[i]

    def chart(self, *, facet: str | None = "auto", width: int = 460, height: int = 320):
        """Step time against peak memory, the device's capacity and the Pareto front, a panel per
        ``facet`` (``"t"``, ``"p"``, None, or ``"auto"``: t where the rows differ in it, else p;
        Altair, :func:`ppviz.charts.plan_chart`)."""
        from ..charts.plan import plan_chart

        return plan_chart(self, facet=facet, width=width, height=height)

    def view(self):
        """The chart and the top rows; picking one opens its Gantt chart (:class:`ppviz.widgets.PlanView`)."""
        from ..widgets.plan import PlanView

        return PlanView(self)

    def _ipython_display_(self):
        from IPython.display import display

        display(self.view())

    def _display_(self):
        return self.view()

    def label(self, i: int) -> str:
        """Row ``i`` in one line, as the view lists it."""
        row = self.table.iloc[i]
        from ..core.numbers import number, share

        return (f"t={row.t} p={row.p} d={row.d} v={row.v} b={row.micro_batch_size} m={row.m} {row.schedule}, "
                f"recompute {row.recompute}, ZeRO-{row.zero_stage}: step {number(row.step_time, 'ms')}, MFU {share(row.mfu)}")

    def to_text(self, rows: int = 10) -> str:
        """The top ``rows`` as a text table under the plan's headline, wrapped at 80 columns (what the
        CLI prints)."""
        from ..core.numbers import number, share, size

        head = (f"{self.model.name or 'model'} on {self.gpus:,} × {self.hardware.name or 'accelerator'}, global batch "
                f"{self.global_batch:,}: {len(self.table):,} {'layout fits' if len(self.table) == 1 else 'layouts fit'} "
                f"within {number(self.within)}× of the best "
                f"({self.enumerated:,} considered, {self.pruned:,} ruled out by memory before simulating, "
                f"{self.simulated:,} simulated)")
        shown = self.table.head(rows)
        cells = [["t", "p", "d", "v", "b", "m", "schedule", "recompute", "ZeRO", "step", "MFU", "peak", "headroom"]]
        for row in shown.itertuples():
            cells.append([str(row.t), str(row.p), str(row.d), str(row.v), str(row.micro_batch_size), str(row.m),
                          row.schedule, row.recompute, str(row.zero_stage), number(row.step_time, "ms"),
                          share(row.mfu), size(row.peak_memory), size(row.headroom)])
        widths = [max(len(r[k]) for r in cells) for k in range(len(cells[0]))]
        left = {6, 7}
        lines = ["  ".join(c.ljust(w) if k in left else c.rjust(w) for k, (c, w) in enumerate(zip(r, widths))).rstrip()
                 for r in cells]
        return "\n".join([textwrap.fill(head, 80), ""] + lines)

    def __repr__(self) -> str:
        return f"<Plan: {len(self.table)} layouts>\n" + self.to_text()


def _as_choices(name: str, value, accepted: str) -> tuple:
    values = tuple(value) if isinstance(value, (list, tuple, set, frozenset, range)) else (value,)
    if not values:
        raise ConfigError(name, value, accepted, reason="an empty list leaves no layout")
    return values


def _whole(name: str, value, least: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise ConfigError(name, value, f"give a whole number >= {least}")
    return int(value)


def _checked_constraints(model: Transformer, constraints: dict) -> tuple[dict, dict]:
    """(dimension → allowed values or limit, options shared by every layout)."""
    known = DIMENSIONS + LIMITS + SHARED
    chosen: dict[str, Any] = {}
    shared: dict[str, Any] = {}
    for key, value in constraints.items():
        if key not in known:
            raise ConfigError(key, value, f"{did_you_mean(key, known)}plan's constraints are {', '.join(known)}",
                              reason="plan has no such constraint")
        if key in SHARED:
            shared[key] = value
        elif key in LIMITS:
            chosen[key] = _whole(key, value)
        elif key == "schedules":
            names = _as_choices(key, value, "give schedule names, e.g. ['1f1b', 'zb-h1']")
            specs = [lookup(n) if isinstance(n, str) else None for n in names]
            if any(s is None or s.builder is None or s.forward_only for s in specs):
                bad = next(n for n, s in zip(names, specs) if s is None or s.builder is None or s.forward_only)
                raise ConfigError(key, value, "give names of the registry's training schedules "
                                  "(ppviz.list_schedules())", reason=f"{bad!r} is not one")
            vocab = next((n for n, s in zip(names, specs) if s is not None and s.vocab_barriers), None)
            if vocab is not None:
                raise ConfigError(key, value, "give schedules without vocabulary passes; time a vocabulary-parallel "
                                  "one with ppviz.simulate(ppviz.Config.from_model(...))",
                                  reason=f"{vocab!r} runs vocabulary passes, and plan times transfers over links, "
                                         "which ppviz does not yet time beside them")
            chosen[key] = tuple(dict.fromkeys(s.name for s in specs if s is not None))
        elif key == "recompute":
            values = _as_choices(key, value, "give None, 'selective', 'full' or a list of them")
            for v in values:
                if v not in RECOMPUTE:
                    raise ConfigError(key, value, "give None, 'selective', 'full' or a list of them")
            chosen[key] = values
        else:
            values = _as_choices(key, value, "give a whole number or a list of them")
            chosen[key] = tuple(_whole(key, v, 0 if key == "zero_stage" else 1) for v in values)
            if key == "zero_stage" and any(z > 2 for z in chosen[key]):
                raise ConfigError(key, value, "give ZeRO stages 0, 1 or 2 (stage 3 is not modelled)")
    return chosen, shared


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


def _layer_counts(layers: int, stages: int) -> tuple[int, ...] | None:
    """Megatron's even split, or with the embedding and the loss counted as layers."""
    if layers % stages == 0:
        return (layers // stages,) * stages
    if stages > 2 and (layers + 2) % stages == 0:
        each = (layers + 2) // stages
        return (each - 1,) + (each,) * (stages - 2) + (each - 1,)
    return None


def _shapes(model: Transformer, gpus: int, global_batch: int, node: int, chosen: dict) -> tuple[list[_Shape], dict]:
    """Every layout before its schedule, and for each dimension how many it removed."""
    kv = model.kv_heads if model.kv_heads is not None else model.heads
    removed: dict[str, int] = {}

    def keep(name: str, values, allowed):
        if allowed is None:
            return list(values)
        kept = [x for x in values if x in allowed]
        removed[name] = removed.get(name, 0) + len(values) - len(kept)
        return kept

    ts = [t for t in _divisors(gpus) if model.heads % t == 0 and kv % t == 0 and t <= node]
    ts = [t for t in ts if t <= chosen.get("max_tensor", t)]
    ts = keep("tensor_parallel", ts, chosen.get("tensor_parallel"))
    out = []
    for t in ts:
        ps = [p for p in _divisors(gpus // t) if p <= min(model.layers, chosen.get("max_pipeline", 128))]
        ps = keep("pipeline_parallel", ps, chosen.get("pipeline_parallel"))
        for p in ps:
            d = gpus // (t * p)
            if keep("data_parallel", [d], chosen.get("data_parallel")) == []:
                continue
            most = chosen.get("max_stages_per_device", STAGES_PER_DEVICE[-1])
            vs = [v for v in STAGES_PER_DEVICE if v <= most and (v == 1 or p > 1)]
            vs = keep("stages_per_device", vs, chosen.get("stages_per_device"))
            bs = [b for b in MICRO_BATCH_SIZES if global_batch % (d * b) == 0]
            bs = keep("micro_batch_size", bs, chosen.get("micro_batch_size"))
            zeros = [z for z in (0, 1, 2) if (z == 0 or d > 1) and (z < 2 or p == 1)]
            zeros = keep("zero_stage", zeros, chosen.get("zero_stage"))
            recomputes = keep("recompute", list(RECOMPUTE), chosen.get("recompute"))
            for v in vs:
                counts = _layer_counts(model.layers, p * v)
                if counts is None:
                    continue
                for b, z, r in itertools.product(bs, zeros, recomputes):
                    out.append(_Shape(t, p, d, v, b, global_batch // (d * b), r, z, counts))
    return out, removed


def _expert_splits(model: Transformer, shapes: list[_Shape], shared: dict, removed: dict) -> list[_Shape]:
    """The shapes whose stage ranks split into the expert-parallel groups
    (``Groups.holds_expert_groups``, which ``Config.from_model`` requires); the rest are counted as
    removed by ``expert_parallel``."""
    ep = shared.get("expert_parallel", 1)
    if not model.moe or not isinstance(ep, int) or ep <= 1:
        return shapes
    cp, etp = shared.get("context_parallel", 1), shared.get("expert_tensor_parallel")
    kept = [s for s in shapes if Groups(tp=s.t, cp=cp, dp=s.d, ep=ep, pp=s.p, etp=etp).holds_expert_groups]
    if len(kept) < len(shapes):
        removed["expert_parallel"] = removed.get("expert_parallel", 0) + len(shapes) - len(kept)
    return kept


def _bounds(model: Transformer, hardware: Hardware, shapes: list[_Shape], shared: dict, cluster) -> tuple:
    """Per shape: a lower bound of the busiest device's peak memory (bytes); each stage's
    activation bytes per microbatch (what a recompute saves shows there); and, as rows of
    (shapes × 2 × 3) ms, the average device's compute per microbatch, the latest any device d can
    end if it runs stage d after the first microbatch's forwards reach it, and the heaviest stage's
    compute per microbatch. Row 0 leaves out the expert-parallel all-to-all, which an F&B pair may
    hide under its partner (DualPipe's rule); row 1 every collective, which STP's braided units
    may hide: each is what a schedule that hides them could take at the least (:func:`_time_bound`)."""
    per_item: dict[tuple, dict] = {}
    sized = {b: model.replace(micro_batch_size=b) for b in {s.b for s in shapes}}
    layouts = {c: Layout.from_counts(list(c), model.mtp_layers) for c in {s.counts for s in shapes}}
    memory = np.empty(len(shapes))
    activation: list[np.ndarray] = []
    times = np.empty((len(shapes), 2, 3))
    for k, s in enumerate(shapes):
        training = _training(s, shared, cluster)
        key = (s.t, s.b, s.recompute)
        if key not in per_item:
            per_item[key] = item_costs(sized[s.b], hardware, training)
        costs = stage_costs(sized[s.b], hardware, layouts[s.counts], training, per_item=per_item[key])
        static = costs.static
        activation.append(costs.activation)
        again = 1.0 if s.recompute else 0.0
        time = costs.f + costs.i + costs.w + again * costs.recompute
        a2a = costs.a2a[:, 0], costs.a2a[:, :3].sum(axis=1) + again * costs.a2a[:, 3]
        comm = costs.f_comm, costs.f_comm + costs.i_comm + costs.w_comm + again * costs.recompute_comm
        # a device holds its stages' static memory and, at its peak, one microbatch's activations
        # of a stage at least; with one stage per device both are that stage's
        if s.v == 1:
            memory[k] = float((static + costs.activation).max())
        else:
            memory[k] = max(float(static.sum()) / s.p, float(static.max())) + float(costs.activation.min())
        # device d's first op is stage d's first F, which waits for the F's of the stages before it;
        # then it runs its stage's m passes (and with one stage per device, nothing else)
        for row, (forward, each) in enumerate(((costs.f - a2a[0], time - a2a[1]), (costs.f - comm[0], time - comm[1]))):
            fill = np.concatenate(([0.0], np.cumsum(forward[: s.p - 1])))
            times[k, row] = (float(each.sum()) / s.p, float((fill + s.m * each[: s.p]).max()), float(each.max()))
    return memory, activation, times


def _time_bound(spec, s: _Shape, times: np.ndarray) -> float:
    """A lower bound of the step, in ms, from the shape's ``times`` (:func:`_bounds`: STP's row
    without any collective, every other schedule's without the all-to-all). With one copy of
    each stage: its device runs all m passes of it, and device d starts no earlier than the first
    microbatch's forwards through the stages before its first (``filled``); the average device's
    compute bounds it too. With two copies (DualPipe's, Chimera's replicas) the average, and half
    the heaviest stage's passes on one of its two devices."""
    average, filled, heaviest = (float(x) for x in times[1 if spec.braided_units is not None else 0])
    if spec.replicas > 1:
        return s.m * max(average, heaviest / spec.replicas)
    return max(s.m * max(average, heaviest), filled)


def _training(s: _Shape, shared: dict, cluster) -> Training:
    names = {f.name for f in dataclasses.fields(Training)}
    return Training(tensor_parallel=s.t, data_parallel=s.d, pipeline_parallel=s.p, zero_stage=s.zero,
                    recompute=s.recompute, cluster=cluster, **{k: v for k, v in shared.items() if k in names})


def _schedules(chosen: dict) -> list:
    """The training schedules to plan with: those named, or every training schedule but a
    segmented one (Seq1F1B runs whole microbatches as 1F1B does, since sequence segments are not
    one of the plan's dimensions) and one whose program another spec builds."""
    wanted = chosen.get("schedules")
    specs = [s for s in all_specs() if s.builder is not None and not s.forward_only]
    if wanted is not None:
        return [s for s in specs if s.name in wanted]
    # a program two specs build (backward halving's is forward doubling's) is tried once; the
    # vocabulary-parallel schedules are left out: plan times transfers over links, which ppviz
    # does not yet time beside their passes
    return [s for s in specs if not s.segmented and not s.same_program_as and not s.vocab_barriers]


@functools.lru_cache(maxsize=4096)
def _accepts(spec, p: int, m: int, v: int) -> bool:
    if v < spec.v_min or (spec.v_max is not None and v > spec.v_max):
        return False
    if spec.v_step == 2 and (v - spec.v_min) % 2:
        return False
    try:
        Config(schedule=spec.name, devices=p, microbatches=m, stages_per_device=v)
    except ScheduleConstraintError:
        return False
    except PpvizError:
        return False
    return True


def _config(model: Transformer, hardware: Hardware, topology, b: int, options: dict) -> Config:
    return Config.from_model(model.replace(micro_batch_size=b), hardware, topology=topology, **options)


def _for_shape(specs: list, s: _Shape) -> list:
    """The schedules that accept the shape's sizes; without a pipeline (p = 1) every schedule runs
    its m microbatches one after another on the one device, so only one of them: 1F1B, which
    holds one microbatch's activations at a time (GPipe's fill-drain would hold all m)."""
    # a family whose default is several stages per device runs, at v = 1, its plain sibling
    # (interleaved-zb's v = 1 is zb-h1, looped-bfs's is gpipe): that one is listed already
    accepted = [spec for spec in specs if _accepts(spec, s.p, s.m, s.v) and not (s.v == 1 and spec.default_v > 1)]
    if s.p == 1:
        return sorted(accepted, key=lambda spec: spec.name != "1f1b")[:1]
    return accepted


def _dominated_recompute(shapes: list[_Shape], activation: list[np.ndarray]) -> np.ndarray:
    """Shapes whose recompute saves no memory over the same shape without it (selective
    recompute under flash attention, which stores no attention scores to drop): no stage's
    activations shrink, the recompute only adds time, so they cannot be the best. (Compared by
    the stages' activations, not by the memory bound: a bound held by a stage without layers is
    the same with and without recompute, whatever the others save.)"""
    plain = {dataclasses.replace(s, recompute=None): activation[k] for k, s in enumerate(shapes) if s.recompute is None}
    out = np.zeros(len(shapes), bool)
    for k, s in enumerate(shapes):
        bare = plain.get(dataclasses.replace(s, recompute=None))
        out[k] = s.recompute is not None and bare is not None and bool(np.all(activation[k] >= bare))
    return out


def _dominated_siblings(table) -> np.ndarray:
    """Rows another row of the same layout and schedule (differing only in recompute or ZeRO
    stage) beats: at most as slow and as heavy, and better on one."""
    key = ["t", "p", "d", "v", "micro_batch_size", "m", "schedule"]
    out = np.zeros(len(table), bool)
    for _, group in table.groupby(key, sort=False):
        if len(group) < 2:
            continue
        front = pareto_front(group.step_time.to_numpy(), group.peak_memory.to_numpy())
        out[group.index[~front]] = True
    return out


def _evaluate(model: Transformer, hardware: Hardware, topology, items: list[tuple[int, int, dict]]) -> list[tuple]:
    """Simulate each (index, micro-batch size, from_model options): the row's figures and whether it fits."""
    rows = []
    for index, b, options in items:
        config = _config(model, hardware, topology, b, options)
        res = simulate(config)
        peak = res.peak_memory_bytes
        capacity = hardware.memory_bytes
        rows.append((index, float(res.step_time), res.tokens_per_second, res.mfu, float(peak.max()),
                     float(capacity - peak.max()), float(res.bubble_fraction), float(res.tp_comm.max()),
                     float(res.step_time - res.makespan), bool(res.fits.all())))
    return rows


@checked_arguments
def plan(model: Transformer, hardware: Hardware, *, gpus: int, global_batch: int, topology=None,
         within: float = 1.1, client=None, n_jobs: int | None = None, progress: bool = True,
         **constraints) -> Plan:
    """The parallel layouts of ``model`` on ``gpus`` of ``hardware`` at ``global_batch``
    sequences per step that fit every device, fastest first (a :class:`Plan`).

    ``topology``: the cluster (a preset name such as ``"dgx-h100"`` or a :class:`ppviz.Topology`;
    default the hardware's reference system). ``within``: keep every fitting layout whose step
    is within this factor of the best (≥ 1). ``client``: a ``dask.distributed.Client`` to simulate
    on; otherwise joblib's processes (``n_jobs``; 1: this process). ``progress``: a tqdm bar.
    ``constraints`` pin or restrict a dimension to a value or a list — ``tensor_parallel``,
    ``pipeline_parallel``, ``data_parallel``, ``stages_per_device``, ``micro_batch_size``,
    ``schedules``, ``recompute``, ``zero_stage`` — or limit one (``max_pipeline``,
    ``max_tensor``, ``max_stages_per_device``), or set what every layout shares
    (``sequence_parallel``, ``context_parallel``, ``expert_parallel``, ``expert_tensor_parallel``, ``fp8``,
    ``flash_attention``, ``tp_comm_overlap``, ``overlap_grad_reduce``, ``overlap_param_gather``,
    ``comm_sms``).
    """
    import pandas as pd
    from tqdm.auto import tqdm

    if not isinstance(model, Transformer):
        raise ConfigError("model", model, "give a ppviz.Transformer, e.g. ppviz.Transformer.preset('llama-3-70b')")
    if not isinstance(hardware, Hardware):
        raise ConfigError("hardware", hardware, "give a ppviz.Hardware, e.g. ppviz.Hardware.preset('h100-sxm')")
    gpus, global_batch = _whole("gpus", gpus), _whole("global_batch", global_batch)
    if isinstance(within, bool) or not isinstance(within, (int, float)) or not 1 <= within < math.inf:
        raise ConfigError("within", within, "give a factor >= 1 (1.25: every layout within 25 % of the best)")
    if client is not None and not hasattr(client, "map"):
        raise ConfigError("client", client, "give a dask.distributed.Client, or None to run locally with joblib")
    cluster = cluster_of(hardware, topology)
    if cluster is None:
        raise ConfigError("topology", topology, "give topology= (a preset such as 'dgx-h100', or a ppviz.Topology)",
                          reason=f"{hardware.name or 'this hardware'} has no reference system to place the groups on")
    chosen, shared = _checked_constraints(model, constraints)
    # context parallelism splits each sequence over its own ranks, between the tensor- and the
    # data-parallel ones (Megatron's tp-cp-ep-dp-pp order): t · p · d covers the rest
    cp = shared.get("context_parallel", 1)
    if isinstance(cp, bool) or not isinstance(cp, int) or cp < 1 or gpus % cp:
        raise ConfigError("context_parallel", cp, f"give a whole number that divides the {gpus:,} GPUs")
    shapes, removed = _shapes(model, gpus // cp, global_batch, cluster.devices_per_node, chosen)
    shapes = _expert_splits(model, shapes, shared, removed)
    specs = _schedules(chosen)
    if not shapes or not specs:
        worst = max(removed, key=lambda k: removed[k]) if removed else None
        why = (f"the constraint that removed the most is {worst} ({removed[worst]:,} values)" if worst else
               f"no t divides the {model.heads} heads inside a node of {cluster.devices_per_node}, or no micro-batch "
               f"size of {', '.join(map(str, MICRO_BATCH_SIZES))} divides the global batch over d")
        raise ConfigError("constraints" if constraints else "gpus", constraints or gpus, f"loosen them: {why}"
                          if constraints else f"give a GPU count and global batch that split: {why}",
                          reason=f"no layout of {gpus:,} GPUs and a global batch of {global_batch:,} is left")
    memory, activation, times = _bounds(model, hardware, shapes, shared, cluster)
    capacity = hardware.memory_bytes
    fits = memory <= capacity
    if not fits.any():
        from ..core.numbers import size

        least = int(np.argmin(memory))
        s = shapes[least]
        raise ConfigError("gpus", gpus, f"give more GPUs, a smaller global batch or a device with more memory: the "
                          f"least any layout needs is {size(memory[least])} (t={s.t} p={s.p} d={s.d} v={s.v} "
                          f"b={s.b}, recompute {s.recompute or 'none'}, ZeRO-{s.zero}) of {size(capacity)}",
                          reason=f"no layout of {model.name or 'the model'} fits {hardware.name or 'the device'}")
    enumerated = sum(1 for s in shapes for spec in _for_shape(specs, s))
    if enumerated > MAX_CANDIDATES:
        raise ConfigError("constraints", constraints or None, f"pin or limit a dimension (tensor_parallel=, "
                          f"max_pipeline=, schedules=) to at most {MAX_CANDIDATES:,}",
                          reason=f"{enumerated:,} layouts to consider")
    keep = fits & ~_dominated_recompute(shapes, activation)
    candidates = []  # (time bound, shape index, schedule)
    for k in np.flatnonzero(keep).tolist():
        s = shapes[k]
        for spec in _for_shape(specs, s):
            candidates.append((_time_bound(spec, s, times[k]), k,
                               spec.name))
    candidates.sort(key=lambda c: (c[0], c[1], c[2]))
    topology_arg = topology if topology is not None else cluster
    budget = max_ops()
    work = []
    for bound, k, name in candidates:
        s = shapes[k]
        if estimate_ops(lookup(name), s.p, s.v, s.m, transfers=True) <= budget:
            work.append((bound, k, name))
    workers = 1 if n_jobs == 1 else (max(1, sum(client.nthreads().values())) if client is not None
                                     else (os.cpu_count() or 1) if n_jobs in (None, -1) else int(n_jobs))
    wave = 16 * max(1, workers)
    best = math.inf
    rows: list[tuple] = []
    simulated = 0
    with tqdm(total=len(work), desc="ppviz.plan", unit="layout", disable=not progress) as bar:
        position = 0
        while position < len(work) and work[position][0] <= within * best:
            batch = [(i, shapes[k].b, shapes[k].options(name, shared)) for i, (_, k, name) in
                     enumerate(work[position:position + wave], start=position)
                     if work[i][0] <= within * best]
            position += wave
            got = _run(model, hardware, topology_arg, batch, client, workers)
            simulated += len(batch)
            rows.extend(got)
            for row in got:
                if row[-1]:
                    best = min(best, row[1])
            bar.update(len(batch))
        bar.total = simulated
        bar.refresh()
    if best == math.inf:
        raise ConfigError("gpus", gpus, "give more GPUs, a smaller global batch, recompute, or a device with more "
                          "memory", reason=f"none of the {simulated:,} layouts simulated fits "
                          f"{hardware.name or 'the device'} (each passed the memory bound, not the simulation)")
    kept = sorted((r for r in rows if r[-1] and r[1] <= within * best),
                  key=lambda r: (r[1], r[0]))
    records = []
    for r in kept:
        bound, k, name = work[r[0]]
        s = shapes[k]
        records.append((s.t, s.p, s.d, s.v, s.b, s.m, name, s.recompute or "none", s.zero, _layout_text(s.counts), r[1], r[2],
                        r[3], r[4], r[5], r[6], r[7], r[8]))
    table = pd.DataFrame.from_records(records, columns=list(COLUMNS[:-1]))
    kept_rows = ~_dominated_siblings(table)
    table = table[kept_rows].reset_index(drop=True)
    # the workers' Configs stay with them (a plan's are large); the rows kept are built again here
    configs = []
    for r, keep_row in zip(kept, kept_rows):
        if keep_row:
            _, k, name = work[r[0]]
            configs.append(_config(model, hardware, topology_arg, shapes[k].b, shapes[k].options(name, shared)))
    table["pareto"] = pareto_front(table.step_time, table.peak_memory)
    return Plan(table, configs=configs, model=model, hardware=hardware, gpus=gpus, global_batch=global_batch,
                within=float(within), enumerated=enumerated,
                pruned=sum(len(_for_shape(specs, shapes[k])) for k in np.flatnonzero(~fits).tolist()),
                simulated=simulated,
                out_of_memory=sum(1 for r in rows if not r[-1]))


def _layout_text(counts: tuple[int, ...]) -> str:
    first, *rest = counts
    if len(set(counts)) == 1:
        return f"even ({first} per stage)"
    return f"{first}, {rest[0]}×{len(counts) - 2}, {counts[-1]}"


def _run(model, hardware, topology, batch, client, workers: int) -> list[tuple]:
    if not batch:
        return []
    if workers == 1 and client is None:
        return _evaluate(model, hardware, topology, batch)
    size = max(1, math.ceil(len(batch) / workers))
    parts = [batch[i:i + size] for i in range(0, len(batch), size)]
    if client is not None:
        futures = [client.submit(_evaluate, model, hardware, topology, part, pure=False) for part in parts]
        return [row for future in futures for row in future.result()]
    from joblib import Parallel, delayed

    out = Parallel(n_jobs=min(workers, len(parts)), backend="loky")(
        delayed(_evaluate)(model, hardware, topology, part) for part in parts)
    return [row for part in out for row in part]


__all__ = ["plan", "Plan", "COLUMNS", "DIMENSIONS", "LIMITS", "SHARED", "MAX_CANDIDATES"]
