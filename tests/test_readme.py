"""The README matches the code: its schedule table, its Python and shell examples, its picture."""

import pathlib
import re
import shlex
import textwrap

import ppviz
from ppviz.cli import main

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def blocks(language):
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def test_schedule_table_lists_every_registry_schedule():
    table = README[README.index("## Schedules"):README.index("## Command line")]
    for spec in ppviz.list_schedules():
        assert f"`{spec.name}`" in table, spec.name


def test_python_examples_run_and_print_what_they_claim(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # its exports write where it runs
    namespace = {}
    for code in blocks("python"):
        exec(compile(code, "README.md", "exec"), namespace)
    # the custom-program example claims a makespan of 12.0
    assert ppviz.simulate(namespace["prog"], f=1, b=2, w=1).makespan == 12.0


def test_the_module_help_examples_run(capsys):
    # ``help(ppviz)`` / ``ppviz?`` in a notebook is where a newcomer looks first
    doc = ppviz.__doc__
    examples = [textwrap.dedent(block) for block in re.findall(r"::\n\n((?:    .*\n|\n)+)", doc)]
    assert len(examples) == 3
    namespace = {}
    for code in examples:
        exec(compile(code, "ppviz.__doc__", "exec"), namespace)
    assert namespace["res"].makespan == ppviz.simulate(ppviz.Config("zb-h1", devices=4, microbatches=8)).makespan
    assert namespace["cfg"].topology is not None and namespace["cfg"].comm_bytes > 0
    assert "memory capacity  80 GiB per device" in capsys.readouterr().out
    for name in re.findall(r"``ppviz\.(\w+)", doc) + re.findall(r"``res\.(to_\w+)``", doc):
        assert hasattr(ppviz, name) or hasattr(ppviz.Result, name), name


def test_shell_examples_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    ppviz.Config("1f1b", devices=2, microbatches=2).build().to_torch_csv("my_schedule.csv")
    lines = [line.split("#")[0].strip() for block in blocks("bash") for line in block.splitlines()]
    commands = [shlex.split(line)[1:] for line in lines if line.startswith("ppviz ")]
    assert len(commands) == 8
    for argv in commands:
        assert main(argv) == 0, argv
    capsys.readouterr()
    assert (tmp_path / "run.json").exists() and (tmp_path / "run.html").exists() and (tmp_path / "all.png").exists()
    assert (tmp_path / "found.html").exists()


def test_the_readme_stays_a_front_page():
    # the reference is the documentation site; the README pitches, installs and shows
    assert len(README.splitlines()) <= 200
    for link in re.findall(r"\]\((docs/[^)#]+)", README):
        assert (ROOT / link).is_file(), link


def test_the_pictures_exist():
    for image in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", README):
        assert (ROOT / image).is_file(), image
