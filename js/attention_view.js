// AttentionView front end: every head of every layer as a small heatmap of
// its attention weights (queries down, keys across; layers side by side,
// heads down each layer's column), and the clicked head enlarged with the
// tokens on both axes. Hovering any cell reads out its query token, key
// token and weight. The enlarged head is the widget's `selected` trait
// ([layer, head]). Plain ES module.

import { fmt, h, sized, bytesOf } from "./common.js";
import { Tooltip, hoverReadOut, keepDrawn, downloadCanvases, themeOf, colourAt, drawColourBar, fittedText } from "./draw.js";
import { schemaOf, applyColours } from "./schema.js";
import { shownName } from "./names.js";

const SMALL = 84; // a small map's side, in CSS pixels
const LABEL_H = 14;

/** @typedef {{ sites: string[], heads: number, tokens: string[], weights: Float32Array }} AttentionData */

/** The view's data, from its traits (see jaxcapture_nb/views/attention_view.py). @param {any} model @returns {AttentionData} */
function attentionData(model) {
  return {
    sites: model.get("_sites") || [],
    heads: Number(model.get("_heads")) || 0,
    tokens: model.get("_tokens") || [],
    weights: new Float32Array(bytesOf(model.get("_weights"))),
  };
}

/** One head's weights, `[queries * keys]`. @param {AttentionData} data @param {number} layer @param {number} head */
function headWeights(data, layer, head) {
  const n = data.tokens.length * data.tokens.length;
  const at = (layer * data.heads + head) * n;
  return data.weights.subarray(at, at + n);
}

/**
 * Paints a head's weights into `ctx` as a `side`-pixel square at (x, y), 0 dark and 1 bright: one
 * pixel per weight, scaled up unsmoothed, so a long input costs a pixel per cell, not a rectangle.
 * @param {CanvasRenderingContext2D} ctx @param {Float32Array} weights @param {number} n @param {number} x @param {number} y @param {number} side
 */
function paintHead(ctx, weights, n, x, y, side) {
  const pixels = new ImageData(n, n);
  for (let i = 0; i < n * n; i++) pixels.data.set([...colourAt("sequential", weights[i]), 255], 4 * i);
  const tile = document.createElement("canvas");
  [tile.width, tile.height] = [n, n];
  /** @type {CanvasRenderingContext2D} */ (tile.getContext("2d")).putImageData(pixels, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(tile, x, y, side, side);
}

/** A cell's read-out. @param {AttentionData} data @param {number} layer @param {number} head @param {number} q @param {number} k */
function cellText(data, layer, head, q, k) {
  const w = headWeights(data, layer, head)[q * data.tokens.length + k];
  return [`${shownName(data.sites[layer])}, head ${head}`, `query ${q} ${data.tokens[q]}`, `key ${k} ${data.tokens[k]}`, `weight ${fmt(w)}`].join("\n");
}

/**
 * The layers' column labels: their sites less the dotted parts all share at the end
 * (`layers.3` for `layers.3.attn.attention`), which the title of the enlarged head keeps.
 * @param {string[]} sites
 */
function columnLabels(sites) {
  const parts = sites.map((s) => shownName(s).split("."));
  let shared = 0;
  const at = (/** @type {string[]} */ p) => p[p.length - 1 - shared];
  // One site alone drops its last part: the enlarged head's title names it whole.
  if (sites.length === 1) shared = parts[0].length > 1 ? 1 : 0;
  while (sites.length > 1 && parts.every((p) => p.length > shared + 1 && at(p) === at(parts[0]))) shared++;
  return parts.map((p) => p.slice(0, p.length - shared).join("."));
}

/**
 * Draws the grid of small maps: a column per layer, a row per head. Returns where each map is.
 * @param {HTMLCanvasElement} canvas @param {AttentionData} data @param {number[]} selected
 */
function drawGrid(canvas, data, selected) {
  const theme = themeOf(canvas);
  const gap = 8;
  const left = 30;
  const w = left + data.sites.length * (SMALL + gap);
  const hgt = LABEL_H + data.heads * (SMALL + gap);
  const ctx = sized(canvas, w, hgt);
  ctx.font = `11px ${theme.font}`;
  ctx.textBaseline = "middle";
  const n = data.tokens.length;
  const labels = columnLabels(data.sites);
  data.sites.forEach((site, layer) => {
    const x = left + layer * (SMALL + gap);
    ctx.fillStyle = theme.fg;
    ctx.textAlign = "center";
    ctx.fillText(fittedText(ctx, labels[layer], SMALL + gap - 2), x + SMALL / 2, LABEL_H / 2);
    for (let head = 0; head < data.heads; head++) {
      const y = LABEL_H + head * (SMALL + gap);
      paintHead(ctx, headWeights(data, layer, head), n, x, y, SMALL);
      if (selected[0] === layer && selected[1] === head) {
        ctx.lineWidth = 2;
        ctx.strokeStyle = theme.accent;
        ctx.strokeRect(x - 2, y - 2, SMALL + 4, SMALL + 4);
      }
    }
  });
  ctx.fillStyle = theme.fg2;
  ctx.textAlign = "right";
  for (let head = 0; head < data.heads; head++) ctx.fillText(`h${head}`, left - 6, LABEL_H + head * (SMALL + gap) + SMALL / 2);
  Object.assign(canvas.dataset, { drawn: "1", left: String(left), top: String(LABEL_H), side: String(SMALL), gap: String(gap) });
  /** @param {number} px @param {number} py */
  return (px, py) => {
    const layer = Math.floor((px - left) / (SMALL + gap));
    const head = Math.floor((py - LABEL_H) / (SMALL + gap));
    const [x, y] = [px - left - layer * (SMALL + gap), py - LABEL_H - head * (SMALL + gap)];
    if (px < left || py < LABEL_H || layer >= data.sites.length || head >= data.heads || x >= SMALL || y >= SMALL) return null;
    return { layer, head, q: Math.floor((y / SMALL) * n), k: Math.floor((x / SMALL) * n) };
  };
}

/**
 * Draws one head enlarged, with the tokens along both axes. Returns the cell under a point.
 * @param {HTMLCanvasElement} canvas @param {AttentionData} data @param {number} layer @param {number} head @param {number} width
 */
function drawEnlarged(canvas, data, layer, head, width) {
  const theme = themeOf(canvas);
  const n = data.tokens.length;
  const probe = /** @type {CanvasRenderingContext2D} */ (canvas.getContext("2d"));
  probe.font = `11px ${theme.font}`;
  const label = Math.min(120, Math.max(24, ...data.tokens.map((t) => probe.measureText(t).width))) + 20;
  const cell = Math.max(8, Math.min(28, Math.floor((width - label - 80) / n)));
  const side = cell * n;
  const top = label;
  const ctx = sized(canvas, label + side + 4, top + side + 4);
  ctx.font = `11px ${theme.font}`;
  ctx.textBaseline = "middle";
  paintHead(ctx, headWeights(data, layer, head), n, label, top, side);
  ctx.fillStyle = theme.fg;
  ctx.textAlign = "right";
  const every = Math.max(1, Math.ceil(13 / cell));
  for (let q = 0; q < n; q += every) ctx.fillText(fittedText(ctx, data.tokens[q], label - 8), label - 4, top + (q + 0.5) * cell);
  // Key tokens across the top, turned to read upwards so long ones fit.
  for (let k = 0; k < n; k += every) {
    ctx.save();
    ctx.translate(label + (k + 0.5) * cell, top - 4);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = "left";
    ctx.fillText(fittedText(ctx, data.tokens[k], label - 20), 0, 0);
    ctx.restore();
  }
  // The axes' titles in the corner the tokens leave free.
  ctx.fillStyle = theme.fg2;
  ctx.textAlign = "left";
  ctx.fillText("keys \u2192", 2, 8);
  ctx.fillText("queries \u2193", 2, 22);
  Object.assign(canvas.dataset, { drawn: "1", left: String(label), top: String(top), cell: String(cell) });
  /** @param {number} px @param {number} py */
  return (px, py) => {
    const [q, k] = [Math.floor((py - top) / cell), Math.floor((px - label) / cell)];
    return px < label || py < top || q >= n || k >= n ? null : { layer, head, q, k };
  };
}

/** @param {{model: any, el: HTMLElement}} ctx */
function render({ model, el }) {
  const root = h("div", "jcnb-attention jcnb-themed");
  el.append(root);
  applyColours(root, schemaOf(model));
  const data = attentionData(model);
  const header = h("div", "jcnb-attention-header");
  header.append(h("div", "jcnb-attention-title", `attention patterns: ${data.sites.length} layers x ${data.heads} heads, queries down, keys across`));
  const exporter = h("button", "jcnb-attention-export-button", "PNG");
  exporter.title = "download the enlarged head as a picture";
  header.append(exporter);
  const grid = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-attention-grid"));
  const scale = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-attention-scale"));
  const scaleBox = h("div", "jcnb-attention-scale-box");
  scaleBox.append(h("div", "jcnb-muted", "weight"), scale);
  const body = h("div", "jcnb-attention-body");
  body.append(grid, scaleBox);
  const enlargedTitle = h("div", "jcnb-attention-enlarged-title");
  const enlarged = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-attention-enlarged"));
  const detail = h("div", "jcnb-attention-detail");
  detail.append(enlargedTitle, enlarged);
  const tooltip = new Tooltip(root);
  root.append(header, body, detail);
  const width = () => Math.max(320, Math.min(root.clientWidth || el.clientWidth || 900, 1400));
  /** @type {(x: number, y: number) => ({layer: number, head: number, q: number, k: number} | null)} */ let inGrid = () => null;
  /** @type {(x: number, y: number) => ({layer: number, head: number, q: number, k: number} | null)} */ let inEnlarged = () => null;

  function drawAll() {
    const selected = model.get("selected") || [];
    const [layer, head] = selected.length === 2 ? selected : [0, 0];
    inGrid = drawGrid(grid, data, [layer, head]);
    const theme = themeOf(scale);
    drawColourBar(sized(scale, 64, 120), { x: 2, y: 6, w: 12, h: 108 }, "sequential", 0, 1, theme);
    enlargedTitle.textContent = `${shownName(data.sites[layer] ?? "")}, head ${head}: click another head to enlarge it`;
    inEnlarged = drawEnlarged(enlarged, data, layer, head, width());
  }
  hoverReadOut(grid, tooltip, (x, y) => {
    const cell = inGrid(x, y);
    return cell && cellText(data, cell.layer, cell.head, cell.q, cell.k);
  });
  hoverReadOut(enlarged, tooltip, (x, y) => {
    const cell = inEnlarged(x, y);
    return cell && cellText(data, cell.layer, cell.head, cell.q, cell.k);
  });
  grid.addEventListener("click", (event) => {
    const rect = grid.getBoundingClientRect();
    const cell = inGrid(event.clientX - rect.left, event.clientY - rect.top);
    if (!cell) return;
    model.set("selected", [cell.layer, cell.head]);
    model.save_changes();
  });
  exporter.addEventListener("click", () => downloadCanvases("attention.png", [enlarged]));
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
