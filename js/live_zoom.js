// TensorBoard's zoom over LiveView's charts over steps: a drag across one
// zooms every such chart to those steps; a double click on one, or the
// header's button, zooms out. The drag's own state lives in a Zoom; the
// functions that change the view's LiveState say so, and the caller draws.

import { h } from "./common.js";
import { STEP_AT } from "./live_histograms.js";
/** @typedef {import("./live_state.js").LiveState} LiveState */

/**
 * A drag under way (null when none), whether one just ended (the click that
 * ends it selects no card), and the box drawn over the dragged steps.
 * @typedef {{drag: {canvas: HTMLCanvasElement, from: number, to: number} | null, dragged: boolean, box: HTMLElement}} Zoom
 */

/** No drag yet; its box goes into the view's root. @param {{root: HTMLElement}} ui @returns {Zoom} */
function zoomOf(ui) {
  const box = h("div", "jcnb-live-zoom-box");
  box.hidden = true;
  ui.root.append(box);
  return { drag: null, dragged: false, box };
}

/** @param {HTMLCanvasElement} canvas @param {PointerEvent} event */
function clientX(canvas, event) {
  return event.clientX - canvas.getBoundingClientRect().left;
}

/** A press on a chart over steps starts a drag. @param {Zoom} zoom @param {PointerEvent} event */
function startZoom(zoom, event) {
  const canvas = event.target;
  if (event.button !== 0 || !(canvas instanceof HTMLCanvasElement) || !STEP_AT.has(canvas)) return;
  const at = clientX(canvas, event);
  zoom.drag = { canvas, from: at, to: at };
  zoom.dragged = false;
}

/** The box follows the pointer over the steps dragged across. @param {Zoom} zoom @param {{root: HTMLElement}} ui @param {PointerEvent} event */
function dragZoom(zoom, ui, event) {
  const { drag } = zoom;
  if (!drag) return;
  drag.to = clientX(drag.canvas, event);
  if (Math.abs(drag.to - drag.from) < 4) return;
  const box = drag.canvas.getBoundingClientRect();
  const root = ui.root.getBoundingClientRect();
  Object.assign(zoom.box.style, {
    left: `${box.left - root.left + Math.min(drag.from, drag.to)}px`,
    top: `${box.top - root.top}px`,
    width: `${Math.abs(drag.to - drag.from)}px`,
    height: `${box.height}px`,
  });
  zoom.box.hidden = false;
}

/** Ends a drag: zooms to its steps, or, short, to nothing. Returns whether the state changed. @param {Zoom} zoom @param {LiveState} state */
function endZoom(zoom, state) {
  const { drag } = zoom;
  if (!drag) return false;
  const { canvas, from, to } = drag;
  zoom.drag = null;
  zoom.box.hidden = true;
  if (Math.abs(to - from) < 4) return false;
  const stepAt = /** @type {(px: number) => number} */ (STEP_AT.get(canvas));
  zoom.dragged = true;
  state.stepRange = [stepAt(Math.min(from, to)), stepAt(Math.max(from, to))];
  state.pinnedStep = null;
  return true;
}

/** Shows every step again. Returns whether the state changed. @param {LiveState} state */
function zoomOut(state) {
  if (!state.stepRange) return false;
  state.stepRange = null;
  return true;
}

/** A double click on a chart over steps zooms out. @param {LiveState} state @param {MouseEvent} event */
function zoomOutAt(state, event) {
  return event.target instanceof HTMLCanvasElement && STEP_AT.has(event.target) && zoomOut(state);
}

export { zoomOf, startZoom, dragZoom, endZoom, zoomOut, zoomOutAt };
