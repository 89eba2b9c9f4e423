// What LiveView's histograms over steps share, one chart per site card:
// the chart's size, its scales, the readers of a row's bins and percentiles,
// and the marks every view draws (a step's line, the steps of only NaN/Inf).
// Each view (live_heat.js, live_lines.js, live_run_bands.js) draws on a
// context it is given and returns its ticks and the read-out under the
// pointer, so the caller decides where both go.

import { fmt, ordinal } from "./common.js";
import { faded, tickText, linearScale, countScale, themeOf } from "./draw.js";
import { statText } from "./schema.js";
/** @typedef {import("./live_state.js").Layers} Layers */
/** @typedef {import("./live_state.js").Series} Series */
/** @typedef {import("./live_state.js").StatColumns} StatColumns */

// A card's chart: its width when the card is not laid out yet (the grid's
// narrowest column), and its height.
const CARD_W = 320;
const OVER_H = 160;
// Histograms drawn as lines in the offset and overlay views: more would be
// a solid block at card size (TensorBoard thins its lines too).
const MAX_LINES = 40;

/**
 * @typedef {{marked: number | null, shown: number | null, markedRow: number, shownRow: number}} Marks
 * the first NaN/Inf's step and row, and the step and row the detail shows (null, -1: none)
 */
/**
 * @typedef {{xTicks: string, yTicks: string, unfinite?: number, readOut: (x: number, y: number) => string | null, stepAt?: (px: number) => number}} Drawn
 * the ticks drawn, how many steps of only NaN/Inf were marked, what the pointer reads, and (a chart over steps) the step at an x
 */
/**
 * @typedef {{w: number, h: number, stepAxis: number[], layers: Layers, several: boolean}} Frame the canvas's size;
 * the steps the step axis spans: the series' own, or every run's of a card, so the runs line up;
 * what the heat view draws; whether the card shows several runs
 */

/**
 * A scale over recorded steps whose columns (one per row) meet halfway
 * between neighbouring steps.
 * @param {number[]} steps @param {number} r0 @param {number} r1
 */
function columnScale(steps, r0, r1) {
  const n = steps.length;
  const gap = n > 1 ? (steps[n - 1] - steps[0]) / (n - 1) : 1;
  return linearScale(steps[0] - gap / 2, steps[n - 1] + gap / 2, r0, r1);
}

/**
 * The step under each x of the charts drawn over steps (the heat and bands
 * views, the scalars): where a drag on the chart zooms the step axis to.
 * @type {WeakMap<HTMLCanvasElement, (px: number) => number>}
 */
const STEP_AT = new WeakMap();

/** A scale over steps for line charts: the first step to the last. @param {number[]} steps @param {number} r0 @param {number} r1 */
function lineStepScale(steps, r0, r1) {
  const n = steps.length;
  return n > 1 ? linearScale(steps[0], steps[n - 1], r0, r1) : linearScale(steps[0] - 1, steps[0] + 1, r0, r1);
}

/** Row indices for the line views: at most MAX_LINES, evenly spread, with the last and `extra` rows. @param {number} n @param {number[]} extra */
function lineRows(n, extra) {
  const picked = new Set();
  if (n <= MAX_LINES) for (let k = 0; k < n; k++) picked.add(k);
  else for (let j = 0; j < MAX_LINES; j++) picked.add(Math.round((j * (n - 1)) / (MAX_LINES - 1)));
  for (const k of extra) if (k >= 0 && k < n) picked.add(k);
  return [...picked].sort((a, b) => a - b);
}

/** A count axis's ticks; on a log axis 1 sits too close to 0 to label both. @param {ReturnType<typeof countScale>} y */
const countTicks = (y) => {
  const ticks = y.ticks(4);
  return ticks.includes(10) ? ticks.filter((v) => v !== 1) : ticks;
};

/** Tick texts, for a canvas's data attribute. @param {number[]} ticks @param {(v: number) => string} [text] */
const tickList = (ticks, text = tickText) => ticks.map(text).join(" ");

/**
 * The value range every row's histogram covers, over rows that hold a
 * finite value: a row of only NaN/Inf has a placeholder range, which must
 * not stretch the axis of the others.
 * @param {Series} s @param {StatColumns} stats
 * @returns {[number, number] | null}
 */
function valueRange(s, stats) {
  const { col } = stats;
  let lo = Infinity;
  let hi = -Infinity;
  s.stats.forEach((r, k) => {
    if (!drawable(s, stats, k)) return;
    lo = Math.min(lo, r[col.lo]);
    hi = Math.max(hi, r[col.hi]);
  });
  if (!(hi >= lo)) return null;
  return hi > lo ? [lo, hi] : [lo - 0.5, hi + 0.5];
}

/** Whether row k's histogram holds any finite value. @param {Series} s @param {StatColumns} stats @param {number} k */
function drawable(s, stats, k) {
  return Number.isFinite(s.stats[k][stats.col.lo]) && s.hists[k].some((c) => c > 0);
}

/** Row k's bin i as [from, to). @param {Series} s @param {StatColumns} stats @param {number} k @param {number} i */
function binRange(s, stats, k, i) {
  const a = s.stats[k][stats.col.lo];
  const width = (s.stats[k][stats.col.hi] - a) / s.hists[k].length;
  return [a + i * width, a + (i + 1) * width];
}

/** Which bin of row k holds value v, or -1. @param {Series} s @param {StatColumns} stats @param {number} k @param {number} v */
function binAt(s, stats, k, v) {
  const a = s.stats[k][stats.col.lo];
  const b = s.stats[k][stats.col.hi];
  if (!(v >= a && v <= b) || !(b > a)) return -1;
  return Math.min(s.hists[k].length - 1, Math.floor(((v - a) / (b - a)) * s.hists[k].length));
}

/** "step 12\n[0.1, 0.2)\ncount 5": the read-out of row k's bin i. @param {Series} s @param {StatColumns} stats @param {number} k @param {number} i */
function binText(s, stats, k, i) {
  const [from, to] = binRange(s, stats, k, i);
  return `step ${s.steps[k]}\nvalues [${fmt(from)}, ${fmt(to)})\ncount ${statText("count", s.hists[k][i])}`;
}

/** The percentiles of row k, as read-out lines. @param {Series} s @param {StatColumns} stats @param {number} k */
function percentileText(s, stats, k) {
  const r = s.stats[k];
  return stats.percentiles.map((q) => `${ordinal(q)} ${fmt(r[stats.pcol(q)])}`).join("  ");
}

/**
 * A vertical line at a step: the first NaN/Inf (dashed, in the error
 * colour) or the step the detail shows.
 * @param {CanvasRenderingContext2D} ctx @param {{x: number, y: number, w: number, h: number}} box
 * @param {number} px @param {string} colour @param {boolean} dashed
 */
function stepLine(ctx, box, px, colour, dashed) {
  if (!(px >= box.x - 1 && px <= box.x + box.w + 1)) return;
  ctx.save();
  ctx.strokeStyle = colour;
  ctx.lineWidth = dashed ? 1.5 : 1;
  if (dashed) ctx.setLineDash([3, 2]);
  ctx.beginPath();
  ctx.moveTo(Math.round(px) + 0.5, box.y);
  ctx.lineTo(Math.round(px) + 0.5, box.y + box.h);
  ctx.stroke();
  ctx.restore();
}

/** "no finite value: 32768 NaN". @param {Series} s @param {StatColumns} stats @param {number} k */
function nonfiniteText(s, stats, k) {
  const r = s.stats[k];
  const counts = stats.schema.nonfinite.filter((n) => r[stats.col[n.key]] > 0).map((n) => `${statText("count", r[stats.col[n.key]])} ${n.label}`);
  return `no finite value${counts.length ? `: ${counts.join(", ")}` : ""}`;
}

/**
 * Marks the columns of rows with no finite value (only NaN/Inf) in the
 * error colour, hatched over the whole height: they have no histogram to
 * draw and take no part in the value axis.
 * @param {CanvasRenderingContext2D} ctx @param {Series} s @param {StatColumns} stats
 * @param {{x: number, y: number, w: number, h: number}} box @param {(k: number) => number[]} columnOf
 * @param {ReturnType<typeof themeOf>} theme
 * @returns {Set<number>} the rows marked
 */
function markNonfinite(ctx, s, stats, box, columnOf, theme) {
  const marked = new Set();
  ctx.save();
  ctx.beginPath();
  ctx.rect(box.x, box.y, box.w, box.h);
  ctx.clip();
  s.steps.forEach((_, k) => {
    if (drawable(s, stats, k) || stats.nonfiniteOf(s.stats[k]) === 0) return;
    marked.add(k);
    const [left, right] = columnOf(k);
    const width = Math.max(right - left, 2);
    ctx.fillStyle = faded(theme.bad, 0.16);
    ctx.fillRect(left, box.y, width, box.h);
    ctx.fillStyle = theme.bad;
    ctx.fillRect(left, box.y, width, 3);
  });
  ctx.restore();
  return marked;
}

/**
 * One histogram as a line over `box`: bin counts at bin centres, closed
 * down to `base`.
 * @param {Series} s @param {StatColumns} stats @param {number} k
 * @param {(v: number) => number} x @param {(count: number) => number} height @param {number} base
 * @returns {Path2D}
 */
function histogramPath(s, stats, k, x, height, base) {
  const path = new Path2D();
  const hist = s.hists[k];
  const [a] = binRange(s, stats, k, 0);
  const [, b] = binRange(s, stats, k, hist.length - 1);
  path.moveTo(x(a), base);
  for (let i = 0; i < hist.length; i++) {
    const [from, to] = binRange(s, stats, k, i);
    path.lineTo(x((from + to) / 2), height(hist[i]));
  }
  path.lineTo(x(b), base);
  return path;
}

export { CARD_W, OVER_H, STEP_AT, columnScale, lineStepScale, lineRows, countTicks, tickList, valueRange, drawable, binRange, binAt, binText, percentileText, stepLine, nonfiniteText, markNonfinite, histogramPath };
