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
function plotBox(w, hgt, margin = {}) {
  const left = margin.left ?? 40;
  const right = margin.right ?? 6;
  const top = margin.top ?? 6;
  const bottom = margin.bottom ?? 18;
  return { x: left, y: top, w: Math.max(1, w - left - right), h: Math.max(1, hgt - top - bottom) };
}
function drawAxes(ctx, box, spec) {
  const { theme } = spec;
  ctx.save();
  ctx.font = `10px ${theme.font}`;
  ctx.lineWidth = 1;
  const right = box.x + box.w;
  const bottom = box.y + box.h;
  if (spec.y && spec.yTicks) {
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    for (const v of spec.yTicks) {
      const py = Math.round(spec.y(v)) + 0.5;
      if (py < box.y - 1 || py > bottom + 1) continue;
      if (spec.grid !== false) {
        ctx.strokeStyle = theme.grid;
        ctx.beginPath();
        ctx.moveTo(box.x, py);
        ctx.lineTo(right, py);
        ctx.stroke();
      }
      ctx.strokeStyle = theme.fg2;
      ctx.beginPath();
      ctx.moveTo(box.x - 3, py);
      ctx.lineTo(box.x, py);
      ctx.stroke();
      ctx.fillStyle = theme.fg2;
      ctx.fillText((spec.yText || tickText)(v), box.x - 5, Math.min(Math.max(py, box.y + 4), bottom - 3));
    }
  }
  if (spec.x && spec.xTicks) {
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    let lastEnd = -Infinity;
    for (const v of spec.xTicks) {
      const px = Math.round(spec.x(v)) + 0.5;
      if (px < box.x - 1 || px > right + 1) continue;
      const text = (spec.xText || tickText)(v);
      const half = ctx.measureText(text).width / 2;
      const at = Math.min(Math.max(px, box.x + half), right - half);
      ctx.strokeStyle = theme.fg2;
      ctx.beginPath();
      ctx.moveTo(px, bottom);
      ctx.lineTo(px, bottom + 3);
      ctx.stroke();
      if (at - half < lastEnd + 4) continue;
      ctx.fillStyle = theme.fg2;
      ctx.fillText(text, at, bottom + 4);
      lastEnd = at + half;
    }
  }
  ctx.strokeStyle = theme.border;
  ctx.beginPath();
  ctx.moveTo(box.x + 0.5, box.y);
  ctx.lineTo(box.x + 0.5, bottom + 0.5);
  ctx.lineTo(right, bottom + 0.5);
  ctx.stroke();
  ctx.fillStyle = theme.fg2;
  if (spec.yLabel) {
    ctx.save();
    ctx.translate(9, box.y + box.h / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    ctx.fillText(spec.yLabel, 0, 0);
    ctx.restore();
  }
  if (spec.xLabel) {
    ctx.textAlign = "right";
    ctx.textBaseline = "bottom";
    ctx.fillText(spec.xLabel, right, box.y + 10);
  }
  ctx.restore();
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
function keyItem(colour, label, kind = "swatch") {
  const item = h("span", "jcnb-key-item");
  const mark = h("span", kind === "line" ? "jcnb-key-line" : "jcnb-key-swatch");
  if (kind === "line") mark.style.borderTopColor = colour;
  else mark.style.background = colour;
  item.append(mark, document.createTextNode(label));
  return item;
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
function setName(el, text) {
  el.textContent = shownName(text);
  el.dir = "auto";
  return el;
}

// js/patching_data.js
function patchingData(model) {
  const sites = model.get("_sites") || [];
  const positions = model.get("_positions") || [];
  const cells = sites.length * positions.length;
  const effects = new Float64Array(bytesOf(model.get("_effects")));
  const methods = model.get("_methods") || [];
  const results = methods.map((m, r) => {
    const effect = effects.subarray(r * cells, (r + 1) * cells);
    const span = m.clean - m.corrupted;
    const recovery = Float64Array.from(effect, (v) => span ? (v - m.corrupted) / span : NaN);
    return { method: String(m.method), metric: String(m.metric), clean: Number(m.clean), corrupted: Number(m.corrupted), effect, recovery };
  });
  return {
    sites,
    positions,
    positionLabels: model.get("_position_labels") || [],
    results,
    // Both results share one colour scale (at least [-1, 1]), the saved picture's (colour_scale in Python).
    scale: Number(model.get("_scale")) || 1,
    labels: model.get("_readout_labels") || [],
    readouts: new Float64Array(bytesOf(model.get("_readouts"))),
    ends: new Float64Array(bytesOf(model.get("_readout_ends")))
  };
}
function shownResults(data, shown) {
  if (shown === "both") return data.results;
  const one = data.results.find((r) => r.method === shown);
  return one ? [one] : data.results.slice(0, 1);
}
function readoutAt(data, site, pos) {
  const k = data.labels.length;
  if (!k || !data.readouts.length) return null;
  const at = (site * data.positions.length + pos) * k;
  return data.readouts.subarray(at, at + k);
}

// js/patching_heatmap.js
var ROW_H = 22;
var AXIS_H = 16;
var HEAD_H = 18;
var MIN_CELL = 16;
var MAX_CELL = 56;
var MAX_LABEL = 260;
function heatLayout(data, w, labelWidth) {
  const left = Math.min(MAX_LABEL, labelWidth) + 10;
  const cols = Math.max(1, data.positions.length);
  const cellW = Math.max(MIN_CELL, Math.min(MAX_CELL, Math.floor((w - left - 4) / cols)));
  const top = AXIS_H + HEAD_H;
  return { left, top, cellW, cellH: ROW_H, w: Math.max(left + cols * cellW + 4, left + 80), h: top + data.sites.length * ROW_H + 2 };
}
function fitted(ctx, text, width) {
  if (ctx.measureText(text).width <= width) return text;
  let n = text.length;
  while (n > 1 && ctx.measureText(`\u2026${text.slice(text.length - n)}`).width > width) n--;
  return `\u2026${text.slice(text.length - n)}`;
}
var HEAD = /^(.*)\[head (\d+)\]$/;
function rowGroups(sites) {
  if (!sites.some((s) => HEAD.test(s))) return null;
  const groups = [];
  sites.forEach((name, row) => {
    const site = name.match(HEAD)?.[1] ?? name;
    const last = groups[groups.length - 1];
    if (last && last.site === site) last.last = row;
    else groups.push({ site, first: row, last: row });
  });
  return groups;
}
function rowLabel(name, grouped) {
  const head = grouped ? name.match(HEAD) : null;
  return head ? `head ${head[2]}` : name;
}
function drawHeatmap(canvas, data, result, w, selected) {
  const theme = themeOf(canvas);
  const probe = (
    /** @type {CanvasRenderingContext2D} */
    canvas.getContext("2d")
  );
  probe.font = `11px ${theme.font}`;
  const groups = rowGroups(data.sites);
  const labels = data.sites.map((s) => rowLabel(s, groups !== null));
  const rowWidth = Math.max(30, ...labels.map((s) => probe.measureText(s).width));
  const groupWidth = groups ? Math.min(MAX_LABEL - rowWidth, Math.max(...groups.map((g) => probe.measureText(g.site).width)) + 12) : 0;
  const box = heatLayout(data, w, groupWidth + rowWidth);
  const ctx = sized(canvas, box.w, box.h);
  ctx.font = `11px ${theme.font}`;
  ctx.textBaseline = "middle";
  const P = data.positions.length;
  ctx.fillStyle = theme.fg2;
  ctx.textAlign = "right";
  ctx.fillText(groups ? "site, head" : "site", box.left - 6, AXIS_H + HEAD_H / 2);
  ctx.textAlign = "left";
  const whole = P === 1 && data.positions[0] === "whole";
  ctx.fillText(whole ? "patched whole" : data.positionLabels.length ? "position: token" : "position", box.left, AXIS_H / 2);
  ctx.textAlign = "center";
  ctx.fillStyle = theme.fg;
  const heads = data.positions.map((p, k) => positionName(data, k));
  const widest = Math.max(...heads.map((text) => ctx.measureText(text).width));
  const every = Math.max(1, Math.ceil((widest + 6) / box.cellW));
  for (let p = 0; p < P; p += every) ctx.fillText(fitted(ctx, heads[p], every * box.cellW - 4), box.left + (p + 0.5) * box.cellW, AXIS_H + HEAD_H / 2);
  for (let s = 0; s < data.sites.length; s++) {
    const y = box.top + s * box.cellH;
    ctx.fillStyle = theme.fg;
    ctx.textAlign = "right";
    ctx.fillText(fitted(ctx, labels[s], box.left - 10 - groupWidth), box.left - 6, y + box.cellH / 2);
    for (let p = 0; p < P; p++) {
      const v = result.recovery[s * P + p];
      ctx.fillStyle = recoveryColour(v, data.scale, theme.grid);
      ctx.fillRect(box.left + p * box.cellW, y, box.cellW - (box.cellW > 8 ? 1 : 0), box.cellH - 1);
    }
  }
  for (const group of groups ?? []) {
    const [y0, y1] = [box.top + group.first * box.cellH, box.top + (group.last + 1) * box.cellH];
    ctx.fillStyle = theme.fg;
    ctx.textAlign = "left";
    ctx.fillText(fitted(ctx, group.site, groupWidth - 12), 2, (y0 + y1) / 2);
    if (group.first > 0) {
      ctx.fillStyle = theme.fg2;
      ctx.fillRect(0, y0 - 1, box.left + P * box.cellW, 1);
    }
  }
  if (selected.length === 2) strokeSelection(ctx, box.left + selected[1] * box.cellW, box.top + selected[0] * box.cellH, box.cellW, box.cellH);
  Object.assign(canvas.dataset, {
    drawn: "1",
    method: result.method,
    groups: String(groups?.length ?? 0),
    left: String(box.left),
    top: String(box.top),
    cellW: String(box.cellW),
    cellH: String(box.cellH)
  });
  return box;
}
function positionName(data, p) {
  return data.positionLabels[p] ?? data.positions[p];
}
function cellAt(data, box, x, y) {
  return gridCell(box, data.sites.length, data.positions.length, x, y);
}
function recoveryColour(v, scale, none) {
  return Number.isFinite(v) ? rgbText(colourAt("diverging", (v / scale + 1) / 2)) : none;
}
function drawScale(canvas, data, hgt) {
  const theme = themeOf(canvas);
  hgt = Math.max(90, hgt);
  const ctx = sized(canvas, 64, hgt);
  drawColourBar(ctx, { x: 2, y: 6, w: 12, h: Math.max(20, hgt - 12) }, "diverging", -data.scale, data.scale, theme);
  canvas.dataset.drawn = "1";
}
var svgText = (text) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
function heatmapSvg(data, results) {
  const cell = { w: 40, h: ROW_H };
  const left = 12 + 7 * Math.max(4, ...data.sites.map((s) => s.length));
  const top = AXIS_H + HEAD_H + 16;
  const P = data.positions.length;
  const width = left + P * cell.w + 24;
  const parts = [];
  results.forEach((result, r) => {
    const x0 = r * width;
    parts.push(`<text x="${x0 + left}" y="12" font-weight="bold">${svgText(result.method)} patching: recovery of ${svgText(result.metric)}</text>`);
    data.positions.forEach((_, p) => {
      parts.push(`<text x="${x0 + left + (p + 0.5) * cell.w}" y="${top - 6}" text-anchor="middle">${svgText(positionName(data, p))}</text>`);
    });
    data.sites.forEach((site, s) => {
      const y = top + s * cell.h;
      parts.push(`<text x="${x0 + left - 6}" y="${y + cell.h / 2 + 4}" text-anchor="end">${svgText(site)}</text>`);
      for (let p = 0; p < P; p++) {
        const v = result.recovery[s * P + p];
        const fill = recoveryColour(v, data.scale, "#9e9e9e");
        parts.push(
          `<rect class="cell" x="${x0 + left + p * cell.w}" y="${y}" width="${cell.w - 1}" height="${cell.h - 1}" fill="${fill}"><title>${svgText(site)}, position ${svgText(positionName(data, p))}: recovery ${v}, metric ${result.effect[s * P + p]}</title></rect>`
        );
      }
    });
  });
  const height = top + data.sites.length * cell.h + 24;
  const caption = `recovery: 0 = corrupted run, 1 = clean run; blue -${fmt(data.scale)}, white 0, red ${fmt(data.scale)}`;
  parts.push(`<text x="${left}" y="${height - 6}" fill="#595959">${svgText(caption)}</text>`);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width * results.length}" height="${height}" font-family="sans-serif" font-size="11"><rect width="100%" height="100%" fill="#fff"/>${parts.join("")}</svg>`;
}

// js/patching_detail.js
var RUN_COLOURS = {
  clean: rgbText(colourAt("diverging", 1)),
  corrupted: rgbText(colourAt("diverging", 0)),
  patched: rgbText(colourAt("sequential", 0.5))
};
function roundedOut(lo, hi, count) {
  const inside = niceTicks(lo, hi, count);
  if (inside.length < 2) return { lo, hi: hi === lo ? lo + 1 : hi, ticks: inside };
  const step = inside[1] - inside[0];
  const out = { lo: Math.floor(lo / step - 1e-9) * step, hi: Math.ceil(hi / step - 1e-9) * step };
  return { ...out, ticks: niceTicks(out.lo, out.hi, count) };
}
function drawMetricBars(canvas, bars, w) {
  const theme = themeOf(canvas);
  const barH = 16;
  const hgt = bars.length * (barH + 4) + 36;
  const ctx = sized(canvas, w, hgt);
  ctx.font = `11px ${theme.font}`;
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
function drawReadout(canvas, labels, runs, w) {
  const theme = themeOf(canvas);
  const hgt = 166;
  const ctx = sized(canvas, w, hgt);
  const group = Math.max(12, Math.min(60, Math.floor((w - 68) / Math.max(1, labels.length))));
  const box = plotBox(Math.min(w, 62 + group * labels.length + 6), hgt, { left: 62, bottom: 34, top: 8 });
  const all = runs.flatMap((r) => Array.from(r.values)).filter(Number.isFinite);
  const range = roundedOut(Math.min(0, ...all), Math.max(0, ...all), 4);
  const y = linearScale(range.lo, range.hi, box.y + box.h, box.y);
  const x = (i) => box.x + (i + 0.5) * group;
  drawAxes(ctx, box, { theme, y, yTicks: range.ticks, x, xTicks: labels.map((_, i) => i), xText: (i) => labels[i] });
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
  const where = data.positions.length === 1 && data.positions[0] === "whole" ? "whole" : `at position ${data.positions[p]}${label === void 0 ? "" : ` (${label})`}`;
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
  const metric = (
    /** @type {HTMLCanvasElement} */
    h("canvas", "jcnb-patch-metric")
  );
  detail.append(h("div", "jcnb-muted", "metric (recovery in brackets: 0 = corrupted, 1 = clean)"), metric);
  drawMetricBars(metric, bars, Math.min(w, 560));
  const patched = readoutAt(data, s, p);
  if (!patched) return;
  const k = data.labels.length;
  const runs = [
    { label: "clean", values: data.ends.subarray(0, k), colour: RUN_COLOURS.clean },
    { label: "corrupted", values: data.ends.subarray(k, 2 * k), colour: RUN_COLOURS.corrupted },
    { label: "patched", values: patched, colour: RUN_COLOURS.patched }
  ];
  const key = h("div", "jcnb-key");
  key.append(h("span", "", "readout:"), ...runs.map((r) => keyItem(r.colour, r.label)));
  const readout = (
    /** @type {HTMLCanvasElement} */
    h("canvas", "jcnb-patch-readout")
  );
  detail.append(key, readout);
  drawReadout(readout, data.labels, runs, Math.min(w, 720));
}

// js/patching_view.js
function cellText(data, s, p) {
  const cell = s * data.positions.length + p;
  const label = data.positionLabels[p];
  const where = data.positions[p] === "whole" ? "patched whole" : `position ${data.positions[p]}${label === void 0 ? "" : ` (${label})`}`;
  const lines = [shownName(data.sites[s]), where];
  for (const r of data.results) lines.push(`${r.method}: recovery ${fmt(r.recovery[cell])}, metric ${fmt(r.effect[cell])}`);
  return lines.join("\n");
}
function patchingTable(data) {
  const rows = data.results.flatMap(
    (r) => data.sites.flatMap(
      (site, s) => data.positions.map((position, p) => {
        const cell = s * data.positions.length + p;
        return [r.method, site, position, data.positionLabels[p] ?? "", r.effect[cell], r.recovery[cell]];
      })
    )
  );
  return { columns: ["method", "site", "position", "label", "metric", "recovery"], rows };
}
function render({ model, el }) {
  const root = h("div", "jcnb-patching jcnb-themed");
  el.append(root);
  applyColours(root, schemaOf(model));
  const data = patchingData(model);
  const header = h("div", "jcnb-patch-header");
  const title = h("div", "jcnb-patch-title");
  const buttons = h("div", "jcnb-patch-shown");
  buttons.setAttribute("role", "group");
  buttons.setAttribute("aria-label", "which result the heatmap shows");
  const choices = data.results.length > 1 ? [...data.results.map((r) => r.method), "both"] : [];
  const byChoice = new Map(
    choices.map((choice) => {
      const button = (
        /** @type {HTMLButtonElement} */
        h("button", "jcnb-patch-choice", choice === "both" ? "side by side" : choice)
      );
      button.dataset.shown = choice;
      button.addEventListener("click", () => {
        model.set("shown", choice);
        model.save_changes();
      });
      return [choice, button];
    })
  );
  buttons.append(...byChoice.values());
  const exports = h("div", "jcnb-patch-export");
  const purposes = {
    CSV: "download every cell's metric and recovery, per result",
    PNG: "download the heatmaps as a picture",
    SVG: "download the heatmaps as a vector picture, each cell's numbers in its tooltip"
  };
  for (const [format, purpose] of Object.entries(purposes)) {
    const button = h("button", "jcnb-patch-export-button", format);
    button.dataset.format = format.toLowerCase();
    button.title = purpose;
    exports.append(button);
  }
  header.append(title, buttons, exports);
  const maps = h("div", "jcnb-patch-maps");
  const scale = (
    /** @type {HTMLCanvasElement} */
    h("canvas", "jcnb-patch-scale")
  );
  const scaleBox = h("div", "jcnb-patch-scale-box");
  const scaleTitle = h("div", "jcnb-muted jcnb-patch-scale-title", data.scale > 1 ? `recovery, to \xB1${fmt(data.scale)}` : "recovery");
  scaleTitle.title = data.scale > 1 ? "some recovery lies past \xB11, so the colours span a wider range" : "0 = corrupted run, 1 = clean run";
  scaleBox.append(scaleTitle, scale);
  const body = h("div", "jcnb-patch-body");
  body.append(maps, scaleBox);
  const detail = h("div", "jcnb-patch-detail");
  const tooltip = new Tooltip(root);
  root.append(header, body, detail);
  const width = () => Math.max(320, Math.min(root.clientWidth || el.clientWidth || 900, 1400));
  function drawMaps() {
    const shown = shownResults(data, model.get("shown"));
    root.dataset.shown = model.get("shown");
    for (const [choice, button] of byChoice) button.setAttribute("aria-pressed", String(choice === model.get("shown")));
    const [first] = data.results;
    title.textContent = `recovery of ${first.metric}: 0 = corrupted run (${fmt(first.corrupted)}), 1 = clean run (${fmt(first.clean)})`;
    maps.replaceChildren();
    const each = Math.floor((width() - 90) / shown.length) - 8;
    for (const result of shown) {
      const panel = h("div", "jcnb-patch-map");
      panel.append(h("div", "jcnb-patch-method", result.method));
      const canvas = (
        /** @type {HTMLCanvasElement} */
        h("canvas", "jcnb-patch-heat")
      );
      panel.append(canvas);
      maps.append(panel);
      const box = drawHeatmap(canvas, data, result, each, model.get("selected") || []);
      hoverReadOut(canvas, tooltip, (x, y) => {
        const cell = cellAt(data, box, x, y);
        return cell && cellText(data, cell[0], cell[1]);
      });
      canvas.addEventListener("click", (event) => {
        const rect = canvas.getBoundingClientRect();
        const cell = cellAt(data, box, event.clientX - rect.left, event.clientY - rect.top);
        if (!cell) return;
        model.set("selected", cell);
        model.save_changes();
      });
    }
    drawScale(scale, data, Math.min(200, AXIS_H + HEAD_H + data.sites.length * ROW_H));
  }
  function drawAll() {
    drawMaps();
    drawDetail(detail, data, model.get("selected") || [], width());
  }
  exports.addEventListener("click", (event) => {
    const button = (
      /** @type {HTMLElement} */
      event.target.closest("button")
    );
    if (button?.dataset.format === "csv") download("patching.csv", csvText(patchingTable(data)), "text/csv");
    else if (button?.dataset.format === "png") downloadCanvases("patching.png", [...maps.querySelectorAll("canvas"), scale]);
    else if (button?.dataset.format === "svg") download("patching.svg", heatmapSvg(data, shownResults(data, model.get("shown"))), "image/svg+xml");
  });
  drawAll();
  model.on("change:shown", drawMaps);
  model.on("change:selected", drawAll);
  const stopDrawing = keepDrawn(root, width, drawAll);
  el.classList.add("jcnb-ready");
  return () => {
    stopDrawing();
    model.off("change:shown", drawMaps);
    model.off("change:selected", drawAll);
  };
}
var patching_view_default = { render };
export {
  patching_view_default as default
};
