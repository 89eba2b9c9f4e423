"""Exact summaries of 64-bit integers: every int64 and uint64 value counted in its own bin.

A float64 cannot hold every 64-bit integer, so the bin of each value is
found from the integer itself, split into two exact halves, and compared
without rounding.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from jaxcapture_nb.stats.bins import SLOTS, ZERO, Found, edges
from jaxcapture_nb.stats.histogram import bin_counts
from jaxcapture_nb.stats.passes import (
    WHOLE,
    counted,
    moments,
    stats_row,
)
from jaxcapture_nb.stats.reduced import reduced_means


def summarize_integers(x: jax.Array, bins: int) -> tuple[jax.Array, jax.Array]:
    """The ``stats`` (float64) and ``counts`` of a non-empty int64 or uint64 array.

    float64 holds integers exactly only up to 2**53, so the values are read
    as offsets from their minimum, ``x - min``, exact as uint64: the mean,
    std and histogram are those of the offsets, and a narrow range of large
    integers keeps its spread (float64 itself would round ``2**62 + 1`` and
    ``2**62 + 100`` to the same number).

    The histogram is exact for the integers as they are. Bin ``k`` holds the
    values with ``k <= (x - min) * bins / (max - min) < k + 1`` (the last bin
    also ``x = max``): equal-width bins between the exact integer minimum
    and maximum, as ``np.histogram(x, bins, range=(min, max))`` would draw
    them with edges in exact arithmetic. Each bin is estimated in float64
    and corrected by comparing both sides as exact 96-bit products, so a
    value on an edge counts in the bin above it, however large. The
    summary's ``min``, ``max``, ``lo`` and ``hi`` are float64, so beyond
    2**53 they, and :attr:`Summary.edges`, are the nearest float64 to the
    exact values; the counts stay those of the exact edges. A constant array
    has padded edges, as a float one has, and its values in bin ``bins // 2``.
    """
    lo, hi = jnp.min(x), jnp.max(x)
    # Two's complement: a difference modulo 2**64 is exact as a uint64.
    as_unsigned = functools.partial(jax.lax.bitcast_convert_type, new_dtype=jnp.uint64)
    offsets = as_unsigned(x) - as_unsigned(lo)
    spread = as_unsigned(hi) - as_unsigned(lo)
    u, width = offsets.astype(jnp.float64), spread.astype(jnp.float64)
    index = jnp.where(spread == 0, bins // 2, _exact_bin(offsets, u, spread, width, bins))
    slots = bin_counts(jnp.where(x == 0, bins + ZERO, index.astype(jnp.int32)), bins + SLOTS)
    zero_offset = as_unsigned(jnp.zeros((), x.dtype)) - as_unsigned(lo)
    zero_bin = jnp.where(
        spread == 0, bins // 2, _exact_bin(zero_offset, zero_offset.astype(jnp.float64), spread, width, bins)
    )
    slots = slots.at[zero_bin.astype(jnp.int32)].add(slots[bins + ZERO])

    low, high = lo.astype(jnp.float64), hi.astype(jnp.float64)
    padded_lo, padded_hi = edges(low, low)
    lo_edge = jnp.where(spread == 0, padded_lo, low)
    hi_edge = jnp.where(spread == 0, padded_hi, high)
    pivot = width / 2
    zero = jnp.zeros((), jnp.float64)
    found = Found(
        lo=zero,
        hi=width,
        lo_edge=lo_edge,
        hi_edge=hi_edge,
        e=jnp.int32(0),
        low=zero,
        high=width,
        total=jnp.sum(u),
        squares=jnp.sum(jnp.square(u - pivot)),
        pivot=pivot,
        slots=slots,
    )
    count, counts = counted(slots, x.size, bins)
    offset_mean, std = moments(u, found, count, WHOLE)
    mean = jnp.clip(low + offset_mean, low, high)
    reduced = reduced_means(x, None, count, WHOLE.sum, jnp.float64)
    return stats_row([low, high, mean, std, lo_edge, hi_edge], reduced, count, jnp.float64), counts


def _exact_bin(offset: jax.Array, u: jax.Array, spread: jax.Array, width: jax.Array, bins: int) -> jax.Array:
    """``floor(offset * bins / spread)``, at most ``bins - 1``, exact for uint64 ``offset <= spread``.

    ``u`` and ``width`` are ``offset`` and ``spread`` rounded to float64. The
    float64 estimate is off by less than ``bins * 2**-50`` of a bin, so at
    most by one bin, which two exact comparisons put right. (uint64 needs
    ``jax_enable_x64``; tests/test_x64.py checks this on values at edges.)
    """
    target = _exact_product(offset, jnp.uint64(bins))
    guess = jnp.clip(jnp.floor(u * (bins / jnp.maximum(width, 1.0))), 0, bins - 1).astype(jnp.uint64)
    k = jnp.where(_at_most(_exact_product(spread, guess), target), guess, guess - 1)
    up = k + 1
    return jnp.where((up < bins) & _at_most(_exact_product(spread, up), target), up, k)


def _exact_product(a: jax.Array, m: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``a * m`` for uint64 ``a`` and ``m < 2**31``, exact, as ``(high, low)``: ``high * 2**32 + low``."""
    low = (a & 0xFFFFFFFF) * m
    return (a >> 32) * m + (low >> 32), low & 0xFFFFFFFF


def _at_most(a: tuple[jax.Array, jax.Array], b: tuple[jax.Array, jax.Array]) -> jax.Array:
    """Whether the product ``a`` of :func:`_exact_product` is at most ``b``."""
    return (a[0] < b[0]) | ((a[0] == b[0]) & (a[1] <= b[1]))
