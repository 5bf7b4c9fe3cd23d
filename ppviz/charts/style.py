"""The charts' part of ppviz's look (``ppviz/style.json``, read by :mod:`ppviz.core.style`): the
one file that both the Python charts and the widget's TypeScript (bundled at build time) take
their palette, op-kind colours and fonts from."""

from __future__ import annotations

from types import MappingProxyType

from ..core.style import STYLE

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
