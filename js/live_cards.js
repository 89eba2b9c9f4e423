// LiveView's site cards: per site, its histograms over steps (drawn by
// live_histograms.js) and small traces of mean, std, zeros % and NaN/Inf,
// then the key that says what the histogram view in use shows.

const TRACE_W = 76;
const TRACE_H = 30;
const VIEWS = ["heat", "offset", "overlay"];
const VIEW_KEYS = {
  heat: "one column per recorded step; stronger colour, more values in the bin",
  offset: "one histogram per recorded step; later steps in front",
  overlay: "one histogram per recorded step; older steps fainter, the latest solid",
};
// The statistics a card traces: the view's choice; their labels and
// formats are the schema's.
const TRACES = ["mean", "std", "zero_pct", "nonfinite"];

/** @typedef {(x: number, y: number) => string | null} ReadOut */

/**
 * A small line of one statistic over steps, with the step markers.
 * @param {HTMLCanvasElement} canvas @param {Series} s @param {StatColumns} stats @param {string} name
 * @param {ReturnType<typeof themeOf>} theme @param {{marked: number | null}} marks
 * @returns {ReadOut} what the pointer reads over the trace
 */
function drawTrace(canvas, s, stats, name, theme, marks) {
  const ctx = sized(canvas, TRACE_W, TRACE_H);
  const values = s.stats.map((r) => stats.statOf(r, name));
  const box = { x: 1, y: 3, w: TRACE_W - 2, h: TRACE_H - 6 };
  const finite = values.filter(Number.isFinite);
  const lo = finite.length ? Math.min(...finite) : 0;
  const hi = finite.length ? Math.max(...finite) : 1;
  const x = lineStepScale(s.steps, box.x, box.x + box.w);
  const y = linearScale(lo, hi > lo ? hi : lo + 1, box.y + box.h, box.y);
  ctx.strokeStyle = theme.grid;
  ctx.strokeRect(0.5, 0.5, TRACE_W - 1, TRACE_H - 1);
  if (marks.marked != null) stepLine(ctx, box, x(marks.marked), theme.bad, true);
  ctx.strokeStyle = name === "nonfinite" && hi > 0 ? theme.bad : theme.series;
  ctx.lineWidth = 1.25;
  ctx.beginPath();
  let pen = false;
  values.forEach((v, k) => {
    if (!Number.isFinite(v)) return void (pen = false);
    const px = s.steps.length > 1 ? x(s.steps[k]) : box.x + box.w / 2;
    if (pen) ctx.lineTo(px, y(v));
    else ctx.moveTo(px, y(v)), ctx.lineTo(px + 0.5, y(v));
    pen = true;
  });
  ctx.stroke();
  canvas.dataset.drawn = String(values.length);
  return (px) => {
    const k = nearestIndex(s.steps, x.invert(px));
    return `${stats.labelOf(name)}\nstep ${s.steps[k]}\nvalue ${stats.textOf(name, values[k])}`;
  };
}

/**
 * A new, empty card for site i: its title, histogram canvas and traces.
 * @param {number} i @param {(cls: string) => HTMLCanvasElement} hover makes a canvas with a read-out
 */
function newCard(i, hover) {
  const card = h("div", "jcnb-live-card");
  card.dataset.site = String(i);
  const top = h("div", "jcnb-live-card-head");
  top.append(h("span", "jcnb-live-title"), h("span", "jcnb-live-kind"));
  const traces = h("div", "jcnb-live-traces");
  for (const name of TRACES) {
    const trace = h("div", "jcnb-live-trace");
    trace.dataset.stat = name;
    trace.append(h("div", "jcnb-live-trace-label"), hover("jcnb-live-trace-canvas"));
    traces.append(trace);
  }
  card.append(top, hover("jcnb-live-over"), traces, h("div", "jcnb-hint jcnb-live-card-hint", "waiting for this site's first row…"));
  return card;
}

/**
 * Draws every site's card the filter lets through.
 * @param {ReturnType<typeof liveLayout>} ui @param {LiveState} state @param {StatColumns} stats
 * @param {{label: string, kind: string}[]} meta the kernel's `_sites`
 * @param {FirstNonfinite} found @param {Map<HTMLCanvasElement, ReadOut>} readOuts set for each canvas drawn
 */
function drawCards(ui, state, stats, meta, found, readOuts) {
  const { grid } = ui;
  ui.gridSection.hidden = !meta.length || !hasRows(state);
  while (grid.children.length < meta.length) grid.append(newCard(grid.children.length, ui.hover));
  const theme = themeOf(ui.root);
  const matches = siteMatcher(ui.filter);
  const log = ui.countLog.checked;
  const drawView = HISTOGRAM_VIEWS[state.view] || HISTOGRAM_VIEWS.heat;
  meta.forEach((site, i) => {
    const card = /** @type {HTMLElement} */ (grid.children[i]);
    card.hidden = !matches(site.label);
    card.classList.toggle("jcnb-selected", i === state.selected);
    card.querySelector(".jcnb-live-title").textContent = site.label;
    card.querySelector(".jcnb-live-kind").textContent = site.kind;
    if (card.hidden) return;
    const s = state.sites[i] || new Series();
    const empty = !s.steps.length;
    const over = /** @type {HTMLCanvasElement} */ (card.querySelector(".jcnb-live-over"));
    over.hidden = empty;
    /** @type {HTMLElement} */ (card.querySelector(".jcnb-live-traces")).hidden = empty;
    /** @type {HTMLElement} */ (card.querySelector(".jcnb-live-card-hint")).hidden = !empty;
    if (empty) return;
    const marked = found && found.site === i ? found.step : null;
    const shownRow = i === state.selected ? shownIndex(state, s) : -1;
    const marks = { marked, shown: shownRow >= 0 ? s.steps[shownRow] : null, markedRow: found && found.site === i ? found.row : -1, shownRow };
    if (marked != null) card.dataset.markedStep = String(marked);
    else delete card.dataset.markedStep;
    const ctx = sized(over, CARD_W, OVER_H);
    const drawn = drawView(ctx, s, stats, theme, marks, log);
    over.dataset.drawn = String(s.steps.length);
    over.dataset.view = state.view;
    over.dataset.xTicks = drawn.xTicks;
    over.dataset.yTicks = drawn.yTicks;
    readOuts.set(over, drawn.readOut);
    const last = s.stats[s.stats.length - 1];
    card.querySelectorAll(".jcnb-live-trace").forEach((trace, t) => {
      const name = TRACES[t];
      const canvas = /** @type {HTMLCanvasElement} */ (trace.children[1]);
      trace.children[0].textContent = `${stats.labelOf(name)} ${stats.textOf(name, stats.statOf(last, name))}`;
      readOuts.set(canvas, drawTrace(canvas, s, stats, name, theme, marks));
    });
  });
}

/**
 * The key of the histogram view in use: what the colours and lines mean.
 * @param {ReturnType<typeof liveLayout>} ui @param {LiveState} state @param {StatColumns} stats @param {FirstNonfinite} found
 */
function drawKey(ui, state, stats, found) {
  const { percentiles, schema } = stats;
  const { root, viewSwitch } = ui;
  const view = state.view;
  const theme = themeOf(root);
  const items = [];
  if (view === "heat") {
    items.push(keyItem(theme.series, VIEW_KEYS.heat));
    const first = percentiles[0];
    const last = percentiles[percentiles.length - 1];
    items.push(keyItem(theme.band, `${ordinal(first)} / ${ordinal(last)} percentile (min, max)`, "line"));
    for (const [low, high, alpha] of schema.bands) items.push(keyItem(faded(theme.band, alpha + 0.15), `${ordinal(low)}–${ordinal(high)}`));
    items.push(keyItem(theme.median, "median", "line"));
    items.push(h("span", "jcnb-muted", "x: step · y: value"));
  } else {
    items.push(keyItem(theme.series, VIEW_KEYS[view], "line"));
    items.push(h("span", "jcnb-muted", view === "offset" ? "x: value · y: step" : "x: value · y: count"));
  }
  if (found) items.push(keyItem(theme.bad, "first NaN/Inf step", "line"));
  if (state.selected >= 0) items.push(keyItem(theme.accent, "step shown below", "line"));
  ui.key.replaceChildren(...items);
  for (const button of viewSwitch.children) {
    const on = /** @type {HTMLElement} */ (button).dataset.view === view;
    button.classList.toggle("jcnb-on", on);
    button.setAttribute("aria-pressed", String(on));
  }
  root.dataset.view = view;
  root.dataset.countScale = ui.countLog.checked ? "log" : "linear";
}

export { VIEWS, drawCards, drawKey };
