"""User-facing text against reviewed snapshots: refusals, closed-form figures and their
formulas, summaries and the registry table.

A snapshot is the text a user reads (a refusal naming the field, value and what would work;
a closed form's formula, source and assumptions), reviewed once and kept in
``tests/snapshots/``; any change to it fails here and must be looked at. Regenerate after a
deliberate change with ``PPVIZ_UPDATE_SNAPSHOTS=1 pytest tests/test_snapshots.py`` and review
the diff.
"""

import dataclasses
import io
import os
import pathlib

import numpy as np
import pytest

import ppviz
from ppviz import Config, Program, simulate
from ppviz.core.registry import all_specs

from .helpers import config_at_least

SNAPSHOTS = pathlib.Path(__file__).parent / "snapshots"
BUILT = [s for s in all_specs() if s.builder is not None]


def check(name: str, text: str) -> None:
    path = SNAPSHOTS / f"{name}.txt"
    if os.environ.get("PPVIZ_UPDATE_SNAPSHOTS"):
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        import difflib

        diff = "\n".join(difflib.unified_diff(expected.splitlines(), text.splitlines(), "snapshot", "now",
                                              lineterm="", n=1))
        pytest.fail(f"{name} differs from tests/snapshots/{name}.txt:\n{diff}")


def outcome(call) -> str:
    try:
        value = call()
    except ValueError as exc:
        return f"{type(exc).__name__}: {exc}"
    return f"ok: {value}"


def number(x) -> str:
    return f"{float(x):.9g}"


SIZES = [(4, 8, 1, None), (4, 8, 2, None), (4, 8, 3, None), (3, 8, 1, None), (3, 7, 2, None), (4, 6, 2, None),
         (4, 8, 2, 3), (4, 8, 2, 6), (4, 8, 2, 16), (4, 3, 1, None), (4, 3, 2, None), (1, 1, 1, None),
         (2, 2, 2, None), (5, 10, 2, None), (4, 7, 2, None), (6, 12, 2, None), (8, 15, 4, None)]


def test_every_schedule_accepts_or_refuses_each_size_with_its_reason():
    lines = []
    for spec in BUILT:
        for p, m, v, g in SIZES:
            def build(spec=spec, p=p, m=m, v=v, g=g):
                prog = Config(schedule=spec.name, devices=p, microbatches=m, stages_per_device=v,
                              microbatch_group_size=g).build()
                return f"{len(prog)} ops, {prog.stages} stages"
            lines.append(f"{spec.name} p={p} m={m} v={v} g={g}: {outcome(build)}")
    check("refusals", "\n".join(lines) + "\n")


BAD_CONFIGS = [
    dict(schedule="1f1bb"), dict(schedule="zerobubble"), dict(schedule=3), dict(devices=0), dict(devices=2.5),
    dict(devices=True), dict(microbatches=-1), dict(f=-1), dict(f=float("nan")), dict(b="1"), dict(f=0, b=0, w=0),
    dict(comm=float("inf")), dict(fb=0), dict(w_share=1.5), dict(activation_bytes=0), dict(label=5),
    dict(stage_costs=[1]), dict(stage_costs={4: {"f": 1}}), dict(stage_costs={0: 1.0}),
    dict(stage_costs={0: {"x": 1}}), dict(stage_costs={0: {"f": -1}}), dict(stage_costs={"a": {"f": 1}}),
    dict(microbatch_group_size=0), dict(stages_per_device=0),
    dict(recompute="everything"), dict(recompute="full", recompute_cost=-1), dict(recompute_activation=float("inf")),
    dict(memory_capacity=0), dict(stage_costs={0: {"params": -2}}),
]


def test_bad_config_fields_name_the_field_the_value_and_what_is_accepted():
    lines = [f"{kw!r}: {outcome(lambda kw=kw: Config(**kw).schedule)}" for kw in BAD_CONFIGS]
    check("config_errors", "\n".join(lines) + "\n")


BAD_PROGRAMS = [
    "", "   \n# only a comment\n", "0F0 0X0", "device 0: 0F0 0B0\ndevice 0: 0F0", "device 1: 1F0 1B0",
    "0F0 (0F1;0W0)OVERLAP_F_B", "0F0 0F0 0B0 0B0", "0F0 0B0\n1F0", "0F0 0I0", "0W0 0F0 0I0",
    "0B0 0F0", "0F0 0B0\n0F1 0B1", "0F0 0F1 0B0 0B1\n2F0 2B0 2F1 2B1", "0F0 0B0 0W0",
    "0F0 0I0 0W0 0B0", "(0F0;0B0)OVERLAP_F_B", "0F99999999 0B0", "99999999F0", "0F0 0SEND_F0 0B0 0RECV_B0",
    "rank 0: 0F0 0B0\nrank 2: 2F0 2B0", "device 0: 0F0, 0B0,",
    {0: "0F0 0B0", "x": "1F0"}, {0: "0F0 0B0", 2: "2F0 2B0"}, {0: ["0F0", 5]}, {-1: "0F0"}, 42,
]


def describe(prog) -> str:
    prog.validate()
    pl = prog.placement
    return (f"{prog.devices} devices, {prog.stages} stages, {prog.microbatches} microbatches, {len(prog)} ops, "
            f"placement {pl.style if pl else None} {list(pl.stage_device) if pl else ''}")


def test_bad_programs_say_where_and_what_would_work():
    lines = [f"{text!r}: {outcome(lambda text=text: describe(Program.from_text(text)))}" for text in BAD_PROGRAMS]
    csvs = ["", "0F0,0B0\n\n1F0,1B0\n", "0F0,,0B0\n", "0F0,0Q0\n"]
    lines += [f"csv {text!r}: {outcome(lambda text=text: describe(Program.from_torch_csv(io.StringIO(text))))}"
              for text in csvs]
    shapes = [dict(microbatches=1), dict(stages=1), dict(placement="loop"), dict(placement="v"),
              dict(placement="contiguous"), dict(placement="bidirectional"), dict(placement="diagonal"),
              dict(microbatches=4, stages=4, name="mine")]
    text = "0F0 0F1 2F0 2F1 2B0 2B1 0B0 0B1\n1F0 1F1 3F0 3F1 3B0 3B1 1B0 1B1"
    for kw in shapes:
        lines.append(f"shape {kw!r}: {outcome(lambda kw=kw: describe(Program.from_text(text, **kw)))}")
    check("program_errors", "\n".join(lines) + "\n")


def closed_form_text(cf) -> str:
    out = []
    for field in dataclasses.fields(cf):
        value = getattr(cf, field.name)
        if isinstance(value, float):
            value = number(value)
        elif isinstance(value, tuple):
            value = "(" + ", ".join(x if isinstance(x, str) else number(x) for x in value) + ")"
        out.append(f"  {field.name}: {value}")
    out.append(f"  makespan: {number(cf.makespan)}  bubble_fraction: {number(cf.bubble_fraction)}  "
               f"bubble_rate: {number(cf.bubble_rate)}")
    return "\n".join(out)


def test_closed_forms_with_their_formulas_sources_and_assumptions():
    lines = []
    for spec in BUILT:
        if spec.closed_form is None:
            continue
        v = spec.default_v
        p = 4
        for options in (dict(), dict(f=1.0, b=2.0, w=0.5, activation=2.5, w_share=0.5),
                        dict(microbatches=16, f=2.0, b=2.0, w=1.5, fb=4.0, comm=0.1),
                        dict(microbatches=12, microbatch_group_size=6 if v > 1 else None)):
            opts = {"microbatches": 8, **options}
            try:
                cfg = Config(schedule=spec.name, devices=p, stages_per_device=v, **opts)
            except ppviz.ScheduleConstraintError as exc:
                lines.append(f"{spec.name} {opts}: refused: {exc}")
                continue
            lines.append(f"{spec.name} {opts}:")
            lines.append(closed_form_text(spec.closed_form(cfg)))
    check("closed_forms", "\n".join(lines) + "\n")


def test_summaries_and_registry_table():
    parts = [repr(ppviz.list_schedules()), ppviz.list_schedules()._repr_html_()]
    for spec in BUILT:
        cfg = config_at_least(spec, devices=4, microbatches=8, params=2.0, w=0.5)
        parts.append(simulate(cfg).summary())
        parts.append(repr(simulate(cfg)))
    parts.append(simulate(Program.from_text("0F0 0F1 0B0 0B1\n1F0 1B0 1F1 1B1"), b=2.0).summary())
    check("summaries", "\n\n".join(parts) + "\n")


def test_program_readers_pass_their_shape_options_through(tmp_path):
    text = "0F0 0B0\n1F0 1B0"
    for prog in (Program.from_text(text, microbatches=3, stages=2, name="mine"),
                 Program.from_actions({0: ["0F0", "0B0"], 1: ["1F0", "1B0"]}, microbatches=3, stages=2, name="mine")):
        assert (prog.microbatches, prog.stages, prog.name) == (3, 2, "mine")
    path = tmp_path / "p.csv"
    path.write_text("0F0,0B0\n1F0,1B0\n")
    prog = Program.from_torch_csv(path, microbatches=3, stages=2, name="mine")
    assert (prog.microbatches, prog.stages, prog.name) == (3, 2, "mine")
    prog = Program.from_torch_csv(str(path), placement="contiguous")
    assert prog.placement.style == "contiguous"
    with open(path, newline="") as fh:
        assert Program.from_torch_csv(fh) == prog
    # the CSV is written with csv's own line endings, read back unchanged
    out = tmp_path / "out.csv"
    prog.to_torch_csv(out)
    assert out.read_bytes() == b"0F0,0B0\r\n1F0,1B0\r\n"
    assert np.array_equal(Program.from_torch_csv(out).kind, prog.kind)
