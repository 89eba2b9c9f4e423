// CaptureView's heatmap of the selected site: the index boxes that choose
// its 2-D slice, the axis to draw small multiples along, and the heatmap
// drawn with capture_heat_picture.js when the kernel's answer is for the
// site, with its key.

import { fmt, h, ordinal } from "./common.js";
import { rgbText, keyItem } from "./draw.js";
import { MARK, MARK_COLOURS, fillValueText } from "./capture_data.js";
import { markKeyItem } from "./capture_histogram.js";
import { paletteOf, paint, drawIndexTicks, drawBar, facetText, drawFacets, MARK_NAMES } from "./capture_heat_picture.js";
/** @typedef {import("./capture_data.js").CaptureData} CaptureData */
/** @typedef {import("./capture_data.js").Site} Site */
/** @typedef {import("./capture_data.js").SiteRange} SiteRange */
/** @typedef {import("./capture_heat_picture.js").HeatFrame} HeatFrame */
/** @typedef {import("./capture_heat_picture.js").Heatmap} Heatmap */

// The heatmap's longer side on screen, in CSS pixels.
const HEAT_SIDE = 240;

/**
 * Checks the text of a slice index box against its axis size.
 * @param {string} text @param {number} size
 * @returns {string} empty when valid, else why not
 */
function indexProblem(text, size) {
  const value = Number(text.trim());
  if (text.trim() === "" || !Number.isInteger(value)) return `"${text.trim()}" is not a whole number`;
  if (value < 0 || value >= size) return `${value} is out of range: 0 to ${size - 1}`;
  return "";
}

/**
 * The slice index boxes, one per axis before the last two, and the choice of
 * an axis to draw small multiples along (whose box then has nothing to pick).
 * @param {ReturnType<typeof import("./capture_layout.js").captureLayout>} ui @param {Site | undefined} s
 * @param {number[]} index the kernel's `_slice_index` @param {number} facetAxis -1: none
 */
function sliceControls(ui, s, index, facetAxis) {
  const { heatControls, indexMessage } = ui;
  heatControls.replaceChildren();
  indexMessage.textContent = "";
  if (!s || !s.has_value || !s.shape) return;
  const lead = s.shape.slice(0, -2);
  lead.forEach((size, axis) => {
    const label = h("label", "jcnb-axis", `axis ${axis} `);
    const input = /** @type {HTMLInputElement} */ (h("input", "jcnb-axis-input"));
    input.type = "text";
    input.inputMode = "numeric";
    input.dataset.size = String(size);
    input.value = String(index[axis] ?? 0);
    input.disabled = axis === facetAxis;
    input.title = input.disabled ? `small multiples along axis ${axis}` : `position along axis ${axis}: 0 to ${size - 1}; Enter applies it`;
    label.append(input, document.createTextNode(` of ${size}`));
    heatControls.append(label);
  });
  if (!lead.length) return;
  const facetLabel = h("label", "jcnb-facet-choice", "small multiples ");
  const select = /** @type {HTMLSelectElement} */ (h("select", "jcnb-facet-axis"));
  const none = /** @type {HTMLOptionElement} */ (h("option", "", "none"));
  none.value = "-1";
  select.append(none);
  lead.forEach((size, axis) => {
    const option = /** @type {HTMLOptionElement} */ (h("option", "", `axis ${axis} (${size})`));
    option.value = String(axis);
    select.append(option);
  });
  select.value = String(facetAxis);
  select.title = "one small heatmap per position along this axis, side by side, on one colour scale";
  facetLabel.append(select);
  heatControls.append(facetLabel, indexMessage);
}

/** The axis the small multiples are chosen along, -1 for none. @param {ReturnType<typeof import("./capture_layout.js").captureLayout>} ui */
function readFacetAxis(ui) {
  const select = ui.heatControls.querySelector(".jcnb-facet-axis");
  return select instanceof HTMLSelectElement ? Number(select.value) : -1;
}

/**
 * Reads the index boxes; marks bad ones and says why.
 * @param {ReturnType<typeof import("./capture_layout.js").captureLayout>} ui
 * @returns {number[] | null} the index, or null while a box is bad
 */
function readSliceIndex(ui) {
  const inputs = /** @type {HTMLInputElement[]} */ ([...ui.heatControls.querySelectorAll(".jcnb-axis-input")]);
  const problems = inputs.map((input) => indexProblem(input.value, Number(input.dataset.size)));
  inputs.forEach((input, axis) => {
    input.classList.toggle("jcnb-bad", Boolean(problems[axis]));
    input.setAttribute("aria-invalid", String(Boolean(problems[axis])));
  });
  const bad = problems.findIndex(Boolean);
  ui.indexMessage.textContent = bad >= 0 ? `axis ${bad}: ${problems[bad]}` : "";
  if (bad >= 0) return null;
  return inputs.map((input) => Number(input.value.trim()));
}

/** "rows: axis 1 (64) · columns: axis 2 (128)", and the sampling when shrunk. @param {number[]} shape @param {number[]} heat [rows, columns] shown */
function axesText(shape, heat) {
  const n = shape.length;
  const part = (/** @type {string} */ what, /** @type {number} */ axis, /** @type {number} */ shown) => {
    const size = shape[axis];
    const step = Math.ceil(size / shown);
    return `${what}: axis ${axis} (${size}${step > 1 ? `, every ${ordinal(step)} shown` : ""})`;
  };
  return `${part("rows", n - 2, heat[0])} \u00b7 ${part("columns", n - 1, heat[1])}`;
}

/** Clears the heatmap's canvases, small multiples and texts. @param {ReturnType<typeof import("./capture_layout.js").captureLayout>} ui @param {HeatFrame} frame */
function clearHeatmap(ui, frame) {
  for (const canvas of [ui.heatCanvas, ui.barCanvas, frame.rowTicks, frame.colTicks]) {
    canvas.width = 0;
    canvas.height = 0;
    canvas.style.width = "0";
    canvas.style.height = "0";
    delete canvas.dataset.drawn;
  }
  frame.facets.replaceChildren();
  frame.facets.hidden = true;
  frame.frame.hidden = false;
  ui.heatControls.parentElement?.classList.remove("jcnb-faceted");
  ui.figure.hidden = true;
  ui.axesLine.textContent = "";
  ui.heatKey.replaceChildren();
  for (const key of ["map", "marks"]) delete ui.heatCanvas.dataset[key];
  delete ui.figure.dataset.marks;
  delete frame.facets.dataset.count;
  delete frame.facets.dataset.leftOut;
}

/**
 * Draws the heatmap of site `selected` when the kernel's answer is for it:
 * one picture with its index ticks, or small multiples; then the colour bar
 * and the key.
 * @param {ReturnType<typeof import("./capture_layout.js").captureLayout>} ui @param {HeatFrame} frame @param {CaptureData} data
 * @param {number} selected @param {Heatmap} heat @param {SiteRange} range the kernel's range answer
 */
function drawHeatmap(ui, frame, data, selected, heat, range) {
  const { heatCanvas, heatNote } = ui;
  const { shape, pixels } = heat;
  const s = selected >= 0 ? data.sites[selected] : null;
  const current = s !== null && heat.site === selected;
  clearHeatmap(ui, frame);
  heatNote.textContent = current ? heat.note : "";
  const noFinite = s !== null && s.has_stats && data.stat(selected, "count") === 0;
  ui.divergingLabel.hidden = !(s && s.has_value) || noFinite;
  heatNote.classList.toggle("jcnb-empty-values", noFinite);
  if (noFinite && data.nonfinite(selected) === data.stat(selected, "nan")) {
    heatNote.textContent = `No heatmap: ${data.noFiniteText(selected)}.`; // one colour would say nothing
    return;
  }
  if (noFinite && s.has_value) heatNote.textContent = `No colour scale: ${data.noFiniteText(selected)}.`;
  const faceted = shape.length === 3;
  const [count, rows, cols] = faceted ? shape : [1, ...shape];
  if (!current || !(shape.length === 2 || faceted) || pixels.length !== count * rows * cols || !s.shape) return;
  const map = ui.divergingBox.checked ? "diverging" : "sequential";
  const palette = paletteOf(map, data.schema);
  const markColours = MARK_COLOURS[map];
  const marked = [0, 0, 0, 0];
  let barHeight = 0;
  if (faceted) {
    barHeight = drawFacets(ui, frame, data, selected, heat, palette, markColours, marked);
  } else {
    paint(heatCanvas, heat, 0, rows, cols, palette, markColours, marked);
    const scale = HEAT_SIDE / Math.max(rows, cols);
    const [w, hgt] = [Math.max(1, Math.round(cols * scale)), Math.max(1, Math.round(rows * scale))];
    heatCanvas.style.width = `${w}px`;
    heatCanvas.style.height = `${hgt}px`;
    drawIndexTicks(ui, frame, s.shape, rows, cols, w, hgt);
    barHeight = Math.max(hgt, 80);
  }
  ui.figure.hidden = false;
  heatCanvas.dataset.map = map;
  ui.figure.dataset.marks = MARK_NAMES.slice(1).map((name, k) => `${name}:${marked[k + 1]}`).join(" ");
  ui.axesLine.textContent = axesText(s.shape, [rows, cols]) + (faceted ? facetText(s.shape, heat) : "");
  const [lo, hi] = heat.range;
  if (heat.range.length === 2) drawBar(ui, lo, hi, map, barHeight, marked);
  for (const k of data.nonfiniteKinds(selected)) ui.heatKey.append(keyItem(rgbText(k.rgb), k.label));
  if (marked[MARK.under]) ui.heatKey.append(markKeyItem(markColours.under, `below ${fmt(lo)}`));
  if (marked[MARK.over]) ui.heatKey.append(markKeyItem(markColours.over, `above ${fmt(hi)}`));
  if (marked[MARK.fill]) {
    const fills = range.site === selected ? range.fills.map((f) => `fill ${fillValueText(f)}`).join(", ") : "fill";
    ui.heatKey.append(markKeyItem(markColours.fill, `${fills || "fill"} (left out of the colours)`));
  }
}

export { sliceControls, readFacetAxis, readSliceIndex, drawHeatmap };
