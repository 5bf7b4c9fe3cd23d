"""Finding a preset (a published model or accelerator) by name, forgivingly: case, spaces,
``-``, ``_`` and ``.`` do not matter, and an unknown name gets the closest ones suggested."""

from __future__ import annotations

import difflib
import re

from ..core.errors import ConfigError


def _key(name: str) -> str:
    return re.sub(r"[\s_\-.]+", "", name.lower())


def from_catalog(table: dict, what: str, name, cls, changes: dict):
    """``cls(name=..., **table[name], **changes)``; a ConfigError naming the known presets otherwise."""
    if not isinstance(name, str):
        raise ConfigError(what, name, f"give a preset name: {', '.join(table)}")
    keys = {_key(k): k for k in table}
    found = keys.get(_key(name))
    if found is None:
        # a preset the name begins ("H100" of h100-sxm) before those that merely look alike
        begun = [k for k in keys if k.startswith(_key(name))] if _key(name) else []
        close = (begun + [k for k in difflib.get_close_matches(_key(name), list(keys), n=2, cutoff=0.5)
                          if k not in begun])[:2]
        hint = f"did you mean {', '.join(repr(keys[c]) for c in close)}? " if close else ""
        raise ConfigError(what, name, f"{hint}known presets: {', '.join(table)}", reason="no preset has this name")
    return cls(**{"name": found, **table[found], **changes})
