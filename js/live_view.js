// LiveView front end: per site, the histograms over steps (as a heat map
// with percentile bands, or as TensorBoard's offset and overlay line views)
// and small traces of mean, std, zeros % and NaN/Inf; a step slider for one
// step's histogram; scalar charts with smoothing; progress. Plain ES module,
// no build step. Strings from user code are set with textContent only.

const CARD_W = 320;
const OVER_H = 160;
const TRACE_W = 76;
const TRACE_H = 30;
const DETAIL_W = 440;
const DETAIL_H = 170;
const SCALAR_W = 320;
const SCALAR_H = 150;
// Histograms drawn as lines in the offset and overlay views: more would be
// a solid block at card size (TensorBoard thins its lines too).
const MAX_LINES = 40;
const VIEWS = ["heat", "offset", "overlay"];
const VIEW_KEYS = {
  heat: "one column per recorded step; stronger colour, more values in the bin",
  offset: "one histogram per recorded step; later steps in front",
  overlay: "one histogram per recorded step; older steps fainter, the latest solid",
};
// Percentile bands of the heat view, as TensorBoard's distributions draw
// them: [low, high] percentile and the band's opacity.
const BANDS = [
  [7, 93, 0.16],
  [16, 84, 0.24],
  [31, 69, 0.34],
];
const TRACES = [
  { key: "mean", label: "mean" },
  { key: "std", label: "std" },
  { key: "zero_pct", label: "zeros %" },
  { key: "nonfinite", label: "NaN/Inf" },
];
// TensorBoard's default scalar smoothing.
const DEFAULT_SMOOTHING = 0.6;

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
 * TensorBoard's scalar smoothing: an exponential moving average, debiased
 * so the first points are not pulled toward zero. Non-finite values pass
 * through unsmoothed.
 * @param {number[]} values @param {number} weight in [0, 1)
 */
function smoothedValues(values, weight) {
  let last = 0;
  let count = 0;
  return values.map((v) => {
    if (!Number.isFinite(v)) return v;
    last = last * weight + (1 - weight) * v;
    count += 1;
    return last / (1 - weight ** count);
  });
}

/** The index of the step nearest to `step` in `steps`. @param {number[]} steps @param {number} step */
function nearestIndex(steps, step) {
  let best = 0;
  for (let k = 1; k < steps.length; k++) if (Math.abs(steps[k] - step) < Math.abs(steps[best] - step)) best = k;
  return best;
}

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

function render({ model, el }) {
  const root = h("div", "jcnb-live jcnb-themed");
  const tooltip = new Tooltip(root);

  // Header: progress, the first NaN/Inf, the site filter.
  const head = h("div", "jcnb-live-head");
  const progress = h("span", "jcnb-live-progress");
  const flag = h("button", "jcnb-live-flag");
  flag.hidden = true;
  const filter = siteFilter("jcnb-live-filter");
  head.append(progress, flag, filter);
  const waiting = h("div", "jcnb-hint jcnb-live-waiting");
  waiting.hidden = true;

  // Scalars: smoothing and log scale for all of them, then one card each.
  const scalarSection = h("div", "jcnb-live-scalar-section");
  const scalarTools = h("div", "jcnb-live-tools");
  const smoothing = /** @type {HTMLInputElement} */ (h("input", "jcnb-live-smoothing"));
  Object.assign(smoothing, { type: "range", min: "0", max: "0.99", step: "0.01", value: String(DEFAULT_SMOOTHING) });
  smoothing.setAttribute("aria-label", "smoothing");
  const smoothingText = h("span", "jcnb-live-smoothing-value");
  const scalarLog = /** @type {HTMLInputElement} */ (h("input", "jcnb-live-scalar-log"));
  scalarLog.type = "checkbox";
  const smoothingLabel = h("label", "jcnb-live-tool", "smoothing ");
  smoothingLabel.append(smoothing, smoothingText);
  const scalarLogLabel = h("label", "jcnb-live-tool");
  scalarLogLabel.append(scalarLog, document.createTextNode(" log scale"));
  scalarTools.append(smoothingLabel, scalarLogLabel);
  const scalarsBox = h("div", "jcnb-live-scalars");
  scalarSection.append(scalarTools, scalarsBox);
  scalarSection.hidden = true;

  // Sites: the view switch, the count scale and the key, then the cards.
  const gridTools = h("div", "jcnb-live-tools jcnb-live-grid-tools");
  const viewSwitch = h("span", "jcnb-live-views");
  viewSwitch.setAttribute("role", "group");
  viewSwitch.setAttribute("aria-label", "histogram view");
  for (const name of VIEWS) {
    const button = h("button", "jcnb-live-view-button", name);
    button.dataset.view = name;
    viewSwitch.append(button);
  }
  const countLog = /** @type {HTMLInputElement} */ (h("input", "jcnb-live-count-log"));
  countLog.type = "checkbox";
  const countLogLabel = h("label", "jcnb-live-tool");
  countLogLabel.append(countLog, document.createTextNode(" log counts"));
  gridTools.append(h("span", "jcnb-muted", "histograms"), viewSwitch, countLogLabel);
  const key = h("div", "jcnb-key jcnb-live-key");
  const grid = h("div", "jcnb-live-grid");
  const gridSection = h("div", "jcnb-live-grid-section");
  gridSection.append(gridTools, key, grid);
  gridSection.hidden = true;

  // One step of the selected site: a slider, a step box and its histogram.
  const detail = h("div", "jcnb-live-detail");
  detail.tabIndex = 0;
  detail.setAttribute("aria-label", "one step's histogram: Left and Right move a step, Home and End go to the first and last");
  detail.hidden = true;
  const detailTitle = h("div", "jcnb-live-title jcnb-live-detail-title");
  const stepRow = h("div", "jcnb-live-step-row");
  const range = /** @type {HTMLInputElement} */ (h("input", "jcnb-live-slider"));
  range.type = "range";
  range.min = "0";
  range.setAttribute("aria-label", "recorded step");
  const stepInput = /** @type {HTMLInputElement} */ (h("input", "jcnb-live-step-input"));
  stepInput.type = "number";
  stepInput.setAttribute("aria-label", "go to step");
  const stepNote = h("span", "jcnb-muted jcnb-live-step-note");
  stepRow.append(range, h("span", "jcnb-muted", "step"), stepInput, stepNote);
  const stepCanvas = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-live-step"));
  const numbers = h("div", "jcnb-live-numbers");
  detail.append(detailTitle, stepRow, stepCanvas, numbers);

  root.append(head, waiting, scalarSection, gridSection, detail);
  el.append(root);

  /** @type {Series[]} */ let sites = [];
  /** @type {Series[]} */ let scalars = [];
  let lastSeq = -1;
  let stale = false;
  let selected = -1;
  /** The step the detail shows; null follows the latest. @type {number | null} */
  let pinnedStep = null;
  let view = "heat";
  let frame = 0;
  /** What the pointer reads over each canvas, set when it is drawn. @type {Map<HTMLCanvasElement, (x: number, y: number) => string | null>} */
  const readOuts = new Map();

  const columns = model.get("_stat_columns");
  /** @type {Record<string, number>} */
  const col = Object.fromEntries(columns.map((/** @type {string} */ name, /** @type {number} */ i) => [name, i]));
  const percentiles = model.get("_percentiles");
  const pcol = (/** @type {number} */ q) => col[`p${q}`];
  const nonfiniteOf = (/** @type {Float32Array} */ r) => r[col.nan] + r[col.posinf] + r[col.neginf];
  const statOf = (/** @type {Float32Array} */ r, /** @type {string} */ name) => (name === "nonfinite" ? nonfiniteOf(r) : r[col[name]]);

  /** A canvas that shows what `readOuts` holds for it under the pointer. @param {string} cls */
  function hoverCanvas(cls) {
    const canvas = /** @type {HTMLCanvasElement} */ (h("canvas", cls));
    hoverReadOut(canvas, tooltip, (x, y) => readOuts.get(canvas)?.(x, y) ?? null);
    return canvas;
  }
  hoverReadOut(stepCanvas, tooltip, (x, y) => readOuts.get(stepCanvas)?.(x, y) ?? null);

  function apply() {
    const update = model.get("_update");
    const seq = update.seq;
    if (seq === lastSeq) return;
    const base = update.base;
    if (!base && seq !== lastSeq + 1) stale = true; // a missed update: wait for the next base one
    lastSeq = seq;
    if (base) {
      sites = [];
      scalars = [];
      stale = false;
    }
    if (stale) return;
    const bins = model.get("_bins");
    const width = columns.length;
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

  // -- The first NaN/Inf ----------------------------------------------------

  /**
   * Where the first NaN/Inf is in the browser's rows: the site, the step
   * the kernel flagged, its row (or the first recorded row after it, if
   * that step was thinned out) and the last finite step before it.
   * @returns {{site: number, step: number, row: number, lastFinite: number | null} | null}
   */
  function firstNonfinite() {
    const p = model.get("_progress") || {};
    const site = p.nonfinite_site;
    if (!p.nonfinite || site == null || site < 0) return null;
    const step = p.nonfinite.step;
    const s = sites[site];
    if (!s || !s.steps.length) return { site, step, row: -1, lastFinite: null };
    let row = s.steps.indexOf(step);
    if (row < 0) row = s.steps.findIndex((v) => v >= step);
    let lastFinite = null;
    for (let k = 0; k < s.steps.length && s.steps[k] < step; k++) if (nonfiniteOf(s.stats[k]) === 0) lastFinite = s.steps[k];
    return { site, step, row, lastFinite };
  }

  /** "h (gradient)": how the flag names a site; a value and its gradient share a label. @param {number} i */
  function siteName(i) {
    const site = model.get("_sites")[i];
    if (!site) return "";
    return site.kind === "activation" || site.kind === "gradient" ? `${site.label} (${site.kind})` : site.label;
  }

  // -- Header -----------------------------------------------------------------

  const hasRows = () => sites.some((s) => s.steps.length) || scalars.some((s) => s.steps.length);

  function drawProgress() {
    const p = model.get("_progress") || {};
    const compiling = !p.done && !hasRows();
    root.dataset.compiling = String(compiling);
    waiting.hidden = !compiling;
    if (compiling) {
      // No numbers yet: a rate or a statistic of nothing reads as a measurement.
      waiting.replaceChildren(h("span", "jcnb-spinner"), document.createTextNode(
        p.seen ? " waiting for the first recorded step…" : " compiling… the charts appear when the first step has run",
      ));
      progress.textContent = p.seen ? `${p.seen} steps run` : "";
    } else {
      const parts = [`${p.seen ?? 0}${p.total ? ` / ${p.total}` : ""} steps`];
      if (p.rate > 0) parts.push(`${p.rate} steps/s`);
      if (p.eta != null && !p.done) parts.push(`ETA ${p.eta < 90 ? `${Math.round(p.eta)} s` : `${Math.round(p.eta / 60)} min`}`);
      parts.push(`${p.recorded ?? 0} recorded`);
      if (p.done) parts.push("done");
      progress.textContent = parts.join(" · ");
    }
    const found = firstNonfinite();
    flag.hidden = !found;
    if (found) {
      const last = found.lastFinite == null ? "" : ` · last finite step ${found.lastFinite}`;
      flag.textContent = `first NaN/Inf: ${siteName(found.site)} at step ${found.step}${last}`;
      flag.title = "open this site at that step";
      flag.dataset.site = String(found.site);
      flag.dataset.step = String(found.step);
      if (found.lastFinite != null) flag.dataset.lastFinite = String(found.lastFinite);
    }
    root.dataset.steps = String(p.recorded ?? 0);
    root.dataset.seen = String(p.seen ?? 0);
    root.dataset.done = p.done ? "true" : "false";
  }

  // -- Histograms over steps ------------------------------------------------

  /** The value range every row's histogram covers, over finite rows only. @param {Series} s */
  function valueRange(s) {
    let lo = Infinity;
    let hi = -Infinity;
    for (const r of s.stats) {
      if (Number.isFinite(r[col.lo])) lo = Math.min(lo, r[col.lo]);
      if (Number.isFinite(r[col.hi])) hi = Math.max(hi, r[col.hi]);
    }
    if (!(hi >= lo)) return null;
    return hi > lo ? [lo, hi] : [lo - 0.5, hi + 0.5];
  }

  /** Row k's bin i as [from, to). @param {Series} s @param {number} k @param {number} i */
  function binRange(s, k, i) {
    const a = s.stats[k][col.lo];
    const width = (s.stats[k][col.hi] - a) / s.hists[k].length;
    return [a + i * width, a + (i + 1) * width];
  }

  /** Which bin of row k holds value v, or -1. @param {Series} s @param {number} k @param {number} v */
  function binAt(s, k, v) {
    const a = s.stats[k][col.lo];
    const b = s.stats[k][col.hi];
    if (!(v >= a && v <= b) || !(b > a)) return -1;
    return Math.min(s.hists[k].length - 1, Math.floor(((v - a) / (b - a)) * s.hists[k].length));
  }

  /** "step 12\n[0.1, 0.2)\ncount 5": the read-out of row k's bin i. @param {Series} s @param {number} k @param {number} i */
  function binText(s, k, i) {
    const [from, to] = binRange(s, k, i);
    return `step ${s.steps[k]}\nvalues [${fmt(from)}, ${fmt(to)})\ncount ${s.hists[k][i]}`;
  }

  /** The percentiles of row k, as read-out lines. @param {Series} s @param {number} k */
  function percentileText(s, k) {
    const r = s.stats[k];
    return percentiles.map((/** @type {number} */ q) => `${ordinal(q)} ${fmt(r[pcol(q)])}`).join("  ");
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

  /**
   * The heat view: a column per recorded step, coloured by the count in
   * each bin, with the percentile bands and the median over it.
   * @param {CanvasRenderingContext2D} ctx @param {Series} s @param {ReturnType<typeof themeOf>} theme
   * @param {{marked: number | null, shown: number | null}} marks
   */
  function drawHeat(ctx, s, theme, marks) {
    const box = plotBox(CARD_W, OVER_H, { left: 44 });
    const values = valueRange(s);
    const n = s.steps.length;
    const x = columnScale(s.steps, box.x, box.x + box.w);
    const y = linearScale(...(values || [0, 1]), box.y + box.h, box.y);
    const log = countLog.checked;
    for (let k = 0; k < n; k++) {
      const hist = s.hists[k];
      const top = Math.max(1, ...hist);
      const shade = countScale(top, 0, 1, log);
      const left = x(k ? (s.steps[k - 1] + s.steps[k]) / 2 : x.domain[0]);
      const right = x(k < n - 1 ? (s.steps[k] + s.steps[k + 1]) / 2 : x.domain[1]);
      ctx.fillStyle = theme.series;
      for (let i = 0; i < hist.length; i++) {
        if (!hist[i]) continue;
        const [from, to] = binRange(s, k, i);
        const y0 = y(to);
        // Linear counts shade by their square root: a spike (ReLU's zeros)
        // would otherwise wash the rest of the column out.
        const share = shade(hist[i]);
        ctx.globalAlpha = 0.08 + 0.92 * (log ? share : Math.sqrt(share));
        ctx.fillRect(left, y0, Math.max(right - left, 1), Math.max(y(from) - y0, 1));
      }
    }
    ctx.globalAlpha = 1;
    drawBands(ctx, s, x, y, theme);
    // Ticks only at steps between the first and last recorded: the columns'
    // half-widths at either end are no steps of the run.
    const xTicks = stepTicks(s.steps[0], s.steps[n - 1], 5);
    const yTicks = y.ticks(5);
    drawAxes(ctx, box, { theme, x, xTicks, y, yTicks });
    if (marks.shown != null) stepLine(ctx, box, x(marks.shown), theme.accent, false);
    if (marks.marked != null) stepLine(ctx, box, x(marks.marked), theme.bad, true);
    return {
      xTicks: tickList(xTicks),
      yTicks: tickList(yTicks),
      readOut: (/** @type {number} */ px, /** @type {number} */ py) => {
        if (px < box.x || px > box.x + box.w || py < box.y || py > box.y + box.h) return null;
        const k = nearestIndex(s.steps, x.invert(px));
        const i = binAt(s, k, y.invert(py));
        const bin = i >= 0 ? binText(s, k, i) : `step ${s.steps[k]}\nno values here`;
        return `${bin}\n${percentileText(s, k)}`;
      },
    };
  }

  /**
   * TensorBoard's distribution bands over the heat view: the shaded
   * percentile ranges, the 0th and 100th as thin lines and the median.
   * Rows with no finite value break the lines.
   */
  function drawBands(ctx, s, x, y, theme) {
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
    for (const [low, high, alpha] of BANDS) {
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
    line(pcol(percentiles[0]), theme.band, 1, [2, 2]);
    line(pcol(percentiles[percentiles.length - 1]), theme.band, 1, [2, 2]);
    line(pcol(50), theme.median, 1.5, []);
  }

  /**
   * One histogram as a line over `box`: bin counts at bin centres, closed
   * down to `base`.
   * @returns {Path2D}
   */
  function histogramPath(s, k, x, height, base) {
    const path = new Path2D();
    const hist = s.hists[k];
    const [a] = binRange(s, k, 0);
    const [, b] = binRange(s, k, hist.length - 1);
    path.moveTo(x(a), base);
    for (let i = 0; i < hist.length; i++) {
      const [from, to] = binRange(s, k, i);
      path.lineTo(x((from + to) / 2), height(hist[i]));
    }
    path.lineTo(x(b), base);
    return path;
  }

  /** Rows whose histogram holds any finite value. @param {Series} s @param {number} k */
  const drawable = (s, k) => Number.isFinite(s.stats[k][col.lo]) && s.hists[k].some((c) => c > 0);

  /**
   * TensorBoard's offset view: one histogram line per recorded step, each
   * on its own baseline down the step axis, later steps in front.
   * @param {CanvasRenderingContext2D} ctx @param {Series} s @param {ReturnType<typeof themeOf>} theme
   * @param {{marked: number | null, shown: number | null, markedRow: number, shownRow: number}} marks
   */
  function drawOffset(ctx, s, theme, marks) {
    const box = plotBox(CARD_W, OVER_H, { left: 44 });
    const values = valueRange(s) || [0, 1];
    const x = linearScale(values[0], values[1], box.x, box.x + box.w);
    const rows = lineRows(s.steps.length, [marks.markedRow, marks.shownRow]).filter((k) => drawable(s, k));
    const ridge = box.h * 0.45;
    const steps = s.steps;
    // The step axis spans the steps that have a histogram to draw.
    const first = rows.length ? steps[rows[0]] : steps[0];
    const last = rows.length ? steps[rows[rows.length - 1]] : steps[steps.length - 1];
    const yStep = linearScale(last > first ? first : first - 1, last, box.y + ridge, box.y + box.h);
    const top = Math.max(1, ...rows.flatMap((k) => Array.from(s.hists[k])));
    const heightOf = countScale(top, 0, ridge, countLog.checked);
    const yTicks = stepTicks(first, last, 4);
    const xTicks = x.ticks(5);
    drawAxes(ctx, box, { theme, x, xTicks, y: yStep, yTicks, yText: String, grid: false });
    ctx.save();
    ctx.beginPath();
    ctx.rect(box.x + 1, 0, box.w, box.y + box.h);
    ctx.clip();
    rows.forEach((k, j) => {
      const base = yStep(steps[k]);
      const path = histogramPath(s, k, x, (/** @type {number} */ c) => base - heightOf(c), base);
      ctx.fillStyle = theme.bg; // hides the lines of earlier steps behind this one
      ctx.fill(path);
      const special = k === marks.markedRow ? theme.bad : k === marks.shownRow ? theme.accent : null;
      ctx.strokeStyle = special || theme.series;
      ctx.globalAlpha = special ? 1 : 0.35 + (0.65 * (j + 1)) / rows.length;
      ctx.lineWidth = special ? 1.5 : 1;
      ctx.stroke(path);
      ctx.globalAlpha = 1;
    });
    ctx.restore();
    return {
      xTicks: tickList(xTicks),
      yTicks: tickList(yTicks, String),
      readOut: (/** @type {number} */ px, /** @type {number} */ py) => {
        if (px < box.x || px > box.x + box.w || py < box.y || py > box.y + box.h || !rows.length) return null;
        // The front-most histogram whose baseline is at or below the pointer.
        const below = rows.filter((k) => yStep(steps[k]) >= py - 2);
        const k = below.length ? below[0] : rows[rows.length - 1];
        const i = binAt(s, k, x.invert(px));
        return i >= 0 ? binText(s, k, i) : `step ${steps[k]}\nno values here`;
      },
    };
  }

  /**
   * TensorBoard's overlay view: every step's histogram on the same axes,
   * older ones fainter, the latest solid.
   * @param {CanvasRenderingContext2D} ctx @param {Series} s @param {ReturnType<typeof themeOf>} theme
   * @param {{marked: number | null, shown: number | null, markedRow: number, shownRow: number}} marks
   */
  function drawOverlay(ctx, s, theme, marks) {
    const box = plotBox(CARD_W, OVER_H, { left: 44 });
    const values = valueRange(s) || [0, 1];
    const x = linearScale(values[0], values[1], box.x, box.x + box.w);
    const rows = lineRows(s.steps.length, [marks.markedRow, marks.shownRow]).filter((k) => drawable(s, k));
    const top = Math.max(1, ...rows.flatMap((k) => Array.from(s.hists[k])));
    const y = countScale(top, box.y + box.h, box.y, countLog.checked);
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
      ctx.stroke(histogramPath(s, k, x, y, y(0)));
    }
    ctx.globalAlpha = 1;
    return {
      xTicks: tickList(xTicks),
      yTicks: tickList(yTicks),
      readOut: (/** @type {number} */ px, /** @type {number} */ py) => {
        if (px < box.x || px > box.x + box.w || py < box.y || py > box.y + box.h || !rows.length) return null;
        // The step whose line passes nearest the pointer.
        let best = -1;
        let bestBin = -1;
        let distance = Infinity;
        for (const k of rows) {
          const i = binAt(s, k, x.invert(px));
          if (i < 0) continue;
          const d = Math.abs(y(s.hists[k][i]) - py);
          if (d < distance) [best, bestBin, distance] = [k, i, d];
        }
        return best < 0 ? null : binText(s, best, bestBin);
      },
    };
  }

  /**
   * A small line of one statistic over steps, with the step markers.
   * @param {HTMLCanvasElement} canvas @param {Series} s @param {string} name @param {string} label
   * @param {ReturnType<typeof themeOf>} theme @param {{marked: number | null, shown: number | null}} marks
   */
  function drawTrace(canvas, s, name, label, theme, marks) {
    const ctx = sized(canvas, TRACE_W, TRACE_H);
    const values = s.stats.map((r) => statOf(r, name));
    const box = { x: 1, y: 3, w: TRACE_W - 2, h: TRACE_H - 6 };
    const finite = values.filter(Number.isFinite);
    const lo = finite.length ? Math.min(...finite) : 0;
    const hi = finite.length ? Math.max(...finite) : 1;
    const x = lineStepScale(s.steps, box.x, box.x + box.w);
    const y = linearScale(lo, hi > lo ? hi : lo + 1, box.y + box.h, box.y);
    ctx.strokeStyle = theme.grid;
    ctx.strokeRect(0.5, 0.5, TRACE_W - 1, TRACE_H - 1);
    if (marks.marked != null) stepLine(ctx, box, x(marks.marked), theme.bad, true);
    ctx.strokeStyle = name === "nonfinite" && hi > 0 ? theme.bad : theme.series;
    ctx.lineWidth = 1.25;
    ctx.beginPath();
    let pen = false;
    values.forEach((v, k) => {
      if (!Number.isFinite(v)) return void (pen = false);
      const px = s.steps.length > 1 ? x(s.steps[k]) : box.x + box.w / 2;
      if (pen) ctx.lineTo(px, y(v));
      else ctx.moveTo(px, y(v)), ctx.lineTo(px + 0.5, y(v));
      pen = true;
    });
    ctx.stroke();
    canvas.dataset.drawn = String(values.length);
    readOuts.set(canvas, (px) => {
      const k = nearestIndex(s.steps, x.invert(px));
      return `${label}\nstep ${s.steps[k]}\nvalue ${fmt(values[k])}`;
    });
  }

  function drawGrid() {
    const meta = model.get("_sites");
    gridSection.hidden = !meta.length || !hasRows();
    while (grid.children.length < meta.length) {
      const i = grid.children.length;
      const card = h("div", "jcnb-live-card");
      card.dataset.site = String(i);
      const top = h("div", "jcnb-live-card-head");
      top.append(h("span", "jcnb-live-title"), h("span", "jcnb-live-kind"));
      const traces = h("div", "jcnb-live-traces");
      for (const t of TRACES) {
        const trace = h("div", "jcnb-live-trace");
        trace.dataset.stat = t.key;
        trace.append(h("div", "jcnb-live-trace-label"), hoverCanvas("jcnb-live-trace-canvas"));
        traces.append(trace);
      }
      card.append(top, hoverCanvas("jcnb-live-over"), traces, h("div", "jcnb-hint jcnb-live-card-hint", "waiting for this site's first row…"));
      grid.append(card);
    }
    const theme = themeOf(root);
    const found = firstNonfinite();
    const matches = siteMatcher(filter);
    meta.forEach((/** @type {{label: string, kind: string}} */ site, /** @type {number} */ i) => {
      const card = /** @type {HTMLElement} */ (grid.children[i]);
      card.hidden = !matches(site.label);
      card.classList.toggle("jcnb-selected", i === selected);
      card.querySelector(".jcnb-live-title").textContent = site.label;
      card.querySelector(".jcnb-live-kind").textContent = site.kind;
      if (card.hidden) return;
      const s = sites[i] || new Series();
      const empty = !s.steps.length;
      const over = /** @type {HTMLCanvasElement} */ (card.querySelector(".jcnb-live-over"));
      over.hidden = empty;
      /** @type {HTMLElement} */ (card.querySelector(".jcnb-live-traces")).hidden = empty;
      /** @type {HTMLElement} */ (card.querySelector(".jcnb-live-card-hint")).hidden = !empty;
      if (empty) return;
      const marked = found && found.site === i ? found.step : null;
      const shownRow = i === selected ? shownIndex(s) : -1;
      const marks = { marked, shown: shownRow >= 0 ? s.steps[shownRow] : null, markedRow: found && found.site === i ? found.row : -1, shownRow };
      if (marked != null) card.dataset.markedStep = String(marked);
      else delete card.dataset.markedStep;
      const ctx = sized(over, CARD_W, OVER_H);
      const drawn = (view === "offset" ? drawOffset : view === "overlay" ? drawOverlay : drawHeat)(ctx, s, theme, marks);
      over.dataset.drawn = String(s.steps.length);
      over.dataset.view = view;
      over.dataset.xTicks = drawn.xTicks;
      over.dataset.yTicks = drawn.yTicks;
      readOuts.set(over, drawn.readOut);
      const last = s.stats[s.stats.length - 1];
      card.querySelectorAll(".jcnb-live-trace").forEach((trace, t) => {
        const { key: name, label } = TRACES[t];
        trace.children[0].textContent = `${label} ${fmt(statOf(last, name))}`;
        drawTrace(/** @type {HTMLCanvasElement} */ (trace.children[1]), s, name, label, theme, marks);
      });
    });
  }

  /** The key of the histogram view in use: what the colours and lines mean. */
  function drawKey() {
    const theme = themeOf(root);
    const items = [];
    if (view === "heat") {
      items.push(keyItem(theme.series, VIEW_KEYS.heat));
      const first = percentiles[0];
      const last = percentiles[percentiles.length - 1];
      items.push(keyItem(theme.band, `${ordinal(first)} / ${ordinal(last)} percentile (min, max)`, "line"));
      for (const [low, high, alpha] of BANDS) items.push(keyItem(faded(theme.band, alpha + 0.15), `${ordinal(low)}–${ordinal(high)}`));
      items.push(keyItem(theme.median, "median", "line"));
      items.push(h("span", "jcnb-muted", "x: step · y: value"));
    } else {
      items.push(keyItem(theme.series, VIEW_KEYS[view], "line"));
      items.push(h("span", "jcnb-muted", view === "offset" ? "x: value · y: step" : "x: value · y: count"));
    }
    if (firstNonfinite()) items.push(keyItem(theme.bad, "first NaN/Inf step", "line"));
    if (selected >= 0) items.push(keyItem(theme.accent, "step shown below", "line"));
    key.replaceChildren(...items);
    for (const button of viewSwitch.children) {
      const on = /** @type {HTMLElement} */ (button).dataset.view === view;
      button.classList.toggle("jcnb-on", on);
      button.setAttribute("aria-pressed", String(on));
    }
    root.dataset.view = view;
    root.dataset.countScale = countLog.checked ? "log" : "linear";
  }

  // -- Scalars ----------------------------------------------------------------

  /**
   * One scalar's chart: the raw values faint, the smoothed ones solid, on a
   * linear or log value axis.
   * @param {HTMLCanvasElement} canvas @param {Series} s @param {ReturnType<typeof themeOf>} theme
   */
  function drawScalar(canvas, s, theme) {
    const ctx = sized(canvas, SCALAR_W, SCALAR_H);
    const box = plotBox(SCALAR_W, SCALAR_H, { left: 48 });
    const raw = s.stats.map((r) => r[0]);
    const weight = Number(smoothing.value);
    const smooth = smoothedValues(raw, weight);
    const log = scalarLog.checked;
    const shown = (/** @type {number} */ v) => Number.isFinite(v) && (!log || v > 0);
    const finite = [...raw, ...smooth].filter(shown);
    const x = lineStepScale(s.steps, box.x, box.x + box.w);
    let lo = finite.length ? Math.min(...finite) : log ? 1 : 0;
    let hi = finite.length ? Math.max(...finite) : log ? 10 : 1;
    if (hi === lo) [lo, hi] = log ? [lo / 2, hi * 2] : [lo - 0.5, hi + 0.5];
    const y = log ? logScale(lo, hi, box.y + box.h, box.y) : linearScale(lo, hi, box.y + box.h, box.y);
    const xTicks = stepTicks(...x.domain, 5);
    const yTicks = y.ticks(4);
    drawAxes(ctx, box, { theme, x, xTicks, y, yTicks });
    /** @param {number[]} values @param {number} alpha @param {number} width */
    const line = (values, alpha, width) => {
      ctx.save();
      ctx.beginPath();
      ctx.rect(box.x, box.y - 1, box.w + 1, box.h + 2);
      ctx.clip();
      ctx.strokeStyle = theme.series;
      ctx.globalAlpha = alpha;
      ctx.lineWidth = width;
      ctx.beginPath();
      let pen = false;
      values.forEach((v, k) => {
        if (!shown(v)) return void (pen = false);
        if (pen) ctx.lineTo(x(s.steps[k]), y(v));
        else ctx.moveTo(x(s.steps[k]), y(v)), ctx.lineTo(x(s.steps[k]) + 0.5, y(v));
        pen = true;
      });
      ctx.stroke();
      ctx.restore();
    };
    line(raw, 0.3, 1);
    line(smooth, 1, 1.5);
    canvas.dataset.drawn = String(raw.length);
    canvas.dataset.xTicks = tickList(xTicks);
    canvas.dataset.yTicks = tickList(yTicks);
    canvas.dataset.scale = log ? "log" : "linear";
    canvas.dataset.smoothedLast = raw.length ? String(smooth[smooth.length - 1]) : "";
    readOuts.set(canvas, (px, py) => {
      if (!raw.length || px < box.x - 4 || py > box.y + box.h) return null;
      const k = nearestIndex(s.steps, x.invert(px));
      return `step ${s.steps[k]}\nvalue ${fmt(raw[k])}\nsmoothed ${fmt(smooth[k])}`;
    });
    return { raw, smooth };
  }

  function drawScalars() {
    const names = model.get("_scalar_names");
    scalarSection.hidden = !names.length || !hasRows();
    smoothingText.textContent = Number(smoothing.value).toFixed(2);
    root.dataset.smoothing = smoothing.value;
    root.dataset.scalarScale = scalarLog.checked ? "log" : "linear";
    while (scalarsBox.children.length < names.length) {
      const card = h("div", "jcnb-live-scalar");
      const title = h("div", "jcnb-live-scalar-head");
      title.append(h("span", "jcnb-live-title"), h("span", "jcnb-live-latest"));
      card.append(title, hoverCanvas("jcnb-live-scalar-canvas"));
      scalarsBox.append(card);
    }
    const theme = themeOf(root);
    names.forEach((/** @type {string} */ name, /** @type {number} */ i) => {
      const card = /** @type {HTMLElement} */ (scalarsBox.children[i]);
      const s = scalars[i] || new Series();
      const { raw, smooth } = drawScalar(/** @type {HTMLCanvasElement} */ (card.children[1]), s, theme);
      card.querySelector(".jcnb-live-title").textContent = name;
      // The latest value lives in the title, never on the chart, where it
      // would read as the top of the axis.
      const n = raw.length;
      card.querySelector(".jcnb-live-latest").textContent = n ? `step ${s.steps[n - 1]}: ${fmt(raw[n - 1])} (smoothed ${fmt(smooth[n - 1])})` : "no values yet";
    });
  }

  // -- One step ---------------------------------------------------------------

  /** The row the detail shows: the pinned step's nearest row, or the latest. @param {Series} s */
  function shownIndex(s) {
    if (!s.steps.length) return -1;
    return pinnedStep == null ? s.steps.length - 1 : nearestIndex(s.steps, pinnedStep);
  }

  function drawDetail() {
    const meta = model.get("_sites");
    const s = sites[selected];
    if (selected < 0 || !s || !s.steps.length) {
      detail.hidden = true;
      readOuts.delete(stepCanvas);
      return;
    }
    detail.hidden = false;
    const last = s.steps.length - 1;
    const k = shownIndex(s);
    const step = s.steps[k];
    const found = firstNonfinite();
    const isMarked = found && found.site === selected && found.row === k;
    detailTitle.textContent = `${meta[selected].label} (${meta[selected].kind}) · step ${step}${isMarked ? " · first NaN/Inf" : ""}`;
    range.max = String(last);
    range.value = String(k);
    stepInput.min = String(s.steps[0]);
    stepInput.max = String(s.steps[last]);
    if (document.activeElement !== stepInput) stepInput.value = String(step);
    const lastFinite = found && found.site === selected && found.lastFinite != null ? ` · last finite step ${found.lastFinite}` : "";
    stepNote.textContent = `row ${k + 1} of ${s.steps.length} recorded (steps ${s.steps[0]}–${s.steps[last]})${lastFinite}`;
    detail.dataset.step = String(step);
    detail.dataset.row = String(k);
    if (found && found.site === selected) detail.dataset.markedStep = String(found.step);
    else delete detail.dataset.markedStep;
    drawStepHistogram(s, k, themeOf(root));
    const r = s.stats[k];
    const names = [["mean", "mean"], ["std", "std"], ["min", "min"], ["max", "max"], ["zero_pct", "zeros %"], ["nan", "NaN"], ["posinf", "+Inf"], ["neginf", "−Inf"]];
    numbers.textContent = names.map(([name, label]) => `${label} ${fmt(r[col[name]])}`).join(" · ");
  }

  /** Row k's histogram, with a value axis and a count axis. @param {Series} s @param {number} k @param {ReturnType<typeof themeOf>} theme */
  function drawStepHistogram(s, k, theme) {
    const ctx = sized(stepCanvas, DETAIL_W, DETAIL_H);
    const box = plotBox(DETAIL_W, DETAIL_H, { left: 50 });
    const hist = s.hists[k];
    const r = s.stats[k];
    const any = hist.some((c) => c > 0) && Number.isFinite(r[col.lo]);
    const x = any ? linearScale(r[col.lo], r[col.hi], box.x, box.x + box.w) : linearScale(0, 1, box.x, box.x + box.w);
    const y = countScale(Math.max(1, ...hist), box.y + box.h, box.y, countLog.checked);
    const xTicks = any ? x.ticks(6) : [];
    const yTicks = countTicks(y);
    drawAxes(ctx, box, { theme, x, xTicks, y, yTicks, yLabel: countLog.checked ? "count (log)" : "count" });
    if (any) drawBars(ctx, box, hist, y, theme.series);
    else {
      ctx.fillStyle = theme.bad;
      ctx.font = `12px ${theme.font}`;
      ctx.textAlign = "center";
      const counts = [["NaN", r[col.nan]], ["+Inf", r[col.posinf]], ["−Inf", r[col.neginf]]].filter(([, c]) => c > 0);
      ctx.fillText(`no finite values at this step${counts.length ? `: ${counts.map(([n, c]) => `${c} ${n}`).join(", ")}` : ""}`, box.x + box.w / 2, box.y + box.h / 2);
    }
    stepCanvas.dataset.drawn = String(s.steps[k]);
    stepCanvas.dataset.xTicks = tickList(xTicks);
    stepCanvas.dataset.yTicks = tickList(yTicks);
    readOuts.set(stepCanvas, (px, py) => {
      if (!any || px < box.x || px > box.x + box.w || py > box.y + box.h) return null;
      const i = Math.min(hist.length - 1, Math.floor(((px - box.x) / box.w) * hist.length));
      return binText(s, k, i);
    });
  }

  /** Shows row k of the selected site (the latest row follows new steps). @param {number} k */
  function showRow(k) {
    const s = sites[selected];
    if (!s || !s.steps.length) return;
    const at = Math.min(Math.max(k, 0), s.steps.length - 1);
    pinnedStep = at === s.steps.length - 1 ? null : s.steps[at];
    draw();
  }

  // -- Drawing and events -----------------------------------------------------

  function draw() {
    frame = 0;
    drawProgress();
    drawScalars();
    drawKey();
    drawGrid();
    drawDetail();
    root.dataset.ready = "true";
    el.classList.add("jcnb-ready");
  }

  // A view off the page (an output its host replaced, or a cell a windowed
  // notebook took out while scrolled away) keeps taking updates but does not
  // draw them; it draws when it is back on the page, which resizes it.
  let missed = false;
  const schedule = () => {
    if (!el.isConnected) {
      missed = true;
      return;
    }
    if (!frame) frame = requestAnimationFrame(draw);
  };
  const backOnPage = new ResizeObserver(() => {
    if (missed && el.isConnected) {
      missed = false;
      schedule();
    }
  });
  backOnPage.observe(root);
  const onGridClick = (/** @type {MouseEvent} */ event) => {
    const card = /** @type {HTMLElement | null} */ (/** @type {HTMLElement} */ (event.target).closest(".jcnb-live-card"));
    if (!card) return;
    selected = Number(card.dataset.site) === selected ? -1 : Number(card.dataset.site);
    pinnedStep = null;
    draw();
  };
  const onFlag = () => {
    const found = firstNonfinite();
    if (!found) return;
    selected = found.site;
    const s = sites[selected];
    pinnedStep = s && found.row >= 0 ? s.steps[found.row] : found.step;
    filter.value = "";
    draw();
    detail.focus({ preventScroll: true });
    detail.scrollIntoView({ block: "nearest" });
  };
  const onDetailKey = (/** @type {KeyboardEvent} */ event) => {
    if (event.target === stepInput) {
      event.stopPropagation(); // typing a number is not a notebook shortcut
      if (event.key === "Enter") {
        event.preventDefault();
        onStepTyped();
      }
      return;
    }
    if (event.target === range) {
      event.stopPropagation(); // the slider moves itself; the notebook must not
      return;
    }
    const s = sites[selected];
    if (event.target !== detail || !s) return;
    const k = shownIndex(s);
    const moves = { ArrowLeft: k - 1, ArrowRight: k + 1, ArrowDown: k - 1, ArrowUp: k + 1, Home: 0, End: s.steps.length - 1 };
    if (!(event.key in moves)) return;
    event.preventDefault();
    event.stopPropagation(); // JupyterLab's arrows move between cells
    showRow(moves[event.key]);
  };
  /** Goes to the typed step, or the recorded step nearest to it. */
  const onStepTyped = () => {
    const s = sites[selected];
    const typed = Number(stepInput.value);
    if (!s || stepInput.value.trim() === "" || !Number.isFinite(typed)) return;
    const k = nearestIndex(s.steps, typed);
    stepInput.value = String(s.steps[k]);
    showRow(k);
  };
  const onRange = () => showRow(Number(range.value));
  const onViewSwitch = (/** @type {MouseEvent} */ event) => {
    const button = /** @type {HTMLElement} */ (event.target).closest("button");
    if (!button || !button.dataset.view) return;
    view = button.dataset.view;
    draw();
  };
  const onToolKey = (/** @type {KeyboardEvent} */ event) => event.stopPropagation(); // typing is not a notebook shortcut

  grid.addEventListener("click", onGridClick);
  flag.addEventListener("click", onFlag);
  filter.addEventListener("input", draw);
  filter.addEventListener("keydown", onToolKey);
  detail.addEventListener("keydown", onDetailKey);
  stepInput.addEventListener("change", onStepTyped);
  range.addEventListener("input", onRange);
  viewSwitch.addEventListener("click", onViewSwitch);
  countLog.addEventListener("change", draw);
  smoothing.addEventListener("input", drawScalars);
  scalarLog.addEventListener("change", drawScalars);
  const stopTheme = onThemeChange(schedule);
  // Every update is applied as it arrives (one missed delta would make the
  // view wait for a base update); drawing waits for the next frame.
  const receive = () => {
    apply();
    schedule();
  };
  model.on("change:_update", receive);
  model.on("change:_progress", schedule);
  apply();
  draw();
  return () => {
    stopTheme();
    backOnPage.disconnect();
    tooltip.node.remove();
    model.off("change:_update", receive);
    model.off("change:_progress", schedule);
    if (frame) cancelAnimationFrame(frame);
  };
}

export default { render };
