"""Thinning a log's values as they are read, so that reading a long log holds a few times what its view keeps.

A view of a saved run keeps ``keep_steps`` rows of each tag: those a
:class:`~jaxcapture_nb.runs.row_grid.RowGrid` of that many rows keeps when the
tag's values are appended to it in step order, every ``stride``-th and the
last (:func:`~jaxcapture_nb.runs.row_grid.kept_appends`). The stride only grows
(doubling), so a value whose place among its tag's values is not a multiple
of a stride the grid has already reached is never kept, however many values
follow: :class:`Thinning` lets those go as each window of the file is read.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

_NONE = np.iinfo(np.int64).max  # no step yet


class Values(NamedTuple):
    """Values of one kind, in file order: where each begins, its tag's number, its event's step and wall time."""

    at: np.ndarray
    tags: np.ndarray
    steps: np.ndarray
    walls: np.ndarray
    values: Any  # scalars: float64s; histograms: a view of each ``HistogramProto``'s bytes
    ordinals: Any = None  # each value's place among all its tag's values


def stride_bound(counts: np.ndarray, capacity: int) -> np.ndarray:
    """A power of two that divides the stride a grid of ``capacity`` rows has reached after ``counts`` appends.

    The grid's rows span every stride-th append, at most ``capacity`` of
    them, so after ``c`` appends its stride is at least ``c / capacity``;
    half of that, rounded down to a power of two, is safely below it (a
    test checks it against the grid's own thinning), and leaves at most
    ``4 * capacity`` values of a tag held.

    Example:
      >>> stride_bound(np.array([1, 8, 16, 17, 40]), 4).tolist()
      [1, 1, 2, 2, 4]
    """
    least = np.maximum(counts // (2 * capacity), 1)
    return np.left_shift(1, np.floor(np.log2(least)).astype(np.int64))


class Thinning:
    """Each tag's values of one kind, added window by window, thinned to those a grid of ``keep`` rows may still keep.

    With ``keep=None`` nothing is thinned. Thinning holds only while each
    tag's steps go up in the order they are read (``kept_order``): values
    in another order are put in step order by the reader, which changes
    their places.
    """

    def __init__(self, keep: int | None):
        self.keep = keep
        self.kept_order = True
        self._parts: list[Values] = []
        self._counts = np.zeros(0, np.int64)  # per tag: values added
        self._last_steps = np.zeros(0, np.int64)
        # Per tag, the first step of a value that is not finite, and of one above 0.
        self._firsts = {True: np.zeros(0, np.int64), False: np.zeros(0, np.int64)}

    def add(self, new: Values, tags: int) -> None:
        """Adds the values read from the next window; ``tags`` is how many tags are numbered so far."""
        self._grow(tags)
        order = np.argsort(new.tags, kind="stable")
        grouped = new.tags[order]
        starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]]) if len(grouped) else order[:0]
        sizes = np.diff(np.r_[starts, len(order)])
        rank = np.arange(len(order)) - np.repeat(starts, sizes)
        ordinals = np.empty(len(order), np.int64)
        ordinals[order] = self._counts[grouped] + rank
        steps = new.steps[order]
        before = np.where(rank > 0, np.roll(steps, 1), self._last_steps[grouped])
        if (steps <= before).any():
            self.kept_order = False
        lasts = starts + sizes - 1
        self._last_steps[grouped[lasts]] = steps[lasts]
        self._counts += np.bincount(new.tags, minlength=tags)
        if isinstance(new.values, np.ndarray):
            for nonfinite, marked in ((True, ~np.isfinite(new.values)), (False, new.values > 0)):
                np.minimum.at(self._firsts[nonfinite], new.tags[marked], new.steps[marked])
        self._parts.append(new._replace(ordinals=ordinals))
        if self.keep is not None and self.kept_order:
            strides = stride_bound(self._counts, self.keep)
            if (strides > 1).any():  # else every value may still be kept
                self._parts = [self._thinned(part, strides) for part in self._parts]

    def _thinned(self, part: Values, strides: np.ndarray) -> Values:
        """The values of ``part`` a grid may still keep: on each tag's bound stride, or its last."""
        kept = (part.ordinals % strides[part.tags] == 0) | (part.ordinals == self._counts[part.tags] - 1)
        return part if kept.all() else _picked(part, kept)

    @property
    def values(self) -> Values:
        """The values kept, in file order."""
        return _joined(self._parts)

    def first_step(self, tags: int, *, nonfinite: bool) -> np.ndarray:
        """Per tag, the first step of all its values that was not finite (or, with ``nonfinite=False``, above 0); -1 if none."""
        self._grow(tags)
        first = self._firsts[nonfinite]
        return np.where(first == _NONE, -1, first)

    def _grow(self, tags: int) -> None:
        more = tags - len(self._counts)
        if more > 0:
            self._counts = np.r_[self._counts, np.zeros(more, np.int64)]
            self._last_steps = np.r_[self._last_steps, np.full(more, np.iinfo(np.int64).min)]
            for key, first in self._firsts.items():
                self._firsts[key] = np.r_[first, np.full(more, _NONE)]


def _joined(parts: list[Values]) -> Values:
    """Values of one kind from consecutive windows, as one."""
    if not parts:
        nothing = np.zeros(0, np.int64)
        return Values(nothing, nothing, nothing, np.zeros(0), np.zeros(0), nothing)
    if len(parts) == 1:
        return parts[0]
    at, tags, steps, walls = (np.concatenate([part[k] for part in parts]) for k in range(4))
    ordinals = np.concatenate([part.ordinals for part in parts])
    if isinstance(parts[0].values, list):
        return Values(at, tags, steps, walls, [value for part in parts for value in part.values], ordinals)
    return Values(at, tags, steps, walls, np.concatenate([part.values for part in parts]), ordinals)


def _picked(values: Values, keep: np.ndarray) -> Values:
    """The values where ``keep`` is true."""
    pick = np.flatnonzero(keep)
    picked = (
        [values.values[k] for k in pick.tolist()] if isinstance(values.values, list) else values.values[pick]
    )
    return Values(
        values.at[pick],
        values.tags[pick],
        values.steps[pick],
        values.walls[pick],
        picked,
        values.ordinals[pick],
    )
