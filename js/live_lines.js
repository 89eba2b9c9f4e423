// LiveView's line views of histograms over steps, as TensorBoard draws
// them: offset (one histogram per recorded step down a step axis) and
// overlay (every step's histogram on one count axis).

import { stepTicks, linearScale, countScale, plotBox, drawAxes, themeOf } from "./draw.js";
import { lineRows, countTicks, tickList, valueRange, drawable, binAt, binText, nonfiniteText, histogramPath } from "./live_histograms.js";
/** @typedef {import("./live_histograms.js").Drawn} Drawn */
/** @typedef {import("./live_histograms.js").Frame} Frame */
/** @typedef {import("./live_histograms.js").Marks} Marks */
/** @typedef {import("./live_state.js").Series} Series */
/** @typedef {import("./live_state.js").StatColumns} StatColumns */

/**
 * TensorBoard's offset view: one histogram line per recorded step, each
 * on its own baseline down the step axis, later steps in front.
 * @param {CanvasRenderingContext2D} ctx @param {Series} s @param {StatColumns} stats
 * @param {ReturnType<typeof themeOf>} theme @param {Marks} marks @param {boolean} log counts on a log scale
 * @param {Frame} frame
 * @returns {Drawn}
 */
function drawOffset(ctx, s, stats, theme, marks, log, frame) {
  const box = plotBox(frame.w, frame.h, { left: 44 });
  const values = valueRange(s, stats) || [0, 1];
  const x = linearScale(values[0], values[1], box.x, box.x + box.w);
  const picked = lineRows(s.steps.length, [marks.markedRow, marks.shownRow]);
  const rows = picked.filter((k) => drawable(s, stats, k));
  // Rows of only NaN/Inf have no histogram: a dashed baseline marks them.
  const unfinite = picked.filter((k) => !drawable(s, stats, k) && stats.nonfiniteOf(s.stats[k]) > 0);
  const ridge = box.h * 0.45;
  const steps = s.steps;
  const first = steps[0];
  const last = steps[steps.length - 1];
  const yStep = linearScale(last > first ? first : first - 1, last, box.y + ridge, box.y + box.h);
  const top = Math.max(1, ...rows.flatMap((k) => Array.from(s.hists[k])));
  const heightOf = countScale(top, 0, ridge, log);
  const yTicks = stepTicks(first, last, 4);
  const xTicks = x.ticks(5);
  drawAxes(ctx, box, { theme, x, xTicks, y: yStep, yTicks, yText: String, grid: false });
  ctx.save();
  ctx.beginPath();
  ctx.rect(box.x + 1, 0, box.w, box.y + box.h);
  ctx.clip();
  rows.forEach((k, j) => {
    const base = yStep(steps[k]);
    const path = histogramPath(s, stats, k, x, (c) => base - heightOf(c), base);
    ctx.fillStyle = theme.bg; // hides the lines of earlier steps behind this one
    ctx.fill(path);
    const special = k === marks.markedRow ? theme.bad : k === marks.shownRow ? theme.accent : null;
    ctx.strokeStyle = special || theme.series;
    ctx.globalAlpha = special ? 1 : 0.35 + (0.65 * (j + 1)) / rows.length;
    ctx.lineWidth = special ? 1.5 : 1;
    ctx.stroke(path);
    ctx.globalAlpha = 1;
  });
  ctx.strokeStyle = theme.bad;
  ctx.setLineDash([3, 2]);
  for (const k of unfinite) {
    ctx.beginPath();
    ctx.moveTo(box.x, Math.round(yStep(steps[k])) + 0.5);
    ctx.lineTo(box.x + box.w, Math.round(yStep(steps[k])) + 0.5);
    ctx.stroke();
  }
  ctx.restore();
  return {
    xTicks: tickList(xTicks),
    yTicks: tickList(yTicks, String),
    unfinite: unfinite.length,
    readOut: (px, py) => {
      if (px < box.x || px > box.x + box.w || py < box.y || py > box.y + box.h || !picked.length) return null;
      // The front-most histogram whose baseline is at or below the pointer.
      const near = unfinite.find((k) => Math.abs(yStep(steps[k]) - py) <= 2);
      if (near !== undefined) return `step ${steps[near]}\n${nonfiniteText(s, stats, near)}`;
      if (!rows.length) return null;
      const below = rows.filter((k) => yStep(steps[k]) >= py - 2);
      const k = below.length ? below[0] : rows[rows.length - 1];
      const i = binAt(s, stats, k, x.invert(px));
      return i >= 0 ? binText(s, stats, k, i) : `step ${steps[k]}\nno values here`;
    },
  };
}

/**
 * TensorBoard's overlay view: every step's histogram on the same axes,
 * older ones fainter, the latest solid.
 * @param {CanvasRenderingContext2D} ctx @param {Series} s @param {StatColumns} stats
 * @param {ReturnType<typeof themeOf>} theme @param {Marks} marks @param {boolean} log counts on a log scale
 * @param {Frame} frame
 * @returns {Drawn}
 */
function drawOverlay(ctx, s, stats, theme, marks, log, frame) {
  const box = plotBox(frame.w, frame.h, { left: 44 });
  const values = valueRange(s, stats) || [0, 1];
  const x = linearScale(values[0], values[1], box.x, box.x + box.w);
  const rows = lineRows(s.steps.length, [marks.markedRow, marks.shownRow]).filter((k) => drawable(s, stats, k));
  const top = Math.max(1, ...rows.flatMap((k) => Array.from(s.hists[k])));
  const y = countScale(top, box.y + box.h, box.y, log);
  const xTicks = x.ticks(5);
  const yTicks = countTicks(y);
  drawAxes(ctx, box, { theme, x, xTicks, y, yTicks });
  const last = rows[rows.length - 1];
  const order = [...rows.filter((k) => k !== marks.markedRow && k !== marks.shownRow), ...rows.filter((k) => k === marks.shownRow || k === marks.markedRow)];
  for (const [j, k] of order.entries()) {
    const special = k === marks.markedRow ? theme.bad : k === marks.shownRow && k !== last ? theme.accent : null;
    ctx.strokeStyle = special || theme.series;
    ctx.globalAlpha = special || k === last ? 1 : 0.12 + (0.6 * (j + 1)) / rows.length;
    ctx.lineWidth = special || k === last ? 1.5 : 1;
    ctx.stroke(histogramPath(s, stats, k, x, y, y(0)));
  }
  ctx.globalAlpha = 1;
  return {
    xTicks: tickList(xTicks),
    yTicks: tickList(yTicks),
    readOut: (px, py) => {
      if (px < box.x || px > box.x + box.w || py < box.y || py > box.y + box.h || !rows.length) return null;
      // The step whose line passes nearest the pointer.
      let best = -1;
      let bestBin = -1;
      let distance = Infinity;
      for (const k of rows) {
        const i = binAt(s, stats, k, x.invert(px));
        if (i < 0) continue;
        const d = Math.abs(y(s.hists[k][i]) - py);
        if (d < distance) [best, bestBin, distance] = [k, i, d];
      }
      return best < 0 ? null : binText(s, stats, best, bestBin);
    },
  };
}

export { drawOffset, drawOverlay };
