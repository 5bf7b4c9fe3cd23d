"""The widget's whole loop in a real JupyterLab: change m in ppviz.show's controls, until the
chart is redrawn with the new run, and where the time goes.

    python benchmarks/widget_loop.py [--ops 10000 100000 1000000] [--schedules 1f1b interleaved-1f1b]
                                     [--repeats 5] [--checkout PATH]

It starts JupyterLab (the harness of tests/browser/hosts.py) and, for each schedule and size,
runs a cell showing that schedule on 8 devices (v = 2 where the schedule takes it) with about
that many ops; then, in Debian's Chromium, it types a new m into the control (alternating m and
m + 8) and times, inside the page, from the control's change event to the paint that shows the
new run's ops. Every part of one change is timed where it happens, on the machine's one clock
(the kernel's ``time.time()``, the page's ``performance.timeOrigin + performance.now()``):

- to kernel: the change's message from the page to the kernel, until the viewer starts on it;
- simulate: ``simulate`` in the kernel (the viewer's own call);
- encode: the wire encoding in the kernel (``encode_timeline``, ``encode_memory``, ``describe``);
- send: the rest of ``GanttWidget.set_result`` (traits, ipywidgets' message, handing it to ZeroMQ);
- server: from there to the message's arrival in the page's websocket (the Jupyter server);
- unpack: from its arrival to the chart reading the new traits (JupyterLab's kernel connection and
  its widget manager);
- decode: the front end's decoding (``root.ppviz.timings()``);
- paint: from the end of decoding to the end of the first paint (the wait for an animation frame,
  the opening window, the layout and the draw itself, which is also shown alone as draw).

transport = to kernel + send + server + unpack. The message's size is what the websocket
received. The first change per size is not counted (it warms the kernel's and the page's code
paths). ``--checkout PATH`` measures another copy of ppviz (its Python package and its built
``ppviz/static/widget.js``), e.g. an export of an older commit, for a before/after comparison;
the harness and this script stay this checkout's (the other copy's front end must report
``timings()``; one without ``paintedAt`` shows "-" for unpack and paint).

Targets (issue 37, item 4): ≤ 150 ms at 10^5 ops, ≤ 1 s at 10^6 ops. The machine's load is
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

ROOT = pathlib.Path(__file__).resolve().parent.parent

CHROMIUM = os.environ.get("PPVIZ_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-quic"]
DEVICES = 8
#: stages per device of the schedules that take more than one
V = 2
TARGETS_MS = ((100_000, 150), (1_000_000, 1000))

# The kernel writes when each of its parts of a change began and ended (epoch ms) to marks.jsonl
# in its working directory: the viewer's _apply, its simulate call, set_result and the encoders.
CELL = """\
import json, time
import ppviz
from ppviz.widgets import gantt, viewer as viewer_module

marks = open("marks.jsonl", "a", buffering=1)

def timed(owner, name):
    inner = getattr(owner, name)
    def wrapper(*args, **kwargs):
        began = time.time() * 1000
        try:
            return inner(*args, **kwargs)
        finally:
            marks.write(json.dumps([name, began, time.time() * 1000]) + "\\n")
    setattr(owner, name, wrapper)

for owner, name in ((viewer_module.Viewer, "_apply"), (viewer_module, "simulate"), (gantt.GanttWidget, "set_result"),
                    (gantt, "encode_timeline"), (gantt, "encode_memory"), (gantt, "describe")):
    timed(owner, name)
viewer = ppviz.show(ppviz.Config(schedule="{schedule}", devices={p}, microbatches={m}, stages_per_device={v}))
viewer
"""

# Every websocket message the page receives over 10 kB: when and how big.
WEBSOCKETS = """(() => {
  const Base = window.WebSocket;
  window.__ppvizMessages = [];
  window.WebSocket = class extends Base {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (e) => {
        const n = e.data.byteLength ?? e.data.length ?? 0;
        if (n > 10000) window.__ppvizMessages.push({ at: performance.timeOrigin + performance.now(), bytes: n });
      });
    }
  };
})();"""

# From the change event on the m control to the paint that shows `ops` ops: a MutationObserver
# on the root's data-run-ops (set at the end of each paint) and data-busy.
LOOP = """async ({m, ops}) => {
  const root = document.querySelector('.ppviz-gantt');
  const input = [...document.querySelectorAll('.widget-inline-hbox')]
    .find(b => b.querySelector('label')?.textContent.trim() === 'm').querySelector('input');
  window.__ppvizMessages = [];
  return await new Promise((resolve) => {
    let busy = null;
    const t0 = performance.now();
    const observer = new MutationObserver(() => {
      if (busy === null && root.dataset.busy) busy = performance.now() - t0;
      if (root.dataset.runOps === String(ops)) {
        observer.disconnect();
        const origin = performance.timeOrigin;
        const t = root.ppviz.timings();
        resolve({loop: performance.now() - t0, busy, began: origin + t0, timings: t,
                 loadedAt: origin + t.loadedAt, paintedAt: t.paintedAt ? origin + t.paintedAt : null,
                 messages: window.__ppvizMessages});
      }
    });
    observer.observe(root, {attributes: true});
    input.value = String(m);
    input.dispatchEvent(new Event('input', {bubbles: true}));
    input.dispatchEvent(new Event('change', {bubbles: true}));
  });
}"""

PARTS = ("to kernel", "simulate", "encode", "send", "server", "unpack", "decode", "paint")


def sizes(schedule: str, n_ops: int) -> tuple[int, int, int]:
    """(v, m, ops per microbatch) for about n_ops ops; m a multiple of p, as interleaving needs."""
    import ppviz

    spec = ppviz.Config(schedule=schedule).spec
    v = V if spec.v_max is None or spec.v_max > 1 else 1
    per = len(ppviz.Config(schedule=schedule, devices=DEVICES, microbatches=DEVICES, stages_per_device=v).build()) // DEVICES
    return v, max(1, round(n_ops / per / DEVICES)) * DEVICES, per


def split(run: dict, marks: list[list]) -> dict:
    """The parts of one change (ms) from the page's timings and the kernel's marks for it."""
    first = {name: (began, ended) for name, began, ended in reversed(marks)}
    apply_began, _ = first["_apply"]
    sim_began, sim_ended = first["simulate"]
    set_began, set_ended = first["set_result"]
    encode = sum(e - b for name, b, e in marks if name in ("encode_timeline", "encode_memory", "describe"))
    after = [m for m in run["messages"] if m["at"] >= set_began]
    message = max(after, key=lambda m: m["bytes"]) if after else None
    t = run["timings"]
    parts = {
        "to kernel": apply_began - run["began"] + (sim_began - apply_began),
        "simulate": sim_ended - sim_began,
        "encode": encode,
        "send": (set_ended - set_began) - encode,
        "server": message["at"] - set_ended if message else None,
        "unpack": run["loadedAt"] - message["at"] if message else None,
        "decode": t["decodeMs"],
        "paint": run["paintedAt"] - run["loadedAt"] - t["decodeMs"] if run["paintedAt"] else None,
        "draw": t["firstDrawMs"],
        "wait": (run["paintedAt"] - run["loadedAt"] - t.get("loadMs", t["decodeMs"]) - t["firstPaintMs"]
                 if run["paintedAt"] else None),
        "loop": run["loop"],
        "busy": run["busy"],
        "bytes": message["bytes"] if message else 0,
    }
    return parts


def measure(browser, server, schedule: str, n_ops: int, repeats: int) -> dict:
    from tests.browser.hosts import run_cell

    v, m, per = sizes(schedule, n_ops)
    url, folder = server.notebook("lab", CELL.format(schedule=schedule, p=DEVICES, m=m, v=v))
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(WEBSOCKETS)
    page = context.new_page()
    try:
        page.goto(url)
        root = page.locator(".jp-OutputArea-output .ppviz-gantt")
        run_cell(page, root, timeout=180_000)
        page.wait_for_function(f"document.querySelector('.ppviz-gantt')?.dataset.runOps === '{m * per}'",
                               timeout=180_000)
        runs = []
        for i in range(repeats + 1):
            new_m = m + DEVICES if i % 2 == 0 else m
            runs.append(page.evaluate(LOOP, {"m": new_m, "ops": new_m * per}))
            page.wait_for_timeout(500)  # the controls' echo and the window the chart opened on settle
    finally:
        context.close()
        server.shutdown_kernels()
    marks = [json.loads(line) for line in (folder / "marks.jsonl").read_text().splitlines()]
    # each change is one _apply; the marks before the first are the cell's own show()
    applies = [i for i, mark in enumerate(marks) if mark[0] == "_apply"]
    starts = [0] + [i + 1 for i in applies[:-1]]
    changes = [split(run, marks[start:stop + 1]) for run, start, stop in zip(runs, starts, applies)][1:]
    row = {"schedule": schedule, "v": v, "ops": m * per}
    for key in (*PARTS, "draw", "wait", "loop", "busy", "bytes"):
        values = [c[key] for c in changes if c[key] is not None]
        row[key] = statistics.median(values) if values else None
    loops = sorted(c["loop"] for c in changes)
    row["min"], row["max"] = loops[0], loops[-1]
    return row


def target(ops: int) -> int:
    return next((ms for size, ms in TARGETS_MS if ops <= size * 1.05), TARGETS_MS[-1][1])


def print_table(rows: list[dict]) -> None:
    def cell(x, width, digits=0):
        return f"{'-':>{width}}" if x is None else f"{x:>{width}.{digits}f}"

    print(f"{'schedule':>17} {'ops':>10} {'loop':>6} {'min':>6} {'max':>6} {'target':>6} {'ratio':>5} | "
          + " ".join(f"{p:>9}" for p in PARTS) + f" {'(draw)':>7} {'(wait)':>7} {'busy':>5} {'message':>9}")
    for r in rows:
        t = target(r["ops"])
        name = r["schedule"] + (f" v={r['v']}" if r["v"] > 1 else "")
        print(f"{name:>17} {r['ops']:>10,} {cell(r['loop'], 6)} "
              f"{cell(r['min'], 6)} {cell(r['max'], 6)} {t:>6} {r['loop'] / t:>5.2f} | "
              + " ".join(cell(r[p], 9, 1) for p in PARTS)
              + f" {cell(r['draw'], 7, 1)} {cell(r['wait'], 7, 1)} {cell(r['busy'], 5)} {r['bytes'] / 1e6:>7.2f}MB")
    print("\nthe issue's split (medians, ms): simulate, encode, transport (to kernel + send + server + unpack), "
          "decode, draw (paint)")
    for r in rows:
        transport = None if r["server"] is None else r["to kernel"] + r["send"] + r["server"] + r["unpack"]
        print(f"{r['schedule']:>17} {r['ops']:>10,}  simulate {cell(r['simulate'], 5)}  encode {cell(r['encode'], 4)}  "
              f"transport {cell(transport, 5)}  decode {cell(r['decode'], 4)}  draw {cell(r['paint'], 4)}  "
              f"= loop {cell(r['loop'], 5)} / target {target(r['ops'])} = {r['loop'] / target(r['ops']):.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--schedules", nargs="+", default=["1f1b", "interleaved-1f1b"])
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
    # this process and the kernel import ppviz from the checkout (the harness puts its own
    # checkout on the kernel's path after PYTHONPATH); the harness comes from this checkout's tests
    sys.path[:0] = [str(checkout), str(ROOT)]
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(checkout), os.environ.get("PYTHONPATH")]))
    import tests.browser.hosts as hosts

    hosts.PYTHONPATH = os.environ["PYTHONPATH"]
    loads = [os.getloadavg()]
    rows = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        server = hosts.JupyterServer(pathlib.Path(tmp))
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            for schedule in args.schedules:
                for n in args.ops:
                    rows.append(measure(browser, server, schedule, n, args.repeats))
                    loads.append(os.getloadavg())
        finally:
            browser.close()
            server.close()
    print(f"ppviz from {checkout}")
    print(f"JupyterLab, {DEVICES} devices, change m in the controls until the chart is redrawn; {args.repeats} changes "
          f"per row, medians in ms; load average (1 min) from {min(l[0] for l in loads):.2f} to "
          f"{max(l[0] for l in loads):.2f} on {os.cpu_count()} cores")
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
