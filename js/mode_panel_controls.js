// ModePanel's cards: one per module class offering view options, and in
// each a switch or a text field per option, with its state ("True · set",
// "False · model") and a button clearing it. drawGroups builds them from
// `_groups`; showValues sets them to the values panel.model has. Also how a
// value is written in them and what a text field's text means. The entry's
// handlers find a control by its input or its clear button.

import { h } from "./common.js";
import { panelLayout } from "./mode_panel_layout.js";

/**
 * @typedef {{name: string, kind: string, annotation: string, doc: string,
 *   via: string, current: any, current_text: string}} Option
 * @typedef {{name: string, ref: string, paths: string[], options: Option[]}} Group
 * @typedef {Record<string, Record<string, any>>} Values
 * @typedef {{group: Group, option: Option, row: HTMLElement, input: HTMLInputElement,
 *   state: HTMLElement, clear: HTMLButtonElement}} Control
 */

const SHOWN_PATHS = 4;
const INT = /^[+-]?\d+$/;

/** A value as Python writes it, for the state labels. @param {any} v @returns {string} */
function pyText(v) {
  if (v === null || v === undefined) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  if (Array.isArray(v)) return `(${v.map(pyText).join(", ")}${v.length === 1 ? "," : ""})`;
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
function parseField(kind, text) {
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

/** @param {string} path */
const pathText = (path) => (path === "" ? "(root)" : path);

/**
 * One option's row: its name, its switch or text field, its state and its clear button.
 * @param {Group} group @param {Option} option @returns {Control}
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

  const input = /** @type {HTMLInputElement} */ (h("input"));
  input.dataset.class = group.name;
  input.dataset.option = option.name;
  input.setAttribute("aria-label", `${group.name} ${option.name}`);
  const control = h("div", "jcnb-modes-control");
  if (option.kind === "bool") {
    input.type = "checkbox";
    input.className = "jcnb-modes-switch";
    input.setAttribute("role", "switch");
  } else {
    input.type = "text";
    input.className = "jcnb-modes-text";
    input.placeholder = option.annotation || option.kind;
    input.spellcheck = false;
  }
  control.append(input, state, clear);
  row.append(head, control);
  if (option.doc) row.append(h("div", "jcnb-modes-doc", option.doc));
  return { group, option, row, input, state, clear };
}

/**
 * A module class's card: its name, where it is used, and a row per option.
 * @param {Group} group @param {Control[]} controls the card's controls are added to it
 */
function card(group, controls) {
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
  for (const option of group.options) {
    const control = optionRow(group, option);
    controls.push(control);
    box.append(control.row);
  }
  return box;
}

/**
 * Draws a card per module class, and the note when there is none or the
 * module is Linen's; the presets need a class to set.
 * @param {ReturnType<typeof panelLayout>} ui @param {Group[]} groups @param {string} linen the Linen note, or ""
 * @returns {Control[]} every option's control, card by card
 */
function drawGroups(ui, groups, linen) {
  /** @type {Control[]} */
  const controls = [];
  ui.cards.replaceChildren(...groups.map((group) => card(group, controls)));
  ui.note.textContent = linen || (groups.length ? "" : "No module of this model offers view options.");
  ui.note.hidden = ui.note.textContent === "";
  for (const action of ["train", "eval", "reset"]) ui.buttons[action].disabled = groups.length === 0;
  return controls;
}

/**
 * Sets every control to its value in `values`, or to the model's own value
 * where none is set there.
 * @param {Control[]} controls @param {Values} values
 */
function showValues(controls, values) {
  for (const { group, option, row, input, state, clear } of controls) {
    const chosen = values[group.name] || {};
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
    state.textContent = isSet ? `${pyText(value)} · set` : `${option.current_text} · model`;
    state.classList.toggle("jcnb-modes-set", isSet);
    row.classList.toggle("jcnb-modes-row-set", isSet);
    clear.hidden = !isSet;
  }
}

export { parseField, drawGroups, showValues };
