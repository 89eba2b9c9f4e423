// A mode comparison's data: the traits it is drawn from, decoded once per
// draw, and the shares and scales its histograms are drawn on. Nothing here
// touches the page.

import { bytesOf } from "./common.js";
import { schemaOf } from "./schema.js";

/**
 * A site: `site` is its dotted name (what filters and include= match),
 * `label` how the views name it ("dropout (output)"); `same` whether every
 * mode gave it the same values (SiteComparison.same).
 * @typedef {{site: string, label: string, type: string, shapes: (number[] | string | null)[], same: boolean}} Site
 */

// The traits a comparison is drawn from; a prefix names them in the panel.
const COMPARISON_TRAITS = ["_modes", "_sites", "_stats", "_hists", "_ranges", "_shifts", "_bins", "_note", "_noun"];

/** A share as a percentage, one decimal. @param {number} share */
function percent(share) {
  return `${(100 * share).toFixed(1)}%`;
}

/** A histogram as each bin's share of its values; null when the mode has none. @param {Int32Array} hist */
function sharesOf(hist) {
  let total = 0;
  for (const c of hist) total += c;
  return total > 0 ? Array.from(hist, (c) => c / total) : null;
}

/** The largest share of any mode: the top of the share axis. @param {(number[] | null)[]} shares */
function shareTop(shares) {
  return Math.max(1e-12, ...shares.flatMap((s) => s ?? []));
}

/**
 * A map from shares in [0, top] to pixels, square-root or linear. A
 * square-root scale keeps a spike (Dropout's zeros) from flattening every
 * other bin.
 * @param {number} top @param {{y: number, h: number}} box @param {boolean} sqrt
 */
function shareScale(top, box, sqrt) {
  return (/** @type {number} */ v) => box.y + box.h - box.h * (sqrt ? Math.sqrt(v / top) : v / top);
}

/**
 * The comparison's traits, decoded once per draw, with the schema that
 * names and formats its statistics.
 * @param {any} model
 * @param {string} prefix what the trait names start with ("" in CompareView)
 */
function readComparison(model, prefix) {
  const get = (/** @type {string} */ name) => model.get(prefix + name);
  const schema = schemaOf(model);
  /** @type {string[]} */
  const modes = get("_modes") || [];
  /** @type {string[] | undefined} */
  const own = get("_colours");
  const colours = own && own.length ? own : schema.modeColours;
  /** @type {Site[]} */
  const sites = get("_sites") || [];
  /** The statistics held per site and mode, in the order of the statistics buffer. @type {string[]} */
  const columns = get("_stat_columns") || [];
  const bins = get("_bins") || 1;
  const stats = new Float64Array(bytesOf(get("_stats")));
  const hists = new Int32Array(bytesOf(get("_hists")));
  const ranges = new Float64Array(bytesOf(get("_ranges")));
  const shifts = new Float64Array(bytesOf(get("_shifts")));
  const m = modes.length;
  const k = columns.length;
  return {
    schema,
    modes,
    sites,
    /** What the comparison needs said beside its numbers (Comparison.note); "" when nothing. @type {string} */
    note: get("_note") || "",
    /** What is compared, as the texts name it: "mode" or "run" (Comparison.noun). @type {string} */
    noun: get("_noun") || "mode",
    columns,
    /** The statistics each row shows per mode: those the schema marks compact (the detail shows all). */
    tableColumns: columns.filter((key) => schema.stat(key).compact),
    bins,
    /** @param {number} mode */
    colour: (mode) => colours[mode % colours.length],
    colours: modes.map((_, mode) => colours[mode % colours.length]),
    /** @param {number} i @param {number} mode @param {string} column */
    stat: (i, mode, column) => stats[(i * m + mode) * k + columns.indexOf(column)],
    /** @param {number} i */
    shares: (i) => modes.map((_, mode) => sharesOf(hists.subarray((i * m + mode) * bins, (i * m + mode + 1) * bins))),
    /** @param {number} i @param {number} mode @param {number} bin */
    count: (i, mode, bin) => hists[(i * m + mode) * bins + bin],
    /** @param {number} i @returns {[number, number]} */
    range: (i) => [ranges[2 * i], ranges[2 * i + 1]],
    /** @param {number} i @param {number} mode */
    modeShift: (i, mode) => shifts[i * m + mode],
    /** The largest shift over the modes, as SiteComparison.shift. @param {number} i */
    shift: (i) => {
      let best = NaN;
      for (let mode = 0; mode < m; mode++) {
        const s = shifts[i * m + mode];
        if (!Number.isNaN(s) && !(best >= s)) best = s;
      }
      return best;
    },
    /** Labels of the modes that did not reach the site. @param {number} i */
    missing: (i) => modes.filter((_, mode) => !sites[i].shapes[mode]),
    /** Whether every mode gave site i the same values. @param {number} i */
    same: (i) => sites[i].same === true,
  };
}

/** What marks a site the same everywhere: "same in all modes" (or runs). @param {{noun: string}} d */
function sameText(d) {
  return `same in all ${d.noun}s`;
}

/** The line that says what the shift measures, in the comparison's words. @param {{noun: string, schema: any}} d */
function shiftNote(d) {
  return d.schema.shiftNote.replace("{noun}", d.noun);
}


/** @typedef {ReturnType<typeof readComparison>} Comparison */

export { COMPARISON_TRAITS, percent, shareTop, shareScale, readComparison, sameText, shiftNote };
