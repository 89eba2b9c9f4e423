// The key over LiveView's site cards: what the histogram view in use
// shows, the view switch's state, and in the heat view the toggles of its
// layers, each marked as it is drawn.

import { h, ordinal } from "./common.js";
import { themeOf, faded, keyItem } from "./draw.js";
import { shownView } from "./live_state.js";
import { runBand } from "./live_run_bands.js";
/** @typedef {import("./live_state.js").FirstNonfinite} FirstNonfinite */
/** @typedef {import("./live_state.js").LiveState} LiveState */
/** @typedef {import("./live_state.js").Layers} Layers */
/** @typedef {import("./live_state.js").Runs} Runs */
/** @typedef {import("./live_state.js").StatColumns} StatColumns */

// "bands" is offered only with several runs.
const VIEWS = ["heat", "offset", "overlay", "bands"];
/** @type {Record<string, string>} */
const VIEW_KEYS = {
  heat: "heat: a column per recorded step, stronger where more values are",
  offset: "one histogram per recorded step; later steps in front",
  overlay: "one histogram per recorded step; older steps fainter, the latest solid",
  bands: "per run, the median and a shaded percentile band over steps",
};
// The layers of the heat view a reader turns on and off (LiveState.layers), in the key's order.
/** @type {(keyof Layers)[]} */
const LAYERS = ["heat", "zeros", "bands", "median", "extremes"];

/**
 * The key of the histogram view in use: what the colours and lines mean.
 * In the heat view each of its layers is a toggle in the key, marked as it
 * is drawn. With several runs the legend gives the runs' colours, and the
 * key the view's marks in the text colours they are drawn in.
 * @param {ReturnType<typeof import("./live_layout.js").liveLayout>} ui @param {LiveState} state @param {StatColumns} stats
 * @param {Runs} runs @param {FirstNonfinite} found
 */
function drawKey(ui, state, stats, runs, found) {
  const { percentiles, schema } = stats;
  const { root, viewSwitch } = ui;
  const view = shownView(state.view, runs);
  const theme = themeOf(root);
  const look = runs.several ? { ...theme, series: theme.fg2, band: theme.fg2, median: theme.fg } : theme;
  const items = [];
  ui.layerBox.hidden = view !== "heat";
  if (runs.several && view !== "bands") items.push(h("span", "jcnb-muted", view === "heat" ? "one chart per run, on one step axis ·" : "one chart per run ·"));
  if (view === "heat") {
    const bandNames = schema.bands.map(([low, high]) => `${ordinal(low)}–${ordinal(high)}`).join(", ");
    const filled = !state.layers.heat && !runs.several;
    /** @type {Record<keyof Layers, string[]>} */
    const layerText = {
      heat: [look.series, "swatch", VIEW_KEYS.heat],
      zeros: [theme.fg, "line", "exact zeros, apart from the heat at 0: the stronger, the larger their share"],
      bands: [look.band, filled ? "swatch" : "line", `${bandNames} percentile bands${filled || schema.bands.length < 2 ? "" : ", widest dashed"}`],
      median: [look.median, "line", "median"],
      extremes: [look.band, "dotted", `${ordinal(percentiles[0])} / ${ordinal(percentiles[percentiles.length - 1])} percentile (min, max)`],
    };
    for (const toggle of ui.layerBox.children) {
      const name = /** @type {keyof Layers} */ (/** @type {HTMLElement} */ (toggle).dataset.layer);
      const [colour, mark, text] = layerText[name];
      const box = /** @type {HTMLInputElement} */ (toggle.children[0]);
      box.checked = state.layers[name];
      const swatch = /** @type {HTMLElement} */ (toggle.children[1]);
      /** @type {Record<string, string>} */
      const classes = { swatch: "jcnb-key-swatch", line: "jcnb-key-line" };
      swatch.className = classes[mark] || `jcnb-key-line jcnb-key-${mark}`;
      swatch.style.background = mark === "swatch" ? (name === "bands" ? faded(colour, 0.5) : colour) : "";
      swatch.style.borderTopColor = mark === "swatch" ? "" : colour;
      toggle.children[2].textContent = text;
    }
    root.dataset.layers = LAYERS.filter((name) => state.layers[name]).join(" ");
    items.push(h("span", "jcnb-muted", "x: step · y: value"));
  } else if (view === "bands") {
    const [low, high] = runBand(schema);
    items.push(keyItem(faded(theme.fg2, 0.35), `${ordinal(low)}–${ordinal(high)} percentile, per run`));
    items.push(keyItem(theme.fg2, "median, per run", "line"));
    items.push(h("span", "jcnb-muted", "x: step · y: value"));
  } else {
    items.push(keyItem(look.series, VIEW_KEYS[view], "line"));
    items.push(h("span", "jcnb-muted", view === "offset" ? "x: value · y: step" : "x: value · y: count"));
  }
  if (found) items.push(keyItem(theme.bad, "first NaN/Inf step", "line"));
  if (state.selected >= 0) items.push(keyItem(theme.accent, "step shown below", "line"));
  ui.keyItems.replaceChildren(...items);
  for (const button of viewSwitch.children) {
    const name = /** @type {HTMLElement} */ (button).dataset.view;
    /** @type {HTMLElement} */ (button).hidden = name === "bands" && !runs.several;
    button.classList.toggle("jcnb-on", name === view);
    button.setAttribute("aria-pressed", String(name === view));
  }
  root.dataset.view = view;
  root.dataset.countScale = ui.countLog.checked ? "log" : "linear";
}

export { VIEWS, LAYERS, drawKey };
