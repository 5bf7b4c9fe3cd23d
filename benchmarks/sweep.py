"""Sweeps and search: the metrics-only fast path, parallel sweeps, and ppviz.search's answer time.

Run: python benchmarks/sweep.py [--configs N] [--quick]
Prints:
1. one core: configs per second of the fast path (ppviz.core.metrics), one config at a time
   and 256 of one shape together (metrics_many, as sweeps run them), against ppviz.simulate,
   for p = 8, m = 32 1F1B and interleaved 1F1B (v = 2) with random costs, and of a whole
   ppviz.sweep in this process (Config construction and rows included);
2. a sweep of N configs (default 10^5: 1F1B, p = 8, m = 32, a grid over f, b, w, comm) on a
   Dask LocalCluster with one worker and with two (one thread each, processes), and on joblib
   with one and two processes: configs per second and the two-to-one ratio;
3. ppviz.search at p = 8, m = 32 for several memory limits: seconds per answer.
Targets (issue 15): <= 0.25 ms per p = 8, m = 32 1F1B config on one core (>= 4,000 configs/s);
two LocalCluster workers >= 1.7x one worker on 10^5 configs; search <= 1 s at p = 8, m = 32.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import time

import ppviz
from ppviz.core import metrics as fast


def rate(fn, items) -> float:
    t0 = time.perf_counter()
    for x in items:
        fn(x)
    return len(items) / (time.perf_counter() - t0)


def one_core(count: int) -> None:
    rng = random.Random(0)
    print("1. one core, configs/s (random f, b, w in [0.5, 2], comm in [0, 0.5]):")
    for name, v in (("1f1b", 1), ("interleaved-1f1b", 2)):
        configs = [ppviz.Config(schedule=name, devices=8, microbatches=32, stages_per_device=v,
                                f=rng.uniform(0.5, 2), b=rng.uniform(0.5, 2), w=rng.uniform(0.5, 2),
                                comm=rng.uniform(0, 0.5)) for _ in range(count)]
        fast.metrics(configs[0])  # the plan is built once per shape
        fast_rate = rate(fast.metrics, configs)
        batches = [configs[k:k + 256] for k in range(0, count, 256)]
        t0 = time.perf_counter()
        for batch in batches:
            fast.metrics_many(batch)
        many_rate = count / (time.perf_counter() - t0)
        full_rate = rate(ppviz.simulate, configs[: max(1, count // 10)])
        print(f"   {name:17} v={v}: one by one {fast_rate:7,.0f}/s ({1e3 / fast_rate:.3f} ms each)   "
              f"256 together {many_rate:7,.0f}/s ({1e3 / many_rate:.3f} ms)   "
              f"simulate {full_rate:5,.0f}/s ({1e3 / full_rate:.2f} ms)")
    grid = {"schedule": ["1f1b"], "devices": [8], "microbatches": [32], "f": [0.5 + 0.1 * k for k in range(count // 20)],
            "b": [1.0, 1.5, 2.0, 2.5], "w": [0.5, 1.0, 1.5, 2.0, 2.5]}
    t0 = time.perf_counter()
    df = ppviz.sweep(grid, n_jobs=1, progress=False)
    elapsed = time.perf_counter() - t0
    print(f"   ppviz.sweep(n_jobs=1), {len(df):,} 1F1B configs: {len(df) / elapsed:8,.0f}/s "
          f"({1e3 * elapsed / len(df):.3f} ms each, Config and row included)")


def sweep_grid(total: int) -> dict:
    """About ``total`` configs: equal steps in f, b and w, the rest in comm."""
    per = round(total ** (1 / 4))
    grid = {"schedule": ["1f1b"], "devices": [8], "microbatches": [32],
            "f": [0.5 + k / per for k in range(per)], "b": [0.5 + k / per for k in range(per)],
            "w": [0.25 + k / per for k in range(per)], "comm": [k / (4 * per) for k in range(total // per ** 3)]}
    return grid


def parallel(total: int) -> None:
    import distributed

    grid = sweep_grid(total)
    count = math.prod(len(v) for v in grid.values())
    print(f"2. {count:,} configs (1F1B, p = 8, m = 32, a grid over f, b, w, comm), configs/s:")
    rates = {}
    for workers in (1, 2):
        with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                      dashboard_address=None, silence_logs=40) as cluster, \
                distributed.Client(cluster) as client:
            client.run(lambda: ppviz.sweep({"devices": [8], "microbatches": [32]}, n_jobs=1, progress=False))
            t0 = time.perf_counter()
            df = ppviz.sweep(grid, client=client, progress=False)
            rates["dask", workers] = len(df) / (time.perf_counter() - t0)
        print(f"   Dask LocalCluster, {workers} worker{'s' if workers > 1 else ''}: {rates['dask', workers]:8,.0f}/s")
    print(f"   two workers / one: x{rates['dask', 2] / rates['dask', 1]:.2f}")
    for jobs in (1, 2):
        t0 = time.perf_counter()
        df = ppviz.sweep(grid, n_jobs=jobs, progress=False)
        rates["joblib", jobs] = len(df) / (time.perf_counter() - t0)
        print(f"   joblib (loky), n_jobs={jobs}: {rates['joblib', jobs]:8,.0f}/s")
    print(f"   two processes / one: x{rates['joblib', 2] / rates['joblib', 1]:.2f}")


def search_time(repeat: int) -> None:
    print("3. ppviz.search at p = 8, m = 32 (f = 1, b = 1.2, w = 0.8, comm = 0.1), seconds per answer:")
    cfg = ppviz.Config(devices=8, microbatches=32, f=1.0, b=1.2, w=0.8, comm=0.1)
    ppviz.search(cfg, 8)  # builds (and caches) the library's programs once
    for limit in (3, 4, 6, 8, 15):
        best = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            found = ppviz.search(cfg, limit)
            best = min(best, time.perf_counter() - t0)
        print(f"   max_memory={limit:>2}: {best:.3f} s   makespan {found.makespan:.5g} "
              f"(best candidate {found.best_candidate.name}: {found.best_candidate.makespan:.5g})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=100_000, help="configs in the parallel sweep")
    parser.add_argument("--quick", action="store_true", help="10^4 configs, fewer repeats")
    args = parser.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{os.cpu_count()} cores, load average {load:.2f} at the start")
    one_core(500 if args.quick else 2000)
    parallel(10_000 if args.quick else args.configs)
    search_time(1 if args.quick else 3)


if __name__ == "__main__":
    main()
