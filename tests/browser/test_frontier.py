"""End to end: ppviz.frontier in JupyterLab (every request off this machine refused) — clicking a
point of the Altair chart reaches the kernel as the JupyterChart selection and opens that run's
Gantt chart below the chart."""

from .conftest import ARTIFACTS
from .test_notebook_hosts import offline_lab, run_cell, wait_for, wait_for_file

FRONTIER = """\
import pathlib
import ppviz
front = ppviz.frontier(ppviz.Config(devices=4, microbatches=8, comm=0.2), memory=[2, 4])
view = front.view()
view.observe(lambda change: pathlib.Path("selected.txt").write_text(change["new"]), names="selected")
view
"""


def test_clicking_a_frontier_point_opens_its_gantt_chart(browser, tmp_path):
    with offline_lab(browser, tmp_path, FRONTIER, ARTIFACTS / "frontier" / "failed.png",
                     viewport={"width": 1300, "height": 1400}) as (server, page):
        page.goto(server["url"])
        run_cell(page, page.locator(".jp-OutputArea-output .ppviz-frontier-chart"), timeout=60_000)
        points = page.locator('.ppviz-frontier-chart svg path[aria-label*="; run: "]')
        points.first.wait_for(timeout=60_000)
        labels = points.evaluate_all("els => els.map(e => e.getAttribute('aria-label'))")
        assert any("; run: zb-h1;" in label for label in labels)
        assert page.locator(".ppviz-gantt").count() == 0
        page.locator('.ppviz-frontier-chart svg path[aria-label*="; run: search ≤ 4;"]').first.click()
        wait_for_file(server["root"] / "selected.txt", "search ≤ 4")
        gantt = page.locator(".ppviz-gantt")
        gantt.first.wait_for(timeout=30_000)
        wait_for(page, lambda: page.locator(".ppviz-gantt .ppviz-name").all_inner_texts() == ["search ≤ 4"],
                 "the search result's Gantt chart")
        (ARTIFACTS / "frontier").mkdir(parents=True, exist_ok=True)
        page.locator(".jp-OutputArea-output").first.screenshot(path=str(ARTIFACTS / "frontier" / "clicked.png"))
        page.locator('.ppviz-frontier-chart svg path[aria-label*="; run: zb-h1;"]').first.click()
        wait_for_file(server["root"] / "selected.txt", "zb-h1")
        wait_for(page, lambda: page.locator(".ppviz-gantt .ppviz-name").all_inner_texts() == ["zb-h1"],
                 "zb-h1's Gantt chart")
