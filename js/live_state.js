// LiveView's state: the rows each site and scalar holds in the browser, built
// from the kernel's updates, and what the view shows (the selected site, the
// pinned step, the histogram view). The drawing files read it; only
// live_view.js's event handlers change it.

import { bytesOf } from "./common.js";
import { statText, schemaOf } from "./schema.js";
import { themeOf } from "./draw.js";

/** The rows a site holds in the browser. */
class Series {
  constructor() {
    /** @type {number[]} */ this.steps = [];
    /** @type {Float32Array[]} */ this.stats = [];
    /** @type {Int32Array[]} */ this.hists = [];
    /** A scalar's wall time per row, in seconds since the epoch (NaN where not known). @type {number[]} */ this.walls = [];
  }

  /** Forgets the last `n` rows, which the kernel has rewritten. @param {number} n */
  drop(n) {
    if (!n) return;
    this.steps.length -= n;
    this.stats.length -= n;
    this.hists.length = Math.max(0, this.hists.length - n);
    this.walls.length = Math.max(0, this.walls.length - n);
  }
}

/**
 * @typedef {object} LiveRows the rows a widget holds in the browser, shared by all its views
 * @property {Series[]} sites rows per site, by the site's index in `_sites`
 * @property {Series[]} scalars rows per scalar, by its index in `_scalars`
 * @property {number} lastSeq the last update applied
 * @property {boolean} stale an update was missed: wait for the next base one
 */

/** A widget with no rows yet. @returns {LiveRows} */
function liveRows() {
  return { sites: [], scalars: [], lastSeq: -1, stale: false };
}

/**
 * @typedef {{heat: boolean, zeros: boolean, bands: boolean, median: boolean, extremes: boolean}} Layers
 * what the heat view draws: the heat, its exact zeros apart at 0, the
 * percentile bands, the median and the lowest and highest percentile (min and max)
 */

/**
 * @typedef {object} LiveState
 * @property {LiveRows} rows the widget's rows
 * @property {number} selected the card the detail shows, or -1
 * @property {number | null} pinnedStep the step the detail shows; null follows the latest
 * @property {string} view the histogram view: "heat", "offset", "overlay" or (several runs) "bands"
 * @property {Layers} layers what the heat view draws
 * @property {Set<number>} hiddenRuns the runs the legend has turned off
 * @property {(name: string) => boolean} runMatches whether the run filter lets a run's name through
 * @property {[number, number] | null} stepRange the steps the charts over steps are zoomed to; null shows all
 * @property {Set<string>} expanded the cards widened to their whole row: "site 3", "scalar 0"
 * @property {number} silentFor seconds a running watch's kernel has said nothing past its beat; 0 while it speaks
 * @property {boolean} kernelGone the host said the widget's kernel connection ended (a restart, a shutdown) while the run went on
 */

/**
 * What one view of a widget shows, over the widget's rows. Min and max
 * start hidden: with a row per step they jump with every batch and hide
 * the bands.
 * @param {LiveRows} rows @returns {LiveState}
 */
function liveState(rows) {
  const layers = { heat: true, zeros: true, bands: true, median: true, extremes: false };
  return { rows, selected: -1, pinnedStep: null, view: "heat", layers, hiddenRuns: new Set(), runMatches: () => true, stepRange: null, expanded: new Set(), silentFor: 0, kernelGone: false };
}

/**
 * @typedef {{label: string, kind?: string, run: number}} Entry a site or scalar as the kernel lists it (wire.LiveEntry)
 * @typedef {{label: string, kind: string, members: number[]}} Group
 * what one card or chart shows: the entries of every run that share a label (and kind), in run order
 */

/**
 * The cards of a view: entries grouped by label and kind, so each run's
 * `h` shares a card; a view of one run has a group per entry.
 * @param {Entry[]} entries the kernel's `_sites` or `_scalars` @returns {Group[]}
 */
function groupsOf(entries) {
  /** @type {Group[]} */
  /** @type {Group[]} */
  const groups = [];
  /** @type {Map<string, Group>} */
  const open = new Map();
  entries.forEach((entry, i) => {
    const key = `${entry.kind ?? ""}\u0000${entry.label}`;
    let group = open.get(key);
    // A second entry of the same run and name starts a card of its own.
    if (!group || group.members.some((m) => entries[m].run === entry.run)) {
      group = { label: entry.label, kind: entry.kind ?? "", members: [] };
      open.set(key, group);
      groups.push(group);
    }
    group.members.push(i);
  });
  return groups;
}

/**
 * The runs of a view: their names, colours and which the legend shows. A
 * view of one run has one, unnamed, in the series colour.
 * @param {string[]} names the kernel's `_runs` @param {ReturnType<typeof schemaOf>} schema
 * @param {LiveState} state @param {ReturnType<typeof themeOf>} theme
 */
function runsOf(names, schema, state, theme) {
  const palette = schema.runColours;
  const several = names.length > 1;
  return {
    several,
    names: several ? names : [""],
    colour: (/** @type {number} */ run) => (several ? palette[run % palette.length] : theme.series),
    shown: (/** @type {number} */ run) => !state.hiddenRuns.has(run) && (!several || state.runMatches(names[run])),
    /** Whether the run filter lets run `run` through. @param {number} run */
    matched: (run) => !several || state.runMatches(names[run]),
  };
}

/** @typedef {ReturnType<typeof runsOf>} Runs */

/**
 * The histogram view drawn for the reader's choice `view`: the bands view
 * needs several runs, and the heat view stands in for it without them. The
 * choice itself is kept, for when more runs arrive.
 * @param {string} view @param {Runs} runs
 */
function shownView(view, runs) {
  return view === "bands" && !runs.several ? "heat" : view;
}

/**
 * A group's entries that the legend shows, each with its rows, run and colour.
 * @param {Group} group @param {Entry[]} entries @param {Series[]} rows the state's sites or scalars @param {Runs} runs
 * @returns {{index: number, run: number, s: Series, colour: string, name: string}[]}
 */
function shownMembers(group, entries, rows, runs) {
  return group.members
    .map((index) => {
      const run = entries[index].run ?? 0;
      return { index, run, s: rows[index] || new Series(), colour: runs.colour(run), name: runs.names[run] ?? "" };
    })
    .filter((m) => runs.shown(m.run));
}

/**
 * Series `s`'s rows at steps within `range`: all of them without one.
 * @param {Series} s @param {[number, number] | null} range
 */
function windowed(s, range) {
  if (!range) return s;
  const out = new Series();
  s.steps.forEach((step, k) => {
    if (step < range[0] || step > range[1]) return;
    out.steps.push(step);
    out.stats.push(s.stats[k]);
    if (s.hists[k]) out.hists.push(s.hists[k]);
    if (s.walls.length > k) out.walls.push(s.walls[k]);
  });
  return out;
}

/** Whether any run of the group, shown or hidden, has a row. @param {Group} group @param {Series[]} rows */
function recordedByAny(group, rows) {
  return group.members.some((index) => rows[index] && rows[index].steps.length > 0);
}

/** Every step any of `members` recorded, in order. @param {{s: Series}[]} members */
function unionSteps(members) {
  const steps = new Set();
  for (const m of members) for (const step of m.s.steps) steps.add(step);
  return [...steps].sort((a, b) => a - b);
}

/** The step the detail shows among `steps`: the pinned one's nearest, or the latest. @param {LiveState} state @param {number[]} steps */
function shownStep(state, steps) {
  if (!steps.length) return null;
  return state.pinnedStep == null ? steps[steps.length - 1] : steps[nearestIndex(steps, state.pinnedStep)];
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
    schema,
    /** The schema's percentiles that the rows hold. */
    percentiles: schema.percentiles.filter((q) => pcol(q) !== undefined),
    /**
     * The statistics a reader is shown, in the schema's order: those the rows
     * hold that the tables give a column, and the NaN/Inf counts (not the
     * histogram's range edges).
     */
    held: schema.stats.filter((s) => s.key in col && (s.column || schema.nonfinite.some((n) => n.key === s.key))),
    /** The statistics a card traces over steps: the schema's compact ones the rows hold, then NaN/Inf. */
    traced: [...schema.stats.filter((s) => s.compact && s.key in col).map((s) => s.key), "nonfinite"],
    pcol,
    nonfiniteOf,
    statOf,
    labelOf,
    textOf,
  };
}

/** @typedef {ReturnType<typeof statColumns>} StatColumns */

/**
 * The kernel's `_progress` (jaxcapture_nb/core/wire.py's LiveProgress):
 * how far the runs are, and their first NaN or Inf.
 * @typedef {{site: any, step: number, run: number}} NonfiniteAt
 * @typedef {{seen: number, recorded: number, done: boolean, ended: string, nonfinite: NonfiniteAt | null}} RunProgress
 * @typedef {{nonfinite_site: number | null, nonfinite_scalar: number | null, seen: number, recorded: number,
 *   rate: number, total: number | null, eta: number | null, nonfinite: NonfiniteAt | null, done: boolean,
 *   ended: string, runs: RunProgress[], beat?: number, silence?: number}} LiveProgress
 */

/**
 * One `_update` (jaxcapture_nb/core/wire.py's LiveUpdate): the rows
 * recorded since the last, as binary buffers.
 * @typedef {{seq: number, base: boolean, index: DataView, steps: DataView, stats: DataView,
 *   hists: DataView, scalar_index: DataView, scalar_rows: DataView}} LiveUpdate
 */

/**
 * Applies one `_update` to the rows: a base update starts over, a delta
 * rewrites each series' last rows and appends new ones. An update already
 * applied is skipped.
 * @param {LiveRows} rows @param {LiveUpdate} update @param {number} bins @param {number} width columns per row
 */
function applyUpdate(rows, update, bins, width) {
  const seq = update.seq;
  if (seq === rows.lastSeq) return;
  const base = update.base;
  if (!base && seq !== rows.lastSeq + 1) rows.stale = true; // a missed update: wait for the next base one
  rows.lastSeq = seq;
  if (base) {
    rows.sites.length = 0;
    rows.scalars.length = 0;
    rows.stale = false;
  }
  if (rows.stale) return;
  const { sites, scalars } = rows;
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
  const triples = new Float64Array(bytesOf(update.scalar_rows)); // step, value, wall time
  const sindex = new Int32Array(bytesOf(update.scalar_index));
  row = 0;
  for (let k = 0; k < sindex.length; k += 3) {
    while (scalars.length <= sindex[k]) scalars.push(new Series());
    const s = scalars[sindex[k]];
    s.drop(sindex[k + 1]);
    for (let r = row; r < row + sindex[k + 2]; r++) {
      s.steps.push(triples[3 * r]);
      s.stats.push(new Float32Array([triples[3 * r + 1]]));
      s.walls.push(triples[3 * r + 2]);
    }
    row += sindex[k + 2];
  }
}

/** Whether any site or scalar holds a row. @param {LiveRows} rows */
const hasRows = (rows) => rows.sites.some((s) => s.steps.length) || rows.scalars.some((s) => s.steps.length);

/**
 * Where the first NaN/Inf is in the browser's rows: the site (or, for a
 * logged scalar such as a loss that overflowed, the scalar; the other is
 * -1), the step the kernel flagged, its row (or the first recorded row
 * after it, if that step was thinned out) and the last finite step before it.
 * @param {LiveRows} rows @param {Partial<LiveProgress> | null} progress the kernel's `_progress` @param {StatColumns} stats
 * @returns {{site: number, scalar: number, step: number, row: number, lastFinite: number | null} | null}
 */
function firstNonfinite(rows, progress, stats) {
  /** @type {Partial<LiveProgress>} */
  const p = progress || {};
  const site = p.nonfinite_site ?? -1;
  const scalar = p.nonfinite_scalar ?? -1;
  if (!p.nonfinite || (site < 0 && scalar < 0)) return null;
  const step = p.nonfinite.step;
  const s = site >= 0 ? rows.sites[site] : rows.scalars[scalar];
  if (!s || !s.steps.length) return { site, scalar, step, row: -1, lastFinite: null };
  let row = s.steps.indexOf(step);
  if (row < 0) row = s.steps.findIndex((v) => v >= step);
  const finite = site >= 0 ? (/** @type {Float32Array} */ r) => stats.nonfiniteOf(r) === 0 : (/** @type {Float32Array} */ r) => Number.isFinite(r[0]);
  let lastFinite = null;
  for (let k = 0; k < s.steps.length && s.steps[k] < step; k++) if (finite(s.stats[k])) lastFinite = s.steps[k];
  return { site, scalar, step, row, lastFinite };
}

/** @typedef {ReturnType<typeof firstNonfinite>} FirstNonfinite */

/** The index of the step nearest to `step` in `steps`. @param {number[]} steps @param {number} step */
function nearestIndex(steps, step) {
  let best = 0;
  for (let k = 1; k < steps.length; k++) if (Math.abs(steps[k] - step) < Math.abs(steps[best] - step)) best = k;
  return best;
}

export { Series, liveRows, liveState, groupsOf, runsOf, shownView, shownMembers, windowed, recordedByAny, unionSteps, shownStep, statColumns, applyUpdate, hasRows, firstNonfinite, nearestIndex };
