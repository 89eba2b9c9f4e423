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
  const left2 = margin.left ?? 40;
  const right = margin.right ?? 6;
  const top = margin.top ?? 6;
  const bottom = margin.bottom ?? 18;
  return { x: left2, y: top, w: Math.max(1, w - left2 - right), h: Math.max(1, hgt - top - bottom) };
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
    const left2 = event.clientX + 14 + box.width > innerWidth ? event.clientX - 10 - box.width : event.clientX + 14;
    const top = event.clientY + 14 + box.height > innerHeight ? event.clientY - 10 - box.height : event.clientY + 14;
    this.node.style.left = `${Math.max(0, left2)}px`;
    this.node.style.top = `${Math.max(0, top)}px`;
    const placed = this.node.getBoundingClientRect();
    const dx = placed.left - Math.max(0, left2);
    const dy = placed.top - Math.max(0, top);
    if (dx || dy) {
      this.node.style.left = `${Math.max(0, left2) - dx}px`;
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
function setName(el, text) {
  el.textContent = shownName(text);
  el.dir = "auto";
  return el;
}

// js/compare_data.js
var COMPARISON_TRAITS = ["_modes", "_sites", "_stats", "_hists", "_ranges", "_shifts", "_bins", "_note", "_noun"];
function percent(share) {
  return `${(100 * share).toFixed(1)}%`;
}
function sharesOf(hist) {
  let total = 0;
  for (const c of hist) total += c;
  return total > 0 ? Array.from(hist, (c) => c / total) : null;
}
function shareTop(shares) {
  return Math.max(1e-12, ...shares.flatMap((s) => s ?? []));
}
function shareScale(top, box, sqrt) {
  return (v) => box.y + box.h - box.h * (sqrt ? Math.sqrt(v / top) : v / top);
}
function readComparison(model, prefix) {
  const get = (name) => model.get(prefix + name);
  const schema = schemaOf(model);
  const modes = get("_modes") || [];
  const own = get("_colours");
  const colours = own && own.length ? own : schema.modeColours;
  const sites = get("_sites") || [];
  const columns = get("_stat_columns") || [];
  const bins = get("_bins") || 1;
  const stats = new Float64Array(bytesOf(get("_stats")));
  const hists = new Int32Array(bytesOf(get("_hists")));
  const ranges = new Float64Array(bytesOf(get("_ranges")));
  const shifts = new Float64Array(bytesOf(get("_shifts")));
  const m = modes.length;
  const k = columns.length;
  return {
    schema,
    modes,
    sites,
    /** What the comparison needs said beside its numbers (Comparison.note); "" when nothing. @type {string} */
    note: get("_note") || "",
    /** What is compared, as the texts name it: "mode" or "run" (Comparison.noun). @type {string} */
    noun: get("_noun") || "mode",
    columns,
    /** The statistics each row shows per mode: those the schema marks compact (the detail shows all). */
    tableColumns: columns.filter((key) => schema.stat(key).compact),
    bins,
    /** @param {number} mode */
    colour: (mode) => colours[mode % colours.length],
    colours: modes.map((_, mode) => colours[mode % colours.length]),
    /** @param {number} i @param {number} mode @param {string} column */
    stat: (i, mode, column) => stats[(i * m + mode) * k + columns.indexOf(column)],
    /** @param {number} i */
    shares: (i) => modes.map((_, mode) => sharesOf(hists.subarray((i * m + mode) * bins, (i * m + mode + 1) * bins))),
    /** @param {number} i @param {number} mode @param {number} bin */
    count: (i, mode, bin) => hists[(i * m + mode) * bins + bin],
    /** @param {number} i @returns {[number, number]} */
    range: (i) => [ranges[2 * i], ranges[2 * i + 1]],
    /** @param {number} i @param {number} mode */
    modeShift: (i, mode) => shifts[i * m + mode],
    /** The largest shift over the modes, as SiteComparison.shift. @param {number} i */
    shift: (i) => {
      let best = NaN;
      for (let mode = 0; mode < m; mode++) {
        const s = shifts[i * m + mode];
        if (!Number.isNaN(s) && !(best >= s)) best = s;
      }
      return best;
    },
    /** Labels of the modes that did not reach the site. @param {number} i */
    missing: (i) => modes.filter((_, mode) => !sites[i].shapes[mode]),
    /** Whether every mode gave site i the same values. @param {number} i */
    same: (i) => sites[i].same === true
  };
}
function sameText(d) {
  return `same in all ${d.noun}s`;
}
function shiftNote(d) {
  return d.schema.shiftNote.replace("{noun}", d.noun);
}

// js/compare_table.js
var SPARK = { width: 88, height: 26 };
var SHIFT_BAR = 20;
var CELL_PAD = 8;
var NUMBER_FONT = "11px";
var SITE_MIN = 120;
var SITE_MAX = 280;
function drawOverlay(ctx, shares, colours, box, y, style) {
  shares.forEach((share, m) => {
    if (!share) return;
    const step = box.w / share.length;
    ctx.beginPath();
    ctx.moveTo(box.x, box.y + box.h);
    share.forEach((v, i) => {
      ctx.lineTo(box.x + i * step, y(v));
      ctx.lineTo(box.x + (i + 1) * step, y(v));
    });
    ctx.lineTo(box.x + box.w, box.y + box.h);
    const colour = colours[m % colours.length];
    if (style.fill > 0) {
      ctx.fillStyle = faded(colour, style.fill);
      ctx.fill();
    }
    ctx.strokeStyle = colour;
    ctx.lineWidth = style.width;
    ctx.lineJoin = "miter";
    ctx.stroke();
  });
}
function compactNumber(x) {
  if (x === null || Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  if (x === 0) return "0";
  const a = Math.abs(x);
  if (a >= 0.01 && a < 1e4) return String(Number(x.toPrecision(3)));
  const [mantissa, exponent] = x.toExponential(2).split("e");
  return `${Number(mantissa)}e${exponent}`;
}
function cellText(d, key, x) {
  return d.schema.stat(key).format === "number" ? compactNumber(x) : d.schema.text(key, x);
}
function modeLabel(text, colour) {
  const item = setName(h("span", "jcnb-cmp-mode"), text);
  item.style.setProperty("--jcnb-mode", colour);
  return item;
}
function drawLegend(legend, d) {
  legend.replaceChildren();
  d.modes.forEach((label, mode) => {
    const item = modeLabel(label, d.colour(mode));
    item.dataset.mode = String(mode);
    item.title = mode === 0 ? `${shownName(label)}: the reference, shifts are measured against it` : shownName(label);
    legend.appendChild(item);
  });
}
function naturalWidths(root, d) {
  const ctx = document.createElement("canvas").getContext("2d");
  const measurer = (font2) => {
    if (!ctx) return (text2) => 7.5 * text2.length;
    return (text2) => {
      ctx.font = font2;
      return ctx.measureText(text2).width;
    };
  };
  const style = getComputedStyle(root);
  const family = style.fontFamily || "monospace";
  const font = `${style.fontSize || "12px"} ${family}`;
  const text = measurer(font);
  const bold = measurer(`bold ${font}`);
  const number = measurer(`${NUMBER_FONT} ${family}`);
  const boldNumber = measurer(`bold ${NUMBER_FONT} ${family}`);
  const widest = (texts, measure = text) => Math.max(0, ...texts.map(measure));
  const rows = d.sites.map((_, i) => i);
  const site = Math.max(bold("site"), widest(d.sites.map((s) => shownName(s.label))));
  const shift = Math.max(bold("shift"), SHIFT_BAR + 4 + widest(rows.map((i) => compactNumber(d.shift(i)))));
  const stats = {};
  const tight = {};
  for (const key of d.tableColumns) {
    const cells = widest(rows.flatMap((i) => d.modes.map((_, mode) => cellText(d, key, d.stat(i, mode, key)))), number);
    const label = d.schema.label(key);
    stats[key] = Math.ceil(Math.max(boldNumber(label), cells) + CELL_PAD + 2);
    tight[key] = Math.ceil(Math.max(...label.split(/\s+/).map(boldNumber), cells) + CELL_PAD + 2);
  }
  return {
    site: Math.ceil(site + CELL_PAD + 4),
    shift: Math.ceil(shift + CELL_PAD + 2),
    hist: Math.max(SPARK.width, Math.ceil(bold("histograms"))) + CELL_PAD,
    stats,
    tight,
    // Each mode's label over its columns, whole (.jcnb-cmp-group has a margin of 4px a side).
    groups: d.modes.map((label) => Math.ceil(bold(shownName(label)) + CELL_PAD + 8))
  };
}
function fitColumns(root, table, d, widths) {
  const room = table.clientWidth;
  const wanted = Math.min(SITE_MAX, Math.max(SITE_MIN, widths.site));
  const statsOf = (byKey) => d.modes.flatMap(() => d.tableColumns.map((key) => byKey[key]));
  const restOf = (stats2) => widths.shift + widths.hist + stats2.reduce((a, b) => a + b, 0);
  let stats = statsOf(widths.stats);
  const wrapped = room > 0 && wanted + restOf(stats) > room;
  if (wrapped) stats = statsOf(widths.tight);
  const site = room > 0 ? Math.max(SITE_MIN, Math.min(wanted, room - restOf(stats))) : wanted;
  let spare = room - site - restOf(stats);
  const k = d.tableColumns.length;
  d.modes.forEach((_, mode) => {
    const own = stats.slice(mode * k, (mode + 1) * k);
    const more = Math.floor(Math.min(spare, widths.groups[mode] - own.reduce((a, b) => a + b, 0)));
    if (more <= 0 || !k) return;
    for (let j = 0; j < k; j++) stats[mode * k + j] += Math.floor(more / k) + (j < more % k ? 1 : 0);
    spare -= more;
  });
  const rest = restOf(stats);
  const columns = [site, widths.shift, widths.hist, ...stats].map((w) => `${w}px`).join(" ");
  root.style.setProperty("--jcnb-cmp-columns", columns);
  root.classList.toggle("jcnb-cmp-wrapped", wrapped);
  root.dataset.fits = String(room === 0 || site + rest <= room);
}
function tableHeads(d) {
  const heads = h("div", "jcnb-cmp-heads");
  const groups = h("div", "jcnb-cmp-row jcnb-cmp-groups");
  groups.append(h("span", "jcnb-cmp-frozen"), h("span"), h("span"));
  d.modes.forEach((label, mode) => {
    const group = setName(h("span", "jcnb-cmp-cell jcnb-cmp-group"), label);
    group.style.setProperty("--jcnb-mode", d.colour(mode));
    group.style.gridColumn = `span ${d.tableColumns.length}`;
    group.dataset.mode = String(mode);
    group.title = shownName(label);
    groups.appendChild(group);
  });
  const names = h("div", "jcnb-cmp-row jcnb-cmp-head");
  names.append(h("span", "jcnb-cmp-cell jcnb-cmp-frozen", "site"), h("span", "jcnb-cmp-cell", "shift"));
  const histHead = h("span", "jcnb-cmp-cell", "histograms");
  histHead.title = `share of each ${d.noun}'s values per bin, on the site's shared range (square-root scale)`;
  names.appendChild(histHead);
  d.modes.forEach((label, mode) => {
    for (const key of d.tableColumns) {
      const name = d.schema.label(key);
      const cell = h("span", "jcnb-cmp-cell jcnb-cmp-num jcnb-cmp-marked", name);
      cell.style.setProperty("--jcnb-mode", d.colour(mode));
      cell.dataset.key = key;
      cell.dataset.mode = String(mode);
      cell.title = `${name} in ${shownName(label)}`;
      names.appendChild(cell);
    }
  });
  heads.append(groups, names);
  return heads;
}
function sameCell(d) {
  const cell = h("span", "jcnb-cmp-cell jcnb-cmp-same", sameText(d));
  cell.style.gridColumn = `span ${d.tableColumns.length * (d.modes.length - 1)}`;
  const others = d.modes.slice(1).map(shownName).join(", ");
  cell.title = `${sameText(d)}: ${others} gave this site the same values as ${shownName(d.modes[0])}, whose statistics the row shows`;
  return cell;
}
function tableRow(d, i, maxShift) {
  const site = d.sites[i];
  const row = h("div", "jcnb-cmp-row jcnb-cmp-body");
  const shift = d.shift(i);
  const same = d.same(i);
  row.dataset.site = site.site;
  row.dataset.label = site.label;
  row.dataset.shift = String(shift);
  row.dataset.index = String(i);
  row.dataset.same = String(same);
  row.tabIndex = 0;
  const name = setName(h("span", "jcnb-cmp-cell jcnb-cmp-site jcnb-cmp-frozen"), site.label);
  const nans = d.modes.map((label, mode) => [shownName(label), d.stat(i, mode, "nan")]).filter(([, n]) => Number(n) > 0);
  name.title = `${shownName(site.label)}
${shownName(site.site)} (${shownName(site.type)})` + nans.map(([label, n]) => `
${n} NaN in ${label}`).join("") + (same ? `
${sameText(d)}` : "");
  if (nans.length) row.classList.add("jcnb-cmp-nonfinite");
  row.appendChild(name);
  const shiftCell = h("span", "jcnb-cmp-cell jcnb-cmp-shift");
  if (Number.isNaN(shift)) {
    shiftCell.textContent = "\u2013";
    const missing = d.missing(i);
    shiftCell.title = missing.length ? `no shift: the site is missing in ${missing.map(shownName).join(", ")}` : `no shift: the site has no statistics in a ${d.noun}`;
  } else {
    const track = h("span", "jcnb-cmp-track");
    const bar = h("span", "jcnb-cmp-bar");
    bar.style.width = `${100 * Math.min(1, shift / maxShift)}%`;
    track.appendChild(bar);
    shiftCell.append(track, h("span", "", compactNumber(shift)));
    shiftCell.title = `shift ${fmt(shift)}`;
  }
  row.appendChild(shiftCell);
  const spark = (
    /** @type {HTMLCanvasElement} */
    h("canvas", "jcnb-cmp-spark")
  );
  const ctx = sized(spark, SPARK.width, SPARK.height);
  const shares = d.shares(i);
  const box = { x: 0.5, y: 1, w: SPARK.width - 1, h: SPARK.height - 2 };
  drawOverlay(ctx, shares, d.colours, box, shareScale(shareTop(shares), box, true), { fill: 0.12, width: 1 });
  const sparkCell = h("span", "jcnb-cmp-cell");
  sparkCell.appendChild(spark);
  row.appendChild(sparkCell);
  d.modes.forEach((label, mode) => {
    if (same && mode > 0) return;
    const reached = Boolean(site.shapes[mode]);
    for (const key of d.tableColumns) {
      const value = d.stat(i, mode, key);
      const cell = h("span", "jcnb-cmp-cell jcnb-cmp-num", reached ? cellText(d, key, value) : "\u2013");
      cell.dataset.key = key;
      cell.dataset.mode = String(mode);
      cell.title = reached ? `${d.schema.label(key)} in ${shownName(label)}: ${d.schema.text(key, value)}` : `not reached in ${shownName(label)}`;
      row.appendChild(cell);
    }
  });
  if (same) row.appendChild(sameCell(d));
  return row;
}
function drawTable(root, table, d) {
  table.replaceChildren();
  const widths = naturalWidths(root, d);
  const fit = () => fitColumns(root, table, d, widths);
  fit();
  table.appendChild(tableHeads(d));
  const finite = d.sites.map((_, i) => d.shift(i)).filter((s) => Number.isFinite(s));
  const maxShift = Math.max(1e-12, ...finite);
  const rows = d.sites.map((_, i) => tableRow(d, i, maxShift));
  table.append(...rows);
  if (!d.sites.length) table.appendChild(h("div", "jcnb-cmp-empty", "(no site was recorded; check include=)"));
  return { rows, fit };
}
function applyFilter(ui, rows, d) {
  const { root, title } = ui;
  const matches = siteMatcher(ui.filter);
  let shown = 0;
  for (const row of rows) {
    row.hidden = ![row.dataset.site, row.dataset.label].some((text) => matches(text ?? ""));
    shown += row.hidden ? 0 : 1;
  }
  root.dataset.visibleRows = String(shown);
  const n = d.sites.length;
  title.textContent = (shown < n ? `${shown} of ${n} sites` : `${n} site${n === 1 ? "" : "s"}`) + ", largest shift first";
}

// js/compare_detail.js
var LARGE = { width: 540, height: 240, left: 52, right: 14, top: 10, bottom: 22 };
var HOVER_HINT = "hover the histogram for a bin's counts";
function binText(d, i, bin, shares) {
  const [lo, hi] = d.range(i);
  const width = (hi - lo) / d.bins;
  const lines = [`values in [${fmt(lo + bin * width)}, ${fmt(lo + (bin + 1) * width)})`];
  d.modes.forEach((label, mode) => {
    const share = shares[mode];
    const name = shownName(label);
    lines.push(share ? `${name}: ${d.count(i, mode, bin)} (${percent(share[bin])})` : `${name}: not reached`);
  });
  return lines.join("\n");
}
function paintLarge(canvas, root, d, i, hover, sqrtScale) {
  const ctx = sized(canvas, LARGE.width, LARGE.height);
  const theme = themeOf(root);
  const box = plotBox(LARGE.width, LARGE.height, LARGE);
  const shares = d.shares(i);
  const [lo, hi] = d.range(i);
  const top = shareTop(shares);
  const x = linearScale(lo, hi, box.x, box.x + box.w);
  const y = shareScale(top, box, sqrtScale);
  const xTicks = x.ticks(6);
  const yTicks = niceTicks(0, top, 4);
  const yText = (v) => `${tickText(100 * v)}%`;
  ctx.clearRect(0, 0, LARGE.width, LARGE.height);
  drawAxes(ctx, box, { theme, x, xTicks, y, yTicks, yText, yLabel: sqrtScale ? "share (\u221A scale)" : "share" });
  canvas.dataset.xTicks = xTicks.map(tickText).join(" ");
  canvas.dataset.yTicks = yTicks.map(yText).join(" ");
  if (hover >= 0) {
    ctx.fillStyle = faded(theme.fg2, 0.18);
    ctx.fillRect(box.x + hover * box.w / d.bins, box.y, box.w / d.bins, box.h);
  }
  if (lo < 0 && hi > 0) {
    const zero = Math.round(x(0)) + 0.5;
    ctx.strokeStyle = faded(theme.fg2, 0.6);
    ctx.setLineDash([3, 3]);
    ctx.beginPath();
    ctx.moveTo(zero, box.y);
    ctx.lineTo(zero, box.y + box.h);
    ctx.stroke();
    ctx.setLineDash([]);
  }
  drawOverlay(ctx, shares, d.colours, box, y, { fill: 0.14, width: 1.5 });
  canvas.dataset.drawn = "1";
}
function drawDetail(ui, d, i, sqrtScale, onScale) {
  const { root, detail, tooltip } = ui;
  detail.replaceChildren();
  detail.hidden = false;
  const site = d.sites[i];
  const heading = h("div", "jcnb-cmp-detail-title");
  heading.append(setName(h("span", "jcnb-cmp-detail-site"), site.label), h("span", "jcnb-cmp-detail-type", ` ${site.type}`));
  const body = h("div", "jcnb-cmp-detail-body");
  const figure = h("div", "jcnb-cmp-figure");
  const key = h("div", "jcnb-cmp-key");
  const shares = d.shares(i);
  d.modes.forEach((label, mode) => key.appendChild(modeLabel(shares[mode] ? label : `${label} (missing)`, d.colour(mode))));
  const scaleBox = h("label", "jcnb-cmp-scale");
  const check = (
    /** @type {HTMLInputElement} */
    h("input")
  );
  check.type = "checkbox";
  check.checked = sqrtScale;
  scaleBox.append(check, document.createTextNode(" square-root scale"));
  key.appendChild(scaleBox);
  const canvas = (
    /** @type {HTMLCanvasElement} */
    h("canvas", "jcnb-cmp-large")
  );
  canvas.dataset.site = site.site;
  const box = plotBox(LARGE.width, LARGE.height, LARGE);
  const binAt = (px) => {
    const bin = Math.floor((px - box.x) / box.w * d.bins);
    return bin >= 0 && bin < d.bins ? bin : -1;
  };
  let hovered = -1;
  let sqrt = sqrtScale;
  hoverReadOut(canvas, tooltip, (px) => {
    const bin = binAt(px);
    if (bin !== hovered) paintLarge(canvas, root, d, i, hovered = bin, sqrt);
    return bin < 0 ? null : binText(d, i, bin, shares);
  });
  canvas.addEventListener("mouseleave", () => paintLarge(canvas, root, d, i, hovered = -1, sqrt));
  check.addEventListener("change", () => {
    sqrt = check.checked;
    onScale(sqrt);
    paintLarge(canvas, root, d, i, hovered, sqrt);
  });
  figure.append(key, canvas, h("div", "jcnb-cmp-hint", HOVER_HINT));
  body.append(figure, statsTable(d, i));
  detail.append(heading, body);
  paintLarge(canvas, root, d, i, -1, sqrt);
}
function statsTable(d, i) {
  const site = d.sites[i];
  const stats = h("table", "jcnb-cmp-stats");
  const headRow = h("tr");
  headRow.appendChild(h("th"));
  d.modes.forEach((label, mode) => {
    const th = setName(h("th", "jcnb-cmp-stats-mode jcnb-cmp-marked"), label);
    th.style.setProperty("--jcnb-mode", d.colour(mode));
    th.title = shownName(label);
    headRow.appendChild(th);
  });
  stats.appendChild(headRow);
  const shapeRow = h("tr");
  shapeRow.appendChild(h("td", "", "shape"));
  site.shapes.forEach((shape, mode) => {
    const td = h("td", "", Array.isArray(shape) ? `(${shape.join(",")})` : shape || "\u2013");
    if (!shape) td.title = `not reached in ${shownName(d.modes[mode])}`;
    shapeRow.appendChild(td);
  });
  stats.appendChild(shapeRow);
  for (const column of [...d.columns, "shift"]) {
    const tr = h("tr");
    tr.dataset.stat = column;
    const isShift = column === "shift";
    tr.appendChild(h("td", "", isShift ? "shift" : d.schema.label(column)));
    d.modes.forEach((label, mode) => {
      const value = isShift ? d.modeShift(i, mode) : d.stat(i, mode, column);
      const reached = Boolean(site.shapes[mode]);
      const unscored = isShift && Number.isNaN(value);
      const text = isShift ? fmt(value) : d.schema.text(column, value);
      const td = h("td", "jcnb-cmp-num", reached && !unscored ? text : "\u2013");
      if (unscored && reached) td.title = `no shift: the site is missing in a ${d.noun}`;
      if (column === "nan" && value > 0) {
        td.classList.add("jcnb-cmp-bad");
        td.title = `${value} NaN values in ${shownName(label)}`;
      }
      if (isShift && mode === 0) td.title = `the reference ${d.noun}`;
      tr.appendChild(td);
    });
    stats.appendChild(tr);
  }
  return stats;
}

// js/compare_draw.js
function freshChoices() {
  return { selectedSite: null, sqrtScale: true, filter: "", scroll: [0, 0] };
}
function mountComparison(model, host, prefix, chosen = freshChoices()) {
  const root = h("div", "jcnb-compare jcnb-themed");
  const header = h("div", "jcnb-cmp-header");
  const title = h("span", "jcnb-cmp-title");
  const legend = h("span", "jcnb-cmp-legend");
  const filter = siteFilter("jcnb-cmp-filter");
  header.append(title, legend, filter);
  const note = h("div", "jcnb-cmp-note");
  const callNote = h("div", "jcnb-cmp-call-note");
  const table = h("div", "jcnb-cmp-table");
  const detail = h("div", "jcnb-cmp-detail");
  detail.hidden = true;
  root.append(header, note, callNote, table, detail);
  host.appendChild(root);
  const tooltip = new Tooltip(root);
  filter.value = chosen.filter;
  let d = readComparison(model, prefix);
  let rows = [];
  let fit = () => {
  };
  const ui = { root, title, filter, detail, tooltip };
  function select(i) {
    chosen.selectedSite = d.sites[i].site;
    rows.forEach((row, j) => row.classList.toggle("jcnb-cmp-selected", j === i));
    root.dataset.selected = String(i);
    drawDetail(ui, d, i, chosen.sqrtScale, (sqrt) => chosen.sqrtScale = sqrt);
  }
  function draw() {
    root.classList.remove("jcnb-ready");
    tooltip.hide();
    d = readComparison(model, prefix);
    root.dataset.sites = String(d.sites.length);
    root.dataset.modes = String(d.modes.length);
    note.textContent = shiftNote(d);
    callNote.textContent = shownName(d.note);
    callNote.hidden = !d.note;
    drawLegend(legend, d);
    ({ rows, fit } = drawTable(root, table, d));
    applyFilter(ui, rows, d);
    const { selectedSite } = chosen;
    const reopened = selectedSite === null ? -1 : d.sites.findIndex((s) => s.site === selectedSite);
    if (reopened >= 0) select(reopened);
    else {
      chosen.selectedSite = null;
      detail.hidden = true;
      detail.replaceChildren();
    }
    root.classList.add("jcnb-ready");
  }
  const onClick = (event) => {
    const row = event.target instanceof Element ? event.target.closest(".jcnb-cmp-body") : null;
    if (row instanceof HTMLElement) select(Number(row.dataset.index));
  };
  const onKey = (event) => {
    if (event.key !== "Enter" && event.key !== " ") return;
    const row = event.target instanceof Element ? event.target.closest(".jcnb-cmp-body") : null;
    if (row instanceof HTMLElement) {
      event.preventDefault();
      select(Number(row.dataset.index));
    }
  };
  table.addEventListener("click", onClick);
  table.addEventListener("keydown", onKey);
  filter.addEventListener("input", () => {
    chosen.filter = filter.value;
    applyFilter(ui, rows, d);
  });
  table.addEventListener("scroll", () => {
    chosen.scroll = [table.scrollLeft, table.scrollTop];
    table.classList.toggle("jcnb-cmp-scrolled", table.scrollLeft > 0);
  });
  let placed = false;
  const resized = new ResizeObserver(() => {
    fit();
    if (placed || !table.clientWidth) return;
    placed = true;
    [table.scrollLeft, table.scrollTop] = chosen.scroll;
  });
  resized.observe(table);
  let queued = false;
  let missed = false;
  const drawSoon = () => {
    if (queued) return;
    queued = true;
    queueMicrotask(() => {
      queued = false;
      missed = !root.isConnected;
      if (!missed) draw();
    });
  };
  const back = new IntersectionObserver(() => {
    if (missed && root.isConnected) drawSoon();
  });
  back.observe(root);
  const events = COMPARISON_TRAITS.map((name) => `change:${prefix}${name}`);
  for (const event of events) model.on(event, drawSoon);
  const stopTheme = onThemeChange(drawSoon);
  draw();
  return () => {
    resized.disconnect();
    back.disconnect();
    stopTheme();
    for (const event of events) model.off(event, drawSoon);
  };
}

// js/mode_panel_layout.js
var ACTIONS = [
  ["train", "Train", "What Module.train() sets: deterministic=False, use_running_average=False"],
  ["eval", "Eval", "What Module.eval() sets: deterministic=True, use_running_average=True"],
  ["reset", "Reset", "Clear every value set here: the model's own modes"],
  ["compare", "Compare", ""]
  // its tip says what it compares: see drawStatus
];
var AGAINST_CHOICES = [
  ["model", "with the model as it is"],
  ["presets", "with the train and eval presets"]
];
var STATUS_TRAITS = ["_busy", "_can_compare", "_against", "_error", "_code", "_revision", "_compared", "_stale", "_compare_modes"];
var COMPARE_TIPS = {
  model: "Compare the current view with the model as it is",
  presets: "Compare the current view with the train and eval presets",
  "": "Run your compare function on the current view"
};
function panelLayout() {
  const root = h("div", "jcnb-modes jcnb-themed");
  const toolbar = h("div", "jcnb-modes-toolbar");
  const buttons = {};
  for (const [action, label, tip] of ACTIONS) {
    const button = (
      /** @type {HTMLButtonElement} */
      h("button", "jcnb-modes-action", label)
    );
    button.type = "button";
    button.dataset.action = action;
    button.title = tip;
    buttons[action] = button;
  }
  buttons.compare.classList.add("jcnb-modes-compare");
  const against = (
    /** @type {HTMLSelectElement} */
    h("select", "jcnb-modes-against")
  );
  against.setAttribute("aria-label", "compare the current view with");
  for (const [value, label] of AGAINST_CHOICES) {
    const option = (
      /** @type {HTMLOptionElement} */
      h("option", "", label)
    );
    option.value = value;
    against.appendChild(option);
  }
  toolbar.append(buttons.train, buttons.eval, buttons.reset, h("span", "jcnb-modes-gap"), buttons.compare, against);
  const note = h("div", "jcnb-modes-note");
  const cards = h("div", "jcnb-modes-cards");
  const codeBox = h("div", "jcnb-modes-code-box");
  const code = h("pre", "jcnb-modes-code");
  codeBox.append(h("div", "jcnb-modes-label", "panel.model, in Flax:"), code);
  const error = h("div", "jcnb-modes-error");
  error.setAttribute("role", "alert");
  const comparison = h("div", "jcnb-modes-comparison");
  const compared = h("div", "jcnb-modes-compared");
  const drawing = h("div", "jcnb-modes-drawing");
  comparison.append(compared, drawing);
  root.append(toolbar, note, cards, error, codeBox, comparison);
  return { root, buttons, against, note, cards, codeBox, code, error, comparison, compared, drawing };
}
function drawStatus(ui, model) {
  const { root, buttons, against, error, code, codeBox, comparison, compared, drawing } = ui;
  const busy = Boolean(model.get("_busy"));
  root.dataset.busy = String(busy);
  buttons.compare.disabled = busy || !model.get("_can_compare");
  buttons.compare.textContent = busy ? "Comparing\u2026" : "Compare";
  const choice = model.get("_against") || "";
  buttons.compare.title = model.get("_can_compare") ? COMPARE_TIPS[
    /** @type {keyof typeof COMPARE_TIPS} */
    choice
  ] || COMPARE_TIPS[""] : "Give the inputs to compare on: mode_panel(model, inputs=(x,))";
  against.hidden = choice === "";
  against.value = choice || "model";
  const message = model.get("_error") || "";
  error.textContent = message;
  error.hidden = message === "";
  code.textContent = model.get("_code") || "";
  codeBox.hidden = code.textContent === "";
  const what = model.get("_compared") || "";
  const stale = Boolean(what) && Boolean(model.get("_stale"));
  compared.textContent = stale ? `Stale: the switches or the Compare menu changed since this comparison (${what}). Press Compare again.` : `Compared: ${what}.`;
  comparison.hidden = !what;
  drawing.hidden = (model.get("_compare_modes") || []).length === 0;
  compared.classList.toggle("jcnb-modes-stale", stale);
  comparison.dataset.stale = String(stale);
  root.dataset.stale = String(stale);
  root.dataset.revision = String(model.get("_revision"));
}

// js/mode_panel_controls.js
var SHOWN_PATHS = 4;
var INT = /^[+-]?\d+$/;
function pyText(v) {
  if (v === null || v === void 0) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  if (Array.isArray(v)) return `(${v.map(pyText).join(", ")}${v.length === 1 ? "," : ""})`;
  if (typeof v === "string") return JSON.stringify(v);
  return String(v);
}
function fieldText(v) {
  if (v === null || v === void 0) return "";
  if (Array.isArray(v)) return v.join(",");
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}
function parseField(kind, text) {
  const s = text.trim();
  if (s === "") return null;
  if (kind === "str") return text;
  if (kind === "int") return INT.test(s) ? Number(s) : s;
  if (kind === "float") return Number.isFinite(Number(s)) ? Number(s) : s;
  if (kind === "shape") {
    const parts = s.replace(/^[([]\s*|\s*[)\]]$/g, "").split(",").map((p) => p.trim());
    if (parts.at(-1) === "" && parts.length > 1) parts.pop();
    if (!parts.every((p) => INT.test(p))) return s;
    return parts.length === 1 && s === parts[0] ? Number(s) : parts.map(Number);
  }
  if (kind === "any") {
    try {
      return JSON.parse(s);
    } catch {
      return s;
    }
  }
  return text;
}
var pathText = (path) => path === "" ? "(root)" : path;
function optionRow(group, option) {
  const row = h("div", "jcnb-modes-row");
  if (option.doc) row.title = option.doc;
  const name = h("span", "jcnb-modes-name", option.name);
  const head = h("div", "jcnb-modes-head");
  head.append(name);
  if (option.via === "attribute") {
    const tag = h("span", "jcnb-modes-tag", "attribute");
    tag.title = "a plain attribute, set with nnx.with_attributes";
    head.append(tag);
  }
  const state = h("span", "jcnb-modes-state");
  const clear = (
    /** @type {HTMLButtonElement} */
    h("button", "jcnb-modes-clear", "\xD7")
  );
  clear.type = "button";
  clear.title = "Back to the model's own value";
  clear.dataset.class = group.name;
  clear.dataset.option = option.name;
  const input = (
    /** @type {HTMLInputElement} */
    h("input")
  );
  input.dataset.class = group.name;
  input.dataset.option = option.name;
  input.setAttribute("aria-label", `${group.name} ${option.name}`);
  const control = h("div", "jcnb-modes-control");
  if (option.kind === "bool") {
    input.type = "checkbox";
    input.className = "jcnb-modes-switch";
    input.setAttribute("role", "switch");
  } else {
    input.type = "text";
    input.className = "jcnb-modes-text";
    input.placeholder = option.annotation || option.kind;
    input.spellcheck = false;
  }
  control.append(input, state, clear);
  row.append(head, control);
  if (option.doc) row.append(h("div", "jcnb-modes-doc", option.doc));
  return { group, option, row, input, state, clear };
}
function card(group, controls) {
  const box = h("div", "jcnb-modes-card");
  box.dataset.class = group.name;
  const title = h("div", "jcnb-modes-title", group.name);
  title.title = group.ref;
  const count = group.paths.length;
  const shown = group.paths.slice(0, SHOWN_PATHS).map(pathText).join(", ");
  const more = count > SHOWN_PATHS ? ` and ${count - SHOWN_PATHS} more` : "";
  const where = h("div", "jcnb-modes-paths", `${count} module${count === 1 ? "" : "s"}: ${shown}${more}`);
  where.title = group.paths.map(pathText).join("\n");
  box.append(title, where);
  for (const option of group.options) {
    const control = optionRow(group, option);
    controls.push(control);
    box.append(control.row);
  }
  return box;
}
function drawGroups(ui, groups, linen) {
  const controls = [];
  ui.cards.replaceChildren(...groups.map((group) => card(group, controls)));
  ui.note.textContent = linen || (groups.length ? "" : "No module of this model offers view options.");
  ui.note.hidden = ui.note.textContent === "";
  for (const action of ["train", "eval", "reset"]) ui.buttons[action].disabled = groups.length === 0;
  return controls;
}
function showValues(controls, values) {
  for (const { group, option, row, input, state, clear } of controls) {
    const chosen = values[group.name] || {};
    const isSet = option.name in chosen && chosen[option.name] !== null;
    const value = isSet ? chosen[option.name] : option.current;
    if (option.kind === "bool") {
      input.indeterminate = value === null || value === void 0;
      input.checked = value === true;
      input.dataset.state = input.indeterminate ? "unset" : value ? "on" : "off";
    } else if (document.activeElement !== input || isSet) {
      input.value = isSet ? fieldText(value) : "";
    }
    state.textContent = isSet ? `${pyText(value)} \xB7 set` : `${option.current_text} \xB7 model`;
    state.classList.toggle("jcnb-modes-set", isSet);
    row.classList.toggle("jcnb-modes-row-set", isSet);
    clear.hidden = !isSet;
  }
}

// js/mode_panel.js
var left = /* @__PURE__ */ new Map();
function leftIn(id) {
  let state = left.get(id);
  if (!state) left.set(id, state = { comparison: freshChoices(), focus: "" });
  return state;
}
function controlSelector(el) {
  const data = el instanceof HTMLElement ? el.dataset : {};
  const is = (name, v) => `[data-${name}=${CSS.escape(v)}]`;
  if (data.action) return is("action", data.action);
  if (data.class && data.option) return `${el.tagName.toLowerCase()}${is("class", data.class)}${is("option", data.option)}`;
  if (data.site) return `.jcnb-cmp-body${is("site", data.site)}`;
  const named = [...el.classList].find((c) => c.startsWith("jcnb-"));
  return named ? `.${named}` : "";
}
function render({ model, el }) {
  const ui = panelLayout();
  el.appendChild(ui.root);
  applyColours(el, schemaOf(model));
  const kept = leftIn(model.get("_panel_id") || "");
  const stopComparison = mountComparison(model, ui.drawing, "_compare", kept.comparison);
  const state = {
    /** Every option's control, as drawGroups made them from `_groups`. @type {Control[]} */
    controls: []
  };
  const values = () => model.get("_values") || {};
  const refresh = () => showValues(state.controls, values());
  function build() {
    state.controls = drawGroups(ui, model.get("_groups") || [], model.get("_linen") || "");
    refresh();
  }
  const status = () => drawStatus(ui, model);
  function choose(cls, option, value) {
    const before = values();
    if (JSON.stringify(before[cls]?.[option] ?? null) === JSON.stringify(value)) return;
    const next = JSON.parse(JSON.stringify(before));
    next[cls] = { ...next[cls] || {}, [option]: value };
    model.set("_values", next);
    model.save_changes();
    refresh();
  }
  const controlOf = (target) => state.controls.find((c) => c.input === target);
  const onChange = (event) => {
    const control = controlOf(event.target);
    if (!control) return;
    const { group, option, input } = control;
    choose(group.name, option.name, option.kind === "bool" ? input.checked : parseField(option.kind, input.value));
  };
  const onClear = (event) => {
    const control = state.controls.find((c) => c.clear === event.target);
    if (control) choose(control.group.name, control.option.name, null);
  };
  const onKey = (event) => {
    const control = controlOf(event.target);
    if (event.key === "Enter" && control && control.option.kind !== "bool") control.input.blur();
  };
  for (const [action, button] of Object.entries(ui.buttons)) button.addEventListener("click", () => model.send({ action }));
  ui.against.addEventListener("change", () => {
    model.set("_against", ui.against.value);
    model.save_changes();
  });
  ui.cards.addEventListener("change", onChange);
  ui.cards.addEventListener("click", onClear);
  ui.cards.addEventListener("keydown", onKey);
  ui.root.addEventListener("focusin", (event) => {
    if (event.target instanceof Element) kept.focus = controlSelector(event.target);
  });
  ui.root.addEventListener("focusout", (event) => {
    if (event.relatedTarget instanceof Node && !ui.root.contains(event.relatedTarget)) kept.focus = "";
  });
  build();
  status();
  model.on("change:_groups", build);
  model.on("change:_linen", build);
  model.on("change:_values", refresh);
  for (const name of STATUS_TRAITS) model.on(`change:${name}`, status);
  ui.root.dataset.ready = "true";
  el.classList.add("jcnb-ready");
  requestAnimationFrame(() => {
    const free = !document.activeElement || document.activeElement === document.body;
    const control = kept.focus && free ? ui.root.querySelector(kept.focus) : null;
    if (control instanceof HTMLElement) control.focus({ preventScroll: true });
  });
  return () => {
    model.off("change:_groups", build);
    model.off("change:_linen", build);
    model.off("change:_values", refresh);
    for (const name of STATUS_TRAITS) model.off(`change:${name}`, status);
    stopComparison();
  };
}
var mode_panel_default = { render };
export {
  mode_panel_default as default
};
