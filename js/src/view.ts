// One rendered chart: builds the DOM, keeps view state (zoom, hover, scrubber), turns pointer
// and keyboard input into model changes, and repaints at most once per animation frame.
// It talks to the model through the small interface below, so tests drive it with a fake.
// In a comparison (ppviz.compare) the selection and the time window are traits that jslinks
// share with the other charts: a change made here is written to the model, and a change that
// arrives from the model is shown without being written back.

import { emphasisOf } from "./compare";
import { type MemoryCurves, type Timeline, decodeMemory, decodeTimeline, endOf, deviceOf, slotOf } from "./data";
import { DrawCache, type Scene, draw, makeHatch } from "./draw";
import type { GanttModel, GanttTraits } from "./traits";
import { type HeaderOptions, fillHeader, fillLegend, fillTitle } from "./header";
import { hitTest } from "./hit";
import { type Layout, computeLayout, inOverview, inPlot, inRows, labelAt, laneAt, rowHeightFor, rowsInView } from "./layout";
import { FONT, barLabelPx, gutterWidth, rowLabelPx } from "./labels";
import { type Meta, segmentsOf } from "./meta";
import { openingView, readableSpan } from "./opening";
import { type OverviewGrip, gripAt, overviewTime, windowBox } from "./overview";
import { MIN_SPAN_FRACTION, Scale, type TimeView, clampView, fullView, isFull, panBy, zoomAt } from "./scale";
import { Replay } from "./replay";
import { CSS, themeVariables } from "./styles";
import { type Palette, type ThemeName, hostTheme, palette, watchTheme } from "./theme";
import { describeMemory, describeOp, fillTooltip, placeTooltip } from "./tooltip";
import {
  OVERLAY_CSS, type Overlay, decodeOverlay, fillOverlaySummary, overlayAria, overlayRows, overlaySummary,
} from "./overlay";
import { KEY_ZOOM, keyAction, wheelAction } from "./input";
import { type LaneHalf, describeTransfer, hitTransfer, transferBox, transferLegend } from "./transfers";
import { describeTail, pieceBox, stepEnd, tailAt, tailLegend, tailOf, tailPieces, tpLegend } from "./tail";


/** Hooks for tests and benchmarks, on the root element as `root.ppviz`. */
export interface DebugHooks {
  opBox(k: number): { x: number; y: number; width: number; height: number } | null;
  getView(): TimeView;
  setView(t0: number, t1: number): void;
  hit(clientX: number, clientY: number): number;
  /** transfer i's box (client pixels) in its sender's (out) or receiver's (in) lane, or null when the lanes are hidden */
  transferBox(i: number, half: LaneHalf): { x: number; y: number; width: number; height: number } | null;
  /** data-parallel tail part i's boxes (client pixels): its band under the ops, then its bar after them */
  tailBoxes(i: number): { x: number; y: number; width: number; height: number; under: boolean }[];
  /** ms to decode the last data, to load it (decoding, header, legend), and to draw it the first
   * time (the draw, and the whole first paint with its layout and opening window); when
   * (performance.now()) it arrived and was first painted */
  timings(): {
    decodeMs: number; loadMs: number; firstDrawMs: number; firstPaintMs: number; loadedAt: number; paintedAt: number;
  };
  /** paint now instead of at the next frame; returns the draw's ms */
  redraw(): number;
  /** how far the rows are scrolled (px), and scroll them */
  getScroll(): number;
  setScroll(px: number): void;
  /** the detail view's window on the overview strip (client pixels), or null without a strip */
  overviewWindow(): { x: number; y: number; width: number; height: number } | null;
  /** the rows' geometry: row height, its label's font size, the rows' viewport and how far it scrolls */
  geometry(): { rowHeight: number; rowLabelPx: number; rowsTop: number; rowsBottom: number; scrollMax: number } | null;
}

const DRAG_PX = 3;

function div(className: string): HTMLDivElement {
  const e = document.createElement("div");
  e.className = className;
  return e;
}

export class GanttView {
  readonly root: HTMLDivElement;
  readonly canvas: HTMLCanvasElement;
  readonly tooltip: HTMLDivElement;
  private readonly ctx: CanvasRenderingContext2D;
  private readonly header = div("ppviz-header");
  /** the summary of an overlay (ppviz.show(measured, against=...)); hidden without one */
  private readonly overlayBox = div("ppviz-overlay");
  private overlay: Overlay | null = null;
  private readonly errorBox = div("ppviz-error");
  private readonly busyBox = div("ppviz-busy");
  private readonly hint = div("ppviz-hint");
  private hintTimer = 0;
  private loadQueued = false;
  private loadedAt = 0;
  /** the pointer's x over the plot (zoom keys zoom around it), or null */
  private pointerX: number | null = null;
  private readonly legend = div("ppviz-legend");
  private readonly plot = div("ppviz-plot");
  private readonly replay: Replay;
  private tl: Timeline | null = null;
  private mem: MemoryCurves | null = null;
  private meta: Meta | null = null;
  private view: TimeView = fullView(1);
  private layout: Layout | null = null;
  private palette: Palette;
  private themeName: ThemeName;
  private hatch: CanvasPattern | null = null;
  private readonly cache = new DrawCache();
  private dpr = 0;
  private hover = -1;
  /** the transfer under the pointer, -1 for none */
  private hoverTransfer = -1;
  /** the data-parallel tail part under the pointer, -1 for none */
  private hoverTail = -1;
  /** this view draws the transfer lanes (when its result has transfers); the legend's switch */
  private showTransfers = true;
  private memoryHover: { device: number; t: number } | null = null;
  private frame = 0;
  private draws = 0;
  private decodeMs = 0;
  private loadMs = 0;
  private firstDrawMs = -1;
  private firstPaintMs = -1;
  private paintedAt = 0;
  /** a press on the chart: a pan of the detail view, or (grip) a move or resize of the overview's window */
  private drag: { x: number; y: number; view: TimeView; scroll: number; moved: boolean; grip: OverviewGrip | null } | null = null;
  /** how far the rows are scrolled in their viewport (px) */
  private rowScroll = 0;
  /** new data waits for its first paint to choose the window it opens on (opening.ts) */
  private opening = false;
  /** the span this run opens on, shared with the other charts of a comparison; Infinity: whole */
  private openingSpan = Infinity;
  /** set while this view writes time_window, so that it does not read its own change back */
  private publishing = false;
  private readonly disposers: (() => void)[] = [];
  private destroyed = false;

  constructor(
    private readonly el: HTMLElement,
    private readonly model: GanttModel,
  ) {
    this.root = div("ppviz-gantt");
    this.root.tabIndex = 0;
    const style = document.createElement("style");
    style.textContent = CSS + OVERLAY_CSS;
    this.canvas = document.createElement("canvas");
    this.canvas.setAttribute("role", "img");
    const ctx = this.canvas.getContext("2d");
    if (!ctx) throw new Error("ppviz: this browser gives no 2D canvas");
    this.ctx = ctx;
    this.tooltip = div("ppviz-tooltip");
    this.tooltip.hidden = true;
    this.errorBox.hidden = true;
    this.errorBox.setAttribute("role", "alert");
    this.busyBox.hidden = true;
    this.busyBox.setAttribute("role", "status");
    this.hint.hidden = true;
    this.plot.append(this.canvas, this.tooltip, this.busyBox, this.hint);
    this.replay = new Replay(() => this.meta?.makespan ?? 0, () => {
      this.dismissError();
      this.requestDraw();
    }, () => this.meta?.time_unit ?? "");
    this.root.append(style, this.header, this.overlayBox, this.errorBox, this.legend, this.plot, this.replay.el);
    el.append(this.root);

    this.themeName = this.resolveTheme();
    this.palette = palette(this.themeName);
    themeVariables(this.root, this.palette);
    this.bind();
    this.load();
    this.showError();
    this.showBusy();
    this.showEmphasis();
    Object.defineProperty(this.root, "ppviz", { value: this.debugHooks(), configurable: true });
  }

  // Model ------------------------------------------------------------------------------

  private load(): void {
    const t = performance.now();
    this.loadedAt = t;
    const compact = this.compact();
    this.root.classList.toggle("ppviz-compact", compact);
    this.replay.el.hidden = compact;
    try {
      const meta = this.model.get("_meta");
      if (!meta || typeof meta.devices !== "number") {
        this.tl = this.meta = this.mem = this.overlay = null;
        fillOverlaySummary(this.overlayBox, null);
        this.plot.hidden = true;
        fillTitle(this.header, String(meta?.title ?? ""), this.headerOptions());
        this.legend.replaceChildren();
        this.showEmpty();
        return;
      }
      this.root.hidden = false;
      this.plot.hidden = false;
      this.tl = decodeTimeline(this.model.get("_timeline"));
      const memory = this.model.get("_memory");
      this.mem = memory && (memory as ArrayBufferView).byteLength ? decodeMemory(memory) : null;
      this.meta = meta;
      this.overlay = decodeOverlay(this.model.get("_overlay"), this.tl.n);
    } catch (err) {
      this.errorBox.hidden = false;
      this.errorBox.textContent = String((err as Error).message ?? err);
      return;
    }
    this.decodeMs = performance.now() - t;
    this.firstDrawMs = this.firstPaintMs = -1;
    this.view = this.modelView();
    this.opening = true;
    this.openingSpan = Infinity;
    this.rowScroll = 0;
    this.hover = -1;
    this.layout = null;
    fillHeader(this.header, this.meta, this.headerOptions());
    fillOverlaySummary(this.overlayBox, this.overlay ? this.meta : null, this.overlay?.maxEndRes ?? 0);
    this.fillLegend();
    this.canvas.setAttribute("aria-label",
      `Gantt chart of ${this.meta.title}: ${this.meta.devices} devices${this.overlay ? overlayAria(this.meta) : ""}`);
    this.replay.rescale();
    this.requestDraw();
    this.loadMs = performance.now() - t;
  }

  private showError(): void {
    const message = String(this.model.get("error") ?? "");
    this.errorBox.hidden = message === "";
    this.errorBox.textContent = message;
    // over a chart, a refusal is news about a change that was not made: the next look at the
    // chart (a zoom, a pan, the replay, a click; or a click on the banner) puts it away. A chart
    // with nothing to draw keeps it: it is what the chart says.
    this.errorBox.classList.toggle("ppviz-error-dismissable", this.tl !== null);
    this.errorBox.title = this.tl !== null ? "click to dismiss" : "";
    this.showEmpty();
  }

  /** A chart with no data, no title and no error (GanttWidget(None), set_result(None)) shows nothing. */
  private showEmpty(): void {
    const meta = this.model.get("_meta");
    this.root.hidden = this.meta === null && !String(meta?.title ?? "") && !String(this.model.get("error") ?? "");
  }

  /** Put away a refusal shown over a chart (and tell Python: error is ""). */
  private dismissError(): void {
    if (!this.tl || !this.model.get("error")) return;
    this.model.set("error", "");
    this.model.save_changes();
    this.showError();
  }

  /** The kernel is working for this chart: dim it and say what it does, until new data arrives. */
  private showBusy = (): void => {
    const message = this.text("busy");
    if (message) this.root.dataset.busy = message;
    else delete this.root.dataset.busy;
    this.busyBox.hidden = message === "";
    this.busyBox.textContent = message;
  };

  /** A new result arrives as several trait changes in one message: read them once, after the last. */
  private queueLoad = (): void => {
    if (this.loadQueued) return;
    this.loadQueued = true;
    queueMicrotask(() => {
      this.loadQueued = false;
      if (this.destroyed) return;
      this.load();
      this.showError();
      this.showEmphasis();
    });
  };

  private int(name: "selected_microbatch" | "selected_op" | "selected_device"): number {
    const v = this.model.get(name);
    return typeof v === "number" ? v : -1;
  }

  private text(name: "_run_name" | "_color" | "selected_schedule" | "error" | "busy"): string {
    const v = this.model.get(name);
    return typeof v === "string" ? v : "";
  }

  private selectedMb(): number {
    return this.int("selected_microbatch");
  }

  private compact(): boolean {
    return this.model.get("_compact") === true;
  }

  private headerOptions(): HeaderOptions {
    return { compact: this.compact(), color: this.text("_color"), run: this.text("_run_name") };
  }

  /** An op selects its microbatch and device; -1 (a click on empty space) clears both. */
  private select(op: number): void {
    this.dismissError();
    const tl = this.tl;
    const mb = tl && op >= 0 ? tl.mb[op] : -1;
    // the op first: onMicrobatch would clear an op of another microbatch
    this.model.set("selected_op", op);
    this.model.set("selected_microbatch", mb);
    this.model.set("selected_device", tl && op >= 0 ? deviceOf(tl, slotOf(tl, op)) : -1);
    this.model.save_changes();
    this.requestDraw();
  }

  private toggleDevice(d: number): void {
    this.model.set("selected_device", this.int("selected_device") === d ? -1 : d);
    this.model.save_changes();
    this.requestDraw();
  }

  private toggleRun(): void {
    const run = this.text("_run_name");
    if (!run) return;
    this.model.set("selected_schedule", this.text("selected_schedule") === run ? "" : run);
    this.model.save_changes();
  }

  /** A microbatch chosen elsewhere (another chart, Python) leaves no op of another selected. */
  private onMicrobatch = (): void => {
    const op = this.int("selected_op");
    const tl = this.tl;
    if (op >= 0 && tl && (op >= tl.n || tl.mb[op] !== this.selectedMb())) {
      this.model.set("selected_op", -1);
      this.model.save_changes();
    }
    this.requestDraw();
  };

  private showEmphasis = (): void => {
    const data = this.root.dataset;
    const run = this.text("_run_name");
    data.emphasis = emphasisOf(run, this.text("selected_schedule"));
    data.selectedDevice = String(this.int("selected_device"));
    const color = this.text("_color");
    if (color) this.root.style.setProperty("--ppviz-run", color);
    else this.root.style.removeProperty("--ppviz-run");
    const button = this.header.querySelector(".ppviz-name-button");
    button?.setAttribute("aria-pressed", String(data.emphasis === "selected"));
    this.requestDraw();
  };

  // Time window ------------------------------------------------------------------------

  /** The time axis spans [0, extent]: the makespan (the step's end, after every device's tail,
   * for a training step), or the comparison's longest one. */
  private extent(): number {
    const shared = Number(this.model.get("time_extent"));
    // an overlay's simulation may end after the measured run: its ghosts stay on the axis
    const simulated = this.overlay ? overlaySummary(this.meta)?.pipeline_time[1] ?? 0 : 0;
    return Math.max(this.meta?.makespan ?? 0, stepEnd(this.meta) ?? 0, simulated, Number.isFinite(shared) ? shared : 0);
  }

  /** The model's time window inside this chart's extent (all of it for []). */
  private modelView(): TimeView {
    const w = this.model.get("time_window");
    const extent = this.extent();
    if (Array.isArray(w) && w.length === 2 && Number(w[1]) > Number(w[0])) {
      return clampView({ t0: Number(w[0]), t1: Number(w[1]) }, extent);
    }
    return fullView(extent);
  }

  private onWindow = (): void => {
    if (this.publishing || !this.meta) return;
    this.view = this.modelView();
    this.hideTooltip();
    this.requestDraw();
  };

  /** The span a chart readable at this width opens on (opening.ts), merged with the other charts
   * of a comparison (`_opening_span`, shared through a jslink: the smallest wins, so that every
   * chart's ops carry their labels). An empty window, or the one the charts opened on, becomes the
   * new opening window; a window a user chose stays. */
  private resolveOpening(plotWidth: number): void {
    const tl = this.tl!;
    const extent = this.extent();
    this.ctx.font = `600 ${barLabelPx(rowHeightFor(tl.devices, this.compact()))}px ${FONT}`;
    const own = readableSpan(this.ctx, tl, segmentsOf(this.meta!), plotWidth);
    const shared = Number(this.model.get("_opening_span")) || 0;
    // a span of the whole axis or more says nothing: this run is readable whole
    const merged = Math.min(extent, own, shared > 0 ? shared : Infinity);
    const w = this.model.get("time_window");
    const opened = !Array.isArray(w) || w.length === 0 || (shared > 0 && w[0] === 0 && w[1] === shared);
    this.openingSpan = merged;
    const v = opened ? openingView(merged, extent) : null;
    const writes: [keyof GanttTraits, unknown][] = [];
    if (merged < extent && merged !== shared) writes.push(["_opening_span", merged]);
    if (opened) {
      this.view = v ?? fullView(extent);
      if (v || (Array.isArray(w) && w.length)) writes.push(["time_window", v ? [v.t0, v.t1] : []]);
    }
    if (!writes.length) return;
    this.publishing = true;
    try {
      for (const [name, value] of writes) this.model.set(name, value as never);
      this.model.save_changes();
    } finally {
      this.publishing = false;
    }
  }

  /** Another chart of the comparison opened on a smaller span: the strip follows (the window
   * itself arrives through time_window). */
  private onOpeningSpan = (): void => {
    if (this.publishing || !this.meta) return;
    const shared = Number(this.model.get("_opening_span")) || 0;
    if (shared > 0 && shared < this.openingSpan) {
      this.openingSpan = shared;
      this.requestDraw();
    }
  };

  /** The overview strip shows while the chart opened on part of the run. */
  private overviewShown(): boolean {
    return this.openingSpan < this.extent() * (1 - 1e-9);
  }

  // Theme ------------------------------------------------------------------------------

  private resolveTheme(): ThemeName {
    const wanted = this.model.get("theme");
    return wanted === "light" || wanted === "dark" ? wanted : hostTheme(this.el.ownerDocument);
  }

  private applyTheme = (): void => {
    const name = this.resolveTheme();
    if (name === this.themeName) return;
    this.themeName = name;
    this.palette = palette(name);
    this.hatch = null;
    themeVariables(this.root, this.palette);
    this.fillLegend();
    this.requestDraw();
  };

  /** The legend, with the transfer lanes' switch when the result has transfers. */
  private fillLegend(): void {
    const compact = this.compact();
    fillLegend(this.legend, this.tl, this.palette, compact);
    const hint = this.legend.querySelector(".ppviz-legend-hint");
    if (this.meta) {
      for (const item of [...tpLegend(this.palette, this.meta, compact), ...tailLegend(this.palette, this.meta, compact)]) {
        this.legend.insertBefore(item, hint);
      }
    }
    if (!this.tl?.transfers.count) return;
    const items = transferLegend(this.palette, this.showTransfers, compact, (on) => {
      this.showTransfers = on;
      this.hoverTransfer = -1;
      this.hideTooltip();
      this.fillLegend();
      this.requestDraw();
    }, this.tl.transfers);
    for (const item of items) this.legend.insertBefore(item, hint);
  }

  /** The transfer lanes are drawn: the result has transfers and the switch is on. */
  /** The lane's bands (Layout.laneBands): 0 when hidden or empty. */
  private laneBands(): number {
    const tr = this.tl?.transfers;
    if (!this.showTransfers || !tr || !tr.count) return 0;
    return tr.links && tr.host ? 4 : 2;
  }

  // Drawing ----------------------------------------------------------------------------

  requestDraw(): void {
    if (!this.frame && !this.destroyed) this.frame = requestAnimationFrame(this.paint);
  }

  /** Paint now; returns the ms the draw itself took (also in data-draw-ms). */
  paint = (): number => {
    this.frame = 0;
    const { tl, meta } = this;
    const width = Math.floor(this.plot.clientWidth);
    if (!tl || !meta || width <= 0) return 0;
    const began = performance.now();
    const dpr = window.devicePixelRatio || 1;
    let layout = this.layout;
    const lanes = this.laneBands();
    if (this.opening) {
      // the plot's width with the overview's name in the gutter: a run that opens on a window has one
      const gutter = gutterWidth(this.ctx, meta, tl.devices, this.mem !== null, this.compact(), true);
      const probe = computeLayout(width, tl.devices, this.mem !== null, this.compact(), gutter, lanes);
      this.opening = false;
      this.resolveOpening(probe.plotRight - probe.plotLeft);
    }
    const overview = this.overviewShown();
    if (!layout || layout.width !== width || layout.devices !== tl.devices || dpr !== this.dpr ||
        layout.laneBands !== lanes || (layout.overviewHeight > 0) !== overview) {
      const gutter = gutterWidth(this.ctx, meta, tl.devices, this.mem !== null, this.compact(), overview);
      layout = this.layout = computeLayout(width, tl.devices, this.mem !== null, this.compact(), gutter, lanes, overview);
      this.canvas.width = Math.round(layout.width * dpr);
      this.canvas.height = Math.round(layout.height * dpr);
      this.canvas.style.width = `${layout.width}px`;
      this.canvas.style.height = `${layout.height}px`;
      if (dpr !== this.dpr) this.hatch = null;
      this.dpr = dpr;
    }
    this.rowScroll = Math.min(Math.max(0, this.rowScroll), layout.scrollMax);
    const ctx = this.ctx;
    if (!this.hatch) this.hatch = makeHatch(ctx, this.palette, dpr);
    const t = performance.now();
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const stats = draw(ctx, this.scene(layout));
    const ms = performance.now() - t;
    if (this.firstDrawMs < 0) this.firstDrawMs = ms;
    const data = this.root.dataset;
    data.drawMs = ms.toFixed(2);
    data.ops = String(stats.ops);
    // the run's ops, in view or not: what a test or benchmark waits for after a new result
    data.runOps = String(tl.n);
    data.rects = String(stats.rects);
    data.labels = String(stats.labels);
    data.clipped = String(stats.clipped);
    data.memory = layout.heat ? "heat" : layout.memTop.length ? "lanes" : "none";
    data.transfers = tl.transfers.count ? (layout.laneHeight ? "shown" : "hidden") : "none";
    // the data-parallel tail parts drawn (in view), of the step's
    data.tail = String(stats.tail ?? 0);
    data.tailParts = String(tailOf(meta)?.device.length ?? 0);
    data.overview = layout.overviewHeight ? "shown" : "none";
    const [first, last] = rowsInView(layout, this.rowScroll);
    data.rows = `${first}-${last}`;
    data.draws = String(++this.draws);
    data.theme = this.themeName;
    if (this.firstPaintMs < 0) {
      this.paintedAt = performance.now();
      this.firstPaintMs = this.paintedAt - began;
    }
    return ms;
  };

  private scene(layout: Layout): Scene {
    return {
      tl: this.tl!,
      mem: this.mem,
      meta: this.meta!,
      layout,
      scale: new Scale(this.view, layout.plotLeft, layout.plotRight),
      palette: this.palette,
      dpr: this.dpr,
      hatch: this.hatch,
      selectedMb: this.selectedMb(),
      selectedOp: this.int("selected_op"),
      selectedDevice: this.int("selected_device"),
      hover: this.hover,
      hoverTransfer: this.hoverTransfer,
      hoverTail: this.hoverTail,
      memoryHover: this.memoryHover,
      cursor: this.replay.cursor,
      extent: this.extent(),
      cache: this.cache,
      overlay: this.overlay,
      scroll: this.rowScroll,
    };
  }

  private scale(): Scale | null {
    return this.layout ? new Scale(this.view, this.layout.plotLeft, this.layout.plotRight) : null;
  }

  /** Zoom or pan made here: shown, and written to time_window for Python and linked charts. */
  private setView(v: TimeView): void {
    this.dismissError();
    this.view = v;
    this.hideTooltip();
    this.requestDraw();
    this.publishing = true;
    try {
      this.model.set("time_window", isFull(v, this.extent()) ? [] : [v.t0, v.t1]);
      this.model.save_changes();
    } finally {
      this.publishing = false;
    }
  }

  /** Scroll the rows (px from the top); true when they moved. */
  private setScroll(px: number): boolean {
    const max = this.layout?.scrollMax ?? 0;
    const next = Math.min(Math.max(0, px), max);
    if (next === this.rowScroll) return false;
    this.rowScroll = next;
    this.hideTooltip();
    this.requestDraw();
    return true;
  }

  // Input ------------------------------------------------------------------------------

  private local(e: MouseEvent): { x: number; y: number } {
    const r = this.canvas.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  }

  private opAt(x: number, y: number): number {
    const scale = this.scale();
    return this.tl && this.layout && scale ? hitTest(this.tl, this.layout, scale, x, y, 3, this.rowScroll) : -1;
  }

  /** Whether canvas (x, y) is on the overview strip. */
  private onOverview(x: number, y: number): boolean {
    const L = this.layout;
    return L !== null && inOverview(L, y) && x >= L.plotLeft - 6 && x <= L.plotRight + 6;
  }

  private windowBox() {
    return windowBox(this.layout!, this.view, this.extent(), this.rowScroll);
  }

  /** A press beside the overview's window: the window centred there (in time, and on the device
   * under the pointer when the rows scroll). */
  private jumpTo(x: number, y: number): void {
    const L = this.layout!;
    const extent = this.extent();
    const span = this.view.t1 - this.view.t0;
    const t = overviewTime(L, extent, x);
    this.setView(clampView({ t0: t - span / 2, t1: t + span / 2 }, extent));
    if (L.scrollMax > 0) {
      const d = Math.min(L.devices - 1, Math.max(0, Math.floor(((y - L.overviewTop) / L.overviewHeight) * L.devices)));
      this.setScroll(L.rowTop[d] + L.rowHeight / 2 - (L.ganttTop + L.ganttBottom) / 2);
    }
  }

  /** Moving or resizing the overview's window by (dx, dy) px since the press. */
  private dragWindow(drag: NonNullable<GanttView["drag"]>, dx: number, dy: number): void {
    const L = this.layout!;
    const extent = this.extent();
    const dt = (dx / Math.max(1, L.plotRight - L.plotLeft)) * extent;
    const v = drag.view;
    const least = extent * MIN_SPAN_FRACTION;
    if (drag.grip === "left") this.setView(clampView({ t0: Math.min(v.t0 + dt, v.t1 - least), t1: v.t1 }, extent));
    else if (drag.grip === "right") this.setView(clampView({ t0: v.t0, t1: Math.max(v.t1 + dt, v.t0 + least) }, extent));
    else {
      this.setView(panBy(v, dt, extent));
      const rows = L.ganttBottom - L.ganttTop + L.scrollMax;
      if (L.scrollMax > 0) this.setScroll(drag.scroll + dy * (rows / L.overviewHeight));
    }
  }

  private listen<K extends keyof HTMLElementEventMap>(
    target: HTMLElement,
    type: K,
    fn: (e: HTMLElementEventMap[K]) => void,
    options?: AddEventListenerOptions,
  ): void {
    target.addEventListener(type, fn as EventListener, options);
    this.disposers.push(() => target.removeEventListener(type, fn as EventListener, options));
  }

  private bind(): void {
    const c = this.canvas;
    this.listen(c, "pointerdown", (e) => {
      if (e.button !== 0) return;
      const { x, y } = this.local(e);
      let grip: OverviewGrip | null = null;
      if (this.onOverview(x, y)) {
        grip = gripAt(this.windowBox(), x);
        if (grip === "jump") {
          this.jumpTo(x, y);
          grip = "move";
        }
      }
      this.drag = { x: e.clientX, y: e.clientY, view: this.view, scroll: this.rowScroll, moved: false, grip };
      c.setPointerCapture?.(e.pointerId);
      this.root.focus({ preventScroll: true });
    });
    this.listen(c, "pointermove", (e) => {
      const drag = this.drag;
      if (drag?.grip) {
        drag.moved = true;
        this.dragWindow(drag, e.clientX - drag.x, e.clientY - drag.y);
        return;
      }
      if (drag) {
        const dx = e.clientX - drag.x;
        if (drag.moved || Math.abs(dx) > DRAG_PX) {
          drag.moved = true;
          c.classList.add("ppviz-grabbing");
          const scale = this.scale();
          if (scale && this.meta) this.setView(panBy(drag.view, -dx / scale.k, this.extent()));
          return;
        }
      }
      this.hoverAt(e);
    });
    const release = (e: PointerEvent) => {
      const drag = this.drag;
      this.drag = null;
      c.classList.remove("ppviz-grabbing");
      if (c.hasPointerCapture?.(e.pointerId)) c.releasePointerCapture(e.pointerId);
      if (drag && !drag.grip && !drag.moved && e.type === "pointerup") {
        const { x, y } = this.local(e);
        const label = this.layout ? labelAt(this.layout, x, y, this.rowScroll) : -1;
        if (label >= 0) this.toggleDevice(label);
        else this.select(this.opAt(x, y));
      }
    };
    this.listen(c, "pointerup", release);
    this.listen(c, "pointercancel", release);
    this.listen(c, "pointerleave", () => {
      if (this.drag) return;
      this.hideTooltip();
      this.pointerX = null;
      if (this.hover !== -1 || this.memoryHover || this.hoverTransfer !== -1 || this.hoverTail !== -1) {
        this.hover = -1;
        this.hoverTransfer = -1;
        this.hoverTail = -1;
        this.memoryHover = null;
        this.requestDraw();
      }
    });
    this.listen(c, "wheel", (e) => this.onWheel(e), { passive: false });
    // the second press of a double-click would select the text around the chart
    this.listen(c, "mousedown", (e) => {
      if (e.detail > 1) e.preventDefault();
    });
    this.listen(c, "dblclick", (e) => {
      e.preventDefault();
      this.resetView();
    });
    this.listen(this.errorBox, "click", () => this.dismissError());
    this.listen(this.header, "click", (e) => {
      if ((e.target as Element | null)?.closest(".ppviz-name-button")) this.toggleRun();
    });
    this.listen(this.root, "keydown", (e) => this.onKey(e));

    const onData = this.queueLoad;
    const onSelection = () => this.requestDraw();
    const onError = () => this.showError();
    const handlers: [string, () => void][] = [
      ["change:_timeline", onData],
      ["change:_memory", onData],
      ["change:_overlay", onData],
      ["change:_meta", onData],
      ["change:_compact", onData],
      ["change:_color", onData],
      ["change:_run_name", onData],
      ["change:selected_microbatch", this.onMicrobatch],
      ["change:selected_op", onSelection],
      ["change:selected_device", this.showEmphasis],
      ["change:selected_schedule", this.showEmphasis],
      ["change:time_window", this.onWindow],
      ["change:time_extent", this.onWindow],
      ["change:_opening_span", this.onOpeningSpan],
      ["change:error", onError],
      ["change:busy", this.showBusy],
      ["change:theme", this.applyTheme],
    ];
    for (const [event, fn] of handlers) {
      this.model.on(event, fn);
      this.disposers.push(() => this.model.off(event, fn));
    }
    this.disposers.push(watchTheme(this.applyTheme, this.el.ownerDocument));
    if (typeof ResizeObserver === "function") {
      const ro = new ResizeObserver(() => this.requestDraw());
      ro.observe(this.plot);
      this.disposers.push(() => ro.disconnect());
    }
  }

  private hoverAt(e: PointerEvent): void {
    const { x, y } = this.local(e);
    const layout = this.layout;
    const overview = this.onOverview(x, y);
    const grip = overview ? gripAt(this.windowBox(), x) : null;
    this.canvas.classList.toggle("ppviz-resize", grip === "left" || grip === "right");
    this.canvas.classList.toggle("ppviz-grab", grip === "move");
    this.pointerX = layout && inPlot(layout, x) && !overview ? x : null;
    // a tail's band runs along the bottom of the ops it overlaps: it is hit before them
    const tail = overview || !layout || !this.meta ? -1 : tailAt(this.meta, layout, this.scale()!, x, y, 3, this.rowScroll);
    const op = overview || tail >= 0 ? -1 : this.opAt(x, y);
    this.canvas.classList.toggle("ppviz-pointing", grip === "jump" || op >= 0 || tail >= 0 ||
      (layout !== null && labelAt(layout, x, y, this.rowScroll) >= 0));
    const lane = layout && this.pointerX !== null ? laneAt(layout, y, this.rowScroll) : null;
    const memoryAt = lane?.area === "memory" && this.mem && this.meta ? this.scale()!.t(x) : null;
    const transfer = op < 0 && tail < 0 && lane?.area === "transfer" && this.tl
      ? hitTransfer(this.tl, layout!, this.scale()!, x, y, 3, this.rowScroll) : -1;
    if (op !== this.hover || memoryAt !== this.memoryHover?.t || transfer !== this.hoverTransfer ||
        tail !== this.hoverTail) {
      this.hover = op;
      this.hoverTransfer = transfer;
      this.hoverTail = tail;
      this.memoryHover = memoryAt === null ? null : { device: lane!.device, t: memoryAt };
      this.requestDraw();
    }
    const content = op >= 0 && this.tl && this.meta ? describeOp(this.tl, this.meta, op)
      : transfer >= 0 && this.tl && this.meta ? describeTransfer(this.tl, this.meta, transfer)
      : tail >= 0 && this.meta ? describeTail(this.meta, tail)
      : this.memoryHover && this.mem && this.meta ? describeMemory(this.mem, this.meta, this.memoryHover.device, this.memoryHover.t)
        : null;
    if (!content) {
      this.hideTooltip();
      return;
    }
    if (op >= 0 && this.overlay && this.tl && this.meta) content.rows.push(...overlayRows(this.tl, this.meta, this.overlay, op));
    fillTooltip(this.tooltip, content);
    this.tooltip.hidden = false;
    placeTooltip(this.tooltip, x, y, { width: this.plot.clientWidth, height: this.plot.clientHeight });
  }

  private hideTooltip(): void {
    this.tooltip.hidden = true;
  }

  /** Plain wheel scrolls the page (a hint says how to zoom); Ctrl/⌘ + wheel, and a pinch,
   * zoom around the pointer; a sideways wheel pans. */
  private onWheel(e: WheelEvent): void {
    const scale = this.scale();
    const L = this.layout;
    if (!scale || !this.meta || !L) return;
    const { x, y } = this.local(e);
    const action = wheelAction(e);
    // rows that scroll take the wheel until they reach their end, as a scrolling box does
    if (action.kind === "scroll" && L.scrollMax > 0 && inRows(L, y) && this.setScroll(this.rowScroll + action.px)) {
      e.preventDefault();
      return;
    }
    const overview = this.onOverview(x, y);
    if (!inPlot(L, x) && !overview) return;
    if (action.kind === "scroll") {
      this.showHint();
      return;
    }
    e.preventDefault();
    const extent = this.extent();
    // on the strip, the pointer's time is the strip's (the whole run), not the detail view's
    const anchor = overview ? overviewTime(L, extent, x) : scale.t(x);
    if (action.kind === "pan") this.setView(panBy(this.view, overview ? action.px * extent / (L.plotRight - L.plotLeft) : action.px / scale.k, extent));
    else this.setView(zoomAt(this.view, action.factor, Math.min(Math.max(anchor, this.view.t0), this.view.t1), extent));
  }

  /** Keys while the chart has focus: + and − zoom (around the pointer, or the middle), 0
   * resets, ← → pan, Esc clears the selection. Handled keys stop here, so that the host's
   * shortcuts (JupyterLab's "0, 0" restarts the kernel) do not see them. */
  private onKey(e: KeyboardEvent): void {
    const action = keyAction(e);
    if (!action) return;
    if (action.kind === "clear") {
      if (!this.clearSelection()) return;
    } else {
      const scale = this.scale();
      if (!scale || !this.meta || !this.layout) return;
      if (action.kind === "reset") this.resetView();
      else if (action.kind === "rows") {
        const L = this.layout;
        if (L.scrollMax <= 0) return;
        const step = action.unit === "page" ? L.ganttBottom - L.ganttTop : L.rowTop[Math.min(1, L.devices - 1)] - L.rowTop[0];
        this.setScroll(this.rowScroll + action.by * step);
      } else if (action.kind === "pan") this.setView(panBy(this.view, action.share * (this.view.t1 - this.view.t0), this.extent()));
      else {
        const x = this.pointerX ?? (this.layout.plotLeft + this.layout.plotRight) / 2;
        this.setView(zoomAt(this.view, action.factor, scale.t(x), this.extent()));
      }
    }
    e.preventDefault();
    e.stopPropagation();
  }

  /** Esc: the selection, else the run's emphasis, else the replay; false when nothing was set. */
  private clearSelection(): boolean {
    if (this.selectedMb() >= 0 || this.int("selected_device") >= 0) this.select(-1);
    else if (this.text("_run_name") && this.text("selected_schedule")) {
      this.model.set("selected_schedule", "");
      this.model.save_changes();
    } else return this.replay.clear();
    return true;
  }

  /** Back to the window the chart opened on (the whole run when it is readable whole), rows at the top. */
  private resetView(): void {
    if (!this.meta) return;
    this.setView(openingView(this.openingSpan, this.extent()) ?? fullView(this.extent()));
    this.setScroll(0);
  }

  /** A plain wheel over the chart scrolls the page; say once in a while how to zoom instead. */
  private showHint(): void {
    this.hint.textContent = `${KEY_ZOOM} + scroll to zoom · + / − keys · drag to pan`;
    this.hint.hidden = false;
    this.root.dataset.hint = "zoom";
    clearTimeout(this.hintTimer);
    this.hintTimer = window.setTimeout(() => {
      this.hint.hidden = true;
      delete this.root.dataset.hint;
    }, 1400);
  }

  // Hooks and teardown -----------------------------------------------------------------

  private debugHooks(): DebugHooks {
    return {
      opBox: (k) => {
        const tl = this.tl;
        const scale = this.scale();
        const L = this.layout;
        if (!tl || !scale || !L || k < 0 || k >= tl.n) return null;
        const slot = slotOf(tl, k);
        const r = this.canvas.getBoundingClientRect();
        const x0 = scale.x(tl.start[slot]);
        const d = deviceOf(tl, slot);
        return {
          x: r.left + x0,
          y: r.top + L.rowTop[d] + L.barInset - this.rowScroll,
          width: scale.x(endOf(tl, slot)) - x0,
          height: L.rowHeight - 2 * L.barInset,
        };
      },
      transferBox: (i, half) => {
        const tl = this.tl;
        const scale = this.scale();
        const layout = this.layout;
        if (!tl || !scale || !layout || !layout.laneHeight || i < 0 || i >= tl.transfers.count) return null;
        const b = transferBox({ tl, layout, scale }, i, half);
        const r = this.canvas.getBoundingClientRect();
        return { x: r.left + b.x, y: r.top + b.y - this.rowScroll, width: b.w, height: b.h };
      },
      tailBoxes: (i) => {
        const t = tailOf(this.meta);
        const scale = this.scale();
        const L = this.layout;
        if (!t || !scale || !L || i < 0 || i >= t.device.length) return [];
        const r = this.canvas.getBoundingClientRect();
        return tailPieces(t, i).map((piece) => {
          const b = pieceBox(L, scale, t, piece);
          return { x: r.left + b.x, y: r.top + b.y - this.rowScroll, width: b.w, height: b.h, under: piece.under };
        });
      },
      getScroll: () => this.rowScroll,
      setScroll: (px) => {
        this.setScroll(px);
      },
      geometry: () => {
        const L = this.layout;
        if (!L) return null;
        const r = this.canvas.getBoundingClientRect();
        return { rowHeight: L.rowHeight, rowLabelPx: rowLabelPx(L.rowHeight), rowsTop: r.top + L.ganttTop,
          rowsBottom: r.top + L.ganttBottom, scrollMax: L.scrollMax };
      },
      overviewWindow: () => {
        if (!this.layout?.overviewHeight) return null;
        const b = this.windowBox();
        const r = this.canvas.getBoundingClientRect();
        return { x: r.left + b.x0, y: r.top + b.y0, width: b.x1 - b.x0, height: b.y1 - b.y0 };
      },
      getView: () => ({ ...this.view }),
      setView: (t0, t1) => this.setView({ t0, t1 }),
      hit: (clientX, clientY) => {
        const r = this.canvas.getBoundingClientRect();
        return this.opAt(clientX - r.left, clientY - r.top);
      },
      timings: () => ({
        decodeMs: this.decodeMs, loadMs: this.loadMs, firstDrawMs: this.firstDrawMs, firstPaintMs: this.firstPaintMs,
        loadedAt: this.loadedAt, paintedAt: this.paintedAt,
      }),
      redraw: () => {
        cancelAnimationFrame(this.frame);
        return this.paint();
      },
    };
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    cancelAnimationFrame(this.frame);
    clearTimeout(this.hintTimer);
    this.replay.destroy();
    for (const dispose of this.disposers.splice(0)) dispose();
    this.root.remove();
  }
}
