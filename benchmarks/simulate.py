"""Build and simulate throughput, up to about a million ops (p=64, v=4, m=2048).

Run: python benchmarks/simulate.py [--quick]
Prints, per size, the time to build the program, to validate it, to run the event engine, to
compute the full result (metrics, memory curves), and ops per second end to end.
Target (issue 2): one million ops built and simulated in under 0.5 s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import time

import ppviz
from ppviz.core.engine import execute, op_costs

SIZES = [
    ("1f1b", 8, 1, 64),
    ("zb-h1", 16, 1, 256),
    ("interleaved-1f1b", 16, 2, 256),
    ("interleaved-1f1b", 32, 4, 512),
    ("1f1b", 64, 1, 2048),
    ("interleaved-1f1b", 64, 4, 2048),
]


def best_of(fn, repeat):
    best, value = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t0)
    return best, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only the smaller sizes, one repeat")
    args = parser.parse_args()
    sizes = SIZES[:3] if args.quick else SIZES
    repeat = 1 if args.quick else 3
    print(f"{'schedule':18} {'p':>3} {'v':>2} {'m':>5} {'ops':>9} {'build':>8} {'validate':>9} {'engine':>8} "
          f"{'result':>8} {'build+sim':>10} {'ops/s':>11}")
    for name, p, v, m in sizes:
        cfg = ppviz.Config(schedule=name, devices=p, microbatches=m, stages_per_device=v)
        t_build, program = best_of(cfg.build, repeat)
        t_validate, _ = best_of(program.validate, repeat)
        cost = op_costs(program, cfg)
        t_engine, _ = best_of(lambda: execute(program, cost, cfg.comm), repeat)
        t_total, res = best_of(lambda: ppviz.simulate(cfg), repeat)
        n = len(program)
        core = t_build + t_validate + t_engine
        print(f"{name:18} {p:>3} {v:>2} {m:>5} {n:>9,} {t_build:>7.3f}s {t_validate:>8.3f}s {t_engine:>7.3f}s "
              f"{t_total:>7.3f}s {core:>9.3f}s {n / t_total:>11,.0f}")
    print("build+sim = build + validate + engine (the issue's target: < 0.5 s at ~1M ops); "
          "result = ppviz.simulate end to end incl. metrics and memory curves")


if __name__ == "__main__":
    main()
