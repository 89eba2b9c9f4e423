"""TensorBoard event files of a watched run: what ``watch(log_dir=...)`` writes.

Each row a :class:`~jaxcapture_nb.runs.stream.Stream` records becomes values of
a TensorBoard event at the row's step, written by a thread of this module's
own, so neither the training loop nor the thread that publishes the view
waits for a file:

- a site's histogram, under the site's name (``blocks.0.residual``; a value
  and its gradient, which share a path, as ``h (activation)`` and
  ``h (gradient)``), with its exact edges and counts: ``bins`` equal buckets
  between the row's ``lo`` and ``hi``, which are the histogram's ``min`` and
  ``max``. In TensorBoard's format a bucket holds the values up to its
  limit, so an empty bucket ending at ``lo`` comes first, as tensorboardX
  writes one too. NaN and infinite values are in no bucket;
- the site's statistics as scalars, ``<site>/mean``, ``<site>/std``,
  ``<site>/min``, ``<site>/max``, ``<site>/zero_pct``, ``<site>/nan``,
  ``<site>/posinf``, ``<site>/neginf`` (the keys of
  :data:`~jaxcapture_nb.stats.schema.STATS`);
- every ``w.log`` scalar under its own name.

All the values of one step that arrive together go in one event: a step of
a model with hundreds of sites is one record to serialize, checksum and
write, where one event per value (``SummaryWriter.add_histogram_raw``,
``add_scalar``) would be hundreds. Each step goes to the operating system
as soon as the thread takes it, so a process that is killed loses only the
rows still queued; a full disk ends the log with its steps so far whole
(see :class:`LogWriter`), and the training goes on.

The protocol buffers come from tensorboardX (installed with
:data:`INSTALL_HINT`); the package imports without it.
"""

from __future__ import annotations

import math
import os
import queue
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxcapture_nb.core.user_warnings import warn
from jaxcapture_nb.runs.series import KIND_LABELS, SiteSeries, flag_name
from jaxcapture_nb.runs.tensorboard.event_file import EventFile
from jaxcapture_nb.stats import schema

INSTALL_HINT = "pip install tensorboardX tensorboard crc32c"

# The row's range edges are the histogram's own; the percentiles TensorBoard
# computes from it.
_NOT_SCALARS = ("lo", "hi")

# Tells the writing thread that no row comes after it; a threading.Event
# queued by flush() asks it to flush and set the event.
_CLOSE = object()

# What add_rows queues: the series, their step, their rows (stats and
# histograms, copied) and the wall time of each row.
_Rows = tuple[tuple[SiteSeries, ...], int, np.ndarray, np.ndarray, list[float]]


def require(module: str = "tensorboardX") -> Any:
    """Imports ``module`` (tensorboardX or tensorboard), or says how to install it.

    Raises:
      ImportError: the module is not installed; the message names the extra.
    """
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImportError(
            f"TensorBoard logs need {module}, which is not installed; install it with {INSTALL_HINT}"
        ) from error


def site_tag(series: SiteSeries) -> str:
    """The tag of a site's histogram: its label, and what it is when not the value itself.

    Example:
      >>> site_tag(SiteSeries("blocks.0.h", "Gradient", 4, 2))
      'blocks.0.h (gradient)'
    """
    return flag_name(series)


def parse_site_tag(tag: str) -> tuple[str, str]:
    """The label and kind of the site a histogram tag names (see :func:`site_tag`).

    A tag without a kind's suffix, as other tools write them, is a sowed value.

    Example:
      >>> parse_site_tag("blocks.0.h (gradient)"), parse_site_tag("layer1/weights")
      (('blocks.0.h', 'Gradient'), ('layer1/weights', 'Intermediate'))
    """
    for kind, word in KIND_LABELS.items():
        suffix = f" ({word})"
        if tag.endswith(suffix):
            return tag[: -len(suffix)], kind
    return tag, "Intermediate"


def stat_keys(columns: tuple[str, ...]) -> list[str]:
    """The statistics of a row with ``columns`` that are written as scalars, in schema order.

    Example:
      >>> stat_keys(("mean", "std", "min", "max", "zero_pct", "nan", "posinf", "neginf", "lo", "hi", "p0"))
      ['mean', 'std', 'min', 'max', 'zero_pct', 'nan', 'posinf', 'neginf']
    """
    return [s.key for s in schema.STATS if s.key in columns and s.key not in _NOT_SCALARS]


def histogram_edges(lo: float, hi: float, bins: int) -> np.ndarray:
    """The ``bins + 1`` edges of ``bins`` equal buckets from ``lo`` to ``hi``, in float64.

    Example:
      >>> histogram_edges(-1.0, 1.0, 4).tolist()
      [-1.0, -0.5, 0.0, 0.5, 1.0]
    """
    lo, hi = float(lo), float(hi)  # a float32 range would round its width
    return lo + (hi - lo) * np.linspace(0.0, 1.0, bins + 1)


class LogWriter:
    """Writes the rows a :class:`Stream` records to a new TensorBoard event file in ``log_dir``.

    A :class:`~jaxcapture_nb.core.protocols.RunWriter`: add it to the stream's
    ``writers``; :meth:`add_rows` only queues the rows. A thread of the
    writer's own builds the events and appends them to the file
    (:class:`~jaxcapture_nb.runs.tensorboard.event_file.EventFile`) as soon as it takes
    them, so a process that is killed loses only the rows still queued.

    A write that fails (a full disk, say) ends the log, not the run: the
    file keeps every event written before, the thread drops what comes
    after, and :meth:`report` tells the user, once.

    Args:
      log_dir: the run's folder, made if missing; each writer adds an
        event file of its own to it.
      resumed_at: the step a run resumed from a checkpoint goes on from: the
        file starts with a SessionLog START event at that step, so that
        readers drop what earlier files logged from it on.

    Raises:
      ImportError: tensorboardX is not installed.
      OSError: the folder or the file cannot be made.
    """

    def __init__(self, log_dir: str | os.PathLike[str], resumed_at: int | None = None):
        require()
        from tensorboardX.proto.summary_pb2 import HistogramProto, Summary

        self._summary, self.bin_counts = Summary, HistogramProto
        self.log_dir = os.fspath(log_dir)
        self._file = EventFile(self.log_dir, resumed_at)
        self.path = self._file.path
        self._rows: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._error: Exception | None = None  # what stopped the writing, if anything did
        self._stopped_at: int | None = None  # the step of the first event not written
        self._reported = False
        self._thread = threading.Thread(target=self._write_rows, name="jaxcapture-tensorboard", daemon=True)
        self._thread.start()

    def add_rows(self, series: Sequence[SiteSeries], step: int, stats: np.ndarray, hists: np.ndarray) -> None:
        """Queues the rows of ``series`` at ``step``, row ``k`` of ``stats`` and ``hists`` being ``series[k]``'s; copies them.

        A scalar's event carries the time it was logged at, as TensorBoard's
        own writers stamp it; a site's, the time its row was made.
        """
        now = time.time()
        walls = []
        for s in series:
            logged = s.walls[s.size - 1] if s.walls is not None and s.size else math.nan
            walls.append(logged if math.isfinite(logged) else now)
        self._rows.put((tuple(series), step, stats.copy(), hists.copy(), walls))

    def flush(self) -> None:
        """Waits until every row queued so far is in the file (or dropped after a failure)."""
        done = threading.Event()
        self._rows.put(done)
        done.wait()

    def close(self) -> None:
        """Writes every queued row, closes the file, and :meth:`report` s a failure."""
        self._rows.put(_CLOSE)
        self._thread.join()
        self._file.close()
        self.report()

    def report(self) -> None:
        """Warns, once, if the log stopped: where, why, what the file holds and what to do."""
        error = self._error
        if error is None or self._reported:
            return
        self._reported = True
        warn(
            f"the TensorBoard log {self.path} stopped at step {self._stopped_at}: "
            f"{getattr(error, 'strerror', None) or error}. What was written before stays in the file, every record "
            "whole; training and the view go on without the log. Free space on that disk, or pass "
            "another log_dir=, for the next run."
        )

    def _write_rows(self) -> None:
        """Writes what is queued, a step per event, until :meth:`close`."""
        while True:
            items = [self._rows.get()]
            while True:
                try:
                    items.append(self._rows.get_nowait())
                except queue.Empty:
                    break
            rows = []
            for item in items:
                if isinstance(item, tuple):
                    rows.append(item)
                    continue
                self._write_safely(rows)
                rows = []
                if item is _CLOSE:
                    return
                item.set()  # what flush() waits for
            self._write_safely(rows)

    def _write_safely(self, rows: list[_Rows]) -> None:
        """Writes rows, or after a failure drops them: :meth:`report` tells."""
        if self._error is None and rows:
            try:
                self._write(rows)
            except Exception as error:  # a full disk, or a value no event can hold: the log ends
                self._error = error
                if self._stopped_at is None:  # it failed before it wrote: at the first row
                    self._stopped_at = rows[0][1]

    def _write(self, rows: list[_Rows]) -> None:
        """Writes rows in the order they came, one event per run of rows of the same step.

        A stream records a step's rows one after another, so each run is
        a step; keeping the order keeps every tag's steps in order.
        """
        events: list[tuple[int, float, list[Any]]] = []
        for many, step, stats, hists, walls in rows:
            for series, row, hist, walltime in zip(many, stats, hists, walls, strict=True):
                if not events or events[-1][0] != step:
                    events.append((step, walltime, []))
                events[-1][2].extend(self._values(series, row, hist))
        try:
            self._file.write(
                [
                    self._file.record(step=step, wall_time=walltime, summary=self._summary(value=values))
                    for step, walltime, values in events
                ]
            )
        except OSError:  # the file holds the events before the one that failed
            self._stopped_at = events[self._file.kept][0]
            raise

    def _values(self, series: SiteSeries, stats: np.ndarray, hist: np.ndarray) -> list[Any]:
        """The summary values of one row: a scalar, or a histogram and its statistics."""
        Value = self._summary.Value
        row = dict(zip(series.columns, stats.tolist(), strict=True))
        if series.kind == "scalar":
            return [Value(tag=series.label, simple_value=row["mean"])]
        tag = site_tag(series)
        lo, hi = row["lo"], row["hi"]
        num = float(hist.sum())
        mean, std = row["mean"], row["std"]
        finite = num > 0 and math.isfinite(mean) and math.isfinite(std)
        histogram = self.bin_counts(
            min=lo,
            max=hi,
            num=num,
            sum=mean * num if finite else 0.0,
            sum_squares=(std * std + mean * mean) * num if finite else 0.0,
            bucket_limit=histogram_edges(lo, hi, len(hist)).tolist(),
            bucket=[0.0, *hist.tolist()],
        )
        values = [Value(tag=tag, histo=histogram)]
        values += [Value(tag=f"{tag}/{key}", simple_value=row[key]) for key in stat_keys(series.columns)]
        return values
