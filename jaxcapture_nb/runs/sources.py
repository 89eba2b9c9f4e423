"""What a run is to the functions that show or compare runs, and the one place a run becomes rows.

A run is what ``watch()`` records: its :class:`~jaxcapture_nb.Watch` (running
or ended), the watch's :class:`~jaxcapture_nb.LiveView`, the
:class:`~jaxcapture_nb.runs.stream.Stream` behind both, or a run a store keeps,
which a reader of :data:`READERS` reads: the TensorBoard log ``watch``
wrote (a folder or an event file) is read as :func:`~jaxcapture_nb.open_run`
reads it. :func:`overlay_runs <jaxcapture_nb.overlay_runs>` and
:func:`compare_runs <jaxcapture_nb.compare_runs>` take runs only through
:func:`read_run`, which makes each a :class:`~jaxcapture_nb.Run`, so a run
of a new kind is taught here once, and a new store is one module: a
:class:`RunReader` listed in :data:`READERS` (and
a :class:`~jaxcapture_nb.core.protocols.RunWriter` that ``watch`` adds to its
stream's ``writers``).
"""

from __future__ import annotations

import dataclasses
import os
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from jaxcapture_nb.runs.history import History
from jaxcapture_nb.runs.run import Run
from jaxcapture_nb.runs.saved import TensorBoardReader
from jaxcapture_nb.runs.stream import Stream
from jaxcapture_nb.runs.watch import Watch

RunSource = Any  # a Watch, a LiveView, a Run, a Stream, or what a reader reads (the path of a saved run)


@typing.runtime_checkable
class ShowsRuns(Protocol):
    """A view of runs (a :class:`~jaxcapture_nb.LiveView`): a run can be taken from it."""

    runs: list[Run]


@typing.runtime_checkable
class RunReader(Protocol):
    """Reads the runs one store keeps, each into a :class:`~jaxcapture_nb.runs.history.History`, for the views that show saved runs.

    :class:`~jaxcapture_nb.runs.saved.TensorBoardReader` (folders of event
    files) is the first; a reader for another tracker or store is a class
    with these three methods, listed in ``sources.READERS``. It fills
    the history through its public methods (``site_series``,
    ``add_row``, ``scalar_series``, ``add_scalar_row``, ``flag_nonfinite``).
    """

    def reads(self, source: Any) -> bool:
        """Whether ``source`` (a path, a URL...) names a run, or a place holding runs, of this store."""
        ...

    def runs_in(self, source: Any) -> dict[str, Any]:
        """The runs ``source`` holds, by name, each as a source :meth:`read` takes; raises if it holds none."""
        ...

    def read(self, source: Any, *, bins: int | None, keep_steps: int) -> History:
        """The rows of run ``source``: a history that ended, with ``bins`` histogram bins (None: the run's) and ``keep_steps`` rows per site."""
        ...


# The stores saved runs are read from, asked in order: the first that reads a source reads it.
READERS: list[RunReader] = [TensorBoardReader()]


def reader_of(source: Any) -> RunReader | None:
    """The reader of :data:`READERS` that reads ``source``; None for a run in memory or an unknown one.

    Example:
      >>> type(reader_of("runs/lr-1e-3")).__name__, reader_of(3)
      ('TensorBoardReader', None)
    """
    return next((reader for reader in READERS if reader.reads(source)), None)


def named_runs(runs: Any, caller: str) -> list[tuple[str, RunSource]]:
    """``runs`` as ``[(name, source)]``, names unique: a dict's, a list's (see :func:`default_name`), or a folder's runs.

    Args:
      runs: a dict of runs, a list of runs, or a folder whose subfolders hold saved runs.
      caller: the function taking them, for messages.

    Raises:
      TypeError: ``runs`` is none of those.
      ValueError: no run, or a name given twice.
    """
    reader = reader_of(runs)
    if reader is not None:
        named = list(reader.runs_in(runs).items())
    elif isinstance(runs, Mapping):
        named = [(str(name), source) for name, source in runs.items()]
    elif isinstance(runs, Sequence):
        named = [(default_name(k, source), source) for k, source in enumerate(runs)]
    else:
        raise TypeError(f"runs must be a dict of runs, a list of runs or a folder, got {type(runs).__name__}")
    if not named:
        raise ValueError(f"{caller} needs at least one run")
    names = [name for name, _ in named]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(
            f"runs need different names, got {', '.join(map(repr, repeated))} more than once; pass a dict"
        )
    return named


def is_path(source: Any) -> bool:
    """Whether ``source`` names a saved run by its path.

    Example:
      >>> is_path("runs/lr-1e-3"), is_path(3)
      (True, False)
    """
    return isinstance(source, (str, os.PathLike))


def default_name(k: int, source: RunSource) -> str:
    """The name of the ``k``-th run of a list: a saved run's folder, else ``run k+1``.

    Example:
      >>> default_name(0, "runs/lr-1e-3/"), default_name(1, object())
      ('lr-1e-3', 'run 2')
    """
    return os.path.basename(os.path.normpath(os.fspath(source))) if is_path(source) else f"run {k + 1}"


def read_run(
    source: RunSource, *, name: str | None = None, bins: int | None = None, keep_steps: int = 500
) -> Run:
    """A run, read from a watch, a view or a store, as every view of runs reads it.

    ::

        run = read_run("runs/adam-1e-3")      # a saved log: its rows, read as open_run reads them
        run.scalars["loss"], run.sites[0].label, run.steps

    Args:
      source: a :class:`~jaxcapture_nb.Watch` (running or ended), a
        :class:`~jaxcapture_nb.LiveView` of one run, a saved run one of
        :data:`READERS` reads (the path of a TensorBoard log: a folder or
        an event file), or a :class:`~jaxcapture_nb.Run` to name anew.
      name: how views label the run; by default a saved run's folder, else "".
      bins: histogram bins a saved run is read with; by default its log's.
      keep_steps: rows kept per site of a saved run.

    Raises:
      ValueError: a watch that has not started, or a view of several runs.
      TypeError: a run of another type.
      FileNotFoundError: a path holds no event file.
    """
    if name is None:
        name = default_name(0, source) if is_path(source) else ""
    reader = reader_of(source)
    if reader is not None:
        return Run(name, reader.read(source, bins=bins, keep_steps=keep_steps), source)
    if isinstance(source, Watch):
        if source.view is None:
            raise ValueError(
                f"run {name!r}: the watch has not started; pass it inside or after its with block"
            )
        return Run(name, source.stream, source)
    if isinstance(source, ShowsRuns):  # a LiveView
        if len(source.runs) > 1:
            raise ValueError(
                f"run {name!r}: the view shows {len(source.runs)} runs; pass each run on its own"
            )
        return Run(name, source.runs[0].stream, source)
    if isinstance(source, Run):
        return dataclasses.replace(source, name=name or source.name)
    if isinstance(source, Stream):
        return Run(name, source, source)
    raise TypeError(
        f"run {name!r}: expected a Watch, its LiveView, a Run, or the path of a saved run (a folder or an "
        f"event file), got {type(source).__name__}"
    )
