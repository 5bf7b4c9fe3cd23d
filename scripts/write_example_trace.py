"""Write the measured run shipped with ppviz (``ppviz.example_trace()``): a real
``torch.distributed.pipelining`` Schedule1F1B step on 4 CPU ranks (gloo), 8 microbatches, the
emulated model of ``tests/pipeline_runs.py`` (layers that sleep for fixed times, unequal
stages), stages annotated with ``ppviz.annotate``, two profiled steps; one gzipped PyTorch
profiler trace per rank in ``ppviz/data/traces/1f1b_emulated/``.

    python scripts/write_example_trace.py
"""

import gzip
import pathlib
import shutil
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.pipeline_runs import EMULATED_LAYERS, run_pipeline  # noqa: E402

TARGET = ROOT / "ppviz" / "data" / "traces" / "1f1b_emulated"


def main() -> None:
    plan = {"name": "1f1b", "schedule": "1F1B", "microbatches": 8, "model": "emulated",
            "layers": EMULATED_LAYERS, "steps": 2, "annotate": True}
    with tempfile.TemporaryDirectory() as tmp:
        files = run_pipeline([plan], 4, tmp)["1f1b"]
        if TARGET.exists():
            shutil.rmtree(TARGET)
        TARGET.mkdir(parents=True)
        for f in files:
            with open(f, "rb") as src, gzip.open(TARGET / f"{f.name}.gz", "wb", compresslevel=9) as dst:
                shutil.copyfileobj(src, dst)
    for f in sorted(TARGET.iterdir()):
        print(f, f.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
