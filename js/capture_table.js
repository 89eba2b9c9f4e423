// CaptureView's table: a virtualized, sortable list of the captured sites,
// one row each with its statistics and a sparkline histogram. Only the rows
// in view are built.

const ROW_HEIGHT = 24;
const VISIBLE_ROWS = 14;
// The columns before the statistics and after them; `width` is the CSS grid
// track, and the tracks' minimum widths add up to what the table needs
// before it scrolls sideways.
const LEAD_COLUMNS = [
  { key: "path", label: "path", width: "minmax(110px, 1.5fr)" },
  { key: "name", label: "name", width: "minmax(120px, 1.5fr)" },
  { key: "call", label: "call", width: "40px" },
  { key: "shape", label: "shape", width: "minmax(84px, 1fr)" },
  { key: "dtype", label: "dtype", width: "64px" },
];
const HIST_COLUMN = { key: "hist", label: "histogram", width: "88px" };
// A statistic's column is as wide as its format's text needs.
const STAT_WIDTHS = { number: "70px", percent: "64px", count: "64px" };
const SPARK = { width: 80, height: 18 };

/**
 * A column of the table: `numeric` ones sort largest first on their first
 * click; a statistic's column has the statistic's `format`.
 * @typedef {{key: string, label: string, width: string, numeric?: boolean, format?: string}} Column
 */

/**
 * The table's columns: the site's own, one per statistic the schema gives a
 * column, its NaN/Inf counts, and the sparkline.
 * @param {ReturnType<typeof schemaOf>} schema @returns {Column[]}
 */
function tableColumns(schema) {
  const stats = schema.columns().map((s) => ({ key: s.key, label: s.label, format: s.format, width: STAT_WIDTHS[s.format] || STAT_WIDTHS.number, numeric: true }));
  const nonfinite = { key: "nonfinite", label: schema.nonfiniteLabel, width: "64px", numeric: true };
  return [...LEAD_COLUMNS, ...stats, nonfinite, HIST_COLUMN];
}

/**
 * What the table shows: its columns, the rows in order, the sort, the
 * selected row and the keyboard cursor (site indices; -1: none).
 * @typedef {{columns: Column[], order: number[], sortKey: string, sortDir: number, selected: number, cursor: number}} TableState
 */

/** The scrolling table with its sticky head, empty. */
function tableLayout() {
  const scroller = h("div", "jcnb-scroller");
  scroller.tabIndex = 0;
  scroller.setAttribute("role", "listbox");
  scroller.setAttribute("aria-label", "captured sites: arrow keys move, Enter shows the details");
  scroller.style.maxHeight = `${(VISIBLE_ROWS + 1) * ROW_HEIGHT + 18}px`;
  const sheet = h("div", "jcnb-sheet");
  const head = h("div", "jcnb-row jcnb-head");
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
    // Default: grouped by module path, groups in order of first appearance,
    // execution order within a group.
    const firstSeen = new Map();
    sites.forEach((s, i) => firstSeen.has(s.path) || firstSeen.set(s.path, i));
    order.sort((a, b) => firstSeen.get(sites[a].path) - firstSeen.get(sites[b].path) || a - b);
  } else if (sortKey !== "hist") {
    order.sort((a, b) => {
      const x = data.sortValue(a, sortKey);
      const y = data.sortValue(b, sortKey);
      return (x < y ? -1 : x > y ? 1 : a - b) * sortDir;
    });
  }
  return order;
}

/** A sparkline of site i's histogram. @param {CaptureData} data @param {number} i @param {string} colour */
function sparkline(data, i, colour) {
  const canvas = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-spark"));
  const ctx = sized(canvas, SPARK.width, SPARK.height);
  const row = data.hist(i);
  const top = Math.max(1, ...row);
  const box = { x: 0, y: 0, w: SPARK.width, h: SPARK.height };
  drawBars(ctx, box, row, (c) => SPARK.height - (SPARK.height * c) / top, colour);
  return canvas;
}

/** A table cell whose full text is also its title (cells cut text with an ellipsis). @param {string} text @param {string} [cls] @param {string} [fullText] */
function cell(text, cls = "", fullText = text) {
  const node = h("span", `jcnb-cell ${cls}`.trim(), text);
  node.title = fullText;
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
  const pathCell = setName(cell("", "", shownName(path)), path);
  if (samePath) pathCell.classList.add("jcnb-same-path");
  const nameCell = setName(cell("", "jcnb-name", data.nameTitle(i)), s.shown_name);
  if (s.same_as >= 0) {
    nameCell.append(setName(h("span", "jcnb-same"), ` = ${data.sites[s.same_as].label}`));
    nameCell.dataset.sameAs = String(s.same_as);
  }
  const cells = [pathCell, nameCell, cell(String(s.call), "jcnb-num"), cell(shapeText(s)), cell(s.dtype)];
  if (!s.has_stats) {
    const note = cell(s.note, "jcnb-note");
    note.style.gridColumn = `span ${columns.length - cells.length}`;
    return [...cells, note];
  }
  const bad = data.nonfinite(i);
  // Numbers (mean, min, ...) are over the finite values; counts and shares over all.
  const finiteOnly = bad ? `\nover the ${countText(stat("count"))} finite values of ${countText(data.total(i))}` : "";
  for (const column of columns.filter((c) => c.format)) {
    const v = stat(column.key);
    const title = `${column.label} ${String(v)}${column.format === "number" ? finiteOnly : ""}`;
    cells.push(cell(statText(column.format, v), "jcnb-num", title));
  }
  const [nan, ...infinite] = schema.nonfinite.map((k) => stat(k.key));
  const counts = schema.nonfinite.map((k) => `${countText(stat(k.key))} ${k.label}`).join(", ");
  const infs = infinite.reduce((a, b) => a + b, 0);
  const badCell = cell(bad ? `${nan}/${infs}` : "-", "jcnb-num", bad ? counts : `no ${schema.nonfiniteLabel}`);
  if (bad) badCell.classList.add("jcnb-nonfinite");
  const holder = h("span", "jcnb-cell");
  holder.append(sparkline(data, i, colour));
  return [...cells, badCell, holder];
}

/**
 * Builds the rows in view, replacing the ones before.
 * @param {ReturnType<typeof tableLayout>} table @param {CaptureData} data @param {TableState} view @param {string} colour of the sparklines
 */
function drawRows(table, data, view, colour) {
  const { scroller, sheet } = table;
  const { order } = view;
  const first = Math.floor(scroller.scrollTop / ROW_HEIGHT);
  const last = Math.min(order.length, first + VISIBLE_ROWS + 2);
  for (const old of [...sheet.querySelectorAll(".jcnb-body-row")]) old.remove();
  for (let k = first; k < last; k++) {
    const i = order[k];
    const row = h("div", "jcnb-row jcnb-body-row");
    row.style.top = `${(k + 1) * ROW_HEIGHT}px`;
    row.dataset.site = String(i);
    row.setAttribute("role", "option");
    row.setAttribute("aria-selected", String(i === view.selected));
    row.classList.toggle("jcnb-selected", i === view.selected);
    row.classList.toggle("jcnb-cursor", i === view.cursor);
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

/**
 * Builds the sortable column heads, each marked with its key, and sizes the
 * grid to the columns.
 * @param {ReturnType<typeof tableLayout>} table @param {Column[]} columns @param {string} sortKey @param {number} sortDir
 */
function drawHead(table, columns, sortKey, sortDir) {
  const { sheet, head } = table;
  const minWidth = columns.reduce((sum, c) => sum + Number((c.width.match(/(\d+)px/) || [0, 0])[1]), 0);
  sheet.style.minWidth = `${minWidth + 8}px`;
  sheet.style.setProperty("--jcnb-cv-columns", columns.map((c) => c.width).join(" "));
  head.replaceChildren();
  for (const col of columns) {
    const arrow = sortKey === col.key ? (sortDir > 0 ? " \u25b2" : " \u25bc") : "";
    const node = h("span", "jcnb-cell jcnb-sortable", col.label + arrow);
    node.dataset.key = col.key;
    node.title = col.key === "hist" ? "histogram of the finite values" : `sort by ${col.label}`;
    head.appendChild(node);
  }
}

/**
 * The sort after a click on column `key`'s head: the same column flips, a new one starts high for numbers.
 * @param {TableState} view @param {string} key
 */
function sortAfterClick(view, key) {
  const col = view.columns.find((c) => c.key === key);
  if (!col) return { sortKey: view.sortKey, sortDir: view.sortDir };
  const sortDir = view.sortKey === col.key ? -view.sortDir : col.numeric ? -1 : 1;
  return { sortKey: col.key, sortDir };
}

/** The row position a table key moves to from position `at`, or null for other keys. @param {string} key @param {number} at @param {number} n rows */
function rowAfterKey(key, at, n) {
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
