"""Exporting charts offline: SVG and PNG rendered in this process by vl-convert, with no
browser and no network (showing them in a notebook offline is ``offline``'s)."""

from __future__ import annotations


import struct
import zlib

import altair as alt
import vl_convert

from ..core.errors import ConfigError

from ..io.files import write_file

_VL_VERSION = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])


def _spec(chart) -> dict:
    if isinstance(chart, alt.TopLevelMixin):
        return chart.to_dict()
    if isinstance(chart, dict):
        return chart
    raise ConfigError("chart", chart, "give an Altair chart or a Vega-Lite spec dict")


def to_svg(chart) -> str:
    """The chart as SVG text, rendered by vl-convert: no browser, and no network (external
    data URLs are refused rather than fetched)."""
    return vl_convert.vegalite_to_svg(_spec(chart), vl_version=_VL_VERSION, allowed_base_urls=[])


def to_png(chart, scale: float = 2.0) -> bytes:
    """The chart as PNG bytes at ``scale`` × its size (2 for sharp text on high-DPI screens),
    rendered by vl-convert with no browser and no network."""
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not 0 < scale <= 16:
        raise ConfigError("scale", scale, "give a number > 0 and <= 16")
    return vl_convert.vegalite_to_png(_spec(chart), vl_version=_VL_VERSION, scale=float(scale), allowed_base_urls=[])


def write_svg(result, path, **options) -> str:
    """Write the Gantt chart as SVG (``options`` go to :func:`ppviz.charts.gantt_chart`); returns the path."""
    from .gantt import gantt_chart

    return write_file(path, to_svg(gantt_chart(result, **options)))


def write_png(result, path, scale: float = 2.0, **options) -> str:
    """Write the Gantt chart as PNG at ``scale`` × its size in pixels; returns the path."""
    from .gantt import gantt_chart

    return write_file(path, compact_png(to_png(gantt_chart(result, **options), scale)))


def compact_png(data: bytes) -> bytes:
    """The same PNG, its pixel data deflated again at zlib's default level: vl-convert
    compresses for speed, and this makes a chart about three times smaller in a tenth of a
    second. The pixels and every other chunk stay as they were."""
    chunks, pixels = [], []
    at = 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at:at + 4])
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + length]
        if kind == b"IDAT":
            if not pixels:
                chunks.append((kind, None))  # the image data stays where it was
            pixels.append(body)
        else:
            chunks.append((kind, body))
        at += 12 + length
    idat = zlib.compress(zlib.decompress(b"".join(pixels)))
    out = [data[:8]]
    for kind, body in chunks:
        body = idat if body is None else body
        out.append(struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body)))
    return b"".join(out)
