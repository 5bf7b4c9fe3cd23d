"""File names users give for writing: checked before ``open``, which takes an int as a file
descriptor and stops at a NUL."""

from __future__ import annotations

import os

from .errors import ConfigError


def checked_path(path) -> str:
    """``path`` as a file name; an int would be taken as a file descriptor by ``open``."""
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise ConfigError("path", path, "give a file name (a str or a pathlib.Path)")
    name = os.fspath(path)
    if not isinstance(name, str) or not name or "\0" in name:
        raise ConfigError("path", path, "give a non-empty file name without NUL characters")
    # refused here rather than as an OSError from open, after the export has been rendered
    if os.path.isdir(name):
        raise ConfigError("path", name, "give a file name (a file inside it, for one)", reason="it is a folder")
    folder = os.path.dirname(name)
    if folder and not os.path.isdir(folder):
        raise ConfigError("path", name, "create the folder first, or write to an existing one",
                          reason=f"its folder {folder!r} does not exist")
    return name
