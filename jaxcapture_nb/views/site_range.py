"""The range a CaptureView draws a site over: the one asked for, as the site allows, each computed once.

A site starts without its fill when it has one (see :mod:`fills`; the view
finds them when it is made, :mod:`site_fills`), otherwise over its full
range; a site whose values were not kept (``keep="summary"``) keeps its
full range, and the answer says why.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from jaxcapture_nb.core.wire import RangeMessage
from jaxcapture_nb.views.fills import Fill, near_limit
from jaxcapture_nb.views.site_fills import SiteFill
from jaxcapture_nb.views.value_range import ROBUST_PERCENTILES, Ranged, compute_range, local_array

# The ranges a view may ask for: the values' own, without a fill, robust.
MODES = ("full", "fill", "robust")


@dataclasses.dataclass(frozen=True)
class SiteRange:
    """The range a view draws one site over, as asked for and as it could be had.

    Attributes:
      mode: the range drawn: ``"full"``, ``"fill"`` (without the fills) or ``"robust"``.
      modes: the ranges this site offers; only ``("full",)`` when no value
        was kept or none is finite.
      note: why the range cannot be changed, or what it covers; may be empty.
      fills: the site's fills.
      ranged: the range computed for ``mode`` (None for ``"full"``, which
        is the summary's own).
      rest: the statistics of the values other than the fills (None without fills).
    """

    mode: str
    modes: tuple[str, ...]
    note: str = ""
    fills: tuple[Fill, ...] = ()
    ranged: Ranged | None = None
    rest: dict[str, float] | None = None

    def as_json(self, site: int) -> RangeMessage:
        """What the front end reads of it (the histogram travels apart, as bytes); NaN is null."""
        ranged = self.ranged
        return {
            "site": site,
            "mode": self.mode,
            "modes": list(self.modes),
            "note": self.note,
            "fills": [f.as_json() for f in self.fills],
            "lo": _json_float(ranged.lo) if ranged else None,
            "hi": _json_float(ranged.hi) if ranged else None,
            "under": ranged.under if ranged else 0,
            "over": ranged.over if ranged else 0,
            "rest": {k: _json_float(v) for k, v in self.rest.items()} if self.rest else None,
            "percentiles": list(ROBUST_PERCENTILES),
        }

    def hist_bytes(self) -> bytes:
        """The int32 histogram over the range; empty for the full range."""
        return self.ranged.hist.tobytes() if self.ranged is not None else b""


def _json_float(x: float) -> float | None:
    return x if math.isfinite(x) else None


class SiteRanges:
    """The ranges of a view's sites: without the fill as found when the view was made, robust when first asked for.

    Args:
      bins: the number of bins of the histograms over a range.
      found: the sites' fills (:func:`~jaxcapture_nb.views.site_fills.find_site_fills`),
        with their ranges without them; a site not in it has none.
    """

    def __init__(self, bins: int, found: Mapping[int, SiteFill]):
        self._bins = bins
        self._found = found
        self._robust: dict[int, Ranged] = {}

    def answer(self, site: int, value: Any, dtype: str, stats: dict[str, float], mode: str) -> SiteRange:
        """The range to draw site ``site`` over.

        Args:
          site: the site's row, the key of what is kept.
          value: its kept value; None under ``keep="summary"``.
          dtype: its dtype's name.
          stats: its summary's statistics (empty without a summary).
          mode: the range asked for: one of :data:`MODES`, or ``"auto"``,
            which is ``"fill"`` when the site has a fill and ``"full"`` otherwise.
        """
        if value is None:
            # Only a fill near the type's limit shows in a summary's min and max.
            low, high = stats.get("min", math.nan), stats.get("max", math.nan)
            hint = (
                f" (its values near {_short(low if abs(low) >= abs(high) else high)} may be a fill value; with keep='all'"
                " or keep='last' the view leaves it out)"
                if near_limit(dtype, low, high)
                else ""
            )
            return SiteRange(
                "full", ("full",), f"The range can't be changed: keep='summary' kept no values{hint}."
            )
        if not stats.get("count"):
            return SiteRange("full", ("full",))
        x, part = local_array(value)
        found = self._found.get(site)
        fills = found.fills if found else ()
        rest = found.ranged if found else None
        if fills and rest is not None and not rest.rest["count"]:
            return SiteRange(
                "full",
                ("full",),
                "Every finite value is the fill: none is left to draw without it.",
                fills,
                None,
                rest.rest,
            )
        modes = MODES if fills else ("full", "robust")
        if mode == "auto":
            mode = "fill" if fills else "full"
        mode = mode if mode in modes else "full"
        ranged = None
        if mode == "fill":
            ranged = rest
        elif mode == "robust":
            if site not in self._robust:
                self._robust[site] = compute_range(x, fills, robust=True, bins=self._bins)
            ranged = self._robust[site]
        return SiteRange(mode, modes, part, fills, ranged, rest.rest if rest else None)


def _short(x: float) -> str:
    """A value near a float limit, short: -2.38e+38."""
    return f"{x:.3g}"
