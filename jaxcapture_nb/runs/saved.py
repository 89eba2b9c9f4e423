"""A saved TensorBoard log read back into a :class:`~jaxcapture_nb.runs.stream.Stream`, as open_run() shows it.

The log is read as TensorBoard's server reads it (``tensorboard.reader``: past
damaged records, which a warning names), and every histogram tag becomes a site of a
:class:`~jaxcapture_nb.runs.stream.Stream`, filled as ``watch()`` fills one: a
row per step with its statistics, percentiles and histogram. The scalars
that name no site's statistic become the view's scalars.

A log ``watch(log_dir=...)`` wrote (see ``tensorboard.writer``) comes back as it
was recorded: its histograms have ``bins`` equal buckets, kept as they are,
and its statistics are scalars of their own. Histograms and scalars are
read in both forms TensorBoard knows:

- TensorFlow 1's, which tensorboardX, PyTorch and ``watch`` write: a
  histogram (``HistogramProto``) with its sums, range and bucket limits,
  and a scalar as a simple value;
- TensorFlow 2's, which ``tf.summary`` writes (Flax's examples write it
  through CLU's ``SummaryWriter``): a tensor tagged with its plugin, a
  histogram's ``[k, 3]`` rows of left edge, right edge and count, a
  scalar's single value. Tensors of other plugins (images, text) are
  skipped.

A histogram written by another tool has buckets of its own choosing, which
are spread onto ``bins`` equal bins between its lowest and highest edge, as
if the values of each bucket lay evenly across it; its mean and standard
deviation come from the histogram's sums (TensorFlow 2's from the bucket
midpoints, weighted by the counts), its minimum and maximum from its range,
and its share of zeros is unknown.
"""

from __future__ import annotations

import math
import os
import pathlib
import sys
from typing import Any

import numpy as np

from jaxcapture_nb.core.user_warnings import warn
from jaxcapture_nb.runs.rows import row_stats
from jaxcapture_nb.runs.stream import Stream
from jaxcapture_nb.runs.tensorboard import reader
from jaxcapture_nb.runs.tensorboard.folders import event_files, run_path, runs_in
from jaxcapture_nb.runs.tensorboard.reader import FileReport, histogram_value, problems_text
from jaxcapture_nb.runs.tensorboard.tags import HistogramValue, Tags, TagValues
from jaxcapture_nb.runs.tensorboard.writer import histogram_edges, parse_site_tag, require, stat_keys
from jaxcapture_nb.stats import schema
from jaxcapture_nb.stats.reduced import PASS_FIELDS, float_fields
from jaxcapture_nb.stats.summary import DEFAULT_BINS, Summary


def _summary_stats() -> tuple[str, ...]:
    """The logged statistics a row is made from: those our logs write as scalars, but the derived ones, which are made again.

    Example:
      >>> _summary_stats()
      ('mean', 'std', 'min', 'max', 'zero_pct', 'nan', 'posinf', 'neginf')
    """
    return tuple(key for key in stat_keys(schema.live_columns()) if schema.stat(key).derive is None)


def read_log(path: str | os.PathLike[str], *, bins: int | None = None, keep_steps: int = 500) -> Stream:
    """The :class:`Stream` a saved run fills, as :func:`~jaxcapture_nb.open_run` shows it (same arguments)."""
    require("tensorboard")
    histograms, scalars, wall_times = _histograms_and_scalars(run_path(path), keep_steps)
    if bins is None:
        firsts = (histogram_value(found.values[0]) for found in histograms.values())
        bins = next((b for b in map(_even_bins, firsts) if b), DEFAULT_BINS)
    stream = Stream(bins=bins, include=None, every=1, keep_steps=keep_steps, grads=False)
    site_stats = {f"{tag}/{s.key}" for tag in histograms for s in schema.STATS}
    for order, (tag, found) in enumerate(histograms.items()):
        stats = {key: scalars.get(f"{tag}/{key}") for key in _summary_stats()}
        _fill_site(stream, order, tag, found, stats)
    for tag, found in scalars.items():
        if tag not in site_stats:
            _fill_scalar(stream, tag, found)
    if wall_times:
        # The events' wall times span the first step to the last, as the
        # live view's pace does: the same rate, live or reopened.
        stream.pace.note(1, wall_times[0])
        stream.pace.note(stream.steps_seen, wall_times[1])
    return stream


class TensorBoardReader:
    """Runs kept as TensorBoard event files: a folder of them, or one file (a :class:`~jaxcapture_nb.runs.sources.RunReader`)."""

    def reads(self, source: Any) -> bool:
        return isinstance(source, (str, os.PathLike))

    def runs_in(self, source: Any) -> dict[str, Any]:
        return {name: os.fspath(path) for name, path in runs_in(source).items()}

    def read(self, source: Any, *, bins: int | None, keep_steps: int) -> Stream:
        stream = read_log(source, bins=bins, keep_steps=keep_steps)
        stream.ended = True  # a log gets no more rows
        return stream


def even_counts(
    min_: float, max_: float, limits: list[float], counts: list[float], bins: int
) -> tuple[float, float, np.ndarray]:
    """The range and ``bins`` equal-bin counts of a TensorBoard histogram.

    TensorBoard reads bucket ``i`` as the values from ``limits[i - 1]`` up
    to ``limits[i]``, the first from ``min_`` and the last up to ``max_``.
    Buckets that are already ``bins`` equal ones (after an empty first one
    of no width, as ``watch(log_dir=...)`` and tensorboardX write it) are
    kept as they are; others are spread onto equal bins as if their values
    lay evenly across each bucket, rounded so the total stays the same.

    Example:
      >>> even_counts(0.0, 4.0, [0.0, 1.0, 2.0, 3.0, 4.0], [0, 1, 2, 3, 4], 4)
      (0.0, 4.0, array([1, 2, 3, 4]))
      >>> even_counts(0.0, 4.0, [0.0, 2.0, 4.0], [0, 2, 6], 4)
      (0.0, 4.0, array([1, 1, 3, 3]))
    """
    limits_ = np.asarray(limits, np.float64)
    edges = np.concatenate([[min_], limits_[:-1], [max_]])
    # Edges that go back (a first limit below the minimum) do not count.
    edges = np.maximum.accumulate(edges)
    cumulative = np.concatenate([[0.0], np.cumsum(np.asarray(counts, np.float64))])
    # Of equal edges, the last: a bucket of no width adds its count there.
    last = np.append(edges[1:] > edges[:-1], True)
    edges, cumulative = edges[last], cumulative[last]
    total = int(round(cumulative[-1]))
    if len(edges) == 1:
        # Every value the same: a bar around it, as summarize() draws one.
        pad = max(abs(edges[0]) * 1e-3, 0.5)
        hist = np.zeros(bins, np.int64)
        hist[bins // 2] = total
        return float(edges[0] - pad), float(edges[0] + pad), hist
    lo, hi = float(edges[0]), float(edges[-1])
    target = histogram_edges(lo, hi, bins)
    if len(edges) == bins + 1 and np.array_equal(edges, target):
        return lo, hi, np.diff(np.round(cumulative)).astype(np.int64)
    return lo, hi, np.diff(np.round(np.interp(target, edges, cumulative))).astype(np.int64)


def _histograms_and_scalars(
    run: pathlib.Path, keep: int
) -> tuple[dict[str, TagValues], dict[str, TagValues], tuple[float, float] | None]:
    """A run's histograms and scalars by tag, in step order, from its event files, and the wall times they span.

    The files of a folder are read in name order, as TensorBoard reads them,
    as one run: several writers may share a run, and a run that was resumed
    goes on in a new file. A run resumed from a checkpoint says where in a
    SessionLog START event (``watch(start_step=...)`` writes one): what the
    earlier files logged from that step on is dropped, as TensorBoard drops
    it (``purge_orphaned_data``). Any other file in which a tag's steps
    start again at or below those before it holds another run, written to
    the same folder: only the last run is read, and a warning says so,
    rather than mixing two runs' values into one row. A file written while
    the one before it was (two watches of one folder at once) is the same
    run, as TensorBoard shows it: every tag of both is read. A tag both
    wrote shows the later file's values alone, and a warning names it.
    Damaged records are skipped, with a warning naming the file.

    A run of one file, the usual one, is thinned as it is read to what a
    view of ``keep`` rows per tag may keep; the values of several files are
    put in step order together, which changes their places, so those are
    read whole.
    """
    runs: list[list[tuple[pathlib.Path, Tags]]] = []
    last: dict[str, int] = {}  # each tag's last step in the run so far
    written_until = -math.inf  # the run's last wall time so far
    shared: dict[str, list[str]] = {}  # tags that files written at once both hold, by file
    files = [run] if run.is_file() else event_files(run)
    for path in files:
        problems: list[str] = []
        tags = reader.read_file(path, problems, keep if len(files) == 1 else None)
        if problems:
            warn(problems_text(FileReport(path, problems)))
        first = tags.first_steps()
        if tags.restarted_at is not None and runs:
            restart = tags.restarted_at
            runs[-1] = [(earlier, found.before(restart)) for earlier, found in runs[-1]]
            last = {tag: step for tag, step in last.items() if step < restart}
        if not first:
            continue
        at_once = runs and tags.wall_times is not None and tags.wall_times[0] <= written_until
        if at_once:
            both = sorted(tag for tag in first if tag in last)
            if both:
                shared[path.name] = both
                runs[-1] = [(earlier, found.without(set(both))) for earlier, found in runs[-1]]
        elif not runs or any(tag in last and step <= last[tag] for tag, step in first.items()):
            runs.append([])
            last, written_until = {}, -math.inf
        runs[-1].append((path, tags))
        last |= tags.last_steps()
        if tags.wall_times is not None:
            written_until = max(written_until, tags.wall_times[1])
    if len(runs) > 1:
        starts = ", ".join(files[0][0].name for files in runs)
        warn(
            f"{run} holds {len(runs)} runs: the steps start again in {starts}. Shown: the last, "
            f"{runs[-1][0][0].name}; open an event file by its path to see another, and give each "
            "run a folder of its own."
        )
    kept = runs[-1] if runs else []
    for name, both in shared.items():
        # A site's statistics are scalars below its tag: named with it.
        both = [tag for tag in both if tag.rpartition("/")[0] not in both]
        if any(path.name == name for path, _ in kept):
            warn(
                f"{run}: {name} was written while the file before it was (two writers in one folder), "
                f"and both log {', '.join(map(repr, both))}: shown are {name}'s values of those alone. "
                "Give each watch a log_dir of its own to keep them apart."
            )
    spans = [tags.wall_times for _, tags in kept if tags.wall_times]
    wall_times = (min(s[0] for s in spans), max(s[1] for s in spans)) if spans else None
    return (
        _by_step([tags.histograms for _, tags in kept]),
        _by_step([tags.scalars for _, tags in kept]),
        wall_times,
    )


def _by_step(files: list[dict[str, TagValues]]) -> dict[str, TagValues]:
    """Each tag's values over ``files``, in step order; of repeated steps (a run written twice), the last."""
    parts: dict[str, list[TagValues]] = {}
    for tags in files:
        for tag, found in tags.items():
            parts.setdefault(tag, []).append(found)
    return {tag: _in_step_order(found) for tag, found in parts.items()}


def _in_step_order(parts: list[TagValues]) -> TagValues:
    """One tag's values from several files, in step order, the last of repeated steps kept.

    Example:
      >>> first = TagValues(np.array([0, 1, 2]), np.array([0.0, 1.0, 2.0]), np.zeros(3))
      >>> again = TagValues(np.array([1, 3]), np.array([10.0, 30.0]), np.ones(2))
      >>> found = _in_step_order([first, again])
      >>> found.steps.tolist(), found.values.tolist(), found.walls.tolist()
      ([0, 1, 2, 3], [0.0, 10.0, 2.0, 30.0], [0.0, 1.0, 0.0, 1.0])
    """
    if len(parts) == 1 and parts[0].ordinals is not None:
        return parts[0]  # thinned as it was read, its steps going up
    steps = np.concatenate([part.steps for part in parts])
    order = np.argsort(steps, kind="stable")
    ordered = steps[order]
    keep = order[np.append(ordered[1:] != ordered[:-1], True)]
    if isinstance(parts[0].values, np.ndarray):
        values: Any = np.concatenate([part.values for part in parts])[keep]
    else:
        every = [value for part in parts for value in part.values]
        values = [every[k] for k in keep]
    return TagValues(steps[keep], values, np.concatenate([part.walls for part in parts])[keep])


def _even_bins(h: HistogramValue) -> int | None:
    """How many equal buckets a histogram has, or None if they are not equal."""
    bins = len(h.bucket_limit) - 1
    if bins < 1 or not h.min < h.max or h.bucket[0] != 0:
        return None
    if h.bucket_limit[0] != h.min or h.bucket_limit[-1] != h.max:
        return None
    # TensorFlow 2 computes its equal edges its own way: equal up to rounding.
    even = histogram_edges(h.min, h.max, bins)
    return bins if np.allclose(h.bucket_limit, even, rtol=0.0, atol=1e-9 * (h.max - h.min)) else None


def _fill_site(
    stream: Stream, order: int, tag: str, found: TagValues, stats: dict[str, TagValues | None]
) -> None:
    """Records a histogram tag's events as the rows of a site, with their statistics if logged.

    Only the rows the site's history keeps in the end are made (a long log
    is thinned evenly, as ``watch(keep_steps=)`` thins a run); the first
    step that held a NaN or an Inf is flagged wherever it lies.
    """
    label, kind = parse_site_tag(tag)
    series = stream.site_series(("log", tag), label, kind)
    zeros_known = stats["zero_pct"] is not None
    for key in ("nan", "posinf", "neginf"):
        counts = stats[key]
        held = counts.first_step(nonfinite=False) if counts is not None else None
        if held is not None:
            stream.flag_nonfinite(series, held, order)
    indices = found.kept(stream.keep_steps)
    if not indices:
        return
    kept = [int(found.steps[k]) for k in indices]
    histograms = [histogram_value(found.values[k]) for k in indices]
    stacked, sizes = _summaries(_even_histograms(histograms, stream.bins), histograms, kept, stats)
    # Made together: one pass over all the rows' histograms for their percentiles.
    rows = row_stats(stacked, sizes, series.layout)
    if not zeros_known:
        rows[:, series.columns.index("zero_pct")] = math.nan
    for step, row, hist in zip(kept, rows, stacked.hist, strict=True):
        stream.add_row(series, step, order, row, hist)
    stream.clock.saw(int(found.steps[-1]))


def _even_histograms(histograms: list[Any], bins: int) -> list[tuple[float, float, np.ndarray]]:
    """:func:`even_counts` of each histogram; those already of ``bins`` equal buckets (``watch``'s own) all at once."""
    width = bins + 1
    alike = [k for k, h in enumerate(histograms) if len(h.bucket_limit) == width and len(h.bucket) == width]
    out: list[Any] = [None] * len(histograms)
    if alike:
        limits = np.stack([histograms[k].bucket_limit for k in alike]).astype(np.float64)
        counts = np.stack([histograms[k].bucket for k in alike]).astype(np.float64)
        lo = np.array([histograms[k].min for k in alike], np.float64)
        hi = np.array([histograms[k].max for k in alike], np.float64)
        even = lo[:, None] + (hi - lo)[:, None] * np.linspace(0.0, 1.0, width)  # as histogram_edges
        kept_as_they_are = (lo < hi) & (counts[:, 0] == 0) & (limits == even).all(axis=1)
        kept_as_they_are &= (np.diff(limits[:, 1:], axis=1) > 0).all(axis=1)
        hists = np.diff(np.round(np.cumsum(counts, axis=1)), axis=1).astype(np.int64)
        for j in np.flatnonzero(kept_as_they_are):
            out[alike[j]] = (float(lo[j]), float(hi[j]), hists[j])
    for k, h in enumerate(histograms):
        if out[k] is None:
            out[k] = even_counts(h.min, h.max, h.bucket_limit, h.bucket, bins)
    return out


def _summaries(
    evens: list[tuple[float, float, np.ndarray]],
    histograms: list[Any],
    steps: list[int],
    logged: dict[str, TagValues | None],
) -> tuple[Summary, np.ndarray]:
    """The summaries of a site's rows, stacked, and each row's number of values.

    Each row takes the statistics logged at its step, else its histogram's.

    Args:
      evens: each row's histogram on equal bins, as (lo, hi, counts).
      histograms: each row's ``HistogramProto``, for its sums and range.
      steps: each row's step.
      logged: per statistic, its logged values in step order, if any.
    """
    lo, hi = (np.array([e[k] for e in evens], np.float64) for k in (0, 1))
    hists = np.stack([e[2] for e in evens]).astype(np.int64)
    count = hists.sum(axis=1)
    num, total, sums, squares, least, most = (
        np.array(column, np.float64)
        for column in zip(
            *((h.num, h.bucket.sum(), h.sum, h.sum_squares, h.min, h.max) for h in histograms), strict=True
        )
    )
    # Sums are only as good as the count they were made with: a log whose
    # count disagrees with its buckets (one tool writes the number of edges)
    # gives a mean outside the histogram's own range.
    supported = (num > 0) & (np.abs(num - total) < 0.5)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(supported, sums / num, math.nan)
        variance = np.where(supported, squares / num - mean * mean, math.nan)
    inside = (least <= mean) & (mean <= most)
    mean, variance = np.where(inside, mean, math.nan), np.where(inside, variance, math.nan)
    std = np.sqrt(np.maximum(variance, 0.0), where=~np.isnan(variance), out=np.full_like(variance, math.nan))
    empty = count == 0
    derived = {
        key: np.where(empty, math.nan, v)
        for key, v in (("min", least), ("max", most), ("mean", mean), ("std", std))
    }
    derived |= {key: np.zeros(len(evens)) for key in ("nan", "posinf", "neginf", "zero_pct")}
    # A histogram does not give what the schema reduces: only its log does.
    derived |= {key: np.full(len(evens), math.nan) for key in float_fields()[len(PASS_FIELDS) :]}
    at_steps = np.array(steps, np.int64)
    for key, given in logged.items():
        if given is not None and key in derived:
            at = np.minimum(np.searchsorted(given.steps, at_steps), len(given.steps) - 1)
            derived[key] = np.where(given.steps[at] == at_steps, given.values[at], derived[key])
    nonfinite = np.stack([derived[key] for key in ("nan", "posinf", "neginf")], axis=1)
    nonfinite = np.nan_to_num(nonfinite, nan=0.0).astype(np.int64)
    size = count + nonfinite.sum(axis=1)
    zero_pct = derived["zero_pct"]
    finite = np.isfinite(zero_pct)
    zeros = np.where(finite, np.round(np.where(finite, zero_pct, 0.0) * size / 100), 0).astype(np.int64)
    derived |= {"lo": lo, "hi": hi}
    stats = np.stack([derived[key] for key in float_fields()], axis=1)
    counts = np.concatenate([count[:, None], nonfinite, zeros[:, None], hists], axis=1)
    return Summary(stats=stats, counts=counts, shape=(), dtype="float32"), size


def _fill_scalar(stream: Stream, tag: str, found: TagValues) -> None:
    """Records a scalar tag's values, as :func:`_fill_site` records a site's: the kept rows, the first NaN."""
    nonfinite = found.first_step(nonfinite=True)
    series = stream.scalar_series(tag)
    for k in found.kept(stream.keep_steps):
        stream.add_scalar_row(series, int(found.steps[k]), float(found.values[k]), float(found.walls[k]))
    if nonfinite is not None:
        stream.flag_nonfinite(series, nonfinite, sys.maxsize)
    stream.clock.saw(int(found.steps[-1]))
