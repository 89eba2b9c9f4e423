"""The row a live history keeps per site and step: its columns, and how it is made from summaries.

A row holds the statistics the schema names when the history is made
(:class:`RowLayout`), then the percentiles TensorBoard draws its bands
from, interpolated in the histogram's bins (:func:`hist_percentiles`). Rows
are float32, the live view's type (:func:`saturated`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from jaxcapture_nb.stats import schema
from jaxcapture_nb.stats.reduced import float_fields
from jaxcapture_nb.stats.summary import INT_FIELDS, Summary

# Where a summary's non-finite counts are among its integer fields.
NONFINITE_FIELDS = [INT_FIELDS.index(f"{name}_count") for name in schema.NONFINITE_KEYS]

_FLOAT32_MAX = np.finfo(np.float32).max


class RowLayout:
    """The columns of a live row, as the schema names them when the layout is made.

    A :class:`Stream` makes one as it is made, so all its rows have the same
    columns, a statistic added to the schema before then among them (see
    :func:`~jaxcapture_nb.stats.schema.live_columns`).

    Attributes:
      columns: the name of each column.
      percentiles: the percentiles of the last columns, ``p0`` .. ``p100``.
      derived: the derived statistics, whose columns come before the percentiles'.

    Example:
      >>> layout = RowLayout()
      >>> layout.columns[layout.mean], layout.derived, layout.percentiles[-1]
      ('mean', (), 100)
    """

    def __init__(self) -> None:
        self.columns = schema.live_columns()
        self.percentiles = schema.PERCENTILES
        index = self.columns.index
        self.mean, self.zero_pct = index("mean"), index("zero_pct")
        # Where a summary's float statistics and its non-finite counts go.
        self.floats = [index(name) for name in float_fields()]
        self.nonfinite = [index(name) for name in schema.NONFINITE_KEYS]
        self.first_percentile = index(f"p{self.percentiles[0]}")
        self.derived_columns = slice(self.floats[-1] + 1, self.first_percentile)
        self.derived = self.columns[self.derived_columns]


def saturated(stats: Any) -> np.ndarray:
    """Statistics as float32, the live view's type: finite float64 ones beyond its range saturate at its largest.

    The live view draws its rows in float32; a finite float64 value beyond
    3.4e38 then reads as that, rather than as infinite. An infinite value (a
    logged loss that overflowed) stays infinite.

    Example:
      >>> saturated(np.array([1e300, -1e300, 2.0, np.nan, np.inf])).tolist()[1:]
      [-3.4028234663852886e+38, 2.0, nan, inf]
    """
    if isinstance(stats, np.ndarray) and stats.dtype == np.float32:
        return stats  # within the range already: most rows, made by row_stats, are
    values = np.asarray(stats, np.float64)
    finite = np.isfinite(values)
    return np.where(finite, np.clip(values, -_FLOAT32_MAX, _FLOAT32_MAX), values).astype(np.float32)


def hist_percentiles(
    hist: np.ndarray,
    lo: Any,
    hi: Any,
    vmin: Any,
    vmax: Any,
    percentiles: tuple[int, ...] | None = None,
    zeros: Any = 0,
) -> np.ndarray:
    """The ``percentiles`` of the values a histogram counts, interpolated in bins.

    Estimates: each bin's values are taken to lie evenly across it. The 0th
    and 100th are the exact minimum and maximum, and the ``zeros`` exact
    zeros a summary counts (which its histogram holds in the bin of 0) are
    taken to lie at 0, so that a percentile among them is exactly 0: half
    the values of a ReLU's output are. Leading axes of ``hist`` (and of the
    other arguments) are histograms handled at once. ``percentiles``
    defaults to the schema's (:data:`~jaxcapture_nb.stats.schema.PERCENTILES`).

    Example:
      >>> [round(float(p), 2) for p in hist_percentiles(np.array([1, 1, 1, 1]), 0.0, 4.0, 0.0, 4.0)]
      [0.0, 0.28, 0.64, 1.24, 2.0, 2.76, 3.36, 3.72, 4.0]
      >>> [round(float(p), 2) for p in hist_percentiles(np.array([6, 2, 1, 1]), 0.0, 4.0, 0.0, 4.0, zeros=5)]
      [0.0, 0.0, 0.0, 0.0, 0.0, 1.45, 2.4, 3.3, 4.0]
    """
    hist = np.asarray(hist)
    lead, bins = hist.shape[:-1], hist.shape[-1]
    counts = hist.reshape(-1, bins)
    n = len(counts)
    lo, hi, vmin, vmax = (_per_histogram(a, lead) for a in (lo, hi, vmin, vmax))
    cumulative = np.empty((n, bins + 1))
    cumulative[:, 0], cumulative[:, 1:] = 0, counts
    np.cumsum(cumulative, axis=1, out=cumulative)  # in place: faster than from int32 counts
    total = cumulative[:, -1:]
    percentiles = schema.PERCENTILES if percentiles is None else percentiles
    targets = np.array(percentiles) / 100 * total
    # As np.interp does: the last cumulative count at or below each target,
    # and a straight line to the next one. Bin edge k is lo + k * width.
    # The counts are whole, so "at or below" a target is "at or below its
    # floor"; shifting each histogram's counts and targets past the one
    # before it makes that one search of one sorted array, exact in float64.
    rows = np.arange(n)[:, None]
    shift = rows * (cumulative[:, -1].max(initial=0.0) + 1)
    found = np.searchsorted((cumulative + shift).ravel(), (np.floor(targets) + shift).ravel(), side="right")
    below = np.minimum(found.reshape(targets.shape) - rows * (bins + 1) - 1, bins)
    above = np.minimum(below + 1, bins)
    c0, c1 = cumulative[rows, below], cumulative[rows, above]
    rise = c1 - c0
    within = np.divide(targets - c0, rise, out=np.zeros_like(rise), where=rise > 0)
    out = lo + (below + within) * ((hi - lo) / bins)
    zeros = _per_histogram(zeros, lead)
    if zeros.any():
        out = _with_zeros_at_zero(out, cumulative, targets, lo, hi, zeros)
    out[:, 0], out[:, -1] = vmin[:, 0], vmax[:, 0]
    out[total[:, 0] == 0] = np.nan
    return saturated(out).reshape(*lead, len(percentiles))


def row_stats(summaries: Summary, sizes: np.ndarray, layout: RowLayout | None = None) -> np.ndarray:
    """Rows of ``layout``'s columns for host summaries stacked along their first axis.

    Args:
      summaries: one :class:`Summary` whose arrays hold a summary per row,
        e.g. the unpacked table of many packed rows.
      sizes: the number of elements of each summarized array.
      layout: the columns; by default the schema's now.
    """
    layout = layout or RowLayout()
    stats, counts = summaries.stats, summaries.counts
    out = np.empty((len(stats), len(layout.columns)), np.float32)
    # Rows of a program compiled before a statistic was added lack it.
    made = min(stats.shape[1], len(layout.floats))
    out[:, layout.floats[:made]] = saturated(stats[:, :made])
    out[:, layout.floats[made:]] = np.nan
    out[:, layout.nonfinite] = counts[:, NONFINITE_FIELDS]
    zeros = counts[:, INT_FIELDS.index("zero_count")]
    zero_pct = np.divide(100.0 * zeros, sizes, out=np.full(len(sizes), np.nan), where=sizes > 0)
    out[:, layout.zero_pct] = zero_pct
    out[:, layout.first_percentile :] = hist_percentiles(
        summaries.hist, summaries.lo, summaries.hi, summaries.min, summaries.max, layout.percentiles, zeros
    )
    if layout.derived:
        out[:, layout.derived_columns] = _derived_rows(summaries, zero_pct, layout)
    return out


def _derived_rows(summaries: Summary, zero_pct: np.ndarray, layout: RowLayout) -> np.ndarray:
    """The derived statistics of stacked summaries, one row each, from what ``flat_stats`` holds."""
    counts = summaries.counts
    fields = {
        name: np.asarray(summaries.statistic(name), np.float64)
        for name in float_fields()
        if name not in ("lo", "hi")
    }
    fields |= dict(zip(schema.NONFINITE_KEYS, counts[:, NONFINITE_FIELDS].T, strict=True))
    fields |= {"count": counts[:, INT_FIELDS.index("count")], "zero_pct": zero_pct}
    rows = []
    for r in range(len(zero_pct)):
        stats = schema.with_derived({name: float(values[r]) for name, values in fields.items()})
        rows.append([stats.get(key, math.nan) for key in layout.derived])
    return saturated(rows)


def _with_zeros_at_zero(
    out: np.ndarray,
    cumulative: np.ndarray,
    targets: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    zeros: np.ndarray,
) -> np.ndarray:
    """``out`` with the percentiles that fall in the bin of 0 read again, its ``zeros`` exact zeros at 0.

    The bin's other values lie evenly across it, as in every bin: those
    below 0 first, then the zeros, then those above.
    """
    bins = cumulative.shape[1] - 1
    width = (hi - lo) / bins
    b = bin_of_zero(lo, hi, bins)
    rows = np.arange(len(b))[:, None]
    start, end = cumulative[rows, b], cumulative[rows, b + 1]
    left = lo + b * width
    others = end - start - zeros
    at = np.clip(0.0, left, left + width)  # 0 lies in its bin unless the range misses it
    below_zero = others * (at - left) / width
    into = targets - start
    spread = np.where(into <= below_zero, into, into - zeros)
    x = np.where(
        (into > below_zero) & (into <= below_zero + zeros),
        at,
        left + np.divide(spread, others, out=np.zeros_like(spread), where=others > 0) * width,
    )
    return np.where((zeros > 0) & (targets >= start) & (targets <= end), x, out)


def bin_of_zero(lo: Any, hi: Any, bins: int) -> np.ndarray:
    """The bin of each histogram that a summary adds its exact zeros to (see ``passes.with_zeros_in_their_bin``).

    Example:
      >>> bin_of_zero(np.array([-1.0, 0.0, 2.0]), np.array([3.0, 4.0, 5.0]), 4).tolist()
      [1, 0, 0]
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
        at = np.nan_to_num(np.floor(-lo * (bins / (hi - lo))))  # as the summary computes it
    return np.clip(at, 0, bins - 1).astype(np.intp)


def _per_histogram(a: Any, lead: tuple[int, ...]) -> np.ndarray:
    """``a`` as a float64 column with one row per histogram of leading shape ``lead``."""
    a = np.asarray(a, np.float64)
    return (a if a.shape == lead else np.broadcast_to(a, lead)).reshape(-1, 1)
