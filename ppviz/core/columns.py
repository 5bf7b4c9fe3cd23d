"""Tables of equal-length numpy columns: a timeline's ops, transfers, a measured run's samples.

A table is a frozen dataclass whose fields are its columns; ``COLUMNS`` names the ones it shows
as a mapping (``dict(table)``, ``pandas.DataFrame(dict(table))``), and every table with a
``start`` and an ``end`` has a ``duration``.
"""

from __future__ import annotations

import dataclasses

import numpy as np


class Columns:
    """Mixin for a frozen dataclass of equal-length columns."""

    COLUMNS: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(getattr(self, dataclasses.fields(self)[0].name))

    def __getitem__(self, name: str) -> np.ndarray:
        return getattr(self, name)

    def keys(self):
        return self.COLUMNS or tuple(f.name for f in dataclasses.fields(self))

    @property
    def duration(self) -> np.ndarray:
        return self.end - self.start

    def to_pandas(self):
        """The table as a pandas DataFrame (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(f"{type(self).__name__}.to_pandas needs pandas: pip install pandas") from exc
        return pd.DataFrame({name: getattr(self, name) for name in self.keys()})
