"""Exact float arithmetic at the ends of the range, for the summaries' careful pass.

The helpers read a float's bits, so each works on float32 and, for 64-bit
values (with ``jax_enable_x64``), on float64, in the format of its argument.

XLA on a CPU runs with subnormal floats flushed to zero: arithmetic and
comparisons read a subnormal input as zero and write a subnormal result as
zero. So the smallest values, which most need scaling up, cannot be scaled
by multiplying them. These helpers read such values from their bits instead,
and scale by powers of two, which is exact for every normal result.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


class _Format(NamedTuple):
    """The bit layout of a float format: sign, exponent bits, ``mantissa`` bits."""

    bits: Any  # the signed integer type of the same width
    mantissa: int
    bias: int

    @property
    def sign(self) -> Any:
        return self.bits.type(np.iinfo(self.bits).min)

    @property
    def magnitude(self) -> Any:
        return self.bits.type(np.iinfo(self.bits).max)

    @property
    def mantissa_mask(self) -> Any:
        return self.bits.type((1 << self.mantissa) - 1)

    @property
    def inf(self) -> Any:
        return self.bits.type((2 * self.bias + 1) << self.mantissa)

    @property
    def max_exponent(self) -> int:
        """Scales are powers of two 2**e with ``|e|`` up to this, so both 2**e and 2**-e are normal."""
        return self.bias - 1


_FORMATS = {
    np.dtype(np.float32): _Format(np.dtype(np.int32), 23, 127),
    np.dtype(np.float64): _Format(np.dtype(np.int64), 52, 1023),
}
# Bits of a float32: sign, 8 exponent bits, 23 mantissa bits.
INF_BITS = _FORMATS[np.dtype(np.float32)].inf
SMALLEST_NORMAL = np.float32(2.0**-126)


def float_format(dtype: Any) -> _Format:
    """The bit layout of float32 or float64."""
    return _FORMATS[np.dtype(dtype)]


def inf_bits(x: jax.Array) -> Any:
    """The :func:`magnitude_bits` of an infinity of ``x``'s dtype: finite values have fewer, NaNs more."""
    return float_format(x.dtype).inf


def bits(x: jax.Array) -> jax.Array:
    """The bits of float ``x`` as a signed integer of the same width."""
    return jax.lax.bitcast_convert_type(x, float_format(x.dtype).bits)


def magnitude_bits(x: jax.Array) -> jax.Array:
    """The bits of ``|x|``, which order non-negative floats as integers do; above :func:`inf_bits` is NaN."""
    return bits(x) & float_format(x.dtype).magnitude


def is_zero(x: jax.Array) -> jax.Array:
    """Whether float ``x`` is 0 or -0, subnormal values being nonzero.

    The mantissa and the exponent are tested apart: LLVM turns a test of all
    the magnitude's bits against zero back into a float comparison, which a
    CPU that flushes subnormals answers with True for them.

    Example:
      >>> is_zero(jnp.array([0.0, -0.0, 1e-45, 1.0])).tolist()
      [True, True, False, False]
    """
    f = float_format(x.dtype)
    magnitude = magnitude_bits(x)
    return ((magnitude & f.mantissa_mask) | (magnitude >> f.mantissa)) == 0


def order_key(x: jax.Array) -> jax.Array:
    """An integer that orders float values as numbers, subnormals included; -0 and 0 alike.

    Example:
      >>> x = jnp.array([-1.0, -0.0, 0.0, 1e-45, 3e-45, jnp.inf])
      >>> order_key(x).tolist()
      [-1065353216, 0, 0, 1, 2, 2139095040]
    """
    magnitude = magnitude_bits(x)
    return jnp.where(bits(x) < 0, -magnitude, magnitude)


def from_order_key(key: jax.Array, dtype: Any = jnp.float32) -> jax.Array:
    """The float of ``dtype`` whose :func:`order_key` is ``key`` (zero as +0)."""
    f = float_format(dtype)
    return jax.lax.bitcast_convert_type(jnp.where(key < 0, -key | f.sign, key), dtype)


def power_of_two(e: jax.Array, dtype: Any = jnp.float32) -> jax.Array:
    """``2.0**e`` as a float of ``dtype``, for integer ``e`` with a normal result (clipped to those)."""
    f = float_format(dtype)
    biased = jnp.clip(e + f.bias, 1, 2 * f.bias).astype(f.bits)
    return jax.lax.bitcast_convert_type(biased << f.mantissa, dtype)


def scale_exponent(magnitude: jax.Array) -> jax.Array:
    """The int32 ``e`` for which ``magnitude * 2**-e`` lies in ``[1, 4)``, or above ``2**-mantissa`` for a subnormal one.

    ``magnitude`` is given as :func:`magnitude_bits` (int32 for a float32, int64 for a float64).
    """
    f = _FORMATS[np.dtype(np.float64 if magnitude.dtype == np.int64 else np.float32)]
    e = ((magnitude >> f.mantissa) - f.bias).astype(jnp.int32)
    return jnp.clip(e, -f.max_exponent, f.max_exponent)


def scaled(x: jax.Array, e: jax.Array) -> jax.Array:
    """``x * 2**-e`` for float ``x``, exact wherever the result is a normal float.

    A result below the smallest normal float is zero, as float arithmetic on a
    CPU would make it. Infinities and NaNs give meaningless finite values.

    Example:
      >>> scaled(jnp.array([1e-45, -3.0, 0.0]), jnp.int32(-126)).tolist()
      [1.1920928955078125e-07, -2.5521177519070385e+38, 0.0]
    """
    f = float_format(x.dtype)
    normal = x * power_of_two(-e, x.dtype)
    # A subnormal x is its mantissa times 2**-(max_exponent + mantissa); the
    # two factors keep each power of two normal, and the first product is at
    # least 2**-mantissa.
    mantissa = (bits(x) & f.mantissa_mask).astype(x.dtype)
    first = power_of_two(jnp.maximum(-e - f.mantissa, -f.max_exponent), x.dtype)
    subnormal = mantissa * first * power_of_two(jnp.int32(-f.max_exponent), x.dtype)
    subnormal = jnp.where(bits(x) < 0, -subnormal, subnormal)
    smallest_normal_bits = f.bits.type(1 << f.mantissa)
    return jnp.where(magnitude_bits(x) < smallest_normal_bits, subnormal, normal)


def unscaled(x: jax.Array, e: jax.Array) -> jax.Array:
    """``x * 2**e``, rounded to the nearest float of ``x``'s dtype even where that is subnormal.

    Example:
      >>> float(unscaled(jnp.float32(0.75), jnp.int32(-126))) == 0.75 * 2.0**-126
      True
    """
    f = float_format(x.dtype)
    exact = x * power_of_two(e, x.dtype)
    # x * 2**(e + max_exponent + mantissa) counts the smallest subnormals in
    # the result. Of the two factors, the first (2**(e + 85) for a float32)
    # stays normal for every e < 0, and a product that flushes to zero on
    # the way would round to zero anyway.
    first = power_of_two(e + (f.max_exponent + f.mantissa - 64), x.dtype)
    units = jnp.round(jnp.abs(x) * first * power_of_two(jnp.int32(64), x.dtype))
    units = jnp.minimum(units, 2.0**f.mantissa).astype(f.bits)
    tiny = jax.lax.bitcast_convert_type(units | (bits(x) & f.sign), x.dtype)
    smallest_normal = np.finfo(x.dtype).smallest_normal
    return jnp.where(jnp.abs(exact) < smallest_normal, tiny, exact)
