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
  scan/vmap). As a call returns, JAX rebuilds the sink around the concrete
  values and the sink hands them to the capture (``NnxCapture.take``);
* under ``keep="summary"``, and for :func:`~jaxcapture_nb.watch`, holds a
  summary instead of the value: one :class:`Summary`, or one packed row.
  The summaries of a trace wait until it hands its sinks on, and are then
  made in one batch (``NnxCapture.summarize_deferred``), which compiles one
  summary per distinct size instead of one per site;
* never carries a value into a call: the sink a captured module holds
  flattens to nothing (or, for a watch that records one step in several,
  to its step counter alone), so a compiled step takes the same inputs on
  every call and is traced once, whatever the keep policy.

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
from collections.abc import Mapping, Sequence
from typing import Any

import flax
import jax
import jax.numpy as jnp
from flax import nnx

from jaxcapture_nb._backends import flax_internals
from jaxcapture_nb._backends.flax_internals import is_tracer
from jaxcapture_nb._backends.nnx_modules import iter_modules
from jaxcapture_nb._hosts import host_callback
from jaxcapture_nb._recorder import Recorder
from jaxcapture_nb._records import Gradient, leaf_sites
from jaxcapture_nb._summary import packed_summary, step_rows, step_summaries, unpack_summary
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
# Per route: (path, Variable type, name) -> (treedef, ((shape, dtype), ...))
# of the value ``perturb`` last stored there, which it reads back at once.
_readbacks: dict[int, dict[tuple[Any, ...], tuple[Any, tuple[tuple[tuple[int, ...], Any], ...]]]] = {}
_lock = threading.Lock()


def _route_for(model: nnx.Module) -> int:
    with _lock:
        route = _model_routes.get(model)
        if route is None:
            route = _model_routes[model] = next(_route_ids)
            weakref.finalize(model, _trace_orders.pop, route, None)
            weakref.finalize(model, _readbacks.pop, route, None)
        return route


def _is_traced(value: Any) -> bool:
    return any(is_tracer(leaf) for leaf in jax.tree.leaves(value))


def _unwrap(value: Any) -> Any:
    # The default ``sow`` reduce wraps each value in a 1-tuple.
    return value[0] if isinstance(value, tuple) and len(value) == 1 else value


class _Sink:
    """The mapping that ``sow`` and ``perturb`` write into; see the module doc.

    Children: ``values`` (name -> tuple of the values a trace stored, or,
    streaming, their packed summary rows), then, on the model's root sink of
    a watch that records one step in several, the step ``counter``. Static:
    the route, the recorder's policy (what a trace stores depends on it, so a
    compiled step must not be reused across policies), the module path, the
    Variable type, the shape, dtype and gating of each summarized value (see
    ``layouts``), and the counter's state.

    The sink a module holds while captured never carries values into a call
    (see :meth:`_flatten_with_keys`), so a compiled step takes the same
    inputs on every call and is traced once.
    """

    __slots__ = ("route", "policy", "path", "var_type", "values", "layouts", "counter", "counting")

    def __init__(self, route, policy, path, var_type, values=None, layouts=None, counter=None, counting=None):
        self.route = route
        self.policy = policy
        self.path = path
        self.var_type = var_type
        self.values: dict[str, tuple[Any, ...]] = values if values is not None else {}
        # Streaming: name -> ((shape, dtype, gated), ...), one per row in values.
        # ``gated`` rows were summarized only on recorded steps (see NnxCapture.gate).
        self.layouts: dict[str, tuple[tuple[tuple[int, ...], Any, bool], ...]] = layouts or {}
        self.counter = counter
        # "entry": the counter as a call takes it in; "carried": counted, on its way out.
        self.counting: str | None = counting

    def __contains__(self, name: object) -> bool:
        return False

    def __getitem__(self, name: str) -> Any:
        # Only ``perturb`` reads back, right after storing zeros of this shape,
        # and returns ``what we return + value``.
        capture = _ROUTES.get(self.route)
        if capture is not None and capture.recorder.grads and issubclass(self.var_type, nnx.Perturbation):
            return _GradientTap((self.route, self.path, name))
        # Flax reads through a copy of this sink (``Variable.get_value``), so
        # what was stored is looked up by site, not on the object.
        stored = _readbacks.get(self.route, {}).get((self.path, self.var_type, name))
        if stored is None:
            raise KeyError(name)
        treedef, layouts = stored
        return jax.tree.unflatten(treedef, [jnp.zeros(shape, dtype) for shape, dtype in layouts])

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
        if leaves and all(isinstance(x, jax.Array) for x in leaves):
            layouts = tuple((tuple(x.shape), x.dtype) for x in leaves)
            _readbacks.setdefault(self.route, {})[(self.path, self.var_type, name)] = (treedef, layouts)

    def _store(self, capture: NnxCapture, name: str, value: Any, traced: bool) -> None:
        """Records one leaf of a sowed value now, or holds it until the trace's call returns."""
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
            gate = capture.gate()
            index = self._hold(capture, name, _PENDING, append=True)
            capture.defer(self, name, index, value, gate)
            layout = (tuple(value.shape), value.dtype, gate is not None)
            self.layouts[name] = (*self.layouts.get(name, ()), layout)
            return
        if not is_array:
            self._hold(capture, name, _Static(value), append=recorder.keep == "all")  # no output of the trace
        elif recorder.keep == "summary":
            index = self._hold(capture, name, _PENDING, append=False)
            capture.defer(self, name, index, value, None)
        else:
            self._hold(capture, name, value, append=recorder.keep == "all")

    def _hold(self, capture: NnxCapture, name: str, value: Any, append: bool) -> int:
        """Holds a value for the end of the call; returns its index among the name's values."""
        held = self.values.get(name, ()) if append else ()
        capture.note_trace_order(self.path, self.var_type, name, len(held))
        self.values[name] = (*held, value)
        return len(held)

    def settle_pending(self, index: int, name: str, value: Any) -> None:
        """Puts the summary of a deferred value where its placeholder was."""
        held = list(self.values[name])
        held[index] = value
        self.values[name] = tuple(held)

    def has_pending(self) -> bool:
        """Whether a value held here still waits for its trace's batch of summaries."""
        return any(v is _PENDING for held in self.values.values() for v in held)

    # pytree protocol
    def _flatten_with_keys(self):
        capture = _ROUTES.get(self.route)
        if capture is not None and capture.holds(self):
            # The sink the model holds is being taken into a call (or read
            # from the model's state): what it held was handed over as the
            # last call returned, so it carries only the step counter, and
            # every call of a compiled step takes in the same structure.
            capture.entering(self)
            self.values, self.layouts = {}, {}
            counter = () if self.counter is None else ((jax.tree_util.GetAttrKey("counter"), self.counter),)
            counting = None if self.counter is None else "entry"
            return counter, (self.route, self.policy, self.path, self.var_type, (), (), counting)
        if capture is not None and self.has_pending() and not flax_internals.copying_for_a_read():
            # The trace hands this sink on (out of a call or a transform):
            # its summaries, and those of every value its trace deferred, now.
            # (A copy for ``name in var`` inside ``sow`` keeps the placeholders.)
            capture.summarize_deferred()
        names = tuple(self.values)
        children = [(jax.tree_util.DictKey(n), self.values[n]) for n in names]
        if self.counter is not None:
            children.append((jax.tree_util.GetAttrKey("counter"), self.counter))
        layouts = tuple((n, self.layouts[n]) for n in names if n in self.layouts)
        return tuple(children), (
            self.route,
            self.policy,
            self.path,
            self.var_type,
            names,
            layouts,
            self.counting,
        )

    def _flatten(self):
        children, aux = self._flatten_with_keys()
        return tuple(value for _, value in children), aux

    @classmethod
    def _unflatten(cls, aux, children):
        route, policy, path, var_type, names, layouts, counting = aux
        values = dict(zip(names, children[: len(names)], strict=True))
        counter = children[len(names)] if counting is not None else None
        sink = cls(route, policy, path, var_type, values, dict(layouts), counter, counting)
        capture = _ROUTES.get(route)
        if capture is None or capture.recorder.policy != policy:
            return sink  # a copy kept from another capture, or a capture since ended: no one's
        if counting == "entry" and is_tracer(counter):
            # A trace takes the model in: this call's step decides the gate.
            sink.counter, sink.counting = capture.enter_trace(counter), "carried"
        elif counting != "entry" and not flax_internals.tracing() and _all_concrete(children):
            capture.take(sink)  # the outputs of a call, back in Python
        return sink


class _Pending:
    """Where a traced value's summary will go, once its trace hands the sink on."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<summary deferred to the end of the trace>"


_PENDING = _Pending()


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
    """Whether every leaf is a computed array (JAX also rebuilds outputs around shapes alone)."""
    return all(isinstance(x, jax.Array) and not is_tracer(x) for x in jax.tree.leaves(tree))


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
    if capture.recorder.keep == "stream":
        if layout is not None:
            capture.recorder.add_row(path, var_type, name, arrays[0], layout, order)
        else:
            capture.recorder.add(path, var_type, name, arrays[0])
        return
    # Held with the call's other values, to be recorded with them in the order they were traced.
    value = unpack_summary(arrays[0], *layout) if layout is not None else arrays[0]
    capture.hold(order, (path, var_type, name), value)


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
        recorder.drain()  # values from earlier compiled calls, callbacks in flight included, come first
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
                # Flax 0.12.9 added a flag that makes sow and perturb do nothing outside a capture.
                flag = hasattr(flax.config, "nnx_sow_capture_noop")
                warnings.warn(
                    f"'{where}' holds values stored by Module.sow called outside a capture. Such "
                    "values grow by one entry per call, which makes nnx.jit re-trace and "
                    "recompile a step on every call (often ~10x slower). Remove them with "
                    f"nnx.pop(model, nnx.{type(value).__name__}) and sow inside "
                    "jaxcapture_nb.capture(model) instead"
                    + (
                        "; flax.config.update('nnx_sow_capture_noop', True) makes Module.sow "
                        "outside a capture store nothing."
                        if flag
                        else "."
                    ),
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
        if any(_records_methods(var) for var in flax_internals.captures(self)):
            self.sow(nnx.Intermediate, name, out)
        return out

    return wrapper


def _records_methods(variable: Any) -> bool:
    """Whether a ``__captures__`` Variable is our sink, of a capture that records method outputs.

    Method wrappers are installed on classes, which other models being
    captured at the same time may share.
    """
    sink = flax_internals.held_value(variable)
    capture = _ROUTES.get(sink.route) if isinstance(sink, _Sink) else None
    return capture is not None and capture.methods


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
        self._variables: dict[tuple[tuple[Any, ...], type], nnx.Variable] = {}
        self._classes: list[type] = []
        self._route: int | None = None
        # Calls: a call's sinks are taken in (see ``entering``), then its
        # outputs handed over (``take``). JAX may rebuild a call's outputs
        # twice; a (path, Variable type) is taken once per call.
        self._call = 0
        self._returned = False  # a call's values came back since the last call began
        self._taken: set[tuple[tuple[Any, ...], type]] = set()
        self._holding = threading.Lock()  # callbacks hold values from the runtime's threads
        # Values of traced calls, until ``deliver`` records them (capture, not
        # stream): (call, trace order, path, Variable type, name, value), all
        # of them under keep="all", else the latest per site.
        self._held: list[tuple[int, int, tuple[Any, ...], type, str, Any]] = []
        self._latest: dict[tuple[Any, ...], tuple[int, int, tuple[Any, ...], type, str, Any]] = {}
        # Per site, how many values the latest one replaced, so records still number their calls.
        self._replaced: dict[tuple[Any, ...], int] = {}
        # With watch(every=N), a compiled step summarizes only on every N-th
        # call: a counter carried in the root sink decides on the device, and
        # the same count here says which calls' rows are real.
        self._every = recorder.every if recorder.keep == "stream" and not recorder.grads else 1
        self._steps_returned = 0
        self._step_returned = False
        self._gate: Any = None
        # Traced values whose summaries wait for the end of their trace: (the
        # trace the sow ran in, sink, name, index among the name's values, value, gate).
        self._deferred: list[tuple[Any, _Sink, str, int, jax.Array, Any]] = []

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
            variables = []
            for var_type in self.var_types:
                counter = jnp.zeros((), jnp.int32) if self._counts_steps(path, var_type) else None
                sink = _Sink(self._route, self.recorder.policy, path, var_type, counter=counter)
                variables.append(variable := var_type(sink))
                self._variables[(path, var_type)] = variable
            flax_internals.set_captures(module, tuple(variables))
        if self.methods:
            self._classes = list(dict.fromkeys(type(m) for _, m in modules))
            for cls in self._classes:
                _method_patches.acquire(cls)

    def _counts_steps(self, path: tuple[Any, ...], var_type: type) -> bool:
        """Whether this sink carries the step counter: the root's first, when steps are skipped."""
        return self._every > 1 and path == () and var_type is self.var_types[0]

    def holds(self, sink: _Sink) -> bool:
        """Whether ``sink`` is the one a captured module holds now (not a copy inside a trace)."""
        variable = self._variables.get((sink.path, sink.var_type))
        return variable is not None and flax_internals.held_value(variable) is sink

    def entering(self, sink: _Sink) -> None:
        """A sink the model holds is being taken into a call: a new call, if outputs came since."""
        if self._returned:
            self._returned = False
            self._taken.clear()
            self._call += 1
            self.recorder.call_returned()
        if self._deferred and not flax_internals.tracing():
            self._deferred = []  # left by a trace that raised before handing its sinks on
        if sink.counter is not None and self._step_returned:
            self._step_returned = False
            self._steps_returned += 1

    def enter_trace(self, counter: jax.Array) -> jax.Array:
        """Sets the gate of the trace taking the model in; returns the counter to carry out."""
        self._gate = counter % self._every == 0
        return counter + 1

    def gate(self) -> Any:
        """Whether the running trace's call records (a traced bool), or None to summarize always.

        Sows inside ``lax.cond``, ``scan``, ``vmap`` or ``grad`` within the
        step use the step's gate too; a trace that did not take the model in
        (a step over a submodule) has none, and its rows are thinned on the host.
        """
        return self._gate if self._gate is not None and flax_internals.usable_here(self._gate) else None

    def take(self, sink: _Sink) -> None:
        """Takes what a call left in a sink, as the call returns, once per call."""
        site = (sink.path, sink.var_type)
        if site in self._taken or not (sink.values or sink.counter is not None):
            return
        self._taken.add(site)
        self._returned = True
        if sink.counter is not None:
            self._step_returned = True
        orders = _trace_orders.get(self._route, {})
        for name, values in sink.values.items():
            key = (sink.path, sink.var_type, name)
            for k, value in enumerate(values):
                order = orders.get((*key, k), 0)
                if self.recorder.keep != "stream":
                    self.hold(order, key, value)
                    continue
                shape, dtype, gated = sink.layouts[name][k]
                if not gated:
                    self.recorder.add_row(*key, value, (shape, dtype), order)
                elif self._steps_returned % self._every == 0:
                    self.recorder.add_row(*key, value, (shape, dtype), order, sampled=True)
                else:
                    self.recorder.skip(*key)

    def defer(self, sink: _Sink, name: str, index: int, value: jax.Array, gate: Any) -> None:
        """Notes a traced value to summarize with the rest of its trace's (see ``summarize_deferred``)."""
        self._deferred.append((flax_internals.current_trace(), sink, name, index, value, gate))

    def summarize_deferred(self) -> None:
        """Summarizes, in one batch, every value deferred by sows that ran in the running trace.

        Called as the first sink holding such values is handed on, out of a
        compiled call or a transform (``scan``, ``grad``, ``remat``): by then
        the trace has sowed all it sows at its level, and summaries made
        together compile once per distinct size rather than once per site.
        The sows' trace, not their values', decides: under ``grad`` an
        integer value (top-k indices, say) is a tracer of the enclosing step.
        """
        level = flax_internals.current_trace()
        batch = [d for d in self._deferred if d[0] is level]
        self._deferred = [d for d in self._deferred if d[0] is not level]
        bins = self.recorder.bins
        by_gate: dict[int, list[tuple[Any, _Sink, str, int, jax.Array, Any]]] = {}
        for d in batch:
            by_gate.setdefault(id(d[5]), []).append(d)
        for group in by_gate.values():
            values = [d[4] for d in group]
            if self.recorder.keep == "stream":
                results = step_rows(values, bins, group[0][5])
            else:
                results = step_summaries(values, bins)
            for (_, owner, name, index, _, _), result in zip(group, results, strict=True):
                owner.settle_pending(index, name, result)

    def hold(self, order: int, site: tuple[Any, ...], value: Any) -> None:
        """Holds a value of the current call until ``deliver``: all of them, or the latest per site."""
        with self._holding:
            self._returned = True
            if self.recorder.keep == "all":
                self._held.append((self._call, order, *site, value))
            else:
                if site in self._latest:
                    self._replaced[site] = self._replaced.get(site, 0) + 1
                self._latest[site] = (self._call, order, *site, value)

    def note_trace_order(self, path: tuple[Any, ...], var_type: type, name: str, index: int) -> None:
        """Remembers when the ``index``-th value a site holds was sowed while tracing."""
        _trace_orders.setdefault(self._route, {})[(path, var_type, name, index)] = next(_trace_counter)

    def deliver(self) -> None:
        """Records what traced calls left, call by call, each in the order it sowed."""
        if self._route in _callback_routes:
            jax.effects_barrier()  # host callbacks still in flight
        with self._holding:
            held = sorted([*self._held, *self._latest.values()], key=lambda h: h[:2])
            replaced, self._held, self._latest, self._replaced = self._replaced, [], {}, {}
        for _, _, path, var_type, name, value in held:
            value = value.value if isinstance(value, _Static) else value
            self.recorder.add(path, var_type, name, value, skipped=replaced.get((path, var_type, name), 0))

    def uninstall(self) -> None:
        """Removes every trace of the capture from the model; safe to repeat."""
        try:
            self.deliver()
        finally:
            for cls in self._classes:
                _method_patches.release(cls)
            self._classes = []
            for variable in self._variables.values():
                # Copies of the model's state taken during the block hold this
                # sink; emptied, they carry nothing into a later capture.
                sink = flax_internals.held_value(variable)
                if isinstance(sink, _Sink):
                    sink.values, sink.layouts = {}, {}
            self._variables = {}
            for _, module in self._modules:
                flax_internals.remove_captures(module)
            self._modules = []
            self._gate, self._deferred = None, []
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
