"""The timing kernel (ppviz.core.kernel, the reference model) against the fast paths that equal it.

Run: python benchmarks/kernel.py [--quick]
Per size, the best CPU time of three of each engine on the same program and costs, in µs per op
(per action for transfers), and the kernel's time over each fast path's: compute-only (the
events loop and its plain form, lockstep, relaxation, metrics.Plan.times), with a bare latency
(events, lockstep), with transfers (comm_engine: events, the lean and the general lockstep), with
offload (offload's events loop), and the step's tails (timed by the kernel alone). A fast path
stays only where it is faster than the kernel (ARCHITECTURE.md, "Model of time and memory").
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from ppviz import Config, Link, Offload, Step
from ppviz.core import comm_engine, engine, kernel, metrics, offload, relaxation, step
from ppviz.core.dependencies import dependencies, latencies
from ppviz.core.lowering import add_comms
from ppviz.core.topology import durations
from ppviz.core.transfers import plan as transfer_plan

SIZES = [("1f1b", 8, 1, 64), ("interleaved-1f1b", 16, 2, 256), ("zb-h1", 32, 1, 512)]
LARGE = [("interleaved-1f1b", 64, 4, 512)]


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


def row(label: str, n: int, kernel_s: float, paths: dict[str, float]) -> None:
    cells = "  ".join(f"{name} {s / n * 1e6:6.2f} µs ({kernel_s / s:4.1f}x)" for name, s in paths.items())
    print(f"  {label:<12} kernel {kernel_s / n * 1e6:6.2f} µs/op   {cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only the smaller sizes")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}; figures: the kernel's µs per op, then each fast path's "
          "(the kernel's time over its)")
    repeat = 3
    for name, p, v, m in SIZES + ([] if args.quick else LARGE):
        cfg = Config(schedule=name, devices=p, microbatches=m, stages_per_device=v, f=1.0, b=2.0, w=1.0)
        program = cfg.build()
        n = len(program)
        print(f"{name} p = {p}, v = {v}, m = {m}: {n:,} ops")
        cost = engine.op_costs(program, cfg)
        dep = dependencies(program)
        zero = np.zeros(n)
        plan = metrics.Plan(program)
        row("compute", n, best(lambda: kernel.compute(program, cost, 0.0, dep), repeat), {
            "events": best(lambda: engine._events(program, dep, zero, cost), repeat),
            "lockstep": best(lambda: engine._lockstep(program, dep, zero, cost), repeat),
            "relaxation": best(lambda: relaxation.times(program, dep, cost), repeat),
            "Plan.times": best(lambda: plan.times(cost, 0.0), repeat)})
        cross = latencies(program, dep, 0.1)
        row("comm 0.1", n, best(lambda: kernel.compute(program, cost, 0.1, dep), repeat), {
            "events": best(lambda: engine._events(program, dep, cross, cost), repeat),
            "lockstep": best(lambda: engine._lockstep(program, dep, cross, cost), repeat)})
        for mode in ("blocking", "overlapped"):
            tcfg = cfg.replace(topology=Link(0.1, bandwidth=4.0), comm_bytes=1.0, p2p=mode)
            lowered = add_comms(program, defer=mode == "blocking", dep=dep)
            tplan = transfer_plan(lowered, receives=mode == "blocking")
            duration = durations(tcfg.topology, None, tplan.src, tplan.dst, 1.0)
            graph = comm_engine.Graph(lowered, cost, tplan, duration, dep, mode == "blocking")
            paths = {"events": best(lambda: comm_engine._events(graph), repeat)}
            if graph.single_input():
                paths["lean lockstep"] = best(lambda: comm_engine._single_input(graph), repeat)
            if graph.lockstep_ready():
                paths["lockstep"] = best(lambda: comm_engine._lockstep(graph), repeat)
            row(mode, graph.slots + graph.T, best(lambda: comm_engine._kernel(graph, None), repeat), paths)
        ocfg = cfg.replace(offload=Offload(0.5, link=Link(0.1, bandwidth=2.0)))
        row("offload", n, best(lambda: offload.run(program, ocfg, cost, 0.0, "kernel"), repeat),
            {"events": best(lambda: offload.run(program, ocfg, cost, 0.0, "events"), repeat)})
        start, end, _ = engine.execute(program, cost, 0.0)
        S = program.stages
        tail = Step(reduce=(2.0,) * S, optimizer=(1.0,) * S, gather=(0.5,) * S)
        seconds = best(lambda: step.tails(program, start, end, tail), repeat)
        print(f"  {'step tails':<12} kernel {seconds * 1e3:.2f} ms for the run ({S} stages)")


if __name__ == "__main__":
    main()
