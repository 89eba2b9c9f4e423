"""The fills of a CaptureView's sites, found for all of them at once, and their rows without them.

A site whose values hold a fill (see :mod:`~jaxcapture_nb.views.fills`)
shows the same numbers in every place: its table row (statistics and
sparkline), the details' statistics line and histogram, and the saved HTML
table all leave the fill out, and each says so. This module finds every
site's fills when the view is made. A summary rules most sites out for free
(:func:`~jaxcapture_nb.views.fills.may_hold_fill`); the others are read
in two batches, each started on the device for every site before any is
read, so that all of them share one transfer: first the ends of each value,
then, for those with a fill, the statistics and histogram of the other
values, over as many bins as the sparklines have.

A value split across processes is read over the part this process holds
(see :func:`~jaxcapture_nb.views.value_range.local_array`): its details
leave the fill out of that part, while its row keeps the statistics that
cover all of it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcapture_nb.stats import schema
from jaxcapture_nb.stats.records import Record
from jaxcapture_nb.stats.summary import Summary
from jaxcapture_nb.views.fills import Fill, ends_on_device, fills_at_ends, may_hold_fill, read_ends
from jaxcapture_nb.views.value_range import Ranged, local_array, range_on_device, read_range


@dataclasses.dataclass(frozen=True)
class SiteFill:
    """A site's fills and what its values are without them.

    Attributes:
      fills: the fills, low before high.
      ranged: the range, histogram and statistics of the other values (see
        :func:`~jaxcapture_nb.views.value_range.compute_range`, not robust).
      part: empty, or which part of the value they were found in (a value
        split across processes); its row then keeps the statistics of all of it.
    """

    fills: tuple[Fill, ...]
    ranged: Ranged
    part: str = ""

    def row_stats(self, stats: Mapping[str, float]) -> dict[str, float]:
        """A row's statistics ``stats`` with the fill left out: its numbers, range and count of finite values.

        The NaN/Inf counts stay those of every value.

        Example:
          >>> rest = {"count": 3, "min": 0.0, "max": 2.0, "mean": 1.0, "std": 0.8, "zero_pct": 20.0}
          >>> found = SiteFill((Fill("low", -1e9, -1e9, 5, True),), Ranged(0.0, 2.0, np.zeros(4, np.int32), 0, 0, rest))
          >>> row = found.row_stats({"mean": -6e8, "nan": 2, "count": 8})
          >>> row["mean"], row["min"], row["lo"], row["count"], row["nan"]
          (1.0, 0.0, 0.0, 3, 2)
        """
        row = dict(stats) | self.ranged.rest | {"lo": self.ranged.lo, "hi": self.ranged.hi}
        return schema.with_derived(row)


def _examined(record: Record, summary: Summary | None) -> bool:
    """Whether a site may hold a fill worth a look on the device: a kept array whose summary allows one."""
    return record.value is not None and summary is not None and may_hold_fill(summary)


def find_site_fills(
    records: Sequence[Record], summaries: Sequence[Summary | None], bins: int
) -> dict[int, SiteFill]:
    """Every site's fills, by its index among ``records``; sites without one are left out.

    Args:
      records: the view's records.
      summaries: their summaries, on the host (the checks that rule sites out read them).
      bins: the bins of the histograms without the fill, the sparklines' number.
    """
    looked: list[tuple[int, Any, str, Any]] = []
    for i, (record, summary) in enumerate(zip(records, summaries, strict=True)):
        if not _examined(record, summary):
            continue
        x, part = local_array(record.value)
        x = jnp.asarray(x)
        started = ends_on_device(x)
        if started is not None:
            looked.append((i, x, part, started))
    if not looked:
        return {}
    ends = jax.device_get([started for *_, started in looked])
    found = []
    for (i, x, part, _), end in zip(looked, ends, strict=True):
        fills = fills_at_ends(read_ends(end), x.size, x.dtype)
        if fills:
            found.append((i, x, part, fills, range_on_device(x, fills, robust=False, bins=bins)))
    ranges = jax.device_get([started for *_, started in found])
    return {
        i: SiteFill(fills, read_range(ranged, x.size), part)
        for (i, x, part, fills, _), ranged in zip(found, ranges, strict=True)
    }


def fill_rows(
    site_fills: Mapping[int, SiteFill], stats: np.ndarray, columns: Sequence[str], bins: int
) -> tuple[list[int], np.ndarray, np.ndarray]:
    """What a view's table shows in place of the rows of sites with a fill.

    Args:
      site_fills: :func:`find_site_fills`'s answer; sites found over a part of
        their value, and those whose every finite value is the fill, keep their rows.
      stats: the rows of every site's statistics, one column per name in ``columns``.
      columns: the statistics' names.
      bins: the histograms' number of bins.

    Returns:
      The sites whose rows leave a fill out, in order; their statistics
      without it (float64, one row each, ``columns``), and their histograms
      without it (int32).
    """
    # A row keeps its statistics when they cover more than the part read,
    # or when every finite value is the fill: it has no other values to show.
    sites = sorted(i for i, found in site_fills.items() if not found.part and found.ranged.rest["count"])
    rows = np.full((len(sites), len(columns)), math.nan)
    hists = np.zeros((len(sites), bins), np.int32)
    for k, i in enumerate(sites):
        row = site_fills[i].row_stats(dict(zip(columns, stats[i].tolist(), strict=True)))
        rows[k] = [row.get(c, math.nan) for c in columns]
        hists[k] = site_fills[i].ranged.hist
    return sites, rows, hists
