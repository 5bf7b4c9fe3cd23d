"""``ppviz/style.json`` (palettes, op-kind colours, microbatch shades, fonts) and the paint rule
every drawing of ops shares: each kind's colour mixed toward white by its microbatch's shade,
and the ink of a label on it. Here, below every layer that draws, so that the static chart
(``charts``) and the terminal's (``io.text_gantt``) paint an op alike without the terminal
loading Altair; the widget's TypeScript bundles the same file and rule (js/src/theme.ts)."""

from __future__ import annotations

import json
from importlib import resources

STYLE = json.loads(resources.files("ppviz").joinpath("style.json").read_text(encoding="utf-8"))
#: the colour slots of the op kinds, in the order of a theme's ``kinds``: I and B share one,
#: both being the backward the previous stage waits for; S and T are the vocabulary passes
SLOTS = ("F", "B", "W", "F&B", "S", "T")
SLOT_OF = {"F": "F", "B": "B", "I": "B", "W": "W", "F&B": "F&B", "S": "S", "T": "T"}
#: label colours on fills: near-black on light fills, white on dark ones
INK_DARK, INK_LIGHT = STYLE["ink"]["dark"], STYLE["ink"]["light"]


def rgb(colour: str) -> tuple[int, int, int]:
    """``"#rrggbb"`` as (r, g, b)."""
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def luminance(rgb) -> float:
    """Relative luminance (WCAG 2) of (r, g, b)."""
    lin = [v / 255 / 12.92 if v / 255 <= 0.03928 else ((v / 255 + 0.055) / 1.055) ** 2.4 for v in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def ink(fill) -> str:
    """Near-black or white, whichever contrasts more with the (r, g, b) ``fill`` (the widget's rule)."""
    lum, dark = luminance(fill), luminance(rgb(INK_DARK))
    return INK_DARK if (lum + 0.05) / (dark + 0.05) >= 1.05 / (lum + 0.05) else INK_LIGHT


def kind_paints(kinds, steps) -> dict[tuple[str, int], tuple[str, str]]:
    """(slot, shade) → (fill, ink of a label on it) for every op-kind slot (``kinds``: a theme's
    colours of :data:`SLOTS`) and microbatch shade (``steps``: how far each is mixed toward white)."""
    out = {}
    for slot, base in zip(SLOTS, kinds):
        for shade, step in enumerate(steps):
            fill = tuple(round(v + (255 - v) * step) for v in rgb(base))
            out[slot, shade] = ("#%02x%02x%02x" % fill, ink(fill))
    return out


#: adjacent microbatches get shades far apart: microbatch mb takes shade SHADE_ORDER[mb % len]
SHADE_ORDER = tuple(STYLE["shadeOrder"])
