// The drawing layer every widget shares: theme colours, scales and ticks,
// axes, histogram bars, colour maps with their colour bar, keys and one
// tooltip per widget. Widgets lay out their own charts and call these to
// draw them, so all four read alike and follow the host's theme.

import { h, downloadBlob } from "./common.js";

/** The schema's data colours, for drawings made before their element is in the page. */
const dataColours = { series: "#808080", band: "#808080", median: "#808080" };

/** Takes the data colours of the kernel's schema (applyColours in schema.js calls this). @param {Record<string, string>} colours */
function useDataColours(colours) {
  Object.assign(dataColours, colours);
}

/**
 * The widget's colours and fonts, resolved from theme.css at draw time so a
 * theme switch needs only a redraw.
 * @param {Element} el an element inside a `.jcnb-themed` root
 */
function themeOf(el) {
  const style = getComputedStyle(el);
  const read = (/** @type {string} */ name, /** @type {string} */ fallback) => style.getPropertyValue(name).trim() || fallback;
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
    font: read("--jcnb-font", "sans-serif"),
  };
}

/** A CSS colour with its alpha scaled by `alpha` (canvas reads any CSS colour). @param {string} colour @param {number} alpha */
function faded(colour, alpha) {
  return `color-mix(in srgb, ${colour} ${Math.round(alpha * 100)}%, transparent)`;
}

/**
 * Round tick values covering [lo, hi]: steps of 1, 2 or 5 times a power of ten.
 * @param {number} lo @param {number} hi @param {number} [count] about how many ticks
 * @returns {number[]}
 */
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

/** Integer ticks for step axes: never a fractional step. @param {number} lo @param {number} hi @param {number} [count] */
function stepTicks(lo, hi, count = 5) {
  return niceTicks(lo, hi, count).filter((v) => Number.isInteger(v) || Math.abs(v - Math.round(v)) < 1e-9).map(Math.round);
}

/** A tick's text: short, and exact enough to tell neighbouring ticks apart. @param {number} v */
function tickText(v) {
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a >= 1e5 || a < 1e-3) return v.toExponential(1).replace("e+", "e");
  return Number(v.toPrecision(4)).toString();
}

/**
 * A linear map from data to pixels, with its inverse.
 * @param {number} d0 @param {number} d1 @param {number} r0 @param {number} r1
 */
function linearScale(d0, d1, r0, r1) {
  const span = d1 !== d0 ? d1 - d0 : 1;
  const f = (/** @type {number} */ v) => r0 + ((v - d0) / span) * (r1 - r0);
  f.invert = (/** @type {number} */ p) => d0 + ((p - r0) / (r1 - r0 || 1)) * span;
  f.ticks = (/** @type {number} */ count = 5) => niceTicks(Math.min(d0, d1), Math.max(d0, d1), count);
  f.domain = /** @type {[number, number]} */ ([d0, d1]);
  return f;
}

/**
 * A map from counts in [0, top] to pixels, linear or logarithmic (log of
 * 1 + count, so zero stays at the axis).
 * @param {number} top @param {number} r0 @param {number} r1 @param {boolean} log
 */
function countScale(top, r0, r1, log) {
  const t = (/** @type {number} */ c) => (log ? Math.log10(1 + c) : c);
  const span = t(Math.max(top, 1));
  const f = (/** @type {number} */ c) => r0 + (t(Math.max(c, 0)) / span) * (r1 - r0);
  f.ticks = (/** @type {number} */ count = 4) => {
    if (!log) return niceTicks(0, Math.max(top, 1), count).filter(Number.isInteger);
    const ticks = [0];
    for (let p = 1; p <= Math.max(top, 1); p *= 10) ticks.push(p);
    return ticks;
  };
  f.domain = [0, top];
  return f;
}

/**
 * A logarithmic map from positive values to pixels, with ticks at powers of
 * ten (every other one when there are too many; 2 and 5 times them when the
 * range spans less than a decade).
 * @param {number} d0 @param {number} d1 @param {number} r0 @param {number} r1
 */
function logScale(d0, d1, r0, r1) {
  const inner = linearScale(Math.log10(d0), Math.log10(d1), r0, r1);
  const f = (/** @type {number} */ v) => inner(Math.log10(v));
  f.invert = (/** @type {number} */ p) => 10 ** inner.invert(p);
  f.ticks = (/** @type {number} */ count = 5) => {
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

/**
 * The plot area inside a canvas of size w x hgt, leaving room for the axes.
 * @param {number} w @param {number} hgt
 * @param {{left?: number, right?: number, top?: number, bottom?: number}} [margin]
 */
function plotBox(w, hgt, margin = {}) {
  const left = margin.left ?? 40;
  const right = margin.right ?? 6;
  const top = margin.top ?? 6;
  const bottom = margin.bottom ?? 18;
  return { x: left, y: top, w: Math.max(1, w - left - right), h: Math.max(1, hgt - top - bottom) };
}

/**
 * Axes on the left and bottom of `box`, with ticks, their labels and faint
 * grid lines. `x`/`y` map data to pixels; tick lists say where the ticks go.
 * @param {CanvasRenderingContext2D} ctx
 * @param {{x: number, y: number, w: number, h: number}} box
 * @param {{
 *   theme: ReturnType<typeof themeOf>,
 *   x?: (v: number) => number, xTicks?: number[], xText?: (v: number) => string, xLabel?: string,
 *   y?: (v: number) => number, yTicks?: number[], yText?: (v: number) => string, yLabel?: string,
 *   grid?: boolean,
 * }} spec
 */
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
      if (at - half < lastEnd + 4) continue; // labels never overlap
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

/**
 * Histogram bars over `box`: bin i of `counts` spans [edges(i), edges(i + 1)).
 * @param {CanvasRenderingContext2D} ctx
 * @param {{x: number, y: number, w: number, h: number}} box
 * @param {ArrayLike<number>} counts
 * @param {(c: number) => number} y count to pixel (from countScale)
 * @param {string} colour
 */
function drawBars(ctx, box, counts, y, colour) {
  const n = counts.length;
  const w = box.w / n;
  const base = y(0);
  ctx.fillStyle = colour;
  for (let i = 0; i < n; i++) {
    if (!counts[i]) continue;
    const top = Math.min(y(counts[i]), base - 1); // a count of one stays visible
    ctx.fillRect(box.x + i * w, top, Math.max(w - (w > 3 ? 1 : 0), 1), base - top);
  }
}

/** Stops of perceptually even colour maps, as [r, g, b] from 0 to 1. */
const COLOUR_MAPS = {
  // viridis, for values of one sign
  sequential: [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]],
  // blue - white - red (ColorBrewer RdBu), for values around zero
  diverging: [[33, 102, 172], [103, 169, 207], [247, 247, 247], [239, 138, 98], [178, 24, 43]],
};

/** The CSS colour of an [r, g, b] triple. @param {number[]} rgb */
const rgbText = (rgb) => `rgb(${rgb.join(",")})`;

/**
 * The colour of t in [0, 1] on a named colour map, as [r, g, b].
 * @param {"sequential" | "diverging"} name @param {number} t
 */
function colourAt(name, t) {
  const stops = COLOUR_MAPS[name];
  const at = Math.min(Math.max(Number.isFinite(t) ? t : 0, 0), 1) * (stops.length - 1);
  const i = Math.min(Math.floor(at), stops.length - 2);
  const f = at - i;
  return stops[i].map((c, k) => Math.round(c + f * (stops[i + 1][k] - c)));
}

/**
 * A vertical colour bar with its range's ticks, for a heatmap of `name` over [lo, hi].
 * @param {CanvasRenderingContext2D} ctx
 * @param {{x: number, y: number, w: number, h: number}} box
 * @param {"sequential" | "diverging"} name
 * @param {number} lo @param {number} hi
 * @param {ReturnType<typeof themeOf>} theme
 */
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

/**
 * A key entry: a swatch (or a line) and its label.
 * @param {string} colour @param {string} label @param {"swatch" | "line"} [kind]
 */
function keyItem(colour, label, kind = "swatch") {
  const item = h("span", "jcnb-key-item");
  const mark = h("span", kind === "line" ? "jcnb-key-line" : "jcnb-key-swatch");
  if (kind === "line") mark.style.borderTopColor = colour;
  else mark.style.background = colour;
  item.append(mark, document.createTextNode(label));
  return item;
}

/** One floating read-out per widget, shown next to the pointer. */
class Tooltip {
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
    // An ancestor with a transform or CSS containment (JupyterLab's windowed
    // notebook) places `fixed` boxes against itself, not the window: move the
    // tooltip by how far it landed from where it was meant to go.
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
}

/**
 * Shows `readOut(x, y)` in the tooltip while the pointer is over `canvas`
 * (x, y in CSS pixels of the canvas); nothing where it returns null.
 * @param {HTMLCanvasElement} canvas @param {Tooltip} tooltip
 * @param {(x: number, y: number) => string | null} readOut
 */
function hoverReadOut(canvas, tooltip, readOut) {
  canvas.addEventListener("mousemove", (event) => {
    const rect = canvas.getBoundingClientRect();
    const text = readOut(event.clientX - rect.left, event.clientY - rect.top);
    if (text) tooltip.show(event, text);
    else tooltip.hide();
  });
  canvas.addEventListener("mouseleave", () => tooltip.hide());
}

/**
 * Redraws on a theme switch: JupyterLab swaps the theme's stylesheet and
 * marks <body>; the --jcnb-* values resolve anew, canvases need drawing again.
 * @param {() => void} redraw
 * @returns {() => void} stops watching
 */
function onThemeChange(redraw) {
  const observer = new MutationObserver(redraw);
  observer.observe(document.body, { attributes: true, attributeFilter: ["data-jp-theme-name", "data-jp-theme-light", "class"] });
  return () => observer.disconnect();
}

/**
 * Keeps a view drawn: draws again when the theme switches or `width()` changes as `root` resizes.
 * @param {HTMLElement} root @param {() => number} width @param {() => void} draw
 * @returns {() => void} stops both
 */
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

/** `text`, cut at its end with an ellipsis to fit `width`. @param {CanvasRenderingContext2D} ctx @param {string} text @param {number} width */
function fittedText(ctx, text, width) {
  if (ctx.measureText(text).width <= width) return text;
  let n = text.length;
  while (n > 1 && ctx.measureText(`${text.slice(0, n)}…`).width > width) n--;
  return `${text.slice(0, n)}…`;
}

/**
 * Canvases side by side as one PNG download, on the page's background so the picture reads as it
 * did on screen.
 * @param {string} name @param {HTMLCanvasElement[]} canvases
 */
function downloadCanvases(name, canvases) {
  const gap = 16 * (window.devicePixelRatio || 1);
  const out = document.createElement("canvas");
  out.width = canvases.reduce((w, c) => w + c.width + gap, 0) - gap;
  out.height = Math.max(...canvases.map((c) => c.height));
  const ctx = /** @type {CanvasRenderingContext2D} */ (out.getContext("2d"));
  ctx.fillStyle = themeOf(canvases[0]).bg;
  ctx.fillRect(0, 0, out.width, out.height);
  let x = 0;
  for (const c of canvases) {
    ctx.drawImage(c, x, 0);
    x += c.width + gap;
  }
  out.toBlob((blob) => blob && downloadBlob(name, blob));
}

/**
 * Outlines the cell at (x, y), `w` x `h`, as selected: black inside white, which reads on every
 * cell colour in either theme.
 * @param {CanvasRenderingContext2D} ctx @param {number} x @param {number} y @param {number} w @param {number} h
 */
function strokeSelection(ctx, x, y, w, h) {
  ctx.lineWidth = 2;
  ctx.strokeStyle = "#fff";
  ctx.strokeRect(x + 1, y + 1, w - 3, h - 3);
  ctx.strokeStyle = "#000";
  ctx.strokeRect(x + 3, y + 3, w - 7, h - 7);
}

/**
 * The [row, column] of a grid of `rows` x `columns` cells laid out by `box` under (x, y), in CSS
 * pixels of its canvas; null outside it.
 * @param {{left: number, top: number, cellW: number, cellH: number}} box
 * @param {number} rows @param {number} columns @param {number} x @param {number} y
 */
function gridCell(box, rows, columns, x, y) {
  const column = Math.floor((x - box.left) / box.cellW);
  const row = Math.floor((y - box.top) / box.cellH);
  if (x < box.left || y < box.top || column >= columns || row >= rows) return null;
  return [row, column];
}

export { downloadCanvases, strokeSelection, gridCell, themeOf, faded, niceTicks, stepTicks, tickText, linearScale, countScale, logScale, plotBox, drawAxes, drawBars, rgbText, colourAt, drawColourBar, keyItem, Tooltip, hoverReadOut, onThemeChange, keepDrawn, fittedText, useDataColours };
