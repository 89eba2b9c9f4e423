// LiveView's scalar charts: one card per logged scalar, with a line per run
// in a view of several runs; the raw values faint and TensorBoard's
// smoothing solid, on a linear or log value axis.

import { fmt, h, sized } from "./common.js";
import { themeOf, niceTicks, stepTicks, tickText, linearScale, logScale, plotBox, drawAxes } from "./draw.js";
import { setName } from "./names.js";
import { groupsOf, shownMembers, recordedByAny, hasRows, nearestIndex } from "./live_state.js";
import { STEP_AT, lineStepScale, tickList, stepLine } from "./live_histograms.js";
import { cardTools, showExpanded } from "./live_export.js";
/** @typedef {import("./live_state.js").Entry} Entry */
/** @typedef {import("./live_state.js").FirstNonfinite} FirstNonfinite */
/** @typedef {import("./live_state.js").LiveState} LiveState */
/** @typedef {import("./live_state.js").Runs} Runs */
/** @typedef {import("./live_state.js").Series} Series */

// What the horizontal axis of the scalar charts counts, as TensorBoard offers:
// steps, seconds since the run's first value, or the time of day.
const X_AXES = { step: "step", relative: "relative time", wall: "wall time" };

/**
 * Where each of a series' rows lies on the horizontal axis: its step, or
 * its wall time, since the run's first value (relative) or as is.
 * @param {Series} s @param {string} axis a key of X_AXES
 */
function xsOf(s, axis) {
  if (axis === "step" || !s.walls.length) return s.steps;
  if (axis === "wall") return s.walls;
  const first = s.walls.find(Number.isFinite) ?? 0;
  return s.walls.map((t) => t - first);
}

/** "45 s", "12.5 min", "3.2 h": a span of seconds. @param {number} seconds */
function durationText(seconds) {
  const a = Math.abs(seconds);
  if (a < 120) return `${Number(seconds.toPrecision(3))} s`;
  if (a < 7200) return `${Number((seconds / 60).toPrecision(3))} min`;
  return `${Number((seconds / 3600).toPrecision(3))} h`;
}

/** "14:03:27": a time of day, on the browser's clock. @param {number} seconds since the epoch */
function clockText(seconds) {
  return new Date(seconds * 1000).toLocaleTimeString([], { hour12: false });
}

/**
 * The horizontal axis's ticks and how they read: whole steps; spans of
 * time in seconds, minutes or hours; times of day.
 * @param {string} axis a key of X_AXES @param {[number, number]} domain @param {number} count
 * @returns {{ticks: number[], text: (v: number) => string}}
 */
function xTicksOf(axis, domain, count) {
  if (axis === "step") return { ticks: stepTicks(...domain, count), text: tickText };
  // Nice steps in the unit the ticks are written in.
  const span = Math.abs(domain[1] - domain[0]);
  const unit = axis === "wall" || span < 120 ? 1 : span < 7200 ? 60 : 3600;
  const ticks = niceTicks(domain[0] / unit, domain[1] / unit, count).map((v) => v * unit);
  return { ticks, text: axis === "wall" ? clockText : durationText };
}

// A chart's width when its card is not laid out yet (the narrowest column).
const SCALAR_W = 320;
const SCALAR_H = 150;
// TensorBoard's default scalar smoothing.
const DEFAULT_SMOOTHING = 0.6;

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

/**
 * One scalar's chart, a line per run: the raw values faint, the smoothed
 * ones solid, on a linear or log value axis.
 * @param {HTMLCanvasElement} canvas @param {{s: Series, colour: string, name: string}[]} members
 * @param {ReturnType<typeof themeOf>} theme @param {number} weight the smoothing
 * @param {{log: boolean, robust: boolean, marked: number | null, width: number, height: number, range: [number, number] | null, xAxis: string}} look
 * a log value axis; a value axis that ignores outliers; the first NaN/Inf's step, if it is this scalar's; the chart's size;
 * the steps it is zoomed to; what the horizontal axis counts (a key of X_AXES)
 * @returns {{lines: {m: any, raw: number[], smooth: number[]}[], readOut: (x: number, y: number) => string | null}}
 */
function drawScalar(canvas, members, theme, weight, look) {
  const { log, width, height } = look;
  const ctx = sized(canvas, width, height);
  const box = plotBox(width, height, { left: 48 });
  const over = look.xAxis;
  const lines = members.map((m) => {
    const raw = m.s.stats.map((r) => r[0]);
    return { m, raw, smooth: smoothedValues(raw, weight), xs: xsOf(m.s, over) };
  });
  const shown = (/** @type {number} */ v) => Number.isFinite(v) && (!log || v > 0);
  // Zoomed, the axes span the zoom's steps; the lines are smoothed over all
  // of theirs, so a value reads the same zoomed or not.
  const range = look.range;
  const inRange = (/** @type {number} */ step) => !range || (step >= range[0] && step <= range[1]);
  const finite = lines.flatMap((l) => [...l.raw, ...l.smooth].filter((v, i) => inRange(l.m.s.steps[i % l.raw.length]))).filter(shown);
  // Every position on the horizontal axis of a row in the zoom, in order.
  const axis = [...new Set(lines.flatMap((l) => l.xs.filter((v, k) => Number.isFinite(v) && inRange(l.m.s.steps[k]))))].sort((a, b) => a - b);
  const x = lineStepScale(axis.length ? axis : [0], box.x, box.x + box.w);
  let [lo, hi] = look.robust ? robustRange(finite) : [Math.min(...finite), Math.max(...finite)];
  if (!finite.length) [lo, hi] = log ? [1, 10] : [0, 1];
  if (hi === lo) [lo, hi] = log ? [lo / 2, hi * 2] : [lo - 0.5, hi + 0.5];
  const y = log ? logScale(lo, hi, box.y + box.h, box.y) : linearScale(lo, hi, box.y + box.h, box.y);
  const { ticks: xTicks, text: xText } = xTicksOf(over, x.domain, width > 400 ? 7 : 5);
  const yTicks = y.ticks(4);
  drawAxes(ctx, box, { theme, x, xTicks, xText, y, yTicks });
  /** @param {number[]} steps @param {number[]} values @param {string} colour @param {number} alpha @param {number} width */
  const line = (steps, values, colour, alpha, width) => {
    ctx.save();
    ctx.beginPath();
    ctx.rect(box.x, box.y - 1, box.w + 1, box.h + 2);
    ctx.clip();
    ctx.strokeStyle = colour;
    ctx.globalAlpha = alpha;
    ctx.lineWidth = width;
    ctx.beginPath();
    let pen = false;
    values.forEach((v, k) => {
      if (!shown(v)) return void (pen = false);
      if (pen) ctx.lineTo(x(steps[k]), y(v));
      else ctx.moveTo(x(steps[k]), y(v)), ctx.lineTo(x(steps[k]) + 0.5, y(v));
      pen = true;
    });
    ctx.stroke();
    ctx.restore();
  };
  for (const l of lines) line(l.xs, l.raw, l.m.colour, 0.3, 1);
  for (const l of lines) line(l.xs, l.smooth, l.m.colour, 1, 1.5);
  if (look.marked != null && over === "step") stepLine(ctx, box, x(look.marked), theme.bad, true);
  const marks = lines.reduce((n, l) => n + markNonfiniteValues(ctx, box, l.xs, l.raw, x, theme), 0);
  canvas.dataset.nonfinite = String(marks);
  canvas.dataset.yRange = `${lo} ${hi}`;
  canvas.dataset.drawn = String(Math.max(0, ...lines.map((l) => l.raw.length)));
  canvas.dataset.lines = String(lines.filter((l) => l.raw.length).length);
  canvas.dataset.xTicks = tickList(xTicks, xText);
  canvas.dataset.xAxis = over;
  canvas.dataset.yTicks = tickList(yTicks);
  canvas.dataset.scale = log ? "log" : "linear";
  canvas.dataset.smoothedLast = lines.map((l) => (l.raw.length ? String(l.smooth[l.smooth.length - 1]) : "")).join(" ");
  /** @param {number} px @param {number} py */
  const readOut = (px, py) => {
    if (!axis.length || px < box.x - 4 || py > box.y + box.h) return null;
    const at = axis[nearestIndex(axis, x.invert(px))];
    const held = lines.filter((l) => l.raw.length);
    const rows = held.map((l) => nearestIndex(l.xs, at));
    const text = held.map(({ m, raw, smooth }, j) => {
      const k = rows[j];
      const value = `value ${valueText(raw[k])}\nsmoothed ${valueText(smooth[k])}`;
      return m.name ? `${m.name} (step ${m.s.steps[k]}): ${valueText(raw[k])}, smoothed ${valueText(smooth[k])}` : value;
    });
    const where = over === "step" ? `step ${at}` : `${over === "wall" ? clockText(at) : durationText(at)}${held.length === 1 ? ` · step ${held[0].m.s.steps[rows[0]]}` : ""}`;
    return `${where}\n${text.join("\n")}`;
  };
  // A drag zooms the step axis: over time, the chart takes no part.
  if (over === "step") STEP_AT.set(canvas, (px) => x.invert(px));
  else STEP_AT.delete(canvas);
  return { lines, readOut };
}

/** A scalar's value as the read-outs write it: NaN, +Inf and −Inf spelled out. @param {number} v */
function valueText(v) {
  if (Number.isNaN(v)) return "NaN";
  if (!Number.isFinite(v)) return v > 0 ? "+Inf" : "\u2212Inf";
  return fmt(v);
}

/**
 * The value axis that ignores outliers, as TensorBoard's: the 5th to 95th
 * percentile of the values, widened by a tenth on each side but never past the values' own
 * range, so a spike leaves the chart through its edge instead of flattening
 * the rest.
 * @param {number[]} values finite values @returns {[number, number]}
 */
function robustRange(values) {
  if (!values.length) return [0, 1];
  const sorted = [...values].sort((a, b) => a - b);
  const at = (/** @type {number} */ q) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.round(q * (sorted.length - 1))))];
  const [low, high] = [at(0.05), at(0.95)];
  const pad = (high - low) / 10;
  return [Math.max(sorted[0], low - pad), Math.min(sorted[sorted.length - 1], high + pad)];
}

/**
 * Marks each NaN (at the top, hollow), +Inf (top) and −Inf (bottom) of a
 * scalar with a triangle in the error colour: the line has a gap there.
 * @param {CanvasRenderingContext2D} ctx @param {{x: number, y: number, w: number, h: number}} box
 * @param {number[]} steps @param {number[]} values @param {(v: number) => number} x
 * @param {ReturnType<typeof themeOf>} theme @returns {number} how many were marked
 */
function markNonfiniteValues(ctx, box, steps, values, x, theme) {
  let marked = 0;
  ctx.save();
  ctx.strokeStyle = theme.bad;
  ctx.fillStyle = theme.bad;
  ctx.lineWidth = 1.25;
  values.forEach((v, k) => {
    if (Number.isFinite(v)) return;
    marked += 1;
    const px = x(steps[k]);
    const down = v === -Infinity;
    const tip = down ? box.y + box.h - 1 : box.y + 1;
    const base = down ? tip - 6 : tip + 6;
    ctx.beginPath();
    ctx.moveTo(px - 4, base);
    ctx.lineTo(px + 4, base);
    ctx.lineTo(px, tip);
    ctx.closePath();
    if (Number.isNaN(v)) ctx.stroke();
    else ctx.fill();
  });
  ctx.restore();
  return marked;
}

/**
 * Draws every scalar's card, one per name with a line per run, with the
 * smoothing and scale the tools set.
 * @param {ReturnType<typeof import("./live_layout.js").liveLayout>} ui @param {LiveState} state @param {Entry[]} entries the kernel's `_scalars`
 * @param {Runs} runs @param {FirstNonfinite} found
 * @param {Map<HTMLCanvasElement, (x: number, y: number) => string | null>} readOuts set for each chart drawn
 */
function drawScalars(ui, state, entries, runs, found, readOuts) {
  const { root, smoothing, scalarLog, scalarsBox } = ui;
  const groups = groupsOf(entries);
  ui.scalarSection.hidden = !entries.length || !hasRows(state.rows);
  ui.smoothingText.textContent = Number(smoothing.value).toFixed(2);
  root.dataset.smoothing = smoothing.value;
  root.dataset.scalarScale = scalarLog.checked ? "log" : "linear";
  root.dataset.outliers = ui.outliers.checked ? "ignored" : "shown";
  while (scalarsBox.children.length < groups.length) {
    const card = h("div", "jcnb-live-scalar");
    const title = h("div", "jcnb-live-scalar-head");
    title.append(h("span", "jcnb-live-title"), h("span", "jcnb-live-latest"), cardTools());
    card.append(title, ui.hover("jcnb-live-scalar-canvas"));
    scalarsBox.append(card);
  }
  const theme = themeOf(root);
  groups.forEach((group, i) => {
    const card = /** @type {HTMLElement} */ (scalarsBox.children[i]);
    showExpanded(card, state.expanded.has(`scalar ${i}`));
    const members = shownMembers(group, entries, state.rows.scalars, runs);
    const canvas = /** @type {HTMLCanvasElement} */ (card.children[1]);
    const marked = found && group.members.includes(found.scalar) ? found.step : null;
    // The column's width; a card not laid out yet (off the page) has none.
    const width = Math.floor(/** @type {HTMLElement} */ (card.children[0]).clientWidth) || SCALAR_W;
    const height = SCALAR_H * (state.expanded.has(`scalar ${i}`) ? 2 : 1);
    const look = { log: scalarLog.checked, robust: ui.outliers.checked, marked, width, height, range: state.stepRange, xAxis: ui.xAxis.value };
    const { lines, readOut } = drawScalar(canvas, members, theme, Number(smoothing.value), look);
    readOuts.set(canvas, readOut);
    setName(/** @type {HTMLElement} */ (card.querySelector(".jcnb-live-title")), group.label);
    // The latest value lives in the title, never on the chart, where it
    // would read as the top of the axis.
    /** @type {HTMLElement} */ (card.querySelector(".jcnb-live-latest")).textContent = latestText(lines, recordedByAny(group, state.rows.scalars));
  });
}

/**
 * "step 99: 0.12 (smoothed 0.13)", or per run "a 0.12 · b 0.31" (smoothed).
 * @param {{m: {s: Series, name: string}, raw: number[], smooth: number[]}[]} lines the shown runs' lines
 * @param {boolean} recorded whether any run, shown or hidden, has a value
 */
function latestText(lines, recorded) {
  const held = lines.filter((l) => l.raw.length);
  if (!held.length) return recorded ? "every run with values is hidden: show one in the legend" : "no values yet";
  if (held.length === 1 && !held[0].m.name) {
    const { m, raw, smooth } = held[0];
    const n = raw.length;
    return `step ${m.s.steps[n - 1]}: ${valueText(raw[n - 1])} (smoothed ${valueText(smooth[n - 1])})`;
  }
  return `smoothed, last: ${held.map((l) => `${l.m.name} ${fmt(l.smooth[l.smooth.length - 1])}`).join(" · ")}`;
}

export { DEFAULT_SMOOTHING, X_AXES, drawScalars };
