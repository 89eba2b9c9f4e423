// LiveView's state: the rows each site and scalar holds in the browser, built
// from the kernel's updates, and what the view shows (the selected site, the
// pinned step, the histogram view). The drawing files read it; only
// live_view.js's event handlers change it.

/** The rows a site holds in the browser. */
class Series {
  constructor() {
    /** @type {number[]} */ this.steps = [];
    /** @type {Float32Array[]} */ this.stats = [];
    /** @type {Int32Array[]} */ this.hists = [];
  }

  /** Forgets the last `n` rows, which the kernel has rewritten. @param {number} n */
  drop(n) {
    if (!n) return;
    this.steps.length -= n;
    this.stats.length -= n;
    this.hists.length = Math.max(0, this.hists.length - n);
  }
}

/**
 * @typedef {object} LiveState
 * @property {Series[]} sites rows per site, by the site's index in `_sites`
 * @property {Series[]} scalars rows per scalar, by its index in `_scalar_names`
 * @property {number} lastSeq the last update applied
 * @property {boolean} stale an update was missed: wait for the next base one
 * @property {number} selected the site the detail shows, or -1
 * @property {number | null} pinnedStep the step the detail shows; null follows the latest
 * @property {string} view the histogram view: "heat", "offset" or "overlay"
 */

/** A view with no rows yet. @returns {LiveState} */
function liveState() {
  return { sites: [], scalars: [], lastSeq: -1, stale: false, selected: -1, pinnedStep: null, view: "heat" };
}

/**
 * Where each statistic sits in a row, how the schema names and writes it,
 * and the readers the charts share. "nonfinite" reads as one more
 * statistic: the NaN and Inf counts added up.
 * @param {string[]} columns the kernel's `_stat_columns`
 * @param {ReturnType<typeof schemaOf>} schema the kernel's `_schema`
 */
function statColumns(columns, schema) {
  /** @type {Record<string, number>} */
  const col = Object.fromEntries(columns.map((name, i) => [name, i]));
  const pcol = (/** @type {number} */ q) => col[`p${q}`];
  const nonfiniteOf = (/** @type {Float32Array} */ r) => schema.nonfinite.reduce((sum, n) => sum + r[col[n.key]], 0);
  const statOf = (/** @type {Float32Array} */ r, /** @type {string} */ name) => (name === "nonfinite" ? nonfiniteOf(r) : r[col[name]]);
  const labelOf = (/** @type {string} */ name) => (name === "nonfinite" ? schema.nonfiniteLabel : schema.label(name));
  const textOf = (/** @type {string} */ name, /** @type {number} */ x) => (name === "nonfinite" ? statText("count", x) : schema.text(name, x));
  return {
    col,
    width: columns.length,
    schema,
    /** The schema's percentiles that the rows hold. */
    percentiles: schema.percentiles.filter((q) => pcol(q) !== undefined),
    /**
     * The statistics a reader is shown, in the schema's order: those the rows
     * hold that the tables give a column, and the NaN/Inf counts (not the
     * histogram's range edges).
     */
    held: schema.stats.filter((s) => s.key in col && (s.column || schema.nonfinite.some((n) => n.key === s.key))),
    pcol,
    nonfiniteOf,
    statOf,
    labelOf,
    textOf,
  };
}

/** @typedef {ReturnType<typeof statColumns>} StatColumns */

/**
 * Applies one `_update` to the state: a base update starts over, a delta
 * rewrites each series' last rows and appends new ones.
 * @param {LiveState} state @param {any} update @param {number} bins @param {number} width columns per row
 */
function applyUpdate(state, update, bins, width) {
  const seq = update.seq;
  if (seq === state.lastSeq) return;
  const base = update.base;
  if (!base && seq !== state.lastSeq + 1) state.stale = true; // a missed update: wait for the next base one
  state.lastSeq = seq;
  if (base) {
    state.sites = [];
    state.scalars = [];
    state.stale = false;
  }
  if (state.stale) return;
  const sites = state.sites;
  const scalars = state.scalars;
  const steps = new Float64Array(bytesOf(update.steps));
  const stats = new Float32Array(bytesOf(update.stats));
  const hists = new Int32Array(bytesOf(update.hists));
  const index = new Int32Array(bytesOf(update.index));
  let row = 0;
  for (let k = 0; k < index.length; k += 3) {
    const site = index[k];
    const n = index[k + 2];
    while (sites.length <= site) sites.push(new Series());
    const s = sites[site];
    s.drop(index[k + 1]);
    for (let r = row; r < row + n; r++) {
      s.steps.push(steps[r]);
      s.stats.push(stats.subarray(r * width, (r + 1) * width));
      s.hists.push(hists.subarray(r * bins, (r + 1) * bins));
    }
    row += n;
  }
  const pairs = new Float64Array(bytesOf(update.scalar_rows));
  const sindex = new Int32Array(bytesOf(update.scalar_index));
  row = 0;
  for (let k = 0; k < sindex.length; k += 3) {
    while (scalars.length <= sindex[k]) scalars.push(new Series());
    const s = scalars[sindex[k]];
    s.drop(sindex[k + 1]);
    for (let r = row; r < row + sindex[k + 2]; r++) {
      s.steps.push(pairs[2 * r]);
      s.stats.push(new Float32Array([pairs[2 * r + 1]]));
    }
    row += sindex[k + 2];
  }
}

/** Whether any site or scalar holds a row. @param {LiveState} state */
const hasRows = (state) => state.sites.some((s) => s.steps.length) || state.scalars.some((s) => s.steps.length);

/**
 * Where the first NaN/Inf is in the browser's rows: the site, the step
 * the kernel flagged, its row (or the first recorded row after it, if
 * that step was thinned out) and the last finite step before it.
 * @param {LiveState} state @param {any} progress the kernel's `_progress` @param {StatColumns} stats
 * @returns {{site: number, step: number, row: number, lastFinite: number | null} | null}
 */
function firstNonfinite(state, progress, stats) {
  const p = progress || {};
  const site = p.nonfinite_site;
  if (!p.nonfinite || site == null || site < 0) return null;
  const step = p.nonfinite.step;
  const s = state.sites[site];
  if (!s || !s.steps.length) return { site, step, row: -1, lastFinite: null };
  let row = s.steps.indexOf(step);
  if (row < 0) row = s.steps.findIndex((v) => v >= step);
  let lastFinite = null;
  for (let k = 0; k < s.steps.length && s.steps[k] < step; k++) if (stats.nonfiniteOf(s.stats[k]) === 0) lastFinite = s.steps[k];
  return { site, step, row, lastFinite };
}

/** @typedef {ReturnType<typeof firstNonfinite>} FirstNonfinite */

/** The index of the step nearest to `step` in `steps`. @param {number[]} steps @param {number} step */
function nearestIndex(steps, step) {
  let best = 0;
  for (let k = 1; k < steps.length; k++) if (Math.abs(steps[k] - step) < Math.abs(steps[best] - step)) best = k;
  return best;
}

/** The row the detail shows: the pinned step's nearest row, or the latest. @param {LiveState} state @param {Series} s */
function shownIndex(state, s) {
  if (!s.steps.length) return -1;
  return state.pinnedStep == null ? s.steps.length - 1 : nearestIndex(s.steps, state.pinnedStep);
}

export { Series, liveState, statColumns, applyUpdate, hasRows, firstNonfinite, nearestIndex, shownIndex };
