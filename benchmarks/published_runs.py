"""Predicted against measured: the step time of published training runs, from the model's shapes,
the parallel layout and the accelerator alone.

    python benchmarks/published_runs.py              # every row ppviz can model, and the summary
    python benchmarks/published_runs.py --only qi24  # the rows whose id starts with qi24
    python benchmarks/published_runs.py --json out.json

The rows (``benchmarks/data/published_runs.json``) are measured step times or throughputs from
papers' tables, framework benchmark pages and vendor recipes, each with its source, the quote it
was read from and notes on what the source leaves out (see the file's ``schema``). A throughput is
turned into a step time with the source's own formula (the row's ``derived``). Each row is
modelled by ``Config.from_model`` with the row's model, layout (tensor, pipeline, data parallel
sizes, virtual stages, micro-batch size, recompute, sequence parallelism, ZeRO) and machine, and
simulated; nothing is fitted to the rows (the accelerator presets' constants come from datasheets,
papers and one calibration per accelerator, each with its source).

Printed: one line per row (predicted, measured, error), the mean absolute percentage error by
source and accelerator, and for each group of rows that compares schedules on one setting, the
ratios between its schedules (predicted and measured) and whether the ranking is the measured one.
Rows ppviz does not model yet are listed with the reason.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import sys
import time
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import ppviz  # noqa: E402
from ppviz.core.errors import PpvizError  # noqa: E402

DATA = ROOT / "benchmarks" / "data" / "published_runs.json"

#: accelerator as a row names it → (Hardware preset, changes, topology preset)
MACHINES = {
    "A100-SXM4-80GB": ("a100-80gb", {}, "dgx-a100"),
    "A100 (80GB assumed; artifact says 8 A100 GPUs)": ("a100-80gb", {}, "dgx-a100"),
    "H100-SXM5-80GB": ("h100-sxm", {}, "dgx-h100"),
    "H100-SXM5-80GB (700 W)": ("h100-sxm", {}, "roce-h100"),
    # Meta's Grand Teton H100s: 96 GB of HBM2e at 2.4 TB/s, a 500 W power limit (torchtitan's page)
    "H100 (96GB HBM2e, 500 W)": ("h100-sxm", {"memory_gib": 96.0}, "roce-h100"),
    "H200-SXM-141GB": ("h200", {}, "dgx-h100"),
    "GB200 (NVL72)": ("gb200", {}, "gb200-nvl72"),
}
#: vocabulary where a row's source does not state it: the zero-bubble paper's Megatron setup
#: (GPT SentencePiece) leaves it out, as does Vocabulary Parallelism's for its baselines
DEFAULT_VOCAB = 51200


@dataclass
class Outcome:
    row: dict
    measured: float | None = None  # seconds
    predicted: float | None = None
    reason: str = ""  # why it is not modelled

    @property
    def error(self) -> float | None:
        if self.measured is None or self.predicted is None:
            return None
        return (self.predicted - self.measured) / self.measured


def rows(prefix: str | None = None) -> list[dict]:
    data = json.loads(DATA.read_text())
    return [r for r in data["rows"] if prefix is None or r["id"].startswith(prefix)]


def measured_step(row: dict) -> float | None:
    """The row's step time in seconds: measured, or derived from its throughput by the source's formula."""
    if row["measured"]["metric"] == "step_time_s":
        return float(row["measured"]["value"])
    derived = (row.get("derived") or {}).get("step_time_s")
    if derived is not None:
        return float(derived)
    if row["measured"]["metric"] == "tokens_per_s" and row["measured"].get("per") == "GPU":
        tokens = row["global_batch"] * row["seq_len"]
        return tokens / (row["measured"]["value"] * row["gpus"])
    return None


def schedule_of(row: dict) -> tuple[str | None, str]:
    """The registry schedule the row ran (and how: "" for the schedule itself, "zb-1p"/"zb-2p"
    for the zero-bubble authors' automatic schedules under p or 2p activations), or a reason."""
    named = row["ppviz_schedule"]
    if row["pipeline_parallel"] == 1:
        return "1f1b", ""
    if named is None:
        return None, "the source does not name the pipeline schedule"
    if named.startswith("zb-h1 (auto"):
        return "zb-h1", "zb-1p"
    if named.startswith("zb-h2 (auto"):
        return "zb-h2", "zb-2p"
    if " or " in named:
        return None, "the source does not say which schedule ran"
    return named.split(" ")[0], ""


def model_of(row: dict) -> ppviz.Transformer:
    name = row["model"].lower()
    if name.startswith("deepseek-v3"):
        # the row's shapes are the preset's (MLA, 3 dense layers, 256 routed experts top-8, one shared,
        # the MTP module: Megatron-Bridge's recipe trains mtp_num_layers = 1 by default)
        return ppviz.Transformer.preset("deepseek-v3").replace(seq_len=row["seq_len"],
                                                               micro_batch_size=row["micro_batch_size"])
    gated = "llama" in name
    # Megatron-LM trains with dropout 0.1 unless told otherwise (TransformerConfig's hidden_dropout and
    # attention_dropout); the scripts of these sources leave it (Megatron's examples/academic_paper_scripts/sc21,
    # the zero-bubble fork's examples/pretrain_zero_bubble.sh, which sets 0 only for its exact-numerics check),
    # as does the profile the calibration is fitted to; Vocabulary Parallelism's pretrain_gpt.sh sets 0, and the
    # Llama recipes train without it
    dropout = row["id"].startswith(("narayanan21", "korthikanti22", "qi24"))
    return ppviz.Transformer(
        row["layers"], hidden=row["hidden"], heads=row["heads"], kv_heads=row["kv_heads"], ffn_hidden=row["ffn_hidden"],
        vocab=row["vocab"] or DEFAULT_VOCAB, seq_len=row["seq_len"], micro_batch_size=row["micro_batch_size"],
        gated_mlp=gated, norm="rmsnorm" if gated else "layernorm", bias=not gated,
        learned_positions="gpt" in name and "llama" not in name, dropout=dropout, name=row["model"])


def layout_of(row: dict, stages: int):
    """The row's layer layout: the zero-bubble paper's first and last stages hold one transformer
    layer fewer than the others (its §5.1; with one layer a chunk, those chunks hold only the
    embedding and the head), as Megatron-LM and NeMo split layers that do not divide evenly when
    the embedding and the loss count as layers (``account_for_embedding_in_pipeline_split``,
    ``account_for_loss_in_pipeline_split``: Llama 3.1 405B's 126 layers over 64 chunks); Vocabulary
    Parallelism's 'redis' baseline moves layers off the vocabulary stages (ppviz's balancer does
    that); else Megatron's even split."""
    if row["model"].lower().startswith("deepseek-v3"):
        # Megatron-Bridge's set_deepseek_v3_pipeline_model_parallel_layout (recipes/deepseek): the embedding
        # with the first stage's layers, the MTP module and the loss with the last's
        return DEEPSEEK_V3_LAYOUTS.get(stages)
    if row["id"].startswith("qi24") or (row["layers"] % stages and (row["layers"] + 2) % stages == 0):
        each, rest = divmod(row["layers"] + 2, stages)
        if rest or each < 1:
            return None
        return [each - 1] + [each] * (stages - 2) + [each - 1]
    if "redistributed" in str(row["schedule"]):
        return "balanced"
    return None


#: DeepSeek-V3's 61 layers per stage for VP = 1, as Megatron-Bridge's recipe lays them
DEEPSEEK_V3_LAYOUTS = {4: [16, 16, 16, 13], 8: [8] * 7 + [5], 16: [4] * 15 + [1]}


def virtual_stages(row: dict, schedule: str) -> int:
    """v: as the row says; the zero-bubble paper's interleaved 1F1B runs one layer per chunk."""
    if row["id"].startswith("qi24") and schedule == "interleaved-1f1b":
        return (row["layers"] + 2) // row["pipeline_parallel"]
    return row["virtual_stages"] or (2 if schedule in ("zb-v", "v-half", "v-min") else 1)


#: ZeRO as the sources name it
ZERO = {"distributed_fused_adam with overlap_grad_sync/overlap_param_sync (ZeRO-1-like)": 1,
        "distributed optimizer (ZeRO-1-like)": 1, "distributed optimizer (NeMo default; not restated)": 1}


def config_of(row: dict):
    """(the Config the row ran, how its schedule was chosen) or (None, why not)."""
    if row["accelerator"] not in MACHINES:
        return None, f"no preset for {row['accelerator']}"
    if row["micro_batch_size"] is None:
        return None, "the source does not give the micro-batch size"
    schedule, how = schedule_of(row)
    if schedule is None:
        return None, how
    t, p, d = row["tensor_parallel"], row["pipeline_parallel"], row["data_parallel"]
    m, rest = divmod(row["global_batch"], d * row["micro_batch_size"])
    if rest:
        return None, "the global batch is not a whole number of microbatches per pipeline"
    v = virtual_stages(row, schedule)
    if isinstance(row["zero_stage"], str) and row["zero_stage"] not in ZERO:
        return None, f"{row['zero_stage']} (ZeRO-3: weights gathered per layer) is not modelled"
    preset, changes, topology = MACHINES[row["accelerator"]]
    hardware = ppviz.Hardware.preset(preset, **changes)
    # NVIDIA's DeepSeek-V3 recipes recompute selected modules (core attention, or MLA's up-projections):
    # ppviz's selective recompute is the attention core's
    recompute = "selective" if str(row["recompute"]).startswith("selective") else \
        {"none": None, "full": "full"}.get(row["recompute"], None)
    fp8 = "fp8" in row["precision"].lower() or "float8" in row["precision"].lower()
    # Megatron-LM of 2021-2023 ran its own fused softmax, not FlashAttention, as these rows and the profile the
    # calibration is fitted to (scripts/calibrate_hardware.py) did
    flash = not row["id"].startswith(("narayanan21", "korthikanti22", "qi24"))
    options = dict(schedule=schedule, devices=p, microbatches=m, tensor_parallel=t, data_parallel=d,
                   recompute=recompute, sequence_parallel=bool(row["sequence_parallel"]) if t > 1 else None,
                   zero_stage=ZERO.get(row["zero_stage"], row["zero_stage"]) or 0,
                   context_parallel=row["context_parallel"] or 1, fp8=fp8, flash_attention=flash)
    if row["experts"]:
        # the rows with experts are NVIDIA's DeepSeek-V3 recipes, whose table gives ETP = 1 (each expert whole)
        options.update(expert_parallel=row["expert_parallel"], expert_tensor_parallel=1)
    layout = layout_of(row, p * v)
    if layout is not None:
        options["layout"] = layout
    if v > 1:
        options["stages_per_device"] = v
    # the vocabulary passes' schedules do not yet run over links beside their all-reduces: they take
    # the bare latency Config.from_model gives (these rows run on one NVLink node, where a microbatch's
    # activations cross in about 0.1 ms of a step of seconds)
    options["topology"] = None if ppviz.core.registry.find(schedule).vocab_barriers else topology
    try:
        return ppviz.Config.from_model(model_of(row), hardware, **options), how
    except PpvizError as exc:
        return None, f"ppviz refuses it: {exc}"


def predict(config, how: str) -> float:
    """The predicted step time in seconds."""
    if how in ("zb-1p", "zb-2p"):
        # the zero-bubble authors' automatic schedule under p (ZB-1p) or 2p (ZB-2p) activations: one
        # stage per device, as theirs is (left free, the search takes DualPipe's two replicas at 2p,
        # which halve the heavy last stage's work: a schedule these rows did not run)
        limit = config.devices * (1 if how == "zb-1p" else 2)
        result = ppviz.search(config.replace(schedule="zb-h1"), limit, stages_per_device=1, progress=False,
                              effort=2000)
    else:
        result = ppviz.simulate(config)
    return result.step_time * ppviz.core.topology.SECONDS[config.time_unit]


def evaluate(selected: list[dict]) -> list[Outcome]:
    out = []
    for row in selected:
        outcome = Outcome(row, measured_step(row))
        if outcome.measured is None:
            outcome.reason = "the source's figure does not give a step time"
            out.append(outcome)
            continue
        config, how = config_of(row)
        if config is None:
            outcome.reason = how
        else:
            outcome.predicted = predict(config, how)
        out.append(outcome)
    return out


def mape(outcomes: list[Outcome]) -> float:
    errors = [abs(o.error) for o in outcomes if o.error is not None]
    return sum(errors) / len(errors) if errors else math.nan


def groups(outcomes: list[Outcome]) -> dict[str, list[Outcome]]:
    out: dict[str, list[Outcome]] = {}
    for o in outcomes:
        if o.error is not None and o.row["comparison"].startswith("schedule"):
            out.setdefault(o.row["group"], []).append(o)
    return {g: members for g, members in out.items() if len(members) > 1}


def ratio_errors(members: list[Outcome]) -> list[float]:
    """Each schedule's step against the group's first, predicted over measured, minus one."""
    base = members[0]
    return [(o.predicted / base.predicted) / (o.measured / base.measured) - 1 for o in members[1:]]


def same_ranking(members: list[Outcome]) -> bool:
    by = lambda key: [o.row["schedule"] for o in sorted(members, key=key)]  # noqa: E731
    return by(lambda o: o.predicted) == by(lambda o: o.measured)


def pair_orders(members: list[Outcome], gap: float = 0.03) -> tuple[int, int]:
    """(pairs predicted in the measured order, pairs) over a group's schedule pairs whose measured
    step times differ by more than ``gap``: a ranking counts measured ties as misses, this does not."""
    agree = total = 0
    for i, a in enumerate(members):
        for b in members[i + 1:]:
            if abs(a.measured - b.measured) <= gap * min(a.measured, b.measured):
                continue
            total += 1
            agree += (a.predicted < b.predicted) == (a.measured < b.measured)
    return agree, total


def report(outcomes: list[Outcome]) -> str:
    lines = [f"{'row':44} {'schedule':18} {'measured s':>10} {'predicted s':>11} {'error':>8}"]
    for o in outcomes:
        if o.error is None:
            continue
        lines.append(f"{o.row['id'][:44]:44} {str(o.row['schedule'])[:18]:18} {o.measured:10.4g} {o.predicted:11.4g} "
                     f"{o.error:+8.1%}")
    modelled = [o for o in outcomes if o.error is not None]
    lines.append("")
    lines.append(f"{len(modelled)} rows modelled of {len(outcomes)}; mean absolute error {mape(modelled):.1%}")
    dense = [o for o in modelled if not o.row["experts"]]
    lines.append(f"  dense models: {len(dense)} rows, mean absolute error {mape(dense):.1%}; mixtures of experts: "
                 f"{len(modelled) - len(dense)} rows, mean absolute error "
                 f"{mape([o for o in modelled if o.row['experts']]):.1%}")
    for key in ("accelerator", "source"):
        seen = {}
        for o in modelled:
            seen.setdefault(o.row[key][:60], []).append(o)
        for name, members in sorted(seen.items()):
            lines.append(f"  {key} {name}: {len(members)} rows, mean absolute error {mape(members):.1%}")
    grouped = groups(outcomes)
    if grouped:
        ratios = [abs(e) for members in grouped.values() for e in ratio_errors(members)]
        ranked = sum(same_ranking(members) for members in grouped.values())
        lines.append("")
        agree, pairs = map(sum, zip(*(pair_orders(members) for members in grouped.values())))
        lines.append(f"schedule comparisons: {len(grouped)} groups; ratio error mean {sum(ratios) / len(ratios):.1%}, "
                     f"max {max(ratios):.1%}; ranking as measured in {ranked} of {len(grouped)}; "
                     f"{agree} of {pairs} pairs measured > 3 % apart in the measured order")
        for name, members in grouped.items():
            order = " > ".join(o.row["schedule"] for o in sorted(members, key=lambda o: o.predicted))
            lines.append(f"  {name}: {'same' if same_ranking(members) else 'DIFFERENT'} ranking; predicted fastest "
                         f"first {order}; ratio errors " + ", ".join(f"{e:+.1%}" for e in ratio_errors(members)))
    skipped = {}
    for o in outcomes:
        if o.error is None:
            skipped.setdefault(o.reason, []).append(o.row["id"])
    if skipped:
        lines.append("")
        lines.append("not modelled:")
        for reason, ids in skipped.items():
            lines.append(f"  {len(ids):3} {reason} ({', '.join(ids[:3])}{', ...' if len(ids) > 3 else ''})")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="only the rows whose id starts with this")
    parser.add_argument("--json", help="write the outcomes as JSON here")
    args = parser.parse_args()
    started = time.perf_counter()
    outcomes = evaluate(rows(args.only))
    print(report(outcomes))
    print(f"\n({time.perf_counter() - started:.1f} s)")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps([{"id": o.row["id"], "measured_s": o.measured,
                                                        "predicted_s": o.predicted, "error": o.error,
                                                        "reason": o.reason} for o in outcomes], indent=1))


if __name__ == "__main__":
    main()
