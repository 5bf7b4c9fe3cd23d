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
        def forward(ctx, x, f_ms, b_ms):
            sleep_ms(f_ms)
            ctx.b_ms = b_ms
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            sleep_ms(ctx.b_ms)
            return grad, None, None

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
        """

        def __init__(self, f_ms, b_ms, w_ms):
            super().__init__()
            self.f_ms, self.b_ms, self.w_ms = f_ms, b_ms, w_ms
            self.weight = torch.nn.Parameter(torch.zeros(1))

        def forward(self, x):
            return InputPart.apply(x, self.f_ms, self.b_ms) + WeightPart.apply(x.detach(), self.weight, self.w_ms)

    return EmulatedLayer


def _stage_module(torch, plan: dict, stage: int, stages: int):
    """Stage ``stage`` of ``stages`` holds an equal share of the model's layers."""
    layers = plan["layers"]
    share = len(layers) // stages
    mine = layers[stage * share:(stage + 1) * share]
    if plan["model"] == "emulated":
        layer = _emulated_layer_class(torch)
        return torch.nn.Sequential(*(layer(*costs) for costs in mine))
    torch.manual_seed(stage)
    blocks = []
    for count in mine:
        for _ in range(count):
            blocks += [torch.nn.Linear(MATMUL_WIDTH, MATMUL_WIDTH), torch.nn.ReLU()]
    return torch.nn.Sequential(*blocks)


def _schedule(torch, schedules, PipelineStage, plan: dict, rank: int, ranks: int):
    cls = getattr(schedules, f"Schedule{plan['schedule']}")
    v = plan.get("stages_per_rank", 1)
    stages = ranks * v
    if plan.get("placement") == "v":
        indices = [rank, 2 * ranks - 1 - rank]
    else:
        indices = [rank + k * ranks for k in range(v)]
    pipeline_stages = [PipelineStage(_stage_module(torch, plan, s, stages), s, stages, torch.device("cpu")) for s in indices]

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
            schedule, stages = _schedule(torch, schedules, PipelineStage, plan, rank, ranks)
            m = plan["microbatches"]
            width = WIDTH if plan["model"] == "emulated" else MATMUL_WIDTH
            torch.manual_seed(0)
            x = torch.randn(m * plan.get("microbatch_size", 2 if plan["model"] == "emulated" else 128), width)
            target = torch.randn_like(x)
            has_first = any(s.is_first for s in stages)
            has_last = any(s.is_last for s in stages)

            def step():
                kwargs = {}
                if has_last:
                    kwargs = {"target": target, "losses": []}
                schedule.step(x, **kwargs) if has_first else schedule.step(**kwargs)
                for s in stages:
                    s.submod.zero_grad(set_to_none=True)

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
