"""What the CaptureView widget sends to the browser, as small binary buffers.

Per site the browser gets a fixed number of bytes, whatever the tensor's
size: a row of float64 statistics and the int32 histogram. A heatmap is
computed only for the selected site, on the device, and travels as one uint8
per pixel (a colour index), so a 1M-element tensor costs under 64 KiB.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcapture_nb._records import Record, flat_stats
from jaxcapture_nb._summary import Summary

# Column order of the stats buffer, shared with js/capture_view.js.
STAT_COLUMNS = ("mean", "std", "min", "max", "zero_pct", "nan", "posinf", "neginf", "count", "lo", "hi")

# 240 x 240 uint8 pixels plus the statistics stay under 64 KiB per site.
HEATMAP_MAX_SIDE = 240
# Colour indices: 0..COLOURS-1 for finite values on the clipped scale, then
# one index each for NaN, +Inf and -Inf.
COLOURS = 253
NAN_INDEX, POSINF_INDEX, NEGINF_INDEX = 253, 254, 255


def _type_name(var_type: Any) -> str:
    return var_type if isinstance(var_type, str) else getattr(var_type, "__name__", str(var_type))


def host_summaries(records: Sequence[Record]) -> list[Summary | None]:
    """Every record's summary on the host, fetched in one transfer."""
    return jax.device_get([r.summary for r in records])


def site_rows(records: Sequence[Record], summaries: Sequence[Summary | None]) -> list[dict[str, Any]]:
    """The text of each row: names and shapes, never numbers to plot."""
    rows = []
    for r, s in zip(records, summaries, strict=True):
        rows.append(
            {
                "path": ".".join(str(p) for p in r.path),
                "name": r.name,
                "call": r.call_index,
                "type": _type_name(r.var_type),
                "shape": list(r.shape) if r.shape is not None else None,
                "dtype": r.dtype or "",
                "note": (s.reason or s.note) if s is not None else f"{type(r.value).__name__}, not an array",
                "has_stats": s is not None and s.reason is None,
                "has_value": r.value is not None and r.shape is not None and len(r.shape) >= 2,
            }
        )
    return rows


def stats_table(summaries: Sequence[Summary | None]) -> np.ndarray:
    """float64 [n_sites, len(STAT_COLUMNS)]; NaN where a site has no summary."""
    out = np.full((len(summaries), len(STAT_COLUMNS)), np.nan)
    for i, s in enumerate(summaries):
        if s is None or s.reason is not None:
            continue
        st = flat_stats(s)
        lo, hi = np.asarray(s.lo, np.float64), np.asarray(s.hi, np.float64)
        st |= {"lo": float(lo.min()), "hi": float(hi.max())}
        out[i] = [st[c] for c in STAT_COLUMNS]
    return out


def first_nonfinite(stats: np.ndarray) -> int:
    """Row of the first site holding a NaN or Inf, -1 if none."""
    columns = [STAT_COLUMNS.index(c) for c in ("nan", "posinf", "neginf")]
    bad = np.flatnonzero(np.nansum(stats[:, columns], axis=1) > 0)
    return int(bad[0]) if bad.size else -1


def hist_buffer(summaries: Sequence[Summary | None], bins: int) -> bytes:
    """int32 [n_sites, bins]; stacked (scan/vmap) histograms are added up.

    Slices of a stacked summary have their own ranges, so their sum is exact
    only in total; the view labels such sites as stacked.
    """
    out = np.zeros((len(summaries), bins), np.int32)
    for i, s in enumerate(summaries):
        if s is None or s.reason is not None or s.bins != bins:
            continue
        hist = np.asarray(s.hist)
        out[i] = hist.reshape(-1, bins).sum(axis=0)
    return out.tobytes()


def _quantize(plane: jax.Array, lo: jax.Array, hi: jax.Array) -> jax.Array:
    scaled = jnp.clip((plane - lo) / jnp.maximum(hi - lo, 1e-30) * (COLOURS - 1), 0, COLOURS - 1)
    index = jnp.round(scaled).astype(jnp.uint8)
    index = jnp.where(jnp.isnan(plane), NAN_INDEX, index)
    index = jnp.where(plane == jnp.inf, POSINF_INDEX, index)
    return jnp.where(plane == -jnp.inf, NEGINF_INDEX, index).astype(jnp.uint8)


def heatmap(
    value: Any, index: Sequence[int], mean: float, std: float
) -> tuple[bytes, list[int], list[float]]:
    """A 2-D slice of ``value`` as colour indices, downsampled on the device.

    Args:
      value: the array (two or more dimensions).
      index: positions along every axis but the last two.
      mean: the array's mean, centre of the colour scale.
      std: its standard deviation; the scale is clipped at +-3 std.

    Returns:
      The uint8 pixels (row-major), their [height, width], and the value range
      [lo, hi] that the colour indices 0..252 span.
    """
    x = jnp.asarray(value)
    lead = x.ndim - 2
    index = [
        min(max(int(i), 0), x.shape[k] - 1)
        for k, i in enumerate(list(index)[:lead] + [0] * (lead - len(index)))
    ]
    plane = x[tuple(index)].astype(jnp.float32) if lead else x.astype(jnp.float32)
    steps = [max(1, math.ceil(d / HEATMAP_MAX_SIDE)) for d in plane.shape]
    plane = plane[:: steps[0], :: steps[1]]
    spread = 3 * std if std > 0 and math.isfinite(std) else 1.0
    centre = mean if math.isfinite(mean) else 0.0
    lo, hi = centre - spread, centre + spread
    pixels = np.asarray(_quantize(plane, jnp.float32(lo), jnp.float32(hi)))
    return pixels.tobytes(), list(pixels.shape), [lo, hi]
