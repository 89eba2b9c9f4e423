"""CompareView: a mode comparison, site by site (anywidget; JS in js/).

Numbers travel as four binary buffers whose size does not depend on the
tensors': per site and mode the statistics (float64) and the histogram on the
site's shared range (int32), per site that range, and per site and mode the
shift score.
"""

from __future__ import annotations

from typing import Any

import anywidget
import numpy as np
import traitlets as t

from jaxcapture_nb._compare import STAT_COLUMNS
from jaxcapture_nb._widgets.capture_view import _front_end
from jaxcapture_nb._widgets.compare_static import MODE_COLOURS, comparison_html
from jaxcapture_nb._widgets.static import with_fallback


class CompareView(anywidget.AnyWidget):
    """Sites sorted by how far their distribution moves between modes.

    Each row shows the site's shift, its mean, std and share of zeros in every
    mode side by side, and the modes' histograms overlaid. Selecting a row
    shows a large overlaid histogram and every statistic.

    Args:
      comparison: the :class:`~jaxcapture_nb.Comparison` to show.
    """

    _esm = _front_end("compare_view.js")
    _css = _front_end("compare_view.css")

    _modes = t.List(t.Unicode()).tag(sync=True)
    _colours = t.List(list(MODE_COLOURS)).tag(sync=True)
    _sites = t.List(t.Dict()).tag(sync=True)
    _stat_columns = t.List(list(STAT_COLUMNS)).tag(sync=True)
    _stats = t.Bytes().tag(sync=True)  # float64 [sites, modes, stat columns]
    _hists = t.Bytes().tag(sync=True)  # int32 [sites, modes, bins]
    _ranges = t.Bytes().tag(sync=True)  # float64 [sites, 2]: lo, hi
    _shifts = t.Bytes().tag(sync=True)  # float64 [sites, modes]
    _bins = t.Int(0).tag(sync=True)

    def __init__(self, comparison: Any, **kwargs: Any):
        self._comparison = comparison
        sites, modes, bins = comparison.sites, len(comparison.modes), comparison.bins
        stats = np.zeros((len(sites), modes, len(STAT_COLUMNS)))
        hists = np.zeros((len(sites), modes, bins), np.int32)
        ranges = np.zeros((len(sites), 2))
        shifts = np.zeros((len(sites), modes))
        for i, site in enumerate(sites):
            stats[i], hists[i], ranges[i], shifts[i] = site.stats, site.hists, (site.lo, site.hi), site.shifts
        super().__init__(
            _modes=list(comparison.modes),
            _sites=[
                {
                    "site": s.site,
                    "type": s.var_type,
                    "shapes": [None if x is None else list(x) for x in s.shapes],
                }
                for s in sites
            ],
            _stats=stats.tobytes(),
            _hists=hists.tobytes(),
            _ranges=ranges.tobytes(),
            _shifts=shifts.tobytes(),
            _bins=bins,
            **kwargs,
        )

    def __repr__(self) -> str:
        return self._comparison.table()

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict, dict] | None:
        bundle = super()._repr_mimebundle_(**kwargs)
        return with_fallback(bundle, self._comparison.table(), comparison_html(self._comparison))
