"""`python -m build` makes an sdist and a wheel that carry the built widget bundle; building
from the sdist needs no Node; the wheel installs into a fresh virtual environment and runs the
quickstart notebook there with no network and no Node; the notebooks' install cell installs the
wheel by name from a package index (one on 127.0.0.1, as Colab would from the public one); the
distribution's name is not the unrelated `ppviz` of the package index, and no install instruction
points at it."""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name, parse_wheel_filename

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = ROOT / "ppviz" / "static" / "widget.js"
#: checked free on the package index when it was chosen (`pip index versions pp-schedule-viz`
#: found nothing), unlike `ppviz`, which is another project
DISTRIBUTION = "pp-schedule-viz"
WHEEL_STEM = DISTRIBUTION.replace("-", "_")


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    if not BUNDLE.is_file():
        pytest.fail("ppviz/static/widget.js is missing: run `npm ci && npm run build` in js/ (./run-tests does)")
    out = tmp_path_factory.mktemp("dist")
    # the wheel is built from the sdist (build's default), so the sdist must be enough
    subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], check=True,
                   capture_output=True)
    return out


def test_the_distribution_is_named_apart_from_the_unrelated_ppviz(dist):
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(rf'^name = "{DISTRIBUTION}"$', pyproject, flags=re.M)
    assert re.search(r'^ppviz = "ppviz.cli:main"$', pyproject, flags=re.M)  # the command keeps its name
    (wheel,) = dist.glob("*.whl")
    (sdist,) = dist.glob("*.tar.gz")
    assert wheel.name.startswith(f"{WHEEL_STEM}-") and sdist.name.startswith(f"{WHEEL_STEM}-")
    with zipfile.ZipFile(wheel) as z:
        (info,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = z.read(info).decode()
        assert f"Name: {DISTRIBUTION}\n" in metadata
        assert "ppviz/__init__.py" in z.namelist()  # import ppviz


def test_the_wheel_and_the_sdist_carry_the_typed_marker(dist):
    # PEP 561: without ppviz/py.typed a user's type checker ignores ppviz's annotations
    (wheel,) = dist.glob("*.whl")
    (sdist,) = dist.glob("*.tar.gz")
    assert "ppviz/py.typed" in zipfile.ZipFile(wheel).namelist()
    names = tarfile.open(sdist).getnames()
    assert f"{names[0].split('/')[0]}/ppviz/py.typed" in names


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


# Run inside the fresh environment, in a network namespace of its own (no route anywhere) and
# with only the environment's bin/ on PATH. The kernel talks to the client over Unix sockets
# (ZMQ's ipc transport), as the namespace has no loopback interface either.
_OFFLINE_RUN = textwrap.dedent("""
    import hashlib, json, pathlib, shutil, socket, sys
    import nbformat
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    notebook, expected = pathlib.Path(sys.argv[1]), sys.argv[2]
    try:
        socket.create_connection(("pypi.org", 443), timeout=3).close()
        sys.exit("the network is reachable")
    except OSError:
        pass
    assert shutil.which("node") is None and shutil.which("npm") is None, "node is on PATH"
    import ppviz, ppviz.widgets.gantt
    assert pathlib.Path(ppviz.__file__).is_relative_to(sys.prefix), ppviz.__file__
    bundle = ppviz.widgets.gantt.BUNDLE
    assert hashlib.sha256(bundle.read_bytes()).hexdigest() == expected, "the installed bundle differs"
    nb = nbformat.read(notebook, as_version=4)
    km = KernelManager(kernel_name="python3", transport="ipc", ip=str(notebook.parent / "kernel"))
    NotebookClient(nb, km=km, timeout=300, resources={"metadata": {"path": str(notebook.parent)}}).execute()
    outputs = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs]
    errors = [out for out in outputs if out.output_type == "error"]
    views = [out for out in outputs if "application/vnd.jupyter.widget-view+json" in out.get("data", {})]
    text = "".join(out.get("text", "") for out in outputs)
    print(json.dumps({"errors": len(errors), "widget_views": len(views), "summary": "closed form 33" in text,
                      "kernel_ppviz": "ppviz " + str(bundle.parent.parent)}))
""")


def test_the_wheel_runs_the_quickstart_in_a_fresh_venv_offline_without_node(dist, tmp_path):
    unshare = shutil.which("unshare")
    assert unshare, "this test needs util-linux's unshare to run the notebook without a network"
    (wheel,) = dist.glob("*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    python = venv / "bin" / "python"
    # the wheel's dependencies and a kernel come from the index (pip's cache makes it quick)
    install = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel),
                              "ipykernel", "nbclient", "nbformat"], capture_output=True, text=True)
    assert install.returncode == 0, install.stderr[-3000:]
    with zipfile.ZipFile(wheel) as z:
        expected = hashlib.sha256(z.read("ppviz/static/widget.js")).hexdigest()
    assert expected == hashlib.sha256(BUNDLE.read_bytes()).hexdigest()
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(ROOT / "notebooks" / "quickstart.ipynb", work / "quickstart.ipynb")
    (work / "run.py").write_text(_OFFLINE_RUN)
    env = {"PATH": str(venv / "bin"), "HOME": str(tmp_path), "PYTHONNOUSERSITE": "1", "LANG": "C.UTF-8"}
    run = subprocess.run([unshare, "--map-root-user", "--net", str(python), str(work / "run.py"),
                          str(work / "quickstart.ipynb"), expected],
                         cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-4000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["errors"] == 0 and report["widget_views"] >= 3 and report["summary"], report
    assert report["kernel_ppviz"].startswith(f"ppviz {venv}"), report


# Colab's install path: the notebooks' first cell against a package index ---------------------

# Run inside a network namespace of its own with only its loopback up: a package index served on
# 127.0.0.1 from the wheelhouse, pip told to use it alone, IPython installed from it into the fresh
# environment, then the notebook's install cell run in IPython, as Colab runs it.
_INDEX_RUN = textwrap.dedent("""
    import json, os, pathlib, socket, subprocess, sys, time

    index, venv, work = (pathlib.Path(arg) for arg in sys.argv[1:4])
    port = sys.argv[4]
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    try:
        socket.create_connection(("pypi.org", 443), timeout=3).close()
        sys.exit("the network is reachable")
    except OSError:
        pass
    log = open(work / "index.log", "w")
    server = subprocess.Popen([sys.executable, "-m", "http.server", port, "--bind", "127.0.0.1", "--directory",
                               str(index)], stderr=log, stdout=log)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", int(port)), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        python = str(venv / "bin" / "python")
        env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(work), "LANG": "C.UTF-8", "PYTHONNOUSERSITE": "1",
               "PIP_INDEX_URL": f"http://127.0.0.1:{port}/simple/", "PIP_CONFIG_FILE": os.devnull,
               "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_CACHE_DIR": "1"}
        subprocess.run([python, "-m", "pip", "install", "--quiet", "ipython"], check=True, env=env)
        run = subprocess.run([python, str(work / "cell.py")], env=env, cwd=work / "colab", capture_output=True,
                             text=True)
        sys.stdout.write(run.stdout)
        sys.stderr.write(run.stderr)
        sys.exit(run.returncode)
    finally:
        server.terminate()
        server.wait()
        log.close()
""")

# The notebook's install cell in IPython (its %pip is IPython's, installing into this environment),
# then what it installed
_CELL_RUN = textwrap.dedent("""
    import importlib.metadata, json, pathlib, sys
    from IPython.core.interactiveshell import InteractiveShell

    cell = pathlib.Path(__file__).with_name("install_cell.txt").read_text()
    InteractiveShell.instance().run_cell(cell).raise_error()
    import ppviz

    dist = importlib.metadata.distribution("pp-schedule-viz")
    print(json.dumps({"version": ppviz.__version__, "dist_version": dist.version, "file": ppviz.__file__,
                      "direct_url": dist.read_text("direct_url.json"), "prefix": sys.prefix}))
""")


def _simple_index(wheelhouse: Path, root: Path) -> list[str]:
    """A static PEP 503 index of the wheels in ``wheelhouse`` at ``root / "simple"``; returns the
    projects it lists."""
    files = root / "files"
    files.mkdir(parents=True)
    projects: dict[str, list[str]] = {}
    for wheel in sorted(wheelhouse.glob("*.whl")):
        shutil.copy(wheel, files / wheel.name)
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        name = canonicalize_name(parse_wheel_filename(wheel.name)[0])
        projects.setdefault(name, []).append(f'<a href="../../files/{wheel.name}#sha256={digest}">{wheel.name}</a>')
    for name, links in projects.items():
        (root / "simple" / name).mkdir(parents=True)
        (root / "simple" / name / "index.html").write_text("<!doctype html><html><body>\n" + "\n".join(links) +
                                                           "\n</body></html>\n")
    (root / "simple" / "index.html").write_text("<!doctype html><html><body>\n" + "\n".join(
        f'<a href="{name}/">{name}</a>' for name in sorted(projects)) + "\n</body></html>\n")
    return sorted(projects)


def test_the_install_cell_installs_the_wheel_by_name_from_a_package_index(dist, tmp_path):
    """Colab without a public repository: a notebook opened outside a checkout installs
    pp-schedule-viz by name from the index. The index is one served on 127.0.0.1 holding the
    wheel built here and its dependencies' wheels (fetched once beforehand, from pip's cache or
    the public index); the install runs where nothing else can be reached."""
    unshare = shutil.which("unshare")
    assert unshare, "this test needs util-linux's unshare to run the install without a network"
    (wheel,) = dist.glob("*.whl")
    wheelhouse = tmp_path / "wheelhouse"
    download = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                               "--only-binary=:all:", "--dest", str(wheelhouse), str(wheel), "ipython"],
                              capture_output=True, text=True)
    assert download.returncode == 0, download.stderr[-3000:]
    projects = _simple_index(wheelhouse, tmp_path / "index")
    assert DISTRIBUTION in projects
    assert {"numpy", "anywidget", "altair", "vl-convert-python", "ipython"} <= set(projects)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    work = tmp_path / "work"
    (work / "colab").mkdir(parents=True)
    # the notebook copied out of the checkout, as Colab opens it: no ppviz/ beside its folder
    shutil.copy(ROOT / "notebooks" / "quickstart.ipynb", work / "colab" / "quickstart.ipynb")
    cell = json.loads((work / "colab" / "quickstart.ipynb").read_text())["cells"][1]
    assert cell["cell_type"] == "code" and not (work / "ppviz").exists()
    (work / "install_cell.txt").write_text("".join(cell["source"]))
    (work / "cell.py").write_text(_CELL_RUN)
    (work / "index_run.py").write_text(_INDEX_RUN)
    port = "8765"  # the namespace's own loopback: nothing else listens there
    run = subprocess.run([unshare, "--map-root-user", "--net", sys.executable, str(work / "index_run.py"),
                          str(tmp_path / "index"), str(venv), str(work), port],
                         env={"PATH": os.environ["PATH"], "HOME": str(tmp_path), "LANG": "C.UTF-8"},
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-4000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    version = str(parse_wheel_filename(wheel.name)[1])
    assert report["version"] == report["dist_version"] == version, report
    assert report["prefix"] == str(venv) and report["file"].startswith(str(venv)), report
    # installed by name from an index, not from a path or URL (pip records those in direct_url.json)
    assert report["direct_url"] is None, report
    served = (work / "index.log").read_text()
    assert f'"GET /simple/{DISTRIBUTION}/ HTTP/1.1" 200' in served
    assert f'"GET /files/{wheel.name} HTTP/1.1" 200' in served


# Install instructions ---------------------------------------------------------------------------

#: every file a user reads install instructions in: the notebooks and the documentation site's pages too
_READ = ["README.md", "ARCHITECTURE.md", "js/README.md",
         *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "notebooks").glob("*.ipynb")),
         *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md"))]


def _prose(path: Path) -> str:
    if path.suffix != ".ipynb":
        return path.read_text()
    cells = json.loads(path.read_text())["cells"]
    return "\n".join("".join(cell["source"]) for cell in cells)


def test_install_instructions_point_at_what_exists():
    for name in _READ:
        text = _prose(ROOT / name)
        for line in re.findall(r"pip install[^\n`]*", text):
            targets = [t for t in line.split()[2:] if not t.startswith("-")]
            # nothing is published: a reader installs a checkout or a wheel built from it (the
            # notebooks' install cell alone names the distribution, for an index that has it:
            # test_the_install_cell_installs_the_wheel_by_name_from_a_package_index)
            assert not {"ppviz", DISTRIBUTION} & {t.strip("\"'") for t in targets}, f"{name}: {line}"
        # nothing is published: no Colab, GitHub or package-index page to link to
        for url in re.findall(r"https?://[^\s)\"'>]+", text):
            assert not re.search(r"colab\.research|github\.com|pypi\.org|shields\.io", url), f"{name}: {url}"


def test_readme_says_how_to_install_from_a_checkout():
    readme = (ROOT / "README.md").read_text()
    install = readme[readme.index("## Install"):readme.index("## Use")]
    assert f"`{DISTRIBUTION}`" in install and re.search(r"^pip install \.\s", install, flags=re.M)
    assert f"pip install dist/{WHEEL_STEM}-*.whl" in install
