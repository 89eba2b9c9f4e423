// ModePanel front end: one card per module class with a switch or a text
// field per view option, presets, a Compare button, the Flax code of the
// current view, an error box and the comparison Compare made. The browser
// only edits `_values` (and `_against`, what Compare compares with); the
// kernel checks them, builds the view, and answers with `_values` as the view
// is (also after refusing a change), `_code`, `_error` and a new `_revision`.
// The comparison is drawn by compare_draw.js from the `_compare_*` traits. Plain ES module, no build step. Every string
// from user code is set with textContent, never parsed as HTML.
//
// The panel is the elements of mode_panel_layout.js, the controls that
// mode_panel_controls.js draws into its cards, and a small state (those
// controls); only the handlers here change it or write to the model.

import { schemaOf, applyColours } from "./schema.js";
import { freshChoices, mountComparison } from "./compare_draw.js";
import { panelLayout, STATUS_TRAITS, drawStatus } from "./mode_panel_layout.js";
import { parseField, drawGroups, showValues } from "./mode_panel_controls.js";
/** @typedef {import("./compare_draw.js").Choices} Choices */
/** @typedef {import("./mode_panel_controls.js").Control} Control */
/** @typedef {import("./mode_panel_controls.js").Values} Values */

/**
 * What the reader left in each panel on this page, by the panel's id
 * (`_panel_id`): the comparison's choices and the control that had the focus.
 * The kernel sends a panel's output again whenever what a saved notebook
 * would show of it changes, and JupyterLab then draws it in a new view: that
 * view opens as the last one was left.
 * @type {Map<string, {comparison: Choices, focus: string}>}
 */
const left = new Map();

/** What the reader left in panel `id`. @param {string} id */
function leftIn(id) {
  let state = left.get(id);
  if (!state) left.set(id, (state = { comparison: freshChoices(), focus: "" }));
  return state;
}

/**
 * A selector finding a control again in a new view of the panel, "" for an
 * element that is none.
 * @param {Element} el
 */
function controlSelector(el) {
  const data = el instanceof HTMLElement ? el.dataset : {};
  const is = (/** @type {string} */ name, /** @type {string} */ v) => `[data-${name}=${CSS.escape(v)}]`;
  if (data.action) return is("action", data.action);
  if (data.class && data.option) return `${el.tagName.toLowerCase()}${is("class", data.class)}${is("option", data.option)}`;
  if (data.site) return `.jcnb-cmp-body${is("site", data.site)}`;
  const named = [...el.classList].find((c) => c.startsWith("jcnb-"));
  return named ? `.${named}` : "";
}

/** @param {{ model: any, el: HTMLElement }} ctx */
function render({ model, el }) {
  const ui = panelLayout();
  el.appendChild(ui.root);
  applyColours(el, schemaOf(model));
  const kept = leftIn(model.get("_panel_id") || "");
  const stopComparison = mountComparison(model, ui.drawing, "_compare", kept.comparison);

  const state = {
    /** Every option's control, as drawGroups made them from `_groups`. @type {Control[]} */
    controls: [],
  };

  /** @returns {Values} */
  const values = () => model.get("_values") || {};

  const refresh = () => showValues(state.controls, values());

  function build() {
    state.controls = drawGroups(ui, model.get("_groups") || [], model.get("_linen") || "");
    refresh();
  }

  const status = () => drawStatus(ui, model);

  /**
   * Sets one option (null clears it) and sends the new `_values`.
   * @param {string} cls
   * @param {string} option
   * @param {any} value
   */
  function choose(cls, option, value) {
    const before = values();
    if (JSON.stringify(before[cls]?.[option] ?? null) === JSON.stringify(value)) return;
    /** @type {Values} */
    const next = JSON.parse(JSON.stringify(before));
    next[cls] = { ...(next[cls] || {}), [option]: value };
    model.set("_values", next);
    model.save_changes();
    refresh();
  }

  /** The control whose input is `target`. @param {EventTarget | null} target */
  const controlOf = (target) => state.controls.find((c) => c.input === target);
  const onChange = (/** @type {Event} */ event) => {
    const control = controlOf(event.target);
    if (!control) return;
    const { group, option, input } = control;
    choose(group.name, option.name, option.kind === "bool" ? input.checked : parseField(option.kind, input.value));
  };
  const onClear = (/** @type {Event} */ event) => {
    const control = state.controls.find((c) => c.clear === event.target);
    if (control) choose(control.group.name, control.option.name, null);
  };
  const onKey = (/** @type {KeyboardEvent} */ event) => {
    const control = controlOf(event.target);
    // Enter ends the edit of a text field: its change sends the value.
    if (event.key === "Enter" && control && control.option.kind !== "bool") control.input.blur();
  };
  for (const [action, button] of Object.entries(ui.buttons)) button.addEventListener("click", () => model.send({ action }));
  ui.against.addEventListener("change", () => {
    model.set("_against", ui.against.value);
    model.save_changes();
  });
  ui.cards.addEventListener("change", onChange);
  ui.cards.addEventListener("click", onClear);
  ui.cards.addEventListener("keydown", onKey);
  ui.root.addEventListener("focusin", (event) => {
    if (event.target instanceof Element) kept.focus = controlSelector(event.target);
  });
  // Focus that moves elsewhere is the reader's doing; focus lost with the
  // view (drawn again in a new one) comes back below.
  ui.root.addEventListener("focusout", (event) => {
    if (event.relatedTarget instanceof Node && !ui.root.contains(event.relatedTarget)) kept.focus = "";
  });

  build();
  status();
  model.on("change:_groups", build);
  model.on("change:_linen", build);
  model.on("change:_values", refresh);
  for (const name of STATUS_TRAITS) model.on(`change:${name}`, status);
  ui.root.dataset.ready = "true";
  el.classList.add("jcnb-ready");
  // Once in the page, and only when nothing else has taken the focus since.
  requestAnimationFrame(() => {
    const free = !document.activeElement || document.activeElement === document.body;
    const control = kept.focus && free ? ui.root.querySelector(kept.focus) : null;
    if (control instanceof HTMLElement) control.focus({ preventScroll: true });
  });

  return () => {
    model.off("change:_groups", build);
    model.off("change:_linen", build);
    model.off("change:_values", refresh);
    for (const name of STATUS_TRAITS) model.off(`change:${name}`, status);
    stopComparison();
  };
}

export default { render };
