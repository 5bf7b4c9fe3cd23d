"""ppviz's views in marimo, which draws anywidgets natively and no other Jupyter widget: no
ipywidgets container, control, HTML or ``jslink``.

marimo shows a cell's last expression through the object's ``_display_()`` if it has one (the
display protocol: marimo alone calls it, and it needs no import of marimo until then). Each
view keeps its anywidgets — the Gantt charts, the Altair ``JupyterChart``, a comparison's
``CompareState`` — and its ``_display_`` returns them laid out with marimo's own
:func:`stack`. What Jupyter links in the browser through ``jslink`` is linked in the kernel
here (:func:`link_in_kernel`), so a selection made in one view still reaches the others,
by way of Python. A data object (``Frontier``) displays as its view by returning the view.
"""

from __future__ import annotations

import traitlets


def stack(children: list, css_class: str = ""):
    """``children`` (anywidgets, marimo objects, or HTML text) one under another, in a
    ``<div>`` of ``css_class`` when given."""
    import marimo as mo

    column = mo.vstack([mo.Html(child) if isinstance(child, str) else child for child in children])
    return mo.Html(f'<div class="{css_class}">{column.text}</div>') if css_class else column


def link_in_kernel(pairs) -> list[traitlets.link]:
    """``traitlets.link`` each ((widget, trait), (widget, trait)) of ``pairs``: a change that
    reaches the kernel from one widget's front end goes out to the other's."""
    return [traitlets.link(source, target) for source, target in pairs]
