// Drawing a mode comparison: sites sorted by how far they shift between
// modes, per-mode statistics side by side, overlaid histograms and a detail
// panel with axes and a hover read-out. Shared by CompareView and ModePanel
// (which draws its own comparison from traits named with a prefix), so both
// read the same. Strings from user code (site names, mode labels) are set
// with textContent only, never parsed as HTML.

/**
 * A site: `site` is its dotted name (what filters and include= match),
 * `label` how the views name it ("dropout (output)").
 * @typedef {{site: string, label: string, type: string, shapes: (number[] | null)[]}} Site
 */

const SPARK = { width: 120, height: 28 };
const LARGE = { width: 540, height: 240, left: 52, right: 14, top: 10, bottom: 22 };
// Statistics each row shows per mode; the detail panel shows all of the stat columns.
const ROW_STATS = [
  ["mean", "mean"],
  ["std", "std"],
  ["zero_pct", "zeros %"],
];
// The traits a comparison is drawn from; a prefix names them in the panel.
const COMPARISON_TRAITS = ["_modes", "_sites", "_stats", "_hists", "_ranges", "_shifts", "_bins", "_note"];
const HOVER_HINT = "hover the histogram for a bin's counts";

/** A share as a percentage, one decimal. @param {number} share */
function percent(share) {
  return `${(100 * share).toFixed(1)}%`;
}

/** A histogram as each bin's share of its values; null when the mode has none. @param {Int32Array} hist */
function sharesOf(hist) {
  let total = 0;
  for (const c of hist) total += c;
  return total > 0 ? Array.from(hist, (c) => c / total) : null;
}

/** The largest share of any mode: the top of the share axis. @param {(number[] | null)[]} shares */
function shareTop(shares) {
  return Math.max(1e-12, ...shares.flatMap((s) => s ?? []));
}

/**
 * A map from shares in [0, top] to pixels, square-root or linear. A
 * square-root scale keeps a spike (Dropout's zeros) from flattening every
 * other bin.
 * @param {number} top @param {{y: number, h: number}} box @param {boolean} sqrt
 */
function shareScale(top, box, sqrt) {
  return (/** @type {number} */ v) => box.y + box.h - box.h * (sqrt ? Math.sqrt(v / top) : v / top);
}

/**
 * Each mode's histogram as a step outline with a light fill, all on one
 * scale. Modes with no values are left out rather than drawn flat.
 * @param {CanvasRenderingContext2D} ctx
 * @param {(number[] | null)[]} shares
 * @param {string[]} colours
 * @param {{x: number, y: number, w: number, h: number}} box
 * @param {(share: number) => number} y share to pixel (from shareScale)
 * @param {{fill: number, width: number}} style
 */
function drawOverlay(ctx, shares, colours, box, y, style) {
  shares.forEach((share, m) => {
    if (!share) return;
    const step = box.w / share.length;
    ctx.beginPath();
    ctx.moveTo(box.x, box.y + box.h);
    share.forEach((v, i) => {
      ctx.lineTo(box.x + i * step, y(v));
      ctx.lineTo(box.x + (i + 1) * step, y(v));
    });
    ctx.lineTo(box.x + box.w, box.y + box.h);
    const colour = colours[m % colours.length];
    if (style.fill > 0) {
      ctx.fillStyle = faded(colour, style.fill);
      ctx.fill();
    }
    ctx.strokeStyle = colour;
    ctx.lineWidth = style.width;
    ctx.lineJoin = "miter";
    ctx.stroke();
  });
}

/**
 * The comparison's traits, decoded once per draw.
 * @param {any} model
 * @param {string} prefix what the trait names start with ("" in CompareView)
 */
function readComparison(model, prefix) {
  const get = (/** @type {string} */ name) => model.get(prefix + name);
  /** @type {string[]} */
  const modes = get("_modes") || [];
  /** @type {string[]} */
  const colours = get("_colours") || ["#4c78a8"];
  /** @type {Site[]} */
  const sites = get("_sites") || [];
  /** @type {string[]} */
  const columns = get("_stat_columns") || [];
  const bins = get("_bins") || 1;
  const stats = new Float64Array(bytesOf(get("_stats")));
  const hists = new Int32Array(bytesOf(get("_hists")));
  const ranges = new Float64Array(bytesOf(get("_ranges")));
  const shifts = new Float64Array(bytesOf(get("_shifts")));
  const m = modes.length;
  const k = columns.length;
  return {
    modes,
    sites,
    columns,
    bins,
    note: /** @type {string} */ (get("_note") || ""),
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

/** A mode's label with its colour's swatch. @param {string} text @param {string} colour */
function modeLabel(text, colour) {
  const item = h("span", "jcnb-cmp-mode", text);
  item.style.setProperty("--jcnb-mode", colour);
  return item;
}

/**
 * Draws the comparison held in `model`'s traits into `host` and keeps it
 * drawn as they change and as the host's theme changes.
 * @param {any} model
 * @param {HTMLElement} host
 * @param {string} prefix what the trait names start with ("" in CompareView)
 * @returns {() => void} stops watching the traits and the theme
 */
function mountComparison(model, host, prefix) {
  const root = h("div", "jcnb-compare jcnb-themed");
  const header = h("div", "jcnb-cmp-header");
  const title = h("span", "jcnb-cmp-title");
  const legend = h("span", "jcnb-cmp-legend");
  const filter = siteFilter("jcnb-cmp-filter");
  header.append(title, legend, filter);
  const note = h("div", "jcnb-cmp-note");
  const table = h("div", "jcnb-cmp-table");
  const detail = h("div", "jcnb-cmp-detail");
  detail.hidden = true;
  root.append(header, note, table, detail);
  host.appendChild(root);
  const tooltip = new Tooltip(root);

  /** The site whose detail is open. @type {string | null} */
  let selectedSite = null;
  let sqrtScale = true;
  /** @type {ReturnType<typeof readComparison>} */
  let d = readComparison(model, prefix);
  /** @type {HTMLElement[]} */
  let rows = [];

  function drawLegend() {
    legend.replaceChildren();
    d.modes.forEach((label, mode) => {
      const item = modeLabel(label, d.colour(mode));
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
    const widest = Math.max(0, ...d.sites.map((s) => ctx.measureText(s.label).width));
    return Math.ceil(Math.min(360, Math.max(140, widest + 16)));
  }

  /** The two header rows: mode names over their columns, then the column names. */
  function tableHeads() {
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
        const cell = h("span", "jcnb-cmp-cell jcnb-cmp-num jcnb-cmp-marked", name);
        cell.style.setProperty("--jcnb-mode", d.colour(mode));
        cell.title = `${name} in ${label}`;
        names.appendChild(cell);
      }
    });
    heads.append(groups, names);
    return heads;
  }

  /** @param {number} i @param {number} maxShift */
  function tableRow(i, maxShift) {
    const site = d.sites[i];
    const row = h("div", "jcnb-cmp-row jcnb-cmp-body");
    const shift = d.shift(i);
    row.dataset.site = site.site;
    row.dataset.label = site.label;
    row.dataset.shift = String(shift);
    row.dataset.index = String(i);
    row.tabIndex = 0;
    const name = h("span", "jcnb-cmp-cell jcnb-cmp-site", site.label);
    const nans = d.modes.map((label, mode) => [label, d.stat(i, mode, "nan")]).filter(([, n]) => Number(n) > 0);
    name.title = `${site.label}\n${site.site} (${site.type})` + nans.map(([label, n]) => `\n${n} NaN in ${label}`).join("");
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
    const shares = d.shares(i);
    const box = { x: 0.5, y: 1, w: SPARK.width - 1, h: SPARK.height - 2 };
    drawOverlay(ctx, shares, d.colours, box, shareScale(shareTop(shares), box, true), { fill: 0.12, width: 1 });
    const sparkCell = h("span", "jcnb-cmp-cell");
    sparkCell.appendChild(spark);
    row.appendChild(sparkCell);

    d.modes.forEach((label, mode) => {
      const reached = Boolean(site.shapes[mode]);
      for (const [column, statName] of ROW_STATS) {
        const cell = h("span", "jcnb-cmp-cell jcnb-cmp-num", reached ? fmt(d.stat(i, mode, column)) : "–");
        cell.title = reached ? `${statName} in ${label}` : `not reached in ${label}`;
        row.appendChild(cell);
      }
    });
    return row;
  }

  function drawTable() {
    table.replaceChildren();
    // Every row is its own grid, so every column has a fixed width; site,
    // shift and histograms come first and stay in view when many modes make
    // the table scroll sideways.
    root.style.setProperty(
      "--jcnb-cmp-columns",
      `${siteWidth()}px 112px ${SPARK.width + 8}px repeat(${ROW_STATS.length * d.modes.length}, 76px)`,
    );
    table.appendChild(tableHeads());
    const finite = d.sites.map((_, i) => d.shift(i)).filter((s) => Number.isFinite(s));
    const maxShift = Math.max(1e-12, ...finite);
    rows = d.sites.map((_, i) => tableRow(i, maxShift));
    table.append(...rows);
    if (!d.sites.length) table.appendChild(h("div", "jcnb-cmp-empty", "(no site was recorded; check include=)"));
  }

  function applyFilter() {
    const matches = siteMatcher(filter);
    let shown = 0;
    for (const row of rows) {
      row.hidden = ![row.dataset.site, row.dataset.label].some((text) => matches(text ?? ""));
      shown += row.hidden ? 0 : 1;
    }
    root.dataset.visibleRows = String(shown);
    const n = d.sites.length;
    title.textContent =
      (shown < n ? `${shown} of ${n} sites` : `${n} site${n === 1 ? "" : "s"}`) + ", largest shift first";
  }

  /** @param {number} i */
  function select(i) {
    selectedSite = d.sites[i].site;
    rows.forEach((row, j) => row.classList.toggle("jcnb-cmp-selected", j === i));
    root.dataset.selected = String(i);
    drawDetail(i);
  }

  /**
   * What the read-out says about one bin: its range, then each mode's count and share.
   * @param {number} i @param {number} bin @param {(number[] | null)[]} shares
   */
  function binText(i, bin, shares) {
    const [lo, hi] = d.range(i);
    const width = (hi - lo) / d.bins;
    const lines = [`values in [${fmt(lo + bin * width)}, ${fmt(lo + (bin + 1) * width)})`];
    d.modes.forEach((label, mode) => {
      const share = shares[mode];
      lines.push(share ? `${label}: ${d.count(i, mode, bin)} (${percent(share[bin])})` : `${label}: not reached`);
    });
    return lines.join("\n");
  }

  /**
   * The large overlaid histogram of site i, with a value axis, a share axis and the hovered bin.
   * @param {HTMLCanvasElement} canvas @param {number} i @param {number} hover the bin under the pointer, -1 for none
   */
  function paintLarge(canvas, i, hover) {
    const ctx = sized(canvas, LARGE.width, LARGE.height);
    const theme = themeOf(root);
    const box = plotBox(LARGE.width, LARGE.height, LARGE);
    const shares = d.shares(i);
    const [lo, hi] = d.range(i);
    const top = shareTop(shares);
    const x = linearScale(lo, hi, box.x, box.x + box.w);
    const y = shareScale(top, box, sqrtScale);
    const xTicks = x.ticks(6);
    const yTicks = niceTicks(0, top, 4);
    const yText = (/** @type {number} */ v) => `${tickText(100 * v)}%`;
    ctx.clearRect(0, 0, LARGE.width, LARGE.height);
    drawAxes(ctx, box, { theme, x, xTicks, y, yTicks, yText, yLabel: sqrtScale ? "share (√ scale)" : "share" });
    // The ticks drawn, for tests and tools that cannot read pixels.
    canvas.dataset.xTicks = xTicks.map(tickText).join(" ");
    canvas.dataset.yTicks = yTicks.map(yText).join(" ");
    if (hover >= 0) {
      ctx.fillStyle = faded(theme.fg2, 0.18);
      ctx.fillRect(box.x + (hover * box.w) / d.bins, box.y, box.w / d.bins, box.h);
    }
    // Zero, where the range spans it: where Dropout and ReLU put their mass.
    if (lo < 0 && hi > 0) {
      const zero = Math.round(x(0)) + 0.5;
      ctx.strokeStyle = faded(theme.fg2, 0.6);
      ctx.setLineDash([3, 3]);
      ctx.beginPath();
      ctx.moveTo(zero, box.y);
      ctx.lineTo(zero, box.y + box.h);
      ctx.stroke();
      ctx.setLineDash([]);
    }
    drawOverlay(ctx, shares, d.colours, box, y, { fill: 0.14, width: 1.5 });
    canvas.dataset.drawn = "1";
  }

  /** @param {number} i */
  function drawDetail(i) {
    detail.replaceChildren();
    detail.hidden = false;
    const site = d.sites[i];
    const heading = h("div", "jcnb-cmp-detail-title");
    heading.append(h("span", "jcnb-cmp-detail-site", site.label), h("span", "jcnb-cmp-detail-type", ` ${site.type}`));
    const body = h("div", "jcnb-cmp-detail-body");
    const figure = h("div", "jcnb-cmp-figure");

    const key = h("div", "jcnb-cmp-key");
    const shares = d.shares(i);
    d.modes.forEach((label, mode) => key.appendChild(modeLabel(shares[mode] ? label : `${label} (missing)`, d.colour(mode))));
    const scaleBox = h("label", "jcnb-cmp-scale");
    const check = /** @type {HTMLInputElement} */ (h("input"));
    check.type = "checkbox";
    check.checked = sqrtScale;
    scaleBox.append(check, document.createTextNode(" square-root scale"));
    key.appendChild(scaleBox);

    const canvas = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-cmp-large"));
    canvas.dataset.site = site.site;
    const box = plotBox(LARGE.width, LARGE.height, LARGE);
    /** @param {number} px CSS pixels from the canvas's left */
    const binAt = (px) => {
      const bin = Math.floor(((px - box.x) / box.w) * d.bins);
      return bin >= 0 && bin < d.bins ? bin : -1;
    };
    let hovered = -1;
    hoverReadOut(canvas, tooltip, (px) => {
      const bin = binAt(px);
      if (bin !== hovered) paintLarge(canvas, i, (hovered = bin));
      return bin < 0 ? null : binText(i, bin, shares);
    });
    canvas.addEventListener("mouseleave", () => paintLarge(canvas, i, (hovered = -1)));
    check.addEventListener("change", () => {
      sqrtScale = check.checked;
      paintLarge(canvas, i, hovered);
    });
    figure.append(key, canvas, h("div", "jcnb-cmp-hint", HOVER_HINT));
    body.append(figure, statsTable(i));
    detail.append(heading, body);
    paintLarge(canvas, i, -1);
  }

  /** Every statistic of a site, one column per mode. @param {number} i */
  function statsTable(i) {
    const site = d.sites[i];
    const stats = h("table", "jcnb-cmp-stats");
    const headRow = h("tr");
    headRow.appendChild(h("th"));
    d.modes.forEach((label, mode) => {
      const th = h("th", "jcnb-cmp-stats-mode jcnb-cmp-marked", label);
      th.style.setProperty("--jcnb-mode", d.colour(mode));
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
    tooltip.hide();
    d = readComparison(model, prefix);
    root.dataset.sites = String(d.sites.length);
    root.dataset.modes = String(d.modes.length);
    note.textContent = d.note;
    drawLegend();
    drawTable();
    applyFilter();
    // A new comparison sorts its sites anew: the open site is found by name.
    const reopened = selectedSite === null ? -1 : d.sites.findIndex((s) => s.site === selectedSite);
    if (reopened >= 0) select(reopened);
    else {
      selectedSite = null;
      detail.hidden = true;
      detail.replaceChildren();
    }
    root.classList.add("jcnb-ready");
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
  // A new comparison changes several traits at once: draw once for them all.
  let queued = false;
  const drawSoon = () => {
    if (queued) return;
    queued = true;
    queueMicrotask(() => {
      queued = false;
      draw();
    });
  };
  const events = COMPARISON_TRAITS.map((name) => `change:${prefix}${name}`);
  for (const event of events) model.on(event, drawSoon);
  // Canvas ink is read from the theme as it draws: a theme switch redraws.
  const stopTheme = onThemeChange(drawSoon);
  draw();
  return () => {
    stopTheme();
    for (const event of events) model.off(event, drawSoon);
  };
}
