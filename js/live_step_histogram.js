// The histogram of one step in LiveView's detail: the finite values' bins on
// a value and a count axis, and right of the value axis a bar per kind of
// NaN/Inf the step holds, in the schema's colours, on the same count scale
// (as CaptureView draws them), with its exact count. With several runs each
// run's histogram is a line in its colour, and each kind has a bar per run.

import { fmt, sized } from "./common.js";
import { linearScale, countScale, plotBox, drawAxes, drawBars, rgbText, themeOf } from "./draw.js";
import { statText } from "./schema.js";
import { countTicks, tickList, drawable, binAt, binText, histogramPath } from "./live_histograms.js";
/** @typedef {import("./live_cards.js").Member} Member */
/** @typedef {import("./live_state.js").Series} Series */
/** @typedef {import("./live_state.js").StatColumns} StatColumns */

// The value axis's part of the canvas, as wide as the detail has room for
// beside its statistics; the NaN/Inf bars widen the canvas.
const DETAIL_W = { min: 360, max: 680, numbers: 340 };
const DETAIL_H = 190;
// Room right of the value axis: before the first bar, per bar, between kinds.
const BAR = { lead: 22, width: 30, gap: 16 };

/**
 * @typedef {{label: string, bars: {count: number, colour: string, name: string}[]}} BarGroup
 * one kind of NaN/Inf: its label, and a bar per run that holds some
 */
/** @typedef {{x: number, w: number, label: string, count: number, name: string}} PlacedBar */

/**
 * The NaN/Inf kinds of rows at a step, one group per kind with a bar per
 * row holding some: in the kind's colour for one run, else in each run's.
 * @param {{r: Float32Array, colour: string, name: string}[]} rows @param {StatColumns} stats
 * @returns {BarGroup[]}
 */
function nonfiniteGroups(rows, stats) {
  const one = rows.length === 1;
  return stats.schema.nonfinite
    .map((n) => ({
      label: n.label,
      bars: rows
        .filter(({ r }) => r[stats.col[n.key]] > 0)
        .map(({ r, colour, name }) => ({ count: r[stats.col[n.key]], colour: one ? rgbText(n.rgb) : colour, name })),
    }))
    .filter((g) => g.bars.length);
}

/** The room the bars of `groups` take right of the value axis. @param {BarGroup[]} groups */
const barsWidth = (groups) =>
  groups.length ? BAR.lead + groups.reduce((w, g) => w + g.bars.length * BAR.width + BAR.gap, 0) : 0;

/**
 * The value axis's width in a detail `room` wide with bars `bars` wide,
 * leaving room for the statistics beside it.
 * @param {number} room @param {number} bars
 */
const valueWidth = (room, bars) => Math.round(Math.min(DETAIL_W.max, Math.max(DETAIL_W.min, room - DETAIL_W.numbers - bars)));

/**
 * Draws the bars of `groups` right of `box`, on the count scale `y`: each
 * with its exact count above it, each group's label under it.
 * @param {CanvasRenderingContext2D} ctx @param {{x: number, y: number, w: number, h: number}} box
 * @param {BarGroup[]} groups @param {(count: number) => number} y @param {ReturnType<typeof themeOf>} theme
 * @returns {PlacedBar[]} where each bar went
 */
function drawNonfiniteBars(ctx, box, groups, y, theme) {
  if (!groups.length) return [];
  const base = box.y + box.h;
  let x = box.x + box.w + BAR.lead;
  ctx.save();
  ctx.strokeStyle = theme.border;
  ctx.setLineDash([3, 3]);
  ctx.beginPath();
  ctx.moveTo(x - BAR.lead / 2 + 0.5, box.y);
  ctx.lineTo(x - BAR.lead / 2 + 0.5, base);
  ctx.stroke();
  ctx.setLineDash([]);
  ctx.font = `10px ${theme.font}`;
  ctx.textAlign = "center";
  /** @type {PlacedBar[]} */
  const placed = [];
  for (const group of groups) {
    const start = x;
    for (const bar of group.bars) {
      const top = Math.min(y(bar.count), base - 1); // a count of one stays visible
      ctx.fillStyle = bar.colour;
      ctx.fillRect(x + 2, top, BAR.width - 4, base - top);
      ctx.fillStyle = theme.fg;
      ctx.textBaseline = "bottom";
      ctx.fillText(statText("count", bar.count), x + BAR.width / 2, Math.max(top - 2, 11));
      placed.push({ x, w: BAR.width, label: group.label, count: bar.count, name: bar.name });
      x += BAR.width;
    }
    ctx.fillStyle = theme.fg2;
    ctx.textBaseline = "top";
    ctx.fillText(group.label, (start + x) / 2, base + 4);
    ctx.strokeStyle = theme.border;
    ctx.beginPath();
    ctx.moveTo(start, base + 0.5);
    ctx.lineTo(x, base + 0.5);
    ctx.stroke();
    x += BAR.gap;
  }
  ctx.restore();
  return placed;
}

/** What the pointer reads over a NaN/Inf bar, or null. @param {PlacedBar[]} bars @param {number} px */
function barReadOut(bars, px) {
  const bar = bars.find((b) => px >= b.x && px < b.x + b.w);
  if (!bar) return null;
  return `${bar.name ? `${bar.name}: ` : ""}${bar.label}\n${statText("count", bar.count)} values (outside the value axis)`;
}

/**
 * Says in the value axis's place that a step has no finite value.
 * @param {CanvasRenderingContext2D} ctx @param {{x: number, y: number, w: number, h: number}} box @param {ReturnType<typeof themeOf>} theme
 */
function noFiniteNote(ctx, box, theme) {
  ctx.save();
  ctx.fillStyle = theme.bad;
  ctx.font = `12px ${theme.font}`;
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  ctx.fillText("no finite values at this step", box.x + box.w / 2, box.y + box.h / 2);
  ctx.restore();
}

/** Sets the data attributes tests and readers see on a step's canvas. */
function markStepCanvas(/** @type {HTMLCanvasElement} */ canvas, /** @type {PlacedBar[]} */ bars, /** @type {number[]} */ xTicks, /** @type {number[]} */ yTicks) {
  canvas.dataset.xTicks = tickList(xTicks);
  canvas.dataset.yTicks = tickList(yTicks);
  if (bars.length) canvas.dataset.nonfinite = bars.map((b) => `${b.label}:${statText("count", b.count)}`).join(" ");
  else delete canvas.dataset.nonfinite;
}

/**
 * Row k's histogram, with a value axis, a count axis and its NaN/Inf bars.
 * @param {HTMLCanvasElement} canvas @param {Series} s @param {number} k @param {StatColumns} stats
 * @param {ReturnType<typeof themeOf>} theme @param {boolean} log counts on a log scale @param {number} room the detail's width
 * @returns {(x: number, y: number) => string | null} what the pointer reads over the histogram
 */
function drawStepHistogram(canvas, s, k, stats, theme, log, room) {
  const { col } = stats;
  const hist = s.hists[k];
  const r = s.stats[k];
  const groups = nonfiniteGroups([{ r, colour: "", name: "" }], stats);
  const width = valueWidth(room, barsWidth(groups));
  const ctx = sized(canvas, width + barsWidth(groups), DETAIL_H);
  const box = plotBox(width, DETAIL_H, { left: 50, right: 10, top: 16, bottom: 30 });
  const any = drawable(s, stats, k);
  const x = any ? linearScale(r[col.lo], r[col.hi], box.x, box.x + box.w) : linearScale(0, 1, box.x, box.x + box.w);
  const top = Math.max(1, ...hist, ...groups.flatMap((g) => g.bars.map((b) => b.count)));
  const y = countScale(top, box.y + box.h, box.y, log);
  const xTicks = any ? x.ticks(6) : [];
  const yTicks = countTicks(y);
  drawAxes(ctx, box, { theme, x, xTicks, y, yTicks, yLabel: log ? "count (log)" : "count" });
  if (any) drawBars(ctx, box, hist, y, theme.series);
  else noFiniteNote(ctx, box, theme);
  const bars = drawNonfiniteBars(ctx, box, groups, y, theme);
  canvas.dataset.drawn = String(s.steps[k]);
  markStepCanvas(canvas, bars, xTicks, yTicks);
  return (px, py) => {
    if (py > box.y + box.h + 16) return null;
    const bar = barReadOut(bars, px);
    if (bar || !any || px < box.x || px > box.x + box.w) return bar;
    const i = Math.min(hist.length - 1, Math.floor(((px - box.x) / box.w) * hist.length));
    return binText(s, stats, k, i);
  };
}

/**
 * Each run's histogram at a step as a line, on one value axis and one
 * count axis, in the runs' colours, with each run's NaN/Inf bars.
 * @param {HTMLCanvasElement} canvas @param {{m: Member, k: number}[]} rows each run's row at the step
 * @param {StatColumns} stats @param {ReturnType<typeof themeOf>} theme @param {boolean} log counts on a log scale
 * @param {number} room the detail's width
 * @returns {(x: number, y: number) => string | null} what the pointer reads over the histograms
 */
function drawStepHistograms(canvas, rows, stats, theme, log, room) {
  const groups = nonfiniteGroups(rows.map(({ m, k }) => ({ r: m.s.stats[k], colour: m.colour, name: m.name })), stats);
  const width = valueWidth(room, barsWidth(groups));
  const ctx = sized(canvas, width + barsWidth(groups), DETAIL_H);
  const box = plotBox(width, DETAIL_H, { left: 50, right: 10, top: 16, bottom: 30 });
  const drawn = rows.filter(({ m, k }) => drawable(m.s, stats, k));
  const { col } = stats;
  const lo = drawn.length ? Math.min(...drawn.map(({ m, k }) => m.s.stats[k][col.lo])) : 0;
  const hi = drawn.length ? Math.max(...drawn.map(({ m, k }) => m.s.stats[k][col.hi])) : 1;
  const x = linearScale(lo, hi > lo ? hi : lo + 1, box.x, box.x + box.w);
  const counts = [...drawn.flatMap(({ m, k }) => Array.from(m.s.hists[k])), ...groups.flatMap((g) => g.bars.map((b) => b.count))];
  const y = countScale(Math.max(1, ...counts), box.y + box.h, box.y, log);
  const xTicks = drawn.length ? x.ticks(6) : [];
  const yTicks = countTicks(y);
  drawAxes(ctx, box, { theme, x, xTicks, y, yTicks, yLabel: log ? "count (log)" : "count" });
  if (!drawn.length) noFiniteNote(ctx, box, theme);
  ctx.lineWidth = 1.5;
  for (const { m, k } of drawn) {
    ctx.strokeStyle = m.colour;
    ctx.stroke(histogramPath(m.s, stats, k, x, y, y(0)));
  }
  const bars = drawNonfiniteBars(ctx, box, groups, y, theme);
  canvas.dataset.drawn = rows.map(({ m, k }) => m.s.steps[k]).join(" ");
  canvas.dataset.lines = String(drawn.length);
  markStepCanvas(canvas, bars, xTicks, yTicks);
  return (px, py) => {
    if (py > box.y + box.h + 16) return null;
    const bar = barReadOut(bars, px);
    if (bar || !drawn.length || px < box.x || px > box.x + box.w) return bar;
    const v = x.invert(px);
    const text = drawn.map(({ m, k }) => {
      const i = binAt(m.s, stats, k, v);
      return `${m.name} (step ${m.s.steps[k]}): ${i >= 0 ? `count ${statText("count", m.s.hists[k][i])}` : "no values here"}`;
    });
    return `value ${fmt(v)}\n${text.join("\n")}`;
  };
}

export { drawStepHistogram, drawStepHistograms };
