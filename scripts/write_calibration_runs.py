"""Record the calibration runs of ``tests/pipeline_runs.py`` (``CALIBRATION_RUNS``: one model,
several schedules and microbatch counts, with a per-step fixed cost and a first-microbatch
warm-up) into ``tests/data/calibration_runs/<run>/rank<r>.json.gz``, for
``tests/test_calibration_transfer.py``. About 35 s on two idle cores.

Each trace keeps what ``ppviz.load_trace`` reads (the reader's fast path: the pipeline's
annotations, the profiler's steps, the backend's sends and receives, the trace's metadata);
the operator events around them, nine in ten of a trace, are left out.

    python scripts/write_calibration_runs.py
"""

import gzip
import json
import pathlib
import shutil
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ppviz.io.torch_profiler import kineto_events  # noqa: E402
from tests.pipeline_runs import record_calibration_runs  # noqa: E402

TARGET = ROOT / "tests" / "data" / "calibration_runs"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        runs = record_calibration_runs(tmp)
        if TARGET.exists():
            shutil.rmtree(TARGET)
        for name, files in runs.items():
            (TARGET / name).mkdir(parents=True)
            for f in files:
                kept = kineto_events(f.read_bytes())
                if kept is None:
                    raise SystemExit(f"{f}: not laid out as Kineto writes traces")
                with gzip.open(TARGET / name / f"{f.name}.gz", "wt", compresslevel=9) as out:
                    json.dump(kept, out, separators=(",", ":"))
    total = sum(f.stat().st_size for f in TARGET.rglob("*.gz"))
    print(f"{TARGET}: {len(runs)} runs, {total:,} bytes")


if __name__ == "__main__":
    main()
