"""Attention patterns: every head's attention weights of one example, from a capture, to look at.

A model shows its attention by sowing the probabilities (``self.sow(
nnx.Intermediate, "attention", probs)``, ``[batch, heads, queries, keys]``),
passing them through ``Module.perturb``, or returning them from a method of
their own (captured with ``methods=True``); :func:`attention_patterns`
takes them from a :func:`~jaxcapture_nb.capture` that kept values, finding
the sites that hold attention probabilities by their shape and rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from jaxcapture_nb.core.display import view_of

# Values sent to a view at most: 4 bytes each, so 64 MiB.
MAX_WEIGHTS = 16 * 2**20


class AttentionPatterns:
    """Each layer's attention weights of one example.

    Attributes:
      sites: the sites the weights were read at, one per layer, in the order given or captured.
      weights: float32 ``[layers, heads, queries, keys]``.
      tokens: a label per position (the input's tokens as text), or position numbers.
    """

    def __init__(self, sites: Sequence[str], weights: Any, tokens: Sequence[Any] | None = None):
        self.sites = list(sites)
        self.weights = np.asarray(weights, np.float32)
        if self.weights.ndim != 4 or len(self.sites) != self.weights.shape[0]:
            raise ValueError(
                f"weights are [layers, heads, queries, keys], one layer per site: got shape "
                f"{self.weights.shape} for {len(self.sites)} sites"
            )
        queries, keys = self.weights.shape[-2:]
        if queries != keys:
            raise ValueError(
                f"the weights have {queries} queries and {keys} keys: the patterns shown are "
                "self-attention, queries and keys over the same tokens"
            )
        self.tokens = [str(t) for t in (range(keys) if tokens is None else tokens)]
        if len(self.tokens) != keys:
            raise ValueError(f"tokens has {len(self.tokens)} labels for {keys} positions")

    @property
    def heads(self) -> int:
        return self.weights.shape[1]

    def head(self, layer: int | str, head: int) -> np.ndarray:
        """One head's ``[queries, keys]`` weights, its layer given by number or site."""
        index = self.sites.index(layer) if isinstance(layer, str) else layer
        return self.weights[index, head]

    def describe(self) -> str:
        """What the patterns hold: their layers, heads and tokens, and the sites read.

        Example:
          >>> AttentionPatterns(["a.attn", "b.attn"], np.full((2, 1, 2, 2), 0.5)).describe()
          'attention patterns: 2 layers x 1 heads over 2 tokens (queries down, keys across), from a.attn, b.attn'
        """
        return (
            f"attention patterns: {len(self.sites)} layers x {self.heads} heads over {len(self.tokens)} tokens "
            f"(queries down, keys across), from {', '.join(self.sites)}"
        )

    def table(self) -> str:
        """What the patterns hold, and where each head looks most from the last token.

        Example:
          >>> weights = np.zeros((1, 2, 2, 2), np.float32); weights[0, :, :, 0] = 1
          >>> print(AttentionPatterns(["attn"], weights, ["a", "b"]).table())
          attention patterns: 1 layers x 2 heads over 2 tokens (queries down, keys across)
          attn, from the last token b: head 0 -> a (1.00), head 1 -> a (1.00)
        """
        lines = [
            f"attention patterns: {len(self.sites)} layers x {self.heads} heads over {len(self.tokens)} tokens "
            "(queries down, keys across)"
        ]
        for site, layer in zip(self.sites, self.weights, strict=True):
            looks = ", ".join(
                f"head {h} -> {self.tokens[int(np.argmax(w[-1]))]} ({float(np.max(w[-1])):.2f})"
                for h, w in enumerate(layer)
            )
            lines.append(f"{site}, from the last token {self.tokens[-1]}: {looks}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.table()

    def show(self):
        """The interactive :class:`~jaxcapture_nb.AttentionView`."""
        return view_of(self)

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict, dict] | None:
        """A notebook shows the patterns as their view (with the text, and a saved picture, behind it)."""
        return self.show()._repr_mimebundle_(**kwargs)


def is_attention(value: Any) -> bool:
    """Whether ``value`` reads as attention probabilities: ``[batch, heads, queries, keys]``, rows summing to 1.

    Example:
      >>> is_attention(np.full((1, 2, 3, 3), 1 / 3)), is_attention(np.ones((1, 2, 3, 3)))
      (True, False)
    """
    shape = getattr(value, "shape", ())
    if len(shape) != 4 or 0 in shape:
        return False
    rows = np.asarray(value, np.float32).sum(-1)
    return bool(np.all(np.abs(rows - 1) < 1e-3))


def attention_patterns(
    source: Any,
    sites: str | Sequence[str] | None = None,
    tokens: Sequence[Any] | None = None,
    example: int = 0,
) -> AttentionPatterns:
    """Every head's attention weights of one example, from a capture (or ``{site: weights}``), to look at.

    Args:
      source: a :class:`~jaxcapture_nb.Capture` that kept values (``keep="last"``
        or ``"all"``), a mapping of site names to weights, or one array of
        weights, each ``[batch, heads, queries, keys]``.
      sites: the sites that hold attention probabilities, one per layer;
        None takes every captured value that reads as them (four axes,
        each query's weights summing to 1), in the order captured.
      tokens: a label per position (the input's tokens as text).
      example: which example of the batch to show.

    Returns:
      :class:`AttentionPatterns`, which a notebook shows as an
      :class:`~jaxcapture_nb.AttentionView`.

    Raises:
      ValueError: no site holds attention probabilities, a site's value
        has another shape, or the weights are too many to show.
    """
    values = _values(source)
    if sites is None:
        chosen = [name for name, value in values.items() if is_attention(value)]
        if not chosen:
            raise ValueError(
                "no captured value reads as attention probabilities ([batch, heads, queries, keys], each "
                "query's weights summing to 1): sow them in the attention module, "
                "self.sow(nnx.Intermediate, 'attention', probs), capture with keep='last', or name sites="
            )
    else:
        chosen = [sites] if isinstance(sites, str) else list(sites)
    layers = []
    for name in chosen:
        if name not in values:
            raise KeyError(f"no site {name!r} in the source; it holds {', '.join(values) or 'nothing'}")
        value = np.asarray(values[name], np.float32)
        if value.ndim != 4:
            raise ValueError(
                f"{name!r} holds shape {value.shape}; attention weights are [batch, heads, queries, keys]"
            )
        layers.append(value[example])
    if len({layer.shape for layer in layers}) > 1:
        raise ValueError(f"the sites' weights differ in shape: {[layer.shape for layer in layers]}")
    weights = np.stack(layers)
    if weights.size > MAX_WEIGHTS:
        raise ValueError(
            f"{weights.size:,} weights are too many to show ({MAX_WEIGHTS:,} at most): name fewer "
            "sites=, or capture a shorter input"
        )
    return AttentionPatterns(chosen, weights, tokens)


def _values(source: Any) -> dict[str, Any]:
    if isinstance(source, Mapping):
        return dict(source)
    if hasattr(source, "records"):
        # Each site's last value, as capture[site] reads it; None where only summaries were kept.
        kept = {r.site: r.value for r in source.records}
        kept = {site: value for site, value in kept.items() if value is not None}
        if not kept and source.records:
            raise ValueError("this capture kept only summaries: capture with keep='last' to read attention")
        return kept
    return {"attention": source}
