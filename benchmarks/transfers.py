"""Simulation throughput with communication as transfers, against the bare-latency model.
(Not named comm.py: a script's folder comes first on sys.path, and benchmarks/comm.py would hide
the `comm` package that ipywidgets needs from benchmarks/widget_loop.py.)

Run: python benchmarks/transfers.py [--quick]
For each size, ppviz.simulate end to end (build, validate, lowering, engine, result) with a bare
``comm`` latency and with transfers (blocking and overlapped P2P) on a DGX H100 topology across
nodes, the best CPU time of three; compute ops per second and the ratio to the bare run. Which engine ran is
shown: the lean lockstep for actions of one op (blocking P2P cannot queue on a link, overlapped
P2P tracks the links' queues) or the general one.
Target (issue 12): with transfers, interleaved p = 64, v = 4, m = 2048 simulates at no less than
half the bare run's ops/s. The machine's load is printed: measure on an idle machine.
"""

from __future__ import annotations

import argparse
import os
import time

import ppviz
from ppviz.core import comm_engine

SIZES = [
    ("1f1b", 8, 1, 64),
    ("interleaved-1f1b", 16, 2, 256),
    ("interleaved-1f1b", 32, 4, 512),
    ("interleaved-1f1b", 64, 4, 2048),
]
#: one microbatch's activation between two stages: micro-batch 1 × sequence 4096 × hidden 8192 × bf16
ACTIVATION_BYTES = 1 * 4096 * 8192 * 2


def best_of(fn, repeat):
    """Best CPU time of ``repeat`` calls (on a loaded machine wall time mostly measures the other
    processes), and the last value."""
    best, value = float("inf"), None
    for _ in range(repeat):
        t0 = time.process_time()
        value = fn()
        best = min(best, time.process_time() - t0)
    return best, value


def engine_used(cfg) -> str:
    """Which engine a transfer run takes: the lean one for actions of one op, the general one."""
    used = []
    original = comm_engine._single_input

    def lean(graph):
        used.append("lean, no queueing possible" if graph.blocking else "lean, link queues")
        return original(graph)

    comm_engine._single_input = lean
    try:
        ppviz.simulate(cfg)
    finally:
        comm_engine._single_input = original
    return used[0] if used else "general"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only the smaller sizes, one repeat")
    args = parser.parse_args()
    sizes = SIZES[:2] if args.quick else SIZES
    repeat = 1 if args.quick else 3
    print(f"load average (1, 5, 15 min): {', '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    print(f"{'schedule':17} {'p':>3} {'v':>2} {'m':>5} {'ops':>9} {'run':>11} {'transfers':>9} {'cpu':>8} "
          f"{'ops/s':>11} {'vs bare':>8}  engine")
    for name, p, v, m in sizes:
        bare = ppviz.Config(schedule=name, devices=p, microbatches=m, stages_per_device=v, f=1.0, b=1.0, w=1.0,
                            comm=0.0118, time_unit="ms")
        t_bare, res = best_of(lambda: ppviz.simulate(bare), repeat)
        n = len(res.program)
        print(f"{name:17} {p:>3} {v:>2} {m:>5} {n:>9,} {'bare comm':>11} {'':>9} {t_bare:>7.3f}s {n / t_bare:>11,.0f}")
        for p2p in ("blocking", "overlapped"):
            cfg = bare.replace(comm=0.0, topology="dgx-h100", comm_bytes=ACTIVATION_BYTES, p2p=p2p)
            t, res = best_of(lambda: ppviz.simulate(cfg), repeat)
            print(f"{'':17} {'':>3} {'':>2} {'':>5} {'':>9} {p2p:>11} {len(res.transfers):>9,} {t:>7.3f}s "
                  f"{n / t:>11,.0f} {t_bare / t:>8.2f}  {engine_used(cfg)}")
    print("cpu = CPU time of ppviz.simulate end to end, best of the repeats; vs bare = bare time / transfer time "
          "(the target: >= 0.5 at "
          "p=64 v=4 m=2048); topology dgx-h100 (8 GPUs per node), f=b=w=1 ms, "
          f"{ACTIVATION_BYTES / 2**20:.0f} MiB per transfer")


if __name__ == "__main__":
    main()
