// LiveView's scalar charts: one card per logged scalar, the raw values faint
// and TensorBoard's smoothing solid, on a linear or log value axis.

const SCALAR_W = 320;
const SCALAR_H = 150;
// TensorBoard's default scalar smoothing.
const DEFAULT_SMOOTHING = 0.6;

/**
 * TensorBoard's scalar smoothing: an exponential moving average, debiased
 * so the first points are not pulled toward zero. Non-finite values pass
 * through unsmoothed.
 * @param {number[]} values @param {number} weight in [0, 1)
 */
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

/**
 * One scalar's chart: the raw values faint, the smoothed ones solid, on a
 * linear or log value axis.
 * @param {HTMLCanvasElement} canvas @param {Series} s @param {ReturnType<typeof themeOf>} theme
 * @param {number} weight the smoothing @param {boolean} log a log value axis
 * @returns {{raw: number[], smooth: number[], readOut: (x: number, y: number) => string | null}}
 */
function drawScalar(canvas, s, theme, weight, log) {
  const ctx = sized(canvas, SCALAR_W, SCALAR_H);
  const box = plotBox(SCALAR_W, SCALAR_H, { left: 48 });
  const raw = s.stats.map((r) => r[0]);
  const smooth = smoothedValues(raw, weight);
  const shown = (/** @type {number} */ v) => Number.isFinite(v) && (!log || v > 0);
  const finite = [...raw, ...smooth].filter(shown);
  const x = lineStepScale(s.steps, box.x, box.x + box.w);
  let lo = finite.length ? Math.min(...finite) : log ? 1 : 0;
  let hi = finite.length ? Math.max(...finite) : log ? 10 : 1;
  if (hi === lo) [lo, hi] = log ? [lo / 2, hi * 2] : [lo - 0.5, hi + 0.5];
  const y = log ? logScale(lo, hi, box.y + box.h, box.y) : linearScale(lo, hi, box.y + box.h, box.y);
  const xTicks = stepTicks(...x.domain, 5);
  const yTicks = y.ticks(4);
  drawAxes(ctx, box, { theme, x, xTicks, y, yTicks });
  /** @param {number[]} values @param {number} alpha @param {number} width */
  const line = (values, alpha, width) => {
    ctx.save();
    ctx.beginPath();
    ctx.rect(box.x, box.y - 1, box.w + 1, box.h + 2);
    ctx.clip();
    ctx.strokeStyle = theme.series;
    ctx.globalAlpha = alpha;
    ctx.lineWidth = width;
    ctx.beginPath();
    let pen = false;
    values.forEach((v, k) => {
      if (!shown(v)) return void (pen = false);
      if (pen) ctx.lineTo(x(s.steps[k]), y(v));
      else ctx.moveTo(x(s.steps[k]), y(v)), ctx.lineTo(x(s.steps[k]) + 0.5, y(v));
      pen = true;
    });
    ctx.stroke();
    ctx.restore();
  };
  line(raw, 0.3, 1);
  line(smooth, 1, 1.5);
  canvas.dataset.drawn = String(raw.length);
  canvas.dataset.xTicks = tickList(xTicks);
  canvas.dataset.yTicks = tickList(yTicks);
  canvas.dataset.scale = log ? "log" : "linear";
  canvas.dataset.smoothedLast = raw.length ? String(smooth[smooth.length - 1]) : "";
  /** @param {number} px @param {number} py */
  const readOut = (px, py) => {
    if (!raw.length || px < box.x - 4 || py > box.y + box.h) return null;
    const k = nearestIndex(s.steps, x.invert(px));
    return `step ${s.steps[k]}\nvalue ${fmt(raw[k])}\nsmoothed ${fmt(smooth[k])}`;
  };
  return { raw, smooth, readOut };
}

/**
 * Draws every scalar's card, with the smoothing and scale the tools set.
 * @param {ReturnType<typeof liveLayout>} ui @param {LiveState} state @param {string[]} names the kernel's `_scalar_names`
 * @param {Map<HTMLCanvasElement, (x: number, y: number) => string | null>} readOuts set for each chart drawn
 */
function drawScalars(ui, state, names, readOuts) {
  const { root, smoothing, scalarLog, scalarsBox } = ui;
  ui.scalarSection.hidden = !names.length || !hasRows(state);
  ui.smoothingText.textContent = Number(smoothing.value).toFixed(2);
  root.dataset.smoothing = smoothing.value;
  root.dataset.scalarScale = scalarLog.checked ? "log" : "linear";
  while (scalarsBox.children.length < names.length) {
    const card = h("div", "jcnb-live-scalar");
    const title = h("div", "jcnb-live-scalar-head");
    title.append(h("span", "jcnb-live-title"), h("span", "jcnb-live-latest"));
    card.append(title, ui.hover("jcnb-live-scalar-canvas"));
    scalarsBox.append(card);
  }
  const theme = themeOf(root);
  names.forEach((name, i) => {
    const card = /** @type {HTMLElement} */ (scalarsBox.children[i]);
    const s = state.scalars[i] || new Series();
    const canvas = /** @type {HTMLCanvasElement} */ (card.children[1]);
    const { raw, smooth, readOut } = drawScalar(canvas, s, theme, Number(smoothing.value), scalarLog.checked);
    readOuts.set(canvas, readOut);
    card.querySelector(".jcnb-live-title").textContent = name;
    // The latest value lives in the title, never on the chart, where it
    // would read as the top of the axis.
    const n = raw.length;
    card.querySelector(".jcnb-live-latest").textContent = n ? `step ${s.steps[n - 1]}: ${fmt(raw[n - 1])} (smoothed ${fmt(smooth[n - 1])})` : "no values yet";
  });
}

export { DEFAULT_SMOOTHING, drawScalars };
