// What a reader sees, item by item (issue 37's list): every number through the one formatter,
// alike in the cards, the gutter, the lanes and the replay; no memory lane ending in a lone
// number; an axis with its unit; a comparison's "end" label never over a bar; a pair's time in a
// comparison's header; a refusal that goes once the chart is looked at again.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { decodeMemory, decodeTimeline } from "../src/data";
import { DrawCache, type Scene, draw, makeHatch } from "../src/draw";
import { tickLabel } from "../src/format";
import { fillHeader, sizesText } from "../src/header";
import { computeLayout } from "../src/layout";
import { Scale, fullView } from "../src/scale";
import { LIGHT } from "../src/theme";
import { type DebugHooks, GanttView } from "../src/view";
import { FakeModel, encodeMemory, encodeTimeline, fillDrain, metaFor, modelFor, nextFrame } from "./fixtures";

interface Written {
  text: string;
  x: number;
  y: number;
  align: CanvasTextAlign;
}

/** Every text a draw writes on the canvas, where and how aligned. */
function writing(ctx: CanvasRenderingContext2D): Written[] {
  const out: Written[] = [];
  const fillText = ctx.fillText.bind(ctx);
  ctx.fillText = (text: string, x: number, y: number) => {
    const t = ctx.getTransform();
    out.push({ text, x: x + t.e / t.a, y: y + t.f / t.d, align: ctx.textAlign });
    fillText(text, x, y);
  };
  return out;
}

let canvas: HTMLCanvasElement;
let ctx: CanvasRenderingContext2D;
let host: HTMLDivElement;
const views: GanttView[] = [];

beforeEach(() => {
  canvas = document.createElement("canvas");
  document.body.append(canvas);
  ctx = canvas.getContext("2d")!;
  host = document.createElement("div");
  host.style.width = "1000px";
  document.body.append(host);
});
afterEach(() => {
  canvas.remove();
  for (const v of views.splice(0)) v.destroy();
  host.remove();
});

function scene(devices: number, spec: { ops: Parameters<typeof encodeTimeline>[1]; makespan: number },
  extra: Partial<Scene> = {}, compact = false): Scene {
  const layout = computeLayout(900, devices, true, compact);
  canvas.width = layout.width;
  canvas.height = layout.height;
  const tl = decodeTimeline(encodeTimeline(devices, spec.ops));
  const mem = decodeMemory(encodeMemory(Array.from({ length: devices }, () => [[0, 0], [1, 2], [spec.makespan, 0]])));
  const extent = extra.extent ?? spec.makespan;
  return {
    tl, mem, meta: metaFor(devices, spec.ops, spec.makespan), layout,
    scale: new Scale(fullView(extent), layout.plotLeft, layout.plotRight), palette: LIGHT, dpr: 1,
    hatch: makeHatch(ctx, LIGHT, 1), selectedMb: -1, selectedOp: -1, selectedDevice: -1, hover: -1,
    memoryHover: null, cursor: null, extent, cache: new DrawCache(), ...extra,
  };
}

async function mount(model: FakeModel): Promise<{ root: HTMLElement; hooks: DebugHooks }> {
  views.push(new GanttView(host, model as never));
  await nextFrame();
  await nextFrame();
  const root = host.querySelectorAll<HTMLElement>(".ppviz-gantt")[views.length - 1];
  return { root, hooks: (root as unknown as { ppviz: DebugHooks }).ppviz };
}

describe("numbers, through the one formatter", () => {
  it("say one value alike in the cards, the gutter and the replay, with its unit", async () => {
    const spec = fillDrain(2, 4);
    const model = modelFor(2, spec);
    // 3.941 peak, a 0.6 % bubble and idle share, a 50 ms run: as the issue saw them
    const meta = metaFor(2, spec.ops, 50, { time_unit: "ms", makespan: 50, bubble_fraction: 0.006, idle: [0.3, 0.3],
      peak_activation: [3.941, 2], peak_memory: [3.941, 2] });
    model.set("_meta", meta);
    const { root } = await mount(model);
    const values = [...root.querySelectorAll(".ppviz-metric-value")].map((e) => e.textContent);
    expect(values).toEqual(["50 ms", "0.6 %", "3.94"]);
    const scrub = root.querySelector<HTMLInputElement>(".ppviz-scrub")!;
    scrub.value = "262";
    scrub.dispatchEvent(new Event("input"));
    expect(root.querySelector(".ppviz-time")!.textContent).toBe("t = 13.1 ms of 50 ms");
  });

  it("give the gutter's idle share and a lane's peak as the cards do", () => {
    const spec = fillDrain(2, 4);
    const s = scene(2, spec);
    s.meta = { ...s.meta, idle: [0.006 * spec.makespan, 0.5 * spec.makespan], peak_activation: [3.941, 2] };
    const texts = writing(ctx);
    draw(ctx, s);
    const all = texts.map((t) => t.text);
    expect(all).toContain(" 0.6 % idle");
    expect(all).toContain(" 50 % idle");
    expect(all.some((t) => t.endsWith("peak 3.94"))).toBe(true);
  });

  it("label axis ticks with the digits their step needs", () => {
    expect(tickLabel(12.345, 0.001)).toBe("12.345");
    expect(tickLabel(1500, 500)).toBe("1,500");
    expect(tickLabel(0.5, 0.5)).toBe("0.5");
    expect(tickLabel(120, 20)).toBe("120");
    expect(tickLabel(0, 20)).toBe("0");
  });

  it("end no memory lane in a lone number, and give the axis its unit", () => {
    const spec = fillDrain(4, 8);
    const s = scene(4, spec);
    s.meta = { ...s.meta, time_unit: "ms" };
    const texts = writing(ctx);
    draw(ctx, s);
    const L = s.layout;
    const inLanes = texts.filter((t) => t.x > L.plotLeft && t.y > L.memTop[0] - 2 && t.y < L.memBottom);
    for (const t of inLanes) expect(t.text).toMatch(/[a-z]/i);
    expect(texts.map((t) => t.text)).toContain("time (ms)");
    // the section's note says where the gridlines are, with the unit the lanes are in
    expect(texts.some((t) => t.text.startsWith("one scale on every lane, a gridline every "))).toBe(true);
  });
});

describe("a comparison's chart", () => {
  it("writes where its run ends beside the line, never over a bar", () => {
    const spec = fillDrain(3, 4);
    for (const extent of [2 * spec.makespan, spec.makespan * 1.01]) {
      const s = scene(3, spec, { extent }, true);
      const texts = writing(ctx);
      draw(ctx, s);
      const end = texts.find((t) => t.text.startsWith("end "))!;
      expect(end.text).toBe(`end ${spec.makespan}`);
      ctx.font = "600 11px sans-serif";
      const w = ctx.measureText(end.text).width;
      for (const o of spec.ops) {
        const x0 = s.scale.x(o.start);
        const x1 = s.scale.x(o.start + o.dur);
        const top = s.layout.rowTop[o.device];
        const apart = end.x + w < x0 || end.x > x1 || end.y + 8 < top || end.y - 8 > top + s.layout.rowHeight;
        expect(apart).toBe(true);
      }
    }
  });

  it("gives the time of an F&B pair in its one-line header, the other costs being the comparison's", () => {
    const spec = fillDrain(2, 2);
    const meta = metaFor(2, spec.ops, spec.makespan, { fb: 3 });
    expect(sizesText(meta, true)).toContain("fb=3");
    expect(sizesText({ ...meta, fb: null }, true)).not.toContain("f=");
    const header = document.createElement("div");
    fillHeader(header, meta, { compact: true, color: "", run: "dualpipe" });
    expect(header.textContent).toContain("fb=3");
  });
});

describe("a refusal over a chart", () => {
  it("stays until the chart is looked at again: a zoom, the replay, a click on it", async () => {
    const model = modelFor(3, fillDrain(3, 4));
    const { root, hooks } = await mount(model);
    const banner = root.querySelector<HTMLElement>(".ppviz-error")!;
    const refuse = () => model.set("error", "devices=1000: the widget draws at most 1024 …");
    refuse();
    expect(banner.hidden).toBe(false);
    root.dispatchEvent(new KeyboardEvent("keydown", { key: "+", bubbles: true }));
    expect(banner.hidden).toBe(true);
    expect(model.state.error).toBe("");
    refuse();
    root.querySelector<HTMLButtonElement>(".ppviz-play")!.click();
    await nextFrame();
    expect(banner.hidden).toBe(true);
    refuse();
    banner.click();
    expect(banner.hidden).toBe(true);
    hooks.setView(1, 3);
    expect(model.state.error).toBe("");
  });

  it("stays on a chart with nothing else to say", async () => {
    const model = new FakeModel({ _meta: { title: "dualpipe-v" }, error: "m=4: needs at least 8", _compact: true });
    const { root } = await mount(model);
    const banner = root.querySelector<HTMLElement>(".ppviz-error")!;
    banner.click();
    root.dispatchEvent(new KeyboardEvent("keydown", { key: "+", bubbles: true }));
    expect(banner.hidden).toBe(false);
    expect(model.state.error).toBe("m=4: needs at least 8");
  });
});
