// PatchingView's numbers, read once from the widget's traits: each result's
// patched metric and recovery per site and position, and the readouts.

import { bytesOf } from "./common.js";

/**
 * @typedef {{ method: string, metric: string, clean: number, corrupted: number }} PatchMethod one entry of `_methods`
 * @typedef {PatchMethod & { effect: Float64Array, recovery: Float64Array }} PatchResult
 * @typedef {{ sites: string[], positions: string[], positionLabels: string[], results: PatchResult[], scale: number,
 *   labels: string[], readouts: Float64Array, ends: Float64Array }} PatchData
 */

/** The view's data, from its traits (see jaxcapture_nb/views/patching_view.py). @param {any} model @returns {PatchData} */
function patchingData(model) {
  /** @type {string[]} */ const sites = model.get("_sites") || [];
  /** @type {string[]} */ const positions = model.get("_positions") || [];
  const cells = sites.length * positions.length;
  const effects = new Float64Array(bytesOf(model.get("_effects")));
  /** @type {PatchMethod[]} */ const methods = model.get("_methods") || [];
  const results = methods.map((m, r) => {
    const effect = effects.subarray(r * cells, (r + 1) * cells);
    const span = m.clean - m.corrupted;
    const recovery = Float64Array.from(effect, (v) => (span ? (v - m.corrupted) / span : NaN));
    return { method: String(m.method), metric: String(m.metric), clean: Number(m.clean), corrupted: Number(m.corrupted), effect, recovery };
  });
  return {
    sites,
    positions,
    positionLabels: model.get("_position_labels") || [],
    results,
    // Both results share one colour scale (at least [-1, 1]), the saved picture's (colour_scale in Python).
    scale: Number(model.get("_scale")) || 1,
    labels: model.get("_readout_labels") || [],
    readouts: new Float64Array(bytesOf(model.get("_readouts"))),
    ends: new Float64Array(bytesOf(model.get("_readout_ends"))),
  };
}

/** The results the heatmap shows for `shown` ("exact", "attribution" or "both"). @param {PatchData} data @param {string} shown */
function shownResults(data, shown) {
  if (shown === "both") return data.results;
  const one = data.results.find((r) => r.method === shown);
  return one ? [one] : data.results.slice(0, 1);
}

/** The patched run's readout at a cell, or null without one. @param {PatchData} data @param {number} site @param {number} pos */
function readoutAt(data, site, pos) {
  const k = data.labels.length;
  if (!k || !data.readouts.length) return null;
  const at = (site * data.positions.length + pos) * k;
  return data.readouts.subarray(at, at + k);
}

export { patchingData, shownResults, readoutAt };
