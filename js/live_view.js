// LiveView front end: per site, the histograms over steps (as a heat map
// with percentile bands, or as TensorBoard's offset and overlay line views)
// and small traces of mean, std, zeros % and NaN/Inf; a step slider for one
// step's histogram; scalar charts with smoothing; progress. Plain ES module,
// no build step. Strings from user code are set with textContent only.
//
// The widget's rows (LiveRows, live_state.js) are kept once per widget and
// take every update as it arrives, drawn or not: a view rendered later (the
// output sent again for the notebook's saved picture, or a second display)
// shows every row, not only those of the latest update. Each view is a
// LiveState over those rows that only the handlers here change, the
// elements of live_layout.js, and drawing functions that take both as
// arguments: live_cards.js and the histogram files for the sites,
// live_scalars.js for the scalars, live_detail.js for one step. Labels,
// formats, bands and colours are the kernel's schema (schema.js).
//
// A view of several runs (overlay_runs) lists every run's sites; a card
// shows the sites of all runs that share a name, and the legend (and a
// regular expression beside it) turns runs off and on.
//
// As in TensorBoard: a drag across a chart over steps zooms them all, a
// card's tools expand it or download its numbers, and the scalars' axis
// counts steps or time. A running watch's kernel beats; a silent one is said to be.

import { siteMatcher } from "./common.js";
import { themeOf, onThemeChange } from "./draw.js";
import { schemaOf, applyColours } from "./schema.js";
import { shownName } from "./names.js";
import { liveRows, liveState, groupsOf, runsOf, shownMembers, unionSteps, shownStep, statColumns, applyUpdate, firstNonfinite, nearestIndex } from "./live_state.js";
import { siteTable, scalarTable, exportTable } from "./live_export.js";
import { drawCards } from "./live_cards.js";
import { drawKey } from "./live_key.js";
import { drawScalars } from "./live_scalars.js";
import { drawDetail } from "./live_detail.js";
import { liveLayout, drawProgress, drawLegend } from "./live_layout.js";
import { zoomOf, startZoom, dragZoom, endZoom, zoomOut, zoomOutAt } from "./live_zoom.js";
/** @typedef {import("./live_state.js").Entry} Entry */
/** @typedef {import("./live_state.js").LiveRows} LiveRows */
/** @typedef {import("./live_state.js").LiveState} LiveState */
/** @typedef {import("./live_state.js").Layers} Layers */
/** @typedef {import("./live_state.js").LiveProgress} LiveProgress */
/** @typedef {import("./live_zoom.js").Zoom} Zoom */

/**
 * One LiveView widget: anywidget calls this once per widget, then
 * `initialize` once and `render` for each output that shows the widget.
 */
function liveWidget() {
  const rows = liveRows();
  /** Applies the update the model holds now; one already applied is skipped. @param {any} model */
  const take = (model) => applyUpdate(rows, model.get("_update"), model.get("_bins"), model.get("_stat_columns").length);
  return {
    /** @param {{ model: any }} ctx */
    initialize({ model }) {
      take(model);
      const onUpdate = () => take(model);
      model.on("change:_update", onUpdate);
      return () => model.off("change:_update", onUpdate);
    },
    /** @param {{ model: any, el: HTMLElement }} ctx */
    render: ({ model, el }) => render(model, el, rows, take),
  };
}

/**
 * One view of the widget: the model and the widget's rows, the elements it
 * draws into, the reader's choices (a LiveState, which only the handlers
 * below change), and when it last drew.
 * @typedef {{model: any, el: HTMLElement, rows: LiveRows, take: (model: any) => void,
 *   ui: ReturnType<typeof liveLayout>, readOuts: Map<HTMLCanvasElement, (x: number, y: number) => string | null>,
 *   schema: ReturnType<typeof schemaOf>, stats: ReturnType<typeof statColumns>, state: LiveState,
 *   paint: {frame: number, missed: boolean, drawnWidth: number}, zoom: Zoom}} View
 */

/**
 * A view of the widget's rows in `el`, drawn nowhere yet.
 * @param {any} model @param {HTMLElement} el @param {LiveRows} rows the widget's rows
 * @param {(model: any) => void} take applies the model's latest update to the rows (once)
 * @returns {View}
 */
function liveView(model, el, rows, take) {
  /** What the pointer reads over each canvas, set when it is drawn. @type {Map<HTMLCanvasElement, (x: number, y: number) => string | null>} */
  const readOuts = new Map();
  const ui = liveLayout(readOuts);
  const schema = schemaOf(model);
  applyColours(ui.root, schema);
  el.append(ui.root);
  const stats = statColumns(model.get("_stat_columns"), schema);
  const paint = { frame: 0, missed: false, drawnWidth: -1 };
  return { model, el, rows, take, ui, readOuts, schema, stats, state: liveState(rows), paint, zoom: zoomOf(ui) };
}

/** A trait's sites or scalars, their names from user code escaped once here for every view of them (names.js). @param {View} view @param {string} trait */
function entries(view, trait) {
  return view.model.get(trait).map((/** @type {Entry} */ e) => ({ ...e, label: shownName(e.label) }));
}

/** The first NaN or Inf the rows hold. @param {View} view */
function found(view) {
  return firstNonfinite(view.rows, view.model.get("_progress"), view.stats);
}

/** The runs shown. @param {View} view */
function runsNow(view) {
  return runsOf(view.model.get("_runs").map(shownName), view.schema, view.state, themeOf(view.ui.root));
}

/** @param {View} view */
function drawScalarCards(view) {
  drawScalars(view.ui, view.state, entries(view, "_scalars"), runsNow(view), found(view), view.readOuts);
}

/** Draws everything, or notes that the view, off the page, missed a drawing. @param {View} view */
function draw(view) {
  const { model, el, ui, state, stats, readOuts, paint } = view;
  paint.frame = 0;
  recheck(view);
  if (!laidOut(view)) {
    paint.missed = true;
    return;
  }
  paint.drawnWidth = ui.grid.clientWidth;
  const meta = entries(view, "_sites");
  const groups = groupsOf(meta);
  const runs = runsNow(view);
  const first = found(view);
  drawProgress(ui, state, model.get("_progress"), meta, entries(view, "_scalars"), runs, first);
  drawLegend(ui, runs);
  drawScalarCards(view);
  drawKey(ui, state, stats, runs, first);
  drawCards(ui, state, stats, meta, groups, runs, first, readOuts);
  drawDetail(ui, state, stats, meta, groups, runs, first, readOuts);
  ui.root.dataset.ready = "true";
  el.classList.add("jcnb-ready");
}

// A view off the page (an output its host replaced, a cell a windowed
// notebook took out while scrolled away, or a page hidden while the host
// swaps its theme) has no width to draw at: it draws when it is back,
// which resizes it. A new width draws the cards again at their columns'
// width, and the detail under its card's row.

/** @param {View} view */
function laidOut(view) {
  return view.el.isConnected && view.ui.root.clientWidth > 0;
}

/** Draws in the next frame, once however often it is asked. @param {View} view */
function schedule(view) {
  const { paint } = view;
  if (!view.el.isConnected) {
    paint.missed = true;
    return;
  }
  if (!paint.frame) paint.frame = requestAnimationFrame(() => draw(view));
}

/** Draws again if the view missed a drawing or its width changed since. @param {View} view */
function catchUp(view) {
  const { paint } = view;
  if ((paint.missed || view.ui.grid.clientWidth !== paint.drawnWidth) && laidOut(view)) {
    paint.missed = false;
    schedule(view);
  }
}

/**
 * The resize observer reports the size a frame ends with: a layout that
 * lasts part of a frame (a host swapping its theme) can be drawn at and
 * never reported. A frame after each drawing, the view looks again.
 * @param {View} view
 */
function recheck(view) {
  requestAnimationFrame(() => catchUp(view));
}

/** Every step the selected card's shown runs recorded: what the slider moves over. @param {View} view */
function selectedSteps(view) {
  const { rows, state } = view;
  const group = groupsOf(entries(view, "_sites"))[state.selected];
  return group ? unionSteps(shownMembers(group, entries(view, "_sites"), rows.sites, runsNow(view))) : [];
}

/** Shows the k-th of the selected card's steps (the latest follows new steps). @param {View} view @param {number} k */
function showRow(view, k) {
  const steps = selectedSteps(view);
  if (!steps.length) return;
  const at = Math.min(Math.max(k, 0), steps.length - 1);
  view.state.pinnedStep = at === steps.length - 1 ? null : steps[at];
  draw(view);
}

/** A click on a card selects it, or, selected, clears the selection. @param {View} view @param {MouseEvent} event */
function onGridClick(view, event) {
  const { ui, state, zoom } = view;
  if (/** @type {HTMLElement} */ (event.target).closest(".jcnb-live-card-tools")) return; // onCardTool's
  if (zoom.dragged) return void (zoom.dragged = false); // the end of a zoom
  const card = /** @type {HTMLElement | null} */ (/** @type {HTMLElement} */ (event.target).closest(".jcnb-live-card"));
  if (!card) return;
  state.selected = Number(card.dataset.site) === state.selected ? -1 : Number(card.dataset.site);
  state.pinnedStep = null;
  draw(view);
  if (state.selected >= 0) ui.detail.scrollIntoView({ block: "nearest" });
}

/** The flag of the first NaN/Inf: shows where it is, its run turned on. @param {View} view */
function onFlag(view) {
  const { rows, ui, state } = view;
  const first = found(view);
  if (!first) return;
  if (first.site < 0) {
    const entry = entries(view, "_scalars")[first.scalar];
    state.hiddenRuns.delete(entry?.run ?? 0);
    draw(view);
    const chart = ui.scalarsBox.children[groupsOf(entries(view, "_scalars")).findIndex((g) => g.members.includes(first.scalar))];
    if (chart) chart.scrollIntoView({ block: "nearest" });
    return;
  }
  state.selected = groupsOf(entries(view, "_sites")).findIndex((g) => g.members.includes(first.site));
  state.hiddenRuns.delete(entries(view, "_sites")[first.site]?.run ?? 0);
  const s = rows.sites[first.site];
  state.pinnedStep = s && first.row >= 0 ? s.steps[first.row] : first.step;
  ui.filter.value = "";
  draw(view);
  ui.detail.focus({ preventScroll: true });
  ui.detail.scrollIntoView({ block: "nearest" });
}

/** The detail's keys: the arrows, Home and End move between steps. @param {View} view @param {KeyboardEvent} event */
function onDetailKey(view, event) {
  const { ui, state } = view;
  if (event.target === ui.stepInput) {
    event.stopPropagation(); // typing a number is not a notebook shortcut
    if (event.key === "Enter") {
      event.preventDefault();
      onStepTyped(view);
    }
    return;
  }
  if (event.target === ui.range) {
    event.stopPropagation(); // the slider moves itself; the notebook must not
    return;
  }
  const steps = selectedSteps(view);
  if (event.target !== ui.detail || !steps.length) return;
  const k = nearestIndex(steps, /** @type {number} */ (shownStep(state, steps)));
  /** @type {Record<string, number>} */
  const moves = { ArrowLeft: k - 1, ArrowRight: k + 1, ArrowDown: k - 1, ArrowUp: k + 1, Home: 0, End: steps.length - 1 };
  if (!(event.key in moves)) return;
  event.preventDefault();
  event.stopPropagation(); // JupyterLab's arrows move between cells
  showRow(view, moves[event.key]);
}

/** Goes to the typed step, or the recorded step nearest to it. @param {View} view */
function onStepTyped(view) {
  const { ui } = view;
  const steps = selectedSteps(view);
  const typed = Number(ui.stepInput.value);
  if (!steps.length || ui.stepInput.value.trim() === "" || !Number.isFinite(typed)) return;
  const k = nearestIndex(steps, typed);
  ui.stepInput.value = String(steps[k]);
  showRow(view, k);
}

/** @param {View} view @param {MouseEvent} event */
function onViewSwitch(view, event) {
  const button = /** @type {HTMLElement} */ (event.target).closest("button");
  if (!button || !button.dataset.view) return;
  view.state.view = button.dataset.view;
  draw(view);
}

/** @param {View} view @param {Event} event */
function onLayer(view, event) {
  const box = /** @type {HTMLInputElement} */ (event.target);
  if (!box.dataset.layer) return;
  view.state.layers[/** @type {keyof Layers} */ (box.dataset.layer)] = box.checked;
  draw(view);
}

/** A run's button in the legend turns it off and on. @param {View} view @param {MouseEvent} event */
function onLegend(view, event) {
  const { state } = view;
  const button = /** @type {HTMLElement} */ (event.target).closest("button");
  if (!button || button.dataset.run == null) return;
  const run = Number(button.dataset.run);
  if (state.hiddenRuns.has(run)) state.hiddenRuns.delete(run);
  else state.hiddenRuns.add(run);
  draw(view);
}

/** A card's expand button, or its CSV or JSON button: the card's numbers for the runs shown, as a download. @param {View} view @param {MouseEvent} event */
function onCardTool(view, event) {
  const { rows, ui, state, stats } = view;
  const button = /** @type {HTMLElement | null} */ (/** @type {HTMLElement} */ (event.target).closest(".jcnb-live-card-tools button"));
  if (!button) return;
  const card = /** @type {HTMLElement} */ (button.closest(".jcnb-live-card, .jcnb-live-scalar"));
  const isSite = card.classList.contains("jcnb-live-card");
  const trait = isSite ? "_sites" : "_scalars";
  const index = isSite ? Number(card.dataset.site) : [...ui.scalarsBox.children].indexOf(card);
  if (button.classList.contains("jcnb-live-expand")) {
    const key = `${isSite ? "site" : "scalar"} ${index}`;
    if (!state.expanded.delete(key)) state.expanded.add(key);
    draw(view);
    card.scrollIntoView({ block: "nearest" });
    return;
  }
  const group = groupsOf(entries(view, trait))[index];
  if (!group) return;
  const members = shownMembers(group, entries(view, trait), isSite ? rows.sites : rows.scalars, runsNow(view));
  const table = isSite ? siteTable(members, stats) : scalarTable(members);
  exportTable(button, table, group.label, group.kind || "scalar");
}

// The events Jupyter's widget manager (JupyterLab, Notebook 7) gives a
// model whose kernel connection ended, on a restart or a shutdown: no
// traits. A host that sends neither (marimo) leaves the beat to tell.
const HOST_CLOSE_EVENTS = ["comm:close", "comm_live_update"];

/**
 * Watches for a silent kernel: a running watch's thread sends a beat (the
 * kernel's `_progress.beat`) every few seconds; a kernel that restarted or
 * died sends nothing more, and the view would otherwise show its last ETA
 * for ever. Returns what stops the watching.
 * @param {View} view
 */
function watchSilence(view) {
  const { model, state } = view;
  let heardAt = performance.now();
  const onProgress = () => {
    heardAt = performance.now();
    if (state.silentFor) state.silentFor = 0;
    state.kernelGone = false;
    schedule(view);
  };
  const timer = setInterval(() => {
    /** @type {Partial<LiveProgress>} */
    const p = model.get("_progress") || {};
    const quiet = (performance.now() - heardAt) / 1000;
    const silent = p.silence && !p.done && (state.kernelGone || quiet > p.silence) ? Math.max(quiet, 1) : 0;
    if (Boolean(silent) !== Boolean(state.silentFor) || (silent && Math.round(silent) !== Math.round(state.silentFor))) {
      state.silentFor = silent;
      schedule(view);
    }
  }, 1000);
  // Where the host says so (Jupyter's widget manager, when its kernel
  // restarts or shuts down), the end is known at once: no beat is awaited.
  const onClosed = () => {
    const p = model.get("_progress") || {};
    if (!p.silence || p.done) return;
    state.kernelGone = true;
    state.silentFor = Math.max((performance.now() - heardAt) / 1000, 1);
    schedule(view);
  };
  for (const name of HOST_CLOSE_EVENTS) model.on(name, onClosed);
  model.on("change:_progress", onProgress);
  return () => {
    model.off("change:_progress", onProgress);
    for (const name of HOST_CLOSE_EVENTS) model.off(name, onClosed);
    clearInterval(timer);
  };
}

/**
 * Connects the view's handlers to its elements, the page's theme and the
 * model; returns what disconnects them.
 * @param {View} view
 */
function listen(view) {
  const { model, ui, state, zoom } = view;
  const redraw = () => draw(view);
  const scalars = () => drawScalarCards(view);
  const noShortcut = (/** @type {KeyboardEvent} */ event) => event.stopPropagation(); // typing is not a notebook shortcut
  /** @type {[EventTarget, string, (event: any) => void][]} */
  const handlers = [
    [ui.grid, "click", (event) => onGridClick(view, event)],
    [ui.root, "click", (event) => onCardTool(view, event)],
    [ui.root, "pointerdown", (event) => startZoom(zoom, event)],
    [window, "pointermove", (event) => dragZoom(zoom, ui, event)],
    [window, "pointerup", () => endZoom(zoom, state) && redraw()],
    [ui.root, "dblclick", (event) => zoomOutAt(state, event) && redraw()],
    [ui.zoomReset, "click", () => zoomOut(state) && redraw()],
    [ui.flag, "click", () => onFlag(view)],
    [ui.filter, "input", redraw],
    [ui.filter, "keydown", noShortcut],
    [ui.detail, "keydown", (event) => onDetailKey(view, event)],
    [ui.stepInput, "change", () => onStepTyped(view)],
    [ui.range, "input", () => showRow(view, Number(ui.range.value))],
    [ui.viewSwitch, "click", (event) => onViewSwitch(view, event)],
    [ui.layerBox, "change", (event) => onLayer(view, event)],
    [ui.legend, "click", (event) => onLegend(view, event)],
    [
      ui.runFilter,
      "input",
      () => {
        state.runMatches = siteMatcher(ui.runFilter);
        redraw();
      },
    ],
    [ui.runFilter, "keydown", noShortcut],
    [ui.countLog, "change", redraw],
    [ui.smoothing, "input", scalars],
    [ui.scalarLog, "change", scalars],
    [ui.outliers, "change", scalars],
    [ui.xAxis, "change", scalars],
    [ui.xAxis, "keydown", noShortcut],
  ];
  for (const [target, type, handler] of handlers) target.addEventListener(type, handler);
  const resized = new ResizeObserver(() => catchUp(view));
  resized.observe(ui.root);
  const stopTheme = onThemeChange(() => schedule(view));
  // `initialize` has applied the update already; a host that does not call
  // it leaves that to the views. Drawing waits for the next frame.
  const receive = () => {
    view.take(model);
    schedule(view);
  };
  model.on("change:_update", receive);
  const stopSilence = watchSilence(view);
  return () => {
    stopTheme();
    resized.disconnect();
    for (const [target, type, handler] of handlers) if (target === window) window.removeEventListener(type, handler);
    ui.tooltip.node.remove();
    model.off("change:_update", receive);
    stopSilence();
    if (view.paint.frame) cancelAnimationFrame(view.paint.frame);
  };
}

/**
 * Draws one view of the widget into `el`; returns its cleanup.
 * @param {any} model @param {HTMLElement} el @param {LiveRows} rows the widget's rows
 * @param {(model: any) => void} take applies the model's latest update to the rows (once)
 */
function render(model, el, rows, take) {
  const view = liveView(model, el, rows, take);
  const stop = listen(view);
  take(model);
  draw(view);
  return stop;
}

export default liveWidget;
