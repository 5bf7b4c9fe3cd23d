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
