// ModePanel front end: one card per module class with a switch or a text
// field per view option, presets, a Compare button, the Flax code of the
// current view, an error box and the comparison Compare made. The browser
// only edits `_values` (and `_against`, what Compare compares with); the
// kernel checks them, builds the view, and answers with `_values` as the view
// is (also after refusing a change), `_code`, `_error` and a new `_revision`.
// The comparison is drawn by compare_draw.js, joined in front of this file,
// from the `_compare_*` traits. Plain ES module, no build step. Every string
// from user code is set with textContent, never parsed as HTML.

/**
 * @typedef {{name: string, kind: string, annotation: string, doc: string,
 *   via: string, current: any, current_text: string}} Option
 * @typedef {{name: string, ref: string, paths: string[], options: Option[]}} Group
 * @typedef {Record<string, Record<string, any>>} Values
 */

const SHOWN_PATHS = 4;
const INT = /^[+-]?\d+$/;

/** A value as Python writes it, for the state labels. @param {any} v */
function py(v) {
  if (v === null || v === undefined) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  if (Array.isArray(v)) return `(${v.map(py).join(", ")}${v.length === 1 ? "," : ""})`;
  if (typeof v === "string") return JSON.stringify(v);
  return String(v);
}

/** What a text field shows for a value. @param {any} v */
function fieldText(v) {
  if (v === null || v === undefined) return "";
  if (Array.isArray(v)) return v.join(",");
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

/**
 * What a text field's text means. The kernel checks every value, so text that
 * does not parse goes as it is and comes back as a message in the error box.
 * @param {string} kind
 * @param {string} text
 */
function parse(kind, text) {
  const s = text.trim();
  if (s === "") return null;
  if (kind === "str") return text;
  if (kind === "int") return INT.test(s) ? Number(s) : s;
  if (kind === "float") return Number.isFinite(Number(s)) ? Number(s) : s;
  if (kind === "shape") {
    // "2" is an int; "2,3", "(2, 3)" and "[2]" are tuples.
    const parts = s.replace(/^[([]\s*|\s*[)\]]$/g, "").split(",").map((p) => p.trim());
    if (parts.at(-1) === "" && parts.length > 1) parts.pop();
    if (!parts.every((p) => INT.test(p))) return s;
    return parts.length === 1 && s === parts[0] ? Number(s) : parts.map(Number);
  }
  if (kind === "any") {
    try {
      return JSON.parse(s);
    } catch {
      return s;
    }
  }
  return text;
}

/** Traits the status line, code box, comparison note and its visibility are drawn from. */
const STATUS_TRAITS = ["_busy", "_can_compare", "_against", "_error", "_code", "_revision", "_compared", "_stale", "_compare_modes"];

/** What the Compare button says it compares, by the `_against` choice ("" for the user's function). */
const COMPARE_TIPS = {
  model: "Compare the current view with the model as it is",
  presets: "Compare the current view with the train and eval presets",
  "": "Run your compare function on the current view",
};

/** @param {string} path */
const pathText = (path) => (path === "" ? "(root)" : path);

/** @param {{ model: any, el: HTMLElement }} ctx */
function render({ model, el }) {
  const root = h("div", "jcnb-modes jcnb-themed");
  const toolbar = h("div", "jcnb-modes-toolbar");
  /** @type {Record<string, HTMLButtonElement>} */
  const buttons = {};
  for (const [action, label, tip] of [
    ["train", "Train", "What Module.train() sets: deterministic=False, use_running_average=False"],
    ["eval", "Eval", "What Module.eval() sets: deterministic=True, use_running_average=True"],
    ["reset", "Reset", "Clear every value set here: the model's own modes"],
    ["compare", "Compare", ""], // its tip says what it compares: see status()
  ]) {
    const button = /** @type {HTMLButtonElement} */ (h("button", "jcnb-modes-action", label));
    button.type = "button";
    button.dataset.action = action;
    button.title = tip;
    button.addEventListener("click", () => model.send({ action }));
    buttons[action] = button;
  }
  buttons.compare.classList.add("jcnb-modes-compare");
  const against = /** @type {HTMLSelectElement} */ (h("select", "jcnb-modes-against"));
  against.setAttribute("aria-label", "compare the current view with");
  for (const [value, label] of [
    ["model", "with the model as it is"],
    ["presets", "with the train and eval presets"],
  ]) {
    const option = /** @type {HTMLOptionElement} */ (h("option", "", label));
    option.value = value;
    against.appendChild(option);
  }
  against.addEventListener("change", () => {
    model.set("_against", against.value);
    model.save_changes();
  });
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
  el.appendChild(root);
  const stopComparison = mountComparison(model, drawing, "_compare");

  /** Each control's refresh from `_values`. @type {Array<(values: Values) => void>} */
  let updaters = [];

  /** @returns {Values} */
  const values = () => model.get("_values") || {};

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

  /**
   * @param {Group} group
   * @param {Option} option
   */
  function optionRow(group, option) {
    const row = h("div", "jcnb-modes-row");
    if (option.doc) row.title = option.doc;
    const name = h("span", "jcnb-modes-name", option.name);
    const head = h("div", "jcnb-modes-head");
    head.append(name);
    if (option.via === "attribute") {
      const tag = h("span", "jcnb-modes-tag", "attribute");
      tag.title = "a plain attribute, set with nnx.with_attributes";
      head.append(tag);
    }
    const state = h("span", "jcnb-modes-state");
    const clear = /** @type {HTMLButtonElement} */ (h("button", "jcnb-modes-clear", "×"));
    clear.type = "button";
    clear.title = "Back to the model's own value";
    clear.dataset.class = group.name;
    clear.dataset.option = option.name;
    clear.addEventListener("click", () => choose(group.name, option.name, null));

    const input = /** @type {HTMLInputElement} */ (h("input"));
    input.dataset.class = group.name;
    input.dataset.option = option.name;
    input.setAttribute("aria-label", `${group.name} ${option.name}`);
    const control = h("div", "jcnb-modes-control");
    if (option.kind === "bool") {
      input.type = "checkbox";
      input.className = "jcnb-modes-switch";
      input.setAttribute("role", "switch");
      input.addEventListener("change", () => choose(group.name, option.name, input.checked));
    } else {
      input.type = "text";
      input.className = "jcnb-modes-text";
      input.placeholder = option.annotation || option.kind;
      input.spellcheck = false;
      input.addEventListener("change", () => choose(group.name, option.name, parse(option.kind, input.value)));
      input.addEventListener("keydown", (event) => {
        if (event.key === "Enter") input.blur();
      });
    }
    control.append(input, state, clear);
    row.append(head, control);
    if (option.doc) row.append(h("div", "jcnb-modes-doc", option.doc));

    updaters.push((vals) => {
      const chosen = vals[group.name] || {};
      const isSet = option.name in chosen && chosen[option.name] !== null;
      const value = isSet ? chosen[option.name] : option.current;
      if (option.kind === "bool") {
        // Unset with no value on the model (e.g. attention's deterministic,
        // which then comes from the call): neither on nor off.
        input.indeterminate = value === null || value === undefined;
        input.checked = value === true;
        input.dataset.state = input.indeterminate ? "unset" : value ? "on" : "off";
      } else if (document.activeElement !== input || isSet) {
        input.value = isSet ? fieldText(value) : "";
      }
      state.textContent = isSet ? `${py(value)} · set` : `${option.current_text} · model`;
      state.classList.toggle("jcnb-modes-set", isSet);
      row.classList.toggle("jcnb-modes-row-set", isSet);
      clear.hidden = !isSet;
    });
    return row;
  }

  /** @param {Group} group */
  function card(group) {
    const box = h("div", "jcnb-modes-card");
    box.dataset.class = group.name;
    const title = h("div", "jcnb-modes-title", group.name);
    title.title = group.ref;
    const count = group.paths.length;
    const shown = group.paths.slice(0, SHOWN_PATHS).map(pathText).join(", ");
    const more = count > SHOWN_PATHS ? ` and ${count - SHOWN_PATHS} more` : "";
    const where = h("div", "jcnb-modes-paths", `${count} module${count === 1 ? "" : "s"}: ${shown}${more}`);
    where.title = group.paths.map(pathText).join("\n");
    box.append(title, where);
    for (const option of group.options) box.append(optionRow(group, option));
    return box;
  }

  function build() {
    updaters = [];
    /** @type {Group[]} */
    const groups = model.get("_groups") || [];
    const linen = model.get("_linen") || "";
    cards.replaceChildren(...groups.map(card));
    note.textContent = linen || (groups.length ? "" : "No module of this model offers view options.");
    note.hidden = note.textContent === "";
    for (const action of ["train", "eval", "reset"]) buttons[action].disabled = groups.length === 0;
    refresh();
  }

  function refresh() {
    const vals = values();
    for (const update of updaters) update(vals);
  }

  function status() {
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

  build();
  status();
  model.on("change:_groups", build);
  model.on("change:_linen", build);
  model.on("change:_values", refresh);
  for (const name of STATUS_TRAITS) model.on(`change:${name}`, status);
  root.dataset.ready = "true";
  el.classList.add("jcnb-ready");

  return () => {
    model.off("change:_groups", build);
    model.off("change:_linen", build);
    model.off("change:_values", refresh);
    for (const name of STATUS_TRAITS) model.off(`change:${name}`, status);
    stopComparison();
  };
}

export default { render };
