"""The script-free HTML table saved with a notebook (GitHub, nbviewer, nbconvert).

Everything from user code is escaped; numbers are rounded like the text
table, so the HTML is deterministic and nbval can compare it.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np

from jaxcapture_nb._records import Record, flat_stats, number_text

_SPARK_W, _SPARK_H = 80, 18


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
    head = (
        "path",
        "name",
        "call",
        "shape",
        "dtype",
        "mean",
        "std",
        "min",
        "max",
        "zeros %",
        "NaN/Inf",
        "histogram",
    )
    rows = []
    for r in records:
        shape = "" if r.shape is None else "(" + ", ".join(str(d) for d in r.shape) + ")"
        lead = [html.escape(".".join(str(p) for p in r.path) or "(root)"), html.escape(r.name)]
        lead += [str(r.call_index), shape, html.escape(r.dtype or "")]
        s = r.summary
        if s is None or s.reason is not None:
            note = s.reason if s is not None else f"{type(r.value).__name__} (not an array)"
            tail = f'<td colspan="7">{html.escape(note)}</td>'
        else:
            st = flat_stats(s)
            bad = st["nan"] + st["posinf"] + st["neginf"]
            flag = f"{st['nan']}/{st['posinf'] + st['neginf']}" if bad else ""
            cells = [number_text(st[k]) for k in ("mean", "std", "min", "max")]
            cells += [f"{st['zero_pct']:.1f}", f'<b style="color:#c00">{flag}</b>' if flag else ""]
            cells.append(sparkline_svg(np.asarray(s.hist)))
            tail = "".join(f"<td>{c}</td>" for c in cells)
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in lead) + tail + "</tr>")
    header = "".join(f'<th style="text-align:left">{h}</th>' for h in head)
    return (
        '<table class="jcnb-static" style="font-family:monospace;font-size:12px;border-collapse:collapse">'
        f"<thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
