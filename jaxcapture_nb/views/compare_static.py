"""The script-free HTML of a mode comparison, saved with a notebook.

Per site: the name (escaped, see :func:`~jaxcapture_nb.core.names.html_name`), its shift, an inline SVG of the modes'
histograms overlaid on their shared range, and each mode's statistics side by
side under a header naming the mode; a site the same in all modes shows the
first mode's statistics and says so across the other modes' columns, as the
widget does; the comparison's note, when it has one, stands over the table.
Numbers are rounded like the text table and coordinates to one decimal, so
the HTML is deterministic. Styles are inline: a saved notebook
shows HTML without the widget's CSS.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

import numpy as np

from jaxcapture_nb.core.names import html_name, shown_name
from jaxcapture_nb.stats import schema
from jaxcapture_nb.stats.pooling import shares
from jaxcapture_nb.stats.schema import MODE_COLOURS, number_text, shift_note

if TYPE_CHECKING:  # the comparison is only read here: no import of the code that makes it
    from jaxcapture_nb.modes.comparison import Comparison, SiteComparison

_W, _H = 120, 28


def _note(noun: str) -> str:
    """The line over the table: what the shift and the histograms show."""
    return (
        f"{shift_note(noun)}; "
        f"histograms: share of each {noun}'s values per bin on the site's shared range, square-root scale"
    )


_CELL = "padding:1px 6px;text-align:right;white-space:nowrap"
_BAD = ";color:#c00;font-weight:bold;background:#fde8e8"
# A rule before each mode's columns keeps the groups apart.
_SEPARATOR = ";border-left:1px solid #ddd"


def _columns() -> list[tuple[int, str]]:
    """The statistics of each mode, as (index in the comparison's statistics, header)."""
    return [(k, schema.stat(key).header) for k, key in enumerate(schema.compare_columns())]


def mode_colour(index: int) -> str:
    """The colour of the mode at ``index`` (the colours repeat after seven modes).

    Example:
      >>> mode_colour(0), mode_colour(1), mode_colour(7)
      ('#3b75c4', '#c96a00', '#3b75c4')
    """
    return MODE_COLOURS[index % len(MODE_COLOURS)]


def overlay_svg(hists: np.ndarray) -> str:
    """The modes' histograms as step outlines with a light fill, overlaid on one scale.

    Each histogram is its share of the mode's values, on a square-root scale
    so a spike (Dropout's zeros) does not flatten the other bins. A mode with
    no values (it did not reach the site) gets no outline.

    Args:
      hists: int ``[modes, bins]`` counts on a shared range.

    Returns:
      An ``<svg>`` element with one ``<polyline>`` per mode that has values.

    Example:
      >>> svg = overlay_svg(np.array([[3, 1], [1, 3], [0, 0]]))
      >>> svg.count("<polyline"), 'stroke="#c96a00"' in svg, 'stroke="#3d8c35"' in svg
      (2, True, False)
    """
    share_of, totals = shares(hists)
    top = share_of.max() if share_of.size and share_of.max() > 0 else 1.0
    step = (_W - 1) / max(share_of.shape[1], 1)
    lines = []
    for m, share in enumerate(share_of):
        if totals[m, 0] <= 0:
            continue
        heights = (_H - 2) * np.sqrt(share / top)
        points = [f"0.5,{_H - 1}"]
        for i, height in enumerate(heights):
            y = _H - 1 - height
            points += [f"{0.5 + i * step:.1f},{y:.1f}", f"{0.5 + (i + 1) * step:.1f},{y:.1f}"]
        points.append(f"{_W - 0.5},{_H - 1}")
        colour = mode_colour(m)
        lines.append(
            f'<polyline points="{" ".join(points)}" fill="{colour}" fill-opacity="0.12" '
            f'stroke="{colour}" stroke-width="1"/>'
        )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" '
        f'viewBox="0 0 {_W} {_H}">{"".join(lines)}</svg>'
    )


def _shift_cell(site: SiteComparison, modes: list[str], noun: str) -> str:
    if np.isnan(site.shift):
        missing = [
            shown_name(label) for label, shape in zip(modes, site.shapes, strict=True) if shape is None
        ]
        why = f"missing in {', '.join(missing)}" if missing else f"without statistics in a {noun}"
        return f'<td style="{_CELL}" title="{html.escape(f"no shift: the site is {why}")}">&#8211;</td>'
    return f'<td style="{_CELL}">{html.escape(number_text(site.shift))}</td>'


def _mode_cells(site: SiteComparison, m: int, label: str, columns: list[tuple[int, str]]) -> list[str]:
    nan = schema.compare_columns().index("nan")
    cells = []
    for j, (k, _) in enumerate(columns):
        style = _CELL + (_SEPARATOR if j == 0 else "")
        if site.shapes[m] is None:
            title = html.escape(f"not reached in {shown_name(label)}")
            cells.append(f'<td style="{style};color:#999" title="{title}">&#8211;</td>')
            continue
        value = float(site.stats[m, k])
        bad = _BAD if k == nan and value > 0 else ""
        cells.append(f'<td style="{style}{bad}">{html.escape(number_text(value))}</td>')
    return cells


def _same_cell(modes: list[str], columns: list[tuple[int, str]], same_text: str) -> str:
    """The cell saying the modes after the first gave the site the first one's values."""
    others = ", ".join(shown_name(label) for label in modes[1:])
    title = html.escape(
        f"{same_text}: {others} gave this site the same values as {shown_name(modes[0])}, "
        "whose statistics the row shows"
    )
    return (
        f'<td colspan="{len(columns) * (len(modes) - 1)}" title="{title}" '
        f'style="padding:1px 6px;text-align:center;font-style:italic;color:#666{_SEPARATOR}">'
        f"{html.escape(same_text)}</td>"
    )


def _note_box(note: str) -> str:
    """The comparison's note (which call argument switches the model's mode), or nothing."""
    if not note:
        return ""
    return (
        '<div class="jcnb-compare-note" style="margin-bottom:4px;padding:2px 6px;'
        f'border-left:3px solid #e0a000;background:#fff8e1;color:#333">{html.escape(shown_name(note))}</div>'
    )


def comparison_html(comparison: Comparison) -> str:
    """A deterministic, script-free HTML table of a :class:`~jaxcapture_nb.Comparison`.

    Args:
      comparison: the result of :func:`~jaxcapture_nb.compare_modes` or
        :func:`~jaxcapture_nb.compare_runs`.

    Returns:
      A ``<div>`` with a legend of the modes' colours and the table.
    """
    esc = html.escape
    modes = list(comparison.modes)
    columns = _columns()
    nan = schema.compare_columns().index("nan")
    swatch = "display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:-1px;background:"
    # Mode colours mark swatches and rules, never text: orange on white reads at 2.5:1.
    legend = "".join(
        f'<span style="margin-right:14px;font-weight:bold">'
        f'<span style="{swatch}{mode_colour(m)}"></span>{html_name(label)}</span>'
        for m, label in enumerate(modes)
    )
    head = "padding:1px 6px;white-space:nowrap;border-bottom:1px solid #bbb"
    # A long label wraps within its columns rather than widening them (the legend has it on one line).
    groups = "".join(
        f'<th colspan="{len(columns)}" style="padding:1px 6px;'
        f'border-bottom:2px solid {mode_colour(m)}{_SEPARATOR}">'
        f'<div style="max-width:42ch;margin:0 auto;overflow-wrap:anywhere">{html_name(label)}</div></th>'
        for m, label in enumerate(modes)
    )
    names = "".join(
        f'<th style="{head};text-align:right{_SEPARATOR if j == 0 else ""}">{html.escape(name)}</th>'
        for _ in modes
        for j, (_, name) in enumerate(columns)
    )
    left = f"{head};text-align:left"
    rows = []
    for site in comparison.sites:
        name_style = "padding:1px 6px;white-space:nowrap"
        if np.nansum(site.stats[:, nan]) > 0:
            name_style += ";color:#c00;font-weight:bold"
        cells = [
            f'<td style="{name_style}">{html_name(site.label)}</td>',
            _shift_cell(site, modes, comparison.noun),
            f'<td style="padding:1px 6px">{overlay_svg(site.hists)}</td>',
        ]
        for m, label in enumerate(modes[:1] if site.same else modes):
            cells += _mode_cells(site, m, label, columns)
        if site.same:
            cells.append(_same_cell(modes, columns, comparison.same_text))
        rows.append('<tr style="border-bottom:1px solid #eee">' + "".join(cells) + "</tr>")
    if not comparison.sites:
        span = 3 + len(modes) * len(columns)
        rows.append(f'<tr><td colspan="{span}">(no site was recorded; check include=)</td></tr>')
    return (
        '<div class="jcnb-compare-static" style="font-family:monospace;font-size:12px">'
        f'<div style="margin-bottom:2px">{legend}</div>'
        f'<div style="color:#666;margin-bottom:4px">{esc(_note(comparison.noun))}</div>'
        f"{_note_box(comparison.note)}"
        '<table style="border-collapse:collapse">'
        f'<thead><tr><th rowspan="2" style="{left}">site</th><th rowspan="2" style="{left}">shift</th>'
        f'<th rowspan="2" style="{left}">histograms</th>{groups}</tr><tr>{names}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )
