"""Run: one recorded run, as the views and functions that show or compare runs read it."""

from __future__ import annotations

import dataclasses
from typing import Any

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
    """

    name: str
    stream: History
    source: Any = None

    @property
    def sites(self) -> list[SiteSeries]:
        """Each site's rows (statistics and a histogram per kept step), in the order they were first recorded."""
        with self.stream.lock:
            return list(self.stream.series.values())

    @property
    def scalars(self) -> dict[str, SiteSeries]:
        """Each scalar's rows (the loss, a learning rate...), by name."""
        with self.stream.lock:
            return dict(self.stream.scalars)

    @property
    def steps(self) -> int:
        """How many steps the run has recorded."""
        return self.stream.steps_seen

    @property
    def ended(self) -> bool:
        """Whether no more rows will come: its watch has ended, or it was read from a store."""
        return self.stream.ended
