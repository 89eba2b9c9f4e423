"""The script-free HTML table saved with a notebook (GitHub, nbviewer, nbconvert).

Everything from user code is escaped; numbers are rounded like the text
table, so the HTML is deterministic and nbval can compare it.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np

from jaxcapture_nb._records import COLUMNS, Record, row_cells

_SPARK_W, _SPARK_H = 80, 18


def with_fallback(bundle: tuple[dict, dict] | None, text: str, html_text: str) -> tuple[dict, dict] | None:
    """A widget's mime bundle, carrying what a notebook shows without a kernel."""
    if bundle is None:
        return None
    data, metadata = bundle
    data["text/plain"] = text
    data["text/html"] = html_text
    return data, metadata


def sparkline_svg(hist: np.ndarray) -> str:
    """An inline SVG bar chart of a histogram (no script, no external file)."""
    hist = np.asarray(hist, np.float64).reshape(-1, hist.shape[-1]).sum(axis=0)
    top = hist.max() if hist.size and hist.max() > 0 else 1.0
    width = _SPARK_W / max(len(hist), 1)
    bars = "".join(
        f'<rect x="{i * width:.2f}" y="{_SPARK_H - h:.2f}" width="{width:.2f}" height="{h:.2f}"/>'
        for i, h in ((i, _SPARK_H * c / top) for i, c in enumerate(hist))
        if h > 0
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_SPARK_W}" height="{_SPARK_H}" '
        f'viewBox="0 0 {_SPARK_W} {_SPARK_H}" fill="#4c78a8">{bars}</svg>'
    )


def static_html(records: Sequence[Record]) -> str:
    """A deterministic HTML table of the records, with sparkline histograms."""
    rows = []
    for record in records:
        cells, note = row_cells(record)
        html_cells = [f"<td>{html.escape(c)}</td>" for c in cells]
        if note is not None:
            html_cells.append(f'<td colspan="{len(COLUMNS) - len(cells) + 1}">{html.escape(note)}</td>')
        else:
            if cells[-1] != "-":  # NaN/Inf present
                html_cells[-1] = f'<td style="color:#c00;font-weight:bold">{html.escape(cells[-1])}</td>'
            html_cells.append(f"<td>{sparkline_svg(np.asarray(record.summary.hist))}</td>")
        rows.append("<tr>" + "".join(html_cells) + "</tr>")
    header = "".join(f'<th style="text-align:left">{h}</th>' for h in (*COLUMNS, "histogram"))
    return (
        '<table class="jcnb-static" style="font-family:monospace;font-size:12px;border-collapse:collapse">'
        f"<thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
