// CompareView front end: one mode comparison, drawn by compare_draw.js from
// the widget's own traits. Plain ES module, no build step.

import { schemaOf, applyColours } from "./schema.js";
import { mountComparison } from "./compare_draw.js";

/** @param {{model: any, el: HTMLElement}} ctx */
function render({ model, el }) {
  applyColours(el, schemaOf(model));
  const stop = mountComparison(model, el, "");
  el.classList.add("jcnb-ready");
  return stop;
}

export default { render };
