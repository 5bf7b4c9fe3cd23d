// anywidget entry point: one GanttView per rendered output, torn down with the output.

import type { RenderProps } from "@anywidget/types";
import { GanttView } from "./view";

export default {
  render({ model, el, signal }: RenderProps) {
    const view = new GanttView(el, model);
    const cleanup = () => view.destroy();
    // anywidget >= 0.11 aborts the signal; older versions call the returned cleanup
    signal?.addEventListener("abort", cleanup, { once: true });
    return cleanup;
  },
};
