// CaptureView front end: a virtualized, sortable table of sowed values with
// sparkline histograms, and a detail panel (large histogram, 2-D heatmap or
// small multiples, both over the value range the view picks).
// Plain ES module, no build step. Every string from user code is set with
// textContent, never parsed as HTML.
//
// The view is a CaptureData (capture_data.js, what the kernel sent), a small
// state object that only the handlers here change, the elements of
// capture_layout.js (with the range controls of capture_range.js and the
// heatmap's frame), and drawing functions that take them as arguments:
// capture_table.js, capture_histogram.js, capture_heat_picture.js,
// capture_heatmap.js and capture_range.js. The statistics shown, their names and formats, and the
// data colours are the kernel's schema (schema.js), which CaptureData
// carries; the range the histogram and heatmap span is the kernel's answer
// (rangeOf), which it computes from the selected site's kept value.

import { siteMatcher } from "./common.js";
import { themeOf, hoverReadOut, onThemeChange } from "./draw.js";
import { applyColours } from "./schema.js";
import { shownName } from "./names.js";
import { shapeText, countText, CaptureData, rangeOf } from "./capture_data.js";
import { ROW_HEIGHT, tableColumns, rowOrder, drawRows, rowsInView, drawHead, sortAfterClick, rowAfterKey, scrollToRow } from "./capture_table.js";
import { drawStatsLine, drawHistogram, histReadOut } from "./capture_histogram.js";
import { heatmapOf, heatFrame, heatReadOut } from "./capture_heat_picture.js";
import { sliceControls, readFacetAxis, readSliceIndex, drawHeatmap } from "./capture_heatmap.js";
import { rangeLayout, drawRangeBar } from "./capture_range.js";
import { captureLayout, showLoading } from "./capture_layout.js";
/** @typedef {import("./capture_table.js").Column} Column */
/** @typedef {import("./capture_histogram.js").HistLayout} HistLayout */

/**
 * One CaptureView: the model, the elements it draws into, and the reader's
 * choices, which only the handlers below change.
 * @typedef {{model: any, ui: ReturnType<typeof captureLayout>, rangeControls: ReturnType<typeof rangeLayout>,
 *   frame: ReturnType<typeof heatFrame>, state: ReturnType<typeof captureState>}} View
 */

/** The reader's choices and what was last drawn, before anything is. @param {any} model */
function captureState(model) {
  return {
    data: new CaptureData(model),
    /** The table's columns, from the schema (load sets them). @type {Column[]} */
    columns: [],
    /** @type {number[]} */ order: [],
    sortKey: "",
    sortDir: 1,
    selected: -1,
    cursor: -1, // the site the arrow keys are on
    pending: 0, // the heatmap request awaiting its answer, 0 if none
    /** Where the last histogram put its parts, for the hover read-out. @type {HistLayout | null} */
    histLayout: null,
    rowsDrawn: "", // which rows are built, as rowsInView says
  };
}

/** Filters and sorts the rows, then draws the visible ones. @param {View} view */
function recompute(view) {
  const { ui, state } = view;
  const { data } = state;
  state.order = rowOrder(data, siteMatcher(ui.filter), state.sortKey, state.sortDir);
  const { order } = state;
  ui.table.sheet.style.height = `${(order.length + 1) * ROW_HEIGHT}px`;
  ui.root.dataset.visibleRows = String(order.length);
  const n = data.sites.length;
  ui.title.textContent = `${n} sowed value${n === 1 ? "" : "s"}` + (order.length < n ? `, ${order.length} shown` : "");
  if (state.selected >= 0 && !order.includes(state.selected)) clearSelection(view);
  if (!order.includes(state.cursor)) setCursor(view, order.length ? order[0] : -1);
  drawTableRows(view, true);
}

/**
 * Rebuilds the visible rows only when what they show changes: replacing a
 * row between mousedown and mouseup would swallow the click.
 * @param {View} view @param {boolean} [force]
 */
function drawTableRows(view, force = false) {
  const { ui, state } = view;
  const key = rowsInView(ui.table.scroller, state.order.length);
  if (!force && key === state.rowsDrawn) return;
  state.rowsDrawn = key;
  drawRows(ui.table, state.data, state, themeOf(ui.root).series);
}

/** Moves the keyboard cursor to site i (-1: none). @param {View} view @param {number} i */
function setCursor(view, i) {
  view.state.cursor = i;
  if (i >= 0) view.ui.root.dataset.cursor = String(i);
  else delete view.ui.root.dataset.cursor;
}

/** @param {View} view */
function drawSelectedHistogram(view) {
  const { model, ui, state } = view;
  state.histLayout = drawHistogram(ui, state.data, state.selected, rangeOf(model));
}

/** @param {View} view */
function drawSelectedHeatmap(view) {
  const { model, ui, frame, state } = view;
  drawHeatmap(ui, frame, state.data, state.selected, heatmapOf(model), rangeOf(model));
}

/** The range controls, the statistics line and the histogram, as the kernel's range answer has them. @param {View} view */
function drawSelectedRange(view) {
  const { model, ui, rangeControls, state } = view;
  if (state.selected < 0) return;
  const range = rangeOf(model);
  drawRangeBar(rangeControls, state.data, state.selected, range);
  drawStatsLine(ui.statsLine, state.data, state.selected, range, rangeControls.restBox.checked);
  drawSelectedHistogram(view);
}

/** Reads the index boxes, and asks for the slice when they are good and new. @param {View} view */
function applySliceIndex(view) {
  const { model, ui } = view;
  const next = readSliceIndex(ui);
  if (next === null) return;
  if (JSON.stringify(next) === JSON.stringify(model.get("_slice_index") || [])) return;
  model.set("_slice_index", next);
  requestHeatmap(view);
}

/** Asks the kernel for the selected site's slice; the spinner runs until it answers. @param {View} view */
function requestHeatmap(view) {
  const { model, ui, state } = view;
  state.pending = (model.get("_heatmap_request") || 0) + 1;
  model.set("_heatmap_diverging", ui.divergingBox.checked);
  model.set("_heatmap_request", state.pending);
  model.save_changes();
  showLoading(ui, true);
}

/** The kernel answered a heatmap request, or a range with it. @param {View} view */
function onAnswer(view) {
  const { model, ui, state } = view;
  if (state.pending && model.get("_heatmap_answered") >= state.pending) {
    state.pending = 0;
    showLoading(ui, false);
  }
  drawSelectedRange(view);
  drawSelectedHeatmap(view);
}

/** Shows site i's details and asks the kernel for its heatmap. @param {View} view @param {number} i */
function select(view, i) {
  const { model, ui, state } = view;
  state.selected = i;
  setCursor(view, i);
  const s = state.data.sites[i];
  ui.detailTitle.textContent = `${shownName(s.label)} [call ${s.call}] ${shapeText(s)} ${s.dtype}` + (s.note ? ` (${s.note})` : "");
  ui.detailTitle.dir = "auto";
  ui.detailTitle.title = state.data.nameTitle(i);
  ui.root.dataset.selected = String(i);
  ui.hint.hidden = true;
  ui.body.hidden = false;
  drawTableRows(view, true);
  model.set("_slice_index", []);
  model.set("_range_mode", "auto");
  model.set("_facet_axis", -1);
  model.set("_selected", i);
  drawSelectedRange(view);
  sliceControls(ui, s, model.get("_slice_index") || [], -1);
  requestHeatmap(view);
  drawSelectedHeatmap(view);
}

/** Back to no selection: the hint instead of details. @param {View} view */
function clearSelection(view) {
  const { model, ui, state } = view;
  state.selected = -1;
  delete ui.root.dataset.selected;
  ui.hint.hidden = false;
  ui.body.hidden = true;
  state.histLayout = null;
  state.pending = 0;
  showLoading(ui, false);
  model.set("_selected", -1);
  model.save_changes();
}

/** Reads the sites, their numbers and the schema from the model and redraws everything. @param {View} view */
function load(view) {
  const { model, ui, state } = view;
  const data = new CaptureData(model);
  state.data = data;
  state.columns = tableColumns(data);
  // The data colours (series, band, median) are the schema's: themeOf reads them here.
  applyColours(ui.root, data.schema);
  const { flag } = ui;
  const first = model.get("_first_nonfinite");
  if (first >= 0) {
    const s = data.sites[first];
    flag.textContent = `First ${data.schema.nonfiniteLabel}: ${shownName(s.label)} [call ${s.call}] (${countText(data.nonfinite(first))} values). Click to inspect.`;
    flag.style.display = "block";
    flag.dataset.site = String(first);
  } else {
    flag.style.display = "none";
  }
  drawHead(ui.table, state.columns, state.sortKey, state.sortDir);
  recompute(view);
}

/** Redraws the canvases with the theme's colours. @param {View} view */
function redraw(view) {
  drawTableRows(view, true);
  if (view.state.selected >= 0) {
    drawSelectedRange(view);
    drawSelectedHeatmap(view);
  }
}

/** The table's keys: arrows move the cursor, Enter or Space selects. @param {View} view @param {KeyboardEvent} event */
function onTableKey(view, event) {
  const { ui, state } = view;
  const { order } = state;
  if (event.target !== ui.table.scroller || !order.length) return;
  const k = rowAfterKey(event.key, Math.max(0, order.indexOf(state.cursor)), order.length);
  if (k !== null) {
    setCursor(view, order[k]);
    scrollToRow(ui.table.scroller, k);
    drawTableRows(view, true);
  } else if (event.key === "Enter" || event.key === " ") {
    if (state.cursor >= 0) select(view, state.cursor);
  } else return;
  // Keep JupyterLab's notebook shortcuts (arrows move between cells) out.
  event.preventDefault();
  event.stopPropagation();
}

/** A click on a column head sorts by it; on a row, selects its site. @param {View} view @param {Event} event */
function onTableClick(view, event) {
  const { ui, state } = view;
  const target = event.target instanceof Element ? event.target : null;
  const sortHead = target?.closest(".jcnb-head .jcnb-sortable");
  if (sortHead instanceof HTMLElement) {
    Object.assign(state, sortAfterClick(state, sortHead.dataset.key || ""));
    drawHead(ui.table, state.columns, state.sortKey, state.sortDir);
    recompute(view);
    return;
  }
  const row = target?.closest(".jcnb-body-row");
  if (row instanceof HTMLElement) select(view, Number(row.dataset.site));
}

/** Enter in an index box asks for that slice. @param {View} view @param {KeyboardEvent} event */
function onIndexKey(view, event) {
  if (!(event.target instanceof HTMLInputElement)) return;
  event.stopPropagation(); // typing in a box is not a notebook shortcut
  if (event.key === "Enter") {
    event.preventDefault();
    applySliceIndex(view);
  }
}

/** A changed index box asks for its slice; a changed facet axis for its small multiples. @param {View} view @param {Event} event */
function onIndexChange(view, event) {
  const { model, ui, state } = view;
  if (!(event.target instanceof HTMLSelectElement)) {
    applySliceIndex(view);
    return;
  }
  // The facet axis: its index box has nothing to pick while it is chosen.
  const axis = readFacetAxis(ui);
  sliceControls(ui, state.data.sites[state.selected], model.get("_slice_index") || [], axis);
  model.set("_facet_axis", axis);
  requestHeatmap(view);
}

/**
 * Connects the view's handlers to its elements, the page's theme and the
 * model; returns what disconnects them.
 * @param {View} view
 */
function listen(view) {
  const { model, ui, rangeControls, state } = view;
  const { table } = ui;
  /** @type {[EventTarget, string, (event: any) => void][]} */
  const handlers = [
    [table.scroller, "scroll", () => drawTableRows(view)],
    [table.scroller, "click", (event) => onTableClick(view, event)],
    [table.scroller, "keydown", (event) => onTableKey(view, event)],
    [ui.heatControls, "keydown", (event) => onIndexKey(view, event)],
    [ui.heatControls, "change", (event) => onIndexChange(view, event)],
    [
      ui.divergingBox,
      "change",
      () => {
        drawSelectedHistogram(view); // the colours of its bars beyond the range follow the map
        requestHeatmap(view);
      },
    ],
    [
      rangeControls.modeSelect,
      "change",
      () => {
        model.set("_range_mode", rangeControls.modeSelect.value);
        requestHeatmap(view);
      },
    ],
    [rangeControls.restBox, "change", () => drawSelectedRange(view)],
    [ui.filter, "input", () => recompute(view)],
    [ui.logBox, "change", () => drawSelectedHistogram(view)],
    [ui.flag, "click", () => select(view, Number(ui.flag.dataset.site))],
  ];
  for (const [target, type, handler] of handlers) target.addEventListener(type, handler);
  hoverReadOut(ui.histCanvas, ui.tooltip, (px, py) => histReadOut(state.histLayout, px, py));
  hoverReadOut(ui.heatCanvas, ui.tooltip, (px, py) => heatReadOut(ui.heatCanvas, state.data, state.selected, heatmapOf(model), px, py));
  // JupyterLab switches themes with its page briefly laid out at no width:
  // drawn then, the histogram would take its least width and keep it. Draw
  // in the next frame instead, laid out anew.
  let themeFrame = 0;
  const stopTheme = onThemeChange(() => {
    cancelAnimationFrame(themeFrame);
    themeFrame = requestAnimationFrame(() => redraw(view));
  });
  // The histogram follows the width of the output area.
  let lastWidth = 0;
  const resizing = new ResizeObserver(() => {
    if (ui.detail.clientWidth === lastWidth) return;
    lastWidth = ui.detail.clientWidth;
    if (state.selected >= 0) drawSelectedHistogram(view);
  });
  resizing.observe(ui.detail);
  /** @type {[string, () => void][]} */
  const changes = [
    ["change:_heatmap_answered", () => onAnswer(view)],
    ["change:_heatmap_site", () => drawSelectedHeatmap(view)],
    ["change:_sites", () => load(view)],
  ];
  for (const [name, handler] of changes) model.on(name, handler);
  return () => {
    stopTheme();
    cancelAnimationFrame(themeFrame);
    resizing.disconnect();
    ui.tooltip.node.remove();
    for (const [name, handler] of changes) model.off(name, handler);
  };
}

/** @param {{ model: any, el: HTMLElement }} ctx */
function render({ model, el }) {
  const ui = captureLayout();
  el.appendChild(ui.root);
  const rangeControls = rangeLayout();
  ui.statsLine.after(rangeControls.bar);
  /** @type {View} */
  const view = { model, ui, rangeControls, frame: heatFrame(ui), state: captureState(model) };
  const stop = listen(view);
  ui.divergingBox.checked = Boolean(model.get("_heatmap_diverging"));
  ui.body.hidden = true;
  showLoading(ui, false);
  load(view);
  ui.root.dataset.ready = "true";
  el.classList.add("jcnb-ready");
  return stop;
}

export default { render };
