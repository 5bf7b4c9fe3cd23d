"""The pages the documentation site generates from the code at every build (mkdocs-gen-files runs
this; see mkdocs.yml): the schedule gallery from the registry, the API reference from
``ppviz.__all__`` and ``ppviz.charts.__all__``, and the tutorials from ``notebooks/``. A new
schedule, public name or notebook appears without editing a page; tests/test_docs.py checks
that each one did."""

from __future__ import annotations

import html
import json
import logging
import pathlib
import re
import tempfile
import time

import griffe
import mkdocs_gen_files

import ppviz
import ppviz.charts
from ppviz.core.numbers import number, share

ROOT = pathlib.Path(__file__).resolve().parents[2]
log = logging.getLogger("mkdocs.plugins.ppviz")

#: the sizes every gallery picture is drawn at (a schedule's own default v; a schedule that
#: splits microbatches into sequence segments shows two)
GALLERY_DEVICES, GALLERY_MICROBATCHES, GALLERY_SEGMENTS = 4, 8, 2
#: the Gantt's plot width in pixels: with its labels, the content column's (at 1280 pixels, no
#: table of contents), so its text is drawn at its size
GALLERY_WIDTH = 760
ARXIV = re.compile(r"arXiv (\d{4}\.\d{4,5})")


# --- the schedule gallery ---------------------------------------------------------------------

def _text(value: str) -> str:
    """Registry text as HTML: escaped, with arXiv identifiers linked to their abstracts."""
    return ARXIV.sub(r'<a href="https://arxiv.org/abs/\1">arXiv \1</a>', html.escape(value))


def _facts(rows: list[tuple[str, str]]) -> str:
    cells = "".join(f"<tr><th>{html.escape(k)}</th><td>{v}</td></tr>" for k, v in rows)
    return f'<table class="ppviz-facts">{cells}</table>'


def _peaks(values) -> str:
    values = [float(x) for x in values]
    low, high = min(values), max(values)
    return number(high) if low == high else f"{number(low)} to {number(high)}"


def _gallery_config(spec) -> ppviz.Config:
    """The gallery's sizes, or the fewest microbatches above them the schedule accepts (STP needs
    m >= 3p − 1)."""
    segments = GALLERY_SEGMENTS if spec.segmented else 1
    refusal = None
    for m in range(GALLERY_MICROBATCHES, 4 * GALLERY_MICROBATCHES):
        try:
            return ppviz.Config(schedule=spec.name, devices=GALLERY_DEVICES, microbatches=m, segments=segments)
        except ppviz.ScheduleConstraintError as exc:
            refusal = exc
    raise refusal


def _closed_form_rows(res) -> list[tuple[str, str]]:
    cf = res.closed_form
    if cf is None:
        return [("closed form", "none published")]
    rows = [("bubble (idle per device)", f"<code>{html.escape(cf.bubble_formula)}</code>")]
    if cf.memory_formula:
        rows.append(("peak activation", f"<code>{html.escape(cf.memory_formula)}</code>"))
    rows.append(("holds for", html.escape(cf.assumptions)))
    rows.append(("source", _text(cf.source)))
    if cf.applies:
        at = (f"makespan {number(res.makespan)} (closed form {number(cf.makespan)}), bubble "
              f"{share(res.bubble_fraction)} (closed form {share(cf.bubble_fraction)})")
        if cf.peak_activation is not None:
            at += f", peak activation {_peaks(res.peak_activation)} (closed form {_peaks(cf.peak_activation)})"
    else:
        at = (f"makespan {number(res.makespan)}, bubble {share(res.bubble_fraction)}; the closed form does "
              f"not apply here ({html.escape(', '.join(cf.unmet) or 'its assumptions do not hold')})")
    rows.append(("here, simulated", at))
    return rows


def _schedule_section(spec, out: list[str]) -> float:
    """The gallery's section for one schedule; returns the CPU seconds its pictures took."""
    out.append(f"## `{spec.name}` {{#{spec.name}}}\n")
    out.append(html.escape(spec.summary) + "\n")
    rows = [("reference", _text(spec.reference)),
            ("aliases", ", ".join(f"<code>{html.escape(a)}</code>" for a in spec.aliases) or "none"),
            ("stages per device (v)", html.escape(spec.v_rule) + (f" (default {spec.default_v})" if spec.builder else "")),
            ("constraints", html.escape(spec.constraints) if spec.constraints else "none")]
    traits = [text for flag, text in ((spec.replicas > 1, f"{spec.replicas} model replicas"),
                                      (spec.split_backward, "backward split into I and W"),
                                      (spec.forward_only, "forward only (inference)"),
                                      (spec.segmented, "microbatches split into sequence segments"),
                                      (spec.overlapped_p2p, "overlaps communication (p2p=\"overlapped\" by default)"))
              if flag]
    if traits:
        rows.append(("traits", html.escape("; ".join(traits))))
    if spec.builder is None:
        out.append(_facts(rows) + "\n")
        out.append("Your own program, in torch's action strings or a torch CSV: see "
                   "[the custom schedules tutorial](tutorials/custom_schedules.ipynb) and "
                   "[`ppviz.Program`](reference/runs.md#ppviz.Program).\n")
        return 0.0
    cfg = _gallery_config(spec)
    start = time.process_time()
    res = ppviz.simulate(cfg)
    svg = ppviz.charts.to_svg(ppviz.charts.gantt_chart(res, width=GALLERY_WIDTH))
    with mkdocs_gen_files.open(f"gallery/{spec.name}.svg", "w") as fh:
        fh.write(svg)
    with tempfile.TemporaryDirectory() as tmp:
        page = pathlib.Path(tmp) / "chart.html"
        res.to_html(page)
        with mkdocs_gen_files.open(f"gallery/{spec.name}.html", "w") as fh:
            fh.write(page.read_text(encoding="utf-8"))
    seconds = time.process_time() - start
    sizes = f"p = {cfg.devices}, m = {cfg.microbatches}, v = {cfg.stages_per_device}"
    if cfg.segments > 1:
        sizes += f", k = {cfg.segments} segments"
    out.append(f'![{spec.name} at {sizes}, f = b = w = 1](gallery/{spec.name}.svg){{ loading=lazy '
               f'.ppviz-gantt }}\n')
    out.append(f"At {sizes} and f = b = w = 1 — [open it interactive](gallery/{spec.name}.html) "
               f"(tooltips, selection, zoom, replay; offline).\n")
    out.append(_facts(rows + _closed_form_rows(res)) + "\n")
    return seconds


def gallery() -> None:
    specs = list(ppviz.list_schedules())
    # the overview table links every section, so the page gives the charts the table of contents' width
    out = ["---\nhide:\n  - toc\n---\n", "# Schedule gallery\n",
           "Every schedule in the registry (`ppviz.list_schedules()`), drawn by "
           "`ppviz.simulate(cfg).to_svg(...)` at the same sizes (or the fewest microbatches above them that a schedule accepts), with its reference, its constraints "
           "and its published closed form beside the simulated figures. This page is generated from the "
           "registry when the site is built, so a schedule added to ppviz appears here by itself. "
           "The memory lanes under each chart are each device's activation memory over time, on one "
           "scale, the closed-form peak dashed. [The concepts](concepts/schedules.md) explain what the "
           "letters and colours mean.\n",
           "| schedule | v | what it is |", "|---|---|---|"]
    out += [f"| [`{s.name}`](#{s.name}) | {html.escape(s.v_rule)} | {html.escape(s.summary)} |" for s in specs]
    out.append("")
    start = time.perf_counter()
    seconds = sum(_schedule_section(spec, out) for spec in specs)
    log.info("gallery: %d schedules drawn in %.1f s (%.1f s of CPU)", len(specs), time.perf_counter() - start,
             seconds)
    with mkdocs_gen_files.open("gallery.md", "w") as fh:
        fh.write("\n".join(out))


# --- the API reference ------------------------------------------------------------------------

#: a page per layer of ppviz (ARCHITECTURE.md): a public name is documented on its layer's page
PAGES = {
    "runs": ("Runs, programs and results", "Configs, the simulator, programs and what a run returns "
             "(`ppviz/core`, `ppviz/schedules`)."),
    "models": ("Models and hardware", "Costs and memory from a transformer and an accelerator (`ppviz/model`)."),
    "traces": ("Traces and torch", "Measured runs and torch's formats (`ppviz/io`)."),
    "analysis": ("Calibration, search and sweeps", "What ppviz computes from runs (`ppviz/analysis`)."),
    "views": ("Notebook views", "The interactive charts (`ppviz/widgets`)."),
    "charts": ("ppviz.charts", "Altair charts of runs, drawn offline (`ppviz/charts`)."),
    "errors": ("Errors", "Every refusal is a `ppviz.PpvizError` that names what was wrong and what "
               "would be accepted (`ppviz/core/errors.py`)."),
}
LAYER_PAGES = {"core": "runs", "schedules": "runs", "model": "models", "io": "traces", "analysis": "analysis",
               "widgets": "views", "charts": "charts"}


def _canonical(public: str, obj) -> str:
    """Where griffe finds ``obj``: its defining module (``ppviz.show`` is loaded lazily, so only
    ``ppviz.widgets.viewer.show`` exists statically); constants by their public path."""
    if isinstance(obj, type(ppviz)):
        return obj.__name__
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    return f"{module}.{qualname}" if module and qualname else public


def _page_of(path: str) -> str:
    if path.startswith("ppviz.core.errors."):
        return "errors"
    layer = path.split(".")[1]
    if layer not in LAYER_PAGES:
        raise RuntimeError(f"{path}: ppviz.{layer} has no API page; add it to PAGES in {__file__}")
    return LAYER_PAGES[layer]


_PACKAGE: list = []


def _docstring(path: str) -> str:
    """The docstring griffe reads for ``path`` (as the API pages do: ``#:`` comments included)."""
    if not _PACKAGE:
        _PACKAGE.append(griffe.load("ppviz", extensions=griffe.load_extensions("griffe_sphinx")))
    obj = _PACKAGE[0] if path == "ppviz" else _PACKAGE[0][path.removeprefix("ppviz.")]
    return obj.docstring.value if obj.docstring else ""


def _summary(path: str, most: int = 150) -> str:
    """The first sentence of ``path``'s docstring, as plain text, cut at a word within ``most``."""
    paragraph = " ".join(_docstring(path).strip().split("\n\n")[0].split())
    sentence = re.split(r"(?<!e\.g\.)(?<!i\.e\.)(?<=\.)\s", paragraph, maxsplit=1)[0]
    text = re.sub(r":\w+:`~?([^`]+)`", r"\1", sentence).replace("``", "")
    if len(text) > most:
        text = text[:most].rsplit(" ", 1)[0].rstrip(",;:(") + " …"
    return html.escape(text).replace("|", "&#124;")  # a table's cell


def _entry(public: str, path: str) -> str:
    # the explicit anchor is the public name, so pages and tests link to ppviz.show wherever it
    # lives; the table of contents names it within its page (ppviz.charts.to_svg as to_svg)
    label = public.rsplit(".", 1)[-1]
    return f"[](){{#{public}}}\n\n::: {path}\n    options:\n      heading: \"{public}\"\n      toc_label: \"{label}\"\n"


def reference() -> None:
    entries: dict[str, list[tuple[str, str, object]]] = {page: [] for page in PAGES}
    for name in ppviz.__all__:
        obj = getattr(ppviz, name)
        if obj is ppviz.charts:
            continue  # its own page: the module's docstring, then each of ppviz.charts.__all__
        path = _canonical(f"ppviz.{name}", obj)
        entries[_page_of(path)].append((f"ppviz.{name}", path, obj))
    for name in ppviz.charts.__all__:
        obj = getattr(ppviz.charts, name)
        entries["charts"].append((f"ppviz.charts.{name}", _canonical(f"ppviz.charts.{name}", obj), obj))

    index = ["# API reference\n",
             "Every public name: `ppviz.__all__` and `ppviz.charts.__all__`, each documented from its "
             "docstring. This reference is generated from those lists when the site is built.\n"]
    nav = ["* [Overview](index.md)"]
    for page, (title, intro) in PAGES.items():
        if not entries[page]:
            continue
        nav.append(f"* [{title}]({page}.md)")
        text = [f"# {title}\n", intro + "\n"]
        if page == "charts":
            text.append("::: ppviz.charts\n    options:\n      show_root_heading: false\n      show_root_toc_entry: false\n"
                        "      members: false\n")
        index.append(f"## [{title}]({page}.md)\n\n| name | what it is |\n|---|---|")
        for public, path, obj in entries[page]:
            text.append(_entry(public, path))
            index.append(f"| [`{public}`]({page}.md#{public}) | {_summary(path)} |")
        index.append("")
        with mkdocs_gen_files.open(f"reference/{page}.md", "w") as fh:
            fh.write("\n".join(text))
    with mkdocs_gen_files.open("reference/index.md", "w") as fh:
        fh.write("\n".join(index))
    with mkdocs_gen_files.open("reference/SUMMARY.md", "w") as fh:
        fh.write("\n".join(nav) + "\n")


# --- the tutorials ----------------------------------------------------------------------------

#: the order to read them in; a notebook not named here follows, alphabetically
TUTORIAL_ORDER = ("quickstart", "schedule_zoo", "bubbles", "memory", "custom_schedules", "real_model", "will_it_fit",
                  "where_communication_hurts", "measured_to_better_schedule", "find_the_best_schedule")


def _title(notebook: dict, fallback: str) -> str:
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return fallback


def tutorials() -> None:
    paths = sorted((ROOT / "notebooks").glob("*.ipynb"),
                   key=lambda p: (TUTORIAL_ORDER.index(p.stem) if p.stem in TUTORIAL_ORDER else len(TUTORIAL_ORDER),
                                  p.stem))
    nav = []
    for path in paths:
        source = path.read_text(encoding="utf-8")
        with mkdocs_gen_files.open(f"tutorials/{path.name}", "w") as fh:
            fh.write(source)
        mkdocs_gen_files.set_edit_path(f"tutorials/{path.name}", path.relative_to(ROOT).as_posix())
        nav.append(f"* [{_title(json.loads(source), path.stem)}]({path.name})")
    with mkdocs_gen_files.open("tutorials/SUMMARY.md", "w") as fh:
        fh.write("\n".join(nav) + "\n")


gallery()
reference()
tutorials()
