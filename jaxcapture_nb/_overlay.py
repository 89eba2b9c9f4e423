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

from jaxcapture_nb._runs import read_run, runs_in
from jaxcapture_nb._stream import Stream
from jaxcapture_nb._watch import Watch

RunSource = Any  # a Watch, a LiveView, a Stream, or the path of a saved run


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
        or the path of a TensorBoard log (as :func:`~jaxcapture_nb.open_run`
        reads it).
      bins: histogram bins of the saved runs; by default those of the
        first run given as a watch or view, else of the first saved run.
        Watched runs must share their bins.
      keep_steps: rows kept per site of a saved run.

    Returns:
      A :class:`~jaxcapture_nb.LiveView`; ``view.runs`` lists ``(name, stream)``.

    Raises:
      ValueError: no run, a name given twice, runs with different bins, or
        a watch that has not started.
      TypeError: a run of another type.
      FileNotFoundError: a path holds no event file.
    """
    from jaxcapture_nb._widgets.live_view import LiveView

    named = _named(runs)
    watches = [source for _, source in named if isinstance(source, Watch)]
    streams: dict[str, Stream] = {}
    for name, source in named:
        if not _is_path(source):
            streams[name] = _stream_of(name, source)
    if bins is None and streams:
        bins = next(iter(streams.values())).bins
    for name, source in named:
        if _is_path(source):
            streams[name] = read_run(source, bins=bins, keep_steps=keep_steps)
            streams[name].ended = True
            bins = streams[name].bins
    view = LiveView({name: streams[name] for name, _ in named})
    live = [w for w in watches if not w.stream.ended]
    for w in live:
        w.overlays.append(view)
    if live:
        view.keep_saved_output_fresh()  # the watches send its saved picture again as they record
    view.publish(final=not live)
    return view


def _named(runs: Any) -> list[tuple[str, RunSource]]:
    """``runs`` as ``[(name, source)]``, names unique."""
    if _is_path(runs):
        named = [(name, os.fspath(path)) for name, path in runs_in(runs).items()]
    elif isinstance(runs, Mapping):
        named = [(str(name), source) for name, source in runs.items()]
    elif isinstance(runs, Sequence):
        named = [(_default_name(k, source), source) for k, source in enumerate(runs)]
    else:
        raise TypeError(
            f"runs must be a dict of runs, a list of runs or a directory, got {type(runs).__name__}"
        )
    if not named:
        raise ValueError("overlay_runs needs at least one run")
    names = [name for name, _ in named]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(
            f"runs need different names, got {', '.join(map(repr, repeated))} more than once; pass a dict"
        )
    return named


def _default_name(k: int, source: RunSource) -> str:
    return os.path.basename(os.path.normpath(os.fspath(source))) if _is_path(source) else f"run {k + 1}"


def _is_path(source: Any) -> bool:
    return isinstance(source, (str, os.PathLike))


def _stream_of(name: str, source: RunSource) -> Stream:
    """The stream of a watch, a view of one run, or a stream."""
    from jaxcapture_nb._widgets.live_view import LiveView

    if isinstance(source, Watch):
        if source.view is None:
            raise ValueError(
                f"run {name!r}: the watch has not started; overlay it inside or after its with block"
            )
        return source.stream
    if isinstance(source, LiveView):
        if len(source.runs) > 1:
            raise ValueError(
                f"run {name!r}: the view shows {len(source.runs)} runs; pass each run on its own"
            )
        return source.stream
    if isinstance(source, Stream):
        return source
    raise TypeError(
        f"run {name!r}: expected a Watch, a LiveView or the path of a saved run, got {type(source).__name__}"
    )
