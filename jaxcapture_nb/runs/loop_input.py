"""What the training loop hands :meth:`Stream.log` and :meth:`Stream.update`, checked as it is handed over.

A value that cannot be recorded would only fail when the settling thread
reads it, after the loop has moved on, so it is refused here, with the
loop's call still on the stack.
"""

from __future__ import annotations

import numbers
import operator
from typing import Any

import jax
import numpy as np
from flax import nnx

from jaxcapture_nb.core.names import quoted
from jaxcapture_nb.stats.summary import Summary


def step_number(step: Any, method: str) -> int:
    """``step`` as an int, checked where the loop hands it over rather than when it is drawn.

    Example:
      >>> step_number(np.int64(3), "log")
      3
    """
    try:
        return operator.index(step)
    except TypeError:
        raise TypeError(
            f"{method}(): step is the training step, a whole number; got {type(step).__name__} {quoted(step)}"
        ) from None


def checked_scalar(name: str, value: Any) -> Any:
    """``value`` if it is a scalar :meth:`Stream.log` can record: a real number, or an array of them.

    An array of several numbers is logged as their mean. Anything else
    would only fail when the background thread reads it, after the loop
    has moved on, so it is refused here.

    Raises:
      TypeError: naming the scalar and what it is.
    """
    if isinstance(value, numbers.Real):
        return value
    if isinstance(value, jax.Array | np.ndarray):
        dtype = value.dtype
        real = jax.dtypes.issubdtype(dtype, np.bool_) or (
            jax.dtypes.issubdtype(dtype, np.number) and not jax.dtypes.issubdtype(dtype, np.complexfloating)
        )
        if real and value.size:
            return value
        what = f"a {type(value).__name__} of dtype {dtype} and shape {tuple(value.shape)}"
    else:
        what = f"a {type(value).__name__}: {quoted(value)}"
    raise TypeError(
        f"log(): the scalar {name!r} takes a number or an array of real numbers (a jax loss is fine), got {what}"
    )


def check_summaries(summaries: Any, leaves: list[Any]) -> None:
    """Refuses ``update()`` summaries with a leaf that is neither a :class:`Summary` nor an array.

    Raises:
      TypeError: naming the first such leaf.
    """
    if all(isinstance(v, Summary | jax.Array | np.ndarray) for v in leaves):
        return
    paths = jax.tree_util.tree_flatten_with_path(summaries, is_leaf=lambda x: isinstance(x, Summary))[0]
    where, bad = next((k, v) for k, v in paths if not isinstance(v, Summary | jax.Array | np.ndarray))
    place = f"its leaf {jax.tree_util.keystr(where)} is" if where else "got"
    raise TypeError(
        "update(): summaries must be a pytree of Summary from summarize() (or of arrays, summarized here); "
        f"{place} a {type(bad).__name__}: {quoted(bad)}"
    )


def first_step(start_step: Any) -> int:
    """The number of a watch's first training step: ``start_step`` itself, or an ``nnx.Optimizer``'s count.

    Raises:
      ValueError: ``start_step`` is neither a whole number of steps (0 or
        more) nor an ``nnx.Optimizer``.

    Example:
      >>> first_step(0), first_step(1200)
      (0, 1200)
    """
    if isinstance(start_step, nnx.Optimizer):
        # The optimizer counts the updates it made: a run restored from a
        # checkpoint goes on from the step it was saved at.
        return int(start_step.step[...])
    if isinstance(start_step, bool) or not isinstance(start_step, int) or start_step < 0:
        raise ValueError(
            f"start_step must be a whole number of steps, 0 or more, or the nnx.Optimizer whose count the "
            f"run goes on from; got {start_step!r}"
        )
    return start_step
