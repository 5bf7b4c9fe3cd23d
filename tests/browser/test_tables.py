"""Text ppviz hands to a notebook as HTML, laid out by a real browser: names stay whole."""

import ppviz


def test_the_schedule_table_never_breaks_a_name_however_narrow_the_cell(page):
    # was "interleaved-/1f1b" in a notebook's narrow output: the browser broke names at their hyphens
    table = ppviz.list_schedules()
    for width in (320, 700, 1280):
        page.set_viewport_size({"width": width, "height": 900})
        page.set_content(f"<body style='margin: 0'><div style='width: {width}px'>{table._repr_html_()}</div></body>")
        # a name laid out on one line is one box of one line's height
        lines = page.evaluate("""() => [...document.querySelectorAll('code')].map(c => {
            const boxes = c.getClientRects();
            return [c.textContent, boxes.length, Math.round(boxes[0].height)];
        })""")
        names = [text for text, *_ in lines]
        assert names[:3] == ["gpipe", "ScheduleGPipe", "fill-drain"]
        assert set(table.names()) <= set(names) and {a for s in table for a in s.aliases} <= set(names)
        height = lines[0][2]
        broken = [text for text, boxes, h in lines if boxes != 1 or h != height]
        assert not broken, (width, broken)
        # the prose still wraps: the descriptions take several lines at 320 px
        if width == 320:
            cell = page.evaluate("() => document.querySelectorAll('tr')[3].children[3].getClientRects()[0].height")
            assert cell > 2 * height


def test_a_closed_form_marked_with_a_star_says_why_under_the_cards(page, tmp_path):
    # was "closed form 22*" on the cards, the reason only in their tooltips
    from ppviz.core.closed_form import caveat

    from .conftest import ARTIFACTS, open_chart

    res = ppviz.simulate(ppviz.Config("1f1b", devices=4, microbatches=8, comm=0.5))
    assert not res.closed_form.applies
    root = open_chart(page, res, tmp_path)
    closed = root.locator(".ppviz-metric-closed").all_inner_texts()
    assert any(text.endswith("*") for text in closed), closed
    footnote = root.locator(".ppviz-footnote")
    assert footnote.count() == 1 and footnote.inner_text() == f"* {caveat(res.closed_form, res.config)}"
    assert footnote.is_visible() and footnote.bounding_box()["height"] > 0
    (ARTIFACTS / "reading").mkdir(parents=True, exist_ok=True)
    root.locator(".ppviz-header").screenshot(path=str(ARTIFACTS / "reading" / "closed_form_footnote.png"))
    # where the closed form holds there is no star, and no footnote
    root = open_chart(page, ppviz.Config("1f1b", devices=4, microbatches=8), tmp_path, name="exact")
    assert not any(text.endswith("*") for text in root.locator(".ppviz-metric-closed").all_inner_texts())
    assert root.locator(".ppviz-footnote").count() == 0
