"""Which JAX traces are running, and whether a value is being traced: JAX only, no Flax.

The backends tell a value sowed inside a compiled step from an eager one,
find the trace a sow runs in and what made it (``jit``, a loop body, a
``cond`` branch, ``remat``; or ``grad`` and ``vmap``, which stage nothing),
take a value sowed under ``grad`` or ``vmap`` out to the trace around it,
and check that a tracer made by an enclosing trace (a step's number) may be
used where a sow runs now; summaries tell traced arrays from computed ones.
``jax._src`` is the only private JAX this needs (each use as JAX 0.10.0 to
0.12.0.1 have it); :data:`ASSUMPTIONS` tries it, and ``flax_check.check()``
runs these probes with the Flax ones before the first capture.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax._src import core as _jax_core  # private: see _trace_stack
from jax._src.interpreters import ad as _jax_ad  # private: see lifted
from jax._src.interpreters import batching as _jax_batching  # private: see lifted
from jax._src.interpreters import pxla as _jax_pxla  # private: see reflattening_outputs


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
    tracer's ``_trace`` is the trace that made it (JAX 0.10.0 to 0.12.0.1).
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


def parent_of(trace: Any) -> Any:
    """The trace around ``trace``; None around evaluation."""
    return getattr(trace, "parent_trace", None)


def is_evaluation(trace: Any) -> bool:
    """Whether ``trace`` is evaluation (no transformation): values there are computed arrays."""
    return parent_of(trace) is None


# What made a staged trace (jax/_src/api_util.py ``DebugInfo.traced_for``, JAX
# 0.10.0 to 0.12.0.1): the words of loops and branches, whose outputs must keep
# their inputs' structure.
LOOPS = ("scan", "while_loop", "fori_loop", "while")
BRANCHES = ("cond", "switch")


def traced_for(trace: Any) -> str | None:
    """What a staged trace is tracing for (``"jit"``, ``"scan"``, ``"cond"``, ``"checkpoint / remat"``...), else None.

    jax/_src/interpreters/partial_eval.py: ``DynamicJaxprTrace.frame.debug_info``
    (JAX 0.10.0 to 0.12.0.1). ``grad`` and ``vmap`` run in traces that
    stage nothing and have none.
    """
    info = getattr(getattr(trace, "frame", None), "debug_info", None)
    return getattr(info, "traced_for", None)


def lifted(value: Any, trace: Any) -> Any:
    """``value`` as the trace around ``trace`` sees it, where ``trace`` is ``grad``'s or ``vmap``'s; else None.

    A value under ``grad`` (a JVP or linearize tracer) is its primal; one
    under ``vmap`` (a batch tracer) is its batched array, the mapped axis
    first. A value that does not belong to ``trace`` (closed over from
    outside) is already what the outer trace sees.
    """
    if not is_tracer(value) or trace_of(value) is not trace:
        return value if isinstance(trace, _LIFTABLE) else None
    if isinstance(value, (_jax_ad.JVPTracer, _jax_ad.LinearizeTracer)):
        return value.primal
    if isinstance(value, _jax_batching.BatchTracer):
        axis = value.batch_dim
        if not isinstance(axis, int):
            return value.val  # not mapped: the same for every member
        return jax.numpy.moveaxis(value.val, axis, 0)
    return None


_LIFTABLE = (_jax_ad.JVPTrace, _jax_ad.LinearizeTrace, _jax_batching.BatchTrace)


def liftable(trace: Any) -> bool:
    """Whether values of ``trace`` can be taken out to the trace around it (``grad``'s and ``vmap``'s)."""
    return isinstance(trace, _LIFTABLE)


_DIFFERENTIATING = (_jax_ad.JVPTrace, _jax_ad.LinearizeTrace)


def differentiated(value: Any) -> bool:
    """Whether ``value`` is being differentiated: a tracer of ``grad``'s trace, or of a trace running inside one.

    A parameter inside ``nnx.grad`` is a JVP (or linearize) tracer; one
    sliced by ``nnx.scan`` or ``remat`` inside it belongs to a trace whose
    parents lead to ``grad``'s. A value closed over from around ``grad`` (a
    second model called inside another's gradient, as a GAN's generator is
    in its discriminator's step) belongs to a trace outside it: not
    differentiated.

    Example:
      >>> seen = []
      >>> _ = jax.grad(lambda x: seen.append(differentiated(x)) or x)(1.0)
      >>> _ = jax.jit(lambda x: seen.append(differentiated(x)) or x)(1.0)
      >>> seen
      [True, False]
    """
    if not is_tracer(value):
        return False
    trace = trace_of(value)
    while trace is not None:
        if isinstance(trace, _DIFFERENTIATING):
            return True
        trace = parent_of(trace)
    return False


def manual_axes() -> tuple[str, ...]:
    """The mesh axes a ``shard_map`` body runs over, where one is being traced; () elsewhere.

    Inside the body each device holds its own shard of a value, so nothing
    sowed there is the whole value. Read from the abstract mesh, which JAX
    sets for the body whether or not it checks varying axes (``check_vma``).

    Example:
      >>> manual_axes()
      ()
    """
    return tuple(jax.sharding.get_abstract_mesh().manual_axes)


def reflattening_outputs() -> bool:
    """Whether the pytree being flattened is the output a compiled call just rebuilt, flattened again by JAX.

    jax/_src/interpreters/pxla.py: after a call's first run, JAX rebuilds
    its outputs and flattens them again (``reflatten_outputs_for_dispatch``,
    called from jax/_src/pjit.py; JAX 0.10.0 to 0.12.0.1) to learn the
    structure its fast path rebuilds later outputs with; an output that
    then flattens to another structure makes that fast path fail. A few
    frames up from a node's flatten function is that function.
    """
    frame = sys._getframe(1)
    for _ in range(4):
        if frame is None:
            return False
        if frame.f_code is _REFLATTEN:
            return True
        frame = frame.f_back
    return False


_REFLATTEN = _jax_pxla.reflatten_outputs_for_dispatch.__code__


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


def _grad_and_vmap_values_lift_out() -> bool:
    seen: list[bool] = []

    def inner(y):
        trace = current_trace()
        outer = parent_of(trace)
        seen.append(liftable(trace) and lifted(y * 2.0, trace) is not None and not is_evaluation(outer))
        return (y * 2.0).sum()

    def probe(x):
        jax.grad(inner)(x)
        jax.vmap(inner)(x[None])
        seen.append(traced_for(current_trace()) is not None)
        return x

    jax.make_jaxpr(probe)(np.ones(2, np.float32))
    return seen == [True, True, True]


class _Noted:
    """A pytree node that notes, each time it is flattened, whether JAX is reflattening outputs."""

    seen: list[bool] = []


jax.tree_util.register_pytree_node(
    _Noted, lambda node: (_Noted.seen.append(reflattening_outputs()) or (), None), lambda _, __: _Noted()
)


def _outputs_are_reflattened_once() -> bool:
    _Noted.seen = []
    jax.jit(lambda x: (_Noted(), x))(np.float32(1.0))
    return True in _Noted.seen


# What each probe shows, in the words an error names it by.
ASSUMPTIONS: dict[str, Callable[[], bool]] = {
    "values traced by jax.jit are jax.core.Tracer instances": _tracers_are_jax_core_tracers,
    "jax._src.core lists the running traces, and a tracer names the trace that made it": (
        _enclosing_tracers_are_usable_in_nested_traces
    ),
    "values under grad and vmap are JVP, linearize and batch tracers with a primal or a batched value": (
        _grad_and_vmap_values_lift_out
    ),
    "jax.jit flattens a first call's rebuilt outputs again in reflatten_outputs_for_dispatch": (
        _outputs_are_reflattened_once
    ),
}
