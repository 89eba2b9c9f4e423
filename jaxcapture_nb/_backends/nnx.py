"""How a capture hooks into Flax NNX: ``Module.sow``, ``perturb`` and methods.

``Module.sow`` stores into ``module.__captures__`` when that attribute exists:
a tuple of Variables, one per captured type, each holding a mapping. Flax's
own ``nnx.capture`` puts plain dicts there; we put a :class:`_Sink`, a small
pytree that

* says no name is present, so every ``sow`` arrives as its own value (a
  default ``sow`` passes ``(value,)``) instead of a tuple that grows;
* records concrete (eager) values at once, and holds traced ones as pytree
  children. Because ``__captures__`` is pytree data, ``nnx.jit``, ``nnx.scan``
  and ``nnx.vmap`` carry the children out of the trace (stacked, for
  scan/vmap), and the outer module's sink holds them, concrete, after the
  call. They are delivered when the block ends or the host next records;
* under ``keep="last"``/``"summary"`` replaces rather than appends, so the
  state's structure stops changing after the first call and a jitted step
  traces at most twice; under ``"summary"`` it stores the on-device
  :func:`~jaxcapture_nb.summarize` of the value instead of the value;
* for :func:`~jaxcapture_nb.watch`, stores one packed summary row per sow
  and hands the rows to the stream when a compiled call returns them (see
  ``_watch.py``).

Nothing is patched on Flax's classes except, with ``methods=True``, the
model's own module classes, whose wrappers sow only on instances that carry
our sink: any other instance of the same class behaves as if untouched.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import threading
import warnings
import weakref
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from jaxcapture_nb._backends import flax_internals
from jaxcapture_nb._backends.flax_internals import is_tracer
from jaxcapture_nb._backends.nnx_modules import iter_modules
from jaxcapture_nb._hosts import host_callback
from jaxcapture_nb._recorder import Recorder
from jaxcapture_nb._records import Gradient, leaf_sites
from jaxcapture_nb._summary import packed_summary, summarize
from jaxcapture_nb._warnings import JaxCaptureWarning

# A route id, stored in the sinks' static data, names the model a sink belongs
# to; _ROUTES maps it to the model's active capture, if any. The id stays the
# same across captures of one model, so a step compiled in one block is reused
# by the next instead of being traced and compiled again. A sink whose model
# has no active capture (a copy kept by user code) records nothing.
_ROUTES: dict[int, NnxCapture] = {}
_route_ids = itertools.count()
_model_routes: weakref.WeakKeyDictionary[nnx.Module, int] = weakref.WeakKeyDictionary()
# Per route: when each site's k-th held value was sowed in the latest trace. A compiled program
# runs its sows in the order they were traced, so this sorts what it leaves.
_trace_orders: dict[int, dict[tuple[Any, ...], int]] = {}
_trace_counter = itertools.count()
_lock = threading.Lock()


def _route_for(model: nnx.Module) -> int:
    with _lock:
        route = _model_routes.get(model)
        if route is None:
            route = _model_routes[model] = next(_route_ids)
            weakref.finalize(model, _trace_orders.pop, route, None)
        return route


def _is_traced(value: Any) -> bool:
    return any(is_tracer(leaf) for leaf in jax.tree.leaves(value))


def _unwrap(value: Any) -> Any:
    # The default ``sow`` reduce wraps each value in a 1-tuple.
    return value[0] if isinstance(value, tuple) and len(value) == 1 else value


class _Sink:
    """The mapping that ``sow`` and ``perturb`` write into; see the module doc.

    Children: ``values`` (name -> tuple of held values; for :func:`watch`,
    the packed summary rows of the latest call, see :meth:`_hand_over`).
    Static: the route, the recorder's policy (what a trace stores depends on
    it, so a compiled step must not be reused across policies), the module
    path, the Variable type, which names hold values from a trace that are not
    yet recorded, the shape/dtype ``perturb`` reads back, and the shape/dtype
    of the arrays a streaming trace summarized into rows.
    """

    __slots__ = ("route", "policy", "path", "var_type", "values", "traced", "readback", "layouts", "sowed")

    def __init__(
        self, route, policy, path, var_type, values=None, traced=frozenset(), readback=(), layouts=()
    ):
        self.route = route
        self.policy = policy
        self.path = path
        self.var_type = var_type
        self.values: dict[str, tuple[Any, ...]] = values if values is not None else {}
        self.traced: frozenset[str] = traced
        # name -> (treedef, ((shape, dtype), ...)) of the array value stored there.
        self.readback: tuple[tuple[str, Any, tuple[tuple[tuple[int, ...], Any], ...]], ...] = readback
        self.layouts: tuple[tuple[str, tuple[int, ...], Any], ...] = layouts
        # Names sowed into this very object: in a trace, the first sow of a
        # name replaces the rows that came in with the state.
        self.sowed: set[str] = set()

    def __contains__(self, name: object) -> bool:
        return False

    def __getitem__(self, name: str) -> Any:
        # Only ``perturb`` reads back, right after storing zeros of this shape,
        # and returns ``what we return + value``.
        capture = _ROUTES.get(self.route)
        if capture is not None and capture.recorder.grads and issubclass(self.var_type, nnx.Perturbation):
            return _GradientTap((self.route, self.path, name))
        for key, treedef, layouts in self.readback:
            if key == name:
                return jax.tree.unflatten(treedef, [jnp.zeros(shape, dtype) for shape, dtype in layouts])
        raise KeyError(name)

    def __setitem__(self, name: str, value: Any) -> None:
        capture = _ROUTES.get(self.route)
        recorder = capture.recorder if capture is not None else None
        value = _unwrap(value)
        # A streaming trace never reads back (see __getitem__), and a change
        # of this static data would make nnx.jit trace the step again.
        if recorder is None or recorder.keep != "stream":
            self._remember_readback(name, value)
        if recorder is None:
            return
        if recorder.grads and issubclass(self.var_type, nnx.Perturbation):
            return  # the zeros ``perturb`` stores; the tap records the value itself
        # Traced or not is decided for the whole value: its non-array leaves
        # travel with the traced ones, so a compiled call records them as often.
        traced = _is_traced(value)
        for leaf_name, leaf in leaf_sites(name, value):
            if recorder.accepts(self.path, leaf_name):
                self._store(capture, leaf_name, leaf, traced)

    def _remember_readback(self, name: str, value: Any) -> None:
        """Keeps the structure, shapes and dtypes of a stored array value, for ``__getitem__``."""
        leaves, treedef = jax.tree.flatten(value)
        if not leaves or not all(isinstance(x, jax.Array) for x in leaves):
            return
        entry = (name, treedef, tuple((tuple(x.shape), x.dtype) for x in leaves))
        if entry not in self.readback:
            self.readback = tuple(r for r in self.readback if r[0] != name) + (entry,)

    def _store(self, capture: NnxCapture, name: str, value: Any, traced: bool) -> None:
        """Records one leaf of a sowed value now, or holds it for the end of the trace."""
        recorder = capture.recorder
        if not traced:
            recorder.drain()  # values from earlier jitted calls come first
            recorder.add(self.path, self.var_type, name, value)
            return
        is_array = isinstance(value, jax.Array)
        if recorder.keep == "stream":
            if not is_array:
                return  # a stream keeps only summaries of arrays
            if recorder.grads:
                # Gradients leave the backward pass only by callback; the
                # values of the same run go the same way, so that everything
                # arrives in execution order.
                _report((self.route, self.path, name), self.var_type, value)
                return
            # The rows the previous call left come in as inputs; this call's
            # first sow of a name replaces them, later ones append.
            held = self.values.get(name, ()) if name in self.sowed else ()
            self.sowed.add(name)
            capture.note_trace_order(self.path, self.var_type, name, len(held))
            self.values[name] = (*held, packed_summary(value, recorder.bins))
            layout = (name, tuple(value.shape), value.dtype)
            if layout not in self.layouts:
                self.layouts = (*self.layouts, layout)
            self.traced = self.traced | {name}
            return
        if not is_array:
            value = _Static(value)  # a number or an object: no output of the trace
        elif recorder.keep == "summary":
            value = summarize(value, bins=recorder.bins)
        held = self.values.get(name, ()) if recorder.keep == "all" else ()
        # Values held before this object's first sow of a name came in with
        # the state, from an earlier call; a second sow within one call does not.
        if held and name not in self.sowed:
            capture.warn_growing_state(self.path, name)
        self.sowed.add(name)
        capture.note_trace_order(self.path, self.var_type, name, len(held))
        self.values[name] = (*held, value)
        self.traced = self.traced | {name}

    def take_traced(self, keep: str) -> list[tuple[str, tuple[Any, ...]]]:
        """Hands over the values a trace left here (concrete by now)."""
        taken = [(name, self.values.get(name, ())) for name in self.traced]
        if keep == "all":
            self.values = {}
        self.traced = frozenset()
        return taken

    def _hand_over(self) -> None:
        """Streams the rows a compiled call left here.

        A streaming trace stores one packed summary row per sow. ``nnx.jit``
        carries the rows out as outputs and rebuilds this sink around them,
        concrete, when the call returns; that is when they are handed to the
        stream, still on the device, so the loop never waits for them. The
        rows stay here, and the next call takes them in and replaces them, so
        from the second call on the step's input structure stays the same.
        """
        capture = _ROUTES.get(self.route)
        # A copy of a watched model's state rebuilt after its watch ended
        # belongs to no stream, even if the model is being captured again.
        if capture is not None and capture.recorder.keep == "stream":
            layouts = {name: (shape, dtype) for name, shape, dtype in self.layouts}
            for name in sorted(self.traced):
                capture.stream_rows(self.path, self.var_type, name, self.values.get(name, ()), layouts[name])

    # pytree protocol
    def _flatten_with_keys(self):
        names = tuple(self.values)
        children = tuple((jax.tree_util.DictKey(n), self.values[n]) for n in names)
        return children, (
            self.route,
            self.policy,
            self.path,
            self.var_type,
            names,
            self.traced,
            self.readback,
            self.layouts,
        )

    def _flatten(self):
        children, aux = self._flatten_with_keys()
        return tuple(value for _, value in children), aux

    @classmethod
    def _unflatten(cls, aux, children):
        route, policy, path, var_type, names, traced, readback, layouts = aux
        sink = cls(
            route, policy, path, var_type, dict(zip(names, children, strict=True)), traced, readback, layouts
        )
        if policy[0] == "stream" and traced and _all_concrete(children):
            sink._hand_over()
        return sink


class _Static:
    """A leaf of a traced site value that is not an array (a number, a string, an object).

    It cannot be an output of a compiled program, so it travels through the
    trace as static pytree data and is recorded, without a summary, when the
    call returns.
    """

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Static):
            return False
        try:
            return self.value is other.value or bool(self.value == other.value)
        except Exception:  # an object whose == is elementwise or raises
            return False

    def __hash__(self) -> int:
        try:
            return hash(self.value)
        except TypeError:
            return id(self.value)


jax.tree_util.register_pytree_node(_Static, lambda s: ((), s), lambda s, _: s)


def _all_concrete(tree: Any) -> bool:
    leaves = jax.tree.leaves(tree)
    return bool(leaves) and all(isinstance(x, jax.Array) and not is_tracer(x) for x in leaves)


jax.tree_util.register_pytree_with_keys(_Sink, _Sink._flatten_with_keys, _Sink._unflatten, _Sink._flatten)


# Routes whose compiled programs may call back to the host; their captures
# wait for those calls before handing over their records.
_callback_routes: set[int] = set()


def _arrive(
    route: int, path: tuple[Any, ...], var_type: type, name: str, layout: Any, order: int, *arrays: Any
) -> None:
    """Host side of a callback from a compiled program: records what it sent."""
    capture = _ROUTES.get(route)
    if capture is None:
        return
    if layout is not None:
        capture.recorder.add_row(path, var_type, name, arrays[0], layout, order)
    else:
        capture.recorder.add(path, var_type, name, arrays[0])


def _report(site: tuple[int, tuple[Any, ...], str], var_type: type, value: Any) -> None:
    """Records each leaf of a value (see ``leaf_sites``) that the capture accepts."""
    route, path, name = site
    capture = _ROUTES.get(route)
    if capture is None:
        return
    traced = _is_traced(value)
    for leaf_name, leaf in leaf_sites(name, value):
        if capture.recorder.accepts(path, leaf_name):
            _report_leaf(capture, (route, path, leaf_name), var_type, leaf, traced)


def _report_leaf(
    capture: NnxCapture, site: tuple[int, tuple[Any, ...], str], var_type: type, value: Any, traced: bool
) -> None:
    """Records one leaf now if it is concrete, or by host callback from a trace.

    When only summaries are kept (streaming, or ``keep="summary"``), a traced
    value is summarized inside the trace and only the summary's one small
    array is sent, so each call of a compiled step costs one small transfer
    per site and nothing is stored in the model's state (which would change
    its structure and force a re-trace).
    """
    route, path, name = site
    recorder = capture.recorder
    if not traced:
        recorder.add(path, var_type, name, value)
        return
    is_array = isinstance(value, jax.Array)
    if recorder.keep == "stream" and not is_array:
        return  # a stream keeps only summaries of arrays
    _callback_routes.add(route)
    # Callbacks of sites that do not depend on each other may run at the same
    # time, so each carries when it was traced, as a compiled step's rows do.
    order = next(_trace_counter)
    recorder.expect(path, var_type, name)
    if not is_array:
        # The same on every call: the callback carries it rather than sends it.
        host_callback(functools.partial(_arrive, route, path, var_type, name, None, order, value))
        return
    # A recorder that keeps only summaries gets one small array, not the tensor.
    if recorder.keep in ("stream", "summary"):
        layout = (tuple(value.shape), value.dtype)
        arrays = (packed_summary(value, recorder.bins),)
    else:
        layout, arrays = None, (value,)
    host_callback(functools.partial(_arrive, route, path, var_type, name, layout, order), *arrays)


class _GradientTap:
    """What ``perturb`` reads back while gradients are recorded.

    ``Module.perturb`` returns ``stored + value``; adding a value to a tap
    returns it through an identity whose backward pass records the gradient
    that reaches it, so no perturbation state and no extra ``grad`` argument
    are needed.
    """

    def __init__(self, site: tuple[int, tuple[Any, ...], str]):
        self.site = site

    def __add__(self, value: Any) -> Any:
        return _tapped(value, self.site)

    __radd__ = __add__


@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def _tapped(value: Any, site: tuple[int, tuple[Any, ...], str]) -> Any:
    _report(site, nnx.Perturbation, value)
    return value


def _tapped_forward(value, site):
    _report(site, nnx.Perturbation, value)
    return value, None


def _tapped_backward(site, _, cotangent):
    _report(site, Gradient, cotangent)
    return (cotangent,)


_tapped.defvjp(_tapped_forward, _tapped_backward)


def _warn_sowed_attributes(modules, var_types) -> None:
    for path, module in modules:
        for attr, value in vars(module).items():
            if type(value) in var_types:
                where = ".".join(str(p) for p in (*path, attr))
                warnings.warn(
                    f"'{where}' holds values stored by Module.sow called outside a capture. Such "
                    "values grow by one entry per call, which makes nnx.jit re-trace and "
                    "recompile a step on every call (often ~10x slower). Remove them with "
                    f"nnx.pop(model, nnx.{type(value).__name__}) and sow inside "
                    "jaxcapture_nb.capture(model) instead.",
                    JaxCaptureWarning,
                    stacklevel=4,  # the `with capture(...)` line
                )
                return


class _MethodPatches:
    """Reference-counted wrappers on module classes, for ``methods=True``."""

    def __init__(self):
        self._originals: dict[type, dict[str, Any]] = {}
        self._users: dict[type, int] = {}

    def acquire(self, cls: type) -> None:
        with _lock:
            self._users[cls] = self._users.get(cls, 0) + 1
            if self._users[cls] > 1:
                return
            originals = {}
            for name, method in list(vars(cls).items()):
                if inspect.isfunction(method) and (name == "__call__" or not name.startswith("_")):
                    originals[name] = method
                    setattr(cls, name, _sowing_method(name, method))
            self._originals[cls] = originals

    def release(self, cls: type) -> None:
        with _lock:
            self._users[cls] -= 1
            if self._users[cls]:
                return
            del self._users[cls]
            for name, method in self._originals.pop(cls).items():
                setattr(cls, name, method)


_method_patches = _MethodPatches()


def _sowing_method(name: str, method):
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        out = method(self, *args, **kwargs)
        if any(isinstance(flax_internals.held_value(var), _Sink) for var in flax_internals.captures(self)):
            self.sow(nnx.Intermediate, name, out)
        return out

    return wrapper


class NnxCapture:
    """Installs sinks on every submodule of ``model`` and removes them again.

    Args:
      model: the root module.
      var_types: the Variable types to capture.
      recorder: where values go.
      methods: also record the output of every method call.
    """

    def __init__(self, model: nnx.Module, var_types: tuple[type, ...], recorder: Recorder, methods: bool):
        self.model = model
        self.recorder = recorder
        extra = (*((nnx.Intermediate,) if methods else ()), *((nnx.Perturbation,) if recorder.grads else ()))
        self.var_types = tuple(dict.fromkeys((*var_types, *extra)))
        self.methods = methods
        self._modules: list[tuple[tuple[Any, ...], nnx.Module]] = []
        self._classes: list[type] = []
        self._route: int | None = None
        self._warned_growth = False
        self._streamed: dict[tuple[Any, ...], Any] = {}  # the last row streamed per site

    def install(self) -> None:
        flax_internals.check()
        # nnx.List/nnx.Dict are containers: they never sow, and an attribute
        # next to their integer keys would break Flax's sorting of state paths.
        modules = [
            (path, m) for path, m in iter_modules(self.model) if not isinstance(m, (Sequence, Mapping))
        ]
        for path, module in modules:
            if flax_internals.has_captures(module):
                raise RuntimeError(_conflict_message(path, flax_internals.captures(module)))
        _warn_sowed_attributes(modules, self.var_types)
        self._route = _route_for(self.model)
        with _lock:
            _ROUTES[self._route] = self
        self.recorder.add_drain(self.deliver)
        self._modules = modules
        for path, module in modules:
            sinks = tuple(
                var_type(_Sink(self._route, self.recorder.policy, path, var_type))
                for var_type in self.var_types
            )
            flax_internals.set_captures(module, sinks)
        if self.methods:
            self._classes = list(dict.fromkeys(type(m) for _, m in modules))
            for cls in self._classes:
                _method_patches.acquire(cls)

    def _sinks(self) -> Iterator[_Sink]:
        for _, module in self._modules:
            for var in flax_internals.captures(module):
                sink = flax_internals.held_value(var)
                if isinstance(sink, _Sink):
                    yield sink

    def warn_growing_state(self, path: tuple[Any, ...], name: str) -> None:
        """Warns, once per capture, that keep="all" is re-tracing a jitted step."""
        if self._warned_growth:
            return
        self._warned_growth = True
        site = ".".join(str(p) for p in (*path, name))
        warnings.warn(
            f"capture(keep='all') is holding every value of '{site}' from a jitted function called "
            "repeatedly: the captured state grows by one value per call, so nnx.jit re-traces and "
            "recompiles on every call. Use keep='last' or keep='summary' for training loops.",
            JaxCaptureWarning,
            stacklevel=6,  # the module method that called sow()
        )

    def stream_rows(
        self, path: tuple[Any, ...], var_type: type, name: str, rows: tuple[Any, ...], layout: Any
    ) -> None:
        """Hands the stream the summary rows one compiled call left for a site, once."""
        site = (path, var_type, name)
        # JAX may rebuild the same outputs more than once; each row counts once.
        if not rows or self._streamed.get(site) is rows[0]:
            return
        self._streamed[site] = rows[0]
        orders = _trace_orders.get(self._route, {})
        for k, row in enumerate(rows):
            self.recorder.add_row(path, var_type, name, row, layout, orders.get((*site, k), 0))

    def note_trace_order(self, path: tuple[Any, ...], var_type: type, name: str, index: int) -> None:
        """Remembers when the ``index``-th value a site holds was sowed while tracing."""
        _trace_orders.setdefault(self._route, {})[(path, var_type, name, index)] = next(_trace_counter)

    def deliver(self) -> None:
        """Records what jitted calls left in the sinks, in execution order."""
        if self._route in _callback_routes:
            jax.effects_barrier()  # host callbacks still in flight
        if self.recorder.keep == "stream":
            return  # streamed rows were handed over as each call returned
        trace_order = _trace_orders.get(self._route)
        if not trace_order:
            return  # never traced: eager sows were recorded as they happened
        taken = []
        for sink in self._sinks():
            if sink.traced:
                for name, values in sink.take_traced(self.recorder.keep):
                    site = (sink.path, sink.var_type, name)
                    taken.extend((trace_order.get((*site, k), -1), *site, v) for k, v in enumerate(values))
        # Under keep="all", values of later calls were traced later (each call
        # that brings held values in traces again), so they sort after.
        taken.sort(key=lambda t: t[0])
        for _, path, var_type, name, value in taken:
            self.recorder.add(path, var_type, name, value.value if isinstance(value, _Static) else value)

    def uninstall(self) -> None:
        """Removes every trace of the capture from the model; safe to repeat."""
        try:
            self.deliver()
        finally:
            for cls in self._classes:
                _method_patches.release(cls)
            self._classes = []
            for _, module in self._modules:
                flax_internals.remove_captures(module)
            self._modules = []
            with _lock:
                _ROUTES.pop(self._route, None)


def _conflict_message(path: tuple[Any, ...], captures: Any) -> str:
    where = ".".join(str(p) for p in path) or "the model"
    ours = any(
        isinstance(v, nnx.Variable) and isinstance(flax_internals.held_value(v), _Sink) for v in captures
    )
    if ours:
        return (
            f"{where} is already being captured by another active capture(). A module can be "
            "captured by one capture at a time: end the other `with capture(...)` block first, or "
            "capture both models' sites in one capture(model) of their common parent."
        )
    return (
        f"{where} has a leftover `__captures__` attribute, which flax.nnx.capture leaves behind "
        "when the function it wraps raises; later sow() calls would silently accumulate into it. "
        "Remove it from every submodule before capturing:\n"
        "    for _, m in nnx.iter_modules(model):\n"
        "        vars(m).pop('__captures__', None)"
    )
