"""The plain-text and script-free HTML of a mode panel, saved with a notebook.

A row per option: its class, name, value (marked when set in the panel) and
how it is set (``view`` or ``attribute``), then the Flax code of the view,
any error, and the comparison Compare made, if any (given as text and HTML
by the panel). Names come from user code, so both write them with their
control characters spelled out, and the HTML escapes every one (see
:mod:`jaxcapture_nb.core.names`).
"""

from __future__ import annotations

import html
from typing import NamedTuple

from jaxcapture_nb.core.names import html_name, shown_name

_COLUMNS = ("class", "option", "value", "via")


class OptionRow(NamedTuple):
    """One option as the saved panel shows it."""

    cls: str
    option: str
    value: str  # repr of the value
    via: str
    set_here: bool


def compared_note(what: str, stale: bool) -> str:
    """The line over the comparison a panel shows: what it compares, and whether the switches moved since.

    The panel's front end writes the same (js/mode_panel_layout.js).

    Example:
      >>> compared_note("model as it is against current view (nothing set)", stale=False)
      'Compared: model as it is against current view (nothing set).'
    """
    if stale:
        return (
            f"Stale: the switches or the Compare menu changed since this comparison ({what}). "
            "Press Compare again."
        )
    return f"Compared: {what}."


def panel_text(
    title: str, note: str, rows: list[OptionRow], code: str, error: str, compared: str = ""
) -> str:
    """The plain-text panel; ``note`` (e.g. for Linen modules) replaces the table when given.

    ``compared``, the text of the comparison shown, follows after a blank line.

    Example:
      >>> print(panel_text("ModePanel of Net", "", [OptionRow("Dropout", "deterministic", "True", "view", True)],
      ...                  "view = nnx.view(model, only=nnx.Dropout, deterministic=True)", ""))
      ModePanel of Net (* set in the panel)
      class    option         value   via
      Dropout  deterministic  True *  view
      <BLANKLINE>
      view = nnx.view(model, only=nnx.Dropout, deterministic=True)
    """
    after = f"\n\n{compared}" if compared else ""
    if note:
        return f"{title}\n{note}{after}"
    if not rows:
        return f"{title}: no module offers view options{after}"
    table = [_COLUMNS] + [
        (shown_name(r.cls), shown_name(r.option), r.value + (" *" if r.set_here else ""), r.via) for r in rows
    ]
    widths = [max(len(r[i]) for r in table) for i in range(len(_COLUMNS))]
    lines = [f"{title} (* set in the panel)"]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in table]
    lines += ["", code]
    if error:
        lines.append(f"error: {error}")
    return "\n".join(lines) + after


def panel_html(
    title: str, note: str, rows: list[OptionRow], code: str, error: str, compared: str = ""
) -> str:
    """The same as :func:`panel_text`, as an HTML table with inline styles; ``compared`` is HTML."""
    esc = html.escape
    heading = f"<div><b>{esc(title)}</b></div>"
    if note:
        return f'<div class="jcnb-modes-static">{heading}<p>{esc(note)}</p>{compared}</div>'
    # Notebook front ends right-align table cells and centre tables in
    # rendered HTML: every cell and the code say left explicitly.
    cell = '<td style="text-align:left;padding:1px 12px 1px 0">'
    cells = "".join(
        f"<tr>{cell}{html_name(r.cls)}</td>{cell}{html_name(r.option)}</td>"
        f"{cell}{'<b>' + esc(r.value) + '</b> (set)' if r.set_here else esc(r.value)}</td>"
        f"{cell}{esc(r.via)}</td></tr>"
        for r in rows
    )
    header = "".join(f'<th style="text-align:left;padding-right:12px">{c}</th>' for c in _COLUMNS)
    error_box = f'<div style="color:#900;background:#fde8e8;padding:4px">{esc(error)}</div>' if error else ""
    compared_box = f'<div style="margin-top:8px">{compared}</div>' if compared else ""
    return (
        f'<div class="jcnb-modes-static" style="font-family:monospace;font-size:12px;text-align:left">{heading}'
        f'<table style="border-collapse:collapse;margin:0">'
        f"<thead><tr>{header}</tr></thead><tbody>{cells}</tbody></table>"
        f'<pre style="text-align:left;margin:6px 0;padding:0;white-space:pre-wrap">{esc(code)}</pre>{error_box}'
        f"{compared_box}</div>"
    )
