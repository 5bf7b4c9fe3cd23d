"""The structure ARCHITECTURE.md describes, checked: layers without cycles (import-linter), types
that the checker (mypy, configured in pyproject.toml) finds no error in, the schedules package
importable by name, one source of style, and one description of the synced traits shared by
Python and TypeScript."""

import pathlib
import re
import subprocess
import sys

import pytest

import ppviz

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_import_linter_contracts_hold():
    lint = pathlib.Path(sys.executable).with_name("lint-imports")
    out = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "2 kept, 0 broken" in out.stdout


def test_the_type_checker_finds_no_error_in_ppviz():
    # ./run-tests runs it first, so this run reads its cache (.mypy_cache) and takes seconds
    out = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith("Success: no issues found")


def test_every_silenced_type_error_names_its_code_and_why():
    ignores = [(path, line) for path in sorted((ROOT / "ppviz").rglob("*.py"))
               for line in path.read_text().splitlines() if "type: ignore" in line]
    assert ignores  # the pattern below is matched against real lines
    for path, line in ignores:
        assert re.search(r"# type: ignore\[[a-z-]+(, [a-z-]+)*\]  # \S", line), f"{path.name}: {line.strip()}"
    assert len(ignores) < 15


def test_schedule_modules_are_reachable_by_name_and_register_their_builders():
    import ppviz.schedules.dualpipe
    from ppviz.core.registry import lookup

    assert lookup("dualpipe").builder is ppviz.schedules.dualpipe.build_dualpipe
    assert lookup("v-half").builder is ppviz.schedules.v_shape.build_v_half
    assert ppviz.schedules.v_shape.__name__ == "ppviz.schedules.v_shape"


@pytest.mark.parametrize("modules", ["ppviz.core.engine, ppviz.core.result", "ppviz, ppviz.analysis.comparison"])
def test_the_core_and_the_comparison_load_no_presentation_code(modules):
    code = (f"import sys, {modules}; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('altair', 'anywidget', 'ipywidgets') "
            "or m.startswith(('ppviz.charts', 'ppviz.widgets', 'pandas'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


LITERAL = re.compile(
    r"(?<!PR )#(?:[0-9a-fA-F]{8}|[0-9a-fA-F]{6}|[0-9a-fA-F]{3,4})\b"  # #rgb, #rgba, #rrggbb, #rrggbbaa
    r"|\b(?:rgba?|hsla?)\(\s*\d"  # rgb(…), rgba(…), hsl(…)
    r"|font-family\s*:\s*[^$;\s]"  # a CSS font list not read from the style file
    r"|[\"'`][^\"'`\n]*\b(?:Inter|Segoe|Arial|Helvetica|Roboto|Menlo|Consolas|Monaco|Courier|Georgia|Verdana|DejaVu"
    r"|system-ui|sans-serif|monospace)\b"  # a font family in a string
    r"|font-size\s*:\s*\d"  # a CSS font size not read from the style file
    r"|\b\d+(?:\.\d+)?px \$\{FONT\}"  # a canvas font size
    r"|\?\s*\d+(?:\.\d+)?\s*:\s*\d+(?:\.\d+)?\}px"  # a canvas font size chosen by a condition
    r"|[Ff]ontSize\s*=\s*\d")  # an Altair font size


def test_the_literal_pattern_finds_what_it_should():
    for literal in ('c = "#aabbccdd"', "c = '#abcd'", "'#fff'", "'#1c2128'", "rgba(0, 0, 0, 0.1)", "hsl(120, 50%, 50%)",
                    "font-family: Arial;", "ctx.font = `11px monospace`", 'family = "Helvetica Neue"', '"Inter", sans',
                    ".x { font-size: 12px; }", "ctx.font = `600 11px ${FONT}`;", "`${roomy ? 11 : 9}px ${FONT}`",
                    "mark_text(fontSize=11)", "alt.Axis(labelFontSize=12)"):
        assert LITERAL.search(literal), literal
    for fine in ("torch PR #130210", "# glyph width in ems of the default sans-serif", "ctx.font = `600 ${PX.label}px ${FONT}`;",
                 ".x { font-size: ${px.text}px; }", "alt.Axis(labelFontSize=TEXT_SIZE)",
                 "font: ${style.font.size}px/${style.font.lineHeight} ${style.font.family};",
                 "/** A CSS colour (#rrggbb, rgb(...) or rgba(...)) */"):
        assert not LITERAL.search(fine), fine


@pytest.mark.parametrize("pattern", ["ppviz/**/*.py", "js/src/*.ts"])
def test_no_colour_or_font_literal_outside_the_style_file(pattern):
    found = []
    for path in ROOT.glob(pattern):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if LITERAL.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "colours, fonts and font sizes belong in ppviz/style.json:\n" + "\n".join(found)


def typescript_interface(name: str) -> set[str]:
    text = (ROOT / "js" / "src" / "traits.ts").read_text(encoding="utf-8")
    body = re.search(rf"export interface {name} \{{(.*?)\n\}}", text, re.S).group(1)
    return set(re.findall(r"^\s+(\w+):", body, re.M))


def synced(widget_class) -> set[str]:
    import ipywidgets

    base = set(ipywidgets.DOMWidget.class_traits(sync=True))
    return {name for name in widget_class.class_traits(sync=True) if name not in base and not name.startswith("_e")
            and not name.startswith("_css") and not name.startswith("_anywidget")} - {"_view_name", "_model_name"}


def test_traits_ts_describes_every_synced_trait():
    from ppviz.widgets import CompareState, GanttWidget

    assert typescript_interface("GanttTraits") == synced(GanttWidget)
    assert typescript_interface("CompareStateTraits") == synced(CompareState)
