"""The script-free HTML table saved with a notebook (GitHub, nbviewer, nbconvert).

A site whose values hold a fill (masked attention logits, see
:mod:`~jaxcapture_nb.views.fills`) shows its statistics and sparkline
without it, as the widget's row does, and a "fill excluded" column, present
only when a site has one, names the fill and how many values it holds.

Everything from user code is escaped, and names are isolated in ``<bdi>``
with their control characters spelled out (see :mod:`jaxcapture_nb.core.names`);
numbers are rounded like the text table, so the HTML is deterministic and
nbval can compare it.

A capture can have thousands of rows, and the table is saved in the
notebook file, so each row is kept small: one ``<path>`` with integer,
run-merged coordinates per sparkline, and the shared styles in one
``<style>`` block rather than on every cell. Hosts that strip styles
(GitHub drops ``<style>`` blocks and ``style`` attributes) still get a plain
table: the histograms' colour is an SVG attribute, and NaN/Inf counts are
``<b>``.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

import numpy as np

from jaxcapture_nb.core.names import html_name
from jaxcapture_nb.jupyter.server_extension import saved_view_metadata
from jaxcapture_nb.stats import pooling, schema
from jaxcapture_nb.stats.records import HEAD_COLUMNS, Record, flat_stats, row_cells, site_label, table_columns
from jaxcapture_nb.stats.schema import SERIES_COLOUR, number_text
from jaxcapture_nb.views.fills import Fill
from jaxcapture_nb.views.site_fills import SiteFill

# The sparkline: drawn on a grid one unit per bin and _SPARK_H units tall,
# stretched to _SPARK_W x _SPARK_H pixels.
_SPARK_W, _SPARK_H = 80, 16
# Cells of row_cells: path, name, call, type, shape, dtype, then the statistics.
_TYPE, _SHAPE = HEAD_COLUMNS.index("type"), HEAD_COLUMNS.index("shape")
_FIRST_STAT = len(HEAD_COLUMNS)
# The head of the column naming each row's fill, as the widget's table names it.
FILL_HEADER = "fill excluded"


def with_fallback(bundle: tuple[dict, dict] | None, text: str, html_text: str) -> tuple[dict, dict] | None:
    """A widget's mime bundle, carrying what a notebook shows without a kernel.

    Its metadata marks the HTML as the view's saved picture, which Jupyter
    keeps in place of the widget when it saves the notebook (see
    :mod:`jaxcapture_nb.jupyter.server_extension`).
    """
    if bundle is None:
        return None
    data, metadata = bundle
    data["text/plain"] = text
    data["text/html"] = html_text
    return data, {**metadata, **saved_view_metadata()}


def bar_heights(hist: np.ndarray, height: int = _SPARK_H) -> list[int]:
    """Whole-unit bar heights of a sparkline (see :func:`~jaxcapture_nb.stats.pooling.bar_heights`).

    Example:
      >>> bar_heights(np.array([0, 1, 50, 100]), height=16)
      [0, 1, 8, 16]
    """
    return pooling.bar_heights(hist, height)


def sparkline_path(heights: Sequence[int], height: int = _SPARK_H) -> str:
    """The outline of a bar chart as one SVG path, one unit per bar, runs of equal bars merged.

    Example:
      >>> sparkline_path([0, 3, 3, 16], height=16)
      'M0 16h1V13h2V0h1V16z'
    """
    commands = [f"M0 {height}"]
    level, run = 0, 0
    for h in heights:
        if h != level:
            if run:
                commands.append(f"h{run}")
            commands.append(f"V{height - h}")
            level, run = h, 0
        run += 1
    if run:
        commands.append(f"h{run}")
    commands.append(f"V{height}z")
    return "".join(commands)


def sparkline_svg(hist: np.ndarray) -> str:
    """An inline SVG bar chart of a histogram (no script, no external file)."""
    heights = bar_heights(hist)
    return (
        f'<svg width="{_SPARK_W}" height="{_SPARK_H}" viewBox="0 0 {len(heights)} {_SPARK_H}" '
        f'preserveAspectRatio="none" fill="{SERIES_COLOUR}"><path d="{sparkline_path(heights)}"/></svg>'
    )


def _stylesheet() -> str:
    """Styles for every ``.jcnb-static`` table, the same text in each output.

    A notebook's outputs share one page, so each table's ``<style>`` holds
    the rules of both layouts: the number columns start after the dtype
    column, one later in a table with a type column (``jcnb-typed``).
    """
    t = ".jcnb-static"
    first = len(["site", "shape", "dtype"]) + 1
    return (
        f"<style>{t}{{font:12px monospace;border-collapse:collapse}}"
        f"{t} td,{t} th{{padding:0 6px;text-align:left;white-space:nowrap}}"
        f"{t} td:nth-child(n+{first}){{text-align:right}}"
        f"{t}.jcnb-typed td:nth-child({first}){{text-align:left}}"
        f"{t} td[colspan]{{text-align:left}}{t} b{{color:var(--jp-error-color1,#c00)}}{t} svg{{vertical-align:middle}}</style>"
    )


def fill_cell(fills: Sequence[Fill]) -> str:
    """The text of a row's "fill excluded" cell: each fill's value and how many values it holds.

    Example:
      >>> fill_cell([Fill("low", -1e9, -1e9, 4416, True)]), fill_cell([Fill("high", 2.1e37, 3.4e38, 12, False)])
      ('-1.000e+09 × 4,416', '≥ 2.100e+37 × 12')
    """
    texts = []
    for fill in fills:
        value = number_text(fill.value if fill.exact else fill.limit)
        if not fill.exact:
            value = f"{'≤' if fill.side == 'low' else '≥'} {value}"
        texts.append(f"{value} \u00d7 {fill.count:,}")
    return "; ".join(texts)


def _row(record: Record, show_type: bool, columns: int, fill: SiteFill | None, fill_column: bool) -> str:
    cells, note = row_cells(record)
    name = html_name(site_label(record.path, record.name))
    if record.call_index:
        name += f" (call {record.call_index})"
    texts = [*([cells[_TYPE]] if show_type else []), cells[_SHAPE], cells[_SHAPE + 1]]
    row = f"<td>{name}</td>" + "".join(f"<td>{html.escape(text)}</td>" for text in texts)
    if note is not None:
        return f'<tr>{row}<td colspan="{columns - 1 - len(texts)}">{html.escape(note)}</td></tr>'
    stats = [html.escape(c) for c in cells[_FIRST_STAT:]]
    hist = np.asarray(record.summary.hist)
    if fill is not None:  # the numbers and histogram of the values other than the fill
        without = fill.row_stats(flat_stats(record.summary))
        stats[:-1] = [html.escape(s.text(without)) for s in schema.table_stats()]
        hist = fill.ranged.hist
    if stats[-1] != "-":  # NaN/Inf present
        stats[-1] = f"<b>{stats[-1]}</b>"
    if fill_column:
        stats.append(html.escape(fill_cell(fill.fills)) if fill is not None else "")
    row += "".join(f"<td>{s}</td>" for s in stats)
    return f"<tr>{row}<td>{sparkline_svg(hist)}</td></tr>"


def static_html(records: Sequence[Record], fills: Mapping[int, SiteFill] | None = None) -> str:
    """A deterministic HTML table of the records: site, shape, dtype, statistics and a histogram.

    The type column appears only when the records have more than one type;
    a site sowed more than once names the call.

    Args:
      records: the records, one row each.
      fills: the fills of the rows that leave one out, by the record's index
        (see :func:`~jaxcapture_nb.views.site_fills.fill_rows`); their
        statistics and sparkline are of the other values, and a "fill
        excluded" column names the fill.
    """
    fills = fills or {}
    show_type = len({r.var_type for r in records}) > 1
    stat_headers = table_columns()[_FIRST_STAT:]
    lead = ["site", *(["type"] if show_type else []), "shape", "dtype"]
    headers = [*lead, *stat_headers, *([FILL_HEADER] if fills else []), "histogram"]
    rows = "".join(
        _row(record, show_type, len(headers), fills.get(i), bool(fills)) for i, record in enumerate(records)
    )
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    classes = "jcnb-static jcnb-typed" if show_type else "jcnb-static"
    return (
        f'{_stylesheet()}<table class="{classes}"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
    )
