"""Tables of equal-length numpy columns: a timeline's ops, transfers, a measured run's samples.

A table is a frozen dataclass whose fields are its columns; ``COLUMNS`` names the ones it shows
as a mapping (``dict(table)``, ``pandas.DataFrame(dict(table))``), and every table with a
``start`` and an ``end`` has a ``duration``. :class:`Queue` is a table of copies that wait for a
link: each row also has a ``ready`` time, and a ``queued`` time.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Protocol

import numpy as np
from .errors import checked_arguments


class _Timed(Protocol):
    """A table with a start and an end per row (read-only: the tables are frozen)."""

    @property
    def start(self) -> np.ndarray: ...
    @property
    def end(self) -> np.ndarray: ...


class _Queued(Protocol):
    """A table of copies that were ready, then started."""

    @property
    def ready(self) -> np.ndarray: ...
    @property
    def start(self) -> np.ndarray: ...


@checked_arguments
class Columns:
    """Mixin for a frozen dataclass of equal-length columns."""

    COLUMNS: tuple[str, ...] = ()
    # every table is a dataclass (declared for the checker; @dataclass sets it)
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def __len__(self) -> int:
        return len(getattr(self, dataclasses.fields(self)[0].name))

    def __getitem__(self, name: str) -> np.ndarray:
        return getattr(self, name)

    def keys(self):
        return self.COLUMNS or tuple(f.name for f in dataclasses.fields(self))

    @property
    def duration(self: _Timed) -> np.ndarray:
        return self.end - self.start

    def to_pandas(self):
        """The table as a pandas DataFrame (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(f"{type(self).__name__}.to_pandas needs pandas: pip install pandas") from exc
        return pd.DataFrame({name: getattr(self, name) for name in self.keys()})


@checked_arguments
class Queue(Columns):
    """Mixin for a table of copies over links (transfers, host copies): each row is ``ready``,
    then starts when its link is free. ``EMPTY`` gives each column's dtype for :meth:`empty`."""

    EMPTY: tuple[str, ...] = ()

    @property
    def queued(self: _Queued) -> np.ndarray:
        """Time each copy waited for its link after it was ready."""
        return self.start - self.ready

    @classmethod
    def empty(cls):
        """The table with no rows."""
        return cls(*(np.zeros(0, dtype) for dtype in cls.EMPTY))
