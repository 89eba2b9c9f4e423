// Drawing a mode comparison: sites sorted by how far they shift between
// modes, per-mode statistics side by side, overlaid histograms and a detail
// panel with axes and a hover read-out. Shared by CompareView and ModePanel
// (which draws its own comparison from traits named with a prefix), so both
// read the same. Strings from user code (site names, mode labels) are set
// with textContent only, never parsed as HTML.
//
// The comparison is what compare_data.js decodes from the traits, a small
// state that only the handlers here change, and drawing functions that take
// both as arguments: compare_table.js and compare_detail.js.

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
  /** @type {Comparison} */
  let d = readComparison(model, prefix);
  /** @type {HTMLElement[]} */
  let rows = [];
  const ui = { root, title, filter, detail, tooltip };

  /** Opens site i's detail and marks its row. @param {number} i */
  function select(i) {
    selectedSite = d.sites[i].site;
    rows.forEach((row, j) => row.classList.toggle("jcnb-cmp-selected", j === i));
    root.dataset.selected = String(i);
    drawDetail(ui, d, i, sqrtScale, (sqrt) => (sqrtScale = sqrt));
  }

  function draw() {
    root.classList.remove("jcnb-ready");
    tooltip.hide();
    d = readComparison(model, prefix);
    root.dataset.sites = String(d.sites.length);
    root.dataset.modes = String(d.modes.length);
    note.textContent = d.schema.shiftNote;
    drawLegend(legend, d);
    rows = drawTable(root, table, d);
    applyFilter(ui, rows, d);
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
  filter.addEventListener("input", () => applyFilter(ui, rows, d));
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

export { mountComparison };
