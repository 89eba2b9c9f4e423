// CompareView front end: sites sorted by how far they shift between modes,
// per-mode statistics side by side, overlaid histograms, and a detail panel.
// Plain ES module, no build step. Strings from user code (site names, mode
// labels) are set with textContent only, never parsed as HTML.

/** @typedef {{site: string, type: string, shapes: (number[] | null)[]}} Site */

const SPARK = { width: 120, height: 28 };
const LARGE = { width: 540, height: 230, left: 52, right: 14, top: 12, bottom: 24 };
// Statistics each row shows per mode; the detail panel shows all of _stat_columns.
const ROW_STATS = [
  ["mean", "mean"],
  ["std", "std"],
  ["zero_pct", "zeros %"],
];

/** A share as a percentage, one decimal. @param {number} share */
function percent(share) {
  return `${(100 * share).toFixed(1)}%`;
}

/** @param {string} hex @param {number} alpha */
function rgba(hex, alpha) {
  const n = parseInt(hex.slice(1), 16);
  return `rgba(${(n >> 16) & 255}, ${(n >> 8) & 255}, ${n & 255}, ${alpha})`;
}

/** A histogram as each bin's share of its values; null when the mode has none. @param {Int32Array} hist */
function sharesOf(hist) {
  let total = 0;
  for (const c of hist) total += c;
  return total > 0 ? Array.from(hist, (c) => c / total) : null;
}

/**
 * Each mode's histogram as a step outline with a light fill, all on one
 * scale. A square-root scale keeps a spike (Dropout's zeros) from flattening
 * every other bin. Modes with no values are left out rather than drawn flat.
 * @param {CanvasRenderingContext2D} ctx
 * @param {(number[] | null)[]} shares
 * @param {string[]} colours
 * @param {{x: number, y: number, w: number, h: number}} box
 * @param {{fill: number, sqrt: boolean, width: number}} style
 * @returns {number} the share at the top of the box
 */
function drawOverlay(ctx, shares, colours, box, style) {
  const top = Math.max(1e-12, ...shares.flatMap((s) => s ?? []));
  const scale = (/** @type {number} */ v) => (style.sqrt ? Math.sqrt(v / top) : v / top);
  shares.forEach((share, m) => {
    if (!share) return;
    const step = box.w / share.length;
    ctx.beginPath();
    ctx.moveTo(box.x, box.y + box.h);
    share.forEach((v, i) => {
      const y = box.y + box.h - box.h * scale(v);
      ctx.lineTo(box.x + i * step, y);
      ctx.lineTo(box.x + (i + 1) * step, y);
    });
    ctx.lineTo(box.x + box.w, box.y + box.h);
    const colour = colours[m % colours.length];
    if (style.fill > 0) {
      ctx.fillStyle = rgba(colour, style.fill);
      ctx.fill();
    }
    ctx.strokeStyle = colour;
    ctx.lineWidth = style.width;
    ctx.lineJoin = "miter";
    ctx.stroke();
  });
  return top;
}

/** The model's traits, decoded once per draw. @param {any} model */
function readModel(model) {
  /** @type {string[]} */
  const modes = model.get("_modes") || [];
  /** @type {string[]} */
  const colours = model.get("_colours") || ["#4c78a8"];
  /** @type {Site[]} */
  const sites = model.get("_sites") || [];
  /** @type {string[]} */
  const columns = model.get("_stat_columns") || [];
  const bins = model.get("_bins") || 1;
  const stats = new Float64Array(bytesOf(model.get("_stats")));
  const hists = new Int32Array(bytesOf(model.get("_hists")));
  const ranges = new Float64Array(bytesOf(model.get("_ranges")));
  const shifts = new Float64Array(bytesOf(model.get("_shifts")));
  const m = modes.length;
  const k = columns.length;
  return {
    modes,
    sites,
    columns,
    bins,
    /** @param {number} mode */
    colour: (mode) => colours[mode % colours.length],
    colours: modes.map((_, mode) => colours[mode % colours.length]),
    /** @param {number} i @param {number} mode @param {string} column */
    stat: (i, mode, column) => stats[(i * m + mode) * k + columns.indexOf(column)],
    /** @param {number} i */
    shares: (i) => modes.map((_, mode) => sharesOf(hists.subarray((i * m + mode) * bins, (i * m + mode + 1) * bins))),
    /** @param {number} i @param {number} mode @param {number} bin */
    count: (i, mode, bin) => hists[(i * m + mode) * bins + bin],
    /** @param {number} i @returns {[number, number]} */
    range: (i) => [ranges[2 * i], ranges[2 * i + 1]],
    /** @param {number} i @param {number} mode */
    modeShift: (i, mode) => shifts[i * m + mode],
    /** The largest shift over the modes, as SiteComparison.shift. @param {number} i */
    shift: (i) => {
      let best = NaN;
      for (let mode = 0; mode < m; mode++) {
        const s = shifts[i * m + mode];
        if (!Number.isNaN(s) && !(best >= s)) best = s;
      }
      return best;
    },
    /** Labels of the modes that did not reach the site. @param {number} i */
    missing: (i) => modes.filter((_, mode) => !sites[i].shapes[mode]),
  };
}

/** @param {{model: any, el: HTMLElement}} ctx */
function render({ model, el }) {
  const root = h("div", "jcnb-compare");
  const header = h("div", "jcnb-cmp-header");
  const title = h("span", "jcnb-cmp-title");
  const legend = h("span", "jcnb-cmp-legend");
  const filter = /** @type {HTMLInputElement} */ (h("input", "jcnb-cmp-filter"));
  filter.type = "search";
  filter.placeholder = "filter sites (regex)";
  header.append(title, legend, filter);
  const note = h("div", "jcnb-cmp-note", model.get("_note") || "");
  const table = h("div", "jcnb-cmp-table");
  const detail = h("div", "jcnb-cmp-detail");
  detail.hidden = true;
  root.append(header, note, table, detail);
  el.appendChild(root);

  let selected = -1;
  let sqrtScale = true;
  /** @type {ReturnType<typeof readModel>} */
  let d = readModel(model);
  /** @type {HTMLElement[]} */
  let rows = [];

  function drawLegend() {
    legend.replaceChildren();
    d.modes.forEach((label, mode) => {
      const item = h("span", "jcnb-cmp-mode", label);
      item.style.setProperty("--jcnb-mode", d.colour(mode));
      item.dataset.mode = String(mode);
      item.title = mode === 0 ? `${label}: the reference, shifts are measured against it` : label;
      legend.appendChild(item);
    });
  }

  /** Wide enough for the longest site name, within bounds (longer ones end in an ellipsis). */
  function siteWidth() {
    const ctx = document.createElement("canvas").getContext("2d");
    if (!ctx) return 220;
    ctx.font = getComputedStyle(root).font || "12px monospace";
    const widest = Math.max(0, ...d.sites.map((s) => ctx.measureText(s.site).width));
    return Math.ceil(Math.min(360, Math.max(140, widest + 16)));
  }

  function drawTable() {
    table.replaceChildren();
    const m = d.modes.length;
    // Every row is its own grid, so every column has a fixed width; site,
    // shift and histograms come first and stay in view when many modes make
    // the table scroll sideways.
    root.style.setProperty(
      "--jcnb-cmp-columns",
      `${siteWidth()}px 112px ${SPARK.width + 8}px repeat(${ROW_STATS.length * m}, 76px)`,
    );
    const heads = h("div", "jcnb-cmp-heads");
    const groups = h("div", "jcnb-cmp-row jcnb-cmp-groups");
    groups.append(h("span"), h("span"), h("span"));
    d.modes.forEach((label, mode) => {
      const group = h("span", "jcnb-cmp-cell jcnb-cmp-group", label);
      group.style.setProperty("--jcnb-mode", d.colour(mode));
      group.style.gridColumn = `span ${ROW_STATS.length}`;
      group.title = label;
      groups.appendChild(group);
    });
    const names = h("div", "jcnb-cmp-row jcnb-cmp-head");
    names.append(h("span", "jcnb-cmp-cell", "site"), h("span", "jcnb-cmp-cell", "shift"));
    const histHead = h("span", "jcnb-cmp-cell", "histograms");
    histHead.title = "share of each mode's values per bin, on the site's shared range (square-root scale)";
    names.appendChild(histHead);
    d.modes.forEach((label, mode) => {
      for (const [, name] of ROW_STATS) {
        const cell = h("span", "jcnb-cmp-cell jcnb-cmp-num", name);
        cell.style.color = d.colour(mode);
        cell.title = `${name} in ${label}`;
        names.appendChild(cell);
      }
    });
    heads.append(groups, names);
    table.appendChild(heads);

    const finite = d.sites.map((_, i) => d.shift(i)).filter((s) => Number.isFinite(s));
    const maxShift = Math.max(1e-12, ...finite);
    rows = d.sites.map((site, i) => {
      const row = h("div", "jcnb-cmp-row jcnb-cmp-body");
      const shift = d.shift(i);
      row.dataset.site = site.site;
      row.dataset.shift = String(shift);
      row.dataset.index = String(i);
      row.tabIndex = 0;
      const name = h("span", "jcnb-cmp-cell jcnb-cmp-site", site.site);
      const nans = d.modes
        .map((label, mode) => [label, d.stat(i, mode, "nan")])
        .filter(([, n]) => Number(n) > 0);
      name.title = `${site.site} (${site.type})` + nans.map(([label, n]) => `\n${n} NaN in ${label}`).join("");
      if (nans.length) row.classList.add("jcnb-cmp-nonfinite");
      row.appendChild(name);

      const shiftCell = h("span", "jcnb-cmp-cell jcnb-cmp-shift");
      if (Number.isNaN(shift)) {
        shiftCell.textContent = "–";
        const missing = d.missing(i);
        shiftCell.title = missing.length
          ? `no shift: the site is missing in ${missing.join(", ")}`
          : "no shift: the site has no statistics in a mode";
      } else {
        const track = h("span", "jcnb-cmp-track");
        const bar = h("span", "jcnb-cmp-bar");
        bar.style.width = `${100 * Math.min(1, shift / maxShift)}%`;
        track.appendChild(bar);
        shiftCell.append(track, h("span", "", fmt(shift)));
      }
      row.appendChild(shiftCell);

      const spark = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-cmp-spark"));
      const ctx = sized(spark, SPARK.width, SPARK.height);
      drawOverlay(ctx, d.shares(i), d.colours, { x: 0.5, y: 1, w: SPARK.width - 1, h: SPARK.height - 2 }, {
        fill: 0.12,
        sqrt: true,
        width: 1,
      });
      const sparkCell = h("span", "jcnb-cmp-cell");
      sparkCell.appendChild(spark);
      row.appendChild(sparkCell);

      d.modes.forEach((label, mode) => {
        const reached = Boolean(site.shapes[mode]);
        for (const [column, name] of ROW_STATS) {
          const cell = h("span", "jcnb-cmp-cell jcnb-cmp-num", reached ? fmt(d.stat(i, mode, column)) : "–");
          cell.title = reached ? `${name} in ${label}` : `not reached in ${label}`;
          row.appendChild(cell);
        }
      });
      table.appendChild(row);
      return row;
    });
    if (!d.sites.length) table.appendChild(h("div", "jcnb-cmp-empty", "(no site was recorded; check include=)"));
  }

  function applyFilter() {
    const matches = siteMatcher(filter);
    let shown = 0;
    for (const row of rows) {
      row.hidden = !matches(row.dataset.site ?? "");
      shown += row.hidden ? 0 : 1;
    }
    root.dataset.visibleRows = String(shown);
    const n = d.sites.length;
    title.textContent =
      (shown < n ? `${shown} of ${n} sites` : `${n} site${n === 1 ? "" : "s"}`) + ", largest shift first";
  }

  /** @param {number} i */
  function select(i) {
    selected = i;
    rows.forEach((row, j) => row.classList.toggle("jcnb-cmp-selected", j === i));
    root.dataset.selected = String(i);
    drawDetail(i);
  }

  /** @param {number} i */
  function drawDetail(i) {
    detail.replaceChildren();
    detail.hidden = false;
    const site = d.sites[i];
    const heading = h("div", "jcnb-cmp-detail-title");
    heading.append(h("span", "jcnb-cmp-detail-site", site.site), h("span", "jcnb-cmp-detail-type", ` ${site.type}`));
    const body = h("div", "jcnb-cmp-detail-body");
    const figure = h("div", "jcnb-cmp-figure");

    const key = h("div", "jcnb-cmp-key");
    const shares = d.shares(i);
    d.modes.forEach((label, mode) => {
      const item = h("span", "jcnb-cmp-mode", shares[mode] ? label : `${label} (missing)`);
      item.style.setProperty("--jcnb-mode", d.colour(mode));
      key.appendChild(item);
    });
    const scaleBox = h("label", "jcnb-cmp-scale");
    const check = /** @type {HTMLInputElement} */ (h("input"));
    check.type = "checkbox";
    check.checked = sqrtScale;
    scaleBox.append(check, document.createTextNode(" square-root scale"));
    key.appendChild(scaleBox);

    const canvas = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-cmp-large"));
    const tip = h("div", "jcnb-cmp-tip", "hover the histogram for a bin's counts");
    tip.classList.add("jcnb-cmp-hint");
    const [lo, hi] = d.range(i);
    const box = {
      x: LARGE.left,
      y: LARGE.top,
      w: LARGE.width - LARGE.left - LARGE.right,
      h: LARGE.height - LARGE.top - LARGE.bottom,
    };
    const ink = getComputedStyle(root).color || "#333";

    /** @param {number} hover the bin under the pointer, -1 for none */
    function paint(hover) {
      const ctx = sized(canvas, LARGE.width, LARGE.height);
      ctx.clearRect(0, 0, LARGE.width, LARGE.height);
      if (hover >= 0) {
        ctx.fillStyle = "rgba(128, 128, 128, 0.18)";
        ctx.fillRect(box.x + (hover * box.w) / d.bins, box.y, box.w / d.bins, box.h);
      }
      const top = drawOverlay(ctx, shares, d.colours, box, { fill: 0.14, sqrt: sqrtScale, width: 1.5 });
      ctx.strokeStyle = "rgba(128, 128, 128, 0.7)";
      ctx.lineWidth = 1;
      ctx.beginPath();
      ctx.moveTo(box.x, box.y);
      ctx.lineTo(box.x, box.y + box.h + 0.5);
      ctx.lineTo(box.x + box.w, box.y + box.h + 0.5);
      ctx.stroke();
      ctx.fillStyle = ink;
      ctx.font = "11px monospace";
      ctx.textBaseline = "top";
      ctx.textAlign = "right";
      ctx.fillText(percent(top), box.x - 4, box.y - 4);
      ctx.fillText("0%", box.x - 4, box.y + box.h - 8);
      const below = box.y + box.h + 6;
      ctx.textAlign = "left";
      ctx.fillText(fmt(lo), box.x, below);
      ctx.textAlign = "right";
      ctx.fillText(fmt(hi), box.x + box.w, below);
      // Zero, where the range spans it: where Dropout and ReLU put their mass.
      const zero = box.x + (-lo / (hi - lo)) * box.w;
      if (lo < 0 && hi > 0) {
        ctx.strokeStyle = "rgba(128, 128, 128, 0.5)";
        ctx.setLineDash([3, 3]);
        ctx.beginPath();
        ctx.moveTo(Math.round(zero) + 0.5, box.y);
        ctx.lineTo(Math.round(zero) + 0.5, box.y + box.h);
        ctx.stroke();
        ctx.setLineDash([]);
        if (zero - box.x > 60 && box.x + box.w - zero > 60) {
          ctx.textAlign = "center";
          ctx.fillText("0", zero, below);
        }
      }
      canvas.dataset.drawn = "1";
    }

    let hovered = -1;
    canvas.addEventListener("mousemove", (event) => {
      const rect = canvas.getBoundingClientRect();
      const x = ((event.clientX - rect.left) * LARGE.width) / rect.width - box.x;
      const bin = x >= 0 && x < box.w ? Math.floor((x / box.w) * d.bins) : -1;
      if (bin === hovered) return;
      hovered = bin;
      paint(bin);
      tip.replaceChildren();
      tip.classList.toggle("jcnb-cmp-hint", bin < 0);
      if (bin < 0) {
        tip.textContent = "hover the histogram for a bin's counts";
        return;
      }
      const width = (hi - lo) / d.bins;
      tip.appendChild(h("span", "jcnb-cmp-bin", `[${fmt(lo + bin * width)}, ${fmt(lo + (bin + 1) * width)})`));
      d.modes.forEach((label, mode) => {
        const share = shares[mode];
        const count = d.count(i, mode, bin);
        const text = share ? `${label}: ${count} (${percent(share[bin])})` : `${label}: –`;
        const item = h("span", "jcnb-cmp-count", text);
        item.style.color = d.colour(mode);
        tip.appendChild(item);
      });
    });
    canvas.addEventListener("mouseleave", () => {
      hovered = -1;
      paint(-1);
      tip.classList.add("jcnb-cmp-hint");
      tip.textContent = "hover the histogram for a bin's counts";
    });
    check.addEventListener("change", () => {
      sqrtScale = check.checked;
      paint(hovered);
    });
    figure.append(key, canvas, tip);
    body.appendChild(figure);
    body.appendChild(statsTable(i));
    detail.append(heading, body);
    paint(-1);
  }

  /** Every statistic of a site, one column per mode. @param {number} i */
  function statsTable(i) {
    const site = d.sites[i];
    const stats = h("table", "jcnb-cmp-stats");
    const headRow = h("tr");
    headRow.appendChild(h("th"));
    d.modes.forEach((label, mode) => {
      const th = h("th", "jcnb-cmp-stats-mode", label);
      th.style.color = d.colour(mode);
      th.title = label;
      headRow.appendChild(th);
    });
    stats.appendChild(headRow);
    const shapeRow = h("tr");
    shapeRow.appendChild(h("td", "", "shape"));
    site.shapes.forEach((shape, mode) => {
      const td = h("td", "", shape ? `(${shape.join(",")})` : "–");
      if (!shape) td.title = `not reached in ${d.modes[mode]}`;
      shapeRow.appendChild(td);
    });
    stats.appendChild(shapeRow);
    for (const column of [...d.columns, "shift"]) {
      const tr = h("tr");
      tr.dataset.stat = column;
      tr.appendChild(h("td", "", column === "zero_pct" ? "zeros %" : column));
      d.modes.forEach((label, mode) => {
        const value = column === "shift" ? d.modeShift(i, mode) : d.stat(i, mode, column);
        const reached = Boolean(site.shapes[mode]);
        const unscored = column === "shift" && Number.isNaN(value);
        const td = h("td", "jcnb-cmp-num", reached && !unscored ? fmt(value) : "–");
        if (unscored && reached) td.title = "no shift: the site is missing in a mode";
        if (column === "nan" && value > 0) {
          td.classList.add("jcnb-cmp-bad");
          td.title = `${value} NaN values in ${label}`;
        }
        if (column === "shift" && mode === 0) td.title = "the reference mode";
        tr.appendChild(td);
      });
      stats.appendChild(tr);
    }
    return stats;
  }

  function draw() {
    root.classList.remove("jcnb-ready");
    d = readModel(model);
    root.dataset.sites = String(d.sites.length);
    root.dataset.modes = String(d.modes.length);
    drawLegend();
    drawTable();
    applyFilter();
    if (selected >= 0 && selected < d.sites.length) select(selected);
    else {
      selected = -1;
      detail.hidden = true;
      detail.replaceChildren();
    }
    root.classList.add("jcnb-ready");
    el.classList.add("jcnb-ready");
  }

  const onClick = (/** @type {Event} */ event) => {
    const row = event.target instanceof Element ? event.target.closest(".jcnb-cmp-body") : null;
    if (row instanceof HTMLElement) select(Number(row.dataset.index));
  };
  const onKey = (/** @type {KeyboardEvent} */ event) => {
    if (event.key !== "Enter" && event.key !== " ") return;
    const row = event.target instanceof Element ? event.target.closest(".jcnb-cmp-body") : null;
    if (row instanceof HTMLElement) {
      event.preventDefault();
      select(Number(row.dataset.index));
    }
  };
  table.addEventListener("click", onClick);
  table.addEventListener("keydown", onKey);
  filter.addEventListener("input", applyFilter);
  const traits = ["_modes", "_sites", "_stats", "_hists", "_ranges", "_shifts", "_bins"];
  for (const name of traits) model.on(`change:${name}`, draw);
  draw();
  return () => {
    for (const name of traits) model.off(`change:${name}`, draw);
  };
}

export default { render };
