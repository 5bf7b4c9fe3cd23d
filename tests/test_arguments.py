"""Wrong arguments to any public call (an unknown or misspelt keyword, a missing argument, too
many by position) are an ArgumentError, a PpvizError and a TypeError, naming the argument and what
the call takes. The public surface is enumerated, not listed, so a call added later is covered."""

import dataclasses
import inspect

import pytest

import ppviz
import ppviz.charts
from ppviz.core.errors import ArgumentError, checked_arguments

UNKNOWN = "zz_not_an_argument"


def _instances():
    cfg = ppviz.Config(schedule="1f1b", devices=2, microbatches=2)
    res = ppviz.simulate(cfg)
    measured = ppviz.load_trace(ppviz.example_trace())
    cal = ppviz.calibrate(measured)
    topo = ppviz.Config(schedule="1f1b", devices=2, microbatches=2, topology="dgx-h100", comm_bytes=1e6,
                         time_unit="ms")
    return {
        "Config": cfg, "Result": res, "Program": res.program, "Placement": res.program.placement,
        "Measured": measured, "Calibration": cal, "Residuals": ppviz.residuals(measured, cal),
        "SearchResult": ppviz.search(cfg, 2), "Topology": ppviz.Topology.preset("dgx-h100"),
        "Transfers": ppviz.simulate(topo).transfers, "Hardware": ppviz.Hardware.preset("h100-sxm"),
        "Transformer": ppviz.Transformer.preset("llama-3-8b"), "Link": ppviz.Link(1, bandwidth=2),
        "Offload": ppviz.Offload(0.5, link=ppviz.Link(0, bandwidth=1)),
        "Step": ppviz.Step(reduce=(1.0, 1.0), optimizer=(0.5, 0.5)),
        "Layout": ppviz.Layout.even(4, 2),
        # what the public calls return
        "Frontier": ppviz.frontier(cfg, memory=[2]), "Viewer": ppviz.show(cfg),
        "Comparison": ppviz.compare([cfg]), "ScheduleTable": ppviz.list_schedules(),
    }


def _public_calls():
    """(label, callable) for every public function, class and method: ppviz's, ppviz.charts', and
    those of the objects they return."""
    instances = _instances()
    classes = {name: getattr(ppviz, name) for name in ppviz.__all__
               if isinstance(getattr(ppviz, name), type) and not issubclass(getattr(ppviz, name), Exception)}
    classes.update({name: type(obj) for name, obj in instances.items()})
    missing = sorted(set(classes) - set(instances))
    assert not missing, f"give the test an instance of {missing}"
    calls = []
    for name in ppviz.__all__:
        obj = getattr(ppviz, name)
        if callable(obj) and not inspect.isclass(obj):
            calls.append((f"ppviz.{name}", obj))
    for name in ppviz.charts.__all__:
        obj = getattr(ppviz.charts, name)
        if inspect.isfunction(obj):
            calls.append((f"ppviz.charts.{name}", obj))
    for name, cls in classes.items():
        if name in ppviz.__all__:
            calls.append((name, cls))
        # ppviz's own members (not ipywidgets', traitlets' or tuple's), the nearest definition first
        owners = [k for k in cls.__mro__ if k.__module__.startswith("ppviz")]
        for attribute in sorted({a for k in owners for a in vars(k) if not a.startswith("_")}):
            static = inspect.getattr_static(cls, attribute)
            if isinstance(static, (classmethod, staticmethod)):
                calls.append((f"{name}.{attribute}", getattr(cls, attribute)))
            elif inspect.isfunction(static):
                calls.append((f"{name}.{attribute}", getattr(instances[name], attribute)))
    return calls


CALLS = _public_calls()


def test_the_enumeration_reaches_the_whole_surface():
    labels = {label for label, _ in CALLS}
    assert {"ppviz.search", "ppviz.charts.gantt_chart", "Result.to_png", "Program.from_text", "Link",
            "Config.from_model", "Viewer.update", "Frontier.result"} <= labels
    assert len(CALLS) > 140


@pytest.mark.parametrize("label, call", CALLS, ids=[label for label, _ in CALLS])
def test_an_unknown_keyword_is_a_ppviz_error_naming_it(label, call):
    with pytest.raises(ppviz.PpvizError) as caught:
        call(**{UNKNOWN: 1})
    # a wrong call is a TypeError, as Python's own are; a wrong value (a missing argument's
    # absence may be caught by the call's own check first) a ValueError
    assert isinstance(caught.value, TypeError) != isinstance(caught.value, ValueError)
    message = str(caught.value)
    assert UNKNOWN in message or "needs" in message, message  # a missing argument may be named first
    assert "Traceback" not in message


def _required(call):
    parameters = inspect.signature(call).parameters.values()
    return [p.name for p in parameters if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


NEEDING = [(label, call) for label, call in CALLS if _required(call)]


@pytest.mark.parametrize("label, call", NEEDING, ids=[label for label, _ in NEEDING])
def test_a_missing_argument_is_named_with_everything_the_call_takes(label, call):
    with pytest.raises(ArgumentError) as caught:
        call()
    error = caught.value
    assert error.missing == _required(call)
    assert f"needs {' and '.join(_required(call))};" in str(error)
    takes = str(error).split(";", 1)[1]
    for p in inspect.signature(call).parameters.values():
        assert p.name in takes or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)


def test_messages_suggest_the_close_name_and_count_positions():
    cfg = ppviz.Config(schedule="1f1b", devices=4, microbatches=8)
    with pytest.raises(ArgumentError, match=r"^efort=3: search\(\) has no such argument; did you mean 'effort'\? "
                                            r"search\(\) takes config, max_memory, stages_per_device, effort, progress$"):
        ppviz.search(cfg, 2, efort=3)
    with pytest.raises(ArgumentError, match=r"^search\(\) takes 2 arguments by position, 3 were given; "):
        ppviz.search(cfg, 2, 3)
    with pytest.raises(ArgumentError, match=r"^search\(\) got config twice, by position and by name; "):
        ppviz.search(cfg, 2, config=cfg)
    with pytest.raises(ArgumentError, match=r"^Result\.memory_at\(\) needs t; Result\.memory_at\(\) takes t$"):
        ppviz.simulate(cfg).memory_at()
    with pytest.raises(ArgumentError, match=r"^themes='dark': show\(\) has no such argument; did you mean 'theme'\?"):
        ppviz.show(cfg, themes="dark")
    with pytest.raises(ArgumentError, match=r"^simulate\(\) needs run; simulate\(\) takes run, config, engine, keyword options$"):
        ppviz.simulate()


def test_a_type_error_from_inside_is_not_taken_for_a_wrong_argument():
    @checked_arguments
    def half(x):
        return x / 2

    assert half(4) == 2
    with pytest.raises(TypeError, match="unsupported operand"):
        half("four")
    with pytest.raises(ArgumentError, match="^half\\(\\) needs x; half\\(\\) takes x$"):
        half()


def test_checked_calls_keep_their_signature_and_docs():
    assert list(inspect.signature(ppviz.search).parameters)[:2] == ["config", "max_memory"]
    assert "peak activation" in ppviz.search.__doc__
    assert list(inspect.signature(ppviz.Link.duration).parameters) == ["self", "nbytes"]
    assert isinstance(inspect.getattr_static(ppviz.Transformer, "preset"), classmethod)


def test_a_wrong_call_is_a_type_error_and_a_wrong_value_a_value_error():
    assert issubclass(ppviz.ArgumentError, TypeError) and issubclass(ppviz.ArgumentError, ppviz.PpvizError)
    assert not issubclass(ppviz.ArgumentError, ValueError)
    for error in (ppviz.ConfigError, ppviz.ProgramError, ppviz.LayoutError, ppviz.ParseError, ppviz.DeadlockError,
                  ppviz.ScheduleConstraintError, ppviz.UnknownScheduleError):
        assert issubclass(error, ValueError) and issubclass(error, ppviz.PpvizError) and not issubclass(error, TypeError)
    with pytest.raises(TypeError, match=r"^Config\(\) takes 1 argument by position, 3 were given; Config\(\) takes "
                                        r"schedule, devices, microbatches, stages_per_device, "):
        ppviz.Config("1f1b", 4, 8)
    assert ppviz.Config("1f1b", devices=4, microbatches=8) == ppviz.Config(schedule="1f1b", devices=4, microbatches=8)
    with pytest.raises(ValueError):
        ppviz.Config("1f1b", devices=0)


#: tables and reports ppviz returns, which users read but do not build
RESULTS = {"Calibration", "Transfers", "Frontier"}
VALUE_OBJECTS = [getattr(ppviz, name) for name in ppviz.__all__
                 if dataclasses.is_dataclass(getattr(ppviz, name)) and name not in RESULTS]


@pytest.mark.parametrize("cls", VALUE_OBJECTS, ids=[cls.__name__ for cls in VALUE_OBJECTS])
def test_value_objects_take_keywords_past_their_first_field(cls):
    fields = [f for f in dataclasses.fields(cls) if f.init]
    assert all(f.kw_only for f in fields[1:]), cls  # the first may be a keyword too (Step's all are)
    # and every field is typed with a real type, not object or Any
    for f in fields:
        assert f.type not in ("object", "Any", object), (cls, f.name)
