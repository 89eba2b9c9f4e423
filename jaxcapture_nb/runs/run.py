"""Run: one recorded run, as the views and functions that show or compare runs read it.

A view reads a run only through :class:`Run`: what the rows are, how far
the run got and how it ended. Where its rows come from (a watched model's
stream, a saved log a reader filled) stays inside :mod:`jaxcapture_nb.runs`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from jaxcapture_nb.core.clock import StepPace
from jaxcapture_nb.runs.history import History
from jaxcapture_nb.runs.series import SiteSeries


@dataclasses.dataclass(frozen=True, eq=False)
class Run:
    """One recorded run: its name, its rows, and where it came from.

    :func:`~jaxcapture_nb.read_run` makes one from a watch, a view or a
    saved log; :class:`~jaxcapture_nb.LiveView`, :func:`~jaxcapture_nb.overlay_runs`
    and :func:`~jaxcapture_nb.compare_runs` read every run as one
    (``view.runs``), so a run read from a new store is shown as any other.

    Attributes:
      name: how views label the run.
      stream: its rows: a :class:`~jaxcapture_nb.runs.history.History`, which a
        running watch's stream goes on filling.
      source: what it was read from: the :class:`~jaxcapture_nb.Watch` or
        :class:`~jaxcapture_nb.LiveView` recording it, or the saved run (a
        log's path) a store read.

    Example:
      >>> from jaxcapture_nb.runs.stream import Stream
      >>> stream = Stream(bins=8, include=None, every=1, keep_steps=100, grads=False)
      >>> stream.add_scalar_row(stream.scalar_series("loss"), 0, 0.5)
      >>> run = Run("baseline", stream)
      >>> run.name, list(run.scalars), run.steps, run.ended
      ('baseline', ['loss'], 1, False)
      >>> with run.reading():
      ...     run.scalars["loss"].stats[0, 0], run.first_nonfinite
      (np.float32(0.5), None)
    """

    name: str
    stream: History
    source: Any = None

    def reading(self) -> AbstractContextManager[Any]:
        """Holds the rows still while a reader reads several of them as one (a watch's thread may be adding rows)."""
        return self.stream.lock

    @property
    def sites(self) -> list[SiteSeries]:
        """Each site's rows (statistics and a histogram per kept step), in the order they were first recorded."""
        return list(self.keyed_sites.values())

    @property
    def keyed_sites(self) -> dict[Any, SiteSeries]:
        """Each site's rows by a key that stays the same while the run goes on (a view remembers what it sent by it)."""
        with self.stream.lock:
            return dict(self.stream.series)

    @property
    def scalars(self) -> dict[str, SiteSeries]:
        """Each scalar's rows (the loss, a learning rate...), by name."""
        with self.stream.lock:
            return dict(self.stream.scalars)

    @property
    def bins(self) -> int:
        """Histogram bins of every site's rows."""
        return self.stream.bins

    @property
    def columns(self) -> tuple[str, ...]:
        """The statistics of each row, in order (see ``RowLayout``)."""
        return tuple(self.stream.layout.columns)

    @property
    def version(self) -> int:
        """Changes whenever rows were dropped (thinned), so that a reader reads every row again."""
        return self.stream.version

    @property
    def pace(self) -> StepPace:
        """Steps a second and the time left, for a progress line."""
        return self.stream.pace

    @property
    def beating(self) -> bool:
        """Whether a thread sends word while the run goes on, so that silence means the kernel may be gone."""
        return self.stream.beating

    @property
    def first_nonfinite(self) -> tuple[str, int] | None:
        """The first site or scalar (by name) and the step that held a NaN or Inf; None while none has."""
        return self.stream.first_nonfinite

    @property
    def first_nonfinite_series(self) -> SiteSeries | None:
        """The rows of the site or scalar :attr:`first_nonfinite` names."""
        return self.stream.first_nonfinite_series

    @property
    def steps(self) -> int:
        """How many steps the run has recorded."""
        return self.stream.steps_seen

    @property
    def ended(self) -> bool:
        """Whether no more rows will come: its watch has ended, or it was read from a store."""
        return self.stream.ended

    @property
    def ended_as(self) -> str:
        """How the run ended early ("interrupted at step 442"); "" while it runs or when it ran to its end."""
        return self.stream.ended_as


# What a view of runs is given: one run or its history, histories by run name, or runs.
Shown = Run | History | Mapping[str, History] | Sequence[Run]


def runs_shown(runs: Shown) -> list[Run]:
    """The runs a view shows: one run (unnamed, given its history), the named runs of a mapping, or :class:`Run` s, which share bins.

    Example:
      >>> from jaxcapture_nb.runs.stream import Stream
      >>> stream = Stream(bins=8, include=None, every=1, keep_steps=10, grads=False)
      >>> [r.name for r in runs_shown(Run("a", stream))], [r.name for r in runs_shown({"b": stream})]
      (['a'], ['b'])

    Raises:
      ValueError: no run, a run given twice, or runs with different bins.
    """
    if isinstance(runs, Run):
        return [runs]
    if isinstance(runs, History):
        return [Run("", runs, runs)]
    if isinstance(runs, Mapping):
        shown = [Run(str(name), s, s) for name, s in runs.items()]
    else:
        shown = list(runs)
    if not shown:
        raise ValueError("a LiveView needs at least one run")
    for k, run in enumerate(shown):
        again = next((other.name for other in shown[:k] if other.stream is run.stream), None)
        if again is not None:
            raise ValueError(f"run {run.name!r} is run {again!r} again; show each run once")
    bins = {run.stream.bins for run in shown}
    if len(bins) > 1:
        listed = ", ".join(f"{run.name}: {run.stream.bins}" for run in shown)
        raise ValueError(
            f"runs shown together need the same number of bins, got {listed}; record them with the same bins="
        )
    return shown
