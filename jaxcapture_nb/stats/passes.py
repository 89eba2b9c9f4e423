"""The careful pass and the statistics from what a pass found, written once for both kinds of summary.

:mod:`jaxcapture_nb.stats.summary` summarizes one array, :mod:`jaxcapture_nb.stats.batch`
the values laid out as rows of one table. Both run these functions; they
differ only in how a statistic is reduced over a value's elements, which a
:class:`Segments` says: over the whole array, or over each value's rows. So
a value's summary is the same either way, and a change to the arithmetic is
made once.
"""

from __future__ import annotations

from typing import Any, Protocol

import jax
import jax.numpy as jnp

from jaxcapture_nb.stats.bins import (
    ILL_CONDITIONED,
    NAN,
    NEGINF,
    POSINF,
    SLOTS,
    ZERO,
    Found,
    edges,
    index_careful,
)
from jaxcapture_nb.stats.float32 import (
    float_format,
    from_order_key,
    inf_bits,
    magnitude_bits,
    order_key,
    scale_exponent,
    scaled,
    unscaled,
)
from jaxcapture_nb.stats.histogram import bin_counts
from jaxcapture_nb.stats.reduced import reduced_means


class Segments(Protocol):
    """How a summary reduces over each value's elements, and spreads a value's numbers back over them.

    Statistics "per value" are scalars for one array, and ``[n]`` arrays
    for the ``n`` values of a table.
    """

    @property
    def inside(self) -> jax.Array | None:
        """Which elements are values' (a table's padding is not); None when all are."""

    def min(self, x: jax.Array, initial: jax.Array) -> jax.Array:
        """Each value's least element of ``x``; ``initial`` for a value without elements."""

    def max(self, x: jax.Array, initial: jax.Array) -> jax.Array:
        """Each value's greatest element of ``x``; ``initial`` for a value without elements."""

    def sum(self, x: jax.Array) -> jax.Array:
        """Each value's sum of the elements of ``x``."""

    def spread(self, per_value: jax.Array) -> jax.Array:
        """``per_value`` shaped to combine with the elements, each value's with its own."""

    def slots(self, index: jax.Array, bins: int) -> jax.Array:
        """Each value's counts of the bin and slot indices ``index``, ``[..., bins + SLOTS]``."""

    def any(self, flags: jax.Array) -> jax.Array:
        """Whether any value's flag is set, as one bool: a ``lax.cond`` decides for all of them."""


def with_zeros_in_their_bin(slots: jax.Array, lo_edge: jax.Array, hi_edge: jax.Array, bins: int) -> jax.Array:
    """``slots`` with each value's zero slot's count added to the bin of 0 (edges in any one unit)."""
    zero_bin = jnp.clip(jnp.floor(-lo_edge * (bins / (hi_edge - lo_edge))), 0, bins - 1).astype(jnp.int32)
    # Added where a column is the zero bin, which fuses with its neighbours,
    # rather than scattered into it.
    at_zero = jax.lax.broadcasted_iota(jnp.int32, slots.shape, slots.ndim - 1) == zero_bin[..., None]
    return slots + jnp.where(at_zero, slots[..., bins + ZERO][..., None], 0)


def _finite(v: jax.Array, segments: Segments) -> jax.Array:
    """Which elements are finite values (a table's padding is not)."""
    finite = magnitude_bits(v) < inf_bits(v)
    return finite if segments.inside is None else finite & segments.inside


def cancelling_sum(u: jax.Array, segments: Segments) -> jax.Array:
    """Each value's sum of ``u`` (at most 2 in magnitude), its small elements kept where its large ones cancel.

    Values that reach the careful pass for their magnitude can cancel:
    ``[1e300, 1.0, 1.0, -1e300]`` summed in order or in pairs loses both
    ones, and its mean reads 0.0 for 0.5. Where a plain sum is less than
    ``2**-(p/2)`` of the sum of magnitudes (``p`` the mantissa's bits), half
    its bits may be rounding left over from what cancelled, and it is made
    again by :func:`split_sum`; elsewhere the plain sum stands. The test
    costs the pass one more sum.

    Example:
      >>> u = jnp.array([1.0, 2.0**-60, 2.0**-60, -1.0], jnp.float32)
      >>> float(jnp.sum(u)), float(cancelling_sum(u, WHOLE)) == 2.0**-59
      (0.0, True)
    """
    plain = segments.sum(u)
    lost = segments.sum(jnp.abs(u)) > 2.0 ** ((float_format(u.dtype).mantissa + 1) // 2) * jnp.abs(plain)
    return jax.lax.cond(
        segments.any(lost),
        lambda: jnp.where(lost, split_sum(u, segments), plain),
        lambda: plain,
    )


def split_sum(u: jax.Array, segments: Segments) -> jax.Array:
    """Each value's sum of ``u`` (at most 2 in magnitude), what cancels among its elements cancelled exactly.

    Each element is cut into pieces of ``k`` bits, from the top, until none
    is left of its mantissa: however many elements there are, each piece's
    multiples of its unit sum exactly, so what cancels among the large
    values cancels exactly, and what is left (values too small for every
    piece) is summed last, with its own rounding alone.
    """
    f = float_format(u.dtype)
    # A piece's multiples of 2**-(j * k) lie below 2**(k + 1) of its units;
    # n of them sum exactly while n * 2**(k + 1) fits the mantissa.
    k = max(1, f.mantissa - u.size.bit_length() - 1)
    sums, rest = [], u
    for j in range(1, -(-(f.mantissa + 1) // k) + 1):
        unit = jnp.asarray(2.0 ** (j * k), u.dtype)
        piece = jnp.round(rest * unit) / unit
        sums.append(segments.sum(piece))
        rest = rest - piece
    total = segments.sum(rest)
    for piece_sum in reversed(sums):  # the smallest first
        total = total + piece_sum
    return total


def careful_pass(v: jax.Array, segments: Segments, bins: int) -> Found:
    """Everything again over the finite values only, in units of a power of two.

    Runs when a NaN or Inf is present, when a sum, a square or the range
    overflows the float type, or when the values are too small to square. Min and
    max are taken over the values' bits, which keeps subnormal ones that a
    CPU's float comparisons read as zero. The values are then scaled by
    ``2**-e``, ``e`` chosen so that the widest bin edge becomes about 1: the
    sums cannot overflow and the squares of all but negligible values stay
    normal.
    """
    finite = _finite(v, segments)
    key = order_key(v)
    top, bottom = order_key(jnp.asarray(jnp.inf, v.dtype)), order_key(jnp.asarray(-jnp.inf, v.dtype))
    lo = from_order_key(segments.min(jnp.where(finite, key, top), top), v.dtype)
    hi = from_order_key(segments.max(jnp.where(finite, key, bottom), bottom), v.dtype)
    lo_edge, hi_edge = edges(lo, hi)
    e = scale_exponent(jnp.maximum(magnitude_bits(lo_edge), magnitude_bits(hi_edge)))
    u, low, high = scaled(v, segments.spread(e)), scaled(lo, e), scaled(hi, e)
    pivot = jnp.where(lo <= hi, (low + high) / 2, 0.0)
    total = cancelling_sum(jnp.where(finite, u, 0.0), segments)
    squares = segments.sum(jnp.where(finite, jnp.square(u - segments.spread(pivot)), 0.0))
    first, last = scaled(lo_edge, e), scaled(hi_edge, e)
    scale = bins / (last - first)
    index = index_careful(v, u, segments.spread(first), segments.spread(scale), bins)
    slots = with_zeros_in_their_bin(segments.slots(index, bins), first, last, bins)
    return Found(lo, hi, lo_edge, hi_edge, e, low, high, total, squares, pivot, slots)


def statistics(
    v: jax.Array, sizes: jax.Array | int, found: Found, segments: Segments, bins: int, quick: bool = False
) -> tuple[jax.Array, jax.Array]:
    """Each value's ``stats`` (min, max, mean, std, lo, hi, the reduced ones) and ``counts`` rows, from what a pass found.

    Args:
      v: the values' elements, as the pass read them.
      sizes: each value's number of elements.
      found: what the pass found.
      segments: how ``v``'s elements make up the values.
      bins: the histogram's bins.
      quick: make them for a program without the careful pass, whose rows
        matter only for values the fast pass took: finite, and with a scale
        exponent of 0.
    """
    count, counts = counted(found.slots, sizes, bins)
    mean, std = moments(v, found, count, segments, quick)
    # The quick program's values are finite: its rows matter for no others.
    finite = segments.inside if quick else _finite(v, segments)
    reduced = reduced_means(v, finite, count, segments.sum, v.dtype)
    pass_stats = [found.lo, found.hi, mean, std, found.lo_edge, found.hi_edge]
    return stats_row(pass_stats, reduced, count, v.dtype), counts


def counted(slots: jax.Array, sizes: jax.Array | int, bins: int) -> tuple[jax.Array, jax.Array]:
    """Each value's number of finite elements, and its ``counts`` row, from the histogram's slots."""
    nan, posinf, neginf = slots[..., bins + NAN], slots[..., bins + POSINF], slots[..., bins + NEGINF]
    count = jnp.asarray(sizes, jnp.int32) - nan - posinf - neginf
    firsts = jnp.stack([count, nan, posinf, neginf, slots[..., bins + ZERO]], axis=-1)
    return count, jnp.concatenate([firsts, slots[..., :bins]], axis=-1).astype(jnp.int32)


def stats_row(
    pass_stats: list[jax.Array], reduced: list[jax.Array], count: jax.Array, dtype: Any
) -> jax.Array:
    """Each value's ``stats`` row: min, max, mean, std, lo, hi, then the reduced statistics.

    All but the range's edges are NaN for a value without finite elements.
    """
    nan = jnp.asarray(jnp.nan, dtype)
    empty = count == 0
    stats = [jnp.where(empty, nan, s) for s in pass_stats[:4]] + pass_stats[4:]
    stats += [jnp.where(empty, nan, s) for s in reduced]
    return jnp.stack(stats, axis=-1).astype(dtype)


def moments(
    v: jax.Array, found: Found, count: jax.Array, segments: Segments, quick: bool = False
) -> tuple[jax.Array, jax.Array]:
    """Each value's mean and std of its finite elements, from what a pass found (see :func:`statistics`)."""
    n = jnp.maximum(count, 1).astype(v.dtype)
    # Rounding can carry the mean just past the values, and past the float
    # type's largest; it never lies outside them.
    mean = jnp.clip(found.total / n, found.low, found.high)
    variance = found.squares / n - jnp.square(mean - found.pivot)
    ill = jnp.square(mean - found.pivot) > ILL_CONDITIONED * jnp.maximum(variance, 0.0)

    def centred(values: jax.Array, counted: jax.Array | None) -> jax.Array:
        """Each value's mean square deviation from its mean, over the elements ``counted``."""
        deviations = jnp.square(values - segments.spread(mean))
        return segments.sum(deviations if counted is None else jnp.where(counted, deviations, 0.0)) / n

    if quick:
        # For values the fast pass took, the centred sum needs neither the
        # finite mask nor the scaling, and is the same sum. Made for every
        # value rather than under a cond, the quick program compiles in a
        # third less time, and runs a pass over the table longer.
        variance = jnp.where(ill, centred(v, segments.inside), variance)
    else:
        variance = jax.lax.cond(
            segments.any(ill),
            lambda: jnp.where(
                ill, centred(scaled(v, segments.spread(found.e)), _finite(v, segments)), variance
            ),
            lambda: variance,
        )
    # Likewise the std, which for any values is at most half their range.
    std = jnp.minimum(jnp.sqrt(jnp.maximum(variance, 0.0)), (found.high - found.low) / 2)
    if not quick:  # the fast pass leaves its values unscaled
        mean, std = unscaled(mean, found.e), unscaled(std, found.e)
    # A constant is its own mean, even one too small for the units it was
    # summed in (its padded edges set them).
    mean = jnp.where(order_key(found.lo) == order_key(found.hi), found.lo, mean)
    return mean, std


class _Whole:
    """One array, every element of it the value's: the :class:`~jaxcapture_nb.stats.passes.Segments` of :func:`summarize`."""

    inside = None

    def min(self, x: jax.Array, initial: jax.Array) -> jax.Array:
        return jnp.min(x, initial=initial)

    def max(self, x: jax.Array, initial: jax.Array) -> jax.Array:
        return jnp.max(x, initial=initial)

    def sum(self, x: jax.Array) -> jax.Array:
        return jnp.sum(x)

    def spread(self, per_value: jax.Array) -> jax.Array:
        return per_value

    def slots(self, index: jax.Array, bins: int) -> jax.Array:
        return bin_counts(index, bins + SLOTS)

    def any(self, flags: jax.Array) -> jax.Array:
        return flags


WHOLE = _Whole()
