"""Exact float32 arithmetic at the ends of its range, for the summaries' careful pass.

XLA on a CPU runs with subnormal floats flushed to zero: arithmetic and
comparisons read a subnormal input as zero and write a subnormal result as
zero. So the smallest values, which most need scaling up, cannot be scaled
by multiplying them. These helpers read such values from their bits instead,
and scale by powers of two, which is exact for every normal result.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

# Bits of a float32: sign, 8 exponent bits, 23 mantissa bits.
_SIGN = np.int32(-(2**31))
_MAGNITUDE = np.int32(0x7FFFFFFF)
_MANTISSA = np.int32(0x7FFFFF)
INF_BITS = np.int32(0x7F800000)
SMALLEST_NORMAL = np.float32(2.0**-126)
_SMALLEST_NORMAL_BITS = np.int32(1 << 23)
# Scales are powers of two 2**e with e in this range, so both 2**e and 2**-e
# are normal floats.
_MAX_EXPONENT = 126


def bits(x: jax.Array) -> jax.Array:
    """The bits of float32 ``x`` as int32."""
    return jax.lax.bitcast_convert_type(x, jnp.int32)


def magnitude_bits(x: jax.Array) -> jax.Array:
    """The bits of ``|x|``, which order non-negative floats as integers do; above ``INF_BITS`` is NaN."""
    return bits(x) & _MAGNITUDE


def is_zero(x: jax.Array) -> jax.Array:
    """Whether float32 ``x`` is 0 or -0, subnormal values being nonzero.

    The mantissa and the exponent are tested apart: LLVM turns a test of all
    the magnitude's bits against zero back into a float comparison, which a
    CPU that flushes subnormals answers with True for them.

    Example:
      >>> is_zero(jnp.array([0.0, -0.0, 1e-45, 1.0])).tolist()
      [True, True, False, False]
    """
    magnitude = magnitude_bits(x)
    return ((magnitude & _MANTISSA) | (magnitude >> 23)) == 0


def order_key(x: jax.Array) -> jax.Array:
    """An int32 that orders float32 values as numbers, subnormals included; -0 and 0 alike.

    Example:
      >>> x = jnp.array([-1.0, -0.0, 0.0, 1e-45, 3e-45, jnp.inf])
      >>> order_key(x).tolist()
      [-1065353216, 0, 0, 1, 2, 2139095040]
    """
    magnitude = magnitude_bits(x)
    return jnp.where(bits(x) < 0, -magnitude, magnitude)


def from_order_key(key: jax.Array) -> jax.Array:
    """The float32 whose :func:`order_key` is ``key`` (zero as +0)."""
    return jax.lax.bitcast_convert_type(jnp.where(key < 0, -key | _SIGN, key), jnp.float32)


def power_of_two(e: jax.Array) -> jax.Array:
    """``2.0**e`` as float32, for int32 ``e`` from -126 to 127 (clipped to that range)."""
    return jax.lax.bitcast_convert_type(jnp.clip(e + 127, 1, 254) << 23, jnp.float32)


def scale_exponent(magnitude: jax.Array) -> jax.Array:
    """The ``e`` for which ``magnitude * 2**-e`` lies in ``[1, 4)``, or above 2**-23 for a subnormal one.

    ``magnitude`` is given as :func:`magnitude_bits`.
    """
    return jnp.clip((magnitude >> 23) - 127, -_MAX_EXPONENT, _MAX_EXPONENT)


def scaled(x: jax.Array, e: jax.Array) -> jax.Array:
    """``x * 2**-e`` for float32 ``x``, exact wherever the result is a normal float.

    A result below the smallest normal float is zero, as float arithmetic on a
    CPU would make it. Infinities and NaNs give meaningless finite values.

    Example:
      >>> scaled(jnp.array([1e-45, -3.0, 0.0]), jnp.int32(-126)).tolist()
      [1.1920928955078125e-07, -2.5521177519070385e+38, 0.0]
    """
    normal = x * power_of_two(-e)
    # A subnormal x is its mantissa times 2**-149; the two factors keep each
    # power of two normal, and the first product is at least 2**-23.
    mantissa = (bits(x) & _MANTISSA).astype(jnp.float32)
    subnormal = mantissa * power_of_two(jnp.maximum(-e - 23, -126)) * power_of_two(jnp.int32(-126))
    subnormal = jnp.where(bits(x) < 0, -subnormal, subnormal)
    return jnp.where(magnitude_bits(x) < _SMALLEST_NORMAL_BITS, subnormal, normal)


def unscaled(x: jax.Array, e: jax.Array) -> jax.Array:
    """``x * 2**e``, rounded to the nearest float32 even where that is subnormal.

    Example:
      >>> float(unscaled(jnp.float32(0.75), jnp.int32(-126))) == 0.75 * 2.0**-126
      True
    """
    exact = x * power_of_two(e)
    # x * 2**(e + 149) counts the smallest subnormals in the result. Of the
    # two factors, the first keeps 2**(e + 85) normal for every e < 0, and a
    # product that flushes to zero on the way would round to zero anyway.
    units = jnp.round(jnp.abs(x) * power_of_two(e + 85) * power_of_two(jnp.int32(64)))
    units = jnp.minimum(units, 2.0**23).astype(jnp.int32)
    tiny = jax.lax.bitcast_convert_type(units | (bits(x) & _SIGN), jnp.float32)
    return jnp.where(jnp.abs(exact) < SMALLEST_NORMAL, tiny, exact)
