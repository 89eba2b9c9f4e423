"""AttentionView: every head's attention weights as small heatmaps, one enlarged (anywidget; JS in js/).

The weights travel as one float32 buffer, ``[layers, heads, queries,
keys]`` of one example (:data:`~jaxcapture_nb.interventions.attention.MAX_WEIGHTS`
at most); the sites and tokens as JSON. ``selected`` (``[layer, head]`` of
the enlarged head) is the view's state, readable and settable from Python.
The saved picture is a PNG of the small maps, drawn by matplotlib.
"""

from __future__ import annotations

import base64
import io
from typing import TYPE_CHECKING, Any

import numpy as np
import traitlets as t

from jaxcapture_nb.core.names import shown_name
from jaxcapture_nb.views.base import FrontEndWidget

if TYPE_CHECKING:  # the result is only read here
    from jaxcapture_nb.interventions.attention import AttentionPatterns


def attention_state(patterns: AttentionPatterns) -> dict[str, Any]:
    """The synced traits of a view of ``patterns``.

    Example:
      >>> from jaxcapture_nb.interventions.attention import AttentionPatterns
      >>> state = attention_state(AttentionPatterns(["attn"], np.full((1, 2, 2, 2), 0.5), ["a", "b"]))
      >>> state["_sites"], state["_heads"], state["_tokens"], len(state["_weights"])
      (['attn'], 2, ['a', 'b'], 32)
    """
    return {
        "_sites": [shown_name(site) for site in patterns.sites],
        "_heads": patterns.heads,
        "_tokens": patterns.tokens,
        "_weights": patterns.weights.astype(np.float32).tobytes(),
    }


def attention_png(patterns: AttentionPatterns) -> str:
    """The saved picture: the small maps as a PNG ``<img>``, a column per layer, a row per head."""
    # Imported here: matplotlib takes half a second to import. A Figure of
    # its own draws off screen and leaves the user's pyplot backend alone.
    from matplotlib.figure import Figure

    layers, heads = len(patterns.sites), patterns.heads
    figure = Figure(figsize=(1.2 * layers + 0.6, 1.2 * heads + 0.4), dpi=80)
    axes = figure.subplots(heads, layers, squeeze=False)
    for layer in range(layers):
        axes[0, layer].set_title(shown_name(patterns.sites[layer]), fontsize=7)
        for head in range(heads):
            ax = axes[head, layer]
            ax.imshow(patterns.weights[layer, head], vmin=0, vmax=1, cmap="viridis", interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            if layer == 0:
                ax.set_ylabel(f"h{head}", fontsize=7)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    data = base64.b64encode(buffer.getvalue()).decode()
    return (
        f'<img alt="attention patterns: {layers} layers x {heads} heads, queries down, keys across" '
        f'src="data:image/png;base64,{data}">'
    )


class AttentionView(FrontEndWidget, entry="attention_view.js", css="attention_view.css"):
    """Attention patterns: a small heatmap per layer (columns) and head (rows), the clicked head enlarged with its tokens.

    Hovering any cell reads out its query token, key token and weight.
    Saved notebooks keep the text and a PNG of the small maps.

    Args:
      patterns: :class:`~jaxcapture_nb.AttentionPatterns` (see :func:`~jaxcapture_nb.attention_patterns`).

    Example:
      >>> from jaxcapture_nb.interventions.attention import AttentionPatterns
      >>> patterns = AttentionPatterns(["attn"], np.full((1, 2, 2, 2), 0.5), ["a", "b"])
      >>> view = AttentionView(patterns)
      >>> view.selected, repr(view) == patterns.describe()
      ([0, 0], True)
    """

    _sites = t.List(t.Unicode()).tag(sync=True)  # one per layer
    _heads = t.Int(0).tag(sync=True)
    _tokens = t.List(t.Unicode()).tag(sync=True)  # a label per position
    _weights = t.Bytes().tag(sync=True)  # float32 [layers, heads, queries, keys]
    selected = t.List(t.Int(), [0, 0]).tag(sync=True)  # [layer, head] enlarged

    def __init__(self, patterns: AttentionPatterns, **kwargs: Any):
        self._patterns = patterns
        super().__init__(**attention_state(patterns), **kwargs)

    def __repr__(self) -> str:
        # What the patterns hold, not where each head looks: the view shows
        # that, and a saved notebook's text then reads the same on any machine.
        return self._patterns.describe()

    def _saved_view(self) -> tuple[str, str]:
        return repr(self), attention_png(self._patterns)
