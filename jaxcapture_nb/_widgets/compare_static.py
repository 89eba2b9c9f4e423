"""The script-free HTML of a mode comparison, saved with a notebook.

Per site: the name (escaped), its shift, each mode's statistics side by side
and an inline SVG of the modes' histograms overlaid on their shared range.
Numbers are rounded like the text table, so the HTML is deterministic.
"""

from __future__ import annotations

import html
from typing import Any

import numpy as np

from jaxcapture_nb._records import number_text

# One colour per mode, in order (shared with js/compare_view.js); colour-blind friendly.
MODE_COLOURS = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2")
_W, _H = 120, 28


def mode_colour(index: int) -> str:
    """The colour of the mode at ``index``."""
    return MODE_COLOURS[index % len(MODE_COLOURS)]


def overlay_svg(hists: np.ndarray) -> str:
    """Each mode's histogram as an outline, on one scale (each normalized to its total)."""
    hists = np.asarray(hists, np.float64)
    totals = hists.sum(axis=1, keepdims=True)
    shares = np.divide(hists, totals, out=np.zeros_like(hists), where=totals > 0)
    top = shares.max() if shares.size and shares.max() > 0 else 1.0
    step = _W / max(hists.shape[1], 1)
    paths = []
    for m, share in enumerate(shares):
        points = [f"0,{_H}"]
        for i, value in enumerate(share):
            y = _H - (_H - 1) * value / top
            points += [f"{i * step:.1f},{y:.1f}", f"{(i + 1) * step:.1f},{y:.1f}"]
        points.append(f"{_W},{_H}")
        paths.append(
            f'<polyline points="{" ".join(points)}" fill="none" stroke="{mode_colour(m)}" stroke-width="1.2"/>'
        )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" '
        f'viewBox="0 0 {_W} {_H}">{"".join(paths)}</svg>'
    )


def comparison_html(comparison: Any) -> str:
    """A deterministic HTML table of a :class:`~jaxcapture_nb.Comparison`."""
    esc = html.escape
    legend = " ".join(
        f'<span style="color:{mode_colour(m)};font-weight:bold">&#9632; {esc(label)}</span>'
        for m, label in enumerate(comparison.modes)
    )
    header = "<th>site</th><th>shift</th>" + "".join(
        f'<th style="color:{mode_colour(m)}">{column} [{esc(label)}]</th>'
        for m, label in enumerate(comparison.modes)
        for column in ("mean", "std", "zeros%", "nan")
    )
    rows = []
    for site in comparison.sites:
        cells = [f"<td>{esc(site.site)}</td>", f"<td>{esc(number_text(site.shift))}</td>"]
        for m in range(len(comparison.modes)):
            mean, std, _, _, zeros, nans = site.stats[m]
            nan_style = ' style="color:#c00;font-weight:bold"' if nans > 0 else ""
            cells += [
                f"<td>{esc(number_text(mean))}</td>",
                f"<td>{esc(number_text(std))}</td>",
                f"<td>{esc(number_text(zeros))}</td>",
                f"<td{nan_style}>{esc(number_text(nans))}</td>",
            ]
        cells.append(f"<td>{overlay_svg(site.hists)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    note = "shift: earth mover's distance to the first mode's histogram, in pooled standard deviations"
    return (
        '<div class="jcnb-compare-static" style="font-family:monospace;font-size:12px">'
        f"<div>{legend}</div><div>{esc(note)}</div>"
        '<table style="border-collapse:collapse">'
        f"<thead><tr>{header}<th>histograms</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )
