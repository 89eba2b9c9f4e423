// LiveView's heat view: a column per recorded step, coloured by the count in
// each bin, with TensorBoard's percentile bands over it. Each part is a
// layer the view turns on and off (LiveState.layers). Over the heat the
// bands are outlines, so the heat shows through them; alone they are shaded
// as TensorBoard's distributions. Lines have at most one point per pixel
// column: a run of every step is many rows a pixel, and their zigzag would
// read as noise.

import { faded, stepTicks, linearScale, countScale, plotBox, drawAxes, themeOf } from "./draw.js";
import { nearestIndex } from "./live_state.js";
import { OVER_H, columnScale, tickList, valueRange, binRange, binAt, binText, percentileText, stepLine, nonfiniteText, markNonfinite } from "./live_histograms.js";
/** @typedef {import("./live_histograms.js").Drawn} Drawn */
/** @typedef {import("./live_histograms.js").Frame} Frame */
/** @typedef {import("./live_histograms.js").Marks} Marks */
/** @typedef {import("./live_state.js").Series} Series */
/** @typedef {import("./live_state.js").StatColumns} StatColumns */

/**
 * @typedef {{bands: number[][], fill: boolean, outline?: boolean, median: boolean, extremes: boolean}} BandLook
 * the bands drawn, (low, high, opacity) each; whether they are shaded (else
 * outlined), and shaded ones outlined too; whether the median and the lowest
 * and highest percentile are drawn
 */

/**
 * The heat view of one series.
 * @param {CanvasRenderingContext2D} ctx @param {Series} s @param {StatColumns} stats
 * @param {ReturnType<typeof themeOf>} theme @param {Marks} marks @param {boolean} log counts on a log scale
 * @param {Frame} frame
 * @returns {Drawn}
 */
function drawHeat(ctx, s, stats, theme, marks, log, frame) {
  const box = plotBox(frame.w, frame.h, { left: 44 });
  const values = valueRange(s, stats);
  const n = s.steps.length;
  const axis = frame.stepAxis;
  const { layers } = frame;
  const x = columnScale(axis, box.x, box.x + box.w);
  const gap = n > 1 ? (s.steps[n - 1] - s.steps[0]) / (n - 1) : 1;
  /** Row k's column, from halfway to the step before to halfway to the next. @param {number} k */
  const columnOf = (k) => [x(k ? (s.steps[k - 1] + s.steps[k]) / 2 : s.steps[0] - gap / 2), x(k < n - 1 ? (s.steps[k] + s.steps[k + 1]) / 2 : s.steps[n - 1] + gap / 2)];
  const y = linearScale(...(values || [0, 1]), box.y + box.h, box.y);
  // Ticks only at steps between the first and last recorded: the columns'
  // half-widths at either end are no steps of the run. The axes' grid goes
  // under the heat, so no grid line reads as a band or the median.
  const xTicks = stepTicks(axis[0], axis[axis.length - 1], frame.w > 400 ? 7 : 5);
  const yTicks = y.ticks(frame.h < OVER_H ? 3 : 5);
  drawAxes(ctx, box, { theme, x, xTicks, y, yTicks });
  if (layers.heat) drawColumns(ctx, s, stats, { y, columnOf, colour: theme.series, log, zeros: layers.zeros ? theme.fg : null });
  // Shading over the heat would mix with it into one muddy colour; with
  // several runs the bands are the text colours' lines (see drawPanels).
  const fill = !layers.heat && !frame.several;
  const look = { bands: layers.bands ? stats.schema.bands : [], fill, median: layers.median, extremes: layers.extremes };
  ctx.save();
  ctx.beginPath();
  ctx.rect(box.x, box.y - 1, box.w, box.h + 2);
  ctx.clip();
  drawBands(ctx, s, stats, x, y, theme, look);
  ctx.restore();
  const unfinite = markNonfinite(ctx, s, stats, box, columnOf, theme);
  if (marks.shown != null) stepLine(ctx, box, x(marks.shown), theme.accent, false);
  if (marks.marked != null) stepLine(ctx, box, x(marks.marked), theme.bad, true);
  return {
    xTicks: tickList(xTicks),
    yTicks: tickList(yTicks),
    unfinite: unfinite.size,
    stepAt: (px) => x.invert(px),
    readOut: (px, py) => {
      if (px < box.x || px > box.x + box.w || py < box.y || py > box.y + box.h) return null;
      if (!n) return null;
      const k = nearestIndex(s.steps, x.invert(px));
      if (unfinite.has(k)) return `step ${s.steps[k]}\n${nonfiniteText(s, stats, k)}`;
      const i = binAt(s, stats, k, y.invert(py));
      const bin = i >= 0 ? binText(s, stats, k, i) : `step ${s.steps[k]}\nno values here`;
      return `${bin}\n${percentileText(s, stats, k)}`;
    },
  };
}

/**
 * The heat: each row's bins as a column, the stronger the more values.
 * A row's exact zeros (half a ReLU's outputs) are left out of its column,
 * whose shades they would wash out, and drawn apart: a mark at 0 in the
 * `zeros` colour, the stronger the larger their share; none when it is null.
 * @param {CanvasRenderingContext2D} ctx @param {Series} s @param {StatColumns} stats
 * @param {{y: (v: number) => number, columnOf: (k: number) => number[], colour: string, log: boolean, zeros: string | null}} look
 */
function drawColumns(ctx, s, stats, look) {
  const { y, columnOf, log } = look;
  let zeroMarks = 0;
  for (let k = 0; k < s.steps.length; k++) {
    const zeros = zerosOf(s, stats, k);
    const hist = zeros.count ? s.hists[k].map((c, i) => (i === zeros.bin ? c - zeros.count : c)) : s.hists[k];
    const shade = countScale(Math.max(1, ...hist), 0, 1, log);
    const [left, right] = columnOf(k);
    ctx.fillStyle = look.colour;
    for (let i = 0; i < hist.length; i++) {
      if (!hist[i]) continue;
      const [from, to] = binRange(s, stats, k, i);
      const y0 = y(to);
      // Linear counts shade by their square root: a spike would otherwise
      // wash the rest of the column out.
      const share = shade(hist[i]);
      ctx.globalAlpha = 0.08 + 0.92 * (log ? share : Math.sqrt(share));
      ctx.fillRect(left, y0, Math.max(right - left, 1), Math.max(y(from) - y0, 1));
    }
    if (zeros.count && look.zeros) {
      ctx.fillStyle = look.zeros;
      ctx.globalAlpha = 0.3 + 0.7 * zeros.share;
      ctx.fillRect(left, y(0) - 1, Math.max(right - left, 1), 2);
      zeroMarks++;
    }
  }
  ctx.globalAlpha = 1;
  ctx.canvas.dataset.zeroMarks = String(zeroMarks);
}

/**
 * Row k's exact zeros: how many, their share of its finite values, and the
 * bin its histogram counts them in (the bin of 0, as the summary adds them).
 * @param {Series} s @param {StatColumns} stats @param {number} k
 */
function zerosOf(s, stats, k) {
  const r = s.stats[k];
  const hist = s.hists[k];
  const { col } = stats;
  const finite = hist.reduce((a, b) => a + b, 0);
  if (!(r[col.zero_pct] > 0) || !finite) return { count: 0, share: 0, bin: -1 };
  const size = finite + (r[col.nan] || 0) + (r[col.posinf] || 0) + (r[col.neginf] || 0);
  const [lo, hi] = [r[col.lo], r[col.hi]];
  const bin = Math.min(hist.length - 1, Math.max(0, Math.floor(-lo / ((hi - lo) / hist.length))));
  const count = Math.min(hist[bin], Math.round((r[col.zero_pct] / 100) * size));
  return { count, share: count / finite, bin };
}

/**
 * Runs of consecutive rows whose columns `cs` are all finite, as points of
 * at most one per pixel column: [x, value of each column], averaged over
 * the rows that fall in the pixel. A run of one row is a short flat piece.
 * @param {Series} s @param {(v: number) => number} x @param {number[]} cs
 * @returns {number[][][]}
 */
function pointRuns(s, x, cs) {
  /** @type {number[][][]} */
  const runs = [];
  /** @type {number[][]} */ let run = [];
  /** @type {number[] | null} */ let sum = null; // x, then each column, over the pixel's rows
  let rows = 0;
  let pixel = NaN;
  const close = () => {
    if (sum) run.push(sum.map((v) => v / rows));
    sum = null;
  };
  const end = () => {
    close();
    if (run.length === 1) run = [[run[0][0] - 3, ...run[0].slice(1)], [run[0][0] + 3, ...run[0].slice(1)]];
    if (run.length) runs.push(run);
    run = [];
  };
  for (let k = 0; k < s.steps.length; k++) {
    const r = s.stats[k];
    if (!cs.every((c) => Number.isFinite(r[c]))) {
      end();
      continue;
    }
    const px = x(s.steps[k]);
    if (Math.floor(px) !== pixel) close();
    pixel = Math.floor(px);
    if (!sum) [sum, rows] = [new Array(cs.length + 1).fill(0), 0];
    sum[0] += px;
    cs.forEach((c, j) => (/** @type {number[]} */ (sum)[j + 1] += r[c]));
    rows += 1;
  }
  end();
  return runs;
}

/**
 * TensorBoard's distribution bands: the percentile ranges of `look.bands`,
 * shaded or as outlines, the median, and the lowest and highest
 * percentile as faint dotted lines. Rows with no finite value break them.
 * Over the heat the median gets a halo in the background colour, which
 * keeps it apart from the heat and the outlines in either theme.
 * @param {CanvasRenderingContext2D} ctx @param {Series} s @param {StatColumns} stats
 * @param {(v: number) => number} x @param {(v: number) => number} y @param {ReturnType<typeof themeOf>} theme
 * @param {BandLook} look
 */
function drawBands(ctx, s, stats, x, y, theme, look) {
  const { pcol, percentiles, schema } = stats;
  /** @param {number} c @param {string} colour @param {number} width @param {number[]} dash @param {boolean} halo */
  const line = (c, colour, width, dash, halo) => {
    if (c === undefined) return;
    ctx.save();
    ctx.lineJoin = "round";
    ctx.setLineDash(dash);
    for (const points of pointRuns(s, x, [c])) {
      const path = new Path2D();
      for (const [px, v] of points) path.lineTo(px, y(v));
      if (halo) {
        ctx.strokeStyle = faded(theme.bg, 0.6);
        ctx.lineWidth = width + 2;
        ctx.stroke(path);
      }
      ctx.strokeStyle = colour;
      ctx.lineWidth = width;
      ctx.stroke(path);
    }
    ctx.restore();
  };
  look.bands.forEach(([low, high, alpha], j) => {
    const [cl, ch] = [pcol(low), pcol(high)];
    if (cl === undefined || ch === undefined) return;
    if (!look.fill) {
      // Solid colour, as a faded line over the heat would mix with it; the
      // widest band dashed, as its shading would be the faintest.
      const dash = j === 0 && look.bands.length > 1 ? [4, 3] : [];
      line(cl, theme.band, 1, dash, false);
      line(ch, theme.band, 1, dash, false);
      return;
    }
    ctx.fillStyle = faded(theme.band, alpha);
    for (const points of pointRuns(s, x, [cl, ch])) {
      ctx.beginPath();
      for (const [px, , hi] of points) ctx.lineTo(px, y(hi));
      for (const [px, lo] of [...points].reverse()) ctx.lineTo(px, y(lo));
      ctx.closePath();
      ctx.fill();
    }
    // Overlaid runs' shading mixes where the bands cross: each band's edges
    // drawn in its own colour tell them apart.
    if (look.outline) {
      line(cl, theme.band, 1, [], false);
      line(ch, theme.band, 1, [], false);
    }
  });
  if (look.extremes) {
    line(pcol(percentiles[0]), faded(theme.band, 0.8), 1, [1, 2], false);
    line(pcol(percentiles[percentiles.length - 1]), faded(theme.band, 0.8), 1, [1, 2], false);
  }
  if (look.median) line(pcol(schema.median), theme.median, 1.5, [], !look.fill);
}

export { drawHeat, drawBands };
