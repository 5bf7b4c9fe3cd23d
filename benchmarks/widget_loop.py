"""The widget's whole loop in a real JupyterLab: change m in ppviz.show's controls, until the
chart is redrawn with the new run.

    python benchmarks/widget_loop.py [--ops 100000 1000000] [--repeats 5] [--checkout PATH]

For each size it starts JupyterLab (the harness of tests/browser/test_notebook_hosts.py),
runs a cell showing 1F1B on 8 devices with that many ops, then, in Debian's Chromium, types a
new m into the control (alternating m and m + 8) and times, inside the page, from the
control's change event to the paint that shows the new run's ops. It prints the median and
the spread of the loop, and where the time goes:

- simulate and encode: the kernel's work (``Config.replace`` + ``simulate``, then the wire
  encoding of ``GanttWidget.set_result``), timed again in this process on the same config;
- message: the bytes of the comm message (binary timeline and memory, JSON meta);
- decode and draw: the front end's own timings of the last change (``root.ppviz.timings()``);
- busy: from the change to the chart's busy state (``data-busy``), where it shows;
- transport: the rest (kernel messaging, the server's websocket, JupyterLab's widget manager).

``--checkout PATH`` measures another copy of ppviz (its Python package and its built
``ppviz/static/widget.js``), e.g. an export of an older commit, for a before/after comparison;
the harness and this script stay this checkout's.

Targets (issue 11, item 12): ≤ 150 ms at 10^5 ops, ≤ 1 s at 10^6 ops. The machine's load is
printed with the figures: timings under load are not the idle machine's.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent

CHROMIUM = os.environ.get("PPVIZ_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-quic"]
DEVICES = 8
OPS_PER_MICROBATCH = 2 * DEVICES  # 1F1B: an F and a B per stage

CELL = """\
import ppviz
viewer = ppviz.show(ppviz.Config(schedule="1f1b", devices={p}, microbatches={m}))
viewer
"""

# From the change event on the m control to the paint that shows `ops` ops: a MutationObserver
# on the root's data-draws (set at the end of each paint) and data-busy.
LOOP = """async ({m, ops}) => {
  const root = document.querySelector('.ppviz-gantt');
  const input = [...document.querySelectorAll('.widget-inline-hbox')]
    .find(b => b.querySelector('label')?.textContent.trim() === 'm').querySelector('input');
  return await new Promise((resolve) => {
    let busy = null;
    const t0 = performance.now();
    const observer = new MutationObserver(() => {
      if (busy === null && root.dataset.busy) busy = performance.now() - t0;
      if (root.dataset.runOps === String(ops)) {
        observer.disconnect();
        resolve({loop: performance.now() - t0, busy, timings: root.ppviz.timings()});
      }
    });
    observer.observe(root, {attributes: true});
    input.value = String(m);
    input.dispatchEvent(new Event('input', {bubbles: true}));
    input.dispatchEvent(new Event('change', {bubbles: true}));
  });
}"""


def kernel_work(m: int, repeats: int) -> tuple[float, float, int]:
    """ms to re-simulate at m and to encode the result (medians), and the message's bytes."""
    import ppviz
    from ppviz.widgets.gantt import GanttWidget

    base = ppviz.Config(schedule="1f1b", devices=DEVICES, microbatches=m + 8)
    gantt = GanttWidget(ppviz.simulate(base))
    sims, encodes = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        result = ppviz.simulate(base.replace(microbatches=m))
        sims.append(time.perf_counter() - t)
        t = time.perf_counter()
        gantt.set_result(result)
        encodes.append(time.perf_counter() - t)
        gantt.set_result(ppviz.simulate(base))
    gantt.set_result(result)
    size = len(gantt._timeline) + len(gantt._memory) + len(json.dumps(gantt._meta))
    return 1000 * statistics.median(sims), 1000 * statistics.median(encodes), size


def measure(browser, n_ops: int, repeats: int) -> dict:
    from tests.browser.test_notebook_hosts import jupyter, run_cell

    m = max(1, round(n_ops / OPS_PER_MICROBATCH))
    with tempfile.TemporaryDirectory() as tmp, jupyter("lab", pathlib.Path(tmp), CELL.format(p=DEVICES, m=m)) as s:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        try:
            page.goto(s["url"])
            root = page.locator(".jp-OutputArea-output .ppviz-gantt")
            run_cell(page, root, timeout=120_000)
            page.wait_for_function(f"document.querySelector('.ppviz-gantt')?.dataset.runOps === '{m * OPS_PER_MICROBATCH}'",
                                   timeout=120_000)
            runs = []
            for i in range(repeats + 1):
                new_m = m + 8 if i % 2 == 0 else m
                runs.append(page.evaluate(LOOP, {"m": new_m, "ops": new_m * OPS_PER_MICROBATCH}))
                page.wait_for_timeout(300)
            runs = runs[1:]  # the first change warms the kernel's and the page's code paths
        finally:
            context.close()
    loops = sorted(r["loop"] for r in runs)
    busy = [r["busy"] for r in runs if r["busy"] is not None]
    return {
        "ops": m * OPS_PER_MICROBATCH, "loop": statistics.median(loops), "min": loops[0], "max": loops[-1],
        "busy": statistics.median(busy) if busy else None,
        "decode": statistics.median(r["timings"]["decodeMs"] for r in runs),
        "draw": statistics.median(r["timings"]["firstDrawMs"] for r in runs),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--checkout", type=pathlib.Path, default=ROOT,
                        help="the ppviz to measure: a directory holding ppviz/ with its built bundle")
    args = parser.parse_args()
    checkout = args.checkout.resolve()
    if not (checkout / "ppviz" / "static" / "widget.js").is_file():
        print(f"{checkout} has no ppviz/static/widget.js: build it (cd js && npm run build)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    if not pathlib.Path(CHROMIUM).exists():
        print(f"no Chromium at {CHROMIUM}: apt-get install chromium", file=sys.stderr)
        return 2
    # this process and the kernel import ppviz from the checkout (the harness puts the working
    # directory first); the harness comes from this checkout's tests
    sys.path[:0] = [str(checkout), str(ROOT)]
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(checkout), os.environ.get("PYTHONPATH")]))
    os.chdir(checkout)
    rows = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            for n in args.ops:
                row = measure(browser, n, args.repeats)
                m = row["ops"] // OPS_PER_MICROBATCH
                row["simulate"], row["encode"], row["bytes"] = kernel_work(m, args.repeats)
                rows.append(row)
        finally:
            browser.close()
    load = os.getloadavg()
    print(f"ppviz from {checkout}")
    print(f"JupyterLab, 1F1B on {DEVICES} devices, change m in the controls until the chart is redrawn; "
          f"{args.repeats} changes per size; ms; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
          f"on {os.cpu_count()} cores")
    print(f"{'ops':>10} {'loop med':>9} {'min':>7} {'max':>7} {'target':>7} {'busy':>6} {'simulate':>9} "
          f"{'encode':>7} {'message':>10} {'decode':>7} {'draw':>6} {'transport':>10}")
    for r in rows:
        target = 150 if r["ops"] <= 100_000 else 1000
        rest = r["loop"] - r["simulate"] - r["encode"] - r["decode"] - r["draw"]
        busy = "-" if r["busy"] is None else f"{r['busy']:.0f}"
        print(f"{r['ops']:>10,} {r['loop']:>9.0f} {r['min']:>7.0f} {r['max']:>7.0f} {target:>7} {busy:>6} "
              f"{r['simulate']:>9.0f} {r['encode']:>7.1f} {r['bytes'] / 1e6:>8.2f}MB {r['decode']:>7.1f} "
              f"{r['draw']:>6.1f} {rest:>10.0f}")
        print(f"{'':>10} loop / target = {r['loop'] / target:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
