// CaptureView's table: a virtualized, sortable list of the captured sites,
// one row each with its statistics and a sparkline histogram. Only the rows
// in view are built. A site whose values hold a fill (masked attention
// logits) shows its statistics and sparkline without it, and its "fill
// excluded" cell names the fill; that column is there only when a site has one.

import { h, sized } from "./common.js";
import { drawBars } from "./draw.js";
import { statText } from "./schema.js";
import { shownName, setName } from "./names.js";
import { shapeText, countText, fillText } from "./capture_data.js";
/** @typedef {import("./capture_data.js").CaptureData} CaptureData */
/** @typedef {import("./capture_data.js").Fill} Fill */

const ROW_HEIGHT = 24;
const VISIBLE_ROWS = 14;
const SPARK = { width: 80, height: 18 };
// Each column is as wide as its longest text (header and sort arrow
// included), in characters of the table's monospaced font, plus the cell's
// padding and a pixel or two of rounding. The statistics, counts, call and
// dtype always get their full width, so a number is never cut. The path,
// name and shape give up room when the output is narrow, down to `least`
// characters, and never take more than `most`: past it their text is cut
// with an ellipsis (a path's in its middle), all of it in the cell's title.
// The histogram gives up room first and gets it back last.
const CELL_PADDING = "10px";
const HIST_MOST = `${SPARK.width + 8}px`; // its least is its head's text
// In the order they get room back once every column has its least: the
// shape (short, and no use cut), then the path and name together, in
// proportion to what they lack, then the histogram.
const FLEXIBLE = [["shape"], ["path", "name"], ["hist"]];

/**
 * A column of the table. `numeric` ones sort largest first on their first
 * click, `right` ones are right-aligned; a statistic's column has the
 * statistic's `format`; `least`/`most` bound a column whose text may be cut
 * (characters).
 * @typedef {{key: string, label: string, numeric?: boolean, right?: boolean, sortable: boolean,
 *   format?: string, least?: number, most?: number}} Column
 */

/** The columns before the statistics. @type {Column[]} */
const LEAD_COLUMNS = [
  { key: "path", label: "path", sortable: true, least: 8, most: 40 },
  { key: "name", label: "name", sortable: true, least: 10, most: 40 },
  { key: "call", label: "call", sortable: true, right: true },
  // A shape cut short hides its last axes: it keeps its width (up to the most) and the table scrolls.
  { key: "shape", label: "shape", sortable: true, least: 28, most: 28 },
  { key: "dtype", label: "dtype", sortable: true },
];
/** The record type: shown when the sites hold more than one (a value and its gradient share a name). @type {Column} */
const TYPE_COLUMN = { key: "type", label: "type", sortable: true };
/** @type {Column} */
const HIST_COLUMN = { key: "hist", label: "histogram", sortable: false };
/** @type {Column} */
const FILL_COLUMN = { key: "fill", label: "fill excluded", right: true, sortable: false };
const FILL_TITLE = "a value filling a share of the array far from the rest (masked attention logits), which the row's statistics and histogram leave out";

/**
 * The table's columns: the site's own (its type where the sites hold more
 * than one, as the text table and saved HTML do), one per statistic the
 * schema gives a column, its NaN/Inf counts, the fill left out when some
 * site has one, and the sparkline.
 * @param {CaptureData} data @returns {Column[]}
 */
function tableColumns(data) {
  const { schema } = data;
  /** @type {Column[]} */
  const stats = schema.columns().map((s) => ({ key: s.key, label: s.label, format: s.format, numeric: true, right: true, sortable: true }));
  /** @type {Column} */
  const nonfinite = { key: "nonfinite", label: schema.nonfiniteLabel, numeric: true, right: true, sortable: true };
  return [...leadColumns(data), ...stats, nonfinite, ...(data.fillRows.size ? [FILL_COLUMN] : []), HIST_COLUMN];
}

/** The columns before the statistics, with the type after the call where the sites hold several. @param {CaptureData} data */
function leadColumns(data) {
  if (new Set(data.sites.map((s) => s.type)).size < 2) return LEAD_COLUMNS;
  return [...LEAD_COLUMNS.slice(0, 3), TYPE_COLUMN, ...LEAD_COLUMNS.slice(3)];
}

/**
 * A number in at most 9 characters (10 for float64's tiny exponents), so
 * that it always fits its column: 4 significant digits in fixed notation for
 * 1e-3 <= |x| < 1e5 ("-0.002651", "12350"), otherwise 3 in scientific
 * notation without a "+" ("2.95e-4", "-2.38e38"); trailing zeros dropped.
 * Cells give the full value in their title.
 * @param {number | null} x
 */
function compactNumber(x) {
  if (x === null || Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  if (x === 0) return "0";
  const a = Math.abs(x);
  if (a >= 1e-3 && a < 1e5) {
    const rounded = Number(x.toPrecision(4));
    // 99999.9 rounds to 100000, six digits: written in scientific notation.
    if (Math.abs(rounded) < 1e5) return String(rounded);
  }
  const [mantissa, exponent] = x.toExponential(2).split("e");
  return `${mantissa.replace(/\.?0+$/, "")}e${Number(exponent)}`;
}

/** A statistic's value as a cell writes it: numbers compact, shares and counts as the schema writes them. @param {string} format @param {number} x */
const statCellText = (format, x) => (format === "number" ? compactNumber(x) : statText(format, x));

/** A fill as its row's cell names it: "−1e9 × 4,416", "≤ −2.13e37 × 12" when not one value. @param {Fill} fill */
function fillCellText(fill) {
  const value = compactNumber(fill.exact ? fill.value : fill.limit).replace(/^-/, "\u2212");
  return `${fill.exact ? "" : fill.side === "low" ? "\u2264 " : "\u2265 "}${value} \u00d7 ${countText(fill.count)}`;
}

/**
 * The text of site i's cell in `column` (its note takes the place of the
 * statistics' cells when it has none; the sparkline has no text).
 * @param {CaptureData} data @param {number} i @param {Column} column
 */
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

// East Asian wide and full-width letters take two character cells of a
// monospaced font.
const WIDE = /[\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]/u;

/** How many character cells `text` takes in a monospaced font. @param {string} text */
function textCells(text) {
  let cells = 0;
  for (const c of text) cells += WIDE.test(c) || (c.codePointAt(0) ?? 0) > 0xffff ? 2 : 1;
  return cells;
}

/**
 * How wide column `column` may be, in characters: [least, most].
 * @param {CaptureData} data @param {Column} column
 */
function widthBounds(data, column) {
  let need = textCells(column.label) + (column.sortable ? 1 : 0); // the sort arrow
  if (column.key === "hist") return [need, need];
  for (let i = 0; i < data.sites.length; i++) need = Math.max(need, textCells(cellText(data, i, column)));
  const most = Math.min(need, column.most ?? need);
  return [Math.min(most, column.least ?? most), most];
}

/**
 * Each column's width as a CSS length: fixed for the statistics, between
 * least and most for the flexible ones, which share the room of the
 * scrolling box (100cqw: the scroller is a size container) in the order of
 * FLEXIBLE. The widths add up to at most the box's width once it holds
 * every column's least; below that the table scrolls sideways.
 * @param {CaptureData} data @param {Column[]} columns
 * @returns {{tracks: string[], least: string}} the grid tracks, and the table's least width
 */
function columnWidths(data, columns) {
  const sizes = columns.map((column) => {
    const [least, most] = widthBounds(data, column);
    const base = `(${least}ch + ${CELL_PADDING})`;
    if (column.key === "hist") return { least, base, extra: `(${HIST_MOST} - ${base})`, weight: 1 };
    return { least, base, extra: `${most - least}ch`, weight: most - least };
  });
  const leastChars = sizes.reduce((sum, size) => sum + size.least, 0);
  const least = `(${leastChars}ch + ${columns.length} * ${CELL_PADDING})`;
  const tracks = sizes.map((size) => `calc${size.base}`);
  // What the groups before have taken of the room beyond the least widths.
  let taken = "0px";
  for (const group of FLEXIBLE) {
    const members = group.map((key) => columns.findIndex((c) => c.key === key)).filter((k) => k >= 0);
    const weight = members.reduce((sum, k) => sum + sizes[k].weight, 0);
    const room = `(100cqw - ${least} - (${taken}))`;
    const growing = members.filter((m) => sizes[m].weight > 0);
    /** What member m takes of the room by its share, at most its extra. @param {number} m */
    const byShare = (m) => `min(${room} * ${(sizes[m].weight / weight).toFixed(4)}, ${sizes[m].extra})`;
    for (const k of growing) {
      // The room the others leave: a column whose text is short hands what
      // its share holds beyond its text to the other (a path cut while the
      // name column stands half empty).
      const left = growing.filter((m) => m !== k).map((m) => ` - ${byShare(m)}`).join("");
      tracks[k] = `calc(${sizes[k].base} + clamp(0px, ${room}${left}, ${sizes[k].extra}))`;
    }
    taken += members.map((k) => ` + ${sizes[k].extra}`).join("");
  }
  return { tracks, least: `calc${least}` };
}

/**
 * Sizes the grid to the sites' texts, once per CaptureData and columns.
 * @param {ReturnType<typeof tableLayout>} table @param {CaptureData} data @param {Column[]} columns
 */
function fitColumns(table, data, columns) {
  const fitted = fittedTo.get(table.sheet);
  if (fitted && fitted.data === data && fitted.columns === columns) return;
  fittedTo.set(table.sheet, { data, columns });
  const { tracks, least } = columnWidths(data, columns);
  const { style } = table.sheet;
  style.minWidth = least;
  style.setProperty("--jcnb-cv-columns", tracks.join(" "));
  // The name sticks beside the path, which sticks at the left edge.
  style.setProperty("--jcnb-cv-path-width", tracks[columns.findIndex((c) => c.key === "path")] || "0px");
}
/** What each table's columns were last fitted to. @type {WeakMap<HTMLElement, {data: CaptureData, columns: Column[]}>} */
const fittedTo = new WeakMap();

/**
 * What the table shows: its columns, the rows in order, the sort, the
 * selected row and the keyboard cursor (site indices; -1: none).
 * @typedef {{columns: Column[], order: number[], sortKey: string, sortDir: number, selected: number, cursor: number}} TableState
 */

/**
 * The scrolling table with its sticky head, empty: an ARIA grid, whose
 * column heads carry aria-sort.
 */
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

/**
 * The sites the filter lets through, in the table's order.
 * @param {CaptureData} data @param {(text: string) => boolean} matches @param {string} sortKey @param {number} sortDir
 */
function rowOrder(data, matches, sortKey, sortDir) {
  const sites = data.sites;
  const order = sites.map((_, i) => i).filter((i) => data.siteTexts(i).some(matches));
  if (!sortKey) {
    // Unsorted: grouped by module path, groups in order of first appearance,
    // execution order within a group.
    const firstSeen = new Map();
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

/** A sparkline of site i's histogram, without its fill where it has one. @param {CaptureData} data @param {number} i @param {string} colour */
function sparkline(data, i, colour) {
  const canvas = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-spark"));
  const ctx = sized(canvas, SPARK.width, SPARK.height); // narrower columns scale it down (CSS max-width)
  const row = data.rowHist(i);
  const top = Math.max(1, ...row);
  const box = { x: 0, y: 0, w: SPARK.width, h: SPARK.height };
  drawBars(ctx, box, row, (c) => SPARK.height - (SPARK.height * c) / top, colour);
  return canvas;
}

/** A table cell whose full text is also its title (cells cut text with an ellipsis). @param {string} text @param {string} [cls] @param {string} [fullText] */
function cell(text, cls = "", fullText = text) {
  const node = h("span", `jcnb-cell ${cls}`.trim(), text);
  node.title = fullText;
  node.setAttribute("role", "gridcell");
  return node;
}

/**
 * A path's cell. Short of room it cuts the middle of the path and keeps its
 * last part, which tells modules apart ("blocks.0.att\u2026query"), and then
 * the end of that. A row's path is grey when the row above has the same.
 * @param {string} path @param {boolean} samePath
 */
function pathCell(path, samePath) {
  const node = cell("", samePath ? "jcnb-path jcnb-same-path" : "jcnb-path", shownName(path));
  const last = path.lastIndexOf(".") + 1;
  node.append(setName(h("span", "jcnb-path-head"), path.slice(0, last)), setName(h("span", "jcnb-path-tail"), path.slice(last)));
  return node;
}

/**
 * The cells of site i's row.
 * @param {CaptureData} data @param {number} i @param {Column[]} columns @param {boolean} samePath @param {string} colour of the sparkline
 */
function rowCells(data, i, columns, samePath, colour) {
  const s = data.sites[i];
  const { schema } = data;
  const stat = (/** @type {string} */ name) => data.stat(i, name);
  const path = s.path || "(root)";
  const nameCell = setName(cell("", "jcnb-name", data.nameTitle(i)), s.shown_name);
  if (s.same_as >= 0) {
    nameCell.append(setName(h("span", "jcnb-same"), ` = ${data.sites[s.same_as].label}`));
    nameCell.dataset.sameAs = String(s.same_as);
  }
  const text = (/** @type {Column} */ column) => cellText(data, i, column);
  const rest = leadColumns(data).slice(2).map((column) => cell(text(column), column.right ? "jcnb-num" : ""));
  const cells = [pathCell(path, samePath), nameCell, ...rest];
  if (!s.has_stats) {
    const note = cell(s.note, "jcnb-note");
    note.style.gridColumn = `span ${columns.length - cells.length}`;
    return [...cells, note];
  }
  const bad = data.nonfinite(i);
  const fills = data.fills(i).map(fillText).join(", ");
  // Numbers (mean, min, ...) are over the finite values, but a fill; counts and shares over all.
  const finiteOnly = bad ? `\nover the ${countText(stat("count"))} finite values of ${countText(data.total(i))}` : "";
  for (const column of columns.filter((c) => c.format)) {
    // The cell is rounded to fit; its title holds the value to full precision,
    // and, without a fill, the value with it.
    const value = data.rowStat(i, column.key);
    const withFill = `\nwithout the ${fills}; with it: ${String(stat(column.key))}`;
    const title = `${column.label} ${String(value)}${fills ? withFill : column.format === "number" ? finiteOnly : ""}`;
    cells.push(cell(text(column), "jcnb-num", title));
  }
  const counts = schema.nonfinite.map((k) => `${countText(stat(k.key))} ${k.label}`).join(", ");
  const nonfinite = /** @type {Column} */ (columns.find((c) => c.key === "nonfinite"));
  const badCell = cell(text(nonfinite), "jcnb-num", bad ? counts : `no ${schema.nonfiniteLabel}`);
  if (bad) badCell.classList.add("jcnb-nonfinite");
  const fillColumn = columns.find((c) => c.key === "fill");
  const fillCells = fillColumn ? [cell(text(fillColumn), "jcnb-num jcnb-fill-cell", fills ? `${fills} excluded from the row's statistics and histogram` : "no fill")] : [];
  const holder = cell("", "", fills ? `histogram of the finite values without the ${fills}` : "histogram of the finite values");
  holder.append(sparkline(data, i, colour));
  return [...cells, badCell, ...fillCells, holder];
}

/**
 * Builds the rows in view, replacing the ones before.
 * @param {ReturnType<typeof tableLayout>} table @param {CaptureData} data @param {TableState} view @param {string} colour of the sparklines
 */
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

/** Which rows are in view, as "first:last": drawRows is needed only when it changes. @param {HTMLElement} scroller @param {number} n rows in all */
function rowsInView(scroller, n) {
  const first = Math.floor(scroller.scrollTop / ROW_HEIGHT);
  return `${first}:${Math.min(n, first + VISIBLE_ROWS + 2)}`;
}

/** The first direction a click on `column` sorts it: largest first for numbers. @param {Column} column */
const firstDir = (column) => (column.numeric ? -1 : 1);

/**
 * Builds the column heads, each marked with its key; the sorted one carries
 * aria-sort, which draws its arrow (capture_view.css).
 * @param {ReturnType<typeof tableLayout>} table @param {Column[]} columns @param {string} sortKey @param {number} sortDir
 */
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
      // What a click does next: sort, reverse, or go back to the first order.
      const next = !sorted ? firstDir(col) : sortDir === firstDir(col) ? -sortDir : 0;
      const directions = col.numeric ? ["smallest first", "largest first"] : ["A to Z", "Z to A"];
      node.title = next ? `sort by ${col.label}, ${directions[next > 0 ? 0 : 1]}` : "back to execution order, grouped by module";
    }
    head.appendChild(node);
  }
}

/**
 * The sort after a click on column `key`'s head: a new column sorts in its
 * first direction, the same column then reverses, and a third click goes
 * back to the unsorted order.
 * @param {TableState} view @param {string} key
 */
function sortAfterClick(view, key) {
  const col = view.columns.find((c) => c.key === key);
  if (!col || !col.sortable) return { sortKey: view.sortKey, sortDir: view.sortDir };
  if (view.sortKey !== col.key) return { sortKey: col.key, sortDir: firstDir(col) };
  if (view.sortDir === firstDir(col)) return { sortKey: col.key, sortDir: -view.sortDir };
  return { sortKey: "", sortDir: 1 };
}

/** The row position a table key moves to from position `at`, or null for other keys. @param {string} key @param {number} at @param {number} n rows */
function rowAfterKey(key, at, n) {
  /** @type {Record<string, number>} */
  const moves = { ArrowDown: at + 1, ArrowUp: at - 1, Home: 0, End: n - 1, PageDown: at + VISIBLE_ROWS, PageUp: at - VISIBLE_ROWS };
  if (!(key in moves)) return null;
  return Math.min(Math.max(moves[key], 0), n - 1);
}

/** Scrolls the table so that row position k is in view. @param {HTMLElement} scroller @param {number} k */
function scrollToRow(scroller, k) {
  const view = scroller.clientHeight - ROW_HEIGHT; // below the sticky head
  if (k * ROW_HEIGHT < scroller.scrollTop) scroller.scrollTop = k * ROW_HEIGHT;
  else if ((k + 1) * ROW_HEIGHT > scroller.scrollTop + view) scroller.scrollTop = (k + 1) * ROW_HEIGHT - view;
}

export { ROW_HEIGHT, tableColumns, tableLayout, rowOrder, drawRows, rowsInView, drawHead, sortAfterClick, rowAfterKey, scrollToRow };
