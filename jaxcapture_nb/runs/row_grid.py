"""Which recorded steps a bounded history keeps, shared by the series recorded together.

A series keeps at most ``capacity`` rows spread over the whole run: rows
sit on a grid of every ``stride``-th recorded value, plus the latest value,
kept whether or not it is on the grid (and replaced by the next). When the
rows fill the capacity, every second grid row goes and the stride doubles,
so the rows always cover the run evenly and the newest step is always there.

Series that always get their rows at the same steps (the sites of one
compiled step) share one :class:`RowGrid` and keep their rows side by side
in one table, so a step's rows are written with one assignment whatever
the number of sites.
"""

from __future__ import annotations

import functools
import weakref
from typing import Any

import numpy as np


class RowGrid:
    """The steps kept, and where the next row goes, for ``members`` series appended together.

    Example:
      >>> grid = RowGrid(capacity=4)
      >>> rows = np.zeros((4, 1))
      >>> for step in range(7):
      ...     row, thinned = grid.advance(step, [rows])
      ...     rows[row] = step
      >>> grid.steps[: grid.size].tolist(), rows[: grid.size, 0].tolist()
      ([0, 2, 4, 6], [0.0, 2.0, 4.0, 6.0])
    """

    def __init__(self, capacity: int, members: int = 1):
        self.steps = np.zeros(capacity, np.int64)
        self.size = 0
        self.stride = 1
        self.appended = 0
        self.latest_off_grid = False
        self.members = members
        # Members that went on alone, each with a copy (see copy_for).
        self.departed = 0
        # Per reader (a view: a run's own and any overlay that shows it), and
        # per member, the first row rewritten since that reader last read the
        # member's rows; weak, so a view let go of is not kept alive by the rows.
        self._rewritten: weakref.WeakKeyDictionary[Any, np.ndarray] = weakref.WeakKeyDictionary()

    def advance(self, step: int, tables: list[np.ndarray]) -> tuple[int, bool]:
        """Makes room for the row of ``step``: its index, and whether rows were thinned.

        ``tables`` hold the members' rows along their first axis; thinning
        moves their rows with the steps. The caller writes the new row.
        """
        if self.latest_off_grid:
            self.size -= 1
            for first in self._rewritten.values():
                np.minimum(first, self.size, out=first)
        thinned = self.size == len(self.steps)
        if thinned:
            keep = np.arange(0, self.size, 2)
            for table in (self.steps, *tables):
                table[: len(keep)] = table[keep]
            self.size = len(keep)
            self.stride *= 2
        row = self.size
        self.steps[row] = step
        self.size += 1
        self.latest_off_grid = self.appended % self.stride != 0
        self.appended += 1
        return row, thinned

    def replaced(self, count: int) -> np.ndarray:
        """For each of the next ``count`` appends, whether the append after it takes its row.

        A row off the grid of kept steps stays only until the next append,
        so a caller holding several rows at once need not make those.

        Example:
          >>> grid = RowGrid(capacity=4)
          >>> for step in range(5):
          ...     _ = grid.advance(step, [])
          >>> grid.steps[: grid.size].tolist()  # every other step is kept now
          [0, 2, 4]
          >>> grid.replaced(4).tolist()  # the next four: 5 and 7 are off the grid
          [True, False, True, False]
        """
        size, stride, appended, off_grid = self.size, self.stride, self.appended, self.latest_off_grid
        out = np.zeros(count, bool)
        for i in range(count):
            size -= off_grid
            if size == len(self.steps):
                size, stride = (size + 1) // 2, 2 * stride
            size += 1
            off_grid = appended % stride != 0
            appended += 1
            out[i] = off_grid and i + 1 < count
        return out

    def first_rewritten(self, reader: Any, member: int) -> int:
        """The first row rewritten since ``reader`` last read ``member`` (see :meth:`mark_read`); the capacity if none."""
        first = self._rewritten.get(reader)
        return len(self.steps) if first is None else int(first[member])

    def mark_read(self, reader: Any, member: int) -> None:
        """Notes that ``reader`` has read ``member``'s rows as they are now."""
        first = self._rewritten.get(reader)
        if first is None:
            first = self._rewritten[reader] = np.full(self.members, len(self.steps), np.int64)
        first[member] = len(self.steps)

    def copy_for(self, member: int) -> RowGrid:
        """A grid of one series, as ``member`` sees this one now, for ``member`` to go on with alone."""
        self.departed += 1
        grid = RowGrid(len(self.steps))
        grid.steps[:] = self.steps
        grid.size, grid.stride = self.size, self.stride
        grid.appended, grid.latest_off_grid = self.appended, self.latest_off_grid
        for reader, first in self._rewritten.items():
            grid._rewritten[reader] = first[member : member + 1].copy()
        return grid


@functools.cache
def kept_appends(count: int, capacity: int) -> tuple[int, ...]:
    """Which of ``count`` appends a grid of ``capacity`` rows keeps in the end, by their order.

    A run read whole from a log makes only these rows: the others would be
    thinned away as the later ones arrive.

    Example:
      >>> kept_appends(7, 4)
      (0, 2, 4, 6)
      >>> kept_appends(8, 4)
      (0, 4, 7)
    """
    # What RowGrid.advance does, on counts alone: the rows kept are every
    # stride-th append, as thinning keeps every second row of such a grid,
    # and the last append where it is off the grid.
    size, stride, off_grid = 0, 1, False
    for appended in range(count):
        size -= off_grid
        if size == capacity:
            size, stride = (size + 1) // 2, 2 * stride
        size += 1
        off_grid = appended % stride != 0
    last = [count - 1] if off_grid else []
    return (*range(0, count - off_grid, stride), *last)
