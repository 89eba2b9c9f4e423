"""compare_runs(): two or more training runs at one step, site by site, as compare_modes compares modes.

A run is what ``watch()`` recorded, live or saved (see
:mod:`~jaxcapture_nb.runs.sources`). Each site's row at the step is
taken from every run, their histograms are put on one shared range, and the
site's shift is the earth mover's distance between them in pooled standard
deviations: the same measure, result and widget as
:func:`~jaxcapture_nb.compare_modes`, with the runs in place of the modes.

A live row keeps a histogram of ``bins`` equal bins over its own range, not
the values, so the shared histograms spread each bin's count over the
shared bins it overlaps, as if its values lay evenly across it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence

import numpy as np

from jaxcapture_nb.modes.comparison import Comparison, SiteComparison, shift_scores
from jaxcapture_nb.runs.series import SiteSeries
from jaxcapture_nb.runs.sources import RunSource, named_runs, read_run
from jaxcapture_nb.runs.stream import Stream
from jaxcapture_nb.stats.schema import compare_columns

# What a comparison shows for the shape of a site read from a log: logs keep no shapes.
NO_SHAPE = "not kept in the log"


def rebinned(
    hist: np.ndarray, lo: float, hi: float, shared_lo: float, shared_hi: float, bins: int
) -> np.ndarray:
    """``hist``'s counts over ``[lo, hi]`` spread onto ``bins`` equal bins over the shared range.

    Each bin's count goes to the shared bins it overlaps, in proportion to
    the overlap; a bin of no width (a constant) goes to the bin it lies in.

    Example:
      >>> rebinned(np.array([4, 8]), 0.0, 2.0, 0.0, 4.0, 4).tolist()
      [4.0, 8.0, 0.0, 0.0]
      >>> rebinned(np.array([4]), 1.0, 2.0, 0.0, 2.0, 4).tolist()
      [0.0, 0.0, 2.0, 2.0]
    """
    counts = np.asarray(hist, np.float64)
    shared = np.linspace(shared_lo, shared_hi, bins + 1)
    if hi <= lo:
        out = np.zeros(bins)
        out[int(np.clip(np.searchsorted(shared, lo, side="right") - 1, 0, bins - 1))] = counts.sum()
        return out
    edges = np.linspace(lo, hi, len(counts) + 1)
    # The length of each source bin inside each shared bin, as a share of the source bin.
    overlap = np.minimum(edges[1:, None], shared[None, 1:]) - np.maximum(edges[:-1, None], shared[None, :-1])
    share = np.clip(overlap, 0.0, None) / (edges[1:] - edges[:-1])[:, None]
    return counts @ share


def whole_counts(counts: np.ndarray) -> np.ndarray:
    """Spread counts rounded to whole numbers with their total kept (largest remainders round up).

    Example:
      >>> whole_counts(np.array([[1.5, 1.5, 1.0], [0.2, 0.3, 0.5]])).tolist()
      [[2, 1, 1], [0, 0, 1]]
    """
    counts = np.asarray(counts, np.float64)
    whole = np.floor(counts)
    missing = np.rint(counts.sum(-1) - whole.sum(-1)).astype(int)
    # Stable: of equal remainders, the first bins round up.
    order = np.argsort(-(counts - whole), axis=-1, kind="stable")
    for row, (n, ranked) in enumerate(zip(missing, order, strict=True)):
        whole[row, ranked[:n]] += 1
    return whole.astype(np.int32)


def _row_at(series: SiteSeries, step: int) -> int | None:
    """The index of the series' latest row at or before ``step`` (None if it has none)."""
    steps = series.steps[: series.size]
    k = int(np.searchsorted(steps, step, side="right")) - 1
    return k if k >= 0 else None


def _labelled(
    runs: Sequence[RunSource] | Mapping[str, RunSource] | str | os.PathLike[str],
) -> dict[str, Stream]:
    labelled = {
        name: read_run(source, name=name).stream for name, source in named_runs(runs, "compare_runs()")
    }
    if len(labelled) < 2:
        raise ValueError(f"compare_runs() needs two runs or more, got {len(labelled)}")
    return labelled


def last_shared_step(streams: Sequence[Stream]) -> int:
    """The last step every run recorded some site at.

    Raises:
      ValueError: a run has recorded no step yet.
    """
    lasts = []
    for stream in streams:
        with stream.lock:
            steps = [int(s.steps[s.size - 1]) for s in stream.series.values() if s.size]
        if not steps:
            raise ValueError("a run has recorded no step yet: compare once every run has recorded one")
        lasts.append(max(steps))
    return min(lasts)


def compare_runs(
    runs: Sequence[RunSource] | Mapping[str, RunSource] | str | os.PathLike[str],
    *,
    step: int | None = None,
    bins: int | None = None,
) -> Comparison:
    """Compares two or more runs at one step, site by site; displays as a :class:`CompareView`.

    ::

        compare_runs({"lr 1e-3": "runs/lr-1e-3", "lr 1e-2": w}, step=200)   # a saved run and a watch
        compare_runs("runs")   # every run saved under runs/, named by its folder

    Args:
      runs: the runs, by name (a dict), in order (a saved run named by its
        folder, others ``run 1``, ``run 2``, ...), or a folder whose
        subfolders hold saved runs: each a :class:`~jaxcapture_nb.Watch`, its
        :class:`~jaxcapture_nb.LiveView`, or the path of a TensorBoard log
        it wrote, as :func:`~jaxcapture_nb.overlay_runs` takes runs. The
        first is the reference the shifts are measured from.
      step: the step to compare at: each site's latest recorded row at or
        before it (with ``every`` or thinning, the rows of the runs may be
        a few steps apart). By default, the last step every run recorded.
      bins: the shared histograms' bins; by default the first run's.

    Returns:
      A :class:`~jaxcapture_nb.Comparison` whose modes are the runs, its
      sites sorted by shift, largest first; ``settings`` holds the step of
      each run's rows, and its ``note`` names the step compared at (and
      the steps of the rows, where some lie before it).

    Raises:
      TypeError: a run is not one ``watch()`` recorded or its log.
      ValueError: fewer than two runs, a run with no recorded step, or a
        watch that has not started.
      FileNotFoundError: a path holds no event file.
    """
    labelled = _labelled(runs)
    names, streams = list(labelled), list(labelled.values())
    for stream in streams:
        if isinstance(stream, Stream):  # a watch's, which may still be filling
            stream.settle()
    step = last_shared_step(streams) if step is None else int(step)
    bins = bins or streams[0].bins
    # Sites are matched by what the views call them: a live run and one read
    # from its log key their series differently.
    named = [{site_name(series): series for series in stream.series.values()} for stream in streams]
    keys = dict.fromkeys(key for sites in named for key in sites)
    sites = [_compare_site([sites.get(key) for sites in named], step, bins) for key in keys]
    sites.sort(key=lambda s: (math.isnan(s.shift), -s.shift if not math.isnan(s.shift) else 0.0))
    settings = {name: f"step {step}" for name in names}
    note = step_note(step, _row_steps(named, step))
    return Comparison(names, settings, sites, captures={}, outputs={}, bins=bins, note=note, noun="run")


def step_note(step: int, row_steps: set[int]) -> str:
    """What a comparison of runs says of its step, and of rows recorded before it.

    Example:
      >>> step_note(200, {200})
      'compared at step 200'
      >>> step_note(200, {150, 200})
      "compared at step 200: each site's latest row at or before it, from steps 150–200"
    """
    if not row_steps or min(row_steps) == step:
        return f"compared at step {step}"
    return (
        f"compared at step {step}: each site's latest row at or before it, "
        f"from steps {min(row_steps)}–{max(row_steps)}"
    )


def site_name(series: SiteSeries) -> tuple[str, str]:
    """How runs name a site alike, live or read from a log: its kind and label."""
    return series.kind, series.label


def _row_steps(named: list[dict[tuple[str, str], SiteSeries]], step: int) -> set[int]:
    """The steps of the rows a comparison at ``step`` takes, over every run and site."""
    found = set()
    for sites in named:
        for series in sites.values():
            k = _row_at(series, step)
            if k is not None:
                found.add(int(series.steps[k]))
    return found


def _compare_site(found: list[SiteSeries | None], step: int, bins: int) -> SiteComparison:
    """One site's rows at ``step`` in every run, on a shared range."""
    columns = compare_columns()
    # Per run: the series and its row at the step as {column: value}, or None where it has none.
    reached: list[tuple[SiteSeries, int, dict[str, float]] | None] = []
    for series in found:
        k = None if series is None else _row_at(series, step)
        if series is None or k is None:
            reached.append(None)
        else:
            reached.append(
                (series, k, dict(zip(series.columns, series.stats[k].astype(np.float64), strict=True)))
            )
    stats = np.array(
        [[r[2].get(c, math.nan) for c in columns] if r else [math.nan] * len(columns) for r in reached]
    )
    binned = [r for r in reached if r is not None and r[0].hists[r[1]].sum() > 0]
    lo = min((r[2]["lo"] for r in binned), default=0.0)
    hi = max((r[2]["hi"] for r in binned), default=0.0)
    hists = np.zeros((len(found), bins))
    for m, r in enumerate(reached):
        if r is not None and binned:
            series, k, row = r
            hists[m] = rebinned(series.hists[k], row["lo"], row["hi"], lo, hi, bins)
    if len(binned) == len(found):
        mean, std = columns.index("mean"), columns.index("std")
        shifts = shift_scores(hists, lo, hi, stats[:, std], stats[:, mean])
    else:
        shifts = np.full(len(found), math.nan)
    some = next(s for s in found if s is not None)
    return SiteComparison(
        site=some.label,
        label=some.label,
        var_type=some.kind,
        # A run read from a log keeps no shapes: the text says so, and marks the site as reached.
        shapes=[None if r is None else (NO_SHAPE if r[0].shape is None else r[0].shape) for r in reached],
        stats=stats,
        lo=float(lo),
        hi=float(hi),
        hists=whole_counts(hists),
        shifts=shifts,
    )
