"""Where exports go. They follow pandas' rule: ``to_x(path=None)`` returns the text (or bytes)
when no path is given, and writes it otherwise, returning None (:func:`exported`). File names
users give are checked before ``open``, which takes an int as a file descriptor and stops at a
NUL."""

from __future__ import annotations

import os
from typing import AnyStr

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


def exported(path, data: AnyStr) -> AnyStr | None:
    """``data`` itself when ``path`` is None; else written to ``path`` — a file name (text as
    UTF-8), or an open file with a ``write`` method — and None. Callers render first and write
    last, so a bad option leaves no empty file."""
    if path is None:
        return data
    if hasattr(path, "write"):
        path.write(data)
        return None
    name = checked_path(path)
    with open(name, "wb") as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)
    return None
