"""Regenerates the README's pictures: ``python docs/images/make.py`` (needs Chromium at
/usr/bin/chromium, or PPVIZ_CHROMIUM, and Playwright; nothing is downloaded).

widget.png      the interactive chart (the standalone page of ``Result.to_html``) with microbatch
                3 selected and the tooltip of one of its ops showing
gantt-zb-v.png  the static export, ``Result.to_png``
"""

import os
import pathlib
import tempfile

from playwright.sync_api import sync_playwright

import ppviz
from ppviz.charts.render import compact_png

HERE = pathlib.Path(__file__).resolve().parent
CHROMIUM = os.environ.get("PPVIZ_CHROMIUM", "/usr/bin/chromium")


def widget_png(path: pathlib.Path) -> None:
    res = ppviz.simulate(ppviz.Config(schedule="interleaved-1f1b", devices=4, microbatches=8, stages_per_device=2))
    ops = res.ops
    selected = next(k for k in range(len(ops)) if ops.microbatch[k] == 3 and ops.kind[k] == "F")
    hovered = max(k for k in range(len(ops)) if ops.microbatch[k] == 3 and ops.kind[k] == "B" and ops.device[k] == 1)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        page_path = pathlib.Path(tmp) / "chart.html"
        res.to_html(page_path, theme="light")
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                     args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        page = browser.new_page(viewport={"width": 1248, "height": 900}, device_scale_factor=2)
        page.goto(page_path.as_uri())
        page.wait_for_function("window.ppvizReady === true")

        def centre(k):
            box = page.evaluate("k => document.querySelector('.ppviz-gantt').ppviz.opBox(k)", k)
            return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2

        page.mouse.click(*centre(selected))
        page.evaluate("document.activeElement.blur()")  # no focus ring in the picture
        page.mouse.move(*centre(hovered))
        root = page.locator(".ppviz-gantt")
        root.locator(".ppviz-tooltip").wait_for(state="visible")
        path.write_bytes(compact_png(root.screenshot()))
        browser.close()


def gantt_png(path: pathlib.Path) -> None:
    ppviz.simulate(ppviz.Config(schedule="zb-v", devices=4, microbatches=8)).to_png(path)


if __name__ == "__main__":
    widget_png(HERE / "widget.png")
    gantt_png(HERE / "gantt-zb-v.png")
    for name in ("widget.png", "gantt-zb-v.png"):
        print(f"{HERE / name}: {(HERE / name).stat().st_size // 1024} KB")
