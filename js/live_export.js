// A card's numbers as a file, as TensorBoard offers a chart's data: the rows
// the browser holds for a site (its statistics per step) or a scalar (its
// value per step), for every run the legend shows, as CSV or JSON.

import { h, csvText, download, numberField } from "./common.js";
/** @typedef {import("./live_state.js").Series} Series */
/** @typedef {import("./live_state.js").StatColumns} StatColumns */

/**
 * @typedef {import("./common.js").Table} Table
 * here one row per run and recorded step: the run's name (empty for a view
 * of one run), the step, then the values
 */

/**
 * A site's statistics per run and step, named by their keys.
 * @param {{s: Series, name: string}[]} members the shown runs' rows @param {StatColumns} stats
 * @returns {Table}
 */
function siteTable(members, stats) {
  const keys = Object.keys(stats.col);
  const rows = members.flatMap((m) => m.s.steps.map((step, k) => [m.name, step, ...keys.map((key) => m.s.stats[k][stats.col[key]])]));
  return { columns: ["run", "step", ...keys.map((key) => (isEstimated(key) ? `${key} (estimated)` : key))], rows };
}

/**
 * Whether a column is a percentile read from the histogram (p7 ... p93):
 * its bin's values taken to lie evenly across it, exact zeros at 0. The
 * 0th and 100th are the exact minimum and maximum.
 * @param {string} key
 */
function isEstimated(key) {
  return /^p\d+$/.test(key) && key !== "p0" && key !== "p100";
}

const ESTIMATE_NOTE =
  "Columns marked (estimated) are percentiles read from each step's histogram: the values of a bin taken to lie evenly across it, and exact zeros at 0. p0 and p100 are the exact minimum and maximum.";

/**
 * A scalar's value per run and step.
 * @param {{s: Series, name: string}[]} members the shown runs' rows
 * @returns {Table}
 */
function scalarTable(members) {
  const rows = members.flatMap((m) => m.s.steps.map((step, k) => [m.name, step, m.s.stats[k][0]]));
  return { columns: ["run", "step", "value"], rows };
}

/**
 * The table as JSON: the card's name and kind, then a list of records. NaN
 * and the infinities, which JSON lacks, are written as the strings "nan",
 * "inf" and "-inf".
 * @param {Table} table @param {string} name @param {string} kind
 */
function jsonText(table, name, kind) {
  const value = (/** @type {string | number} */ x) => (typeof x === "number" && !Number.isFinite(x) ? numberField(x) : x);
  const records = table.rows.map((row) => Object.fromEntries(row.map((x, i) => [table.columns[i], value(x)])));
  const noted = table.columns.some((column) => column.endsWith(" (estimated)"));
  return JSON.stringify({ name, kind, ...(noted ? { note: ESTIMATE_NOTE } : {}), rows: records }, null, 1);
}

/** A file name from a card's name: letters, digits, dots, dashes and underscores. @param {string} name @param {string} ext */
function fileName(name, ext) {
  return `${name.replace(/[^\w.-]+/g, "_").replace(/^_+|_+$/g, "") || "data"}.${ext}`;
}

/**
 * The tools at the right of a card's head: a button that widens the card to
 * the whole row and doubles its height (TensorBoard's expanded card), and
 * the CSV and JSON downloads.
 */
function cardTools() {
  const tools = h("span", "jcnb-live-card-tools");
  const expand = h("button", "jcnb-live-expand", "\u2922");
  expand.setAttribute("aria-pressed", "false");
  tools.append(expand, exportButtons());
  return tools;
}

/** Marks a card expanded or not, and says what its button does. @param {HTMLElement} card @param {boolean} expanded */
function showExpanded(card, expanded) {
  card.classList.toggle("jcnb-expanded", expanded);
  const button = /** @type {HTMLElement} */ (card.querySelector(".jcnb-live-expand"));
  button.setAttribute("aria-pressed", String(expanded));
  button.title = expanded ? "back to the card's own size" : "widen this card to the whole row";
}

/** The CSV and JSON buttons of a card's head. */
function exportButtons() {
  const box = h("span", "jcnb-live-export");
  for (const format of ["CSV", "JSON"]) {
    const button = h("button", "jcnb-live-export-button", format);
    button.dataset.format = format.toLowerCase();
    button.title = `download this card's numbers as ${format}`;
    box.append(button);
  }
  return box;
}

/**
 * Downloads a card's table in the format of the button pressed.
 * @param {HTMLElement} button @param {Table} table @param {string} name @param {string} kind
 */
function exportTable(button, table, name, kind) {
  if (button.dataset.format === "csv") download(fileName(name, "csv"), csvText(table), "text/csv");
  else download(fileName(name, "json"), jsonText(table, name, kind), "application/json");
}

export { siteTable, scalarTable, jsonText, cardTools, showExpanded, exportTable };
