"""overlay_runs(): several runs, live or saved, in one :class:`LiveView`.

Each run keeps its own :class:`~jaxcapture_nb._stream.Stream`; the view
lists the sites and scalars of all of them and the front end overlays what
they share: one colour per run, scalars on the same axes, each site's
histograms per run on one step axis or as overlaid percentile bands, one
step slider. A run that is still being watched keeps updating the view:
its :class:`~jaxcapture_nb.Watch` publishes to it as to its own view.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from jaxcapture_nb._run import Run
from jaxcapture_nb._run_sources import RunSource, named_runs, read_run, reader_of
from jaxcapture_nb._watch import Watch


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
    from jaxcapture_nb._widgets.live_view import LiveView

    named = named_runs(runs, "overlay_runs")
    read: dict[str, Run] = {}
    saved = {name for name, source in named if reader_of(source) is not None}
    # Runs in memory first: a saved run is read with their bins, or with the first saved run's.
    for name, source in named:
        if name not in saved:
            read[name] = read_run(source, name=name)
    if bins is None and read:
        bins = next(iter(read.values())).stream.bins
    for name, source in named:
        if name in saved:
            read[name] = read_run(source, name=name, bins=bins, keep_steps=keep_steps)
            bins = read[name].stream.bins
    view = LiveView([read[name] for name, _ in named])
    watches = [run.source for run in view.runs if isinstance(run.source, Watch)]
    live = [w for w in watches if not w.stream.ended]
    for w in live:
        w.overlays.append(view)
    if live:
        view.keep_saved_output_fresh()  # the watches send its saved picture again as they record
    view.publish(final=not live)
    return view
