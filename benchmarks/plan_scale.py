"""ppviz.plan at scale: a 1T-parameter GPT (Narayanan et al. 2021, Table 1: 128 layers, hidden
25,600, 160 heads, sequence 2,048) on 512 A100s in DGX A100 nodes, global batch 512.

    python benchmarks/plan_scale.py            # joblib on every core
    python benchmarks/plan_scale.py --jobs 1   # one process

Prints the wall time, the work (layouts considered, ruled out by memory, simulated) and the top
rows. The issue's target: under a minute on this 2-core machine.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import ppviz  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=None)
    args = parser.parse_args()
    model = ppviz.Transformer(128, hidden=25600, heads=160, seq_len=2048, vocab=51200, name="gpt-1t")
    started = time.perf_counter()
    found = ppviz.plan(model, ppviz.Hardware.preset("a100-80gb"), gpus=512, global_batch=512, n_jobs=args.jobs,
                       progress=False)
    took = time.perf_counter() - started
    print(found.to_text(5))
    print(f"\n{model.params / 1e12:.2f}T parameters; {took:.1f} s wall ({found.simulated:,} simulated, "
          f"{found.simulated / took:.0f} per second; target < 60 s)")


if __name__ == "__main__":
    main()
