// js/common.js
function bytesOf(data) {
  if (!data) return new ArrayBuffer(0);
  if (data instanceof ArrayBuffer) return data;
  return data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength);
}
function fmt(x) {
  if (x === null || Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  if (x === 0) return "0";
  const a = Math.abs(x);
  if (a >= 1e-3 && a < 1e5) return Number(x.toPrecision(4)).toString();
  return x.toExponential(3);
}
function h(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== void 0) node.textContent = text;
  return node;
}
function sized(canvas, w, hgt) {
  const ratio = window.devicePixelRatio || 1;
  canvas.width = Math.round(w * ratio);
  canvas.height = Math.round(hgt * ratio);
  canvas.style.width = `${w}px`;
  canvas.style.height = `${hgt}px`;
  const ctx = (
    /** @type {CanvasRenderingContext2D} */
    canvas.getContext("2d")
  );
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  return ctx;
}
function pageIsDark() {
  const body = document.body;
  return Boolean(body) && (body.classList.contains("dark") || body.classList.contains("dark-theme") || body.dataset.theme === "dark");
}
var followers = /* @__PURE__ */ new Set();
var following = /* @__PURE__ */ new WeakSet();
function markPageTheme() {
  const theme = pageIsDark() ? "dark" : "light";
  for (const ref of followers) {
    const el = ref.deref();
    if (el) el.dataset.jcnbPage = theme;
    else followers.delete(ref);
  }
}
if (typeof document !== "undefined" && document.body) {
  new MutationObserver(markPageTheme).observe(document.body, { attributes: true, attributeFilter: ["class", "data-theme"] });
}
function followPageTheme(el) {
  if (!following.has(el)) {
    following.add(el);
    followers.add(new WeakRef(el));
  }
  el.dataset.jcnbPage = pageIsDark() ? "dark" : "light";
}
function csvField(value) {
  const text = typeof value === "number" ? numberField(value) : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}
function numberField(x) {
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  return String(x);
}
function csvText(table) {
  return [table.columns, ...table.rows].map((row) => row.map(csvField).join(",")).join("\n") + "\n";
}
function download(name, text, type) {
  downloadBlob(name, new Blob([text], { type }));
}
function downloadBlob(name, blob) {
  const url = URL.createObjectURL(blob);
  const link = (
    /** @type {HTMLAnchorElement} */
    h("a")
  );
  link.href = url;
  link.download = name;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 0);
}

// js/draw.js
var dataColours = { series: "#808080", band: "#808080", median: "#808080" };
function useDataColours(colours) {
  Object.assign(dataColours, colours);
}
function themeOf(el) {
  const style = getComputedStyle(el);
  const read = (name, fallback) => style.getPropertyValue(name).trim() || fallback;
  return {
    fg: read("--jcnb-fg", "#1f1f1f"),
    fg2: read("--jcnb-fg2", "#595959"),
    bg: read("--jcnb-bg", "#ffffff"),
    bg2: read("--jcnb-bg2", "#eeeeee"),
    border: read("--jcnb-border", "#bdbdbd"),
    grid: read("--jcnb-grid", "#e0e0e0"),
    accent: read("--jcnb-accent", "#1976d2"),
    bad: read("--jcnb-bad", "#d32f2f"),
    warn: read("--jcnb-warn", "#e65100"),
    // The data colours come from the kernel's schema (schema.js, applyColours),
    // also for an element not yet in the page, whose style resolves to nothing.
    series: read("--jcnb-series", dataColours.series),
    band: read("--jcnb-band", dataColours.band),
    median: read("--jcnb-median", dataColours.median),
    font: read("--jcnb-font", "sans-serif")
  };
}
function niceTicks(lo, hi, count = 5) {
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) return [];
  if (hi < lo) [lo, hi] = [hi, lo];
  if (hi === lo) return [lo];
  const raw = (hi - lo) / Math.max(1, count);
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) || 10 * power;
  const ticks = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) ticks.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  return ticks;
}
function tickText(v) {
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a >= 1e5 || a < 1e-3) return v.toExponential(1).replace("e+", "e");
  return Number(v.toPrecision(4)).toString();
}
function linearScale(d0, d1, r0, r1) {
  const span = d1 !== d0 ? d1 - d0 : 1;
  const f = (v) => r0 + (v - d0) / span * (r1 - r0);
  f.invert = (p) => d0 + (p - r0) / (r1 - r0 || 1) * span;
  f.ticks = (count = 5) => niceTicks(Math.min(d0, d1), Math.max(d0, d1), count);
  f.domain = /** @type {[number, number]} */
  [d0, d1];
  return f;
}
var COLOUR_MAPS = {
  // viridis, for values of one sign
  sequential: [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]],
  // blue - white - red (ColorBrewer RdBu), for values around zero
  diverging: [[33, 102, 172], [103, 169, 207], [247, 247, 247], [239, 138, 98], [178, 24, 43]]
};
var rgbText = (rgb) => `rgb(${rgb.join(",")})`;
function colourAt(name, t) {
  const stops = COLOUR_MAPS[name];
  const at = Math.min(Math.max(Number.isFinite(t) ? t : 0, 0), 1) * (stops.length - 1);
  const i = Math.min(Math.floor(at), stops.length - 2);
  const f = at - i;
  return stops[i].map((c, k) => Math.round(c + f * (stops[i + 1][k] - c)));
}
function drawColourBar(ctx, box, name, lo, hi, theme) {
  for (let py = 0; py < box.h; py++) {
    ctx.fillStyle = rgbText(colourAt(name, 1 - py / Math.max(1, box.h - 1)));
    ctx.fillRect(box.x, box.y + py, box.w, 1);
  }
  ctx.strokeStyle = theme.border;
  ctx.strokeRect(box.x + 0.5, box.y + 0.5, box.w - 1, box.h - 1);
  const y = linearScale(lo, hi, box.y + box.h, box.y);
  ctx.save();
  ctx.font = `10px ${theme.font}`;
  ctx.fillStyle = theme.fg2;
  ctx.textAlign = "left";
  ctx.textBaseline = "middle";
  const ticks = hi > lo ? niceTicks(lo, hi, 4) : [lo];
  for (const v of ticks) ctx.fillText(tickText(v), box.x + box.w + 3, Math.min(Math.max(y(v), box.y + 4), box.y + box.h - 4));
  ctx.restore();
}
var Tooltip = class {
  /** @param {HTMLElement} root the widget's root (the tooltip takes its theme) */
  constructor(root) {
    this.node = h("div", "jcnb-tooltip");
    this.node.hidden = true;
    this.node.setAttribute("role", "tooltip");
    root.append(this.node);
  }
  /** @param {MouseEvent} event @param {string} text lines separated by "\n" */
  show(event, text) {
    this.node.textContent = text;
    this.node.hidden = false;
    const { innerWidth, innerHeight } = window;
    const box = this.node.getBoundingClientRect();
    const left = event.clientX + 14 + box.width > innerWidth ? event.clientX - 10 - box.width : event.clientX + 14;
    const top = event.clientY + 14 + box.height > innerHeight ? event.clientY - 10 - box.height : event.clientY + 14;
    this.node.style.left = `${Math.max(0, left)}px`;
    this.node.style.top = `${Math.max(0, top)}px`;
    const placed = this.node.getBoundingClientRect();
    const dx = placed.left - Math.max(0, left);
    const dy = placed.top - Math.max(0, top);
    if (dx || dy) {
      this.node.style.left = `${Math.max(0, left) - dx}px`;
      this.node.style.top = `${Math.max(0, top) - dy}px`;
    }
  }
  hide() {
    this.node.hidden = true;
  }
};
function hoverReadOut(canvas, tooltip, readOut) {
  canvas.addEventListener("mousemove", (event) => {
    const rect = canvas.getBoundingClientRect();
    const text = readOut(event.clientX - rect.left, event.clientY - rect.top);
    if (text) tooltip.show(event, text);
    else tooltip.hide();
  });
  canvas.addEventListener("mouseleave", () => tooltip.hide());
}
function onThemeChange(redraw) {
  const observer = new MutationObserver(redraw);
  observer.observe(document.body, { attributes: true, attributeFilter: ["data-jp-theme-name", "data-jp-theme-light", "class"] });
  return () => observer.disconnect();
}
function keepDrawn(root, width, draw) {
  const stopTheme = onThemeChange(draw);
  let drawnWidth = width();
  const resized = new ResizeObserver(() => {
    if (width() !== drawnWidth) {
      drawnWidth = width();
      draw();
    }
  });
  resized.observe(root);
  return () => {
    stopTheme();
    resized.disconnect();
  };
}
function fittedText(ctx, text, width) {
  if (ctx.measureText(text).width <= width) return text;
  let n = text.length;
  while (n > 1 && ctx.measureText(`${text.slice(0, n)}\u2026`).width > width) n--;
  return `${text.slice(0, n)}\u2026`;
}
function downloadCanvases(name, canvases) {
  const gap = 16 * (window.devicePixelRatio || 1);
  const out = document.createElement("canvas");
  out.width = canvases.reduce((w, c) => w + c.width + gap, 0) - gap;
  out.height = Math.max(...canvases.map((c) => c.height));
  const ctx = (
    /** @type {CanvasRenderingContext2D} */
    out.getContext("2d")
  );
  ctx.fillStyle = themeOf(canvases[0]).bg;
  ctx.fillRect(0, 0, out.width, out.height);
  let x = 0;
  for (const c of canvases) {
    ctx.drawImage(c, x, 0);
    x += c.width + gap;
  }
  out.toBlob((blob) => blob && downloadBlob(name, blob));
}
function strokeSelection(ctx, x, y, w, h2) {
  ctx.lineWidth = 2;
  ctx.strokeStyle = "#fff";
  ctx.strokeRect(x + 1, y + 1, w - 3, h2 - 3);
  ctx.strokeStyle = "#000";
  ctx.strokeRect(x + 3, y + 3, w - 7, h2 - 7);
}
function gridCell(box, rows, columns, x, y) {
  const column = Math.floor((x - box.left) / box.cellW);
  const row = Math.floor((y - box.top) / box.cellH);
  if (x < box.left || y < box.top || column >= columns || row >= rows) return null;
  return [row, column];
}

// js/schema.js
function statText(format, x) {
  if (x === null || Number.isNaN(x)) return "nan";
  if (format === "percent") return x.toFixed(1);
  if (format === "count") return Number.isFinite(x) ? String(Math.round(x)) : fmt(x);
  return fmt(x);
}
function schemaOf(model) {
  const raw = model.get("_schema") || {};
  const stats = raw.stats || [];
  const nonfinite = raw.nonfinite || [];
  const byKey = new Map(stats.map((s) => [s.key, s]));
  return {
    stats,
    nonfinite,
    nonfiniteLabel: (
      /** @type {string} */
      raw.nonfinite_label || "NaN/Inf"
    ),
    /** The top colour index of finite values; the NaN/Inf indices follow it. */
    finiteTop: Number(raw.finite_colours || 253) - 1,
    /** @type {number[]} */
    percentiles: raw.percentiles || [],
    /** (low, high, opacity) per band, widest and faintest first. @type {number[][]} */
    bands: raw.bands || [],
    /** @type {number} */
    median: raw.median ?? 50,
    /** @type {Record<string, string>} */
    colours: raw.colours || {},
    /** @type {string[]} */
    modeColours: raw.mode_colours || [],
    /** One colour per run of a view of several runs. @type {string[]} */
    runColours: raw.run_colours || raw.mode_colours || ["#808080"],
    /** @type {string} */
    shiftNote: raw.shift_note || "",
    /** The statistic named `key`, or a plain entry naming it by its key. @param {string} key @returns {StatEntry} */
    stat: (key) => byKey.get(key) || { key, label: key, header: key, format: "number", column: false, compact: false },
    /** How the widgets name a statistic. @param {string} key */
    label: (key) => (byKey.get(key) || { label: key }).label,
    /** A statistic's value written as its format says. @param {string} key @param {number} x */
    text: (key, x) => statText((byKey.get(key) || { format: "number" }).format, x),
    /** The statistics the tables give a column each, in order. */
    columns: () => stats.filter((s) => s.column)
  };
}
function applyColours(el, schema) {
  followPageTheme(el);
  useDataColours(schema.colours);
  for (const [name, colour] of Object.entries(schema.colours)) el.style.setProperty(`--jcnb-${name}`, colour);
}

// js/names.js
var CONTROLS = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
var NAMED = { "\n": "\\n", "\r": "\\r", "	": "\\t" };
function shownName(text) {
  return String(text).replace(CONTROLS, (c) => {
    const code = c.charCodeAt(0);
    const hex = code.toString(16);
    return NAMED[c] || (code < 256 ? `\\x${hex.padStart(2, "0")}` : `\\u${hex.padStart(4, "0")}`);
  });
}

// js/lens_view.js
var ROW_H = 22;
var AXIS_H = 16;
var HEAD_H = 18;
var MIN_CELL = 28;
var MAX_CELL = 64;
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
    topProbabilities: new Float64Array(bytesOf(model.get("_top_probabilities")))
  };
}
var topText = (data, k) => data.tokenTexts[data.topTokens[k]];
function topAt(data, cell) {
  const out = [];
  for (let k = 0; k < data.top; k++) out.push(`${topText(data, cell * data.top + k)} (${fmt(data.topProbabilities[cell * data.top + k])})`);
  return out;
}
function cellText(data, s, p) {
  const cell = s * data.positions.length + p;
  return [
    shownName(data.sites[s]),
    `position ${data.positions[p]}`,
    `target ${data.targets[p]}: probability ${fmt(data.probability[cell])}, rank ${data.rank[cell]}`,
    `top: ${topAt(data, cell).join(", ")}`
  ].join("\n");
}
function drawLens(canvas, data, w, selected) {
  const theme = themeOf(canvas);
  const probe = (
    /** @type {CanvasRenderingContext2D} */
    canvas.getContext("2d")
  );
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
function lensTable(data) {
  const P = data.positions.length;
  const rows = data.sites.flatMap(
    (site, s) => data.positions.map((position, p) => {
      const cell = s * P + p;
      const tokens = Array.from({ length: data.top }, (_, k) => topText(data, cell * data.top + k));
      const probabilities = Array.from(data.topProbabilities.subarray(cell * data.top, (cell + 1) * data.top));
      return [site, position, data.targets[p], data.probability[cell], data.rank[cell], tokens.join(" "), probabilities.join(" ")];
    })
  );
  return { columns: ["site", "position", "target", "probability", "rank", "top tokens", "top probabilities"], rows };
}
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
  const canvas = (
    /** @type {HTMLCanvasElement} */
    h("canvas", "jcnb-lens-heat")
  );
  const scale = (
    /** @type {HTMLCanvasElement} */
    h("canvas", "jcnb-lens-scale")
  );
  const scaleBox = h("div", "jcnb-lens-scale-box");
  scaleBox.append(h("div", "jcnb-muted", "probability"), scale);
  const body = h("div", "jcnb-lens-body");
  body.append(canvas, scaleBox);
  const detail = h("div", "jcnb-lens-detail");
  const tooltip = new Tooltip(root);
  root.append(header, body, detail);
  const width = () => Math.max(320, Math.min(root.clientWidth || el.clientWidth || 900, 1400) - 90);
  let box = { left: 0, top: 0, cellW: 1, cellH: 1 };
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
    const button = (
      /** @type {HTMLElement} */
      event.target.closest("button")
    );
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
var lens_view_default = { render };
export {
  lens_view_default as default
};
