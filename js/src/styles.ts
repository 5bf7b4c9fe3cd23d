// The widget's CSS, scoped by class names and themed through custom properties set per palette.

import style from "../../ppviz/style.json";
import type { Palette } from "./theme";

// font sizes by role, from style.json
const px = style.font.px;

export const CSS = `
.ppviz-gantt {
  position: relative; box-sizing: border-box; width: 100%; padding: 14px 16px 12px;
  background: var(--ppviz-bg); color: var(--ppviz-fg); border: 1px solid var(--ppviz-border);
  border-radius: 10px; outline: none;
  font: ${style.font.size}px/${style.font.lineHeight} ${style.font.family};
  font-variant-numeric: tabular-nums; -webkit-font-smoothing: antialiased;
}
.ppviz-gantt:focus-visible { box-shadow: 0 0 0 2px var(--ppviz-accent); }
.ppviz-gantt * { box-sizing: border-box; }
.ppviz-header { display: flex; flex-wrap: wrap; align-items: flex-end; justify-content: space-between; gap: 8px 24px; }
.ppviz-title { display: flex; flex-direction: column; min-width: 0; }
.ppviz-name { font-size: ${px.title}px; font-weight: 650; letter-spacing: -0.01em; overflow-wrap: anywhere; }
.ppviz-sizes { color: var(--ppviz-muted); font-size: ${px.text}px; }
.ppviz-metrics { display: flex; flex-wrap: wrap; gap: 8px; }
.ppviz-metric {
  display: grid; grid-template-columns: auto; padding: 5px 11px 6px; border-radius: 8px;
  background: var(--ppviz-surface); border: 1px solid var(--ppviz-border); min-width: 104px; cursor: help;
}
.ppviz-metric-label { font-size: ${px.caption}px; text-transform: uppercase; letter-spacing: 0.06em; color: var(--ppviz-muted); }
.ppviz-metric-value { font-size: ${px.metric}px; font-weight: 650; line-height: 1.25; }
.ppviz-metric-closed { font-size: ${px.label}px; color: var(--ppviz-muted); }
.ppviz-footnote { flex-basis: 100%; font-size: ${px.caption}px; color: var(--ppviz-muted); }
.ppviz-metric-over { border-color: var(--ppviz-oom); }
.ppviz-metric-over .ppviz-metric-value { color: var(--ppviz-oom); }
.ppviz-fit {
  align-self: flex-start; margin-top: 6px; padding: 2px 10px; border-radius: 999px; font-size: ${px.text}px;
  font-weight: 600; cursor: help; border: 1px solid var(--ppviz-border);
}
.ppviz-fit-over { color: var(--ppviz-oom); background: var(--ppviz-error-bg); border-color: var(--ppviz-oom); }
.ppviz-fit-ok { color: var(--ppviz-muted); background: var(--ppviz-surface); }
.ppviz-legend { display: flex; flex-wrap: wrap; align-items: center; gap: 4px 16px; margin: 10px 0 4px; font-size: ${px.text}px; }
.ppviz-legend-item { display: inline-flex; align-items: center; gap: 6px; }
.ppviz-swatch { width: 14px; height: 10px; border-radius: 2.5px; display: inline-block; }
.ppviz-swatch-idle {
  background: repeating-linear-gradient(135deg, var(--ppviz-hatch) 0 1.5px, var(--ppviz-idle) 1.5px 4.5px);
  border: 1px solid var(--ppviz-border);
}
.ppviz-legend-hint { color: var(--ppviz-muted); font-size: ${px.label}px; margin-left: auto; }
.ppviz-legend-direction { color: var(--ppviz-fg); font-weight: 600; }
.ppviz-legend-direction .ppviz-swatch { height: 12px; }
.ppviz-legend-direction .ppviz-swatch.ppviz-dir {
  width: 26px; height: 16px; display: inline-flex; align-items: center; justify-content: center;
  font-size: ${px.xs}px; line-height: 1;
}
.ppviz-dir-down { box-shadow: inset 0 4px 0 var(--ppviz-band); padding-top: 3px; }
.ppviz-dir-up { box-shadow: inset 0 -4px 0 var(--ppviz-band); padding-bottom: 3px; }
.ppviz-chunk-1 { background-image: repeating-linear-gradient(135deg, var(--ppviz-chunk-ink) 0 1.3px, transparent 1.3px 4.2px); }
.ppviz-chunk-2 { background-image: repeating-linear-gradient(45deg, var(--ppviz-chunk-ink) 0 1.3px, transparent 1.3px 4.2px); }
.ppviz-chunk-3 {
  background-image: repeating-linear-gradient(135deg, var(--ppviz-chunk-ink) 0 1.3px, transparent 1.3px 4.2px),
    repeating-linear-gradient(45deg, var(--ppviz-chunk-ink) 0 1.3px, transparent 1.3px 4.2px);
}
.ppviz-swatch-tp { background-image: linear-gradient(var(--ppviz-tp), var(--ppviz-tp)); background-size: 45% 40%; background-repeat: no-repeat; }
.ppviz-tail-reduce { background-image: repeating-linear-gradient(45deg, color-mix(in srgb, currentColor 45%, transparent) 0 1.25px, transparent 1.25px 5px); }
.ppviz-tail-gather { background-image: radial-gradient(color-mix(in srgb, currentColor 45%, transparent) 0 1.1px, transparent 1.3px); background-size: 5px 5px; }
.ppviz-chunk-4 { background-image: radial-gradient(var(--ppviz-chunk-ink) 0 1px, transparent 1.2px); background-size: 4px 4px; }
.ppviz-busy {
  position: absolute; left: 50%; top: 40px; transform: translateX(-50%); z-index: 3; pointer-events: none;
  display: flex; align-items: center; gap: 9px; padding: 7px 14px; border-radius: 999px; font-size: ${px.notice}px;
  background: var(--ppviz-tip-bg); color: var(--ppviz-fg); border: 1px solid var(--ppviz-border);
  box-shadow: 0 4px 18px ${style.widget.shadow};
}
.ppviz-busy::before {
  content: ""; width: 12px; height: 12px; border-radius: 50%; border: 2px solid var(--ppviz-border);
  border-top-color: var(--ppviz-accent); animation: ppviz-spin 0.8s linear infinite;
}
@keyframes ppviz-spin { to { transform: rotate(360deg); } }
.ppviz-busy[hidden], .ppviz-hint[hidden] { display: none; }
.ppviz-gantt[data-busy] .ppviz-plot canvas, .ppviz-gantt[data-busy] .ppviz-metrics { opacity: 0.35; transition: opacity 0.12s; }
.ppviz-gantt[data-busy] { cursor: progress; }
.ppviz-hint {
  position: absolute; right: 24px; top: 6px; z-index: 3; pointer-events: none; padding: 4px 10px; border-radius: 7px;
  font-size: ${px.text}px; background: var(--ppviz-tip-bg); color: var(--ppviz-fg); border: 1px solid var(--ppviz-border);
  box-shadow: 0 4px 18px ${style.widget.shadow};
}
.ppviz-error {
  margin: 8px 0 2px; padding: 7px 10px; border-radius: 7px; font-size: ${px.notice}px; white-space: pre-wrap;
  color: var(--ppviz-error); background: var(--ppviz-error-bg); border: 1px solid var(--ppviz-error);
}
.ppviz-error[hidden] { display: none; }
.ppviz-error-dismissable { cursor: pointer; }
.ppviz-plot { position: relative; width: 100%; overflow: hidden; touch-action: none; }
.ppviz-plot canvas { display: block; cursor: crosshair; user-select: none; -webkit-user-select: none; }
.ppviz-plot canvas.ppviz-grabbing { cursor: grabbing; }
.ppviz-plot canvas.ppviz-pointing { cursor: pointer; }
.ppviz-plot canvas.ppviz-grab { cursor: grab; }
.ppviz-plot canvas.ppviz-resize { cursor: ew-resize; }
.ppviz-tooltip {
  position: absolute; left: 0; top: 0; z-index: 2; pointer-events: none; max-width: 340px;
  padding: 8px 10px; border-radius: 8px; font-size: ${px.text}px; line-height: 1.45;
  background: var(--ppviz-tip-bg); color: var(--ppviz-tip-fg); border: 1px solid var(--ppviz-border);
  box-shadow: 0 6px 24px ${style.widget.shadow};
}
.ppviz-tooltip[hidden] { display: none; }
.ppviz-tooltip-title { font-weight: 650; margin-bottom: 4px; }
.ppviz-tooltip-grid { display: grid; grid-template-columns: auto 1fr; gap: 1px 12px; }
.ppviz-tooltip-key { color: var(--ppviz-muted); }
.ppviz-player { display: flex; align-items: center; gap: 10px; margin-top: 6px; font-size: ${px.text}px; color: var(--ppviz-muted); }
.ppviz-play {
  width: 30px; height: 26px; border-radius: 7px; border: 1px solid var(--ppviz-border); cursor: pointer;
  background: var(--ppviz-surface); color: var(--ppviz-fg); font-size: ${px.text}px; line-height: 1; padding: 0;
}
.ppviz-play:hover { border-color: var(--ppviz-accent); }
.ppviz-scrub { flex: 1; accent-color: var(--ppviz-accent); min-width: 80px; }
.ppviz-time { min-width: 9em; text-align: right; }
.ppviz-gantt[hidden], .ppviz-player[hidden], .ppviz-plot[hidden] { display: none; }
.ppviz-name-button {
  display: inline-flex; align-items: center; gap: 7px; margin: 0; padding: 1px 6px 1px 0; border: 0; border-radius: 6px;
  background: none; color: inherit; font: inherit; font-size: ${px.title}px; font-weight: 650; cursor: pointer; text-align: left;
}
.ppviz-name-button:hover { text-decoration: underline; text-underline-offset: 3px; }
.ppviz-name-button:focus-visible { outline: 2px solid var(--ppviz-accent); }
.ppviz-run-swatch { width: 11px; height: 11px; border-radius: 3px; flex: none; background: var(--ppviz-run); }
.ppviz-gantt { transition: opacity 0.15s, box-shadow 0.15s; }
.ppviz-gantt[data-emphasis="dimmed"] { opacity: 0.42; }
.ppviz-gantt[data-emphasis="selected"] { box-shadow: 0 0 0 2px var(--ppviz-run, var(--ppviz-accent)); }
.ppviz-compact {
  display: grid; grid-template-columns: minmax(0, 1fr) auto; align-items: center; column-gap: 18px;
  padding: 6px 12px 2px 12px; border-left: 4px solid var(--ppviz-run, var(--ppviz-border));
}
.ppviz-compact .ppviz-header { grid-column: 1; flex-wrap: wrap; align-items: baseline; justify-content: flex-start; gap: 2px 22px; min-width: 0; }
.ppviz-compact .ppviz-legend { grid-column: 2; margin: 0; gap: 4px 10px; font-size: ${px.label}px; color: var(--ppviz-muted); }
.ppviz-compact .ppviz-error, .ppviz-compact .ppviz-plot { grid-column: 1 / -1; }
.ppviz-compact .ppviz-error { margin: 4px 0 6px; }
.ppviz-compact .ppviz-plot { margin-top: 3px; }
.ppviz-compact .ppviz-title { flex-direction: row; align-items: baseline; gap: 10px; white-space: nowrap; }
.ppviz-compact .ppviz-name, .ppviz-compact .ppviz-name-button { font-size: ${px.compactTitle}px; }
/* a narrow output wraps the metrics rather than cutting them */
.ppviz-compact .ppviz-metrics { flex-wrap: wrap; gap: 2px 18px; white-space: nowrap; }
.ppviz-compact .ppviz-metric {
  display: inline-flex; align-items: baseline; gap: 5px; padding: 0; border: 0; background: none; min-width: 0;
}
.ppviz-compact .ppviz-metric-label { font-size: ${px.xs}px; }
.ppviz-compact .ppviz-metric-value { font-size: ${px.body}px; line-height: 1.3; }
.ppviz-compact .ppviz-metric-closed { font-size: ${px.label}px; }
.ppviz-compact .ppviz-fit { margin-top: 0; padding: 0 8px; font-size: ${px.label}px; }
.ppviz-compact .ppviz-swatch { width: 11px; height: 9px; }
/* ppviz.compare's container, hint and chart card are ipywidgets with no front end of ours:
   this sheet, which comes with each of its Gantt charts, styles them */
.ppviz-compare { gap: 10px; }
.ppviz-compare-hint { color: var(--jp-ui-font-color2, ${style.themes.light.muted}); font-size: ${px.text}px; }
.ppviz-compare-hint b { color: var(--jp-ui-font-color1, inherit); font-weight: 600; }
.ppviz-compare-gantts { gap: 6px; }
.ppviz-compare-charts {
  align-self: flex-start; box-sizing: border-box; max-width: 100%; overflow: hidden; border-radius: 10px;
  border: 1px solid var(--jp-border-color2, ${style.widget.hairline});
}
/* wider than the output, the charts shrink to fit (the SVG keeps its viewBox) rather than
   being cut off or scrolled; clicks pick marks through the DOM, so they still land. The
   widget's element is vega-embed's container itself. */
.ppviz-compare-charts svg { display: block; max-width: 100%; height: auto; }
`;

export function themeVariables(root: HTMLElement, P: Palette): void {
  const vars: Record<string, string> = {
    "--ppviz-bg": P.background,
    "--ppviz-surface": P.surface,
    "--ppviz-fg": P.foreground,
    "--ppviz-muted": P.muted,
    "--ppviz-border": P.border,
    "--ppviz-accent": P.kinds[0],
    "--ppviz-hatch": P.hatch,
    "--ppviz-idle": P.laneIdle,
    "--ppviz-error": P.error,
    "--ppviz-error-bg": P.errorBg,
    "--ppviz-oom": P.oom,
    "--ppviz-tip-bg": style.themes[P.name].tooltip,
    "--ppviz-tip-fg": P.foreground,
    "--ppviz-chunk-ink": style.ink.light,
  };
  for (const [k, v] of Object.entries(vars)) root.style.setProperty(k, v);
  root.style.colorScheme = P.name;
}
