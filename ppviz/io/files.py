"""Writing an export to a file."""

from __future__ import annotations

import os

from ..core.paths import checked_path


def write_file(path: str | os.PathLike, data: str | bytes) -> str:
    """Write ``data`` (text as UTF-8) to ``path``; returns the path. Callers render first and
    write last, so a bad option leaves no empty file."""
    name = checked_path(path)
    with open(name, "wb") as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)
    return name
