"""Every public entry point, driven with hostile values: it returns a result or raises a
``PpvizError`` (a ``ValueError``) naming what was wrong, quickly; never another exception, a
hang or a runaway allocation."""

import io
import math
import signal
from contextlib import contextmanager

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import ppviz
from ppviz import Config, PpvizError, Program, simulate
from ppviz.cli import main

SECONDS = 5

hostile_numbers = st.one_of(
    st.integers(-3, 40), st.integers(), st.sampled_from([10**400, -10**400, 2**63, 2**31, 10**9, 10**7]),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([1e308, -1e308, 5e-324, 1e-300]),
    st.booleans(), st.none(), st.text(max_size=5), st.lists(st.integers(0, 3), max_size=3),
    st.dictionaries(st.integers(-2, 5), st.floats(allow_nan=True), max_size=2),
)
FIELDS = ["devices", "microbatches", "stages_per_device", "f", "b", "w", "comm", "fb", "activation", "w_share",
          "params", "activation_bytes", "microbatch_group_size", "label", "schedule"]
NAMES = [s.name for s in ppviz.list_schedules()] + ["ZBV", "dualpipev", "nope", "", "gpipe\x1b[31m"]


@contextmanager
def time_bound(seconds=SECONDS):
    def expire(*_):
        raise TimeoutError(f"took longer than {seconds} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def accepted_or_refused(call):
    with time_bound():
        try:
            return call()
        except PpvizError as exc:
            assert str(exc), "a refusal must say why"
            return exc


@settings(max_examples=200)
@given(st.sampled_from(NAMES), st.dictionaries(st.sampled_from(FIELDS), hostile_numbers, max_size=3),
       st.dictionaries(st.integers(-2, 40) | st.text(max_size=2), st.dictionaries(
           st.sampled_from(["f", "b", "w", "activation", "x"]), hostile_numbers, max_size=2), max_size=2))
def test_config_and_simulate_accept_or_refuse(name, fields, stage_costs):
    fields = {"schedule": name, **fields}
    if stage_costs:
        fields["stage_costs"] = stage_costs

    def run():
        res = simulate(Config(**fields))
        assert math.isfinite(res.makespan)
        return res

    accepted_or_refused(run)


@settings(max_examples=100)
@given(st.dictionaries(st.text(min_size=1, max_size=8), hostile_numbers, min_size=1, max_size=2))
@example({"x": None})  # simulate's own first parameter's name, once a TypeError
def test_unknown_keywords_are_refused_by_name(options):
    for call in (lambda: Config(**options), lambda: simulate(Config(), **options)):
        result = accepted_or_refused(call)
        if isinstance(result, PpvizError) and not set(options) <= set(FIELDS) | {"stage_costs"}:
            assert any(k in str(result) for k in options)


tokens = st.sampled_from(["0F0", "0B0", "1F0", "1B0", "0I0", "0W0", "(0F1;0B0)OVERLAP_F_B", "(0F0;1I0)OVERLAP_F_B",
                          "99999999999F0", "0F99999999999", "device 99999999999:", "rank 3:", "#", ",", ";", "\n",
                          " ", "\x1b[2J", "0SEND_F0", "OVERLAP_F_B", "()", "2W1"])


@settings(max_examples=300)
@given(st.lists(tokens, max_size=30).map(" ".join) | st.text(max_size=60))
def test_text_programs_parse_or_refuse(text):
    def run():
        prog = Program.from_text(text)
        return simulate(prog)

    accepted_or_refused(run)


@settings(max_examples=200)
@given(st.lists(st.lists(tokens | st.just(""), max_size=6), max_size=5))
def test_torch_csv_reads_or_refuses(rows):
    text = "\n".join(",".join(r) for r in rows)
    accepted_or_refused(lambda: simulate(Program.from_torch_csv(io.StringIO(text))))


@settings(max_examples=60)
@given(hostile_numbers, hostile_numbers)
def test_exports_accept_or_refuse(unit, width):
    res = simulate(Config(devices=2, microbatches=2))
    from ppviz.io.chrome_trace import chrome_trace

    accepted_or_refused(lambda: chrome_trace(res, unit))
    accepted_or_refused(lambda: res.to_text(width))


@settings(max_examples=150)
@given(st.lists(st.sampled_from(["run", "list", "1f1b", "dualpipe", "-p", "-m", "-v", "--f", "--fb", "--width",
                                 "1e9", "1e308", "-1", "0", "3", "nan", "--program", "/nonexistent", "--comm",
                                 "99999999999999", "--help"]), max_size=8))
def test_cli_exits_with_a_code_never_a_traceback(argv):
    with time_bound():
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's usage errors and --help
            code = exc.code
    assert code in (0, 2)


def test_sizes_beyond_the_budget_are_refused_before_work_starts():
    for fields in (dict(devices=10**400), dict(devices=10**6, microbatches=10**6), dict(microbatches=10**9),
                   dict(schedule="interleaved-1f1b", devices=64, microbatches=64, stages_per_device=10**6)):
        with time_bound(2):
            with pytest.raises(PpvizError) as info:
                simulate(Config(**fields))
        assert "budget" in str(info.value) or "from 1 to" in str(info.value)
