// LiveView's histograms over steps, one chart per site card: as a heat map
// with TensorBoard's percentile bands, or as TensorBoard's offset and overlay
// line views. Each view draws on a context it is given and returns its ticks
// and the read-out under the pointer, so the caller decides where both go.

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
 * @typedef {{xTicks: string, yTicks: string, unfinite?: number, readOut: (x: number, y: number) => string | null}} Drawn
 * the ticks drawn, how many steps of only NaN/Inf were marked, and what the pointer reads
 */
/**
 * @typedef {{w: number, h: number, stepAxis: number[], shaded: boolean}} Frame the canvas's size;
 * the steps the step axis spans: the series' own, or every run's of a card, so the runs line up;
 * whether the heat view shades its percentile bands or draws only their lines
 */

/** A card's frame for one series of one run. @param {Series} s @returns {Frame} */
const soloFrame = (s) => ({ w: CARD_W, h: OVER_H, stepAxis: s.steps, shaded: true });

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
  return `step ${s.steps[k]}\nvalues [${fmt(from)}, ${fmt(to)})\ncount ${s.hists[k][i]}`;
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
 * The heat view: a column per recorded step, coloured by the count in
 * each bin, with the percentile bands and the median over it.
 * @param {CanvasRenderingContext2D} ctx @param {Series} s @param {StatColumns} stats
 * @param {ReturnType<typeof themeOf>} theme @param {Marks} marks @param {boolean} log counts on a log scale
 * @param {Frame} [frame]
 * @returns {Drawn}
 */
function drawHeat(ctx, s, stats, theme, marks, log, frame = soloFrame(s)) {
  const box = plotBox(frame.w, frame.h, { left: 44 });
  const values = valueRange(s, stats);
  const n = s.steps.length;
  const axis = frame.stepAxis;
  const x = columnScale(axis, box.x, box.x + box.w);
  const gap = n > 1 ? (s.steps[n - 1] - s.steps[0]) / (n - 1) : 1;
  /** Row k's column, from halfway to the step before to halfway to the next. @param {number} k */
  const columnOf = (k) => [x(k ? (s.steps[k - 1] + s.steps[k]) / 2 : s.steps[0] - gap / 2), x(k < n - 1 ? (s.steps[k] + s.steps[k + 1]) / 2 : s.steps[n - 1] + gap / 2)];
  const y = linearScale(...(values || [0, 1]), box.y + box.h, box.y);
  for (let k = 0; k < n; k++) {
    const hist = s.hists[k];
    const top = Math.max(1, ...hist);
    const shade = countScale(top, 0, 1, log);
    const [left, right] = columnOf(k);
    ctx.fillStyle = theme.series;
    for (let i = 0; i < hist.length; i++) {
      if (!hist[i]) continue;
      const [from, to] = binRange(s, stats, k, i);
      const y0 = y(to);
      // Linear counts shade by their square root: a spike (ReLU's zeros)
      // would otherwise wash the rest of the column out.
      const share = shade(hist[i]);
      ctx.globalAlpha = 0.08 + 0.92 * (log ? share : Math.sqrt(share));
      ctx.fillRect(left, y0, Math.max(right - left, 1), Math.max(y(from) - y0, 1));
    }
  }
  ctx.globalAlpha = 1;
  drawBands(ctx, s, stats, x, y, theme, frame.shaded ? stats.schema.bands : []);
  const unfinite = markNonfinite(ctx, s, stats, box, columnOf, theme);
  // Ticks only at steps between the first and last recorded: the columns'
  // half-widths at either end are no steps of the run.
  const xTicks = stepTicks(axis[0], axis[axis.length - 1], 5);
  const yTicks = y.ticks(frame.h < OVER_H ? 3 : 5);
  drawAxes(ctx, box, { theme, x, xTicks, y, yTicks });
  if (marks.shown != null) stepLine(ctx, box, x(marks.shown), theme.accent, false);
  if (marks.marked != null) stepLine(ctx, box, x(marks.marked), theme.bad, true);
  return {
    xTicks: tickList(xTicks),
    yTicks: tickList(yTicks),
    unfinite: unfinite.size,
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
 * TensorBoard's distribution bands over the heat view: the shaded
 * percentile ranges, the lowest and highest percentile as thin lines and
 * the median, as the schema sets them. Rows with no finite value break the
 * lines.
 * @param {CanvasRenderingContext2D} ctx @param {Series} s @param {StatColumns} stats
 * @param {(v: number) => number} x @param {(v: number) => number} y @param {ReturnType<typeof themeOf>} theme
 * @param {number[][]} [bands] (low, high, opacity) of each shaded band @param {boolean} [extremes] draw the lowest and highest percentile
 */
function drawBands(ctx, s, stats, x, y, theme, bands = stats.schema.bands, extremes = true) {
  const { pcol, percentiles, schema } = stats;
  const n = s.steps.length;
  const px = (/** @type {number} */ k) => x(s.steps[k]);
  /** Runs of consecutive rows whose columns `cs` are all finite, as [row, x offset] points. @param {number[]} cs */
  const runs = (cs) => {
    const out = [];
    let run = [];
    for (let k = 0; k <= n; k++) {
      if (k < n && cs.every((c) => Number.isFinite(s.stats[k][c]))) {
        run.push(k);
        continue;
      }
      // A run of one row still shows, as a short flat piece.
      if (run.length) out.push(run.length === 1 ? [[run[0], -3], [run[0], 3]] : run.map((r) => [r, 0]));
      run = [];
    }
    return out;
  };
  for (const [low, high, alpha] of bands) {
    const [cl, ch] = [pcol(low), pcol(high)];
    ctx.fillStyle = faded(theme.band, alpha);
    for (const points of runs([cl, ch])) {
      ctx.beginPath();
      for (const [k, dx] of points) ctx.lineTo(px(k) + dx, y(s.stats[k][ch]));
      for (const [k, dx] of [...points].reverse()) ctx.lineTo(px(k) + dx, y(s.stats[k][cl]));
      ctx.closePath();
      ctx.fill();
    }
  }
  const line = (/** @type {number} */ c, /** @type {string} */ colour, /** @type {number} */ width, /** @type {number[]} */ dash) => {
    ctx.save();
    ctx.strokeStyle = colour;
    ctx.lineWidth = width;
    ctx.setLineDash(dash);
    for (const points of runs([c])) {
      ctx.beginPath();
      for (const [k, dx] of points) ctx.lineTo(px(k) + dx, y(s.stats[k][c]));
      ctx.stroke();
    }
    ctx.restore();
  };
  if (extremes) {
    line(pcol(percentiles[0]), theme.band, 1, [2, 2]);
    line(pcol(percentiles[percentiles.length - 1]), theme.band, 1, [2, 2]);
  }
  line(pcol(schema.median), theme.median, 1.5, []);
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


/**
 * TensorBoard's offset view: one histogram line per recorded step, each
 * on its own baseline down the step axis, later steps in front.
 * @param {CanvasRenderingContext2D} ctx @param {Series} s @param {StatColumns} stats
 * @param {ReturnType<typeof themeOf>} theme @param {Marks} marks @param {boolean} log counts on a log scale
 * @param {Frame} [frame]
 * @returns {Drawn}
 */
function drawOffset(ctx, s, stats, theme, marks, log, frame = soloFrame(s)) {
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
 * @param {Frame} [frame]
 * @returns {Drawn}
 */
function drawOverlay(ctx, s, stats, theme, marks, log, frame = soloFrame(s)) {
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

/**
 * The bands view of several runs: per run, the middle percentile band of
 * the schema shaded and the median as a line, in the run's colour, on one
 * step axis and one value axis.
 * @param {CanvasRenderingContext2D} ctx @param {{s: Series, colour: string, name: string}[]} members
 * @param {StatColumns} stats @param {ReturnType<typeof themeOf>} theme @param {{marked: number | null, shown: number | null}} marks
 * @param {number[]} stepAxis every step of the members
 * @returns {Drawn}
 */
function drawRunBands(ctx, members, stats, theme, marks, stepAxis) {
  const box = plotBox(CARD_W, OVER_H, { left: 44 });
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
  for (const m of members) drawBands(ctx, m.s, stats, x, y, { ...theme, band: m.colour, median: m.colour }, [[low, high, 0.22]], false);
  if (marks.shown != null) stepLine(ctx, box, x(marks.shown), theme.accent, false);
  if (marks.marked != null) stepLine(ctx, box, x(marks.marked), theme.bad, true);
  return {
    xTicks: tickList(xTicks),
    yTicks: tickList(yTicks),
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

/** Each histogram view's drawing function, by the view's name. */
const HISTOGRAM_VIEWS = { heat: drawHeat, offset: drawOffset, overlay: drawOverlay };

export { CARD_W, OVER_H, HISTOGRAM_VIEWS, drawRunBands, runBand, lineStepScale, countTicks, tickList, binAt, binText, stepLine, drawable, histogramPath };
