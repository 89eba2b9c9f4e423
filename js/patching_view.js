// PatchingView front end: a heatmap of a patching sweep's recovery by site
// and position (patching_heatmap.js), buttons that switch between the exact
// sweep and its estimate or show both, and the clicked cell's runs
// (patching_detail.js). The view's state is the widget's `shown` and
// `selected` traits; only the handlers here change them. Plain ES module,
// no build step.

import { fmt, h, csvText, download } from "./common.js";
import { Tooltip, hoverReadOut, keepDrawn, downloadCanvases } from "./draw.js";
import { schemaOf, applyColours } from "./schema.js";
import { shownName } from "./names.js";
import { patchingData, shownResults } from "./patching_data.js";
import { drawHeatmap, cellAt, drawScale, heatmapSvg, ROW_H, AXIS_H, HEAD_H } from "./patching_heatmap.js";
import { drawDetail } from "./patching_detail.js";
/** @typedef {import("./patching_data.js").PatchData} PatchData */

/** A cell's read-out: its site, position, and every result's recovery and metric. @param {PatchData} data @param {number} s @param {number} p */
function cellText(data, s, p) {
  const cell = s * data.positions.length + p;
  const label = data.positionLabels[p];
  const where = data.positions[p] === "whole" ? "patched whole" : `position ${data.positions[p]}${label === undefined ? "" : ` (${label})`}`;
  const lines = [shownName(data.sites[s]), where];
  for (const r of data.results) lines.push(`${r.method}: recovery ${fmt(r.recovery[cell])}, metric ${fmt(r.effect[cell])}`);
  return lines.join("\n");
}

/**
 * Every result's cells as a table: a row per result, site and position, with
 * the position's label, the patched metric and the recovery, as
 * `PatchingResult.to_csv` writes them in Python.
 * @param {PatchData} data
 */
function patchingTable(data) {
  const rows = data.results.flatMap((r) =>
    data.sites.flatMap((site, s) =>
      data.positions.map((position, p) => {
        const cell = s * data.positions.length + p;
        return [r.method, site, position, data.positionLabels[p] ?? "", r.effect[cell], r.recovery[cell]];
      }),
    ),
  );
  return { columns: ["method", "site", "position", "label", "metric", "recovery"], rows };
}

/** @param {{model: any, el: HTMLElement}} ctx */
function render({ model, el }) {
  const root = h("div", "jcnb-patching jcnb-themed");
  el.append(root);
  applyColours(root, schemaOf(model));
  const data = patchingData(model);
  const header = h("div", "jcnb-patch-header");
  const title = h("div", "jcnb-patch-title");
  const buttons = h("div", "jcnb-patch-shown");
  buttons.setAttribute("role", "group");
  buttons.setAttribute("aria-label", "which result the heatmap shows");
  const choices = data.results.length > 1 ? [...data.results.map((r) => r.method), "both"] : [];
  const byChoice = new Map(
    choices.map((choice) => {
      const button = /** @type {HTMLButtonElement} */ (h("button", "jcnb-patch-choice", choice === "both" ? "side by side" : choice));
      button.dataset.shown = choice;
      button.addEventListener("click", () => {
        model.set("shown", choice);
        model.save_changes();
      });
      return [choice, button];
    }),
  );
  buttons.append(...byChoice.values());
  const exports = h("div", "jcnb-patch-export");
  const purposes = {
    CSV: "download every cell's metric and recovery, per result",
    PNG: "download the heatmaps as a picture",
    SVG: "download the heatmaps as a vector picture, each cell's numbers in its tooltip",
  };
  for (const [format, purpose] of Object.entries(purposes)) {
    const button = h("button", "jcnb-patch-export-button", format);
    button.dataset.format = format.toLowerCase();
    button.title = purpose;
    exports.append(button);
  }
  header.append(title, buttons, exports);
  const maps = h("div", "jcnb-patch-maps");
  const scale = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-patch-scale"));
  const scaleBox = h("div", "jcnb-patch-scale-box");
  // A recovery past +-1 (patching overshot the clean run) widens the shared scale: the bar says so.
  const scaleTitle = h("div", "jcnb-muted jcnb-patch-scale-title", data.scale > 1 ? `recovery, to \u00b1${fmt(data.scale)}` : "recovery");
  scaleTitle.title = data.scale > 1 ? "some recovery lies past \u00b11, so the colours span a wider range" : "0 = corrupted run, 1 = clean run";
  scaleBox.append(scaleTitle, scale);
  const body = h("div", "jcnb-patch-body");
  body.append(maps, scaleBox);
  const detail = h("div", "jcnb-patch-detail");
  const tooltip = new Tooltip(root);
  root.append(header, body, detail);

  const width = () => Math.max(320, Math.min(root.clientWidth || el.clientWidth || 900, 1400));

  function drawMaps() {
    const shown = shownResults(data, model.get("shown"));
    root.dataset.shown = model.get("shown");
    for (const [choice, button] of byChoice) button.setAttribute("aria-pressed", String(choice === model.get("shown")));
    // Every result's clean and corrupted runs are the same two runs.
    const [first] = data.results;
    title.textContent = `recovery of ${first.metric}: 0 = corrupted run (${fmt(first.corrupted)}), 1 = clean run (${fmt(first.clean)})`;
    maps.replaceChildren();
    const each = Math.floor((width() - 90) / shown.length) - 8;
    for (const result of shown) {
      const panel = h("div", "jcnb-patch-map");
      panel.append(h("div", "jcnb-patch-method", result.method));
      const canvas = /** @type {HTMLCanvasElement} */ (h("canvas", "jcnb-patch-heat"));
      panel.append(canvas);
      maps.append(panel);
      const box = drawHeatmap(canvas, data, result, each, model.get("selected") || []);
      hoverReadOut(canvas, tooltip, (x, y) => {
        const cell = cellAt(data, box, x, y);
        return cell && cellText(data, cell[0], cell[1]);
      });
      canvas.addEventListener("click", (event) => {
        const rect = canvas.getBoundingClientRect();
        const cell = cellAt(data, box, event.clientX - rect.left, event.clientY - rect.top);
        if (!cell) return;
        model.set("selected", cell);
        model.save_changes();
      });
    }
    drawScale(scale, data, Math.min(200, AXIS_H + HEAD_H + data.sites.length * ROW_H));
  }

  function drawAll() {
    drawMaps();
    drawDetail(detail, data, model.get("selected") || [], width());
  }

  exports.addEventListener("click", (event) => {
    const button = /** @type {HTMLElement} */ (event.target).closest("button");
    if (button?.dataset.format === "csv") download("patching.csv", csvText(patchingTable(data)), "text/csv");
    else if (button?.dataset.format === "png") downloadCanvases("patching.png", [...maps.querySelectorAll("canvas"), scale]);
    else if (button?.dataset.format === "svg") download("patching.svg", heatmapSvg(data, shownResults(data, model.get("shown"))), "image/svg+xml");
  });

  drawAll();
  model.on("change:shown", drawMaps);
  model.on("change:selected", drawAll);
  const stopDrawing = keepDrawn(root, width, drawAll);
  el.classList.add("jcnb-ready");
  return () => {
    stopDrawing();
    model.off("change:shown", drawMaps);
    model.off("change:selected", drawAll);
  };
}

export default { render };
