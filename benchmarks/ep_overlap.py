"""Expert parallelism's all-to-all under 1F1B, ZB-V, DualPipeV and DualPipe on DeepSeek-V3 as
DeepSeek trained it: 2,048 H800s, PP16 × EP64 over 8 nodes, ZeRO-1 data parallelism over the
128 pipelines, FP8 GEMMs, 4K sequences, 15,360 of them a step (120 microbatches of one per
pipeline) — DeepSeek-V3 technical report (arXiv 2412.19437), §3.1 and §4.2.

    python benchmarks/ep_overlap.py

For each schedule: the step, the pipeline's makespan, the all-to-all its ops run per device, and
the share of it that stays exposed (ppviz.core.engine.exposed_a2a: all of it outside F&B pairs;
in a pair, what the overlap rule adds to its computation, the SMs the all-to-all holds included),
in all and in the pairs alone. Then the same with a plain
all-to-all dispatch (each of a token's 8 copies sent on its own, as Megatron-LM's all-to-all
dispatcher does) instead of DeepSeek's node-limited one, and the tokens per second beside the
report's "180K H800 GPU hours" per trillion tokens (§1, Table 1).
"""

from __future__ import annotations

import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import ppviz  # noqa: E402
from ppviz.core.engine import a2a_table, exposed_a2a  # noqa: E402
from ppviz.core.numbers import number, share  # noqa: E402

SCHEDULES = (("1f1b", "Et*3|(t*4|)*14,t*2mL"), ("zb-v", "Et*3|(tt|)*29,m|L"),
             ("dualpipe-v", "Et*3|(tt|)*29,m|L"), ("dualpipe", "Et*3|(t*4|)*14,t*2mL"))
OPTIONS = dict(devices=16, microbatches=120, expert_parallel=64, data_parallel=128, zero_stage=1, fp8=True)
#: the report's cost: 180K H800 GPU hours per trillion tokens on 2,048 GPUs
REPORTED_TOKENS_PER_S = 1e12 / (180e3 / 2048 * 3600)


def run(model: ppviz.Transformer) -> None:
    hardware = ppviz.Hardware.preset("h800")
    print(f"{'schedule':<12}{'step':>10}{'makespan':>10}{'all-to-all':>12}{'exposed':>10}{'in pairs':>10}"
          f"{'tokens/s':>12}{'vs report':>11}")
    for schedule, layout in SCHEDULES:
        config = ppviz.Config.from_model(model, hardware, schedule=schedule, layout=layout, **OPTIONS)
        result = ppviz.simulate(config)
        program = result.program
        table = a2a_table(config, program.stages)
        assert table is not None  # expert parallelism across nodes: every MoE stage has its all-to-all
        own = table[0][program.kind.astype(int), program.stage]
        total = float(own.sum()) / config.devices
        left = exposed_a2a(program, config)
        exposed = float(left.sum()) / config.devices
        paired = program.pair | np.r_[False, program.pair[:-1]]
        in_pairs = share(float(left[paired].sum() / own[paired].sum())) if paired.any() else "–"
        step_s = result.step_time / 1e3
        tokens = OPTIONS["data_parallel"] * OPTIONS["microbatches"] * model.tokens / step_s
        print(f"{schedule:<12}{number(step_s, 's'):>10}{number(result.makespan / 1e3, 's'):>10}"
              f"{number(total / 1e3, 's'):>12}{share(exposed / total):>10}{in_pairs:>10}{number(tokens / 1e6, 'M'):>12}"
              f"{share(tokens / REPORTED_TOKENS_PER_S - 1):>11}")


def main() -> None:
    begin = time.perf_counter()
    deepseek = ppviz.Transformer.preset("deepseek-v3")
    print("DeepSeek-V3 on 2,048 H800s, PP16 x EP64 x DP128 (ZeRO-1), FP8, 120 microbatches of 4,096 tokens;")
    print("all-to-all: per device, the time its ops spend in it; exposed: the share not hidden\n")
    print("node-limited dispatch (each token over IB to at most 4 nodes, NVLink forwarding):")
    run(deepseek)
    print("\nplain all-to-all dispatch (every copy of a token on its own):")
    run(deepseek.replace(routed_nodes=None))
    print(f"\nreport: {number(REPORTED_TOKENS_PER_S / 1e6, 'M')} tokens/s (180K H800 GPU hours per trillion tokens); "
          f"({number(time.perf_counter() - begin, 's')})")


if __name__ == "__main__":
    main()
