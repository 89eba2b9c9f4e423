// LiveView's page: the elements it is made of (header, scalar tools and
// cards, the histogram tools and site cards, the one-step detail), and the
// header's progress line and first-NaN/Inf flag.

/**
 * Builds the view's elements, empty; the drawing functions fill them.
 * @param {Map<HTMLCanvasElement, (x: number, y: number) => string | null>} readOuts what the pointer reads over each canvas
 */
function liveLayout(readOuts) {
  const root = h("div", "jcnb-live jcnb-themed");
  const tooltip = new Tooltip(root);

  // Header: progress, the first NaN/Inf, the site filter.
  const head = h("div", "jcnb-live-head");
  const progress = h("span", "jcnb-live-progress");
  const flag = h("button", "jcnb-live-flag");
  flag.hidden = true;
  const filter = siteFilter("jcnb-live-filter");
  head.append(progress, flag, filter);
  const waiting = h("div", "jcnb-hint jcnb-live-waiting");
  waiting.hidden = true;

  // Scalars: smoothing and log scale for all of them, then one card each.
  const scalarSection = h("div", "jcnb-live-scalar-section");
  const scalarTools = h("div", "jcnb-live-tools");
  const smoothing = /** @type {HTMLInputElement} */ (h("input", "jcnb-live-smoothing"));
  Object.assign(smoothing, { type: "range", min: "0", max: "0.99", step: "0.01", value: String(DEFAULT_SMOOTHING) });
  smoothing.setAttribute("aria-label", "smoothing");
  const smoothingText = h("span", "jcnb-live-smoothing-value");
  const scalarLog = /** @type {HTMLInputElement} */ (h("input", "jcnb-live-scalar-log"));
  scalarLog.type = "checkbox";
  const smoothingLabel = h("label", "jcnb-live-tool", "smoothing ");
  smoothingLabel.append(smoothing, smoothingText);
  const scalarLogLabel = h("label", "jcnb-live-tool");
  scalarLogLabel.append(scalarLog, document.createTextNode(" log scale"));
  scalarTools.append(smoothingLabel, scalarLogLabel);
  const scalarsBox = h("div", "jcnb-live-scalars");
  scalarSection.append(scalarTools, scalarsBox);
  scalarSection.hidden = true;

  // Sites: the view switch, the count scale and the key, then the cards.
  const gridTools = h("div", "jcnb-live-tools jcnb-live-grid-tools");
  const viewSwitch = h("span", "jcnb-live-views");
  viewSwitch.setAttribute("role", "group");
  viewSwitch.setAttribute("aria-label", "histogram view");
  for (const name of VIEWS) {
    const button = h("button", "jcnb-live-view-button", name);
    button.dataset.view = name;
    viewSwitch.append(button);
  }
  const countLog = /** @type {HTMLInputElement} */ (h("input", "jcnb-live-count-log"));
  countLog.type = "checkbox";
  const countLogLabel = h("label", "jcnb-live-tool");
  countLogLabel.append(countLog, document.createTextNode(" log counts"));
  gridTools.append(h("span", "jcnb-muted", "histograms"), viewSwitch, countLogLabel);
  const key = h("div", "jcnb-key jcnb-live-key");
  const grid = h("div", "jcnb-live-grid");
  const gridSection = h("div", "jcnb-live-grid-section");
  gridSection.append(gridTools, key, grid);
  gridSection.hidden = true;

  // One step of the selected site: a slider, a step box and its histogram.
  const detail = h("div", "jcnb-live-detail");
  detail.tabIndex = 0;
  detail.setAttribute("aria-label", "one step's histogram: Left and Right move a step, Home and End go to the first and last");
  detail.hidden = true;
  const detailTitle = h("div", "jcnb-live-title jcnb-live-detail-title");
  const stepRow = h("div", "jcnb-live-step-row");
  const range = /** @type {HTMLInputElement} */ (h("input", "jcnb-live-slider"));
  range.type = "range";
  range.min = "0";
  range.setAttribute("aria-label", "recorded step");
  const stepInput = /** @type {HTMLInputElement} */ (h("input", "jcnb-live-step-input"));
  stepInput.type = "number";
  stepInput.setAttribute("aria-label", "go to step");
  const stepNote = h("span", "jcnb-muted jcnb-live-step-note");
  stepRow.append(range, h("span", "jcnb-muted", "step"), stepInput, stepNote);
  const stepCanvas = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-live-step"));
  const numbers = h("div", "jcnb-live-numbers");
  detail.append(detailTitle, stepRow, stepCanvas, numbers);

  root.append(head, waiting, scalarSection, gridSection, detail);

  /** A canvas that shows what `readOuts` holds for it under the pointer. @param {string} cls */
  const hover = (cls) => {
    const canvas = /** @type {HTMLCanvasElement} */ (h("canvas", cls));
    hoverReadOut(canvas, tooltip, (x, y) => readOuts.get(canvas)?.(x, y) ?? null);
    return canvas;
  };
  hoverReadOut(stepCanvas, tooltip, (x, y) => readOuts.get(stepCanvas)?.(x, y) ?? null);

  return {
    root, tooltip, hover, progress, flag, filter, waiting,
    scalarSection, smoothing, smoothingText, scalarLog, scalarsBox,
    gridSection, viewSwitch, countLog, key, grid,
    detail, detailTitle, range, stepInput, stepNote, stepCanvas, numbers,
  };
}

/** @typedef {ReturnType<typeof liveLayout>} LiveLayout */

/**
 * "h (gradient)": how the flag names a site; a value and its gradient share a label.
 * @param {{label: string, kind: string}[]} meta the kernel's `_sites` @param {number} i
 */
function siteName(meta, i) {
  const site = meta[i];
  if (!site) return "";
  return site.kind === "activation" || site.kind === "gradient" ? `${site.label} (${site.kind})` : site.label;
}

/**
 * The header: steps run, rate and ETA (or that the first step is still
 * compiling), and the flag that opens the first NaN/Inf.
 * @param {LiveLayout} ui @param {LiveState} state @param {any} progress the kernel's `_progress`
 * @param {{label: string, kind: string}[]} meta the kernel's `_sites` @param {FirstNonfinite} found
 */
function drawProgress(ui, state, progress, meta, found) {
  const { root, waiting, flag } = ui;
  const p = progress || {};
  const compiling = !p.done && !hasRows(state);
  root.dataset.compiling = String(compiling);
  waiting.hidden = !compiling;
  if (compiling) {
    // No numbers yet: a rate or a statistic of nothing reads as a measurement.
    waiting.replaceChildren(h("span", "jcnb-spinner"), document.createTextNode(
      p.seen ? " waiting for the first recorded step…" : " compiling… the charts appear when the first step has run",
    ));
    ui.progress.textContent = p.seen ? `${p.seen} steps run` : "";
  } else {
    const parts = [`${p.seen ?? 0}${p.total ? ` / ${p.total}` : ""} steps`];
    if (p.rate > 0) parts.push(`${p.rate} steps/s`);
    if (p.eta != null && !p.done) parts.push(`ETA ${p.eta < 90 ? `${Math.round(p.eta)} s` : `${Math.round(p.eta / 60)} min`}`);
    parts.push(`${p.recorded ?? 0} recorded`);
    if (p.done) parts.push("done");
    ui.progress.textContent = parts.join(" · ");
  }
  flag.hidden = !found;
  if (found) {
    const last = found.lastFinite == null ? "" : ` · last finite step ${found.lastFinite}`;
    flag.textContent = `first NaN/Inf: ${siteName(meta, found.site)} at step ${found.step}${last}`;
    flag.title = "open this site at that step";
    flag.dataset.site = String(found.site);
    flag.dataset.step = String(found.step);
    if (found.lastFinite != null) flag.dataset.lastFinite = String(found.lastFinite);
  }
  root.dataset.steps = String(p.recorded ?? 0);
  root.dataset.seen = String(p.seen ?? 0);
  root.dataset.done = p.done ? "true" : "false";
}

export { liveLayout, drawProgress };
