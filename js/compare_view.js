// CompareView front end: sites sorted by shift between modes, per-mode
// statistics side by side, overlaid histograms, and a detail panel.
// Plain ES module, no build step. Strings from user code go in as textContent.

/** @typedef {{site: string, type: string, shapes: (number[] | null)[]}} Site */

const SMALL = { width: 120, height: 28 };
const LARGE = { width: 640, height: 220, pad: 28 };

/** @param {DataView | ArrayBuffer | null} data */
function bytesOf(data) {
  if (!data) return new ArrayBuffer(0);
  if (data instanceof ArrayBuffer) return data;
  // Copy: typed arrays need an offset aligned to their element size.
  return data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength);
}

/** @param {number} x */
function fmt(x) {
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  if (x === 0) return "0";
  const a = Math.abs(x);
  if (a >= 1e-3 && a < 1e5) return Number(x.toPrecision(4)).toString();
  return x.toExponential(3);
}

/**
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

/** @param {string} hex @param {number} alpha */
function rgba(hex, alpha) {
  const n = parseInt(hex.slice(1), 16);
  return `rgba(${(n >> 16) & 255}, ${(n >> 8) & 255}, ${n & 255}, ${alpha})`;
}

/**
 * Each mode's histogram as its share of the mode's values, outlined (and
 * lightly filled) on one shared scale.
 * @param {CanvasRenderingContext2D} ctx
 * @param {Int32Array[]} hists
 * @param {string[]} colours
 * @param {{x: number, y: number, w: number, h: number}} box
 * @param {number} fill
 */
function drawOverlay(ctx, hists, colours, box, fill) {
  const shares = hists.map((hist) => {
    const total = hist.reduce((a, b) => a + b, 0);
    return Array.from(hist, (c) => (total > 0 ? c / total : 0));
  });
  const top = Math.max(1e-12, ...shares.flat());
  const bins = hists[0]?.length ?? 0;
  const step = box.w / Math.max(bins, 1);
  shares.forEach((share, m) => {
    ctx.beginPath();
    ctx.moveTo(box.x, box.y + box.h);
    share.forEach((v, i) => {
      const y = box.y + box.h - (box.h - 1) * (v / top);
      ctx.lineTo(box.x + i * step, y);
      ctx.lineTo(box.x + (i + 1) * step, y);
    });
    ctx.lineTo(box.x + box.w, box.y + box.h);
    if (fill > 0) {
      ctx.fillStyle = rgba(colours[m % colours.length], fill);
      ctx.fill();
    }
    ctx.strokeStyle = colours[m % colours.length];
    ctx.lineWidth = 1.2;
    ctx.stroke();
  });
}

/** @param {{model: any, el: HTMLElement}} ctx */
function render({ model, el }) {
  const root = h("div", "jcnb-compare");
  el.appendChild(root);
  let selected = -1;

  function data() {
    /** @type {string[]} */
    const modes = model.get("_modes");
    /** @type {string[]} */
    const colours = model.get("_colours");
    /** @type {Site[]} */
    const sites = model.get("_sites");
    /** @type {string[]} */
    const columns = model.get("_stat_columns");
    const bins = model.get("_bins");
    const stats = new Float64Array(bytesOf(model.get("_stats")));
    const hists = new Int32Array(bytesOf(model.get("_hists")));
    const ranges = new Float64Array(bytesOf(model.get("_ranges")));
    const shifts = new Float64Array(bytesOf(model.get("_shifts")));
    const m = modes.length;
    const k = columns.length;
    return {
      modes, colours, sites, columns, bins,
      /** @param {number} i @param {number} mode @param {string} column */
      stat: (i, mode, column) => stats[(i * m + mode) * k + columns.indexOf(column)],
      /** @param {number} i */
      hists: (i) => Array.from({ length: m }, (_, mode) => hists.subarray((i * m + mode) * bins, (i * m + mode + 1) * bins)),
      /** @param {number} i */
      range: (i) => [ranges[2 * i], ranges[2 * i + 1]],
      /** @param {number} i */
      shift: (i) => {
        let best = NaN;
        for (let mode = 1; mode < m; mode++) {
          const s = shifts[i * m + mode];
          if (!Number.isNaN(s) && !(best >= s)) best = s;
        }
        return best;
      },
    };
  }

  function draw() {
    const d = data();
    root.replaceChildren();
    root.dataset.sites = String(d.sites.length);
    const header = h("div", "jcnb-cmp-header");
    header.appendChild(h("span", "jcnb-cmp-title", `${d.sites.length} sites, largest shift first`));
    const legend = h("span", "jcnb-cmp-legend");
    d.modes.forEach((label, mode) => {
      const item = h("span", "jcnb-cmp-mode", label);
      item.style.setProperty("--jcnb-mode", d.colours[mode % d.colours.length]);
      if (mode === 0) item.title = "reference: shifts are measured against this mode";
      legend.appendChild(item);
    });
    header.appendChild(legend);
    const filter = /** @type {HTMLInputElement} */ (h("input", "jcnb-cmp-filter"));
    filter.placeholder = "filter sites (regex)";
    header.appendChild(filter);
    root.appendChild(header);
    root.appendChild(
      h("div", "jcnb-cmp-note",
        "shift: earth mover's distance between a site's histogram in a mode and in the first mode, in pooled standard deviations"),
    );

    const table = h("div", "jcnb-cmp-table");
    const perMode = ["mean", "std", "zeros %"];
    table.style.setProperty("--jcnb-modes", String(d.modes.length));
    const head = h("div", "jcnb-cmp-row jcnb-cmp-head");
    head.appendChild(h("span", "jcnb-cmp-cell", "site"));
    head.appendChild(h("span", "jcnb-cmp-cell", "shift"));
    d.modes.forEach((label, mode) => {
      for (const name of perMode) {
        const cell = h("span", "jcnb-cmp-cell jcnb-cmp-num", name);
        cell.style.color = d.colours[mode % d.colours.length];
        cell.title = label;
        head.appendChild(cell);
      }
    });
    head.appendChild(h("span", "jcnb-cmp-cell", "histograms"));
    table.appendChild(head);

    const maxShift = Math.max(1e-12, ...d.sites.map((_, i) => d.shift(i)).filter((s) => Number.isFinite(s)));
    /** @type {HTMLElement[]} */
    const rows = [];
    d.sites.forEach((site, i) => {
      const row = h("div", "jcnb-cmp-row jcnb-cmp-body");
      const shift = d.shift(i);
      row.dataset.site = site.site;
      row.dataset.shift = String(shift);
      row.appendChild(h("span", "jcnb-cmp-cell jcnb-cmp-site", site.site)).title = `${site.site} (${site.type})`;
      const shiftCell = h("span", "jcnb-cmp-cell jcnb-cmp-shift");
      if (Number.isNaN(shift)) {
        shiftCell.textContent = "–";
        shiftCell.title = "not scored: the site is missing (or has no statistics) in a mode";
      } else {
        const bar = h("span", "jcnb-cmp-bar");
        bar.style.width = `${Math.min(1, Number.isFinite(shift) ? shift / maxShift : 1) * 48}px`;
        shiftCell.appendChild(bar);
        shiftCell.appendChild(h("span", "", fmt(shift)));
      }
      row.appendChild(shiftCell);
      d.modes.forEach((_, mode) => {
        for (const column of ["mean", "std", "zero_pct"]) {
          row.appendChild(h("span", "jcnb-cmp-cell jcnb-cmp-num", fmt(d.stat(i, mode, column))));
        }
      });
      const canvas = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-cmp-spark"));
      canvas.width = SMALL.width;
      canvas.height = SMALL.height;
      const ctx = canvas.getContext("2d");
      if (ctx) drawOverlay(ctx, d.hists(i), d.colours, { x: 0, y: 0, w: SMALL.width, h: SMALL.height }, 0);
      row.appendChild(canvas);
      if (d.modes.some((_, mode) => d.stat(i, mode, "nan") > 0)) row.classList.add("jcnb-cmp-nonfinite");
      row.addEventListener("click", () => select(i));
      rows.push(row);
      table.appendChild(row);
    });
    root.appendChild(table);
    const detail = h("div", "jcnb-cmp-detail");
    root.appendChild(detail);

    filter.addEventListener("input", () => {
      let test = (/** @type {string} */ s) => s.includes(filter.value);
      try {
        const re = new RegExp(filter.value);
        test = (s) => re.test(s);
        filter.classList.remove("jcnb-bad");
      } catch {
        filter.classList.add("jcnb-bad");
      }
      let shown = 0;
      rows.forEach((row) => {
        const keep = test(row.dataset.site ?? "");
        row.hidden = !keep;
        shown += keep ? 1 : 0;
      });
      root.dataset.visibleRows = String(shown);
    });

    /** @param {number} i */
    function select(i) {
      selected = i;
      rows.forEach((row, j) => row.classList.toggle("jcnb-cmp-selected", j === i));
      drawDetail(d, i, detail);
    }
    if (selected >= 0 && selected < d.sites.length) select(selected);
  }

  /**
   * @param {ReturnType<typeof data>} d
   * @param {number} i
   * @param {HTMLElement} detail
   */
  function drawDetail(d, i, detail) {
    detail.replaceChildren();
    const site = d.sites[i];
    detail.appendChild(h("div", "jcnb-cmp-detail-title", site.site));
    const body = h("div", "jcnb-cmp-detail-body");
    const figure = h("div", "jcnb-cmp-figure");
    const canvas = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-cmp-large"));
    canvas.width = LARGE.width;
    canvas.height = LARGE.height;
    const ctx = canvas.getContext("2d");
    const hists = d.hists(i);
    const [lo, hi] = d.range(i);
    const box = { x: LARGE.pad, y: 8, w: LARGE.width - 2 * LARGE.pad, h: LARGE.height - 8 - LARGE.pad };
    if (ctx) {
      ctx.strokeStyle = "#999";
      ctx.beginPath();
      ctx.moveTo(box.x, box.y + box.h + 0.5);
      ctx.lineTo(box.x + box.w, box.y + box.h + 0.5);
      ctx.stroke();
      drawOverlay(ctx, hists, d.colours, box, 0.15);
      ctx.fillStyle = "#444";
      ctx.font = "11px monospace";
      ctx.textAlign = "left";
      ctx.fillText(fmt(lo), box.x, box.y + box.h + 16);
      ctx.textAlign = "right";
      ctx.fillText(fmt(hi), box.x + box.w, box.y + box.h + 16);
      ctx.textAlign = "center";
      ctx.fillText("share of each mode's values per bin", box.x + box.w / 2, box.y + box.h + 16);
    }
    const tip = h("div", "jcnb-cmp-tip");
    canvas.addEventListener("mousemove", (event) => {
      const rect = canvas.getBoundingClientRect();
      const x = ((event.clientX - rect.left) * canvas.width) / rect.width - box.x;
      const bin = Math.floor((x / box.w) * d.bins);
      if (bin < 0 || bin >= d.bins) {
        tip.textContent = "";
        return;
      }
      const width = (hi - lo) / d.bins;
      const counts = d.modes.map((label, mode) => `${label}: ${hists[mode][bin]}`).join("  ");
      tip.textContent = `[${fmt(lo + bin * width)}, ${fmt(lo + (bin + 1) * width)})  ${counts}`;
    });
    canvas.addEventListener("mouseleave", () => (tip.textContent = ""));
    figure.appendChild(canvas);
    figure.appendChild(tip);
    body.appendChild(figure);

    const stats = h("table", "jcnb-cmp-stats");
    const headRow = h("tr");
    headRow.appendChild(h("th", "", ""));
    d.modes.forEach((label, mode) => {
      const th = h("th", "", label);
      th.style.color = d.colours[mode % d.colours.length];
      headRow.appendChild(th);
    });
    stats.appendChild(headRow);
    const shapeRow = h("tr");
    shapeRow.appendChild(h("td", "", "shape"));
    site.shapes.forEach((shape) => shapeRow.appendChild(h("td", "", shape ? `(${shape.join(",")})` : "–")));
    stats.appendChild(shapeRow);
    for (const column of [...d.columns, "shift"]) {
      const tr = h("tr");
      tr.appendChild(h("td", "", column === "zero_pct" ? "zeros %" : column));
      d.modes.forEach((_, mode) => {
        const value = column === "shift"
          ? new Float64Array(bytesOf(model.get("_shifts")))[i * d.modes.length + mode]
          : d.stat(i, mode, column);
        const td = h("td", "jcnb-cmp-num", fmt(value));
        if (column === "nan" && value > 0) td.classList.add("jcnb-cmp-bad");
        tr.appendChild(td);
      });
      stats.appendChild(tr);
    }
    body.appendChild(stats);
    detail.appendChild(body);
    canvas.dataset.drawn = "1";
  }

  draw();
  const redraw = () => draw();
  for (const name of ["_sites", "_stats", "_hists", "_shifts"]) model.on(`change:${name}`, redraw);
  el.classList.add("jcnb-ready");
  root.classList.add("jcnb-ready");
  return () => {
    for (const name of ["_sites", "_stats", "_hists", "_shifts"]) model.off(`change:${name}`, redraw);
  };
}

export default { render };
