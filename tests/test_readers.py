"""The program readers' less travelled paths: torch's own objects, dict rows, defaults, and the
error attributes (device, position) that tools read from a refusal."""

import importlib
import io
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppviz import Config, ParseError, Program, ProgramError, simulate
from ppviz.core.program import MAX_STAGE


def test_readers_name_programs_custom_by_default(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("0F0,0B0\n")
    for prog in (Program.from_text("0F0 0B0"), Program.from_actions({0: ["0F0", "0B0"]}), Program.from_torch_csv(path)):
        assert prog.name == "custom"
        assert simulate(prog).config.schedule == "custom"


def test_rows_may_be_strings_or_lists_and_keys_must_be_devices():
    assert Program.from_actions({0: "0F0 0B0"}) == Program.from_actions({0: ["0F0", "0B0"]})
    assert Program.from_actions([["0F0", "0B0"], ["1F0", "1B0"]]) == Program.from_text("0F0 0B0\n1F0 1B0")
    with pytest.raises(ParseError) as info:
        Program.from_actions({0: ["0F0"], "x": ["1F0"]})
    assert str(info.value) == "device keys must be integers 0..p-1; got 'x'"
    with pytest.raises(ParseError) as info:
        Program.from_actions({-1: ["0F0"], 0: ["0F0"]})
    assert str(info.value) == "device keys must be integers 0..p-1; got -1"
    with pytest.raises(ParseError) as info:
        Program.from_actions({0: ["0F0", "0B0"], 3: ["1F0"]})
    assert str(info.value) == "device 1 has no row; give every device 0..3 a (possibly empty) list"
    with pytest.raises(ParseError) as info:
        Program.from_actions({0: ["0F0", "0B0"], 1: 7})
    assert info.value.device == 1 and "device 1" in str(info.value) and "7" in str(info.value)
    with pytest.raises(ParseError) as info:
        Program.from_actions({})
    assert str(info.value) == "the program has no devices; give at least one row of actions"
    with pytest.raises(ParseError) as info:
        Program.from_actions({0: ["0SEND_F0", None, ""]})
    assert str(info.value) == "the program has no compute actions; write actions such as 0F0 0B0"


def test_refusals_carry_the_device_and_position():
    with pytest.raises(ParseError) as info:
        Program.from_text("0F0 0B0\n1F0 1X0")
    assert (info.value.device, info.value.position) == (1, 1)
    with pytest.raises(ParseError) as info:
        Program.from_actions({0: ["0F0", 5]})
    assert (info.value.device, info.value.position) == (0, 1)
    with pytest.raises(ParseError) as info:
        Program.from_text(f"0F0 ({MAX_STAGE + 1}F0;0B0)OVERLAP_F_B")
    assert (info.value.device, info.value.position) == (0, 1)
    assert f"'({MAX_STAGE + 1}F0;0B0)OVERLAP_F_B'" in str(info.value)
    with pytest.raises(ProgramError) as info:
        Program.from_text("0F0 0F0 0B0").validate()
    assert (info.value.device, info.value.position) == (0, 1)
    with pytest.raises(ProgramError) as info:
        Program.from_text("0F0 0B0\n0F1 0B1")
    assert (info.value.device, info.value.position) == (1, 0)


def test_the_largest_stage_index_parses_and_one_more_is_refused():
    with pytest.raises(ParseError, match="index ppviz cannot hold"):
        Program.from_text(f"{MAX_STAGE + 1}F0")
    with pytest.raises(ProgramError) as info:  # parses; the placement then finds the gap
        Program.from_text(f"{MAX_STAGE}F0 {MAX_STAGE}B0")
    assert str(info.value) == (f"stage 0 has no ops on any device; stages must be numbered 0..{MAX_STAGE} "
                               "without gaps")


class HalfAction:
    computation_type = "FORWARD"


class TorchLikeAction:
    computation_type = "FORWARD"
    stage_index = 0

    def __str__(self):
        return "0F0"


def test_objects_are_read_only_when_they_look_like_torch_actions():
    assert Program.from_actions({0: [TorchLikeAction(), "0B0"]}) == Program.from_text("0F0 0B0")
    with pytest.raises(ParseError, match="expected an action string"):
        Program.from_actions({0: [HalfAction(), "0B0"]})


def test_kinds_are_read_as_written():
    prog = Program.from_text("0F0 0I0 0W0")
    assert "".join("FBIW"[k] for k in prog.kind) == "FIW"


def test_placement_given_by_name_or_object():
    text = "0F0 0F1 2F0 2F1 2B0 2B1 0B0 0B1\n1F0 1F1 3F0 3F1 3B0 3B1 1B0 1B1"
    loop = Program.from_text(text, placement="loop")
    assert loop.placement.style == "loop"
    assert Program.from_text(text, placement=loop.placement).placement is loop.placement
    assert Program.from_text(text, placement="infer").placement == loop.placement
    with pytest.raises(ProgramError) as info:
        Program.from_text("0F0 2F0 2B0 0B0\n1F0 1B0", placement="loop")
    assert str(info.value) == "placement 'loop' needs stages divisible by devices; got 3 stages on 2 devices"


def test_to_pandas_says_how_to_get_pandas(monkeypatch):
    res = simulate(Config(devices=2, microbatches=2))
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError) as info:
        res.to_pandas()
    assert str(info.value) == "Result.to_pandas needs pandas: pip install pandas"


def test_v_or_default_keeps_accepted_values_only():
    from ppviz.core.registry import lookup

    bfs = lookup("looped-bfs")  # v >= 1, default 2
    assert [bfs.v_or_default(v) for v in (None, 1, 2, 5)] == [2, 1, 2, 5]
    zbv = lookup("zb-v")  # exactly 2
    assert [zbv.v_or_default(v) for v in (None, 1, 2, 3)] == [2, 2, 2, 2]
    inter = lookup("interleaved-1f1b")  # v >= 2
    assert [inter.v_or_default(v) for v in (1, 2, 3)] == [2, 2, 3]
    one = lookup("1f1b")
    assert [one.v_or_default(v) for v in (1, 2)] == [1, 1]


def test_registration_helpers_build_validators_that_refuse_with_their_reason(monkeypatch):
    # the registry builds these at import; calling them here runs the same code at test time
    from types import SimpleNamespace

    from ppviz import ScheduleConstraintError
    from ppviz.schedules.one_f_one_b import several_stages_per_device
    from ppviz.core.registry import ScheduleSpec, one_stage_per_device, register

    check = one_stage_per_device("demo-v for v >= 2")
    check(SimpleNamespace(schedule="demo", stages_per_device=1, microbatch_group_size=None))
    with pytest.raises(ScheduleConstraintError) as info:
        check(SimpleNamespace(schedule="demo", stages_per_device=3, microbatch_group_size=None))
    assert str(info.value) == "stages_per_device=3: demo holds one stage per device; use 1, or demo-v for v >= 2"
    with pytest.raises(ScheduleConstraintError) as info:
        check(SimpleNamespace(schedule="demo", stages_per_device=1, microbatch_group_size=4))
    assert str(info.value) == ("microbatch_group_size=4: demo has no microbatch groups; leave it unset "
                               "(it applies to interleaved schedules)")
    check = several_stages_per_device("demo")
    with pytest.raises(ScheduleConstraintError) as info:
        check(SimpleNamespace(schedule="demo-v", stages_per_device=1, microbatch_group_size=None, devices=2,
                              microbatches=4))
    assert str(info.value) == ("stages_per_device=1: demo-v interleaves several stages per device; "
                               "use v >= 2, or demo for v = 1")
    registry = importlib.import_module("ppviz.core.registry")

    # register into copies, so that the real registry is untouched for the other tests
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(registry, "_ALIASES", dict(registry._ALIASES))
    spec = register(ScheduleSpec(name="test-demo", summary="", reference="", builder=None,
                                 aliases=("TestDemoAlias",)))
    from ppviz.core.registry import lookup

    assert lookup("testdemoalias") is spec and lookup("Test_Demo") is spec
    with pytest.raises(RuntimeError, match="alias 'TestDemoAlias' already names 'test-demo'"):
        register(ScheduleSpec(name="test-other", summary="", reference="", builder=None, aliases=("TestDemoAlias",)))


def test_a_backward_given_twice_over_is_located_at_its_own_b():
    # (0, 1) has both B and I/W; the message points at 0B1, not at the first B of the program (0B0)
    with pytest.raises(ProgramError) as info:
        Program.from_text("0F0 0B0 0F1 0I1 0W1 0B1").validate()
    assert str(info.value).startswith("device 0, position 5 (0B1): stage 0 microbatch 1 has both a full backward B")
    assert (info.value.device, info.value.position) == (0, 5)


def test_registration_helpers_called_at_run_time(monkeypatch):
    # these run at import, before a test can observe them; calling them again here does
    from types import SimpleNamespace

    from ppviz import ConfigError, ScheduleConstraintError
    from ppviz.schedules import v_shape
    from ppviz.schedules.one_f_one_b import several_stages_per_device

    registry = importlib.import_module("ppviz.core.registry")
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(registry, "_ALIASES", dict(registry._ALIASES))
    monkeypatch.setattr(v_shape, "register", registry.register)
    v_shape._register_v("test-v", "summary", "reference", v_shape.build_v_half, ("TestV",),
                        v_shape.v_half_closed_form)
    spec = registry.lookup("testv")
    assert (spec.name, spec.summary, spec.reference, spec.aliases) == ("test-v", "summary", "reference", ("TestV",))
    assert (spec.default_v, spec.v_min, spec.v_max, spec.split_backward, spec.constraints) == (2, 2, 2, True, "v = 2")
    assert spec.builder is v_shape.build_v_half and spec.closed_form is v_shape.v_half_closed_form
    with pytest.raises(ScheduleConstraintError, match="stages_per_device=3"):
        spec.validate(SimpleNamespace(schedule="test-v", stages_per_device=3, devices=4, microbatches=8))

    check = several_stages_per_device("demo")
    ok = SimpleNamespace(schedule="demo-v", stages_per_device=2, microbatch_group_size=None, devices=2,
                         microbatches=4, group_size=2)
    check(ok)
    with pytest.raises(ScheduleConstraintError, match="microbatches=7"):
        check(SimpleNamespace(**{**vars(ok), "devices": 3, "microbatches": 7, "group_size": 3}))



# Plain rows are read all at once; everything else action by action, with the same result ----------

_TOKENS = ["0F0", "1B2", "007F3", "3I1", "3W1", "1048575F0", "1048576F0", "0F2147483647", "0F2147483648",
           "00000001F0", "0F00000000001", "(0F1;1B0)OVERLAP_F_B", "2SEND_F1", "0X1", "٣F0", "0f1", "F1", "0F",
           "", " ", "\t0F4", "0F5\n0F6", "#", ";", "ﾠ", "0F1\u00a0"]


def outcome(call):
    try:
        program = call()
    except (ParseError, ProgramError) as exc:
        return type(exc).__name__, str(exc), exc.device, exc.position
    return program.kind.tolist(), program.stage.tolist(), program.microbatch.tolist(), program.pair.tolist(), \
        program.offsets.tolist(), program.stages, program.microbatches


def both_ways(call):
    """(outcome read with plain rows at once, outcome read action by action)"""
    from ppviz.core import program as program_module

    fast = outcome(call)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(program_module, "_plain_actions", lambda text: None)
        slow = outcome(call)
    return fast, slow


@settings(max_examples=300)
@given(st.lists(st.lists(st.sampled_from(_TOKENS) | st.from_regex(r"[0-9]{1,3}[FBIW][0-9]{1,3}", fullmatch=True),
                         max_size=6), min_size=1, max_size=4),
       st.sampled_from([" ", ",", ", ", "\t", "  ,\t"]), st.booleans())
def test_plain_rows_read_at_once_as_they_read_one_by_one(rows, separator, prefixed):
    text = "\n".join((f"device {d}: " if prefixed else "") + separator.join(row) for d, row in enumerate(rows))
    for call in (lambda: Program.from_text(text), lambda: Program.from_actions(rows),
                 lambda: Program.from_actions({d: separator.join(row) for d, row in enumerate(rows)}),
                 lambda: Program.from_torch_csv(io.StringIO("\n".join(",".join(row) for row in rows)))):
        fast, slow = both_ways(call)
        assert fast == slow

