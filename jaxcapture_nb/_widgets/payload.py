"""What the CaptureView widget sends to the browser, as small binary buffers.

Per site the browser gets a fixed number of bytes, whatever the tensor's
size: a row of float64 statistics and the int32 histogram. A heatmap is
computed only for the selected site, on the device, and travels as one uint8
per pixel (a colour index), so a 1M-element tensor costs under 64 KiB.

In a ``jax.distributed`` run only process 0 shows the widget, so nothing
here may start a program over other processes' devices: they would never
join it. Summaries are replicated and read through the local copy; a value
split across processes is drawn from the part this process holds, and its
row says so (its statistics, computed over the global array, cover it all).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcapture_nb import _schema
from jaxcapture_nb._hosts import local_part, local_slices, process_count_of, readable
from jaxcapture_nb._pooling import pooled_counts, pooled_range
from jaxcapture_nb._records import Record, flat_stats, is_call_output, site_label, site_name
from jaxcapture_nb._schema import COLOURS, NAN_INDEX, NEGINF_INDEX, POSINF_INDEX, type_name
from jaxcapture_nb._summary import Summary, stats_dtype

# Column order of the stats buffer as the schema had it at import, for code
# that reads a buffer; the widget sends capture_columns() as it is when made.
STAT_COLUMNS = _schema.capture_columns()

# 240 x 240 uint8 pixels plus the statistics stay under 64 KiB per site.
HEATMAP_MAX_SIDE = 240
# Slices this small also send their float32 values (16 KiB at most), so
# hovering reads each exact value; larger ones read it off the colour scale.
EXACT_VALUES_MAX = 64 * 64


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


def site_rows(records: Sequence[Record], summaries: Sequence[Summary | None]) -> list[dict[str, Any]]:
    """The text of each row: names and shapes, never numbers to plot.

    An empty array's row has no statistics and no value to draw; its note says so.
    """
    rows = []
    for r, s in zip(records, summaries, strict=True):
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
                "type": type_name(r.var_type),
                "shape": list(r.shape) if r.shape is not None else None,
                "dtype": r.dtype or "",
                "note": "; ".join(filter(None, (note, split_note(r.value)))),
                "has_stats": s is not None and s.reason is None and not empty,
                "has_value": r.value is not None and r.shape is not None and len(r.shape) >= 2 and not empty,
            }
        )
    return rows


def stats_table(summaries: Sequence[Summary | None]) -> np.ndarray:
    """float64 [n_sites, len(capture_columns())]; NaN where a site has no summary."""
    columns = _schema.capture_columns()
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
    columns = [_schema.capture_columns().index(c) for c in _schema.NONFINITE_KEYS]
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


def heatmap(
    value: Any,
    index: Sequence[int],
    mean: float,
    std: float,
    low: float = -math.inf,
    high: float = math.inf,
    diverging: bool = False,
) -> tuple[bytes, list[int], list[float], str, bytes]:
    """A 2-D slice of ``value`` as colour indices, downsampled on the device.

    A value split across processes is drawn from the part this process
    holds (see :func:`split_note`), on a device of this process.

    Args:
      value: the array (two or more dimensions).
      index: positions along every axis but the last two.
      mean: the array's mean over its finite values.
      std: their standard deviation; the scale is clipped at mean +- 3 std.
      low: the smallest finite value (NaN if none); the scale starts no lower.
      high: the largest finite value; the scale ends no higher.
      diverging: centre the scale at zero (see :func:`colour_range`).

    Returns:
      The uint8 pixels (row-major), their [height, width], the value range
      [lo, hi] that the colour indices 0..252 span (empty without finite
      values), a note (empty, or why there are no pixels), and the pixels'
      float32 values when there are at most ``EXACT_VALUES_MAX`` of them
      (else empty: hovering then reads a value off the colour scale). The
      colours of a 64-bit value come from its float64 values; the values
      sent for hovering are rounded to float32, and not sent when one lies
      beyond float32's range (+Inf and -Inf aside).
    """
    lead = np.ndim(value) - 2
    index = [
        min(max(int(i), 0), np.shape(value)[k] - 1)
        for k, i in enumerate(list(index)[:lead] + [0] * (lead - len(index)))
    ]
    if not readable(value):
        value, where = local_part(value)
        outside = [
            (k, i) for k, (i, s) in enumerate(zip(index, where, strict=False)) if not s.start <= i < s.stop
        ]
        if outside:
            k, i = outside[0]
            return b"", [], [0.0, 0.0], f"No heatmap: index {i} of axis {k} is held by another process.", b""
        index = [i - s.start for i, s in zip(index, where, strict=False)]
    elif isinstance(value, jax.Array) and not value.is_fully_addressable:
        value = value.addressable_data(0)  # a replicated value: this process's own copy
    x = jnp.asarray(value)
    # Downsampled in the summaries' float type: float64 for 64-bit values,
    # whose range may lie beyond float32's.
    plane = (x[tuple(index)] if lead else x).astype(stats_dtype(x.dtype))
    steps = [max(1, math.ceil(d / HEATMAP_MAX_SIDE)) for d in plane.shape]
    plane = np.asarray(plane[:: steps[0], :: steps[1]])
    largest = float(np.finfo(plane.dtype).max)
    lo, hi = colour_range(mean, std, low, high, diverging, largest)
    pixels = _quantize(plane, lo, hi) if math.isfinite(lo) else _quantize(plane, 0.0, 1.0)
    # Values beyond float32's range send none: hovering reads them off the colour scale.
    beyond = np.isfinite(plane) & (np.abs(plane) > np.finfo(np.float32).max)
    small = plane.size <= EXACT_VALUES_MAX and not beyond.any()
    exact = plane.astype(np.float32).tobytes() if small else b""
    value_range = [lo, hi] if math.isfinite(lo) else []  # NaN has no JSON form
    return pixels.tobytes(), list(pixels.shape), value_range, "", exact
