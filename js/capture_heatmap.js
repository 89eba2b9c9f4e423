// CaptureView's heatmap: a 2-D slice of the selected site's values, chosen
// with one index box per leading axis, as the kernel colours it, with its
// colour bar and what the pointer reads over each element.

// The heatmap's longer side on screen, in CSS pixels; the colour bar beside it.
const HEAT_SIDE = 260;
const BAR = { width: 70, bar: 12 };

/**
 * The kernel's answer to the last heatmap request, from the model's traits.
 * @param {any} model
 */
function heatmapOf(model) {
  return {
    /** @type {number} */ site: model.get("_heatmap_site"),
    /** @type {number[]} */ shape: model.get("_heatmap_shape") || [],
    pixels: new Uint8Array(bytesOf(model.get("_heatmap"))),
    values: new Float32Array(bytesOf(model.get("_heatmap_values"))),
    /** @type {number[]} */ range: model.get("_heatmap_range") || [],
    /** @type {string} */ note: model.get("_heatmap_note") || "",
    /** @type {number[]} */ index: model.get("_slice_index") || [],
  };
}

/** @typedef {ReturnType<typeof heatmapOf>} Heatmap */

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
 * The slice index boxes, one per axis before the last two.
 * @param {ReturnType<typeof captureLayout>} ui @param {Site | undefined} s @param {number[]} index the kernel's `_slice_index`
 */
function sliceControls(ui, s, index) {
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
    input.title = `position along axis ${axis}: 0 to ${size - 1}; Enter applies it`;
    label.append(input, document.createTextNode(` of ${size}`));
    heatControls.append(label);
  });
  if (lead.length) heatControls.append(indexMessage);
}

/**
 * Reads the index boxes; marks bad ones and says why.
 * @param {ReturnType<typeof captureLayout>} ui
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

/** "rows: axis 1 (64) · columns: axis 2 (128)", and the sampling when shrunk. @param {number[]} shape @param {number[]} heat */
function axesText(shape, heat) {
  const n = shape.length;
  const part = (/** @type {string} */ what, /** @type {number} */ axis, /** @type {number} */ shown) => {
    const size = shape[axis];
    const step = Math.ceil(size / shown);
    return `${what}: axis ${axis} (${size}${step > 1 ? `, every ${ordinal(step)} shown` : ""})`;
  };
  return `${part("rows", n - 2, heat[0])} \u00b7 ${part("columns", n - 1, heat[1])}`;
}

/** Clears the heatmap's canvases and texts. @param {ReturnType<typeof captureLayout>} ui */
function clearHeatmap(ui) {
  for (const canvas of [ui.heatCanvas, ui.barCanvas]) {
    canvas.width = 0;
    canvas.height = 0;
    canvas.style.width = "0";
    canvas.style.height = "0";
    delete canvas.dataset.drawn;
  }
  ui.figure.hidden = true;
  ui.axesLine.textContent = "";
  ui.heatKey.replaceChildren();
  delete ui.heatCanvas.dataset.map;
}

/**
 * Draws the heatmap of site `selected` when the kernel's answer is for it.
 * @param {ReturnType<typeof captureLayout>} ui @param {CaptureData} data @param {number} selected @param {Heatmap} heat
 */
function drawHeatmap(ui, data, selected, heat) {
  const { heatCanvas, heatNote } = ui;
  const { shape, pixels } = heat;
  const s = selected >= 0 ? data.sites[selected] : null;
  const current = s !== null && heat.site === selected;
  clearHeatmap(ui);
  heatNote.textContent = current ? heat.note : "";
  const noFinite = s !== null && s.has_stats && data.stat(selected, "count") === 0;
  ui.divergingLabel.hidden = !(s && s.has_value) || noFinite;
  heatNote.classList.toggle("jcnb-empty-values", noFinite);
  if (noFinite && data.nonfinite(selected) === data.stat(selected, "nan")) {
    heatNote.textContent = `No heatmap: ${data.noFiniteText(selected)}.`; // one colour would say nothing
    return;
  }
  if (noFinite && s.has_value) heatNote.textContent = `No colour scale: ${data.noFiniteText(selected)}.`;
  if (!current || shape.length !== 2 || pixels.length !== shape[0] * shape[1] || !s.shape) return;
  const [rows, cols] = shape;
  const map = ui.divergingBox.checked ? "diverging" : "sequential";
  const palette = paletteOf(map, data.schema);
  heatCanvas.width = cols;
  heatCanvas.height = rows;
  const scale = HEAT_SIDE / Math.max(rows, cols);
  const [w, hgt] = [Math.max(1, Math.round(cols * scale)), Math.max(1, Math.round(rows * scale))];
  heatCanvas.style.width = `${w}px`;
  heatCanvas.style.height = `${hgt}px`;
  const ctx = /** @type {CanvasRenderingContext2D} */ (heatCanvas.getContext("2d"));
  const image = ctx.createImageData(cols, rows);
  pixels.forEach((p, k) => image.data.set([...palette[p], 255], 4 * k));
  ctx.putImageData(image, 0, 0);
  ui.figure.hidden = false;
  heatCanvas.dataset.drawn = "true";
  heatCanvas.dataset.map = map;
  ui.axesLine.textContent = axesText(s.shape, shape);
  if (heat.range.length === 2) drawBar(ui, heat.range[0], heat.range[1], map, Math.max(hgt, 80));
  for (const k of data.nonfiniteKinds(selected)) ui.heatKey.append(keyItem(rgbText(k.rgb), k.label));
}

/**
 * The colour bar beside the heatmap, with its value range.
 * @param {ReturnType<typeof captureLayout>} ui @param {number} lo @param {number} hi @param {"sequential" | "diverging"} map @param {number} hgt
 */
function drawBar(ui, lo, hi, map, hgt) {
  const { barCanvas } = ui;
  const ctx = sized(barCanvas, BAR.width, hgt);
  drawColourBar(ctx, { x: 2, y: 5, w: BAR.bar, h: hgt - 10 }, map, lo, hi, themeOf(ui.root));
  barCanvas.dataset.drawn = "true";
  barCanvas.dataset.range = `${lo} ${hi}`;
  barCanvas.title = `colours span ${fmt(lo)} to ${fmt(hi)}` + (map === "diverging" ? ", white at 0" : " (mean \u00b1 3 std, within the values' range)") + "; values beyond take the end colours";
}

/**
 * The hover read-out of the heatmap: the element's full index and its value.
 * @param {HTMLCanvasElement} heatCanvas @param {CaptureData} data @param {number} selected the selected site
 * @param {Heatmap} heat @param {number} px @param {number} py
 */
function heatReadOut(heatCanvas, data, selected, heat, px, py) {
  const s = data.sites[selected];
  const shape = heat.shape;
  if (!heatCanvas.dataset.drawn || !s || !s.shape || shape.length !== 2) return null;
  const rect = heatCanvas.getBoundingClientRect();
  const r = Math.floor((py / rect.height) * shape[0]);
  const c = Math.floor((px / rect.width) * shape[1]);
  if (r < 0 || c < 0 || r >= shape[0] || c >= shape[1]) return null;
  const n = s.shape.length;
  const rowStep = Math.ceil(s.shape[n - 2] / shape[0]);
  const colStep = Math.ceil(s.shape[n - 1] / shape[1]);
  const index = [...heat.index.slice(0, n - 2), r * rowStep, c * colStep];
  while (index.length < n) index.unshift(0);
  return `[${index.join(", ")}]\n${valueText(heat, r * shape[1] + c, data.schema)}`;
}

/**
 * The value of heatmap pixel k: exact when the kernel sent values, else read off the colour scale.
 * @param {Heatmap} heat @param {number} k @param {ReturnType<typeof schemaOf>} schema
 */
function valueText(heat, k, schema) {
  if (heat.values.length > k) return `value ${fmt(heat.values[k])}`;
  const p = heat.pixels[k];
  const kind = schema.nonfinite.find((kd) => kd.index === p);
  if (kind) return `value ${kind.label}`;
  const [lo, hi] = heat.range.length ? heat.range : [0, 0];
  const top = schema.finiteTop;
  if (p === 0) return `value \u2264 ${fmt(lo)} (below the colour scale)`;
  if (p === top) return `value \u2265 ${fmt(hi)} (above the colour scale)`;
  const step = (hi - lo) / top;
  return `value \u2248 ${fmt(lo + p * step)} (\u00b1${fmt(step / 2)}, from the colour)`;
}

export { heatmapOf, sliceControls, readSliceIndex, drawHeatmap, heatReadOut };
