"""MkDocs hooks (mkdocs.yml).

The generated sections' SUMMARY.md (scripts/docs/gen_pages.py) are their navigation, which
literate-nav reads; they are not pages of their own.

A notebook page's table of contents is read off the headings nbconvert wrote, with their ids:
mkdocs-jupyter builds it from a Markdown copy of the notebook without its code spans, so a
heading such as ``## `gpipe` `` came out empty and linked to an id no element has.

The site loads nothing from the network. nbconvert's notebook
template, which mkdocs-jupyter renders, always writes a <script> that loads MathJax from a CDN and
one that imports Mermaid from it when a page has a diagram; the notebooks have neither formulas
nor diagrams, so both are removed from the tutorial pages. tests/test_docs.py fails on any page
that would still load a script, stylesheet or font from elsewhere."""

from __future__ import annotations

import hashlib
import json
import pathlib
import re

from mkdocs.structure.files import InclusionLevel
from mkdocs.structure.toc import get_toc

MATHJAX = re.compile(r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->", re.DOTALL)
MERMAID = re.compile(r'<script type="module">(?:(?!</script>).)*?jp-Mermaid(?:(?!</script>).)*</script>', re.DOTALL)
HEADING = re.compile(r'<h([1-6]) id="([^"]+)"[^>]*>(.*?)</h\1>', re.DOTALL)


def _toc(html: str):
    """The nested table of contents of the headings in ``html`` (Markdown's toc tokens)."""
    root: list[dict] = []
    open_: list[dict] = []
    for level, anchor, inner in HEADING.findall(html):
        name = " ".join(re.sub(r"<[^>]+>", "", inner).replace("¶", "").split())
        token = {"level": int(level), "id": anchor, "name": name, "children": []}
        while open_ and open_[-1]["level"] >= token["level"]:
            open_.pop()
        (open_[-1]["children"] if open_ else root).append(token)
        open_.append(token)
    return get_toc(root)


def on_page_content(html, page, config, files):
    if not page.file.src_uri.endswith(".ipynb"):
        return html
    page.toc = _toc(html)
    return MERMAID.sub("", MATHJAX.sub("", html))


def on_files(files, config):
    for file in files:
        if file.src_uri.endswith("/SUMMARY.md"):
            file.inclusion = InclusionLevel.EXCLUDED
    return files


#: what the site is built from: a site built from other files is stale (tests/test_docs.py)
INPUTS = ("mkdocs.yml", "docs", "notebooks", "scripts/docs", "ppviz")
STAMP = ".ppviz-docs-build.json"


def inputs_digest(root: pathlib.Path) -> str:
    digest = hashlib.sha256()
    for top in INPUTS:
        path = root / top
        files = [path] if path.is_file() else sorted(
            f for f in path.rglob("*") if f.is_file() and "__pycache__" not in f.parts and f.suffix != ".pyc")
        for f in files:
            digest.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return digest.hexdigest()


def on_post_build(config):
    root = pathlib.Path(config.config_file_path).parent
    stamp = {"inputs": inputs_digest(root), "strict": bool(config.strict)}
    (pathlib.Path(config.site_dir) / STAMP).write_text(json.dumps(stamp), encoding="utf-8")
