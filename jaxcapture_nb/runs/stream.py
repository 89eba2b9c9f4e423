"""Stream: what :func:`watch` records, as a model trains; the intake of a :class:`History`.

A backend hands :meth:`Stream.deliver` what a model sowed, one
:class:`~jaxcapture_nb.core.protocols.Delivery` per step, numbered by the
stream's :class:`~jaxcapture_nb.core.clock.StepClock`: a compiled step's small
values as one table, larger ones as packed summary rows still on the
device, eager values as arrays; the training loop's own values arrive
through :meth:`Stream.log` and :meth:`Stream.update` as device arrays too.
Nothing is read on the loop's thread. The device work a value still needs
(the summary of an array) is started as it arrives, on the thread that
hands it over, and dispatch returns at once; the values wait in the
:class:`~jaxcapture_nb.runs.settling.Settler`'s queue, which a background
thread settles into rows. With ``jax.distributed`` a program over arrays of
several processes runs only when each process starts it, in the same
order, and a background thread would start it at a different moment on each
one. Tables are the exception: a step makes them only on one device, and a
recorded step's table waits for settling to summarize it, only if its row
is kept (see :class:`~jaxcapture_nb.runs.arrivals.TableRows`); the other
tables of a long run cost the loop nothing.

The modules beside this one each do one of the stream's jobs: the rows'
columns (``rows``), each site's ring of rows (``series``), the history a
view reads (``history``), what waits to be settled (``arrivals``), the
settling (``settling``), and the checks of what the loop hands over
(``loop_input``).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from jaxcapture_nb.capturing.recorder import Include, include_key, site_filter, site_label
from jaxcapture_nb.core.clock import StepClock
from jaxcapture_nb.core.hosts import replicated
from jaxcapture_nb.core.protocols import BackendDrains, Delivery
from jaxcapture_nb.runs.arrivals import Row, TableRows, TableSites, as_row, readable_summary
from jaxcapture_nb.runs.history import History
from jaxcapture_nb.runs.loop_input import check_summaries, checked_scalar, step_number
from jaxcapture_nb.runs.series import (
    EVALUATION,
    SeriesBlock,
    SiteSeries,
    site_key,
)
from jaxcapture_nb.runs.settling import Settler
from jaxcapture_nb.stats.step_table import StepTable
from jaxcapture_nb.stats.summarize import packed_row
from jaxcapture_nb.stats.summary import Summary, check_bins


class Stream(History, BackendDrains):
    """Where a watched model's summaries go; the recorder of :func:`watch`.

    Args:
      bins: histogram bins.
      include: keep only matching sites (as for :func:`capture`).
      every: record one step in ``every`` (see :meth:`records_step`).
      keep_steps: rows kept per site.
      grads: also record gradients of perturbed values.
      steps: how steps are counted (see ``core.clock``).
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
        # Numbers every step; the only thing that does.
        History.__init__(self, bins=bins, keep_steps=keep_steps, clock=StepClock(steps, every, start_step))
        BackendDrains.__init__(self)
        self.every, self.grads = every, grads
        self._accepts_site = site_filter(include)
        # A compiled step that records one step in ``every`` gates its summaries on it.
        self.policy = ("stream", bins, include_key(include), grads, every)
        self.settler = Settler(self, lambda: self.drain(final=False))
        self._arrivals = itertools.count()
        self._selected: dict[Any, list[tuple[int, str]]] = {}  # update()'s leaves per tree structure
        # Counting marked steps, the values each site had in the latest step
        # delivered: a later call's values of the site follow them (name[k]).
        self._in_step: tuple[int, dict[Any, int]] = (-1, {})
        # The sites of each trace's table, by the identity of its sites tuple
        # (the same object every call of a compiled step hands over) and, for
        # marked steps, the indices its sites' values move on by, and whether they are an evaluation's.
        self._tables: dict[tuple[int, tuple[int, ...], bool], TableSites] = {}
        self._thread = threading.get_ident()  # the training loop's
        # Called on the training loop's thread after each call that handed over rows.
        self.after_call: list[Callable[[], None]] = []

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
        :class:`TableRows`) and is queued for :meth:`settle` as one item.
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
                series = self.series_for(*site_key(item.path, var_type, item.name, index), item.order)
                if (delivery.repeatable or evaluation) and step <= series.last_step:
                    continue
                series.last_step = max(series.last_step, step)
                if recorded:
                    self._queue(series, as_row(item.value), step, item.order)
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
                self.settler.arrived.append((sites, step, 0, TableRows(sites, values=table)))
            return
        packed = table.packed(self.bins, sites.layout)
        with self.lock:
            self.settler.arrived.append((sites, step, 0, TableRows(sites, packed=packed)))

    def _waits(self, sites: TableSites, table: StepTable) -> bool:
        """Whether a recorded table waits for settle to decide if its summaries are made (see :class:`TableRows`)."""
        return (
            table.table.ndim == 2
            and isinstance(table.flags, jax.Array)
            and sites.block is not None
            and sites.block.intact()
            and not self.writers
        )

    def _wait(self, sites: TableSites, step: int, table: StepTable) -> None:
        """Queues a table that waits, with its flags, and lets the previous one's values go if a row of it would not be kept."""
        rows = TableRows(sites, values=table, nonfinite=table.flags)
        with self.lock:
            block = sites.block
            rows.append = block.grid.appended + len(block.passed) + sites.waiting
            previous = sites.latest_waiting
            # Values settle has not taken yet (it takes them under the lock).
            if previous is not None and previous.values is not None and previous.append % block.grid.stride:
                previous.values = None
            sites.waiting += 1
            sites.latest_waiting = rows
            self.settler.arrived.append((sites, step, 0, rows))

    def _table_sites(self, table: StepTable, moved: tuple[int, ...], evaluation: bool = False) -> TableSites:
        """The series of a table's sites (their summaries started compiling as the step was traced)."""
        sites = table.sites
        found = self._tables.get((id(sites), moved, evaluation))
        if found is None or found.sites is not sites:
            indices = moved or (0,) * len(sites)
            named = [
                site_key(s.path, EVALUATION if evaluation else s.var_type, s.name, s.index + k)
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
            series = [self.series_for(*site, s.order) for site, s in zip(named, sites, strict=True)]
            for one, site in zip(series, sites, strict=True):
                one.shape = site.shape
            found = self._tables[(id(sites), moved, evaluation)] = TableSites(sites, series, block)
        return found

    # -- what the training loop hands over ----------------------------------------

    def log(self, step: int, scalars: dict[str, Any]) -> None:
        """Queues scalars (device arrays are read later, off the loop's thread).

        A value split across processes is replicated first, here: device work
        is started on the thread that hands the value over.

        Raises:
          TypeError: ``step`` is not a whole number, or a scalar is neither a
            number nor an array of numbers (see :func:`checked_scalar`).
            Nothing is queued then, and the stream goes on as before.
        """
        step = step_number(step, "log")
        scalars = {name: checked_scalar(name, value) for name, value in scalars.items()}
        values = [(name, replicated(value)) for name, value in scalars.items()]
        wall = time.time()
        self.clock.saw(step)
        with self.lock:
            self.settler.scalars.extend((name, step, value, wall) for name, value in values)

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
        step = step_number(step, "update")
        leaves, treedef = jax.tree.flatten(summaries, is_leaf=lambda x: isinstance(x, Summary))
        check_summaries(summaries, leaves)
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
        labelled = [(label, readable_summary(v)) for label, v in labelled]
        self.clock.saw(step)
        if not self.records_step(step):
            return
        with self.lock:
            for label, v in labelled:
                series = self.series_for(("update", label), label, "Summary")
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
        """Fetches and records the values that arrived and the scalars :meth:`log` queued (see :meth:`Settler.settle`)."""
        self.settler.settle(wait)

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
        if not isinstance(value, Summary | Row | jax.Array | np.ndarray):
            return
        with self.lock:
            if not isinstance(value, Summary | Row):
                value = self._summary_row(value)
                if value is None:
                    return
            order = next(self._arrivals) if order is None else order
            self.settler.arrived.append((series, step, order, value))

    def _summary_row(self, value: jax.Array | np.ndarray) -> Row | None:
        """The packed summary of an array, dispatched to the device now; None if it has none.

        Arrays of PRNG keys, strings or objects have no statistics.
        """
        if isinstance(value, np.ndarray) and not (
            np.issubdtype(value.dtype, np.number) or value.dtype == bool
        ):
            return None
        if jax.dtypes.issubdtype(value.dtype, jax.dtypes.prng_key):
            return None
        return Row(packed_row(value, bins=self.bins), tuple(value.shape), value.dtype)
