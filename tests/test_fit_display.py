"""What the widget and the static memory chart are told about memory in real units (capacity,
fit, excess), segmented programs (Seq1F1B) and forward-only ones (inference): the meta fields
describe() adds, checked against the Result, and the capacity rule of memory_curve_chart."""

import json

import pytest

import ppviz
from ppviz.charts import memory_curve_chart
from ppviz.charts.style import CHART
from ppviz.widgets.wire import describe

GIB = 2**30
LLAMA_70B = ppviz.Transformer.preset("llama-3-70b")
H100 = ppviz.Hardware.preset("h100-sxm")
SETUP = dict(devices=8, microbatches=32, tensor_parallel=8, data_parallel=4, zero_stage=1)


@pytest.fixture(scope="module")
def gpipe():
    return ppviz.simulate(ppviz.Config.from_model(LLAMA_70B, H100, schedule="gpipe", **SETUP))


def test_the_meta_carries_the_capacity_and_each_devices_fit_and_excess(gpipe):
    meta = json.loads(json.dumps(describe(gpipe)))
    b = meta["activation_bytes"]
    assert meta["memory_capacity"] * b == pytest.approx(80 * GIB, rel=1e-12)
    # GPipe keeps all 32 microbatches' activations: every device is over 80 GiB, device 7 most
    assert meta["fits"] == [False] * 8
    excess = [x * b / GIB for x in meta["excess"]]
    assert max(range(8), key=excess.__getitem__) == 7
    assert f"{excess[7]:.3g}" == "28.2"  # the widget's badge: "does not fit: device 7 over by 28.2 GiB"
    assert [x * b for x in meta["excess"]] == pytest.approx(gpipe.excess_bytes.tolist(), rel=1e-12)
    fits = describe(ppviz.simulate(ppviz.Config.from_model(LLAMA_70B, H100, schedule="1f1b", **SETUP)))
    assert fits["fits"] == [True] * 8 and fits["excess"] == [0.0] * 8


def test_a_segmented_program_tells_its_segments_and_whole_microbatches():
    res = ppviz.simulate(ppviz.Config(schedule="seq1f1b", microbatches=4, segments=2))
    meta = json.loads(json.dumps(describe(res)))
    # the ops' microbatch indices run over m·k; the widget labels index i as (i // k).(i % k)
    assert (meta["segments"], meta["whole_microbatches"], meta["microbatches"]) == (2, 4, 8)
    assert int(res.ops.microbatch.max()) == 7
    assert meta["forward_only"] is False
    assert meta["time_to_first_output"] is None and meta["throughput"] is None
    plain = describe(ppviz.simulate(ppviz.Config(schedule="1f1b", devices=4, microbatches=8)))
    assert (plain["segments"], plain["whole_microbatches"], plain["microbatches"]) == (1, 8, 8)


def test_a_forward_only_program_sends_its_latency_and_throughput():
    res = ppviz.simulate(ppviz.Config(schedule="inference", devices=4, microbatches=8))
    meta = json.loads(json.dumps(describe(res)))
    assert meta["forward_only"] is True
    # p = 4 stages of f = 1: the first output after 4, then one per unit of time
    assert meta["time_to_first_output"] == res.time_to_first_output == 4.0
    assert meta["throughput"] == res.throughput == 1.0
    assert meta["closed_form"]["first_output"] == 4.0 and meta["closed_form"]["throughput"] == 1.0
    training = describe(ppviz.simulate(ppviz.Config(schedule="1f1b", devices=4, microbatches=8)))
    assert training["closed_form"]["first_output"] is None and training["closed_form"]["throughput"] is None


def _layers(spec: dict) -> list[dict]:
    return spec["spec"]["layer"]


def test_the_static_memory_chart_draws_the_capacity_and_names_each_devices_excess(gpipe):
    spec = memory_curve_chart(gpipe).to_dict()
    rules = [layer for layer in _layers(spec) if layer["mark"].get("type") == "rule"]
    assert len(rules) == 1
    assert rules[0]["mark"]["color"] == CHART["capacity"]
    assert rules[0]["encoding"]["y"]["datum"] == pytest.approx(80.0, rel=1e-12)  # GiB
    # the scale reaches above the highest peak (108 GiB), so the rule shows on every row
    top = spec["spec"]["layer"][0]["encoding"]["y"]["scale"]["domain"][1]
    assert top == pytest.approx(1.1 * gpipe.peak_memory_bytes.max() / GIB, rel=1e-9)
    rows = {r["row"] for r in spec["datasets"][next(iter(spec["datasets"]))]} if "datasets" in spec else \
        {r["row"] for r in spec["data"]["values"]}
    assert "device 7 · peak 108.2 · +28.24 GiB over" in rows
    assert "exceeded on 8 of 8 devices" in " ".join(spec["title"]["subtitle"])
    # without a capacity: no rule, no excess
    plain = memory_curve_chart(ppviz.simulate(ppviz.Config(schedule="1f1b", devices=4, microbatches=8))).to_dict()
    assert not [layer for layer in _layers(plain) if layer["mark"].get("type") == "rule"]
