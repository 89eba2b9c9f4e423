// CaptureView front end: a virtualized, sortable table of sowed values with
// sparkline histograms, and a detail panel (large histogram, 2-D heatmap).
// Plain ES module, no build step. Every string from user code is set with
// textContent, never parsed as HTML.

/**
 * @typedef {{path: string, name: string, shown_name: string, label: string,
 *   call: number, type: string, shape: number[] | null, dtype: string,
 *   note: string, has_stats: boolean, has_value: boolean, same_as: number}} Site
 */

const ROW_HEIGHT = 24;
const VISIBLE_ROWS = 14;
// Colour indices of heatmap pixels, matching payload.py: 0..FINITE_TOP on
// the colour scale, then one index each for NaN, +Inf and -Inf.
const FINITE_TOP = 252;
/** Values outside the histogram's range: each gets its own bar and colour. */
const NONFINITE = [
  { stat: "nan", label: "NaN", index: 253, rgb: [255, 0, 255] },
  { stat: "posinf", label: "+Inf", index: 254, rgb: [255, 127, 14] },
  { stat: "neginf", label: "-Inf", index: 255, rgb: [23, 190, 207] },
];
// The large histogram: as wide as the details allow, within these bounds.
const HIST = { minWidth: 300, maxWidth: 560, height: 210 };
// Room right of the finite bins for one non-finite bar and its gap.
const NONFINITE_BAR = { width: 26, gap: 12, lead: 22 };
// The heatmap's longer side on screen, in CSS pixels; the colour bar beside it.
const HEAT_SIDE = 260;
const BAR = { width: 70, bar: 12 };

// Table columns: `width` is the CSS grid track; the tracks' minimum widths
// add up to what the table needs before it scrolls sideways.
const COLUMNS = [
  { key: "path", label: "path", width: "minmax(110px, 1.5fr)" },
  { key: "name", label: "name", width: "minmax(120px, 1.5fr)" },
  { key: "call", label: "call", width: "40px" },
  { key: "shape", label: "shape", width: "minmax(84px, 1fr)" },
  { key: "dtype", label: "dtype", width: "64px" },
  { key: "mean", label: "mean", stat: true, width: "70px" },
  { key: "std", label: "std", stat: true, width: "70px" },
  { key: "min", label: "min", stat: true, width: "70px" },
  { key: "max", label: "max", stat: true, width: "70px" },
  { key: "zero_pct", label: "zeros %", stat: true, width: "64px" },
  { key: "nonfinite", label: "NaN/Inf", width: "64px" },
  { key: "hist", label: "histogram", width: "88px" },
];
const SPARK = { width: 80, height: 18 };
const TABLE_MIN_WIDTH = COLUMNS.reduce((sum, c) => sum + Number((c.width.match(/(\d+)px/) || [0, 0])[1]), 0);

/** "(2,64,128)" for a shape, "" for a value that is not an array. @param {Site} s */
const shapeText = (s) => (s.shape ? `(${s.shape.join(",")})` : "");

/** A count with thousands separators. @param {number} n */
const countText = (n) => Math.round(n).toLocaleString("en-US");

/**
 * The 256 colours of heatmap pixel indices on a colour map: the finite scale,
 * then the non-finite colours.
 * @param {"sequential" | "diverging"} map
 */
function paletteOf(map) {
  const palette = [];
  for (let i = 0; i <= FINITE_TOP; i++) palette.push(colourAt(map, i / FINITE_TOP));
  for (const kind of NONFINITE) palette[kind.index] = kind.rgb;
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

/** @param {{ model: any, el: HTMLElement }} ctx */
function render({ model, el }) {
  const root = h("div", "jcnb-root jcnb-themed");
  el.appendChild(root);
  const tooltip = new Tooltip(root);

  // -- Table ---------------------------------------------------------------
  const header = h("div", "jcnb-header");
  const title = h("span", "jcnb-title");
  const filter = siteFilter("jcnb-filter");
  header.append(title, filter);
  const flag = h("button", "jcnb-flag");
  flag.type = "button";

  const scroller = h("div", "jcnb-scroller");
  scroller.tabIndex = 0;
  scroller.setAttribute("role", "listbox");
  scroller.setAttribute("aria-label", "captured sites: arrow keys move, Enter shows the details");
  scroller.style.maxHeight = `${(VISIBLE_ROWS + 1) * ROW_HEIGHT + 18}px`;
  const sheet = h("div", "jcnb-sheet");
  sheet.style.minWidth = `${TABLE_MIN_WIDTH + 8}px`;
  sheet.style.setProperty("--jcnb-cv-columns", COLUMNS.map((c) => c.width).join(" "));
  const head = h("div", "jcnb-row jcnb-head");
  sheet.append(head);
  scroller.append(sheet);

  // -- Details -------------------------------------------------------------
  const detail = h("div", "jcnb-detail");
  const hint = h("div", "jcnb-hint", "Select a row to see its histogram and a slice of its values.");
  const body = h("div", "jcnb-detail-body");
  const detailTitle = h("div", "jcnb-detail-title");
  const statsLine = h("div", "jcnb-stats-line");

  const histPanel = h("div", "jcnb-hist-box");
  const logLabel = h("label", "jcnb-log");
  const logBox = /** @type {HTMLInputElement} */ (h("input"));
  logBox.type = "checkbox";
  logLabel.append(logBox, document.createTextNode(" log count scale"));
  const histCanvas = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-hist"));
  const histKey = h("div", "jcnb-key jcnb-nonfinite-key");
  const histEmpty = h("div", "jcnb-empty-values");
  histPanel.append(logLabel, histCanvas, histKey, histEmpty);

  const heatPanel = h("div", "jcnb-heat-box");
  const heatControls = h("div", "jcnb-heat-controls");
  const indexMessage = h("span", "jcnb-index-message");
  indexMessage.setAttribute("role", "alert");
  const divergingLabel = h("label", "jcnb-diverging");
  const divergingBox = /** @type {HTMLInputElement} */ (h("input"));
  divergingBox.type = "checkbox";
  divergingLabel.append(divergingBox, document.createTextNode(" centre colours at 0 (diverging)"));
  divergingLabel.title = "blue below zero, red above, white at zero; otherwise a sequential scale over the values' range";
  const heatStatus = h("div", "jcnb-heat-status");
  const spinner = h("span", "jcnb-spinner");
  spinner.setAttribute("aria-label", "fetching the slice from the kernel");
  const axesLine = h("div", "jcnb-heat-axes");
  const figure = h("div", "jcnb-heat-figure");
  const heatCanvas = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-heat"));
  const barCanvas = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-colour-bar"));
  figure.append(heatCanvas, barCanvas);
  const heatKey = h("div", "jcnb-key jcnb-heat-key");
  const heatNote = h("div", "jcnb-heat-note");
  heatPanel.append(heatControls, divergingLabel, heatStatus, axesLine, figure, heatKey, heatNote);
  body.append(detailTitle, statsLine, histPanel, heatPanel);
  detail.append(hint, body);
  root.append(header, flag, scroller, detail);

  // -- State ---------------------------------------------------------------
  /** @type {Site[]} */ let sites = [];
  /** @type {Float64Array} */ let stats = new Float64Array(0);
  /** @type {Int32Array} */ let hists = new Int32Array(0);
  let bins = 0;
  /** @type {string[]} */ let statColumns = [];
  /** @type {number[]} */ let order = [];
  let sortKey = "";
  let sortDir = 1;
  let selected = -1;
  let cursor = -1; // the site the arrow keys are on
  let pending = 0; // the heatmap request awaiting its answer, 0 if none
  /** Where the last histogram put its parts, for the hover read-out. */
  let histLayout = null;

  /** @param {number} i @param {string} name */
  const stat = (i, name) => stats[i * statColumns.length + statColumns.indexOf(name)];
  /** @param {number} i */
  const nonfinite = (i) => stat(i, "nan") + stat(i, "posinf") + stat(i, "neginf");
  /** @param {number} i */
  const total = (i) => stat(i, "count") + nonfinite(i);

  /** The dotted site (what `include` patterns match) and the label shown. @param {number} i */
  const siteTexts = (i) => [sites[i].path ? `${sites[i].path}.${sites[i].name}` : sites[i].name, sites[i].label];

  /** What hovering a row's name says: its recorded name, and what a call output is. @param {number} i */
  function nameTitle(i) {
    const s = sites[i];
    const [dotted] = siteTexts(i);
    const lines = [s.label === dotted ? dotted : `${s.label}  (recorded as ${dotted})`];
    if (s.same_as >= 0) {
      const other = sites[s.same_as].label;
      lines.push(`The same values as ${other}: same shape, statistics and histogram (this module returns ${other}'s result).`);
    }
    return lines.join("\n");
  }

  /** @param {number} i @param {string} key */
  function sortValue(i, key) {
    const s = sites[i];
    if (key === "path") return siteTexts(i)[0];
    if (key === "name") return s.shown_name;
    if (key === "dtype") return s.dtype;
    if (key === "call") return s.call;
    if (key === "shape") return s.shape ? s.shape.reduce((a, b) => a * b, 1) : -1;
    if (key === "nonfinite") return s.has_stats ? nonfinite(i) : -1;
    const v = stat(i, key);
    return Number.isNaN(v) ? -Infinity : v;
  }

  /** Filters and sorts the rows, then draws the visible ones. */
  function recompute() {
    const matches = siteMatcher(filter);
    order = sites.map((_, i) => i).filter((i) => siteTexts(i).some(matches));
    if (!sortKey) {
      // Default: grouped by module path, groups in order of first appearance,
      // execution order within a group.
      const firstSeen = new Map();
      sites.forEach((s, i) => firstSeen.has(s.path) || firstSeen.set(s.path, i));
      order.sort((a, b) => firstSeen.get(sites[a].path) - firstSeen.get(sites[b].path) || a - b);
    } else if (sortKey !== "hist") {
      order.sort((a, b) => {
        const x = sortValue(a, sortKey);
        const y = sortValue(b, sortKey);
        return (x < y ? -1 : x > y ? 1 : a - b) * sortDir;
      });
    }
    sheet.style.height = `${(order.length + 1) * ROW_HEIGHT}px`;
    root.dataset.visibleRows = String(order.length);
    title.textContent = `${sites.length} sowed value${sites.length === 1 ? "" : "s"}` + (order.length < sites.length ? `, ${order.length} shown` : "");
    if (selected >= 0 && !order.includes(selected)) clearSelection();
    if (!order.includes(cursor)) setCursor(order.length ? order[0] : -1);
    drawRows(true);
  }

  /** A sparkline of site i's histogram, in the theme's series colour. @param {number} i */
  function sparkline(i) {
    const canvas = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-spark"));
    const ctx = sized(canvas, SPARK.width, SPARK.height);
    const row = hists.subarray(i * bins, (i + 1) * bins);
    const top = Math.max(1, ...row);
    const box = { x: 0, y: 0, w: SPARK.width, h: SPARK.height };
    drawBars(ctx, box, row, (c) => SPARK.height - (SPARK.height * c) / top, themeOf(root).series);
    return canvas;
  }

  /** A table cell whose full text is also its title (cells cut text with an ellipsis). */
  function cell(text, cls = "", fullText = text) {
    const node = h("span", `jcnb-cell ${cls}`.trim(), text);
    node.title = fullText;
    return node;
  }

  /** The cells of site i's row. @param {number} i @param {boolean} samePath */
  function rowCells(i, samePath) {
    const s = sites[i];
    const pathCell = cell(s.path || "(root)");
    if (samePath) pathCell.classList.add("jcnb-same-path");
    const nameCell = cell(s.shown_name, "jcnb-name", nameTitle(i));
    if (s.same_as >= 0) {
      nameCell.append(h("span", "jcnb-same", ` = ${sites[s.same_as].label}`));
      nameCell.dataset.sameAs = String(s.same_as);
    }
    const cells = [pathCell, nameCell, cell(String(s.call), "jcnb-num"), cell(shapeText(s)), cell(s.dtype)];
    if (!s.has_stats) return [...cells, cell(s.note, "jcnb-note")];
    const bad = nonfinite(i);
    const finiteOnly = bad ? `\nover the ${countText(stat(i, "count"))} finite values of ${countText(total(i))}` : "";
    for (const name of ["mean", "std", "min", "max"]) {
      const v = stat(i, name);
      cells.push(cell(fmt(v), "jcnb-num", `${name} ${String(v)}${finiteOnly}`));
    }
    cells.push(cell(stat(i, "zero_pct").toFixed(1), "jcnb-num", `${stat(i, "zero_pct")}% of the values are exactly 0`));
    const counts = NONFINITE.map((k) => `${countText(stat(i, k.stat))} ${k.label}`).join(", ");
    const badCell = cell(bad ? `${stat(i, "nan")}/${stat(i, "posinf") + stat(i, "neginf")}` : "-", "jcnb-num", bad ? counts : "no NaN or Inf");
    if (bad) badCell.classList.add("jcnb-nonfinite");
    const holder = h("span", "jcnb-cell");
    holder.append(sparkline(i));
    return [...cells, badCell, holder];
  }

  let drawn = "";
  /**
   * Rebuilds the visible rows only when what they show changes: replacing a
   * row between mousedown and mouseup would swallow the click.
   */
  function drawRows(force = false) {
    const first = Math.floor(scroller.scrollTop / ROW_HEIGHT);
    const last = Math.min(order.length, first + VISIBLE_ROWS + 2);
    const key = `${first}:${last}`;
    if (!force && key === drawn) return;
    drawn = key;
    for (const old of [...sheet.querySelectorAll(".jcnb-body-row")]) old.remove();
    for (let k = first; k < last; k++) {
      const i = order[k];
      const row = h("div", "jcnb-row jcnb-body-row");
      row.style.top = `${(k + 1) * ROW_HEIGHT}px`;
      row.dataset.site = String(i);
      row.setAttribute("role", "option");
      row.setAttribute("aria-selected", String(i === selected));
      row.classList.toggle("jcnb-selected", i === selected);
      row.classList.toggle("jcnb-cursor", i === cursor);
      const samePath = k > 0 && !sortKey && sites[order[k - 1]].path === sites[i].path;
      row.append(...rowCells(i, samePath));
      sheet.appendChild(row);
    }
  }

  /** Builds the sortable column heads. */
  function drawHead() {
    head.replaceChildren();
    for (const col of COLUMNS) {
      const arrow = sortKey === col.key ? (sortDir > 0 ? " \u25b2" : " \u25bc") : "";
      const node = h("span", "jcnb-cell jcnb-sortable", col.label + arrow);
      node.dataset.key = col.key;
      node.title = col.key === "hist" ? "histogram of the finite values" : `sort by ${col.label}`;
      head.appendChild(node);
    }
  }

  // -- Keyboard cursor -----------------------------------------------------

  /** Moves the keyboard cursor to site i (-1: none). @param {number} i */
  function setCursor(i) {
    cursor = i;
    if (i >= 0) root.dataset.cursor = String(i);
    else delete root.dataset.cursor;
  }

  /** Scrolls the table so that row position k is in view. @param {number} k */
  function scrollToRow(k) {
    const view = scroller.clientHeight - ROW_HEIGHT; // below the sticky head
    if (k * ROW_HEIGHT < scroller.scrollTop) scroller.scrollTop = k * ROW_HEIGHT;
    else if ((k + 1) * ROW_HEIGHT > scroller.scrollTop + view) scroller.scrollTop = (k + 1) * ROW_HEIGHT - view;
  }

  /** @param {KeyboardEvent} event */
  function onTableKey(event) {
    if (event.target !== scroller || !order.length) return;
    const at = Math.max(0, order.indexOf(cursor));
    const moves = { ArrowDown: at + 1, ArrowUp: at - 1, Home: 0, End: order.length - 1, PageDown: at + VISIBLE_ROWS, PageUp: at - VISIBLE_ROWS };
    if (event.key in moves) {
      const k = Math.min(Math.max(moves[event.key], 0), order.length - 1);
      setCursor(order[k]);
      scrollToRow(k);
      drawRows(true);
    } else if (event.key === "Enter" || event.key === " ") {
      if (cursor >= 0) select(cursor);
    } else return;
    // Keep JupyterLab's notebook shortcuts (arrows move between cells) out.
    event.preventDefault();
    event.stopPropagation();
  }

  // -- Histogram -----------------------------------------------------------

  /** The non-finite kinds site i holds, with their counts. @param {number} i */
  const nonfiniteKinds = (i) => NONFINITE.map((k) => ({ ...k, count: stat(i, k.stat) })).filter((k) => k.count > 0);

  /** What a site holds when none of its values is finite: "all 24 values are NaN". @param {number} i */
  function noFiniteText(i) {
    const kinds = nonfiniteKinds(i);
    if (kinds.length === 1 && kinds[0].stat === "nan") return `all ${countText(kinds[0].count)} values are NaN`;
    return `no finite values (${kinds.map((k) => `${countText(k.count)} ${k.label}`).join(", ")})`;
  }

  /** The statistics of the selected site, saying when they leave values out. @param {number} i */
  function drawStatsLine(i) {
    statsLine.replaceChildren();
    delete statsLine.dataset.finiteOnly;
    if (!sites[i].has_stats || stat(i, "count") === 0) return; // the histogram's place says why
    const parts = ["mean", "std", "min", "max"].map((name) => `${name} ${fmt(stat(i, name))}`);
    parts.push(`zeros ${stat(i, "zero_pct").toFixed(1)}%`);
    statsLine.append(h("span", "", parts.join(" \u00b7 ")));
    const bad = nonfinite(i);
    if (!bad) return;
    statsLine.dataset.finiteOnly = "true";
    const missing = nonfiniteKinds(i).map((k) => `${countText(k.count)} ${k.label}`).join(", ");
    statsLine.append(h("span", "jcnb-finite-only", ` \u2014 over the ${countText(stat(i, "count"))} finite values of ${countText(total(i))} (${missing} left out)`));
  }

  /** The histogram's width in CSS pixels: what the details area has room for. */
  function histWidth() {
    const room = detail.clientWidth - 4;
    return Math.round(Math.min(HIST.maxWidth, Math.max(HIST.minWidth, room || HIST.maxWidth)));
  }

  /** Draws the selected site's histogram, with a bar per non-finite kind at its right. */
  function drawHistogram() {
    histLayout = null;
    histKey.replaceChildren();
    histEmpty.replaceChildren();
    delete histCanvas.dataset.drawn;
    delete histCanvas.dataset.nonfinite;
    const i = selected;
    const s = sites[i];
    const show = i >= 0 && s.has_stats && stat(i, "count") > 0;
    histCanvas.hidden = !show;
    logLabel.hidden = !show;
    if (i >= 0 && s.has_stats && !show) histEmpty.textContent = `No histogram: ${noFiniteText(i)}.`;
    if (!show) return;
    const theme = themeOf(root);
    const kinds = nonfiniteKinds(i);
    const extra = kinds.length ? NONFINITE_BAR.lead + kinds.length * (NONFINITE_BAR.width + NONFINITE_BAR.gap) : 0;
    const width = histWidth();
    const ctx = sized(histCanvas, width, HIST.height);
    const box = plotBox(width - extra, HIST.height, { left: 56, right: 10, top: 16, bottom: 34 });
    const counts = hists.subarray(i * bins, (i + 1) * bins);
    const top = Math.max(1, ...counts, ...kinds.map((k) => k.count));
    const y = countScale(top, box.y + box.h, box.y, logBox.checked);
    const lo = stat(i, "lo");
    const hi = stat(i, "hi");
    const x = linearScale(lo, hi, box.x, box.x + box.w);
    drawBars(ctx, box, counts, y, theme.series);
    drawAxes(ctx, box, { theme, x, xTicks: x.ticks(6), y, yTicks: y.ticks(4), yLabel: logBox.checked ? "count (log)" : "count" });
    ctx.font = `10px ${theme.font}`;
    ctx.fillStyle = theme.fg2;
    ctx.textAlign = "center";
    ctx.textBaseline = "bottom";
    ctx.fillText(`value (${countText(stat(i, "count"))} finite)`, box.x + box.w / 2, HIST.height - 1);
    const bars = drawNonfiniteBars(ctx, box, kinds, y, theme);
    histLayout = { box, lo, hi, bars };
    histCanvas.dataset.drawn = "true";
    if (kinds.length) {
      histCanvas.dataset.nonfinite = kinds.map((k) => `${k.label}:${k.count}`).join(" ");
      histKey.append(h("span", "", "Outside the value axis:"));
      for (const k of kinds) histKey.append(keyItem(rgbText(k.rgb), `${countText(k.count)} ${k.label}`));
    }
  }

  /**
   * One labelled bar per non-finite kind right of the value axis, on the
   * same count scale as the histogram.
   * @returns {{x: number, w: number, kind: any}[]} where each bar went
   */
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
      const top = Math.min(y(kind.count), base - 1);
      ctx.fillStyle = rgbText(kind.rgb);
      ctx.fillRect(x, top, NONFINITE_BAR.width, base - top);
      ctx.fillStyle = theme.fg;
      ctx.textBaseline = "bottom";
      ctx.fillText(tickText(kind.count), x + NONFINITE_BAR.width / 2, Math.max(top - 2, 11));
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

  /** The hover read-out of the histogram: a bin's range and count, or a non-finite bar. */
  function histReadOut(px, py) {
    if (!histLayout || selected < 0) return null;
    const { box, lo, hi, bars } = histLayout;
    const bar = bars.find((b) => px >= b.x - 2 && px <= b.x + b.w + 2);
    if (bar) return `${bar.kind.label}\n${countText(bar.kind.count)} values (outside the value axis)`;
    if (px < box.x || px > box.x + box.w || py > box.y + box.h + 4) return null;
    const k = Math.min(bins - 1, Math.floor(((px - box.x) / box.w) * bins));
    const width = (hi - lo) / bins;
    const close = k === bins - 1 ? "]" : ")";
    return `[${fmt(lo + k * width)}, ${fmt(lo + (k + 1) * width)}${close}\n${countText(hists[selected * bins + k])} values`;
  }

  // -- Heatmap -------------------------------------------------------------

  /** The slice index boxes, one per axis before the last two. */
  function sliceControls() {
    heatControls.replaceChildren();
    indexMessage.textContent = "";
    const s = sites[selected];
    if (!s || !s.has_value || !s.shape) return;
    const lead = s.shape.slice(0, -2);
    const index = model.get("_slice_index") || [];
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

  /** Reads the index boxes; marks bad ones and says why, or asks for the slice. */
  function applySliceIndex() {
    const inputs = /** @type {HTMLInputElement[]} */ ([...heatControls.querySelectorAll(".jcnb-axis-input")]);
    const problems = inputs.map((input) => indexProblem(input.value, Number(input.dataset.size)));
    inputs.forEach((input, axis) => {
      input.classList.toggle("jcnb-bad", Boolean(problems[axis]));
      input.setAttribute("aria-invalid", String(Boolean(problems[axis])));
    });
    const bad = problems.findIndex(Boolean);
    indexMessage.textContent = bad >= 0 ? `axis ${bad}: ${problems[bad]}` : "";
    if (bad >= 0) return;
    const next = inputs.map((input) => Number(input.value.trim()));
    if (JSON.stringify(next) === JSON.stringify(model.get("_slice_index") || [])) return;
    model.set("_slice_index", next);
    requestHeatmap();
  }

  /** Asks the kernel for the selected site's slice; the spinner runs until it answers. */
  function requestHeatmap() {
    pending = (model.get("_heatmap_request") || 0) + 1;
    model.set("_heatmap_diverging", divergingBox.checked);
    model.set("_heatmap_request", pending);
    model.save_changes();
    showLoading(true);
  }

  /** @param {boolean} loading */
  function showLoading(loading) {
    root.dataset.heatmap = loading ? "loading" : "ready";
    figure.classList.toggle("jcnb-stale", loading);
    heatStatus.replaceChildren();
    if (loading) heatStatus.append(spinner, document.createTextNode(" fetching the slice from the kernel\u2026"));
  }

  function onAnswer() {
    if (pending && model.get("_heatmap_answered") >= pending) {
      pending = 0;
      showLoading(false);
    }
    drawHeatmap();
  }

  /** "rows: axis 1 (64) · columns: axis 2 (128)", and the sampling when shrunk. */
  function axesText(shape, heat) {
    const n = shape.length;
    const part = (what, axis, shown) => {
      const size = shape[axis];
      const step = Math.ceil(size / shown);
      return `${what}: axis ${axis} (${size}${step > 1 ? `, every ${ordinal(step)} shown` : ""})`;
    };
    return `${part("rows", n - 2, heat[0])} \u00b7 ${part("columns", n - 1, heat[1])}`;
  }

  /** Clears the heatmap's canvases and texts. */
  function clearHeatmap() {
    for (const canvas of [heatCanvas, barCanvas]) {
      canvas.width = 0;
      canvas.height = 0;
      canvas.style.width = "0";
      canvas.style.height = "0";
      delete canvas.dataset.drawn;
    }
    figure.hidden = true;
    axesLine.textContent = "";
    heatKey.replaceChildren();
    delete heatCanvas.dataset.map;
  }

  /** Draws the heatmap of the selected site when the kernel's answer is for it. */
  function drawHeatmap() {
    const shape = model.get("_heatmap_shape") || [];
    const pixels = new Uint8Array(bytesOf(model.get("_heatmap")));
    const s = selected >= 0 ? sites[selected] : null;
    const current = s !== null && model.get("_heatmap_site") === selected;
    clearHeatmap();
    heatNote.textContent = current ? model.get("_heatmap_note") || "" : "";
    const noFinite = s !== null && s.has_stats && stat(selected, "count") === 0;
    divergingLabel.hidden = !(s && s.has_value) || noFinite;
    heatNote.classList.toggle("jcnb-empty-values", noFinite);
    if (noFinite && nonfinite(selected) === stat(selected, "nan")) {
      heatNote.textContent = `No heatmap: ${noFiniteText(selected)}.`; // one colour would say nothing
      return;
    }
    if (noFinite && s.has_value) heatNote.textContent = `No colour scale: ${noFiniteText(selected)}.`;
    if (!current || shape.length !== 2 || pixels.length !== shape[0] * shape[1] || !s.shape) return;
    const [rows, cols] = shape;
    const map = divergingBox.checked ? "diverging" : "sequential";
    const palette = paletteOf(map);
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
    figure.hidden = false;
    heatCanvas.dataset.drawn = "true";
    heatCanvas.dataset.map = map;
    axesLine.textContent = axesText(s.shape, shape);
    const range = model.get("_heatmap_range") || [];
    if (range.length === 2) drawBar(range[0], range[1], map, Math.max(hgt, 80));
    const kinds = nonfiniteKinds(selected);
    for (const k of kinds) heatKey.append(keyItem(rgbText(k.rgb), k.label));
  }

  /** The colour bar beside the heatmap, with its value range. */
  function drawBar(lo, hi, map, hgt) {
    const ctx = sized(barCanvas, BAR.width, hgt);
    drawColourBar(ctx, { x: 2, y: 5, w: BAR.bar, h: hgt - 10 }, map, lo, hi, themeOf(root));
    barCanvas.dataset.drawn = "true";
    barCanvas.dataset.range = `${lo} ${hi}`;
    barCanvas.title = `colours span ${fmt(lo)} to ${fmt(hi)}` + (map === "diverging" ? ", white at 0" : " (mean \u00b1 3 std, within the values' range)") + "; values beyond take the end colours";
  }

  /** The hover read-out of the heatmap: the element's full index and its value. */
  function heatReadOut(px, py) {
    const shape = model.get("_heatmap_shape") || [];
    const s = sites[selected];
    if (!heatCanvas.dataset.drawn || !s || !s.shape || shape.length !== 2) return null;
    const rect = heatCanvas.getBoundingClientRect();
    const r = Math.floor((py / rect.height) * shape[0]);
    const c = Math.floor((px / rect.width) * shape[1]);
    if (r < 0 || c < 0 || r >= shape[0] || c >= shape[1]) return null;
    const n = s.shape.length;
    const rowStep = Math.ceil(s.shape[n - 2] / shape[0]);
    const colStep = Math.ceil(s.shape[n - 1] / shape[1]);
    const index = [...(model.get("_slice_index") || []).slice(0, n - 2), r * rowStep, c * colStep];
    while (index.length < n) index.unshift(0);
    return `[${index.join(", ")}]\n${valueText(r * shape[1] + c)}`;
  }

  /** The value of heatmap pixel k: exact when the kernel sent values, else read off the colour scale. @param {number} k */
  function valueText(k) {
    const values = new Float32Array(bytesOf(model.get("_heatmap_values")));
    if (values.length > k) return `value ${fmt(values[k])}`;
    const p = new Uint8Array(bytesOf(model.get("_heatmap")))[k];
    const kind = NONFINITE.find((kd) => kd.index === p);
    if (kind) return `value ${kind.label}`;
    const [lo, hi] = model.get("_heatmap_range") || [0, 0];
    if (p === 0) return `value \u2264 ${fmt(lo)} (below the colour scale)`;
    if (p === FINITE_TOP) return `value \u2265 ${fmt(hi)} (above the colour scale)`;
    const step = (hi - lo) / FINITE_TOP;
    return `value \u2248 ${fmt(lo + p * step)} (\u00b1${fmt(step / 2)}, from the colour)`;
  }

  // -- Selection -----------------------------------------------------------

  /** Shows site i's details and asks the kernel for its heatmap. @param {number} i */
  function select(i) {
    selected = i;
    setCursor(i);
    const s = sites[i];
    detailTitle.textContent = `${s.label} [call ${s.call}] ${shapeText(s)} ${s.dtype}` + (s.note ? ` (${s.note})` : "");
    detailTitle.title = nameTitle(i);
    root.dataset.selected = String(i);
    hint.hidden = true;
    body.hidden = false;
    drawRows(true);
    drawStatsLine(i);
    drawHistogram();
    model.set("_slice_index", []);
    model.set("_selected", i);
    sliceControls();
    requestHeatmap();
    drawHeatmap();
  }

  /** Back to no selection: the hint instead of details. */
  function clearSelection() {
    selected = -1;
    delete root.dataset.selected;
    hint.hidden = false;
    body.hidden = true;
    histLayout = null;
    pending = 0;
    showLoading(false);
    model.set("_selected", -1);
    model.save_changes();
  }

  /** Reads the sites and their numbers from the model and redraws everything. */
  function load() {
    sites = model.get("_sites") || [];
    statColumns = model.get("_stat_columns") || [];
    stats = new Float64Array(bytesOf(model.get("_stats")));
    hists = new Int32Array(bytesOf(model.get("_hists")));
    bins = model.get("_bins") || 1;
    const first = model.get("_first_nonfinite");
    if (first >= 0) {
      const s = sites[first];
      flag.textContent = `First NaN/Inf: ${s.label} [call ${s.call}] (${countText(nonfinite(first))} values). Click to inspect.`;
      flag.style.display = "block";
      flag.dataset.site = String(first);
    } else {
      flag.style.display = "none";
    }
    drawHead();
    recompute();
  }

  /** Redraws the canvases with the theme's colours. */
  function redraw() {
    drawRows(true);
    if (selected >= 0) {
      drawHistogram();
      drawHeatmap();
    }
  }

  const onScroll = () => drawRows();
  const onTableClick = (/** @type {Event} */ event) => {
    const target = event.target instanceof Element ? event.target : null;
    const sortHead = target?.closest(".jcnb-head .jcnb-sortable");
    if (sortHead instanceof HTMLElement) {
      const col = COLUMNS.find((c) => c.key === sortHead.dataset.key);
      sortDir = sortKey === col.key ? -sortDir : col.stat || col.key === "nonfinite" ? -1 : 1;
      sortKey = col.key;
      drawHead();
      recompute();
      return;
    }
    const row = target?.closest(".jcnb-body-row");
    if (row instanceof HTMLElement) select(Number(row.dataset.site));
  };
  const onIndexKey = (/** @type {KeyboardEvent} */ event) => {
    if (!(event.target instanceof HTMLInputElement)) return;
    event.stopPropagation(); // typing in a box is not a notebook shortcut
    if (event.key === "Enter") {
      event.preventDefault();
      applySliceIndex();
    }
  };
  const onIndexChange = () => applySliceIndex();
  const onDiverging = () => requestHeatmap();
  const onFilter = () => recompute();
  const onLog = () => drawHistogram();
  const onFlag = () => select(Number(flag.dataset.site));
  scroller.addEventListener("scroll", onScroll);
  scroller.addEventListener("click", onTableClick);
  scroller.addEventListener("keydown", onTableKey);
  heatControls.addEventListener("keydown", onIndexKey);
  heatControls.addEventListener("change", onIndexChange);
  divergingBox.addEventListener("change", onDiverging);
  filter.addEventListener("input", onFilter);
  logBox.addEventListener("change", onLog);
  flag.addEventListener("click", onFlag);
  hoverReadOut(histCanvas, tooltip, histReadOut);
  hoverReadOut(heatCanvas, tooltip, heatReadOut);
  const stopTheme = onThemeChange(redraw);
  // The histogram follows the width of the output area.
  let lastWidth = 0;
  const resizing = new ResizeObserver(() => {
    if (detail.clientWidth === lastWidth) return;
    lastWidth = detail.clientWidth;
    if (selected >= 0) drawHistogram();
  });
  resizing.observe(detail);
  model.on("change:_heatmap_answered", onAnswer);
  model.on("change:_heatmap_site", drawHeatmap);
  model.on("change:_sites", load);

  divergingBox.checked = Boolean(model.get("_heatmap_diverging"));
  body.hidden = true;
  showLoading(false);
  load();
  root.dataset.ready = "true";
  el.classList.add("jcnb-ready");

  return () => {
    stopTheme();
    resizing.disconnect();
    tooltip.node.remove();
    model.off("change:_heatmap_answered", onAnswer);
    model.off("change:_heatmap_site", drawHeatmap);
    model.off("change:_sites", load);
  };
}

export default { render };
