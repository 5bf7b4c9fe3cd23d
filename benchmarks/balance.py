"""The layer balancer against Megatron's even split, on a sweep of models, schedules and sizes.

Run: python benchmarks/balance.py [--quick]
Prints the sweep's size, how often and by how much the balanced layout's simulated step beats
the even split's (and the largest gain, with its configuration), how often the balancer picked
a layout that fits device memory where the even split does not, how the cost model's own first
choice would have done without the final choice by simulation, and the time per balanced config.
"""

from __future__ import annotations

import argparse
import itertools
import time

import ppviz
from ppviz import Config, Hardware, Transformer, simulate
from ppviz.model.costs import Training, layout_candidates

SCHEDULES = [("1f1b", 1), ("interleaved-1f1b", 2), ("zb-h1", 1), ("zb-v", 2), ("dualpipe-v", 2), ("gpipe", 1),
             ("dualpipe", 1)]


def models(quick: bool) -> list[Transformer]:
    grid = itertools.product([8, 16, 32] if quick else [8, 16, 24, 32, 48], [1024, 4096] if quick else
                             [1024, 2048, 4096, 8192], [32000, 128256] if quick else [32000, 128256, 256000],
                             [2048, 8192])
    return [Transformer(layers=layers, hidden=hidden, heads=16, vocab=vocab, seq_len=seq, gated_mlp=True,
                        ffn_hidden=hidden * 7 // 2) for layers, hidden, vocab, seq in grid]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller grid")
    args = parser.parse_args()
    hardware = Hardware.preset("h100-sxm")
    runs = rescued = better = proxy_losses = 0
    largest, worst_proxy, seconds = (0.0, None), 0.0, 0.0
    for model in models(args.quick):
        for (schedule, v), p in itertools.product(SCHEDULES, (2, 4, 8)):
            stages = p if schedule == "dualpipe" else p * v
            if model.layers % stages:
                continue
            for m in (2 * p, 4 * p):
                sizes = dict(schedule=schedule, devices=p, microbatches=m, stages_per_device=v)
                try:
                    even_cfg = Config.from_model(model, hardware, **sizes)
                except ppviz.ScheduleConstraintError:
                    continue
                t0 = time.perf_counter()
                balanced = simulate(Config.from_model(model, hardware, layout="balanced", **sizes))
                seconds += time.perf_counter() - t0
                even = simulate(even_cfg)
                first = layout_candidates(model, hardware, even_cfg, Training())[0]
                proxy = simulate(Config.from_model(model, hardware, layout=first, **sizes))
                runs += 1
                if not proxy.out_of_memory and not even.out_of_memory and proxy.makespan > even.makespan * (1 + 1e-12):
                    proxy_losses += 1
                    worst_proxy = max(worst_proxy, proxy.makespan / even.makespan - 1)
                if even.out_of_memory and not balanced.out_of_memory:
                    rescued += 1
                    continue
                assert balanced.makespan <= even.makespan * (1 + 1e-12), (model, sizes)
                gain = 1 - balanced.makespan / even.makespan
                better += gain > 1e-9
                if gain > largest[0]:
                    largest = (gain, f"{schedule} p={p} v={v} m={m}, {model.layers} layers, h={model.hidden}, "
                                     f"V={model.vocab}, s={model.seq_len}")
    print(f"sweep: {runs} configs ({len(models(args.quick))} models × schedules × p × m, layers divisible by stages)")
    print(f"balanced faster than the even split: {better} of {runs}; never slower")
    print(f"largest gain: {largest[0]:.1%} ({largest[1]})")
    print(f"fits where the even split does not (may be slower): {rescued}")
    print(f"the cost model's first candidate alone (where both fit): slower than the even "
          f"split on {proxy_losses} configs, by up to {worst_proxy:.1%} (hence the final choice by simulation)")
    print(f"time per balanced config: {seconds / runs * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
