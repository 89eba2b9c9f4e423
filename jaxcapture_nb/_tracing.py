"""Which JAX traces are running, and whether a value is being traced: JAX only, no Flax.

The backends tell a value sowed inside a compiled step from an eager one,
find the trace a sow runs in, and check that a tracer made by an enclosing
trace (a step's counter) may be used where a sow runs now; summaries tell
traced arrays from computed ones. ``jax._src.core`` is the only private JAX
this needs; :data:`ASSUMPTIONS` tries it, and ``flax_internals.check()``
runs these probes with the Flax ones before the first capture.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
from jax._src import core as _jax_core  # private: see _trace_stack


def is_tracer(x: Any) -> bool:
    """Whether ``x`` is a value being traced by a JAX transformation."""
    return isinstance(x, jax.core.Tracer)


def is_traced(tree: Any) -> bool:
    """Whether any leaf of a pytree is being traced.

    Example:
      >>> is_traced({"a": 1.0})
      False
      >>> jax.make_jaxpr(lambda x: print(is_traced([x])) or x)(1.0) and None
      True
    """
    return any(is_tracer(leaf) for leaf in jax.tree.leaves(tree))


def _trace_stack() -> list[Any]:
    """The running traces, outermost (evaluation) first.

    jax/_src/core.py: ``trace_ctx.trace`` is the innermost running trace, and
    ``unsafe_get_trace_stack`` follows its ``parent_trace`` links outwards; a
    tracer's ``_trace`` is the trace that made it.
    """
    return _jax_core.unsafe_get_trace_stack(_jax_core.trace_ctx.trace)


def tracing() -> bool:
    """Whether a JAX transformation is tracing the code that runs now.

    Asked on every call of a watched step, so it looks at the innermost
    trace alone: only evaluation, the outermost, has no parent (see
    :func:`_trace_stack`).
    """
    return hasattr(_jax_core.trace_ctx.trace, "parent_trace")


def trace_of(tracer: Any) -> Any:
    """The trace that made ``tracer``."""
    return tracer._trace


def current_trace() -> Any:
    """The innermost running trace (evaluation, outside any transformation)."""
    return _trace_stack()[-1]


def usable_here(tracer: Any) -> bool:
    """Whether a tracer made by an enclosing trace may be used by the code that runs now.

    A trace's tracers can be used inside the traces it runs (``lax.cond``,
    ``lax.scan``, ``vmap`` and ``grad`` close over them), never after it ended
    or inside an unrelated one.
    """
    return is_tracer(tracer) and any(trace is trace_of(tracer) for trace in _trace_stack())


# -- self-checks ---------------------------------------------------------------


def _tracers_are_jax_core_tracers() -> bool:
    seen: list[bool] = []
    jax.make_jaxpr(lambda x: seen.append(is_tracer(x)) or x)(1.0)
    return seen == [True]


def _enclosing_tracers_are_usable_in_nested_traces() -> bool:
    seen: list[bool] = []
    kept: list[Any] = []

    def outer(x):
        kept.append(x)
        seen.append(tracing() and usable_here(x))
        jax.lax.cond(x > 0, lambda: seen.append(usable_here(x)), lambda: None)
        return x

    jax.make_jaxpr(outer)(1.0)
    jax.make_jaxpr(lambda y: seen.append(usable_here(kept[0])) or y)(1.0)
    return seen == [True, True, False] and not tracing()


# What each probe shows, in the words an error names it by.
ASSUMPTIONS: dict[str, Callable[[], bool]] = {
    "values traced by jax.jit are jax.core.Tracer instances": _tracers_are_jax_core_tracers,
    "jax._src.core lists the running traces, and a tracer names the trace that made it": (
        _enclosing_tracers_are_usable_in_nested_traces
    ),
}
