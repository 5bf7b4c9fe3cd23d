"""Colours people can tell apart: the op-kind colours of both themes under simulated
colour-vision deficiencies, and the run colours of comparisons against the op-kind colours.

Distances are CAM02-UCS ΔE (Luo, Cui & Li 2006), computed by colorspacious; dichromacy is
simulated with Machado, Oliveira & Fernandes (2009) at severity 100 (protanopia, deuteranopia,
tritanopia). For scale: colours 1–2 apart are a just-noticeable difference side by side, the
Okabe–Ito blue and bluish green that ppviz used before are 6.9 apart under tritanopia (the dark
theme's F and W). The thresholds below are what the palettes in ppviz/style.json meet.
"""

import itertools

import numpy as np
import pytest

colorspacious = pytest.importorskip("colorspacious")

from ppviz.charts.style import SERIES, THEMES  # noqa: E402

#: every pair of op-kind colours, in every vision, at least this far apart
KIND_MIN = 20.0
#: every run colour at least this far from every op-kind colour of either theme (normal vision)
SERIES_FROM_KINDS = 18.0
#: run colours at least this far apart: all of them for normal vision, the first five under
#: each deficiency too (comparisons rarely hold more runs)
SERIES_APART = 18.0
SERIES_CVD_SAFE = 5
DEFICIENCIES = ("protanomaly", "deuteranomaly", "tritanomaly")
KINDS = ("F", "B or I", "W", "F&B", "S", "T")


def rgb(hex_colour: str) -> np.ndarray:
    return np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)]) / 255


def seen(colour: np.ndarray, deficiency: str | None) -> np.ndarray:
    if deficiency is None:
        return colour
    cvd = {"name": "sRGB1+CVD", "cvd_type": deficiency, "severity": 100}
    return np.clip(colorspacious.cspace_convert(colour, cvd, "sRGB1"), 0, 1)


def delta_e(a: np.ndarray, b: np.ndarray) -> float:
    return float(colorspacious.deltaE(a, b, input_space="sRGB1", uniform_space="CAM02-UCS"))


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("deficiency", [None, *DEFICIENCIES])
def test_every_pair_of_op_kind_colours_stays_distinguishable(theme, deficiency):
    kinds = [seen(rgb(c), deficiency) for c in THEMES[theme]["kinds"]]
    close = [(KINDS[i], KINDS[j], round(delta_e(kinds[i], kinds[j]), 1))
             for i, j in itertools.combinations(range(len(kinds)), 2) if delta_e(kinds[i], kinds[j]) < KIND_MIN]
    assert not close, f"{theme} theme, {deficiency or 'normal vision'}: op kinds closer than {KIND_MIN}: {close}"


def test_the_old_palette_fails_where_the_issue_says():
    # the check can fail: Okabe–Ito's sky blue and bluish green, the old dark theme's F and W
    f, w = rgb("#56b4e9"), rgb("#23b58a")
    assert delta_e(seen(f, "tritanomaly"), seen(w, "tritanomaly")) < 8
    assert delta_e(f, w) > KIND_MIN


def test_run_colours_never_look_like_an_op_kind():
    kinds = [(theme, KINDS[i], rgb(c)) for theme in ("light", "dark") for i, c in enumerate(THEMES[theme]["kinds"])]
    close = [(s, theme, kind, round(delta_e(rgb(s), c), 1)) for s in SERIES for theme, kind, c in kinds
             if delta_e(rgb(s), c) < SERIES_FROM_KINDS]
    assert not close, f"run colours closer than {SERIES_FROM_KINDS} to an op-kind colour: {close}"


@pytest.mark.parametrize("deficiency", [None, *DEFICIENCIES])
def test_run_colours_stay_apart(deficiency):
    series = SERIES if deficiency is None else SERIES[:SERIES_CVD_SAFE]
    colours = [seen(rgb(c), deficiency) for c in series]
    close = [(series[i], series[j], round(delta_e(colours[i], colours[j]), 1))
             for i, j in itertools.combinations(range(len(colours)), 2) if delta_e(colours[i], colours[j]) < SERIES_APART]
    assert not close, f"{deficiency or 'normal vision'}: run colours closer than {SERIES_APART}: {close}"


#: a device's data-parallel tail (reduction, optimizer step, gather) beside the op kinds and one
#: another, in every vision; their bars also differ by texture (stripes, plain, dots) and come after
#: the ops, so their colours need less room than the op kinds' (the palettes meet 15.8 and 16.8)
TAIL_MIN = 15.0
TAIL = ("tailReduce", "tailOptimizer", "tailGather")


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("deficiency", [None, *DEFICIENCIES])
def test_the_tails_colours_stay_apart_from_the_op_kinds_and_each_other(theme, deficiency):
    t = THEMES[theme]
    kinds = [seen(rgb(c), deficiency) for c in t["kinds"]]
    tail = [seen(rgb(t[key]), deficiency) for key in TAIL]
    close = [(TAIL[i], KINDS[j], round(delta_e(a, b), 1)) for i, a in enumerate(tail) for j, b in enumerate(kinds)
             if delta_e(a, b) < TAIL_MIN]
    close += [(TAIL[i], TAIL[j], round(delta_e(tail[i], tail[j]), 1))
              for i, j in itertools.combinations(range(3), 2) if delta_e(tail[i], tail[j]) < TAIL_MIN]
    assert not close, f"{theme} theme, {deficiency or 'normal vision'}: closer than {TAIL_MIN}: {close}"
