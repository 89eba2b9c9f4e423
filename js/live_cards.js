// LiveView's site cards: per site, its histograms over steps (drawn by
// live_heat.js, live_lines.js and live_run_bands.js) and small traces of the
// schema's compact statistics (mean, std, zeros %) and NaN/Inf. Cards fill the
// grid's columns, and their charts are drawn as wide as the card is.

import { h, sized, siteMatcher } from "./common.js";
import { themeOf, linearScale } from "./draw.js";
import { setName } from "./names.js";
import { shownMembers, shownView, windowed, recordedByAny, unionSteps, shownStep, hasRows, nearestIndex } from "./live_state.js";
import { CARD_W, OVER_H, STEP_AT, lineStepScale, stepLine } from "./live_histograms.js";
import { drawHeat } from "./live_heat.js";
import { drawOffset, drawOverlay } from "./live_lines.js";
import { drawRunBands } from "./live_run_bands.js";
import { cardTools, showExpanded } from "./live_export.js";
/** @typedef {import("./live_histograms.js").Drawn} Drawn */
/** @typedef {import("./live_state.js").Entry} Entry */
/** @typedef {import("./live_state.js").FirstNonfinite} FirstNonfinite */
/** @typedef {import("./live_state.js").Group} Group */
/** @typedef {import("./live_state.js").LiveState} LiveState */
/** @typedef {import("./live_state.js").Runs} Runs */
/** @typedef {import("./live_state.js").Series} Series */
/** @typedef {import("./live_state.js").StatColumns} StatColumns */

const TRACE_H = 30;
// Room between a card's traces (CSS .jcnb-live-traces gap).
const TRACE_GAP = 5;
/** Each histogram view's drawing function, by the view's name. @type {Record<string, typeof drawHeat>} */
const HISTOGRAM_VIEWS = { heat: drawHeat, offset: drawOffset, overlay: drawOverlay };

/** @typedef {(x: number, y: number) => string | null} ReadOut */
/** @typedef {{index: number, run: number, s: Series, colour: string, name: string}} Member */

// The height of one run's histograms in a card of several runs.
const PANEL_H = 104;

/**
 * A small line of one statistic over steps, one line per run, with the
 * step markers.
 * @param {HTMLCanvasElement} canvas @param {Member[]} members @param {StatColumns} stats @param {string} name
 * @param {ReturnType<typeof themeOf>} theme @param {number | null} marked the first NaN/Inf's step
 * @param {number} width the trace's width
 * @returns {ReadOut} what the pointer reads over the trace
 */
function drawTrace(canvas, members, stats, name, theme, marked, width) {
  const ctx = sized(canvas, width, TRACE_H);
  const lines = members.map((m) => ({ m, values: m.s.stats.map((r) => stats.statOf(r, name)) }));
  const box = { x: 1, y: 3, w: width - 2, h: TRACE_H - 6 };
  const finite = lines.flatMap((l) => l.values.filter(Number.isFinite));
  const lo = finite.length ? Math.min(...finite) : 0;
  const hi = finite.length ? Math.max(...finite) : 1;
  const axis = unionSteps(members);
  const x = lineStepScale(axis, box.x, box.x + box.w);
  const y = linearScale(lo, hi > lo ? hi : lo + 1, box.y + box.h, box.y);
  ctx.strokeStyle = theme.grid;
  ctx.strokeRect(0.5, 0.5, width - 1, TRACE_H - 1);
  if (marked != null) stepLine(ctx, box, x(marked), theme.bad, true);
  ctx.lineWidth = 1.25;
  for (const { m, values } of lines) {
    const bad = name === "nonfinite" && values.some((v) => v > 0);
    ctx.strokeStyle = bad && members.length === 1 ? theme.bad : m.colour;
    ctx.beginPath();
    let pen = false;
    values.forEach((v, k) => {
      if (!Number.isFinite(v)) return void (pen = false);
      const px = axis.length > 1 ? x(m.s.steps[k]) : box.x + box.w / 2;
      if (pen) ctx.lineTo(px, y(v));
      else ctx.moveTo(px, y(v)), ctx.lineTo(px + 0.5, y(v));
      pen = true;
    });
    ctx.stroke();
  }
  canvas.dataset.drawn = String(Math.max(0, ...lines.map((l) => l.values.length)));
  return (px) => {
    const step = axis[nearestIndex(axis, x.invert(px))];
    const text = lines.map(({ m, values }) => {
      const k = nearestIndex(m.s.steps, step);
      return `${m.name ? `${m.name}: ` : "value "}${stats.textOf(name, values[k])}`;
    });
    return `${stats.labelOf(name)}\nstep ${step}\n${text.join("\n")}`;
  };
}

/**
 * A new, empty card for group i: its title, histogram panels and traces.
 * @param {number} i @param {(cls: string) => HTMLCanvasElement} hover makes a canvas with a read-out
 * @param {string[]} traced the statistics it traces (StatColumns' `traced`)
 */
function newCard(i, hover, traced) {
  const card = h("div", "jcnb-live-card");
  card.dataset.site = String(i);
  const top = h("div", "jcnb-live-card-head");
  top.append(h("span", "jcnb-live-title"), h("span", "jcnb-live-kind"), cardTools());
  const traces = h("div", "jcnb-live-traces");
  for (const name of traced) {
    const trace = h("div", "jcnb-live-trace");
    trace.dataset.stat = name;
    trace.append(h("div", "jcnb-live-trace-label"), hover("jcnb-live-trace-canvas"));
    traces.append(trace);
  }
  card.append(top, h("div", "jcnb-live-panels"), traces, h("div", "jcnb-hint jcnb-live-card-hint", WAITING_HINT));
  return card;
}

/**
 * The histogram canvases of a card, `n` of them shown: one per run, or one
 * for the bands view. Each run's has its name above it in its colour.
 * @param {HTMLElement} card @param {number} n @param {(cls: string) => HTMLCanvasElement} hover
 * @returns {{panel: HTMLElement, label: HTMLElement, canvas: HTMLCanvasElement}[]}
 */
function panelsOf(card, n, hover) {
  const box = /** @type {HTMLElement} */ (card.querySelector(".jcnb-live-panels"));
  while (box.children.length < n) {
    const panel = h("div", "jcnb-live-panel");
    panel.append(h("div", "jcnb-live-panel-label"), hover("jcnb-live-over"));
    box.append(panel);
  }
  return [...box.children].map((panel, j) => {
    /** @type {HTMLElement} */ (panel).hidden = j >= n;
    return { panel: /** @type {HTMLElement} */ (panel), label: /** @type {HTMLElement} */ (panel.children[0]), canvas: /** @type {HTMLCanvasElement} */ (panel.children[1]) };
  });
}

/**
 * A trace label's value: three significant digits (its title has all
 * float32 holds), counts and percentages as their format writes them.
 * @param {StatColumns} stats @param {string} name @param {number} x
 */
function shortText(stats, name, x) {
  const format = name === "nonfinite" ? "count" : stats.schema.stat(name).format;
  if (format !== "number" || !Number.isFinite(x) || x === 0) return stats.textOf(name, x);
  const a = Math.abs(x);
  if (a >= 1e-2 && a < 1e4) return String(Number(x.toPrecision(3)));
  return x.toExponential(1).replace("e+", "e");
}

/** A statistic's value to float32's seven significant digits. @param {StatColumns} stats @param {string} name @param {number} x */
function fullText(stats, name, x) {
  const format = name === "nonfinite" ? "count" : stats.schema.stat(name).format;
  if (format !== "number" || !Number.isFinite(x)) return stats.textOf(name, x);
  return String(Number(x.toPrecision(7)));
}

/** The cards of the grid, in the order of the groups (the detail may sit between them). @param {HTMLElement} grid */
const cardsOf = (grid) => /** @type {HTMLElement[]} */ ([...grid.querySelectorAll(":scope > .jcnb-live-card")]);

/** The grid's cards by the index of the group each draws (`dataset.site`), whatever their order on the page. @param {HTMLElement} grid */
function cardsByGroup(grid) {
  return cardsOf(grid).sort((a, b) => Number(a.dataset.site) - Number(b.dataset.site));
}

/** The kind of the cards that hold a site's evaluations, as `kind_label` names it in the kernel. */
const EVALUATION = "evaluation";

/**
 * Puts each site's evaluation card right after its training card, so that the
 * two read side by side at the same steps; the cards keep their group's index.
 * @param {HTMLElement[]} cards by group @param {Group[]} groups
 */
function pairEvaluations(cards, groups) {
  /** @type {Map<string, HTMLElement>} */
  const trained = new Map();
  groups.forEach((group, g) => {
    if (group.kind !== EVALUATION) trained.set(group.label, cards[g]);
  });
  groups.forEach((group, g) => {
    const partner = group.kind === EVALUATION ? trained.get(group.label) : undefined;
    if (partner && partner.nextElementSibling !== cards[g]) partner.after(cards[g]);
  });
}

const WAITING_HINT = "waiting for this site's first row…";
const HIDDEN_HINT = "every run that recorded this site is hidden: show one in the legend";

/**
 * Draws every card the filter lets through: per site (and, with several
 * runs, per run) its histograms over steps, and the traces, as wide as the
 * card's column.
 * @param {ReturnType<typeof import("./live_layout.js").liveLayout>} ui @param {LiveState} state @param {StatColumns} stats
 * @param {Entry[]} meta the kernel's `_sites` @param {Group[]} groups the cards @param {Runs} runs
 * @param {FirstNonfinite} found @param {Map<HTMLCanvasElement, ReadOut>} readOuts set for each canvas drawn
 */
function drawCards(ui, state, stats, meta, groups, runs, found, readOuts) {
  const { grid } = ui;
  ui.gridSection.hidden = !meta.length || !hasRows(state.rows);
  const cards = cardsByGroup(grid);
  while (cards.length < groups.length) cards.push(grid.appendChild(newCard(cards.length, ui.hover, stats.traced)));
  pairEvaluations(cards, groups);
  const theme = themeOf(ui.root);
  const matches = siteMatcher(ui.filter);
  groups.forEach((group, g) => {
    const card = cards[g];
    card.hidden = !matches(group.label);
    card.classList.toggle("jcnb-selected", g === state.selected);
    showExpanded(card, state.expanded.has(`site ${g}`));
    const title = setName(/** @type {HTMLElement} */ (card.querySelector(".jcnb-live-title")), group.label);
    title.title = title.textContent || "";
    /** @type {HTMLElement} */ (card.querySelector(".jcnb-live-kind")).textContent = group.kind;
    if (card.hidden) return;
    // Zoomed, the histograms over steps show the steps of the zoom only.
    const members = shownMembers(group, meta, state.rows.sites, runs)
      .map((m) => ({ ...m, s: windowed(m.s, state.stepRange) }))
      .filter((m) => m.s.steps.length);
    const empty = !members.length;
    const panels = /** @type {HTMLElement} */ (card.querySelector(".jcnb-live-panels"));
    panels.hidden = empty;
    /** @type {HTMLElement} */ (card.querySelector(".jcnb-live-traces")).hidden = empty;
    const hint = /** @type {HTMLElement} */ (card.querySelector(".jcnb-live-card-hint"));
    hint.hidden = !empty;
    // A finished run hidden in the legend has rows: it is not waiting for any.
    hint.textContent = recordedByAny(group, state.rows.sites) ? HIDDEN_HINT : WAITING_HINT;
    const flagged = found && members.find((m) => m.index === found.site);
    if (flagged) card.dataset.markedStep = String(found.step);
    else delete card.dataset.markedStep;
    if (empty) return;
    // The column's width; a card not laid out yet (off the page) has none.
    const width = Math.floor(panels.clientWidth) || CARD_W;
    const axis = unionSteps(members);
    const shown = g === state.selected ? shownStep(state, axis) : null;
    drawPanels(card, ui, state, stats, members, runs, { axis, shown, found, theme, width }, readOuts);
    const last = members[0].s.stats[members[0].s.stats.length - 1];
    const traceWidth = Math.floor((width - (stats.traced.length - 1) * TRACE_GAP) / stats.traced.length);
    card.querySelectorAll(".jcnb-live-trace").forEach((trace, t) => {
      const name = stats.traced[t];
      const label = /** @type {HTMLElement} */ (trace.children[0]);
      const canvas = /** @type {HTMLCanvasElement} */ (trace.children[1]);
      // With several runs the values differ per run: the read-out has them.
      const value = stats.statOf(last, name);
      label.textContent = runs.several ? stats.labelOf(name) : `${stats.labelOf(name)} ${shortText(stats, name, value)}`;
      label.title = runs.several ? stats.labelOf(name) : `${stats.labelOf(name)} ${fullText(stats, name, value)}`;
      readOuts.set(canvas, drawTrace(canvas, members, stats, name, theme, flagged ? found.step : null, traceWidth));
    });
  });
}

/**
 * A card's histograms: the view in use per run, one above the other on the
 * card's step axis, or the runs' bands overlaid in one chart.
 * @param {HTMLElement} card @param {ReturnType<typeof import("./live_layout.js").liveLayout>} ui @param {LiveState} state @param {StatColumns} stats
 * @param {Member[]} members @param {Runs} runs
 * @param {{axis: number[], shown: number | null, found: FirstNonfinite, theme: ReturnType<typeof themeOf>, width: number}} at
 * @param {Map<HTMLCanvasElement, ReadOut>} readOuts
 */
function drawPanels(card, ui, state, stats, members, runs, at, readOuts) {
  const { axis, shown, found, theme, width } = at;
  const log = ui.countLog.checked;
  const view = shownView(state.view, runs);
  const bands = view === "bands";
  const panels = panelsOf(card, bands ? 1 : members.length, ui.hover);
  const grow = card.classList.contains("jcnb-expanded") ? 2 : 1; // an expanded card's charts are twice as tall
  const marksOf = (/** @type {Member} */ m) => {
    const flagged = found && found.site === m.index;
    const shownRow = shown == null ? -1 : nearestIndex(m.s.steps, shown);
    // found.row counts the site's rows; a zoom shows some of them.
    const markedRow = !flagged ? -1 : state.stepRange ? m.s.steps.indexOf(found.step) : found.row;
    return { marked: flagged ? found.step : null, shown, markedRow, shownRow };
  };
  if (bands) {
    const { canvas, label } = panels[0];
    label.hidden = true;
    const marked = members.map(marksOf).find((mk) => mk.marked != null)?.marked ?? null;
    const frame = { w: width, h: OVER_H * grow, stepAxis: axis, layers: state.layers, several: true };
    const drawn = drawRunBands(sized(canvas, width, frame.h), members, stats, theme, { marked, shown }, frame);
    return finishCanvas(canvas, drawn, axis.length, "bands", readOuts);
  }
  const drawView = HISTOGRAM_VIEWS[view] || HISTOGRAM_VIEWS.heat;
  members.forEach((m, j) => {
    const { canvas, label } = panels[j];
    label.hidden = !runs.several;
    setName(label, m.name);
    label.style.setProperty("--jcnb-run", m.colour);
    canvas.dataset.run = String(m.run);
    const height = (runs.several ? PANEL_H : OVER_H) * grow;
    // Several runs: each run's histograms in its colour, and of the bands
    // only their lines, in the text colours: no run's colour reads as
    // another's band.
    const look = runs.several ? { ...theme, series: m.colour, band: theme.fg2, median: theme.fg } : theme;
    const frame = { w: width, h: height, stepAxis: view === "heat" ? axis : m.s.steps, layers: state.layers, several: runs.several };
    const drawn = drawView(sized(canvas, width, height), m.s, stats, look, marksOf(m), log, frame);
    finishCanvas(canvas, drawn, m.s.steps.length, view, readOuts);
  });
}

/** Marks a drawn histogram canvas for readers and tests, and sets its read-out. */
function finishCanvas(/** @type {HTMLCanvasElement} */ canvas, /** @type {Drawn} */ drawn, /** @type {number} */ rows, /** @type {string} */ view, /** @type {Map<HTMLCanvasElement, ReadOut>} */ readOuts) {
  canvas.dataset.drawn = String(rows);
  canvas.dataset.view = view;
  if (drawn.stepAt) STEP_AT.set(canvas, drawn.stepAt);
  else STEP_AT.delete(canvas);
  canvas.dataset.xTicks = drawn.xTicks;
  canvas.dataset.yTicks = drawn.yTicks;
  canvas.dataset.unfinite = String(drawn.unfinite ?? 0);
  readOuts.set(canvas, drawn.readOut);
}

export { cardsOf, cardsByGroup, drawCards };
