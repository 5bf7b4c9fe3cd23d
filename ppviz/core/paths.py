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
    return name
