// A mode comparison's table: one row per site, largest shift first, with
// each mode's histogram overlaid in a sparkline and its statistics side by
// side, under a legend of the modes' colours. The statistics are those the
// schema gives a table column (Comparison.tableColumns), named as the schema
// says and written compactly (the cell's title and the detail panel give
// them in full). The columns are as wide as what they hold, and the site
// column, frozen at the left, gives up room so that every mode's columns fit
// the widget's width where they can; a site the same in all modes says so
// once in place of the other modes' numbers.

import { fmt, h, sized, siteMatcher } from "./common.js";
import { faded } from "./draw.js";
import { shownName, setName } from "./names.js";
import { shareTop, shareScale, sameText } from "./compare_data.js";
/** @typedef {import("./compare_data.js").Comparison} Comparison */

const SPARK = { width: 88, height: 26 };
// The shift cell's bar, and the cells' padding (compare_view.css sets both).
const SHIFT_BAR = 20;
const CELL_PAD = 8;
// The statistics' cells are a size smaller than the rest (.jcnb-cmp-num).
const NUMBER_FONT = "11px";
// The site column's bounds: a long name ends in an ellipsis (its title has it whole).
const SITE_MIN = 120;
const SITE_MAX = 280;

/**
 * Each mode's histogram as a step outline with a light fill, all on one
 * scale. Modes with no values are left out rather than drawn flat.
 * @param {CanvasRenderingContext2D} ctx
 * @param {(number[] | null)[]} shares
 * @param {string[]} colours
 * @param {{x: number, y: number, w: number, h: number}} box
 * @param {(share: number) => number} y share to pixel (from shareScale)
 * @param {{fill: number, width: number}} style
 */
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

/**
 * A number in at most three significant digits, for the table's narrow
 * columns: "-0.0422", "1.24e-8", "1e+6".
 * @param {number} x
 */
function compactNumber(x) {
  if (x === null || Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  if (x === 0) return "0";
  const a = Math.abs(x);
  if (a >= 1e-2 && a < 1e4) return String(Number(x.toPrecision(3)));
  const [mantissa, exponent] = x.toExponential(2).split("e");
  return `${Number(mantissa)}e${exponent}`;
}

/** A statistic as the table writes it: numbers compactly, shares and counts as the schema does. @param {Comparison} d @param {string} key @param {number} x */
function cellText(d, key, x) {
  return d.schema.stat(key).format === "number" ? compactNumber(x) : d.schema.text(key, x);
}

/** A mode's label with its colour's swatch. @param {string} text @param {string} colour */
function modeLabel(text, colour) {
  const item = setName(h("span", "jcnb-cmp-mode"), text);
  item.style.setProperty("--jcnb-mode", colour);
  return item;
}

/** Each mode's label, whole, and colour, the reference first. @param {HTMLElement} legend @param {Comparison} d */
function drawLegend(legend, d) {
  legend.replaceChildren();
  d.modes.forEach((label, mode) => {
    const item = modeLabel(label, d.colour(mode));
    item.dataset.mode = String(mode);
    item.title = mode === 0 ? `${shownName(label)}: the reference, shifts are measured against it` : shownName(label);
    legend.appendChild(item);
  });
}

/**
 * The widths the columns need for what they hold: the site names, the
 * shifts, and per statistic the widest of its header and its cells in any
 * mode; `tight`, the same with each header on as many lines as it has words.
 * @param {HTMLElement} root @param {Comparison} d
 */
function naturalWidths(root, d) {
  const ctx = document.createElement("canvas").getContext("2d");
  /** @param {string} font @returns {(text: string) => number} */
  const measurer = (font) => {
    if (!ctx) return (text) => 7.5 * text.length;
    return (text) => {
      ctx.font = font;
      return ctx.measureText(text).width;
    };
  };
  const style = getComputedStyle(root);
  const family = style.fontFamily || "monospace";
  const font = `${style.fontSize || "12px"} ${family}`;
  const text = measurer(font);
  const bold = measurer(`bold ${font}`);
  const number = measurer(`${NUMBER_FONT} ${family}`);
  const boldNumber = measurer(`bold ${NUMBER_FONT} ${family}`);
  const widest = (/** @type {string[]} */ texts, measure = text) => Math.max(0, ...texts.map(measure));
  const rows = d.sites.map((_, i) => i);
  const site = Math.max(bold("site"), widest(d.sites.map((s) => shownName(s.label))));
  const shift = Math.max(bold("shift"), SHIFT_BAR + 4 + widest(rows.map((i) => compactNumber(d.shift(i)))));
  /** @type {Record<string, number>} */
  const stats = {};
  /** @type {Record<string, number>} */
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
    groups: d.modes.map((label) => Math.ceil(bold(shownName(label)) + CELL_PAD + 8)),
  };
}

/**
 * Sets the table's columns for the room it has: short of room, the column
 * heads take two lines and the site column what the others leave, within its
 * bounds; past that the table scrolls sideways under the frozen site column.
 * @param {HTMLElement} root @param {HTMLElement} table @param {Comparison} d
 * @param {ReturnType<typeof naturalWidths>} widths
 */
function fitColumns(root, table, d, widths) {
  // 0 before the widget is in the page: the natural widths, until it is.
  const room = table.clientWidth;
  const wanted = Math.min(SITE_MAX, Math.max(SITE_MIN, widths.site));
  const statsOf = (/** @type {Record<string, number>} */ byKey) => d.modes.flatMap(() => d.tableColumns.map((key) => byKey[key]));
  const restOf = (/** @type {number[]} */ stats) => widths.shift + widths.hist + stats.reduce((a, b) => a + b, 0);
  let stats = statsOf(widths.stats);
  const wrapped = room > 0 && wanted + restOf(stats) > room;
  if (wrapped) stats = statsOf(widths.tight);
  const site = room > 0 ? Math.max(SITE_MIN, Math.min(wanted, room - restOf(stats))) : wanted;
  // Room to spare widens a mode's columns until its label fits over them.
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

/** The two header rows: mode names over their columns, then the column names. @param {Comparison} d */
function tableHeads(d) {
  const heads = h("div", "jcnb-cmp-heads");
  const groups = h("div", "jcnb-cmp-row jcnb-cmp-groups");
  groups.append(h("span", "jcnb-cmp-frozen"), h("span"), h("span"));
  d.modes.forEach((label, mode) => {
    // Cut to its columns' width when long: its title and the legend have it whole.
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

/** The cell saying every mode gave site i the values the first mode's columns show. @param {Comparison} d */
function sameCell(d) {
  const cell = h("span", "jcnb-cmp-cell jcnb-cmp-same", sameText(d));
  cell.style.gridColumn = `span ${d.tableColumns.length * (d.modes.length - 1)}`;
  const others = d.modes.slice(1).map(shownName).join(", ");
  cell.title = `${sameText(d)}: ${others} gave this site the same values as ${shownName(d.modes[0])}, whose statistics the row shows`;
  return cell;
}

/** Site i's row: its name, shift, histograms and statistics per mode. @param {Comparison} d @param {number} i @param {number} maxShift */
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
  name.title =
    `${shownName(site.label)}\n${shownName(site.site)} (${shownName(site.type)})` +
    nans.map(([label, n]) => `\n${n} NaN in ${label}`).join("") +
    (same ? `\n${sameText(d)}` : "");
  if (nans.length) row.classList.add("jcnb-cmp-nonfinite");
  row.appendChild(name);

  const shiftCell = h("span", "jcnb-cmp-cell jcnb-cmp-shift");
  if (Number.isNaN(shift)) {
    shiftCell.textContent = "–";
    const missing = d.missing(i);
    shiftCell.title = missing.length
      ? `no shift: the site is missing in ${missing.map(shownName).join(", ")}`
      : `no shift: the site has no statistics in a ${d.noun}`;
  } else {
    const track = h("span", "jcnb-cmp-track");
    const bar = h("span", "jcnb-cmp-bar");
    bar.style.width = `${100 * Math.min(1, shift / maxShift)}%`;
    track.appendChild(bar);
    shiftCell.append(track, h("span", "", compactNumber(shift)));
    shiftCell.title = `shift ${fmt(shift)}`;
  }
  row.appendChild(shiftCell);

  const spark = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-cmp-spark"));
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
      const cell = h("span", "jcnb-cmp-cell jcnb-cmp-num", reached ? cellText(d, key, value) : "–");
      cell.dataset.key = key;
      cell.dataset.mode = String(mode);
      cell.title = reached ? `${d.schema.label(key)} in ${shownName(label)}: ${d.schema.text(key, value)}` : `not reached in ${shownName(label)}`;
      row.appendChild(cell);
    }
  });
  if (same) row.appendChild(sameCell(d));
  return row;
}

/**
 * Rebuilds the table: the heads, then one row per site.
 * @param {HTMLElement} root @param {HTMLElement} table @param {Comparison} d
 * @returns {{rows: HTMLElement[], fit: () => void}} the rows, by site index, and
 *   how to fit the columns again when the widget's width changes
 */
function drawTable(root, table, d) {
  table.replaceChildren();
  // Every row is its own grid on the same columns, so every column lines up.
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

/**
 * Hides the rows the filter leaves out, and says how many are shown.
 * @param {{root: HTMLElement, title: HTMLElement, filter: HTMLInputElement}} ui @param {HTMLElement[]} rows @param {Comparison} d
 */
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
  title.textContent =
    (shown < n ? `${shown} of ${n} sites` : `${n} site${n === 1 ? "" : "s"}`) + ", largest shift first";
}

export { drawOverlay, modeLabel, drawLegend, drawTable, applyFilter };
