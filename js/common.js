// Helpers every widget front end uses: DOM elements, numbers, the site
// filter and the page's theme. The files that use them import them; the
// kernel joins each widget's files into one module (front_end.py).

/** The bytes of a binary trait, as an ArrayBuffer. @param {DataView | ArrayBuffer | null} data */
function bytesOf(data) {
  if (!data) return new ArrayBuffer(0);
  if (data instanceof ArrayBuffer) return data;
  // Copy: typed arrays need an offset aligned to their element size.
  return data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength);
}

/** Rounded like number_text in Python: 4 significant digits, or scientific. @param {number | null} x */
function fmt(x) {
  if (x === null || Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  if (x === 0) return "0";
  const a = Math.abs(x);
  if (a >= 1e-3 && a < 1e5) return Number(x.toPrecision(4)).toString();
  return x.toExponential(3);
}

/**
 * An element with a class and text; text is never parsed as HTML.
 * @param {string} tag
 * @param {string} [cls]
 * @param {string} [text]
 */
function h(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Sizes a canvas for the screen's pixel ratio; drawing uses CSS pixels. @param {HTMLCanvasElement} canvas @param {number} w @param {number} hgt */
function sized(canvas, w, hgt) {
  const ratio = window.devicePixelRatio || 1;
  canvas.width = Math.round(w * ratio);
  canvas.height = Math.round(hgt * ratio);
  canvas.style.width = `${w}px`;
  canvas.style.height = `${hgt}px`;
  const ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext("2d"));
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  return ctx;
}


/**
 * The search box over site names whose text siteMatcher reads.
 * @param {string} cls the widget's class for it
 */
function siteFilter(cls) {
  const filter = /** @type {HTMLInputElement} */ (h("input", cls));
  filter.type = "search";
  filter.placeholder = "filter sites (regex)";
  filter.setAttribute("aria-label", "filter sites (regular expression)");
  return filter;
}

/**
 * What a site filter box selects: its text as a regular expression, or as
 * plain text when it is not one (the box is then marked and says so).
 * @param {HTMLInputElement} filter
 * @returns {(label: string) => boolean}
 */
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

/**
 * Whether the page marks a dark theme on <body> the way marimo does (the
 * classes "dark" and "dark-theme", data-theme="dark"): a host that defines
 * none of the colour variables theme.css reads first.
 */
function pageIsDark() {
  const body = document.body;
  return Boolean(body) && (body.classList.contains("dark") || body.classList.contains("dark-theme") || body.dataset.theme === "dark");
}

/** The widget elements that follow the page's theme (followPageTheme), held weakly. */
const followers = new Set();
const following = new WeakSet();

/** Marks every follower with the page's theme as it is now. */
function markPageTheme() {
  const theme = pageIsDark() ? "dark" : "light";
  for (const ref of followers) {
    const el = ref.deref();
    if (el) el.dataset.jcnbPage = theme;
    else followers.delete(ref);
  }
}

// Made as this file is read, before any widget's own theme observer
// (onThemeChange): observers hear of a change in the order they were made,
// so the elements carry the new theme when a widget redraws its canvases.
if (typeof document !== "undefined" && document.body) {
  new MutationObserver(markPageTheme).observe(document.body, { attributes: true, attributeFilter: ["class", "data-theme"] });
}

/**
 * Marks a widget's element with the page's theme, `data-jcnb-page="dark"`
 * or `"light"`, now and whenever the page switches it; theme.css gives a
 * dark page's widgets dark colours where the host defines no colour variables.
 * @param {HTMLElement} el
 */
function followPageTheme(el) {
  if (!following.has(el)) {
    following.add(el);
    followers.add(new WeakRef(el));
  }
  el.dataset.jcnbPage = pageIsDark() ? "dark" : "light";
}

/** English ordinal: 1st, 2nd, 3rd, 4th, 11th. @param {number} n */
function ordinal(n) {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? "th" : ["th", "st", "nd", "rd"][n % 10] || "th";
  return `${n}${suffix}`;
}

/**
 * @typedef {{columns: string[], rows: (string | number)[][]}} Table a file's columns and rows, for csvText
 */

/** A CSV field: quoted when it holds a comma, quote or line break. @param {string | number} value */
function csvField(value) {
  const text = typeof value === "number" ? numberField(value) : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** A number as text that reads back to the same float32: NaN and the infinities spelled as pandas reads them. @param {number} x */
function numberField(x) {
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  return String(x);
}

/** The table as CSV, a header line first. @param {Table} table */
function csvText(table) {
  return [table.columns, ...table.rows].map((row) => row.map(csvField).join(",")).join("\n") + "\n";
}

/** Hands `text` to the browser as a download named `name`. @param {string} name @param {string} text @param {string} type */
function download(name, text, type) {
  downloadBlob(name, new Blob([text], { type }));
}

/** Hands `blob` (a file's bytes: text, a picture) to the browser as a download named `name`. @param {string} name @param {Blob} blob */
function downloadBlob(name, blob) {
  const url = URL.createObjectURL(blob);
  const link = /** @type {HTMLAnchorElement} */ (h("a"));
  link.href = url;
  link.download = name;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  // The download has its own reference to the blob once it has started.
  setTimeout(() => URL.revokeObjectURL(url), 0);
}

export { bytesOf, fmt, h, sized, siteFilter, siteMatcher, ordinal, followPageTheme, csvText, numberField, download, downloadBlob };
