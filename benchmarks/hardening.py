"""The slow paths of issue 11, item 11, against their targets: V-Half/V-Min build, the automatic
engine choice, the Chrome trace of 10^6 ops, parsing action strings, static memory; and those
found since: a wide pipeline (many devices, few microbatches), ZB-V with few microbatches, and
the slowest builders at the budget's edge (V-Half, BitPipe, Chimera, Hanayo, ZB-V, ZB-H1,
interleaved ZB, 1F1B-overlap, DualPipe-V with few devices and many microbatches).

Run: python benchmarks/hardening.py [--before PATH] [--only NAME ...] [--repeat N]

Each measurement runs in a fresh process (so the builders' caches are cold and the memory
high-water mark is its own) and prints wall and CPU seconds; CPU time is the figure to trust on
a shared, loaded machine (the load average is printed). Each runs ``--repeat`` times (5 by
default): the run printed is the median one, with the range of all of them beside it, and the
target is checked against the median (a virtual machine's speed drifts by tens of per cent from
one run to the next, and not alike for every kind of work). ``--before PATH`` runs the same
measurements on another checkout of ppviz (e.g. one of main from before these changes), taking
turns with this one run by run, and prints before → after.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _high_water_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _reset_high_water() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass


def _timed(fn):
    _reset_high_water()
    before = _high_water_mb()
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
            "memory_mb": _high_water_mb() - before, "value": value}


def _build(schedule: str, devices: int, microbatches: int):
    """The measurement of building one schedule at one size."""
    def measure():
        import ppviz

        return _timed(lambda: len(ppviz.Config(schedule=schedule, devices=devices, microbatches=microbatches).build()))

    return measure


def measure_engine():
    import ppviz
    from ppviz.core.engine import execute, op_costs

    cfg = ppviz.Config(schedule="looped-bfs", devices=1024, microbatches=1, stages_per_device=200)
    program = cfg.build()
    cost = op_costs(program, cfg)
    return _timed(lambda: len(execute(program, cost, cfg.comm)[0]))


def measure_chrome_trace():
    import tempfile

    import ppviz

    res = ppviz.simulate(ppviz.Config(schedule="1f1b", devices=8, microbatches=62_500))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        out = _timed(lambda: res.to_chrome_trace(path))
        out["value"] = f"{len(res.ops):,} ops, {os.path.getsize(path) / 1e6:.0f} MB of JSON"
    return out


def measure_parse():
    import ppviz

    program = ppviz.Config(schedule="1f1b", devices=64, microbatches=8192).build()
    actions = program.to_actions()
    out = _timed(lambda: len(ppviz.Program.from_actions(actions)))
    out["rate"] = out["value"] / out["cpu"]
    return out


def measure_parse_text():
    import ppviz

    text = ppviz.Config(schedule="interleaved-1f1b", devices=32, microbatches=4096, stages_per_device=4).build().to_text()
    out = _timed(lambda: len(ppviz.Program.from_text(text)))
    out["rate"] = out["value"] / out["cpu"]
    return out


def measure_static_memory():
    import ppviz
    from ppviz.core.memory import static_memory

    cfg = ppviz.Config(schedule="interleaved-1f1b", devices=1024, microbatches=512, stages_per_device=2,
                       params=1.0)
    program = cfg.build()
    bare = ppviz.Program(program.kind, program.stage, program.microbatch, program.pair, program.offsets,
                         stages=program.stages, microbatches=program.microbatches)  # no placement: stages held
    return _timed(lambda: float(static_memory(program, cfg).sum() + static_memory(bare, cfg).sum()))


def measure_wide():
    import ppviz

    cfg = ppviz.Config(schedule="1f1b", devices=100_000, microbatches=16)
    return _timed(lambda: len(ppviz.simulate(cfg).ops))


# name: (what, measurement, target in seconds of wall time on an idle 2-core machine, or ops/s)
CASES = {
    "v-half": ("V-Half build, p = m = 512 (1.57M ops)", _build("v-half", 512, 512), ("wall", 2.0)),
    "v-min": ("V-Min build, p = m = 512 (1.57M ops)", _build("v-min", 512, 512), ("wall", 2.0)),
    "engine": ("engine='auto', looped-bfs p = 1024, m = 1, v = 200 (409,600 ops)", measure_engine, ("wall", 0.5)),
    "chrome-trace": ("Chrome trace of 10^6 ops (1F1B p = 8, m = 62,500)", measure_chrome_trace, ("wall", 2.0)),
    "parse": ("Program.from_actions, 1,048,576 action strings", measure_parse, ("rate", 1e6)),
    "parse-text": ("Program.from_text, 1,048,576 actions", measure_parse_text, ("rate", 1e6)),
    "wide": ("simulate a wide pipeline, 1F1B p = 100,000, m = 16 (3.2M ops)", measure_wide, ("wall", None)),
    "zb-v-few": ("ZB-V build with m < 2p − 1, p = 2,000, m = 8 (96,000 ops)", _build("zb-v", 2000, 8),
                 ("wall", None)),
    "static-memory": ("static_memory, p = 1024, v = 2, m = 512 (with and without a placement)", measure_static_memory,
                      ("wall", None)),
    # the slowest builders at the size budget's edge, few devices and many microbatches
    "v-half-many": ("V-Half build, p = 8, m = 83,333 (4.0M ops)", _build("v-half", 8, 83_333), ("wall", None)),
    "bitpipe-edge": ("BitPipe build, p = 8, m = 120,000 (3.84M ops)", _build("bitpipe", 8, 120_000), ("wall", None)),
    "chimera-edge": ("Chimera build, p = 8, m = 240,000 (3.84M ops)", _build("chimera", 8, 240_000), ("wall", None)),
    "hanayo-edge": ("Hanayo build, p = 8, m = 125,000 (4.0M ops)", _build("hanayo", 8, 125_000), ("wall", None)),
    # builders that lay out every op in Python, spliced from few microbatches since
    "zb-v-edge": ("ZB-V build, p = 8, m = 83,328 (4.0M ops)", _build("zb-v", 8, 83_328), ("wall", None)),
    "zb-h1-edge": ("ZB-H1 build, p = 8, m = 166,666 (4.0M ops)", _build("zb-h1", 8, 166_666), ("wall", None)),
    "interleaved-zb-edge": ("interleaved ZB build, p = 8, m = 83,328 (4.0M ops)", _build("interleaved-zb", 8, 83_328),
                            ("wall", None)),
    "overlap-edge": ("1F1B-overlap build, p = 8, m = 250,000 (4.0M ops)", _build("1f1b-overlap", 8, 250_000),
                     ("wall", None)),
    "dualpipe-v-edge": ("DualPipe-V build, p = 8, m = 83,328 (4.0M ops)", _build("dualpipe-v", 8, 83_328),
                        ("wall", None)),
}


def run(name: str, checkout: str, timeout: float) -> dict | None:
    """One measurement in a fresh process importing ppviz from ``checkout``."""
    env = {**os.environ, "PYTHONPATH": checkout}
    code = (f"import json, sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); "
            f"import hardening, ppviz; assert ppviz.__file__.startswith({checkout!r}); "
            f"print(json.dumps(hardening.CASES[{name!r}][1]()))")
    try:
        out = subprocess.run([sys.executable, "-c", code], env=env, cwd=checkout, capture_output=True, text=True,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"timeout": timeout}
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def median_runs(name: str, checkouts: list[str], timeout: float, repeat: int) -> list[dict | None]:
    """Per checkout, the median of ``repeat`` runs (by CPU time, or by rate), with the range of all
    of them. The checkouts take turns, run by run, so that a drift of the machine's pace falls on
    all of them alike."""
    runs: list[list[dict]] = [[] for _ in checkouts]
    failed: list[dict | None] = [None for _ in checkouts]
    for _ in range(repeat):
        for i, checkout in enumerate(checkouts):
            if failed[i] is not None:
                continue  # a failure or a timeout is the answer; repeating it would only take longer
            result = run(name, checkout, timeout)
            if result is None or "wall" not in result:
                failed[i] = result or {"error": "no result"}
            else:
                runs[i].append(result)
    out: list[dict | None] = []
    for done, failure in zip(runs, failed):
        if failure is not None:
            out.append(failure)
            continue
        key = "rate" if "rate" in done[0] else "cpu"
        done.sort(key=lambda r: r[key])
        middle = dict(done[len(done) // 2])
        middle["range"] = (key, done[0][key], done[-1][key], len(done))
        out.append(middle)
    return out


def show(result: dict | None) -> str:
    if result is None:
        return "-"
    if "timeout" in result:
        return f"> {result['timeout']:.0f} s (stopped)"
    if "error" in result:
        return f"failed: {result['error'][:60]}"
    text = f"{result['wall']:.2f} s wall, {result['cpu']:.2f} s CPU, +{result['memory_mb']:.0f} MB"
    if "rate" in result:
        text += f", {result['rate']:,.0f} ops/s (CPU)"
    if "range" in result and result["range"][3] > 1:
        key, low, high, n = result["range"]
        text += (f"; median of {n}, {key} {low:,.0f}–{high:,.0f} ops/s" if key == "rate"
                 else f"; median of {n}, CPU {low:.2f}–{high:.2f} s")
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="PATH", help="another ppviz checkout to measure too (before), taking turns run by run")
    parser.add_argument("--only", nargs="*", choices=list(CASES), help="run only these")
    parser.add_argument("--timeout", type=float, default=900, help="seconds allowed per measurement")
    parser.add_argument("--repeat", type=int, default=5, help="fresh processes per measurement (the median is shown)")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error(f"--repeat must be 1 or more, not {args.repeat}")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores "
          f"(figures are wall and CPU seconds; under load trust CPU)")
    for name in args.only or CASES:
        what, _, (unit, target) = CASES[name]
        if args.before:
            before, after = median_runs(name, [os.path.abspath(args.before), ROOT], args.timeout, args.repeat)
        else:
            before, after = None, median_runs(name, [ROOT], args.timeout, args.repeat)[0]
        print(f"\n{what}")
        if args.before:
            print(f"  before  {show(before)}")
        print(f"  after   {show(after)}")
        if target is not None and after and "wall" in after:
            value = after["rate"] if unit == "rate" else after["cpu"]
            met = value >= target if unit == "rate" else value <= target
            goal = f">= {target:,.0f} ops/s" if unit == "rate" else f"<= {target} s"
            print(f"  target  {goal} on an idle machine: {'met' if met else 'NOT met'} by the median run here")


if __name__ == "__main__":
    main()
