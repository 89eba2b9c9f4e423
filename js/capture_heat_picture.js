// CaptureView's heatmap pictures, as the kernel sends them: one picture per
// canvas, one canvas pixel per element, with index ticks on both axes and a
// colour bar whose ends give the range's values; or small multiples along
// one more axis, each labelled by its position; and what the pointer reads
// over each element. Values beyond the colour range, and a fill value left
// out of it, take colours of their own (MARK_COLOURS), which the key names.

import { bytesOf, fmt, h, sized } from "./common.js";
import { themeOf, niceTicks, stepTicks, tickText, linearScale, rgbText, colourAt, hoverReadOut } from "./draw.js";
import { MARK, MARK_COLOURS, markAt } from "./capture_data.js";
import { schemaOf } from "./schema.js";
/** @typedef {import("./capture_data.js").CaptureData} CaptureData */

// A small multiple's longer side on screen, in CSS pixels.
const FACET_SIDE = 96;
// The colour bar beside the heatmap: the canvas, the bar, the tips for values beyond.
const BAR = { width: 80, bar: 12, tip: 7 };
// Room for the index ticks left of and under the heatmap.
const TICKS = { left: 28, bottom: 16 };
// The names of the marks, by their number (MARK).
const MARK_NAMES = ["none", "under", "over", "fill"];

/**
 * The kernel's answer to the last heatmap request, from the model's traits:
 * one picture (`shape` [rows, columns]) or small multiples along one more
 * axis (`shape` [facets, rows, columns], their positions in `facets`).
 * @param {any} model
 */
function heatmapOf(model) {
  return {
    /** @type {number} */ site: model.get("_heatmap_site"),
    /** @type {number[]} */ shape: model.get("_heatmap_shape") || [],
    pixels: new Uint8Array(bytesOf(model.get("_heatmap"))),
    values: new Float32Array(bytesOf(model.get("_heatmap_values"))),
    marks: new Uint8Array(bytesOf(model.get("_heatmap_marks"))),
    /** @type {number[]} */ range: model.get("_heatmap_range") || [],
    /** @type {string} */ note: model.get("_heatmap_note") || "",
    /** @type {number[]} */ index: model.get("_slice_index") || [],
    /** @type {number[]} */ facets: model.get("_heatmap_facets") || [],
    /** @type {number} */ facetAxis: model.get("_heatmap_facet_axis") ?? -1,
  };
}

/** @typedef {ReturnType<typeof heatmapOf>} Heatmap */

/**
 * Puts the layout's heatmap canvas in a frame with its index ticks, and a
 * place for small multiples beside it; once per view.
 * @param {ReturnType<typeof import("./capture_layout.js").captureLayout>} ui
 */
function heatFrame(ui) {
  const frame = h("div", "jcnb-heat-frame");
  const rowTicks = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-heat-ticks"));
  const colTicks = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-heat-ticks"));
  ui.heatCanvas.replaceWith(frame);
  frame.append(rowTicks, ui.heatCanvas, h("span"), colTicks);
  const facets = h("div", "jcnb-facets");
  facets.hidden = true;
  frame.after(facets);
  return { frame, rowTicks, colTicks, facets };
}

/** @typedef {ReturnType<typeof heatFrame>} HeatFrame */

/**
 * The colours of heatmap pixel indices on a colour map: the finite scale,
 * then the schema's non-finite colours.
 * @param {"sequential" | "diverging"} map @param {ReturnType<typeof schemaOf>} schema
 */
function paletteOf(map, schema) {
  const { finiteTop } = schema;
  const palette = [];
  for (let i = 0; i <= finiteTop; i++) palette.push(colourAt(map, i / finiteTop));
  for (const kind of schema.nonfinite) palette[kind.index] = kind.rgb;
  return palette;
}

/**
 * Paints one picture of the heatmap's pixels into a canvas, one canvas pixel
 * per element, marked pixels in their marks' colours.
 * @param {HTMLCanvasElement} canvas @param {Heatmap} heat @param {number} offset the picture's first pixel
 * @param {number} rows @param {number} cols @param {number[][]} palette @param {Record<string, number[]>} markColours
 * @param {number[]} marked counts per mark, added to
 */
function paint(canvas, heat, offset, rows, cols, palette, markColours, marked) {
  canvas.width = cols;
  canvas.height = rows;
  const ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext("2d"));
  const image = ctx.createImageData(cols, rows);
  for (let k = 0; k < rows * cols; k++) {
    const mark = markAt(heat.marks, offset + k);
    marked[mark] += 1;
    const rgb = mark ? markColours[MARK_NAMES[mark]] : palette[heat.pixels[offset + k]];
    image.data.set(rgb, 4 * k);
    image.data[4 * k + 3] = 255;
  }
  ctx.putImageData(image, 0, 0);
  canvas.dataset.drawn = "true";
}

/**
 * Index ticks left of and under the heatmap: positions along the site's
 * last two axes, where the (possibly sampled) rows and columns show them.
 * @param {ReturnType<typeof import("./capture_layout.js").captureLayout>} ui @param {HeatFrame} frame @param {number[]} shape the site's
 * @param {number} rows @param {number} cols shown @param {number} w @param {number} hgt the picture's size on screen
 */
function drawIndexTicks(ui, frame, shape, rows, cols, w, hgt) {
  const theme = themeOf(ui.root);
  const n = shape.length;
  const rowStep = Math.ceil(shape[n - 2] / rows);
  const colStep = Math.ceil(shape[n - 1] / cols);
  // The border around the picture moves it 1 pixel from the ticks' edge.
  const left = sized(frame.rowTicks, TICKS.left, hgt + 2);
  const under = sized(frame.colTicks, w + 2, TICKS.bottom);
  for (const ctx of [left, under]) {
    ctx.font = `10px ${theme.font}`;
    ctx.fillStyle = theme.fg2;
    ctx.strokeStyle = theme.fg2;
  }
  left.textAlign = "right";
  left.textBaseline = "middle";
  for (const i of stepTicks(0, shape[n - 2] - 1, 4)) {
    const py = Math.round(1 + (i / rowStep + 0.5) * (hgt / rows)) + 0.5;
    left.beginPath();
    left.moveTo(TICKS.left - 3, py);
    left.lineTo(TICKS.left, py);
    left.stroke();
    left.fillText(String(i), TICKS.left - 5, Math.min(Math.max(py, 5), hgt - 3));
  }
  under.textBaseline = "top";
  under.textAlign = "center";
  let lastEnd = -Infinity;
  for (const j of stepTicks(0, shape[n - 1] - 1, 4)) {
    const px = Math.round(1 + (j / colStep + 0.5) * (w / cols)) + 0.5;
    under.beginPath();
    under.moveTo(px, 0);
    under.lineTo(px, 3);
    under.stroke();
    const text = String(j);
    const half = under.measureText(text).width / 2;
    const at = Math.min(Math.max(px, half), w + 2 - half);
    if (at - half < lastEnd + 3) continue; // labels never overlap
    under.fillText(text, at, 4);
    lastEnd = at + half;
  }
  frame.rowTicks.dataset.drawn = "true";
  frame.colTicks.dataset.drawn = "true";
}

/**
 * The colour bar beside the heatmap: the values at its ends, round values
 * between them, and a tip in the colour of the values below or above the
 * range at the end they lie beyond, when the picture holds any.
 * @param {ReturnType<typeof import("./capture_layout.js").captureLayout>} ui @param {number} lo @param {number} hi
 * @param {"sequential" | "diverging"} map @param {number} hgt @param {number[]} marked counts per mark
 */
function drawBar(ui, lo, hi, map, hgt, marked) {
  const { barCanvas } = ui;
  const theme = themeOf(ui.root);
  const ctx = sized(barCanvas, BAR.width, hgt);
  const box = { x: 2, y: 5 + BAR.tip, w: BAR.bar, h: Math.max(20, hgt - 10 - 2 * BAR.tip) };
  for (let py = 0; py < box.h; py++) {
    ctx.fillStyle = rgbText(colourAt(map, 1 - py / Math.max(1, box.h - 1)));
    ctx.fillRect(box.x, box.y + py, box.w, 1);
  }
  ctx.strokeStyle = theme.border;
  ctx.strokeRect(box.x + 0.5, box.y + 0.5, box.w - 1, box.h - 1);
  const colours = MARK_COLOURS[map];
  const tip = (/** @type {number} */ base, /** @type {number} */ dir, /** @type {number[]} */ rgb) => {
    ctx.beginPath();
    ctx.moveTo(box.x, base);
    ctx.lineTo(box.x + box.w / 2, base + dir * BAR.tip);
    ctx.lineTo(box.x + box.w, base);
    ctx.closePath();
    ctx.fillStyle = rgbText(rgb);
    ctx.fill();
    ctx.strokeStyle = theme.fg2;
    ctx.stroke();
  };
  if (marked[MARK.over]) tip(box.y - 1, -1, colours.over);
  if (marked[MARK.under]) tip(box.y + box.h + 1, 1, colours.under);
  const y = linearScale(lo, hi, box.y + box.h, box.y);
  const at = box.x + box.w + 4;
  ctx.font = `10px ${theme.font}`;
  ctx.textAlign = "left";
  ctx.textBaseline = "middle";
  ctx.fillStyle = theme.fg;
  ctx.fillText(fmt(hi), at, box.y + 2);
  ctx.fillText(fmt(lo), at, box.y + box.h - 2);
  ctx.fillStyle = theme.fg2;
  for (const v of niceTicks(lo, hi, 4)) {
    const py = y(v);
    if (py > box.y + 14 && py < box.y + box.h - 14) ctx.fillText(tickText(v), at, py);
  }
  barCanvas.dataset.drawn = "true";
  barCanvas.dataset.range = `${lo} ${hi}`;
  barCanvas.title = `colours span ${fmt(lo)} to ${fmt(hi)}` + (map === "diverging" ? ", white at 0" : "") + "; values beyond them, and a fill value, take the colours the key names";
}

/** " · small multiples: axis 1, 0 to 15 of 32 (16 left out)". @param {number[]} shape the site's @param {Heatmap} heat */
function facetText(shape, heat) {
  const size = shape[heat.facetAxis] ?? heat.facets.length;
  const shown = heat.facets.length;
  const which = shown === size ? `all ${size}` : `${heat.facets[0]} to ${heat.facets[shown - 1]} of ${size} (${size - shown} left out)`;
  return ` \u00b7 small multiples: axis ${heat.facetAxis}, ${which}`;
}

/**
 * Small multiple k's slice as an index, "[0, 3, :, :]": the facet's position
 * on its axis, the index boxes' on the other leading axes, and the two axes drawn.
 * @param {Heatmap} heat @param {number} k @param {number} ndim the site's number of axes
 */
function facetIndexText(heat, k, ndim) {
  const lead = Array.from({ length: ndim - 2 }, (_, axis) => (axis === heat.facetAxis ? heat.facets[k] : heat.index[axis] ?? 0));
  return `[${[...lead, ":", ":"].join(", ")}]`;
}

/**
 * A small multiple's picture between its index ticks: the first and last
 * row at its left, the first and last column under it.
 * @param {HTMLCanvasElement} canvas @param {number} rows @param {number} cols the slice's size
 */
function facetWithTicks(canvas, rows, cols) {
  const left = h("span", "jcnb-facet-rows");
  left.append(h("span", "", "0"), h("span", "", String(rows - 1)));
  const under = h("span", "jcnb-facet-cols");
  under.append(h("span", "", "0"), h("span", "", String(cols - 1)));
  const grid = h("div", "jcnb-facet-grid");
  grid.append(left, canvas, h("span"), under);
  return grid;
}

/**
 * The small multiples, one labelled picture per position along the facet
 * axis, each with its own read-out and index ticks.
 * @param {ReturnType<typeof import("./capture_layout.js").captureLayout>} ui @param {HeatFrame} frame @param {CaptureData} data @param {number} selected
 * @param {Heatmap} heat @param {number[][]} palette @param {Record<string, number[]>} markColours @param {number[]} marked
 * @returns {number} the height the colour bar takes
 */
function drawFacets(ui, frame, data, selected, heat, palette, markColours, marked) {
  const [count, rows, cols] = heat.shape;
  const scale = FACET_SIDE / Math.max(rows, cols);
  const [w, hgt] = [Math.max(1, Math.round(cols * scale)), Math.max(1, Math.round(rows * scale))];
  frame.frame.hidden = true;
  frame.facets.hidden = false;
  ui.heatControls.parentElement?.classList.add("jcnb-faceted");
  const site = data.sites[selected];
  // The slice's own size: the picture may show every few rows of a larger one.
  const [sliceRows, sliceCols] = site.shape ? site.shape.slice(-2) : [rows, cols];
  for (let k = 0; k < count; k++) {
    const panel = h("div", "jcnb-facet");
    const label = h("span", "jcnb-facet-label", facetIndexText(heat, k, site.shape ? site.shape.length : 3));
    label.title = `position ${heat.facets[k]} on axis ${heat.facetAxis}`;
    const canvas = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-facet-heat"));
    paint(canvas, heat, k * rows * cols, rows, cols, palette, markColours, marked);
    canvas.style.width = `${w}px`;
    canvas.style.height = `${hgt}px`;
    canvas.dataset.facet = String(heat.facets[k]);
    hoverReadOut(canvas, ui.tooltip, (px, py) => heatReadOut(canvas, data, selected, heat, px, py, k));
    panel.append(label, facetWithTicks(canvas, sliceRows, sliceCols));
    frame.facets.append(panel);
  }
  const size = site.shape?.[heat.facetAxis] ?? count;
  frame.facets.dataset.count = String(count);
  frame.facets.dataset.leftOut = String(size - count);
  return Math.max(hgt + 16, 120);
}

/**
 * The hover read-out of the heatmap or of small multiple `facet`: the
 * element's full index and its value.
 * @param {HTMLCanvasElement} canvas @param {CaptureData} data @param {number} selected the selected site
 * @param {Heatmap} heat @param {number} px @param {number} py @param {number} [facet] -1: the one picture
 */
function heatReadOut(canvas, data, selected, heat, px, py, facet = -1) {
  const s = data.sites[selected];
  const faceted = heat.shape.length === 3;
  if (!canvas.dataset.drawn || !s || !s.shape || faceted !== facet >= 0) return null;
  const [rows, cols] = heat.shape.slice(-2);
  const rect = canvas.getBoundingClientRect();
  const r = Math.floor((py / rect.height) * rows);
  const c = Math.floor((px / rect.width) * cols);
  if (r < 0 || c < 0 || r >= rows || c >= cols) return null;
  const n = s.shape.length;
  const rowStep = Math.ceil(s.shape[n - 2] / rows);
  const colStep = Math.ceil(s.shape[n - 1] / cols);
  const lead = heat.index.slice(0, n - 2);
  while (lead.length < n - 2) lead.push(0);
  if (faceted) lead[heat.facetAxis] = heat.facets[facet];
  const k = Math.max(facet, 0) * rows * cols + r * cols + c;
  return `[${[...lead, r * rowStep, c * colStep].join(", ")}]\n${valueText(heat, k, data.schema)}`;
}

/**
 * The value of heatmap pixel k: exact when the kernel sent values, else read
 * off the colour scale; and where it lies when marked beyond it.
 * @param {Heatmap} heat @param {number} k @param {ReturnType<typeof schemaOf>} schema
 */
function valueText(heat, k, schema) {
  const mark = markAt(heat.marks, k);
  const [lo, hi] = heat.range.length ? heat.range : [0, 0];
  const where = ["", ` (below the colour range, ${fmt(lo)})`, ` (above the colour range, ${fmt(hi)})`, " (the fill, left out of the colour range)"][mark];
  if (heat.values.length > k) return `value ${fmt(heat.values[k])}${where}`;
  const p = heat.pixels[k];
  const kind = schema.nonfinite.find((kd) => kd.index === p);
  if (kind) return `value ${kind.label}`;
  if (mark === MARK.under) return `value < ${fmt(lo)}${where}`;
  if (mark === MARK.over) return `value > ${fmt(hi)}${where}`;
  if (mark === MARK.fill) return `fill value${where}`;
  const step = (hi - lo) / schema.finiteTop;
  return `value \u2248 ${fmt(lo + p * step)} (\u00b1${fmt(step / 2)}, from the colour)`;
}

export { heatmapOf, heatFrame, paletteOf, paint, drawIndexTicks, drawBar, facetText, drawFacets, heatReadOut, MARK_NAMES };
