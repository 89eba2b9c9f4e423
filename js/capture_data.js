// CaptureView's data: the captured sites and their statistics and
// histograms as the kernel sent them, with the readers the table, the
// histogram and the heatmap share. Nothing here draws. Which statistics
// there are, how they are named and written, and the NaN/Inf kinds with
// their colours come from the kernel's schema (schema.js), not from here.

/**
 * @typedef {{path: string, name: string, shown_name: string, label: string,
 *   call: number, type: string, shape: number[] | null, dtype: string,
 *   note: string, has_stats: boolean, has_value: boolean, same_as: number}} Site
 */

/** "(2,64,128)" for a shape, "" for a value that is not an array. @param {Site} s */
const shapeText = (s) => (s.shape ? `(${s.shape.join(",")})` : "");

/** A count with thousands separators. @param {number} n */
const countText = (n) => Math.round(n).toLocaleString("en-US");

/** The sites and their numbers, read from the model's traits at one moment. */
class CaptureData {
  /** @param {any} model */
  constructor(model) {
    this.schema = schemaOf(model);
    /** @type {Site[]} */ this.sites = model.get("_sites") || [];
    /** @type {string[]} */ this.statColumns = model.get("_stat_columns") || [];
    this.stats = new Float64Array(bytesOf(model.get("_stats")));
    this.hists = new Int32Array(bytesOf(model.get("_hists")));
    this.bins = model.get("_bins") || 1;
  }

  /** Site i's statistic `name`; NaN when the statistics buffer has no such column. @param {number} i @param {string} name */
  stat(i, name) {
    const column = this.statColumns.indexOf(name);
    return column < 0 ? NaN : this.stats[i * this.statColumns.length + column];
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
    if (key === "call") return s.call;
    if (key === "shape") return s.shape ? s.shape.reduce((a, b) => a * b, 1) : -1;
    if (key === "nonfinite") return s.has_stats ? this.nonfinite(i) : -1;
    const v = this.stat(i, key);
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

export { shapeText, countText, CaptureData };
