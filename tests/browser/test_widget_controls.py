"""ppviz.show's controls in a real JupyterLab and kernel, driven in Chromium: a slow change
shows the busy state at once (the typed value stays in its box, the chart dims), a refused
change (over the size budget, or a schedule the sizes refuse) shows why in the chart while the
controls snap back to the config on display, and keys the chart handles never reach
JupyterLab's shortcuts ("0, 0" would restart the kernel)."""

import json

import pytest

import ppviz
from ppviz.core.numbers import number

from .conftest import ARTIFACTS
from .hosts import cell_output, jupyter, run_cell, wait_for_file

CELL = """\
import json, pathlib
import ppviz
viewer = ppviz.show(ppviz.Config(schedule="1f1b", devices=8, microbatches=16))
viewer.gantt.observe(lambda change: pathlib.Path("config.json").write_text(json.dumps(
    {"m": viewer.config.microbatches, "schedule": viewer.config.schedule, "p": viewer.config.devices})),
    names="_meta")
viewer
"""

# From the change on the m control: what the page shows first, and when the new run is drawn
CHANGE = """async ({name, value, ops}) => {
  const root = document.querySelector('.ppviz-gantt');
  const input = document.querySelector(`.ppviz-control-${name} input, .ppviz-control-${name} select`);
  return await new Promise((resolve) => {
    const seen = {busyWhileOld: false, busyText: '', typed: null};
    const t0 = performance.now();
    const observer = new MutationObserver(() => {
      if (root.dataset.busy && root.dataset.runOps !== String(ops)) {
        seen.busyWhileOld = true;
        seen.busyText = root.dataset.busy;
        seen.typed = input.value;
        seen.busyAfterMs = performance.now() - t0;
      }
      if (root.dataset.runOps === String(ops)) {
        observer.disconnect();
        seen.drawnAfterMs = performance.now() - t0;
        seen.busyAtEnd = root.dataset.busy ?? '';
        resolve(seen);
      }
    });
    observer.observe(root, {attributes: true});
    input.value = String(value);
    input.dispatchEvent(new Event('change', {bubbles: true}));
  });
}"""


def control(page, name):
    return page.locator(f".ppviz-control-{name} input, .ppviz-control-{name} select").first


def test_controls_show_busy_refuse_in_place_and_keep_keys_from_jupyterlab(browser, tmp_path):
    context = browser.new_context(viewport={"width": 1400, "height": 1100})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    with jupyter("lab", tmp_path, CELL) as server:
        root_dir = server["root"]
        try:
            page.goto(server["url"])
            root = page.locator(".jp-OutputArea-output .ppviz-gantt")
            run_cell(page, root)
            page.wait_for_function("document.querySelector('.ppviz-gantt')?.dataset.runOps === '256'", timeout=30_000)
            error = root.locator(".ppviz-error")

            # a slow change: 1F1B on 8 devices with 40,000 microbatches is 640,000 ops
            seen = page.evaluate(CHANGE, {"name": "microbatches", "value": 40_000, "ops": 640_000})
            assert seen["busyWhileOld"], seen
            assert seen["busyText"] == "simulating 640,000 ops…" and seen["typed"] == "40000"
            assert seen["busyAtEnd"] == ""
            wait_for_file(root_dir / "config.json", json.dumps({"m": 40_000, "schedule": "1f1b", "p": 8}))

            # over the size budget: refused before any work, in place; the control snaps back
            field = control(page, "microbatches")
            field.fill("1000000")
            field.press("Enter")
            error.wait_for(state="visible")
            assert "over the budget" in error.inner_text()
            page.wait_for_function("document.querySelector('.ppviz-control-microbatches input').value === '40000'")
            assert root.get_attribute("data-run-ops") == "640000" and root.get_attribute("data-busy") is None

            # back to a small run, then an odd p and a schedule that needs an even one
            field.fill("16")
            field.press("Enter")
            page.wait_for_function("document.querySelector('.ppviz-gantt').dataset.runOps === '256'", timeout=30_000)
            assert error.is_hidden()
            devices = control(page, "devices")
            devices.fill("5")
            devices.press("Enter")
            page.wait_for_function("document.querySelector('.ppviz-gantt').dataset.runOps === '160'", timeout=30_000)
            control(page, "schedule").select_option("dualpipe")
            error.wait_for(state="visible")
            assert "dualpipe needs an even number of devices" in error.inner_text()
            page.wait_for_function("document.querySelector('.ppviz-control-schedule select').value === '1f1b'")
            wait_for_file(root_dir / "config.json", json.dumps({"m": 16, "schedule": "1f1b", "p": 5}))
            ARTIFACTS.mkdir(exist_ok=True)
            cell_output(page).screenshot(path=str(ARTIFACTS / "controls-refused.png"))

            # keys: zoom in the chart, then "0, 0" resets its view and does not restart the kernel
            canvas = root.locator("canvas").bounding_box()
            rows = root.evaluate("e => e.ppviz.geometry()")  # below the overview strip, if the run has one
            page.mouse.click(canvas["x"] + canvas["width"] - 20, rows["rowsTop"] + 1)
            page.mouse.move(canvas["x"] + canvas["width"] * 0.5, rows["rowsTop"] + 1)
            full = root.evaluate("e => e.ppviz.getView()")
            page.keyboard.press("+")
            assert root.evaluate("e => e.ppviz.getView()") != full
            page.keyboard.press("0")
            page.keyboard.press("0")
            assert root.evaluate("e => e.ppviz.getView()") == full
            page.wait_for_timeout(800)
            assert page.locator(".jp-Dialog").count() == 0, "JupyterLab saw the keys: it asks to restart the kernel"
            # the kernel still holds the viewer: a change still re-simulates
            field.fill("24")
            field.press("Enter")
            page.wait_for_function("document.querySelector('.ppviz-gantt').dataset.runOps === '240'", timeout=30_000)
            assert errors == []
        except Exception:
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "failed-controls.png"))
            raise
        finally:
            context.close()



MODEL_CELL = """\
import json, pathlib
import ppviz
cfg = ppviz.Config.from_model(ppviz.Transformer.preset("llama-3-8b"), ppviz.Hardware.preset("h100-sxm"),
                              devices=4, microbatches=16, topology="dgx-h100")
viewer = ppviz.show(cfg)
viewer.gantt.observe(lambda change: pathlib.Path("f.json").write_text(json.dumps(viewer.config.f)), names="_meta")
pathlib.Path("f0.json").write_text(json.dumps(cfg.f))
viewer
"""

LINE = """() => {
  const box = document.querySelector('.ppviz-controls');
  const items = [...box.children].map(e => e.getBoundingClientRect());
  const inputs = [...box.querySelectorAll('input, select')];
  return {tops: items.map(r => Math.round(r.top)), right: Math.max(...items.map(r => r.right)),
          width: box.getBoundingClientRect().width,
          clipped: inputs.filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.closest('[class*=ppviz-control-]').className)};
}"""


def test_a_model_configs_controls_fit_one_line_and_say_their_costs_whole(browser, tmp_path):
    # JupyterLab in a 1,400 px window with its file browser open: the controls wrapped onto a
    # second line, f showed 79.91747313458661 in a box that cut it, and comm showed 0 beside a topology
    cfg = ppviz.Config.from_model(ppviz.Transformer.preset("llama-3-8b"), ppviz.Hardware.preset("h100-sxm"),
                                  devices=4, microbatches=16, topology="dgx-h100")
    shown_f, shown_b = number(cfg.f, "ms"), number(cfg.b, "ms")
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    with jupyter("lab", tmp_path, MODEL_CELL) as server:
        try:
            page.goto(server["url"].replace("?reset", ""))
            root = page.locator(".jp-OutputArea-output .ppviz-gantt")
            run_cell(page, root)
            page.wait_for_function("Number(document.querySelector('.ppviz-gantt')?.dataset.draws) >= 1", timeout=30_000)
            assert page.locator(".jp-SideBar .lm-mod-current, .jp-FileBrowser:visible").count() >= 1
            line = page.evaluate(LINE)
            # one line: every control's top within a few pixels of the others'
            assert max(line["tops"]) - min(line["tops"]) < 8, line
            assert line["clipped"] == [], line
            assert control(page, "f").input_value() == shown_f  # e.g. "59.7 ms"
            assert control(page, "b").input_value() == shown_b
            comm = control(page, "comm")
            assert comm.input_value() == "topology" and comm.is_disabled()
            why = page.locator(".ppviz-control-comm").evaluate("e => [e, ...e.querySelectorAll('*')].map(x => x.title).join(' ')")
            assert "each transfer costs its link's latency" in why
            ARTIFACTS.mkdir(exist_ok=True)
            page.locator(".jp-OutputArea-output").first.screenshot(path=str(ARTIFACTS / "controls-model-config.png"))
            # what the box shows, sent back, runs nothing; the value run keeps all its digits
            f = control(page, "f")
            f.fill(shown_f)
            f.press("Enter")
            page.wait_for_timeout(1000)
            assert not (server["root"] / "f.json").exists()
            f.fill("80")
            f.press("Enter")
            wait_for_file(server["root"] / "f.json", "80.0")
            assert float((server["root"] / "f0.json").read_text()) == pytest.approx(cfg.f, abs=1e-12)
        except Exception:
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "failed-controls-model.png"))
            raise
        finally:
            context.close()
