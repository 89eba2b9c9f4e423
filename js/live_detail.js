// LiveView's detail: one step of the selected site, with a slider, a step
// box, its histogram on a value and a count axis, and its statistics: every
// statistic of the schema that the rows hold, so one added in Python shows.
// With several runs the slider moves over every run's steps and each run's
// histogram is a line in its colour.

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
 * Each run's histogram at a step as a line, on one value axis and one
 * count axis, in the runs' colours.
 * @param {HTMLCanvasElement} canvas @param {{m: Member, k: number}[]} rows each run's row at the step
 * @param {StatColumns} stats @param {ReturnType<typeof themeOf>} theme @param {boolean} log counts on a log scale
 * @returns {(x: number, y: number) => string | null} what the pointer reads over the histograms
 */
function drawStepHistograms(canvas, rows, stats, theme, log) {
  const ctx = sized(canvas, DETAIL_W, DETAIL_H);
  const box = plotBox(DETAIL_W, DETAIL_H, { left: 50 });
  const drawn = rows.filter(({ m, k }) => drawable(m.s, stats, k));
  const { col } = stats;
  const lo = drawn.length ? Math.min(...drawn.map(({ m, k }) => m.s.stats[k][col.lo])) : 0;
  const hi = drawn.length ? Math.max(...drawn.map(({ m, k }) => m.s.stats[k][col.hi])) : 1;
  const x = linearScale(lo, hi > lo ? hi : lo + 1, box.x, box.x + box.w);
  const y = countScale(Math.max(1, ...drawn.flatMap(({ m, k }) => Array.from(m.s.hists[k]))), box.y + box.h, box.y, log);
  const xTicks = drawn.length ? x.ticks(6) : [];
  const yTicks = countTicks(y);
  drawAxes(ctx, box, { theme, x, xTicks, y, yTicks, yLabel: log ? "count (log)" : "count" });
  ctx.lineWidth = 1.5;
  for (const { m, k } of drawn) {
    ctx.strokeStyle = m.colour;
    ctx.stroke(histogramPath(m.s, stats, k, x, y, y(0)));
  }
  canvas.dataset.drawn = rows.map(({ m, k }) => m.s.steps[k]).join(" ");
  canvas.dataset.lines = String(drawn.length);
  canvas.dataset.xTicks = tickList(xTicks);
  canvas.dataset.yTicks = tickList(yTicks);
  return (px, py) => {
    if (!drawn.length || px < box.x || px > box.x + box.w || py > box.y + box.h) return null;
    const v = x.invert(px);
    const text = drawn.map(({ m, k }) => {
      const i = binAt(m.s, stats, k, v);
      return `${m.name} (step ${m.s.steps[k]}): ${i >= 0 ? `count ${m.s.hists[k][i]}` : "no values here"}`;
    });
    return `value ${fmt(v)}\n${text.join("\n")}`;
  };
}

/**
 * Shows the selected card's shown step: the site's histogram and
 * statistics, or with several runs each run's at its nearest recorded
 * step; hides the detail when no card with rows is selected.
 * @param {ReturnType<typeof liveLayout>} ui @param {LiveState} state @param {StatColumns} stats
 * @param {Entry[]} meta the kernel's `_sites` @param {Group[]} groups the cards @param {Runs} runs
 * @param {FirstNonfinite} found
 * @param {Map<HTMLCanvasElement, (x: number, y: number) => string | null>} readOuts set for the histogram
 */
function drawDetail(ui, state, stats, meta, groups, runs, found, readOuts) {
  const { detail, range, stepInput, stepCanvas } = ui;
  const group = groups[state.selected];
  const members = group ? shownMembers(group, meta, state.sites, runs).filter((m) => m.s.steps.length) : [];
  if (!members.length) {
    detail.hidden = true;
    readOuts.delete(stepCanvas);
    return;
  }
  detail.hidden = false;
  const steps = unionSteps(members);
  const last = steps.length - 1;
  const k = nearestIndex(steps, shownStep(state, steps));
  const step = steps[k];
  const flagged = found && members.find((m) => m.index === found.site);
  const rows = members.map((m) => ({ m, k: nearestIndex(m.s.steps, step) }));
  const isMarked = flagged && rows.some(({ m, k: row }) => m === flagged && row === found.row);
  ui.detailTitle.textContent = `${group.label} (${group.kind}) · step ${step}${isMarked ? " · first NaN/Inf" : ""}`;
  ui.detailTitle.dir = "auto";
  range.max = String(last);
  range.value = String(k);
  stepInput.min = String(steps[0]);
  stepInput.max = String(steps[last]);
  if (document.activeElement !== stepInput) stepInput.value = String(step);
  const lastFinite = flagged && found.lastFinite != null ? ` · last finite step ${found.lastFinite}` : "";
  ui.stepNote.textContent = `row ${k + 1} of ${steps.length} recorded (steps ${steps[0]}–${steps[last]})${lastFinite}`;
  detail.dataset.step = String(step);
  detail.dataset.row = String(k);
  if (flagged) detail.dataset.markedStep = String(found.step);
  else delete detail.dataset.markedStep;
  const theme = themeOf(ui.root);
  if (runs.several) {
    readOuts.set(stepCanvas, drawStepHistograms(stepCanvas, rows, stats, theme, ui.countLog.checked));
    drawRunNumbers(ui.numbers, rows, stats);
  } else {
    const { m, k: row } = rows[0];
    readOuts.set(stepCanvas, drawStepHistogram(stepCanvas, m.s, row, stats, theme, ui.countLog.checked));
    drawNumbers(ui.numbers, m.s.stats[row], stats);
  }
}

/**
 * Each run's statistics at the step, a line per run led by its name in
 * its colour.
 * @param {HTMLElement} numbers @param {{m: Member, k: number}[]} rows @param {StatColumns} stats
 */
function drawRunNumbers(numbers, rows, stats) {
  const lines = rows.map(({ m, k }) => {
    const line = h("div", "jcnb-live-run-numbers");
    line.dataset.run = String(m.run);
    const name = setName(h("span", "jcnb-live-run-name"), `${m.name} (step ${m.s.steps[k]}) `);
    name.style.color = m.colour;
    const cells = h("span");
    drawNumbers(cells, m.s.stats[k], stats);
    line.append(name, cells);
    return line;
  });
  numbers.replaceChildren(...lines);
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
