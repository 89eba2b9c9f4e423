// Names from user code (sow names, module attributes, mode labels) as the
// views show them. A newline in a name would break its row, NUL shows raw, and
// a right-to-left override (U+202E) reorders the text after it, so these
// characters are written as the escapes Python's repr uses, as the kernel's
// text views write them (jaxcapture_nb/core/names.py); and the element showing a
// name gets dir="auto", which isolates it (unicode-bidi: isolate), so
// right-to-left letters in it cannot move the text around it.

// C0 and C1 controls, the line and paragraph separators, and the bidi marks,
// embeddings, overrides and isolates.
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
/** @type {Record<string, string>} */
const NAMED = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/** `text` with its control characters written as visible escapes: "a\nb" reads `a\nb`. @param {string} text */
function shownName(text) {
  return String(text).replace(CONTROLS, (c) => {
    const code = c.charCodeAt(0);
    const hex = code.toString(16);
    return NAMED[c] || (code < 0x100 ? `\\x${hex.padStart(2, "0")}` : `\\u${hex.padStart(4, "0")}`);
  });
}

/** "1 step", "2 steps": a count and its noun, plural unless the count is one. @param {number} n @param {string} noun */
function counted(n, noun) {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

/**
 * Shows a name as the text of `el`, escaped (see shownName) and isolated.
 * @template {HTMLElement} E @param {E} el @param {string} text @returns {E}
 */
function setName(el, text) {
  el.textContent = shownName(text);
  el.dir = "auto";
  return el;
}

export { shownName, setName, counted };
