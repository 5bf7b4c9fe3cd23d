"""Calibration that transfers (issue 35 item 7): calibrated on one real pipeline run, the
predicted step time of the same model at twice the microbatches, or under another schedule, is
within 10 % of that run measured.

The runs are real ``torch.distributed.pipelining`` steps on 4 CPU ranks (gloo) of an emulated
model whose layers sleep (tests/pipeline_runs.py, ``CALIBRATION_RUNS``), with what a training
step adds to its ops: a fixed cost per step (15 ms of set-up before the schedule's step, 25 ms
of optimizer after it, inside the profiler's step) and a first-microbatch warm-up (each layer's
first forward of a step 4 ms longer, its first input gradient 3 ms), besides the schedule's own
host time between ops. ``tests/data/calibration_runs`` holds one recording of the ten runs
(``scripts/write_calibration_runs.py``); ``test_recorded_runs_transfer`` records them again:
about 35 s on two idle cores, a minute or more on busy ones, where runs disturbed by the
machine are measured again (``record_calibration_runs``).

Recorded while the machine was otherwise quiet, every pair landed within 6 % (three recordings;
the stored one: 5.8 % at most, 1F1B to ZB-H1). While other jobs loaded it (a load of 3 to 9),
the schedules with the least bubble ran slower than predicted, their four ranks competing for
the two cores most: ZB-V from 1F1B came out 12 % under twice, interleaved zero bubble 11 %
once, and a run disturbed in each of its four measurements missed by more; there this test
fails, so ``./run-tests`` runs it alone, after the parallel tests (the ``serial`` marker).

Before the calibration separated these parts (per-stage medians with the gaps in them, no
warm-up, no step beyond the ops), the same pairs of the stored runs were predicted 6.5 % to
26.3 % under their measured step times (twice the microbatches: 9.0 % to 14.5 % under), and
from 2.5 % over to 17.5 % under their pipeline times alone. ``benchmarks/calibration_transfer.py``
prints the table.
"""

from pathlib import Path

import numpy as np
import pytest

import ppviz
from tests.pipeline_runs import (
    CALIBRATION_LAYERS,
    CALIBRATION_RUNS,
    STEP_COSTS,
    record_calibration_runs,
)

STORED = Path(__file__).resolve().parent / "data" / "calibration_runs"
#: (calibrated on, predicting): each microbatch count to its double, and 1F1B at m = 8 to every
#: other schedule at m = 8, with a few the other way (split backwards to full, 2 stages per rank to 1)
PAIRS = [("1f1b_m4", "1f1b_m8"), ("1f1b_m8", "1f1b_m16"), ("gpipe_m4", "gpipe_m8"),
         ("interleaved_m4", "interleaved_m8"),
         ("1f1b_m8", "gpipe_m8"), ("1f1b_m8", "interleaved_m8"), ("1f1b_m8", "zbh1_m8"), ("1f1b_m8", "zbv_m8"),
         ("1f1b_m8", "interleaved_zb_m8"),
         ("gpipe_m8", "1f1b_m8"), ("interleaved_m8", "1f1b_m8"), ("zbh1_m8", "1f1b_m8"), ("zbv_m8", "1f1b_m8"),
         ("interleaved_zb_m8", "zbv_m8")]
BOUND = 0.10
#: the registry's name of each torch schedule as these runs use it
NAMES = {"1F1B": "1f1b", "GPipe": "gpipe", "Interleaved1F1B": "interleaved-1f1b", "ZBVZeroBubble": "zb-v"}


def _registry_name(run: str) -> str:
    schedule, _, v, _ = CALIBRATION_RUNS[run]
    if schedule == "InterleavedZeroBubble":
        return "zb-h1" if v == 1 else "interleaved-zb"
    return NAMES[schedule]


def predictions(measured) -> list[tuple[str, str, float, float]]:
    """Per pair: (calibrated on, predicting, predicted step time, measured step time: the median
    step's), the runs by name as :data:`CALIBRATION_RUNS` names them."""
    rows = []
    for source, target in PAIRS:
        cal = ppviz.calibrate(measured[source])
        _, m, v, _ = CALIBRATION_RUNS[target]
        predicted = ppviz.simulate(cal.config_for(_registry_name(target), microbatches=m, stages_per_device=v))
        rows.append((source, target, predicted.step_time, float(np.median(measured[target].steps.step_time))))
    return rows


def table(rows) -> str:
    """The rows of :func:`predictions` as lines: the pair, both step times and the error."""
    return "\n".join(f"  {source:17s} → {target:17s} predicted {predicted:7.1f}  measured {actual:7.1f}  "
                     f"{predicted / actual - 1:+.1%}" for source, target, predicted, actual in rows)


def _check(measured, capsys, title: str) -> None:
    for name, m in measured.items():
        assert m.program.name == _registry_name(name), name
    rows = predictions(measured)
    with capsys.disabled():
        print(f"\n{title} (step times, ms):\n{table(rows)}")
    for source, target, predicted, actual in rows:
        assert abs(predicted / actual - 1) < BOUND, (source, target, predicted, actual)


@pytest.fixture(scope="module")
def stored():
    return {name: ppviz.load_trace(STORED / name) for name in CALIBRATION_RUNS}


def test_stored_runs_transfer(stored, capsys):
    _check(stored, capsys, "calibrated on one stored run, predicting another")


@pytest.mark.serial
def test_recorded_runs_transfer(torch_pipelining, tmp_path, capsys):
    """The same, on runs recorded now (about 35 s on two idle cores; run-tests runs it alone)."""
    runs = record_calibration_runs(tmp_path)
    _check({name: ppviz.load_trace(files) for name, files in runs.items()}, capsys,
           "calibrated on one run recorded now, predicting another")


def _stage_layers(run: str) -> int:
    return 8 // (4 * CALIBRATION_RUNS[run][2])


@pytest.mark.parametrize("run", list(CALIBRATION_RUNS))
def test_the_separated_parts_are_what_the_runs_spend(stored, run):
    """Each part the fit separates is the cost the run was given, plus the host's own time
    around it (torch's set-up and tear-down of a step, the barrier that ends it, sleeps that
    wake late on a busy host)."""
    cal = ppviz.calibrate(stored[run])
    assert cal.fixed.measured
    assert cal.fixed.setup == pytest.approx(STEP_COSTS["setup_ms"], abs=3.0)
    assert STEP_COSTS["optimizer_ms"] < cal.fixed.tail < STEP_COSTS["optimizer_ms"] + 20
    layers = _stage_layers(run)
    split = CALIBRATION_RUNS[run][0] in ("InterleavedZeroBubble", "ZBVZeroBubble")
    for stage in range(len(cal.stages.median)):
        # the computation: the layers' sleeps (the model's first layer computes no input gradient,
        # and torch runs stage 0's whole backward as its W), each woken up to 2 ms late
        mine = CALIBRATION_LAYERS[stage * layers:(stage + 1) * layers]
        f, i, w = (sum(layer[k] for layer in mine) for k in range(3))
        i -= mine[0][1] if stage == 0 else 0.0
        sleeps = {"F": (f, layers), "B": (i + w, 2 * layers - (stage == 0))}
        if split:
            sleeps = {"F": sleeps["F"], "I": (0.0, 0) if stage == 0 else (i, layers),
                      "W": sleeps["B"] if stage == 0 else (w, layers)}
        for kind, (want, count) in sleeps.items():
            got = cal.stages.median[stage, "FBIW".index(kind)]
            assert want - 0.2 < got < want + 2.0 * count + 0.5, (stage, kind, got, want)
    # the warm-up: what the layers' first ops were given, measured within the noise of a median of
    # five steps, and up to 4 ms more where torch's own first op of a step does more (a stage 0
    # W of ZB-H1 takes 2.7 ms longer than the layers' warm-up when the machine is idle)
    forward, backward = STEP_COSTS["warmup_ms"]
    warm = np.nan_to_num(cal.stages.warmup)
    for stage in range(len(warm)):
        assert layers * forward - 1.5 < warm[stage, 0] < layers * forward + 4.0, (stage, warm[stage])
        # the model's first layer computes no input gradient (its input needs none), so stage 0's
        # first backward is warmed once less; the split schedules warm their I, but torch runs
        # stage 0's whole backward as its W, which then takes the warm-up
        warmed = layers - (stage == 0)
        backward_warmup = warm[stage, 1] if not split else warm[stage, 2] + (warm[stage, 3] if stage == 0 else 0)
        assert warmed * backward - 1.5 < backward_warmup < warmed * backward + 4.0, (stage, warm[stage])
    gaps = cal.stages.overhead[cal.stages.count > 0]
    assert (gaps >= 0).all() and 0 < gaps.mean() < 2.0
