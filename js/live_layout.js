// LiveView's page: the elements it is made of (header, scalar tools and
// cards, the histogram tools and site cards, the one-step detail), and the
// header's progress line and first-NaN/Inf flag.

import { h, siteFilter } from "./common.js";
import { Tooltip, hoverReadOut } from "./draw.js";
import { shownName, setName, counted } from "./names.js";
import { hasRows } from "./live_state.js";
import { VIEWS, LAYERS } from "./live_key.js";
import { DEFAULT_SMOOTHING, X_AXES } from "./live_scalars.js";
/** @typedef {import("./live_state.js").LiveProgress} LiveProgress */
/** @typedef {import("./live_state.js").Entry} Entry */
/** @typedef {import("./live_state.js").FirstNonfinite} FirstNonfinite */
/** @typedef {import("./live_state.js").LiveState} LiveState */
/** @typedef {import("./live_state.js").Runs} Runs */

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
  // Shown while the charts over steps are zoomed (a drag across one); it
  // and a double click on a chart zoom back out.
  const zoomReset = h("button", "jcnb-live-zoom-reset");
  zoomReset.hidden = true;
  const silence = h("span", "jcnb-live-silence");
  silence.hidden = true;
  head.append(progress, silence, flag, zoomReset, filter);
  const waiting = h("div", "jcnb-hint jcnb-live-waiting");
  waiting.hidden = true;
  // The runs of a view of several, each a button that shows or hides it.
  const legend = h("div", "jcnb-live-legend");
  legend.setAttribute("role", "group");
  legend.setAttribute("aria-label", "runs");
  legend.hidden = true;
  // Beside the legend, as TensorBoard's run selector: a regular expression over the runs' names.
  const runFilter = /** @type {HTMLInputElement} */ (h("input", "jcnb-live-run-filter"));
  runFilter.type = "search";
  runFilter.placeholder = "filter runs (regex)";
  runFilter.setAttribute("aria-label", "filter runs (regular expression)");
  const legendRow = h("div", "jcnb-live-legend-row");
  legendRow.append(legend, runFilter);
  legendRow.hidden = true;

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
  // On by default, as TensorBoard's: one spike must not flatten the rest of training.
  const outliers = /** @type {HTMLInputElement} */ (h("input", "jcnb-live-outliers"));
  outliers.type = "checkbox";
  outliers.checked = true;
  const outliersLabel = h("label", "jcnb-live-tool");
  outliersLabel.title = "scale the value axis to the 5th–95th percentile of the values";
  outliersLabel.append(outliers, document.createTextNode(" ignore outliers"));
  // The horizontal axis, as TensorBoard's: steps, relative or wall time.
  const xAxis = /** @type {HTMLSelectElement} */ (h("select", "jcnb-live-x-axis"));
  for (const [value, text] of Object.entries(X_AXES)) {
    const option = /** @type {HTMLOptionElement} */ (h("option", "", text));
    option.value = value;
    xAxis.append(option);
  }
  const xAxisLabel = h("label", "jcnb-live-tool", "x: ");
  xAxisLabel.title = "what the scalar charts' horizontal axis counts: steps, time since the run's first value, or the time of day";
  xAxisLabel.append(xAxis);
  scalarTools.append(smoothingLabel, scalarLogLabel, outliersLabel, xAxisLabel);
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
  // The key; in the heat view its first entries turn the view's layers on and off.
  const key = h("div", "jcnb-key jcnb-live-key");
  const layerBox = h("span", "jcnb-live-layers");
  layerBox.setAttribute("role", "group");
  layerBox.setAttribute("aria-label", "what the heat view draws");
  for (const name of LAYERS) {
    const toggle = h("label", "jcnb-key-item jcnb-live-layer");
    toggle.dataset.layer = name;
    const box = /** @type {HTMLInputElement} */ (h("input", "jcnb-live-layer-box"));
    box.type = "checkbox";
    box.dataset.layer = name;
    toggle.append(box, h("span", "jcnb-key-swatch"), h("span"));
    layerBox.append(toggle);
  }
  const keyItems = h("span", "jcnb-live-key-items");
  key.append(layerBox, keyItems);
  const grid = h("div", "jcnb-live-grid");
  const gridSection = h("div", "jcnb-live-grid-section");
  gridSection.append(gridTools, key, grid);
  gridSection.hidden = true;

  // One step of the selected site: a slider, a step box, its histogram and
  // statistics. It opens in the grid, under the row of the card it shows.
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
  const detailBody = h("div", "jcnb-live-detail-body");
  detailBody.append(stepCanvas, numbers);
  detail.append(detailTitle, stepRow, detailBody);

  root.append(head, legendRow, waiting, scalarSection, gridSection);
  grid.append(detail);

  /** A canvas that shows what `readOuts` holds for it under the pointer. @param {string} cls */
  const hover = (cls) => {
    const canvas = /** @type {HTMLCanvasElement} */ (h("canvas", cls));
    hoverReadOut(canvas, tooltip, (x, y) => readOuts.get(canvas)?.(x, y) ?? null);
    return canvas;
  };
  hoverReadOut(stepCanvas, tooltip, (x, y) => readOuts.get(stepCanvas)?.(x, y) ?? null);

  return {
    root, tooltip, hover, progress, silence, flag, zoomReset, filter, waiting, xAxis, legend, legendRow, runFilter,
    scalarSection, smoothing, smoothingText, scalarLog, outliers, scalarsBox,
    gridSection, viewSwitch, countLog, layerBox, keyItems, grid,
    detail, detailTitle, range, stepInput, stepNote, detailBody, stepCanvas, numbers,
  };
}

/** @typedef {ReturnType<typeof liveLayout>} LiveLayout */

/**
 * "h (gradient)": how the flag names a site; a value and its gradient share
 * a label. With several runs, the run follows: "h (gradient) in lr=0.1".
 * @param {Entry[]} meta the kernel's `_sites` @param {number} i @param {Runs} runs
 */
function siteName(meta, i, runs) {
  const site = meta[i];
  if (!site) return "";
  const label = shownName(site.label);
  const name = site.kind === "activation" || site.kind === "gradient" ? `${label} (${site.kind})` : label;
  return runs.several ? `${name} in ${shownName(runs.names[site.run ?? 0])}` : name;
}

/**
 * The legend of a view of several runs: a button per run in its colour,
 * pressed while the run is shown.
 * @param {LiveLayout} ui @param {Runs} runs
 */
function drawLegend(ui, runs) {
  ui.legend.hidden = !runs.several;
  ui.legendRow.hidden = !runs.several;
  if (!runs.several) return;
  while (ui.legend.children.length < runs.names.length) {
    const button = h("button", "jcnb-live-run");
    button.dataset.run = String(ui.legend.children.length);
    button.append(h("span", "jcnb-key-swatch"), h("span", "jcnb-live-run-name"));
    ui.legend.append(button);
  }
  runs.names.forEach((name, run) => {
    const button = /** @type {HTMLElement} */ (ui.legend.children[run]);
    const shown = runs.shown(run);
    /** @type {HTMLElement} */ (button.children[0]).style.background = shown ? runs.colour(run) : "transparent";
    /** @type {HTMLElement} */ (button.children[0]).style.borderColor = runs.colour(run);
    setName(/** @type {HTMLElement} */ (button.children[1]), name);
    button.classList.toggle("jcnb-off", !shown);
    button.setAttribute("aria-pressed", String(shown));
    button.classList.toggle("jcnb-filtered", !runs.matched(run));
    button.title = runs.matched(run)
      ? `${shown ? "hide" : "show"} run ${shownName(name)}`
      : `run ${shownName(name)}: the run filter leaves it out`;
  });
}

/**
 * The header: steps run, rate and ETA (or that the first step is still
 * compiling), and the flag that opens the first NaN/Inf.
 * @param {LiveLayout} ui @param {LiveState} state @param {Partial<LiveProgress> | null} progress the kernel's `_progress`
 * @param {Entry[]} meta the kernel's `_sites` @param {Entry[]} scalars the kernel's `_scalars`
 * @param {Runs} runs @param {FirstNonfinite} found
 */
function drawProgress(ui, state, progress, meta, scalars, runs, found) {
  const { root, waiting, flag } = ui;
  /** @type {Partial<LiveProgress>} */
  const p = progress || {};
  const compiling = !p.done && !hasRows(state.rows);
  root.dataset.compiling = String(compiling);
  waiting.hidden = !compiling;
  if (compiling) {
    // No numbers yet: a rate or a statistic of nothing reads as a measurement.
    waiting.replaceChildren(h("span", "jcnb-spinner"), document.createTextNode(
      p.seen ? " waiting for the first recorded step…" : " compiling… the charts appear when the first step has run",
    ));
    ui.progress.textContent = p.seen ? `${counted(p.seen, "step")} run` : "";
  } else {
    // A silent kernel's ETA is no estimate of anything.
    ui.progress.textContent = runs.several ? runsProgress(p, runs) : oneRunProgress(state.silentFor ? { ...p, eta: null } : p);
  }
  const range = state.stepRange;
  ui.zoomReset.hidden = !range;
  ui.zoomReset.textContent = range ? `steps ${Math.ceil(range[0])}–${Math.floor(range[1])} \u00d7` : "";
  ui.zoomReset.title = "zoomed: show every step (or double-click a chart)";
  // A running watch's kernel that has sent nothing for a while (see live_view.js's silence check).
  ui.silence.hidden = !state.silentFor;
  ui.silence.textContent = !state.silentFor
    ? ""
    : state.kernelGone
      ? `the kernel restarted or shut down: the run stopped after ${counted(p.seen ?? 0, "step")}; the view shows what it last heard`
      : `no word from the kernel for ${Math.round(state.silentFor)} s: it may have stopped (a restart or a crash); the view shows what it last heard`;
  root.dataset.silent = String(Boolean(state.silentFor));
  flag.hidden = !found;
  if (found) {
    const last = found.lastFinite == null ? "" : ` · last finite step ${found.lastFinite}`;
    const name = found.site >= 0 ? siteName(meta, found.site, runs) : siteName(scalars, found.scalar, runs);
    flag.textContent = `first NaN/Inf: ${name} at step ${found.step}${last}`;
    flag.dir = "auto";
    flag.title = found.site >= 0 ? "open this site at that step" : "show this scalar's chart";
    flag.dataset.site = String(found.site);
    flag.dataset.scalar = String(found.scalar);
    flag.dataset.step = String(found.step);
    if (found.lastFinite != null) flag.dataset.lastFinite = String(found.lastFinite);
  }
  root.dataset.steps = String(p.recorded ?? 0);
  root.dataset.seen = String(p.seen ?? 0);
  root.dataset.done = p.done ? "true" : "false";
}

/** "120 / 300 steps · 41.5 steps/s · ETA 4 s · 60 recorded". @param {Partial<LiveProgress>} p the kernel's `_progress` */
function oneRunProgress(p) {
  const parts = [p.total ? `${p.seen ?? 0} / ${counted(p.total, "step")}` : counted(p.seen ?? 0, "step")];
  if ((p.rate ?? 0) > 0) parts.push(`${p.rate} steps/s`);
  if (p.eta != null && !p.done) parts.push(`ETA ${p.eta < 90 ? `${Math.round(p.eta)} s` : `${Math.round(p.eta / 60)} min`}`);
  parts.push(`${p.recorded ?? 0} recorded`);
  if (p.done) parts.push(p.ended || "done");
  return parts.join(" · ");
}

/** "2 runs · lr=0.1: 300 steps, done · lr=0.01: 120 steps, running". @param {Partial<LiveProgress>} p the kernel's `_progress` @param {Runs} runs */
function runsProgress(p, runs) {
  const each = (p.runs || []).map((r, run) => `${runs.names[run]}: ${counted(r.seen, "step")}, ${r.done ? r.ended || "done" : "running"}`);
  return [counted(runs.names.length, "run"), ...each].join(" · ");
}

export { liveLayout, drawProgress, drawLegend };
