// CaptureView front end: a virtualized, sortable table of sowed values with
// sparkline histograms, and a detail panel (large histogram, 2-D heatmap).
// Plain ES module, no build step. Every string from user code is set with
// textContent, never parsed as HTML.

/**
 * @typedef {{path: string, name: string, call: number, type: string,
 *   shape: number[] | null, dtype: string, note: string,
 *   has_stats: boolean, has_value: boolean}} Site
 */

const ROW_HEIGHT = 24;
const VISIBLE_ROWS = 14;
// Colour indices above the finite scale, matching payload.py.
const NAN_INDEX = 253;
const POSINF_INDEX = 254;
const NEGINF_INDEX = 255;

/** RGB of a colour index: blue-white-red for finite values, then NaN, +Inf, -Inf. @param {number} i */
function colourOf(i) {
  if (i === NAN_INDEX) return [255, 0, 255];
  if (i === POSINF_INDEX) return [255, 215, 0];
  if (i === NEGINF_INDEX) return [0, 200, 200];
  const t = i / 252;
  if (t < 0.5) {
    const u = t / 0.5;
    return [Math.round(59 + u * 196), Math.round(76 + u * 179), Math.round(192 + u * 63)];
  }
  const u = (t - 0.5) / 0.5;
  return [Math.round(255 - u * 75), Math.round(255 - u * 251), Math.round(255 - u * 217)];
}

/** @param {{ model: any, el: HTMLElement }} ctx */
function render({ model, el }) {
  const root = h("div", "jcnb-root");
  el.appendChild(root);

  const header = h("div", "jcnb-header");
  const title = h("span", "jcnb-title");
  const filter = /** @type {HTMLInputElement} */ (h("input", "jcnb-filter"));
  filter.placeholder = "filter paths (regular expression)";
  filter.type = "search";
  header.append(title, filter);
  const flag = h("button", "jcnb-flag");
  flag.type = "button";

  const columns = [
    { key: "path", label: "path" },
    { key: "name", label: "name" },
    { key: "call", label: "call" },
    { key: "shape", label: "shape" },
    { key: "dtype", label: "dtype" },
    { key: "mean", label: "mean", stat: "mean" },
    { key: "std", label: "std", stat: "std" },
    { key: "min", label: "min", stat: "min" },
    { key: "max", label: "max", stat: "max" },
    { key: "zero_pct", label: "zeros %", stat: "zero_pct" },
    { key: "nonfinite", label: "NaN/Inf" },
    { key: "hist", label: "histogram" },
  ];
  const head = h("div", "jcnb-row jcnb-head");
  const scroller = h("div", "jcnb-scroller");
  const spacer = h("div", "jcnb-spacer");
  scroller.appendChild(spacer);

  const detail = h("div", "jcnb-detail");
  const detailTitle = h("div", "jcnb-detail-title", "Select a row to see its histogram.");
  const histBox = h("div", "jcnb-hist-box");
  const histCanvas = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-hist"));
  histCanvas.width = 520;
  histCanvas.height = 170;
  const tip = h("div", "jcnb-tip");
  const logLabel = h("label", "jcnb-log");
  const logBox = /** @type {HTMLInputElement} */ (h("input"));
  logBox.type = "checkbox";
  logLabel.append(logBox, document.createTextNode(" log count scale"));
  histBox.append(histCanvas, tip);
  const heatBox = h("div", "jcnb-heat-box");
  const heatControls = h("div", "jcnb-heat-controls");
  const heatCanvas = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-heat"));
  const heatNote = h("div", "jcnb-heat-note");
  const legend = h("div", "jcnb-legend");
  for (const [name, rgb] of [["NaN", colourOf(NAN_INDEX)], ["+Inf", colourOf(POSINF_INDEX)], ["-Inf", colourOf(NEGINF_INDEX)]]) {
    const swatch = h("span", "jcnb-swatch");
    swatch.style.background = `rgb(${rgb.join(",")})`;
    legend.append(swatch, document.createTextNode(` ${name}  `));
  }
  heatBox.append(heatControls, heatCanvas, heatNote, legend);
  detail.append(detailTitle, logLabel, histBox, heatBox);
  root.append(header, flag, head, scroller, detail);

  /** @type {Site[]} */ let sites = [];
  /** @type {Float64Array} */ let stats = new Float64Array(0);
  /** @type {Int32Array} */ let hists = new Int32Array(0);
  let bins = 0;
  /** @type {string[]} */ let statColumns = [];
  /** @type {number[]} */ let order = [];
  let sortKey = "";
  let sortDir = 1;
  let selected = -1;

  const stat = (i, name) => stats[i * statColumns.length + statColumns.indexOf(name)];
  const nonfinite = (i) => stat(i, "nan") + stat(i, "posinf") + stat(i, "neginf");
  const shapeText = (s) => (s.shape ? `(${s.shape.join(",")})` : "");

  function sortValue(i, key) {
    const s = sites[i];
    if (key === "path") return `${s.path}.${s.name}`;
    if (key === "name" || key === "dtype") return s[key];
    if (key === "call") return s.call;
    if (key === "shape") return s.shape ? s.shape.reduce((a, b) => a * b, 1) : -1;
    if (key === "nonfinite") return s.has_stats ? nonfinite(i) : -1;
    const v = stat(i, key);
    return Number.isNaN(v) ? -Infinity : v;
  }

  function recompute() {
    const matches = siteMatcher(filter);
    order = sites.map((_, i) => i).filter((i) => matches(`${sites[i].path}.${sites[i].name}`));
    if (!sortKey) {
      // Default: grouped by module path, groups in order of first appearance,
      // execution order within a group.
      const firstSeen = new Map();
      sites.forEach((s, i) => firstSeen.has(s.path) || firstSeen.set(s.path, i));
      order.sort((a, b) => firstSeen.get(sites[a].path) - firstSeen.get(sites[b].path) || a - b);
    } else if (sortKey !== "hist") {
      order.sort((a, b) => {
        const x = sortValue(a, sortKey);
        const y = sortValue(b, sortKey);
        return (x < y ? -1 : x > y ? 1 : a - b) * sortDir;
      });
    }
    spacer.style.height = `${order.length * ROW_HEIGHT}px`;
    scroller.style.height = `${Math.max(1, Math.min(order.length, VISIBLE_ROWS)) * ROW_HEIGHT}px`;
    root.dataset.visibleRows = String(order.length);
    title.textContent = `${sites.length} sowed value${sites.length === 1 ? "" : "s"}` + (order.length < sites.length ? `, ${order.length} shown` : "");
    drawRows(true);
  }

  function sparkline(i) {
    const canvas = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-spark"));
    canvas.width = 80;
    canvas.height = 18;
    const ctx = canvas.getContext("2d");
    const row = hists.subarray(i * bins, (i + 1) * bins);
    const top = Math.max(1, ...row);
    ctx.fillStyle = "#4c78a8";
    const w = canvas.width / bins;
    row.forEach((c, k) => {
      const bar = (canvas.height * c) / top;
      ctx.fillRect(k * w, canvas.height - bar, Math.max(w, 1), bar);
    });
    return canvas;
  }

  let drawn = "";
  // Rebuilds the visible rows only when what they show changes: replacing a
  // row between mousedown and mouseup would swallow the click.
  function drawRows(force = false) {
    const first = Math.floor(scroller.scrollTop / ROW_HEIGHT);
    const last = Math.min(order.length, first + VISIBLE_ROWS + 2);
    const key = `${first}:${last}`;
    if (!force && key === drawn) return;
    drawn = key;
    for (const old of [...scroller.querySelectorAll(".jcnb-body-row")]) old.remove();
    for (let k = first; k < last; k++) {
      const i = order[k];
      const s = sites[i];
      const row = h("div", "jcnb-row jcnb-body-row");
      row.style.top = `${k * ROW_HEIGHT}px`;
      row.dataset.site = String(i);
      if (i === selected) row.classList.add("jcnb-selected");
      const pathCell = h("span", "jcnb-cell", s.path || "(root)");
      if (k > 0 && !sortKey && sites[order[k - 1]].path === s.path) pathCell.classList.add("jcnb-same-path");
      row.append(pathCell, h("span", "jcnb-cell", s.name));
      row.append(h("span", "jcnb-cell jcnb-num", String(s.call)), h("span", "jcnb-cell", shapeText(s)));
      row.append(h("span", "jcnb-cell", s.dtype));
      if (s.has_stats) {
        for (const name of ["mean", "std", "min", "max"]) row.append(h("span", "jcnb-cell jcnb-num", fmt(stat(i, name))));
        row.append(h("span", "jcnb-cell jcnb-num", stat(i, "zero_pct").toFixed(1)));
        const bad = nonfinite(i);
        const cell = h("span", "jcnb-cell jcnb-num", bad ? `${stat(i, "nan")}/${stat(i, "posinf") + stat(i, "neginf")}` : "-");
        if (bad) cell.classList.add("jcnb-nonfinite");
        row.append(cell);
        const holder = h("span", "jcnb-cell");
        holder.append(sparkline(i));
        row.append(holder);
      } else {
        const note = h("span", "jcnb-cell jcnb-note", s.note);
        row.append(note);
      }
      scroller.appendChild(row);
    }
  }

  function drawHistogram() {
    const ctx = histCanvas.getContext("2d");
    ctx.clearRect(0, 0, histCanvas.width, histCanvas.height);
    if (selected < 0 || !sites[selected].has_stats) {
      delete histCanvas.dataset.drawn;
      return;
    }
    const row = hists.subarray(selected * bins, (selected + 1) * bins);
    const scaleOf = (c) => (logBox.checked ? Math.log10(1 + c) : c);
    const top = Math.max(1e-9, ...Array.from(row, scaleOf));
    const pad = 28;
    const w = (histCanvas.width - pad) / bins;
    const height = histCanvas.height - 20;
    ctx.fillStyle = "#4c78a8";
    row.forEach((c, k) => {
      const bar = (height * scaleOf(c)) / top;
      ctx.fillRect(pad + k * w, height - bar, Math.max(w - 1, 1), bar);
    });
    ctx.fillStyle = "#444";
    ctx.font = "11px monospace";
    ctx.fillText(fmt(stat(selected, "lo")), pad, histCanvas.height - 4);
    const hiText = fmt(stat(selected, "hi"));
    ctx.fillText(hiText, histCanvas.width - ctx.measureText(hiText).width - 2, histCanvas.height - 4);
    ctx.fillText(logBox.checked ? "log" : "count", 0, 10);
    histCanvas.dataset.drawn = "true";
  }

  function onHover(event) {
    if (selected < 0 || !sites[selected].has_stats) return;
    const rect = histCanvas.getBoundingClientRect();
    const x = ((event.clientX - rect.left) * histCanvas.width) / rect.width - 28;
    const k = Math.floor(x / ((histCanvas.width - 28) / bins));
    if (k < 0 || k >= bins) {
      tip.style.display = "none";
      return;
    }
    const lo = stat(selected, "lo");
    const width = (stat(selected, "hi") - lo) / bins;
    tip.textContent = `[${fmt(lo + k * width)}, ${fmt(lo + (k + 1) * width)}): ${hists[selected * bins + k]}`;
    tip.style.display = "block";
    tip.style.left = `${event.clientX - rect.left + 8}px`;
  }

  function sliceControls() {
    heatControls.replaceChildren();
    const s = sites[selected];
    if (!s || !s.has_value || !s.shape) return;
    const lead = s.shape.slice(0, -2);
    const index = model.get("_slice_index") || [];
    lead.forEach((size, axis) => {
      const label = h("label", "jcnb-axis", `axis ${axis} `);
      const input = /** @type {HTMLInputElement} */ (h("input", "jcnb-axis-input"));
      input.type = "number";
      input.min = "0";
      input.max = String(size - 1);
      input.value = String(index[axis] ?? 0);
      input.addEventListener("change", () => {
        const next = lead.map((_, a) => Number(heatControls.querySelectorAll("input")[a].value) || 0);
        model.set("_slice_index", next);
        model.save_changes();
      });
      label.append(input, document.createTextNode(` of ${size}`));
      heatControls.append(label);
    });
  }

  function drawHeatmap() {
    const shape = model.get("_heatmap_shape") || [];
    const pixels = new Uint8Array(bytesOf(model.get("_heatmap")));
    const current = selected >= 0 && model.get("_heatmap_site") === selected;
    heatNote.textContent = current ? model.get("_heatmap_note") || "" : "";
    if (!current || shape.length !== 2 || pixels.length !== shape[0] * shape[1]) {
      heatCanvas.width = 0;
      heatCanvas.height = 0;
      delete heatCanvas.dataset.drawn;
      return;
    }
    const [rows, cols] = shape;
    heatCanvas.width = cols;
    heatCanvas.height = rows;
    const scale = Math.max(1, Math.floor(240 / Math.max(rows, cols)));
    heatCanvas.style.width = `${cols * scale}px`;
    heatCanvas.style.height = `${rows * scale}px`;
    const ctx = heatCanvas.getContext("2d");
    const image = ctx.createImageData(cols, rows);
    pixels.forEach((p, k) => {
      const [r, g, b] = colourOf(p);
      image.data.set([r, g, b, 255], 4 * k);
    });
    ctx.putImageData(image, 0, 0);
    const [lo, hi] = model.get("_heatmap_range") || [0, 0];
    heatNote.textContent = `colour scale ${fmt(lo)} .. ${fmt(hi)} (mean +- 3 std, clipped)`;
    heatCanvas.dataset.drawn = "true";
  }

  function select(i) {
    selected = i;
    const s = sites[i];
    detailTitle.textContent = `${s.path ? `${s.path}.` : ""}${s.name} [call ${s.call}] ${shapeText(s)} ${s.dtype}` + (s.note ? ` (${s.note})` : "");
    root.dataset.selected = String(i);
    drawRows(true);
    drawHistogram();
    model.set("_slice_index", []);
    model.set("_selected", i);
    model.save_changes();
    sliceControls();
    drawHeatmap();
  }

  function load() {
    sites = model.get("_sites") || [];
    statColumns = model.get("_stat_columns") || [];
    stats = new Float64Array(bytesOf(model.get("_stats")));
    hists = new Int32Array(bytesOf(model.get("_hists")));
    bins = model.get("_bins") || 1;
    const first = model.get("_first_nonfinite");
    if (first >= 0) {
      const s = sites[first];
      flag.textContent = `First NaN/Inf: ${s.path ? `${s.path}.` : ""}${s.name} [call ${s.call}] (${nonfinite(first)} values). Click to inspect.`;
      flag.style.display = "block";
      flag.dataset.site = String(first);
    } else {
      flag.style.display = "none";
    }
    head.replaceChildren();
    for (const col of columns) {
      const cell = h("span", "jcnb-cell jcnb-sortable", col.label + (sortKey === col.key ? (sortDir > 0 ? " \u25b2" : " \u25bc") : ""));
      cell.dataset.key = col.key;
      cell.addEventListener("click", () => {
        sortDir = sortKey === col.key ? -sortDir : col.stat || col.key === "nonfinite" ? -1 : 1;
        sortKey = col.key;
        load();
      });
      head.appendChild(cell);
    }
    recompute();
  }

  const onScroll = () => drawRows();
  const onRowClick = (event) => {
    const row = event.target instanceof Element ? event.target.closest(".jcnb-body-row") : null;
    if (row) select(Number(row.dataset.site));
  };
  const onFilter = () => recompute();
  const onLog = () => drawHistogram();
  const onFlag = () => select(Number(flag.dataset.site));
  const onLeave = () => {
    tip.style.display = "none";
  };
  scroller.addEventListener("scroll", onScroll);
  scroller.addEventListener("click", onRowClick);
  filter.addEventListener("input", onFilter);
  logBox.addEventListener("change", onLog);
  flag.addEventListener("click", onFlag);
  histCanvas.addEventListener("mousemove", onHover);
  histCanvas.addEventListener("mouseleave", onLeave);
  model.on("change:_heatmap", drawHeatmap);
  model.on("change:_heatmap_site", drawHeatmap);
  model.on("change:_sites", load);

  load();
  root.dataset.ready = "true";
  el.classList.add("jcnb-ready");

  return () => {
    model.off("change:_heatmap", drawHeatmap);
    model.off("change:_heatmap_site", drawHeatmap);
    model.off("change:_sites", load);
  };
}

export default { render };
