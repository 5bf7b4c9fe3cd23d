"""Exporting charts offline: SVG and PNG rendered in this process by vl-convert, with no
browser and no network (showing them in a notebook offline is ``offline``'s)."""

from __future__ import annotations


import struct
import zlib

import altair as alt
import vl_convert

from ..core.errors import ConfigError, checked_arguments
from ..core.paths import exported

_VL_VERSION = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])


def _spec(chart) -> dict:
    if isinstance(chart, alt.TopLevelMixin):
        return chart.to_dict()
    if isinstance(chart, dict):
        return chart
    raise ConfigError("chart", chart, "give an Altair chart or a Vega-Lite spec dict")


def _converted(convert, chart, **options):
    spec = _spec(chart)
    try:
        return convert(spec, vl_version=_VL_VERSION, allowed_base_urls=[], **options)
    except ValueError as exc:  # vl-convert's: a spec Vega-Lite cannot compile, or data from a URL
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        why = (lines[1] if len(lines) > 1 else lines[0] if lines else type(exc).__name__)[:300]
        raise ConfigError("chart", chart, "give an Altair chart or a Vega-Lite spec whose data is inline",
                          reason=f"Vega-Lite cannot render it ({why})") from None


@checked_arguments
def to_svg(chart, path=None) -> str | None:
    """The chart (an Altair chart or a Vega-Lite spec) as SVG text, rendered by vl-convert: no
    browser, and no network (external data URLs are refused rather than fetched). Written to
    ``path`` when one is given (then None is returned), as pandas' ``to_x`` methods do."""
    return exported(path, _converted(vl_convert.vegalite_to_svg, chart))


@checked_arguments
def to_png(chart, path=None, *, scale: float = 2.0) -> bytes | None:
    """The chart as PNG bytes at ``scale`` × its size (2 for sharp text on high-DPI screens),
    rendered by vl-convert with no browser and no network; written to ``path`` when one is
    given (then None is returned)."""
    return exported(path, png_bytes(chart, scale))


def png_bytes(chart, scale: float) -> bytes:
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not 0.01 <= scale <= 16:
        # far below 0.01 the picture has no pixels, and vl-convert's renderer panics
        raise ConfigError("scale", scale, "give a number from 0.01 to 16")
    return _converted(vl_convert.vegalite_to_png, chart, scale=float(scale))


def _gantt(result, options: dict):
    import inspect

    from .gantt import gantt_chart

    known = [name for name, p in inspect.signature(gantt_chart).parameters.items() if p.kind is p.KEYWORD_ONLY]
    for key, value in options.items():
        if key not in known:
            raise ConfigError(key, value, f"the Gantt chart's options are {', '.join(known)}",
                              reason="not an option of the Gantt chart")
    return gantt_chart(result, **options)


def gantt_svg(result, **options) -> str:
    """The Gantt chart as SVG (``options`` go to :func:`ppviz.charts.gantt_chart`)."""
    return _converted(vl_convert.vegalite_to_svg, _gantt(result, options))


def gantt_png(result, scale: float = 2.0, **options) -> bytes:
    """The Gantt chart as PNG at ``scale`` × its size in pixels, compacted."""
    return compact_png(png_bytes(_gantt(result, options), scale))


def compact_png(data: bytes) -> bytes:
    """The same PNG, its pixel data deflated again at zlib's default level: vl-convert
    compresses for speed, and this makes a chart about three times smaller in a tenth of a
    second. The pixels and every other chunk stay as they were."""
    chunks: list[tuple[bytes, bytes | None]] = []  # None: where the image data goes
    pixels: list[bytes] = []
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
    for kind, given in chunks:
        body = idat if given is None else given
        out.append(struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body)))
    return b"".join(out)
