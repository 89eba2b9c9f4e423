"""The arithmetic every summary shares: histogram edges, bin indices and numerical thresholds.

:mod:`jaxcapture_nb.stats.summary` summarizes one array at a time and
:mod:`jaxcapture_nb.stats.batch` many at once; both find edges and bins with these
element-wise functions, so a value's summary is the same either way.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxcapture_nb.stats.float32 import float_format, inf_bits, is_zero, magnitude_bits, order_key


def edges(lo: jax.Array, hi: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Histogram range; an empty or constant array still gets a visible bar.

    Distinct ``lo`` and ``hi`` are the edges as they are, subnormal ones
    included (they are compared by their bits, which a CPU does not flush to
    zero). A constant's padded edges stay within its float type.

    Example:
      >>> [float(e) for e in edges(jnp.float32(3.4e38), jnp.float32(3.4e38))]
      [3.396600011822504e+38, 3.4028234663852886e+38]
    """
    empty = lo > hi
    spread = order_key(hi) > order_key(lo)
    lo0, hi0 = jnp.where(empty, 0.0, lo), jnp.where(empty, 0.0, hi)
    pad = jnp.maximum(jnp.abs(lo0) * 1e-3, 0.5)
    largest = np.finfo(lo.dtype).max
    return (
        jnp.where(spread, lo, jnp.maximum(lo0 - pad, -largest)),
        jnp.where(spread, hi, jnp.minimum(hi0 + pad, largest)),
    )


# Slots after the ``bins`` histogram bins. Counting zeros, NaNs and infinities
# in the histogram's own scatter is free, where a compare-and-count pass per
# kind would cost more than the whole histogram.
ZERO, NAN, POSINF, NEGINF = range(4)
SLOTS = 4


def index_all_finite(v: jax.Array, lo: jax.Array, scale: jax.Array, bins: int) -> jax.Array:
    """The bin of every value of an all-finite array, or the zero slot.

    ``(v - lo) * scale`` lies in ``[0, bins]``. Adding ``2**p``, the power of
    two at or above ``bins``, moves its integer part into the top ``p`` bits
    of the mantissa, so the bin is a subtraction and a shift of the float's
    bits. ``floor`` and a float-to-int conversion, which XLA guards against
    NaN and overflow, took a third more time in a training step. The sum
    rounds to a multiple of ``2**(p - 23)``, so a value less than that part
    of a bin below an edge (1/131072 of a bin, for 64 bins) counts in the
    bin above, as rounding in ``(v - lo) * scale`` already makes values near
    the top of the range do; for a float64 that part is 2**29 times smaller.
    Zeros are told apart by their bits: a CPU compares a subnormal value as
    equal to zero.

    Example:
      >>> index_all_finite(jnp.array([-1.0, 0.0, 0.49, 0.5, 1.0]), -1.0, 2.0, 4).tolist()
      [0, 4, 2, 3, 3]
    """
    f = float_format(v.dtype)
    p = (bins - 1).bit_length()  # at most 16, as bins <= MAX_BINS
    power = jnp.asarray(2**p, v.dtype)
    bits = jax.lax.bitcast_convert_type((v - lo) * scale + power, f.bits)
    offset = bits - jax.lax.bitcast_convert_type(power, f.bits)
    index = jnp.minimum(jax.lax.shift_right_logical(offset, f.bits.type(f.mantissa - p)), bins - 1)
    return jnp.where(is_zero(v), bins + ZERO, index.astype(jnp.int32))


def index_careful(v: jax.Array, u: jax.Array, lo: jax.Array, scale: jax.Array, bins: int) -> jax.Array:
    """The bin or slot of every value of ``v``, from ``u``, its values in the scaled units of ``lo``."""
    index = jnp.clip(jnp.floor((u - lo) * scale), 0, bins - 1).astype(jnp.int32)
    magnitude = magnitude_bits(v)
    index = jnp.where(is_zero(v), bins + ZERO, index)
    index = jnp.where(magnitude > inf_bits(v), bins + NAN, index)
    infinity = jnp.where(v > 0, bins + POSINF, bins + NEGINF)
    return jnp.where(magnitude == inf_bits(v), infinity, index)


# Below this magnitude the squares of an array's values, and of their
# deviations from the mean, would fall among the subnormals, and on a CPU to
# zero (JAX flushes subnormals to zero there by design:
# https://github.com/jax-ml/jax/issues/16200): about a quarter of the float
# type's exponent range below 1.
TINY = {np.dtype(np.float32): np.float32(2.0**-32), np.dtype(np.float64): np.float64(2.0**-256)}


def fast_pass_holds(
    lo: jax.Array, hi: jax.Array, lo_edge: jax.Array, hi_edge: jax.Array, total: jax.Array, squares: jax.Array
) -> jax.Array:
    """Whether the fast pass is exact for values with these reductions; else the careful pass follows.

    It holds for values all finite (their sums are), with finite edges, and
    of ordinary magnitude (see :data:`TINY`) or all equal. Elementwise: one
    answer per value of a table.

    Example:
      >>> one = jnp.float32(1.0)
      >>> bool(fast_pass_holds(-one, one, -one, one, 0 * one, 2 * one))
      True
      >>> bool(fast_pass_holds(-one, one, -one, one, jnp.float32(jnp.nan), 2 * one))
      False
    """
    ordinary = jnp.maximum(-lo, hi) >= TINY[np.dtype(lo.dtype)]
    return (
        jnp.isfinite(total)
        & jnp.isfinite(squares)
        & jnp.isfinite(hi_edge - lo_edge)
        & (lo <= hi)
        & (ordinary | (lo == hi))
    )


# The one-pass variance E[(v - pivot)^2] - (mean - pivot)^2 loses precision
# in proportion to (mean - pivot)^2 / variance. Below this ratio its float32
# std stayed within 3.5e-6 of float64's over normal, uniform and exponential
# samples of 10 to a million values (a ratio of 1000 allowed 1.4e-4), and
# a float64 std within 1e-14 of exact; above it the centred pass runs.
ILL_CONDITIONED = 16.0


class Found(NamedTuple):
    """What a pass over an array finds: everything its statistics need.

    A pass over a table of many values finds the same, one entry per value.

    ``low``, ``high``, ``total``, ``squares`` and ``pivot`` are in units of
    ``2**e`` (``e``, an int32, is 0 after the fast pass); the rest as the
    values are. The floats have the values' type.
    ``slots`` has each zero counted both in its bin and in the zero slot.
    """

    lo: jax.Array
    hi: jax.Array
    lo_edge: jax.Array
    hi_edge: jax.Array
    e: jax.Array
    low: jax.Array
    high: jax.Array
    total: jax.Array
    squares: jax.Array
    pivot: jax.Array
    slots: jax.Array
