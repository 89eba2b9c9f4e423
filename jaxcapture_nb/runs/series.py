"""The rows kept of each site: a ring of at most ``keep_steps`` rows spread over the whole run.

When a ring fills, every second row is dropped, so old steps thin out while
the latest are all kept and memory stays flat however long training runs
(see :mod:`jaxcapture_nb.runs.row_grid`). The sites of one compiled step
keep their rows side by side in a :class:`SeriesBlock`, so a recorded step
costs the host a few NumPy operations whatever the number of sites.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from jaxcapture_nb.capturing.recorder import site_label
from jaxcapture_nb.runs.row_grid import RowGrid
from jaxcapture_nb.runs.rows import RowLayout, hist_percentiles, saturated
from jaxcapture_nb.stats import pooling, schema
from jaxcapture_nb.stats.records import flat_stats
from jaxcapture_nb.stats.summary import Summary


class SiteSeries:
    """Recorded steps of one site: at most ``capacity`` rows spread over the run (see :mod:`_row_grid`).

    A series made by a :class:`SeriesBlock` keeps its rows in the block's
    tables and shares its grid until it gets a row of its own; then it
    takes a copy of both and goes on alone.
    """

    def __init__(
        self,
        label: str,
        kind: str,
        bins: int,
        capacity: int,
        layout: RowLayout | None = None,
        *,
        block: tuple[RowGrid, int, np.ndarray, np.ndarray] | None = None,
    ):
        self.label, self.kind, self.bins = label, kind, bins
        # The shape of the site's latest value; None for a run read from a log.
        self.shape: tuple[int, ...] | None = None
        self.layout = layout or RowLayout()
        if block is None:
            self.grid, self.member = RowGrid(capacity), 0
            self.stats = np.zeros((capacity, len(self.layout.columns)), np.float32)
            self.hists = np.zeros((capacity, bins), np.int32)
        else:
            self.grid, self.member, self.stats, self.hists = block
        self.last_step = -1  # the latest step a value arrived with
        # A scalar's wall time at each row (seconds since the epoch, NaN if
        # not known), for charts over time as TensorBoard draws them.
        self.walls = np.full(capacity, math.nan) if kind == "scalar" and block is None else None

    @property
    def steps(self) -> np.ndarray:
        """The step of each row; the first :attr:`size` are kept rows."""
        return self.grid.steps

    @property
    def size(self) -> int:
        return self.grid.size

    @property
    def columns(self) -> tuple[str, ...]:
        """The name of each column of :attr:`stats`."""
        return self.layout.columns

    def first_rewritten(self, reader: Any) -> int:
        """The first row rewritten since ``reader`` last called :meth:`mark_read`; the capacity if none."""
        return self.grid.first_rewritten(reader, self.member)

    def mark_read(self, reader: Any) -> None:
        """Notes that ``reader`` has read the rows as they are now."""
        self.grid.mark_read(reader, self.member)

    def row_of(self, summary: Summary) -> tuple[list[float], np.ndarray]:
        """The row of :attr:`columns` and the histogram of a summary, stacked ones pooled."""
        stats = flat_stats(summary)  # derived statistics included
        hist = pooling.pooled_counts(summary.hist, self.bins)
        lo, hi = pooling.pooled_range(summary.lo, summary.hi)
        stats |= {"lo": lo, "hi": hi}
        layout = self.layout
        row = [stats.get(c, math.nan) for c in layout.columns[: layout.first_percentile]]
        zeros = np.sum(summary.zero_count)
        percentiles = hist_percentiles(hist, lo, hi, stats["min"], stats["max"], layout.percentiles, zeros)
        return [*row, *percentiles], hist

    def append_row(self, step: int, stats: Any, hist: np.ndarray, wall: float = math.nan) -> bool:
        """Adds one row of :attr:`columns` and its histogram (and a scalar's wall time); True when rows were thinned."""
        if self.grid.members > 1:
            self._leave_block()
        tables = [self.stats, self.hists] if self.walls is None else [self.stats, self.hists, self.walls]
        row, thinned = self.grid.advance(step, tables)
        self.stats[row] = saturated(stats)
        self.hists[row] = hist
        if self.walls is not None:
            self.walls[row] = wall
        return thinned

    def _leave_block(self) -> None:
        self.grid, self.member = self.grid.copy_for(self.member), 0
        self.stats, self.hists = self.stats.copy(), self.hists.copy()


class SeriesBlock:
    """The series of sites a compiled step records together, their rows side by side in one table.

    Each recorded step adds a row to every series with one assignment. A
    series that gets a row another way leaves the block (see
    :meth:`SiteSeries.append_row`), and the block is no longer :meth:`intact`.
    """

    def __init__(self, sites: list[tuple[str, str]], bins: int, capacity: int, layout: RowLayout):
        n = len(sites)
        self.grid = RowGrid(capacity, n)
        # Steps off the grid whose rows were never made, each replaced by
        # the next: the grid moves past them as the next row is appended,
        # so no reader sees a row that was never written.
        self.passed: list[int] = []
        self.stats = np.zeros((capacity, n, len(layout.columns)), np.float32)
        self.hists = np.zeros((capacity, n, bins), np.int32)
        self.series = [
            SiteSeries(
                label, kind, bins, capacity, layout, block=(self.grid, j, self.stats[:, j], self.hists[:, j])
            )
            for j, (label, kind) in enumerate(sites)
        ]

    def intact(self) -> bool:
        """Whether every series still keeps its rows here."""
        return self.grid.departed == 0

    def replaced(self, count: int) -> np.ndarray:
        """For each of the next ``count`` rows appended, whether the row after it takes its place.

        The steps in :attr:`passed` come first: the grid has not moved past them yet.
        """
        passed = len(self.passed)
        return self.grid.replaced(passed + count)[passed:]

    def append(self, step: int, stats: np.ndarray, hists: np.ndarray) -> bool:
        """Adds a row to every series: ``stats`` ``[n, columns]`` (float32) and ``hists`` ``[n, bins]``.

        The grid first moves past the steps in :attr:`passed`. Returns
        whether rows were thinned.
        """
        thinned = False
        passed, self.passed = self.passed, []
        for earlier in passed:
            row, thinned_now = self.grid.advance(earlier, [self.stats, self.hists])
            thinned |= thinned_now
            if not self.grid.latest_off_grid:
                # Kept after all (the stride it was passed under changed): a gap, not another step's row.
                self.stats[row], self.hists[row] = np.nan, 0
        row, thinned_now = self.grid.advance(step, [self.stats, self.hists])
        thinned |= thinned_now
        self.stats[row] = stats
        self.hists[row] = hists
        return thinned


# The kind of the sites an evaluation's values are recorded as (see ``_clock``).
EVALUATION = "Evaluation"


def site_key(path: tuple[Any, ...], var_type: Any, name: str, index: int = 0) -> tuple[Any, str, str]:
    """The series key, label and kind of a sowed site; its ``index``-th value in a step is ``name[index]``.

    Example:
      >>> site_key(("blocks", 0), "Intermediate", "residual", 1)
      ((('blocks', 0), 'Intermediate', 'residual[1]'), 'blocks.0.residual[1]', 'Intermediate')
    """
    kind = getattr(var_type, "__name__", str(var_type))
    name = f"{name}[{index}]" if index else name
    return (path, kind, name), site_label(path, name), kind


# What a site's kind reads as in the live view: as in every view (see
# schema.RECORD_KINDS), and a value of an evaluation as one.
KIND_LABELS = {**schema.RECORD_KINDS, EVALUATION: "evaluation"}


def kind_label(kind: str) -> str:
    """The word the live view shows for a site's kind (the Variable type it was recorded as).

    Example:
      >>> kind_label("Perturbation"), kind_label("Gradient"), kind_label("Intermediate")
      ('activation', 'gradient', 'Intermediate')
    """
    return KIND_LABELS.get(kind, kind)


def flag_name(series: SiteSeries) -> str:
    """How the first-NaN flag names a site: a value and its gradient share a path, so say which."""
    if series.kind in ("Intermediate", "Summary", "scalar"):
        return series.label
    return f"{series.label} ({kind_label(series.kind)})"
