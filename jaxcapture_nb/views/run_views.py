"""open_run() and overlay_runs(): saved and running runs, shown in a :class:`~jaxcapture_nb.LiveView`.

Reading a run is the runs package's (:mod:`jaxcapture_nb.runs.saved`,
:mod:`jaxcapture_nb.runs.overlay`); these functions put what it read in a view.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from jaxcapture_nb.runs.overlay import read_runs, running_watches
from jaxcapture_nb.runs.sources import RunSource, read_run


def open_run(path: str | os.PathLike[str], *, bins: int | None = None, keep_steps: int = 500) -> Any:
    """Opens a saved TensorBoard run in a :class:`~jaxcapture_nb.LiveView`.

    ::

        view = open_run("runs/adam-1e-3")   # a directory watch(log_dir=...) wrote
        view                                 # in a notebook: histograms over steps, bands, scalars

    The view shows what the live view showed: per histogram, the histograms
    over steps with their percentile bands, the statistics, the first NaN or
    Inf, and every other scalar. A log ``watch(log_dir=...)`` wrote comes
    back as recorded. Histograms written by other tools (tensorboardX's or
    PyTorch's ``add_histogram``, ``tf.summary.histogram`` in TensorFlow 1's
    form, and in TensorFlow 2's, which Flax's examples write through CLU's
    ``SummaryWriter``) are spread onto ``bins`` equal bins between their
    lowest and highest edge, as if the values of each bucket lay evenly
    across it, and their statistics come from the histogram's sums and range
    (their share of zeros stays unknown). Scalars are read in either form.

    Args:
      path: a run: a directory holding TensorBoard event files, or one such
        file. The view names the run by its directory's name (the file's).
        A directory with event files of its own is that run, whatever runs
        its subdirectories hold, as TensorBoard reads it; one whose event
        files all lie in subdirectories holds several runs (:func:`runs_in`
        lists them, :func:`overlay_runs` shows them together).
      bins: the view's histogram bins; by default those of the log's first
        histogram with equal buckets (``watch(log_dir=...)`` and TensorFlow
        2's ``tf.summary.histogram`` write those), else 64.
      keep_steps: rows kept per site, as ``watch(keep_steps=)``; a longer
        log is thinned evenly.

    Returns:
      A :class:`~jaxcapture_nb.LiveView`; ``view.stream`` holds the rows.

    Raises:
      FileNotFoundError: ``path`` holds no event file.
      ValueError: ``path`` holds no event file of its own, and several runs below.
      ImportError: TensorBoard is not installed.
    """
    from jaxcapture_nb.views.live_view import LiveView  # needs ipywidgets

    view = LiveView(read_run(path, bins=bins, keep_steps=keep_steps))
    view.publish(final=True)
    return view


def overlay_runs(
    runs: Mapping[str, RunSource] | Sequence[RunSource] | str | os.PathLike[str],
    *,
    bins: int | None = None,
    keep_steps: int = 500,
) -> Any:
    """Shows several runs in one :class:`~jaxcapture_nb.LiveView`, one colour each.

    ::

        view = overlay_runs({"lr=1e-3": "runs/lr-1e-3", "lr=1e-2": w})  # a saved run and a watch
        view = overlay_runs("runs")   # every run saved under runs/, named by its folder

    The legend toggles runs; scalars share their charts, with one
    smoothing; each site's card shows the runs' histograms over steps one
    above the other on one step axis, or (the "bands" view) their
    percentile bands overlaid; the step slider moves every run. A watch
    that is still running keeps updating the view.

    Args:
      runs: ``{name: run}``, or a list of runs (a saved run is named by its
        folder, others ``run 1``, ``run 2``...), or a directory whose
        subfolders hold saved runs. A run is a :class:`~jaxcapture_nb.Watch`
        (running or ended), a :class:`~jaxcapture_nb.LiveView` of one run,
        a :class:`~jaxcapture_nb.Run`, or the path of a TensorBoard log (as
        :func:`~jaxcapture_nb.open_run` reads it).
      bins: histogram bins of the saved runs; by default those of the
        first run given as a watch or view, else of the first saved run.
        Watched runs must share their bins.
      keep_steps: rows kept per site of a saved run.

    Returns:
      A :class:`~jaxcapture_nb.LiveView`; ``view.runs`` lists each :class:`~jaxcapture_nb.Run`.

    Raises:
      ValueError: no run, a name given twice, runs with different bins, or
        a watch that has not started.
      TypeError: a run of another type.
      FileNotFoundError: a path holds no event file.
    """
    from jaxcapture_nb.views.live_view import LiveView  # needs ipywidgets

    view = LiveView(read_runs(runs, bins=bins, keep_steps=keep_steps))
    live = running_watches(view.runs)
    for w in live:
        w.overlays.append(view)
    if live:
        view.keep_saved_output_fresh()  # the watches send its saved picture again as they record
    view.publish(final=not live)
    return view
