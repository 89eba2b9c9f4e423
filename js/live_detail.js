// LiveView's detail: one step of the selected site, with a slider, a step
// box, its histogram on a value and a count axis, and its statistics: every
// statistic of the schema that the rows hold, so one added in Python shows.

const DETAIL_W = 440;
const DETAIL_H = 170;

/**
 * Row k's histogram, with a value axis and a count axis.
 * @param {HTMLCanvasElement} canvas @param {Series} s @param {number} k @param {StatColumns} stats
 * @param {ReturnType<typeof themeOf>} theme @param {boolean} log counts on a log scale
 * @returns {(x: number, y: number) => string | null} what the pointer reads over the histogram
 */
function drawStepHistogram(canvas, s, k, stats, theme, log) {
  const { col } = stats;
  const ctx = sized(canvas, DETAIL_W, DETAIL_H);
  const box = plotBox(DETAIL_W, DETAIL_H, { left: 50 });
  const hist = s.hists[k];
  const r = s.stats[k];
  const any = hist.some((c) => c > 0) && Number.isFinite(r[col.lo]);
  const x = any ? linearScale(r[col.lo], r[col.hi], box.x, box.x + box.w) : linearScale(0, 1, box.x, box.x + box.w);
  const y = countScale(Math.max(1, ...hist), box.y + box.h, box.y, log);
  const xTicks = any ? x.ticks(6) : [];
  const yTicks = countTicks(y);
  drawAxes(ctx, box, { theme, x, xTicks, y, yTicks, yLabel: log ? "count (log)" : "count" });
  if (any) drawBars(ctx, box, hist, y, theme.series);
  else {
    ctx.fillStyle = theme.bad;
    ctx.font = `12px ${theme.font}`;
    ctx.textAlign = "center";
    const counts = stats.schema.nonfinite.filter((n) => r[col[n.key]] > 0).map((n) => `${stats.schema.text(n.key, r[col[n.key]])} ${n.label}`);
    ctx.fillText(`no finite values at this step${counts.length ? `: ${counts.join(", ")}` : ""}`, box.x + box.w / 2, box.y + box.h / 2);
  }
  canvas.dataset.drawn = String(s.steps[k]);
  canvas.dataset.xTicks = tickList(xTicks);
  canvas.dataset.yTicks = tickList(yTicks);
  return (px, py) => {
    if (!any || px < box.x || px > box.x + box.w || py > box.y + box.h) return null;
    const i = Math.min(hist.length - 1, Math.floor(((px - box.x) / box.w) * hist.length));
    return binText(s, stats, k, i);
  };
}

/**
 * Shows the selected site's shown step, or hides the detail when no site
 * with rows is selected.
 * @param {ReturnType<typeof liveLayout>} ui @param {LiveState} state @param {StatColumns} stats
 * @param {{label: string, kind: string}[]} meta the kernel's `_sites` @param {FirstNonfinite} found
 * @param {Map<HTMLCanvasElement, (x: number, y: number) => string | null>} readOuts set for the histogram
 */
function drawDetail(ui, state, stats, meta, found, readOuts) {
  const { detail, range, stepInput, stepCanvas } = ui;
  const selected = state.selected;
  const s = state.sites[selected];
  if (selected < 0 || !s || !s.steps.length) {
    detail.hidden = true;
    readOuts.delete(stepCanvas);
    return;
  }
  detail.hidden = false;
  const last = s.steps.length - 1;
  const k = shownIndex(state, s);
  const step = s.steps[k];
  const isMarked = found && found.site === selected && found.row === k;
  ui.detailTitle.textContent = `${meta[selected].label} (${meta[selected].kind}) · step ${step}${isMarked ? " · first NaN/Inf" : ""}`;
  range.max = String(last);
  range.value = String(k);
  stepInput.min = String(s.steps[0]);
  stepInput.max = String(s.steps[last]);
  if (document.activeElement !== stepInput) stepInput.value = String(step);
  const lastFinite = found && found.site === selected && found.lastFinite != null ? ` · last finite step ${found.lastFinite}` : "";
  ui.stepNote.textContent = `row ${k + 1} of ${s.steps.length} recorded (steps ${s.steps[0]}–${s.steps[last]})${lastFinite}`;
  detail.dataset.step = String(step);
  detail.dataset.row = String(k);
  if (found && found.site === selected) detail.dataset.markedStep = String(found.step);
  else delete detail.dataset.markedStep;
  readOuts.set(stepCanvas, drawStepHistogram(stepCanvas, s, k, stats, themeOf(ui.root), ui.countLog.checked));
  drawNumbers(ui.numbers, s.stats[k], stats);
}

/**
 * One row's statistics, "mean 0.1 · std 1.2 · …", each in a cell named by
 * its key (`data-key`). A line breaks after a dot, never before one.
 * @param {HTMLElement} numbers @param {Float32Array} r @param {StatColumns} stats
 */
function drawNumbers(numbers, r, stats) {
  const cells = stats.held.map((st) => {
    const cell = h("span", "jcnb-live-number", `${st.label} ${stats.schema.text(st.key, r[stats.col[st.key]])}`);
    cell.dataset.key = st.key;
    return cell;
  });
  numbers.replaceChildren(...cells.flatMap((cell, i) => (i ? ["\u00a0· ", cell] : [cell])));
}

export { drawDetail };
