// LiveView's detail: one step of the selected site, with a slider, a step
// box, its histogram (live_step_histogram.js) and its statistics: every
// statistic of the schema that the rows hold, so one added in Python shows.
// With several runs the slider moves over every run's steps and each run's
// histogram is a line in its colour. It opens in the grid, under the row of
// the card it shows, across every column.

import { h } from "./common.js";
import { themeOf } from "./draw.js";
import { shownName, setName } from "./names.js";
import { shownMembers, unionSteps, shownStep, nearestIndex } from "./live_state.js";
import { cardsOf, cardsByGroup } from "./live_cards.js";
import { drawStepHistogram, drawStepHistograms } from "./live_step_histogram.js";
/** @typedef {import("./live_state.js").Entry} Entry */
/** @typedef {import("./live_state.js").FirstNonfinite} FirstNonfinite */
/** @typedef {import("./live_state.js").Group} Group */
/** @typedef {import("./live_state.js").LiveState} LiveState */
/** @typedef {import("./live_state.js").Runs} Runs */
/** @typedef {import("./live_state.js").StatColumns} StatColumns */
/** @typedef {import("./live_cards.js").Member} Member */

/**
 * Shows the selected card's shown step: the site's histogram and
 * statistics, or with several runs each run's at its nearest recorded
 * step; hides the detail when no card with rows is selected.
 * @param {ReturnType<typeof import("./live_layout.js").liveLayout>} ui @param {LiveState} state @param {StatColumns} stats
 * @param {Entry[]} meta the kernel's `_sites` @param {Group[]} groups the cards @param {Runs} runs
 * @param {FirstNonfinite} found
 * @param {Map<HTMLCanvasElement, (x: number, y: number) => string | null>} readOuts set for the histogram
 */
function drawDetail(ui, state, stats, meta, groups, runs, found, readOuts) {
  const { detail, range, stepInput, stepCanvas } = ui;
  const group = groups[state.selected];
  const members = group ? shownMembers(group, meta, state.rows.sites, runs).filter((m) => m.s.steps.length) : [];
  if (!members.length) {
    detail.hidden = true;
    delete detail.dataset.site;
    readOuts.delete(stepCanvas);
    return;
  }
  detail.hidden = false;
  detail.dataset.site = String(state.selected);
  placeDetail(ui, cardsByGroup(ui.grid)[state.selected]);
  const steps = unionSteps(members);
  const last = steps.length - 1;
  const k = nearestIndex(steps, /** @type {number} */ (shownStep(state, steps)));
  const step = steps[k];
  const flagged = found && members.find((m) => m.index === found.site);
  const rows = members.map((m) => ({ m, k: nearestIndex(m.s.steps, step) }));
  const isMarked = flagged && rows.some(({ m, k: row }) => m === flagged && row === found.row);
  ui.detailTitle.textContent = `${shownName(group.label)} (${group.kind}) · step ${step}${isMarked ? " · first NaN/Inf" : ""}`;
  ui.detailTitle.dir = "auto";
  range.max = String(last);
  range.value = String(k);
  stepInput.min = String(steps[0]);
  stepInput.max = String(steps[last]);
  if (document.activeElement !== stepInput) stepInput.value = String(step);
  const lastFinite = flagged && found.lastFinite != null ? ` · last finite step ${found.lastFinite}` : "";
  ui.stepNote.textContent = `row ${k + 1} of ${steps.length} recorded (steps ${steps[0]}–${steps[last]})${lastFinite}`;
  detail.dataset.step = String(step);
  detail.dataset.row = String(k);
  if (flagged) detail.dataset.markedStep = String(found.step);
  else delete detail.dataset.markedStep;
  const theme = themeOf(ui.root);
  const room = ui.detailBody.clientWidth || 0;
  if (runs.several) {
    readOuts.set(stepCanvas, drawStepHistograms(stepCanvas, rows, stats, theme, ui.countLog.checked, room));
    drawRunNumbers(ui.numbers, rows, stats);
  } else {
    const { m, k: row } = rows[0];
    readOuts.set(stepCanvas, drawStepHistogram(stepCanvas, m.s, row, stats, theme, ui.countLog.checked, room));
    drawNumbers(ui.numbers, m.s.stats[row], stats);
  }
}

/**
 * Each run's statistics at the step, a line per run led by its name after
 * a swatch of its colour.
 * @param {HTMLElement} numbers @param {{m: Member, k: number}[]} rows @param {StatColumns} stats
 */
function drawRunNumbers(numbers, rows, stats) {
  const lines = rows.map(({ m, k }) => {
    const line = h("div", "jcnb-live-run-numbers");
    line.dataset.run = String(m.run);
    const name = setName(h("span", "jcnb-live-run-name"), `${m.name} (step ${m.s.steps[k]}) `);
    name.style.setProperty("--jcnb-run", m.colour);
    const cells = h("span");
    drawNumbers(cells, m.s.stats[k], stats);
    line.append(name, cells);
    return line;
  });
  numbers.replaceChildren(...lines);
}

/**
 * One row's statistics, "mean 0.1 · std 1.2 · …", each in a cell named by
 * its key (`data-key`). A line breaks after a dot, never before one.
 * @param {HTMLElement} numbers @param {Float32Array} r @param {StatColumns} stats
 */
function drawNumbers(numbers, r, stats) {
  const cells = stats.held.map((st) => {
    const cell = h("span", "jcnb-live-number", `${st.label} ${stats.schema.text(st.key, r[stats.col[st.key]])}`);
    cell.dataset.key = st.key;
    return cell;
  });
  numbers.replaceChildren(...cells.flatMap((cell, i) => (i ? ["\u00a0· ", cell] : [cell])));
}

/**
 * Puts the detail in the grid after the last card of the row that holds
 * `card`, so it opens under that card across every column. A card the
 * filter hides has no row: the detail goes after every card.
 * @param {ReturnType<typeof import("./live_layout.js").liveLayout>} ui @param {HTMLElement | undefined} card
 */
function placeDetail(ui, card) {
  const { grid, detail } = ui;
  const shown = cardsOf(grid).filter((c) => !c.hidden);
  const at = card ? shown.indexOf(card) : -1;
  // The columns the grid has now: its resolved tracks, "330px 330px 330px".
  const tracks = getComputedStyle(grid).gridTemplateColumns.split(" ").filter((t) => t.endsWith("px")).length;
  const columns = Math.max(1, tracks);
  const last = at < 0 ? shown[shown.length - 1] : shown[Math.min(shown.length, (Math.floor(at / columns) + 1) * columns) - 1];
  if (!last) grid.append(detail);
  else if (last.nextElementSibling !== detail) last.after(detail);
}

export { drawDetail };
