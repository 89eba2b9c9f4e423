// CaptureView's page: the header with the site filter, the first-NaN/Inf
// flag, the table, and the details (statistics, histogram, heatmap), empty;
// the drawing functions fill them.

import { h, siteFilter } from "./common.js";
import { Tooltip } from "./draw.js";
import { tableLayout } from "./capture_table.js";

function captureLayout() {
  const root = h("div", "jcnb-root jcnb-themed");
  const tooltip = new Tooltip(root);

  // -- Table ---------------------------------------------------------------
  const header = h("div", "jcnb-header");
  const title = h("span", "jcnb-title");
  const filter = siteFilter("jcnb-filter");
  header.append(title, filter);
  const flag = /** @type {HTMLButtonElement} */ (h("button", "jcnb-flag"));
  flag.type = "button";
  const table = tableLayout();

  // -- Details -------------------------------------------------------------
  const detail = h("div", "jcnb-detail");
  const hint = h("div", "jcnb-hint", "Select a row to see its histogram and a slice of its values.");
  const body = h("div", "jcnb-detail-body");
  const detailTitle = h("div", "jcnb-detail-title");
  const statsLine = h("div", "jcnb-stats-line");

  const histPanel = h("div", "jcnb-hist-box");
  const logLabel = h("label", "jcnb-log");
  const logBox = /** @type {HTMLInputElement} */ (h("input"));
  logBox.type = "checkbox";
  logLabel.append(logBox, document.createTextNode(" log count scale"));
  const histCanvas = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-hist"));
  const histKey = h("div", "jcnb-key jcnb-nonfinite-key");
  const histEmpty = h("div", "jcnb-empty-values");
  histPanel.append(logLabel, histCanvas, histKey, histEmpty);

  const heatPanel = h("div", "jcnb-heat-box");
  const heatControls = h("div", "jcnb-heat-controls");
  const indexMessage = h("span", "jcnb-index-message");
  indexMessage.setAttribute("role", "alert");
  const divergingLabel = h("label", "jcnb-diverging");
  const divergingBox = /** @type {HTMLInputElement} */ (h("input"));
  divergingBox.type = "checkbox";
  divergingLabel.append(divergingBox, document.createTextNode(" centre colours at 0 (diverging)"));
  divergingLabel.title = "blue below zero, red above, white at zero; otherwise a sequential scale over the values' range";
  const heatStatus = h("div", "jcnb-heat-status");
  const spinner = h("span", "jcnb-spinner");
  spinner.setAttribute("aria-label", "fetching the slice from the kernel");
  const axesLine = h("div", "jcnb-heat-axes");
  const figure = h("div", "jcnb-heat-figure");
  const heatCanvas = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-heat"));
  const barCanvas = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-colour-bar"));
  figure.append(heatCanvas, barCanvas);
  const heatKey = h("div", "jcnb-key jcnb-heat-key");
  const heatNote = h("div", "jcnb-heat-note");
  heatPanel.append(heatControls, divergingLabel, heatStatus, axesLine, figure, heatKey, heatNote);
  body.append(detailTitle, statsLine, histPanel, heatPanel);
  detail.append(hint, body);
  root.append(header, flag, table.scroller, detail);

  return {
    root, tooltip, title, filter, flag, table,
    detail, hint, body, detailTitle, statsLine,
    logLabel, logBox, histCanvas, histKey, histEmpty,
    heatControls, indexMessage, divergingLabel, divergingBox, heatStatus, spinner, axesLine, figure, heatCanvas, barCanvas, heatKey, heatNote,
  };
}

/**
 * Shows the heatmap as waiting for the kernel (a spinner, the old picture
 * faded) or as answered.
 * @param {ReturnType<typeof captureLayout>} ui @param {boolean} loading
 */
function showLoading(ui, loading) {
  ui.root.dataset.heatmap = loading ? "loading" : "ready";
  ui.figure.classList.toggle("jcnb-stale", loading);
  ui.heatStatus.replaceChildren();
  if (loading) ui.heatStatus.append(ui.spinner, document.createTextNode(" fetching the slice from the kernel\u2026"));
}

export { captureLayout, showLoading };
