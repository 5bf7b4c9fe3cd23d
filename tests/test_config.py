import math

import pytest

import ppviz
from ppviz import Config, ConfigError, ScheduleConstraintError, UnknownScheduleError


def test_defaults_and_normalised_name():
    cfg = Config(schedule="Interleaved1F1B", devices=4, microbatches=8)
    assert cfg.schedule == "interleaved-1f1b"
    assert cfg.stages_per_device == 2  # the schedule's default
    assert cfg.stages == 8


def test_an_entry_of_the_listing_names_its_schedule():
    for spec in ppviz.list_schedules():
        if spec.builder is not None:  # "custom" comes with a program
            assert Config(schedule=spec, microbatches=24).schedule == spec.name  # m that all accept at p = 4
    with pytest.raises(ConfigError, match="list_schedules"):
        Config(schedule=3)


@pytest.mark.parametrize("alias, name", [
    ("1F1B", "1f1b"), ("Schedule1F1B", "1f1b"), ("ScheduleGPipe", "gpipe"), ("GPIPE", "gpipe"),
    ("ZB1P", "zb-h1"), ("zb_h1", "zb-h1"), ("interleaved_1f1b", "interleaved-1f1b"), ("VPP", "interleaved-1f1b"),
])
def test_aliases_are_case_insensitive(alias, name):
    assert Config(schedule=alias).schedule == name


def test_unknown_schedule_suggests_close_names():
    with pytest.raises(UnknownScheduleError) as err:
        Config(schedule="zb-h3")
    assert "zb-h1" in err.value.suggestions
    assert "zb-h3" in str(err.value) and "known schedules" in str(err.value)
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize("field, value, fragment", [
    ("devices", 0, "devices=0"),
    ("devices", 2.5, "devices=2.5"),
    ("devices", True, "devices=True"),
    ("microbatches", -1, "microbatches=-1"),
    ("f", -1.0, "f=-1.0"),
    ("b", math.nan, "b=nan"),
    ("w", math.inf, "w=inf"),
    ("comm", -0.5, "comm=-0.5"),
    ("fb", 0.0, "fb=0.0"),
    ("w_share", 1.5, "w_share=1.5"),
    ("stages_per_device", 0, "stages_per_device=0"),
    ("f", "fast", "f='fast'"),
])
def test_bad_values_name_field_value_and_what_is_accepted(field, value, fragment):
    with pytest.raises(ConfigError) as err:
        Config(**{field: value})
    text = str(err.value)
    assert fragment in text
    assert "give" in text  # says what would be accepted
    assert err.value.field == field


def test_all_costs_zero_is_refused():
    with pytest.raises(ConfigError, match="at least one of f, b, w"):
        Config(f=0, b=0, w=0)


def test_schedule_constraints_say_which_rule_failed():
    with pytest.raises(ScheduleConstraintError, match="1f1b holds one stage per device"):
        Config(schedule="1f1b", stages_per_device=2)
    with pytest.raises(ScheduleConstraintError, match="interleaves several stages"):
        Config(schedule="interleaved-1f1b", stages_per_device=1)
    with pytest.raises(ScheduleConstraintError, match="at most m"):
        Config(schedule="interleaved-1f1b", devices=4, microbatches=8, microbatch_group_size=9)
    with pytest.raises(ScheduleConstraintError, match="smaller than p"):
        Config(schedule="interleaved-1f1b", devices=4, microbatches=8, microbatch_group_size=2)
    with pytest.raises(ScheduleConstraintError, match="last group of 2"):
        Config(schedule="interleaved-1f1b", devices=4, microbatches=10, microbatch_group_size=4)


def test_stage_costs_are_checked_and_frozen():
    cfg = Config(schedule="1f1b", devices=4, stage_costs={3: {"f": 2.0}})
    assert cfg.stage_costs[3]["f"] == 2.0
    assert not cfg.uniform
    hash(cfg)  # frozen and hashable
    with pytest.raises(ConfigError, match="stage keys must be integers 0..3"):
        Config(schedule="1f1b", devices=4, stage_costs={4: {"f": 1}})
    with pytest.raises(ConfigError, match="keys must be among"):
        Config(schedule="1f1b", devices=4, stage_costs={0: {"forward": 1}})
    with pytest.raises(ConfigError, match="stage_costs\\[0\\]\\['f'\\]"):
        Config(schedule="1f1b", devices=4, stage_costs={0: {"f": -1}})


def test_replace_revalidates():
    cfg = Config(schedule="1f1b", devices=4, microbatches=8)
    assert cfg.replace(microbatches=16).microbatches == 16
    with pytest.raises(ConfigError):
        cfg.replace(devices=0)
    with pytest.raises(AttributeError):
        cfg.devices = 3  # frozen


def test_a_new_schedule_brings_its_own_default_v():
    cfg = Config(schedule="1f1b", devices=4, microbatches=8)
    assert cfg.replace(schedule="zb-v").stages_per_device == 2
    assert cfg.replace(schedule="looped-bfs").stages_per_device == Config("looped-bfs").stages_per_device == 2
    assert cfg.replace(schedule="interleaved-1f1b").replace(schedule="gpipe").stages_per_device == 1
    # a v set away from the schedule's default is the user's, and stays
    assert Config("interleaved-1f1b", stages_per_device=4).replace(schedule="looped-bfs").stages_per_device == 4
    assert cfg.replace(schedule="interleaved-1f1b", stages_per_device=3).stages_per_device == 3
    with pytest.raises(ppviz.ScheduleConstraintError, match="stages_per_device=4"):
        Config("interleaved-1f1b", stages_per_device=4).replace(schedule="zb-v")


def test_registry_lists_every_schedule_with_aliases():
    table = ppviz.list_schedules()
    names = table.names()
    for name in ("gpipe", "1f1b", "interleaved-1f1b", "zb-h1"):
        assert name in names
    text = repr(table)
    assert "ScheduleInterleaved1F1B" in text and "ZB1P" in text
    assert "<table>" in table._repr_html_()


def test_v_or_default_keeps_an_accepted_v():
    from ppviz.core.registry import lookup

    assert lookup("interleaved-1f1b").v_or_default(4) == 4
    assert lookup("interleaved-1f1b").v_or_default(1) == 2  # below v_min: the default
    assert lookup("zb-v").v_or_default(3) == 2  # above v_max: the default
    assert lookup("1f1b").v_or_default(None) == 1


def test_time_unit_is_a_short_name_shown_in_the_summary():
    res = ppviz.simulate(ppviz.Config("1f1b", devices=4, microbatches=8, time_unit="ms"))
    assert "makespan         33 ms   closed form 33 ms" in res.summary()
    assert "ms" not in ppviz.simulate(ppviz.Config("1f1b", devices=4, microbatches=8)).summary().split("\n")[1]
    for bad in ("", "<b>ms</b>", "m s", "millisecondss", 3, "\x1b[31m"):
        with pytest.raises(ppviz.ConfigError, match="time_unit"):
            ppviz.Config(time_unit=bad)


def least_table_width() -> int:
    table = ppviz.list_schedules()
    # the v column holds a rule's parts on lines of their own ("even" above ">= 2"); the aliases'
    # holds the longest alias and its comma, the descriptions' at least 24 columns
    return (max(map(len, table.names())) + max(len(part) for s in table for part in s.v_rule.split(", "))
            + max(len(a) + 1 for s in table for a in s.aliases) + 6 + 24)


@pytest.mark.parametrize("width", [least_table_width(), least_table_width() + 7, 100, 143])
def test_the_schedule_table_wraps_within_a_width_and_reads_back_whole(width):
    table = ppviz.list_schedules()
    lines = table.to_text(width=width).splitlines()
    assert max(len(line) for line in lines) <= width
    column = lines[0].index("what it is")
    starts = [i for i, line in enumerate(lines) if i and not line.startswith(" ")]
    assert [lines[i].split()[0] for i in starts] == list(table.names())
    # each description, its continuation lines included, is the schedule's summary and then its
    # constraints, broken between words only; every alias is shown whole, on one line
    for k, (i, j) in enumerate(zip(starts, starts[1:] + [len(lines)])):
        spec = table[k]
        wanted = spec.summary + (f" constraints: {spec.constraints}" if spec.constraints else "")
        assert " ".join(word for line in lines[i:j] for word in line[column:].split()) == " ".join(wanted.split())
        aliases = [a.strip(", ") for line in lines[i:j] for a in line[lines[0].index("aliases"):column].split()]
        assert aliases == list(spec.aliases)


@pytest.mark.parametrize("width", [-1, 0, 40, 80, least_table_width() - 1, 80.0, True, "100"])
def test_a_schedule_table_narrower_than_its_names_is_refused_naming_the_least_width(width):
    with pytest.raises(ConfigError, match=f"width={width!r}.*at least {least_table_width()}"):
        ppviz.list_schedules().to_text(width=width)


@pytest.mark.parametrize("field, bound", [("fb", ">"), ("memory_capacity", ">"), ("f", ">=")])
def test_a_huge_value_is_refused_with_the_fields_own_lower_bound(field, bound):
    # fb and a capacity must be > 0, a time may be 0: the message above the maximum says which
    with pytest.raises(ConfigError) as info:
        Config(schedule="1f1b", **{field: 1e300})
    assert info.value.field == field
    assert str(info.value) == (f"{field}=1e+300 is not accepted; give a finite number {bound} 0 and at most 1e+200 "
                               "(sums of larger times overflow)")


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), "half"])
def test_a_share_out_of_range_gets_one_message_whichever_side(bad):
    # before, -0.1 read "give a finite number >= 0" and 1.5 "give a share between 0 and 1"
    with pytest.raises(ConfigError) as info:
        Config(w_share=bad)
    assert str(info.value) == f"w_share={bad!r} is not accepted; give a share between 0 and 1"
    with pytest.raises(ConfigError) as info:
        ppviz.Hardware(peak_tflops=100, memory_gib=16, efficiency=bad if bad != 1.5 else 0)
    assert str(info.value).endswith("give a share of the peak, in (0, 1]")


def test_a_results_repr_writes_a_whole_peak_whole():
    # before: "peak activation 1.23e+03"
    res = ppviz.simulate(Config("gpipe", devices=2, microbatches=1234))
    assert repr(res) == "<Result gpipe: makespan 3,705, bubble 0.081 %, peak activation 1,234>"
