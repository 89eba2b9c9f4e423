// CaptureView's data: the captured sites and their statistics and
// histograms as the kernel sent them, with the readers the table, the
// histogram and the heatmap share. Nothing here draws. Which statistics
// there are, how they are named and written, and the NaN/Inf kinds with
// their colours come from the kernel's schema (schema.js), not from here.

import { bytesOf, fmt } from "./common.js";
import { schemaOf } from "./schema.js";
import { shownName } from "./names.js";
/** @typedef {import("./schema.js").NonFiniteEntry} NonFiniteEntry */

/**
 * @typedef {{path: string, name: string, shown_name: string, label: string,
 *   call: number, type: string, shape: number[] | null, dtype: string,
 *   note: string, has_stats: boolean, has_value: boolean, same_as: number}} Site
 */

/** "(2,64,128)" for a shape, "" for a value that is not an array. @param {Site} s */
const shapeText = (s) => (s.shape ? `(${s.shape.join(",")})` : "");

/** A count with thousands separators. @param {number} n */
const countText = (n) => Math.round(n).toLocaleString("en-US");

/**
 * The sites and their numbers, read from the model's traits at one moment:
 * each site's statistics and histogram as its summary has them (`stat`,
 * `hist`), and, for a site whose values hold a fill, the row the table shows
 * in their place, without the fill (`rowStat`, `rowHist`, `fills`).
 */
class CaptureData {
  /** @param {any} model */
  constructor(model) {
    this.schema = schemaOf(model);
    /** @type {Site[]} */ this.sites = model.get("_sites") || [];
    /** @type {string[]} */ this.statColumns = model.get("_stat_columns") || [];
    this.stats = new Float64Array(bytesOf(model.get("_stats")));
    this.hists = new Int32Array(bytesOf(model.get("_hists")));
    this.bins = model.get("_bins") || 1;
    this.fillStats = new Float64Array(bytesOf(model.get("_fill_stats")));
    this.fillHists = new Int32Array(bytesOf(model.get("_fill_hists")));
    /** @type {FillSite[]} */ const filled = model.get("_fill_sites") || [];
    /** Site -> [its row in fillStats and fillHists, its fills]. @type {Map<number, [number, Fill[]]>} */
    this.fillRows = new Map(filled.map((f, k) => [f.site, /** @type {[number, Fill[]]} */ ([k, f.fills])]));
  }

  /** Site i's statistic `name`; NaN when the statistics buffer has no such column. @param {number} i @param {string} name */
  stat(i, name) {
    const column = this.statColumns.indexOf(name);
    return column < 0 ? NaN : this.stats[i * this.statColumns.length + column];
  }

  /** The fills site i's row leaves out; empty for most sites. @param {number} i @returns {Fill[]} */
  fills(i) {
    return this.fillRows.get(i)?.[1] || [];
  }

  /** Site i's statistic `name` as its row shows it: without the fill where it has one. @param {number} i @param {string} name */
  rowStat(i, name) {
    const row = this.fillRows.get(i);
    const column = this.statColumns.indexOf(name);
    if (!row || column < 0) return this.stat(i, name);
    return this.fillStats[row[0] * this.statColumns.length + column];
  }

  /** Site i's histogram as its row's sparkline draws it: without the fill where it has one. @param {number} i */
  rowHist(i) {
    const row = this.fillRows.get(i);
    return row ? this.fillHists.subarray(row[0] * this.bins, (row[0] + 1) * this.bins) : this.hist(i);
  }

  /** How many of site i's values are NaN or infinite. @param {number} i */
  nonfinite(i) {
    return this.schema.nonfinite.reduce((sum, k) => sum + this.stat(i, k.key), 0);
  }

  /** @param {number} i */
  total(i) {
    return this.stat(i, "count") + this.nonfinite(i);
  }

  /** Site i's histogram counts. @param {number} i */
  hist(i) {
    return this.hists.subarray(i * this.bins, (i + 1) * this.bins);
  }

  /** The dotted site (what `include` patterns match) and the label shown. @param {number} i */
  siteTexts(i) {
    const s = this.sites[i];
    return [s.path ? `${s.path}.${s.name}` : s.name, s.label];
  }

  /** What hovering a row's name says: its recorded name, and what a call output is. @param {number} i */
  nameTitle(i) {
    const s = this.sites[i];
    const [dotted] = this.siteTexts(i).map(shownName);
    const label = shownName(s.label);
    const lines = [label === dotted ? dotted : `${label}  (recorded as ${dotted})`];
    if (s.same_as >= 0) {
      const other = shownName(this.sites[s.same_as].label);
      lines.push(`The same values as ${other}: same shape, statistics and histogram (this module returns ${other}'s result).`);
    }
    return lines.join("\n");
  }

  /** What the table sorts site i by in column `key`. @param {number} i @param {string} key */
  sortValue(i, key) {
    const s = this.sites[i];
    if (key === "path") return this.siteTexts(i)[0];
    if (key === "name") return s.shown_name;
    if (key === "dtype") return s.dtype;
    if (key === "type") return s.type;
    if (key === "call") return s.call;
    if (key === "shape") return s.shape ? s.shape.reduce((a, b) => a * b, 1) : -1;
    if (key === "nonfinite") return s.has_stats ? this.nonfinite(i) : -1;
    const v = this.rowStat(i, key);
    return Number.isNaN(v) ? -Infinity : v;
  }

  /**
   * The non-finite kinds site i holds, with their counts, labels and colours.
   * @param {number} i @returns {(NonFiniteEntry & {count: number})[]}
   */
  nonfiniteKinds(i) {
    return this.schema.nonfinite.map((k) => ({ ...k, count: this.stat(i, k.key) })).filter((k) => k.count > 0);
  }

  /** What a site holds when none of its values is finite: "all 24 values are NaN". @param {number} i */
  noFiniteText(i) {
    const kinds = this.nonfiniteKinds(i);
    if (kinds.length === 1 && kinds[0].key === "nan") return `all ${countText(kinds[0].count)} values are ${kinds[0].label}`;
    return `no finite values (${kinds.map((k) => `${countText(k.count)} ${k.label}`).join(", ")})`;
  }
}

/**
 * What the kernel marks in a heatmap pixel (2 bits each, packed four to a
 * byte, the first in the lowest bits), and the colours each colour map draws
 * the marks in: apart from its own colours and the NaN/Inf ones.
 */
const MARK = { none: 0, under: 1, over: 2, fill: 3 };
const MARK_COLOURS = {
  sequential: { under: [0, 0, 0], over: [255, 255, 255], fill: [150, 150, 150] },
  diverging: { under: [0, 0, 0], over: [255, 221, 0], fill: [150, 150, 150] },
};

/** Pixel k's mark (MARK) in the packed marks; none when nothing is marked. @param {Uint8Array} marks @param {number} k */
const markAt = (marks, k) => (marks.length ? (marks[k >> 2] >> ((k & 3) * 2)) & 3 : MARK.none);

/**
 * A fill value the kernel found (masked attention logits): one value at an
 * end of the array, far from the others, or the values near one limit of the
 * float type, that fill a share of the array.
 * @typedef {{side: string, limit: number, value: number, count: number, exact: boolean}} Fill
 * @typedef {{site: number, fills: Fill[]}} FillSite a site whose table row leaves its fills out
 */

/**
 * The range the kernel drew the selected site over (`mode`), the ranges it
 * offers (`modes`), the histogram over it (`hist`, empty for "full", the
 * summary's own) with the counts below and above it, the site's fills and
 * the statistics of the values other than them (`rest`).
 * @typedef {{site: number, mode: string, modes: string[], note: string, fills: Fill[],
 *   lo: number | null, hi: number | null, under: number, over: number,
 *   rest: Record<string, number | null> | null, percentiles: number[]}} RangeMessage
 * @typedef {RangeMessage & {hist: Int32Array}} SiteRange
 */

/** The kernel's last range answer. @param {any} model @returns {SiteRange} */
function rangeOf(model) {
  /** @type {Partial<RangeMessage>} */ const answer = model.get("_range") || {};
  return {
    site: answer.site ?? -1,
    mode: answer.mode || "full",
    modes: answer.modes || ["full"],
    note: answer.note || "",
    fills: answer.fills || [],
    lo: answer.lo ?? null,
    hi: answer.hi ?? null,
    under: answer.under || 0,
    over: answer.over || 0,
    rest: answer.rest || null,
    percentiles: answer.percentiles || [0.5, 99.5],
    hist: new Int32Array(bytesOf(model.get("_range_hist"))),
  };
}

/** "−2.382e+38", or "≤ −2.127e+37" when the fill is not one value. @param {Fill} fill */
function fillValueText(fill) {
  const value = fmt(fill.exact ? fill.value : fill.limit).replace(/^-/, "\u2212");
  return fill.exact ? value : `${fill.side === "low" ? "\u2264" : "\u2265"} ${value}`;
}

/** "fill −2.382e+38 × 28,672". @param {Fill} fill */
const fillText = (fill) => `fill ${fillValueText(fill)} \u00d7 ${countText(fill.count)}`;

/** "0.5–99.5 %ile". @param {SiteRange} range */
const percentileText = (range) => `${range.percentiles[0]}\u2013${range.percentiles[1]} %ile`;

export { shapeText, countText, CaptureData, MARK, MARK_COLOURS, markAt, rangeOf, fillValueText, fillText, percentileText };
