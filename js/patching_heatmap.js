// One heatmap of a patching result: a row per site (or per head, grouped by
// site, where the sweep patched heads one at a time), a column per position,
// each cell the recovery's colour on the diverging map (0: the corrupted
// run, 1: the clean run), with the site names at the left and the
// positions (or their labels, the tokens) over the top, under the axes'
// titles. Cells grow with the width up to a size that reads well, and
// never shrink below one that can be pointed at: a wider map scrolls.

import { sized, fmt } from "./common.js";
import { themeOf, rgbText, colourAt, drawColourBar, strokeSelection, gridCell } from "./draw.js";
/** @typedef {import("./patching_data.js").PatchData} PatchData */
/** @typedef {import("./patching_data.js").PatchResult} PatchResult */

const ROW_H = 22;
const AXIS_H = 16; // the axes' titles
const HEAD_H = 18; // the positions' labels
const MIN_CELL = 16;
const MAX_CELL = 56;
const MAX_LABEL = 260;

/**
 * Where the cells go in a canvas of width `w` for `data`, given the text widths of the site names.
 * @param {PatchData} data @param {number} w @param {number} labelWidth
 */
function heatLayout(data, w, labelWidth) {
  const left = Math.min(MAX_LABEL, labelWidth) + 10;
  const cols = Math.max(1, data.positions.length);
  const cellW = Math.max(MIN_CELL, Math.min(MAX_CELL, Math.floor((w - left - 4) / cols)));
  const top = AXIS_H + HEAD_H;
  return { left, top, cellW, cellH: ROW_H, w: Math.max(left + cols * cellW + 4, left + 80), h: top + data.sites.length * ROW_H + 2 };
}

/** A text cut with an ellipsis to fit `width`. @param {CanvasRenderingContext2D} ctx @param {string} text @param {number} width */
function fitted(ctx, text, width) {
  if (ctx.measureText(text).width <= width) return text;
  let n = text.length;
  while (n > 1 && ctx.measureText(`…${text.slice(text.length - n)}`).width > width) n--;
  return `…${text.slice(text.length - n)}`; // the end of a site name says most
}

const HEAD = /^(.*)\[head (\d+)\]$/;

/**
 * A sweep's rows by site where it patched heads one at a time (`layers.3.attn[head 5]`): each
 * group's site and its first and last row; null where no row is a head.
 * @param {string[]} sites @returns {{ site: string, first: number, last: number }[] | null}
 */
function rowGroups(sites) {
  if (!sites.some((s) => HEAD.test(s))) return null;
  /** @type {{ site: string, first: number, last: number }[]} */ const groups = [];
  sites.forEach((name, row) => {
    const site = name.match(HEAD)?.[1] ?? name;
    const last = groups[groups.length - 1];
    if (last && last.site === site) last.last = row;
    else groups.push({ site, first: row, last: row });
  });
  return groups;
}

/** A row's label: "head 5" under its site's group, else the site's name. @param {string} name @param {boolean} grouped */
function rowLabel(name, grouped) {
  const head = grouped ? name.match(HEAD) : null;
  return head ? `head ${head[2]}` : name;
}

/**
 * Draws `result` into `canvas`, marks the canvas with its layout and returns it.
 * @param {HTMLCanvasElement} canvas @param {PatchData} data @param {PatchResult} result
 * @param {number} w @param {number[]} selected [site, position] or []
 */
function drawHeatmap(canvas, data, result, w, selected) {
  const theme = themeOf(canvas);
  const probe = /** @type {CanvasRenderingContext2D} */ (canvas.getContext("2d"));
  probe.font = `11px ${theme.font}`;
  const groups = rowGroups(data.sites);
  const labels = data.sites.map((s) => rowLabel(s, groups !== null));
  const rowWidth = Math.max(30, ...labels.map((s) => probe.measureText(s).width));
  // Grouped rows: the site's name in a column of its own, left of its heads.
  const groupWidth = groups ? Math.min(MAX_LABEL - rowWidth, Math.max(...groups.map((g) => probe.measureText(g.site).width)) + 12) : 0;
  const box = heatLayout(data, w, groupWidth + rowWidth);
  const ctx = sized(canvas, box.w, box.h);
  ctx.font = `11px ${theme.font}`;
  ctx.textBaseline = "middle";
  const P = data.positions.length;
  // The axes' titles: sites down the left, positions (their labels) across the top.
  ctx.fillStyle = theme.fg2;
  ctx.textAlign = "right";
  ctx.fillText(groups ? "site, head" : "site", box.left - 6, AXIS_H + HEAD_H / 2);
  ctx.textAlign = "left";
  const whole = P === 1 && data.positions[0] === "whole";
  ctx.fillText(whole ? "patched whole" : data.positionLabels.length ? "position: token" : "position", box.left, AXIS_H / 2);
  // Positions over the top: as many labels as fit without touching.
  ctx.textAlign = "center";
  ctx.fillStyle = theme.fg;
  const heads = data.positions.map((p, k) => positionName(data, k));
  const widest = Math.max(...heads.map((text) => ctx.measureText(text).width));
  const every = Math.max(1, Math.ceil((widest + 6) / box.cellW));
  for (let p = 0; p < P; p += every) ctx.fillText(fitted(ctx, heads[p], every * box.cellW - 4), box.left + (p + 0.5) * box.cellW, AXIS_H + HEAD_H / 2);
  for (let s = 0; s < data.sites.length; s++) {
    const y = box.top + s * box.cellH;
    ctx.fillStyle = theme.fg;
    ctx.textAlign = "right";
    ctx.fillText(fitted(ctx, labels[s], box.left - 10 - groupWidth), box.left - 6, y + box.cellH / 2);
    for (let p = 0; p < P; p++) {
      const v = result.recovery[s * P + p];
      ctx.fillStyle = recoveryColour(v, data.scale, theme.grid);
      ctx.fillRect(box.left + p * box.cellW, y, box.cellW - (box.cellW > 8 ? 1 : 0), box.cellH - 1);
    }
  }
  for (const group of groups ?? []) {
    const [y0, y1] = [box.top + group.first * box.cellH, box.top + (group.last + 1) * box.cellH];
    ctx.fillStyle = theme.fg;
    ctx.textAlign = "left";
    ctx.fillText(fitted(ctx, group.site, groupWidth - 12), 2, (y0 + y1) / 2);
    if (group.first > 0) {
      // A rule between sites, from the group's name to the last column.
      ctx.fillStyle = theme.fg2;
      ctx.fillRect(0, y0 - 1, box.left + P * box.cellW, 1);
    }
  }
  if (selected.length === 2) strokeSelection(ctx, box.left + selected[1] * box.cellW, box.top + selected[0] * box.cellH, box.cellW, box.cellH);
  Object.assign(canvas.dataset, {
    drawn: "1",
    method: result.method,
    groups: String(groups?.length ?? 0),
    left: String(box.left),
    top: String(box.top),
    cellW: String(box.cellW),
    cellH: String(box.cellH),
  });
  return box;
}

/** A position's name over its column: its label (the token) where the sweep was given labels. @param {PatchData} data @param {number} p */
function positionName(data, p) {
  return data.positionLabels[p] ?? data.positions[p];
}

/**
 * The [site, position] under (x, y), in CSS pixels of a canvas drawn by drawHeatmap, or null.
 * @param {PatchData} data @param {{left: number, top: number, cellW: number, cellH: number}} box @param {number} x @param {number} y
 */
function cellAt(data, box, x, y) {
  return gridCell(box, data.sites.length, data.positions.length, x, y);
}

/** A recovery's colour on the diverging map over [-scale, scale]; the grid's colour when not a number. @param {number} v @param {number} scale @param {string} none */
function recoveryColour(v, scale, none) {
  return Number.isFinite(v) ? rgbText(colourAt("diverging", (v / scale + 1) / 2)) : none;
}

/**
 * The colour bar of the shared scale, labelled at its ends and middle.
 * @param {HTMLCanvasElement} canvas @param {PatchData} data @param {number} hgt
 */
function drawScale(canvas, data, hgt) {
  const theme = themeOf(canvas);
  hgt = Math.max(90, hgt); // room for its three labels, however few sites
  const ctx = sized(canvas, 64, hgt);
  drawColourBar(ctx, { x: 2, y: 6, w: 12, h: Math.max(20, hgt - 12) }, "diverging", -data.scale, data.scale, theme);
  canvas.dataset.drawn = "1";
}

/** Text for SVG, its markup escaped. @param {string} text */
const svgText = (text) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/**
 * The heatmaps of `results` side by side as one SVG document: each cell a rectangle in the
 * recovery's colour holding its value in a tooltip, with the site names, the positions (or their
 * labels) and each result's method. Drawn from the numbers, so it scales without blur.
 * @param {PatchData} data @param {PatchResult[]} results
 */
function heatmapSvg(data, results) {
  const cell = { w: 40, h: ROW_H };
  const left = 12 + 7 * Math.max(4, ...data.sites.map((s) => s.length));
  const top = AXIS_H + HEAD_H + 16;
  const P = data.positions.length;
  const width = left + P * cell.w + 24;
  const parts = [];
  results.forEach((result, r) => {
    const x0 = r * width;
    parts.push(`<text x="${x0 + left}" y="12" font-weight="bold">${svgText(result.method)} patching: recovery of ${svgText(result.metric)}</text>`);
    data.positions.forEach((_, p) => {
      parts.push(`<text x="${x0 + left + (p + 0.5) * cell.w}" y="${top - 6}" text-anchor="middle">${svgText(positionName(data, p))}</text>`);
    });
    data.sites.forEach((site, s) => {
      const y = top + s * cell.h;
      parts.push(`<text x="${x0 + left - 6}" y="${y + cell.h / 2 + 4}" text-anchor="end">${svgText(site)}</text>`);
      for (let p = 0; p < P; p++) {
        const v = result.recovery[s * P + p];
        const fill = recoveryColour(v, data.scale, "#9e9e9e");
        parts.push(
          `<rect class="cell" x="${x0 + left + p * cell.w}" y="${y}" width="${cell.w - 1}" height="${cell.h - 1}" fill="${fill}">` +
            `<title>${svgText(site)}, position ${svgText(positionName(data, p))}: recovery ${v}, metric ${result.effect[s * P + p]}</title></rect>`,
        );
      }
    });
  });
  const height = top + data.sites.length * cell.h + 24;
  const caption = `recovery: 0 = corrupted run, 1 = clean run; blue -${fmt(data.scale)}, white 0, red ${fmt(data.scale)}`;
  parts.push(`<text x="${left}" y="${height - 6}" fill="#595959">${svgText(caption)}</text>`);
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width * results.length}" height="${height}" font-family="sans-serif" font-size="11">` +
    `<rect width="100%" height="100%" fill="#fff"/>${parts.join("")}</svg>`
  );
}

export { drawHeatmap, cellAt, drawScale, positionName, rowGroups, heatmapSvg, ROW_H, AXIS_H, HEAD_H };
