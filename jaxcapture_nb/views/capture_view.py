"""CaptureView: the interactive table of a capture (anywidget; JS in js/)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import traitlets as t

from jaxcapture_nb.core.wire import FillSite
from jaxcapture_nb.stats.records import Record, flat_stats, format_table, values_beside_their_gradients
from jaxcapture_nb.stats.schema import capture_columns
from jaxcapture_nb.views import payload
from jaxcapture_nb.views.base import FrontEndWidget
from jaxcapture_nb.views.fills import Fill
from jaxcapture_nb.views.site_fills import fill_rows, find_site_fills
from jaxcapture_nb.views.site_range import SiteRange, SiteRanges
from jaxcapture_nb.views.static import static_html


def _no_heatmap(record: Record) -> str:
    """Why a record gets no heatmap ("" when it gets one)."""
    if payload.is_empty(record):
        return payload.empty_note(record)
    if record.value is None:
        return "keep='summary' kept no values"
    if record.shape is None or len(record.shape) < 2:
        return "needs two or more dimensions"
    return ""


def _site_stats(record: Record) -> dict[str, float]:
    """A record's statistics; empty when it has none (not an array, no summary, no elements)."""
    summary = record.summary
    if summary is None or summary.reason is not None or payload.is_empty(record):
        return {}
    return flat_stats(summary)


class CaptureView(FrontEndWidget, entry="capture_view.js", css="capture_view.css"):
    """Every sowed value of a capture: sortable, filterable, with histograms.

    Selecting a row shows its histogram and, for arrays with two or more
    dimensions whose value was kept, a heatmap of a 2-D slice computed on the
    device, or small multiples of such slices along one more axis. The
    histogram and heatmap span the values' full range, a robust one
    (percentiles), or, when one value fills a share of the elements far from
    the rest (the mask of attention logits, see
    :mod:`~jaxcapture_nb.views.fills`), the values without it, which is
    where a selected site with a fill starts. Such a site's row, its
    statistics line and its saved HTML row leave the fill out too, and say
    so. Saved notebooks keep a plain-text and a script-free HTML table.

    Args:
      capture: the :class:`~jaxcapture_nb.Capture` to show.
    """

    _sites = t.List().tag(sync=True)
    _stats = t.Bytes().tag(sync=True)
    _hists = t.Bytes().tag(sync=True)
    _bins = t.Int(0).tag(sync=True)
    _stat_columns = t.List().tag(sync=True)  # the columns of _stats
    # The sites whose rows leave a fill out ({"site", "fills"} each), and
    # their rows in that order as the table shows them: statistics (the
    # columns of _stats) and histograms of the values other than the fill.
    _fill_sites = t.List().tag(sync=True)
    _fill_stats = t.Bytes().tag(sync=True)
    _fill_hists = t.Bytes().tag(sync=True)
    _first_nonfinite = t.Int(-1).tag(sync=True)
    _selected = t.Int(-1).tag(sync=True)
    _slice_index = t.List(t.Int()).tag(sync=True)
    _heatmap = t.Bytes().tag(sync=True)
    _heatmap_shape = t.List(t.Int()).tag(sync=True)
    _heatmap_range = t.List(t.Float()).tag(sync=True)
    _heatmap_note = t.Unicode("").tag(sync=True)
    _heatmap_site = t.Int(-1).tag(sync=True)  # the site the heatmap belongs to
    _heatmap_values = t.Bytes().tag(sync=True)  # float32 of a small slice, else empty
    _heatmap_marks = t.Bytes().tag(sync=True)  # 2 bits a pixel: below/above the colours, fill
    _heatmap_facets = t.List(t.Int()).tag(sync=True)  # positions of the small multiples
    _heatmap_facet_axis = t.Int(-1).tag(sync=True)  # the axis they lie along
    _heatmap_diverging = t.Bool(False).tag(sync=True)  # colours centred at zero
    # The range asked for: "auto" (without a fill when there is one), "full",
    # "fill" or "robust"; the answer, and its histogram when not "full".
    _range_mode = t.Unicode("auto").tag(sync=True)
    _range = t.Dict().tag(sync=True)
    _range_hist = t.Bytes().tag(sync=True)
    _facet_axis = t.Int(-1).tag(sync=True)  # small multiples along this axis; -1: none
    # The browser numbers its heatmap requests; the kernel answers each one,
    # also when the picture stays the same, so a waiting spinner always ends.
    _heatmap_request = t.Int(0).tag(sync=True)
    _heatmap_answered = t.Int(0).tag(sync=True)

    def __init__(self, capture: Any, **kwargs: Any):
        records = values_beside_their_gradients(capture.records)
        self._drawn: tuple[Any, ...] | None = None
        summaries = payload.host_summaries(records)
        found = find_site_fills(records, summaries, capture.bins)
        self._ranges = SiteRanges(capture.bins, found)
        # Host copies: the text and HTML tables read them without transfers.
        self._records = [dataclasses.replace(r, summary=s) for r, s in zip(records, summaries, strict=True)]
        # What the text table says when it has no rows: why (see Capture.table).
        self._empty = capture._empty_note()
        columns = capture_columns()
        stats = payload.stats_table(summaries)
        hists = payload.hist_table(summaries, capture.bins)
        filled, fill_stats, fill_hists = fill_rows(found, stats, columns, capture.bins)
        self._fills = {i: found[i] for i in filled}  # the rows that leave a fill out
        rows = payload.site_rows(records, summaries, payload.same_values(records, stats, hists))
        super().__init__(
            _sites=rows,
            _stats=stats.tobytes(),
            _hists=hists.tobytes(),
            _bins=capture.bins,
            _stat_columns=list(columns),
            _fill_sites=[FillSite(site=i, fills=[f.as_json() for f in found[i].fills]) for i in filled],
            _fill_stats=fill_stats.tobytes(),
            _fill_hists=fill_hists.tobytes(),
            _first_nonfinite=payload.first_nonfinite(stats),
            **kwargs,
        )

    @t.observe(
        "_selected", "_slice_index", "_heatmap_diverging", "_range_mode", "_facet_axis", "_heatmap_request"
    )
    def _update_heatmap(self, change: Any) -> None:
        try:
            self._draw_selected()
        finally:
            self._heatmap_answered = self._heatmap_request

    def _draw_selected(self) -> None:
        """Sends the selected site's range and heatmap, unless they are the ones sent last."""
        i = self._selected
        # A click changes several traits at once: draw once.
        request = (i, tuple(self._slice_index), self._heatmap_diverging, self._range_mode, self._facet_axis)
        if not 0 <= i < len(self._records) or request == self._drawn:
            return
        self._drawn = request
        record = self._records[i]
        stats = _site_stats(record)
        span = self._ranges.answer(i, record.value, record.dtype or "", stats, self._range_mode)
        with self.hold_sync():
            self._range = span.as_json(i)
            self._range_hist = span.hist_bytes()
            self._send_heatmap(i, record, stats, span)

    def _send_heatmap(self, i: int, record: Record, stats: dict[str, float], span: SiteRange) -> None:
        """Sets the heatmap traits of site ``i`` drawn over ``span``."""
        reason = _no_heatmap(record)
        if reason:
            picture = payload.Heatmap(note=f"No heatmap: {reason}.")
        else:
            colours = None
            fills: tuple[Fill, ...] = ()
            if span.ranged is not None:  # a range of the kernel's own: without the fill, or robust
                fills = span.fills
                stats = span.rest or stats  # the colours are for the values other than the fill
                if span.mode == "robust":
                    colours = (span.ranged.lo, span.ranged.hi)
            picture = payload.heatmap(
                record.value,
                self._slice_index,
                stats.get("mean", 0.0),
                stats.get("std", 1.0),
                stats.get("min", -math.inf),
                stats.get("max", math.inf),
                diverging=self._heatmap_diverging,
                colours=colours,
                fills=fills,
                facet_axis=self._facet_axis,
            )
        self._heatmap = picture.pixels
        self._heatmap_shape = picture.shape
        self._heatmap_range = picture.value_range
        self._heatmap_values = picture.values
        self._heatmap_marks = picture.marks
        self._heatmap_facets = picture.facets
        self._heatmap_facet_axis = self._facet_axis if picture.facets else -1
        self._heatmap_note = picture.note
        self._heatmap_site = i

    def __repr__(self) -> str:
        return format_table(self._records, empty=self._empty)

    def _saved_view(self) -> tuple[str, str]:
        return format_table(self._records, empty=self._empty), static_html(self._records, self._fills)
