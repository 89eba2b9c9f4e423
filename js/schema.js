// What every view draws with, as the kernel sends it once per widget in the
// `_schema` trait (jaxcapture_nb/stats/schema.py, as_json): the statistics with
// their labels and formats, the percentile bands, the colours and the
// heatmap's NaN/Inf colour indices. Views take these from here rather than
// keep copies, so a statistic added in Python shows in every view.

import { fmt, followPageTheme } from "./common.js";
import { useDataColours } from "./draw.js";

/**
 * @typedef {{ key: string, label: string, header: string, format: string, column: boolean, compact: boolean }} StatEntry
 * @typedef {{ key: string, label: string, index: number, rgb: number[] }} NonFiniteEntry
 */

/** A statistic's value as its format says: a number, a percentage or an exact count. @param {string} format @param {number} x */
function statText(format, x) {
  if (x === null || Number.isNaN(x)) return "nan";
  if (format === "percent") return x.toFixed(1);
  if (format === "count") return Number.isFinite(x) ? String(Math.round(x)) : fmt(x);
  return fmt(x);
}

/** The schema of a widget's model, with lookups over it. @param {any} model */
function schemaOf(model) {
  const raw = model.get("_schema") || {};
  /** @type {StatEntry[]} */
  const stats = raw.stats || [];
  /** @type {NonFiniteEntry[]} */
  const nonfinite = raw.nonfinite || [];
  const byKey = new Map(stats.map((s) => [s.key, s]));
  return {
    stats,
    nonfinite,
    nonfiniteLabel: /** @type {string} */ (raw.nonfinite_label || "NaN/Inf"),
    /** The top colour index of finite values; the NaN/Inf indices follow it. */
    finiteTop: Number(raw.finite_colours || 253) - 1,
    /** @type {number[]} */ percentiles: raw.percentiles || [],
    /** (low, high, opacity) per band, widest and faintest first. @type {number[][]} */ bands: raw.bands || [],
    /** @type {number} */ median: raw.median ?? 50,
    /** @type {Record<string, string>} */ colours: raw.colours || {},
    /** @type {string[]} */ modeColours: raw.mode_colours || [],
    /** One colour per run of a view of several runs. @type {string[]} */ runColours: raw.run_colours || raw.mode_colours || ["#808080"],
    /** @type {string} */ shiftNote: raw.shift_note || "",
    /** The statistic named `key`, or a plain entry naming it by its key. @param {string} key @returns {StatEntry} */
    stat: (key) => byKey.get(key) || { key, label: key, header: key, format: "number", column: false, compact: false },
    /** How the widgets name a statistic. @param {string} key */
    label: (key) => (byKey.get(key) || { label: key }).label,
    /** A statistic's value written as its format says. @param {string} key @param {number} x */
    text: (key, x) => statText((byKey.get(key) || { format: "number" }).format, x),
    /** The statistics the tables give a column each, in order. */
    columns: () => stats.filter((s) => s.column),
  };
}

/**
 * Sets the data colours of the schema as the theme's custom properties on a
 * widget's root, so canvas drawings (themeOf) and CSS read the same values,
 * and hands them to themeOf for drawings made before the root is in the page;
 * the root follows a dark page's theme too (followPageTheme).
 * @param {HTMLElement} el @param {ReturnType<typeof schemaOf>} schema
 */
function applyColours(el, schema) {
  followPageTheme(el);
  useDataColours(schema.colours);
  for (const [name, colour] of Object.entries(schema.colours)) el.style.setProperty(`--jcnb-${name}`, colour);
}

export { schemaOf, statText, applyColours };
