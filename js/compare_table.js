// A mode comparison's table: one row per site, largest shift first, with
// each mode's histogram overlaid in a sparkline and its statistics side by
// side, under a legend of the modes' colours. The statistics are those the
// schema gives a table column (Comparison.tableColumns), named and written as
// the schema says; the detail panel shows every statistic.

const SPARK = { width: 120, height: 28 };

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


/** A mode's label with its colour's swatch. @param {string} text @param {string} colour */
function modeLabel(text, colour) {
  const item = setName(h("span", "jcnb-cmp-mode"), text);
  item.style.setProperty("--jcnb-mode", colour);
  return item;
}

/** Each mode's label and colour, the reference first. @param {HTMLElement} legend @param {Comparison} d */
function drawLegend(legend, d) {
  legend.replaceChildren();
  d.modes.forEach((label, mode) => {
    const item = modeLabel(label, d.colour(mode));
    item.dataset.mode = String(mode);
    item.title = mode === 0 ? `${shownName(label)}: the reference, shifts are measured against it` : shownName(label);
    legend.appendChild(item);
  });
}

/** Wide enough for the longest site name, within bounds (longer ones end in an ellipsis). @param {HTMLElement} root @param {Comparison} d */
function siteWidth(root, d) {
  const ctx = document.createElement("canvas").getContext("2d");
  if (!ctx) return 220;
  ctx.font = getComputedStyle(root).font || "12px monospace";
  const widest = Math.max(0, ...d.sites.map((s) => ctx.measureText(shownName(s.label)).width));
  return Math.ceil(Math.min(360, Math.max(140, widest + 16)));
}

/** The two header rows: mode names over their columns, then the column names. @param {Comparison} d */
function tableHeads(d) {
  const heads = h("div", "jcnb-cmp-heads");
  const groups = h("div", "jcnb-cmp-row jcnb-cmp-groups");
  groups.append(h("span"), h("span"), h("span"));
  d.modes.forEach((label, mode) => {
    const group = setName(h("span", "jcnb-cmp-cell jcnb-cmp-group"), label);
    group.style.setProperty("--jcnb-mode", d.colour(mode));
    group.style.gridColumn = `span ${d.tableColumns.length}`;
    group.title = shownName(label);
    groups.appendChild(group);
  });
  const names = h("div", "jcnb-cmp-row jcnb-cmp-head");
  names.append(h("span", "jcnb-cmp-cell", "site"), h("span", "jcnb-cmp-cell", "shift"));
  const histHead = h("span", "jcnb-cmp-cell", "histograms");
  histHead.title = "share of each mode's values per bin, on the site's shared range (square-root scale)";
  names.appendChild(histHead);
  d.modes.forEach((label, mode) => {
    for (const key of d.tableColumns) {
      const name = d.schema.label(key);
      const cell = h("span", "jcnb-cmp-cell jcnb-cmp-num jcnb-cmp-marked", name);
      cell.style.setProperty("--jcnb-mode", d.colour(mode));
      cell.dataset.key = key;
      cell.dataset.mode = String(mode);
      cell.title = `${name} in ${label}`;
      names.appendChild(cell);
    }
  });
  heads.append(groups, names);
  return heads;
}

/** Site i's row: its name, shift, histograms and statistics per mode. @param {Comparison} d @param {number} i @param {number} maxShift */
function tableRow(d, i, maxShift) {
  const site = d.sites[i];
  const row = h("div", "jcnb-cmp-row jcnb-cmp-body");
  const shift = d.shift(i);
  row.dataset.site = site.site;
  row.dataset.label = site.label;
  row.dataset.shift = String(shift);
  row.dataset.index = String(i);
  row.tabIndex = 0;
  const name = setName(h("span", "jcnb-cmp-cell jcnb-cmp-site"), site.label);
  const nans = d.modes.map((label, mode) => [shownName(label), d.stat(i, mode, "nan")]).filter(([, n]) => Number(n) > 0);
  name.title = `${shownName(site.label)}\n${shownName(site.site)} (${shownName(site.type)})` + nans.map(([label, n]) => `\n${n} NaN in ${label}`).join("");
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
    for (const key of d.tableColumns) {
      const cell = h("span", "jcnb-cmp-cell jcnb-cmp-num", reached ? d.schema.text(key, d.stat(i, mode, key)) : "–");
      cell.dataset.key = key;
      cell.dataset.mode = String(mode);
      cell.title = reached ? `${d.schema.label(key)} in ${label}` : `not reached in ${label}`;
      row.appendChild(cell);
    }
  });
  return row;
}

/**
 * Rebuilds the table: the heads, then one row per site.
 * @param {HTMLElement} root @param {HTMLElement} table @param {Comparison} d
 * @returns {HTMLElement[]} the rows, by site index
 */
function drawTable(root, table, d) {
  table.replaceChildren();
  // Every row is its own grid, so every column has a fixed width; site,
  // shift and histograms come first and stay in view when many modes make
  // the table scroll sideways.
  root.style.setProperty(
    "--jcnb-cmp-columns",
    `${siteWidth(root, d)}px 112px ${SPARK.width + 8}px repeat(${d.tableColumns.length * d.modes.length}, 76px)`,
  );
  table.appendChild(tableHeads(d));
  const finite = d.sites.map((_, i) => d.shift(i)).filter((s) => Number.isFinite(s));
  const maxShift = Math.max(1e-12, ...finite);
  const rows = d.sites.map((_, i) => tableRow(d, i, maxShift));
  table.append(...rows);
  if (!d.sites.length) table.appendChild(h("div", "jcnb-cmp-empty", "(no site was recorded; check include=)"));
  return rows;
}

/**
 * Hides the rows the filter leaves out, and says how many are shown.
 * @param {{root: HTMLElement, title: HTMLElement, filter: HTMLInputElement}} ui @param {HTMLElement[]} rows @param {Comparison} d
 */
function applyFilter(ui, rows, d) {
  const { root, title } = ui;
  const matches = siteMatcher(ui.filter);
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

export { drawOverlay, modeLabel, drawLegend, drawTable, applyFilter };
