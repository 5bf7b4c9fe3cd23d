"""Vocabulary Parallelism on a large vocabulary: the step of 1F1B, the layer-balanced 1F1B (the
paper's "redistribution" baseline), vocab-1, vocab-2 and the interlaced pipeline, from the
model description alone.

    python benchmarks/vocab_parallel.py
    python benchmarks/vocab_parallel.py --model llama-3-8b --devices 4 8 --microbatches 4

Printed per (p, m): each schedule's step time, bubble, the busiest device's work over the
idlest's, the S and T times per microbatch, and the largest device memory (activations and
static), all from ``Config.from_model`` on the hardware preset; the last columns compare with
1F1B. Gemma 2 9B (256k vocabulary) on H100s is the default: its output layer costs the last
stage more than its share of the transformer layers.
"""

from __future__ import annotations

import argparse

import ppviz
from ppviz import Config, Hardware, Transformer
from ppviz.core.numbers import number, share, size

SCHEDULES = (("1f1b", {}), ("1f1b balanced", {"layout": "balanced"}), ("vocab-1", {}), ("vocab-2", {}),
             ("interlaced", {}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gemma-2-9b")
    parser.add_argument("--hardware", default="h100-sxm")
    parser.add_argument("--devices", type=int, nargs="+", default=[6, 7])
    parser.add_argument("--microbatches", type=int, default=4, help="microbatches per device (m = this × p)")
    args = parser.parse_args()
    model, hardware = Transformer.preset(args.model), Hardware.preset(args.hardware)
    print(f"{args.model} (vocabulary {model.vocab:,}) on {args.hardware}")
    for p in args.devices:
        m = args.microbatches * p
        print(f"\np = {p}, m = {m}")
        print(f"{'schedule':15} {'step':>10} {'bubble':>7} {'busy max/min':>12} {'s':>8} {'t':>8} {'memory':>9} "
              f"{'vs 1f1b':>8}")
        base = None
        for name, options in SCHEDULES:
            config = Config.from_model(model, hardware, schedule=name.split()[0], devices=p, microbatches=m,
                                       **options)
            res = ppviz.simulate(config)
            memory = float((res.peak_activation + res.static_memory).max()) * config.activation_bytes
            base = res.step_time if base is None else base
            vocab = name.startswith(("vocab", "interlaced"))
            print(f"{name:15} {number(res.step_time, 'ms'):>10} {share(res.bubble_fraction):>7} "
                  f"{res.busy.max() / res.busy.min():>12.3f} {number(config.s, 'ms') if vocab else '':>8} "
                  f"{number(config.t, 'ms') if vocab else '':>8} {size(memory):>9} "
                  f"{share(res.step_time / base - 1):>8}")


if __name__ == "__main__":
    main()
