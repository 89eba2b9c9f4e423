"""Stream: the bounded history of summaries that :func:`watch` records.

A backend hands :meth:`Stream.deliver` what a model sowed, one
:class:`~jaxcapture_nb.core.protocols.Delivery` per step, numbered by the
stream's :class:`~jaxcapture_nb.core.clock.StepClock`: a compiled step's small
values as one table, larger ones as packed summary rows still on the
device, eager values as arrays; the training loop's own values arrive
through :meth:`Stream.log` and :meth:`Stream.update` as device arrays too. Nothing is read on the loop's
thread: :meth:`Stream.settle`, called from a background thread, fetches it.
The device work a value still needs (the summary of an array) is started as
it arrives, on the thread that hands it over, and dispatch returns at once;
the background thread only fetches what the device has finished. With
``jax.distributed`` a program over arrays of several processes runs only
when each process starts it, in the same order, and a background thread
would start it at a different moment on each one. Tables are the exception:
a step makes them only on one device, and a recorded step's table waits for
:meth:`Stream.settle` to summarize it, only if its row is kept (see
:class:`_TableRows`); the other tables of a long run cost the loop nothing.
Every site keeps a ring of at most ``keep_steps`` rows; when it fills, every
second row is dropped, so old steps thin out while the latest are all kept
and memory stays flat however long training runs (see :mod:`_row_grid`).
The sites of one compiled step keep their rows side by side in a
:class:`SeriesBlock`, so a recorded step costs the host a few NumPy
operations whatever the number of sites.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import numbers
import operator
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from jaxcapture_nb.capturing.recorder import Include, include_key, site_filter, site_label
from jaxcapture_nb.core.clock import StepClock, StepPace
from jaxcapture_nb.core.hosts import fetch_all, readable, replicated, to_host
from jaxcapture_nb.core.names import quoted
from jaxcapture_nb.core.protocols import BackendDrains, Delivery, PackedRow, RunWriter
from jaxcapture_nb.runs.row_grid import RowGrid
from jaxcapture_nb.stats import pooling, schema
from jaxcapture_nb.stats.batch import device_layout, nonfinite_values
from jaxcapture_nb.stats.records import flat_stats
from jaxcapture_nb.stats.reduced import float_fields
from jaxcapture_nb.stats.step_table import PackedRows, StepTable, TableSite, sizes_of
from jaxcapture_nb.stats.summary import (
    INT_FIELDS,
    Summary,
    check_bins,
    packed_row,
    stats_dtype,
    stats_words,
    unpack_summary,
)

# Where a summary's non-finite counts are among its integer fields.
_NONFINITE_FIELDS = [INT_FIELDS.index(f"{name}_count") for name in schema.NONFINITE_KEYS]

# Arrived items (a step's table, or one summary) recorded together by settle.
_RECORDED_TOGETHER = 64
_FLOAT32_MAX = np.finfo(np.float32).max


class RowLayout:
    """The columns of a live row, as the schema names them when the layout is made.

    A :class:`Stream` makes one as it is made, so all its rows have the same
    columns, a statistic added to the schema before then among them (see
    :func:`~jaxcapture_nb.stats.schema.live_columns`).

    Attributes:
      columns: the name of each column.
      percentiles: the percentiles of the last columns, ``p0`` .. ``p100``.
      derived: the derived statistics, whose columns come before the percentiles'.

    Example:
      >>> layout = RowLayout()
      >>> layout.columns[layout.mean], layout.derived, layout.percentiles[-1]
      ('mean', (), 100)
    """

    def __init__(self) -> None:
        self.columns = schema.live_columns()
        self.percentiles = schema.PERCENTILES
        index = self.columns.index
        self.mean, self.zero_pct = index("mean"), index("zero_pct")
        # Where a summary's float statistics and its non-finite counts go.
        self.floats = [index(name) for name in float_fields()]
        self.nonfinite = [index(name) for name in schema.NONFINITE_KEYS]
        self.first_percentile = index(f"p{self.percentiles[0]}")
        self.derived_columns = slice(self.floats[-1] + 1, self.first_percentile)
        self.derived = self.columns[self.derived_columns]


def saturated(stats: Any) -> np.ndarray:
    """Statistics as float32, the live view's type: finite float64 ones beyond its range saturate at its largest.

    The live view draws its rows in float32; a finite float64 value beyond
    3.4e38 then reads as that, rather than as infinite. An infinite value (a
    logged loss that overflowed) stays infinite.

    Example:
      >>> saturated(np.array([1e300, -1e300, 2.0, np.nan, np.inf])).tolist()[1:]
      [-3.4028234663852886e+38, 2.0, nan, inf]
    """
    if isinstance(stats, np.ndarray) and stats.dtype == np.float32:
        return stats  # within the range already: most rows, made by row_stats, are
    values = np.asarray(stats, np.float64)
    finite = np.isfinite(values)
    return np.where(finite, np.clip(values, -_FLOAT32_MAX, _FLOAT32_MAX), values).astype(np.float32)


class NonFiniteError(RuntimeError):
    """A watched value held a NaN or Inf, and ``stop_on_nonfinite`` was set.

    Attributes:
      site: the dotted path of the first site that held one.
      step: the step at which it did.
    """

    def __init__(self, site: str, step: int):
        self.site, self.step = site, step
        super().__init__(
            f"{site} held a NaN or Inf at step {step}. The model keeps the parameters of the last "
            "completed step; lower the learning rate, clip gradients, or watch with "
            "stop_on_nonfinite=False to see how the values evolve."
        )


def hist_percentiles(
    hist: np.ndarray, lo: Any, hi: Any, vmin: Any, vmax: Any, percentiles: tuple[int, ...] | None = None
) -> np.ndarray:
    """The ``percentiles`` of the values a histogram counts, interpolated in bins.

    The 0th and 100th are the exact minimum and maximum. Leading axes of
    ``hist`` (and of the other arguments) are histograms handled at once.
    ``percentiles`` defaults to the schema's
    (:data:`~jaxcapture_nb.stats.schema.PERCENTILES`).

    Example:
      >>> [round(float(p), 2) for p in hist_percentiles(np.array([1, 1, 1, 1]), 0.0, 4.0, 0.0, 4.0)]
      [0.0, 0.28, 0.64, 1.24, 2.0, 2.76, 3.36, 3.72, 4.0]
    """
    hist = np.asarray(hist)
    lead, bins = hist.shape[:-1], hist.shape[-1]
    counts = hist.reshape(-1, bins)
    n = len(counts)
    lo, hi, vmin, vmax = (_per_histogram(a, lead) for a in (lo, hi, vmin, vmax))
    cumulative = np.empty((n, bins + 1))
    cumulative[:, 0], cumulative[:, 1:] = 0, counts
    np.cumsum(cumulative, axis=1, out=cumulative)  # in place: faster than from int32 counts
    total = cumulative[:, -1:]
    percentiles = schema.PERCENTILES if percentiles is None else percentiles
    targets = np.array(percentiles) / 100 * total
    # As np.interp does: the last cumulative count at or below each target,
    # and a straight line to the next one. Bin edge k is lo + k * width.
    # The counts are whole, so "at or below" a target is "at or below its
    # floor"; shifting each histogram's counts and targets past the one
    # before it makes that one search of one sorted array, exact in float64.
    rows = np.arange(n)[:, None]
    shift = rows * (cumulative[:, -1].max(initial=0.0) + 1)
    found = np.searchsorted((cumulative + shift).ravel(), (np.floor(targets) + shift).ravel(), side="right")
    below = np.minimum(found.reshape(targets.shape) - rows * (bins + 1) - 1, bins)
    above = np.minimum(below + 1, bins)
    c0, c1 = cumulative[rows, below], cumulative[rows, above]
    rise = c1 - c0
    within = np.divide(targets - c0, rise, out=np.zeros_like(rise), where=rise > 0)
    out = lo + (below + within) * ((hi - lo) / bins)
    out[:, 0], out[:, -1] = vmin[:, 0], vmax[:, 0]
    out[total[:, 0] == 0] = np.nan
    return saturated(out).reshape(*lead, len(percentiles))


def row_stats(summaries: Summary, sizes: np.ndarray, layout: RowLayout | None = None) -> np.ndarray:
    """Rows of ``layout``'s columns for host summaries stacked along their first axis.

    Args:
      summaries: one :class:`Summary` whose arrays hold a summary per row,
        e.g. the unpacked table of many packed rows.
      sizes: the number of elements of each summarized array.
      layout: the columns; by default the schema's now.
    """
    layout = layout or RowLayout()
    stats, counts = summaries.stats, summaries.counts
    out = np.empty((len(stats), len(layout.columns)), np.float32)
    # Rows of a program compiled before a statistic was added lack it.
    made = min(stats.shape[1], len(layout.floats))
    out[:, layout.floats[:made]] = saturated(stats[:, :made])
    out[:, layout.floats[made:]] = np.nan
    out[:, layout.nonfinite] = counts[:, _NONFINITE_FIELDS]
    zeros = counts[:, INT_FIELDS.index("zero_count")]
    zero_pct = np.divide(100.0 * zeros, sizes, out=np.full(len(sizes), np.nan), where=sizes > 0)
    out[:, layout.zero_pct] = zero_pct
    out[:, layout.first_percentile :] = hist_percentiles(
        summaries.hist, summaries.lo, summaries.hi, summaries.min, summaries.max, layout.percentiles
    )
    if layout.derived:
        out[:, layout.derived_columns] = _derived_rows(summaries, zero_pct, layout)
    return out


def _derived_rows(summaries: Summary, zero_pct: np.ndarray, layout: RowLayout) -> np.ndarray:
    """The derived statistics of stacked summaries, one row each, from what ``flat_stats`` holds."""
    counts = summaries.counts
    fields = {
        name: np.asarray(summaries.statistic(name), np.float64)
        for name in float_fields()
        if name not in ("lo", "hi")
    }
    fields |= dict(zip(schema.NONFINITE_KEYS, counts[:, _NONFINITE_FIELDS].T, strict=True))
    fields |= {"count": counts[:, INT_FIELDS.index("count")], "zero_pct": zero_pct}
    rows = []
    for r in range(len(zero_pct)):
        stats = schema.with_derived({name: float(values[r]) for name, values in fields.items()})
        rows.append([stats.get(key, math.nan) for key in layout.derived])
    return saturated(rows)


def _per_histogram(a: Any, lead: tuple[int, ...]) -> np.ndarray:
    """``a`` as a float64 column with one row per histogram of leading shape ``lead``."""
    a = np.asarray(a, np.float64)
    return (a if a.shape == lead else np.broadcast_to(a, lead)).reshape(-1, 1)


def _one_array_summary(value: Any) -> bool:
    """A summary of one array (not stacked by scan/vmap): one row of a batch in ``settle``."""
    return isinstance(value, Summary) and value.reason is None and np.ndim(value.counts) == 1


@dataclasses.dataclass(frozen=True)
class _Row:
    """A packed summary row (on the device until settled), and the shape and dtype of its array."""

    row: Any
    shape: tuple[int, ...]
    dtype: Any
    slot: int | None = None  # the row's index among a table's packed rows, or None for one row


class _TableSites:
    """The series of a :class:`StepTable`'s sites, found once for all the tables of a trace.

    ``block`` holds their rows when the series were made for these sites.
    """

    def __init__(
        self,
        sites: tuple[TableSite, ...],
        series: list[SiteSeries],
        block: SeriesBlock | None,
    ):
        self.sites, self.series, self.block = sites, series, block
        self.sizes = np.array(sizes_of(sites), np.float64)
        self.layout = device_layout(sizes_of(sites))
        self.stats_type = stats_dtype(sites[0].dtype)  # the float type of their summaries
        self.last_step = -1  # the latest step a table arrived with
        # Tables whose summaries wait for settle (see Stream._add_table): how
        # many, and the latest, which keeps its values until the next arrives.
        self.waiting = 0
        self.latest_waiting: _TableRows | None = None


@dataclasses.dataclass
class _TableRows:
    """A recorded step's table: its packed rows, or its values until settle knows whether it needs them.

    A table whose rows go into its block (see ``Stream._in_block``) waits
    with its values and the step's flags of its rows that hold a NaN or an
    Inf: most such steps are replaced by the next before anyone reads them
    (see :mod:`jaxcapture_nb.runs.row_grid`), and need only the flags. Once a
    later table of the block arrives, one of those lets its values go.
    """

    sites: _TableSites
    packed: PackedRows | None = None  # on the device until settled
    values: Any = None  # the table itself, while its summaries may still be wanted
    nonfinite: Any = None  # [rows] bools (StepTable.flags), for a table that waits
    # Where the row would go among its block's appends: off the grid of kept
    # steps under the current stride, it is off the grid under any later one.
    append: int = 0

    @property
    def waits(self) -> bool:
        return self.nonfinite is not None

    @property
    def let_go(self) -> bool:
        """Whether the values were let go: a later table replaces this one's row."""
        return self.waits and self.packed is None and self.values is None

    @property
    def unstacked(self) -> bool:
        """Whether the table holds one step's rows (no axes stacked by ``scan`` or ``vmap``)."""
        if self.waits:
            return True
        table = self.packed if self.packed is not None else self.values.table
        return len(table.shape) == 2


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
        return [*row, *hist_percentiles(hist, lo, hi, stats["min"], stats["max"], layout.percentiles)], hist

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


class Stream(BackendDrains):
    """Where a watched model's summaries go; the recorder of :func:`watch`.

    Args:
      bins: histogram bins.
      include: keep only matching sites (as for :func:`capture`).
      every: record one step in ``every`` (see :meth:`records_step`).
      keep_steps: rows kept per site.
      grads: also record gradients of perturbed values.
      steps: how steps are counted (see ``_clock``).
      start_step: the number of the first step (a resumed run).
    """

    # What the backends may rely on (see SiteRecorder).
    summarizes_in_trace = True
    holds_values = False
    keeps_every_value = True

    def __init__(
        self,
        *,
        bins: int,
        include: Include,
        every: int,
        keep_steps: int,
        grads: bool,
        steps: str = "calls",
        start_step: int = 0,
    ):
        check_bins(bins)
        if not isinstance(every, int) or every < 1:
            raise ValueError(f"every must be a positive integer, got {every!r}")
        if not isinstance(keep_steps, int) or keep_steps < 2:
            raise ValueError(f"keep_steps must be an integer of at least 2, got {keep_steps!r}")
        self.bins, self.every, self.keep_steps, self.grads = bins, every, keep_steps, grads
        self._accepts_site = site_filter(include)
        # A compiled step that records one step in ``every`` gates its summaries on it.
        self.policy = ("stream", bins, include_key(include), grads, every)
        # The columns of every row, as the schema names them now.
        self.layout = RowLayout()
        self.series: dict[Any, SiteSeries] = {}
        self.scalars: dict[str, SiteSeries] = {}
        self.version = 0  # changes whenever rows were dropped
        self.first_nonfinite: tuple[str, int] | None = None
        self.first_nonfinite_series: SiteSeries | None = None  # the site or scalar it names
        self._first_nonfinite_at: tuple[int, int] | None = None  # (step, order within the step)
        self._arrivals = itertools.count()
        self.pace = StepPace()  # steps a second, for the progress line
        self.ended = False  # no more rows will come: its watch has ended, or it was read from a log
        # Why the run ended early ("interrupted", "stopped by ValueError"); None if it ran to its end.
        self.end_reason: str | None = None
        # Whether a thread sends the view its progress while the run goes on,
        # so that the view can tell a silent kernel (see LiveView's beat).
        self.beating = False
        self.lock = threading.RLock()
        self._settling = threading.Lock()  # one settle() at a time, so rows keep their order
        self._scalars_queued: list[tuple[str, int, Any, float]] = []  # (name, step, value, wall time)
        self._selected: dict[Any, list[tuple[int, str]]] = {}  # update()'s leaves per tree structure
        # (series, or a table's sites, step, order, value)
        self._arrived: list[tuple[Any, int, int, Any]] = []
        # Numbers every step; the only thing that does.
        self.clock = StepClock(steps, every, start_step)
        super().__init__()
        # Counting marked steps, the values each site had in the latest step
        # delivered: a later call's values of the site follow them (name[k]).
        self._in_step: tuple[int, dict[Any, int]] = (-1, {})
        # The sites of each trace's table, by the identity of its sites tuple
        # (the same object every call of a compiled step hands over) and, for
        # marked steps, the indices its sites' values move on by, and whether they are an evaluation's.
        self._tables: dict[tuple[int, tuple[int, ...], bool], _TableSites] = {}
        self._thread = threading.get_ident()  # the training loop's
        self._orders: dict[Any, int] = {}  # per site, when its first value was sowed (see _list_in_order)
        # Called on the training loop's thread after each call that handed over rows.
        self.after_call: list[Callable[[], None]] = []
        # Handed every row as it is recorded, on the thread that settles and
        # under the lock (see RunWriter): a step's rows of a table at once, as
        # the block keeps them; scalars are series of kind "scalar". A writer
        # wants every row, so no table is left unsummarized (see _waits).
        self.writers: list[RunWriter] = []

    # -- the recorder interface a backend uses (see SiteRecorder) -----------------

    def accepts(self, path: tuple[Any, ...], name: str) -> bool:
        return bool(self._accepts_site(site_label(path, name)))

    def records_step(self, step: Any) -> Any:
        """Whether step ``step`` is recorded: one in ``every``, from step 0 (traced or not).

        Example:
          >>> stream = Stream(bins=8, include=None, every=3, keep_steps=10, grads=False)
          >>> [step for step in range(7) if stream.records_step(step)]
          [0, 3, 6]
        """
        return step % self.every == 0

    def deliver(self, delivery: Delivery) -> None:
        """Records a step's values (thread-safe); see ``SiteRecorder.deliver``.

        A step :meth:`records_step` turns away costs a comparison: its table
        is not summarized, and its rows are only counted. A recorded table
        starts its summaries on the device (or waits for :meth:`settle`, see
        :class:`_TableRows`) and is queued for :meth:`settle` as one item.
        Values that may arrive again for their step (``repeatable``: a
        forward pass that ``remat`` recomputes calls back again) are
        recorded once. An evaluation's values (see ``_clock``) go to sites
        of their own, of kind ``"Evaluation"``, beside the training
        step's; of several evaluations at one training step (the batches
        of a validation loop), each site keeps the first.
        """
        step = delivery.step
        evaluation = delivery.evaluation is not None
        recorded = self.records_step(step if delivery.evaluation is None else delivery.evaluation)
        self.clock.saw(step)
        with self.lock:
            offsets = self._offsets(delivery)
            for item in delivery.items:
                if not self.accepts(item.path, item.name):
                    continue
                index = item.index + offsets.get((item.path, item.var_type, item.name), 0)
                var_type = EVALUATION if evaluation else item.var_type
                series = self._series(*_site(item.path, var_type, item.name, index), item.order)
                if (delivery.repeatable or evaluation) and step <= series.last_step:
                    continue
                series.last_step = max(series.last_step, step)
                if recorded:
                    self._queue(series, _as_row(item.value), step, item.order)
        for table in delivery.tables:
            self._add_table(table, step, recorded, offsets, evaluation)
        if threading.get_ident() == self._thread:
            for listener in self.after_call:
                listener()

    def _offsets(self, delivery: Delivery) -> dict[Any, int]:
        """Counting marked steps, how far each site's indices move on: past the values earlier calls of the step delivered."""
        if not self.clock.marked:
            return {}
        step, counts = self._in_step
        if step != delivery.step:
            counts = {}
            self._in_step = (delivery.step, counts)
        offsets = dict(counts)
        sites = [(i.path, i.var_type, i.name, i.index) for i in delivery.items]
        sites += [(s.path, s.var_type, s.name, s.index) for t in delivery.tables for s in t.sites]
        for path, var_type, name, index in sites:
            key = (path, var_type, name)
            counts[key] = max(counts.get(key, 0), offsets.get(key, 0) + index + 1)
        return offsets

    def _add_table(
        self, table: StepTable, step: int, recorded: bool, offsets: dict[Any, int], evaluation: bool = False
    ) -> None:
        """Records a call's table of small values (see :mod:`jaxcapture_nb.stats.step_table`) at ``step``."""
        moved = tuple(offsets.get((s.path, s.var_type, s.name), 0) for s in table.sites) if offsets else ()
        with self.lock:
            sites = self._table_sites(table, moved if any(moved) else (), evaluation)
            if evaluation and step <= sites.last_step:
                return  # a later batch of the same evaluation: the first is kept
            sites.last_step = max(sites.last_step, step)
            if not recorded:
                return
        if self._waits(sites, table):
            self._wait(sites, step, table)
            return
        if not isinstance(table.table, jax.Array):
            # From a host callback, on the runtime's thread: summarized when the stream settles.
            with self.lock:
                self._arrived.append((sites, step, 0, _TableRows(sites, values=table)))
            return
        packed = table.packed(self.bins, sites.layout)
        with self.lock:
            self._arrived.append((sites, step, 0, _TableRows(sites, packed=packed)))

    def _waits(self, sites: _TableSites, table: StepTable) -> bool:
        """Whether a recorded table waits for settle to decide if its summaries are made (see :class:`_TableRows`)."""
        return (
            table.table.ndim == 2
            and isinstance(table.flags, jax.Array)
            and sites.block is not None
            and sites.block.intact()
            and not self.writers
        )

    def _wait(self, sites: _TableSites, step: int, table: StepTable) -> None:
        """Queues a table that waits, with its flags, and lets the previous one's values go if a row of it would not be kept."""
        rows = _TableRows(sites, values=table, nonfinite=table.flags)
        with self.lock:
            block = sites.block
            rows.append = block.grid.appended + len(block.passed) + sites.waiting
            previous = sites.latest_waiting
            # Values settle has not taken yet (it takes them under the lock).
            if previous is not None and previous.values is not None and previous.append % block.grid.stride:
                previous.values = None
            sites.waiting += 1
            sites.latest_waiting = rows
            self._arrived.append((sites, step, 0, rows))

    def _table_sites(self, table: StepTable, moved: tuple[int, ...], evaluation: bool = False) -> _TableSites:
        """The series of a table's sites (their summaries started compiling as the step was traced)."""
        sites = table.sites
        found = self._tables.get((id(sites), moved, evaluation))
        if found is None or found.sites is not sites:
            indices = moved or (0,) * len(sites)
            named = [
                _site(s.path, EVALUATION if evaluation else s.var_type, s.name, s.index + k)
                for s, k in zip(sites, indices, strict=True)
            ]
            block = None
            if len({key for key, _, _ in named}) == len(named) and not any(
                key in self.series for key, _, _ in named
            ):
                block = SeriesBlock(
                    [(label, kind) for _, label, kind in named], self.bins, self.keep_steps, self.layout
                )
                for (key, _, _), made in zip(named, block.series, strict=True):
                    self.series[key] = made
            series = [self._series(*site, s.order) for site, s in zip(named, sites, strict=True)]
            for one, site in zip(series, sites, strict=True):
                one.shape = site.shape
            found = self._tables[(id(sites), moved, evaluation)] = _TableSites(sites, series, block)
        return found

    # -- what the training loop hands over ----------------------------------------

    def log(self, step: int, scalars: dict[str, Any]) -> None:
        """Queues scalars (device arrays are read later, off the loop's thread).

        A value split across processes is replicated first, here: device work
        is started on the thread that hands the value over.

        Raises:
          TypeError: ``step`` is not a whole number, or a scalar is neither a
            number nor an array of numbers (see :func:`_checked_scalar`).
            Nothing is queued then, and the stream goes on as before.
        """
        step = _step_number(step, "log")
        scalars = {name: _checked_scalar(name, value) for name, value in scalars.items()}
        values = [(name, replicated(value)) for name, value in scalars.items()]
        wall = time.time()
        self.clock.saw(step)
        with self.lock:
            self._scalars_queued.extend((name, step, value, wall) for name, value in values)

    def update(self, step: int, summaries: Any) -> None:
        """Records a pytree of :class:`Summary` (or arrays) made by the user's step.

        Only the leaves ``include`` selects are kept. Nothing is read here:
        :meth:`settle` fetches the summaries' arrays later. The summaries of
        arrays are started here, on the device, and dispatch returns at once.

        Raises:
          TypeError: ``step`` is not a whole number, or a leaf of
            ``summaries`` is neither a :class:`Summary` nor an array. Nothing
            is recorded then, and the stream goes on as before.
        """
        step = _step_number(step, "update")
        leaves, treedef = jax.tree.flatten(summaries, is_leaf=lambda x: isinstance(x, Summary))
        _check_summaries(summaries, leaves)
        selected = self._selected.get(treedef)
        if selected is None:
            selected = self._selected[treedef] = self._select(summaries)
        labelled = [(label, leaves[i]) for i, label in selected]
        for label, v in labelled:
            if isinstance(v, Summary) and v.counts is not None and v.bins != self.bins:
                raise ValueError(
                    f"update(): the summary of {label!r} has {v.bins} bins and this view shows "
                    f"{self.bins}; make it with summarize(..., bins={self.bins}) or watch with bins={v.bins}"
                )
        labelled = [(label, _readable_summary(v)) for label, v in labelled]
        self.clock.saw(step)
        if not self.records_step(step):
            return
        with self.lock:
            for label, v in labelled:
                series = self._series(("update", label), label, "Summary")
                series.last_step = max(series.last_step, step)
                self._queue(series, v, step)

    def _select(self, summaries: Any) -> list[tuple[int, str]]:
        """The position and label of every leaf ``include`` accepts, for one tree structure.

        A training loop hands over the same structure every step, so the
        labels are made once per structure, not per step.
        """
        paths = jax.tree_util.tree_flatten_with_path(summaries, is_leaf=lambda x: isinstance(x, Summary))[0]
        labels = [jax.tree_util.keystr(k, simple=True, separator=".") or "value" for k, _ in paths]
        return [(i, label) for i, label in enumerate(labels) if self._accepts_site(label)]

    def settle(self, wait: bool = True) -> None:
        """Fetches and records the values that arrived and the scalars :meth:`log` queued.

        Calls from several threads take turns, so rows are always recorded in
        the order they came.

        Args:
          wait: wait until the device has computed every queued value, and
            record them all. False records only the values already computed
            and leaves the rest for a later call: a training loop dispatches
            steps ahead of the device, and waiting for the last one queued
            would hold the view back by every step the loop has queued.
        """
        with self._settling:
            self._settle(wait)

    def _settle(self, wait: bool) -> None:
        self.drain(final=False)  # what host callbacks left, for the steps they finished
        with self.lock:
            queued = self._scalars_queued
            done = len(queued) if wait else _computed_prefix(queued, lambda item: (item[2],))
            queued, self._scalars_queued = queued[:done], queued[done:]
        for name, step, value, wall in queued:
            self._scalar(name, step, float(to_host(value).astype(np.float64).mean()), wall)
        self._record_arrived(wait)

    def scalar_series(self, name: str) -> SiteSeries:
        """The series of scalar ``name``, made on first use."""
        with self.lock:
            series = self.scalars.get(name)
            if series is None:
                series = self.scalars[name] = SiteSeries(name, "scalar", 1, self.keep_steps, self.layout)
            return series

    def scalar_row(self, value: float) -> np.ndarray:
        """A scalar's row: its value as the mean, every other statistic NaN."""
        row = np.full(len(self.layout.columns), np.nan, np.float32)
        row[self.layout.mean] = value
        return row

    def _scalar(self, name: str, step: int, value: float, wall: float = math.nan) -> None:
        with self.lock:
            series = self.scalar_series(name)
            self.add_scalar_row(series, step, value, wall)
            if not math.isfinite(value):
                # After the sites of the same step, which say where it began.
                self.flag_nonfinite(series, step, sys.maxsize)

    # -- what a reader of saved runs fills a stream with (see _run_sources) ------

    def site_series(self, key: Any, label: str, kind: str) -> SiteSeries:
        """The series of a site, by a key of the reader's choosing, made on first use with ``label`` and ``kind``."""
        with self.lock:
            return self._series(key, label, kind)

    def add_scalar_row(self, series: SiteSeries, step: int, value: float, wall: float = math.nan) -> None:
        """Records ``value`` of a scalar's series (:meth:`scalar_series`) at ``step``, logged at ``wall``."""
        with self.lock:
            if series.append_row(step, self.scalar_row(value), np.ones(1, np.int32), wall):
                self.version += 1
            self._recorded(series, step)

    def _queue(self, series: SiteSeries, value: Any, step: int, order: int | None = None) -> None:
        """Queues a value of a recorded step for :meth:`settle`.

        Host callbacks call this from the runtime's thread while the device
        waits for them, and compiled steps' rows arrive on the loop's thread,
        so only cheap bookkeeping happens here, and for an array (which only
        the loop's thread hands over) the dispatch of its summary; statistics,
        rows and the non-finite flag are made in :meth:`settle`.

        Args:
          series: the site's series.
          value: a summary, a packed row or an array.
          step: the step it belongs to.
          order: when it was sowed in its step's trace.
        """
        if not isinstance(value, Summary | _Row | jax.Array | np.ndarray):
            return
        with self.lock:
            if not isinstance(value, Summary | _Row):
                value = self._summary_row(value)
                if value is None:
                    return
            order = next(self._arrivals) if order is None else order
            self._arrived.append((series, step, order, value))

    def _summary_row(self, value: jax.Array | np.ndarray) -> _Row | None:
        """The packed summary of an array, dispatched to the device now; None if it has none.

        Arrays of PRNG keys, strings or objects have no statistics.
        """
        if isinstance(value, np.ndarray) and not (
            np.issubdtype(value.dtype, np.number) or value.dtype == bool
        ):
            return None
        if jax.dtypes.issubdtype(value.dtype, jax.dtypes.prng_key):
            return None
        return _Row(packed_row(value, bins=self.bins), tuple(value.shape), value.dtype)

    def _series(self, key: Any, label: str, kind: str, order: int | None = None) -> SiteSeries:
        series = self.series.get(key)
        if series is None:
            series = self.series[key] = SiteSeries(label, kind, self.bins, self.keep_steps, self.layout)
            if order is not None:
                self._list_in_order(key, order)
        return series

    def _list_in_order(self, key: Any, order: int) -> None:
        """Lists a new site among the others by when it was sowed while tracing.

        Host callbacks of sites that do not depend on each other may run in
        either order; the view lists sites in the order the model computes them.
        """
        self._orders[key] = order
        later = [k for k in self.series if self._orders.get(k, -1) > order]
        if later:
            for k in later:
                self.series[k] = self.series.pop(k)

    def flag_nonfinite(self, series: SiteSeries, step: int, order: int) -> None:
        """Notes a site that held a NaN or Inf, keeping the earliest step and, within it, site."""
        if self._first_nonfinite_at is None or (step, order) < self._first_nonfinite_at:
            self._first_nonfinite_at = (step, order)
            self.first_nonfinite = (flag_name(series), step)
            self.first_nonfinite_series = series

    def _record_arrived(self, wait: bool) -> None:
        with self.lock:
            arrived = self._arrived
            done = len(arrived) if wait else _computed_prefix(arrived, lambda item: _device_arrays(item[-1]))
            arrived, self._arrived = arrived[:done], arrived[done:]
        # A settle after a long wait has thousands of items. Recording them in
        # bounded parts keeps the arrays made for them small, so a long run
        # reuses the same memory instead of asking for more on each settle.
        for start in range(0, len(arrived), _RECORDED_TOGETHER):
            part = arrived[start : start + _RECORDED_TOGETHER]
            replaced = self._summarize(part)
            if not wait:
                # The summaries just started run behind the steps the loop has
                # queued since: waiting for them would hold the loop (which
                # may be the caller) by a whole step. The next settle takes them.
                ready = _computed_prefix(part, lambda item: _device_arrays(item[-1]))
                if ready < len(part):
                    with self.lock:
                        self._arrived = part[ready:] + arrived[start + _RECORDED_TOGETHER :] + self._arrived
                    self._record(part[:ready], replaced)
                    return
            self._record(part, replaced)

    def _summarize(self, arrived: list[tuple[Any, int, int, Any]]) -> list[bool]:
        """Starts the summaries of the arrived tables whose rows are kept; for each table, whether it is replaced.

        A replaced table (see :meth:`_replaced`) needs only its flags, or its
        counts if it was summarized already, and its values are let go.
        """
        tables = [value for *_, value in arrived if isinstance(value, _TableRows)]
        with self.lock:
            replaced = self._replaced(tables) if len(tables) == len(arrived) else [t.let_go for t in tables]
            kept = [rows.values if not gone else None for rows, gone in zip(tables, replaced, strict=True)]
            for rows in tables:
                rows.values = None
        for rows, table in zip(tables, kept, strict=True):
            if table is not None:
                rows.packed = table.packed(self.bins, rows.sites.layout)
        return replaced

    def _record(self, arrived: list[tuple[Any, int, int, Any]], replaced: list[bool]) -> None:
        """Records arrived items in their order: tables in one transfer, the rest one fetch each.

        ``replaced`` says, for each table among them, whether the next step
        takes its place (see :meth:`_summarize`). The statistics of all the
        tables' unstacked rows, and of all single summaries, are made at once,
        except for replaced rows.
        """
        tables = [value for *_, value in arrived if isinstance(value, _TableRows)]
        replaced = replaced[: len(tables)]
        # A replaced table that waited and was never summarized needs only its flags; the rest, their packed rows.
        wanted = [rows.packed.rows if rows.packed is not None else rows.nonfinite for rows in tables]
        fetched = [
            rows.packed.final(host)[..., : len(rows.sites.sites), :] if rows.packed is not None else host
            for rows, host in zip(tables, fetch_all(wanted), strict=True)
        ]
        made = self._table_statistics(tables, fetched, replaced)
        table_rows = iter(zip(fetched, made, replaced, strict=True))
        on_host = [
            value if isinstance(value, _TableRows) else _on_host(value, self.bins) for *_, value in arrived
        ]
        single = [value for value in on_host if _one_array_summary(value)]
        if single:
            stacked = Summary(
                stats=np.stack([v.stats for v in single]), counts=np.stack([v.counts for v in single])
            )
            sizes = np.array([math.prod(v.shape) for v in single], np.float64)
            batch = iter(zip(row_stats(stacked, sizes, self.layout), stacked.hist, strict=True))
        for (series, step, order, _), value in zip(arrived, on_host, strict=True):
            if isinstance(value, _TableRows):
                packed, rows_made, gone = next(table_rows)
                if gone:
                    self._flag_table(value, step, packed)
                    with self.lock:
                        value.sites.block.passed.append(step)
                        value.sites.waiting -= value.waits
                else:
                    self._record_table(value, step, packed, rows_made)
                continue
            series.shape = (*value.stacked_shape, *value.shape)
            if _one_array_summary(value):
                self.add_row(series, step, order, *next(batch))
            elif value.reason is None:
                self.add_row(series, step, order, *series.row_of(value))

    def _replaced(self, tables: list[_TableRows]) -> list[bool]:
        """Which tables' rows a later table of the same block replaces: their statistics need not be made.

        A history keeps one step in its stride and the latest one (see
        :mod:`jaxcapture_nb.runs.row_grid`), so in a long run most steps are
        replaced by the next before anyone reads them. Only tables that take
        the fast path of :meth:`_record_table` count, and those whose values
        were let go (see :meth:`_wait`).
        """
        replaced = [rows.let_go for rows in tables]
        if self.writers:
            return replaced
        positions: dict[int, list[int]] = {}
        for i, rows in enumerate(tables):
            if self._in_block(rows, unstacked=rows.unstacked):
                positions.setdefault(id(rows.sites.block), []).append(i)
        for members in positions.values():
            block = tables[members[0]].sites.block
            for i, gone in zip(members, block.replaced(len(members)), strict=True):
                replaced[i] |= bool(gone)
        return replaced

    def _table_statistics(
        self, tables: list[_TableRows], fetched: list[np.ndarray], replaced: list[bool]
    ) -> list[tuple[np.ndarray, np.ndarray] | None]:
        """The rows of :attr:`layout` and the histograms of each table's sites; None for stacked or replaced tables."""
        wanted = [packed.ndim == 2 and not gone for packed, gone in zip(fetched, replaced, strict=True)]
        plain = [(rows, packed) for rows, packed, w in zip(tables, fetched, wanted, strict=True) if w]
        if not plain:
            return [None] * len(tables)
        words = [stats_words(rows.sites.stats_type) for rows, _ in plain]
        summaries = Summary(
            stats=np.concatenate(
                [
                    p[:, :w].view(rows.sites.stats_type).astype(np.float64)
                    for (rows, p), w in zip(plain, words, strict=True)
                ]
            ),
            counts=np.concatenate([p[:, w:] for (_, p), w in zip(plain, words, strict=True)]),
        )
        stats = row_stats(summaries, np.concatenate([rows.sites.sizes for rows, _ in plain]), self.layout)
        hists = summaries.hist
        ends = np.cumsum([len(p) for _, p in plain])
        parts = iter(zip(np.split(stats, ends[:-1]), np.split(hists, ends[:-1]), strict=True))
        return [next(parts) if w else None for w in wanted]

    def _flag_table(self, rows: _TableRows, step: int, fetched: np.ndarray) -> None:
        """Flags the sites of a replaced table that held a NaN or Inf, from its flags or its counts alone."""
        if rows.packed is None:  # what was fetched is its flags
            if fetched.any():  # most steps hold none: their rows need not be told apart
                self._flag_sites(rows.sites, step, nonfinite_values(fetched, rows.sites.sizes))
            return
        counts = fetched[:, stats_words(rows.sites.stats_type) :]
        self._flag_sites(rows.sites, step, counts[:, _NONFINITE_FIELDS].sum(axis=1) > 0)

    def _flag_sites(self, sites: _TableSites, step: int, held: np.ndarray) -> None:
        """Flags the sites of a table whose entry in ``held`` is True (they held a NaN or Inf)."""
        for k in np.flatnonzero(held):
            with self.lock:
                self.flag_nonfinite(sites.series[k], step, sites.sites[k].order)

    def _in_block(self, rows: _TableRows, unstacked: bool) -> bool:
        """Whether a table's rows go into its sites' block with one assignment (see :meth:`_record_table`)."""
        block = rows.sites.block
        return unstacked and block is not None and block.intact()

    def _record_table(
        self,
        rows: _TableRows,
        step: int,
        packed: np.ndarray,
        made: tuple[np.ndarray, np.ndarray] | None,
    ) -> None:
        """Records a step's rows of a table; ``made`` holds their statistics and histograms, if unstacked."""
        sites = rows.sites
        if made is not None and self._in_block(rows, unstacked=True):
            stats, hists = made
            with self.lock:
                # In one turn of the lock with the grid's advance: a table
                # arriving in between (see _wait) would count this row twice
                # or not at all, and let go of a row the grid keeps.
                sites.waiting -= rows.waits
                if sites.block.append(step, stats, hists):
                    self.version += 1
                self._flag_sites(sites, step, stats[:, self.layout.nonfinite].sum(axis=1) > 0)
                for writer in self.writers:
                    writer.add_rows(sites.series, step, stats, hists)
            return
        with self.lock:
            sites.waiting -= rows.waits  # its row is made now, as the grid moves on
        for k, (site, series) in enumerate(zip(sites.sites, sites.series, strict=True)):
            if made is not None:
                series.shape = site.shape
                self.add_row(series, step, site.order, made[0][k], made[1][k])
                continue
            summary = unpack_summary(packed[..., k, :], site.shape, site.dtype, self.bins)
            series.shape = (*summary.stacked_shape, *site.shape)
            self.add_row(series, step, site.order, *series.row_of(summary))

    def add_row(self, series: SiteSeries, step: int, order: int, stats: Any, hist: np.ndarray) -> None:
        """Records a site's row at ``step``: its statistics (as :func:`row_stats` makes them) and histogram.

        ``order`` places the site among those of a step whose first NaN or
        Inf it may hold (see :meth:`flag_nonfinite`).
        """
        with self.lock:
            if series.append_row(step, stats, hist):
                self.version += 1
            if series.stats[series.size - 1, series.layout.nonfinite].sum() > 0:
                self.flag_nonfinite(series, step, order)
            self._recorded(series, step)

    def _recorded(self, series: SiteSeries, step: int) -> None:
        """Tells the clock a row was recorded at ``step`` (a run a reader fills has no other count), and hands it to the :attr:`writers`."""
        self.clock.saw(step)
        row = series.size - 1
        for writer in self.writers:
            writer.add_rows((series,), step, series.stats[row : row + 1], series.hists[row : row + 1])

    # -- reading -----------------------------------------------------------------

    @property
    def steps_seen(self) -> int:
        """How many steps have begun, as the clock counts them (see ``StepClock.saw``)."""
        return self.clock.steps_seen

    @property
    def ended_as(self) -> str:
        """How the run ended early, for the views: "interrupted at step 442"; "" if it ran to its end."""
        return f"{self.end_reason} at step {self.steps_seen}" if self.end_reason else ""

    def nbytes(self) -> int:
        """Host memory held by the recorded rows."""
        with self.lock:
            tables = [
                t
                for s in (*self.series.values(), *self.scalars.values())
                for t in (s.steps, s.stats, s.hists)
            ]
            return sum(t.nbytes for t in tables)


def _as_row(value: Any) -> Any:
    """A delivered value as the stream queues it: a packed row as a :class:`_Row`."""
    return _Row(value.row, value.shape, value.dtype) if isinstance(value, PackedRow) else value


def _device_arrays(value: _Row | _TableRows | Summary) -> tuple[Any, ...]:
    """The arrays of an arrived value that may still be on their way from the device."""
    if isinstance(value, _Row):
        return (value.row,)
    if isinstance(value, _TableRows):
        return (value.packed.rows,) if value.packed is not None else (value.nonfinite,)
    return (value.stats, value.counts)


def _on_host(value: _Row | Summary, bins: int) -> Summary:
    """An arrived packed row or summary, as a :class:`Summary` of NumPy arrays (a fetch, no device work)."""
    if isinstance(value, _Row):
        row = to_host(value.row)
        return unpack_summary(
            row if value.slot is None else row[..., value.slot, :], value.shape, value.dtype, bins
        )
    return value.to_numpy()


def _readable_summary(value: Any) -> Any:
    """A summary whose arrays every process can read: split ones are replicated, now.

    Example:
      >>> s = Summary(stats=np.zeros(6), counts=np.zeros(9))
      >>> _readable_summary(s) is s
      True
    """
    if not isinstance(value, Summary) or (readable(value.stats) and readable(value.counts)):
        return value
    return dataclasses.replace(value, stats=replicated(value.stats), counts=replicated(value.counts))


def _step_number(step: Any, method: str) -> int:
    """``step`` as an int, checked where the loop hands it over rather than when it is drawn.

    Example:
      >>> _step_number(np.int64(3), "log")
      3
    """
    try:
        return operator.index(step)
    except TypeError:
        raise TypeError(
            f"{method}(): step is the training step, a whole number; got {type(step).__name__} {quoted(step)}"
        ) from None


def _checked_scalar(name: str, value: Any) -> Any:
    """``value`` if it is a scalar :meth:`Stream.log` can record: a real number, or an array of them.

    An array of several numbers is logged as their mean. Anything else
    would only fail when the background thread reads it, after the loop
    has moved on, so it is refused here.

    Raises:
      TypeError: naming the scalar and what it is.
    """
    if isinstance(value, numbers.Real):
        return value
    if isinstance(value, jax.Array | np.ndarray):
        dtype = value.dtype
        real = jax.dtypes.issubdtype(dtype, np.bool_) or (
            jax.dtypes.issubdtype(dtype, np.number) and not jax.dtypes.issubdtype(dtype, np.complexfloating)
        )
        if real and value.size:
            return value
        what = f"a {type(value).__name__} of dtype {dtype} and shape {tuple(value.shape)}"
    else:
        what = f"a {type(value).__name__}: {quoted(value)}"
    raise TypeError(
        f"log(): the scalar {name!r} takes a number or an array of real numbers (a jax loss is fine), got {what}"
    )


def _check_summaries(summaries: Any, leaves: list[Any]) -> None:
    """Refuses ``update()`` summaries with a leaf that is neither a :class:`Summary` nor an array.

    Raises:
      TypeError: naming the first such leaf.
    """
    if all(isinstance(v, Summary | jax.Array | np.ndarray) for v in leaves):
        return
    paths = jax.tree_util.tree_flatten_with_path(summaries, is_leaf=lambda x: isinstance(x, Summary))[0]
    where, bad = next((k, v) for k, v in paths if not isinstance(v, Summary | jax.Array | np.ndarray))
    place = f"its leaf {jax.tree_util.keystr(where)} is" if where else "got"
    raise TypeError(
        "update(): summaries must be a pytree of Summary from summarize() (or of arrays, summarized here); "
        f"{place} a {type(bad).__name__}: {quoted(bad)}"
    )


def _computed_prefix(items: list[Any], arrays_of: Callable[[Any], tuple[Any, ...]]) -> int:
    """How many of ``items``, from the first, hold only arrays the device has finished computing.

    Steps finish in the order they were dispatched, so the first item with
    an array of ``arrays_of(item)`` still being computed ends the prefix.
    """
    for i, item in enumerate(items):
        if not all(a.is_ready() for a in arrays_of(item) if isinstance(a, jax.Array)):  # type: ignore[attr-defined]
            return i
    return len(items)


# The kind of the sites an evaluation's values are recorded as (see ``_clock``).
EVALUATION = "Evaluation"


def _site(path: tuple[Any, ...], var_type: Any, name: str, index: int = 0) -> tuple[Any, str, str]:
    """The series key, label and kind of a sowed site; its ``index``-th value in a step is ``name[index]``.

    Example:
      >>> _site(("blocks", 0), "Intermediate", "residual", 1)
      ((('blocks', 0), 'Intermediate', 'residual[1]'), 'blocks.0.residual[1]', 'Intermediate')
    """
    kind = getattr(var_type, "__name__", str(var_type))
    name = f"{name}[{index}]" if index else name
    return (path, kind, name), site_label(path, name), kind


# What a site's kind reads as in the live view: ``perturb`` is how Flax
# marks a value whose gradient it can record, so a perturbed value is an
# activation there, and its gradient is a gradient.
KIND_LABELS = {"Perturbation": "activation", "Gradient": "gradient", EVALUATION: "evaluation"}


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
