// CaptureView's histogram of the selected site: its statistics line, the
// finite values' bins on a linear or log count scale, a bar per NaN/Inf kind
// right of the value axis, and what the pointer reads over them. Over a
// range the kernel computed (without a fill value, or robust), the bins are
// the kernel's, the fill has a bar beside the NaN/Inf ones, and the values
// below and above the range have bars at the axis's ends.

import { fmt, h, sized } from "./common.js";
import { themeOf, linearScale, countScale, plotBox, drawAxes, drawBars, rgbText, keyItem } from "./draw.js";
import { statText } from "./schema.js";
import { countText, MARK_COLOURS, fillValueText, fillText, percentileText } from "./capture_data.js";
/** @typedef {import("./capture_data.js").CaptureData} CaptureData */
/** @typedef {import("./capture_data.js").Fill} Fill */
/** @typedef {import("./capture_data.js").SiteRange} SiteRange */

// The large histogram: as wide as the details allow, within these bounds.
const HIST = { minWidth: 300, maxWidth: 560, height: 210 };
// Room right of the finite bins for one non-finite bar and its gap.
const NONFINITE_BAR = { width: 26, gap: 12, lead: 22 };

// Room at each end of the value axis for the bars of values below and above
// a range that leaves some out.
const END_BAR = { width: 12, gap: 6 };

/**
 * Where the histogram's parts went, for the read-out: the value axis's box,
 * range and counts, the bars right of it (non-finite kinds, a fill) and the
 * bars of values below and above the range at its ends.
 * @typedef {{box: {x: number, y: number, w: number, h: number}, lo: number, hi: number, counts: ArrayLike<number>,
 *   bars: {x: number, w: number, kind: any}[], ends: {x: number, w: number, count: number, text: string}[]}} HistLayout
 */

/**
 * The range answer when it draws site i over a range of its own (not the
 * summary's full one), else null.
 * @param {SiteRange | null} range @param {CaptureData} data @param {number} i
 */
function rangedFor(range, data, i) {
  if (!range || range.site !== i || range.mode === "full" || range.lo === null || range.hi === null) return null;
  return range.hist.length === data.bins ? range : null;
}

/**
 * The statistics of site i's values other than its fill, by key: its row's
 * (the table shows them), or, for a site whose row keeps the fill (a value
 * split across processes), the kernel's range answer for it; null when
 * neither leaves a fill out.
 * @param {CaptureData} data @param {number} i @param {SiteRange | null} range
 * @returns {{value: (key: string) => number, count: number, fills: Fill[]} | null}
 */
function withoutFill(data, i, range) {
  const fills = data.fills(i);
  if (fills.length) return { value: (key) => data.rowStat(i, key), count: data.rowStat(i, "count"), fills };
  const rest = range && range.site === i && range.fills.length ? range.rest : null;
  if (!rest || !rest.count) return null;
  return { value: (key) => rest[key] ?? NaN, count: rest.count, fills: /** @type {SiteRange} */ (range).fills };
}

/**
 * The statistics the table shows of site i, saying when they leave values
 * out. With `leaveFillOut` (the details' "stats without fill"), a site with
 * a fill shows the statistics of its other values, as its row does;
 * without, those of every finite value, the fill named among them.
 * @param {HTMLElement} statsLine @param {CaptureData} data @param {number} i
 * @param {SiteRange | null} [range] the kernel's range answer @param {boolean} [leaveFillOut]
 */
function drawStatsLine(statsLine, data, i, range = null, leaveFillOut = true) {
  statsLine.replaceChildren();
  delete statsLine.dataset.finiteOnly;
  delete statsLine.dataset.withoutFill;
  if (!data.sites[i].has_stats || data.stat(i, "count") === 0) return; // the histogram's place says why
  const { schema } = data;
  const rest = withoutFill(data, i, range);
  const nonfinite = data.nonfiniteKinds(i).map((k) => `${countText(k.count)} ${k.label}`);
  if (rest && leaveFillOut) {
    const parts = schema.columns().map((s) => `${s.label} ${schema.text(s.key, rest.value(s.key))}`);
    statsLine.append(h("span", "", parts.join(" \u00b7 ")));
    statsLine.dataset.withoutFill = "true";
    const left = [...rest.fills.map(fillText), ...nonfinite].join(", ");
    statsLine.append(h("span", "jcnb-finite-only", ` \u2014 over the ${countText(rest.count)} values of ${countText(data.total(i))} without the fill (${left} left out)`));
    return;
  }
  const parts = schema.columns().map((s) => `${s.label} ${schema.text(s.key, data.stat(i, s.key))}`);
  statsLine.append(h("span", "", parts.join(" \u00b7 ")));
  const bad = data.nonfinite(i);
  if (!bad && !rest) return;
  statsLine.dataset.finiteOnly = "true";
  const over = `over the ${countText(data.stat(i, "count"))} finite values of ${countText(data.total(i))}`;
  const missing = bad ? ` (${nonfinite.join(", ")} left out)` : "";
  const fills = rest ? `, the ${rest.fills.map(fillText).join(", ")} among them` : "";
  statsLine.append(h("span", "jcnb-finite-only", ` \u2014 ${over}${missing}${fills}`));
}

/** The histogram's width in CSS pixels: what the details area has room for. @param {HTMLElement} detail */
function histWidth(detail) {
  const room = detail.clientWidth - 4;
  return Math.round(Math.min(HIST.maxWidth, Math.max(HIST.minWidth, room || HIST.maxWidth)));
}

/** What the value axis says it counts. @param {CaptureData} data @param {number} i @param {SiteRange | null} ranged */
function axisCaption(data, i, ranged) {
  const finite = countText(data.stat(i, "count"));
  if (!ranged) return `value (${finite} finite)`;
  const without = ranged.fills.length ? ` without the ${ranged.fills.map((f) => `fill ${fillValueText(f)}`).join(", ")}` : "";
  if (ranged.mode === "robust") return `value (${percentileText(ranged)} of the finite values${without})`;
  return `value (${countText(ranged.rest?.count ?? 0)} finite${without})`;
}

/**
 * Draws site i's histogram (i = -1: none), with a bar per non-finite kind at
 * its right. Over a range of the kernel's (`range`, when it is for site i and
 * not the full one) it draws the kernel's bins, a bar for the fill beside the
 * non-finite ones, and bars of the values below and above the range at the
 * axis's ends.
 * @param {ReturnType<typeof import("./capture_layout.js").captureLayout>} ui @param {CaptureData} data @param {number} i @param {SiteRange | null} [range]
 * @returns {HistLayout | null} where the parts went, for the read-out; null when nothing was drawn
 */
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
  // A fill often outnumbers all the rest: its bar is cut at the top rather
  // than flatten the bins it was left out of.
  const top = Math.max(1, ...counts, ...nonfinite.map((k) => k.count), under, over);
  const y = countScale(top, box.y + box.h, box.y, logBox.checked);
  const lo = ranged ? /** @type {number} */ (ranged.lo) : data.stat(i, "lo");
  const hi = ranged ? /** @type {number} */ (ranged.hi) : data.stat(i, "hi");
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

/**
 * A key entry for a mark's colour, its swatch outlined: black and white
 * marks would vanish on a dark or light page.
 * @param {number[]} rgb @param {string} label
 */
function markKeyItem(rgb, label) {
  const item = keyItem(rgbText(rgb), label);
  item.classList.add("jcnb-mark-key");
  return item;
}

/**
 * The bars of the values below and above a range, at the ends of the value
 * axis, outlined so that a black or white bar shows on any background.
 * @param {CanvasRenderingContext2D} ctx @param {{x: number, y: number, w: number, h: number}} box the axes' box
 * @param {number[]} counts [below, above] @param {(count: number) => number} y
 * @param {{under: number[], over: number[]}} colours @param {ReturnType<typeof themeOf>} theme @param {number[]} range [lo, hi]
 */
function drawEndBars(ctx, box, counts, y, colours, theme, range) {
  const base = box.y + box.h;
  const places = [
    { x: box.x + 2, count: counts[0], rgb: colours.under, text: `below ${fmt(range[0])}` },
    { x: box.x + box.w - END_BAR.width, count: counts[1], rgb: colours.over, text: `above ${fmt(range[1])}` },
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

/**
 * One labelled bar per non-finite kind (and fill) right of the value axis,
 * on the same count scale as the histogram; a bar taller than the axis is
 * cut at its top, with a break across it.
 * @param {CanvasRenderingContext2D} ctx @param {{x: number, y: number, w: number, h: number}} box
 * @param {any[]} kinds @param {(count: number) => number} y @param {ReturnType<typeof themeOf>} theme
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

/**
 * The hover read-out of the histogram: a bin's range and count, a bar right
 * of the axis, or a bar of the values beyond the range.
 * @param {HistLayout | null} layout @param {number} px @param {number} py
 */
function histReadOut(layout, px, py) {
  if (!layout) return null;
  const { box, lo, hi, bars, ends, counts } = layout;
  const bins = counts.length;
  const bar = bars.find((b) => px >= b.x - 2 && px <= b.x + b.w + 2);
  if (bar && bar.kind.fill) return `${fillText(bar.kind.fill)}\n(left out of the range)`;
  if (bar) return `${bar.kind.label}\n${countText(bar.kind.count)} values (outside the value axis)`;
  const end = ends.find((e) => e.count && px >= e.x - 1 && px <= e.x + e.w + 1);
  if (end) return `${end.text}\n${countText(end.count)} values`;
  if (px < box.x || px > box.x + box.w || py > box.y + box.h + 4) return null;
  const k = Math.min(bins - 1, Math.floor(((px - box.x) / box.w) * bins));
  const width = (hi - lo) / bins;
  const close = k === bins - 1 ? "]" : ")";
  return `[${fmt(lo + k * width)}, ${fmt(lo + (k + 1) * width)}${close}\n${countText(counts[k])} values`;
}

/**
 * Two slanted strokes in the page's colour across a bar: the bar is cut there.
 * @param {CanvasRenderingContext2D} ctx @param {number} x @param {number} y @param {number} w @param {ReturnType<typeof themeOf>} theme
 */
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

export { drawStatsLine, drawHistogram, histReadOut, markKeyItem };
