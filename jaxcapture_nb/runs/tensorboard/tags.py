"""What reading a log gives: each tag's values by step, histograms as TensorBoard keeps them."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from jaxcapture_nb.runs.row_grid import kept_appends


class HistogramValue(NamedTuple):
    """A histogram as TensorFlow 1 writes it (TensorBoard's ``HistogramProto``)."""

    min: float
    max: float
    num: float
    sum: float
    sum_squares: float
    bucket_limit: np.ndarray
    bucket: np.ndarray


class TagValues(NamedTuple):
    """One tag's values with their steps and wall times.

    Scalars' values are an array of floats. Histograms' are a list, each
    read by :func:`histogram_value`: a ``HistogramProto`` still in its
    bytes (decoding only those a view keeps costs a long log less), or a
    :class:`HistogramValue` made from a TensorFlow 2 tensor.
    """

    steps: np.ndarray
    values: Any
    walls: np.ndarray
    # Of a tag thinned as it was read (see _thinning), which keeps only the
    # values a view may keep: each one's place among all the tag's values,
    # how many it had, and the first step of a scalar that was not finite
    # and of one above 0, of all of them.
    ordinals: np.ndarray | None = None
    count: int = 0
    first_nonfinite: int | None = None
    first_positive: int | None = None

    def kept(self, capacity: int) -> list[int]:
        """Where, in these values, lie those of all the tag's values a grid of ``capacity`` rows keeps (see ``kept_appends``).

        Example:
          >>> every = TagValues(np.arange(10), np.zeros(10), np.zeros(10))
          >>> thinned = TagValues(np.arange(0, 10, 2), np.zeros(5), np.zeros(5), np.arange(0, 10, 2), 9)
          >>> every.kept(4), thinned.kept(4)
          ([0, 4, 8, 9], [0, 2, 4])
        """
        if self.ordinals is None:
            return list(kept_appends(len(self.steps), capacity))
        return np.searchsorted(self.ordinals, kept_appends(self.count, capacity)).tolist()

    def before(self, step: int) -> TagValues:
        """The values logged before ``step``: what a run restarted at ``step`` keeps of an earlier file.

        Example:
          >>> found = TagValues(np.arange(5), np.arange(5.0), np.zeros(5)).before(3)
          >>> found.steps.tolist(), found.values.tolist()
          ([0, 1, 2], [0.0, 1.0, 2.0])
        """
        kept = np.flatnonzero(self.steps < step)
        values = self.values[kept] if isinstance(self.values, np.ndarray) else [self.values[k] for k in kept]
        return TagValues(self.steps[kept], values, self.walls[kept])

    def first_step(self, *, nonfinite: bool) -> int | None:
        """The first step of a scalar value that was not finite (with ``nonfinite=False``: above 0); None if none was."""
        if self.ordinals is not None:
            return self.first_nonfinite if nonfinite else self.first_positive
        marked = ~np.isfinite(self.values) if nonfinite else self.values > 0
        return int(self.steps[marked].min()) if marked.any() else None


class Tags(NamedTuple):
    """A file's histograms and scalars by tag, the wall times its values span, and where it restarted its run."""

    histograms: dict[str, TagValues]
    scalars: dict[str, TagValues]
    wall_times: tuple[float, float] | None  # the first and the last, None if no value
    # The step of the file's SessionLog START event: the run goes on from a
    # checkpoint there, and what earlier files logged from that step on is
    # dropped, as TensorBoard's ``purge_orphaned_data`` does. None if none.
    restarted_at: int | None = None

    def before(self, step: int) -> Tags:
        """Only the values logged before ``step``."""
        return self._replace(
            histograms={tag: found.before(step) for tag, found in self.histograms.items()},
            scalars={tag: found.before(step) for tag, found in self.scalars.items()},
        )

    def without(self, tags: set[str]) -> Tags:
        """The same values but those of ``tags``."""
        return self._replace(
            histograms={tag: found for tag, found in self.histograms.items() if tag not in tags},
            scalars={tag: found for tag, found in self.scalars.items() if tag not in tags},
        )

    def first_steps(self) -> dict[str, int]:
        """Each tag's first step."""
        return {
            tag: int(found.steps[0])
            for kind in (self.histograms, self.scalars)
            for tag, found in kind.items()
        }

    def last_steps(self) -> dict[str, int]:
        """Each tag's highest step."""
        return {
            tag: int(found.steps.max())
            for kind in (self.histograms, self.scalars)
            for tag, found in kind.items()
        }
