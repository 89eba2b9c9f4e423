"""LogitLensView: the logit lens as a heatmap of the target's probability by site and position (anywidget; JS in js/).

Numbers travel as binary buffers whose size depends on the number of sites,
positions and top tokens kept, never on the vocabulary: the target's
probability (float64) and rank (int32) per site and position, and the top
tokens (int32, indices into the texts) and their probabilities (float64).
Text travels as JSON: site names in model order, the positions' names, each
position's target token, and each distinct top token's text once.
``selected`` (``[site, position]`` of the clicked cell, or ``[]``) is the
view's state, readable and settable from Python.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

import numpy as np
import traitlets as t

from jaxcapture_nb.core.names import html_name, shown_name
from jaxcapture_nb.views.base import FrontEndWidget
from jaxcapture_nb.views.colour_maps import colour_at, ink_on

if TYPE_CHECKING:  # the result is only read here
    from jaxcapture_nb.interventions.lens_result import LogitLens


def lens_state(lens: LogitLens) -> dict[str, Any]:
    """The synced traits of a view of ``lens``.

    Example:
      >>> from jaxcapture_nb.interventions.lens_result import LogitLens
      >>> lens = LogitLens(["output"], [1], [[0.75]], [[1]], [[[1, 0]]], [[[0.75, 0.25]]], ["x"], ["a", "b"])
      >>> state = lens_state(lens)
      >>> state["_positions"], state["_targets"], state["_token_texts"], np.frombuffer(state["_top_tokens"], np.int32)
      (['0 x'], ['b'], ['a', 'b'], array([1, 0], dtype=int32))
    """
    positions = lens.probability.shape[1]
    tokens, indices = np.unique(lens.top_tokens, return_inverse=True)
    return {
        "_sites": [shown_name(site) for site in lens.sites],
        "_positions": [lens.position_name(p) for p in range(positions)],
        "_targets": [lens.token_text(token) for token in lens.target],
        "_probability": lens.probability.astype(np.float64).tobytes(),
        "_rank": lens.rank.astype(np.int32).tobytes(),
        "_top": int(lens.top_tokens.shape[-1]),
        "_token_texts": [lens.token_text(token) for token in tokens],
        "_top_tokens": indices.astype(np.int32).tobytes(),
        "_top_probabilities": lens.top_probabilities.astype(np.float64).tobytes(),
    }


def lens_html(lens: LogitLens) -> str:
    """The saved picture: a table of the target's probability, each cell coloured by it."""
    columns = "".join(
        f"<th>{html.escape(lens.position_name(p))}</th>" for p in range(lens.probability.shape[1])
    )
    rows = []
    for s, site in enumerate(lens.sites):
        cells = []
        for probability in lens.probability[s]:
            colour = colour_at("sequential", float(probability))
            cells.append(f'<td style="background:{colour};color:{ink_on(colour)}">{probability:.2f}</td>')
        rows.append(f"<tr><th>{html_name(site)}</th>{''.join(cells)}</tr>")
    targets = "".join(f"<th>{html.escape(lens.token_text(token))}</th>" for token in lens.target)
    style = (
        "<style>.jcnb-lens-static{font:12px monospace;border-collapse:collapse}"
        ".jcnb-lens-static caption{text-align:left;padding:2px 0}"
        ".jcnb-lens-static th,.jcnb-lens-static td{padding:1px 5px;text-align:right;white-space:nowrap}"
        ".jcnb-lens-static tr>th:first-child{text-align:left}</style>"
    )
    return (
        f'{style}<table class="jcnb-lens-static"><caption>logit lens: probability of the target token '
        "at each site and position</caption>"
        f"<tr><th>site</th>{columns}</tr>{''.join(rows)}<tr><th>target</th>{targets}</tr></table>"
    )


class LogitLensView(FrontEndWidget, entry="lens_view.js", css="lens_view.css"):
    """A logit lens as a heatmap: the target token's probability by site (rows) and position (columns).

    Hovering a cell reads out the target's probability and rank there and
    the most probable tokens; clicking one lists, site by site, the most
    probable tokens at its position. Saved notebooks keep the text table and
    a script-free coloured table.

    Args:
      lens: a :class:`~jaxcapture_nb.LogitLens`.

    Example:
      >>> from jaxcapture_nb.interventions.lens_result import LogitLens
      >>> lens = LogitLens(["output"], [1], [[0.75]], [[1]], [[[1, 0]]], [[[0.75, 0.25]]])
      >>> view = LogitLensView(lens)
      >>> view.selected, repr(view) == lens.table()
      ([], True)
    """

    _sites = t.List(t.Unicode()).tag(sync=True)  # shown names, model order, "output" last
    _positions = t.List(t.Unicode()).tag(sync=True)  # column names: "3 cat"
    _targets = t.List(t.Unicode()).tag(sync=True)  # each position's target token
    _probability = t.Bytes().tag(sync=True)  # float64 [sites, positions]
    _rank = t.Bytes().tag(sync=True)  # int32 [sites, positions], 1 the most probable
    _top = t.Int(0).tag(sync=True)  # top tokens kept per cell
    _token_texts = t.List(t.Unicode()).tag(sync=True)  # each distinct top token's text
    _top_tokens = t.Bytes().tag(sync=True)  # int32 [sites, positions, top]: indices into _token_texts
    _top_probabilities = t.Bytes().tag(sync=True)  # float64 [sites, positions, top]
    selected = t.List(t.Int()).tag(sync=True)

    def __init__(self, lens: LogitLens, **kwargs: Any):
        self._lens = lens
        super().__init__(**lens_state(lens), **kwargs)

    def __repr__(self) -> str:
        return self._lens.table()

    def _saved_view(self) -> tuple[str, str]:
        return repr(self), lens_html(self._lens)
