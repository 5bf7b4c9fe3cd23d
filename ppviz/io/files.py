"""Writing an export to a file."""

from __future__ import annotations

import os

from ..core.errors import ConfigError


def checked_path(path) -> str:
    """``path`` as a file name; an int would be taken as a file descriptor by ``open``."""
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise ConfigError("path", path, "give a file name (a str or a pathlib.Path)")
    name = os.fspath(path)
    if not isinstance(name, str) or not name or "\0" in name:
        raise ConfigError("path", path, "give a non-empty file name without NUL characters")
    return name


def write_file(path: str | os.PathLike, data: str | bytes) -> str:
    """Write ``data`` (text as UTF-8) to ``path``; returns the path. Callers render first and
    write last, so a bad option leaves no empty file."""
    name = checked_path(path)
    with open(name, "wb") as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)
    return name
