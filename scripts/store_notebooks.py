"""Store notebooks with their outputs, each widget carrying a static picture of itself, so they
read well where no kernel runs (GitHub, nbviewer, ``jupyter nbconvert --to html``).

    scripts/store-notebooks                        # every notebook in notebooks/
    scripts/store-notebooks notebooks/memory.ipynb # some of them
    scripts/store-notebooks --check                # store nothing; name the stale ones (exit 1)

Each notebook runs top to bottom in a fresh kernel, in its own folder, with
:func:`ppviz.widgets.static.enable` called at the kernel's start (not in a cell): every widget
output gains a PNG of what it shows, and an Altair chart is stored as its picture. What is
stored: the outputs and execution counts. What is not: widget state (a kernel-less renderer
would then try to draw the widgets, from scripts on the internet, instead of the pictures),
timings, and the kernel's version details (the notebook's metadata stays as it was).

``tests/test_notebooks.py`` executes the notebooks the same way and compares what they print
and draw with what is stored (:func:`comparable`), so a stale notebook fails the tests; this
script is the fix.
"""

from __future__ import annotations

import argparse
import base64
import copy
import difflib
import hashlib
import json
import pathlib
import re
import sys

import nbformat
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
PNG = "image/png"
METADATA_KEY = "ppviz"  # ppviz.widgets.static.METADATA_KEY, read here without importing ppviz
#: run by the kernel at its start, before the first cell (so no cell shows it and no
#: execution count moves)
SETUP = "import ppviz.widgets.static; ppviz.widgets.static.enable()"
#: parts of an output that change from run to run: widget model ids (and any other 32-digit
#: hex id, such as Altair's element ids) and memory addresses in reprs
VOLATILE = ((re.compile(r"\b[0-9a-f]{32}\b"), "<id>"), (re.compile(r"\b0x[0-9a-fA-F]{4,}\b"), "0x<address>"))


def execute(path: pathlib.Path, timeout: int = 600) -> nbformat.NotebookNode:
    """The notebook at ``path`` executed top to bottom with static pictures, ready to store.

    Raises nbclient's ``CellExecutionError`` if a cell fails."""
    stored = nbformat.read(path, as_version=4)
    nb = copy.deepcopy(stored)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                            store_widget_state=False, extra_arguments=[f"--IPKernelApp.exec_lines={SETUP}"],
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    nb.metadata = stored.metadata  # nbclient writes the kernel's language details there
    return nb


def _text(value) -> str:
    value = value if isinstance(value, str) else "".join(value)
    for pattern, replacement in VOLATILE:
        value = pattern.sub(replacement, value)
    return value


def comparable(nb, *, pictures: bool = True) -> list:
    """Each code cell's execution count and outputs with the volatile parts replaced; a
    picture as the digest of the spec it was drawn from and (with ``pictures``) the digest of
    its bytes, which depend on the renderer's version as well."""
    cells = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        outputs = []
        for out in cell.outputs:
            if out.output_type == "stream":
                outputs.append({"stream": out.name, "text": _text(out.text)})
            elif out.output_type == "error":
                outputs.append({"error": out.ename, "value": _text(out.evalue)})
            else:
                data = {}
                for mime, value in out.data.items():
                    if mime == WIDGET_VIEW:
                        data[mime] = "<widget view>"
                    elif mime == PNG:
                        drawn = out.metadata.get(PNG, {}).get(METADATA_KEY, {})
                        png = base64.b64decode(value if isinstance(value, str) else "".join(value))
                        data[mime] = {"spec_sha256": drawn.get("spec_sha256"),
                                      **({"png_sha256": hashlib.sha256(png).hexdigest()} if pictures else {})}
                    else:
                        data[mime] = _text(value) if isinstance(value, (str, list)) else value
                outputs.append({out.output_type: data})
        cells.append({"cell": cell.get("id"), "execution_count": cell.execution_count, "outputs": outputs})
    return cells


def renderers(nb) -> set[str]:
    """The renderers that drew the pictures stored in ``nb``."""
    return {out.metadata.get(PNG, {}).get(METADATA_KEY, {}).get("renderer")
            for cell in nb.cells if cell.cell_type == "code"
            for out in cell.outputs if PNG in out.get("data", {})}


def differences(stored, executed) -> list[str]:
    """What differs between a stored notebook's outputs and a fresh execution's, as diff lines
    (empty when the stored outputs are current). Pictures are compared byte for byte when the
    stored ones came from this machine's renderer, and by the spec they were drawn from
    otherwise."""
    pictures = renderers(stored) <= renderers(executed)
    before, after = (json.dumps(comparable(nb, pictures=pictures), indent=1, sort_keys=True, ensure_ascii=False).splitlines()
                     for nb in (stored, executed))
    return list(difflib.unified_diff(before, after, "stored", "executed now", lineterm="", n=2))


def widgets_without_pictures(nb) -> list[str]:
    """The ids of the cells with a widget output that carries no picture."""
    return [cell.get("id") for cell in nb.cells if cell.cell_type == "code"
            for out in cell.outputs if WIDGET_VIEW in out.get("data", {}) and PNG not in out.data]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/store-notebooks", description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=pathlib.Path, help="notebooks (default: notebooks/*.ipynb)")
    parser.add_argument("--check", action="store_true",
                        help="store nothing; report the notebooks whose stored outputs are stale (exit 1 if any)")
    args = parser.parse_args(argv)
    paths = args.paths or sorted(NOTEBOOKS.glob("*.ipynb"))
    stale = []
    for path in paths:
        executed = execute(path)
        missing = widgets_without_pictures(executed)
        if missing:
            print(f"{path}: widgets without a static picture in cells {missing} "
                  "(ppviz.widgets.static.static_chart draws none for them)", file=sys.stderr)
        diff = differences(nbformat.read(path, as_version=4), executed)
        if args.check:
            if diff:
                stale.append(path)
                print(f"{path}: stale\n" + "\n".join(diff[:40]), file=sys.stderr)
            continue
        if diff:  # an unchanged notebook is left as it is, its widget ids included
            nbformat.write(executed, path)
        print(f"{path}: " + ("stored" if diff else "unchanged"))
    if stale:
        print(f"{len(stale)} stale notebook(s): run scripts/store-notebooks {' '.join(map(str, stale))}",
              file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
