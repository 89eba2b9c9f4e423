"""Capture.plot(): the histograms as a matplotlib Figure, for papers and exports."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from jaxcapture_nb.core.names import shown_name
from jaxcapture_nb.stats.pooling import pooled_counts, pooled_range
from jaxcapture_nb.stats.records import Record
from jaxcapture_nb.stats.schema import SERIES_COLOUR


def plot_histograms(records: Sequence[Record], columns: int = 4, max_sites: int = 32) -> Figure:
    """One small histogram per record that has a summary.

    Args:
      records: the records to plot, in order.
      columns: subplots per row.
      max_sites: at most this many records are drawn (the first ones).

    Returns:
      A ``matplotlib.figure.Figure`` (not attached to pyplot's global state).

    Raises:
      ValueError: ``columns`` or ``max_sites`` is not a positive whole number.
    """
    for argument, value in (("columns", columns), ("max_sites", max_sites)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"plot(): {argument} takes a positive whole number, got {value!r}")
    shown = [r for r in records if r.summary is not None and r.summary.reason is None][:max_sites]
    rows = max(1, math.ceil(len(shown) / columns))
    figure = Figure(figsize=(3.2 * min(columns, max(len(shown), 1)), 2.2 * rows), layout="constrained")
    if not shown:
        figure.text(0.5, 0.5, "no array was sowed", ha="center", va="center")
        return figure
    for k, record in enumerate(shown):
        ax = figure.add_subplot(rows, min(columns, len(shown)), k + 1)
        s = record.summary.to_numpy()
        lo, hi = pooled_range(s.lo, s.hi)
        ax.stairs(
            pooled_counts(s.hist, s.bins), np.linspace(lo, hi, s.bins + 1), fill=True, color=SERIES_COLOUR
        )
        ax.set_title(f"{shown_name(record.site)} [{record.call_index}]", fontsize=8)
        ax.tick_params(labelsize=7)
    return figure
