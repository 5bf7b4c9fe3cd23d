"""The teaching notebooks run top to bottom, still say what their prose claims, and are stored
with current outputs in which every widget carries a static picture of itself
(``scripts/store-notebooks`` stores them; this checks what it stored)."""

import base64
import copy
import importlib.util
import pathlib
import re
import subprocess
from fractions import Fraction

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
WIDGET = "application/vnd.jupyter.widget-view+json"
PNG = "image/png"

_spec = importlib.util.spec_from_file_location("store_notebooks", ROOT / "scripts" / "store_notebooks.py")
store = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(store)

# The notebooks' default run: p = 4 devices, m = 8 microbatches, f = b = w = 1.
P, M, STEP = 4, 8, 3.0


def _numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", text)]


def _line(output: str, start: str) -> str:
    lines = [line for line in output.splitlines() if line.startswith(start)]
    assert lines, f"no line starting with {start!r} in the output"
    return lines[0]


# Each notebook's checks of what its prose claims, on its printed output. The expected figures
# come from the papers' formulas, not from ppviz.
def _quickstart(out):
    assert "makespan         33   closed form 33" in out and "bubble fraction  27.3 %   closed form 27.3 %" in out
    ideal, fill = M * STEP, (P - 1) * STEP  # m(f+b+w) and (p−1)(f+b+w)
    assert f"makespan {ideal + fill:g}; closed form m·(f+b+w) + (p−1)·(f+b+w) = {ideal + fill:g}" in out
    assert f"idle per device {fill:g} = (p−1)·(f+b+w) = {fill:g}, a bubble of {Fraction(P - 1, M + P - 1)} of the run" in out
    # ZB-H1 idles (p−1)(f+b−w): a third of 1F1B's
    assert f"idle per device: 1F1B {fill:g}, ZB-H1 {(P - 1) * 1.0:g}" in out


def _zoo(out):
    assert "zb-h1                     makespan  27.0" in out and "dualpipe-v                makespan  27.0" in out

    def figures(name):  # makespan, 1F1B's, idle per device, 1F1B's, peak activation, its ratio to 1F1B's
        found = re.search(r"makespan ([\d.]+) \(1F1B ([\d.]+)\) · idle per device ([\d.]+) \(1F1B ([\d.]+)\) · "
                          r"peak activation ([\d.]+) = ([\d.]+) × 1F1B's", _line(out, f"{name}: makespan"))
        return [float(x) for x in found.groups()]

    assert figures("gpipe")[4] == M  # every device holds all m activations
    assert figures("looped-bfs")[4] == M and figures("looped-bfs")[2] == figures("interleaved-1f1b")[2]
    assert figures("1f1b")[0] == figures("gpipe")[0]  # the same bubble as GPipe's
    assert figures("interleaved-1f1b")[2] == (P - 1) * STEP / 2  # idle (p−1)(f+b+w)/v, v = 2
    assert figures("zb-h1")[4:] == [P, 1.0] and figures("zb-v")[4:] == [P, 1.0]  # 1F1B's memory
    # ZB-H2: 2(p − d) − 1 forwards before the first backward (zero-bubble paper, §3.2); device 0
    # holds 2p − 1 activations; the later the device, the more W's it keeps for its drain
    assert _numbers(_line(out, "forwards before the first backward").split(":")[1]) == [
        2 * (P - d) - 1 for d in range(P)]
    tail = _numbers(_line(out, "W's in a row at the end").split(":")[1])
    assert tail == sorted(tail) and len(set(tail)) == P and tail[0] >= 1
    h2 = figures("zb-h2")
    assert h2[4] == 2 * P - 1 and h2[0] == figures("zb-h1")[0]  # ZB-H1's makespan within one iteration
    # V-Half: p/2 + 1 activations; V-Min fewer; idle zb-v < v-half < v-min < 1f1b
    half, least = figures("v-half"), figures("v-min")
    assert half[4:] == [P / 2 + 1, (P / 2 + 1) / P] and least[4] < half[4]
    assert figures("zb-v")[2] < half[2] < least[2] < figures("1f1b")[2]
    # 1F1B-overlap: twice 1F1B's activations, and no faster with the default fb
    overlap = figures("1f1b-overlap")
    assert overlap[4:] == [2 * P, 2.0] and overlap[0] == overlap[1]
    # DualPipe is ahead of 1F1B with the default fb (fed from both ends); the overlap pays once a
    # pair costs less than its parts: fb = f + b + w − (f + b)/2 when half of F and I is all-to-all
    assert figures("dualpipe")[0] < figures("dualpipe")[1]
    fb = STEP - 0.5 * 2
    for name in ("1f1b", "dualpipe", "dualpipe-v", "1f1b-overlap"):
        found = re.search(r"makespan +([\d.]+) with fb = f\+b\+w, +([\d.]+) with fb = ([\d.]+)$",
                          _line(out, f"{name:13} makespan"))
        default, realistic, given = (float(x) for x in found.groups())
        assert given == fb and ((realistic == default) if name == "1f1b" else (realistic < default)), name
    # the later families: inference's first output p·f and throughput 1/f; Seq1F1B's k = 2 segments
    # against 1F1B's p activations; Chimera's two replicas; the bidirectional idles
    for claim in (f"inference  first output {P * 1.0:.1f}   throughput {1.0:.2f}", f"device 0 peak 2.50 (1f1b: {P:.1f})",
                  "static memory 2 (1f1b 1)", "dualpipe-v idle per device 3.0, unsplit 7.0",
                  "bitpipe idle per device 3.0, chimera 6.0"):
        assert claim in out, claim
    # Hanayo: W waves divide the idle (p − 1)·b/W (the top line of the paper's Eq. 1); beyond m = p
    # every down-leg forward runs before the first backward, so memory grows with m as GPipe's
    for waves in (1, 2, 4):
        assert f"hanayo W={waves} (v={2 * waves})  idle per device {(P - 1) * 2.0 / waves:.2f}" in out
    assert f"hanayo m=8  idle per device {(P - 1) * 2.0:.2f}   peak activation 8.0 (1f1b {P:.1f})" in out


def _bubbles(out):
    for claim in ("ratio 0.3333333333333333", "v=2: makespan 28.50  idle per device  4.50  closed form  4.50",
                  "w <= min(f, b) does not hold"):
        assert claim in out
    # with comm, more interleaving stops paying before v = 4
    assert _numbers(_line(out, "fastest with comm = 0.2: v ="))[-1] < 4


def _memory(out):
    assert "GPipe peak: [8. 8. 8. 8.]" in out
    p, params = 8, 4.0
    rows = {found.group(1): [float(found.group(2)), float(found.group(3))] for found in
            re.finditer(r"^(\S+) +peak activation +([\d.]+) +static ([\d.]+)$", out, flags=re.M)}
    assert rows["1f1b"] == [p, params] and rows["zb-h2"][0] == 2 * p - 1
    assert rows["dualpipe"] == [p + 1, 2 * params]  # two replicas: the parameters twice

    def row(q, name):  # peak, its ratio to 1F1B's (None for 1F1B), bubble in %
        found = re.search(r"peak +([\d.]+)(?: = ([\d.]+) × 1F1B's)? +bubble +([\d.]+)%", _line(out, f"p={q:2}  {name} "))
        return [None if x is None else float(x) for x in found.groups()]

    for q in (4, 8, 12):
        base, zbv, half, least = (row(q, name) for name in ("1f1b", "zb-v", "v-half", "v-min"))
        assert base[0] == q and half[:2] == [q / 2 + 1, round((q / 2 + 1) / q, 2)]
        assert abs(least[0] - (q / 3 + 1)) <= 2 / 3 and least[0] < half[0]
        assert zbv[2] < half[2] < least[2]  # they pay in bubble
    # about a half and a third once p is large: the ratios fall with p, towards 1/2 and 1/3
    halves, thirds = ([row(q, name)[1] for q in (4, 8, 12)] for name in ("v-half", "v-min"))
    assert halves[0] > halves[1] > halves[2] > 1 / 2 and thirds[0] >= thirds[1] > thirds[2] > 1 / 3


def _real_model(out):
    assert "15 of 21 fit; fastest: zb-v v=2 m=64" in out
    table = {}  # (schedule, v) -> [(m, ms per microbatch, bubble %)]
    for found in re.finditer(r"^(\S+) +(\d) +(\d+) +([\d.]+) +([\d.]+)% +[\d.]+$", out, flags=re.M):
        name, v, m, per_mb, bubble = found.groups()
        table.setdefault((name, int(v)), []).append((int(m), float(per_mb), float(bubble)))
    assert len(table) == 7
    for rows in table.values():  # more microbatches shrink the bubble, and the time per microbatch
        assert [m for m, _, _ in rows] == sorted(m for m, _, _ in rows)
        assert all(a[1] > b[1] and a[2] > b[2] for a, b in zip(rows, rows[1:]))
    for i in range(3):  # so do more stages per device, here, despite the added communication
        bubbles = [table[key][i][2] for key in (("1f1b", 1), ("interleaved-1f1b", 2), ("interleaved-1f1b", 4))]
        assert bubbles == sorted(bubbles, reverse=True)


def _custom(out):
    for claim in ("deadlock: no device can make progress", "[0B0]", "W is missing for this I", "stages 0↓ 1↑"):
        assert claim in out
    # the notebook compares with torch where torch is installed and says it skips where it is not
    if importlib.util.find_spec("torch") is not None:
        assert "torch's order equals ppviz's interleaved-1f1b: True" in out
    else:
        assert "torch is not installed; skipping" in out


def _will_it_fit(out):
    for claim in ("slowest stage: 7", "gpipe             step    5248 ms", "OUT OF MEMORY by 28.2 GiB",
                  "fastest that fits: zb-v", "out of memory: gpipe", "6 of 8 fit",
                  "balanced: Et*7|(t*8|)*14t*7L", "OUT OF MEMORY on device 0"):
        assert claim in out, claim

    def steps(lines):  # schedule -> (step ms, fits) from the report's lines
        return {found.group(1): (float(found.group(2)), found.group(3) == "fits") for found in
                re.finditer(r"^(\S+) +step +(\d+) ms +bubble .* GiB +(fits|OUT OF MEMORY)", lines, flags=re.M)}

    parts = out.split("6 of 8 fit")[0].split("fastest that fits:")  # t = 8's report, then t = 4's
    t8, t4 = steps(parts[0]), steps(parts[-1])
    for table in (t8, t4):  # GPipe keeps all 32 activations and never fits; zb-v is the fastest that does
        assert not table["gpipe"][1] and min((s, n) for n, (s, fits) in table.items() if fits)[1] == "zb-v"
        assert table["1f1b"][0] == table["gpipe"][0] and table["zb-v"][0] < table["1f1b"][0]
    assert t8["zb-h2"][1] and not t4["zb-h2"][1]  # halving t leaves ZB-H2 out
    assert all(t4[n][0] > t8[n][0] for n in t8)  # twice the work per device at t = 4
    # recompute: selective saves nothing under flash attention; full fits, paying its forward again
    rec = {found.group(1): (float(found.group(2)), float(found.group(3))) for found in
           re.finditer(r"^zb-h2 recompute=(\S+) +step +(\d+) ms +peak +([\d.]+) GiB", out, flags=re.M)}
    zbv = float(re.search(r"^zb-v  recompute=None +step +(\d+) ms", out, flags=re.M).group(1))
    assert rec["selective"][1] == rec["None"][1] and rec["selective"][0] > rec["None"][0]
    assert rec["full"][1] < 80 < rec["None"][1]
    assert f"full recompute costs zb-h2 {rec['full'][0] / zbv - 1:.0%} more time than zb-v" in out
    assert 0.3 < rec["full"][0] / zbv - 1 < 0.5  # a third more forward, and a bubble ZB-V does not have
    # the head weighs about one 70B layer and two and a half 8B ones; balancing pays for the 8B
    assert "llama-3-70b: the head and the loss weigh 1.0 layers" in out
    assert "llama-3-8b: the head and the loss weigh 2.5 layers" in out
    saved = [float(x) for x in re.findall(r"balanced saves ([\d.]+)% of the step", out)]
    assert len(saved) == 2 and 0 < saved[0] < 2 < 15 < saved[1]
    # Llama 3 405B: the paper's 7|8…8|7 fits; 8 layers on the first stage neither fits nor is faster
    paper, eight = (float(_line(out, layout).split("step")[1].split("ms")[0]) for layout in
                    ("Et*7|(t*8|)*14t*7L      step", "Et*8|(t*8|)*14t*6L"))
    assert paper < eight and "fits (highest peak" in _line(out, "Et*7|(t*8|)*14t*7L      step")


def _where_communication_hurts(out):
    for claim in ("ranking one node: dualpipe < interleaved-1f1b (v=4) < 1f1b",
                  "ranking across nodes: dualpipe < 1f1b < interleaved-1f1b (v=4)",
                  "ms to dualpipe, ", "ms to interleaved-1f1b (v=4)\n",
                  "overlapped interleaving beats dualpipe across nodes: True"):
        assert claim in out, claim


def _measured(out):
    assert "recognised schedule: 1f1b" in out
    # the fitted simulation reproduces the shipped step within 10 %, as the prose says
    measured, simulated = map(float, re.search(r"^measured ([\d.]+) ms, simulated ([\d.]+) ms", out, re.M).groups())
    assert abs(simulated / measured - 1) < 0.10 and "reproduces the measured step within 10%: True" in out
    # the three parts of the difference are a small share of the step
    assert float(re.search(r"([\d.]+)% of the step", out).group(1)) < 10
    # the prediction table is sorted by time per microbatch and names the fastest at m = 8
    per_mb = [float(x) for x in re.findall(r"per microbatch +([\d.]+) ms", out)]
    assert len(per_mb) == 6 and per_mb == sorted(per_mb)
    assert "fastest at m=8: zb-v" in out


def _find_the_best(out):
    for claim in ("search never slower than the best library schedule that fits: True",
                  "every search result within its limit: True", "refused; for example:",
                  "bubble falls as m grows, for every schedule and p: True"):
        assert claim in out, claim
    # ZB-H2 needs 2p − 1 activations, 1F1B and ZB-H1 p (zero-bubble paper, §2–3): p = 8 here
    p = 8
    peaks = {name: float(_line(out, f"{name:6} makespan").split("peak activation")[1]) for name in ("1f1b", "zb-h1", "zb-h2")}
    assert peaks == {"1f1b": p, "zb-h1": p, "zb-h2": 2 * p - 1}
    # the search at the limits the prose names: within each, and faster as the limit grows
    rows = [(limit, span, peak) for limit, span, peak in (
        _numbers(line)[:3] for line in out.splitlines() if line.startswith("limit "))]
    assert [r[0] for r in rows] == [3, 4, 6, 8, 15]
    assert all(peak <= limit for limit, _, peak in rows)
    assert [span for _, span, _ in rows] == sorted((span for _, span, _ in rows), reverse=True)


def _plan_my_run(out):
    counts = re.search(r"^([\d,]+) layouts × schedules considered, ([\d,]+) ruled out by memory before "
                       r"simulating, ([\d,]+) simulated \(([\d,]+) of them did not fit\); (\d+) fit", out, re.M)
    enumerated, pruned, simulated, oom, kept = (int(x.replace(",", "")) for x in counts.groups())
    assert oom < simulated < enumerated and 0 < kept <= simulated - oom
    best = re.search(r"^best: t=(\d+) p=(\d+) d=(\d+) .* step ([\d,]+) ms, MFU ([\d.]+) %", out, re.M)
    t, p, d = map(int, best.groups()[:3])
    step = float(best.group(4).replace(",", ""))
    assert t * p * d == 64
    # each device's breakdown sums to the step (in s, rounded to ms)
    block = out.split("compute s  tp_comm s")[1].split("\ndevice ", 2)[1]
    rows = re.findall(r"^\d +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+)$", block, re.M)
    assert len(rows) == p and all(abs(sum(map(float, r)) - step / 1000) <= 0.004 for r in rows)
    # no schedule simulated by hand at the best's layout fits and beats the plan's best
    by_hand = re.findall(r"^\S+ +v=\d  step +([\d,]+) ms   peak +([\d.]+) GiB   (fits|OUT OF MEMORY)$", out, re.M)
    assert len(by_hand) == 8 and min(float(s.replace(",", "")) for s, _, fit in by_hand if fit == "fits") == step
    assert all(float(peak) > 80 for _, peak, fit in by_hand if fit != "fits")
    assert re.search(r"no fitting schedule beats the plan: True; \S+ by hand equals the plan's best: True", out)
    # every best compared: fits its GPU, its shares of the free best add up, MFU × step is one
    # constant for one model, batch and GPU count
    found = {m.group(1).strip(): m for m in re.finditer(
        r"^(.+?) +t=(\d+) p=(\d+) d=(\d+) v=(\d+) b=(\d+) (\S+), recompute (\S+), ZeRO-(\d) +step +([\d,]+) ms "
        r"\( *([+-][\d.]+)%\) +MFU +([\d.]+)% +peak +([\d.]+) of (\d+) GiB$", out, re.M)}
    assert set(found) == {"80 GiB, 50 GB/s", "40 GiB", "12.5 GB/s between nodes", "free", "tensor_parallel=8",
                          "schedules=['1f1b']"}
    steps = {name: float(m.group(10).replace(",", "")) for name, m in found.items()}
    for name, m in found.items():
        assert float(m.group(13)) <= float(m.group(14)), name
        assert int(m.group(2)) * int(m.group(3)) * int(m.group(4)) == 64
        assert abs(float(m.group(11)) - 100 * (steps[name] / step - 1)) <= 0.06, name
        assert abs(float(m.group(12)) * steps[name] / (float(best.group(5)) * step) - 1) < 0.003, name
    assert steps["free"] == steps["80 GiB, 50 GB/s"] == step
    # less memory: slower, and on a layout that holds less (more tensor or pipeline parallelism, or recompute)
    small, full = found["40 GiB"], found["80 GiB, 50 GB/s"]
    assert steps["40 GiB"] > step and (int(small.group(2)) > int(full.group(2)) or small.group(8) != "none"
                                       or int(small.group(3)) > int(full.group(3)))
    # a slower network can make nothing faster; constraints cannot beat the free plan
    assert steps["12.5 GB/s between nodes"] >= step
    assert steps["tensor_parallel=8"] >= step and found["tensor_parallel=8"].group(2) == "8"
    assert steps["schedules=['1f1b']"] >= step and found["schedules=['1f1b']"].group(7) == "1f1b"
    assert "no constraint beats the free plan: True" in out
    # the 40 GiB table: every row fits 40 GiB, a layout of 64 GPUs and 128 sequences, fastest first
    small_rows = re.findall(r"^\d +(\d+) +(\d+) +(\d+) +\d +(\d+) +(\d+) +\S+ +\S+ +\d +([\d.]+) +[\d.]+ +([\d.]+) ", out, re.M)
    assert len(small_rows) == 6
    assert all(int(a) * int(b) * int(c) == 64 and int(c) * int(mb) * int(m) == 128 and float(peak) <= 40
               for a, b, c, mb, m, _, peak in small_rows)
    assert [float(r[5]) for r in small_rows] == sorted(float(r[5]) for r in small_rows)
    # 512 GPUs: the printed table is whole layouts of 512 GPUs and 1,024 sequences, fastest first, all fitting
    large = re.findall(r"^(\d+) +(\d+) +(\d+) +\d +(\d+) +(\d+) +\S+ +\S+ +\d +([\d,]+) ms +[\d.]+ % +[\d.]+ GiB +[\d.]+ [MG]iB$",
                       out.split("on 512 × h100-sxm")[1], re.M)
    shown = int(re.search(r"(\d+) layouts fit within", out.split("on 512 × h100-sxm")[1]).group(1))
    assert len(large) == min(8, shown) and all(int(a) * int(b) * int(c) == 512 and int(c) * int(mb) * int(m) == 1024
                                   for a, b, c, mb, m, _ in large)
    large_steps = [float(r[5].replace(",", "")) for r in large]
    assert large_steps == sorted(large_steps)
    # tokens per GPU per second: global batch × 8,192 tokens per step, per GPU
    per_gpu = _numbers(_line(out, "tokens/s per GPU:").replace(",", ""))
    assert abs(per_gpu[1] - 128 * 8192 / (step / 1000) / 64) < 1
    assert abs(per_gpu[3] - 1024 * 8192 / (large_steps[0] / 1000) / 512) < 1


def _why_this_step(out):
    parts = ("compute", "tp_comm", "p2p_wait", "idle", "dp_tail")
    step = float(re.search(r"^  step time +([\d,.]+) ms", out, flags=re.M).group(1).replace(",", ""))
    # tokens/s × step = the global batch: d = 4 replicas × m = 32 sequences of 8192 tokens
    tokens = float(re.search(r"^  throughput +([\d,]+) tokens/s", out, flags=re.M).group(1).replace(",", ""))
    assert abs(tokens * step / 1e3 / (4 * 32 * 8192) - 1) < 1e-3
    # one layer: backward twice the forward in FLOPs (Narayanan et al. 2021's 3× the forward in all);
    # SwiGLU's FC1 is gate and up, 2 × 28672 / t columns; sequence parallelism's collectives, 2 + 2
    # in F and 6 in I (two all-gathers again for W's inputs), all-gather and reduce-scatter alike
    assert "backward / forward = 2.00" in out and f"MLP FC1                gemm  8192 × {2 * 28672 // 8} × 8192" in out
    assert "collectives per phase: {'F': 4, 'I': 6}" in out
    gather, scatter = _numbers(_line(out, "all-gather "))
    assert gather == scatter
    shares = dict((name.strip(), float(x)) for name, x in
                  re.findall(r"(GEMM|TP collectives|attention|memory-bound) (\d+)%", _line(out, "one layer's F + I + W")))
    assert abs(sum(shares.values()) - 100) <= 2 and max(shares, key=shares.get) == "GEMM"
    # the breakdown: every device's row sums to the step; the last device (head and loss) computes most
    exact = float(re.search(r"^step ([\d,.]+) ms; every row sums to it: True$", out, flags=re.M).group(1).replace(",", ""))
    assert abs(exact - step) <= 0.5
    rows = [_numbers(line) for line in out.splitlines() if re.fullmatch(r"\d +(?:[\d.]+ +){4}[\d.]+", line.strip())]
    assert [int(r[0]) for r in rows[:8]] == list(range(8))
    for r in rows[:8]:
        assert abs(sum(r[1:]) - step) < 0.5
    assert max(range(8), key=lambda d: rows[d][1]) == 7 and min(range(8), key=lambda d: rows[d][4]) == 7

    def table(start, names):  # name -> {column: value} of a printed table
        cols = ["step", "mfu", *(["tokens"] if start == "run" else []), *parts, "peak"]
        return {name: dict(zip(cols, _numbers(_line(out, name)[len(name):])[:len(cols)])) for name in names}

    v = table("run", ("as above", "NVLink halved", "network halved", "t = 4, d = 8, m = 16", "tp_comm_overlap = 0.5"))
    base = v["as above"]
    assert v["NVLink halved"]["tp_comm"] > 1.5 * base["tp_comm"] and v["NVLink halved"]["step"] > base["step"]
    assert "NVLink halved           6533.0" in out and "TP traffic +1,022 ms" in out
    net = v["network halved"]  # only the transfers between stages cross the network
    assert net["tp_comm"] == base["tp_comm"] and net["p2p_wait"] > base["p2p_wait"] and net["compute"] == base["compute"]
    hidden = v["tp_comm_overlap = 0.5"]
    assert abs(hidden["tp_comm"] - base["tp_comm"] / 2) < 0.2 and hidden["step"] < base["step"]
    t4 = v["t = 4, d = 8, m = 16"]
    assert t4["tp_comm"] < base["tp_comm"] / 2 and t4["idle"] > base["idle"] and t4["peak"] > base["peak"]
    for row in v.values():  # the means sum to the step too
        assert abs(sum(row[p] for p in parts) - row["step"]) < 1
    # schedules: the same compute and traffic, the bubble shrinking
    s = table("schedule", ("1f1b  ", "zb-h1  ", "interleaved-1f1b (v=2)", "zb-v (v=2)"))
    idle = [row["idle"] for row in s.values()]
    assert len({row["compute"] for row in s.values()}) == 1 and len({row["tp_comm"] for row in s.values()}) == 1
    assert s["zb-v (v=2)"]["idle"] == min(idle) and s["1f1b  "]["idle"] == max(idle)
    assert "idle, least first: zb-v (v=2) < interleaved-1f1b (v=2) < zb-h1 < 1f1b" in out
    assert "chosen: zb-v (v=2), step 4,558 ms" in out


CLAIMS = {"quickstart": _quickstart, "schedule_zoo": _zoo, "bubbles": _bubbles, "memory": _memory,
          "real_model": _real_model, "custom_schedules": _custom, "will_it_fit": _will_it_fit,
          "where_communication_hurts": _where_communication_hurts, "measured_to_better_schedule": _measured,
          "find_the_best_schedule": _find_the_best, "plan_my_run": _plan_my_run,
          "why_this_step_takes_this_long": _why_this_step}
MIN_WIDGETS = {"quickstart": 3, "schedule_zoo": 19, "bubbles": 1, "memory": 1, "real_model": 1, "custom_schedules": 1,
               "will_it_fit": 1, "where_communication_hurts": 1, "measured_to_better_schedule": 3,
               "find_the_best_schedule": 4, "plan_my_run": 2, "why_this_step_takes_this_long": 1}


@pytest.fixture(scope="module")
def executed():
    """Each notebook executed once per test run, as scripts/store-notebooks executes it."""
    runs = {}

    def run(name):
        if name not in runs:
            runs[name] = store.execute(NOTEBOOKS / f"{name}.ipynb", timeout=300)
        return runs[name]

    return run


def _stored(name):
    return nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)


def _printed(nb) -> str:
    text = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.output_type == "stream":
                text.append(out.text)
            elif out.output_type in ("execute_result", "display_data"):
                text.append(out.data.get("text/plain", "") + "\n")
    return "".join(text)


def test_every_notebook_is_covered():
    assert {p.stem for p in NOTEBOOKS.glob("*.ipynb")} == set(CLAIMS)


@pytest.mark.parametrize("name", sorted(CLAIMS))
def test_notebook_runs_and_keeps_its_claims(name, executed):
    nb = executed(name)
    CLAIMS[name](_printed(nb))
    assert sum(WIDGET in out.get("data", {}) for cell in nb.cells for out in cell.get("outputs", [])) >= MIN_WIDGETS[name]


#: what a notebook prints only where torch is installed (the stored outputs were made with it),
#: and what it prints instead where torch is not
WITH_AND_WITHOUT_TORCH = {"custom_schedules": ("torch's order equals ppviz's interleaved-1f1b: True\n",
                                               "torch is not installed; skipping\n")}


def _as_stored_here(name, nb):
    """The stored notebook as it would have been stored on this machine: where torch is missing,
    the one torch-only line reads as the notebook's fallback; every other output is unchanged."""
    if name not in WITH_AND_WITHOUT_TORCH or importlib.util.find_spec("torch") is not None:
        return nb
    with_torch, without = WITH_AND_WITHOUT_TORCH[name]
    nb = copy.deepcopy(nb)
    outputs = [out for cell in nb.cells for out in cell.get("outputs", []) if out.output_type == "stream"]
    assert sum(out.text.count(with_torch) for out in outputs) == 1, f"{name}: the torch-only line is not stored once"
    for out in outputs:
        out.text = out.text.replace(with_torch, without)
    return nb


@pytest.mark.parametrize("name", sorted(CLAIMS))
def test_stored_outputs_are_current(name, executed):
    diff = store.differences(_as_stored_here(name, _stored(name)), executed(name))
    assert not diff, (f"notebooks/{name}.ipynb's stored outputs are stale: run scripts/store-notebooks "
                      f"notebooks/{name}.ipynb\n" + "\n".join(diff[:60]))


@pytest.mark.parametrize("name", sorted(CLAIMS))
def test_stored_notebook_reads_without_a_kernel(name):
    nb = _stored(name)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert all(cell.execution_count == i for i, cell in enumerate(code, 1)), "stored top to bottom, once"
    outputs = [out for cell in code for out in cell.outputs]
    assert not [out for out in outputs if out.output_type == "error"]
    widgets = [out for out in outputs if WIDGET in out.get("data", {})]
    assert len(widgets) >= MIN_WIDGETS[name]
    for out in widgets:  # each widget carries a picture, drawn from a spec the metadata names
        assert PNG in out.data, out.data.get("text/plain")
        assert base64.b64decode(out.data[PNG]).startswith(b"\x89PNG\r\n\x1a\n")
        assert re.fullmatch(r"[0-9a-f]{64}", out.metadata[PNG]["ppviz"]["spec_sha256"])
    # nothing that needs a kernel or the internet to show: no widget state (a renderer would
    # draw the widgets from it, with scripts from a CDN, instead of the pictures), no scripts
    assert "widgets" not in nb.metadata
    for out in outputs:
        assert "<script" not in out.get("data", {}).get("text/html", "")


def test_the_staleness_check_ignores_ids_and_catches_altered_outputs(executed):
    stored, fresh = _stored("quickstart"), executed("quickstart")
    ids = [[out.data[WIDGET]["model_id"] for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs
            if WIDGET in out.get("data", {})] for nb in (stored, fresh)]
    assert ids[0] and not set(ids[0]) & set(ids[1])  # new widget models, and yet
    assert store.differences(stored, fresh) == []  # nothing stale
    code = [cell for cell in stored.cells if cell.cell_type == "code"]
    printed = next(cell for cell in code if any(out.output_type == "stream" for out in cell.outputs))
    pictured = next(cell for cell in code if any(PNG in out.get("data", {}) for out in cell.outputs))
    altered_text = copy.deepcopy(stored)
    stream = next(out for out in altered_text.cells[stored.cells.index(printed)].outputs if out.output_type == "stream")
    stream.text = stream.text.replace("33", "34", 1)
    altered_picture = copy.deepcopy(stored)
    out = next(out for out in altered_picture.cells[stored.cells.index(pictured)].outputs if PNG in out.get("data", {}))
    png = bytearray(base64.b64decode(out.data[PNG]))
    png[-20] ^= 0xFF
    out.data[PNG] = base64.b64encode(bytes(png)).decode()
    for altered in (altered_text, altered_picture):
        assert store.differences(altered, fresh)
    # the same text flushed in two pieces, as a busy kernel may, is not stale
    split = copy.deepcopy(stored)
    outputs = split.cells[stored.cells.index(printed)].outputs
    at = next(i for i, out in enumerate(outputs) if out.output_type == "stream")
    whole = outputs[at].text
    second = copy.deepcopy(outputs[at])
    outputs[at].text, second.text = whole[:len(whole) // 2], whole[len(whole) // 2:]
    outputs.insert(at + 1, second)
    assert store.differences(split, fresh) == []


def test_every_notebook_has_the_same_install_cell():
    # the one tests/test_packaging.py runs against a package index, and the test below in a checkout
    quickstart = nbformat.read(NOTEBOOKS / "quickstart.ipynb", as_version=4).cells[1].source
    assert 'find_spec("ppviz") is None' in quickstart  # installs only where ppviz is missing
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        assert nb.cells[0].cell_type == "markdown" and "colab" not in nb.cells[0].source.lower()
        assert nb.cells[1].source == quickstart, path.name


def test_run_opens_copies_so_the_stored_notebooks_stay_clean(tmp_path):
    scratch = tmp_path / "scratch"
    setup = f'source "{ROOT}/scripts/env.sh" && scratch_notebooks'
    env = {"PATH": "/usr/bin:/bin", "PPVIZ_SCRATCH": str(scratch)}
    subprocess.run(["bash", "-c", setup], check=True, env=env)
    for path in NOTEBOOKS.glob("*.ipynb"):
        assert (scratch / path.name).read_bytes() == path.read_bytes()
    edited = scratch / "quickstart.ipynb"
    edited.write_text("{}")
    subprocess.run(["bash", "-c", setup], check=True, env=env)
    assert edited.read_text() == "{}"  # a copy with the user's changes is kept
    run = (ROOT / "run").read_text()
    # ./run copies before it starts JupyterLab, in the copies' folder
    assert run.index("scratch_notebooks") < run.index('cd "$SCRATCH"') < run.index("jupyter\" lab")
    ignored = subprocess.run(["git", "check-ignore", "notebooks/.ipynb_checkpoints/quickstart-checkpoint.ipynb",
                              "scratch/quickstart.ipynb"], cwd=ROOT, capture_output=True, text=True)
    assert ignored.stdout.split() == ["notebooks/.ipynb_checkpoints/quickstart-checkpoint.ipynb",
                                      "scratch/quickstart.ipynb"]


def test_the_install_cell_installs_the_checkout_it_sits_in_or_else_the_distribution_by_name(monkeypatch, tmp_path):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    installs = []
    line_magics = shell.magics_manager.magics["line"]
    monkeypatch.setitem(line_magics, "pip", installs.append)  # what %pip would be asked to do
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: None if name == "ppviz" else find_spec(name, *args))
    cell = nbformat.read(NOTEBOOKS / "quickstart.ipynb", as_version=4).cells[1].source
    monkeypatch.chdir(NOTEBOOKS)  # Jupyter runs a notebook in its folder
    shell.run_cell(cell).raise_error()
    assert installs == [f'install --quiet "{ROOT}"']
    elsewhere = tmp_path / "notebooks"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # a notebook copied out of the checkout (Colab): the index, by name
    shell.run_cell(cell).raise_error()
    assert installs[1:] == ['install --quiet "pp-schedule-viz"']
