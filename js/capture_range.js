// CaptureView's value range controls, over the selected site's histogram
// and heatmap: the range they span (the values' own, without a fill value
// the kernel found, or robust percentiles), whether the statistics line
// leaves the fill out (it starts doing so, as the table's row does), and
// what the kernel says of the range.

import { h } from "./common.js";
import { fillText, percentileText } from "./capture_data.js";
/** @typedef {import("./capture_data.js").CaptureData} CaptureData */
/** @typedef {import("./capture_data.js").SiteRange} SiteRange */

/** What each range choice spans, for its title. @type {Record<string, string>} */
const MODE_TITLES = {
  full: "every finite value: the range the table's statistics describe",
  fill: "the values other than the fill: the histogram counts the fill in a bar of its own and the heatmap marks it",
  robust: "the middle of the values: those beyond are counted at the histogram's ends and marked in the heatmap",
};

/** The range controls, empty: the view puts `bar` in place and drawRangeBar fills it. */
function rangeLayout() {
  const bar = h("div", "jcnb-range-bar");
  const modeLabel = h("label", "jcnb-range-mode", "range ");
  const modeSelect = /** @type {HTMLSelectElement} */ (h("select"));
  modeLabel.append(modeSelect);
  const fillNote = h("span", "jcnb-fill-note");
  const restLabel = h("label", "jcnb-rest-stats");
  const restBox = /** @type {HTMLInputElement} */ (h("input"));
  restBox.type = "checkbox";
  restLabel.append(restBox, document.createTextNode(" stats without fill"));
  // As the table's row: its statistics leave the fill out too.
  restBox.checked = true;
  restLabel.title = "the statistics line gives the statistics of the values other than the fill, as the table does; unchecked, of every finite value";
  const rangeNote = h("span", "jcnb-range-note");
  bar.append(modeLabel, fillNote, restLabel, rangeNote);
  bar.hidden = true;
  return { bar, modeSelect, fillNote, restLabel, restBox, rangeNote };
}

/** How the choice of range `mode` reads. @param {string} mode @param {SiteRange} range */
function modeText(mode, range) {
  if (mode === "fill") return "without fill";
  if (mode === "robust") return `robust (${percentileText(range)})`;
  return "full";
}

/**
 * Shows the kernel's range answer for site `selected`; hidden until it answers
 * for that site, and for sites without finite values (nothing has a range).
 * @param {ReturnType<typeof rangeLayout>} controls @param {CaptureData} data @param {number} selected @param {SiteRange} range
 */
function drawRangeBar(controls, data, selected, range) {
  const { bar, modeSelect, fillNote, restLabel, rangeNote } = controls;
  const s = selected >= 0 ? data.sites[selected] : null;
  const current = s !== null && range.site === selected;
  bar.hidden = !current || !s.has_stats || (data.stat(selected, "count") === 0 && !range.note);
  if (bar.hidden) {
    delete bar.dataset.mode;
    delete bar.dataset.fill;
    return;
  }
  modeSelect.replaceChildren(
    ...range.modes.map((mode) => {
      const option = /** @type {HTMLOptionElement} */ (h("option", "", modeText(mode, range)));
      option.value = mode;
      option.title = MODE_TITLES[mode] || "";
      return option;
    }),
  );
  modeSelect.value = range.mode;
  modeSelect.disabled = range.modes.length < 2;
  modeSelect.title = range.modes.length < 2 ? range.note || "this site offers only its full range" : MODE_TITLES[range.mode] || "";
  const fills = range.fills.map(fillText).join("; ");
  fillNote.textContent = !fills ? "" : range.mode === "full" ? `${fills} (drawn with the rest)` : `${fills} excluded`;
  fillNote.title = fills ? "a value filling a share of the array far from the rest (or near the float type's limit), as masks of attention logits do" : "";
  restLabel.hidden = !(range.rest && range.rest.count);
  rangeNote.textContent = range.note;
  bar.dataset.mode = range.mode;
  if (range.fills.length) bar.dataset.fill = range.fills.map((f) => `${f.value}:${f.count}`).join(" ");
  else delete bar.dataset.fill;
}

export { rangeLayout, drawRangeBar };
