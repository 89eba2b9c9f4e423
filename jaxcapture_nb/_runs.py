"""open_run(): a saved TensorBoard log, shown in a :class:`LiveView` with no model and no loop.

The log is read with TensorBoard's own ``EventAccumulator``, the reader its
server was built on, and every histogram tag becomes a site of a
:class:`~jaxcapture_nb._stream.Stream`, filled as ``watch()`` fills one: a
row per step with its statistics, percentiles and histogram. The scalars
that name no site's statistic become the view's scalars.

A log ``watch(log_dir=...)`` wrote (see ``_tensorboard``) comes back as it
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
from typing import Any

import numpy as np

from jaxcapture_nb import _schema
from jaxcapture_nb._stream import Stream
from jaxcapture_nb._summary import DEFAULT_BINS, Summary
from jaxcapture_nb._tensorboard import histogram_edges, parse_site_tag, require

# The statistics a summary holds, which a row is made from; our logs write
# them as scalars, with the derived ones, which are made again.
_SUMMARY_STATS = ("mean", "std", "min", "max", "zero_pct", "nan", "posinf", "neginf")


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
        file. A directory whose event files lie in subdirectories holds
        several runs (:func:`runs_in` lists them); open each on its own.
      bins: the view's histogram bins; by default those of the log's first
        histogram with equal buckets (``watch(log_dir=...)`` and TensorFlow
        2's ``tf.summary.histogram`` write those), else 64.
      keep_steps: rows kept per site, as ``watch(keep_steps=)``; a longer
        log is thinned evenly.

    Returns:
      A :class:`~jaxcapture_nb.LiveView`; ``view.stream`` holds the rows.

    Raises:
      FileNotFoundError: ``path`` holds no event file.
      ValueError: ``path`` holds several runs.
      ImportError: TensorBoard is not installed.
    """
    from jaxcapture_nb._widgets.live_view import LiveView

    view = LiveView(read_run(path, bins=bins, keep_steps=keep_steps))
    view.publish(final=True)
    return view


def read_run(path: str | os.PathLike[str], *, bins: int | None = None, keep_steps: int = 500) -> Stream:
    """The :class:`Stream` a saved run fills, as :func:`open_run` shows it (same arguments)."""
    require("tensorboard")
    from tensorboard.backend.event_processing import event_accumulator as ea

    # 0 keeps every event, where the default keeps one histogram per tag.
    keep_all = {ea.HISTOGRAMS: 0, ea.SCALARS: 0, ea.COMPRESSED_HISTOGRAMS: 1, ea.TENSORS: 0}
    accumulator = ea.EventAccumulator(os.fspath(run_path(path)), size_guidance=keep_all).Reload()
    histograms, scalars = _histograms_and_scalars(accumulator)
    if bins is None:
        bins = next((b for b in map(_even_bins, histograms.values()) if b), DEFAULT_BINS)
    stream = Stream(bins=bins, include=None, every=1, keep_steps=keep_steps, grads=False)
    site_stats = {f"{tag}/{s.key}" for tag in histograms for s in _schema.STATS}
    for order, (tag, events) in enumerate(histograms.items()):
        stats = {key: scalars.get(f"{tag}/{key}", {}) for key in _SUMMARY_STATS}
        _fill_site(stream, order, tag, events, stats)
    for tag, events in scalars.items():
        if tag not in site_stats:
            _fill_scalar(stream, tag, events)
    walltimes = [e.wall_time for events in (*histograms.values(), *scalars.values()) for e in events.values()]
    if walltimes:
        # The view's progress line divides the steps by the time since the
        # stream started: the run's own span gives the run's rate.
        stream.started -= max(walltimes) - min(walltimes)
    return stream


def runs_in(path: str | os.PathLike[str]) -> dict[str, pathlib.Path]:
    """The runs under ``path``, by name, in name order.

    Each directory under ``path`` that holds event files is a run, named by
    its path from ``path`` (``"adam/lr-1e-3"``), as TensorBoard names the
    runs of a ``--logdir``. An event file, or a directory that itself holds
    event files, is one run, named by its own name.

    Raises:
      FileNotFoundError: no event file is there.
    """
    path = pathlib.Path(path)
    if path.is_file() or any(p.is_file() for p in path.glob("*tfevents*")):
        return {path.resolve().name: path}
    found = {p.parent.relative_to(path).as_posix() for p in path.rglob("*tfevents*") if p.is_file()}
    if not found:
        raise FileNotFoundError(f"no TensorBoard event file in {path}")
    return {name: path / name for name in sorted(found)}


def run_path(path: str | os.PathLike[str]) -> pathlib.Path:
    """``path`` if it is an event file or a directory holding some, else its one run.

    Raises:
      FileNotFoundError: no event file is there.
      ValueError: the event files lie in several subdirectories: runs.
    """
    runs = runs_in(path)
    if len(runs) > 1:
        raise ValueError(f"{path} holds {len(runs)} runs ({', '.join(runs)}); open one of them")
    return next(iter(runs.values()))


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


def _histograms_and_scalars(accumulator: Any) -> tuple[dict[str, dict[int, Any]], dict[str, dict[int, Any]]]:
    """A log's histogram and scalar events by tag and step, TensorFlow 2's as TensorFlow 1's."""
    tags = accumulator.Tags()
    histograms = {tag: list(accumulator.Histograms(tag)) for tag in tags["histograms"]}
    scalars = {tag: list(accumulator.Scalars(tag)) for tag in tags["scalars"]}
    for tag in tags["tensors"]:
        plugin = _plugin_of(accumulator, tag)
        if plugin == "histograms":
            histograms.setdefault(tag, []).extend(map(_histogram_event, accumulator.Tensors(tag)))
        elif plugin == "scalars":
            scalars.setdefault(tag, []).extend(map(_scalar_event, accumulator.Tensors(tag)))
    return (
        {tag: _by_step(events) for tag, events in histograms.items()},
        {tag: _by_step(events) for tag, events in scalars.items()},
    )


def _plugin_of(accumulator: Any, tag: str) -> str:
    """The plugin a tensor tag's summaries are for (``"histograms"``, ``"scalars"``, ...), else ``""``."""
    try:
        return str(accumulator.SummaryMetadata(tag).plugin_data.plugin_name)
    except KeyError:  # a tensor written with no metadata belongs to no plugin
        return ""


def _histogram_event(event: Any) -> Any:
    """A TensorFlow 2 histogram (rows of left edge, right edge and count) in TensorFlow 1's form.

    The buckets become an empty one of no width at the first left edge, then
    one per right edge, the form ``watch(log_dir=...)`` writes; the sums are
    those of the bucket midpoints, weighted by the counts.
    """
    from tensorboard.backend.event_processing import event_accumulator as ea
    from tensorboard.util import tensor_util

    buckets = tensor_util.make_ndarray(event.tensor_proto).astype(np.float64).reshape(-1, 3)
    if not buckets[:, 2].any():
        # No values: an empty tensor, or TensorFlow's zeros for empty data.
        buckets = np.zeros((1, 3))
    left, right, counts = buckets.T
    middle = (left + right) / 2
    histogram = ea.HistogramValue(
        min=float(left[0]),
        max=float(right[-1]),
        num=int(round(counts.sum())),
        sum=float(counts @ middle),
        sum_squares=float(counts @ middle**2),
        bucket_limit=[float(left[0]), *right.tolist()],
        bucket=[0.0, *counts.tolist()],
    )
    return ea.HistogramEvent(event.wall_time, event.step, histogram)


def _scalar_event(event: Any) -> Any:
    """A TensorFlow 2 scalar (a tensor of one value) in TensorFlow 1's form."""
    from tensorboard.backend.event_processing import event_accumulator as ea
    from tensorboard.util import tensor_util

    value = tensor_util.make_ndarray(event.tensor_proto).item()
    return ea.ScalarEvent(event.wall_time, event.step, float(value))


def _by_step(events: list[Any]) -> dict[int, Any]:
    """A tag's events by step, in step order; of repeated steps (a run written twice), the last."""
    return dict(sorted({e.step: e for e in events}.items()))


def _even_bins(events: dict[int, Any]) -> int | None:
    """How many equal buckets a tag's first histogram has, or None if they are not equal."""
    h = next(iter(events.values())).histogram_value
    bins = len(h.bucket_limit) - 1
    if bins < 1 or not h.min < h.max or h.bucket[0] != 0:
        return None
    if h.bucket_limit[0] != h.min or h.bucket_limit[-1] != h.max:
        return None
    # TensorFlow 2 computes its equal edges its own way: equal up to rounding.
    even = histogram_edges(h.min, h.max, bins)
    return bins if np.allclose(h.bucket_limit, even, rtol=0.0, atol=1e-9 * (h.max - h.min)) else None


def _fill_site(
    stream: Stream, order: int, tag: str, events: dict[int, Any], stats: dict[str, dict[int, Any]]
) -> None:
    """Records a histogram tag's events as the rows of a site, with their statistics if logged."""
    label, kind = parse_site_tag(tag)
    series = stream._series(("log", tag), label, kind)
    zeros_known = bool(stats["zero_pct"])
    for step, event in events.items():
        h = event.histogram_value
        lo, hi, hist = even_counts(h.min, h.max, h.bucket_limit, h.bucket, stream.bins)
        logged = {key: float(values[step].value) for key, values in stats.items() if step in values}
        summary = _summary(lo, hi, hist, h, logged)
        row, hist = series.row_of(summary)
        if not zeros_known:
            row[series.columns.index("zero_pct")] = math.nan
        stream._append(series, step, order, row, hist)
    series.calls = max(events, default=-1) + 1


def _summary(lo: float, hi: float, hist: np.ndarray, h: Any, logged: dict[str, float]) -> Summary:
    """The :class:`Summary` of one step of a site: its logged statistics, else the histogram's."""
    count = int(hist.sum())
    mean = h.sum / h.num if h.num else math.nan
    variance = h.sum_squares / h.num - mean * mean if h.num else math.nan
    derived = {"mean": mean, "std": math.sqrt(max(variance, 0.0)), "min": h.min, "max": h.max}
    if count == 0:
        derived |= dict.fromkeys(("mean", "std", "min", "max"), math.nan)
    values = derived | {"nan": 0, "posinf": 0, "neginf": 0, "zero_pct": 0.0} | logged
    nonfinite = [int(values[key]) for key in ("nan", "posinf", "neginf")]
    size = count + sum(nonfinite)
    zeros = round(values["zero_pct"] * size / 100) if math.isfinite(values["zero_pct"]) else 0
    return Summary(
        stats=np.array([values["min"], values["max"], values["mean"], values["std"], lo, hi]),
        counts=np.array([count, *nonfinite, zeros, *hist], np.int64),
        shape=(size,),
        dtype="float32",
    )


def _fill_scalar(stream: Stream, tag: str, events: dict[int, Any]) -> None:
    for step, event in events.items():
        stream._scalar(tag, step, float(event.value))
    stream.scalars[tag].calls = max(events) + 1
