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

import { h, siteFilter } from "./common.js";
import { Tooltip, onThemeChange } from "./draw.js";
import { shownName } from "./names.js";
import { COMPARISON_TRAITS, readComparison, shiftNote } from "./compare_data.js";
import { drawLegend, drawTable, applyFilter } from "./compare_table.js";
import { drawDetail } from "./compare_detail.js";
/** @typedef {import("./compare_data.js").Comparison} Comparison */

/**
 * What the reader chose in a comparison: the open site (by name), the scale,
 * the filter and where the table is scrolled.
 * @typedef {{selectedSite: string | null, sqrtScale: boolean, filter: string, scroll: [number, number]}} Choices
 */

/** The choices of a comparison no one has looked at yet. @returns {Choices} */
function freshChoices() {
  return { selectedSite: null, sqrtScale: true, filter: "", scroll: [0, 0] };
}

/**
 * Draws the comparison held in `model`'s traits into `host` and keeps it
 * drawn as they change and as the host's theme changes.
 * @param {any} model
 * @param {HTMLElement} host
 * @param {string} prefix what the trait names start with ("" in CompareView)
 * @param {Choices} [chosen] the reader's choices, which the handlers update:
 *   a widget drawn again in a new view (JupyterLab does so when its output is
 *   updated) passes the last view's, and opens as it was
 * @returns {() => void} stops watching the traits and the theme
 */
function mountComparison(model, host, prefix, chosen = freshChoices()) {
  const root = h("div", "jcnb-compare jcnb-themed");
  const header = h("div", "jcnb-cmp-header");
  const title = h("span", "jcnb-cmp-title");
  const legend = h("span", "jcnb-cmp-legend");
  const filter = siteFilter("jcnb-cmp-filter");
  header.append(title, legend, filter);
  const note = h("div", "jcnb-cmp-note");
  // What the comparison needs said beside its numbers: which call argument
  // switches the model's mode, or the step runs are compared at.
  const callNote = h("div", "jcnb-cmp-call-note");
  const table = h("div", "jcnb-cmp-table");
  const detail = h("div", "jcnb-cmp-detail");
  detail.hidden = true;
  root.append(header, note, callNote, table, detail);
  host.appendChild(root);
  const tooltip = new Tooltip(root);

  filter.value = chosen.filter;
  /** @type {Comparison} */
  let d = readComparison(model, prefix);
  /** @type {HTMLElement[]} */
  let rows = [];
  let fit = () => {};
  const ui = { root, title, filter, detail, tooltip };

  /** Opens site i's detail and marks its row. @param {number} i */
  function select(i) {
    chosen.selectedSite = d.sites[i].site;
    rows.forEach((row, j) => row.classList.toggle("jcnb-cmp-selected", j === i));
    root.dataset.selected = String(i);
    drawDetail(ui, d, i, chosen.sqrtScale, (sqrt) => (chosen.sqrtScale = sqrt));
  }

  function draw() {
    root.classList.remove("jcnb-ready");
    tooltip.hide();
    d = readComparison(model, prefix);
    root.dataset.sites = String(d.sites.length);
    root.dataset.modes = String(d.modes.length);
    note.textContent = shiftNote(d);
    callNote.textContent = shownName(d.note);
    callNote.hidden = !d.note;
    drawLegend(legend, d);
    ({ rows, fit } = drawTable(root, table, d));
    applyFilter(ui, rows, d);
    // A new comparison sorts its sites anew: the open site is found by name.
    const { selectedSite } = chosen;
    const reopened = selectedSite === null ? -1 : d.sites.findIndex((s) => s.site === selectedSite);
    if (reopened >= 0) select(reopened);
    else {
      chosen.selectedSite = null;
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
  filter.addEventListener("input", () => {
    chosen.filter = filter.value;
    applyFilter(ui, rows, d);
  });
  table.addEventListener("scroll", () => {
    chosen.scroll = [table.scrollLeft, table.scrollTop];
    table.classList.toggle("jcnb-cmp-scrolled", table.scrollLeft > 0);
  });
  // The site column gives up room when the widget narrows, and takes it back.
  // The first call comes once the table is in the page: where it was scrolled to applies then.
  let placed = false;
  const resized = new ResizeObserver(() => {
    fit();
    if (placed || !table.clientWidth) return;
    placed = true;
    [table.scrollLeft, table.scrollTop] = chosen.scroll;
  });
  resized.observe(table);
  // A new comparison changes several traits at once: draw once for them all.
  let queued = false;
  // A view out of the page draws when it is back: a view the host drew anew
  // elsewhere (JupyterLab keeps the old one) may never be, and costs nothing.
  let missed = false;
  const drawSoon = () => {
    if (queued) return;
    queued = true;
    queueMicrotask(() => {
      queued = false;
      missed = !root.isConnected;
      if (!missed) draw();
    });
  };
  const back = new IntersectionObserver(() => {
    if (missed && root.isConnected) drawSoon();
  });
  back.observe(root);
  const events = COMPARISON_TRAITS.map((name) => `change:${prefix}${name}`);
  for (const event of events) model.on(event, drawSoon);
  // Canvas ink is read from the theme as it draws: a theme switch redraws.
  const stopTheme = onThemeChange(drawSoon);
  draw();
  return () => {
    resized.disconnect();
    back.disconnect();
    stopTheme();
    for (const event of events) model.off(event, drawSoon);
  };
}

export { freshChoices, mountComparison };
