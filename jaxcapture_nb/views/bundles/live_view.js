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
function faded(colour, alpha) {
  return `color-mix(in srgb, ${colour} ${Math.round(alpha * 100)}%, transparent)`;
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
function logScale(d0, d1, r0, r1) {
  const inner = linearScale(Math.log10(d0), Math.log10(d1), r0, r1);
  const f = (v) => inner(Math.log10(v));
  f.invert = (p) => 10 ** inner.invert(p);
  f.ticks = (count = 5) => {
    const ticks = [];
    for (let e = Math.floor(Math.log10(d0)); e <= Math.ceil(Math.log10(d1)); e++) {
      for (const m of [1, 2, 5]) {
        const v = m * 10 ** e;
        if (v >= d0 * (1 - 1e-9) && v <= d1 * (1 + 1e-9)) ticks.push(Number(v.toPrecision(6)));
      }
    }
    const decades = ticks.filter((v) => Math.abs(Math.log10(v) - Math.round(Math.log10(v))) < 1e-9);
    const every = Math.ceil(decades.length / Math.max(1, count));
    if (decades.length >= 2) return decades.filter((_, i) => (decades.length - 1 - i) % every === 0);
    return ticks.length ? ticks : [d0, d1];
  };
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
var rgbText = (rgb) => `rgb(${rgb.join(",")})`;
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
function counted(n, noun) {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}
function setName(el, text) {
  el.textContent = shownName(text);
  el.dir = "auto";
  return el;
}

// js/live_state.js
var Series = class {
  constructor() {
    this.steps = [];
    this.stats = [];
    this.hists = [];
    this.walls = [];
  }
  /** Forgets the last `n` rows, which the kernel has rewritten. @param {number} n */
  drop(n) {
    if (!n) return;
    this.steps.length -= n;
    this.stats.length -= n;
    this.hists.length = Math.max(0, this.hists.length - n);
    this.walls.length = Math.max(0, this.walls.length - n);
  }
};
function liveRows() {
  return { sites: [], scalars: [], lastSeq: -1, stale: false };
}
function liveState(rows) {
  const layers = { heat: true, zeros: true, bands: true, median: true, extremes: false };
  return { rows, selected: -1, pinnedStep: null, view: "heat", layers, hiddenRuns: /* @__PURE__ */ new Set(), runMatches: () => true, stepRange: null, expanded: /* @__PURE__ */ new Set(), silentFor: 0, kernelGone: false };
}
function groupsOf(entries2) {
  const groups = [];
  const open = /* @__PURE__ */ new Map();
  entries2.forEach((entry, i) => {
    const key = `${entry.kind ?? ""}\0${entry.label}`;
    let group = open.get(key);
    if (!group || group.members.some((m) => entries2[m].run === entry.run)) {
      group = { label: entry.label, kind: entry.kind ?? "", members: [] };
      open.set(key, group);
      groups.push(group);
    }
    group.members.push(i);
  });
  return groups;
}
function runsOf(names, schema, state, theme) {
  const palette = schema.runColours;
  const several = names.length > 1;
  return {
    several,
    names: several ? names : [""],
    colour: (run) => several ? palette[run % palette.length] : theme.series,
    shown: (run) => !state.hiddenRuns.has(run) && (!several || state.runMatches(names[run])),
    /** Whether the run filter lets run `run` through. @param {number} run */
    matched: (run) => !several || state.runMatches(names[run])
  };
}
function shownView(view, runs) {
  return view === "bands" && !runs.several ? "heat" : view;
}
function shownMembers(group, entries2, rows, runs) {
  return group.members.map((index) => {
    const run = entries2[index].run ?? 0;
    return { index, run, s: rows[index] || new Series(), colour: runs.colour(run), name: runs.names[run] ?? "" };
  }).filter((m) => runs.shown(m.run));
}
function windowed(s, range) {
  if (!range) return s;
  const out = new Series();
  s.steps.forEach((step, k) => {
    if (step < range[0] || step > range[1]) return;
    out.steps.push(step);
    out.stats.push(s.stats[k]);
    if (s.hists[k]) out.hists.push(s.hists[k]);
    if (s.walls.length > k) out.walls.push(s.walls[k]);
  });
  return out;
}
function recordedByAny(group, rows) {
  return group.members.some((index) => rows[index] && rows[index].steps.length > 0);
}
function unionSteps(members) {
  const steps = /* @__PURE__ */ new Set();
  for (const m of members) for (const step of m.s.steps) steps.add(step);
  return [...steps].sort((a, b) => a - b);
}
function shownStep(state, steps) {
  if (!steps.length) return null;
  return state.pinnedStep == null ? steps[steps.length - 1] : steps[nearestIndex(steps, state.pinnedStep)];
}
function statColumns(columns, schema) {
  const col = Object.fromEntries(columns.map((name, i) => [name, i]));
  const pcol = (q) => col[`p${q}`];
  const nonfiniteOf = (r) => schema.nonfinite.reduce((sum, n) => sum + r[col[n.key]], 0);
  const statOf = (r, name) => name === "nonfinite" ? nonfiniteOf(r) : r[col[name]];
  const labelOf = (name) => name === "nonfinite" ? schema.nonfiniteLabel : schema.label(name);
  const textOf = (name, x) => name === "nonfinite" ? statText("count", x) : schema.text(name, x);
  return {
    col,
    schema,
    /** The schema's percentiles that the rows hold. */
    percentiles: schema.percentiles.filter((q) => pcol(q) !== void 0),
    /**
     * The statistics a reader is shown, in the schema's order: those the rows
     * hold that the tables give a column, and the NaN/Inf counts (not the
     * histogram's range edges).
     */
    held: schema.stats.filter((s) => s.key in col && (s.column || schema.nonfinite.some((n) => n.key === s.key))),
    /** The statistics a card traces over steps: the schema's compact ones the rows hold, then NaN/Inf. */
    traced: [...schema.stats.filter((s) => s.compact && s.key in col).map((s) => s.key), "nonfinite"],
    pcol,
    nonfiniteOf,
    statOf,
    labelOf,
    textOf
  };
}
function applyUpdate(rows, update, bins, width) {
  const seq = update.seq;
  if (seq === rows.lastSeq) return;
  const base = update.base;
  if (!base && seq !== rows.lastSeq + 1) rows.stale = true;
  rows.lastSeq = seq;
  if (base) {
    rows.sites.length = 0;
    rows.scalars.length = 0;
    rows.stale = false;
  }
  if (rows.stale) return;
  const { sites, scalars } = rows;
  const steps = new Float64Array(bytesOf(update.steps));
  const stats = new Float32Array(bytesOf(update.stats));
  const hists = new Int32Array(bytesOf(update.hists));
  const index = new Int32Array(bytesOf(update.index));
  let row = 0;
  for (let k = 0; k < index.length; k += 3) {
    const site = index[k];
    const n = index[k + 2];
    while (sites.length <= site) sites.push(new Series());
    const s = sites[site];
    s.drop(index[k + 1]);
    for (let r = row; r < row + n; r++) {
      s.steps.push(steps[r]);
      s.stats.push(stats.subarray(r * width, (r + 1) * width));
      s.hists.push(hists.subarray(r * bins, (r + 1) * bins));
    }
    row += n;
  }
  const triples = new Float64Array(bytesOf(update.scalar_rows));
  const sindex = new Int32Array(bytesOf(update.scalar_index));
  row = 0;
  for (let k = 0; k < sindex.length; k += 3) {
    while (scalars.length <= sindex[k]) scalars.push(new Series());
    const s = scalars[sindex[k]];
    s.drop(sindex[k + 1]);
    for (let r = row; r < row + sindex[k + 2]; r++) {
      s.steps.push(triples[3 * r]);
      s.stats.push(new Float32Array([triples[3 * r + 1]]));
      s.walls.push(triples[3 * r + 2]);
    }
    row += sindex[k + 2];
  }
}
var hasRows = (rows) => rows.sites.some((s) => s.steps.length) || rows.scalars.some((s) => s.steps.length);
function firstNonfinite(rows, progress, stats) {
  const p = progress || {};
  const site = p.nonfinite_site ?? -1;
  const scalar = p.nonfinite_scalar ?? -1;
  if (!p.nonfinite || site < 0 && scalar < 0) return null;
  const step = p.nonfinite.step;
  const s = site >= 0 ? rows.sites[site] : rows.scalars[scalar];
  if (!s || !s.steps.length) return { site, scalar, step, row: -1, lastFinite: null };
  let row = s.steps.indexOf(step);
  if (row < 0) row = s.steps.findIndex((v) => v >= step);
  const finite = site >= 0 ? (r) => stats.nonfiniteOf(r) === 0 : (r) => Number.isFinite(r[0]);
  let lastFinite = null;
  for (let k = 0; k < s.steps.length && s.steps[k] < step; k++) if (finite(s.stats[k])) lastFinite = s.steps[k];
  return { site, scalar, step, row, lastFinite };
}
function nearestIndex(steps, step) {
  let best = 0;
  for (let k = 1; k < steps.length; k++) if (Math.abs(steps[k] - step) < Math.abs(steps[best] - step)) best = k;
  return best;
}

// js/live_export.js
function siteTable(members, stats) {
  const keys = Object.keys(stats.col);
  const rows = members.flatMap((m) => m.s.steps.map((step, k) => [m.name, step, ...keys.map((key) => m.s.stats[k][stats.col[key]])]));
  return { columns: ["run", "step", ...keys.map((key) => isEstimated(key) ? `${key} (estimated)` : key)], rows };
}
function isEstimated(key) {
  return /^p\d+$/.test(key) && key !== "p0" && key !== "p100";
}
var ESTIMATE_NOTE = "Columns marked (estimated) are percentiles read from each step's histogram: the values of a bin taken to lie evenly across it, and exact zeros at 0. p0 and p100 are the exact minimum and maximum.";
function scalarTable(members) {
  const rows = members.flatMap((m) => m.s.steps.map((step, k) => [m.name, step, m.s.stats[k][0]]));
  return { columns: ["run", "step", "value"], rows };
}
function jsonText(table, name, kind) {
  const value = (x) => typeof x === "number" && !Number.isFinite(x) ? numberField(x) : x;
  const records = table.rows.map((row) => Object.fromEntries(row.map((x, i) => [table.columns[i], value(x)])));
  const noted = table.columns.some((column) => column.endsWith(" (estimated)"));
  return JSON.stringify({ name, kind, ...noted ? { note: ESTIMATE_NOTE } : {}, rows: records }, null, 1);
}
function fileName(name, ext) {
  return `${name.replace(/[^\w.-]+/g, "_").replace(/^_+|_+$/g, "") || "data"}.${ext}`;
}
function cardTools() {
  const tools = h("span", "jcnb-live-card-tools");
  const expand = h("button", "jcnb-live-expand", "\u2922");
  expand.setAttribute("aria-pressed", "false");
  tools.append(expand, exportButtons());
  return tools;
}
function showExpanded(card, expanded) {
  card.classList.toggle("jcnb-expanded", expanded);
  const button = (
    /** @type {HTMLElement} */
    card.querySelector(".jcnb-live-expand")
  );
  button.setAttribute("aria-pressed", String(expanded));
  button.title = expanded ? "back to the card's own size" : "widen this card to the whole row";
}
function exportButtons() {
  const box = h("span", "jcnb-live-export");
  for (const format of ["CSV", "JSON"]) {
    const button = h("button", "jcnb-live-export-button", format);
    button.dataset.format = format.toLowerCase();
    button.title = `download this card's numbers as ${format}`;
    box.append(button);
  }
  return box;
}
function exportTable(button, table, name, kind) {
  if (button.dataset.format === "csv") download(fileName(name, "csv"), csvText(table), "text/csv");
  else download(fileName(name, "json"), jsonText(table, name, kind), "application/json");
}

// js/live_histograms.js
var CARD_W = 320;
var OVER_H = 160;
var MAX_LINES = 40;
function columnScale(steps, r0, r1) {
  const n = steps.length;
  const gap = n > 1 ? (steps[n - 1] - steps[0]) / (n - 1) : 1;
  return linearScale(steps[0] - gap / 2, steps[n - 1] + gap / 2, r0, r1);
}
var STEP_AT = /* @__PURE__ */ new WeakMap();
function lineStepScale(steps, r0, r1) {
  const n = steps.length;
  return n > 1 ? linearScale(steps[0], steps[n - 1], r0, r1) : linearScale(steps[0] - 1, steps[0] + 1, r0, r1);
}
function lineRows(n, extra) {
  const picked = /* @__PURE__ */ new Set();
  if (n <= MAX_LINES) for (let k = 0; k < n; k++) picked.add(k);
  else for (let j = 0; j < MAX_LINES; j++) picked.add(Math.round(j * (n - 1) / (MAX_LINES - 1)));
  for (const k of extra) if (k >= 0 && k < n) picked.add(k);
  return [...picked].sort((a, b) => a - b);
}
var countTicks = (y) => {
  const ticks = y.ticks(4);
  return ticks.includes(10) ? ticks.filter((v) => v !== 1) : ticks;
};
var tickList = (ticks, text = tickText) => ticks.map(text).join(" ");
function valueRange(s, stats) {
  const { col } = stats;
  let lo = Infinity;
  let hi = -Infinity;
  s.stats.forEach((r, k) => {
    if (!drawable(s, stats, k)) return;
    lo = Math.min(lo, r[col.lo]);
    hi = Math.max(hi, r[col.hi]);
  });
  if (!(hi >= lo)) return null;
  return hi > lo ? [lo, hi] : [lo - 0.5, hi + 0.5];
}
function drawable(s, stats, k) {
  return Number.isFinite(s.stats[k][stats.col.lo]) && s.hists[k].some((c) => c > 0);
}
function binRange(s, stats, k, i) {
  const a = s.stats[k][stats.col.lo];
  const width = (s.stats[k][stats.col.hi] - a) / s.hists[k].length;
  return [a + i * width, a + (i + 1) * width];
}
function binAt(s, stats, k, v) {
  const a = s.stats[k][stats.col.lo];
  const b = s.stats[k][stats.col.hi];
  if (!(v >= a && v <= b) || !(b > a)) return -1;
  return Math.min(s.hists[k].length - 1, Math.floor((v - a) / (b - a) * s.hists[k].length));
}
function binText(s, stats, k, i) {
  const [from, to] = binRange(s, stats, k, i);
  return `step ${s.steps[k]}
values [${fmt(from)}, ${fmt(to)})
count ${statText("count", s.hists[k][i])}`;
}
function percentileText(s, stats, k) {
  const r = s.stats[k];
  return stats.percentiles.map((q) => `${ordinal(q)} ${fmt(r[stats.pcol(q)])}`).join("  ");
}
function stepLine(ctx, box, px, colour, dashed) {
  if (!(px >= box.x - 1 && px <= box.x + box.w + 1)) return;
  ctx.save();
  ctx.strokeStyle = colour;
  ctx.lineWidth = dashed ? 1.5 : 1;
  if (dashed) ctx.setLineDash([3, 2]);
  ctx.beginPath();
  ctx.moveTo(Math.round(px) + 0.5, box.y);
  ctx.lineTo(Math.round(px) + 0.5, box.y + box.h);
  ctx.stroke();
  ctx.restore();
}
function nonfiniteText(s, stats, k) {
  const r = s.stats[k];
  const counts = stats.schema.nonfinite.filter((n) => r[stats.col[n.key]] > 0).map((n) => `${statText("count", r[stats.col[n.key]])} ${n.label}`);
  return `no finite value${counts.length ? `: ${counts.join(", ")}` : ""}`;
}
function markNonfinite(ctx, s, stats, box, columnOf, theme) {
  const marked = /* @__PURE__ */ new Set();
  ctx.save();
  ctx.beginPath();
  ctx.rect(box.x, box.y, box.w, box.h);
  ctx.clip();
  s.steps.forEach((_, k) => {
    if (drawable(s, stats, k) || stats.nonfiniteOf(s.stats[k]) === 0) return;
    marked.add(k);
    const [left, right] = columnOf(k);
    const width = Math.max(right - left, 2);
    ctx.fillStyle = faded(theme.bad, 0.16);
    ctx.fillRect(left, box.y, width, box.h);
    ctx.fillStyle = theme.bad;
    ctx.fillRect(left, box.y, width, 3);
  });
  ctx.restore();
  return marked;
}
function histogramPath(s, stats, k, x, height, base) {
  const path = new Path2D();
  const hist = s.hists[k];
  const [a] = binRange(s, stats, k, 0);
  const [, b] = binRange(s, stats, k, hist.length - 1);
  path.moveTo(x(a), base);
  for (let i = 0; i < hist.length; i++) {
    const [from, to] = binRange(s, stats, k, i);
    path.lineTo(x((from + to) / 2), height(hist[i]));
  }
  path.lineTo(x(b), base);
  return path;
}

// js/live_heat.js
function drawHeat(ctx, s, stats, theme, marks, log, frame) {
  const box = plotBox(frame.w, frame.h, { left: 44 });
  const values = valueRange(s, stats);
  const n = s.steps.length;
  const axis = frame.stepAxis;
  const { layers } = frame;
  const x = columnScale(axis, box.x, box.x + box.w);
  const gap = n > 1 ? (s.steps[n - 1] - s.steps[0]) / (n - 1) : 1;
  const columnOf = (k) => [x(k ? (s.steps[k - 1] + s.steps[k]) / 2 : s.steps[0] - gap / 2), x(k < n - 1 ? (s.steps[k] + s.steps[k + 1]) / 2 : s.steps[n - 1] + gap / 2)];
  const y = linearScale(...values || [0, 1], box.y + box.h, box.y);
  const xTicks = stepTicks(axis[0], axis[axis.length - 1], frame.w > 400 ? 7 : 5);
  const yTicks = y.ticks(frame.h < OVER_H ? 3 : 5);
  drawAxes(ctx, box, { theme, x, xTicks, y, yTicks });
  if (layers.heat) drawColumns(ctx, s, stats, { y, columnOf, colour: theme.series, log, zeros: layers.zeros ? theme.fg : null });
  const fill = !layers.heat && !frame.several;
  const look = { bands: layers.bands ? stats.schema.bands : [], fill, median: layers.median, extremes: layers.extremes };
  ctx.save();
  ctx.beginPath();
  ctx.rect(box.x, box.y - 1, box.w, box.h + 2);
  ctx.clip();
  drawBands(ctx, s, stats, x, y, theme, look);
  ctx.restore();
  const unfinite = markNonfinite(ctx, s, stats, box, columnOf, theme);
  if (marks.shown != null) stepLine(ctx, box, x(marks.shown), theme.accent, false);
  if (marks.marked != null) stepLine(ctx, box, x(marks.marked), theme.bad, true);
  return {
    xTicks: tickList(xTicks),
    yTicks: tickList(yTicks),
    unfinite: unfinite.size,
    stepAt: (px) => x.invert(px),
    readOut: (px, py) => {
      if (px < box.x || px > box.x + box.w || py < box.y || py > box.y + box.h) return null;
      if (!n) return null;
      const k = nearestIndex(s.steps, x.invert(px));
      if (unfinite.has(k)) return `step ${s.steps[k]}
${nonfiniteText(s, stats, k)}`;
      const i = binAt(s, stats, k, y.invert(py));
      const bin = i >= 0 ? binText(s, stats, k, i) : `step ${s.steps[k]}
no values here`;
      return `${bin}
${percentileText(s, stats, k)}`;
    }
  };
}
function drawColumns(ctx, s, stats, look) {
  const { y, columnOf, log } = look;
  let zeroMarks = 0;
  for (let k = 0; k < s.steps.length; k++) {
    const zeros = zerosOf(s, stats, k);
    const hist = zeros.count ? s.hists[k].map((c, i) => i === zeros.bin ? c - zeros.count : c) : s.hists[k];
    const shade = countScale(Math.max(1, ...hist), 0, 1, log);
    const [left, right] = columnOf(k);
    ctx.fillStyle = look.colour;
    for (let i = 0; i < hist.length; i++) {
      if (!hist[i]) continue;
      const [from, to] = binRange(s, stats, k, i);
      const y0 = y(to);
      const share = shade(hist[i]);
      ctx.globalAlpha = 0.08 + 0.92 * (log ? share : Math.sqrt(share));
      ctx.fillRect(left, y0, Math.max(right - left, 1), Math.max(y(from) - y0, 1));
    }
    if (zeros.count && look.zeros) {
      ctx.fillStyle = look.zeros;
      ctx.globalAlpha = 0.3 + 0.7 * zeros.share;
      ctx.fillRect(left, y(0) - 1, Math.max(right - left, 1), 2);
      zeroMarks++;
    }
  }
  ctx.globalAlpha = 1;
  ctx.canvas.dataset.zeroMarks = String(zeroMarks);
}
function zerosOf(s, stats, k) {
  const r = s.stats[k];
  const hist = s.hists[k];
  const { col } = stats;
  const finite = hist.reduce((a, b) => a + b, 0);
  if (!(r[col.zero_pct] > 0) || !finite) return { count: 0, share: 0, bin: -1 };
  const size = finite + (r[col.nan] || 0) + (r[col.posinf] || 0) + (r[col.neginf] || 0);
  const [lo, hi] = [r[col.lo], r[col.hi]];
  const bin = Math.min(hist.length - 1, Math.max(0, Math.floor(-lo / ((hi - lo) / hist.length))));
  const count = Math.min(hist[bin], Math.round(r[col.zero_pct] / 100 * size));
  return { count, share: count / finite, bin };
}
function pointRuns(s, x, cs) {
  const runs = [];
  let run = [];
  let sum = null;
  let rows = 0;
  let pixel = NaN;
  const close = () => {
    if (sum) run.push(sum.map((v) => v / rows));
    sum = null;
  };
  const end = () => {
    close();
    if (run.length === 1) run = [[run[0][0] - 3, ...run[0].slice(1)], [run[0][0] + 3, ...run[0].slice(1)]];
    if (run.length) runs.push(run);
    run = [];
  };
  for (let k = 0; k < s.steps.length; k++) {
    const r = s.stats[k];
    if (!cs.every((c) => Number.isFinite(r[c]))) {
      end();
      continue;
    }
    const px = x(s.steps[k]);
    if (Math.floor(px) !== pixel) close();
    pixel = Math.floor(px);
    if (!sum) [sum, rows] = [new Array(cs.length + 1).fill(0), 0];
    sum[0] += px;
    cs.forEach((c, j) => (
      /** @type {number[]} */
      sum[j + 1] += r[c]
    ));
    rows += 1;
  }
  end();
  return runs;
}
function drawBands(ctx, s, stats, x, y, theme, look) {
  const { pcol, percentiles, schema } = stats;
  const line = (c, colour, width, dash, halo) => {
    if (c === void 0) return;
    ctx.save();
    ctx.lineJoin = "round";
    ctx.setLineDash(dash);
    for (const points of pointRuns(s, x, [c])) {
      const path = new Path2D();
      for (const [px, v] of points) path.lineTo(px, y(v));
      if (halo) {
        ctx.strokeStyle = faded(theme.bg, 0.6);
        ctx.lineWidth = width + 2;
        ctx.stroke(path);
      }
      ctx.strokeStyle = colour;
      ctx.lineWidth = width;
      ctx.stroke(path);
    }
    ctx.restore();
  };
  look.bands.forEach(([low, high, alpha], j) => {
    const [cl, ch] = [pcol(low), pcol(high)];
    if (cl === void 0 || ch === void 0) return;
    if (!look.fill) {
      const dash = j === 0 && look.bands.length > 1 ? [4, 3] : [];
      line(cl, theme.band, 1, dash, false);
      line(ch, theme.band, 1, dash, false);
      return;
    }
    ctx.fillStyle = faded(theme.band, alpha);
    for (const points of pointRuns(s, x, [cl, ch])) {
      ctx.beginPath();
      for (const [px, , hi] of points) ctx.lineTo(px, y(hi));
      for (const [px, lo] of [...points].reverse()) ctx.lineTo(px, y(lo));
      ctx.closePath();
      ctx.fill();
    }
    if (look.outline) {
      line(cl, theme.band, 1, [], false);
      line(ch, theme.band, 1, [], false);
    }
  });
  if (look.extremes) {
    line(pcol(percentiles[0]), faded(theme.band, 0.8), 1, [1, 2], false);
    line(pcol(percentiles[percentiles.length - 1]), faded(theme.band, 0.8), 1, [1, 2], false);
  }
  if (look.median) line(pcol(schema.median), theme.median, 1.5, [], !look.fill);
}

// js/live_lines.js
function drawOffset(ctx, s, stats, theme, marks, log, frame) {
  const box = plotBox(frame.w, frame.h, { left: 44 });
  const values = valueRange(s, stats) || [0, 1];
  const x = linearScale(values[0], values[1], box.x, box.x + box.w);
  const picked = lineRows(s.steps.length, [marks.markedRow, marks.shownRow]);
  const rows = picked.filter((k) => drawable(s, stats, k));
  const unfinite = picked.filter((k) => !drawable(s, stats, k) && stats.nonfiniteOf(s.stats[k]) > 0);
  const ridge = box.h * 0.45;
  const steps = s.steps;
  const first = steps[0];
  const last = steps[steps.length - 1];
  const yStep = linearScale(last > first ? first : first - 1, last, box.y + ridge, box.y + box.h);
  const top = Math.max(1, ...rows.flatMap((k) => Array.from(s.hists[k])));
  const heightOf = countScale(top, 0, ridge, log);
  const yTicks = stepTicks(first, last, 4);
  const xTicks = x.ticks(5);
  drawAxes(ctx, box, { theme, x, xTicks, y: yStep, yTicks, yText: String, grid: false });
  ctx.save();
  ctx.beginPath();
  ctx.rect(box.x + 1, 0, box.w, box.y + box.h);
  ctx.clip();
  rows.forEach((k, j) => {
    const base = yStep(steps[k]);
    const path = histogramPath(s, stats, k, x, (c) => base - heightOf(c), base);
    ctx.fillStyle = theme.bg;
    ctx.fill(path);
    const special = k === marks.markedRow ? theme.bad : k === marks.shownRow ? theme.accent : null;
    ctx.strokeStyle = special || theme.series;
    ctx.globalAlpha = special ? 1 : 0.35 + 0.65 * (j + 1) / rows.length;
    ctx.lineWidth = special ? 1.5 : 1;
    ctx.stroke(path);
    ctx.globalAlpha = 1;
  });
  ctx.strokeStyle = theme.bad;
  ctx.setLineDash([3, 2]);
  for (const k of unfinite) {
    ctx.beginPath();
    ctx.moveTo(box.x, Math.round(yStep(steps[k])) + 0.5);
    ctx.lineTo(box.x + box.w, Math.round(yStep(steps[k])) + 0.5);
    ctx.stroke();
  }
  ctx.restore();
  return {
    xTicks: tickList(xTicks),
    yTicks: tickList(yTicks, String),
    unfinite: unfinite.length,
    readOut: (px, py) => {
      if (px < box.x || px > box.x + box.w || py < box.y || py > box.y + box.h || !picked.length) return null;
      const near = unfinite.find((k2) => Math.abs(yStep(steps[k2]) - py) <= 2);
      if (near !== void 0) return `step ${steps[near]}
${nonfiniteText(s, stats, near)}`;
      if (!rows.length) return null;
      const below = rows.filter((k2) => yStep(steps[k2]) >= py - 2);
      const k = below.length ? below[0] : rows[rows.length - 1];
      const i = binAt(s, stats, k, x.invert(px));
      return i >= 0 ? binText(s, stats, k, i) : `step ${steps[k]}
no values here`;
    }
  };
}
function drawOverlay(ctx, s, stats, theme, marks, log, frame) {
  const box = plotBox(frame.w, frame.h, { left: 44 });
  const values = valueRange(s, stats) || [0, 1];
  const x = linearScale(values[0], values[1], box.x, box.x + box.w);
  const rows = lineRows(s.steps.length, [marks.markedRow, marks.shownRow]).filter((k) => drawable(s, stats, k));
  const top = Math.max(1, ...rows.flatMap((k) => Array.from(s.hists[k])));
  const y = countScale(top, box.y + box.h, box.y, log);
  const xTicks = x.ticks(5);
  const yTicks = countTicks(y);
  drawAxes(ctx, box, { theme, x, xTicks, y, yTicks });
  const last = rows[rows.length - 1];
  const order = [...rows.filter((k) => k !== marks.markedRow && k !== marks.shownRow), ...rows.filter((k) => k === marks.shownRow || k === marks.markedRow)];
  for (const [j, k] of order.entries()) {
    const special = k === marks.markedRow ? theme.bad : k === marks.shownRow && k !== last ? theme.accent : null;
    ctx.strokeStyle = special || theme.series;
    ctx.globalAlpha = special || k === last ? 1 : 0.12 + 0.6 * (j + 1) / rows.length;
    ctx.lineWidth = special || k === last ? 1.5 : 1;
    ctx.stroke(histogramPath(s, stats, k, x, y, y(0)));
  }
  ctx.globalAlpha = 1;
  return {
    xTicks: tickList(xTicks),
    yTicks: tickList(yTicks),
    readOut: (px, py) => {
      if (px < box.x || px > box.x + box.w || py < box.y || py > box.y + box.h || !rows.length) return null;
      let best = -1;
      let bestBin = -1;
      let distance = Infinity;
      for (const k of rows) {
        const i = binAt(s, stats, k, x.invert(px));
        if (i < 0) continue;
        const d = Math.abs(y(s.hists[k][i]) - py);
        if (d < distance) [best, bestBin, distance] = [k, i, d];
      }
      return best < 0 ? null : binText(s, stats, best, bestBin);
    }
  };
}

// js/live_run_bands.js
function drawRunBands(ctx, members, stats, theme, marks, frame) {
  const box = plotBox(frame.w, frame.h, { left: 44 });
  const { stepAxis } = frame;
  const { pcol, schema } = stats;
  const [low, high] = runBand(schema);
  const ranges = members.map((m) => valueRange(m.s, stats)).filter((r) => r !== null);
  const lo = ranges.length ? Math.min(...ranges.map((r) => r[0])) : 0;
  const hi = ranges.length ? Math.max(...ranges.map((r) => r[1])) : 1;
  const x = lineStepScale(stepAxis.length ? stepAxis : [0], box.x, box.x + box.w);
  const y = linearScale(lo, hi, box.y + box.h, box.y);
  const xTicks = stepTicks(...x.domain, 5);
  const yTicks = y.ticks(5);
  drawAxes(ctx, box, { theme, x, xTicks, y, yTicks });
  const look = { bands: [[low, high, 0.22]], fill: true, outline: true, median: true, extremes: false };
  ctx.save();
  ctx.beginPath();
  ctx.rect(box.x, box.y - 1, box.w, box.h + 2);
  ctx.clip();
  for (const m of members) drawBands(ctx, m.s, stats, x, y, { ...theme, band: m.colour, median: m.colour }, look);
  ctx.restore();
  if (marks.shown != null) stepLine(ctx, box, x(marks.shown), theme.accent, false);
  if (marks.marked != null) stepLine(ctx, box, x(marks.marked), theme.bad, true);
  return {
    xTicks: tickList(xTicks),
    yTicks: tickList(yTicks),
    stepAt: (px) => x.invert(px),
    readOut: (px, py) => {
      if (px < box.x || px > box.x + box.w || py < box.y || py > box.y + box.h) return null;
      const step = x.invert(px);
      const lines = members.filter((m) => m.s.steps.length).map((m) => {
        const r = m.s.stats[nearestIndex(m.s.steps, step)];
        return `${m.name}: median ${fmt(r[pcol(schema.median)])} (${ordinal(low)} ${fmt(r[pcol(low)])}, ${ordinal(high)} ${fmt(r[pcol(high)])})`;
      });
      return lines.length ? `step \u2248 ${Math.round(step)}
${lines.join("\n")}` : null;
    }
  };
}
function runBand(schema) {
  const band = schema.bands[Math.floor(schema.bands.length / 2)] || [16, 84];
  return [band[0], band[1]];
}

// js/live_cards.js
var TRACE_H = 30;
var TRACE_GAP = 5;
var HISTOGRAM_VIEWS = { heat: drawHeat, offset: drawOffset, overlay: drawOverlay };
var PANEL_H = 104;
function drawTrace(canvas, members, stats, name, theme, marked, width) {
  const ctx = sized(canvas, width, TRACE_H);
  const lines = members.map((m) => ({ m, values: m.s.stats.map((r) => stats.statOf(r, name)) }));
  const box = { x: 1, y: 3, w: width - 2, h: TRACE_H - 6 };
  const finite = lines.flatMap((l) => l.values.filter(Number.isFinite));
  const lo = finite.length ? Math.min(...finite) : 0;
  const hi = finite.length ? Math.max(...finite) : 1;
  const axis = unionSteps(members);
  const x = lineStepScale(axis, box.x, box.x + box.w);
  const y = linearScale(lo, hi > lo ? hi : lo + 1, box.y + box.h, box.y);
  ctx.strokeStyle = theme.grid;
  ctx.strokeRect(0.5, 0.5, width - 1, TRACE_H - 1);
  if (marked != null) stepLine(ctx, box, x(marked), theme.bad, true);
  ctx.lineWidth = 1.25;
  for (const { m, values } of lines) {
    const bad = name === "nonfinite" && values.some((v) => v > 0);
    ctx.strokeStyle = bad && members.length === 1 ? theme.bad : m.colour;
    ctx.beginPath();
    let pen = false;
    values.forEach((v, k) => {
      if (!Number.isFinite(v)) return void (pen = false);
      const px = axis.length > 1 ? x(m.s.steps[k]) : box.x + box.w / 2;
      if (pen) ctx.lineTo(px, y(v));
      else ctx.moveTo(px, y(v)), ctx.lineTo(px + 0.5, y(v));
      pen = true;
    });
    ctx.stroke();
  }
  canvas.dataset.drawn = String(Math.max(0, ...lines.map((l) => l.values.length)));
  return (px) => {
    const step = axis[nearestIndex(axis, x.invert(px))];
    const text = lines.map(({ m, values }) => {
      const k = nearestIndex(m.s.steps, step);
      return `${m.name ? `${m.name}: ` : "value "}${stats.textOf(name, values[k])}`;
    });
    return `${stats.labelOf(name)}
step ${step}
${text.join("\n")}`;
  };
}
function newCard(i, hover, traced) {
  const card = h("div", "jcnb-live-card");
  card.dataset.site = String(i);
  const top = h("div", "jcnb-live-card-head");
  top.append(h("span", "jcnb-live-title"), h("span", "jcnb-live-kind"), cardTools());
  const traces = h("div", "jcnb-live-traces");
  for (const name of traced) {
    const trace = h("div", "jcnb-live-trace");
    trace.dataset.stat = name;
    trace.append(h("div", "jcnb-live-trace-label"), hover("jcnb-live-trace-canvas"));
    traces.append(trace);
  }
  card.append(top, h("div", "jcnb-live-panels"), traces, h("div", "jcnb-hint jcnb-live-card-hint", WAITING_HINT));
  return card;
}
function panelsOf(card, n, hover) {
  const box = (
    /** @type {HTMLElement} */
    card.querySelector(".jcnb-live-panels")
  );
  while (box.children.length < n) {
    const panel = h("div", "jcnb-live-panel");
    panel.append(h("div", "jcnb-live-panel-label"), hover("jcnb-live-over"));
    box.append(panel);
  }
  return [...box.children].map((panel, j) => {
    panel.hidden = j >= n;
    return { panel: (
      /** @type {HTMLElement} */
      panel
    ), label: (
      /** @type {HTMLElement} */
      panel.children[0]
    ), canvas: (
      /** @type {HTMLCanvasElement} */
      panel.children[1]
    ) };
  });
}
function shortText(stats, name, x) {
  const format = name === "nonfinite" ? "count" : stats.schema.stat(name).format;
  if (format !== "number" || !Number.isFinite(x) || x === 0) return stats.textOf(name, x);
  const a = Math.abs(x);
  if (a >= 0.01 && a < 1e4) return String(Number(x.toPrecision(3)));
  return x.toExponential(1).replace("e+", "e");
}
function fullText(stats, name, x) {
  const format = name === "nonfinite" ? "count" : stats.schema.stat(name).format;
  if (format !== "number" || !Number.isFinite(x)) return stats.textOf(name, x);
  return String(Number(x.toPrecision(7)));
}
var cardsOf = (grid) => (
  /** @type {HTMLElement[]} */
  [...grid.querySelectorAll(":scope > .jcnb-live-card")]
);
function cardsByGroup(grid) {
  return cardsOf(grid).sort((a, b) => Number(a.dataset.site) - Number(b.dataset.site));
}
var EVALUATION = "evaluation";
function pairEvaluations(cards, groups) {
  const trained = /* @__PURE__ */ new Map();
  groups.forEach((group, g) => {
    if (group.kind !== EVALUATION) trained.set(group.label, cards[g]);
  });
  groups.forEach((group, g) => {
    const partner = group.kind === EVALUATION ? trained.get(group.label) : void 0;
    if (partner && partner.nextElementSibling !== cards[g]) partner.after(cards[g]);
  });
}
var WAITING_HINT = "waiting for this site's first row\u2026";
var HIDDEN_HINT = "every run that recorded this site is hidden: show one in the legend";
function drawCards(ui, state, stats, meta, groups, runs, found2, readOuts) {
  const { grid } = ui;
  ui.gridSection.hidden = !meta.length || !hasRows(state.rows);
  const cards = cardsByGroup(grid);
  while (cards.length < groups.length) cards.push(grid.appendChild(newCard(cards.length, ui.hover, stats.traced)));
  pairEvaluations(cards, groups);
  const theme = themeOf(ui.root);
  const matches = siteMatcher(ui.filter);
  groups.forEach((group, g) => {
    const card = cards[g];
    card.hidden = !matches(group.label);
    card.classList.toggle("jcnb-selected", g === state.selected);
    showExpanded(card, state.expanded.has(`site ${g}`));
    const title = setName(
      /** @type {HTMLElement} */
      card.querySelector(".jcnb-live-title"),
      group.label
    );
    title.title = title.textContent || "";
    card.querySelector(".jcnb-live-kind").textContent = group.kind;
    if (card.hidden) return;
    const members = shownMembers(group, meta, state.rows.sites, runs).map((m) => ({ ...m, s: windowed(m.s, state.stepRange) })).filter((m) => m.s.steps.length);
    const empty = !members.length;
    const panels = (
      /** @type {HTMLElement} */
      card.querySelector(".jcnb-live-panels")
    );
    panels.hidden = empty;
    card.querySelector(".jcnb-live-traces").hidden = empty;
    const hint = (
      /** @type {HTMLElement} */
      card.querySelector(".jcnb-live-card-hint")
    );
    hint.hidden = !empty;
    hint.textContent = recordedByAny(group, state.rows.sites) ? HIDDEN_HINT : WAITING_HINT;
    const flagged = found2 && members.find((m) => m.index === found2.site);
    if (flagged) card.dataset.markedStep = String(found2.step);
    else delete card.dataset.markedStep;
    if (empty) return;
    const width = Math.floor(panels.clientWidth) || CARD_W;
    const axis = unionSteps(members);
    const shown = g === state.selected ? shownStep(state, axis) : null;
    drawPanels(card, ui, state, stats, members, runs, { axis, shown, found: found2, theme, width }, readOuts);
    const last = members[0].s.stats[members[0].s.stats.length - 1];
    const traceWidth = Math.floor((width - (stats.traced.length - 1) * TRACE_GAP) / stats.traced.length);
    card.querySelectorAll(".jcnb-live-trace").forEach((trace, t) => {
      const name = stats.traced[t];
      const label = (
        /** @type {HTMLElement} */
        trace.children[0]
      );
      const canvas = (
        /** @type {HTMLCanvasElement} */
        trace.children[1]
      );
      const value = stats.statOf(last, name);
      label.textContent = runs.several ? stats.labelOf(name) : `${stats.labelOf(name)} ${shortText(stats, name, value)}`;
      label.title = runs.several ? stats.labelOf(name) : `${stats.labelOf(name)} ${fullText(stats, name, value)}`;
      readOuts.set(canvas, drawTrace(canvas, members, stats, name, theme, flagged ? found2.step : null, traceWidth));
    });
  });
}
function drawPanels(card, ui, state, stats, members, runs, at, readOuts) {
  const { axis, shown, found: found2, theme, width } = at;
  const log = ui.countLog.checked;
  const view = shownView(state.view, runs);
  const bands = view === "bands";
  const panels = panelsOf(card, bands ? 1 : members.length, ui.hover);
  const grow = card.classList.contains("jcnb-expanded") ? 2 : 1;
  const marksOf = (m) => {
    const flagged = found2 && found2.site === m.index;
    const shownRow = shown == null ? -1 : nearestIndex(m.s.steps, shown);
    const markedRow = !flagged ? -1 : state.stepRange ? m.s.steps.indexOf(found2.step) : found2.row;
    return { marked: flagged ? found2.step : null, shown, markedRow, shownRow };
  };
  if (bands) {
    const { canvas, label } = panels[0];
    label.hidden = true;
    const marked = members.map(marksOf).find((mk) => mk.marked != null)?.marked ?? null;
    const frame = { w: width, h: OVER_H * grow, stepAxis: axis, layers: state.layers, several: true };
    const drawn = drawRunBands(sized(canvas, width, frame.h), members, stats, theme, { marked, shown }, frame);
    return finishCanvas(canvas, drawn, axis.length, "bands", readOuts);
  }
  const drawView = HISTOGRAM_VIEWS[view] || HISTOGRAM_VIEWS.heat;
  members.forEach((m, j) => {
    const { canvas, label } = panels[j];
    label.hidden = !runs.several;
    setName(label, m.name);
    label.style.setProperty("--jcnb-run", m.colour);
    canvas.dataset.run = String(m.run);
    const height = (runs.several ? PANEL_H : OVER_H) * grow;
    const look = runs.several ? { ...theme, series: m.colour, band: theme.fg2, median: theme.fg } : theme;
    const frame = { w: width, h: height, stepAxis: view === "heat" ? axis : m.s.steps, layers: state.layers, several: runs.several };
    const drawn = drawView(sized(canvas, width, height), m.s, stats, look, marksOf(m), log, frame);
    finishCanvas(canvas, drawn, m.s.steps.length, view, readOuts);
  });
}
function finishCanvas(canvas, drawn, rows, view, readOuts) {
  canvas.dataset.drawn = String(rows);
  canvas.dataset.view = view;
  if (drawn.stepAt) STEP_AT.set(canvas, drawn.stepAt);
  else STEP_AT.delete(canvas);
  canvas.dataset.xTicks = drawn.xTicks;
  canvas.dataset.yTicks = drawn.yTicks;
  canvas.dataset.unfinite = String(drawn.unfinite ?? 0);
  readOuts.set(canvas, drawn.readOut);
}

// js/live_key.js
var VIEWS = ["heat", "offset", "overlay", "bands"];
var VIEW_KEYS = {
  heat: "heat: a column per recorded step, stronger where more values are",
  offset: "one histogram per recorded step; later steps in front",
  overlay: "one histogram per recorded step; older steps fainter, the latest solid",
  bands: "per run, the median and a shaded percentile band over steps"
};
var LAYERS = ["heat", "zeros", "bands", "median", "extremes"];
function drawKey(ui, state, stats, runs, found2) {
  const { percentiles, schema } = stats;
  const { root, viewSwitch } = ui;
  const view = shownView(state.view, runs);
  const theme = themeOf(root);
  const look = runs.several ? { ...theme, series: theme.fg2, band: theme.fg2, median: theme.fg } : theme;
  const items = [];
  ui.layerBox.hidden = view !== "heat";
  if (runs.several && view !== "bands") items.push(h("span", "jcnb-muted", view === "heat" ? "one chart per run, on one step axis \xB7" : "one chart per run \xB7"));
  if (view === "heat") {
    const bandNames = schema.bands.map(([low, high]) => `${ordinal(low)}\u2013${ordinal(high)}`).join(", ");
    const filled = !state.layers.heat && !runs.several;
    const layerText = {
      heat: [look.series, "swatch", VIEW_KEYS.heat],
      zeros: [theme.fg, "line", "exact zeros, apart from the heat at 0: the stronger, the larger their share"],
      bands: [look.band, filled ? "swatch" : "line", `${bandNames} percentile bands${filled || schema.bands.length < 2 ? "" : ", widest dashed"}`],
      median: [look.median, "line", "median"],
      extremes: [look.band, "dotted", `${ordinal(percentiles[0])} / ${ordinal(percentiles[percentiles.length - 1])} percentile (min, max)`]
    };
    for (const toggle of ui.layerBox.children) {
      const name = (
        /** @type {keyof Layers} */
        /** @type {HTMLElement} */
        toggle.dataset.layer
      );
      const [colour, mark, text] = layerText[name];
      const box = (
        /** @type {HTMLInputElement} */
        toggle.children[0]
      );
      box.checked = state.layers[name];
      const swatch = (
        /** @type {HTMLElement} */
        toggle.children[1]
      );
      const classes = { swatch: "jcnb-key-swatch", line: "jcnb-key-line" };
      swatch.className = classes[mark] || `jcnb-key-line jcnb-key-${mark}`;
      swatch.style.background = mark === "swatch" ? name === "bands" ? faded(colour, 0.5) : colour : "";
      swatch.style.borderTopColor = mark === "swatch" ? "" : colour;
      toggle.children[2].textContent = text;
    }
    root.dataset.layers = LAYERS.filter((name) => state.layers[name]).join(" ");
    items.push(h("span", "jcnb-muted", "x: step \xB7 y: value"));
  } else if (view === "bands") {
    const [low, high] = runBand(schema);
    items.push(keyItem(faded(theme.fg2, 0.35), `${ordinal(low)}\u2013${ordinal(high)} percentile, per run`));
    items.push(keyItem(theme.fg2, "median, per run", "line"));
    items.push(h("span", "jcnb-muted", "x: step \xB7 y: value"));
  } else {
    items.push(keyItem(look.series, VIEW_KEYS[view], "line"));
    items.push(h("span", "jcnb-muted", view === "offset" ? "x: value \xB7 y: step" : "x: value \xB7 y: count"));
  }
  if (found2) items.push(keyItem(theme.bad, "first NaN/Inf step", "line"));
  if (state.selected >= 0) items.push(keyItem(theme.accent, "step shown below", "line"));
  ui.keyItems.replaceChildren(...items);
  for (const button of viewSwitch.children) {
    const name = (
      /** @type {HTMLElement} */
      button.dataset.view
    );
    button.hidden = name === "bands" && !runs.several;
    button.classList.toggle("jcnb-on", name === view);
    button.setAttribute("aria-pressed", String(name === view));
  }
  root.dataset.view = view;
  root.dataset.countScale = ui.countLog.checked ? "log" : "linear";
}

// js/live_scalars.js
var X_AXES = { step: "step", relative: "relative time", wall: "wall time" };
function xsOf(s, axis) {
  if (axis === "step" || !s.walls.length) return s.steps;
  if (axis === "wall") return s.walls;
  const first = s.walls.find(Number.isFinite) ?? 0;
  return s.walls.map((t) => t - first);
}
function durationText(seconds) {
  const a = Math.abs(seconds);
  if (a < 120) return `${Number(seconds.toPrecision(3))} s`;
  if (a < 7200) return `${Number((seconds / 60).toPrecision(3))} min`;
  return `${Number((seconds / 3600).toPrecision(3))} h`;
}
function clockText(seconds) {
  return new Date(seconds * 1e3).toLocaleTimeString([], { hour12: false });
}
function xTicksOf(axis, domain, count) {
  if (axis === "step") return { ticks: stepTicks(...domain, count), text: tickText };
  const span = Math.abs(domain[1] - domain[0]);
  const unit = axis === "wall" || span < 120 ? 1 : span < 7200 ? 60 : 3600;
  const ticks = niceTicks(domain[0] / unit, domain[1] / unit, count).map((v) => v * unit);
  return { ticks, text: axis === "wall" ? clockText : durationText };
}
var SCALAR_W = 320;
var SCALAR_H = 150;
var DEFAULT_SMOOTHING = 0.6;
function smoothedValues(values, weight) {
  let last = 0;
  let count = 0;
  return values.map((v) => {
    if (!Number.isFinite(v)) return v;
    last = last * weight + (1 - weight) * v;
    count += 1;
    return last / (1 - weight ** count);
  });
}
function drawScalar(canvas, members, theme, weight, look) {
  const { log, width, height } = look;
  const ctx = sized(canvas, width, height);
  const box = plotBox(width, height, { left: 48 });
  const over = look.xAxis;
  const lines = members.map((m) => {
    const raw = m.s.stats.map((r) => r[0]);
    return { m, raw, smooth: smoothedValues(raw, weight), xs: xsOf(m.s, over) };
  });
  const shown = (v) => Number.isFinite(v) && (!log || v > 0);
  const range = look.range;
  const inRange = (step) => !range || step >= range[0] && step <= range[1];
  const finite = lines.flatMap((l) => [...l.raw, ...l.smooth].filter((v, i) => inRange(l.m.s.steps[i % l.raw.length]))).filter(shown);
  const axis = [...new Set(lines.flatMap((l) => l.xs.filter((v, k) => Number.isFinite(v) && inRange(l.m.s.steps[k]))))].sort((a, b) => a - b);
  const x = lineStepScale(axis.length ? axis : [0], box.x, box.x + box.w);
  let [lo, hi] = look.robust ? robustRange(finite) : [Math.min(...finite), Math.max(...finite)];
  if (!finite.length) [lo, hi] = log ? [1, 10] : [0, 1];
  if (hi === lo) [lo, hi] = log ? [lo / 2, hi * 2] : [lo - 0.5, hi + 0.5];
  const y = log ? logScale(lo, hi, box.y + box.h, box.y) : linearScale(lo, hi, box.y + box.h, box.y);
  const { ticks: xTicks, text: xText } = xTicksOf(over, x.domain, width > 400 ? 7 : 5);
  const yTicks = y.ticks(4);
  drawAxes(ctx, box, { theme, x, xTicks, xText, y, yTicks });
  const line = (steps, values, colour, alpha, width2) => {
    ctx.save();
    ctx.beginPath();
    ctx.rect(box.x, box.y - 1, box.w + 1, box.h + 2);
    ctx.clip();
    ctx.strokeStyle = colour;
    ctx.globalAlpha = alpha;
    ctx.lineWidth = width2;
    ctx.beginPath();
    let pen = false;
    values.forEach((v, k) => {
      if (!shown(v)) return void (pen = false);
      if (pen) ctx.lineTo(x(steps[k]), y(v));
      else ctx.moveTo(x(steps[k]), y(v)), ctx.lineTo(x(steps[k]) + 0.5, y(v));
      pen = true;
    });
    ctx.stroke();
    ctx.restore();
  };
  for (const l of lines) line(l.xs, l.raw, l.m.colour, 0.3, 1);
  for (const l of lines) line(l.xs, l.smooth, l.m.colour, 1, 1.5);
  if (look.marked != null && over === "step") stepLine(ctx, box, x(look.marked), theme.bad, true);
  const marks = lines.reduce((n, l) => n + markNonfiniteValues(ctx, box, l.xs, l.raw, x, theme), 0);
  canvas.dataset.nonfinite = String(marks);
  canvas.dataset.yRange = `${lo} ${hi}`;
  canvas.dataset.drawn = String(Math.max(0, ...lines.map((l) => l.raw.length)));
  canvas.dataset.lines = String(lines.filter((l) => l.raw.length).length);
  canvas.dataset.xTicks = tickList(xTicks, xText);
  canvas.dataset.xAxis = over;
  canvas.dataset.yTicks = tickList(yTicks);
  canvas.dataset.scale = log ? "log" : "linear";
  canvas.dataset.smoothedLast = lines.map((l) => l.raw.length ? String(l.smooth[l.smooth.length - 1]) : "").join(" ");
  const readOut = (px, py) => {
    if (!axis.length || px < box.x - 4 || py > box.y + box.h) return null;
    const at = axis[nearestIndex(axis, x.invert(px))];
    const held = lines.filter((l) => l.raw.length);
    const rows = held.map((l) => nearestIndex(l.xs, at));
    const text = held.map(({ m, raw, smooth }, j) => {
      const k = rows[j];
      const value = `value ${valueText(raw[k])}
smoothed ${valueText(smooth[k])}`;
      return m.name ? `${m.name} (step ${m.s.steps[k]}): ${valueText(raw[k])}, smoothed ${valueText(smooth[k])}` : value;
    });
    const where = over === "step" ? `step ${at}` : `${over === "wall" ? clockText(at) : durationText(at)}${held.length === 1 ? ` \xB7 step ${held[0].m.s.steps[rows[0]]}` : ""}`;
    return `${where}
${text.join("\n")}`;
  };
  if (over === "step") STEP_AT.set(canvas, (px) => x.invert(px));
  else STEP_AT.delete(canvas);
  return { lines, readOut };
}
function valueText(v) {
  if (Number.isNaN(v)) return "NaN";
  if (!Number.isFinite(v)) return v > 0 ? "+Inf" : "\u2212Inf";
  return fmt(v);
}
function robustRange(values) {
  if (!values.length) return [0, 1];
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.round(q * (sorted.length - 1))))];
  const [low, high] = [at(0.05), at(0.95)];
  const pad = (high - low) / 10;
  return [Math.max(sorted[0], low - pad), Math.min(sorted[sorted.length - 1], high + pad)];
}
function markNonfiniteValues(ctx, box, steps, values, x, theme) {
  let marked = 0;
  ctx.save();
  ctx.strokeStyle = theme.bad;
  ctx.fillStyle = theme.bad;
  ctx.lineWidth = 1.25;
  values.forEach((v, k) => {
    if (Number.isFinite(v)) return;
    marked += 1;
    const px = x(steps[k]);
    const down = v === -Infinity;
    const tip = down ? box.y + box.h - 1 : box.y + 1;
    const base = down ? tip - 6 : tip + 6;
    ctx.beginPath();
    ctx.moveTo(px - 4, base);
    ctx.lineTo(px + 4, base);
    ctx.lineTo(px, tip);
    ctx.closePath();
    if (Number.isNaN(v)) ctx.stroke();
    else ctx.fill();
  });
  ctx.restore();
  return marked;
}
function drawScalars(ui, state, entries2, runs, found2, readOuts) {
  const { root, smoothing, scalarLog, scalarsBox } = ui;
  const groups = groupsOf(entries2);
  ui.scalarSection.hidden = !entries2.length || !hasRows(state.rows);
  ui.smoothingText.textContent = Number(smoothing.value).toFixed(2);
  root.dataset.smoothing = smoothing.value;
  root.dataset.scalarScale = scalarLog.checked ? "log" : "linear";
  root.dataset.outliers = ui.outliers.checked ? "ignored" : "shown";
  while (scalarsBox.children.length < groups.length) {
    const card = h("div", "jcnb-live-scalar");
    const title = h("div", "jcnb-live-scalar-head");
    title.append(h("span", "jcnb-live-title"), h("span", "jcnb-live-latest"), cardTools());
    card.append(title, ui.hover("jcnb-live-scalar-canvas"));
    scalarsBox.append(card);
  }
  const theme = themeOf(root);
  groups.forEach((group, i) => {
    const card = (
      /** @type {HTMLElement} */
      scalarsBox.children[i]
    );
    showExpanded(card, state.expanded.has(`scalar ${i}`));
    const members = shownMembers(group, entries2, state.rows.scalars, runs);
    const canvas = (
      /** @type {HTMLCanvasElement} */
      card.children[1]
    );
    const marked = found2 && group.members.includes(found2.scalar) ? found2.step : null;
    const width = Math.floor(
      /** @type {HTMLElement} */
      card.children[0].clientWidth
    ) || SCALAR_W;
    const height = SCALAR_H * (state.expanded.has(`scalar ${i}`) ? 2 : 1);
    const look = { log: scalarLog.checked, robust: ui.outliers.checked, marked, width, height, range: state.stepRange, xAxis: ui.xAxis.value };
    const { lines, readOut } = drawScalar(canvas, members, theme, Number(smoothing.value), look);
    readOuts.set(canvas, readOut);
    setName(
      /** @type {HTMLElement} */
      card.querySelector(".jcnb-live-title"),
      group.label
    );
    card.querySelector(".jcnb-live-latest").textContent = latestText(lines, recordedByAny(group, state.rows.scalars));
  });
}
function latestText(lines, recorded) {
  const held = lines.filter((l) => l.raw.length);
  if (!held.length) return recorded ? "every run with values is hidden: show one in the legend" : "no values yet";
  if (held.length === 1 && !held[0].m.name) {
    const { m, raw, smooth } = held[0];
    const n = raw.length;
    return `step ${m.s.steps[n - 1]}: ${valueText(raw[n - 1])} (smoothed ${valueText(smooth[n - 1])})`;
  }
  return `smoothed, last: ${held.map((l) => `${l.m.name} ${fmt(l.smooth[l.smooth.length - 1])}`).join(" \xB7 ")}`;
}

// js/live_step_histogram.js
var DETAIL_W = { min: 360, max: 680, numbers: 340 };
var DETAIL_H = 190;
var BAR = { lead: 22, width: 30, gap: 16 };
function nonfiniteGroups(rows, stats) {
  const one = rows.length === 1;
  return stats.schema.nonfinite.map((n) => ({
    label: n.label,
    bars: rows.filter(({ r }) => r[stats.col[n.key]] > 0).map(({ r, colour, name }) => ({ count: r[stats.col[n.key]], colour: one ? rgbText(n.rgb) : colour, name }))
  })).filter((g) => g.bars.length);
}
var barsWidth = (groups) => groups.length ? BAR.lead + groups.reduce((w, g) => w + g.bars.length * BAR.width + BAR.gap, 0) : 0;
var valueWidth = (room, bars) => Math.round(Math.min(DETAIL_W.max, Math.max(DETAIL_W.min, room - DETAIL_W.numbers - bars)));
function drawNonfiniteBars(ctx, box, groups, y, theme) {
  if (!groups.length) return [];
  const base = box.y + box.h;
  let x = box.x + box.w + BAR.lead;
  ctx.save();
  ctx.strokeStyle = theme.border;
  ctx.setLineDash([3, 3]);
  ctx.beginPath();
  ctx.moveTo(x - BAR.lead / 2 + 0.5, box.y);
  ctx.lineTo(x - BAR.lead / 2 + 0.5, base);
  ctx.stroke();
  ctx.setLineDash([]);
  ctx.font = `10px ${theme.font}`;
  ctx.textAlign = "center";
  const placed = [];
  for (const group of groups) {
    const start = x;
    for (const bar of group.bars) {
      const top = Math.min(y(bar.count), base - 1);
      ctx.fillStyle = bar.colour;
      ctx.fillRect(x + 2, top, BAR.width - 4, base - top);
      ctx.fillStyle = theme.fg;
      ctx.textBaseline = "bottom";
      ctx.fillText(statText("count", bar.count), x + BAR.width / 2, Math.max(top - 2, 11));
      placed.push({ x, w: BAR.width, label: group.label, count: bar.count, name: bar.name });
      x += BAR.width;
    }
    ctx.fillStyle = theme.fg2;
    ctx.textBaseline = "top";
    ctx.fillText(group.label, (start + x) / 2, base + 4);
    ctx.strokeStyle = theme.border;
    ctx.beginPath();
    ctx.moveTo(start, base + 0.5);
    ctx.lineTo(x, base + 0.5);
    ctx.stroke();
    x += BAR.gap;
  }
  ctx.restore();
  return placed;
}
function barReadOut(bars, px) {
  const bar = bars.find((b) => px >= b.x && px < b.x + b.w);
  if (!bar) return null;
  return `${bar.name ? `${bar.name}: ` : ""}${bar.label}
${statText("count", bar.count)} values (outside the value axis)`;
}
function noFiniteNote(ctx, box, theme) {
  ctx.save();
  ctx.fillStyle = theme.bad;
  ctx.font = `12px ${theme.font}`;
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  ctx.fillText("no finite values at this step", box.x + box.w / 2, box.y + box.h / 2);
  ctx.restore();
}
function markStepCanvas(canvas, bars, xTicks, yTicks) {
  canvas.dataset.xTicks = tickList(xTicks);
  canvas.dataset.yTicks = tickList(yTicks);
  if (bars.length) canvas.dataset.nonfinite = bars.map((b) => `${b.label}:${statText("count", b.count)}`).join(" ");
  else delete canvas.dataset.nonfinite;
}
function drawStepHistogram(canvas, s, k, stats, theme, log, room) {
  const { col } = stats;
  const hist = s.hists[k];
  const r = s.stats[k];
  const groups = nonfiniteGroups([{ r, colour: "", name: "" }], stats);
  const width = valueWidth(room, barsWidth(groups));
  const ctx = sized(canvas, width + barsWidth(groups), DETAIL_H);
  const box = plotBox(width, DETAIL_H, { left: 50, right: 10, top: 16, bottom: 30 });
  const any = drawable(s, stats, k);
  const x = any ? linearScale(r[col.lo], r[col.hi], box.x, box.x + box.w) : linearScale(0, 1, box.x, box.x + box.w);
  const top = Math.max(1, ...hist, ...groups.flatMap((g) => g.bars.map((b) => b.count)));
  const y = countScale(top, box.y + box.h, box.y, log);
  const xTicks = any ? x.ticks(6) : [];
  const yTicks = countTicks(y);
  drawAxes(ctx, box, { theme, x, xTicks, y, yTicks, yLabel: log ? "count (log)" : "count" });
  if (any) drawBars(ctx, box, hist, y, theme.series);
  else noFiniteNote(ctx, box, theme);
  const bars = drawNonfiniteBars(ctx, box, groups, y, theme);
  canvas.dataset.drawn = String(s.steps[k]);
  markStepCanvas(canvas, bars, xTicks, yTicks);
  return (px, py) => {
    if (py > box.y + box.h + 16) return null;
    const bar = barReadOut(bars, px);
    if (bar || !any || px < box.x || px > box.x + box.w) return bar;
    const i = Math.min(hist.length - 1, Math.floor((px - box.x) / box.w * hist.length));
    return binText(s, stats, k, i);
  };
}
function drawStepHistograms(canvas, rows, stats, theme, log, room) {
  const groups = nonfiniteGroups(rows.map(({ m, k }) => ({ r: m.s.stats[k], colour: m.colour, name: m.name })), stats);
  const width = valueWidth(room, barsWidth(groups));
  const ctx = sized(canvas, width + barsWidth(groups), DETAIL_H);
  const box = plotBox(width, DETAIL_H, { left: 50, right: 10, top: 16, bottom: 30 });
  const drawn = rows.filter(({ m, k }) => drawable(m.s, stats, k));
  const { col } = stats;
  const lo = drawn.length ? Math.min(...drawn.map(({ m, k }) => m.s.stats[k][col.lo])) : 0;
  const hi = drawn.length ? Math.max(...drawn.map(({ m, k }) => m.s.stats[k][col.hi])) : 1;
  const x = linearScale(lo, hi > lo ? hi : lo + 1, box.x, box.x + box.w);
  const counts = [...drawn.flatMap(({ m, k }) => Array.from(m.s.hists[k])), ...groups.flatMap((g) => g.bars.map((b) => b.count))];
  const y = countScale(Math.max(1, ...counts), box.y + box.h, box.y, log);
  const xTicks = drawn.length ? x.ticks(6) : [];
  const yTicks = countTicks(y);
  drawAxes(ctx, box, { theme, x, xTicks, y, yTicks, yLabel: log ? "count (log)" : "count" });
  if (!drawn.length) noFiniteNote(ctx, box, theme);
  ctx.lineWidth = 1.5;
  for (const { m, k } of drawn) {
    ctx.strokeStyle = m.colour;
    ctx.stroke(histogramPath(m.s, stats, k, x, y, y(0)));
  }
  const bars = drawNonfiniteBars(ctx, box, groups, y, theme);
  canvas.dataset.drawn = rows.map(({ m, k }) => m.s.steps[k]).join(" ");
  canvas.dataset.lines = String(drawn.length);
  markStepCanvas(canvas, bars, xTicks, yTicks);
  return (px, py) => {
    if (py > box.y + box.h + 16) return null;
    const bar = barReadOut(bars, px);
    if (bar || !drawn.length || px < box.x || px > box.x + box.w) return bar;
    const v = x.invert(px);
    const text = drawn.map(({ m, k }) => {
      const i = binAt(m.s, stats, k, v);
      return `${m.name} (step ${m.s.steps[k]}): ${i >= 0 ? `count ${statText("count", m.s.hists[k][i])}` : "no values here"}`;
    });
    return `value ${fmt(v)}
${text.join("\n")}`;
  };
}

// js/live_detail.js
function drawDetail(ui, state, stats, meta, groups, runs, found2, readOuts) {
  const { detail, range, stepInput, stepCanvas } = ui;
  const group = groups[state.selected];
  const members = group ? shownMembers(group, meta, state.rows.sites, runs).filter((m) => m.s.steps.length) : [];
  if (!members.length) {
    detail.hidden = true;
    delete detail.dataset.site;
    readOuts.delete(stepCanvas);
    return;
  }
  detail.hidden = false;
  detail.dataset.site = String(state.selected);
  placeDetail(ui, cardsByGroup(ui.grid)[state.selected]);
  const steps = unionSteps(members);
  const last = steps.length - 1;
  const k = nearestIndex(
    steps,
    /** @type {number} */
    shownStep(state, steps)
  );
  const step = steps[k];
  const flagged = found2 && members.find((m) => m.index === found2.site);
  const rows = members.map((m) => ({ m, k: nearestIndex(m.s.steps, step) }));
  const isMarked = flagged && rows.some(({ m, k: row }) => m === flagged && row === found2.row);
  ui.detailTitle.textContent = `${shownName(group.label)} (${group.kind}) \xB7 step ${step}${isMarked ? " \xB7 first NaN/Inf" : ""}`;
  ui.detailTitle.dir = "auto";
  range.max = String(last);
  range.value = String(k);
  stepInput.min = String(steps[0]);
  stepInput.max = String(steps[last]);
  if (document.activeElement !== stepInput) stepInput.value = String(step);
  const lastFinite = flagged && found2.lastFinite != null ? ` \xB7 last finite step ${found2.lastFinite}` : "";
  ui.stepNote.textContent = `row ${k + 1} of ${steps.length} recorded (steps ${steps[0]}\u2013${steps[last]})${lastFinite}`;
  detail.dataset.step = String(step);
  detail.dataset.row = String(k);
  if (flagged) detail.dataset.markedStep = String(found2.step);
  else delete detail.dataset.markedStep;
  const theme = themeOf(ui.root);
  const room = ui.detailBody.clientWidth || 0;
  if (runs.several) {
    readOuts.set(stepCanvas, drawStepHistograms(stepCanvas, rows, stats, theme, ui.countLog.checked, room));
    drawRunNumbers(ui.numbers, rows, stats);
  } else {
    const { m, k: row } = rows[0];
    readOuts.set(stepCanvas, drawStepHistogram(stepCanvas, m.s, row, stats, theme, ui.countLog.checked, room));
    drawNumbers(ui.numbers, m.s.stats[row], stats);
  }
}
function drawRunNumbers(numbers, rows, stats) {
  const lines = rows.map(({ m, k }) => {
    const line = h("div", "jcnb-live-run-numbers");
    line.dataset.run = String(m.run);
    const name = setName(h("span", "jcnb-live-run-name"), `${m.name} (step ${m.s.steps[k]}) `);
    name.style.setProperty("--jcnb-run", m.colour);
    const cells = h("span");
    drawNumbers(cells, m.s.stats[k], stats);
    line.append(name, cells);
    return line;
  });
  numbers.replaceChildren(...lines);
}
function drawNumbers(numbers, r, stats) {
  const cells = stats.held.map((st) => {
    const cell = h("span", "jcnb-live-number", `${st.label} ${stats.schema.text(st.key, r[stats.col[st.key]])}`);
    cell.dataset.key = st.key;
    return cell;
  });
  numbers.replaceChildren(...cells.flatMap((cell, i) => i ? ["\xA0\xB7 ", cell] : [cell]));
}
function placeDetail(ui, card) {
  const { grid, detail } = ui;
  const shown = cardsOf(grid).filter((c) => !c.hidden);
  const at = card ? shown.indexOf(card) : -1;
  const tracks = getComputedStyle(grid).gridTemplateColumns.split(" ").filter((t) => t.endsWith("px")).length;
  const columns = Math.max(1, tracks);
  const last = at < 0 ? shown[shown.length - 1] : shown[Math.min(shown.length, (Math.floor(at / columns) + 1) * columns) - 1];
  if (!last) grid.append(detail);
  else if (last.nextElementSibling !== detail) last.after(detail);
}

// js/live_layout.js
function liveLayout(readOuts) {
  const root = h("div", "jcnb-live jcnb-themed");
  const tooltip = new Tooltip(root);
  const head = h("div", "jcnb-live-head");
  const progress = h("span", "jcnb-live-progress");
  const flag = h("button", "jcnb-live-flag");
  flag.hidden = true;
  const filter = siteFilter("jcnb-live-filter");
  const zoomReset = h("button", "jcnb-live-zoom-reset");
  zoomReset.hidden = true;
  const silence = h("span", "jcnb-live-silence");
  silence.hidden = true;
  head.append(progress, silence, flag, zoomReset, filter);
  const waiting = h("div", "jcnb-hint jcnb-live-waiting");
  waiting.hidden = true;
  const legend = h("div", "jcnb-live-legend");
  legend.setAttribute("role", "group");
  legend.setAttribute("aria-label", "runs");
  legend.hidden = true;
  const runFilter = (
    /** @type {HTMLInputElement} */
    h("input", "jcnb-live-run-filter")
  );
  runFilter.type = "search";
  runFilter.placeholder = "filter runs (regex)";
  runFilter.setAttribute("aria-label", "filter runs (regular expression)");
  const legendRow = h("div", "jcnb-live-legend-row");
  legendRow.append(legend, runFilter);
  legendRow.hidden = true;
  const scalarSection = h("div", "jcnb-live-scalar-section");
  const scalarTools = h("div", "jcnb-live-tools");
  const smoothing = (
    /** @type {HTMLInputElement} */
    h("input", "jcnb-live-smoothing")
  );
  Object.assign(smoothing, { type: "range", min: "0", max: "0.99", step: "0.01", value: String(DEFAULT_SMOOTHING) });
  smoothing.setAttribute("aria-label", "smoothing");
  const smoothingText = h("span", "jcnb-live-smoothing-value");
  const scalarLog = (
    /** @type {HTMLInputElement} */
    h("input", "jcnb-live-scalar-log")
  );
  scalarLog.type = "checkbox";
  const smoothingLabel = h("label", "jcnb-live-tool", "smoothing ");
  smoothingLabel.append(smoothing, smoothingText);
  const scalarLogLabel = h("label", "jcnb-live-tool");
  scalarLogLabel.append(scalarLog, document.createTextNode(" log scale"));
  const outliers = (
    /** @type {HTMLInputElement} */
    h("input", "jcnb-live-outliers")
  );
  outliers.type = "checkbox";
  outliers.checked = true;
  const outliersLabel = h("label", "jcnb-live-tool");
  outliersLabel.title = "scale the value axis to the 5th\u201395th percentile of the values";
  outliersLabel.append(outliers, document.createTextNode(" ignore outliers"));
  const xAxis = (
    /** @type {HTMLSelectElement} */
    h("select", "jcnb-live-x-axis")
  );
  for (const [value, text] of Object.entries(X_AXES)) {
    const option = (
      /** @type {HTMLOptionElement} */
      h("option", "", text)
    );
    option.value = value;
    xAxis.append(option);
  }
  const xAxisLabel = h("label", "jcnb-live-tool", "x: ");
  xAxisLabel.title = "what the scalar charts' horizontal axis counts: steps, time since the run's first value, or the time of day";
  xAxisLabel.append(xAxis);
  scalarTools.append(smoothingLabel, scalarLogLabel, outliersLabel, xAxisLabel);
  const scalarsBox = h("div", "jcnb-live-scalars");
  scalarSection.append(scalarTools, scalarsBox);
  scalarSection.hidden = true;
  const gridTools = h("div", "jcnb-live-tools jcnb-live-grid-tools");
  const viewSwitch = h("span", "jcnb-live-views");
  viewSwitch.setAttribute("role", "group");
  viewSwitch.setAttribute("aria-label", "histogram view");
  for (const name of VIEWS) {
    const button = h("button", "jcnb-live-view-button", name);
    button.dataset.view = name;
    viewSwitch.append(button);
  }
  const countLog = (
    /** @type {HTMLInputElement} */
    h("input", "jcnb-live-count-log")
  );
  countLog.type = "checkbox";
  const countLogLabel = h("label", "jcnb-live-tool");
  countLogLabel.append(countLog, document.createTextNode(" log counts"));
  gridTools.append(h("span", "jcnb-muted", "histograms"), viewSwitch, countLogLabel);
  const key = h("div", "jcnb-key jcnb-live-key");
  const layerBox = h("span", "jcnb-live-layers");
  layerBox.setAttribute("role", "group");
  layerBox.setAttribute("aria-label", "what the heat view draws");
  for (const name of LAYERS) {
    const toggle = h("label", "jcnb-key-item jcnb-live-layer");
    toggle.dataset.layer = name;
    const box = (
      /** @type {HTMLInputElement} */
      h("input", "jcnb-live-layer-box")
    );
    box.type = "checkbox";
    box.dataset.layer = name;
    toggle.append(box, h("span", "jcnb-key-swatch"), h("span"));
    layerBox.append(toggle);
  }
  const keyItems = h("span", "jcnb-live-key-items");
  key.append(layerBox, keyItems);
  const grid = h("div", "jcnb-live-grid");
  const gridSection = h("div", "jcnb-live-grid-section");
  gridSection.append(gridTools, key, grid);
  gridSection.hidden = true;
  const detail = h("div", "jcnb-live-detail");
  detail.tabIndex = 0;
  detail.setAttribute("aria-label", "one step's histogram: Left and Right move a step, Home and End go to the first and last");
  detail.hidden = true;
  const detailTitle = h("div", "jcnb-live-title jcnb-live-detail-title");
  const stepRow = h("div", "jcnb-live-step-row");
  const range = (
    /** @type {HTMLInputElement} */
    h("input", "jcnb-live-slider")
  );
  range.type = "range";
  range.min = "0";
  range.setAttribute("aria-label", "recorded step");
  const stepInput = (
    /** @type {HTMLInputElement} */
    h("input", "jcnb-live-step-input")
  );
  stepInput.type = "number";
  stepInput.setAttribute("aria-label", "go to step");
  const stepNote = h("span", "jcnb-muted jcnb-live-step-note");
  stepRow.append(range, h("span", "jcnb-muted", "step"), stepInput, stepNote);
  const stepCanvas = (
    /** @type {HTMLCanvasElement} */
    h("canvas", "jcnb-live-step")
  );
  const numbers = h("div", "jcnb-live-numbers");
  const detailBody = h("div", "jcnb-live-detail-body");
  detailBody.append(stepCanvas, numbers);
  detail.append(detailTitle, stepRow, detailBody);
  root.append(head, legendRow, waiting, scalarSection, gridSection);
  grid.append(detail);
  const hover = (cls) => {
    const canvas = (
      /** @type {HTMLCanvasElement} */
      h("canvas", cls)
    );
    hoverReadOut(canvas, tooltip, (x, y) => readOuts.get(canvas)?.(x, y) ?? null);
    return canvas;
  };
  hoverReadOut(stepCanvas, tooltip, (x, y) => readOuts.get(stepCanvas)?.(x, y) ?? null);
  return {
    root,
    tooltip,
    hover,
    progress,
    silence,
    flag,
    zoomReset,
    filter,
    waiting,
    xAxis,
    legend,
    legendRow,
    runFilter,
    scalarSection,
    smoothing,
    smoothingText,
    scalarLog,
    outliers,
    scalarsBox,
    gridSection,
    viewSwitch,
    countLog,
    layerBox,
    keyItems,
    grid,
    detail,
    detailTitle,
    range,
    stepInput,
    stepNote,
    detailBody,
    stepCanvas,
    numbers
  };
}
function siteName(meta, i, runs) {
  const site = meta[i];
  if (!site) return "";
  const label = shownName(site.label);
  const name = site.kind === "activation" || site.kind === "gradient" ? `${label} (${site.kind})` : label;
  return runs.several ? `${name} in ${shownName(runs.names[site.run ?? 0])}` : name;
}
function drawLegend(ui, runs) {
  ui.legend.hidden = !runs.several;
  ui.legendRow.hidden = !runs.several;
  if (!runs.several) return;
  while (ui.legend.children.length < runs.names.length) {
    const button = h("button", "jcnb-live-run");
    button.dataset.run = String(ui.legend.children.length);
    button.append(h("span", "jcnb-key-swatch"), h("span", "jcnb-live-run-name"));
    ui.legend.append(button);
  }
  runs.names.forEach((name, run) => {
    const button = (
      /** @type {HTMLElement} */
      ui.legend.children[run]
    );
    const shown = runs.shown(run);
    button.children[0].style.background = shown ? runs.colour(run) : "transparent";
    button.children[0].style.borderColor = runs.colour(run);
    setName(
      /** @type {HTMLElement} */
      button.children[1],
      name
    );
    button.classList.toggle("jcnb-off", !shown);
    button.setAttribute("aria-pressed", String(shown));
    button.classList.toggle("jcnb-filtered", !runs.matched(run));
    button.title = runs.matched(run) ? `${shown ? "hide" : "show"} run ${shownName(name)}` : `run ${shownName(name)}: the run filter leaves it out`;
  });
}
function drawProgress(ui, state, progress, meta, scalars, runs, found2) {
  const { root, waiting, flag } = ui;
  const p = progress || {};
  const compiling = !p.done && !hasRows(state.rows);
  root.dataset.compiling = String(compiling);
  waiting.hidden = !compiling;
  if (compiling) {
    waiting.replaceChildren(h("span", "jcnb-spinner"), document.createTextNode(
      p.seen ? " waiting for the first recorded step\u2026" : " compiling\u2026 the charts appear when the first step has run"
    ));
    ui.progress.textContent = p.seen ? `${counted(p.seen, "step")} run` : "";
  } else {
    ui.progress.textContent = runs.several ? runsProgress(p, runs) : oneRunProgress(state.silentFor ? { ...p, eta: null } : p);
  }
  const range = state.stepRange;
  ui.zoomReset.hidden = !range;
  ui.zoomReset.textContent = range ? `steps ${Math.ceil(range[0])}\u2013${Math.floor(range[1])} \xD7` : "";
  ui.zoomReset.title = "zoomed: show every step (or double-click a chart)";
  ui.silence.hidden = !state.silentFor;
  ui.silence.textContent = !state.silentFor ? "" : state.kernelGone ? `the kernel restarted or shut down: the run stopped after ${counted(p.seen ?? 0, "step")}; the view shows what it last heard` : `no word from the kernel for ${Math.round(state.silentFor)} s: it may have stopped (a restart or a crash); the view shows what it last heard`;
  root.dataset.silent = String(Boolean(state.silentFor));
  flag.hidden = !found2;
  if (found2) {
    const last = found2.lastFinite == null ? "" : ` \xB7 last finite step ${found2.lastFinite}`;
    const name = found2.site >= 0 ? siteName(meta, found2.site, runs) : siteName(scalars, found2.scalar, runs);
    flag.textContent = `first NaN/Inf: ${name} at step ${found2.step}${last}`;
    flag.dir = "auto";
    flag.title = found2.site >= 0 ? "open this site at that step" : "show this scalar's chart";
    flag.dataset.site = String(found2.site);
    flag.dataset.scalar = String(found2.scalar);
    flag.dataset.step = String(found2.step);
    if (found2.lastFinite != null) flag.dataset.lastFinite = String(found2.lastFinite);
  }
  root.dataset.steps = String(p.recorded ?? 0);
  root.dataset.seen = String(p.seen ?? 0);
  root.dataset.done = p.done ? "true" : "false";
}
function oneRunProgress(p) {
  const parts = [p.total ? `${p.seen ?? 0} / ${counted(p.total, "step")}` : counted(p.seen ?? 0, "step")];
  if ((p.rate ?? 0) > 0) parts.push(`${p.rate} steps/s`);
  if (p.eta != null && !p.done) parts.push(`ETA ${p.eta < 90 ? `${Math.round(p.eta)} s` : `${Math.round(p.eta / 60)} min`}`);
  parts.push(`${p.recorded ?? 0} recorded`);
  if (p.done) parts.push(p.ended || "done");
  return parts.join(" \xB7 ");
}
function runsProgress(p, runs) {
  const each = (p.runs || []).map((r, run) => `${runs.names[run]}: ${counted(r.seen, "step")}, ${r.done ? r.ended || "done" : "running"}`);
  return [counted(runs.names.length, "run"), ...each].join(" \xB7 ");
}

// js/live_zoom.js
function zoomOf(ui) {
  const box = h("div", "jcnb-live-zoom-box");
  box.hidden = true;
  ui.root.append(box);
  return { drag: null, dragged: false, box };
}
function clientX(canvas, event) {
  return event.clientX - canvas.getBoundingClientRect().left;
}
function startZoom(zoom, event) {
  const canvas = event.target;
  if (event.button !== 0 || !(canvas instanceof HTMLCanvasElement) || !STEP_AT.has(canvas)) return;
  const at = clientX(canvas, event);
  zoom.drag = { canvas, from: at, to: at };
  zoom.dragged = false;
}
function dragZoom(zoom, ui, event) {
  const { drag } = zoom;
  if (!drag) return;
  drag.to = clientX(drag.canvas, event);
  if (Math.abs(drag.to - drag.from) < 4) return;
  const box = drag.canvas.getBoundingClientRect();
  const root = ui.root.getBoundingClientRect();
  Object.assign(zoom.box.style, {
    left: `${box.left - root.left + Math.min(drag.from, drag.to)}px`,
    top: `${box.top - root.top}px`,
    width: `${Math.abs(drag.to - drag.from)}px`,
    height: `${box.height}px`
  });
  zoom.box.hidden = false;
}
function endZoom(zoom, state) {
  const { drag } = zoom;
  if (!drag) return false;
  const { canvas, from, to } = drag;
  zoom.drag = null;
  zoom.box.hidden = true;
  if (Math.abs(to - from) < 4) return false;
  const stepAt = (
    /** @type {(px: number) => number} */
    STEP_AT.get(canvas)
  );
  zoom.dragged = true;
  state.stepRange = [stepAt(Math.min(from, to)), stepAt(Math.max(from, to))];
  state.pinnedStep = null;
  return true;
}
function zoomOut(state) {
  if (!state.stepRange) return false;
  state.stepRange = null;
  return true;
}
function zoomOutAt(state, event) {
  return event.target instanceof HTMLCanvasElement && STEP_AT.has(event.target) && zoomOut(state);
}

// js/live_view.js
function liveWidget() {
  const rows = liveRows();
  const take = (model) => applyUpdate(rows, model.get("_update"), model.get("_bins"), model.get("_stat_columns").length);
  return {
    /** @param {{ model: any }} ctx */
    initialize({ model }) {
      take(model);
      const onUpdate = () => take(model);
      model.on("change:_update", onUpdate);
      return () => model.off("change:_update", onUpdate);
    },
    /** @param {{ model: any, el: HTMLElement }} ctx */
    render: ({ model, el }) => render(model, el, rows, take)
  };
}
function liveView(model, el, rows, take) {
  const readOuts = /* @__PURE__ */ new Map();
  const ui = liveLayout(readOuts);
  const schema = schemaOf(model);
  applyColours(ui.root, schema);
  el.append(ui.root);
  const stats = statColumns(model.get("_stat_columns"), schema);
  const paint = { frame: 0, missed: false, drawnWidth: -1 };
  return { model, el, rows, take, ui, readOuts, schema, stats, state: liveState(rows), paint, zoom: zoomOf(ui) };
}
function entries(view, trait) {
  return view.model.get(trait).map((e) => ({ ...e, label: shownName(e.label) }));
}
function found(view) {
  return firstNonfinite(view.rows, view.model.get("_progress"), view.stats);
}
function runsNow(view) {
  return runsOf(view.model.get("_runs").map(shownName), view.schema, view.state, themeOf(view.ui.root));
}
function drawScalarCards(view) {
  drawScalars(view.ui, view.state, entries(view, "_scalars"), runsNow(view), found(view), view.readOuts);
}
function draw(view) {
  const { model, el, ui, state, stats, readOuts, paint } = view;
  paint.frame = 0;
  recheck(view);
  if (!laidOut(view)) {
    paint.missed = true;
    return;
  }
  paint.drawnWidth = ui.grid.clientWidth;
  const meta = entries(view, "_sites");
  const groups = groupsOf(meta);
  const runs = runsNow(view);
  const first = found(view);
  drawProgress(ui, state, model.get("_progress"), meta, entries(view, "_scalars"), runs, first);
  drawLegend(ui, runs);
  drawScalarCards(view);
  drawKey(ui, state, stats, runs, first);
  drawCards(ui, state, stats, meta, groups, runs, first, readOuts);
  drawDetail(ui, state, stats, meta, groups, runs, first, readOuts);
  ui.root.dataset.ready = "true";
  el.classList.add("jcnb-ready");
}
function laidOut(view) {
  return view.el.isConnected && view.ui.root.clientWidth > 0;
}
function schedule(view) {
  const { paint } = view;
  if (!view.el.isConnected) {
    paint.missed = true;
    return;
  }
  if (!paint.frame) paint.frame = requestAnimationFrame(() => draw(view));
}
function catchUp(view) {
  const { paint } = view;
  if ((paint.missed || view.ui.grid.clientWidth !== paint.drawnWidth) && laidOut(view)) {
    paint.missed = false;
    schedule(view);
  }
}
function recheck(view) {
  requestAnimationFrame(() => catchUp(view));
}
function selectedSteps(view) {
  const { rows, state } = view;
  const group = groupsOf(entries(view, "_sites"))[state.selected];
  return group ? unionSteps(shownMembers(group, entries(view, "_sites"), rows.sites, runsNow(view))) : [];
}
function showRow(view, k) {
  const steps = selectedSteps(view);
  if (!steps.length) return;
  const at = Math.min(Math.max(k, 0), steps.length - 1);
  view.state.pinnedStep = at === steps.length - 1 ? null : steps[at];
  draw(view);
}
function onGridClick(view, event) {
  const { ui, state, zoom } = view;
  if (
    /** @type {HTMLElement} */
    event.target.closest(".jcnb-live-card-tools")
  ) return;
  if (zoom.dragged) return void (zoom.dragged = false);
  const card = (
    /** @type {HTMLElement | null} */
    /** @type {HTMLElement} */
    event.target.closest(".jcnb-live-card")
  );
  if (!card) return;
  state.selected = Number(card.dataset.site) === state.selected ? -1 : Number(card.dataset.site);
  state.pinnedStep = null;
  draw(view);
  if (state.selected >= 0) ui.detail.scrollIntoView({ block: "nearest" });
}
function onFlag(view) {
  const { rows, ui, state } = view;
  const first = found(view);
  if (!first) return;
  if (first.site < 0) {
    const entry = entries(view, "_scalars")[first.scalar];
    state.hiddenRuns.delete(entry?.run ?? 0);
    draw(view);
    const chart = ui.scalarsBox.children[groupsOf(entries(view, "_scalars")).findIndex((g) => g.members.includes(first.scalar))];
    if (chart) chart.scrollIntoView({ block: "nearest" });
    return;
  }
  state.selected = groupsOf(entries(view, "_sites")).findIndex((g) => g.members.includes(first.site));
  state.hiddenRuns.delete(entries(view, "_sites")[first.site]?.run ?? 0);
  const s = rows.sites[first.site];
  state.pinnedStep = s && first.row >= 0 ? s.steps[first.row] : first.step;
  ui.filter.value = "";
  draw(view);
  ui.detail.focus({ preventScroll: true });
  ui.detail.scrollIntoView({ block: "nearest" });
}
function onDetailKey(view, event) {
  const { ui, state } = view;
  if (event.target === ui.stepInput) {
    event.stopPropagation();
    if (event.key === "Enter") {
      event.preventDefault();
      onStepTyped(view);
    }
    return;
  }
  if (event.target === ui.range) {
    event.stopPropagation();
    return;
  }
  const steps = selectedSteps(view);
  if (event.target !== ui.detail || !steps.length) return;
  const k = nearestIndex(
    steps,
    /** @type {number} */
    shownStep(state, steps)
  );
  const moves = { ArrowLeft: k - 1, ArrowRight: k + 1, ArrowDown: k - 1, ArrowUp: k + 1, Home: 0, End: steps.length - 1 };
  if (!(event.key in moves)) return;
  event.preventDefault();
  event.stopPropagation();
  showRow(view, moves[event.key]);
}
function onStepTyped(view) {
  const { ui } = view;
  const steps = selectedSteps(view);
  const typed = Number(ui.stepInput.value);
  if (!steps.length || ui.stepInput.value.trim() === "" || !Number.isFinite(typed)) return;
  const k = nearestIndex(steps, typed);
  ui.stepInput.value = String(steps[k]);
  showRow(view, k);
}
function onViewSwitch(view, event) {
  const button = (
    /** @type {HTMLElement} */
    event.target.closest("button")
  );
  if (!button || !button.dataset.view) return;
  view.state.view = button.dataset.view;
  draw(view);
}
function onLayer(view, event) {
  const box = (
    /** @type {HTMLInputElement} */
    event.target
  );
  if (!box.dataset.layer) return;
  view.state.layers[
    /** @type {keyof Layers} */
    box.dataset.layer
  ] = box.checked;
  draw(view);
}
function onLegend(view, event) {
  const { state } = view;
  const button = (
    /** @type {HTMLElement} */
    event.target.closest("button")
  );
  if (!button || button.dataset.run == null) return;
  const run = Number(button.dataset.run);
  if (state.hiddenRuns.has(run)) state.hiddenRuns.delete(run);
  else state.hiddenRuns.add(run);
  draw(view);
}
function onCardTool(view, event) {
  const { rows, ui, state, stats } = view;
  const button = (
    /** @type {HTMLElement | null} */
    /** @type {HTMLElement} */
    event.target.closest(".jcnb-live-card-tools button")
  );
  if (!button) return;
  const card = (
    /** @type {HTMLElement} */
    button.closest(".jcnb-live-card, .jcnb-live-scalar")
  );
  const isSite = card.classList.contains("jcnb-live-card");
  const trait = isSite ? "_sites" : "_scalars";
  const index = isSite ? Number(card.dataset.site) : [...ui.scalarsBox.children].indexOf(card);
  if (button.classList.contains("jcnb-live-expand")) {
    const key = `${isSite ? "site" : "scalar"} ${index}`;
    if (!state.expanded.delete(key)) state.expanded.add(key);
    draw(view);
    card.scrollIntoView({ block: "nearest" });
    return;
  }
  const group = groupsOf(entries(view, trait))[index];
  if (!group) return;
  const members = shownMembers(group, entries(view, trait), isSite ? rows.sites : rows.scalars, runsNow(view));
  const table = isSite ? siteTable(members, stats) : scalarTable(members);
  exportTable(button, table, group.label, group.kind || "scalar");
}
var HOST_CLOSE_EVENTS = ["comm:close", "comm_live_update"];
function watchSilence(view) {
  const { model, state } = view;
  let heardAt = performance.now();
  const onProgress = () => {
    heardAt = performance.now();
    if (state.silentFor) state.silentFor = 0;
    state.kernelGone = false;
    schedule(view);
  };
  const timer = setInterval(() => {
    const p = model.get("_progress") || {};
    const quiet = (performance.now() - heardAt) / 1e3;
    const silent = p.silence && !p.done && (state.kernelGone || quiet > p.silence) ? Math.max(quiet, 1) : 0;
    if (Boolean(silent) !== Boolean(state.silentFor) || silent && Math.round(silent) !== Math.round(state.silentFor)) {
      state.silentFor = silent;
      schedule(view);
    }
  }, 1e3);
  const onClosed = () => {
    const p = model.get("_progress") || {};
    if (!p.silence || p.done) return;
    state.kernelGone = true;
    state.silentFor = Math.max((performance.now() - heardAt) / 1e3, 1);
    schedule(view);
  };
  for (const name of HOST_CLOSE_EVENTS) model.on(name, onClosed);
  model.on("change:_progress", onProgress);
  return () => {
    model.off("change:_progress", onProgress);
    for (const name of HOST_CLOSE_EVENTS) model.off(name, onClosed);
    clearInterval(timer);
  };
}
function listen(view) {
  const { model, ui, state, zoom } = view;
  const redraw = () => draw(view);
  const scalars = () => drawScalarCards(view);
  const noShortcut = (event) => event.stopPropagation();
  const handlers = [
    [ui.grid, "click", (event) => onGridClick(view, event)],
    [ui.root, "click", (event) => onCardTool(view, event)],
    [ui.root, "pointerdown", (event) => startZoom(zoom, event)],
    [window, "pointermove", (event) => dragZoom(zoom, ui, event)],
    [window, "pointerup", () => endZoom(zoom, state) && redraw()],
    [ui.root, "dblclick", (event) => zoomOutAt(state, event) && redraw()],
    [ui.zoomReset, "click", () => zoomOut(state) && redraw()],
    [ui.flag, "click", () => onFlag(view)],
    [ui.filter, "input", redraw],
    [ui.filter, "keydown", noShortcut],
    [ui.detail, "keydown", (event) => onDetailKey(view, event)],
    [ui.stepInput, "change", () => onStepTyped(view)],
    [ui.range, "input", () => showRow(view, Number(ui.range.value))],
    [ui.viewSwitch, "click", (event) => onViewSwitch(view, event)],
    [ui.layerBox, "change", (event) => onLayer(view, event)],
    [ui.legend, "click", (event) => onLegend(view, event)],
    [
      ui.runFilter,
      "input",
      () => {
        state.runMatches = siteMatcher(ui.runFilter);
        redraw();
      }
    ],
    [ui.runFilter, "keydown", noShortcut],
    [ui.countLog, "change", redraw],
    [ui.smoothing, "input", scalars],
    [ui.scalarLog, "change", scalars],
    [ui.outliers, "change", scalars],
    [ui.xAxis, "change", scalars],
    [ui.xAxis, "keydown", noShortcut]
  ];
  for (const [target, type, handler] of handlers) target.addEventListener(type, handler);
  const resized = new ResizeObserver(() => catchUp(view));
  resized.observe(ui.root);
  const stopTheme = onThemeChange(() => schedule(view));
  const receive = () => {
    view.take(model);
    schedule(view);
  };
  model.on("change:_update", receive);
  const stopSilence = watchSilence(view);
  return () => {
    stopTheme();
    resized.disconnect();
    for (const [target, type, handler] of handlers) if (target === window) window.removeEventListener(type, handler);
    ui.tooltip.node.remove();
    model.off("change:_update", receive);
    stopSilence();
    if (view.paint.frame) cancelAnimationFrame(view.paint.frame);
  };
}
function render(model, el, rows, take) {
  const view = liveView(model, el, rows, take);
  const stop = listen(view);
  take(model);
  draw(view);
  return stop;
}
var live_view_default = liveWidget;
export {
  live_view_default as default
};
