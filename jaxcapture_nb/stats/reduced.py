"""Statistics computed on the device beside the pass's: each one entry of the schema with a ``reduce``.

A summary holds the statistics the pass finds (min, max, mean, std and the
histogram's range), then one column per reduced statistic of
:data:`~jaxcapture_nb.stats.schema.STATS`, in its order. Each is the mean over
a value's finite elements of what its ``reduce`` gives for each element, so
the summary of one array and the rows of a table (:mod:`jaxcapture_nb.stats.passes`)
compute it alike, and slices pool it by their counts, as they pool the mean.

The programs that summarize read the reduced statistics as they are traced.
Those this package compiles take :func:`statistics_key` as one more static
argument (:func:`keyed_jit`), so that a statistic added to the schema makes
them trace again, and the programs kept on disk are told apart by it.

Example:
  >>> import jax.numpy as jnp
  >>> from jaxcapture_nb import register_statistic, remove_statistic, summarize
  >>> big = register_statistic("big_pct", "|x| > 1 %", reduce=lambda v: 100.0 * (jnp.abs(v) > 1))
  >>> summarize(jnp.array([0.5, -2.0, 3.0, jnp.nan])).stats.shape
  (7,)
  >>> remove_statistic("big_pct")
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from jaxcapture_nb.stats import schema

# The statistics the pass finds, in the order of a summary's ``stats``
# columns; the reduced ones follow them.
PASS_FIELDS = ("min", "max", "mean", "std", "lo", "hi")


def float_fields() -> tuple[str, ...]:
    """The columns of a summary's ``stats``: :data:`PASS_FIELDS`, then the schema's reduced statistics.

    Example:
      >>> float_fields()
      ('min', 'max', 'mean', 'std', 'lo', 'hi')
    """
    return (*PASS_FIELDS, *(s.key for s in schema.reduced_stats()))


# The histogram's range, which the pass finds beside the statistics of the values.
RANGE_EDGES = ("lo", "hi")


def value_fields() -> tuple[str, ...]:
    """The columns of :func:`float_fields` that describe the values themselves: all but the histogram's range edges.

    Example:
      >>> value_fields()
      ('min', 'max', 'mean', 'std')
    """
    return tuple(k for k in float_fields() if k not in RANGE_EDGES)


def reduced_means(
    v: jax.Array,
    finite: jax.Array | None,
    count: jax.Array,
    sum_per_value: Callable[[jax.Array], jax.Array],
    dtype: Any,
) -> list[jax.Array]:
    """Each reduced statistic of the values whose elements are ``v``, per value, in ``dtype``.

    Args:
      v: the values' elements.
      finite: which elements count (finite, and a value's); None for all.
      count: each value's number of counted elements.
      sum_per_value: each value's sum of an array shaped as ``v``.
      dtype: the float type of the statistics.
    """
    n = jnp.maximum(count, 1).astype(dtype)
    means = []
    for stat in schema.reduced_stats():
        assert stat.reduce is not None  # reduced_stats holds only those
        per_element = jnp.asarray(stat.reduce(v)).astype(dtype)
        counted = per_element if finite is None else jnp.where(finite, per_element, 0)
        means.append(sum_per_value(counted) / n)
    return means


def statistics_key() -> tuple[tuple[str, str], ...]:
    """What a program that summarizes depends on beyond its arguments: each reduced statistic's key and code.

    The same in every process for the same code, so that programs kept on
    disk stay valid; a ``reduce`` with a closure is told apart by its
    identity instead, which only this process shares.

    Example:
      >>> statistics_key()
      ()
    """
    return tuple((s.key, _code_digest(s.reduce)) for s in schema.reduced_stats())


def _code_digest(reduce: Any) -> str:
    code = getattr(reduce, "__code__", None)
    if code is None or getattr(reduce, "__closure__", None):
        return f"{type(reduce).__qualname__} at {id(reduce):#x}"
    described = code.co_code + repr((code.co_consts, code.co_names)).encode()
    return hashlib.sha256(described).hexdigest()[:16]


def keyed_jit(fn: Callable[..., Any], static_argnames: tuple[str, ...]) -> Any:
    """``jax.jit(fn, static_argnames=...)``, traced again for each :func:`statistics_key`.

    ``fn`` reads the reduced statistics as it is traced; the key is one more
    static argument, ``statistics``, which the call fills in. The compiled
    function itself is ``.jitted``, whose ``lower`` takes the key.
    """

    def keyed(*args: Any, statistics: tuple[tuple[str, str], ...], **kwargs: Any) -> Any:
        del statistics  # a cache key: the trace reads the statistics from the schema
        return fn(*args, **kwargs)

    # Named as ``fn`` in JAX's logs and profiles (not wrapped: JAX would
    # then read ``fn``'s signature, which has no ``statistics``).
    keyed.__name__, keyed.__qualname__ = fn.__name__, fn.__qualname__
    jitted = jax.jit(keyed, static_argnames=(*static_argnames, "statistics"))

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        return jitted(*args, statistics=statistics_key(), **kwargs)

    call.jitted = jitted  # type: ignore[attr-defined]
    return call
