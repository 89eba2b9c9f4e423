"""The rows a run keeps: each site's and scalar's series, the first NaN or Inf, and the writers that keep a log.

:class:`History` is what a view reads (under its lock) and what the
settling thread and a reader of saved runs fill; a
:class:`~jaxcapture_nb.runs.stream.Stream` is a history that a watched model
fills as it trains.
"""

from __future__ import annotations

import math
import sys
import threading
from typing import Any

import numpy as np

from jaxcapture_nb.core.clock import StepClock, StepPace
from jaxcapture_nb.core.protocols import RunWriter
from jaxcapture_nb.runs.rows import RowLayout
from jaxcapture_nb.runs.series import SiteSeries, flag_name


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


class History:
    """The series of one run, as they are recorded: a site's or a scalar's rows, at most ``keep_steps`` each.

    Args:
      bins: histogram bins of every site's rows.
      keep_steps: rows kept per series.
      clock: numbers the run's steps (see ``StepClock.saw``).

    Attributes:
      series: each site's rows, by the site's key, in the order the model computes them.
      scalars: each logged scalar's rows, by name.
      version: changes whenever rows were dropped (a reader reads them again).
      first_nonfinite: the first site (by name) and step that held a NaN or Inf.
      lock: held while rows change; a reader takes it to read them whole.
      writers: handed every row as it is recorded (see ``RunWriter``), under the lock.
    """

    def __init__(self, *, bins: int, keep_steps: int, clock: StepClock):
        self.bins, self.keep_steps, self.clock = bins, keep_steps, clock
        # The columns of every row, as the schema names them now.
        self.layout = RowLayout()
        self.series: dict[Any, SiteSeries] = {}
        self.scalars: dict[str, SiteSeries] = {}
        self.version = 0
        self.first_nonfinite: tuple[str, int] | None = None
        self.first_nonfinite_series: SiteSeries | None = None  # the site or scalar it names
        self._first_nonfinite_at: tuple[int, int] | None = None  # (step, order within the step)
        self.pace = StepPace()  # steps a second, for the progress line
        self.ended = False  # no more rows will come: its watch has ended, or it was read from a log
        # Why the run ended early ("interrupted", "stopped by ValueError"); None if it ran to its end.
        self.end_reason: str | None = None
        # Whether a thread sends the view its progress while the run goes on,
        # so that the view can tell a silent kernel (see LiveView's beat).
        self.beating = False
        self.lock = threading.RLock()
        self._orders: dict[Any, int] = {}  # per site, when its first value was sowed (see _list_in_order)
        # A writer wants every row, so a stream leaves no table unsummarized while it has one.
        self.writers: list[RunWriter] = []

    def series_for(self, key: Any, label: str, kind: str, order: int | None = None) -> SiteSeries:
        """The series of site ``key``, made on first use; ``order`` places a new one among the others (caller holds the lock)."""
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

    def site_series(self, key: Any, label: str, kind: str) -> SiteSeries:
        """The series of a site, by a key of the reader's choosing, made on first use with ``label`` and ``kind``."""
        with self.lock:
            return self.series_for(key, label, kind)

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

    def record_scalar(self, name: str, step: int, value: float, wall: float = math.nan) -> None:
        """Records a logged scalar's value at ``step``, flagging it when it is not finite."""
        with self.lock:
            series = self.scalar_series(name)
            self.add_scalar_row(series, step, value, wall)
            if not math.isfinite(value):
                # After the sites of the same step, which say where it began.
                self.flag_nonfinite(series, step, sys.maxsize)

    def add_scalar_row(self, series: SiteSeries, step: int, value: float, wall: float = math.nan) -> None:
        """Records ``value`` of a scalar's series (:meth:`scalar_series`) at ``step``, logged at ``wall``."""
        with self.lock:
            if series.append_row(step, self.scalar_row(value), np.ones(1, np.int32), wall):
                self.version += 1
            self.recorded(series, step)

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
            self.recorded(series, step)

    def recorded(self, series: SiteSeries, step: int) -> None:
        """Tells the clock a row was recorded at ``step`` (a run a reader fills has no other count), and hands it to the :attr:`writers`."""
        self.clock.saw(step)
        row = series.size - 1
        for writer in self.writers:
            writer.add_rows((series,), step, series.stats[row : row + 1], series.hists[row : row + 1])

    def flag_nonfinite(self, series: SiteSeries, step: int, order: int) -> None:
        """Notes a site that held a NaN or Inf, keeping the earliest step and, within it, site."""
        if self._first_nonfinite_at is None or (step, order) < self._first_nonfinite_at:
            self._first_nonfinite_at = (step, order)
            self.first_nonfinite = (flag_name(series), step)
            self.first_nonfinite_series = series

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
