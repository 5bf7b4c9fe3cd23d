// anywidget entry point: one GanttView per rendered output, torn down with the output. The
// same bundle is the front end of ppviz.compare's CompareState, which has no view.

import type { InitializeProps, RenderProps } from "@anywidget/types";
import { isCompareState, linkCompareState } from "./state";
import type { CompareStateModel, GanttModel } from "./traits";
import { GanttView } from "./view";

export default {
  initialize({ model, signal }: InitializeProps) {
    if (!isCompareState(model)) return;
    const cleanup = linkCompareState(model as unknown as CompareStateModel);
    signal?.addEventListener("abort", cleanup, { once: true });
    return cleanup;
  },
  render({ model, el, signal }: RenderProps) {
    if (isCompareState(model)) return;
    const view = new GanttView(el, model as unknown as GanttModel);
    const cleanup = () => view.destroy();
    // anywidget >= 0.11 aborts the signal; older versions call the returned cleanup
    signal?.addEventListener("abort", cleanup, { once: true });
    return cleanup;
  },
};
