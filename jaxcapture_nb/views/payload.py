"""What the CaptureView widget sends to the browser, as small binary buffers.

Per site the browser gets a fixed number of bytes, whatever the tensor's
size: a row of float64 statistics and the int32 histogram. A heatmap is
computed only for the selected site, on the device, and travels as one uint8
per pixel (a colour index), so a 1M-element tensor costs under 64 KiB; small
multiples along one more axis share that budget, and the marks of values
beyond the colour range take 2 bits a pixel more.

In a ``jax.distributed`` run only process 0 shows the widget, so nothing
here may start a program over other processes' devices: they would never
join it. Summaries are replicated and read through the local copy; a value
split across processes is drawn from the part this process holds, and its
row says so (its statistics, computed over the global array, cover it all).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcapture_nb.core.hosts import local_part, local_slices, process_count_of, readable
from jaxcapture_nb.core.wire import CaptureSite
from jaxcapture_nb.stats import schema
from jaxcapture_nb.stats.pooling import pooled_counts, pooled_range
from jaxcapture_nb.stats.records import Record, flat_stats, is_call_output, site_label, site_name
from jaxcapture_nb.stats.schema import COLOURS, NAN_INDEX, NEGINF_INDEX, POSINF_INDEX, kind_name
from jaxcapture_nb.stats.summary import Summary, stats_dtype
from jaxcapture_nb.views.value_range import Fill, marks, packed

# Column order of the stats buffer as the schema had it at import, for code
# that reads a buffer; the widget sends capture_columns() as it is when made.
STAT_COLUMNS = schema.capture_columns()

# 240 x 240 uint8 pixels plus the statistics stay under 64 KiB per site.
HEATMAP_MAX_SIDE = 240
# Slices this small also send their float32 values (16 KiB at most), so
# hovering reads each exact value; larger ones read it off the colour scale.
EXACT_VALUES_MAX = 64 * 64
# Small multiples: at most this many, each at most this many pixels a side,
# so that all of them together stay under 64 KiB as one heatmap does.
MAX_FACETS = 16
FACET_MAX_SIDE = 60


def host_summaries(records: Sequence[Record]) -> list[Summary | None]:
    """Every record's summary on the host."""
    return [None if r.summary is None else r.summary.to_numpy() for r in records]


def split_note(value: Any) -> str:
    """What a row says about a value split across processes; empty for any other value."""
    if readable(value):
        return ""
    part = ", ".join(f"{s.start}:{s.stop}" for s in local_slices(value))
    return (
        f"split across {process_count_of(value)} processes: the heatmap shows this process's "
        f"part [{part}], the statistics cover all of it"
    )


def is_empty(record: Record) -> bool:
    """Whether a record is an array without elements (a shape with a 0), which has nothing to draw."""
    return record.shape is not None and 0 in record.shape


def empty_note(record: Record) -> str:
    """What the heatmap of an empty array says in place of a picture.

    Example:
      >>> empty_note(Record((), "h", 0, None, (0, 3, 4), "float32", None, None))
      'empty (shape (0, 3, 4))'
    """
    return f"empty (shape {tuple(record.shape or ())})"


def site_rows(
    records: Sequence[Record], summaries: Sequence[Summary | None], same: Sequence[int]
) -> list[CaptureSite]:
    """The text of each row: names and shapes, never numbers to plot.

    An empty array's row has no statistics and no value to draw; its note says so.
    ``same`` is each row's :func:`same_values`.
    """
    rows: list[CaptureSite] = []
    for r, s, same_as in zip(records, summaries, same, strict=True):
        note = (s.reason or s.note) if s is not None else f"{type(r.value).__name__}, not an array"
        empty = is_empty(r)
        if empty:
            note = "no values"
        rows.append(
            {
                "path": ".".join(str(p) for p in r.path),
                "name": r.name,
                "shown_name": site_name(r.path, r.name),
                "label": site_label(r.path, r.name),
                "call": r.call_index,
                "type": kind_name(r.var_type),
                "shape": list(r.shape) if r.shape is not None else None,
                "dtype": r.dtype or "",
                "note": "; ".join(filter(None, (note, split_note(r.value)))),
                "has_stats": s is not None and s.reason is None and not empty,
                "has_value": r.value is not None and r.shape is not None and len(r.shape) >= 2 and not empty,
                "same_as": same_as,
            }
        )
    return rows


def stats_table(summaries: Sequence[Summary | None]) -> np.ndarray:
    """float64 [n_sites, len(capture_columns())]; NaN where a site has no summary."""
    columns = schema.capture_columns()
    out = np.full((len(summaries), len(columns)), np.nan)
    for i, s in enumerate(summaries):
        if s is None or s.reason is not None:
            continue
        st = flat_stats(s)
        st["lo"], st["hi"] = pooled_range(s.lo, s.hi)
        out[i] = [st[c] for c in columns]
    return out


def same_values(records: Sequence[Record], stats: np.ndarray, hists: np.ndarray) -> list[int]:
    """Per site, an earlier site whose values a call's output repeats, else -1.

    A module that returns its last layer's result records the same values
    twice (``head (output)`` and ``model output``); the view says so rather
    than show a duplicate row unexplained. Two sites count as the same when
    their shape, dtype, every statistic and the histogram agree exactly.

    Args:
      records: the records, in recording order (a child's output comes
        before its parent's).
      stats: :func:`stats_table` of their summaries.
      hists: their histograms, int32 ``[n_sites, bins]``.
    """
    seen: dict[tuple, int] = {}
    out = []
    for i, r in enumerate(records):
        key = None
        if not np.isnan(stats[i]).all():
            key = (r.shape, r.dtype, np.nan_to_num(stats[i], nan=np.inf).tobytes(), hists[i].tobytes())
        out.append(seen.get(key, -1) if key is not None and is_call_output(r.name) else -1)
        if key is not None:
            seen.setdefault(key, i)
    return out


def first_nonfinite(stats: np.ndarray) -> int:
    """Row of the first site holding a NaN or Inf, -1 if none."""
    columns = [schema.capture_columns().index(c) for c in schema.NONFINITE_KEYS]
    bad = np.flatnonzero(np.nansum(stats[:, columns], axis=1) > 0)
    return int(bad[0]) if bad.size else -1


def hist_table(summaries: Sequence[Summary | None], bins: int) -> np.ndarray:
    """int32 [n_sites, bins]; stacked (scan/vmap) histograms are added up.

    Slices of a stacked summary have their own ranges, so their sum is exact
    only in total; the view labels such sites as stacked.
    """
    out = np.zeros((len(summaries), bins), np.int32)
    for i, s in enumerate(summaries):
        if s is None or s.reason is not None or s.bins != bins:
            continue
        out[i] = pooled_counts(s.hist, bins)
    return out


def _quantize(plane: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Colour indices of a small (downsampled) plane, in float64: masked logits near
    float32's limit beside ordinary values would overflow a float32 range."""
    plane = np.asarray(plane, np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = np.clip((plane - lo) / max(hi - lo, 1e-30) * (COLOURS - 1), 0, COLOURS - 1)
    index = np.round(np.nan_to_num(scaled)).astype(np.uint8)
    index[np.isnan(plane)] = NAN_INDEX
    index[plane == np.inf] = POSINF_INDEX
    index[plane == -np.inf] = NEGINF_INDEX
    return index


def colour_range(
    mean: float,
    std: float,
    low: float,
    high: float,
    diverging: bool = False,
    largest: float = float(np.finfo(np.float32).max),
) -> tuple[float, float]:
    """The values a heatmap's colours span: mean +- 3 std, within the data's own range.

    Args:
      mean, std: the site's statistics over its finite values.
      low, high: its smallest and largest finite values (NaN when there are none).
      diverging: a range centred at zero, for a colour map whose middle is zero.
      largest: the largest finite value of the statistics' float type; the
        range stays within it.

    Returns:
      ``(lo, hi)``; NaN, NaN when the site has no finite value, so no scale is made up.

    Example:
      >>> colour_range(0.4, 0.5, 0.0, 3.0)  # ReLU outputs: the scale starts at their zeros
      (0.0, 1.9)
      >>> colour_range(0.4, 0.5, 0.0, 3.0, diverging=True)
      (-1.9, 1.9)
    """
    if not (math.isfinite(low) and math.isfinite(high)):
        return math.nan, math.nan
    centre = mean if math.isfinite(mean) else (low + high) / 2
    spread = 3 * std if math.isfinite(std) and std > 0 else 0.0
    # Masked logits near -3.4e38 make centre +- 3 std leave float32's range.
    lo = max(centre - spread, low, -largest)
    hi = min(centre + spread, high, largest)
    if diverging:
        reach = max(abs(lo), abs(hi))
        lo, hi = -reach, reach
    if lo == hi:  # a constant: a unit-wide scale around it
        lo, hi = lo - 0.5, hi + 0.5
    return round(lo, 12), round(hi, 12)


@dataclasses.dataclass(frozen=True)
class Heatmap:
    """A heatmap as the browser gets it: small buffers and a few numbers.

    Attributes:
      pixels: uint8 colour indices, row-major.
      shape: ``[height, width]``, or ``[facets, height, width]`` for small multiples.
      value_range: ``[lo, hi]``, the values the colour indices 0..252 span;
        empty without finite values (NaN has no JSON form).
      note: empty, or why there are no pixels.
      values: the pixels' float32 values when there are at most
        ``EXACT_VALUES_MAX`` of them, else empty (hovering then reads a value
        off the colour scale); not sent when one lies beyond float32's range.
      marks: each pixel's mark, packed (see :func:`value_range.marks`):
        below or above the colour range, or a fill; empty when none is marked.
      facets: the positions along the facet axis of the small multiples;
        empty for one heatmap.
    """

    pixels: bytes = b""
    shape: list[int] = dataclasses.field(default_factory=list)
    value_range: list[float] = dataclasses.field(default_factory=list)
    note: str = ""
    values: bytes = b""
    marks: bytes = b""
    facets: list[int] = dataclasses.field(default_factory=list)


def heatmap(
    value: Any,
    index: Sequence[int],
    mean: float,
    std: float,
    low: float = -math.inf,
    high: float = math.inf,
    diverging: bool = False,
    colours: tuple[float, float] | None = None,
    fills: Sequence[Fill] = (),
    facet_axis: int = -1,
) -> Heatmap:
    """A 2-D slice of ``value`` as colour indices, downsampled on the device.

    A value split across processes is drawn from the part this process
    holds (see :func:`split_note`), on a device of this process.

    Args:
      value: the array (two or more dimensions).
      index: positions along every axis but the last two.
      mean: the mean of the values the colours are for, over the finite ones.
      std: their standard deviation; the scale is clipped at mean +- 3 std.
      low: the smallest of them (NaN if none); the scale starts no lower.
      high: the largest; the scale ends no higher.
      diverging: centre the scale at zero (see :func:`colour_range`).
      colours: the values the colours span, in place of the range the
        statistics give (a robust range); centred at zero when ``diverging``.
      fills: fill values left out of the colour range (see
        :mod:`value_range`); their pixels are marked as fills.
      facet_axis: an axis before the last two to draw small multiples along:
        the slices at its first ``MAX_FACETS`` positions (``index`` giving
        the other axes), on one colour scale; -1 for one heatmap.

    Returns:
      The :class:`Heatmap`. The colours of a 64-bit value come from its
      float64 values; the values sent for hovering are rounded to float32.
    """
    lead = np.ndim(value) - 2
    facet = facet_axis if 0 <= facet_axis < lead else -1
    index = [
        min(max(int(i), 0), np.shape(value)[k] - 1)
        for k, i in enumerate(list(index)[:lead] + [0] * (lead - len(index)))
    ]
    offset = 0  # where the part read starts along the facet axis, in the whole value
    if not readable(value):
        value, where = local_part(value)
        outside = [
            (k, i)
            for k, (i, s) in enumerate(zip(index, where, strict=False))
            if k != facet and not s.start <= i < s.stop
        ]
        if outside:
            k, i = outside[0]
            return Heatmap(note=f"No heatmap: index {i} of axis {k} is held by another process.")
        index = [i - s.start for i, s in zip(index, where, strict=False)]
        offset = where[facet].start if facet >= 0 else 0
    elif isinstance(value, jax.Array) and not value.is_fully_addressable:
        value = value.addressable_data(0)  # a replicated value: this process's own copy
    x = jnp.asarray(value)
    if jnp.iscomplexobj(x):
        x = jnp.abs(x)  # by magnitude, as the statistics the colours come from
    side = HEATMAP_MAX_SIDE
    take: list[Any] = list(index)
    if facet >= 0:
        take[facet] = slice(0, min(MAX_FACETS, x.shape[facet]))
        side = FACET_MAX_SIDE
    # Downsampled in the summaries' float type: float64 for 64-bit values,
    # whose range may lie beyond float32's.
    planes = (x[tuple(take)] if lead else x).astype(stats_dtype(x.dtype))
    steps = [max(1, math.ceil(d / side)) for d in planes.shape[-2:]]
    planes = np.asarray(planes[..., :: steps[0], :: steps[1]])
    largest = float(np.finfo(planes.dtype).max)
    if colours is None:
        lo, hi = colour_range(mean, std, low, high, diverging, largest)
    else:
        lo, hi = colours
        if diverging:
            lo, hi = -max(abs(lo), abs(hi)), max(abs(lo), abs(hi))
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
    finite_scale = math.isfinite(lo) and math.isfinite(hi)
    pixels = _quantize(planes, lo, hi) if finite_scale else _quantize(planes, 0.0, 1.0)
    marked = marks(planes, lo, hi, fills) if finite_scale else marks(planes, math.nan, math.nan, fills)
    # Values beyond float32's range send none: hovering reads them off the colour scale.
    beyond = np.isfinite(planes) & (np.abs(planes) > np.finfo(np.float32).max)
    small = planes.size <= EXACT_VALUES_MAX and not beyond.any()
    return Heatmap(
        pixels=pixels.tobytes(),
        shape=list(pixels.shape),
        value_range=[lo, hi] if finite_scale else [],
        values=planes.astype(np.float32).tobytes() if small else b"",
        marks=packed(marked),
        facets=[offset + k for k in range(planes.shape[0])] if facet >= 0 else [],
    )
