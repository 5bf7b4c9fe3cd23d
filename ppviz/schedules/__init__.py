"""The schedule families: one module each, holding its builder (config → program), its closed
forms and its registration. Importing this package registers every family, in the order
``ppviz.list_schedules()`` lists them; adding a schedule is one new module named here (see
ARCHITECTURE.md, "Add a schedule")."""

from . import (gpipe, one_f_one_b, breadth_first, zero_bubble, v_shape, dualpipe, chimera, bitpipe, hanayo,  # noqa: F401
               seq1f1b, inference, custom, stp, vocab)  # (registers)
