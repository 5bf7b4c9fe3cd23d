"""dualpipe and dualpipe-v: DeepSeek's published figures, the recipe, hand-checked small cases.

Notation of the published formula (DeepSeek): F forward, B full backward (= b + w here), W
weight backward, F&B an overlapped pair (``fb``; default f + b + w, no overlap gain).
"""

import numpy as np
import pytest

from ppviz import Config, ScheduleConstraintError, simulate


def run(schedule, p, m, **kw):
    return simulate(Config(schedule=schedule, devices=p, microbatches=m, **kw))


def starts(res):
    """{device: [(action, start), ...]} in program order (a pair is one action)."""
    out = {}
    for d in range(res.devices):
        lo, hi = int(res.program.offsets[d]), int(res.program.offsets[d + 1])
        index = []
        k = lo
        while k < hi:
            index.append(k)
            k += 2 if res.program.pair[k] else 1
        out[d] = [(a, float(res.ops.start[k])) for a, k in zip(res.program.device_actions(d), index)]
    return out


# Published numbers (landscape.md §3) ----------------------------------------------------------------

@pytest.mark.parametrize("fb", [None, 3.0])
def test_dualpipe_p8_m20(fb):
    # DeepSeek's README example: 8 ranks, 20 microbatches; F = 1, B = 2, W = 1, F&B = 3
    res = run("dualpipe", 8, 20, f=1, b=1, w=1, fb=fb, params=1.0)
    assert res.makespan == 66
    assert list(res.idle) == [6] * 8  # (PP/2 − 1)(F&B + B − 3W) = 3 · (3 + 2 − 3)
    cf = res.closed_form
    assert cf.applies and cf.idle == 6 and cf.makespan == 66
    # "PP+1" activations, in units of one microbatch through 1/p of the model (1F1B: PP)
    assert list(res.peak_activation) == list(cf.peak_activation) == [9] * 8
    # "2×" parameters: each device holds a stage of both replicas
    assert list(res.static_memory) == [2] * 8
    assert list(run("1f1b", 8, 20, params=1.0).static_memory) == [1] * 8


@pytest.mark.parametrize("w_share", [0.0, 32 / 34, 1.0])
def test_dualpipe_v_p4_m10(w_share):
    # 4 devices, 8 stages; per stage F = 0.5, B = 1, W = 0.5, F&B = 1.5 (f = b = w = 1, fb = 3)
    res = run("dualpipe-v", 4, 10, w_share=w_share, params=1.0)
    assert res.makespan == 33
    assert list(res.idle) == [3.0] * 4  # (PP/2 − 1)(F&B + B − 3W) = 3 · (1.5 + 1 − 1.5)
    cf = res.closed_form
    assert cf.applies and cf.makespan == 33
    # PP+1 = 9 chunks of half an activation unit on every device, whatever W keeps
    assert list(res.peak_activation * 2) == [9] * 4
    assert list(cf.peak_activation) == [4.5] * 4
    # one model in 2p half-size stages: parameters 1× per device
    assert list(res.static_memory) == [1] * 4


# The closed forms where they apply, and where they are withheld ----------------------------------

COSTS = [(1, 1, 1), (2, 2, 1), (1, 1, 0.25), (3, 3, 3)]


@pytest.mark.parametrize("f, b, w", COSTS)
def test_dualpipe_closed_form(f, b, w):
    for p in (2, 4, 6, 8, 10):
        for m in (2 * p, 2 * p + 2, 4 * p):
            res = run("dualpipe", p, m, f=f, b=b, w=w)
            idle = (p / 2 - 1) * ((f + b + w) + (b + w) - 3 * w)
            assert res.closed_form.applies
            assert np.allclose(res.idle, idle, rtol=0, atol=1e-12), (p, m)
            assert list(res.peak_activation) == [p + 1] * p


@pytest.mark.parametrize("f, b, w", COSTS)
def test_dualpipe_v_closed_form(f, b, w):
    for p in (1, 2, 3, 4, 5, 8):
        for m in (2 * p, 2 * p + 1, 3 * p):
            res = run("dualpipe-v", p, m, f=f, b=b, w=w)
            idle = (p - 1) * ((f + b + w) + (b + w) - 3 * w) / 2
            assert res.closed_form.applies
            assert np.allclose(res.idle, idle, rtol=0, atol=1e-12), (p, m)
            assert list(res.peak_activation) == [p + 0.5] * p


def test_closed_form_withheld_when_f_and_b_differ():
    # f = 1, b = 2, w = 1: the formula would say (4 − 1)(4 + 3 − 3) = 12, the schedule idles 11
    res = run("dualpipe", 8, 20, f=1, b=2, w=1)
    assert list(res.idle) == [11] * 8
    assert not res.closed_form.applies and res.closed_form.idle == 12
    # dualpipe-v, f = 2, b = 1, w = 1: formula (3)(4 + 2 − 3)/2 = 4.5, simulated 6
    res = run("dualpipe-v", 4, 10, f=2, b=1, w=1)
    assert list(res.idle) == [6] * 4
    assert not res.closed_form.applies and res.closed_form.idle == 4.5


def test_an_overlap_gain_makes_devices_differ():
    # fb = 2.4 < f + b + w: devices running more pairs finish their work sooner, so idle is
    # no longer one figure; DeepSeek's (PP/2 − 1)(F&B + B − 3W) = 3 · 1.4 = 4.2 is the idle of
    # the middle devices, which run the most pairs
    res = run("dualpipe", 8, 20, fb=2.4)
    assert res.makespan == pytest.approx(57.6)
    assert np.allclose(res.idle, [3.0, 3.6, 4.2, 4.2, 4.2, 4.2, 3.6, 3.0])
    assert not res.closed_form.applies and res.closed_form.idle == pytest.approx(4.2)


# The recipe ------------------------------------------------------------------------------------------

def test_dualpipe_p4_m8_follows_deepseeks_eight_steps():
    # device 0 (half-rank h = 0, N = 2 half-ranks, C = 4 microbatches each way): phase 0 is the
    # down replica (stage 0, microbatches 0..3), phase 1 the up replica (stage 3 on device 0,
    # microbatches 4..7). Steps: 1) 2(N−h−1) = 2 F0; 2) 1 × F0 F1; 3) 1 × I1 W F1;
    # 4) C−2N+h+1 = 1 × (F0&B1, F1&B0); 5) 1 × (B1, F1&B0); 6) B1 then B0 split as I (h even);
    # 7) 1 × (W, I0); 8) 1 × W.
    program = Config(schedule="dualpipe", devices=4, microbatches=8).build()
    actions = program.to_actions()
    assert actions[0] == ["0F0", "0F1", "0F2", "3F4", "3I4", "3W4", "3F5", "(0F3;3B5)OVERLAP_F_B",
                          "(3F6;0B0)OVERLAP_F_B", "3B6", "(3F7;0B1)OVERLAP_F_B", "3B7", "0I2", "0W2", "0I3", "0W3"]
    # device 1 is a middle device (h = 1): its first step-4 F0 and B1 run apart, "to further
    # reduce bubble size"; step 6 switches to I before B1 because h is odd
    assert actions[1] == ["1F0", "2F4", "1F1", "2F5", "1F2", "2B4", "(2F6;1B0)OVERLAP_F_B", "(1F3;2B5)OVERLAP_F_B",
                          "(2F7;1B1)OVERLAP_F_B", "2B6", "1B2", "2I7", "1I3", "2W7", "1W3"]
    # devices p−1−r mirror devices r with the replicas' microbatches swapped
    for r in range(4):
        assert actions[3 - r] == [_swap_microbatches(a) for a in actions[r]]


def _swap_microbatches(action):
    """Swap microbatches k and k+4 (m = 8) in an action string, leaving stages alone."""
    parts = action.removeprefix("(").split(")")[0].split(";")
    out = []
    for part in parts:
        for kind in "FBIW":
            if kind in part:
                stage, mb = part.split(kind)
                out.append(f"{stage}{kind}{(int(mb) + 4) % 8}")
    return f"({out[0]};{out[1]})OVERLAP_F_B" if len(out) == 2 else out[0]


def test_dualpipe_uses_designs_replica_numbering():
    # microbatches < m/2 run stage s on device s, the rest stage s on device p−1−s
    program = Config(schedule="dualpipe", devices=6, microbatches=12).build().validate()
    assert program.placement.style == "bidirectional"
    expected = np.where(program.microbatch < 6, program.stage, 5 - program.stage)
    assert np.array_equal(program.device, expected)
    assert program.placement.describe(1) == "stages 1↓ 4↑"


# Hand-checked small cases with unequal costs ------------------------------------------------------------

def test_dualpipe_unequal_costs_by_hand():
    # p = 2, m = 4, f = 1, b = 2, w = 1: F 1, I 2, W 1, B 3, F&B pair 4. Both devices are middle
    # devices. Device 0 runs stage 0 for microbatches 0, 1 and stage 1 for 2, 3; device 1 mirrors.
    # d0: 0F0 [0,1]; 1F2 after d1's 0F2 [1,2]; 0F1 [2,3]; 1B2 (last stage, after 1F2) [3,6];
    #     (1F3;0B0) waits for 0F3 (d1, ends 3) and 1B0 (d1, ends 6) [6,10]; 1B3 [10,13];
    #     0I1 after d1's 1B1 [13,15]; 0W1 [15,16]. Device 1 is the same with microbatches swapped.
    # No idle at all: (p/2 − 1) = 0, whatever the costs.
    res = run("dualpipe", 2, 4, f=1, b=2, w=1)
    assert starts(res) == {
        0: [("0F0", 0), ("1F2", 1), ("0F1", 2), ("1B2", 3), ("(1F3;0B0)OVERLAP_F_B", 6), ("1B3", 10),
            ("0I1", 13), ("0W1", 15)],
        1: [("0F2", 0), ("1F0", 1), ("0F3", 2), ("1B0", 3), ("(1F1;0B2)OVERLAP_F_B", 6), ("1B1", 10),
            ("0I3", 13), ("0W3", 15)],
    }
    assert res.makespan == 16 and list(res.idle) == [0, 0]


def test_dualpipe_v_unequal_costs_by_hand():
    # p = 2, m = 4, f = 2, b = 1, w = 1: per stage F 1, I ½, W ½, B 1, F&B 2. Device 0 holds
    # stages 0 and 3, device 1 stages 1 and 2 (the middle device, which runs its first F0, B1 apart).
    # d0: 0F0 [0,1] 0F1 [1,2] 0F2 [2,3];  d1: 1F0 [1,2] 2F0 [2,3] 1F1 [3,4] 2F1 [4,5] 1F2 [5,6]
    # d0: 3F0 after 2F0 [3,4], 3I0 [4,4½], 3W0 [4½,5], 3F1 after 2F1 [5,6], (0F3;3B1) [6,8]
    # d1: 2B0 after 3I0, behind 1F2 [6,7]; (2F2;1B0) [7,9]
    # d0: (3F2;0B0) waits for 2F2 and 1B0 [9,11], 3B2 [11,12]
    # d1: (1F3;2B1) after 0F3 and 3B1 [9,11], (2F3;1B1) [11,13], 2B2 after 3B2 [13,14], 1B2 [14,15]
    # d0: (3F3;0B1) waits for 2F3 and 1B1 [13,15], 3B3 [15,16], 0I2 after 1B2 [16,16½], 0W2 [16½,17]
    # d1: 2I3 after 3B3 [16,16½], 1I3 [16½,17], 2W3 [17,17½], 1W3 [17½,18]
    # d0: 0I3 after 1I3 [17,17½], 0W3 [17½,18]
    res = run("dualpipe-v", 2, 4, f=2, b=1, w=1)
    assert starts(res) == {
        0: [("0F0", 0), ("0F1", 1), ("0F2", 2), ("3F0", 3), ("3I0", 4), ("3W0", 4.5), ("3F1", 5),
            ("(0F3;3B1)OVERLAP_F_B", 6), ("(3F2;0B0)OVERLAP_F_B", 9), ("3B2", 11), ("(3F3;0B1)OVERLAP_F_B", 13),
            ("3B3", 15), ("0I2", 16), ("0W2", 16.5), ("0I3", 17), ("0W3", 17.5)],
        1: [("1F0", 1), ("2F0", 2), ("1F1", 3), ("2F1", 4), ("1F2", 5), ("2B0", 6), ("(2F2;1B0)OVERLAP_F_B", 7),
            ("(1F3;2B1)OVERLAP_F_B", 9), ("(2F3;1B1)OVERLAP_F_B", 11), ("2B2", 13), ("1B2", 14), ("2I3", 16),
            ("1I3", 16.5), ("2W3", 17), ("1W3", 17.5)],
    }
    assert res.makespan == 18 and list(res.idle) == [2, 2]
    assert not res.closed_form.applies


# Registry and constraints ----------------------------------------------------------------------------------

@pytest.mark.parametrize("alias, name", [("DualPipe", "dualpipe"), ("DualPipeV", "dualpipe-v"),
                                         ("ScheduleDualPipeV", "dualpipe-v"), ("dualpipev", "dualpipe-v"),
                                         ("cut-in-half", "dualpipe-v")])
def test_aliases(alias, name):
    assert Config(schedule=alias, devices=4, microbatches=8).schedule == name


def test_dualpipe_stage_count_and_cost_fraction():
    # two replicas numbered alike: S = p stages of 1/p of the model, each costing f, b, w
    cfg = Config(schedule="dualpipe", devices=4, microbatches=8)
    assert (cfg.stages_per_device, cfg.stages) == (1, 4)
    assert Config(schedule="dualpipe-v", devices=4, microbatches=8).stages == 8
    assert run("dualpipe", 4, 8).busy[0] == run("dualpipe-v", 4, 8).busy[0] == 8 * 3


@pytest.mark.parametrize("schedule, kw, message", [
    ("dualpipe", dict(devices=5, microbatches=20),
     r"devices=5: dualpipe needs an even number of devices; got 5; use 4 or 6"),
    ("dualpipe", dict(devices=4, microbatches=9),
     r"microbatches=9: dualpipe sends half of the microbatches each way, so it needs an even number of them; "
     r"got 9; use 8 or 10"),
    ("dualpipe", dict(devices=4, microbatches=6),
     r"dualpipe needs at least 2p = 8 microbatches .*got 6; use an even m >= 8"),
    ("dualpipe", dict(devices=4, microbatches=8, stages_per_device=2), r"stages_per_device=2: .*use 1 .*dualpipe-v"),
    ("dualpipe-v", dict(devices=4, microbatches=7),
     r"microbatches=7: dualpipe-v needs at least as many microbatches as stages \(2p = 8\); got 7; use m >= 8"),
    ("dualpipe-v", dict(devices=4, microbatches=8, stages_per_device=3), r"stages_per_device=3: .*use 2"),
])
def test_constraints_say_what_is_wrong_and_what_works(schedule, kw, message):
    with pytest.raises(ScheduleConstraintError, match=message) as err:
        Config(schedule=schedule, **kw)
    assert isinstance(err.value, ValueError)


# dualpipe-v-unsplit: the eight steps with enable_zb=False --------------------------------------------

@pytest.mark.parametrize("p", [1, 2, 3, 4, 6])
def test_unsplit_is_the_split_order_with_each_i_a_full_b_and_no_w(p):
    for m in (2 * p, 2 * p + 1, 3 * p):
        split = Config(schedule="dualpipe-v", devices=p, microbatches=m).build().to_actions()
        unsplit = Config(schedule="dualpipe-v-unsplit", devices=p, microbatches=m).build().to_actions()
        expected = {d: [a.replace("I", "B") for a in acts if "W" not in a] for d, acts in split.items()}
        assert unsplit == expected


def test_unsplit_p4_m10_pays_the_w_bubble():
    split = run("dualpipe-v", 4, 10)
    unsplit = run("dualpipe-v-unsplit", 4, 10)
    assert not unsplit.program.kind.tolist().count(2)  # no I, hence no W
    # (PP/2 − 1)(F&B + B) = 3 · (1.5 + 1) = 7.5, less f/2 = 0.5 (B = 2f): 7 per device, against 3
    assert list(unsplit.idle) == [7.0] * 4 and list(split.idle) == [3.0] * 4
    assert unsplit.makespan == 37.0 == unsplit.closed_form.makespan
    assert list(unsplit.peak_activation) == [4.5] * 4  # PP + 1 chunks, as with the split


# DeepSpeed's DualPipeVSchedule, run ---------------------------------------------------------------------
# The compute instructions of DualPipeVSchedule.steps() (deepspeedai/DeepSpeed PR #8576, stored at commit
# 83fd8f87, deepspeed/runtime/pipe/schedule.py), produced by running that generator for every rank:
# ForwardPass(buffer, phase) -> stage r (phase 0) or 2p−1−r (phase 1), microbatch buffer mod m;
# ForwardBackwardPass -> an overlapped pair. With ordinary layers (nothing put() into its WeightGradStore)
# every BackwardPass is a full backward and WeightPass computes nothing, which is dualpipe-v-unsplit.
DEEPSPEED_DUALPIPEV = {
    (3, 6): {
        0: "0F0 0F1 0F2 0F3 0F4 5F0 5B0 5F1 5B1 5F2 (0F5;5B2)OVERLAP_F_B (5F3;0B0)OVERLAP_F_B 5B3 "
           "(5F4;0B1)OVERLAP_F_B 5B4 (5F5;0B2)OVERLAP_F_B 5B5 0B3 0B4 0B5",
        1: "1F0 1F1 1F2 4F0 1F3 4F1 4B0 4F2 (1F4;4B1)OVERLAP_F_B (4F3;1B0)OVERLAP_F_B (1F5;4B2)OVERLAP_F_B "
           "(4F4;1B1)OVERLAP_F_B 4B3 (4F5;1B2)OVERLAP_F_B 4B4 1B3 4B5 1B4 1B5",
        2: "2F0 3F0 2F1 3F1 2F2 3F2 2F3 3B0 (3F3;2B0)OVERLAP_F_B (2F4;3B1)OVERLAP_F_B (3F4;2B1)OVERLAP_F_B "
           "(2F5;3B2)OVERLAP_F_B (3F5;2B2)OVERLAP_F_B 3B3 2B3 3B4 2B4 3B5 2B5",
    },
    (4, 9): {
        0: "0F0 0F1 0F2 0F3 0F4 0F5 0F6 7F0 7B0 7F1 7B1 7F2 7B2 7F3 (0F7;7B3)OVERLAP_F_B (7F4;0B0)OVERLAP_F_B "
           "(0F8;7B4)OVERLAP_F_B (7F5;0B1)OVERLAP_F_B 7B5 (7F6;0B2)OVERLAP_F_B 7B6 (7F7;0B3)OVERLAP_F_B 7B7 "
           "(7F8;0B4)OVERLAP_F_B 7B8 0B5 0B6 0B7 0B8",
        1: "1F0 1F1 1F2 1F3 1F4 6F0 1F5 6F1 6B0 6F2 6B1 6F3 (1F6;6B2)OVERLAP_F_B (6F4;1B0)OVERLAP_F_B "
           "(1F7;6B3)OVERLAP_F_B (6F5;1B1)OVERLAP_F_B (1F8;6B4)OVERLAP_F_B (6F6;1B2)OVERLAP_F_B 6B5 "
           "(6F7;1B3)OVERLAP_F_B 6B6 (6F8;1B4)OVERLAP_F_B 6B7 1B5 6B8 1B6 1B7 1B8",
        2: "2F0 2F1 2F2 5F0 2F3 5F1 2F4 5F2 5B0 5F3 (2F5;5B1)OVERLAP_F_B (5F4;2B0)OVERLAP_F_B "
           "(2F6;5B2)OVERLAP_F_B (5F5;2B1)OVERLAP_F_B (2F7;5B3)OVERLAP_F_B (5F6;2B2)OVERLAP_F_B "
           "(2F8;5B4)OVERLAP_F_B (5F7;2B3)OVERLAP_F_B 5B5 (5F8;2B4)OVERLAP_F_B 5B6 2B5 5B7 2B6 5B8 2B7 2B8",
        3: "3F0 4F0 3F1 4F1 3F2 4F2 3F3 4F3 3F4 4B0 (4F4;3B0)OVERLAP_F_B (3F5;4B1)OVERLAP_F_B "
           "(4F5;3B1)OVERLAP_F_B (3F6;4B2)OVERLAP_F_B (4F6;3B2)OVERLAP_F_B (3F7;4B3)OVERLAP_F_B "
           "(4F7;3B3)OVERLAP_F_B (3F8;4B4)OVERLAP_F_B (4F8;3B4)OVERLAP_F_B 4B5 3B5 4B6 3B6 4B7 3B7 4B8 3B8",
    },
}


@pytest.mark.parametrize("p, m", sorted(DEEPSPEED_DUALPIPEV))
def test_unsplit_is_deepspeeds_dualpipev_schedule_with_ordinary_layers(p, m):
    program = Config(schedule="dualpipe-v-unsplit", devices=p, microbatches=m).build()
    assert program.to_actions() == {r: actions.split() for r, actions in DEEPSPEED_DUALPIPEV[p, m].items()}
