// CaptureView's histogram of the selected site: its statistics line, the
// finite values' bins on a linear or log count scale, a bar per NaN/Inf kind
// right of the value axis, and what the pointer reads over them.

// The large histogram: as wide as the details allow, within these bounds.
const HIST = { minWidth: 300, maxWidth: 560, height: 210 };
// Room right of the finite bins for one non-finite bar and its gap.
const NONFINITE_BAR = { width: 26, gap: 12, lead: 22 };

/** @typedef {{box: {x: number, y: number, w: number, h: number}, lo: number, hi: number, bars: {x: number, w: number, kind: any}[]}} HistLayout */

/** The statistics the table shows of site i, saying when they leave values out. @param {HTMLElement} statsLine @param {CaptureData} data @param {number} i */
function drawStatsLine(statsLine, data, i) {
  statsLine.replaceChildren();
  delete statsLine.dataset.finiteOnly;
  if (!data.sites[i].has_stats || data.stat(i, "count") === 0) return; // the histogram's place says why
  const { schema } = data;
  const parts = schema.columns().map((s) => `${s.label} ${schema.text(s.key, data.stat(i, s.key))}`);
  statsLine.append(h("span", "", parts.join(" \u00b7 ")));
  const bad = data.nonfinite(i);
  if (!bad) return;
  statsLine.dataset.finiteOnly = "true";
  const missing = data.nonfiniteKinds(i).map((k) => `${countText(k.count)} ${k.label}`).join(", ");
  statsLine.append(h("span", "jcnb-finite-only", ` \u2014 over the ${countText(data.stat(i, "count"))} finite values of ${countText(data.total(i))} (${missing} left out)`));
}

/** The histogram's width in CSS pixels: what the details area has room for. @param {HTMLElement} detail */
function histWidth(detail) {
  const room = detail.clientWidth - 4;
  return Math.round(Math.min(HIST.maxWidth, Math.max(HIST.minWidth, room || HIST.maxWidth)));
}

/**
 * Draws site i's histogram (i = -1: none), with a bar per non-finite kind at its right.
 * @param {ReturnType<typeof captureLayout>} ui @param {CaptureData} data @param {number} i
 * @returns {HistLayout | null} where the parts went, for the read-out; null when nothing was drawn
 */
function drawHistogram(ui, data, i) {
  const { histCanvas, histKey, histEmpty, logBox } = ui;
  histKey.replaceChildren();
  histEmpty.replaceChildren();
  delete histCanvas.dataset.drawn;
  delete histCanvas.dataset.nonfinite;
  const s = data.sites[i];
  const show = i >= 0 && s.has_stats && data.stat(i, "count") > 0;
  histCanvas.hidden = !show;
  ui.logLabel.hidden = !show;
  if (i >= 0 && s.has_stats && !show) histEmpty.textContent = `No histogram: ${data.noFiniteText(i)}.`;
  if (!show) return null;
  const theme = themeOf(ui.root);
  const kinds = data.nonfiniteKinds(i);
  const extra = kinds.length ? NONFINITE_BAR.lead + kinds.length * (NONFINITE_BAR.width + NONFINITE_BAR.gap) : 0;
  const width = histWidth(ui.detail);
  const ctx = sized(histCanvas, width, HIST.height);
  const box = plotBox(width - extra, HIST.height, { left: 56, right: 10, top: 16, bottom: 34 });
  const counts = data.hist(i);
  const top = Math.max(1, ...counts, ...kinds.map((k) => k.count));
  const y = countScale(top, box.y + box.h, box.y, logBox.checked);
  const lo = data.stat(i, "lo");
  const hi = data.stat(i, "hi");
  const x = linearScale(lo, hi, box.x, box.x + box.w);
  drawBars(ctx, box, counts, y, theme.series);
  drawAxes(ctx, box, { theme, x, xTicks: x.ticks(6), y, yTicks: y.ticks(4), yLabel: logBox.checked ? "count (log)" : "count" });
  ctx.font = `10px ${theme.font}`;
  ctx.fillStyle = theme.fg2;
  ctx.textAlign = "center";
  ctx.textBaseline = "bottom";
  ctx.fillText(`value (${countText(data.stat(i, "count"))} finite)`, box.x + box.w / 2, HIST.height - 1);
  const bars = drawNonfiniteBars(ctx, box, kinds, y, theme);
  histCanvas.dataset.drawn = "true";
  if (kinds.length) {
    histCanvas.dataset.nonfinite = kinds.map((k) => `${k.label}:${k.count}`).join(" ");
    histKey.append(h("span", "", "Outside the value axis:"));
    for (const k of kinds) histKey.append(keyItem(rgbText(k.rgb), `${countText(k.count)} ${k.label}`));
  }
  return { box, lo, hi, bars };
}

/**
 * One labelled bar per non-finite kind right of the value axis, on the
 * same count scale as the histogram.
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

/**
 * The hover read-out of the histogram: a bin's range and count, or a non-finite bar.
 * @param {HistLayout | null} layout @param {CaptureData} data @param {number} i the site drawn @param {number} px @param {number} py
 */
function histReadOut(layout, data, i, px, py) {
  if (!layout || i < 0) return null;
  const { box, lo, hi, bars } = layout;
  const bins = data.bins;
  const bar = bars.find((b) => px >= b.x - 2 && px <= b.x + b.w + 2);
  if (bar) return `${bar.kind.label}\n${countText(bar.kind.count)} values (outside the value axis)`;
  if (px < box.x || px > box.x + box.w || py > box.y + box.h + 4) return null;
  const k = Math.min(bins - 1, Math.floor(((px - box.x) / box.w) * bins));
  const width = (hi - lo) / bins;
  const close = k === bins - 1 ? "]" : ")";
  return `[${fmt(lo + k * width)}, ${fmt(lo + (k + 1) * width)}${close}\n${countText(data.hists[i * bins + k])} values`;
}

export { drawStatsLine, drawHistogram, histReadOut };
