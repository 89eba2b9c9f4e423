"""What a patch puts in place of a value: a Replacement, and the ablations and steering that make one.

A replacement is a function of the value it replaces, with arrays of its
own as operands, so that one compiled step serves every replacement of the
same kind: the operands are arguments of the step, not constants in it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


class Replacement:
    """What a patched site's value becomes: ``fn(value, *operands)``.

    ``fn`` is static (part of what a compiled step is traced for); the
    ``operands`` are arrays, which a compiled step takes as arguments. Make
    one with :func:`zero_ablation`, :func:`mean_ablation`,
    :func:`resample_ablation` or :func:`steering`, or give :func:`patch` an
    array or a function.
    """

    __slots__ = ("fn", "operands", "sliced")

    def __init__(self, fn: Callable[..., Any], operands: tuple[Any, ...] = (), sliced: bool = False):
        self.fn, self.operands, self.sliced = fn, tuple(jnp.asarray(op) for op in operands), sliced

    def __repr__(self) -> str:
        return f"Replacement({getattr(self.fn, '__name__', self.fn)}, {len(self.operands)} arrays)"


def _put(value: Any, replacement: Any) -> Any:
    return replacement


def _zeros(value: Any) -> Any:
    return jnp.zeros_like(value)


def _batch_mean(value: Any, axis: int) -> Any:
    return jnp.broadcast_to(jnp.mean(value, axis=axis, keepdims=True), value.shape)


def _added(value: Any, vector: Any, scale: Any) -> Any:
    return value + jnp.broadcast_to(scale * vector, value.shape)


def as_replacement(replacement: Any) -> Replacement:
    """A :class:`Replacement` of an array (broadcast to the value), a function of the value, or itself.

    Example:
      >>> as_replacement(0.0), as_replacement(lambda v: -v).operands
      (Replacement(_put, 1 arrays), ())
    """
    if isinstance(replacement, Replacement):
        return replacement
    if callable(replacement) and not isinstance(replacement, jax.Array):
        return Replacement(replacement)
    try:
        array = jnp.asarray(replacement)
    except TypeError:
        raise TypeError(
            "a replacement is an array, a function of the site's value, or a Replacement "
            f"(zero_ablation(), mean_ablation(...), resample_ablation(...), steering(...)); got {type(replacement).__name__}"
        ) from None
    return Replacement(_put, (array,), sliced=True)


def zero_ablation() -> Replacement:
    """Replaces a site's value with zeros.

    Example:
      >>> zero_ablation().fn(jnp.ones(2)).tolist()
      [0.0, 0.0]
    """
    return Replacement(_zeros)


def mean_ablation(values: Any = None, axis: int = 0) -> Replacement:
    """Replaces a site's value with a mean: of ``values`` (another run's, as a capture kept them), or of the value itself.

    Args:
      values: the site's values over a reference batch; None takes the mean
        of the patched value over ``axis`` (the batch it runs on).
      axis: the batch axis the mean is taken over.

    Example:
      >>> r = mean_ablation()
      >>> r.fn(jnp.array([[1.0], [3.0]]), *r.operands).tolist()
      [[2.0], [2.0]]
    """
    if values is None:
        return Replacement(functools.partial(_batch_mean, axis=axis))
    return Replacement(_put, (jnp.mean(jnp.asarray(values), axis=axis, keepdims=True),))


def resample_ablation(values: Any, seed: int = 0, axis: int = 0) -> Replacement:
    """Replaces a site's value with its value on other inputs: ``values`` shuffled along the batch ``axis``.

    Example:
      >>> r = resample_ablation(jnp.arange(4.0), seed=1)
      >>> sorted(r.operands[0].tolist())
      [0.0, 1.0, 2.0, 3.0]
    """
    values = jnp.asarray(values)
    order = np.random.default_rng(seed).permutation(values.shape[axis])
    return Replacement(_put, (jnp.take(values, jnp.asarray(order), axis=axis),), sliced=True)


def steering(vector: Any, scale: float = 1.0) -> Replacement:
    """Adds ``scale * vector`` to a site's value (broadcast along its leading axes).

    A new ``scale`` or ``vector`` of the same shape reuses a compiled step.

    Example:
      >>> r = steering(jnp.array([1.0, 0.0]), scale=2.0)
      >>> r.fn(jnp.zeros((1, 2)), *r.operands).tolist()
      [[2.0, 0.0]]
    """
    return Replacement(_added, (vector, scale))
