"""Fill values: found by what they are, on the device that holds an array.

Masked attention logits hold one value in every masked cell, chosen to
vanish under softmax: Flax's ``jnp.finfo(dtype).min``, ``-1e9`` in many
published models, ``-9e15`` in graph attention networks. Drawn over their
full range, the real scores all fall into one bin and the heatmap shows the
mask alone. A fill is either of:

- values near a limit of the float type (from ``finfo(dtype).max /``
  :data:`NEAR_LIMIT`) holding at least :data:`FILL_SHARE` of the elements,
  whether or not they are one value; or
- the smallest (or largest) finite value, held by at least
  :data:`FILL_SHARE` of the elements, whose distance to the nearest other
  value is at least :data:`FAR` times the range of the other values, which
  must hold two distinct values or more.

The second rule is the one that needs no limit. Its range is that of every
other value, outliers and long tails included, so a tail only makes a fill
harder to call; the many zeros of ReLU outputs, one-hot rows, a tensor of one
constant and integer-valued data all sit too close to the rest, or have no
rest to be far from. Integer and boolean arrays have no fills.

One program finds them: a pass over the value for its extremes and the
counts near each limit, and a second for how many values equal each extreme
and the values next to them. Only those eight numbers reach the host, which
decides.

Example:
  >>> import jax.numpy as jnp
  >>> scores = jnp.arange(16.0).reshape(4, 4) / 4
  >>> causal = jnp.tril(jnp.ones((4, 4), bool))
  >>> (fill,) = find_fills(jnp.where(causal, scores, jnp.finfo(jnp.float32).min * 0.7))
  >>> fill.side, fill.count, fill.exact, f"{fill.value:.3g}"
  ('low', 6, True, '-2.38e+38')
  >>> (fill,) = find_fills(jnp.where(causal, scores, -1e9))
  >>> fill.side, fill.limit, fill.count
  ('low', -1000000000.0, 6)
  >>> find_fills(jnp.where(causal, scores, -5.0))  # a floor next to the scores, not a mask
  ()
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxcapture_nb.core.wire import FillMessage
from jaxcapture_nb.stats.summary import Summary, stats_dtype

# A value counts as near its type's limit from finfo(dtype).max / NEAR_LIMIT:
# -2.38e38 (0.7 of float32's) and -3.39e38 (bfloat16's) are, no activation is.
NEAR_LIMIT = 16
# The share of the elements a fill holds at least, so that a few overflowing
# activations or one outlier are no fill.
FILL_SHARE = 0.01
# How many times the range of the other values a single value must lie away
# from them to be a fill. Masks lie 1e7 (-1e9) to 1e37 times it away from
# scores spanning tens; a floor (log(1e-30) = -69 under log-probabilities
# spanning 20) or a constant beside small noise lies tens to hundreds of
# times. A -1e4 mask is a fill only over scores spanning less than 10.
FAR = 1000


@dataclasses.dataclass(frozen=True)
class Fill:
    """The values at one end of an array that fill a share of it.

    Attributes:
      side: ``"low"`` (the smallest values) or ``"high"``.
      limit: where the fill starts: values at or below it (``"low"``), or at
        or above it (``"high"``), are the fill; the fill itself when it lies
        far from the rest rather than near the type's limit.
      value: the extreme value among them, the fill itself when ``exact``.
      count: how many values are the fill.
      exact: whether they all equal ``value``.
    """

    side: str
    limit: float
    value: float
    count: int
    exact: bool

    def as_json(self) -> FillMessage:
        """What the front end reads of it."""
        return {
            "side": self.side,
            "limit": self.limit,
            "value": self.value,
            "count": self.count,
            "exact": self.exact,
        }


class Ends(NamedTuple):
    """What two passes over a value find of its ends: the numbers :func:`fills_at_ends` decides from.

    ``second`` is the smallest finite value above ``smallest`` (+inf when
    there is none), ``second_last`` the largest below ``largest`` (-inf).
    """

    smallest: float
    largest: float
    at_smallest: int
    at_largest: int
    near_low: int
    near_high: int
    second: float
    second_last: float


def fill_limit(dtype: Any) -> float | None:
    """From which magnitude a value of ``dtype`` is near its limit; None for types without fills.

    Example:
      >>> fill_limit(jnp.float32) == float(jnp.finfo(jnp.float32).max) / NEAR_LIMIT, fill_limit(jnp.int32)
      (True, None)
    """
    dtype = jnp.dtype(dtype)
    if not jnp.issubdtype(dtype, jnp.floating):
        return None
    return float(jnp.finfo(dtype).max) / NEAR_LIMIT


def near_limit(dtype: Any, low: float, high: float) -> bool:
    """Whether an array may hold a fill near its type's limit, read from its summary's min and max.

    Example:
      >>> near_limit("float32", -2.38e38, 4.5), near_limit("float32", -9.0, 4.5), near_limit("int32", -9, 4)
      (True, False, False)
    """
    limit = fill_limit(dtype)
    if limit is None:
        return False
    return (math.isfinite(low) and low <= -limit) or (math.isfinite(high) and high >= limit)


def may_hold_fill(summary: Summary) -> bool:
    """Whether a summary leaves room for a fill: no device work.

    A fill far from the other values puts them within ``1 / FAR`` of the
    histogram's range, so a histogram of a value with a fill has no more
    than ``4 + bins // FAR`` bins in use (the fill's, one more at the other
    end, and those of the rest), and at least two (the fill's and the
    rest's): a constant is no candidate. A fill near the type's limit shows
    in the minimum or maximum. A stacked summary (``scan``, ``vmap``) is
    read per slice: a slice that holds part of a fill shows it so too.

    Example:
      >>> from jaxcapture_nb import summarize
      >>> may_hold_fill(summarize(jnp.where(jnp.arange(64) < 32, jnp.arange(64.0), -1e9)))
      True
      >>> may_hold_fill(summarize(jnp.arange(64.0))), may_hold_fill(summarize(jnp.arange(64)))
      (False, False)
    """
    if summary.reason is not None or fill_limit(summary.dtype) is None:
        return False
    s = summary.to_numpy()
    if near_limit(summary.dtype, float(s.min.min()), float(s.max.max())):
        return True
    in_use = (s.hist.reshape(-1, s.bins) > 0).sum(axis=1)
    return bool(((in_use >= min(2, s.bins)) & (in_use <= 4 + s.bins // FAR)).any())


def as_float(x: jax.Array) -> jax.Array:
    """The values in their statistics' float type; complex values by their magnitude, as summaries read them."""
    return (jnp.abs(x) if jnp.iscomplexobj(x) else x).astype(stats_dtype(x.dtype))


@jax.jit
def _ends(x: jax.Array, limit: jax.Array) -> tuple[jax.Array, ...]:
    """The :class:`Ends` of ``x``, on its device: two passes, each fused into one."""
    x = as_float(x)
    finite = jnp.isfinite(x)
    smallest = jnp.min(jnp.where(finite, x, jnp.inf))
    largest = jnp.max(jnp.where(finite, x, -jnp.inf))
    # The second pass needs no mask: NaN compares false, and an infinity
    # counts only where no finite value is (smallest > largest then, and
    # fills_at_ends finds nothing), or stands for "no value" as the
    # reductions' own start does.
    return (
        smallest,
        largest,
        (x == smallest).sum(),
        (x == largest).sum(),
        (finite & (x <= -limit)).sum(),
        (finite & (x >= limit)).sum(),
        jnp.min(jnp.where(x > smallest, x, jnp.inf)),
        jnp.max(jnp.where(x < largest, x, -jnp.inf)),
    )


def ends_on_device(x: jax.Array) -> tuple[jax.Array, ...] | None:
    """Starts :func:`_ends` on the device that holds ``x``; None for a type without fills or no elements.

    The result is device arrays, not yet read: several values' ends are read
    in one transfer (:func:`read_ends`).
    """
    limit = fill_limit(x.dtype)
    if limit is None or x.size == 0:
        return None
    return _ends(x, jnp.asarray(limit, stats_dtype(x.dtype)))


def read_ends(started: tuple[jax.Array, ...]) -> Ends:
    """The :class:`Ends` of a value, from what :func:`ends_on_device` started."""
    smallest, largest, at_smallest, at_largest, near_low, near_high, second, second_last = started
    return Ends(
        float(smallest),
        float(largest),
        int(at_smallest),
        int(at_largest),
        int(near_low),
        int(near_high),
        float(second),
        float(second_last),
    )


def _rest_span(ends: Ends, without: set[str]) -> tuple[float, float]:
    """The smallest and largest finite values but the ends in ``without``; lo > hi when none is left."""
    lo = ends.second if "low" in without else ends.smallest
    hi = ends.second_last if "high" in without else ends.largest
    if without >= {"low", "high"} and lo >= ends.largest:  # nothing lies between the two ends
        return math.inf, -math.inf
    return lo, hi


def _far(ends: Ends, sides: set[str], without: set[str]) -> bool:
    """Whether each end in ``sides`` lies FAR times the range of the values but ``without`` away from them."""
    lo, hi = _rest_span(ends, without)
    if not lo < hi:  # one value or none left: nothing to be far from
        return False
    spread = FAR * (hi - lo)
    gaps = {"low": lo - ends.smallest, "high": ends.largest - hi}
    return all(gaps[side] >= spread for side in sides)


def fills_at_ends(ends: Ends, size: int, dtype: Any, share: float = FILL_SHARE) -> tuple[Fill, ...]:
    """The fills of a value of ``size`` elements and type ``dtype``, decided from its :class:`Ends`.

    Ends near the type's limit are fills by their share alone; then both
    remaining ends are tried together, each alone after, as fills far from
    every other value.

    Example:
      >>> ends = Ends(-1e9, 3.0, 50, 1, 0, 0, -3.0, 2.5)
      >>> [(f.side, f.value, f.count) for f in fills_at_ends(ends, 100, "float32")]
      [('low', -1000000000.0, 50)]
      >>> fills_at_ends(Ends(0.0, 1.0, 90, 10, 0, 0, 1.0, 0.0), 100, "float32")  # one-hot
      ()
    """
    limit = fill_limit(dtype)
    if limit is None or size == 0:
        return ()
    least = share * size
    fills = {}
    sides = (
        ("low", -limit, ends.near_low, ends.smallest, ends.at_smallest),
        ("high", limit, ends.near_high, ends.largest, ends.at_largest),
    )
    for side, bound, near, extreme, at in sides:
        if near and near >= least:
            fills[side] = Fill(side, bound, extreme, near, at == near)
    candidates = {
        side
        for side, _, _, _, at in sides
        if side not in fills and at and at >= least and ends.smallest < ends.largest
    }
    for tried in ({"low", "high"}, {"low"}, {"high"}):
        if tried <= candidates and _far(ends, tried, tried | set(fills)):
            for side, _, _, extreme, at in sides:
                if side in tried:
                    fills[side] = Fill(side, extreme, extreme, at, True)
            break
    return tuple(fills[side] for side in ("low", "high") if side in fills)


def find_fills(value: Any, share: float = FILL_SHARE) -> tuple[Fill, ...]:
    """The fills of an array (see the module's docstring), found on the device that holds it.

    Args:
      value: the array (any shape; integer and boolean arrays have no fills).
      share: the smallest share of the elements a fill holds.

    Returns:
      A :class:`Fill` per end that holds one, low before high; empty when none.
    """
    x = jnp.asarray(value)
    started = ends_on_device(x)
    if started is None:
        return ()
    return fills_at_ends(read_ends(jax.device_get(started)), x.size, x.dtype, share)
