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

// js/attention_view.js
var SMALL = 84;
var LABEL_H = 14;
function attentionData(model) {
  return {
    sites: model.get("_sites") || [],
    heads: Number(model.get("_heads")) || 0,
    tokens: model.get("_tokens") || [],
    weights: new Float32Array(bytesOf(model.get("_weights")))
  };
}
function headWeights(data, layer, head) {
  const n = data.tokens.length * data.tokens.length;
  const at = (layer * data.heads + head) * n;
  return data.weights.subarray(at, at + n);
}
function paintHead(ctx, weights, n, x, y, side) {
  const pixels = new ImageData(n, n);
  for (let i = 0; i < n * n; i++) pixels.data.set([...colourAt("sequential", weights[i]), 255], 4 * i);
  const tile = document.createElement("canvas");
  [tile.width, tile.height] = [n, n];
  tile.getContext("2d").putImageData(pixels, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(tile, x, y, side, side);
}
function cellText(data, layer, head, q, k) {
  const w = headWeights(data, layer, head)[q * data.tokens.length + k];
  return [`${shownName(data.sites[layer])}, head ${head}`, `query ${q} ${data.tokens[q]}`, `key ${k} ${data.tokens[k]}`, `weight ${fmt(w)}`].join("\n");
}
function columnLabels(sites) {
  const parts = sites.map((s) => shownName(s).split("."));
  let shared = 0;
  const at = (p) => p[p.length - 1 - shared];
  if (sites.length === 1) shared = parts[0].length > 1 ? 1 : 0;
  while (sites.length > 1 && parts.every((p) => p.length > shared + 1 && at(p) === at(parts[0]))) shared++;
  return parts.map((p) => p.slice(0, p.length - shared).join("."));
}
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
  return (px, py) => {
    const layer = Math.floor((px - left) / (SMALL + gap));
    const head = Math.floor((py - LABEL_H) / (SMALL + gap));
    const [x, y] = [px - left - layer * (SMALL + gap), py - LABEL_H - head * (SMALL + gap)];
    if (px < left || py < LABEL_H || layer >= data.sites.length || head >= data.heads || x >= SMALL || y >= SMALL) return null;
    return { layer, head, q: Math.floor(y / SMALL * n), k: Math.floor(x / SMALL * n) };
  };
}
function drawEnlarged(canvas, data, layer, head, width) {
  const theme = themeOf(canvas);
  const n = data.tokens.length;
  const probe = (
    /** @type {CanvasRenderingContext2D} */
    canvas.getContext("2d")
  );
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
  for (let k = 0; k < n; k += every) {
    ctx.save();
    ctx.translate(label + (k + 0.5) * cell, top - 4);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = "left";
    ctx.fillText(fittedText(ctx, data.tokens[k], label - 20), 0, 0);
    ctx.restore();
  }
  ctx.fillStyle = theme.fg2;
  ctx.textAlign = "left";
  ctx.fillText("keys \u2192", 2, 8);
  ctx.fillText("queries \u2193", 2, 22);
  Object.assign(canvas.dataset, { drawn: "1", left: String(label), top: String(top), cell: String(cell) });
  return (px, py) => {
    const [q, k] = [Math.floor((py - top) / cell), Math.floor((px - label) / cell)];
    return px < label || py < top || q >= n || k >= n ? null : { layer, head, q, k };
  };
}
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
  const grid = (
    /** @type {HTMLCanvasElement} */
    h("canvas", "jcnb-attention-grid")
  );
  const scale = (
    /** @type {HTMLCanvasElement} */
    h("canvas", "jcnb-attention-scale")
  );
  const scaleBox = h("div", "jcnb-attention-scale-box");
  scaleBox.append(h("div", "jcnb-muted", "weight"), scale);
  const body = h("div", "jcnb-attention-body");
  body.append(grid, scaleBox);
  const enlargedTitle = h("div", "jcnb-attention-enlarged-title");
  const enlarged = (
    /** @type {HTMLCanvasElement} */
    h("canvas", "jcnb-attention-enlarged")
  );
  const detail = h("div", "jcnb-attention-detail");
  detail.append(enlargedTitle, enlarged);
  const tooltip = new Tooltip(root);
  root.append(header, body, detail);
  const width = () => Math.max(320, Math.min(root.clientWidth || el.clientWidth || 900, 1400));
  let inGrid = () => null;
  let inEnlarged = () => null;
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
var attention_view_default = { render };
export {
  attention_view_default as default
};
