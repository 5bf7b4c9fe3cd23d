"""Real, profiled ``torch.distributed.pipelining`` runs on the CPU, for the measured-run tests.

``run_pipeline(plans, ranks, out_dir)`` starts ``ranks`` worker processes (this file run as a
script) that join one gloo process group on 127.0.0.1 through a file store (no port to pick),
then run every plan in turn — one schedule on one model — and profile it with
``torch.profiler``, writing one Chrome trace per rank and plan: ``<out_dir>/<name>/rank<r>.json``.
The first step of each plan warms up (shape inference, allocator); the next ``steps`` are
recorded, one profiler step each.

Two kinds of model, both with deliberately unequal stages:

A model is a list of ``layers``, cut into equal shares per stage (so the same model runs with
one or two stages per rank). Two kinds, both with deliberately unequal layers:

* ``"emulated"``: each layer is an ``EmulatedLayer`` ``(f, b, w)`` that sleeps on a tiny tensor:
  ``f`` milliseconds in forward, ``b`` in the input-gradient part of backward and ``w`` in the
  weight-gradient part (a separate autograd node, so torch's zero-bubble I/W split runs them in
  different actions). Sleeping uses no CPU, so these runs are stable on a loaded machine.
* ``"matmul"``: layer ``k`` is ``layers[k]`` real ``Linear`` + ``ReLU`` blocks, which contend
  for the cores like a real model does.

Workers run with one thread each and a hard timeout; the parent kills every worker's process
group on failure, so a hung collective never outlives the test.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
WIDTH = 8  # the emulated model's tensors: tiny, so the sleeps are the time
MATMUL_WIDTH = 512

#: the emulated model: 8 layers, (f, b, w) milliseconds each; on 4 ranks the stages cost
#: (10, 10, 5), (15, 15, 7.5), (12.5, 12.5, 5), (20, 20, 10) — the last one twice the first.
#: Long enough that a loaded host's scheduling delays (a few ms) stay a small share.
EMULATED_LAYERS = [(5, 5, 2.5), (5, 5, 2.5), (7.5, 7.5, 3.75), (7.5, 7.5, 3.75), (6.25, 6.25, 2.5),
                   (6.25, 6.25, 2.5), (10, 10, 5), (10, 10, 5)]
#: the real-compute model: 8 layers of that many Linear(512, 512) + ReLU blocks (microbatches of 128 rows)
MATMUL_LAYERS = [1, 1, 2, 2, 1, 1, 2, 2]

#: what a training step adds to the emulated model's ops, for the calibration runs: each step
#: sleeps ``setup_ms`` before the schedule's step (after zero_grad) and ``optimizer_ms`` after it
#: (before the optimizer's own step), and each layer's first forward and first input gradient
#: of a step take ``warmup_ms`` longer (a stage of two layers: 8 ms more on its first F, 6 ms
#: on its first B). Tens of milliseconds each, so that a loaded host's ~1 ms delays stay small.
STEP_COSTS = {"setup_ms": 15.0, "optimizer_ms": 25.0, "warmup_ms": [4.0, 3.0]}
#: the calibration runs' model: EMULATED_LAYERS' unequal stages (on 4 ranks F = 8, 12, 10, 16 ms)
#: with a transformer layer's shares, I = W = F (the zero-bubble paper's, arXiv 2401.10241 §2, and
#: what ppviz.calibrate assumes of a full backward by default), so that a split schedule predicted
#: from a run with full backwards tests what the calibration separates, not that assumption
CALIBRATION_LAYERS = [(0.8 * f,) * 3 for f, _, _ in EMULATED_LAYERS]
#: the calibration runs: the emulated model with STEP_COSTS, one schedule at one microbatch
#: count each — name: (torch schedule, microbatches, stages per rank, placement)
CALIBRATION_RUNS = {
    "1f1b_m4": ("1F1B", 4, 1, None), "1f1b_m8": ("1F1B", 8, 1, None), "1f1b_m16": ("1F1B", 16, 1, None),
    "gpipe_m4": ("GPipe", 4, 1, None), "gpipe_m8": ("GPipe", 8, 1, None),
    "interleaved_m4": ("Interleaved1F1B", 4, 2, None), "interleaved_m8": ("Interleaved1F1B", 8, 2, None),
    "zbh1_m8": ("InterleavedZeroBubble", 8, 1, None),  # one stage per rank: ZB-H1
    "zbv_m8": ("ZBVZeroBubble", 8, 2, "v"), "interleaved_zb_m8": ("InterleavedZeroBubble", 8, 2, None),
}


def calibration_plans(names=None, steps: int = 5) -> list[dict]:
    """The plans of :data:`CALIBRATION_RUNS` (all, or those named), ``steps`` profiled steps each."""
    plans = []
    for name, (schedule, m, v, placement) in CALIBRATION_RUNS.items():
        if names is not None and name not in names:
            continue
        plan = {"name": name, "schedule": schedule, "microbatches": m, "stages_per_rank": v, "model": "emulated",
                "layers": CALIBRATION_LAYERS, "steps": steps, "annotate": True, **STEP_COSTS}
        if placement:
            plan["placement"] = placement
        plans.append(plan)
    return plans


#: a calibration run whose median step is this much longer than its fastest was disturbed by the
#: machine (another job took the cores for a while; a busy host only ever adds time): it is
#: measured again rather than set against the others. Undisturbed, the median step is within
#: 2 % of the fastest (ten runs on two idle cores)
CALIBRATION_SPREAD = 0.03
#: every calibration run computes the same model, so the forward pass it fits (each stage's median
#: F, summed) is the same but for the machine: a run whose pass is this much longer or shorter than
#: the median of every measurement was made while the machine ran at another speed, and is
#: measured again.
#: Undisturbed, the ten runs agree within 2.5 % (the split schedules' forwards are the slowest)
CALIBRATION_DRIFT = 0.03


def record_calibration_runs(out_dir, names=None, *, again: int = 3, timeout: float = 300.0) -> dict[str, list[Path]]:
    """Run the calibration plans (all, or those named) on 4 ranks into ``out_dir``; runs whose
    median step is more than :data:`CALIBRATION_SPREAD` above their fastest, or whose forward pass
    is off the others' by more than :data:`CALIBRATION_DRIFT`, are measured again, at most
    ``again`` times, and the steadiest measurement of each is kept. Returns each run's trace
    files, by name."""
    import numpy as np

    import ppviz

    plans = calibration_plans(names)
    found: dict[str, list] = {}  # name: every measurement, as (files, step spread, forward pass)

    def record(batch, where):
        for name, files in run_pipeline(batch, 4, Path(out_dir) / where, timeout=timeout).items():
            m = ppviz.load_trace(files)
            found.setdefault(name, []).append((files, float(np.median(m.steps.step_time) / m.steps.step_time.min() - 1),
                                               float(np.nansum(ppviz.calibrate(m).stages.median[:, 0]))))

    def badness(name, usual):
        return [max(spread / CALIBRATION_SPREAD, abs(forward / usual - 1) / CALIBRATION_DRIFT)
                for _, spread, forward in found[name]]

    record(plans, "runs")
    for k in range(again + 1):
        usual = float(np.median([forward for runs in found.values() for _, _, forward in runs]))
        redo = [plan for plan in plans if min(badness(plan["name"], usual)) > 1]
        if not redo or k == again:
            break
        print(f"\nmeasuring again (the median step more than {CALIBRATION_SPREAD:.0%} above the fastest, or the "
              f"forward pass more than {CALIBRATION_DRIFT:.1%} off the median of every measurement): "
              f"{', '.join(plan['name'] for plan in redo)}")
        record(redo, f"again{k}")
    return {plan["name"]: found[plan["name"]][int(np.argmin(badness(plan["name"], usual)))][0] for plan in plans}


def run_pipeline(plans: list[dict], ranks: int, out_dir, *, timeout: float = 120.0) -> dict[str, list[Path]]:
    """Run ``plans`` on ``ranks`` processes; returns each plan's trace files, by plan name."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plan_file = out / "plans.json"
    plan_file.write_text(json.dumps(plans))
    store = Path(tempfile.mkdtemp(prefix="ppviz-store-")) / "store"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo", "MASTER_ADDR": "127.0.0.1",
           "PYTHONPATH": os.pathsep.join([str(HERE.parent.parent), os.environ.get("PYTHONPATH", "")])}
    procs = [subprocess.Popen([sys.executable, str(HERE), str(r), str(ranks), str(store), str(plan_file), str(out)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
             for r in range(ranks)]
    deadline = time.monotonic() + timeout
    try:
        for r, proc in enumerate(procs):
            try:
                output, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise RuntimeError(f"pipeline run timed out after {timeout:.0f} s (rank {r})") from None
            if proc.returncode:
                raise RuntimeError(f"rank {r} failed with exit code {proc.returncode}:\n{output.decode()[-3000:]}")
    finally:
        for proc in procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:  # pragma: no cover - it ended in between
                    pass
                proc.wait()
    return {plan["name"]: [out / plan["name"] / f"rank{r}.json" for r in range(ranks)] for plan in plans}


# Worker side --------------------------------------------------------------------------------


def _emulated_layer_class(torch):
    def sleep_ms(ms):
        if ms > 0:
            time.sleep(ms / 1000.0)

    class InputPart(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, layer):
            sleep_ms(layer.f_ms + layer.warm("F"))
            ctx.layer = layer
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            sleep_ms(ctx.layer.b_ms + ctx.layer.warm("B"))
            return grad, None

    class WeightPart(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight, w_ms):
            ctx.w_ms = w_ms
            ctx.save_for_backward(x)
            return x * weight

        @staticmethod
        def backward(ctx, grad):
            sleep_ms(ctx.w_ms)
            (x,) = ctx.saved_tensors
            return None, (grad * x).sum().reshape(1), None

    class EmulatedLayer(torch.nn.Module):
        """Sleeps f ms forward, b ms for the input gradient and w ms for the weight gradient.

        The weight gradient sits on its own branch (``x.detach() * weight``), so autograd runs it
        only when the weights' gradients are asked for: torch's I action skips it, W runs it.
        ``warmup`` (ms, forward and input gradient) is added to the layer's first forward and
        first input gradient of every step (``seen``, cleared by the step, records who ran).
        """

        def __init__(self, f_ms, b_ms, w_ms, warmup=(0.0, 0.0), seen=None):
            super().__init__()
            self.f_ms, self.b_ms, self.w_ms = f_ms, b_ms, w_ms
            self.warmup = dict(zip("FB", warmup))
            self.seen = set() if seen is None else seen
            self.weight = torch.nn.Parameter(torch.zeros(1))

        def warm(self, kind):
            if (id(self), kind) in self.seen:
                return 0.0
            self.seen.add((id(self), kind))
            return self.warmup[kind]

        def forward(self, x):
            return InputPart.apply(x, self) + WeightPart.apply(x.detach(), self.weight, self.w_ms)

    return EmulatedLayer


def _stage_module(torch, plan: dict, stage: int, stages: int, seen: set):
    """Stage ``stage`` of ``stages`` holds an equal share of the model's layers."""
    layers = plan["layers"]
    share = len(layers) // stages
    mine = layers[stage * share:(stage + 1) * share]
    if plan["model"] == "emulated":
        layer = _emulated_layer_class(torch)
        warmup = plan.get("warmup_ms", (0.0, 0.0))
        return torch.nn.Sequential(*(layer(*costs, warmup=warmup, seen=seen) for costs in mine))
    torch.manual_seed(stage)
    blocks = []
    for count in mine:
        for _ in range(count):
            blocks += [torch.nn.Linear(MATMUL_WIDTH, MATMUL_WIDTH), torch.nn.ReLU()]
    return torch.nn.Sequential(*blocks)


def _schedule(torch, schedules, PipelineStage, plan: dict, rank: int, ranks: int, seen: set):
    cls = getattr(schedules, f"Schedule{plan['schedule']}")
    v = plan.get("stages_per_rank", 1)
    stages = ranks * v
    if plan.get("placement") == "v":
        indices = [rank, 2 * ranks - 1 - rank]
    else:
        indices = [rank + k * ranks for k in range(v)]
    pipeline_stages = [PipelineStage(_stage_module(torch, plan, s, stages, seen), s, stages, torch.device("cpu")) for s in indices]

    def loss_fn(output, target):
        return ((output - target) ** 2).mean()

    if issubclass(cls, schedules.PipelineScheduleSingle):
        stage = pipeline_stages[0]
        if plan.get("annotate"):
            from ppviz.io.torch_annotate import annotate

            annotate(stage)
        return cls(stage, plan["microbatches"], loss_fn=loss_fn), pipeline_stages
    return cls(pipeline_stages, plan["microbatches"], loss_fn=loss_fn), pipeline_stages


def _worker(rank: int, ranks: int, store: str, plan_file: str, out: str) -> None:
    import torch
    import torch.distributed as dist
    from torch.distributed.pipelining import PipelineStage, schedules
    from torch.profiler import ProfilerActivity, profile
    from torch.profiler import schedule as profiler_schedule

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=ranks)
    try:
        for plan in json.loads(Path(plan_file).read_text()):
            seen = set()  # the emulated layers' warm-up: who has run in this step
            schedule, stages = _schedule(torch, schedules, PipelineStage, plan, rank, ranks, seen)
            optimizer = torch.optim.SGD([q for s in stages for q in s.submod.parameters()], lr=1e-3)
            setup_ms, optimizer_ms = plan.get("setup_ms", 0.0), plan.get("optimizer_ms", 0.0)
            m = plan["microbatches"]
            width = WIDTH if plan["model"] == "emulated" else MATMUL_WIDTH
            torch.manual_seed(0)
            x = torch.randn(m * plan.get("microbatch_size", 2 if plan["model"] == "emulated" else 128), width)
            target = torch.randn_like(x)
            has_first = any(s.is_first for s in stages)
            has_last = any(s.is_last for s in stages)

            def step():
                # a training step: set-up (zero_grad, loss scaling …), the pipeline, the optimizer
                seen.clear()
                optimizer.zero_grad(set_to_none=True)
                if setup_ms:
                    time.sleep(setup_ms / 1000.0)
                kwargs = {}
                if has_last:
                    kwargs = {"target": target, "losses": []}
                schedule.step(x, **kwargs) if has_first else schedule.step(**kwargs)
                if optimizer_ms:
                    time.sleep(optimizer_ms / 1000.0)
                optimizer.step()

            target_dir = Path(out) / plan["name"]
            target_dir.mkdir(parents=True, exist_ok=True)
            steps = plan.get("steps", 1)
            # the profiler's warm-up step is the run's: shape inference and allocations happen there
            with profile(activities=[ProfilerActivity.CPU],
                         schedule=profiler_schedule(wait=0, warmup=1, active=steps, repeat=1),
                         on_trace_ready=lambda p: p.export_chrome_trace(str(target_dir / f"rank{rank}.json"))) as prof:
                for _ in range(steps + 1):
                    step()
                    dist.barrier()
                    prof.step()
            dist.barrier()
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    r, world, store_path, plans_path, out_path = sys.argv[1:6]
    _worker(int(r), int(world), store_path, plans_path, out_path)
