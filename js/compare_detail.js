// A mode comparison's detail panel: one site's histograms overlaid on a
// value axis and a share axis, with a read-out of the bin under the pointer
// and a table of every statistic per mode.

import { fmt, h, sized } from "./common.js";
import { themeOf, faded, niceTicks, tickText, linearScale, plotBox, drawAxes, hoverReadOut } from "./draw.js";
import { shownName, setName } from "./names.js";
import { percent, shareTop, shareScale } from "./compare_data.js";
import { drawOverlay, modeLabel } from "./compare_table.js";
/** @typedef {import("./compare_data.js").Comparison} Comparison */
/** @typedef {import("./draw.js").Tooltip} Tooltip */

const LARGE = { width: 540, height: 240, left: 52, right: 14, top: 10, bottom: 22 };
const HOVER_HINT = "hover the histogram for a bin's counts";

/**
 * What the read-out says about one bin: its range, then each mode's count and share.
 * @param {Comparison} d @param {number} i @param {number} bin @param {(number[] | null)[]} shares
 */
function binText(d, i, bin, shares) {
  const [lo, hi] = d.range(i);
  const width = (hi - lo) / d.bins;
  const lines = [`values in [${fmt(lo + bin * width)}, ${fmt(lo + (bin + 1) * width)})`];
  d.modes.forEach((label, mode) => {
    const share = shares[mode];
    const name = shownName(label);
    lines.push(share ? `${name}: ${d.count(i, mode, bin)} (${percent(share[bin])})` : `${name}: not reached`);
  });
  return lines.join("\n");
}

/**
 * The large overlaid histogram of site i, with a value axis, a share axis and the hovered bin.
 * @param {HTMLCanvasElement} canvas @param {HTMLElement} root the themed root @param {Comparison} d @param {number} i
 * @param {number} hover the bin under the pointer, -1 for none @param {boolean} sqrtScale a square-root share axis
 */
function paintLarge(canvas, root, d, i, hover, sqrtScale) {
  const ctx = sized(canvas, LARGE.width, LARGE.height);
  const theme = themeOf(root);
  const box = plotBox(LARGE.width, LARGE.height, LARGE);
  const shares = d.shares(i);
  const [lo, hi] = d.range(i);
  const top = shareTop(shares);
  const x = linearScale(lo, hi, box.x, box.x + box.w);
  const y = shareScale(top, box, sqrtScale);
  const xTicks = x.ticks(6);
  const yTicks = niceTicks(0, top, 4);
  const yText = (/** @type {number} */ v) => `${tickText(100 * v)}%`;
  ctx.clearRect(0, 0, LARGE.width, LARGE.height);
  drawAxes(ctx, box, { theme, x, xTicks, y, yTicks, yText, yLabel: sqrtScale ? "share (√ scale)" : "share" });
  // The ticks drawn, for tests and tools that cannot read pixels.
  canvas.dataset.xTicks = xTicks.map(tickText).join(" ");
  canvas.dataset.yTicks = yTicks.map(yText).join(" ");
  if (hover >= 0) {
    ctx.fillStyle = faded(theme.fg2, 0.18);
    ctx.fillRect(box.x + (hover * box.w) / d.bins, box.y, box.w / d.bins, box.h);
  }
  // Zero, where the range spans it: where Dropout and ReLU put their mass.
  if (lo < 0 && hi > 0) {
    const zero = Math.round(x(0)) + 0.5;
    ctx.strokeStyle = faded(theme.fg2, 0.6);
    ctx.setLineDash([3, 3]);
    ctx.beginPath();
    ctx.moveTo(zero, box.y);
    ctx.lineTo(zero, box.y + box.h);
    ctx.stroke();
    ctx.setLineDash([]);
  }
  drawOverlay(ctx, shares, d.colours, box, y, { fill: 0.14, width: 1.5 });
  canvas.dataset.drawn = "1";
}

/**
 * The detail panel of site i: its overlaid histogram with a hover read-out, and every statistic.
 * @param {{root: HTMLElement, detail: HTMLElement, tooltip: Tooltip}} ui @param {Comparison} d @param {number} i
 * @param {boolean} sqrtScale a square-root share axis @param {(sqrtScale: boolean) => void} onScale told when the reader switches it
 */
function drawDetail(ui, d, i, sqrtScale, onScale) {
  const { root, detail, tooltip } = ui;
  detail.replaceChildren();
  detail.hidden = false;
  const site = d.sites[i];
  const heading = h("div", "jcnb-cmp-detail-title");
  heading.append(setName(h("span", "jcnb-cmp-detail-site"), site.label), h("span", "jcnb-cmp-detail-type", ` ${site.type}`));
  const body = h("div", "jcnb-cmp-detail-body");
  const figure = h("div", "jcnb-cmp-figure");

  const key = h("div", "jcnb-cmp-key");
  const shares = d.shares(i);
  d.modes.forEach((label, mode) => key.appendChild(modeLabel(shares[mode] ? label : `${label} (missing)`, d.colour(mode))));
  const scaleBox = h("label", "jcnb-cmp-scale");
  const check = /** @type {HTMLInputElement} */ (h("input"));
  check.type = "checkbox";
  check.checked = sqrtScale;
  scaleBox.append(check, document.createTextNode(" square-root scale"));
  key.appendChild(scaleBox);

  const canvas = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-cmp-large"));
  canvas.dataset.site = site.site;
  const box = plotBox(LARGE.width, LARGE.height, LARGE);
  /** @param {number} px CSS pixels from the canvas's left */
  const binAt = (px) => {
    const bin = Math.floor(((px - box.x) / box.w) * d.bins);
    return bin >= 0 && bin < d.bins ? bin : -1;
  };
  let hovered = -1;
  let sqrt = sqrtScale;
  hoverReadOut(canvas, tooltip, (px) => {
    const bin = binAt(px);
    if (bin !== hovered) paintLarge(canvas, root, d, i, (hovered = bin), sqrt);
    return bin < 0 ? null : binText(d, i, bin, shares);
  });
  canvas.addEventListener("mouseleave", () => paintLarge(canvas, root, d, i, (hovered = -1), sqrt));
  check.addEventListener("change", () => {
    sqrt = check.checked;
    onScale(sqrt);
    paintLarge(canvas, root, d, i, hovered, sqrt);
  });
  figure.append(key, canvas, h("div", "jcnb-cmp-hint", HOVER_HINT));
  body.append(figure, statsTable(d, i));
  detail.append(heading, body);
  paintLarge(canvas, root, d, i, -1, sqrt);
}

/** Every statistic of a site, named and written as the schema says, one column per mode. @param {Comparison} d @param {number} i */
function statsTable(d, i) {
  const site = d.sites[i];
  const stats = h("table", "jcnb-cmp-stats");
  const headRow = h("tr");
  headRow.appendChild(h("th"));
  d.modes.forEach((label, mode) => {
    const th = setName(h("th", "jcnb-cmp-stats-mode jcnb-cmp-marked"), label);
    th.style.setProperty("--jcnb-mode", d.colour(mode));
    th.title = shownName(label);
    headRow.appendChild(th);
  });
  stats.appendChild(headRow);
  const shapeRow = h("tr");
  shapeRow.appendChild(h("td", "", "shape"));
  site.shapes.forEach((shape, mode) => {
    // A shape, a text saying why it is not known (a run read from a log), or "–": not reached.
    const td = h("td", "", Array.isArray(shape) ? `(${shape.join(",")})` : shape || "–");
    if (!shape) td.title = `not reached in ${shownName(d.modes[mode])}`;
    shapeRow.appendChild(td);
  });
  stats.appendChild(shapeRow);
  for (const column of [...d.columns, "shift"]) {
    const tr = h("tr");
    tr.dataset.stat = column;
    const isShift = column === "shift";
    tr.appendChild(h("td", "", isShift ? "shift" : d.schema.label(column)));
    d.modes.forEach((label, mode) => {
      const value = isShift ? d.modeShift(i, mode) : d.stat(i, mode, column);
      const reached = Boolean(site.shapes[mode]);
      const unscored = isShift && Number.isNaN(value);
      const text = isShift ? fmt(value) : d.schema.text(column, value);
      const td = h("td", "jcnb-cmp-num", reached && !unscored ? text : "–");
      if (unscored && reached) td.title = `no shift: the site is missing in a ${d.noun}`;
      if (column === "nan" && value > 0) {
        td.classList.add("jcnb-cmp-bad");
        td.title = `${value} NaN values in ${shownName(label)}`;
      }
      if (isShift && mode === 0) td.title = `the reference ${d.noun}`;
      tr.appendChild(td);
    });
    stats.appendChild(tr);
  }
  return stats;
}

export { drawDetail };
