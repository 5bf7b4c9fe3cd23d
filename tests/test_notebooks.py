"""The teaching notebooks run top to bottom and still say what their text claims."""

import importlib.util
import pathlib

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = pathlib.Path(__file__).resolve().parent.parent / "notebooks"
WIDGET = "application/vnd.jupyter.widget-view+json"

# phrases each notebook's prose relies on, checked in its printed output
CLAIMS = {
    "quickstart": ["makespan         33   closed form 33", "bubble fraction  0.2727"],
    "schedule_zoo": ["zb-h1                     makespan  27.0", "dualpipe-v                makespan  27.0"],
    "bubbles": ["ratio 0.3333333333333333", "v=2: makespan 28.50  idle per device  4.50  closed form  4.50",
                "does not meet all of it"],
    "memory": ["1f1b    peak 12.0", "v-half  peak  7.0", "v-min   peak  5.0", "GPipe peak: [8. 8. 8. 8.]"],
    "real_model": ["15 of 21 fit; fastest: zb-v v=2 m=64"],
    "custom_schedules": ["deadlock: no device can make progress", "[0B0]", "W is missing for this I",
                         "stages 0↓ 1↑"],
    "find_the_best_schedule": ["search never slower than the best library schedule that fits: True",
                               "every search result within its limit: True", "refused; for example:",
                               "dualpipe", "bubble falls as m grows, for every schedule and p: True"],
}
# the notebook compares with torch where torch is installed and says it skips where it is not
if importlib.util.find_spec("torch") is not None:
    CLAIMS["custom_schedules"].append("torch's order equals ppviz's interleaved-1f1b: True")
else:
    CLAIMS["custom_schedules"].append("torch is not installed; skipping")
MIN_WIDGETS = {"quickstart": 3, "schedule_zoo": 14, "bubbles": 1, "memory": 1, "real_model": 1, "custom_schedules": 1,
               "find_the_best_schedule": 4}


def test_every_notebook_is_covered():
    assert {p.stem for p in NOTEBOOKS.glob("*.ipynb")} == set(CLAIMS)


@pytest.mark.parametrize("name", sorted(CLAIMS))
def test_notebook_runs_and_keeps_its_claims(name):
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    first = nb.cells[0]
    assert first.cell_type == "markdown" and "colab.research.google.com" in first.source
    assert "find_spec(\"ppviz\") is None" in nb.cells[1].source  # the guarded install cell
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    text, widgets = [], 0
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.output_type == "stream":
                text.append(out.text)
            elif out.output_type in ("execute_result", "display_data"):
                widgets += WIDGET in out.data
                text.append(out.data.get("text/plain", ""))
    output = "".join(text)
    for claim in CLAIMS[name]:
        assert claim in output, f"{name}: expected {claim!r} in the output"
    assert widgets >= MIN_WIDGETS[name]
