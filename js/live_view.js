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

/**
 * One LiveView widget: anywidget calls this once per widget, then
 * `initialize` once and `render` for each output that shows the widget.
 */
function liveWidget() {
  const rows = liveRows();
  /** Applies the update the model holds now; one already applied is skipped. @param {any} model */
  const take = (model) => applyUpdate(rows, model.get("_update"), model.get("_bins"), model.get("_stat_columns").length);
  return {
    initialize({ model }) {
      take(model);
      const onUpdate = () => take(model);
      model.on("change:_update", onUpdate);
      return () => model.off("change:_update", onUpdate);
    },
    render: ({ model, el }) => render(model, el, rows, take),
  };
}

/**
 * Draws one view of the widget into `el`; returns its cleanup.
 * @param {any} model @param {HTMLElement} el @param {LiveRows} rows the widget's rows
 * @param {(model: any) => void} take applies the model's latest update to the rows (once)
 */
function render(model, el, rows, take) {
  /** What the pointer reads over each canvas, set when it is drawn. @type {Map<HTMLCanvasElement, (x: number, y: number) => string | null>} */
  const readOuts = new Map();
  const ui = liveLayout(readOuts);
  const schema = schemaOf(model);
  applyColours(ui.root, schema);
  el.append(ui.root);
  const state = liveState(rows);
  const stats = statColumns(model.get("_stat_columns"), schema);
  let frame = 0;

  // Names from user code, escaped once here for every view of them (names.js).
  const entries = (/** @type {string} */ trait) => model.get(trait).map((/** @type {Entry} */ e) => ({ ...e, label: shownName(e.label) }));
  const found = () => firstNonfinite(rows, model.get("_progress"), stats);
  const runsNow = () => runsOf(model.get("_runs").map(shownName), schema, state, themeOf(ui.root));
  const drawScalarCards = () => drawScalars(ui, state, entries("_scalars"), runsNow(), found(), readOuts);

  function draw() {
    frame = 0;
    recheck();
    if (!laidOut()) {
      missed = true;
      return;
    }
    drawnWidth = ui.grid.clientWidth;
    const meta = entries("_sites");
    const groups = groupsOf(meta);
    const runs = runsNow();
    const first = found();
    drawProgress(ui, state, model.get("_progress"), meta, entries("_scalars"), runs, first);
    drawLegend(ui, runs);
    drawScalarCards();
    drawKey(ui, state, stats, runs, first);
    drawCards(ui, state, stats, meta, groups, runs, first, readOuts);
    drawDetail(ui, state, stats, meta, groups, runs, first, readOuts);
    ui.root.dataset.ready = "true";
    el.classList.add("jcnb-ready");
  }

  /** Every step the selected card's shown runs recorded: what the slider moves over. */
  function selectedSteps() {
    const group = groupsOf(entries("_sites"))[state.selected];
    return group ? unionSteps(shownMembers(group, entries("_sites"), rows.sites, runsNow())) : [];
  }

  /** Shows the k-th of the selected card's steps (the latest follows new steps). @param {number} k */
  function showRow(k) {
    const steps = selectedSteps();
    if (!steps.length) return;
    const at = Math.min(Math.max(k, 0), steps.length - 1);
    state.pinnedStep = at === steps.length - 1 ? null : steps[at];
    draw();
  }

  // A view off the page (an output its host replaced, a cell a windowed
  // notebook took out while scrolled away, or a page hidden while the host
  // swaps its theme) has no width to draw at: it draws when it is back,
  // which resizes it. A new width draws the cards again at their columns'
  // width, and the detail under its card's row.
  let missed = false;
  let drawnWidth = -1;
  const laidOut = () => el.isConnected && ui.root.clientWidth > 0;
  const schedule = () => {
    if (!el.isConnected) {
      missed = true;
      return;
    }
    if (!frame) frame = requestAnimationFrame(draw);
  };
  /** Draws again if the view missed a drawing or its width changed since. */
  const catchUp = () => {
    if ((missed || ui.grid.clientWidth !== drawnWidth) && laidOut()) {
      missed = false;
      schedule();
    }
  };
  // The resize observer reports the size a frame ends with: a layout that
  // lasts part of a frame (a host swapping its theme) can be drawn at and
  // never reported. A frame after each drawing, the view looks again.
  const recheck = () => requestAnimationFrame(catchUp);
  const resized = new ResizeObserver(catchUp);
  resized.observe(ui.root);
  const onGridClick = (/** @type {MouseEvent} */ event) => {
    if (/** @type {HTMLElement} */ (event.target).closest(".jcnb-live-card-tools")) return; // onCardTool's
    if (dragged) return void (dragged = false); // the end of a zoom
    const card = /** @type {HTMLElement | null} */ (/** @type {HTMLElement} */ (event.target).closest(".jcnb-live-card"));
    if (!card) return;
    state.selected = Number(card.dataset.site) === state.selected ? -1 : Number(card.dataset.site);
    state.pinnedStep = null;
    draw();
    if (state.selected >= 0) ui.detail.scrollIntoView({ block: "nearest" });
  };
  const onFlag = () => {
    const first = found();
    if (!first) return;
    if (first.site < 0) {
      const entry = entries("_scalars")[first.scalar];
      state.hiddenRuns.delete(entry?.run ?? 0);
      draw();
      const chart = ui.scalarsBox.children[groupsOf(entries("_scalars")).findIndex((g) => g.members.includes(first.scalar))];
      if (chart) chart.scrollIntoView({ block: "nearest" });
      return;
    }
    state.selected = groupsOf(entries("_sites")).findIndex((g) => g.members.includes(first.site));
    state.hiddenRuns.delete(entries("_sites")[first.site]?.run ?? 0);
    const s = rows.sites[first.site];
    state.pinnedStep = s && first.row >= 0 ? s.steps[first.row] : first.step;
    ui.filter.value = "";
    draw();
    ui.detail.focus({ preventScroll: true });
    ui.detail.scrollIntoView({ block: "nearest" });
  };
  const onDetailKey = (/** @type {KeyboardEvent} */ event) => {
    if (event.target === ui.stepInput) {
      event.stopPropagation(); // typing a number is not a notebook shortcut
      if (event.key === "Enter") {
        event.preventDefault();
        onStepTyped();
      }
      return;
    }
    if (event.target === ui.range) {
      event.stopPropagation(); // the slider moves itself; the notebook must not
      return;
    }
    const steps = selectedSteps();
    if (event.target !== ui.detail || !steps.length) return;
    const k = nearestIndex(steps, shownStep(state, steps));
    const moves = { ArrowLeft: k - 1, ArrowRight: k + 1, ArrowDown: k - 1, ArrowUp: k + 1, Home: 0, End: steps.length - 1 };
    if (!(event.key in moves)) return;
    event.preventDefault();
    event.stopPropagation(); // JupyterLab's arrows move between cells
    showRow(moves[event.key]);
  };
  /** Goes to the typed step, or the recorded step nearest to it. */
  const onStepTyped = () => {
    const steps = selectedSteps();
    const typed = Number(ui.stepInput.value);
    if (!steps.length || ui.stepInput.value.trim() === "" || !Number.isFinite(typed)) return;
    const k = nearestIndex(steps, typed);
    ui.stepInput.value = String(steps[k]);
    showRow(k);
  };
  const onRange = () => showRow(Number(ui.range.value));
  const onViewSwitch = (/** @type {MouseEvent} */ event) => {
    const button = /** @type {HTMLElement} */ (event.target).closest("button");
    if (!button || !button.dataset.view) return;
    state.view = button.dataset.view;
    draw();
  };
  const onLayer = (/** @type {Event} */ event) => {
    const box = /** @type {HTMLInputElement} */ (event.target);
    if (!box.dataset.layer) return;
    state.layers[box.dataset.layer] = box.checked;
    draw();
  };
  const onToolKey = (/** @type {KeyboardEvent} */ event) => event.stopPropagation(); // typing is not a notebook shortcut
  const onLegend = (/** @type {MouseEvent} */ event) => {
    const button = /** @type {HTMLElement} */ (event.target).closest("button");
    if (!button || button.dataset.run == null) return;
    const run = Number(button.dataset.run);
    if (state.hiddenRuns.has(run)) state.hiddenRuns.delete(run);
    else state.hiddenRuns.add(run);
    draw();
  };

  // Drag across a chart over steps to zoom every such chart to those steps
  // (TensorBoard's zoom); a double click, or the header's button, zooms out.
  /** @type {{canvas: HTMLCanvasElement, from: number, to: number} | null} */
  let drag = null;
  let dragged = false;
  const zoomBox = h("div", "jcnb-live-zoom-box");
  zoomBox.hidden = true;
  ui.root.append(zoomBox);
  const clientX = (/** @type {HTMLCanvasElement} */ canvas, /** @type {PointerEvent} */ event) => event.clientX - canvas.getBoundingClientRect().left;
  const onPointerDown = (/** @type {PointerEvent} */ event) => {
    const canvas = /** @type {HTMLCanvasElement} */ (event.target);
    if (event.button !== 0 || !(canvas instanceof HTMLCanvasElement) || !STEP_AT.has(canvas)) return;
    const at = clientX(canvas, event);
    drag = { canvas, from: at, to: at };
    dragged = false;
  };
  const onPointerMove = (/** @type {PointerEvent} */ event) => {
    if (!drag) return;
    drag.to = clientX(drag.canvas, event);
    if (Math.abs(drag.to - drag.from) < 4) return;
    const box = drag.canvas.getBoundingClientRect();
    const root = ui.root.getBoundingClientRect();
    Object.assign(zoomBox.style, {
      left: `${box.left - root.left + Math.min(drag.from, drag.to)}px`,
      top: `${box.top - root.top}px`,
      width: `${Math.abs(drag.to - drag.from)}px`,
      height: `${box.height}px`,
    });
    zoomBox.hidden = false;
  };
  const onPointerUp = () => {
    if (!drag) return;
    const { canvas, from, to } = drag;
    drag = null;
    zoomBox.hidden = true;
    if (Math.abs(to - from) < 4) return;
    const stepAt = /** @type {(px: number) => number} */ (STEP_AT.get(canvas));
    const [lo, hi] = [stepAt(Math.min(from, to)), stepAt(Math.max(from, to))];
    dragged = true; // the click that ends the drag selects no card
    state.stepRange = [lo, hi];
    state.pinnedStep = null;
    draw();
  };
  const zoomOut = () => {
    if (!state.stepRange) return;
    state.stepRange = null;
    draw();
  };
  const onDoubleClick = (/** @type {MouseEvent} */ event) => {
    if (event.target instanceof HTMLCanvasElement && STEP_AT.has(event.target)) zoomOut();
  };
  /** A card's expand button, or its CSV or JSON button: the card's numbers for the runs shown, as a download. */
  const onCardTool = (/** @type {MouseEvent} */ event) => {
    const button = /** @type {HTMLElement | null} */ (/** @type {HTMLElement} */ (event.target).closest(".jcnb-live-card-tools button"));
    if (!button) return;
    const card = /** @type {HTMLElement} */ (button.closest(".jcnb-live-card, .jcnb-live-scalar"));
    const isSite = card.classList.contains("jcnb-live-card");
    const trait = isSite ? "_sites" : "_scalars";
    const index = isSite ? Number(card.dataset.site) : [...ui.scalarsBox.children].indexOf(card);
    if (button.classList.contains("jcnb-live-expand")) {
      const key = `${isSite ? "site" : "scalar"} ${index}`;
      if (!state.expanded.delete(key)) state.expanded.add(key);
      draw();
      card.scrollIntoView({ block: "nearest" });
      return;
    }
    const group = groupsOf(entries(trait))[index];
    if (!group) return;
    const members = shownMembers(group, entries(trait), isSite ? rows.sites : rows.scalars, runsNow());
    const table = isSite ? siteTable(members, stats) : scalarTable(members);
    exportTable(button, table, group.label, group.kind || "scalar");
  };
  const onRunFilter = () => {
    state.runMatches = siteMatcher(ui.runFilter);
    draw();
  };

  ui.grid.addEventListener("click", onGridClick);
  ui.root.addEventListener("click", onCardTool);
  ui.root.addEventListener("pointerdown", onPointerDown);
  window.addEventListener("pointermove", onPointerMove);
  window.addEventListener("pointerup", onPointerUp);
  ui.root.addEventListener("dblclick", onDoubleClick);
  ui.zoomReset.addEventListener("click", zoomOut);
  ui.flag.addEventListener("click", onFlag);
  ui.filter.addEventListener("input", draw);
  ui.filter.addEventListener("keydown", onToolKey);
  ui.detail.addEventListener("keydown", onDetailKey);
  ui.stepInput.addEventListener("change", onStepTyped);
  ui.range.addEventListener("input", onRange);
  ui.viewSwitch.addEventListener("click", onViewSwitch);
  ui.layerBox.addEventListener("change", onLayer);
  ui.legend.addEventListener("click", onLegend);
  ui.runFilter.addEventListener("input", onRunFilter);
  ui.runFilter.addEventListener("keydown", onToolKey);
  ui.countLog.addEventListener("change", draw);
  ui.smoothing.addEventListener("input", drawScalarCards);
  ui.scalarLog.addEventListener("change", drawScalarCards);
  ui.outliers.addEventListener("change", drawScalarCards);
  ui.xAxis.addEventListener("change", drawScalarCards);
  ui.xAxis.addEventListener("keydown", onToolKey);
  const stopTheme = onThemeChange(schedule);
  // `initialize` has applied the update already; a host that does not call
  // it leaves that to the views. Drawing waits for the next frame.
  const receive = () => {
    take(model);
    schedule();
  };
  // A running watch's thread sends a beat (the kernel's `_progress.beat`)
  // every few seconds; a kernel that restarted or died sends nothing more,
  // and the view would otherwise show its last ETA for ever.
  let heardAt = performance.now();
  const onProgress = () => {
    heardAt = performance.now();
    if (state.silentFor) state.silentFor = 0;
    schedule();
  };
  const listen = setInterval(() => {
    const p = model.get("_progress") || {};
    const quiet = (performance.now() - heardAt) / 1000;
    const silent = p.silence && !p.done && quiet > p.silence ? quiet : 0;
    if (Boolean(silent) !== Boolean(state.silentFor) || (silent && Math.round(silent) !== Math.round(state.silentFor))) {
      state.silentFor = silent;
      schedule();
    }
  }, 1000);
  model.on("change:_update", receive);
  model.on("change:_progress", onProgress);
  take(model);
  draw();
  return () => {
    stopTheme();
    resized.disconnect();
    window.removeEventListener("pointermove", onPointerMove);
    window.removeEventListener("pointerup", onPointerUp);
    ui.tooltip.node.remove();
    model.off("change:_update", receive);
    model.off("change:_progress", onProgress);
    clearInterval(listen);
    if (frame) cancelAnimationFrame(frame);
  };
}

export default liveWidget;
