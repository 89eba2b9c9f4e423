"""capture(): record what a Flax model sows, as a context manager or decorator.

The :class:`Capture` result always has the same shape, whatever the model
(NNX or Linen), the keep policy, or whether the block raised.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable, Iterator
from typing import Any

from flax import linen as nn
from flax import nnx

from jaxcapture_nb.backends.linen import COLLECTION, LinenCapture
from jaxcapture_nb.backends.nnx import NnxCapture
from jaxcapture_nb.capturing.recorder import Include, Recorder, warn_if_nothing_perturbed
from jaxcapture_nb.core.display import view_of
from jaxcapture_nb.core.user_warnings import warn
from jaxcapture_nb.stats.records import Record, format_table
from jaxcapture_nb.stats.summary import DEFAULT_BINS


def warn_what_was_lost(backend: NnxCapture | LinenCapture | None) -> list[str]:
    """Warns, once a block has ended, for each reason values the model sowed were not recorded; returns the reasons."""
    reasons = getattr(backend, "what_was_lost", list)()
    for reason in reasons:
        warn(f"Not everything the model sowed was recorded: {reason}.")
    return reasons


class Capture:
    """What a model sowed inside a ``with capture(...)`` block.

    Use :func:`capture` to make one. Its fields are filled when the block
    ends, and also when it ends with an exception: then they hold what was
    captured before the failure.
    """

    def __init__(
        self,
        model: Any,
        var_types: tuple[type, ...],
        *,
        methods: bool,
        include: Include,
        keep: str,
        bins: int,
        grads: bool = False,
    ):
        if isinstance(model, nnx.Module):
            for var_type in var_types:
                if not (isinstance(var_type, type) and issubclass(var_type, nnx.Variable)):
                    raise TypeError(
                        f"capture() takes nnx.Variable types to record, got {var_type!r}; "
                        "e.g. capture(model, nnx.Intermediate, nnx.Perturbation)"
                    )
        elif isinstance(model, nn.Module):
            if var_types:
                raise TypeError(
                    "a Linen module's sowed values are recorded from its 'intermediates' collection; "
                    "call capture(module) without Variable types"
                )
            if grads:
                raise TypeError(
                    "grads=True records gradients through nnx Module.perturb; for a Linen module use "
                    "Flax's 'perturbations' collection with jax.grad, or capture an NNX model"
                )
        else:
            raise TypeError(
                f"capture() needs a flax.nnx.Module or flax.linen.Module, got {type(model).__name__}"
            )
        self.model = model
        self.var_types = var_types or (nnx.Intermediate,)
        self.methods = methods
        self.keep = keep
        self.bins = bins
        self._include = include
        self.grads = grads
        self._recorder = Recorder(keep=keep, bins=bins, include=include, grads=grads)
        self._backend: NnxCapture | LinenCapture | None = None
        self._lost: list[str] = []  # why sowed values were not recorded, once the block ended

    # -- running -------------------------------------------------------------

    def __enter__(self) -> Capture:
        if self._backend is not None:
            raise RuntimeError("this Capture is already active; a block cannot be entered twice at once")
        self._recorder = Recorder(keep=self.keep, bins=self.bins, include=self._include, grads=self.grads)
        self._lost = []
        if isinstance(self.model, nnx.Module):
            backend = NnxCapture(self.model, self.var_types, self._recorder, self.methods)
        else:
            backend = LinenCapture(self.model, self._recorder, self.methods)
        backend.install()
        self._backend = backend
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        backend, self._backend = self._backend, None
        try:
            backend.uninstall()
        finally:
            self._recorder.summarize_missing()
        if exc_type is None:
            self._recorder.warn_if_keeping_much()
            self._lost = warn_what_was_lost(backend)
        if self.grads and exc_type is None:
            warn_if_nothing_perturbed(self._recorder.var_types_seen, self._include)
        return False  # never swallow the block's exception

    def __call__(self, fn: Callable) -> Callable:
        """Runs ``fn`` inside this capture on every call (decorator form)."""

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        wrapper.capture = self  # type: ignore[attr-defined]
        return wrapper

    # -- results -------------------------------------------------------------

    @property
    def records(self) -> list[Record]:
        """Every record, in execution order, with its summary on the host."""
        if self._backend is not None:
            self._recorder.drain()
        records = self._recorder.records()
        for record in records:
            # Read once, here, so no view reads a device value itself (a
            # replicated summary of a multi-process run, through the local copy).
            if record.summary is not None:
                record.summary = record.summary.to_numpy()
        return records

    @property
    def state(self) -> Any:
        """The captured values shaped like Flax's own result.

        For NNX an ``nnx.State`` with one Variable per site, holding the tuple of
        its values in call order (summaries under ``keep="summary"``); for Linen
        ``{"intermediates": {...}}`` as ``apply(..., mutable=...)`` returns it.
        """
        tree: dict[Any, Any] = {}
        for record in self.records:
            node = tree
            for part in record.path:
                node = node.setdefault(part, {})
            value = record.summary if record.value is None and record.summary is not None else record.value
            node.setdefault((record.var_type, record.name), []).append(value)
        if isinstance(self.model, nnx.Module):
            return nnx.State(_as_variables(tree))
        return {COLLECTION: _as_tuples(tree)}

    def __getitem__(self, site: str) -> Any:
        """The value ``site`` (a dotted name, as ``Record.site``) held at its last call, as kept.

        Feeds a patch: ``patch(model, {site: clean[site]})``.

        Raises:
          KeyError: no record of ``site`` (with the nearest names), or the
            capture kept only summaries (``keep="summary"``).
        """
        if not isinstance(site, str):
            raise TypeError(
                f"a capture is read by a site's name (a str, as Record.site shows it), not by "
                f"{type(site).__name__}; list(capture) gives the names"
            )
        found = [r for r in self.records if r.site == site]
        if not found:
            near = difflib.get_close_matches(site, sorted({r.site for r in self.records}), n=5, cutoff=0.5)
            raise KeyError(
                f"no site {site!r} was captured" + (f"; nearest: {', '.join(near)}" if near else "")
            )
        if found[-1].value is None:
            raise KeyError(
                f"{site!r}: this capture kept only summaries; capture with keep='last' or keep='all'"
            )
        return found[-1].value

    def __iter__(self) -> Iterator[str]:
        """The captured sites' names, each once, in the order first recorded: ``capture[name]`` reads each."""
        return iter(dict.fromkeys(r.site for r in self.records))

    def __contains__(self, site: object) -> bool:
        return any(r.site == site for r in self.records)

    def first_nonfinite(self) -> Record | None:
        """The first record, in execution order, holding a NaN or Inf."""
        return next((r for r in self.records if r.nonfinite_count), None)

    def table(self) -> str:
        """A plain-text table of the records (deterministic, rounded).

        The ``call`` column numbers the values of each site from 0; where
        only the latest value per site is kept (``keep="last"`` or
        ``"summary"``), it is that value's number. A capture without records
        says why: which sites ``include`` turned away, or that nothing was
        sowed.
        """
        return format_table(self.records, empty=self._empty_note())

    def _empty_note(self) -> str:
        """The line a table without records shows instead (see :meth:`table`): what the block's warning said, if it lost values."""
        if self._lost:
            return f"(values were sowed, none recorded: {self._lost[0]})"
        return self._recorder.empty_note(self.methods)

    def __repr__(self) -> str:
        return self.table()

    def show(self):
        """The interactive :class:`~jaxcapture_nb.CaptureView` widget of the records."""
        return view_of(self)

    def plot(self, columns: int = 4, max_sites: int = 32):
        """A matplotlib Figure with one histogram per recorded array.

        Args:
          columns: subplots per row.
          max_sites: at most this many records are drawn (the first ones).

        Raises:
          ValueError: ``columns`` or ``max_sites`` is not a positive whole number.
        """
        from jaxcapture_nb.capturing.plot import plot_histograms

        return plot_histograms(self.records, columns=columns, max_sites=max_sites)


def _as_variables(tree: dict[Any, Any]) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for key, value in tree.items():
        if isinstance(key, tuple):
            var_type, name = key
            out[name] = var_type(tuple(value))
        else:
            out[key] = _as_variables(value)
    return out


def _as_tuples(tree: dict[Any, Any]) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for key, value in tree.items():
        out[key[1] if isinstance(key, tuple) else key] = (
            tuple(value) if isinstance(key, tuple) else _as_tuples(value)
        )
    return out


def capture(
    model: Any,
    *var_types: type,
    methods: bool = False,
    include: Include = None,
    keep: str = "all",
    bins: int = DEFAULT_BINS,
    grads: bool = False,
) -> Capture:
    """Records everything ``model`` and its submodules sow inside a block.

    Works for eager calls, ``nnx.jit``-compiled steps, loops, and
    ``nnx.scan``/``nnx.vmap``-stacked layers (one record per site whose value
    has the stacked axis first). When the block raises, the exception passes
    through unchanged, the model is left exactly as it was, and what was
    captured before the failure stays on the :class:`Capture`.

    Args:
      model: a ``flax.nnx.Module`` or a ``flax.linen.Module``.
      *var_types: NNX Variable types to record; default ``nnx.Intermediate``.
        Any Variable type works (``nnx.Perturbation``, your own subclasses).
      methods: also record the output of every method call of every
        submodule, named after the method (``__call__`` for calls).
      include: a regular expression searched in each site's dotted path
        (e.g. ``"encoder.layers.0.attn_out"``), or a callable taking that path
        and returning True for sites to keep.
      keep: ``"all"`` keeps every value; ``"last"`` only the latest value per
        site; ``"summary"`` only the latest on-device :class:`Summary` per
        site, computed inside jitted code, and no tensor. ``"last"`` and
        ``"summary"`` keep memory flat in training loops (``"all"`` warns
        once the values it keeps pass 256 MiB); their record's
        ``call_index`` (the table's ``call`` column) is the number of the
        value kept, 99 after 100 calls that sow once. Under every
        policy a jitted step is traced once: values leave each call and
        never go back in.
      bins: histogram bins of the summaries.
      grads: also record, for every value an NNX module passes through
        ``Module.perturb``, the value (as ``nnx.Perturbation``) and the
        gradient that reaches it whenever the block differentiates through
        the model (as :class:`~jaxcapture_nb.Gradient`). No perturbation
        state is created; see :func:`capture_grads` for the one-off form.
        A block that passes no value through ``Module.perturb`` warns
        (:class:`~jaxcapture_nb.JaxCaptureWarning`), as it records no gradient.

    Returns:
      A :class:`Capture`, to use as ``with capture(model) as cap:`` or as a
      decorator: ``@capture(model)`` runs the function inside a fresh
      capture on each call, reachable as ``function.capture``.

    Raises:
      TypeError: ``model`` is not a Flax module, or ``var_types`` are not
        Variable types.
      ValueError: an unknown ``keep``, a bad ``bins`` or ``include``.
      RuntimeError: on entering the block, if the model is already being
        captured by another active capture.

    Example:
      >>> import jax.numpy as jnp
      >>> from flax import nnx
      >>> class Model(nnx.Module):
      ...     def __init__(self, rngs):
      ...         self.linear = nnx.Linear(2, 3, rngs=rngs)
      ...     def __call__(self, x):
      ...         h = self.linear(x)
      ...         self.sow(nnx.Intermediate, "hidden", h)
      ...         return h.sum()
      >>> model = Model(nnx.Rngs(0))
      >>> with capture(model) as cap:
      ...     y = model(jnp.ones((4, 2)))
      >>> [(r.site, r.shape) for r in cap.records]
      [('hidden', (4, 3))]
    """
    return Capture(model, var_types, methods=methods, include=include, keep=keep, bins=bins, grads=grads)


def capture_grads(
    loss_fn: Callable, model: nnx.Module, *args: Any, bins: int = DEFAULT_BINS, **kwargs: Any
) -> Capture:
    """Captures intermediates and their gradients in one call of ``loss_fn``.

    Computes ``nnx.grad(loss_fn)(model, *args, **kwargs)`` inside
    ``capture(model, nnx.Intermediate, grads=True)``: every value the model
    sows, every value it passes through ``Module.perturb``, and the gradient
    of the loss with respect to each perturbed value (values that do not
    depend on the model's parameters, such as the input, get none). A model
    that passes no value through ``Module.perturb`` records no gradient, and
    warns (:class:`~jaxcapture_nb.JaxCaptureWarning`). This replaces Flax's
    four steps (initialize perturbations, capture them, differentiate with
    respect to them, merge) with one call. The model is left as it was:
    whatever the call changed (batch statistics, RNG counters) is restored.

    Args:
      loss_fn: ``loss_fn(model, *args, **kwargs)`` returning a scalar.
      model: the NNX model.
      *args: further arguments of ``loss_fn``.
      bins: histogram bins of the summaries.
      **kwargs: keyword arguments of ``loss_fn``.

    Returns:
      The :class:`Capture`; gradients are its records of type
      :class:`~jaxcapture_nb.Gradient`.

    Example:
      >>> import jax.numpy as jnp
      >>> from flax import nnx
      >>> class Model(nnx.Module):
      ...     def __init__(self):
      ...         self.scale = nnx.Param(jnp.ones(2))
      ...     def __call__(self, x):
      ...         return jnp.sum(3.0 * self.perturb("h", self.scale * x))
      >>> cap = capture_grads(lambda m, x: m(x), Model(), jnp.ones(2))
      >>> [(r.var_type.__name__, r.site, r.value.tolist()) for r in cap.records]
      [('Perturbation', 'h', [1.0, 1.0]), ('Gradient', 'h', [3.0, 3.0])]
    """
    if not isinstance(model, nnx.Module):
        raise TypeError(f"capture_grads() needs a flax.nnx.Module, got {type(model).__name__}")
    before = nnx.clone(nnx.state(model))
    try:
        with capture(model, nnx.Intermediate, grads=True, bins=bins) as cap:
            nnx.grad(loss_fn)(model, *args, **kwargs)
    finally:
        nnx.update(model, before)
    return cap
