// LogitLensView front end: the target token's probability read at each site
// (rows, in model order, the model's own output last) and position
// (columns, under the input's tokens), on the sequential colour map from 0
// to 1. Hovering a cell reads out the target's probability and rank there
// and the most probable tokens; clicking a column shows, site by site, the
// most probable tokens at that position: the answer forming layer by layer.
// The clicked cell is the widget's `selected` trait. Plain ES module.

import { fmt, h, sized, bytesOf, csvText, download } from "./common.js";
import { Tooltip, hoverReadOut, keepDrawn, downloadCanvases, themeOf, rgbText, colourAt, drawColourBar, fittedText, strokeSelection, gridCell } from "./draw.js";
import { schemaOf, applyColours } from "./schema.js";
import { shownName } from "./names.js";

const ROW_H = 22;
const AXIS_H = 16;
const HEAD_H = 18;
const MIN_CELL = 28;
const MAX_CELL = 64;

/**
 * @typedef {{ sites: string[], positions: string[], targets: string[], probability: Float64Array, rank: Int32Array,
 *   top: number, tokenTexts: string[], topTokens: Int32Array, topProbabilities: Float64Array }} LensData
 */

/** The view's data, from its traits (see jaxcapture_nb/views/lens_view.py). @param {any} model @returns {LensData} */
function lensData(model) {
  return {
    sites: model.get("_sites") || [],
    positions: model.get("_positions") || [],
    targets: model.get("_targets") || [],
    probability: new Float64Array(bytesOf(model.get("_probability"))),
    rank: new Int32Array(bytesOf(model.get("_rank"))),
    top: Number(model.get("_top")) || 0,
    tokenTexts: model.get("_token_texts") || [],
    topTokens: new Int32Array(bytesOf(model.get("_top_tokens"))),
    topProbabilities: new Float64Array(bytesOf(model.get("_top_probabilities"))),
  };
}

/** The text of the `k`th top token kept, counting over every cell. @param {LensData} data @param {number} k */
const topText = (data, k) => data.tokenTexts[data.topTokens[k]];

/** A cell's most probable tokens, as "token (probability)". @param {LensData} data @param {number} cell */
function topAt(data, cell) {
  const out = [];
  for (let k = 0; k < data.top; k++) out.push(`${topText(data, cell * data.top + k)} (${fmt(data.topProbabilities[cell * data.top + k])})`);
  return out;
}

/** A cell's read-out. @param {LensData} data @param {number} s @param {number} p */
function cellText(data, s, p) {
  const cell = s * data.positions.length + p;
  return [
    shownName(data.sites[s]),
    `position ${data.positions[p]}`,
    `target ${data.targets[p]}: probability ${fmt(data.probability[cell])}, rank ${data.rank[cell]}`,
    `top: ${topAt(data, cell).join(", ")}`,
  ].join("\n");
}

/**
 * Draws the heatmap into `canvas` at width `w`, marks it with its layout and returns that.
 * @param {HTMLCanvasElement} canvas @param {LensData} data @param {number} w @param {number[]} selected
 */
function drawLens(canvas, data, w, selected) {
  const theme = themeOf(canvas);
  const probe = /** @type {CanvasRenderingContext2D} */ (canvas.getContext("2d"));
  probe.font = `11px ${theme.font}`;
  const left = Math.min(260, Math.max(30, ...data.sites.map((s) => probe.measureText(s).width))) + 10;
  const P = Math.max(1, data.positions.length);
  const cellW = Math.max(MIN_CELL, Math.min(MAX_CELL, Math.floor((w - left - 4) / P)));
  const top = AXIS_H + HEAD_H;
  const box = { left, top, cellW, cellH: ROW_H, w: left + P * cellW + 4, h: top + data.sites.length * ROW_H + HEAD_H + 2 };
  const ctx = sized(canvas, box.w, box.h);
  ctx.font = `11px ${theme.font}`;
  ctx.textBaseline = "middle";
  ctx.fillStyle = theme.fg2;
  ctx.textAlign = "right";
  ctx.fillText("site", left - 6, AXIS_H + HEAD_H / 2);
  ctx.fillText("target", left - 6, top + data.sites.length * ROW_H + HEAD_H / 2);
  ctx.textAlign = "left";
  ctx.fillText("position: token", left, AXIS_H / 2);
  ctx.textAlign = "center";
  ctx.fillStyle = theme.fg;
  for (let p = 0; p < P; p++) {
    const x = left + (p + 0.5) * cellW;
    ctx.fillText(fittedText(ctx, data.positions[p] ?? "", cellW - 4), x, AXIS_H + HEAD_H / 2);
    ctx.fillText(fittedText(ctx, data.targets[p] ?? "", cellW - 4), x, top + data.sites.length * ROW_H + HEAD_H / 2);
  }
  for (let s = 0; s < data.sites.length; s++) {
    const y = top + s * ROW_H;
    ctx.fillStyle = theme.fg;
    ctx.textAlign = "right";
    ctx.fillText(fittedText(ctx, data.sites[s], left - 10), left - 6, y + ROW_H / 2);
    for (let p = 0; p < P; p++) {
      const v = data.probability[s * P + p];
      ctx.fillStyle = Number.isFinite(v) ? rgbText(colourAt("sequential", v)) : theme.grid;
      ctx.fillRect(left + p * cellW, y, cellW - 1, ROW_H - 1);
    }
  }
  if (selected.length === 2) strokeSelection(ctx, left + selected[1] * cellW, top + selected[0] * ROW_H, cellW, ROW_H);
  Object.assign(canvas.dataset, { drawn: "1", left: String(left), top: String(top), cellW: String(cellW), cellH: String(ROW_H) });
  return box;
}

/** Every cell as CSV rows, as `LogitLens.to_csv` writes them. @param {LensData} data */
function lensTable(data) {
  const P = data.positions.length;
  const rows = data.sites.flatMap((site, s) =>
    data.positions.map((position, p) => {
      const cell = s * P + p;
      const tokens = Array.from({ length: data.top }, (_, k) => topText(data, cell * data.top + k));
      const probabilities = Array.from(data.topProbabilities.subarray(cell * data.top, (cell + 1) * data.top));
      return [site, position, data.targets[p], data.probability[cell], data.rank[cell], tokens.join(" "), probabilities.join(" ")];
    }),
  );
  return { columns: ["site", "position", "target", "probability", "rank", "top tokens", "top probabilities"], rows };
}

/** The clicked position's most probable tokens at every site. @param {HTMLElement} detail @param {LensData} data @param {number[]} selected */
function drawDetail(detail, data, selected) {
  detail.replaceChildren();
  if (selected.length !== 2) {
    detail.append(h("div", "jcnb-muted", "click a cell to see the most probable tokens at its position, site by site"));
    return;
  }
  const p = selected[1];
  detail.append(h("div", "jcnb-lens-detail-title", `position ${data.positions[p]}: the most probable tokens at each site (target ${data.targets[p]})`));
  const table = h("table", "jcnb-lens-top");
  data.sites.forEach((site, s) => {
    const row = h("tr", s === selected[0] ? "jcnb-lens-chosen" : "");
    row.append(h("th", "jcnb-lens-site", shownName(site)));
    for (const text of topAt(data, s * data.positions.length + p)) row.append(h("td", "", text));
    table.append(row);
  });
  detail.append(table);
}

/** @param {{model: any, el: HTMLElement}} ctx */
function render({ model, el }) {
  const root = h("div", "jcnb-lens jcnb-themed");
  el.append(root);
  applyColours(root, schemaOf(model));
  const data = lensData(model);
  const header = h("div", "jcnb-lens-header");
  header.append(h("div", "jcnb-lens-title", "logit lens: probability of the target token at each site and position"));
  const exports = h("div", "jcnb-lens-export");
  for (const format of ["CSV", "PNG"]) {
    const button = h("button", "jcnb-lens-export-button", format);
    button.dataset.format = format.toLowerCase();
    button.title = format === "CSV" ? "download every cell's probability, rank and top tokens" : "download the heatmap as a picture";
    exports.append(button);
  }
  header.append(exports);
  const canvas = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-lens-heat"));
  const scale = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-lens-scale"));
  const scaleBox = h("div", "jcnb-lens-scale-box");
  scaleBox.append(h("div", "jcnb-muted", "probability"), scale);
  const body = h("div", "jcnb-lens-body");
  body.append(canvas, scaleBox);
  const detail = h("div", "jcnb-lens-detail");
  const tooltip = new Tooltip(root);
  root.append(header, body, detail);
  const width = () => Math.max(320, Math.min(root.clientWidth || el.clientWidth || 900, 1400) - 90);
  /** @type {{left: number, top: number, cellW: number, cellH: number}} */ let box = { left: 0, top: 0, cellW: 1, cellH: 1 };

  function drawAll() {
    const selected = model.get("selected") || [];
    box = drawLens(canvas, data, width(), selected);
    const theme = themeOf(scale);
    const ctx = sized(scale, 64, Math.max(90, Math.min(200, box.top + data.sites.length * ROW_H)));
    drawColourBar(ctx, { x: 2, y: 6, w: 12, h: Math.max(78, Math.min(188, box.top + data.sites.length * ROW_H - 12)) }, "sequential", 0, 1, theme);
    drawDetail(detail, data, selected);
  }
  hoverReadOut(canvas, tooltip, (x, y) => {
    const cell = gridCell(box, data.sites.length, data.positions.length, x, y);
    return cell && cellText(data, cell[0], cell[1]);
  });
  canvas.addEventListener("click", (event) => {
    const rect = canvas.getBoundingClientRect();
    const cell = gridCell(box, data.sites.length, data.positions.length, event.clientX - rect.left, event.clientY - rect.top);
    if (!cell) return;
    model.set("selected", cell);
    model.save_changes();
  });
  exports.addEventListener("click", (event) => {
    const button = /** @type {HTMLElement} */ (event.target).closest("button");
    if (button?.dataset.format === "csv") download("logit_lens.csv", csvText(lensTable(data)), "text/csv");
    else if (button?.dataset.format === "png") downloadCanvases("logit_lens.png", [canvas, scale]);
  });
  drawAll();
  model.on("change:selected", drawAll);
  const stopDrawing = keepDrawn(root, width, drawAll);
  el.classList.add("jcnb-ready");
  return () => {
    stopDrawing();
    model.off("change:selected", drawAll);
  };
}

export default { render };
