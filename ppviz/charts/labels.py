"""Names beside a scatter's points, placed clear of each other and of the markers.

Vega-Lite cannot move labels apart, so they are placed here, in pixels, from the chart's size
and each point's position, and drawn as text marks at the data position of their top edge."""

from __future__ import annotations

import altair as alt

from .style import CHART, LABEL_SIZE

_FONT, _LINE = LABEL_SIZE, LABEL_SIZE + 2
GLYPH = 0.55  # average glyph width in ems of the default sans-serif, a little generous
#: Where a point's label may go, in order of preference: (align, baseline, dx, dy) in pixels.
#: Beside the point first; then, in a crowd, farther off with a leader line to it (a label left
#: out could be told only by its tooltip, and a PNG has none).
PLACES = (("left", "bottom", 7, -3), ("left", "top", 7, 3), ("right", "bottom", -7, -3),
          ("right", "top", -7, 3), ("center", "bottom", 0, -9), ("center", "top", 0, 9),
          ("left", "middle", 10, 0), ("right", "middle", -10, 0), ("left", "bottom", 7, -14),
          ("left", "top", 7, 14), ("right", "bottom", -7, -14), ("right", "top", -7, 14)) + tuple(
    place for r in (24, 40, 56) for place in (
        ("left", "bottom", r, -r), ("right", "bottom", -r, -r), ("left", "top", r, r), ("right", "top", -r, r),
        ("center", "bottom", 0, -r - 4), ("center", "top", 0, r + 4), ("left", "middle", r + 6, 0),
        ("right", "middle", -r - 6, 0)))
#: places from this index on are far from their point, and drawn with a leader line
LEADER_FROM = 12
_MARKER_RADIUS = 7.0  # pixels from a marker's centre to its edge (size 110 and its stroke)
#: the label fields of a point drawn without a label (and without a leader line)
UNLABELLED = {"text": "", "place": -1, "label_y": 0.0, "from_x": None, "from_y": None, "lead_x": None, "lead_y": None}


def place_labels(xs, ys, names, rank, width, height, others=()) -> tuple[list[str], list[int], list[float]]:
    """Label text, spot (index in ``PLACES``, −1 for none) and the pixel y of the
    label's top edge for each point, in pixels; ``others``: more markers (x, y) to keep clear of.

    Points closer than a marker share one label (a line per name, top point first, on the first
    by ``rank``), and labels are placed greedily in ``rank`` order inside the plot, clear of
    each other and if possible of every marker, using an average glyph width. Labels that find no spot get a second try
    placed first; a label still without a spot is left out (the legend and tooltip name it).
    Vega puts a multi-line text's first line by its baseline and the others below it, so the
    labels are drawn from their top edge (see :func:`label_marks`).
    """
    order = sorted(range(len(xs)), key=lambda i: (rank[i], xs[i], i))
    near = 8.0
    group: dict[int, list[int]] = {}
    for i in order:
        lead = next((j for j in group if abs(xs[j] - xs[i]) < near and abs(ys[j] - ys[i]) < near), None)
        group.setdefault(i if lead is None else lead, []).append(i)
    texts = [""] * len(xs)
    for lead, members in group.items():
        texts[lead] = "\n".join(names[i] for i in sorted(members, key=lambda i: ys[i]))
    dot = 6.0
    markers = [(x - dot, y - dot, x + dot, y + dot) for x, y in [*zip(xs, ys), *others]]

    def spots(i):
        lines = texts[i].split("\n")
        # a font size above the first baseline, a line between baselines, a quarter of the font
        # (the descenders) below the last
        w, h = GLYPH * _FONT * max(map(len, lines)), _FONT * 1.25 + _LINE * (len(lines) - 1)
        for align, baseline, dx, dy in PLACES:
            x0 = xs[i] + dx - {"left": 0, "center": w / 2, "right": w}[align]
            y0 = ys[i] + dy - {"bottom": h, "middle": h / 2, "top": 0}[baseline]
            yield x0, y0, x0 + w, y0 + h

    def free(box, avoid):
        inside = box[0] >= 0 and box[1] >= 0 and box[2] <= width and box[3] <= height
        return inside and not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in avoid)

    def attempt(sequence):
        boxes: list[tuple[float, float, float, float]] = []
        place = [-1] * len(xs)
        for i in sequence:
            candidates = list(spots(i))
            # clear of markers and labels if possible; else over a marker rather than dropping the name
            k = next((k for k, s in enumerate(candidates) if free(s, markers + boxes)),
                     next((k for k, s in enumerate(candidates) if free(s, boxes)), -1))
            if k >= 0:
                place[i] = k
                boxes.append(candidates[k])
        return place

    labelled = [i for i in order if texts[i]]
    place = attempt(labelled)
    dropped = [i for i in labelled if place[i] < 0]
    if dropped:
        retry = attempt(dropped + [i for i in labelled if place[i] >= 0])
        if retry.count(-1) < place.count(-1):
            place = retry
    tops = [list(spots(i))[k][1] if k >= 0 else 0.0 for i, k in enumerate(place)]
    return texts, place, tops


def leader_marks(base: alt.Chart) -> alt.Chart:
    """The leader lines of labels placed far from their points (:func:`point_labels`), from
    ``from_x``, ``from_y`` (the edge of the point's marker) to ``lead_x``, ``lead_y``."""
    return base.transform_filter(f"datum.place >= {LEADER_FROM}").mark_rule(
        color=CHART["subtitle"], strokeWidth=0.8, opacity=0.8).encode(
        x=_on_axis_of(base, "x", "from_x"), y=_on_axis_of(base, "y", "from_y"), x2="lead_x:Q", y2="lead_y:Q")


def _on_axis_of(base: alt.Chart, channel: str, field: str):
    """``field`` on the base's ``channel`` with its title and scale: a layer's own title would be
    joined to the base's, and no title would drop the axis title altogether."""
    shown = {key: value for key, value in base.encoding[channel].to_dict().items() if key in ("title", "scale")}
    return (alt.X if channel == "x" else alt.Y)(field=field, type="quantitative", **shown)


def label_marks(base: alt.Chart) -> list[alt.Chart]:
    """The text marks of labels placed by :func:`point_labels`: rows with ``text``, ``place``
    and ``label_y`` (the data y of the label's top edge). Each label is drawn twice, first as a
    halo in the background colour, so that it reads over a line or a marker it has to cross."""
    return [base.transform_filter(f"datum.place == {k}").mark_text(
        align=align, baseline="top", dx=dx, lineBreak="\n", fontSize=_FONT, lineHeight=_LINE,
        **style).encode(y="label_y:Q", text="text:N")
        for k, (align, _, dx, _) in enumerate(PLACES)
        for style in ({"color": CHART["labelHalo"], "stroke": CHART["labelHalo"], "strokeWidth": 3,
                       "strokeJoin": "round"}, {"color": CHART["text"]})]


def point_labels(xs, ys, names, rank, *, x_end: float, y_end: float, width: int, height: int,
                 others=()) -> list[dict]:
    """For points at data (x, y) on axes from 0 to ``x_end`` and ``y_end`` drawn ``width`` ×
    ``height`` pixels: per point, the fields :func:`label_marks` and :func:`leader_marks` draw
    (those of :data:`UNLABELLED`). ``others``: more markers, in data (x, y), to keep clear of;
    ``rank``: the points labelled first (lower first)."""
    def px(x, y):
        return x / x_end * width, height - y / y_end * height

    def data(x, y):
        return x / width * x_end, (height - y) / height * y_end

    points = [px(x, y) for x, y in zip(xs, ys)]
    texts, places, tops = place_labels([x for x, _ in points], [y for _, y in points], names, rank, width, height,
                                       others=[px(x, y) for x, y in others])
    out = []
    for (x, y), text, k, top in zip(points, texts, places, tops):
        row = {**UNLABELLED, "text": text, "place": k, "label_y": (height - top) / height * y_end}
        if k >= LEADER_FROM:
            # from the marker's edge (a hollow marker would show the line inside its ring) to the
            # label's edge nearest the point: its anchor
            _, _, dx, dy = PLACES[k]
            edge = _MARKER_RADIUS / (dx * dx + dy * dy) ** 0.5
            row["from_x"], row["from_y"] = data(x + dx * edge, y + dy * edge)
            row["lead_x"], row["lead_y"] = data(x + dx, y + dy)
        out.append(row)
    return out


__all__ = ["GLYPH", "LEADER_FROM", "PLACES", "UNLABELLED", "label_marks", "leader_marks", "place_labels",
           "point_labels"]
