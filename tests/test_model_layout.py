"""Pipeline layouts: Megatron's layout strings parse to Megatron's stage → layer assignment.

The documented examples are checked against the assignment Megatron's user guide and help text
state; with megatron-core installed (the test extra), every example and random strings are also
checked against megatron-core's own parser (``PipelineParallelLayerLayout``) and its layer-count
rule (``get_num_layers_to_build``). Skipped without megatron-core unless CI or
PPVIZ_REQUIRE_TORCH=1, where its absence fails.
"""

import os
import warnings
from types import SimpleNamespace

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from ppviz import Layout, LayoutError

SYMBOL = {"embedding": "E", "decoder": "t", "mtp": "m", "loss": "L"}


@pytest.fixture(scope="session")
def megatron():
    """megatron-core's layout class, LayerType and get_num_layers_to_build (or a skip)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from megatron.core import parallel_state
            from megatron.core.transformer.enums import LayerType
            from megatron.core.transformer.pipeline_parallel_layer_layout import PipelineParallelLayerLayout
            from megatron.core.transformer.transformer_block import get_num_layers_to_build
    except ImportError as exc:
        if os.environ.get("CI", "") not in ("", "0", "false") or os.environ.get("PPVIZ_REQUIRE_TORCH", "") not in ("", "0"):
            pytest.fail(f"megatron-core (the test extra) cannot be imported: {exc}")
        pytest.skip("megatron-core is not installed")
    return SimpleNamespace(Layout=PipelineParallelLayerLayout, LayerType=LayerType, state=parallel_state,
                           layers_to_build=get_num_layers_to_build)


def megatron_stages(megatron, text):
    return tuple("".join(SYMBOL[t.name] for t in stage) for stage in megatron.Layout.parse_str_to_list(text))


# The documented examples ----------------------------------------------------------------------

def test_the_user_guides_deepseek_v3_example():
    # docs/user-guide/features/pipeline_parallel_layout.md, PP 16 × VPP 2: rank 0 holds the
    # embedding and 3 decoder layers, then 2; ranks 1–13 hold 2 and 2; rank 14 holds 2 and the
    # MTP layer; rank 15 holds 2 and the loss. String stage i is (VPP i // 16, PP i % 16).
    layout = Layout.parse("Et*3|(tt|)*29,m|L")
    assert len(layout) == 32
    p = 16
    table = {(0, 0): "Ettt", (14, 1): "m", (15, 1): "L"}
    for rank in range(p):
        for vpp in range(2):
            assert layout.stages[vpp * p + rank] == table.get((rank, vpp), "tt")
    layout.check(layers=61, mtp_layers=1, stages=32)
    assert layout.layer_ids(0) == [0, 1, 2] and layout.layer_ids(1) == [3, 4]
    assert layout.layer_ids(16) == [33, 34] and layout.layer_ids(29) == [59, 60] and layout.layer_ids(30) == []


def test_the_help_texts_example_and_an_empty_stage():
    # --pipeline-model-parallel-layout's help: "E|(t|)*3,m|m||L"; the guide: "E||t|L" has an empty second stage
    assert Layout.parse("E|(t|)*3,m|m||L").stages == ("E", "t", "t", "t", "m", "m", "", "L")
    assert Layout.parse("E||t|L").stages == ("E", "", "t", "L")
    Layout.parse("E||t|L").check(layers=1, stages=4)


MEGATRON_EXAMPLES = [
    # the guide and the help text (whose example Megatron's own MTP rules refuse to build: its
    # two MTP layers are on two stages; the assignment is still compared)
    ("Et*3|(tt|)*29,m|L", 16, 61, 1, True), ("E|(t|)*3,m|m||L", 4, 3, 2, False), ("E||t|L", 2, 1, 0, True),
    # tests/unit_tests/pipeline_parallel/test_pipeline_layout.py (PP 4, VPP 2, 8 layers)
    ("E|t*3|(t|)*5mL", 4, 8, 1, True), ("E|t*3|(t|)*4tm|L", 4, 8, 1, True), ("E|t*3|(t|)*3tt|m|L", 4, 8, 1, True),
    # parse_str_to_list's docstring
    ("Ettt|(tt|)*29,m|L", 16, 61, 1, True),
]


@pytest.mark.parametrize("text, pp, layers, mtp, builds", MEGATRON_EXAMPLES)
def test_examples_equal_megatron_cores_assignment(megatron, text, pp, layers, mtp, builds):
    ours = Layout.parse(text).check(layers, mtp)
    assert ours.stages == megatron_stages(megatron, text)
    theirs = megatron.Layout(text, pp)
    if builds:
        theirs.validate_layer_layout(layers, mtp)
    vpp = theirs.virtual_pipeline_model_parallel_size
    megatron.state.set_virtual_pipeline_model_parallel_world_size(vpp if vpp > 1 else None)
    try:
        for rank in range(pp):
            for chunk in range(vpp):
                stage = chunk * pp + rank
                for kind, symbol in ((megatron.LayerType.decoder, "t"), (megatron.LayerType.mtp, "m")):
                    got = theirs.get_layer_id_list(kind, vp_stage=chunk, pp_rank=rank)
                    assert ours.layer_ids(stage, symbol) == got, (text, rank, chunk, symbol)
    finally:
        megatron.state.set_virtual_pipeline_model_parallel_world_size(None)


# Random strings against megatron-core's parser ------------------------------------------------

def _atom(draw) -> str:
    symbol = draw(st.sampled_from("EtmL|"))
    count = draw(st.none() | st.integers(0, 12))
    return symbol if count is None else f"{symbol}*{count}"


@st.composite
def layout_strings(draw):
    parts = []
    for _ in range(draw(st.integers(1, 8))):
        if draw(st.integers(0, 3)) == 0:
            group = "".join(_atom(draw) for _ in range(draw(st.integers(1, 4))))
            parts.append(f"({group})*{draw(st.integers(0, 5))}")
        else:
            parts.append(_atom(draw))
        if draw(st.booleans()):
            parts.append(",")
    return "".join(parts)


@given(layout_strings())
def test_random_layout_strings_parse_as_megatron_parses_them(megatron, text):
    assert Layout.parse(text).stages == megatron_stages(megatron, text)


@given(st.text(alphabet="EtmL|()*,0123x ", max_size=14))
@example("(*0")
@example("0*0")
def test_any_string_we_accept_megatron_reads_the_same(megatron, text):
    try:
        ours = Layout.parse(text)
    except LayoutError as exc:
        assert exc.position is not None and 0 <= exc.position < len(text)
        try:
            theirs = megatron_stages(megatron, text)
        except (AssertionError, KeyError, ValueError):
            return  # both refuse
        # Megatron reads these with its regular expressions; we refuse them on purpose: a repeat
        # of a repeat, nested groups, a '*' with nothing before it ('(*0' reads there as one
        # empty stage), and a character that is no layer symbol, which Megatron only lets
        # through when it is repeated zero times ('0*0' reads there as one empty stage)
        deliberate = any(why in str(exc) for why in ("repeated again", "nested", "'*' must follow")) or \
            ("is not a layer symbol" in str(exc) and not "".join(theirs))
        assert deliberate, (text, theirs)
        return
    assert ours.stages == megatron_stages(megatron, text)


@given(st.lists(st.text(alphabet="Etm", max_size=4), min_size=1, max_size=10))
def test_printing_a_layout_reads_back_the_same_in_both_parsers(megatron, stages):
    stages[0] = "E" + stages[0]
    stages[-1] += "L"
    layout = Layout(tuple(stages))
    assert Layout.parse(str(layout)) == layout
    assert megatron_stages(megatron, str(layout)) == layout.stages


def test_printing_folds_repetitions():
    assert str(Layout.parse("Et*3|(tt|)*29,m|L")) == "Et*3|(tt|)*29m|L"
    assert str(Layout.from_counts([9, 10, 10, 10, 10, 10, 10, 11])) == "Et*9|(t*10|)*6t*11L"


# Megatron's default split and its first/last-stage options ------------------------------------

@pytest.mark.parametrize("layers, pp, vpp", [(8, 2, 1), (8, 2, 2), (8, 4, 2), (12, 3, 2), (32, 8, 1), (32, 4, 4),
                                             (80, 8, 1), (80, 8, 2), (126, 7, 3)])
def test_even_split_equals_megatrons_default(megatron, layers, pp, vpp):
    ours = Layout.even(layers, pp * vpp)
    config = SimpleNamespace(pipeline_model_parallel_layout=None, num_layers=layers, pipeline_model_parallel_size=pp,
                             virtual_pipeline_model_parallel_size=vpp if vpp > 1 else None,
                             num_layers_in_first_pipeline_stage=None, num_layers_in_last_pipeline_stage=None,
                             account_for_embedding_in_pipeline_split=False, account_for_loss_in_pipeline_split=False)
    for rank in range(pp):
        for chunk in range(vpp):
            assert ours.counts()[chunk * pp + rank] == megatron.layers_to_build(config, vp_stage=chunk, pp_rank=rank)


@pytest.mark.parametrize("layers, pp, first, last", [(8, 2, 3, None), (8, 2, None, 5), (10, 4, 2, 2), (80, 10, 7, 9),
                                                     (126, 16, 7, 7), (32, 8, 1, 1), (32, 8, None, 4), (30, 3, 14, 2)])
def test_first_and_last_stage_layers_equal_megatrons(megatron, layers, pp, first, last):
    ours = Layout.uneven(layers, pp, first, last)
    config = SimpleNamespace(pipeline_model_parallel_layout=None, num_layers=layers, pipeline_model_parallel_size=pp,
                             virtual_pipeline_model_parallel_size=None, num_layers_in_first_pipeline_stage=first,
                             num_layers_in_last_pipeline_stage=last, account_for_embedding_in_pipeline_split=False,
                             account_for_loss_in_pipeline_split=False)
    assert ours.counts() == [megatron.layers_to_build(config, pp_rank=r) for r in range(pp)]
    assert ours.counts("E") == [1] + [0] * (pp - 1) and ours.counts("L") == [0] * (pp - 1) + [1]


def test_llama_3_405b_layout_of_its_paper():
    # Dubey et al. 2024, §3.3.2: 126 layers on 16 stages, one layer fewer on the first and last
    layout = Layout.uneven(126, 16, first=7, last=7)
    assert layout.counts() == [7] + [8] * 14 + [7]


# Refusals -------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, position, words", [
    ("Et*3|(tt|*29", 5, "never closed"), ("Et**3", 2, "needs a count"), ("E|t*|L", 3, "needs a count"),
    ("(t)|L", 2, "must be repeated"), ("E|x|L", 2, "'x' is not a layer symbol"), ("t*2*3", 3, "repeated again"),
    ("((t|)*2)*2", 1, "nested"), ("E|t L", 3, "' ' is not a layer symbol"), ("E)|L", 1, "closes no"),
    ("*3t", 0, "must follow"), ("()*2", 0, "empty"), ("E|t*9999999999|L", 4, "too large"),
    ("(t*999999999|)*9", 1, "more than 1,000,000 items"),
    ("(t*999|)*999999999", 0, "more than 1,000,000 items"), ("E,|,x", 4, "not a layer symbol"),
])
def test_syntax_errors_name_their_position(text, position, words):
    with pytest.raises(LayoutError) as info:
        Layout.parse(text)
    assert info.value.position == position
    assert words in str(info.value) and f"at position {position}" in str(info.value)
    assert str(info.value).startswith(f"layout={text!r}")


@pytest.mark.parametrize("text, kwargs, words", [
    ("Et|t|tL", dict(layers=3, stages=4), "it has 3 stages"),
    ("t|t|tL", dict(layers=3), "0 × E"),
    ("Et|t|tLL", dict(layers=3), "2 × L"),
    ("Et|t|L", dict(layers=3), "2 × t"),
    ("tE|t|tL", dict(layers=3), "the embedding must come first"),
    ("Et|m|tL", dict(layers=2, mtp_layers=1), "a transformer layer follows an MTP layer"),
    ("Et|t|tL", dict(layers=3, mtp_layers=1), "0 × m"),
])
def test_layouts_that_do_not_fit_the_model_or_the_stages(text, kwargs, words):
    with pytest.raises(LayoutError) as info:
        Layout.parse(text).check(**kwargs)
    assert words in str(info.value)


def test_huge_layouts_are_refused_before_they_are_built():
    with pytest.raises(LayoutError, match="longer than 1,000,000 characters"):
        Layout.parse("t" * 1_000_001)
    with pytest.raises(LayoutError, match="too large"):
        Layout.from_counts([10**6, 10**6])


def test_split_options_refuse_what_megatron_refuses():
    with pytest.raises(LayoutError, match="do not split evenly"):
        Layout.even(126, 16)
    with pytest.raises(LayoutError, match="remain for"):
        Layout.uneven(11, 4, first=3, last=3)  # 5 layers for the 2 middle stages
    with pytest.raises(LayoutError, match="one stage is both first and last"):
        Layout.uneven(4, 1, first=4)
    with pytest.raises(LayoutError, match="out of range"):
        Layout.uneven(4, 2, first=-1)
    with pytest.raises(LayoutError, match="not a list of layer counts"):
        Layout.from_counts([3, -1])
    with pytest.raises(LayoutError):
        Layout(("Ex",))
