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
    problem = unwritable(name)
    if problem is not None:
        raise ConfigError("path", name, problem[1], reason=problem[0])
    return name


def unwritable(name: str, ending: str = "") -> tuple[str, str] | None:
    """Why a file cannot be written at ``name`` (a folder, or in a folder that does not exist),
    and what to give instead, e.g. a file inside that folder (named ``run`` + ``ending``); None
    when it can be tried."""
    if os.path.isdir(name):
        example = f"e.g. {os.path.join(name, 'run' + ending)}" if ending else "a file inside it, for one"
        return "it is a folder", f"give a file name ({example})"
    folder = os.path.dirname(os.path.abspath(name))
    if not os.path.isdir(folder):
        return f"there is no folder {folder}", "create the folder first, or write to an existing one"
    return None
