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

/** @param {{ model: any, el: HTMLElement }} ctx */
function render({ model, el }) {
  const ui = captureLayout();
  el.appendChild(ui.root);
  const { root, table } = ui;
  const rangeControls = rangeLayout();
  ui.statsLine.after(rangeControls.bar);
  const frame = heatFrame(ui);

  const state = {
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

  /** Filters and sorts the rows, then draws the visible ones. */
  function recompute() {
    const { data } = state;
    state.order = rowOrder(data, siteMatcher(ui.filter), state.sortKey, state.sortDir);
    const { order } = state;
    table.sheet.style.height = `${(order.length + 1) * ROW_HEIGHT}px`;
    root.dataset.visibleRows = String(order.length);
    const n = data.sites.length;
    ui.title.textContent = `${n} sowed value${n === 1 ? "" : "s"}` + (order.length < n ? `, ${order.length} shown` : "");
    if (state.selected >= 0 && !order.includes(state.selected)) clearSelection();
    if (!order.includes(state.cursor)) setCursor(order.length ? order[0] : -1);
    drawTableRows(true);
  }

  /**
   * Rebuilds the visible rows only when what they show changes: replacing a
   * row between mousedown and mouseup would swallow the click.
   */
  function drawTableRows(force = false) {
    const key = rowsInView(table.scroller, state.order.length);
    if (!force && key === state.rowsDrawn) return;
    state.rowsDrawn = key;
    drawRows(table, state.data, state, themeOf(root).series);
  }

  /** Moves the keyboard cursor to site i (-1: none). @param {number} i */
  function setCursor(i) {
    state.cursor = i;
    if (i >= 0) root.dataset.cursor = String(i);
    else delete root.dataset.cursor;
  }

  /** @param {KeyboardEvent} event */
  function onTableKey(event) {
    const { order } = state;
    if (event.target !== table.scroller || !order.length) return;
    const k = rowAfterKey(event.key, Math.max(0, order.indexOf(state.cursor)), order.length);
    if (k !== null) {
      setCursor(order[k]);
      scrollToRow(table.scroller, k);
      drawTableRows(true);
    } else if (event.key === "Enter" || event.key === " ") {
      if (state.cursor >= 0) select(state.cursor);
    } else return;
    // Keep JupyterLab's notebook shortcuts (arrows move between cells) out.
    event.preventDefault();
    event.stopPropagation();
  }

  const drawSelectedHistogram = () => {
    state.histLayout = drawHistogram(ui, state.data, state.selected, rangeOf(model));
  };
  const drawSelectedHeatmap = () => drawHeatmap(ui, frame, state.data, state.selected, heatmapOf(model), rangeOf(model));
  /** The range controls, the statistics line and the histogram, as the kernel's range answer has them. */
  const drawSelectedRange = () => {
    if (state.selected < 0) return;
    const range = rangeOf(model);
    drawRangeBar(rangeControls, state.data, state.selected, range);
    drawStatsLine(ui.statsLine, state.data, state.selected, range, rangeControls.restBox.checked);
    drawSelectedHistogram();
  };

  /** Reads the index boxes, and asks for the slice when they are good and new. */
  function applySliceIndex() {
    const next = readSliceIndex(ui);
    if (next === null) return;
    if (JSON.stringify(next) === JSON.stringify(model.get("_slice_index") || [])) return;
    model.set("_slice_index", next);
    requestHeatmap();
  }

  /** Asks the kernel for the selected site's slice; the spinner runs until it answers. */
  function requestHeatmap() {
    state.pending = (model.get("_heatmap_request") || 0) + 1;
    model.set("_heatmap_diverging", ui.divergingBox.checked);
    model.set("_heatmap_request", state.pending);
    model.save_changes();
    showLoading(ui, true);
  }

  function onAnswer() {
    if (state.pending && model.get("_heatmap_answered") >= state.pending) {
      state.pending = 0;
      showLoading(ui, false);
    }
    drawSelectedRange();
    drawSelectedHeatmap();
  }

  /** Shows site i's details and asks the kernel for its heatmap. @param {number} i */
  function select(i) {
    state.selected = i;
    setCursor(i);
    const s = state.data.sites[i];
    ui.detailTitle.textContent = `${shownName(s.label)} [call ${s.call}] ${shapeText(s)} ${s.dtype}` + (s.note ? ` (${s.note})` : "");
    ui.detailTitle.dir = "auto";
    ui.detailTitle.title = state.data.nameTitle(i);
    root.dataset.selected = String(i);
    ui.hint.hidden = true;
    ui.body.hidden = false;
    drawTableRows(true);
    model.set("_slice_index", []);
    model.set("_range_mode", "auto");
    model.set("_facet_axis", -1);
    model.set("_selected", i);
    drawSelectedRange();
    sliceControls(ui, s, model.get("_slice_index") || [], -1);
    requestHeatmap();
    drawSelectedHeatmap();
  }

  /** Back to no selection: the hint instead of details. */
  function clearSelection() {
    state.selected = -1;
    delete root.dataset.selected;
    ui.hint.hidden = false;
    ui.body.hidden = true;
    state.histLayout = null;
    state.pending = 0;
    showLoading(ui, false);
    model.set("_selected", -1);
    model.save_changes();
  }

  /** Reads the sites, their numbers and the schema from the model and redraws everything. */
  function load() {
    const data = new CaptureData(model);
    state.data = data;
    state.columns = tableColumns(data);
    // The data colours (series, band, median) are the schema's: themeOf reads them here.
    applyColours(root, data.schema);
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
    drawHead(table, state.columns, state.sortKey, state.sortDir);
    recompute();
  }

  /** Redraws the canvases with the theme's colours. */
  function redraw() {
    drawTableRows(true);
    if (state.selected >= 0) {
      drawSelectedRange();
      drawSelectedHeatmap();
    }
  }

  const onScroll = () => drawTableRows();
  const onTableClick = (/** @type {Event} */ event) => {
    const target = event.target instanceof Element ? event.target : null;
    const sortHead = target?.closest(".jcnb-head .jcnb-sortable");
    if (sortHead instanceof HTMLElement) {
      Object.assign(state, sortAfterClick(state, sortHead.dataset.key));
      drawHead(table, state.columns, state.sortKey, state.sortDir);
      recompute();
      return;
    }
    const row = target?.closest(".jcnb-body-row");
    if (row instanceof HTMLElement) select(Number(row.dataset.site));
  };
  const onIndexKey = (/** @type {KeyboardEvent} */ event) => {
    if (!(event.target instanceof HTMLInputElement)) return;
    event.stopPropagation(); // typing in a box is not a notebook shortcut
    if (event.key === "Enter") {
      event.preventDefault();
      applySliceIndex();
    }
  };
  const onIndexChange = (/** @type {Event} */ event) => {
    if (!(event.target instanceof HTMLSelectElement)) {
      applySliceIndex();
      return;
    }
    // The facet axis: its index box has nothing to pick while it is chosen.
    const axis = readFacetAxis(ui);
    sliceControls(ui, state.data.sites[state.selected], model.get("_slice_index") || [], axis);
    model.set("_facet_axis", axis);
    requestHeatmap();
  };
  const onDiverging = () => {
    drawSelectedHistogram(); // the colours of its bars beyond the range follow the map
    requestHeatmap();
  };
  const onRangeMode = () => {
    model.set("_range_mode", rangeControls.modeSelect.value);
    requestHeatmap();
  };
  const onRestStats = () => drawSelectedRange();
  const onFilter = () => recompute();
  const onLog = () => drawSelectedHistogram();
  const onFlag = () => select(Number(ui.flag.dataset.site));
  table.scroller.addEventListener("scroll", onScroll);
  table.scroller.addEventListener("click", onTableClick);
  table.scroller.addEventListener("keydown", onTableKey);
  ui.heatControls.addEventListener("keydown", onIndexKey);
  ui.heatControls.addEventListener("change", onIndexChange);
  ui.divergingBox.addEventListener("change", onDiverging);
  rangeControls.modeSelect.addEventListener("change", onRangeMode);
  rangeControls.restBox.addEventListener("change", onRestStats);
  ui.filter.addEventListener("input", onFilter);
  ui.logBox.addEventListener("change", onLog);
  ui.flag.addEventListener("click", onFlag);
  hoverReadOut(ui.histCanvas, ui.tooltip, (px, py) => histReadOut(state.histLayout, px, py));
  hoverReadOut(ui.heatCanvas, ui.tooltip, (px, py) => heatReadOut(ui.heatCanvas, state.data, state.selected, heatmapOf(model), px, py));
  // JupyterLab switches themes with its page briefly laid out at no width:
  // drawn then, the histogram would take its least width and keep it. Draw
  // in the next frame instead, laid out anew.
  let themeFrame = 0;
  const stopTheme = onThemeChange(() => {
    cancelAnimationFrame(themeFrame);
    themeFrame = requestAnimationFrame(redraw);
  });
  // The histogram follows the width of the output area.
  let lastWidth = 0;
  const resizing = new ResizeObserver(() => {
    if (ui.detail.clientWidth === lastWidth) return;
    lastWidth = ui.detail.clientWidth;
    if (state.selected >= 0) drawSelectedHistogram();
  });
  resizing.observe(ui.detail);
  model.on("change:_heatmap_answered", onAnswer);
  model.on("change:_heatmap_site", drawSelectedHeatmap);
  model.on("change:_sites", load);

  ui.divergingBox.checked = Boolean(model.get("_heatmap_diverging"));
  ui.body.hidden = true;
  showLoading(ui, false);
  load();
  root.dataset.ready = "true";
  el.classList.add("jcnb-ready");

  return () => {
    stopTheme();
    cancelAnimationFrame(themeFrame);
    resizing.disconnect();
    ui.tooltip.node.remove();
    model.off("change:_heatmap_answered", onAnswer);
    model.off("change:_heatmap_site", drawSelectedHeatmap);
    model.off("change:_sites", load);
  };
}

export default { render };
