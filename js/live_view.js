// LiveView front end: per site, the histograms over steps with percentile
// bands and small traces of mean, std, % zeros and NaN count; a step slider
// for one step's histogram; scalar charts; progress. Plain ES module, no
// build step. Strings from user code are set with textContent only.

const CARD_W = 300;
const CARD_H = 110;
const TRACE_H = 26;
const DETAIL_W = 420;
const DETAIL_H = 140;

/** The rows a site holds in the browser. */
class Series {
  constructor() {
    /** @type {number[]} */ this.steps = [];
    /** @type {Float32Array[]} */ this.stats = [];
    /** @type {Int32Array[]} */ this.hists = [];
  }

  /** Forgets the last `n` rows, which the kernel has rewritten. @param {number} n */
  drop(n) {
    if (!n) return;
    this.steps.length -= n;
    this.stats.length -= n;
    this.hists.length = Math.max(0, this.hists.length - n);
  }
}

function render({ model, el }) {
  const root = h("div", "jcnb-live");
  const head = h("div", "jcnb-live-head");
  const progress = h("span", "jcnb-live-progress");
  const flag = h("button", "jcnb-live-flag");
  flag.hidden = true;
  const filter = /** @type {HTMLInputElement} */ (h("input", "jcnb-live-filter"));
  filter.placeholder = "filter sites (regex)";
  head.append(progress, flag, filter);
  const scalarsBox = h("div", "jcnb-live-scalars");
  const grid = h("div", "jcnb-live-grid");
  const detail = h("div", "jcnb-live-detail");
  detail.hidden = true;
  root.append(head, scalarsBox, grid, detail);
  el.append(root);

  /** @type {Series[]} */ let sites = [];
  /** @type {Series[]} */ let scalars = [];
  let lastSeq = -1;
  let stale = false;
  let selected = -1;
  let slider = -1; // row index in the selected site, -1 = latest
  let frame = 0;

  const col = (/** @type {string} */ name) => model.get("_stat_columns").indexOf(name);

  function apply() {
    const update = model.get("_update");
    const seq = update.seq;
    if (seq === lastSeq) return;
    const base = update.base;
    if (!base && seq !== lastSeq + 1) stale = true; // a missed update: wait for the next base one
    lastSeq = seq;
    if (base) {
      sites = [];
      scalars = [];
      stale = false;
    }
    if (stale) return;
    const bins = model.get("_bins");
    const width = model.get("_stat_columns").length;
    const steps = new Float64Array(bytesOf(update.steps));
    const stats = new Float32Array(bytesOf(update.stats));
    const hists = new Int32Array(bytesOf(update.hists));
    const index = new Int32Array(bytesOf(update.index));
    let row = 0;
    for (let k = 0; k < index.length; k += 3) {
      const site = index[k];
      const n = index[k + 2];
      while (sites.length <= site) sites.push(new Series());
      const s = sites[site];
      s.drop(index[k + 1]);
      for (let r = row; r < row + n; r++) {
        s.steps.push(steps[r]);
        s.stats.push(stats.subarray(r * width, (r + 1) * width));
        s.hists.push(hists.subarray(r * bins, (r + 1) * bins));
      }
      row += n;
    }
    const pairs = new Float64Array(bytesOf(update.scalar_rows));
    const sindex = new Int32Array(bytesOf(update.scalar_index));
    row = 0;
    for (let k = 0; k < sindex.length; k += 3) {
      while (scalars.length <= sindex[k]) scalars.push(new Series());
      const s = scalars[sindex[k]];
      s.drop(sindex[k + 1]);
      for (let r = row; r < row + sindex[k + 2]; r++) {
        s.steps.push(pairs[2 * r]);
        s.stats.push(new Float32Array([pairs[2 * r + 1]]));
      }
      row += sindex[k + 2];
    }
  }

  function drawProgress() {
    const p = model.get("_progress") || {};
    const parts = [`step ${p.seen ?? 0}${p.total ? ` / ${p.total}` : ""}`, `${p.rate ?? 0} steps/s`];
    if (p.eta != null && !p.done) parts.push(`ETA ${p.eta < 90 ? `${Math.round(p.eta)} s` : `${Math.round(p.eta / 60)} min`}`);
    parts.push(`${p.recorded ?? 0} recorded`);
    if (p.done) parts.push("done");
    progress.textContent = parts.join(" · ");
    if (p.nonfinite) {
      flag.hidden = false;
      flag.textContent = `first NaN/Inf: ${p.nonfinite.site} at step ${p.nonfinite.step}`;
    }
    root.dataset.steps = String(p.recorded ?? 0);
    root.dataset.seen = String(p.seen ?? 0);
    root.dataset.done = p.done ? "true" : "false";
  }

  /** Histograms over steps, with percentile bands and the median. */
  function drawOverSteps(/** @type {CanvasRenderingContext2D} */ ctx, /** @type {Series} */ s, w, hgt) {
    ctx.clearRect(0, 0, w, hgt);
    const n = s.steps.length;
    if (!n) return;
    const lo = Math.min(...s.stats.map((r) => r[col("lo")]));
    const hi = Math.max(...s.stats.map((r) => r[col("hi")]));
    const span = hi > lo ? hi - lo : 1;
    const y = (/** @type {number} */ v) => hgt - ((v - lo) / span) * hgt;
    const colW = w / n;
    for (let k = 0; k < n; k++) {
      const hist = s.hists[k];
      const top = Math.max(1, ...hist);
      const a = s.stats[k][col("lo")];
      const b = s.stats[k][col("hi")];
      const binH = (b - a) / hist.length;
      for (let i = 0; i < hist.length; i++) {
        if (!hist[i]) continue;
        const y0 = y(a + (i + 1) * binH);
        // Square root: a spike (ReLU's zeros) does not wash out the rest.
        ctx.fillStyle = `rgba(31, 119, 180, ${0.08 + 0.92 * Math.sqrt(hist[i] / top)})`;
        ctx.fillRect(k * colW, y0, Math.max(colW, 1), Math.max(y(a + i * binH) - y0, 1));
      }
    }
    const p0 = col("p0");
    const band = (/** @type {number} */ low, /** @type {number} */ high, /** @type {string} */ colour) => {
      ctx.beginPath();
      for (let k = 0; k < n; k++) ctx.lineTo((k + 0.5) * colW, y(s.stats[k][p0 + high]));
      for (let k = n - 1; k >= 0; k--) ctx.lineTo((k + 0.5) * colW, y(s.stats[k][p0 + low]));
      ctx.closePath();
      ctx.fillStyle = colour;
      ctx.fill();
    };
    band(1, 7, "rgba(245, 133, 24, 0.15)");
    band(2, 6, "rgba(245, 133, 24, 0.22)");
    band(3, 5, "rgba(245, 133, 24, 0.3)");
    ctx.strokeStyle = "#d62728";
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (let k = 0; k < n; k++) ctx.lineTo((k + 0.5) * colW, y(s.stats[k][p0 + 4]));
    ctx.stroke();
    ctx.canvas.dataset.drawn = String(n);
  }

  /** A small line of one statistic over steps. */
  function drawTrace(/** @type {CanvasRenderingContext2D} */ ctx, values, x0, w, hgt, label, colour) {
    const finite = values.filter(Number.isFinite);
    const lo = finite.length ? Math.min(...finite) : 0;
    const hi = finite.length ? Math.max(...finite) : 1;
    const span = hi > lo ? hi - lo : 1;
    ctx.strokeStyle = colour;
    ctx.beginPath();
    values.forEach((v, k) => {
      if (!Number.isFinite(v)) return;
      ctx.lineTo(x0 + (values.length > 1 ? (k / (values.length - 1)) * w : w / 2), hgt - 3 - ((v - lo) / span) * (hgt - 12));
    });
    ctx.stroke();
    ctx.fillStyle = "#555";
    ctx.font = "9px sans-serif";
    ctx.fillText(`${label} ${fmt(values[values.length - 1])}`, x0, 8);
  }

  function drawTraces(/** @type {CanvasRenderingContext2D} */ ctx, /** @type {Series} */ s, w) {
    ctx.clearRect(0, 0, w, TRACE_H);
    const quarter = w / 4;
    const names = [["mean", "#1f77b4"], ["std", "#2ca02c"], ["zero_pct", "#9467bd"], ["nan", "#d62728"]];
    names.forEach(([name, colour], i) => {
      drawTrace(ctx, s.stats.map((r) => r[col(name)]), i * quarter + 2, quarter - 8, TRACE_H, name === "zero_pct" ? "%0" : name, colour);
    });
  }

  function drawScalars() {
    const names = model.get("_scalar_names");
    while (scalarsBox.children.length < names.length) {
      const card = h("div", "jcnb-live-scalar");
      card.append(h("div", "jcnb-live-title"), h("canvas"));
      scalarsBox.append(card);
    }
    names.forEach((name, i) => {
      const card = /** @type {HTMLElement} */ (scalarsBox.children[i]);
      const s = scalars[i] || new Series();
      card.children[0].textContent = `${name} ${s.stats.length ? fmt(s.stats[s.stats.length - 1][0]) : ""}`;
      const ctx = sized(/** @type {HTMLCanvasElement} */ (card.children[1]), 220, 60);
      ctx.clearRect(0, 0, 220, 60);
      drawTrace(ctx, s.stats.map((r) => r[0]), 2, 214, 60, "", "#4c78a8");
      /** @type {HTMLElement} */ (card.children[1]).dataset.drawn = String(s.stats.length);
    });
  }

  function drawGrid() {
    const meta = model.get("_sites");
    while (grid.children.length < meta.length) {
      const i = grid.children.length;
      const card = h("div", "jcnb-live-card");
      card.dataset.site = String(i);
      const title = h("div", "jcnb-live-title");
      const kind = h("span", "jcnb-live-kind");
      card.append(title, kind, h("canvas", "jcnb-live-over"), h("canvas", "jcnb-live-traces"));
      grid.append(card);
    }
    const matches = siteMatcher(filter);
    meta.forEach((site, i) => {
      const card = /** @type {HTMLElement} */ (grid.children[i]);
      card.hidden = !matches(site.label);
      card.classList.toggle("jcnb-selected", i === selected);
      card.children[0].textContent = site.label;
      card.children[1].textContent = site.kind;
      if (card.hidden) return;
      const s = sites[i] || new Series();
      drawOverSteps(sized(/** @type {HTMLCanvasElement} */ (card.children[2]), CARD_W, CARD_H), s, CARD_W, CARD_H);
      drawTraces(sized(/** @type {HTMLCanvasElement} */ (card.children[3]), CARD_W, TRACE_H), s, CARD_W);
    });
  }

  function drawDetail() {
    const meta = model.get("_sites");
    const s = sites[selected];
    if (selected < 0 || !s || !s.steps.length) {
      detail.hidden = true;
      return;
    }
    detail.hidden = false;
    if (!detail.children.length) {
      const range = /** @type {HTMLInputElement} */ (h("input", "jcnb-live-slider"));
      range.type = "range";
      range.min = "0";
      range.addEventListener("input", () => {
        slider = Number(range.value) === Number(range.max) ? -1 : Number(range.value);
        drawDetail();
      });
      detail.append(h("div", "jcnb-live-title"), range, h("canvas", "jcnb-live-step"), h("div", "jcnb-live-numbers"));
    }
    const range = /** @type {HTMLInputElement} */ (detail.children[1]);
    const last = s.steps.length - 1;
    const k = slider < 0 || slider > last ? last : slider;
    range.max = String(last);
    range.value = String(k);
    detail.children[0].textContent = `${meta[selected].label} · step ${s.steps[k]}`;
    const ctx = sized(/** @type {HTMLCanvasElement} */ (detail.children[2]), DETAIL_W, DETAIL_H);
    ctx.clearRect(0, 0, DETAIL_W, DETAIL_H);
    const hist = s.hists[k];
    const top = Math.max(1, ...hist);
    const w = DETAIL_W / hist.length;
    ctx.fillStyle = "#4c78a8";
    hist.forEach((c, i) => {
      const bar = ((DETAIL_H - 14) * c) / top;
      ctx.fillRect(i * w, DETAIL_H - 12 - bar, Math.max(w - 1, 1), bar);
    });
    ctx.fillStyle = "#555";
    ctx.font = "10px sans-serif";
    ctx.fillText(fmt(s.stats[k][col("lo")]), 0, DETAIL_H - 1);
    const hiText = fmt(s.stats[k][col("hi")]);
    ctx.fillText(hiText, DETAIL_W - ctx.measureText(hiText).width, DETAIL_H - 1);
    /** @type {HTMLElement} */ (detail.children[2]).dataset.drawn = String(s.steps[k]);
    const r = s.stats[k];
    detail.children[3].textContent = ["mean", "std", "min", "max", "zero_pct", "nan"]
      .map((name) => `${name === "zero_pct" ? "% zeros" : name} ${fmt(r[col(name)])}`)
      .join("   ");
  }

  function draw() {
    frame = 0;
    drawProgress();
    drawScalars();
    drawGrid();
    drawDetail();
    root.dataset.ready = "true";
    el.classList.add("jcnb-ready");
  }

  const schedule = () => {
    if (!frame) frame = requestAnimationFrame(draw);
  };
  grid.addEventListener("click", (event) => {
    const card = /** @type {HTMLElement | null} */ (/** @type {HTMLElement} */ (event.target).closest(".jcnb-live-card"));
    if (!card) return;
    selected = Number(card.dataset.site) === selected ? -1 : Number(card.dataset.site);
    slider = -1;
    draw();
  });
  flag.addEventListener("click", () => {
    const p = model.get("_progress") || {};
    const i = model
      .get("_sites")
      .findIndex(
        (/** @type {{label: string, kind: string}} */ s) =>
          p.nonfinite && (s.label === p.nonfinite.site || `${s.label} (${s.kind})` === p.nonfinite.site),
      );
    if (i >= 0) {
      selected = i;
      draw();
    }
  });
  filter.addEventListener("input", draw);
  // Every update is applied as it arrives (one missed delta would make the
  // view wait for a base update); drawing waits for the next frame.
  const receive = () => {
    apply();
    schedule();
  };
  model.on("change:_update", receive);
  model.on("change:_progress", schedule);
  apply();
  draw();
  return () => {
    model.off("change:_update", receive);
    model.off("change:_progress", schedule);
    if (frame) cancelAnimationFrame(frame);
  };
}

export default { render };
