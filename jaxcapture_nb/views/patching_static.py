"""The script-free HTML heatmap a PatchingView leaves in a saved notebook.

One table per result: a row per site, a column per position, each cell
painted with the recovery's colour (the widget's diverging map: blue below
0, white at 0 for the corrupted run, red at 1 for the clean run) and
holding its value to two decimals, so hosts that strip styles still show
the numbers. Deterministic, so nbval can compare it.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

import numpy as np

from jaxcapture_nb.core.names import html_name
from jaxcapture_nb.stats.schema import number_text
from jaxcapture_nb.views.colour_maps import colour_at, ink_on

if TYPE_CHECKING:
    from jaxcapture_nb.interventions.result import PatchingResult


def colour_scale(results: list[PatchingResult]) -> float:
    """The recovery at either end of the colour map: at least 1, else the largest finite magnitude.

    Example:
      >>> from jaxcapture_nb.interventions.sweep import PatchingResult
      >>> colour_scale([PatchingResult(["a"], [0, 1], [[0.0, 3.0]], 2.0, 0.0, "exact")])
      1.5
    """
    values = np.concatenate([np.abs(r.recovery).ravel() for r in results])
    finite = values[np.isfinite(values)]
    return float(max(1.0, finite.max())) if finite.size else 1.0


def recovery_colour(recovery: float, scale: float) -> str:
    """The CSS colour of a recovery on the diverging map over ``[-scale, scale]``; grey when not a number.

    Example:
      >>> recovery_colour(0.0, 1.0), recovery_colour(1.0, 1.0), recovery_colour(float("nan"), 1.0)
      ('#f7f7f7', '#b2182b', '#9e9e9e')
    """
    return colour_at("diverging", (recovery / scale + 1) / 2)


def _table(result: PatchingResult, scale: float) -> str:
    columns = ["whole"] if result.positions is None else [str(p) for p in result.positions]
    if result.position_labels:
        columns = [f"{p} {label}" for p, label in zip(columns, result.position_labels, strict=True)]
    title = (
        f"{html.escape(result.method)} patching: {html.escape(result.recovery_text)} "
        f"(0 = corrupted {number_text(result.corrupted)}, "
        f"1 = clean {number_text(result.clean)})"
    )
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    rows = []
    for site, values in zip(result.sites, result.recovery, strict=True):
        cells = []
        for v in values:
            colour = recovery_colour(float(v), scale)
            text = "nan" if not np.isfinite(v) else f"{v:.2f}"
            cells.append(f'<td style="background:{colour};color:{ink_on(colour)}">{text}</td>')
        rows.append(f"<tr><th>{html_name(site)}</th>{''.join(cells)}</tr>")
    return (
        f'<table class="jcnb-patching-static"><caption>{title}</caption>'
        f"<tr><th>site</th>{head}</tr>{''.join(rows)}</table>"
    )


def patching_html(results: list[PatchingResult]) -> str:
    """The saved picture of a view of ``results``: a coloured table per result."""
    scale = colour_scale(results)
    style = (
        "<style>.jcnb-patching-static{font:12px monospace;border-collapse:collapse;margin-bottom:8px}"
        ".jcnb-patching-static caption{text-align:left;padding:2px 0}"
        ".jcnb-patching-static th,.jcnb-patching-static td{padding:1px 5px;text-align:right;white-space:nowrap}"
        ".jcnb-patching-static tr>th:first-child{text-align:left}</style>"
    )
    return style + "".join(_table(r, scale) for r in results)
