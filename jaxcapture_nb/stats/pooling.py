"""Histograms made drawable: stacked ones pooled, bars scaled, percentile bands picked.

A summary of a value sowed under ``scan`` or ``vmap`` holds one histogram
per slice, each on its own range. Every static view (the HTML tables, the
saved live picture, ``plot()``) and the widget payloads pool them here, the
same way: counts added bin by bin, the range spanning every slice's. The sum
is exact in total only, and the views say a site is stacked.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxcapture_nb.stats import schema


def pooled_counts(hist: Any, bins: int | None = None) -> np.ndarray:
    """The counts of a histogram, stacked axes added up: int64 ``[bins]``.

    Example:
      >>> pooled_counts(np.array([[1, 2], [3, 4]])).tolist()
      [4, 6]
    """
    hist = np.asarray(hist)
    return hist.reshape(-1, bins or hist.shape[-1]).sum(axis=0)


def pooled_range(lo: Any, hi: Any) -> tuple[float, float]:
    """The range spanning every slice's: the lowest ``lo``, the highest ``hi``.

    Example:
      >>> pooled_range(np.array([0.0, -1.0]), np.array([2.0, 1.0]))
      (-1.0, 2.0)
    """
    return float(np.min(np.asarray(lo, np.float64))), float(np.max(np.asarray(hi, np.float64)))


def bar_heights(hist: Any, height: int) -> list[int]:
    """Whole-unit bar heights of a histogram, pooling stacked axes; a non-empty bin shows at least 1.

    Example:
      >>> bar_heights(np.array([0, 1, 50, 100]), height=16)
      [0, 1, 8, 16]
    """
    counts = pooled_counts(hist).astype(np.float64)
    top = counts.max() if counts.size and counts.max() > 0 else 1.0
    return [int(np.ceil(height * c / top)) if c > 0 else 0 for c in counts]


def shares(hists: Any) -> tuple[np.ndarray, np.ndarray]:
    """Each row's share of its values per bin, and each row's total (0 for a row with none).

    Example:
      >>> share, totals = shares(np.array([[1, 3], [0, 0]]))
      >>> share.tolist(), totals.ravel().tolist()
      ([[0.25, 0.75], [0.0, 0.0]], [4.0, 0.0])
    """
    hists = np.asarray(hists, np.float64)
    totals = hists.sum(axis=1, keepdims=True)
    return np.divide(hists, totals, out=np.zeros_like(hists), where=totals > 0), totals


def percentile_column(q: int, columns: tuple[str, ...]) -> int:
    """Where the ``q``-th percentile sits in a row of ``columns`` (named ``p0`` .. ``p100``)."""
    return columns.index(f"p{q}")


def bands(stats: np.ndarray, columns: tuple[str, ...]) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """The percentile bands of rows of statistics: (low values, high values, opacity) per band.

    Args:
      stats: rows of statistics, one per step.
      columns: the name of each column (see :func:`~jaxcapture_nb.stats.schema.live_columns`).

    Example:
      >>> columns = schema.live_columns()
      >>> row = np.arange(len(columns), dtype=float)[None]
      >>> [(float(lo[0]), float(hi[0]), a) for lo, hi, a in bands(row, columns)][0]
      (11.0, 17.0, 0.16)
    """
    return [
        (stats[:, percentile_column(low, columns)], stats[:, percentile_column(high, columns)], opacity)
        for low, high, opacity in schema.BANDS
    ]
