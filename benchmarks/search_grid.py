"""ppviz.search on a grid of (p, m, costs, comm, memory limit): how often and by how much it beats
the best candidate, its distance to the optimum (exact solver, small instances) and to the
lower bound, and its time.

Run: python benchmarks/search_grid.py [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time

import ppviz
from ppviz.analysis.exact import solve

COSTS = [(1.0, 1.0, 1.0), (1.0, 2.0, 0.5), (2.0, 1.0, 1.5), (1.0, 1.5, 2.0), (1.0, 1.2, 0.8)]


def grid(quick: bool):
    sizes = [(2, 4), (3, 6), (4, 8), (4, 16), (6, 12), (8, 16), (8, 32)]
    if quick:
        sizes = sizes[:4]
    for (p, m), costs, comm in itertools.product(sizes, COSTS, (0.0, 0.1, 0.5)):
        for limit in sorted({1.0, max(1.0, p / 3), p / 2, float(p), p + 2.0, 2.0 * p - 1}):
            yield p, m, costs, comm, limit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the smaller sizes only")
    args = parser.parse_args()
    rows = []
    t0 = time.perf_counter()
    for p, m, (f, b, w), comm, limit in grid(args.quick):
        cfg = ppviz.Config(devices=p, microbatches=m, f=f, b=b, w=w, comm=comm)
        start = time.perf_counter()
        found = ppviz.search(cfg, limit)
        rows.append((p, m, limit, found.makespan, found.best_candidate.makespan, found.best_candidate.name,
                     time.perf_counter() - start))
    total = time.perf_counter() - t0
    print(f"{len(rows)} searches (p, m in {sorted({(r[0], r[1]) for r in rows})}; {len(COSTS)} cost triples; "
          f"comm 0, 0.1, 0.5; limits 1, p/3, p/2, p, p+2, 2p-1) in {total:.1f} s")
    for what, keep in (("all limits", lambda r: True), ("limits below p", lambda r: r[2] < r[0]),
                       ("limits p and above", lambda r: r[2] >= r[0])):
        part = [r for r in rows if keep(r)]
        better = [(cand - got) / cand for *_, got, cand, _, _ in part if got < cand - 1e-9]
        print(f"  {what}: better than the best candidate in {len(better)} of {len(part)} "
              f"({len(better) / len(part):.0%})" + (f", by {statistics.mean(better):.2%} on average, "
                                                     f"{max(better):.2%} at most" if better else ""))
    print(f"  never slower than the best candidate: {all(got <= cand + 1e-9 for *_, got, cand, _, _ in rows)}")
    winners = {}
    for *_, name, _ in rows:
        family = name.split(" (")[0].split(",")[0]
        winners[family] = winners.get(family, 0) + 1
    print("  best candidate by family:", ", ".join(f"{k} {v}" for k, v in sorted(winners.items(), key=lambda kv: -kv[1])))
    slow = max(rows, key=lambda r: r[-1])
    print(f"  slowest search: {slow[-1]:.2f} s at p={slow[0]}, m={slow[1]}, limit {slow[2]:g}")

    print("exact solver (HiGHS), one stage per device, small instances:")
    gaps = []
    for (p, m), (f, b, w), comm in itertools.product([(2, 3), (2, 4), (3, 3), (3, 4)], COSTS[:3], (0.0, 0.5)):
        for limit in sorted({1.5, float(p), 2.0 * p - 1}):
            cfg = ppviz.Config(devices=p, microbatches=m, f=f, b=b, w=w, comm=comm)
            exact = solve(cfg, limit, time_limit=60)
            found = ppviz.search(cfg, limit, stages_per_device=1)
            gaps.append(((found.makespan - exact.makespan) / exact.makespan, exact.optimal,
                         (exact.makespan - found.lower_bound) / exact.makespan if found.lower_bound else None))
    proved = sum(1 for _, optimal, _ in gaps if optimal)
    optimal_found = sum(1 for gap, _, _ in gaps if gap <= 1e-9)
    print(f"  {len(gaps)} instances, {proved} proved optimal; search found the optimum in {optimal_found}, "
          f"gap {statistics.mean(g for g, _, _ in gaps):.2%} on average, {max(g for g, _, _ in gaps):.2%} at most")
    bound_gaps = [b for _, _, b in gaps if b is not None]
    print(f"  the lower bound is {statistics.mean(bound_gaps):.1%} below the optimum on average "
          f"({max(bound_gaps):.1%} at most)")


if __name__ == "__main__":
    main()
