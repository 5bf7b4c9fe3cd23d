"""The sdist and wheel carry the built widget bundle, and installing from the sdist needs no Node."""

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = ROOT / "ppviz" / "static" / "widget.js"


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    if not BUNDLE.is_file():
        pytest.fail("ppviz/static/widget.js is missing: run `npm ci && npm run build` in js/ (./run-tests does)")
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "hatchling", "build", "-d", str(out)], cwd=ROOT, check=True,
                   capture_output=True)
    return out


def test_sdist_holds_the_bundle_and_the_sources_but_no_node_modules(dist):
    (sdist,) = dist.glob("*.tar.gz")
    names = tarfile.open(sdist).getnames()
    root = names[0].split("/")[0]
    assert f"{root}/ppviz/static/widget.js" in names
    assert f"{root}/js/package-lock.json" in names and f"{root}/js/src/widget.ts" in names
    assert not [n for n in names if "node_modules" in n]


def test_wheel_built_from_the_sdist_without_node_ships_the_bundle(dist, tmp_path):
    (sdist,) = dist.glob("*.tar.gz")
    empty = tmp_path / "bin"
    empty.mkdir()
    # no npm or node on PATH: the build hook must skip because the bundle exists
    env = {**os.environ, "PATH": str(empty)}
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", str(sdist),
                    "-w", str(tmp_path)], check=True, env=env, capture_output=True)
    (wheel,) = tmp_path.glob("*.whl")
    with zipfile.ZipFile(wheel) as z:
        assert z.read("ppviz/static/widget.js") == BUNDLE.read_bytes()
        assert {"ppviz/widgets/gantt.py", "ppviz/style.json"} <= set(z.namelist())
        # the measured run the notebook loads (ppviz.example_trace())
        shipped = {f"ppviz/data/traces/1f1b_emulated/rank{r}.json.gz" for r in range(4)}
        assert shipped <= set(z.namelist())
