"""ppviz.plan against published practice: for published runs whose authors state their layout
(benchmarks/data/published_runs.json), the plan's best layout beside the authors' own, both
simulated by the step model.

    python benchmarks/plan_published.py

For each run: the plan's best (t, p, d, v, micro-batch, schedule, recompute, ZeRO) and its step,
the authors' layout's predicted step and its ratio to the best, and whether the authors' layout
(t, p, d, v and micro-batch) is a row of the plan's table (every fitting layout within 1.1x of
the best); then the same with only what the authors' framework ran. Where the two differ, the
ratio says what ppviz predicts the authors' layout loses to its best.
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import ppviz  # noqa: E402

_spec = importlib.util.spec_from_file_location("published_runs", ROOT / "benchmarks" / "published_runs.py")
published = importlib.util.module_from_spec(_spec)
sys.modules["published_runs"] = published
_spec.loader.exec_module(published)

#: what each source's framework could run: Megatron-LM of 2021-22 had GPipe, 1F1B and interleaved
#: 1F1B and no distributed optimizer (ZeRO-0), and in 2021 no sequence parallelism (Korthikanti et
#: al. 2022 brought it); NeMo/Megatron-Core of 2025 (NVIDIA's recipes) runs 1F1B and interleaved
#: 1F1B with the distributed optimizer (ZeRO-1)
FRAMEWORK = {"narayanan21": dict(schedules=["gpipe", "1f1b", "interleaved-1f1b"], zero_stage=0,
                                 sequence_parallel=False),
             "korthikanti22": dict(schedules=["gpipe", "1f1b", "interleaved-1f1b"], zero_stage=0),
             "dgxc": dict(schedules=["1f1b", "interleaved-1f1b"], zero_stage=[0, 1])}

#: runs whose layout the authors give in full, and the context parallelism they ran beside it
RUNS = {"narayanan21-t1-39.1B": 1, "korthikanti22-t5-175B-seqsel": 1, "korthikanti22-t5-1T-seqsel": 1,
        "dgxc-h100-llama31-8b-bf16-8gpu": 2, "dgxc-h100-llama31-70b-bf16-64gpu": 2,
        "dgxc-h100-llama31-405b-bf16-512gpu": 2}


def main() -> None:
    rows = {r["id"]: r for r in published.rows()}
    print(f"{'run':36} {'GPUs':>5} {'plan best':44} {'best s':>8} {'authors s':>9} {'ratio':>6} in table; "
          "then the same with only what the authors' framework ran")
    for run, cp in RUNS.items():
        row = rows[run]
        authors, how = published.config_of(row)
        if authors is None:
            print(f"{run:36} not modelled: {how}")
            continue
        preset, changes, topology = published.MACHINES[row["accelerator"]]
        hardware = ppviz.Hardware.preset(preset, **changes)
        model = published.model_of(row)
        started = time.perf_counter()
        # as published_runs.py models them: Megatron-LM of 2021-2022 ran its fused softmax, not flash attention
        shared: dict = dict(flash_attention=not run.startswith(("narayanan21", "korthikanti22")))
        if cp > 1:
            shared["context_parallel"] = cp
        found = ppviz.plan(model, hardware, gpus=row["gpus"], global_batch=row["global_batch"], topology=topology,
                           progress=False, **shared)
        took = time.perf_counter() - started
        mine = ppviz.simulate(authors)
        best = found.table.iloc[0]
        def listed(table) -> bool:
            """Whether the authors' layout (t, p, d, v, micro-batch) is a row of the plan's table."""
            return bool(((table.t == row["tensor_parallel"]) & (table.p == row["pipeline_parallel"])
                         & (table.d == row["data_parallel"]) & (table.v == authors.stages_per_device)
                         & (table.micro_batch_size == row["micro_batch_size"])).any())

        label = (f"t={best.t} p={best.p} d={best.d} v={best.v} b={best.micro_batch_size} {best.schedule} "
                 f"{best.recompute} Z{best.zero_stage}")
        fits = "" if mine.fits is None or mine.fits.all() else " (authors' layout over memory in ppviz)"
        print(f"{run:36} {row['gpus']:5} {label:44} {best.step_time / 1e3:8.3f} {mine.step_time / 1e3:9.3f} "
              f"{mine.step_time / best.step_time:6.3f} {'yes' if listed(found.table) else 'no'}{fits}  ({took:.0f} s)")
        theirs = FRAMEWORK[run.split("-")[0]]
        found = ppviz.plan(model, hardware, gpus=row["gpus"], global_batch=row["global_batch"], topology=topology,
                           progress=False, **shared, **theirs)
        best = found.table.iloc[0]
        label = (f"t={best.t} p={best.p} d={best.d} v={best.v} b={best.micro_batch_size} {best.schedule} "
                 f"{best.recompute} Z{best.zero_stage}")
        print(f"{'  their framework':36} {'':5} {label:44} {best.step_time / 1e3:8.3f} {mine.step_time / 1e3:9.3f} "
              f"{mine.step_time / best.step_time:6.3f} {'yes' if listed(found.table) else 'no'}")


if __name__ == "__main__":
    main()
