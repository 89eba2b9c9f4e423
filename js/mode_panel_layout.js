// ModePanel's page: the toolbar (presets, Compare and what it compares
// with), the note, the cards, the error box, the Flax code of panel.model and
// the place of the comparison Compare made, empty; drawStatus fills them with
// what the kernel says. The cards are mode_panel_controls.js's.

import { h } from "./common.js";

/** The toolbar's buttons: the action each sends to the kernel, its label and its tip. */
const ACTIONS = [
  ["train", "Train", "What Module.train() sets: deterministic=False, use_running_average=False"],
  ["eval", "Eval", "What Module.eval() sets: deterministic=True, use_running_average=True"],
  ["reset", "Reset", "Clear every value set here: the model's own modes"],
  ["compare", "Compare", ""], // its tip says what it compares: see drawStatus
];

/** What Compare can put the current view against, when the panel has inputs (`_against`). */
const AGAINST_CHOICES = [
  ["model", "with the model as it is"],
  ["presets", "with the train and eval presets"],
];

/** Traits the status line, code box, comparison note and its visibility are drawn from. */
const STATUS_TRAITS = ["_busy", "_can_compare", "_against", "_error", "_code", "_revision", "_compared", "_stale", "_compare_modes"];

/** What the Compare button says it compares, by the `_against` choice ("" for the user's function). */
const COMPARE_TIPS = {
  model: "Compare the current view with the model as it is",
  presets: "Compare the current view with the train and eval presets",
  "": "Run your compare function on the current view",
};

/** The panel's elements, empty, under its root. */
function panelLayout() {
  const root = h("div", "jcnb-modes jcnb-themed");
  const toolbar = h("div", "jcnb-modes-toolbar");
  /** @type {Record<string, HTMLButtonElement>} */
  const buttons = {};
  for (const [action, label, tip] of ACTIONS) {
    const button = /** @type {HTMLButtonElement} */ (h("button", "jcnb-modes-action", label));
    button.type = "button";
    button.dataset.action = action;
    button.title = tip;
    buttons[action] = button;
  }
  buttons.compare.classList.add("jcnb-modes-compare");
  const against = /** @type {HTMLSelectElement} */ (h("select", "jcnb-modes-against"));
  against.setAttribute("aria-label", "compare the current view with");
  for (const [value, label] of AGAINST_CHOICES) {
    const option = /** @type {HTMLOptionElement} */ (h("option", "", label));
    option.value = value;
    against.appendChild(option);
  }
  toolbar.append(buttons.train, buttons.eval, buttons.reset, h("span", "jcnb-modes-gap"), buttons.compare, against);

  const note = h("div", "jcnb-modes-note");
  const cards = h("div", "jcnb-modes-cards");
  const codeBox = h("div", "jcnb-modes-code-box");
  const code = h("pre", "jcnb-modes-code");
  codeBox.append(h("div", "jcnb-modes-label", "panel.model, in Flax:"), code);
  const error = h("div", "jcnb-modes-error");
  error.setAttribute("role", "alert");
  // The comparison Compare made: what it compares, whether the switches
  // moved since, and the comparison itself.
  const comparison = h("div", "jcnb-modes-comparison");
  const compared = h("div", "jcnb-modes-compared");
  const drawing = h("div", "jcnb-modes-drawing");
  comparison.append(compared, drawing);
  root.append(toolbar, note, cards, error, codeBox, comparison);
  return { root, buttons, against, note, cards, codeBox, code, error, comparison, compared, drawing };
}

/**
 * Shows what the kernel last said: whether it is comparing, what Compare
 * compares, the error, the code of panel.model and whether the comparison
 * shown is stale.
 * @param {ReturnType<typeof panelLayout>} ui @param {any} model
 */
function drawStatus(ui, model) {
  const { root, buttons, against, error, code, codeBox, comparison, compared, drawing } = ui;
  const busy = Boolean(model.get("_busy"));
  root.dataset.busy = String(busy);
  buttons.compare.disabled = busy || !model.get("_can_compare");
  buttons.compare.textContent = busy ? "Comparing…" : "Compare";
  const choice = model.get("_against") || "";
  buttons.compare.title = model.get("_can_compare")
    ? COMPARE_TIPS[/** @type {keyof typeof COMPARE_TIPS} */ (choice)] || COMPARE_TIPS[""]
    : "Give the inputs to compare on: mode_panel(model, inputs=(x,))";
  against.hidden = choice === "";
  against.value = choice || "model";
  const message = model.get("_error") || "";
  error.textContent = message;
  error.hidden = message === "";
  code.textContent = model.get("_code") || "";
  codeBox.hidden = code.textContent === "";
  const what = model.get("_compared") || "";
  const stale = Boolean(what) && Boolean(model.get("_stale"));
  compared.textContent = stale
    ? `Stale: the switches or the Compare menu changed since this comparison (${what}). Press Compare again.`
    : `Compared: ${what}.`;
  comparison.hidden = !what;
  drawing.hidden = (model.get("_compare_modes") || []).length === 0;
  compared.classList.toggle("jcnb-modes-stale", stale);
  comparison.dataset.stale = String(stale);
  root.dataset.stale = String(stale);
  root.dataset.revision = String(model.get("_revision"));
}

export { panelLayout, STATUS_TRAITS, drawStatus };
