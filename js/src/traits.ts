// The synced traits, one description per Python model: the only place the front end learns
// their names and types. tests/test_architecture.py checks these keys against the Python traitlets.

import type { Meta } from "./meta";

export type ThemeSetting = "auto" | "light" | "dark";

/** ppviz.widgets.GanttWidget (ppviz/widgets/gantt.py). */
export interface GanttTraits {
  // public: what users observe and set from Python
  error: string;
  /** "" or what the kernel is doing for this chart ("simulating 1,000,000 ops…"): the chart dims and says so */
  busy: string;
  selected_microbatch: number;
  selected_op: number;
  selected_device: number;
  selected_schedule: string;
  theme: ThemeSetting;
  time_extent: number;
  /** [t0, t1], or [] for the whole time axis */
  time_window: number[];
  // private: the wire, and what a comparison sets up
  /** the timeline in the wire format (ARCHITECTURE.md, "Wire format"; decoded by data.ts) */
  _timeline: DataView;
  /** the memory curves in the wire format */
  _memory: DataView;
  /** empty, or a measured run's simulation and residuals per op (overlay.ts; ppviz/widgets/overlay.py) */
  _overlay: DataView;
  _meta: Meta;
  _compact: boolean;
  _run_name: string;
  _color: string;
  /** the span a dense run opens on (opening.ts), 0 until a chart has chosen it; a comparison's
   * charts share it, the smallest winning */
  _opening_span: number;
}

/** ppviz.widgets.comparison.CompareState: never displayed, it links a comparison's views. */
export interface CompareStateTraits {
  _ppviz_role: "compare-state";
  selected_schedule: string;
  selected_device: number;
  selected_microbatch: number;
  time_window: number[];
  theme: ThemeSetting;
  _opening_span: number;
  _chart_selections: Record<string, unknown>;
  _chart_params: Record<string, unknown>;
}

/** The part of anywidget's model (``AnyModel<T>``) the front end uses, typed by trait name; the
 * standalone page and the tests provide just this. */
export interface TraitModel<T> {
  get<K extends keyof T>(key: K): T[K];
  set<K extends keyof T>(key: K, value: T[K]): void;
  save_changes(): void;
  on(event: string, callback: () => void): void;
  off(event?: string | null, callback?: (() => void) | null): void;
}

export type GanttModel = TraitModel<GanttTraits>;
export type CompareStateModel = TraitModel<CompareStateTraits>;
