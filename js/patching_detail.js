// The clicked cell's detail: the patched run's metric beside the clean and
// the corrupted run's (and the estimate's, where there is one), and, where
// the sweep kept a readout, the three runs' readouts as grouped bars.

import { fmt, h, sized } from "./common.js";
import { themeOf, niceTicks, linearScale, plotBox, drawAxes, rgbText, colourAt, keyItem } from "./draw.js";
import { setName } from "./names.js";
import { readoutAt } from "./patching_data.js";
/** @typedef {import("./patching_data.js").PatchData} PatchData */

/**
 * The runs' colours: the clean and the corrupted run's are the ends of the
 * heatmap's map, the patched run's a teal unlike either, in both themes.
 */
const RUN_COLOURS = {
  clean: rgbText(colourAt("diverging", 1)),
  corrupted: rgbText(colourAt("diverging", 0)),
  patched: rgbText(colourAt("sequential", 0.5)),
};

/**
 * Ticks over [lo, hi] that end on nice values at or past both ends, so no
 * bar runs past the last tick (a probability of 1 gets its 1 tick).
 * @param {number} lo @param {number} hi @param {number} count @returns {{lo: number, hi: number, ticks: number[]}}
 */
function roundedOut(lo, hi, count) {
  const inside = niceTicks(lo, hi, count);
  if (inside.length < 2) return { lo, hi: hi === lo ? lo + 1 : hi, ticks: inside };
  const step = inside[1] - inside[0];
  const out = { lo: Math.floor(lo / step - 1e-9) * step, hi: Math.ceil(hi / step - 1e-9) * step };
  return { ...out, ticks: niceTicks(out.lo, out.hi, count) };
}

/**
 * Horizontal bars, one per run, labelled with its name and value.
 * @param {HTMLCanvasElement} canvas @param {{run: string, label: string, value: number, colour: string}[]} bars @param {number} w
 */
function drawMetricBars(canvas, bars, w) {
  const theme = themeOf(canvas);
  const barH = 16;
  const hgt = bars.length * (barH + 4) + 36;
  const ctx = sized(canvas, w, hgt);
  ctx.font = `11px ${theme.font}`;
  // Room for the longest label ("attribution (0.0098)") and a value past the bar's end.
  const left = Math.ceil(Math.max(60, ...bars.map((b) => ctx.measureText(b.label).width))) + 12;
  const box = plotBox(w, hgt, { left, right: 70, top: 4, bottom: 32 });
  const values = bars.map((b) => b.value).filter(Number.isFinite);
  const range = roundedOut(Math.min(0, ...values), Math.max(0, ...values), 5);
  const x = linearScale(range.lo, range.hi, box.x, box.x + box.w);
  drawAxes(ctx, box, { theme, x, xTicks: range.ticks, grid: false });
  ctx.fillStyle = theme.fg2;
  ctx.textAlign = "center";
  ctx.textBaseline = "bottom";
  ctx.fillText("metric", box.x + box.w / 2, hgt - 1);
  ctx.font = `11px ${theme.font}`;
  ctx.textBaseline = "middle";
  bars.forEach((bar, i) => {
    const y = box.y + i * (barH + 4) + 2;
    ctx.fillStyle = theme.fg;
    ctx.textAlign = "right";
    ctx.fillText(bar.label, box.x - 6, y + barH / 2);
    if (!Number.isFinite(bar.value)) return;
    const a = x(Math.min(0, bar.value));
    const b = x(Math.max(0, bar.value));
    ctx.fillStyle = bar.colour;
    ctx.fillRect(a, y, Math.max(1, b - a), barH);
    ctx.fillStyle = theme.fg;
    ctx.textAlign = "left";
    ctx.fillText(fmt(bar.value), Math.max(a, b) + 4, y + barH / 2);
  });
  canvas.dataset.drawn = "1";
  canvas.dataset.values = JSON.stringify(bars.map((b) => [b.run, b.value]));
}

/**
 * Grouped bars of the readout: per label, the clean, corrupted and patched runs' values.
 * @param {HTMLCanvasElement} canvas @param {string[]} labels
 * @param {{label: string, values: ArrayLike<number>, colour: string}[]} runs @param {number} w
 */
function drawReadout(canvas, labels, runs, w) {
  const theme = themeOf(canvas);
  const hgt = 166;
  const ctx = sized(canvas, w, hgt);
  const group = Math.max(12, Math.min(60, Math.floor((w - 68) / Math.max(1, labels.length))));
  const box = plotBox(Math.min(w, 62 + group * labels.length + 6), hgt, { left: 62, bottom: 34, top: 8 });
  const all = runs.flatMap((r) => Array.from(r.values)).filter(Number.isFinite);
  const range = roundedOut(Math.min(0, ...all), Math.max(0, ...all), 4);
  const y = linearScale(range.lo, range.hi, box.y + box.h, box.y);
  const x = (/** @type {number} */ i) => box.x + (i + 0.5) * group;
  drawAxes(ctx, box, { theme, y, yTicks: range.ticks, x, xTicks: labels.map((_, i) => i), xText: (i) => labels[i] });
  // The axes' titles: the readout's entries along, their values up.
  ctx.font = `11px ${theme.font}`;
  ctx.fillStyle = theme.fg2;
  ctx.textAlign = "center";
  ctx.textBaseline = "bottom";
  ctx.fillText("readout entry", box.x + box.w / 2, hgt - 1);
  ctx.save();
  ctx.translate(11, box.y + box.h / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.textBaseline = "middle";
  ctx.fillText("value", 0, 0);
  ctx.restore();
  canvas.dataset.top = String(range.hi);
  const barW = Math.max(2, Math.floor((group - 4) / runs.length));
  labels.forEach((_, i) => {
    runs.forEach((run, r) => {
      const v = run.values[i];
      if (!Number.isFinite(v)) return;
      const a = y(Math.max(0, v));
      const b = y(Math.min(0, v));
      ctx.fillStyle = run.colour;
      ctx.fillRect(box.x + i * group + 2 + r * barW, a, barW - (barW > 3 ? 1 : 0), Math.max(1, b - a));
    });
  });
  canvas.dataset.drawn = "1";
}

/**
 * Fills `detail` with the selected cell's runs; empty when nothing is selected.
 * @param {HTMLElement} detail @param {PatchData} data @param {number[]} selected @param {number} w
 */
function drawDetail(detail, data, selected, w) {
  detail.replaceChildren();
  if (selected.length !== 2 || selected[0] >= data.sites.length || selected[1] >= data.positions.length) {
    detail.append(h("div", "jcnb-hint", "click a cell to see its patched run beside the clean and corrupted ones"));
    return;
  }
  const [s, p] = selected;
  const theme = themeOf(detail);
  const cell = s * data.positions.length + p;
  const [first] = data.results;
  const label = data.positionLabels[p];
  const where =
    data.positions.length === 1 && data.positions[0] === "whole" ? "whole" : `at position ${data.positions[p]}${label === undefined ? "" : ` (${label})`}`;
  const title = h("div", "jcnb-patch-detail-title");
  const name = h("span", "jcnb-patch-site");
  setName(name, data.sites[s]);
  title.append(name, document.createTextNode(` patched ${where}`));
  detail.append(title);
  const bars = [{ run: "corrupted", label: "corrupted", value: first.corrupted, colour: RUN_COLOURS.corrupted }];
  for (const r of data.results) {
    const run = r.method === "exact" ? "patched" : r.method;
    const colour = r.method === "exact" ? RUN_COLOURS.patched : theme.fg2;
    bars.push({ run, label: `${run} (${fmt(r.recovery[cell])})`, value: r.effect[cell], colour });
  }
  bars.push({ run: "clean", label: "clean", value: first.clean, colour: RUN_COLOURS.clean });
  const metric = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-patch-metric"));
  detail.append(h("div", "jcnb-muted", "metric (recovery in brackets: 0 = corrupted, 1 = clean)"), metric);
  drawMetricBars(metric, bars, Math.min(w, 560));
  const patched = readoutAt(data, s, p);
  if (!patched) return;
  const k = data.labels.length;
  const runs = [
    { label: "clean", values: data.ends.subarray(0, k), colour: RUN_COLOURS.clean },
    { label: "corrupted", values: data.ends.subarray(k, 2 * k), colour: RUN_COLOURS.corrupted },
    { label: "patched", values: patched, colour: RUN_COLOURS.patched },
  ];
  const key = h("div", "jcnb-key");
  key.append(h("span", "", "readout:"), ...runs.map((r) => keyItem(r.colour, r.label)));
  const readout = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-patch-readout"));
  detail.append(key, readout);
  drawReadout(readout, data.labels, runs, Math.min(w, 720));
}

export { drawDetail };
