"""ppviz's look, read from ``ppviz/style.json``: the one file that both the Python charts and
the widget's TypeScript (bundled at build time) take their palette, op-kind colours and fonts
from."""

from __future__ import annotations

import json
from importlib import resources
from types import MappingProxyType

STYLE = json.loads(resources.files("ppviz").joinpath("style.json").read_text(encoding="utf-8"))

#: light and dark palettes of the Gantt chart and the comparison view's chrome
THEMES = MappingProxyType(STYLE["themes"])
#: colours of the comparison charts' runs (colour-blind-safe first, see style.json)
SERIES = tuple(STYLE["series"])
#: colours of marks that are not runs: text, subtitles, closed-form ticks, reference lines
CHART = MappingProxyType(STYLE["chart"])
FONT_FAMILY = STYLE["font"]["family"]
#: font sizes by role: titles; text (subtitles, legends, run names); labels (axes, values on bars);
#: ticks (secondary labels); small (labels squeezed into thin bars and lanes)
TITLE_SIZE, TEXT_SIZE, LABEL_SIZE, TICK_SIZE, SMALL_SIZE = (
    STYLE["font"][role] for role in ("titleSize", "textSize", "labelSize", "tickSize", "smallSize"))
#: label colours on fills: near-black on light fills, white on dark ones
INK_DARK, INK_LIGHT = STYLE["ink"]["dark"], STYLE["ink"]["light"]
#: adjacent microbatches get shades far apart
SHADE_ORDER = tuple(STYLE["shadeOrder"])
