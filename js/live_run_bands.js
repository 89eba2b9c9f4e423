// LiveView's bands view of several runs: per run, its median and middle
// percentile band over steps, in the run's colour, overlaid on one chart.

import { fmt, ordinal } from "./common.js";
import { stepTicks, linearScale, plotBox, drawAxes, themeOf } from "./draw.js";
import { nearestIndex } from "./live_state.js";
import { lineStepScale, tickList, valueRange, stepLine } from "./live_histograms.js";
import { drawBands } from "./live_heat.js";
import { schemaOf } from "./schema.js";
/** @typedef {import("./live_histograms.js").Drawn} Drawn */
/** @typedef {import("./live_histograms.js").Frame} Frame */
/** @typedef {import("./live_state.js").Series} Series */
/** @typedef {import("./live_state.js").StatColumns} StatColumns */

/**
 * The bands view of several runs: per run, the middle percentile band of
 * the schema shaded and the median as a line, in the run's colour, on one
 * step axis and one value axis.
 * @param {CanvasRenderingContext2D} ctx @param {{s: Series, colour: string, name: string}[]} members
 * @param {StatColumns} stats @param {ReturnType<typeof themeOf>} theme @param {{marked: number | null, shown: number | null}} marks
 * @param {Frame} frame the chart's size, and every step of the members
 * @returns {Drawn}
 */
function drawRunBands(ctx, members, stats, theme, marks, frame) {
  const box = plotBox(frame.w, frame.h, { left: 44 });
  const { stepAxis } = frame;
  const { pcol, schema } = stats;
  const [low, high] = runBand(schema);
  const ranges = members.map((m) => valueRange(m.s, stats)).filter((r) => r !== null);
  const lo = ranges.length ? Math.min(...ranges.map((r) => r[0])) : 0;
  const hi = ranges.length ? Math.max(...ranges.map((r) => r[1])) : 1;
  const x = lineStepScale(stepAxis.length ? stepAxis : [0], box.x, box.x + box.w);
  const y = linearScale(lo, hi, box.y + box.h, box.y);
  const xTicks = stepTicks(...x.domain, 5);
  const yTicks = y.ticks(5);
  drawAxes(ctx, box, { theme, x, xTicks, y, yTicks });
  const look = { bands: [[low, high, 0.22]], fill: true, outline: true, median: true, extremes: false };
  ctx.save();
  ctx.beginPath();
  ctx.rect(box.x, box.y - 1, box.w, box.h + 2);
  ctx.clip();
  for (const m of members) drawBands(ctx, m.s, stats, x, y, { ...theme, band: m.colour, median: m.colour }, look);
  ctx.restore();
  if (marks.shown != null) stepLine(ctx, box, x(marks.shown), theme.accent, false);
  if (marks.marked != null) stepLine(ctx, box, x(marks.marked), theme.bad, true);
  return {
    xTicks: tickList(xTicks),
    yTicks: tickList(yTicks),
    stepAt: (px) => x.invert(px),
    readOut: (px, py) => {
      if (px < box.x || px > box.x + box.w || py < box.y || py > box.y + box.h) return null;
      const step = x.invert(px);
      const lines = members.filter((m) => m.s.steps.length).map((m) => {
        const r = m.s.stats[nearestIndex(m.s.steps, step)];
        return `${m.name}: median ${fmt(r[pcol(schema.median)])} (${ordinal(low)} ${fmt(r[pcol(low)])}, ${ordinal(high)} ${fmt(r[pcol(high)])})`;
      });
      return lines.length ? `step ≈ ${Math.round(step)}\n${lines.join("\n")}` : null;
    },
  };
}

/** The band the bands view shades per run: the middle one of the schema's. @param {ReturnType<typeof schemaOf>} schema */
function runBand(schema) {
  const band = schema.bands[Math.floor(schema.bands.length / 2)] || [16, 84];
  return [band[0], band[1]];
}

export { drawRunBands, runBand };
