"""The documentation site (mkdocs.yml) as built: every internal link and anchor resolves, no page
loads anything from the network, every public name has an API entry, every registry schedule is
in the gallery and every notebook is a page with its stored outputs.

It reads site/ when ./run-tests (or ./run-docs --strict) built it from the files as they are
now, and otherwise builds a copy of its own with --strict: a stale or missing site is never
what it checks."""

from __future__ import annotations

import ast
import html
import importlib.util
import json
import os
import pathlib
import posixpath
import re
import subprocess
import sys
from html.parser import HTMLParser
from urllib.parse import unquote, urlsplit

import pytest
from filelock import FileLock

import ppviz
import ppviz.charts

from .helpers import config_at_least

ROOT = pathlib.Path(__file__).resolve().parents[1]
SITE = ROOT / "site"
_spec = importlib.util.spec_from_file_location("ppviz_docs_hooks", ROOT / "scripts" / "docs" / "hooks.py")
hooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hooks)


def _current(site: pathlib.Path) -> bool:
    try:
        stamp = json.loads((site / hooks.STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return stamp == {"inputs": hooks.inputs_digest(ROOT), "strict": True}


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> pathlib.Path:
    if _current(SITE):
        return SITE
    shared = tmp_path_factory.getbasetemp().parent  # one directory for every xdist worker
    built = shared / "docs-site"
    with FileLock(str(shared / "docs-site.lock")):
        if not _current(built):
            env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}
            run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--clean", "--site-dir",
                                  str(built)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
            assert run.returncode == 0, f"mkdocs build --strict failed:\n{run.stderr[-6000:]}"
        assert _current(built)
    return built


class _Page(HTMLParser):
    """The ids, the references (tag, attribute, value) and the inline scripts and styles of a page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.refs: list[tuple[str, str, str]] = []
        self.inline: list[tuple[str, str]] = []
        self.headings: list[tuple[str, str]] = []  # (id, text) of h1..h6
        self._open: str | None = None
        self._heading: list | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id", "name"):
            if attrs.get(key) and (key == "id" or tag == "a"):
                self.ids.add(attrs[key])
        for key in ("href", "src", "data", "poster"):
            if attrs.get(key) is not None:
                self.refs.append((tag, key, attrs[key]))
        if attrs.get("srcset"):
            self.refs += [(tag, "srcset", part.split()[0]) for part in attrs["srcset"].split(",") if part.strip()]
        if tag in ("script", "style"):
            self._open = tag
            self.inline.append((tag, ""))
        if re.fullmatch(r"h[1-6]", tag):
            self._heading = [attrs.get("id", ""), ""]

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._open = None
        if self._heading is not None and re.fullmatch(r"h[1-6]", tag):
            self.headings.append((self._heading[0], " ".join(self._heading[1].split())))
            self._heading = None

    def handle_data(self, data):
        if self._open:
            tag, text = self.inline[-1]
            self.inline[-1] = (tag, text + data)
        if self._heading is not None:
            self._heading[1] += data


_parsed: dict[pathlib.Path, _Page] = {}


def parse(path: pathlib.Path) -> _Page:
    if path not in _parsed:
        page = _Page()
        page.feed(path.read_text(encoding="utf-8"))
        _parsed[path] = page
    return _parsed[path]


def pages(site: pathlib.Path) -> list[pathlib.Path]:
    found = sorted(site.rglob("*.html"))
    assert len(found) > 40, f"only {len(found)} pages in {site}"
    return found


def test_every_internal_link_and_anchor_resolves(site):
    broken = []
    checked = 0
    for path in pages(site):
        for tag, attr, ref in parse(path).refs:
            parts = urlsplit(ref)
            if parts.scheme or ref.startswith("//") or not ref:
                continue  # outbound links (checked for loads below), data: and mailto: URIs
            # a path from the root is the 404 page's (MkDocs writes it for a server's root)
            base = site if parts.path.startswith("/") else path.parent
            target = path if not parts.path else (base / unquote(parts.path.lstrip("/")))
            target = pathlib.Path(posixpath.normpath(target.as_posix()))
            if target.is_dir():
                target = target / "index.html"
            checked += 1
            if site not in target.parents and target != site:
                broken.append(f"{path.relative_to(site)}: {tag} {attr}={ref!r} leaves the site")
            elif not target.is_file():
                broken.append(f"{path.relative_to(site)}: {tag} {attr}={ref!r}: no {target.relative_to(site)}")
            elif parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in parse(target).ids:
                broken.append(f"{path.relative_to(site)}: {tag} {attr}={ref!r}: no #{parts.fragment} there")
    assert checked > 2000
    assert not broken, "\n".join(broken[:50])


REMOTE = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*:)?//", re.IGNORECASE)
#: what an inline script or style would fetch from elsewhere: a module import, a CSS url() or @import
INLINE_REMOTE = re.compile(r"""(?:\bimport\s*\(\s*|\bfrom\s+|@import\s+(?:url\()?|url\(\s*|\.src\s*=\s*|fetch\(\s*)["']?(?:https?:)?//""",
                           re.IGNORECASE)


def test_no_page_loads_anything_from_the_network(site):
    loads = []
    for path in pages(site):
        page = parse(path)
        for tag, attr, ref in page.refs:
            if tag == "a" or not REMOTE.match(ref):
                continue  # a plain outbound link is followed by the reader, not loaded
            loads.append(f"{path.relative_to(site)}: <{tag} {attr}={ref!r}>")
        for tag, text in page.inline:
            for match in INLINE_REMOTE.finditer(text):
                loads.append(f"{path.relative_to(site)}: inline {tag}: {text[match.start():match.end() + 60]!r}")
    for path in sorted(site.rglob("*.css")):
        for match in INLINE_REMOTE.finditer(path.read_text(encoding="utf-8")):
            loads.append(f"{path.relative_to(site)}: {match.group(0)!r}")
    assert not loads, "\n".join(loads[:50])
    # Material's Google Fonts are off (theme.font: false) and no notebook page carries MathJax
    everything = "".join(p.read_text(encoding="utf-8") for p in pages(site))
    for absent in ("fonts.googleapis.com", "fonts.gstatic.com", "cdnjs.cloudflare.com", "unpkg.com", "jsdelivr"):
        assert absent not in everything


def _public_names() -> list[str]:
    return [f"ppviz.{n}" for n in ppviz.__all__ if n != "charts"] + [f"ppviz.charts.{n}" for n in ppviz.charts.__all__]


def test_every_public_name_has_an_api_entry(site):
    reference = sorted((site / "reference").glob("*.html"))
    anchors = {i: path for path in reference for i in parse(path).ids}
    headings = {text.replace("¶", "").strip() for path in reference for _, text in parse(path).headings}
    overview = parse(site / "reference" / "index.html")
    linked = {unquote(urlsplit(ref).fragment) for tag, _, ref in overview.refs if tag == "a"}
    missing = []
    for name in _public_names():
        if name not in anchors:
            missing.append(f"{name}: no anchor on any API page")
        elif not any(h.split()[0] == name for h in headings if h):
            missing.append(f"{name}: no heading names it")
        if name not in linked:
            missing.append(f"{name}: not in the API overview")
    assert not missing, "\n".join(missing)
    # each entry shows its docstring: a function's page holds the start of its first sentence
    for name in ("ppviz.simulate", "ppviz.charts.gantt_chart", "ppviz.load_trace"):
        obj = eval(name, {"ppviz": ppviz})  # noqa: S307 (our own public names)
        first_words = " ".join(obj.__doc__.split()[:3])
        assert " ".join(first_words.replace("``", "").split()) in _text(anchors[name].read_text(encoding="utf-8")), name


def _section(page_html: str, anchor: str) -> str:
    """The HTML of a gallery section: from its heading to the next one."""
    start = page_html.index(f'id="{anchor}"')
    end = page_html.find("<h2", start)
    return page_html[start:end if end > 0 else None]


def _text(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", fragment)).split())


def test_every_registry_schedule_is_in_the_gallery(site):
    page_html = (site / "gallery.html").read_text(encoding="utf-8")
    ids = parse(site / "gallery.html").ids
    specs = list(ppviz.list_schedules())
    assert len(specs) >= 20
    for spec in specs:
        assert spec.name in ids, f"{spec.name} has no section in the gallery"
        section = _section(page_html, spec.name)
        assert " ".join(spec.reference.split()) in _text(section), spec.name
        if spec.builder is None:
            continue
        svg = site / "gallery" / f"{spec.name}.svg"
        assert f'src="gallery/{spec.name}.svg"' in section and svg.is_file(), spec.name
        assert svg.read_text(encoding="utf-8").lstrip().startswith("<svg"), spec.name
        assert (site / "gallery" / f"{spec.name}.html").is_file(), spec.name
        closed = ppviz.simulate(config_at_least(spec, microbatches=ppviz.Config().microbatches)).closed_form
        if closed is not None:
            assert " ".join(closed.bubble_formula.split()) in _text(section), f"{spec.name}: no bubble formula"


def test_every_notebook_is_a_page_with_its_outputs(site):
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert len(notebooks) >= 10
    nav = parse(site / "index.html")
    nav_targets = {urlsplit(ref).path for tag, _, ref in nav.refs if tag == "a"}
    for path in notebooks:
        notebook = json.loads(path.read_text(encoding="utf-8"))
        page = site / "tutorials" / f"{path.stem}.html"
        assert page.is_file(), f"{path.name} is not a page"
        assert f"tutorials/{path.stem}.html" in nav_targets, f"{path.name} is not in the navigation"
        text = page.read_text(encoding="utf-8")
        pictures = sum("image/png" in output.get("data", {}) for cell in notebook["cells"]
                       for output in cell.get("outputs", []))
        assert pictures > 0 and text.count('src="data:image/png;base64,') >= pictures, path.name
        printed = [output["text"] for cell in notebook["cells"] for output in cell.get("outputs", [])
                   if output.get("output_type") == "stream"]
        for lines in printed[:3]:
            first = next(line for line in "".join(lines).splitlines() if line.strip())
            assert html.escape(first.strip(), quote=False) in text, f"{path.name}: {first!r} is not shown"


FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)
PAGES_WITH_CODE = sorted(p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")
                         if FENCE.search(p.read_text(encoding="utf-8")))


def test_pages_with_code_are_found():
    assert {"getting-started.md", "how-to/measured-runs.md", "how-to/search.md", "how-to/sweeps.md",
            "how-to/exports.md", "concepts/schedules.md"} <= set(PAGES_WITH_CODE)


#: an expression statement whose comment is a number states its value: ``res.makespan   # 12.0``
STATED = re.compile(r"#\s*(-?\d+(?:\.(\d+))?)\s*$")


@pytest.mark.parametrize("page", PAGES_WITH_CODE)
def test_the_code_on_a_page_runs(page, tmp_path, monkeypatch):
    """Each page's Python blocks, in order and in one namespace, as a reader would paste them: a
    renamed or removed name fails here, and so does a value a comment states that the code does
    not give. Blocks that write files write them in a scratch folder."""
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    stated = 0
    for k, block in enumerate(FENCE.findall((ROOT / "docs" / page).read_text(encoding="utf-8"))):
        where = f"{page}, Python block {k + 1}"
        lines = block.splitlines()
        for statement in ast.parse(block).body:
            code = ast.Module([statement], type_ignores=[])
            try:
                if isinstance(statement, ast.Expr):
                    value = eval(compile(ast.Expression(statement.value), where, "eval"), namespace)  # noqa: S307
                else:
                    exec(compile(code, where, "exec"), namespace)  # noqa: S102 (our own pages)
            except Exception as error:
                raise AssertionError(f"{where} fails at line {statement.lineno}:\n{block}") from error
            match = STATED.search(lines[statement.end_lineno - 1]) if isinstance(statement, ast.Expr) else None
            if match:
                stated += 1
                decimals = len(match.group(2) or "")
                assert round(float(value), decimals) == float(match.group(1)), \
                    f"{where}, line {statement.end_lineno}: the comment says {match.group(1)}, the code gives {value!r}"
    if page in ("concepts/schedules.md", "how-to/measured-runs.md"):
        assert stated, f"{page} states a value in a comment; it was not checked"
