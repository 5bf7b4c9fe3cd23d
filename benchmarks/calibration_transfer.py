"""Calibration that transfers (issue 35 item 7): calibrated on one real pipeline run, how far
its predicted step time of another microbatch count or schedule is from that run measured.

Run: python benchmarks/calibration_transfer.py [--stored]
Records the calibration runs of ``tests/pipeline_runs.py`` (``CALIBRATION_RUNS``: real
``torch.distributed.pipelining`` steps of one emulated model on 4 CPU ranks over gloo, five
schedules, m = 4, 8, 16; about 35 s on two idle cores, runs the machine disturbed are measured
again), or with ``--stored`` reads the recording in ``tests/data/calibration_runs``. Prints each
run's re-simulation (calibrated on itself), then per pair of ``tests/test_calibration_transfer.py``
the predicted and measured (median) step time and the error, and the largest error. Target: every
pair within 10 %.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import ppviz  # noqa: E402
from tests.pipeline_runs import CALIBRATION_RUNS, record_calibration_runs  # noqa: E402
from tests.test_calibration_transfer import STORED, predictions, table  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stored", action="store_true", help="read tests/data/calibration_runs instead of recording")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.stored:
            measured = {name: ppviz.load_trace(STORED / name) for name in CALIBRATION_RUNS}
        else:
            measured = {name: ppviz.load_trace(files) for name, files in record_calibration_runs(tmp).items()}
    print("calibrated on itself (ms): measured step, simulated step, error; per-step fixed cost")
    for name, m in measured.items():
        cal = ppviz.calibrate(m)
        print(f"  {name:17s} {m.step_time:7.1f} {cal.simulate().step_time:7.1f}  {cal.step_error:+.1%}   "
              f"set-up {cal.fixed.setup:.1f}, tail {cal.fixed.tail:.1f}")
    rows = predictions(measured)
    print(f"calibrated on one run, predicting another ({'stored' if args.stored else 'recorded now'}; step times, ms):")
    print(table(rows))
    worst = max(rows, key=lambda r: abs(r[2] / r[3] - 1))
    print(f"largest error {abs(worst[2] / worst[3] - 1):.1%} ({worst[0]} → {worst[1]}); target 10 %")


if __name__ == "__main__":
    main()
