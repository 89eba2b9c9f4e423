"""Activation patching over many sites and positions as one compiled program, and its first-order estimate.

:func:`patching_sweep` patches, for every site (and position), the clean
run's value into the corrupted run and evaluates a metric. The patches of
a site differ only in the position they replace, so they are one run
``vmap``-ped over the position (``jax.lax.map`` in chunks, to bound
memory), and the sites' runs are one program: one compile for the whole
sweep, where a Python loop would dispatch one patched forward pass per
patch. What the model computes before a site does not depend on the
position, so ``vmap`` leaves it unbatched: it is computed once per site.

:func:`attribution_patching` estimates the same effects from one forward
and one backward pass: ``(clean - corrupted) . d metric / d value`` at each
site, summed over every axis but the position's.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxcapture_nb.interventions.patch import patch
from jaxcapture_nb.interventions.replacements import Replacement
from jaxcapture_nb.interventions.result import PatchingResult, metric_name
from jaxcapture_nb.interventions.rows import (
    along,
    check_heads,
    estimated_rows,
    heads_of,
    row_names,
    row_order,
)
from jaxcapture_nb.upstream import flax_check


def _recorder(store: dict[str, Any], site: str) -> Replacement:
    def keep(value):
        store[site] = value
        return value

    return Replacement(keep)


def _run(model: nnx.Module, inputs: Any, forward: Callable, replacements: dict[str, Replacement]) -> Any:
    with patch(model, replacements), warnings.catch_warnings():
        # A run that patches nothing (the corrupted run) reaches the model's
        # perturb calls outside any capture, which Flax warns of on each trace:
        # the sweep runs them on purpose, and the user did nothing wrong.
        warnings.filterwarnings("ignore", r"\s*Using 'Module.perturb\(\)' outside", DeprecationWarning)
        return forward(model, inputs)


class Graph:
    """A graph definition as a static argument of ``jax.jit``, also where it cannot be hashed.

    A module that keeps a plain (unfrozen) dataclass, as many models keep
    their config, has a graph definition whose hash raises; such graphs
    share one hash, and equality tells them apart, so a sweep of the same
    model structure still reuses its program.

    Example:
      >>> import dataclasses
      >>> @dataclasses.dataclass
      ... class Config:
      ...     width: int
      >>> class Net(nnx.Module):
      ...     def __init__(self):
      ...         self.config = Config(4)
      >>> first, second = Graph(nnx.graphdef(Net())), Graph(nnx.graphdef(Net()))
      >>> hash(first) == hash(second) and first == second
      True
    """

    __slots__ = ("graphdef", "_hash")

    def __init__(self, graphdef: Any):
        self.graphdef = graphdef
        try:
            self._hash = hash(graphdef)
        except TypeError:
            self._hash = hash(type(graphdef))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Graph):
            return NotImplemented
        return self.graphdef is other.graphdef or bool(self.graphdef == other.graphdef)

    def merge(self, state: Any) -> nnx.Module:
        return nnx.merge(self.graphdef, state)


def sites_of(sites: str | Sequence[str]) -> tuple[str, ...]:
    """The sites to patch as a tuple; one site may be given as its name alone."""
    return (sites,) if isinstance(sites, str) else tuple(sites)


# Each program below is compiled once per model structure, sites, metric and
# input shapes: a second sweep of the same question reuses it.
_STATIC = ("graphdef", "sites", "forward", "measures", "positions", "position_axis", "chunk")


@functools.partial(jax.jit, static_argnames=("graphdef", "sites", "forward"))
def recorded_run(state, inputs, *, graphdef, sites, forward) -> tuple[Any, dict[str, Any], jax.Array]:
    """The outputs and the sites' values of one run, and the indices in ``sites`` of those reached, in the order reached."""
    store: dict[str, Any] = {}
    out = _run(graphdef.merge(state), inputs, forward, {s: _recorder(store, s) for s in sites})
    # The store fills as the trace reaches each site; the returned dict is
    # sorted by name, so the order leaves as an array of its own.
    return out, store, jnp.asarray([sites.index(s) for s in store], jnp.int32)


def model_order(sites: tuple[str, ...], reached: jax.Array | np.ndarray) -> list[int]:
    """Indices of ``sites`` in the order the model reached them, those it did not reach last."""
    order = [int(i) for i in np.asarray(reached)]
    return order + [i for i in range(len(sites)) if i not in order]


def check_nnx(model: Any) -> None:
    if not isinstance(model, nnx.Module):
        raise TypeError(
            f"sweeps take a flax.nnx.Module, got {type(model).__name__}: the sweep compiles the model's "
            "patched runs as one program. For a Linen module, call its apply inside "
            "`with patch(module, {site: ...})` once per patch"
        )


def _default_forward(model: nnx.Module, inputs: Any) -> Any:
    return model(inputs)


def patching_sweep(
    model: nnx.Module,
    clean: Any,
    corrupted: Any,
    metric: Callable[[Any], Any],
    sites: str | Sequence[str],
    positions: Sequence[int] | None = None,
    position_axis: int = 1,
    chunk: int = 16,
    forward: Callable[[nnx.Module, Any], Any] = _default_forward,
    readout: Callable[[Any], Any] | None = None,
    readout_labels: Sequence[str] | None = None,
    labels: Sequence[Any] | None = None,
    heads: int | Sequence[int] | None = None,
    head_axis: int = 2,
) -> PatchingResult:
    """Patches each site's clean value into the corrupted run, one site and position at a time, in one compiled program.

    Args:
      model: an NNX module; it is not changed.
      clean, corrupted: the two inputs (of one shape), as ``forward`` takes them.
      metric: ``metric(outputs) -> scalar``, e.g. the logit difference of the right and wrong answers.
      sites: the sites to patch, named as :func:`patch` names them (one may be given alone).
      positions: the positions (along ``position_axis`` of each site's
        value) to patch one at a time; None patches each site whole.
      position_axis: the axis of a site's value that holds positions (1: ``[batch, tokens, ...]``).
      chunk: patched runs evaluated together; bounds memory.
      forward: ``forward(model, inputs) -> outputs``; the model's call by default.
      readout: ``readout(outputs) -> small array`` kept for every patched run
        (say, the last position's next-token probabilities), which
        :class:`~jaxcapture_nb.PatchingView` shows beside the clean and the
        corrupted run's; None keeps only the metric.
      readout_labels: a label per readout value (say, the tokens).
      labels: a label per position (say, the clean input's tokens), for
        the view and the table: one per patched position, or one per
        position of the input.
      heads: patch one attention head at a time: the number of heads (all
        of them) or the heads to patch, along ``head_axis`` of each site's
        value. Each site then gives a row per head, named
        ``"layers.3.attn[head 5]"``. None patches every head together.
      head_axis: the axis of a site's value that holds heads (2:
        ``[batch, tokens, heads, head_dim]``, the heads' outputs before the
        output projection mixes them).

    Returns:
      A :class:`PatchingResult` with ``effect[site, position]``, its sites in model order.
    """
    check_nnx(model)
    sites = sites_of(sites)
    positions = None if positions is None else tuple(int(p) for p in positions)
    head_list = heads_of(heads)
    flax_check.check()  # before the traces below, whose patches rely on it
    graphdef, state = nnx.split(model)
    graphdef = Graph(graphdef)
    clean_out, clean_values, reached = recorded_run(
        state, clean, graphdef=graphdef, sites=sites, forward=forward
    )
    corrupted_out, _, _ = recorded_run(state, corrupted, graphdef=graphdef, sites=(), forward=forward)
    measures = (metric,) if readout is None else (metric, readout)
    measured = _sweep_program(
        state,
        corrupted,
        clean_values,
        graphdef=graphdef,
        sites=sites,
        forward=forward,
        measures=measures,
        positions=positions,
        position_axis=position_axis,
        heads=head_list,
        head_axis=head_axis,
        chunk=chunk,
    )
    order = model_order(sites, reached)
    rows = row_order(order, head_list)
    per_row = len(positions or (None,))
    effect = np.asarray(measured[0]).reshape(-1, per_row)[rows]
    readouts = None
    if readout is not None:
        kept = np.asarray(measured[1])
        kept = kept.reshape(-1, per_row, *kept.shape[2:])[rows]
        readouts = (kept, readout(clean_out), readout(corrupted_out))
    return PatchingResult(
        row_names(sites, order, head_list),
        positions,
        effect,
        metric(clean_out),
        metric(corrupted_out),
        "exact",
        readouts,
        readout_labels,
        labels,
        metric_name(metric),
    )


@functools.partial(jax.jit, static_argnames=(*_STATIC, "heads", "head_axis"))
def _sweep_program(
    state,
    inputs,
    clean_values,
    *,
    graphdef,
    sites,
    forward,
    measures,
    positions,
    position_axis,
    heads,
    head_axis,
    chunk,
):
    """Each of ``measures`` (the metric, and the readout where given) of every patched run, as ``[rows, positions, ...]``.

    A row is a site, or a site's head where ``heads`` are given (a site's
    heads in a row). Whole sites (``positions`` None) give ``[rows, 1, ...]``.

    Each site has its own map over heads and positions, so that what the
    model computes before the site does not depend on the patch and is
    computed once (``vmap`` batches only what depends on its argument), not
    once per patch.
    """

    def patched_run(name, place):
        head, position = place[0], place[1]

        def patched(value):
            where = jnp.ones((1,) * value.ndim, bool)
            if positions is not None:
                where = where & along(value, position_axis, position)
            if heads is not None:
                check_heads(name, value.shape, heads, head_axis, None if positions is None else position_axis)
                where = where & along(value, head_axis, head)
            return jnp.where(where, clean_values[name], value)

        out = _run(graphdef.merge(state), inputs, forward, {name: Replacement(patched)})
        return tuple(jnp.asarray(measure(out)) for measure in measures)

    places = jnp.asarray([(h, p) for h in heads or (0,) for p in positions or (0,)], jnp.int32)
    per_site = [jax.lax.map(functools.partial(patched_run, name), places, batch_size=chunk) for name in sites]
    return tuple(jnp.stack(column) for column in zip(*per_site, strict=True))


@functools.partial(jax.jit, static_argnames=("graphdef", "sites", "forward", "metric"))
def _site_gradients(state, inputs, zeros, *, graphdef, sites, forward, metric):
    """The gradient of the metric with respect to each site's value, at the run on ``inputs``."""

    def shifted_metric(deltas):
        replacements = {s: Replacement(_shifted, (deltas[s],)) for s in sites}
        return metric(_run(graphdef.merge(state), inputs, forward, replacements))

    return jax.grad(shifted_metric)(zeros)


def _shifted(value, delta):
    return value + delta


def attribution_patching(
    model: nnx.Module,
    clean: Any,
    corrupted: Any,
    metric: Callable[[Any], Any],
    sites: str | Sequence[str],
    positions: Sequence[int] | None = None,
    position_axis: int = 1,
    forward: Callable[[nnx.Module, Any], Any] = _default_forward,
    labels: Sequence[Any] | None = None,
    heads: int | Sequence[int] | None = None,
    head_axis: int = 2,
) -> PatchingResult:
    """The first-order estimate of :func:`patching_sweep`: ``(clean - corrupted) . gradient`` at each site.

    One forward pass on each input and one backward pass on the corrupted
    one, whatever the number of sites, heads and positions. Arguments and
    result as :func:`patching_sweep`'s; its ``effect`` is the corrupted
    metric plus the estimated change.
    """
    check_nnx(model)
    sites = sites_of(sites)
    head_list = heads_of(heads)
    flax_check.check()  # before the traces below, whose patches rely on it
    graphdef, state = nnx.split(model)
    graphdef = Graph(graphdef)
    clean_out, clean_values, reached = recorded_run(
        state, clean, graphdef=graphdef, sites=sites, forward=forward
    )
    corrupted_out, corrupted_values, _ = recorded_run(
        state, corrupted, graphdef=graphdef, sites=sites, forward=forward
    )
    zeros = {s: jnp.zeros_like(corrupted_values[s]) for s in sites}
    grads = _site_gradients(
        state, corrupted, zeros, graphdef=graphdef, sites=sites, forward=forward, metric=metric
    )
    rows: list[Any] = []
    for s in sites:
        change = np.asarray((clean_values[s] - corrupted_values[s]) * grads[s], np.float64)
        if head_list is not None:
            check_heads(s, change.shape, head_list, head_axis, None if positions is None else position_axis)
        rows.extend(estimated_rows(change, positions, position_axis, head_list, head_axis))
    base = float(metric(corrupted_out))
    order = model_order(sites, reached)
    effect = base + np.asarray(rows)[row_order(order, head_list)]
    return PatchingResult(
        row_names(sites, order, head_list),
        positions,
        effect,
        metric(clean_out),
        base,
        "attribution",
        position_labels=labels,
        metric_name=metric_name(metric),
    )
