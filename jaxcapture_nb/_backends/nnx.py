"""How a capture hooks into Flax NNX: ``Module.sow``, ``perturb`` and methods.

``Module.sow`` stores into ``module.__captures__`` when that attribute
exists. :meth:`NnxCapture.install` puts a :class:`~jaxcapture_nb._backends.nnx_sink.Sink`
there for every captured Variable type of every submodule; the sink records
eager values at once and carries traced ones out of ``nnx.jit``/``nnx.scan``/
``nnx.vmap`` as pytree data (see ``nnx_sink``), gradients leave by host
callback (``nnx_callbacks``), and :class:`NnxCapture` hands both to the
recorder: values it holds (``Recorder``) in trace order when the recorder
drains it, packed rows (``Stream``) as each call returns, numbered by the
step (call) they belong to. What the recorder is able to do is all it is
asked (``_protocols.SiteRecorder``).

Nothing is patched on Flax's classes except, with ``methods=True``, the
model's own module classes, whose wrappers sow only on instances that carry
our sink: any other instance of the same class behaves as if untouched
(``nnx_install``).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from jaxcapture_nb._backends import flax_internals
from jaxcapture_nb._backends.nnx_install import conflict_message, method_patches, warn_sowed_attributes
from jaxcapture_nb._backends.nnx_modules import iter_modules
from jaxcapture_nb._backends.nnx_routes import (
    ROUTES,
    callback_routes,
    lock,
    route_for,
    trace_counter,
    trace_orders,
)
from jaxcapture_nb._backends.nnx_sink import Sink, Static
from jaxcapture_nb._batch import nonfinite_rows
from jaxcapture_nb._protocols import SiteRecorder
from jaxcapture_nb._step_table import IN_TABLE, StepTable, TableSite, TableSlot, compile_ahead, sizes_of
from jaxcapture_nb._summary import step_rows, step_summaries, step_tables
from jaxcapture_nb._tracing import current_trace, tracing, usable_here


class NnxCapture:
    """Installs sinks on every submodule of ``model`` and removes them again.

    Args:
      model: the root module.
      var_types: the Variable types to capture.
      recorder: where values go.
      methods: also record the output of every method call.
    """

    def __init__(self, model: nnx.Module, var_types: tuple[type, ...], recorder: SiteRecorder, methods: bool):
        self.model = model
        self.recorder = recorder
        extra = (*((nnx.Intermediate,) if methods else ()), *((nnx.Perturbation,) if recorder.grads else ()))
        self.var_types = tuple(dict.fromkeys((*var_types, *extra)))
        self.methods = methods
        self._modules: list[tuple[tuple[Any, ...], nnx.Module]] = []
        self._variables: dict[tuple[tuple[Any, ...], type], nnx.Variable] = {}
        self._classes: list[type] = []
        self._route = -1  # no model's, until install()
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
        # A recorder that takes rows numbers them by step: a counter carried in
        # the root sink through every compiled call that takes the model in
        # is the step on the device (the gate of watch(every=N), and what
        # callbacks send), and the same count here numbers the rows a call
        # hands over as it returns.
        self._steps_returned = 0
        self._step_returned = False
        self._step: Any = None  # the running trace's step (a traced int)
        self._gate: Any = None  # whether it is recorded (a traced bool), when steps are skipped
        # Per site, how many values the running step's trace sowed (for callbacks).
        self._in_step: dict[tuple[Any, ...], int] = {}
        # Traced values whose summaries wait for the end of their trace: (the
        # trace the sow ran in, sink, name, index among the name's values, value, gate).
        self._deferred: list[tuple[Any, Sink, str, int, jax.Array, Any]] = []

    def install(self) -> None:
        flax_internals.check()
        # nnx.List/nnx.Dict are containers: they never sow, and an attribute
        # next to their integer keys would break Flax's sorting of state paths.
        modules = [
            (path, m) for path, m in iter_modules(self.model) if not isinstance(m, (Sequence, Mapping))
        ]
        for path, module in modules:
            if flax_internals.has_captures(module):
                raise RuntimeError(conflict_message(path, flax_internals.captures(module)))
        warn_sowed_attributes(modules, self.var_types)
        self._route = route_for(self.model)
        with lock:
            ROUTES[self._route] = self
        self.recorder.add_drain(self.deliver)
        self._modules = modules
        for path, module in modules:
            variables = []
            for var_type in self.var_types:
                counter = jnp.zeros((), jnp.int32) if self._counts_steps(path, var_type) else None
                sink = Sink(self._route, self.recorder.policy, path, var_type, counter=counter)
                variables.append(variable := var_type(sink))
                self._variables[(path, var_type)] = variable
            flax_internals.set_captures(module, tuple(variables))
        if self.methods:
            self._classes = list(dict.fromkeys(type(m) for _, m in modules))
            for cls in self._classes:
                method_patches.acquire(cls)

    def _counts_steps(self, path: tuple[Any, ...], var_type: type) -> bool:
        """Whether this sink carries the step counter: the root's first, when rows are numbered by step."""
        return not self.recorder.holds_values and path == () and var_type is self.var_types[0]

    def holds(self, sink: Sink) -> bool:
        """Whether ``sink`` is the one a captured module holds now (not a copy inside a trace)."""
        variable = self._variables.get((sink.path, sink.var_type))
        return variable is not None and flax_internals.held_value(variable) is sink

    def entering(self, sink: Sink) -> None:
        """A sink the model holds is being taken into a call: a new call, if outputs came since."""
        if self._returned:
            self._returned = False
            self._taken.clear()
            self._call += 1
            self.recorder.call_returned()
        if self._deferred and not tracing():
            self._deferred = []  # left by a trace that raised before handing its sinks on
        if sink.counter is not None and self._step_returned:
            self._step_returned = False
            self._steps_returned += 1

    def enter_trace(self, counter: jax.Array) -> jax.Array:
        """Sets the step and gate of the trace taking the model in; returns the counter to carry out.

        Values sowed under ``grads=True`` are sent by callback whatever the
        step, and the recorder drops those of the steps it skips.
        """
        self._step, self._in_step = counter, {}
        skips = self.recorder.every > 1 and not self.recorder.grads
        self._gate = self.recorder.records_step(counter) if skips else None
        return counter + 1

    def step_here(self) -> Any:
        """The running trace's step (a traced int), or None where no trace took the whole model in."""
        usable = self._step is not None and usable_here(self._step)
        return self._step if usable else None

    def place_in_step(self, site: tuple[Any, ...]) -> tuple[Any, int]:
        """The running step (see :meth:`step_here`) and how many values ``site`` sowed before in it.

        Outside a step that took the model in: ``(None, 0)``, and the
        recorder numbers the site's values.
        """
        step = self.step_here()
        if step is None:
            return None, 0
        index = self._in_step.get(site, 0)
        self._in_step[site] = index + 1
        return step, index

    def gate(self) -> Any:
        """Whether the running trace's call records (a traced bool), or None to summarize always.

        Sows inside ``lax.cond``, ``scan``, ``vmap`` or ``grad`` within the
        step use the step's gate too; a trace that did not take the model in
        (a step over a submodule) has none, and its rows are thinned on the host.
        """
        return self._gate if self._gate is not None and usable_here(self._gate) else None

    def take(self, sink: Sink) -> None:
        """Takes what a call left in a sink, as the call returns, once per call."""
        site = (sink.path, sink.var_type)
        if site in self._taken or not (sink.values or sink.tables or sink.counter is not None):
            return
        self._taken.add(site)
        self._returned = True
        if sink.counter is not None:
            self._step_returned = True
        orders = trace_orders.get(self._route, {})
        for name, values in sink.values.items():
            key = (sink.path, sink.var_type, name)
            for k, value in enumerate(values):
                if value is IN_TABLE:
                    continue
                order = orders.get((*key, k), 0)
                if self.recorder.holds_values:
                    self.hold(order, key, value)
                    continue
                shape, dtype, stepped = sink.layouts[name][k]
                step = self._steps_returned if stepped else None
                self.recorder.add_row(*key, value, (shape, dtype), order, step=step, index=k)
        for table in sink.tables:
            if self.recorder.holds_values:
                packed = table.packed(self.recorder.bins)
                for k, s in enumerate(table.sites):
                    self.hold(s.order, (s.path, s.var_type, s.name), TableSlot(packed, k, s.shape, s.dtype))
            else:
                self.recorder.add_table(table, step=self._steps_returned if table.stepped else None)

    def defer(self, sink: Sink, name: str, index: int, value: jax.Array, gate: Any) -> None:
        """Notes a traced value to summarize with the rest of its trace's (see ``summarize_deferred``)."""
        self._deferred.append((current_trace(), sink, name, index, value, gate))

    def summarize_deferred(self) -> list[StepTable]:
        """Summarizes, in one batch, every value deferred by sows that ran in the running trace.

        Called as the first sink holding such values is handed on, out of a
        compiled call or a transform (``scan``, ``grad``, ``remat``): by then
        the trace has sowed all it sows at its level. Small values go into
        tables, returned for that sink to carry out and summarized after the
        call (see :mod:`jaxcapture_nb._step_table`); the rest are summarized
        here, together, which compiles once per distinct size rather than
        once per site. The sows' trace, not their values', decides: under
        ``grad`` an integer value (top-k indices, say) is a tracer of the
        enclosing step.
        """
        level = current_trace()
        batch = [d for d in self._deferred if d[0] is level]
        self._deferred = [d for d in self._deferred if d[0] is not level]
        bins = self.recorder.bins
        by_gate: dict[int, list[tuple[Any, Sink, str, int, jax.Array, Any]]] = {}
        for d in batch:
            by_gate.setdefault(id(d[5]), []).append(d)
        tables = []
        orders = trace_orders.get(self._route, {})
        for group in by_gate.values():
            values = [d[4] for d in group]
            in_tables = set()
            for members, table in step_tables(values):
                sites = []
                for i in members:
                    _, owner, name, index, value, _ = group[i]
                    order = orders.get((owner.path, owner.var_type, name, index), 0)
                    sites.append(
                        TableSite(owner.path, owner.var_type, name, index, order, value.shape, value.dtype)
                    )
                    owner.settle_pending(index, name, IN_TABLE)
                _, first, name, index, _, _ = group[members[0]]
                stepped = first.layouts[name][index][2] if name in first.layouts else False
                if self.recorder.holds_values:
                    # Summarized as the call returns: compile beside the step.
                    tables.append(StepTable(table, tuple(sites), stepped))
                    compile_ahead(sizes_of(tables[-1].sites), table.dtype, bins)
                else:
                    # A stream may never summarize a step's table (see
                    # Stream.add_table), and still flags the sites that held
                    # a NaN or an Inf.
                    tables.append(StepTable(table, tuple(sites), stepped, nonfinite_rows(table)))
                in_tables.update(members)
            rest = [d for i, d in enumerate(group) if i not in in_tables]
            if not rest:
                continue
            values = [d[4] for d in rest]
            if not self.recorder.holds_values:
                results = step_rows(values, bins, rest[0][5])
            else:
                results = step_summaries(values, bins)
            for (_, owner, name, index, _, _), result in zip(rest, results, strict=True):
                owner.settle_pending(index, name, result)
        return tables

    def hold(self, order: int, site: tuple[Any, ...], value: Any) -> None:
        """Holds a value of the current call until ``deliver``: all of them, or the latest per site."""
        with self._holding:
            self._returned = True
            if self.recorder.keeps_every_value:
                self._held.append((self._call, order, *site, value))
            else:
                if site in self._latest:
                    self._replaced[site] = self._replaced.get(site, 0) + 1
                self._latest[site] = (self._call, order, *site, value)

    def note_trace_order(self, path: tuple[Any, ...], var_type: type, name: str, index: int) -> None:
        """Remembers when the ``index``-th value a site holds was sowed while tracing."""
        trace_orders.setdefault(self._route, {})[(path, var_type, name, index)] = next(trace_counter)

    def deliver(self) -> None:
        """Records what traced calls left, call by call, each in the order it sowed."""
        if self._route in callback_routes:
            jax.effects_barrier()  # host callbacks still in flight
        with self._holding:
            held = sorted([*self._held, *self._latest.values()], key=lambda h: h[:2])
            replaced, self._held, self._latest, self._replaced = self._replaced, [], {}, {}
        for _, _, path, var_type, name, value in held:
            value = value.value if isinstance(value, Static) else value
            self.recorder.add(path, var_type, name, value, skipped=replaced.get((path, var_type, name), 0))

    def uninstall(self) -> None:
        """Removes every trace of the capture from the model; safe to repeat."""
        try:
            self.deliver()
        finally:
            for cls in self._classes:
                method_patches.release(cls)
            self._classes = []
            for variable in self._variables.values():
                # Copies of the model's state taken during the block hold this
                # sink; emptied, they carry nothing into a later capture.
                sink = flax_internals.held_value(variable)
                if isinstance(sink, Sink):
                    sink.values, sink.layouts, sink.tables = {}, {}, ()
            self._variables = {}
            for _, module in self._modules:
                flax_internals.remove_captures(module)
            self._modules = []
            self._step, self._gate, self._deferred = None, None, []
            with lock:
                ROUTES.pop(self._route, None)
