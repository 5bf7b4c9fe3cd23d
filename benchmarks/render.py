"""Render benchmark: the widget's standalone page in headless Chromium at 10^3 … 10^6 ops.

    python benchmarks/render.py [--sizes 1000 10000 100000 1000000] [--dpr 1]

For each size it simulates 1F1B on 8 devices, opens ppviz.widgets.standalone_html in Debian's
Chromium (no kernel) and prints:

- decode: binary traits → typed arrays (+ prefix sums, microbatch index);
- first draw: the first paint (decode + draw is what a user waits for once the data has
  arrived): a run too dense to read whole opens on a readable window, with the whole run in the
  overview strip (rasterised in the same paint);
- zoom / pan: a real wheel or pointer event, then a synchronous repaint, then a one-pixel
  readback that forces Chromium to rasterise the canvas, so the figure includes raster time,
  not only the JS that records draw calls. Median and 95th percentile over the steps;
- hover: pointer moves over the bars (tooltip and outline; the bar and memory layers are reused);
- whole run: a paint of the whole run in the detail view (zoomed out), its bars computed anew.

Targets (issue 4, on the 2-core CI machine): first draw of 10^5 ops < 150 ms; zoom/pan
redraw < 16 ms; 10^6 ops still draw and respond.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import ppviz
from ppviz.widgets import standalone_html

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-quic"]

MEASURE = """async ({steps}) => {
  const root = document.querySelector('.ppviz-gantt');
  const api = root.ppviz;
  const canvas = root.querySelector('canvas');
  const ctx = canvas.getContext('2d');
  const r = canvas.getBoundingClientRect();
  // on the first device's row, below the overview strip a dense run opens with
  const x = r.left + r.width * 0.6, y = api.geometry().rowsTop + 10;
  const flush = () => ctx.getImageData(0, 0, 1, 1);
  const timed = (act) => { const t = performance.now(); act(); const draw = api.redraw(); flush();
                           return [draw, performance.now() - t, Number(root.dataset.ops)]; };
  const zoom = [];
  for (let i = 0; i < steps; i++) {
    const deltaY = i < steps / 2 ? -120 : 120;
    zoom.push(timed(() => canvas.dispatchEvent(new WheelEvent('wheel',
      { clientX: x, clientY: y, deltaY, bubbles: true, cancelable: true }))));
  }
  // pan at 8x zoom around the middle
  const full = api.getView();
  const span = (full.t1 - full.t0) / 8;
  api.setView(full.t0 + 3.5 * span, full.t0 + 4.5 * span);
  api.redraw();
  const pan = [];
  const ev = (type, px) => new PointerEvent(type, { clientX: px, clientY: y, pointerId: 1, button: 0, buttons: 1, bubbles: true });
  canvas.dispatchEvent(ev('pointerdown', x));
  for (let i = 1; i <= steps; i++) pan.push(timed(() => canvas.dispatchEvent(ev('pointermove', x - 12 * i))));
  canvas.dispatchEvent(ev('pointerup', x - 12 * steps));
  // hovering only repaints the overlays; the bar and memory layers are reused
  const hover = [];
  const move = (px) => new PointerEvent('pointermove', { clientX: px, clientY: y, pointerId: 1, bubbles: true });
  for (let i = 0; i < steps; i++) hover.push(timed(() => canvas.dispatchEvent(move(r.left + 200 + i * 17))));
  // the whole run in the detail view (what the first draw was before dense runs opened on a
  // window); two views a hair apart, so that each draw computes its bars anew
  api.setView(0, 1e15);  // clamped to the whole time axis
  const end = api.getView().t1;
  const whole = [];
  for (let i = 0; i < 6; i++) {
    api.setView(0, end * (i % 2 ? 1 : 1 - 1e-3));
    whole.push(timed(() => {})[0]);
  }
  return { zoom, pan, hover, whole, decode: api.timings().decodeMs, first: api.timings().firstDrawMs,
           labels: Number(root.dataset.labels) };
}"""


def stats(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def run(sizes: list[int], dpr: float, steps: int) -> int:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        print(f"no Chromium at {CHROMIUM}: apt-get install chromium", file=sys.stderr)
        return 2
    rows = []
    with sync_playwright() as pw, tempfile.TemporaryDirectory() as tmp:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for n in sizes:
            t = time.perf_counter()
            res = ppviz.simulate(ppviz.Config(schedule="1f1b", devices=8, microbatches=max(1, round(n / 16))))
            sim_s = time.perf_counter() - t
            path = Path(tmp) / f"chart-{n}.html"
            path.write_text(standalone_html(res))
            page = browser.new_page(viewport={"width": 1600, "height": 1000}, device_scale_factor=dpr)
            page.goto(path.as_uri())
            page.wait_for_function("window.ppvizReady === true", timeout=120_000)
            page.wait_for_function("Number(document.querySelector('.ppviz-gantt')?.dataset.draws) >= 1",
                                   timeout=120_000)
            m = page.evaluate(MEASURE, {"steps": steps})
            first = m["first"]
            page.close()
            zoom_total = stats([s[1] for s in m["zoom"]])
            zoom_js = stats([s[0] for s in m["zoom"]])
            pan_total = stats([s[1] for s in m["pan"]])
            pan_js = stats([s[0] for s in m["pan"]])
            hover_total = stats([s[1] for s in m["hover"]])
            rows.append((len(res.ops), sim_s * 1000, m["decode"], first, m["decode"] + first, zoom_js, zoom_total,
                         pan_js, pan_total, hover_total, statistics.median(m["whole"])))
        browser.close()
    print(f"1F1B, 8 devices, viewport 1600x1000 at devicePixelRatio {dpr:g}, {steps} zoom and {steps} pan steps; ms")
    print(f"{'ops':>9} {'simulate':>9} {'decode':>7} {'1st draw':>9} {'decode+draw':>12}"
          f" {'zoom js med/p95':>16} {'zoom+raster med/p95':>20} {'pan js med/p95':>15} {'pan+raster med/p95':>19}"
          f" {'hover+raster med/p95':>21} {'whole run':>10}")
    for n, sim, dec, first, both, zj, zt, pj, pt, ht, whole in rows:
        print(f"{n:>9,} {sim:>9.0f} {dec:>7.1f} {first:>9.1f} {both:>12.1f}"
              f" {zj[0]:>7.2f} / {zj[1]:>6.2f} {zt[0]:>10.2f} / {zt[1]:>6.2f}"
              f" {pj[0]:>6.2f} / {pj[1]:>6.2f} {pt[0]:>9.2f} / {pt[1]:>6.2f} {ht[0]:>11.2f} / {ht[1]:>6.2f}"
              f" {whole:>10.1f}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000, 1_000_000])
    parser.add_argument("--dpr", type=float, default=1.0, help="devicePixelRatio of the page (2 for a high-DPI screen)")
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    return run(args.sizes, args.dpr, args.steps)


if __name__ == "__main__":
    sys.exit(main())
