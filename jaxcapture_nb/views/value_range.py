"""Value ranges without a fill, computed on the device that holds an array.

Once :mod:`~jaxcapture_nb.views.fills` has found an array's fills, this
module computes, on the device that holds the value, a range without them or
a robust one (percentiles), the histogram over that range, how many values
lie beyond it, and the statistics of the values other than the fills; and
marks, for a heatmap, which of its pixels are a fill or lie beyond its
colours. Only these few numbers reach the host.

Example:
  >>> import jax.numpy as jnp
  >>> from jaxcapture_nb.views.fills import find_fills
  >>> scores = jnp.arange(16.0).reshape(4, 4) / 4
  >>> logits = jnp.where(jnp.tril(jnp.ones((4, 4), bool)), scores, -1e9)
  >>> fills = find_fills(logits)
  >>> ranged = compute_range(logits, fills, robust=False, bins=4)
  >>> ranged.lo, ranged.hi, ranged.hist.tolist(), ranged.rest["count"], ranged.rest["zero_pct"]
  (0.0, 3.75, [1, 2, 3, 4], 10, 10.0)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcapture_nb.core.hosts import local_part, readable
from jaxcapture_nb.stats.reduced import keyed_jit, reduced_means, value_fields
from jaxcapture_nb.stats.summary import stats_dtype
from jaxcapture_nb.views.fills import Fill, as_float

# The percentiles a robust range spans.
ROBUST_PERCENTILES = (0.5, 99.5)


@dataclasses.dataclass(frozen=True)
class Ranged:
    """A range computed on the device, with the histogram over it.

    Attributes:
      lo, hi: the range the histogram spans (NaN when no value is left).
      hist: int32 counts of the values left in ``bins`` equal bins over it.
      under, over: how many values left lie below ``lo`` or above ``hi``
        (robust ranges leave some out; a fill is counted on its own).
      rest: statistics of the finite values other than the fill: how many
        (``count``), ``zero_pct`` (over every element but the fill's) and
        each of :func:`~jaxcapture_nb.stats.reduced.value_fields`, the
        registered reduced statistics included; NaN where there are no such values.
    """

    lo: float
    hi: float
    hist: np.ndarray
    under: int
    over: int
    rest: dict[str, float]


def local_array(value: Any) -> tuple[Any, str]:
    """The part of ``value`` this process reads, and a note when that is not all of it.

    In a ``jax.distributed`` run only process 0 shows the view: a value split
    across processes is read from the part this process holds, and a
    replicated one from this process's own copy, so no program starts that
    other processes would have to join.
    """
    if not readable(value):
        part, _ = local_part(value)
        return part, "over this process's part"
    if isinstance(value, jax.Array) and not value.is_fully_addressable:
        return value.addressable_data(0), ""
    return value, ""


def _ranged(
    x: jax.Array, below: jax.Array, above: jax.Array, bins: int, robust: bool
) -> tuple[jax.Array, ...]:
    """The range, histogram, counts beyond and statistics of the finite values strictly between ``below`` and ``above``.

    The statistics are those of :func:`~jaxcapture_nb.stats.reduced.value_fields`, stacked in its order.
    """
    x = as_float(x).ravel()
    finite = jnp.isfinite(x)
    keep = finite & (x > below) & (x < above)
    count = keep.sum()
    n = jnp.maximum(count, 1).astype(x.dtype)
    smallest = jnp.min(jnp.where(keep, x, jnp.inf))
    largest = jnp.max(jnp.where(keep, x, -jnp.inf))
    # Scaled by the largest magnitude, so that values near the limit that are
    # no fill (too few of them) neither overflow the sum nor its squares.
    scale = jnp.maximum(jnp.maximum(jnp.abs(smallest), jnp.abs(largest)), jnp.finfo(x.dtype).tiny)
    scale = jnp.where(jnp.isfinite(scale), scale, 1)
    unit = jnp.where(keep, x / scale, 0)
    mean = unit.sum() / n
    std = jnp.sqrt((jnp.where(keep, unit - mean, 0) ** 2).sum() / n) * scale
    mean = mean * scale
    if robust:
        lo, hi = jnp.nanpercentile(jnp.where(keep, x, jnp.nan), jnp.asarray(ROBUST_PERCENTILES, x.dtype))
    else:
        lo, hi = smallest, largest
    span = jnp.where(hi > lo, hi - lo, 1)
    inside = keep & (x >= lo) & (x <= hi)
    index = jnp.clip(jnp.floor((x - lo) / span * bins), 0, bins - 1).astype(jnp.int32)
    hist = jnp.bincount(jnp.where(inside, index, 0), weights=inside.astype(jnp.int32), length=bins)
    under = (keep & (x < lo)).sum()
    over = (keep & (x > hi)).sum()
    zeros = (keep & (x == 0)).sum()
    filled = (finite & ~keep).sum()
    reduced = reduced_means(x, keep, count, jnp.sum, x.dtype)
    values = jnp.stack([smallest, largest, mean, std, *reduced]).astype(x.dtype)
    return lo, hi, hist.astype(jnp.int32), under, over, count, zeros, filled, values


# Traced again when a reduced statistic is registered, which it computes too.
_ranged_program = keyed_jit(_ranged, ("bins", "robust"))


def range_on_device(value: Any, fills: Sequence[Fill], robust: bool, bins: int) -> tuple[jax.Array, ...]:
    """Starts :func:`compute_range`'s work on the device that holds ``value``; :func:`read_range` reads it.

    Several values' ranges started before any is read share one transfer.
    """
    x = jnp.asarray(value)
    dtype = stats_dtype(x.dtype)
    below = max((f.limit for f in fills if f.side == "low"), default=-math.inf)
    above = min((f.limit for f in fills if f.side == "high"), default=math.inf)
    return _ranged_program(x, jnp.asarray(below, dtype), jnp.asarray(above, dtype), bins=bins, robust=robust)


def read_range(started: Sequence[Any], size: int) -> Ranged:
    """The :class:`Ranged` of a value of ``size`` elements, from what :func:`range_on_device` started."""
    lo, hi, hist, under, over, count, zeros, filled, values = started
    others = size - int(filled)  # the zeros' share is over every element but the fill's, as a table's is
    zero_pct = 100.0 * int(zeros) / others if others else math.nan
    rest = {"count": int(count), "zero_pct": zero_pct}
    rest |= dict(zip(value_fields(), (float(v) if count else math.nan for v in values), strict=True))
    if not count:
        lo = hi = math.nan
    return Ranged(float(lo), float(hi), np.asarray(hist, np.int32), int(under), int(over), rest)


def compute_range(value: Any, fills: Sequence[Fill], robust: bool, bins: int) -> Ranged:
    """The range of an array's values other than its fills, on the device that holds it.

    Args:
      value: the array.
      fills: its fills (:func:`~jaxcapture_nb.views.fills.find_fills`),
        left out of everything computed.
      robust: span the :data:`ROBUST_PERCENTILES` of the values left, rather
        than all of them.
      bins: the histogram's number of bins.

    Returns:
      The :class:`Ranged`; its ``lo`` and ``hi`` are NaN when no finite value is left.
    """
    return read_range(jax.device_get(range_on_device(value, fills, robust, bins)), int(np.size(value)))


def marks(plane: np.ndarray, lo: float, hi: float, fills: Sequence[Fill]) -> np.ndarray:
    """What the heatmap marks in each element of ``plane``: 0 nothing, 1 below the colour range, 2 above it, 3 a fill.

    Example:
      >>> fill = Fill("low", -1e37, -2e38, 1, True)
      >>> marks(np.array([-2e38, -5.0, 0.5, 9.0]), 0.0, 1.0, [fill]).tolist()
      [3, 1, 0, 2]
    """
    plane = np.asarray(plane, np.float64)
    out = np.zeros(plane.shape, np.uint8)
    finite = np.isfinite(plane)
    if math.isfinite(lo) and math.isfinite(hi):
        # A range's ends are rounded for the browser (colour_range): the
        # smallest and largest values must not fall beyond them by that.
        slack = (hi - lo) * 1e-9
        out[finite & (plane < lo - slack)] = 1
        out[finite & (plane > hi + slack)] = 2
    for fill in fills:
        out[finite & ((plane <= fill.limit) if fill.side == "low" else (plane >= fill.limit))] = 3
    return out


def packed(marks_: np.ndarray) -> bytes:
    """Marks (0-3) as 2 bits each, four to a byte, the first in the lowest bits; empty when nothing is marked.

    Example:
      >>> packed(np.array([0, 1, 2, 3, 3], np.uint8)).hex(), packed(np.zeros(5, np.uint8))
      ('e403', b'')
    """
    flat = np.asarray(marks_, np.uint8).ravel()
    if not flat.any():
        return b""
    quads = np.zeros(-(-flat.size // 4) * 4, np.uint8)
    quads[: flat.size] = flat
    quads = quads.reshape(-1, 4)
    return (quads[:, 0] | quads[:, 1] << 2 | quads[:, 2] << 4 | quads[:, 3] << 6).astype(np.uint8).tobytes()
