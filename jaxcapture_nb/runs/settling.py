"""Settling: fetching what arrived for a stream and recording it as rows, off the training loop's thread.

The device work a value needs is started as it arrives (see
:mod:`jaxcapture_nb.runs.arrivals`); :meth:`Settler.settle`, called from a
background thread, fetches only what the device has finished and records it
in its :class:`~jaxcapture_nb.runs.history.History`. A step's table waits
here to be summarized only if its row is kept: in a long run most rows are
replaced by the next step's before anyone reads them (see
:mod:`jaxcapture_nb.runs.row_grid`), and those need only their NaN flags.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from jaxcapture_nb.core.hosts import fetch_all, to_host
from jaxcapture_nb.runs.arrivals import (
    TableRows,
    TableSites,
    computed_prefix,
    device_arrays,
    host_summary,
    one_array_summary,
)
from jaxcapture_nb.runs.history import History
from jaxcapture_nb.runs.rows import NONFINITE_FIELDS, row_stats
from jaxcapture_nb.stats.batch import nonfinite_values
from jaxcapture_nb.stats.summary import Summary, stats_words, unpack_summary

# Arrived items (a step's table, or one summary) recorded together by settle.
_RECORDED_TOGETHER = 64


class Settler:
    """The queue of what arrived for a history, and the settling that records it.

    Args:
      history: where the rows go.
      drain: hands over what host callbacks left, for the steps they finished.

    Attributes:
      arrived: (series, or a table's sites, step, order, value) in the order they came;
        appended under the history's lock.
      scalars: (name, step, value, wall time) of each logged scalar.
    """

    def __init__(self, history: History, drain: Callable[[], None]):
        self.history, self._drain = history, drain
        self.arrived: list[tuple[Any, int, int, Any]] = []
        self.scalars: list[tuple[str, int, Any, float]] = []
        self._settling = threading.Lock()  # one settle() at a time, so rows keep their order

    def settle(self, wait: bool = True) -> None:
        """Fetches and records the values that arrived and the scalars ``Stream.log`` queued.

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
        self._drain()  # what host callbacks left, for the steps they finished
        with self.history.lock:
            queued = self.scalars
            done = len(queued) if wait else computed_prefix(queued, lambda item: (item[2],))
            queued, self.scalars = queued[:done], queued[done:]
        for name, step, value, wall in queued:
            self.history.record_scalar(name, step, float(to_host(value).astype(np.float64).mean()), wall)
        self._record_arrived(wait)

    def _record_arrived(self, wait: bool) -> None:
        with self.history.lock:
            arrived = self.arrived
            done = len(arrived) if wait else computed_prefix(arrived, lambda item: device_arrays(item[-1]))
            arrived, self.arrived = arrived[:done], arrived[done:]
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
                ready = computed_prefix(part, lambda item: device_arrays(item[-1]))
                if ready < len(part):
                    with self.history.lock:
                        self.arrived = part[ready:] + arrived[start + _RECORDED_TOGETHER :] + self.arrived
                    self._record(part[:ready], replaced)
                    return
            self._record(part, replaced)

    def _summarize(self, arrived: list[tuple[Any, int, int, Any]]) -> list[bool]:
        """Starts the summaries of the arrived tables whose rows are kept; for each table, whether it is replaced.

        A replaced table (see :meth:`_replaced`) needs only its flags, or its
        counts if it was summarized already, and its values are let go.
        """
        tables = [value for *_, value in arrived if isinstance(value, TableRows)]
        with self.history.lock:
            replaced = self._replaced(tables) if len(tables) == len(arrived) else [t.let_go for t in tables]
            kept = [rows.values if not gone else None for rows, gone in zip(tables, replaced, strict=True)]
            for rows in tables:
                rows.values = None
        for rows, table in zip(tables, kept, strict=True):
            if table is not None:
                rows.packed = table.packed(self.history.bins, rows.sites.layout)
        return replaced

    def _record(self, arrived: list[tuple[Any, int, int, Any]], replaced: list[bool]) -> None:
        """Records arrived items in their order: tables in one transfer, the rest one fetch each.

        ``replaced`` says, for each table among them, whether the next step
        takes its place (see :meth:`_summarize`). The statistics of all the
        tables' unstacked rows, and of all single summaries, are made at once,
        except for replaced rows.
        """
        tables = [value for *_, value in arrived if isinstance(value, TableRows)]
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
            value if isinstance(value, TableRows) else host_summary(value, self.history.bins)
            for *_, value in arrived
        ]
        single = [value for value in on_host if one_array_summary(value)]
        if single:
            stacked = Summary(
                stats=np.stack([v.stats for v in single]), counts=np.stack([v.counts for v in single])
            )
            sizes = np.array([math.prod(v.shape) for v in single], np.float64)
            batch = iter(zip(row_stats(stacked, sizes, self.history.layout), stacked.hist, strict=True))
        for (series, step, order, _), value in zip(arrived, on_host, strict=True):
            if isinstance(value, TableRows):
                packed, rows_made, gone = next(table_rows)
                if gone:
                    self._flag_table(value, step, packed)
                    with self.history.lock:
                        value.sites.block.passed.append(step)
                        value.sites.waiting -= value.waits
                else:
                    self._record_table(value, step, packed, rows_made)
                continue
            series.shape = (*value.stacked_shape, *value.shape)
            if one_array_summary(value):
                self.history.add_row(series, step, order, *next(batch))
            elif value.reason is None:
                self.history.add_row(series, step, order, *series.row_of(value))

    def _replaced(self, tables: list[TableRows]) -> list[bool]:
        """Which tables' rows a later table of the same block replaces: their statistics need not be made.

        A history keeps one step in its stride and the latest one (see
        :mod:`jaxcapture_nb.runs.row_grid`), so in a long run most steps are
        replaced by the next before anyone reads them. Only tables that take
        the fast path of :meth:`_record_table` count, and those whose values
        were let go (see :meth:`_wait`).
        """
        replaced = [rows.let_go for rows in tables]
        if self.history.writers:
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
        self, tables: list[TableRows], fetched: list[np.ndarray], replaced: list[bool]
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
        stats = row_stats(
            summaries, np.concatenate([rows.sites.sizes for rows, _ in plain]), self.history.layout
        )
        hists = summaries.hist
        ends = np.cumsum([len(p) for _, p in plain])
        parts = iter(zip(np.split(stats, ends[:-1]), np.split(hists, ends[:-1]), strict=True))
        return [next(parts) if w else None for w in wanted]

    def _flag_table(self, rows: TableRows, step: int, fetched: np.ndarray) -> None:
        """Flags the sites of a replaced table that held a NaN or Inf, from its flags or its counts alone."""
        if rows.packed is None:  # what was fetched is its flags
            if fetched.any():  # most steps hold none: their rows need not be told apart
                self._flag_sites(rows.sites, step, nonfinite_values(fetched, rows.sites.sizes))
            return
        counts = fetched[:, stats_words(rows.sites.stats_type) :]
        self._flag_sites(rows.sites, step, counts[:, NONFINITE_FIELDS].sum(axis=1) > 0)

    def _flag_sites(self, sites: TableSites, step: int, held: np.ndarray) -> None:
        """Flags the sites of a table whose entry in ``held`` is True (they held a NaN or Inf)."""
        for k in np.flatnonzero(held):
            with self.history.lock:
                self.history.flag_nonfinite(sites.series[k], step, sites.sites[k].order)

    def _in_block(self, rows: TableRows, unstacked: bool) -> bool:
        """Whether a table's rows go into its sites' block with one assignment (see :meth:`_record_table`)."""
        block = rows.sites.block
        return unstacked and block is not None and block.intact()

    def _record_table(
        self,
        rows: TableRows,
        step: int,
        packed: np.ndarray,
        made: tuple[np.ndarray, np.ndarray] | None,
    ) -> None:
        """Records a step's rows of a table; ``made`` holds their statistics and histograms, if unstacked."""
        sites = rows.sites
        if made is not None and self._in_block(rows, unstacked=True):
            stats, hists = made
            with self.history.lock:
                # In one turn of the lock with the grid's advance: a table
                # arriving in between (see _wait) would count this row twice
                # or not at all, and let go of a row the grid keeps.
                sites.waiting -= rows.waits
                if sites.block.append(step, stats, hists):
                    self.history.version += 1
                self._flag_sites(sites, step, stats[:, self.history.layout.nonfinite].sum(axis=1) > 0)
                for writer in self.history.writers:
                    writer.add_rows(sites.series, step, stats, hists)
            return
        with self.history.lock:
            sites.waiting -= rows.waits  # its row is made now, as the grid moves on
        for k, (site, series) in enumerate(zip(sites.sites, sites.series, strict=True)):
            if made is not None:
                series.shape = site.shape
                self.history.add_row(series, step, site.order, made[0][k], made[1][k])
                continue
            summary = unpack_summary(packed[..., k, :], site.shape, site.dtype, self.history.bins)
            series.shape = (*summary.stacked_shape, *site.shape)
            self.history.add_row(series, step, site.order, *series.row_of(summary))
