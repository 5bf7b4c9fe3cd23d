"""Plain-text Gantt chart for terminals."""

from __future__ import annotations

import numpy as np

from ..core.errors import ConfigError


#: widest chart drawn; wider asks are refused rather than building huge strings
MAX_WIDTH = 10_000


def text_gantt(result, width: int = 80) -> str:
    if isinstance(width, bool) or not isinstance(width, int) or not 20 <= width <= MAX_WIDTH:
        raise ConfigError("width", width, f"give a whole number of columns from 20 to {MAX_WIDTH}")
    p = result.devices
    label = [f"dev {d} " for d in range(p)]
    lw = max(len(s) for s in label)
    cols = max(10, width - lw - 1)
    span = result.makespan or 1.0
    # whole columns per time unit keep equal ops equally wide, so labels line up
    scale = float(int(cols // span)) if span <= cols else cols / span
    cols = min(cols, int(np.ceil(span * scale)))
    o = result.ops
    rows = [[" "] * cols for _ in range(p)]
    order = np.argsort(o.start, kind="stable")
    for k in order.tolist():
        d = int(o.device[k])
        a = int(round(o.start[k] * scale))
        e = int(round(o.end[k] * scale))
        if e <= a:
            continue
        kind = "#" if o.pair[k] else str(o.kind[k])
        text = f"{kind}{int(o.microbatch[k])}"
        cell = (text + kind * (e - a))[: e - a] if len(text) <= e - a else kind * (e - a)
        for j, ch in enumerate(cell):
            if a + j < cols:
                rows[d][a + j] = ch
    for d in range(p):
        rows[d] = ["·" if ch == " " else ch for ch in rows[d]]
    axis = f"{'':{lw}} 0{'':{cols - len(f'{span:g}') - 1}}{span:g}"
    lines = [label[d].ljust(lw) + "".join(rows[d]) for d in range(p)]
    return "\n".join(lines + [axis] + _legend(width))


def _legend(width: int) -> list[str]:
    """The key, wrapped between entries so that no line is wider than ``width``."""
    lines = [""]
    for entry in ("F forward", "B backward", "I input-grad", "W weight-grad", "# F&B pair", "· idle"):
        joined = f"{lines[-1]}  {entry}" if lines[-1] else entry
        if len(joined) <= width or not lines[-1]:
            lines[-1] = joined
        else:
            lines.append(entry)
    return lines
