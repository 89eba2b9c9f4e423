"""The runs an overlay shows, read with one set of bins.

Each run keeps its own :class:`~jaxcapture_nb.runs.stream.Stream`; the view
(:func:`~jaxcapture_nb.overlay_runs`) lists the sites and scalars of all of
them and the front end overlays what they share. Runs in memory are read
first, so that a saved run is read with their bins, or with the first saved
run's: histograms drawn on one step axis must share their bins.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from jaxcapture_nb.runs.run import Run
from jaxcapture_nb.runs.sources import RunSource, named_runs, read_run, reader_of
from jaxcapture_nb.runs.watch import Watch


def read_runs(
    runs: Mapping[str, RunSource] | Sequence[RunSource] | str | os.PathLike[str],
    *,
    bins: int | None,
    keep_steps: int,
) -> list[Run]:
    """Each run of ``runs``, named and read, in the order given (arguments as :func:`~jaxcapture_nb.overlay_runs`'s)."""
    named = named_runs(runs, "overlay_runs")
    read: dict[str, Run] = {}
    saved = {name for name, source in named if reader_of(source) is not None}
    for name, source in named:
        if name not in saved:
            read[name] = read_run(source, name=name)
    if bins is None and read:
        bins = next(iter(read.values())).stream.bins
    for name, source in named:
        if name in saved:
            read[name] = read_run(source, name=name, bins=bins, keep_steps=keep_steps)
            bins = read[name].stream.bins
    return [read[name] for name, _ in named]


def running_watches(runs: Sequence[Run]) -> list[Watch]:
    """The watches among ``runs``' sources that are still recording: an overlay of them keeps updating."""
    return [run.source for run in runs if isinstance(run.source, Watch) and not run.source.stream.ended]
