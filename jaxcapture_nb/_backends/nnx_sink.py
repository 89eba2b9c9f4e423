"""The sink: what ``Module.sow`` and ``Module.perturb`` store into while a model is captured.

``Module.sow`` stores into ``module.__captures__`` when that attribute exists:
a tuple of Variables, one per captured type, each holding a mapping. Flax's
own ``nnx.capture`` puts plain dicts there; we put a :class:`Sink`, a small
pytree that

* says no name is present, so every ``sow`` arrives as its own value (a
  default ``sow`` passes ``(value,)``) instead of a tuple that grows;
* records concrete (eager) values at once, and holds traced ones as pytree
  children. Because ``__captures__`` is pytree data, ``nnx.jit``, ``nnx.scan``
  and ``nnx.vmap`` carry the children out of the trace (stacked, for
  scan/vmap). As a call returns, JAX rebuilds the sink around the concrete
  values and the sink hands them to the capture (``NnxCapture.take``);
* for a recorder that summarizes (``keep="summary"``, and
  :func:`~jaxcapture_nb.watch`), holds no value: the values a trace sowed
  wait until it hands its sinks on (``NnxCapture.summarize_deferred``).
  Then the small ones are laid out as one table, which the first sink
  handed on carries out and the host summarizes as the call returns (see
  :mod:`jaxcapture_nb._step_table`); their sites hold ``IN_TABLE``. The
  rest are summarized in the trace, together: one :class:`Summary`, or
  one packed row, each;
* never carries a value into a call: the sink a captured module holds
  flattens to nothing (or, for a watch, the root's first sink to the step
  counter alone), so a compiled step takes the same inputs on every call
  and is traced once, whatever the keep policy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
from flax import nnx

from jaxcapture_nb._backends import flax_internals
from jaxcapture_nb._backends.nnx_callbacks import GradientTap, report
from jaxcapture_nb._backends.nnx_routes import ROUTES, readbacks
from jaxcapture_nb._records import leaf_sites
from jaxcapture_nb._step_table import IN_TABLE, StepTable
from jaxcapture_nb._tracing import is_traced, is_tracer, tracing

if TYPE_CHECKING:
    from jaxcapture_nb._backends.nnx import NnxCapture


def _unwrap(value: Any) -> Any:
    # The default ``sow`` reduce wraps each value in a 1-tuple.
    return value[0] if isinstance(value, tuple) and len(value) == 1 else value


class Sink:
    """The mapping that ``sow`` and ``perturb`` write into; see the module doc.

    Children: ``values`` (name -> tuple of the values a trace stored, or,
    streaming, their packed summary rows), the ``tables`` of small values
    it carries out for its trace, then, on the model's root sink of a
    watch, the step ``counter``. Static: the route, the recorder's policy
    (what a trace stores depends on it, so a compiled step must not be reused
    across policies), the module path, the Variable type, the shape and dtype
    of each summarized value and whether it has a step (see ``layouts``), and
    the counter's state.

    The sink a module holds while captured never carries values into a call
    (see :meth:`_flatten_with_keys`), so a compiled step takes the same
    inputs on every call and is traced once.
    """

    __slots__ = ("route", "policy", "path", "var_type", "values", "layouts", "tables", "counter", "counting")

    def __init__(
        self, route, policy, path, var_type, values=None, layouts=None, tables=(), counter=None, counting=None
    ):
        self.route = route
        self.policy = policy
        self.path = path
        self.var_type = var_type
        self.values: dict[str, tuple[Any, ...]] = values if values is not None else {}
        # Rows (a recorder that does not hold values): name -> ((shape, dtype,
        # stepped), ...), one per row in values. ``stepped`` rows were sowed in
        # a trace that took the whole model in, whose call number is their step.
        self.layouts: dict[str, tuple[tuple[tuple[int, ...], Any, bool], ...]] = layouts or {}
        # The tables of small values this sink carries out for its whole trace
        # (see NnxCapture.summarize_deferred); their sites hold IN_TABLE.
        self.tables: tuple[StepTable, ...] = tables
        self.counter = counter
        # "entry": the counter as a call takes it in; "carried": counted, on its way out.
        self.counting: str | None = counting

    def __contains__(self, name: object) -> bool:
        return False

    def __getitem__(self, name: str) -> Any:
        # Only ``perturb`` reads back, right after storing zeros of this shape,
        # and returns ``what we return + value``.
        capture = ROUTES.get(self.route)
        if capture is not None and capture.recorder.grads and issubclass(self.var_type, nnx.Perturbation):
            return GradientTap((self.route, self.path, name))
        # Flax reads through a copy of this sink (``Variable.get_value``), so
        # what was stored is looked up by site, not on the object.
        stored = readbacks.get(self.route, {}).get((self.path, self.var_type, name))
        if stored is None:
            raise KeyError(name)
        treedef, layouts = stored
        return jax.tree.unflatten(treedef, [jnp.zeros(shape, dtype) for shape, dtype in layouts])

    def __setitem__(self, name: str, value: Any) -> None:
        capture = ROUTES.get(self.route)
        recorder = capture.recorder if capture is not None else None
        value = _unwrap(value)
        # A trace that hands over rows never reads back (see __getitem__),
        # and a change of this static data would make nnx.jit trace the step again.
        if recorder is None or recorder.holds_values:
            self._remember_readback(name, value)
        if recorder is None:
            return
        if recorder.grads and issubclass(self.var_type, nnx.Perturbation):
            return  # the zeros ``perturb`` stores; the tap records the value itself
        # Traced or not is decided for the whole value: its non-array leaves
        # travel with the traced ones, so a compiled call records them as often.
        traced = is_traced(value)
        for leaf_name, leaf in leaf_sites(name, value):
            if recorder.accepts(self.path, leaf_name):
                self._store(capture, leaf_name, leaf, traced)  # type: ignore[arg-type]  # not None with a recorder

    def _remember_readback(self, name: str, value: Any) -> None:
        """Keeps the structure, shapes and dtypes of a stored array value, for ``__getitem__``."""
        leaves, treedef = jax.tree.flatten(value)
        if leaves and all(isinstance(x, jax.Array) for x in leaves):
            layouts = tuple((tuple(x.shape), x.dtype) for x in leaves)
            readbacks.setdefault(self.route, {})[(self.path, self.var_type, name)] = (treedef, layouts)

    def _store(self, capture: NnxCapture, name: str, value: Any, traced: bool) -> None:
        """Records one leaf of a sowed value now, or holds it until the trace's call returns."""
        recorder = capture.recorder
        if not traced:
            recorder.drain()  # values from earlier jitted calls come first
            recorder.add(self.path, self.var_type, name, value)
            return
        is_array = isinstance(value, jax.Array)
        append = recorder.keeps_every_value
        if not recorder.holds_values:
            if not is_array:
                return  # rows are summaries of arrays
            if recorder.grads:
                # Gradients leave the backward pass only by callback; the
                # values of the same run go the same way, so that everything
                # arrives in execution order.
                report((self.route, self.path, name), self.var_type, value)
                return
            index = self._hold(capture, name, PENDING, append)
            capture.defer(self, name, index, value, capture.gate())
            layout = (tuple(value.shape), value.dtype, capture.step_here() is not None)
            self.layouts[name] = (*self.layouts.get(name, ()), layout)
        elif not is_array:
            self._hold(capture, name, Static(value), append)  # no output of the trace
        elif recorder.summarizes_in_trace:
            index = self._hold(capture, name, PENDING, append)
            capture.defer(self, name, index, value, None)
        else:
            self._hold(capture, name, value, append)

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
        return any(v is PENDING for held in self.values.values() for v in held)

    # pytree protocol
    def _flatten_with_keys(self):
        capture = ROUTES.get(self.route)
        if capture is not None and capture.holds(self):
            # The sink the model holds is being taken into a call (or read
            # from the model's state): what it held was handed over as the
            # last call returned, so it carries only the step counter, and
            # every call of a compiled step takes in the same structure.
            capture.entering(self)
            self.values, self.layouts, self.tables = {}, {}, ()
            if self.counter is None:
                return _NOTHING_CARRIED, (self.route, self.policy, self.path, self.var_type, (), (), (), None)
            children = ((_TABLES, ()), (_COUNTER, self.counter))
            return children, (self.route, self.policy, self.path, self.var_type, (), (), (), "entry")
        if capture is not None and self.has_pending() and not flax_internals.copying_for_a_read():
            # The trace hands this sink on (out of a call or a transform):
            # its summaries, and those of every value its trace deferred, now.
            # (A copy for ``name in var`` inside ``sow`` keeps the placeholders.)
            self.tables = (*self.tables, *capture.summarize_deferred())
        # A site whose values all went into a table has nothing to carry, so
        # only its name and count travel, as static data: a call's output
        # then holds no node per site, and its return costs nothing per site.
        names = tuple(n for n, held in self.values.items() if any(v is not IN_TABLE for v in held))
        tabled = tuple((n, len(held)) for n, held in self.values.items() if n not in names)
        children = [(jax.tree_util.DictKey(n), self.values[n]) for n in names]
        children.append((_TABLES, self.tables))
        if self.counter is not None:
            children.append((_COUNTER, self.counter))
        layouts = tuple(self.layouts.items())
        return tuple(children), (
            self.route,
            self.policy,
            self.path,
            self.var_type,
            names,
            tabled,
            layouts,
            self.counting,
        )

    def _flatten(self):
        children, aux = self._flatten_with_keys()
        return tuple(value for _, value in children), aux

    @classmethod
    def _unflatten(cls, aux, children):
        route, policy, path, var_type, names, tabled, layouts, counting = aux
        values = dict(zip(names, children[: len(names)], strict=True))
        tables = tuple(children[len(names)])
        counter = children[len(names) + 1] if counting is not None else None
        traced = tracing()
        if traced:
            # The trace goes on with this sink: later sows of a tabled site
            # are numbered after the values it already put in a table.
            values.update((name, (IN_TABLE,) * count) for name, count in tabled)
        elif not names:
            layouts = ()  # a call's output whose values are all in its tables: nothing is read by site
        sink = cls(route, policy, path, var_type, values, dict(layouts), tables, counter, counting)
        if not (values or tables or counter is not None):
            return sink  # carries nothing: no step starts, and a call has nothing here to hand over
        capture = ROUTES.get(route)
        if capture is None or capture.recorder.policy != policy:
            return sink  # a copy kept from another capture, or a capture since ended: no one's
        if counting == "entry" and is_tracer(counter):
            # A trace takes the model in: this call's step decides the gate.
            sink.counter, sink.counting = capture.enter_trace(counter), "carried"
        elif counting != "entry" and not traced and _computed(sink):
            capture.take(sink)  # the outputs of a call, back in Python
        return sink


# A sink's pytree keys, and what a sink that carries nothing flattens to.
_TABLES = jax.tree_util.GetAttrKey("tables")
_COUNTER = jax.tree_util.GetAttrKey("counter")
_NOTHING_CARRIED = ((_TABLES, ()),)


class _Pending:
    """Where a traced value's summary will go, once its trace hands the sink on."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<summary deferred to the end of the trace>"


PENDING = _Pending()


class Static:
    """A leaf of a traced site value that is not an array (a number, a string, an object).

    It cannot be an output of a compiled program, so it travels through the
    trace as static pytree data and is recorded, without a summary, when the
    call returns.
    """

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Static):
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


jax.tree_util.register_pytree_node(Static, lambda s: ((), s), lambda s, _: s)


def _computed(sink: Sink) -> bool:
    """Whether a sink rebuilt outside a trace holds computed arrays, not the shapes JAX also rebuilds outputs around.

    Its leaves are then all of one kind, so the first found tells: the
    counter's or a table's, when there is one, are found at once, where a
    step's values are many.
    """
    if sink.counter is not None:
        leaves = [sink.counter]
    elif sink.tables:
        leaves = [sink.tables[0].table]
    else:
        leaves = jax.tree.leaves(sink.values)
    return all(isinstance(x, jax.Array) and not is_tracer(x) for x in leaves)


jax.tree_util.register_pytree_with_keys(Sink, Sink._flatten_with_keys, Sink._unflatten, Sink._flatten)
