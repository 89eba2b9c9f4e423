"""PatchingResult: a patching sweep's effects, as a table, a CSV file and a view.

Each row is a site, each column a position; the effect is the metric of the
corrupted run with the clean value patched in there, and the recovery says
how much of the way from the corrupted metric to the clean one that is.
"""

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


class PatchingResult:
    """The effect on a metric of patching each site (rows) at each position (columns).

    Attributes:
      sites: the patched sites, in the order the model reaches them (sites
        it did not reach last, in the order given).
      positions: the patched positions, or None where each site was patched whole.
      effect: ``[sites, positions]`` (``[sites, 1]`` when whole), the metric of each patched run.
      clean, corrupted: the metric of the clean and of the corrupted run.
      method: ``"exact"`` (:func:`patching_sweep`) or ``"attribution"`` (:func:`attribution_patching`).
      readouts: ``[sites, positions, k]``, the ``readout`` of each patched
        run where :func:`patching_sweep` was given one, else None.
      clean_readout, corrupted_readout: ``[k]``, the readout of the clean and
        of the corrupted run, or None.
      readout_labels: a label per readout entry (``"0"``, ``"1"``, ... unless given).
      position_labels: a label per position (its token, say), or [] where none were given.
      metric_name: the metric function's name (``"logit_difference"``), or
        ``"the metric"`` for a lambda.
    """

    def __init__(
        self,
        sites,
        positions,
        effect,
        clean,
        corrupted,
        method,
        readouts=None,
        labels=None,
        position_labels=None,
        metric_name="the metric",
    ):
        self.sites, self.method, self.metric_name = list(sites), method, metric_name
        self.positions = None if positions is None else list(positions)
        self.position_labels = _position_labels(self.positions, position_labels)
        self.effect = np.asarray(effect, np.float64)
        self.clean, self.corrupted = float(clean), float(corrupted)
        self.readouts = self.clean_readout = self.corrupted_readout = None
        self.readout_labels: list[str] = []
        if readouts is not None:
            # the patched runs', the clean run's and the corrupted run's, k values a run
            patched, clean_run, corrupted_run = (np.asarray(r, np.float64) for r in readouts)
            k = clean_run.size
            self.readouts = patched.reshape(*self.effect.shape, k)
            self.clean_readout, self.corrupted_readout = clean_run.reshape(k), corrupted_run.reshape(k)
            self.readout_labels = [str(label) for label in (range(k) if labels is None else labels)]
            if len(self.readout_labels) != k:
                raise ValueError(f"readout_labels has {len(self.readout_labels)} labels for a readout of {k}")

    @property
    def recovery(self) -> np.ndarray:
        """The patched metric normalized: 0 is the corrupted run's, 1 the clean run's."""
        span = self.clean - self.corrupted
        return (self.effect - self.corrupted) / (span if span else np.nan)

    @property
    def recovery_text(self) -> str:
        """What the numbers are, for titles: ``"recovery"``, or ``"recovery of logit_difference"``."""
        return "recovery" if self.metric_name == "the metric" else f"recovery of {self.metric_name}"

    def table(self, digits: int = 3) -> str:
        """The recovery as a plain-text table, one row per site."""
        columns = ["whole"] if self.positions is None else [str(p) for p in self.positions]
        if self.position_labels:
            columns = [f"{p}:{label}" for p, label in zip(columns, self.position_labels, strict=True)]
        width = max([len("site")] + [len(shown_name(s)) for s in self.sites])
        head = "site".ljust(width) + "  " + "  ".join(c.rjust(digits + 4) for c in columns)
        rows = [
            shown_name(site).ljust(width) + "  " + "  ".join(f"{v:{digits + 4}.{digits}f}" for v in row)
            for site, row in zip(self.sites, self.recovery, strict=True)
        ]
        title = f"{self.method} patching: {self.recovery_text} (0 = corrupted {self.corrupted:.4g}, 1 = clean {self.clean:.4g})"
        return "\n".join([title, head, *rows])

    def __repr__(self) -> str:
        return self.table()

    def to_csv(self, path: str | os.PathLike[str] | None = None) -> str:
        """Every cell as CSV: a row per site and position, with its label, patched metric and recovery.

        The view's CSV button writes the same columns, a block per result shown.

        Args:
          path: a file to write too; None only returns the text.

        Example:
          >>> result = PatchingResult(["a"], [0, 1], [[1.0, 2.0]], 2.0, 0.0, "exact", position_labels=["x", "y"])
          >>> print(result.to_csv(), end="")
          method,site,position,label,metric,recovery
          exact,a,0,x,1.0,0.5
          exact,a,1,y,2.0,1.0
        """
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["method", "site", "position", "label", "metric", "recovery"])
        positions = ["whole"] if self.positions is None else self.positions
        labels = self.position_labels or [""] * len(positions)
        for s, site in enumerate(self.sites):
            for p, (position, label) in enumerate(zip(positions, labels, strict=True)):
                writer.writerow(
                    [
                        self.method,
                        site,
                        position,
                        label,
                        repr(float(self.effect[s, p])),
                        repr(float(self.recovery[s, p])),
                    ]
                )
        text = out.getvalue()
        if path is not None:
            pathlib.Path(path).write_text(text)
        return text

    def show(self, estimate: PatchingResult | None = None):
        """The interactive :class:`~jaxcapture_nb.PatchingView`, with ``estimate`` (say, :func:`attribution_patching`'s) beside it."""
        return view_of(self, estimate=estimate)

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict, dict] | None:
        """A notebook shows a sweep as its view (with the text table, and a saved picture, behind it)."""
        return self.show()._repr_mimebundle_(**kwargs)


def metric_name(metric: Callable[..., Any]) -> str:
    """A metric's name for titles: its function's, or ``"the metric"`` for a lambda or a callable object.

    Example:
      >>> def logit_difference(out): ...
      >>> metric_name(logit_difference), metric_name(lambda out: out)
      ('logit_difference', 'the metric')
    """
    name = getattr(metric, "__name__", "")
    return name if name.isidentifier() else "the metric"


def _position_labels(positions: list[int] | None, labels: Sequence[Any] | None) -> list[str]:
    """A label per patched position, from labels given per position patched or per position of the input.

    Example:
      >>> _position_labels([1, 3], ["<s>", "the", "cat", "sat"]), _position_labels([1, 3], ["the", "sat"])
      (['the', 'sat'], ['the', 'sat'])
    """
    if labels is None:
        return []
    labels = [str(label) for label in labels]
    if positions is None:
        raise ValueError("labels name positions; this sweep patched each site whole: give it positions")
    if len(labels) == len(positions):
        return labels
    if positions and len(labels) > max(positions):
        return [labels[p] for p in positions]
    raise ValueError(
        f"labels has {len(labels)} labels: give one per patched position ({len(positions)}), or one "
        f"per position of the input (at least {max(positions) + 1})"
    )
