"""LogitLens: what the model predicts at each site and position, as a table, a CSV file and a view."""

from __future__ import annotations

import csv
import io
import os
import pathlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jaxcapture_nb.core.display import view_of
from jaxcapture_nb.core.names import shown_name


class LogitLens:
    """The logit lens of one example: a row per site (in model order, then ``"output"``), a column per position.

    Attributes:
      sites: the sites read, in the order the model reaches them, then ``"output"`` (the model's own logits).
      target: ``[positions]``, the token id whose probability and rank are read at each position.
      probability: ``[sites, positions]``, the target's probability read at each site.
      rank: ``[sites, positions]``, the target's rank there (1: the most probable token).
      top_tokens, top_probabilities: ``[sites, positions, top]``, the most probable tokens and their probabilities.
      position_labels: a label per position (its token), or [] where none were given.
    """

    def __init__(
        self,
        sites: Sequence[str],
        target: Any,
        probability: Any,
        rank: Any,
        top_tokens: Any,
        top_probabilities: Any,
        labels: Sequence[Any] | None = None,
        vocab: Sequence[str] | Callable[[int], str] | None = None,
    ):
        self.sites = list(sites)
        self.target = np.asarray(target, np.int64)
        self.probability = np.asarray(probability, np.float64)
        self.rank = np.asarray(rank, np.int64)
        self.top_tokens = np.asarray(top_tokens, np.int64)
        self.top_probabilities = np.asarray(top_probabilities, np.float64)
        positions = self.probability.shape[1]
        self.position_labels = [] if labels is None else [str(label) for label in labels]
        if self.position_labels and len(self.position_labels) != positions:
            raise ValueError(f"labels has {len(self.position_labels)} labels for {positions} positions")
        self._vocab = vocab

    def token_text(self, token: int) -> str:
        """A token's text, as the ``vocab`` given names it (its id without one).

        Example:
          >>> lens = LogitLens(["output"], [1], [[0.5]], [[1]], [[[1]]], [[[0.5]]], vocab=["a", "b"])
          >>> lens.token_text(1), LogitLens(["output"], [1], [[0.5]], [[1]], [[[1]]], [[[0.5]]]).token_text(1)
          ('b', '1')
        """
        if self._vocab is None:
            return str(int(token))
        return str(self._vocab(int(token)) if callable(self._vocab) else self._vocab[int(token)])

    def position_name(self, position: int) -> str:
        """A column's name: the position and its label (``"3 cat"``), or the position alone."""
        label = self.position_labels[position] if self.position_labels else ""
        return f"{position} {label}".rstrip()

    def table(self, digits: int = 2) -> str:
        """The target's probability as a plain-text table, a row per site, then each position's target."""
        columns = [self.position_name(p) for p in range(self.probability.shape[1])]
        width = max([len("site")] + [len(shown_name(s)) for s in self.sites])
        cell = max(digits + 3, *(len(c) for c in columns))
        head = "site".ljust(width) + "  " + "  ".join(c.rjust(cell) for c in columns)
        rows = [
            shown_name(site).ljust(width) + "  " + "  ".join(f"{v:{cell}.{digits}f}" for v in row)
            for site, row in zip(self.sites, self.probability, strict=True)
        ]
        targets = (
            "target".ljust(width) + "  " + "  ".join(self.token_text(t).rjust(cell) for t in self.target)
        )
        title = "logit lens: probability of the target token at each site and position"
        return "\n".join([title, head, *rows, targets])

    def __repr__(self) -> str:
        return self.table()

    def to_csv(self, path: str | os.PathLike[str] | None = None) -> str:
        """Every cell as CSV: site, position, label, target, its probability and rank, and the top tokens.

        Args:
          path: a file to write too; None only returns the text.

        Example:
          >>> lens = LogitLens(["output"], [1], [[0.75]], [[1]], [[[1, 0]]], [[[0.75, 0.25]]], ["x"], ["a", "b"])
          >>> print(lens.to_csv(), end="")
          site,position,label,target,probability,rank,top tokens,top probabilities
          output,0,x,b,0.75,1,b a,0.75 0.25
        """
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(
            ["site", "position", "label", "target", "probability", "rank", "top tokens", "top probabilities"]
        )
        for s, site in enumerate(self.sites):
            for p, target in enumerate(self.target):
                writer.writerow(
                    [
                        site,
                        p,
                        self.position_labels[p] if self.position_labels else "",
                        self.token_text(target),
                        repr(float(self.probability[s, p])),
                        int(self.rank[s, p]),
                        " ".join(self.token_text(t) for t in self.top_tokens[s, p]),
                        " ".join(repr(float(v)) for v in self.top_probabilities[s, p]),
                    ]
                )
        text = out.getvalue()
        if path is not None:
            pathlib.Path(path).write_text(text)
        return text

    def show(self):
        """The interactive :class:`~jaxcapture_nb.LogitLensView`."""
        return view_of(self)

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict, dict] | None:
        """A notebook shows a logit lens as its view (with the text table, and a saved picture, behind it)."""
        return self.show()._repr_mimebundle_(**kwargs)
