"""The schedule families: one module each, holding its builder (config → program), its closed
forms and its registration. Importing this package registers every family, in the order
``ppviz.list_schedules()`` lists them; adding a schedule is one new module named here (see
ARCHITECTURE.md, "Add a schedule")."""

import sys
import types
import warnings

from ..core.registry import list_schedules
from . import (gpipe, one_f_one_b, breadth_first, zero_bubble, v_shape, dualpipe, chimera, bitpipe, hanayo,  # noqa: F401
               seq1f1b, inference, custom)  # (registers)


class _Package(types.ModuleType):
    """``ppviz.schedules`` is this package; calling it, as ppviz 0.1 allowed, still lists the registry."""

    def __call__(self, *args, **kwargs):
        warnings.warn("ppviz.schedules() is deprecated: call ppviz.list_schedules(); ppviz.schedules is now the "
                      "package of schedule families", DeprecationWarning, stacklevel=2)
        return list_schedules(*args, **kwargs)  # (which names a wrong argument)


sys.modules[__name__].__class__ = _Package
