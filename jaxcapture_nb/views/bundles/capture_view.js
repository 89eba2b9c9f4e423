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
function siteFilter(cls) {
  const filter = (
    /** @type {HTMLInputElement} */
    h("input", cls)
  );
  filter.type = "search";
  filter.placeholder = "filter sites (regex)";
  filter.setAttribute("aria-label", "filter sites (regular expression)");
  return filter;
}
function siteMatcher(filter) {
  filter.classList.remove("jcnb-bad");
  filter.title = "";
  const text = filter.value;
  if (!text) return () => true;
  try {
    const re = new RegExp(text);
    return (label) => re.test(label);
  } catch {
    filter.classList.add("jcnb-bad");
    filter.title = "not a regular expression: matching as plain text";
    return (label) => label.includes(text);
  }
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
function ordinal(n) {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? "th" : ["th", "st", "nd", "rd"][n % 10] || "th";
  return `${n}${suffix}`;
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
function stepTicks(lo, hi, count = 5) {
  return niceTicks(lo, hi, count).filter((v) => Number.isInteger(v) || Math.abs(v - Math.round(v)) < 1e-9).map(Math.round);
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
function countScale(top, r0, r1, log) {
  const t = (c) => log ? Math.log10(1 + c) : c;
  const span = t(Math.max(top, 1));
  const f = (c) => r0 + t(Math.max(c, 0)) / span * (r1 - r0);
  f.ticks = (count = 4) => {
    if (!log) return niceTicks(0, Math.max(top, 1), count).filter(Number.isInteger);
    const ticks = [0];
    for (let p = 1; p <= Math.max(top, 1); p *= 10) ticks.push(p);
    return ticks;
  };
  f.domain = [0, top];
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
function drawBars(ctx, box, counts, y, colour) {
  const n = counts.length;
  const w = box.w / n;
  const base = y(0);
  ctx.fillStyle = colour;
  for (let i = 0; i < n; i++) {
    if (!counts[i]) continue;
    const top = Math.min(y(counts[i]), base - 1);
    ctx.fillRect(box.x + i * w, top, Math.max(w - (w > 3 ? 1 : 0), 1), base - top);
  }
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
function onThemeChange(redraw2) {
  const observer = new MutationObserver(redraw2);
  observer.observe(document.body, { attributes: true, attributeFilter: ["data-jp-theme-name", "data-jp-theme-light", "class"] });
  return () => observer.disconnect();
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

// js/capture_data.js
var shapeText = (s) => s.shape ? `(${s.shape.join(",")})` : "";
var countText = (n) => Math.round(n).toLocaleString("en-US");
var CaptureData = class {
  /** @param {any} model */
  constructor(model) {
    this.schema = schemaOf(model);
    this.sites = model.get("_sites") || [];
    this.statColumns = model.get("_stat_columns") || [];
    this.stats = new Float64Array(bytesOf(model.get("_stats")));
    this.hists = new Int32Array(bytesOf(model.get("_hists")));
    this.bins = model.get("_bins") || 1;
    this.fillStats = new Float64Array(bytesOf(model.get("_fill_stats")));
    this.fillHists = new Int32Array(bytesOf(model.get("_fill_hists")));
    const filled = model.get("_fill_sites") || [];
    this.fillRows = new Map(filled.map((f, k) => [
      f.site,
      /** @type {[number, Fill[]]} */
      [k, f.fills]
    ]));
  }
  /** Site i's statistic `name`; NaN when the statistics buffer has no such column. @param {number} i @param {string} name */
  stat(i, name) {
    const column = this.statColumns.indexOf(name);
    return column < 0 ? NaN : this.stats[i * this.statColumns.length + column];
  }
  /** The fills site i's row leaves out; empty for most sites. @param {number} i @returns {Fill[]} */
  fills(i) {
    return this.fillRows.get(i)?.[1] || [];
  }
  /** Site i's statistic `name` as its row shows it: without the fill where it has one. @param {number} i @param {string} name */
  rowStat(i, name) {
    const row = this.fillRows.get(i);
    const column = this.statColumns.indexOf(name);
    if (!row || column < 0) return this.stat(i, name);
    return this.fillStats[row[0] * this.statColumns.length + column];
  }
  /** Site i's histogram as its row's sparkline draws it: without the fill where it has one. @param {number} i */
  rowHist(i) {
    const row = this.fillRows.get(i);
    return row ? this.fillHists.subarray(row[0] * this.bins, (row[0] + 1) * this.bins) : this.hist(i);
  }
  /** How many of site i's values are NaN or infinite. @param {number} i */
  nonfinite(i) {
    return this.schema.nonfinite.reduce((sum, k) => sum + this.stat(i, k.key), 0);
  }
  /** @param {number} i */
  total(i) {
    return this.stat(i, "count") + this.nonfinite(i);
  }
  /** Site i's histogram counts. @param {number} i */
  hist(i) {
    return this.hists.subarray(i * this.bins, (i + 1) * this.bins);
  }
  /** The dotted site (what `include` patterns match) and the label shown. @param {number} i */
  siteTexts(i) {
    const s = this.sites[i];
    return [s.path ? `${s.path}.${s.name}` : s.name, s.label];
  }
  /** What hovering a row's name says: its recorded name, and what a call output is. @param {number} i */
  nameTitle(i) {
    const s = this.sites[i];
    const [dotted] = this.siteTexts(i).map(shownName);
    const label = shownName(s.label);
    const lines = [label === dotted ? dotted : `${label}  (recorded as ${dotted})`];
    if (s.same_as >= 0) {
      const other = shownName(this.sites[s.same_as].label);
      lines.push(`The same values as ${other}: same shape, statistics and histogram (this module returns ${other}'s result).`);
    }
    return lines.join("\n");
  }
  /** What the table sorts site i by in column `key`. @param {number} i @param {string} key */
  sortValue(i, key) {
    const s = this.sites[i];
    if (key === "path") return this.siteTexts(i)[0];
    if (key === "name") return s.shown_name;
    if (key === "dtype") return s.dtype;
    if (key === "type") return s.type;
    if (key === "call") return s.call;
    if (key === "shape") return s.shape ? s.shape.reduce((a, b) => a * b, 1) : -1;
    if (key === "nonfinite") return s.has_stats ? this.nonfinite(i) : -1;
    const v = this.rowStat(i, key);
    return Number.isNaN(v) ? -Infinity : v;
  }
  /**
   * The non-finite kinds site i holds, with their counts, labels and colours.
   * @param {number} i @returns {(NonFiniteEntry & {count: number})[]}
   */
  nonfiniteKinds(i) {
    return this.schema.nonfinite.map((k) => ({ ...k, count: this.stat(i, k.key) })).filter((k) => k.count > 0);
  }
  /** What a site holds when none of its values is finite: "all 24 values are NaN". @param {number} i */
  noFiniteText(i) {
    const kinds = this.nonfiniteKinds(i);
    if (kinds.length === 1 && kinds[0].key === "nan") return `all ${countText(kinds[0].count)} values are ${kinds[0].label}`;
    return `no finite values (${kinds.map((k) => `${countText(k.count)} ${k.label}`).join(", ")})`;
  }
};
var MARK = { none: 0, under: 1, over: 2, fill: 3 };
var MARK_COLOURS = {
  sequential: { under: [0, 0, 0], over: [255, 255, 255], fill: [150, 150, 150] },
  diverging: { under: [0, 0, 0], over: [255, 221, 0], fill: [150, 150, 150] }
};
var markAt = (marks, k) => marks.length ? marks[k >> 2] >> (k & 3) * 2 & 3 : MARK.none;
function rangeOf(model) {
  const answer = model.get("_range") || {};
  return {
    site: answer.site ?? -1,
    mode: answer.mode || "full",
    modes: answer.modes || ["full"],
    note: answer.note || "",
    fills: answer.fills || [],
    lo: answer.lo ?? null,
    hi: answer.hi ?? null,
    under: answer.under || 0,
    over: answer.over || 0,
    rest: answer.rest || null,
    percentiles: answer.percentiles || [0.5, 99.5],
    hist: new Int32Array(bytesOf(model.get("_range_hist")))
  };
}
function fillValueText(fill) {
  const value = fmt(fill.exact ? fill.value : fill.limit).replace(/^-/, "\u2212");
  return fill.exact ? value : `${fill.side === "low" ? "\u2264" : "\u2265"} ${value}`;
}
var fillText = (fill) => `fill ${fillValueText(fill)} \xD7 ${countText(fill.count)}`;
var percentileText = (range) => `${range.percentiles[0]}\u2013${range.percentiles[1]} %ile`;

// js/capture_table.js
var ROW_HEIGHT = 24;
var VISIBLE_ROWS = 14;
var SPARK = { width: 80, height: 18 };
var CELL_PADDING = "10px";
var HIST_MOST = `${SPARK.width + 8}px`;
var FLEXIBLE = [["shape"], ["path", "name"], ["hist"]];
var LEAD_COLUMNS = [
  { key: "path", label: "path", sortable: true, least: 8, most: 40 },
  { key: "name", label: "name", sortable: true, least: 10, most: 40 },
  { key: "call", label: "call", sortable: true, right: true },
  // A shape cut short hides its last axes: it keeps its width (up to the most) and the table scrolls.
  { key: "shape", label: "shape", sortable: true, least: 28, most: 28 },
  { key: "dtype", label: "dtype", sortable: true }
];
var TYPE_COLUMN = { key: "type", label: "type", sortable: true };
var HIST_COLUMN = { key: "hist", label: "histogram", sortable: false };
var FILL_COLUMN = { key: "fill", label: "fill excluded", right: true, sortable: false };
var FILL_TITLE = "a value filling a share of the array far from the rest (masked attention logits), which the row's statistics and histogram leave out";
function tableColumns(data) {
  const { schema } = data;
  const stats = schema.columns().map((s) => ({ key: s.key, label: s.label, format: s.format, numeric: true, right: true, sortable: true }));
  const nonfinite = { key: "nonfinite", label: schema.nonfiniteLabel, numeric: true, right: true, sortable: true };
  return [...leadColumns(data), ...stats, nonfinite, ...data.fillRows.size ? [FILL_COLUMN] : [], HIST_COLUMN];
}
function leadColumns(data) {
  if (new Set(data.sites.map((s) => s.type)).size < 2) return LEAD_COLUMNS;
  return [...LEAD_COLUMNS.slice(0, 3), TYPE_COLUMN, ...LEAD_COLUMNS.slice(3)];
}
function compactNumber(x) {
  if (x === null || Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  if (x === 0) return "0";
  const a = Math.abs(x);
  if (a >= 1e-3 && a < 1e5) {
    const rounded = Number(x.toPrecision(4));
    if (Math.abs(rounded) < 1e5) return String(rounded);
  }
  const [mantissa, exponent] = x.toExponential(2).split("e");
  return `${mantissa.replace(/\.?0+$/, "")}e${Number(exponent)}`;
}
var statCellText = (format, x) => format === "number" ? compactNumber(x) : statText(format, x);
function fillCellText(fill) {
  const value = compactNumber(fill.exact ? fill.value : fill.limit).replace(/^-/, "\u2212");
  return `${fill.exact ? "" : fill.side === "low" ? "\u2264 " : "\u2265 "}${value} \xD7 ${countText(fill.count)}`;
}
function cellText(data, i, column) {
  const s = data.sites[i];
  if (column.key === "path") return shownName(s.path || "(root)");
  if (column.key === "name") return shownName(s.shown_name) + (s.same_as >= 0 ? shownName(` = ${data.sites[s.same_as].label}`) : "");
  if (column.key === "call") return String(s.call);
  if (column.key === "type") return shownName(s.type);
  if (column.key === "shape") return shapeText(s);
  if (column.key === "dtype") return s.dtype;
  if (!s.has_stats) return "";
  if (column.key === "nonfinite") {
    if (!data.nonfinite(i)) return "-";
    const [nan, ...infinite] = data.schema.nonfinite.map((k) => data.stat(i, k.key));
    return `${nan}/${infinite.reduce((a, b) => a + b, 0)}`;
  }
  if (column.key === "fill") return data.fills(i).map(fillCellText).join("; ");
  return column.format ? statCellText(column.format, data.rowStat(i, column.key)) : "";
}
var WIDE = /[\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]/u;
function textCells(text) {
  let cells = 0;
  for (const c of text) cells += WIDE.test(c) || (c.codePointAt(0) ?? 0) > 65535 ? 2 : 1;
  return cells;
}
function widthBounds(data, column) {
  let need = textCells(column.label) + (column.sortable ? 1 : 0);
  if (column.key === "hist") return [need, need];
  for (let i = 0; i < data.sites.length; i++) need = Math.max(need, textCells(cellText(data, i, column)));
  const most = Math.min(need, column.most ?? need);
  return [Math.min(most, column.least ?? most), most];
}
function columnWidths(data, columns) {
  const sizes = columns.map((column) => {
    const [least2, most] = widthBounds(data, column);
    const base = `(${least2}ch + ${CELL_PADDING})`;
    if (column.key === "hist") return { least: least2, base, extra: `(${HIST_MOST} - ${base})`, weight: 1 };
    return { least: least2, base, extra: `${most - least2}ch`, weight: most - least2 };
  });
  const leastChars = sizes.reduce((sum, size) => sum + size.least, 0);
  const least = `(${leastChars}ch + ${columns.length} * ${CELL_PADDING})`;
  const tracks = sizes.map((size) => `calc${size.base}`);
  let taken = "0px";
  for (const group of FLEXIBLE) {
    const members = group.map((key) => columns.findIndex((c) => c.key === key)).filter((k) => k >= 0);
    const weight = members.reduce((sum, k) => sum + sizes[k].weight, 0);
    const room = `(100cqw - ${least} - (${taken}))`;
    const growing = members.filter((m) => sizes[m].weight > 0);
    const byShare = (m) => `min(${room} * ${(sizes[m].weight / weight).toFixed(4)}, ${sizes[m].extra})`;
    for (const k of growing) {
      const left = growing.filter((m) => m !== k).map((m) => ` - ${byShare(m)}`).join("");
      tracks[k] = `calc(${sizes[k].base} + clamp(0px, ${room}${left}, ${sizes[k].extra}))`;
    }
    taken += members.map((k) => ` + ${sizes[k].extra}`).join("");
  }
  return { tracks, least: `calc${least}` };
}
function fitColumns(table, data, columns) {
  const fitted = fittedTo.get(table.sheet);
  if (fitted && fitted.data === data && fitted.columns === columns) return;
  fittedTo.set(table.sheet, { data, columns });
  const { tracks, least } = columnWidths(data, columns);
  const { style } = table.sheet;
  style.minWidth = least;
  style.setProperty("--jcnb-cv-columns", tracks.join(" "));
  style.setProperty("--jcnb-cv-path-width", tracks[columns.findIndex((c) => c.key === "path")] || "0px");
}
var fittedTo = /* @__PURE__ */ new WeakMap();
function tableLayout() {
  const scroller = h("div", "jcnb-scroller");
  scroller.tabIndex = 0;
  scroller.setAttribute("role", "grid");
  scroller.setAttribute("aria-label", "captured sites: arrow keys move, Enter shows the details");
  scroller.style.maxHeight = `${(VISIBLE_ROWS + 1) * ROW_HEIGHT + 18}px`;
  const sheet = h("div", "jcnb-sheet");
  sheet.setAttribute("role", "presentation");
  const head = h("div", "jcnb-row jcnb-head");
  head.setAttribute("role", "row");
  head.setAttribute("aria-rowindex", "1");
  sheet.append(head);
  scroller.append(sheet);
  return { scroller, sheet, head };
}
function rowOrder(data, matches, sortKey, sortDir) {
  const sites = data.sites;
  const order = sites.map((_, i) => i).filter((i) => data.siteTexts(i).some(matches));
  if (!sortKey) {
    const firstSeen = /* @__PURE__ */ new Map();
    sites.forEach((s, i) => firstSeen.has(s.path) || firstSeen.set(s.path, i));
    order.sort((a, b) => firstSeen.get(sites[a].path) - firstSeen.get(sites[b].path) || a - b);
  } else {
    order.sort((a, b) => {
      const x = data.sortValue(a, sortKey);
      const y = data.sortValue(b, sortKey);
      return (x < y ? -1 : x > y ? 1 : a - b) * sortDir;
    });
  }
  return order;
}
function sparkline(data, i, colour) {
  const canvas = (
    /** @type {HTMLCanvasElement} */
    h("canvas", "jcnb-spark")
  );
  const ctx = sized(canvas, SPARK.width, SPARK.height);
  const row = data.rowHist(i);
  const top = Math.max(1, ...row);
  const box = { x: 0, y: 0, w: SPARK.width, h: SPARK.height };
  drawBars(ctx, box, row, (c) => SPARK.height - SPARK.height * c / top, colour);
  return canvas;
}
function cell(text, cls = "", fullText = text) {
  const node = h("span", `jcnb-cell ${cls}`.trim(), text);
  node.title = fullText;
  node.setAttribute("role", "gridcell");
  return node;
}
function pathCell(path, samePath) {
  const node = cell("", samePath ? "jcnb-path jcnb-same-path" : "jcnb-path", shownName(path));
  const last = path.lastIndexOf(".") + 1;
  node.append(setName(h("span", "jcnb-path-head"), path.slice(0, last)), setName(h("span", "jcnb-path-tail"), path.slice(last)));
  return node;
}
function rowCells(data, i, columns, samePath, colour) {
  const s = data.sites[i];
  const { schema } = data;
  const stat = (name) => data.stat(i, name);
  const path = s.path || "(root)";
  const nameCell = setName(cell("", "jcnb-name", data.nameTitle(i)), s.shown_name);
  if (s.same_as >= 0) {
    nameCell.append(setName(h("span", "jcnb-same"), ` = ${data.sites[s.same_as].label}`));
    nameCell.dataset.sameAs = String(s.same_as);
  }
  const text = (column) => cellText(data, i, column);
  const rest = leadColumns(data).slice(2).map((column) => cell(text(column), column.right ? "jcnb-num" : ""));
  const cells = [pathCell(path, samePath), nameCell, ...rest];
  if (!s.has_stats) {
    const note = cell(s.note, "jcnb-note");
    note.style.gridColumn = `span ${columns.length - cells.length}`;
    return [...cells, note];
  }
  const bad = data.nonfinite(i);
  const fills = data.fills(i).map(fillText).join(", ");
  const finiteOnly = bad ? `
over the ${countText(stat("count"))} finite values of ${countText(data.total(i))}` : "";
  for (const column of columns.filter((c) => c.format)) {
    const value = data.rowStat(i, column.key);
    const withFill = `
without the ${fills}; with it: ${String(stat(column.key))}`;
    const title = `${column.label} ${String(value)}${fills ? withFill : column.format === "number" ? finiteOnly : ""}`;
    cells.push(cell(text(column), "jcnb-num", title));
  }
  const counts = schema.nonfinite.map((k) => `${countText(stat(k.key))} ${k.label}`).join(", ");
  const nonfinite = (
    /** @type {Column} */
    columns.find((c) => c.key === "nonfinite")
  );
  const badCell = cell(text(nonfinite), "jcnb-num", bad ? counts : `no ${schema.nonfiniteLabel}`);
  if (bad) badCell.classList.add("jcnb-nonfinite");
  const fillColumn = columns.find((c) => c.key === "fill");
  const fillCells = fillColumn ? [cell(text(fillColumn), "jcnb-num jcnb-fill-cell", fills ? `${fills} excluded from the row's statistics and histogram` : "no fill")] : [];
  const holder = cell("", "", fills ? `histogram of the finite values without the ${fills}` : "histogram of the finite values");
  holder.append(sparkline(data, i, colour));
  return [...cells, badCell, ...fillCells, holder];
}
function drawRows(table, data, view, colour) {
  const { scroller, sheet } = table;
  const { order } = view;
  fitColumns(table, data, view.columns);
  scroller.setAttribute("aria-rowcount", String(order.length + 1));
  const first = Math.floor(scroller.scrollTop / ROW_HEIGHT);
  const last = Math.min(order.length, first + VISIBLE_ROWS + 2);
  for (const old of [...sheet.querySelectorAll(".jcnb-body-row")]) old.remove();
  for (let k = first; k < last; k++) {
    const i = order[k];
    const row = h("div", "jcnb-row jcnb-body-row");
    row.style.top = `${(k + 1) * ROW_HEIGHT}px`;
    row.dataset.site = String(i);
    row.setAttribute("role", "row");
    row.setAttribute("aria-rowindex", String(k + 2));
    row.setAttribute("aria-selected", String(i === view.selected));
    row.classList.toggle("jcnb-selected", i === view.selected);
    row.classList.toggle("jcnb-cursor", i === view.cursor);
    const fills = data.fills(i);
    if (fills.length) row.dataset.fill = fills.map((f) => `${f.value}:${f.count}`).join(" ");
    const samePath = k > 0 && !view.sortKey && data.sites[order[k - 1]].path === data.sites[i].path;
    row.append(...rowCells(data, i, view.columns, samePath, colour));
    sheet.appendChild(row);
  }
}
function rowsInView(scroller, n) {
  const first = Math.floor(scroller.scrollTop / ROW_HEIGHT);
  return `${first}:${Math.min(n, first + VISIBLE_ROWS + 2)}`;
}
var firstDir = (column) => column.numeric ? -1 : 1;
function drawHead(table, columns, sortKey, sortDir) {
  const { head } = table;
  head.replaceChildren();
  for (const col of columns) {
    const node = h("span", `jcnb-cell${col.right ? " jcnb-num" : ""}`, col.label);
    node.dataset.key = col.key;
    node.setAttribute("role", "columnheader");
    if (!col.sortable) {
      node.title = col.key === "fill" ? FILL_TITLE : "histogram of the finite values";
    } else {
      node.classList.add("jcnb-sortable");
      const sorted = sortKey === col.key;
      if (sorted) node.setAttribute("aria-sort", sortDir > 0 ? "ascending" : "descending");
      const next = !sorted ? firstDir(col) : sortDir === firstDir(col) ? -sortDir : 0;
      const directions = col.numeric ? ["smallest first", "largest first"] : ["A to Z", "Z to A"];
      node.title = next ? `sort by ${col.label}, ${directions[next > 0 ? 0 : 1]}` : "back to execution order, grouped by module";
    }
    head.appendChild(node);
  }
}
function sortAfterClick(view, key) {
  const col = view.columns.find((c) => c.key === key);
  if (!col || !col.sortable) return { sortKey: view.sortKey, sortDir: view.sortDir };
  if (view.sortKey !== col.key) return { sortKey: col.key, sortDir: firstDir(col) };
  if (view.sortDir === firstDir(col)) return { sortKey: col.key, sortDir: -view.sortDir };
  return { sortKey: "", sortDir: 1 };
}
function rowAfterKey(key, at, n) {
  const moves = { ArrowDown: at + 1, ArrowUp: at - 1, Home: 0, End: n - 1, PageDown: at + VISIBLE_ROWS, PageUp: at - VISIBLE_ROWS };
  if (!(key in moves)) return null;
  return Math.min(Math.max(moves[key], 0), n - 1);
}
function scrollToRow(scroller, k) {
  const view = scroller.clientHeight - ROW_HEIGHT;
  if (k * ROW_HEIGHT < scroller.scrollTop) scroller.scrollTop = k * ROW_HEIGHT;
  else if ((k + 1) * ROW_HEIGHT > scroller.scrollTop + view) scroller.scrollTop = (k + 1) * ROW_HEIGHT - view;
}

// js/capture_histogram.js
var HIST = { minWidth: 300, maxWidth: 560, height: 210 };
var NONFINITE_BAR = { width: 26, gap: 12, lead: 22 };
var END_BAR = { width: 12, gap: 6 };
function rangedFor(range, data, i) {
  if (!range || range.site !== i || range.mode === "full" || range.lo === null || range.hi === null) return null;
  return range.hist.length === data.bins ? range : null;
}
function withoutFill(data, i, range) {
  const fills = data.fills(i);
  if (fills.length) return { value: (key) => data.rowStat(i, key), count: data.rowStat(i, "count"), fills };
  const rest = range && range.site === i && range.fills.length ? range.rest : null;
  if (!rest || !rest.count) return null;
  return { value: (key) => rest[key] ?? NaN, count: rest.count, fills: (
    /** @type {SiteRange} */
    range.fills
  ) };
}
function drawStatsLine(statsLine, data, i, range = null, leaveFillOut = true) {
  statsLine.replaceChildren();
  delete statsLine.dataset.finiteOnly;
  delete statsLine.dataset.withoutFill;
  if (!data.sites[i].has_stats || data.stat(i, "count") === 0) return;
  const { schema } = data;
  const rest = withoutFill(data, i, range);
  const nonfinite = data.nonfiniteKinds(i).map((k) => `${countText(k.count)} ${k.label}`);
  if (rest && leaveFillOut) {
    const parts2 = schema.columns().map((s) => `${s.label} ${schema.text(s.key, rest.value(s.key))}`);
    statsLine.append(h("span", "", parts2.join(" \xB7 ")));
    statsLine.dataset.withoutFill = "true";
    const left = [...rest.fills.map(fillText), ...nonfinite].join(", ");
    statsLine.append(h("span", "jcnb-finite-only", ` \u2014 over the ${countText(rest.count)} values of ${countText(data.total(i))} without the fill (${left} left out)`));
    return;
  }
  const parts = schema.columns().map((s) => `${s.label} ${schema.text(s.key, data.stat(i, s.key))}`);
  statsLine.append(h("span", "", parts.join(" \xB7 ")));
  const bad = data.nonfinite(i);
  if (!bad && !rest) return;
  statsLine.dataset.finiteOnly = "true";
  const over = `over the ${countText(data.stat(i, "count"))} finite values of ${countText(data.total(i))}`;
  const missing = bad ? ` (${nonfinite.join(", ")} left out)` : "";
  const fills = rest ? `, the ${rest.fills.map(fillText).join(", ")} among them` : "";
  statsLine.append(h("span", "jcnb-finite-only", ` \u2014 ${over}${missing}${fills}`));
}
function histWidth(detail) {
  const room = detail.clientWidth - 4;
  return Math.round(Math.min(HIST.maxWidth, Math.max(HIST.minWidth, room || HIST.maxWidth)));
}
function axisCaption(data, i, ranged) {
  const finite = countText(data.stat(i, "count"));
  if (!ranged) return `value (${finite} finite)`;
  const without = ranged.fills.length ? ` without the ${ranged.fills.map((f) => `fill ${fillValueText(f)}`).join(", ")}` : "";
  if (ranged.mode === "robust") return `value (${percentileText(ranged)} of the finite values${without})`;
  return `value (${countText(ranged.rest?.count ?? 0)} finite${without})`;
}
function drawHistogram(ui, data, i, range = null) {
  const { histCanvas, histKey, histEmpty, logBox } = ui;
  histKey.replaceChildren();
  histEmpty.replaceChildren();
  for (const key of ["drawn", "nonfinite", "range", "mode", "under", "over"]) delete histCanvas.dataset[key];
  const s = data.sites[i];
  const show = i >= 0 && s.has_stats && data.stat(i, "count") > 0;
  histCanvas.hidden = !show;
  ui.logLabel.hidden = !show;
  if (i >= 0 && s.has_stats && !show) histEmpty.textContent = `No histogram: ${data.noFiniteText(i)}.`;
  if (!show) return null;
  const theme = themeOf(ui.root);
  const ranged = rangedFor(range, data, i);
  const nonfinite = data.nonfiniteKinds(i);
  const fillColour = MARK_COLOURS.sequential.fill;
  const fills = ranged ? ranged.fills.map((f) => ({ key: "fill", label: "fill", count: f.count, rgb: fillColour, fill: f })) : [];
  const kinds = [...nonfinite, ...fills];
  const extra = kinds.length ? NONFINITE_BAR.lead + kinds.length * (NONFINITE_BAR.width + NONFINITE_BAR.gap) : 0;
  const width = histWidth(ui.detail);
  const ctx = sized(histCanvas, width, HIST.height);
  const outer = plotBox(width - extra, HIST.height, { left: 56, right: 10, top: 16, bottom: 34 });
  const inset = ranged ? END_BAR.width + END_BAR.gap : 0;
  const box = { x: outer.x + inset, y: outer.y, w: outer.w - 2 * inset, h: outer.h };
  const counts = ranged ? ranged.hist : data.hist(i);
  const [under, over] = ranged ? [ranged.under, ranged.over] : [0, 0];
  const top = Math.max(1, ...counts, ...nonfinite.map((k) => k.count), under, over);
  const y = countScale(top, box.y + box.h, box.y, logBox.checked);
  const lo = ranged ? (
    /** @type {number} */
    ranged.lo
  ) : data.stat(i, "lo");
  const hi = ranged ? (
    /** @type {number} */
    ranged.hi
  ) : data.stat(i, "hi");
  const x = linearScale(lo, hi, box.x, box.x + box.w);
  drawBars(ctx, box, counts, y, theme.series);
  drawAxes(ctx, outer, { theme, x, xTicks: x.ticks(6), y, yTicks: y.ticks(4), yLabel: logBox.checked ? "count (log)" : "count" });
  ctx.font = `10px ${theme.font}`;
  ctx.fillStyle = theme.fg2;
  ctx.textAlign = "center";
  ctx.textBaseline = "bottom";
  ctx.fillText(axisCaption(data, i, ranged), outer.x + outer.w / 2, HIST.height - 1);
  const bars = drawNonfiniteBars(ctx, outer, kinds, y, theme);
  const map = ui.divergingBox.checked ? "diverging" : "sequential";
  const ends = ranged ? drawEndBars(ctx, outer, [under, over], y, MARK_COLOURS[map], theme, [lo, hi]) : [];
  histCanvas.dataset.drawn = "true";
  histCanvas.dataset.range = `${lo} ${hi}`;
  histCanvas.dataset.mode = ranged ? ranged.mode : "full";
  if (ranged) Object.assign(histCanvas.dataset, { under: String(under), over: String(over) });
  if (nonfinite.length) histCanvas.dataset.nonfinite = nonfinite.map((k) => `${k.label}:${k.count}`).join(" ");
  if (nonfinite.length) histCanvas.dataset.nonfiniteLabels = nonfinite.map((k) => statText("count", k.count)).join(" ");
  if (kinds.length || under || over) histKey.append(h("span", "", "Outside the value axis:"));
  for (const k of nonfinite) histKey.append(keyItem(rgbText(k.rgb), `${countText(k.count)} ${k.label}`));
  for (const k of fills) histKey.append(markKeyItem(k.rgb, `${countText(k.count)} fill ${fillValueText(k.fill)}`));
  for (const end of ends.filter((e) => e.count)) histKey.append(markKeyItem(end.rgb, `${countText(end.count)} ${end.text}`));
  return { box, lo, hi, counts, bars, ends };
}
function markKeyItem(rgb, label) {
  const item = keyItem(rgbText(rgb), label);
  item.classList.add("jcnb-mark-key");
  return item;
}
function drawEndBars(ctx, box, counts, y, colours, theme, range) {
  const base = box.y + box.h;
  const places = [
    { x: box.x + 2, count: counts[0], rgb: colours.under, text: `below ${fmt(range[0])}` },
    { x: box.x + box.w - END_BAR.width, count: counts[1], rgb: colours.over, text: `above ${fmt(range[1])}` }
  ];
  ctx.font = `10px ${theme.font}`;
  ctx.textAlign = "center";
  ctx.textBaseline = "bottom";
  for (const end of places) {
    if (!end.count) continue;
    const top = Math.min(y(end.count), base - 2);
    ctx.fillStyle = rgbText(end.rgb);
    ctx.fillRect(end.x, top, END_BAR.width, base - top);
    ctx.strokeStyle = theme.fg2;
    ctx.strokeRect(end.x + 0.5, top + 0.5, END_BAR.width - 1, base - top - 1);
    ctx.fillStyle = theme.fg;
    ctx.fillText(statText("count", end.count), end.x + END_BAR.width / 2, Math.max(top - 2, 11));
  }
  return places.map((end) => ({ ...end, w: END_BAR.width }));
}
function drawNonfiniteBars(ctx, box, kinds, y, theme) {
  if (!kinds.length) return [];
  const base = box.y + box.h;
  const start = box.x + box.w + NONFINITE_BAR.lead;
  ctx.strokeStyle = theme.border;
  ctx.setLineDash([3, 3]);
  ctx.beginPath();
  ctx.moveTo(start - NONFINITE_BAR.lead / 2, box.y);
  ctx.lineTo(start - NONFINITE_BAR.lead / 2, base);
  ctx.stroke();
  ctx.setLineDash([]);
  ctx.font = `10px ${theme.font}`;
  ctx.textAlign = "center";
  return kinds.map((kind, j) => {
    const x = start + j * (NONFINITE_BAR.width + NONFINITE_BAR.gap);
    const top = Math.max(Math.min(y(kind.count), base - 1), box.y);
    ctx.fillStyle = rgbText(kind.rgb);
    ctx.fillRect(x, top, NONFINITE_BAR.width, base - top);
    if (y(kind.count) < box.y) drawBreak(ctx, x, box.y + 10, NONFINITE_BAR.width, theme);
    ctx.fillStyle = theme.fg;
    ctx.textBaseline = "bottom";
    ctx.fillText(statText("count", kind.count), x + NONFINITE_BAR.width / 2, Math.max(top - 2, 11));
    ctx.textBaseline = "top";
    ctx.fillText(kind.label, x + NONFINITE_BAR.width / 2, base + 4);
    ctx.beginPath();
    ctx.strokeStyle = theme.border;
    ctx.moveTo(x - 2, base + 0.5);
    ctx.lineTo(x + NONFINITE_BAR.width + 2, base + 0.5);
    ctx.stroke();
    return { x, w: NONFINITE_BAR.width, kind };
  });
}
function histReadOut(layout, px, py) {
  if (!layout) return null;
  const { box, lo, hi, bars, ends, counts } = layout;
  const bins = counts.length;
  const bar = bars.find((b) => px >= b.x - 2 && px <= b.x + b.w + 2);
  if (bar && bar.kind.fill) return `${fillText(bar.kind.fill)}
(left out of the range)`;
  if (bar) return `${bar.kind.label}
${countText(bar.kind.count)} values (outside the value axis)`;
  const end = ends.find((e) => e.count && px >= e.x - 1 && px <= e.x + e.w + 1);
  if (end) return `${end.text}
${countText(end.count)} values`;
  if (px < box.x || px > box.x + box.w || py > box.y + box.h + 4) return null;
  const k = Math.min(bins - 1, Math.floor((px - box.x) / box.w * bins));
  const width = (hi - lo) / bins;
  const close = k === bins - 1 ? "]" : ")";
  return `[${fmt(lo + k * width)}, ${fmt(lo + (k + 1) * width)}${close}
${countText(counts[k])} values`;
}
function drawBreak(ctx, x, y, w, theme) {
  ctx.save();
  ctx.strokeStyle = theme.bg;
  ctx.lineWidth = 2;
  for (const dy of [0, 5]) {
    ctx.beginPath();
    ctx.moveTo(x - 2, y + dy + 3);
    ctx.lineTo(x + w + 2, y + dy - 3);
    ctx.stroke();
  }
  ctx.restore();
}

// js/capture_heat_picture.js
var FACET_SIDE = 96;
var BAR = { width: 80, bar: 12, tip: 7 };
var TICKS = { left: 28, bottom: 16 };
var MARK_NAMES = ["none", "under", "over", "fill"];
function heatmapOf(model) {
  return {
    /** @type {number} */
    site: model.get("_heatmap_site"),
    /** @type {number[]} */
    shape: model.get("_heatmap_shape") || [],
    pixels: new Uint8Array(bytesOf(model.get("_heatmap"))),
    values: new Float32Array(bytesOf(model.get("_heatmap_values"))),
    marks: new Uint8Array(bytesOf(model.get("_heatmap_marks"))),
    /** @type {number[]} */
    range: model.get("_heatmap_range") || [],
    /** @type {string} */
    note: model.get("_heatmap_note") || "",
    /** @type {number[]} */
    index: model.get("_slice_index") || [],
    /** @type {number[]} */
    facets: model.get("_heatmap_facets") || [],
    /** @type {number} */
    facetAxis: model.get("_heatmap_facet_axis") ?? -1
  };
}
function heatFrame(ui) {
  const frame = h("div", "jcnb-heat-frame");
  const rowTicks = (
    /** @type {HTMLCanvasElement} */
    h("canvas", "jcnb-heat-ticks")
  );
  const colTicks = (
    /** @type {HTMLCanvasElement} */
    h("canvas", "jcnb-heat-ticks")
  );
  ui.heatCanvas.replaceWith(frame);
  frame.append(rowTicks, ui.heatCanvas, h("span"), colTicks);
  const facets = h("div", "jcnb-facets");
  facets.hidden = true;
  frame.after(facets);
  return { frame, rowTicks, colTicks, facets };
}
function paletteOf(map, schema) {
  const { finiteTop } = schema;
  const palette = [];
  for (let i = 0; i <= finiteTop; i++) palette.push(colourAt(map, i / finiteTop));
  for (const kind of schema.nonfinite) palette[kind.index] = kind.rgb;
  return palette;
}
function paint(canvas, heat, offset, rows, cols, palette, markColours, marked) {
  canvas.width = cols;
  canvas.height = rows;
  const ctx = (
    /** @type {CanvasRenderingContext2D} */
    canvas.getContext("2d")
  );
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
function drawIndexTicks(ui, frame, shape, rows, cols, w, hgt) {
  const theme = themeOf(ui.root);
  const n = shape.length;
  const rowStep = Math.ceil(shape[n - 2] / rows);
  const colStep = Math.ceil(shape[n - 1] / cols);
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
    if (at - half < lastEnd + 3) continue;
    under.fillText(text, at, 4);
    lastEnd = at + half;
  }
  frame.rowTicks.dataset.drawn = "true";
  frame.colTicks.dataset.drawn = "true";
}
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
  const tip = (base, dir, rgb) => {
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
function facetText(shape, heat) {
  const size = shape[heat.facetAxis] ?? heat.facets.length;
  const shown = heat.facets.length;
  const which = shown === size ? `all ${size}` : `${heat.facets[0]} to ${heat.facets[shown - 1]} of ${size} (${size - shown} left out)`;
  return ` \xB7 small multiples: axis ${heat.facetAxis}, ${which}`;
}
function facetIndexText(heat, k, ndim) {
  const lead = Array.from({ length: ndim - 2 }, (_, axis) => axis === heat.facetAxis ? heat.facets[k] : heat.index[axis] ?? 0);
  return `[${[...lead, ":", ":"].join(", ")}]`;
}
function facetWithTicks(canvas, rows, cols) {
  const left = h("span", "jcnb-facet-rows");
  left.append(h("span", "", "0"), h("span", "", String(rows - 1)));
  const under = h("span", "jcnb-facet-cols");
  under.append(h("span", "", "0"), h("span", "", String(cols - 1)));
  const grid = h("div", "jcnb-facet-grid");
  grid.append(left, canvas, h("span"), under);
  return grid;
}
function drawFacets(ui, frame, data, selected, heat, palette, markColours, marked) {
  const [count, rows, cols] = heat.shape;
  const scale = FACET_SIDE / Math.max(rows, cols);
  const [w, hgt] = [Math.max(1, Math.round(cols * scale)), Math.max(1, Math.round(rows * scale))];
  frame.frame.hidden = true;
  frame.facets.hidden = false;
  ui.heatControls.parentElement?.classList.add("jcnb-faceted");
  const site = data.sites[selected];
  const [sliceRows, sliceCols] = site.shape ? site.shape.slice(-2) : [rows, cols];
  for (let k = 0; k < count; k++) {
    const panel = h("div", "jcnb-facet");
    const label = h("span", "jcnb-facet-label", facetIndexText(heat, k, site.shape ? site.shape.length : 3));
    label.title = `position ${heat.facets[k]} on axis ${heat.facetAxis}`;
    const canvas = (
      /** @type {HTMLCanvasElement} */
      h("canvas", "jcnb-facet-heat")
    );
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
function heatReadOut(canvas, data, selected, heat, px, py, facet = -1) {
  const s = data.sites[selected];
  const faceted = heat.shape.length === 3;
  if (!canvas.dataset.drawn || !s || !s.shape || faceted !== facet >= 0) return null;
  const [rows, cols] = heat.shape.slice(-2);
  const rect = canvas.getBoundingClientRect();
  const r = Math.floor(py / rect.height * rows);
  const c = Math.floor(px / rect.width * cols);
  if (r < 0 || c < 0 || r >= rows || c >= cols) return null;
  const n = s.shape.length;
  const rowStep = Math.ceil(s.shape[n - 2] / rows);
  const colStep = Math.ceil(s.shape[n - 1] / cols);
  const lead = heat.index.slice(0, n - 2);
  while (lead.length < n - 2) lead.push(0);
  if (faceted) lead[heat.facetAxis] = heat.facets[facet];
  const k = Math.max(facet, 0) * rows * cols + r * cols + c;
  return `[${[...lead, r * rowStep, c * colStep].join(", ")}]
${valueText(heat, k, data.schema)}`;
}
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
  return `value \u2248 ${fmt(lo + p * step)} (\xB1${fmt(step / 2)}, from the colour)`;
}

// js/capture_heatmap.js
var HEAT_SIDE = 240;
function indexProblem(text, size) {
  const value = Number(text.trim());
  if (text.trim() === "" || !Number.isInteger(value)) return `"${text.trim()}" is not a whole number`;
  if (value < 0 || value >= size) return `${value} is out of range: 0 to ${size - 1}`;
  return "";
}
function sliceControls(ui, s, index, facetAxis) {
  const { heatControls, indexMessage } = ui;
  heatControls.replaceChildren();
  indexMessage.textContent = "";
  if (!s || !s.has_value || !s.shape) return;
  const lead = s.shape.slice(0, -2);
  lead.forEach((size, axis) => {
    const label = h("label", "jcnb-axis", `axis ${axis} `);
    const input = (
      /** @type {HTMLInputElement} */
      h("input", "jcnb-axis-input")
    );
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
  const select2 = (
    /** @type {HTMLSelectElement} */
    h("select", "jcnb-facet-axis")
  );
  const none = (
    /** @type {HTMLOptionElement} */
    h("option", "", "none")
  );
  none.value = "-1";
  select2.append(none);
  lead.forEach((size, axis) => {
    const option = (
      /** @type {HTMLOptionElement} */
      h("option", "", `axis ${axis} (${size})`)
    );
    option.value = String(axis);
    select2.append(option);
  });
  select2.value = String(facetAxis);
  select2.title = "one small heatmap per position along this axis, side by side, on one colour scale";
  facetLabel.append(select2);
  heatControls.append(facetLabel, indexMessage);
}
function readFacetAxis(ui) {
  const select2 = ui.heatControls.querySelector(".jcnb-facet-axis");
  return select2 instanceof HTMLSelectElement ? Number(select2.value) : -1;
}
function readSliceIndex(ui) {
  const inputs = (
    /** @type {HTMLInputElement[]} */
    [...ui.heatControls.querySelectorAll(".jcnb-axis-input")]
  );
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
function axesText(shape, heat) {
  const n = shape.length;
  const part = (what, axis, shown) => {
    const size = shape[axis];
    const step = Math.ceil(size / shown);
    return `${what}: axis ${axis} (${size}${step > 1 ? `, every ${ordinal(step)} shown` : ""})`;
  };
  return `${part("rows", n - 2, heat[0])} \xB7 ${part("columns", n - 1, heat[1])}`;
}
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
    heatNote.textContent = `No heatmap: ${data.noFiniteText(selected)}.`;
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

// js/capture_range.js
var MODE_TITLES = {
  full: "every finite value: the range the table's statistics describe",
  fill: "the values other than the fill: the histogram counts the fill in a bar of its own and the heatmap marks it",
  robust: "the middle of the values: those beyond are counted at the histogram's ends and marked in the heatmap"
};
function rangeLayout() {
  const bar = h("div", "jcnb-range-bar");
  const modeLabel = h("label", "jcnb-range-mode", "range ");
  const modeSelect = (
    /** @type {HTMLSelectElement} */
    h("select")
  );
  modeLabel.append(modeSelect);
  const fillNote = h("span", "jcnb-fill-note");
  const restLabel = h("label", "jcnb-rest-stats");
  const restBox = (
    /** @type {HTMLInputElement} */
    h("input")
  );
  restBox.type = "checkbox";
  restLabel.append(restBox, document.createTextNode(" stats without fill"));
  restBox.checked = true;
  restLabel.title = "the statistics line gives the statistics of the values other than the fill, as the table does; unchecked, of every finite value";
  const rangeNote = h("span", "jcnb-range-note");
  bar.append(modeLabel, fillNote, restLabel, rangeNote);
  bar.hidden = true;
  return { bar, modeSelect, fillNote, restLabel, restBox, rangeNote };
}
function modeText(mode, range) {
  if (mode === "fill") return "without fill";
  if (mode === "robust") return `robust (${percentileText(range)})`;
  return "full";
}
function drawRangeBar(controls, data, selected, range) {
  const { bar, modeSelect, fillNote, restLabel, rangeNote } = controls;
  const s = selected >= 0 ? data.sites[selected] : null;
  const current = s !== null && range.site === selected;
  bar.hidden = !current || !s.has_stats || data.stat(selected, "count") === 0 && !range.note;
  if (bar.hidden) {
    delete bar.dataset.mode;
    delete bar.dataset.fill;
    return;
  }
  modeSelect.replaceChildren(
    ...range.modes.map((mode) => {
      const option = (
        /** @type {HTMLOptionElement} */
        h("option", "", modeText(mode, range))
      );
      option.value = mode;
      option.title = MODE_TITLES[mode] || "";
      return option;
    })
  );
  modeSelect.value = range.mode;
  modeSelect.disabled = range.modes.length < 2;
  modeSelect.title = range.modes.length < 2 ? range.note || "this site offers only its full range" : MODE_TITLES[range.mode] || "";
  const fills = range.fills.map(fillText).join("; ");
  fillNote.textContent = !fills ? "" : range.mode === "full" ? `${fills} (drawn with the rest)` : `${fills} excluded`;
  fillNote.title = fills ? "a value filling a share of the array far from the rest (or near the float type's limit), as masks of attention logits do" : "";
  restLabel.hidden = !(range.rest && range.rest.count);
  rangeNote.textContent = range.note;
  bar.dataset.mode = range.mode;
  if (range.fills.length) bar.dataset.fill = range.fills.map((f) => `${f.value}:${f.count}`).join(" ");
  else delete bar.dataset.fill;
}

// js/capture_layout.js
function captureLayout() {
  const root = h("div", "jcnb-root jcnb-themed");
  const tooltip = new Tooltip(root);
  const header = h("div", "jcnb-header");
  const title = h("span", "jcnb-title");
  const filter = siteFilter("jcnb-filter");
  header.append(title, filter);
  const flag = (
    /** @type {HTMLButtonElement} */
    h("button", "jcnb-flag")
  );
  flag.type = "button";
  const table = tableLayout();
  const detail = h("div", "jcnb-detail");
  const hint = h("div", "jcnb-hint", "Select a row to see its histogram and a slice of its values.");
  const body = h("div", "jcnb-detail-body");
  const detailTitle = h("div", "jcnb-detail-title");
  const statsLine = h("div", "jcnb-stats-line");
  const histPanel = h("div", "jcnb-hist-box");
  const logLabel = h("label", "jcnb-log");
  const logBox = (
    /** @type {HTMLInputElement} */
    h("input")
  );
  logBox.type = "checkbox";
  logLabel.append(logBox, document.createTextNode(" log count scale"));
  const histCanvas = (
    /** @type {HTMLCanvasElement} */
    h("canvas", "jcnb-hist")
  );
  const histKey = h("div", "jcnb-key jcnb-nonfinite-key");
  const histEmpty = h("div", "jcnb-empty-values");
  histPanel.append(logLabel, histCanvas, histKey, histEmpty);
  const heatPanel = h("div", "jcnb-heat-box");
  const heatControls = h("div", "jcnb-heat-controls");
  const indexMessage = h("span", "jcnb-index-message");
  indexMessage.setAttribute("role", "alert");
  const divergingLabel = h("label", "jcnb-diverging");
  const divergingBox = (
    /** @type {HTMLInputElement} */
    h("input")
  );
  divergingBox.type = "checkbox";
  divergingLabel.append(divergingBox, document.createTextNode(" centre colours at 0 (diverging)"));
  divergingLabel.title = "blue below zero, red above, white at zero; otherwise a sequential scale over the values' range";
  const heatStatus = h("div", "jcnb-heat-status");
  const spinner = h("span", "jcnb-spinner");
  spinner.setAttribute("aria-label", "fetching the slice from the kernel");
  const axesLine = h("div", "jcnb-heat-axes");
  const figure = h("div", "jcnb-heat-figure");
  const heatCanvas = (
    /** @type {HTMLCanvasElement} */
    h("canvas", "jcnb-heat")
  );
  const barCanvas = (
    /** @type {HTMLCanvasElement} */
    h("canvas", "jcnb-colour-bar")
  );
  figure.append(heatCanvas, barCanvas);
  const heatKey = h("div", "jcnb-key jcnb-heat-key");
  const heatNote = h("div", "jcnb-heat-note");
  heatPanel.append(heatControls, divergingLabel, heatStatus, axesLine, figure, heatKey, heatNote);
  body.append(detailTitle, statsLine, histPanel, heatPanel);
  detail.append(hint, body);
  root.append(header, flag, table.scroller, detail);
  return {
    root,
    tooltip,
    title,
    filter,
    flag,
    table,
    detail,
    hint,
    body,
    detailTitle,
    statsLine,
    logLabel,
    logBox,
    histCanvas,
    histKey,
    histEmpty,
    heatControls,
    indexMessage,
    divergingLabel,
    divergingBox,
    heatStatus,
    spinner,
    axesLine,
    figure,
    heatCanvas,
    barCanvas,
    heatKey,
    heatNote
  };
}
function showLoading(ui, loading) {
  ui.root.dataset.heatmap = loading ? "loading" : "ready";
  ui.figure.classList.toggle("jcnb-stale", loading);
  ui.heatStatus.replaceChildren();
  if (loading) ui.heatStatus.append(ui.spinner, document.createTextNode(" fetching the slice from the kernel\u2026"));
}

// js/capture_view.js
function captureState(model) {
  return {
    data: new CaptureData(model),
    /** The table's columns, from the schema (load sets them). @type {Column[]} */
    columns: [],
    /** @type {number[]} */
    order: [],
    sortKey: "",
    sortDir: 1,
    selected: -1,
    cursor: -1,
    // the site the arrow keys are on
    pending: 0,
    // the heatmap request awaiting its answer, 0 if none
    /** Where the last histogram put its parts, for the hover read-out. @type {HistLayout | null} */
    histLayout: null,
    rowsDrawn: ""
    // which rows are built, as rowsInView says
  };
}
function recompute(view) {
  const { ui, state } = view;
  const { data } = state;
  state.order = rowOrder(data, siteMatcher(ui.filter), state.sortKey, state.sortDir);
  const { order } = state;
  ui.table.sheet.style.height = `${(order.length + 1) * ROW_HEIGHT}px`;
  ui.root.dataset.visibleRows = String(order.length);
  const n = data.sites.length;
  ui.title.textContent = `${n} sowed value${n === 1 ? "" : "s"}` + (order.length < n ? `, ${order.length} shown` : "");
  if (state.selected >= 0 && !order.includes(state.selected)) clearSelection(view);
  if (!order.includes(state.cursor)) setCursor(view, order.length ? order[0] : -1);
  drawTableRows(view, true);
}
function drawTableRows(view, force = false) {
  const { ui, state } = view;
  const key = rowsInView(ui.table.scroller, state.order.length);
  if (!force && key === state.rowsDrawn) return;
  state.rowsDrawn = key;
  drawRows(ui.table, state.data, state, themeOf(ui.root).series);
}
function setCursor(view, i) {
  view.state.cursor = i;
  if (i >= 0) view.ui.root.dataset.cursor = String(i);
  else delete view.ui.root.dataset.cursor;
}
function drawSelectedHistogram(view) {
  const { model, ui, state } = view;
  state.histLayout = drawHistogram(ui, state.data, state.selected, rangeOf(model));
}
function drawSelectedHeatmap(view) {
  const { model, ui, frame, state } = view;
  drawHeatmap(ui, frame, state.data, state.selected, heatmapOf(model), rangeOf(model));
}
function drawSelectedRange(view) {
  const { model, ui, rangeControls, state } = view;
  if (state.selected < 0) return;
  const range = rangeOf(model);
  drawRangeBar(rangeControls, state.data, state.selected, range);
  drawStatsLine(ui.statsLine, state.data, state.selected, range, rangeControls.restBox.checked);
  drawSelectedHistogram(view);
}
function applySliceIndex(view) {
  const { model, ui } = view;
  const next = readSliceIndex(ui);
  if (next === null) return;
  if (JSON.stringify(next) === JSON.stringify(model.get("_slice_index") || [])) return;
  model.set("_slice_index", next);
  requestHeatmap(view);
}
function requestHeatmap(view) {
  const { model, ui, state } = view;
  state.pending = (model.get("_heatmap_request") || 0) + 1;
  model.set("_heatmap_diverging", ui.divergingBox.checked);
  model.set("_heatmap_request", state.pending);
  model.save_changes();
  showLoading(ui, true);
}
function onAnswer(view) {
  const { model, ui, state } = view;
  if (state.pending && model.get("_heatmap_answered") >= state.pending) {
    state.pending = 0;
    showLoading(ui, false);
  }
  drawSelectedRange(view);
  drawSelectedHeatmap(view);
}
function select(view, i) {
  const { model, ui, state } = view;
  state.selected = i;
  setCursor(view, i);
  const s = state.data.sites[i];
  ui.detailTitle.textContent = `${shownName(s.label)} [call ${s.call}] ${shapeText(s)} ${s.dtype}` + (s.note ? ` (${s.note})` : "");
  ui.detailTitle.dir = "auto";
  ui.detailTitle.title = state.data.nameTitle(i);
  ui.root.dataset.selected = String(i);
  ui.hint.hidden = true;
  ui.body.hidden = false;
  drawTableRows(view, true);
  model.set("_slice_index", []);
  model.set("_range_mode", "auto");
  model.set("_facet_axis", -1);
  model.set("_selected", i);
  drawSelectedRange(view);
  sliceControls(ui, s, model.get("_slice_index") || [], -1);
  requestHeatmap(view);
  drawSelectedHeatmap(view);
}
function clearSelection(view) {
  const { model, ui, state } = view;
  state.selected = -1;
  delete ui.root.dataset.selected;
  ui.hint.hidden = false;
  ui.body.hidden = true;
  state.histLayout = null;
  state.pending = 0;
  showLoading(ui, false);
  model.set("_selected", -1);
  model.save_changes();
}
function load(view) {
  const { model, ui, state } = view;
  const data = new CaptureData(model);
  state.data = data;
  state.columns = tableColumns(data);
  applyColours(ui.root, data.schema);
  const { flag } = ui;
  const first = model.get("_first_nonfinite");
  if (first >= 0) {
    const s = data.sites[first];
    flag.textContent = `First ${data.schema.nonfiniteLabel}: ${shownName(s.label)} [call ${s.call}] (${countText(data.nonfinite(first))} values). Click to inspect.`;
    flag.style.display = "block";
    flag.dataset.site = String(first);
  } else {
    flag.style.display = "none";
  }
  drawHead(ui.table, state.columns, state.sortKey, state.sortDir);
  recompute(view);
}
function redraw(view) {
  drawTableRows(view, true);
  if (view.state.selected >= 0) {
    drawSelectedRange(view);
    drawSelectedHeatmap(view);
  }
}
function onTableKey(view, event) {
  const { ui, state } = view;
  const { order } = state;
  if (event.target !== ui.table.scroller || !order.length) return;
  const k = rowAfterKey(event.key, Math.max(0, order.indexOf(state.cursor)), order.length);
  if (k !== null) {
    setCursor(view, order[k]);
    scrollToRow(ui.table.scroller, k);
    drawTableRows(view, true);
  } else if (event.key === "Enter" || event.key === " ") {
    if (state.cursor >= 0) select(view, state.cursor);
  } else return;
  event.preventDefault();
  event.stopPropagation();
}
function onTableClick(view, event) {
  const { ui, state } = view;
  const target = event.target instanceof Element ? event.target : null;
  const sortHead = target?.closest(".jcnb-head .jcnb-sortable");
  if (sortHead instanceof HTMLElement) {
    Object.assign(state, sortAfterClick(state, sortHead.dataset.key || ""));
    drawHead(ui.table, state.columns, state.sortKey, state.sortDir);
    recompute(view);
    return;
  }
  const row = target?.closest(".jcnb-body-row");
  if (row instanceof HTMLElement) select(view, Number(row.dataset.site));
}
function onIndexKey(view, event) {
  if (!(event.target instanceof HTMLInputElement)) return;
  event.stopPropagation();
  if (event.key === "Enter") {
    event.preventDefault();
    applySliceIndex(view);
  }
}
function onIndexChange(view, event) {
  const { model, ui, state } = view;
  if (!(event.target instanceof HTMLSelectElement)) {
    applySliceIndex(view);
    return;
  }
  const axis = readFacetAxis(ui);
  sliceControls(ui, state.data.sites[state.selected], model.get("_slice_index") || [], axis);
  model.set("_facet_axis", axis);
  requestHeatmap(view);
}
function listen(view) {
  const { model, ui, rangeControls, state } = view;
  const { table } = ui;
  const handlers = [
    [table.scroller, "scroll", () => drawTableRows(view)],
    [table.scroller, "click", (event) => onTableClick(view, event)],
    [table.scroller, "keydown", (event) => onTableKey(view, event)],
    [ui.heatControls, "keydown", (event) => onIndexKey(view, event)],
    [ui.heatControls, "change", (event) => onIndexChange(view, event)],
    [
      ui.divergingBox,
      "change",
      () => {
        drawSelectedHistogram(view);
        requestHeatmap(view);
      }
    ],
    [
      rangeControls.modeSelect,
      "change",
      () => {
        model.set("_range_mode", rangeControls.modeSelect.value);
        requestHeatmap(view);
      }
    ],
    [rangeControls.restBox, "change", () => drawSelectedRange(view)],
    [ui.filter, "input", () => recompute(view)],
    [ui.logBox, "change", () => drawSelectedHistogram(view)],
    [ui.flag, "click", () => select(view, Number(ui.flag.dataset.site))]
  ];
  for (const [target, type, handler] of handlers) target.addEventListener(type, handler);
  hoverReadOut(ui.histCanvas, ui.tooltip, (px, py) => histReadOut(state.histLayout, px, py));
  hoverReadOut(ui.heatCanvas, ui.tooltip, (px, py) => heatReadOut(ui.heatCanvas, state.data, state.selected, heatmapOf(model), px, py));
  let themeFrame = 0;
  const stopTheme = onThemeChange(() => {
    cancelAnimationFrame(themeFrame);
    themeFrame = requestAnimationFrame(() => redraw(view));
  });
  let lastWidth = 0;
  const resizing = new ResizeObserver(() => {
    if (ui.detail.clientWidth === lastWidth) return;
    lastWidth = ui.detail.clientWidth;
    if (state.selected >= 0) drawSelectedHistogram(view);
  });
  resizing.observe(ui.detail);
  const changes = [
    ["change:_heatmap_answered", () => onAnswer(view)],
    ["change:_heatmap_site", () => drawSelectedHeatmap(view)],
    ["change:_sites", () => load(view)]
  ];
  for (const [name, handler] of changes) model.on(name, handler);
  return () => {
    stopTheme();
    cancelAnimationFrame(themeFrame);
    resizing.disconnect();
    ui.tooltip.node.remove();
    for (const [name, handler] of changes) model.off(name, handler);
  };
}
function render({ model, el }) {
  const ui = captureLayout();
  el.appendChild(ui.root);
  const rangeControls = rangeLayout();
  ui.statsLine.after(rangeControls.bar);
  const view = { model, ui, rangeControls, frame: heatFrame(ui), state: captureState(model) };
  const stop = listen(view);
  ui.divergingBox.checked = Boolean(model.get("_heatmap_diverging"));
  ui.body.hidden = true;
  showLoading(ui, false);
  load(view);
  ui.root.dataset.ready = "true";
  el.classList.add("jcnb-ready");
  return stop;
}
var capture_view_default = { render };
export {
  capture_view_default as default
};
