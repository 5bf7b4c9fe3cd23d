from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ppviz
from ppviz import Config, DeadlockError, Program, simulate
from ppviz.core.numbers import number


def run(schedule, p=4, m=8, **kw):
    return simulate(Config(schedule=schedule, devices=p, microbatches=m, **kw))


# Published numbers (landscape.md §3, reproduced by running the anchors' own code) -------------

def test_1f1b_p4_m8():
    res = run("1f1b")  # f = b = w = 1: F = 1, full B = 2
    assert res.makespan == 33
    assert Fraction(res.bubble_fraction).limit_denominator(1000) == Fraction(3, 11)
    assert list(res.idle) == [9, 9, 9, 9]


def test_gpipe_matches_1f1b_bubble():
    assert run("gpipe").makespan == 33


def test_zb_h1_is_27_and_a_third_of_1f1b_idle():
    zb, base = run("zb-h1"), run("1f1b")
    assert zb.makespan == 27
    assert list(zb.idle) == [3, 3, 3, 3]
    assert zb.idle[0] * 3 == base.idle[0]


@pytest.mark.parametrize("group", [None, 4, 8])
def test_interleaved_v2_is_28_5(group):
    res = run("interleaved-1f1b", stages_per_device=2, microbatch_group_size=group)
    assert res.makespan == 28.5
    assert res.idle[0] == 4.5


def test_peak_activation_on_device_0():
    p, m, v = 4, 8, 2
    assert run("gpipe").peak_activation[0] == m
    assert list(run("1f1b").peak_activation) == [4, 3, 2, 1]
    assert run("interleaved-1f1b", stages_per_device=v).peak_activation[0] == p + (p - 1) / v


@pytest.mark.parametrize("m, v, expected", [(1, 1, 7.0), (32, 8, 0.02734375)])
def test_playbook_bubble_chart_p8(m, v, expected):
    # Ultra-Scale Playbook pp_bubblesize chart: (p−1)/(v·m) for p = 8
    name = "1f1b" if v == 1 else "interleaved-1f1b"
    res = run(name, p=8, m=m, stages_per_device=v)
    assert res.bubble_rate == pytest.approx(expected)
    assert res.closed_form.bubble_rate == pytest.approx(expected)


# Hand-checked small cases with unequal costs -----------------------------------------------------

def test_1f1b_unequal_costs_by_hand():
    # p=2, m=2, f=1, b=2, w=1 (full B = 3). Device 0: F0 [0,1] F1 [1,2] B0 waits for device 1's B0.
    # Device 1: F0 [1,2] B0 [2,5] F1 [5,6] B1 [6,9]. Device 0: B0 [5,8] B1 [9,12].
    res = run("1f1b", p=2, m=2, f=1, b=2, w=1)
    starts = {(int(d), str(k), int(mb)): s for d, k, mb, s in zip(res.ops.device, res.ops.kind, res.ops.microbatch, res.ops.start)}
    assert starts[(1, "B", 0)] == 2 and starts[(1, "F", 1)] == 5 and starts[(0, "B", 0)] == 5 and starts[(0, "B", 1)] == 9
    assert res.makespan == 12


def test_comm_is_added_only_across_devices():
    # p=2, m=1: F0 [0,1] on d0, F1 [1+c, 2+c] on d1, B1 [2+c, 4+c] (same device: no comm),
    # B0 [4+2c, 6+2c]
    res = run("1f1b", p=2, m=1, comm=0.25)
    assert res.makespan == 6.5
    assert list(res.ops.start) == [0, 4.5, 1.25, 2.25]


def test_zb_h1_unequal_costs_by_hand():
    # p=2, m=2, f=2, b=1, w=1. Orders: device 0 F0 F1 I0 W0 I1 W1; device 1 F0 I0 F1 I1 W0 W1.
    # Device 1: F0 [2,4] I0 [4,5] F1 [5,7] I1 [7,8] W0 [8,9] W1 [9,10].
    # Device 0: F0 [0,2] F1 [2,4] I0 [5,6] (after device 1's I0) W0 [6,7] I1 [8,9] W1 [9,10].
    res = run("zb-h1", p=2, m=2, f=2, b=1, w=1)
    assert res.program.to_actions() == {0: ["0F0", "0F1", "0I0", "0W0", "0I1", "0W1"],
                                      1: ["1F0", "1I0", "1F1", "1I1", "1W0", "1W1"]}
    assert list(res.ops.start) == [0, 2, 5, 6, 8, 9, 2, 4, 5, 7, 8, 9]
    assert res.makespan == 10
    # the closed form (p−1)(f+b−w) = 2 of idle per device agrees
    assert res.closed_form.applies and res.closed_form.makespan == 10 and list(res.idle) == [2, 2]


def test_per_stage_override_slows_the_pipeline():
    base = run("1f1b", p=4, m=8)
    slow = run("1f1b", p=4, m=8, stage_costs={3: {"f": 2.0, "b": 2.0, "w": 2.0}})
    # the last stage is the bottleneck: it runs 8 × 6 of work after its first forward arrives at t = 3
    assert slow.makespan == 3 + 8 * 6 + 3 * 2
    assert slow.makespan > base.makespan
    assert slow.closed_form is not None and not slow.closed_form.applies


def test_host_gaps_and_the_first_microbatchs_warm_up_by_hand():
    # 1F1B, p = 2, m = 2, f = 1, B = 2 (b = w = 1). Every op pays its stage's gap (F 0.25, B 0.5 on
    # stage 0 only); microbatch 0's F on stage 1 is 2 longer, its B on stage 0 1.5 (warmup_b + warmup_w)
    res = run("1f1b", p=2, m=2, stage_costs={0: {"gap_f": 0.25, "gap_b": 0.5, "warmup_b": 1.0, "warmup_w": 0.5},
                                             1: {"warmup_f": 2.0}})
    assert res.program.to_actions() == {0: ["0F0", "0F1", "0B0", "0B1"], 1: ["1F0", "1B0", "1F1", "1B1"]}
    # device 0: F0 0–1.25, F1 1.25–2.5; device 1: F0 1.25–4.25 (3 with its warm-up), B0 4.25–6.25, F1 6.25–7.25,
    # B1 7.25–9.25; device 0: B0 6.25–10.25 (2 + 0.5 gap + 1.5 warm-up), B1 10.25–12.75
    assert res.ops.start.tolist() == [0, 1.25, 6.25, 10.25, 1.25, 4.25, 6.25, 7.25]
    assert res.ops.end.tolist() == [1.25, 2.5, 10.25, 12.75, 4.25, 6.25, 7.25, 9.25]
    # under sequence segments the pass is split, not the gap or the warm-up: segment 0 of microbatch 0 alone
    # pays the warm-up, every segment the gap
    seq = simulate(Config("seq1f1b", devices=2, microbatches=1, segments=2, stage_costs={0: {"gap_f": 0.25,
                                                                                              "warmup_f": 1.0}}))
    forwards = (seq.ops.stage == 0) & (seq.ops.kind == "F")
    assert seq.ops.duration[forwards].tolist() == [0.5 + 0.25 + 1.0, 0.5 + 0.25]
    assert "  (the closed form assumes uniform stage costs, comm = 0; this config has host gaps per op, a " \
           "first-microbatch warm-up)" in res.summary().splitlines()


def test_fb_pair_cost_and_timing():
    # a single device running an overlapped pair: F1 with B0 in one slot costing fb (ratio applied)
    program = Program.from_text({0: "0F0 (0F1;0B0)OVERLAP_F_B 0B1"})
    res = simulate(program, f=1, b=1, w=1)  # pair = F + B = 3
    assert list(res.ops.start) == [0, 1, 1, 4]
    assert list(res.ops.end) == [1, 4, 4, 6]
    assert res.ops.pair.tolist() == [False, True, True, False]
    faster = simulate(program, f=1, b=1, w=1, fb=2.0)  # fb / (f+b+w) = 2/3 of 3 = 2
    assert faster.makespan == 1 + 2 + 2


def test_stage_fraction_scales_costs_with_v():
    # v = 2: each stage is half of 1/p of the model, so an interleaved program costs the same per device
    a, b = run("1f1b", p=4, m=8), run("interleaved-1f1b", p=4, m=8, stages_per_device=2)
    assert a.busy[0] == b.busy[0] == 8 * 3


# Memory --------------------------------------------------------------------------------------------

def test_memory_release_rules():
    program = Program.from_text({0: "0F0 0I0 0W0"})
    res = simulate(program, w_share=0.25, activation=2.0)
    times, values = res.memory.curve(0)
    # F allocates 2 at t=0; I at [1,2] frees 1.5 (the share W does not need); W at [2,3] frees 0.5
    assert list(times) == [0, 2, 3]
    assert list(values) == [2, 0.5, 0]
    assert res.memory.at(0.5)[0] == 2.0
    assert res.memory.at(2.5)[0] == 0.5
    assert res.memory.at(3.0)[0] == 0.0
    assert res.peak_activation[0] == 2.0


@settings(max_examples=150)
@given(st.lists(st.lists(st.tuples(st.sampled_from([0.0, 1.0, 1.5, 2.0, 7.0]) | st.floats(0, 9),
                                   st.booleans(), st.sampled_from([0.5, 1.0, 0.1, 0.2]) | st.floats(0, 3)),
                         max_size=70), min_size=1, max_size=9))
def test_step_curves_follow_each_device_event_by_event(per_device):
    # devices with very different event counts (the rows are grouped by count), ties, and levels
    # that come back to zero only up to rounding
    from ppviz.core.memory import step_curves

    frees = [(d, t, a) for d, events in enumerate(per_device) for t, alloc, a in events if not alloc]
    allocs = [(d, t, a) for d, events in enumerate(per_device) for t, alloc, a in events if alloc]
    scale = np.array([max([a for t, alloc, a in events if alloc], default=0.0) for events in per_device])

    def columns(events, column):
        return np.array([e[column] for e in events], dtype=np.int64 if column == 0 else float)

    curves = step_curves(len(per_device), columns(frees, 0), columns(frees, 1), columns(frees, 2),
                         columns(allocs, 0), columns(allocs, 1), columns(allocs, 2), scale)
    for d, events in enumerate(per_device):
        level, points = 0.0, [(0.0, 0.0)]
        for t, alloc, a in sorted(events, key=lambda e: (e[0], e[1])):  # frees first at an instant
            level += a if alloc else -a
            shown = 0.0 if abs(level) < 1e-9 * max(1.0, scale[d]) else level
            if points[-1][0] == t:
                points.pop()
            if not points or points[-1][1] != shown:
                points.append((t, shown))
        times, values = curves.curve(d)
        assert list(zip(times.tolist(), values.tolist())) == points, d


def test_frees_before_allocations_at_the_same_instant():
    res = run("1f1b", p=2, m=4)
    # device 1 alternates F and B back to back: it never holds more than one activation
    assert res.peak_activation[1] == 1


def test_static_memory_counts_replicas_and_bytes():
    res = run("1f1b", p=4, m=8, params=3.0, activation_bytes=2e6)
    assert list(res.static_memory) == [3, 3, 3, 3]
    assert list(res.peak_memory) == [7, 6, 5, 4]
    assert list(res.peak_memory_bytes) == [14e6, 12e6, 10e6, 8e6]


# Deadlocks and robustness --------------------------------------------------------------------------

def test_deadlock_shows_each_blocked_device():
    # device 0 wants the backward before device 1 has run the forward it needs
    program = Program.from_text({0: "0F0 0B0 0F1 0B1", 1: "1F1 1B1 1F0 1B0"})
    with pytest.raises(DeadlockError) as err:
        simulate(program)
    text = str(err.value)
    assert "deadlock" in text
    assert "[0B0]" in text and "waits for 1B0" in text
    assert "[1F1]" in text and "waits for 0F1" in text
    assert err.value.blocked == {0: ("0B0", "1B0"), 1: ("1F1", "0F1")}
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize("engine", ["events", "lockstep"])
def test_both_engines_report_the_same_deadlock(engine):
    program = Program.from_text({0: "0F0 0B0 0F1 0B1", 1: "1F1 1B1 1F0 1B0"})
    with pytest.raises(DeadlockError, match=r"\[0B0\]"):
        simulate(program, engine=engine)


def test_long_chain_does_not_recurse():
    # one device, 200 000 microbatches: the old recursive executors hit RecursionError here
    res = run("1f1b", p=1, m=200_000)
    assert res.makespan == 200_000 * 3


def test_engines_are_bit_identical():
    cfg = Config(schedule="interleaved-1f1b", devices=8, microbatches=24, stages_per_device=3, f=0.7, b=1.3, w=0.9, comm=0.11)
    a = simulate(cfg, engine="events")
    b = simulate(cfg, engine="lockstep")
    assert np.array_equal(a.ops.start, b.ops.start) and np.array_equal(a.ops.end, b.ops.end)


def test_waited_for_names_the_binding_dependency():
    res = run("1f1b", p=2, m=1)
    # device 1's F0 waited for device 0's F0; device 0's B0 waited for device 1's B0
    k = {(int(d), str(kd)): i for i, (d, kd) in enumerate(zip(res.ops.device, res.ops.kind))}
    assert res.ops.waited_for[k[(1, "F")]] == k[(0, "F")]
    assert res.ops.waited_for[k[(0, "B")]] == k[(1, "B")]
    assert res.ops.waited_for[k[(0, "F")]] == -1


def test_to_pandas_has_the_timeline_columns():
    pd = pytest.importorskip("pandas")
    df = run("1f1b", p=2, m=2).to_pandas()
    assert list(df.columns[:6]) == ["device", "stage", "microbatch", "kind", "start", "end"]
    assert len(df) == 8 and isinstance(df, pd.DataFrame)


def test_simulate_takes_every_kind_of_run_and_names_the_kinds_when_refusing():
    assert simulate("1f1b").makespan == simulate(ppviz.Config(schedule="1f1b")).makespan
    result = simulate("zb-h1", devices=8)
    assert result.config.devices == 8 and simulate(result) is result
    assert simulate(result, microbatches=16).config.microbatches == 16
    with pytest.raises(ppviz.ConfigError, match=r"^run=42: an int is not a run; give a ppviz.Config, Program or "
                                                r"Result, or a schedule name"):
        simulate(42)
    with pytest.raises(ppviz.ConfigError, match="give a config with a Program only"):
        simulate(result, ppviz.Config())


# The automatic engine choice ----------------------------------------------------------------------

def lockstep_rounds(program):
    # with unit costs and no latency an op ends at its lockstep round: one more than the later of
    # its device's previous op and its dependency
    from ppviz.core.engine import execute

    return int(execute(program, np.ones(len(program)), 0.0, engine="events")[1].max())


@pytest.mark.parametrize("schedule", [s.name for s in ppviz.list_schedules() if s.name != "custom"])
def test_the_cost_model_never_underestimates_lockstep_rounds(schedule):
    from ppviz.core.engine import estimated_rounds

    for p in (1, 2, 3, 5, 8):
        for m in (1, 2, 5, 16):
            for v in (1, 2, 3):
                try:
                    program = Config(schedule=schedule, devices=p, microbatches=m, stages_per_device=v).build()
                except ppviz.PpvizError:
                    continue
                if not program.pair.any():
                    assert estimated_rounds(program) >= lockstep_rounds(program), (p, m, v)


def test_auto_runs_the_event_engine_when_devices_wait_on_each_other():
    from ppviz.core.engine import choose_engine

    # looped BFS at m = 1: one chain of 2S ops, so lockstep runs one op per round (the issue's
    # p = 1024, v = 200 took 10.7 s on lockstep against 0.42 s on events); the old rule (ops >= 8
    # ops per device) took lockstep here
    looped = Config(schedule="looped-bfs", devices=256, microbatches=1, stages_per_device=50).build()
    assert lockstep_rounds(looped) == len(looped) == 2 * looped.stages
    assert choose_engine(looped) == "events"
    # 1F1B at m >> p: every device moves in nearly every round
    long_1f1b = Config(schedule="1f1b", devices=64, microbatches=2048).build()
    assert lockstep_rounds(long_1f1b) == 2 * 2048 + 2 * 63
    assert choose_engine(long_1f1b) == "lockstep"
    # few devices and long ones: a round costs more than the ops it moves
    assert choose_engine(Config(schedule="1f1b", devices=2, microbatches=4096).build()) == "events"
    # F&B pairs only run on the event engine
    assert choose_engine(Config(schedule="dualpipe", devices=8, microbatches=64).build()) == "events"


def test_the_fit_line_without_activation_bytes_counts_activations():
    # 1F1B, p = 4: device d holds p − d forwards' activations at its peak (4, 3, 2, 1), in units
    # of one microbatch's activation when no byte size is given
    fits = run("1f1b", memory_capacity=5)
    assert fits.config.activation_bytes is None
    assert fits.fit_summary() == "memory capacity  5 per device: fits (highest peak 4 on device 0)"
    over = run("1f1b", memory_capacity=2.5)
    assert over.fit_summary() == ("memory capacity  2.5 per device: OUT OF MEMORY on devices 0, 1 "
                                  "(up to 1.5 over, on device 0)")


def test_execute_runs_without_naming_an_engine():
    # ppviz.analysis calls the engine with its default; 1F1B, p = 4, m = 8, f = 1, b = 2 ends at
    # (m + p − 1)(f + b) = 33, and device 0's first forward starts at 0
    from ppviz.core.engine import execute

    program = Config(schedule="1f1b", devices=4, microbatches=8).build()
    cost = np.where(program.kind == ppviz.core.program.F, 1.0, 2.0)
    start, end, dep = execute(program, cost, 0.0)
    assert end.max() == 33.0 and start[0] == 0.0 and dep[0] == -1


def test_the_summary_names_the_settings_its_first_line_leaves_out():
    # the header said "f=1 b=1 w=1" over a makespan of 60: the slow stage and recompute were unseen
    res = run("1f1b", fb=2.5, w_share=0.5, recompute="full", stage_costs={3: {"f": 2.0, "activation": 0.5}})
    lines = res.summary().splitlines()
    assert lines[1] == "  settings         fb=2.5 w_share=0.5 recompute=full; stage 3 f=2 activation=0.5"
    assert lines[2].startswith("  makespan         60")
    assert not any(line.startswith("  settings") for line in run("1f1b").summary().splitlines())


def test_the_settings_name_stages_alike_together():
    # a model's config gives every stage all of its costs: the line listed 16 stages × 6 values,
    # recompute times included where nothing recomputes
    model, gpu = ppviz.Transformer.preset("llama-3-8b"), ppviz.Hardware.preset("h100-sxm")
    config = Config.from_model(model, gpu, schedule="1f1b", devices=16, microbatches=32)
    line = simulate(config).summary().splitlines()[1]
    costs = config.stage_costs
    middle = costs[1]
    assert all(costs[s] == middle for s in range(1, 15)) and costs[0] != middle != costs[15]
    gib = config.activation_bytes / 2**30

    def stage(c):  # times in the run's unit (ms), memory in GiB: the summary's one unit system
        return (f"f={number(c['f'])} b={number(c['b'])} w={number(c['w'])} "
                f"activation={number(c['activation'] * gib)} GiB params={number(c['params'] * gib)} GiB")

    assert line == f"  settings         w_share=1; stage 0 {stage(costs[0])}; stages 1–14 {stage(middle)}; " \
                   f"stage 15 {stage(costs[15])}"
    # under recompute each stage's recompute time matters, and is named
    recomputed = simulate(config.replace(recompute="full")).summary().splitlines()[1]
    assert f"stages 1–14 f={number(middle['f'])} b={number(middle['b'])} w={number(middle['w'])} " \
           f"recompute={number(middle['recompute'])} activation=" in recomputed
    # stages alike but not next to each other stay apart
    apart = simulate(run("1f1b", stage_costs={0: {"f": 2.0}, 2: {"f": 2.0}}).config).summary().splitlines()[1]
    assert apart == "  settings         stage 0 f=2; stage 2 f=2"
