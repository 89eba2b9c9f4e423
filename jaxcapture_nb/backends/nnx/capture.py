"""NnxCapture: how a capture or a watch hooks into Flax NNX, and hands what a model sows to its recorder.

Installing changes the model in one place: its root module gets an exit
(see ``exits``). Every module is known by its site key, so the copies Flax
makes inside a transform are recognized too, and the model's classes get
the hooks of ``hooks``. A value sowed in eager code is recorded at once; one
sowed inside a trace joins that trace's :class:`~levels.Level` (after
leaving ``grad`` or ``vmap``, see ``jax_internals.lifted``), whose values leave
the trace through the model's exit, a lazy exit, or a host callback. What
comes back, the recorder gets as one :class:`~jaxcapture_nb.core.protocols.Delivery`
per step, numbered by its clock.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np
from flax import nnx

from jaxcapture_nb.backends.nnx import callbacks
from jaxcapture_nb.backends.nnx.checks import (
    already_captured_message,
    leftover_message,
    warn_slow_step,
    warn_sowed_attributes,
)
from jaxcapture_nb.backends.nnx.exits import EXIT, Exit, ExitVariable, computed, fresh
from jaxcapture_nb.backends.nnx.hooks import capture_of, class_hooks
from jaxcapture_nb.backends.nnx.levels import CALLBACK, LAZY, ROOT, Level
from jaxcapture_nb.backends.nnx.modules import iter_modules
from jaxcapture_nb.backends.nnx.parcel import ARRAY, ROW, STATIC, Entry, Label, Parcel, pack
from jaxcapture_nb.backends.nnx.patching import patched_keys
from jaxcapture_nb.backends.nnx.routes import (
    ROUTES,
    Site,
    lock,
    register_site,
    route_for,
    trace_order,
    unregister_route,
)
from jaxcapture_nb.backends.nnx.writer import SiteWriter
from jaxcapture_nb.core.protocols import Delivery, Item, PackedRow, SiteRecorder
from jaxcapture_nb.stats.records import leaf_sites, site_name
from jaxcapture_nb.upstream import flax_check, flax_internals
from jaxcapture_nb.upstream.jax_internals import (
    LOOPS,
    current_trace,
    differentiated,
    is_evaluation,
    is_traced,
    is_tracer,
    liftable,
    lifted,
    manual_axes,
    parent_of,
    traced_for,
    tracing,
    usable_here,
)


class NnxCapture:
    """Hooks a capture (or a watch) into one NNX model for the length of a block.

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
        self.route = -1  # no model's, until install()
        self._modules: list[tuple[tuple[Any, ...], nnx.Module]] = []
        self._keys: dict[tuple[Any, ...], Any] = {}  # path -> the site key registered for it
        self._entries: list[tuple[Any, str]] = []  # the site entries put in the keys (see mark_site)
        self._shapes: dict[tuple[Any, ...], tuple[int, ...] | None] = {}
        self._classes: list[type] = []
        self._levels: dict[int, Level] = {}
        # Leaves of calls already handed over: JAX and Flax may rebuild a call's outputs twice.
        self._taken: collections.deque[Any] = collections.deque(maxlen=64)
        # Values that came back by callback, by (step, callback): a loop over
        # layers calls one callback once per layer, and its values are stacked.
        self._groups: dict[tuple[float, int, bool], list[Parcel]] = {}
        self._groups_lock = threading.Lock()
        self._held: list[Parcel] = []  # a capture's parcels from callbacks, until drained
        # What the block saw, for what_was_lost(): values the recorder took
        # from sows, values handed over, and sows by unknown copies at the start.
        self._received = 0
        self._delivered = 0
        self._strangers_before: dict[type, int] = {}
        self._in_shards: dict[str, tuple[str, ...]] = {}  # sites sowed in a shard_map body: its mesh axes
        self._called_back = False
        self._copied = False  # whether the block made a copy of the model that may outlive it (see _unmark)
        self._warned_slow = False  # whether a watched step's values left by callback for want of an exit

    # -- installing -----------------------------------------------------------

    def install(self) -> None:
        flax_check.check()
        # nnx.List/nnx.Dict are containers: they never sow, and an attribute
        # next to their integer keys would break Flax's sorting of state paths.
        modules = [
            (path, m) for path, m in iter_modules(self.model) if not isinstance(m, (Sequence, Mapping))
        ]
        for path, module in modules:
            if flax_internals.leftover_captures(module) is not None:
                raise RuntimeError(leftover_message(path))
            if capture_of(module)[0] is not None:
                raise RuntimeError(already_captured_message(path))
        warn_sowed_attributes(modules, self.var_types)
        self.route = route_for(self.model)
        with lock:
            ROUTES[self.route] = self
        self.recorder.add_drain(self.drain)
        self._modules = modules
        self._register(modules)
        self._classes = list(dict.fromkeys(type(m) for _, m in modules))
        for cls in self._classes:
            class_hooks.acquire(cls, self.methods)
        self._strangers_before = {cls: class_hooks.strangers.get(cls, 0) for cls in self._classes}
        if modules and modules[-1][1] is self.model:
            self._add_root_exit()

    def _register(self, modules: list[tuple[tuple[Any, ...], nnx.Module]]) -> None:
        """Registers every module's site key, giving each module one of its own."""
        owners: dict[int, nnx.Module] = {}
        for path, module in modules:
            key = flax_internals.own_site_key(module)
            if owners.setdefault(id(key), module) is not module:
                # Two modules of the model hold one mapping (one is a clone of
                # the other): each needs its own to be told apart.
                key = flax_internals.fresh_site_key(module)
                owners[id(key)] = module
            # Any copy of the module may take a lazy exit inside a transform.
            flax_internals.mark_data(key, EXIT)
            self._entries.append((key, flax_internals.mark_site(key, f"{self.route} {path!r}")))
            register_site(key, Site(self.route, path))
            self._keys[path] = key
            self._shapes[path] = flax_internals.first_variable_shape(module)

    def _add_root_exit(self) -> None:
        lanes = flax_internals.ensemble_size(self.model)
        vars(self.model)[EXIT] = ExitVariable(Exit(self.route, ROOT, (), self.recorder.policy, lanes=lanes))

    def refresh_sites(self, module: nnx.Module) -> bool:
        """Registers the modules' keys again (an attribute set on the model changes one); whether ``module`` is now known."""
        with lock:
            if self.route not in ROUTES:
                return False
            for path, original in self._modules:
                key = flax_internals.site_key(original)
                if key is not None and id(key) not in self._registered_ids():
                    flax_internals.mark_data(key, EXIT)
                    self._entries.append((key, flax_internals.mark_site(key, f"{self.route} {path!r}")))
                    register_site(key, Site(self.route, path))
                    self._keys[path] = key
        return capture_of(module)[0] is self

    def _registered_ids(self) -> set[int]:
        from jaxcapture_nb.backends.nnx.routes import SITES

        return {k for k, site in SITES.items() if site.route == self.route}

    def uninstall(self) -> None:
        """Removes every trace of the capture from the model; safe to repeat."""
        try:
            self.drain(final=True)
        finally:
            if isinstance(vars(self.model).get(EXIT), ExitVariable):
                del vars(self.model)[EXIT]
            self._unmark()
            self._keys, self._entries = {}, []
            self._strangers = {
                cls: class_hooks.strangers.get(cls, 0) - self._strangers_before.get(cls, 0)
                for cls in self._classes
            }
            for cls in self._classes:
                class_hooks.release(cls, self.methods)
            self._classes = []
            self._levels = {}
            with lock:
                unregister_route(self.route)
                if ROUTES.get(self.route) is self:
                    del ROUTES[self.route]

    def _unmark(self) -> None:
        """Takes the capture's entries out of the modules' mappings (see ``flax_internals.mark_site``).

        In place, so that every module sharing a mapping (a view of the
        model made before the block) is as it was, unless the block made a
        copy of the model that outlives it (an ``nnx.cached_partial``): that
        copy holds the marked mappings, and its compiled step checks that
        they come out of each call as they went in, after its donated
        buffers are gone. Then the model's modules get clean mappings of
        their own (``give_back_site_key``), and the copy keeps the marked
        ones; a module a patch around the block knows by its mapping keeps it.
        """
        added = {EXIT, *(entry for _, entry in self._entries)}
        for _, module in self._modules:
            key = flax_internals.site_key(module)
            if self._copied and key is not None and id(key) not in patched_keys:
                flax_internals.give_back_site_key(module, added)
            else:
                for entry in added:
                    flax_internals.unmark(key, entry)
        if not self._copied:
            # Also the mappings the model's modules no longer hold (an attribute set in the block).
            for key in self._keys.values():
                for entry in added:
                    flax_internals.unmark(key, entry)

    def note_copy(self, module: nnx.Module) -> None:
        """Flax set the model's exit on a module outside any trace: a copy of the model made in the block."""
        if module is not self.model:
            self._copied = True

    # -- what sow and perturb write ---------------------------------------------

    def writers(self, site: Site, module: nnx.Module) -> tuple[nnx.Variable, ...]:
        """The Variables ``__captures__`` gives ``sow`` and ``perturb`` on a module of this model."""
        return tuple(var_type(SiteWriter(self, site, var_type, module)) for var_type in self.var_types)

    def receive(self, site: Site, var_type: type, name: str, value: Any, module: nnx.Module) -> None:
        """Records what a module sowed: each leaf (see ``leaf_sites``) that the recorder accepts."""
        traced = is_traced(value)
        for leaf_name, leaf in leaf_sites(name, value):
            if self.recorder.accepts(site.path, leaf_name):
                self._receive_leaf((site.path, var_type, leaf_name), leaf, traced, module)

    def _receive_leaf(self, key: tuple[Any, ...], value: Any, traced: bool, module: nnx.Module) -> None:
        recorder = self.recorder
        if not traced and not recorder.grads:
            self._received += 1
            self._deliver_single(key, value)
            return
        axes = manual_axes()
        if axes:
            # Each device holds its own shard of the value here, and neither an
            # exit nor a callback gets the whole of it out: named after the block.
            path, _, name = key
            self._in_shards.setdefault(".".join(map(str, (*path, site_name(path, name)))), axes)
            return
        self._received += 1
        trace = current_trace()
        while liftable(trace):
            value = lifted(value, trace)
            trace = parent_of(trace)
        if recorder.grads:
            # Gradients leave the backward pass only by callback; the values
            # of the same run go the same way, so that all arrive in order.
            step, index = self.place_gradient(key)
            if isinstance(value, jax.Array) or not traced:
                path, var_type, name = key
                self.report(path, var_type, name, index, next(trace_order), value, step)
            return
        if is_evaluation(trace):
            self._deliver_single(key, value, self._trains(module))
            return
        if not isinstance(value, jax.Array) and not recorder.holds_values:
            return  # a stream records summaries of arrays
        level = self.level(trace)
        if not level.trained and self._trains(module):  # one walk of the module's Variables per trace
            self._note_trained(level)
        path, var_type, name = key
        entry = Entry(path, var_type, name, level.place(key), next(trace_order), value)
        if level.way is None:
            self._choose_way(level, module, key[0])
        if self._sends(level):
            self._send(level, pack([entry], recorder, level.gate, tables=False))
        else:
            level.add(entry)

    def _trains(self, module: nnx.Module) -> bool:
        """Whether the call sowing now differentiates the model: ``module``'s Variables (or its submodules') are.

        Only a clock that tells training steps from evaluations asks; the
        answer is decided while tracing, so a compiled call pays nothing.
        """
        if self.recorder.clock.mode != "auto":
            return False
        return _holds_differentiated(module)

    def _note_trained(self, level: Level) -> None:
        """Notes that the model is differentiated in this trace: the call around it is a training step."""
        while level is not None:
            level.trained = True
            level = self._parent_level(level)

    # -- levels -------------------------------------------------------------------

    def level(self, trace: Any) -> Level:
        """The level of a staged trace, made the first time it is asked for."""
        level = self._levels.get(id(trace))
        if level is not None and level.trace is trace:
            return level
        step = gate = None
        around: frozenset[int] = frozenset()
        outermost = True
        for outer in _outer_traces(trace):
            if is_evaluation(outer):
                break
            found = self._levels.get(id(outer))
            if found is not None and found.trace is outer:
                around |= found.around
                if step is None and usable_here(found.step):
                    step, gate = found.step, found.gate
            if traced_for(outer) is not None:
                outermost = False
        level = Level(trace, step, gate, around)
        # A lazy exit of an outermost jit would reach the state a jax.jit step
        # returns, or a cached_partial's fixed graph; one of a Flax transform
        # called from eager code reaches the model, which does not keep it.
        level.outermost_jit = outermost and traced_for(trace) not in _FLAX_TRANSFORMS
        self._levels[id(trace)] = level
        return level

    def _parent_level(self, level: Level) -> Level | None:
        outer = parent_of(level.trace)
        while outer is not None and not is_evaluation(outer):
            if traced_for(outer) is not None:
                return self.level(outer)
            outer = parent_of(outer)
        return None

    def _choose_way(
        self, level: Level, module: nnx.Module, path: tuple[Any, ...], variable: nnx.Variable | None = None
    ) -> None:
        """Decides how a level's values leave (see ``levels``); a lazy exit (``variable``, or a new one) goes on ``module``."""
        sliced = level.kind != "loop" or self._sliced(module, path)
        if (
            level.kind == "branch"
            or level.outermost_jit
            or not sliced
            or EXIT not in flax_internals.site_key(module)
            or not flax_internals.graph_updates_on()
            or not flax_internals.carries_new_variables(traced_for(level.trace))
            or not flax_internals.made_in_this_trace(module)
        ):
            if level.outermost_jit and not self.recorder.holds_values and not self._warned_slow:
                self._warned_slow = True
                warn_slow_step()
            self._set_way(level, CALLBACK)
            return
        if variable is None:
            variable = ExitVariable(Exit(self.route, LAZY, path, self.recorder.policy))
        flax_internals.held_value(variable).level = level
        vars(module)[EXIT] = variable
        self._set_way(level, LAZY)

    def _sliced(self, module: nnx.Module, path: tuple[Any, ...]) -> bool:
        """Whether a loop body got ``module`` sliced (``nnx.scan`` over stacked layers), so that its state leaves stacked."""
        outside, inside = self._shapes.get(path), flax_internals.first_variable_shape(module)
        return outside is not None and inside is not None and outside[1:] == inside

    def _set_way(self, level: Level, way: str) -> None:
        level.way = way
        if self._sends(level):
            self._send_unsent(level)

    def _sends(self, level: Level) -> bool:
        """Whether a level's values leave by callback as they come: no exit carries them, or its exit must keep its structure."""
        return level.way == CALLBACK or (level.way == ROOT and level.kind != "staged")

    def _send_unsent(self, level: Level) -> None:
        parcel = level.take_unsent(self.recorder)
        if parcel:
            self._send(level, parcel)

    def _send(self, level: Level, parcel: Parcel) -> None:
        """Sends a level's parcel by callback, tagged with its step.

        A loop that took the model in tags each pass with the step the
        model carries, which moves on with each pass (see ``flatten_exit``).
        """
        passes = level.kind == "loop" and level.way == ROOT
        callbacks.send(self.route, parcel, level.step, "passes" if passes else "stacked", level.trained)
        self._note_callback(level)

    def _note_callback(self, level: Level) -> None:
        """Notes that values of this trace leave by callback: the call that runs it sows."""
        while level is not None:
            level.sowed = True
            level = self._parent_level(level)

    # -- exits --------------------------------------------------------------------

    def flatten_exit(self, exit: Exit, level: Level) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """An exit leaving its own trace: the step and the parcel it carries out (see ``exits``)."""
        if exit.role == ROOT and level.kind != "staged":
            self._send_unsent(level)
            if level.kind == "loop" and level.own_step:
                # Each pass of a loop that carries the model is a training step
                # of its own; the step it carries moves on (see _send).
                if level.next_step is None:
                    level.next_step = _like(level.step + 1, exit.step)
                return exit.passing(level.next_step)
            return exit.passing()
        parcel = level.parcel(self.recorder)
        if exit.role == ROOT and level.own_step:
            # The model came back from a loop that took it in (as its carry, or
            # broadcast, which Flax carries too): the loop scanned steps.
            level.scanned |= exit.step is not level.step_leaf and id(exit.step) not in level.fresh
            level.sowed |= level.scanned
        children: list[Any] = []
        if exit.role == ROOT:
            # A new leaf when the call sowed: tree-mode nnx.jit hands back only
            # the Variables whose leaves changed (see exits.fresh). A capture's
            # exit takes no step in, and hands out a zero.
            step = exit.step if exit.step is not None else np.float32(0)
            step = fresh(step) if level.sowed else step
            level.fresh[id(step)] = step
            children.append(step)
        if parcel:
            children.append(parcel)
        static = (exit.route, exit.role, exit.path, exit.policy)
        origin = level.serial if parcel else 0
        return tuple(children), (
            *static,
            exit.role == ROOT,
            origin,
            level.sowed,
            level.scanned,
            level.trained,
        )

    def unflatten_exit(self, exit: Exit) -> Exit:
        """An exit rebuilt: entering a trace, coming back to the trace around one, or back in Python."""
        if not tracing():
            if computed(exit):
                return self._take(exit)
            return exit
        trace = current_trace()
        if liftable(trace):
            # grad and vmap stage nothing: values sowed under them are taken out
            # as they are sowed, and so is a parcel that comes out to them. A
            # parcel packed by the staged trace around them (the model's state
            # passed into ``grad`` after the step sowed) only passes through:
            # taken again, each earlier value would get a second name.
            if (
                exit.parcel
                and exit.origin not in self._around_staged(trace)
                and all(map(is_tracer, jax.tree.leaves(exit.parcel)))
            ):
                self._lift_parcel(exit.parcel, trace, exit.trained)
                exit.parcel, exit.origin = None, 0
            return exit
        level = self.level(trace)
        if (
            exit.parcel
            and exit.origin not in level.around
            and all(map(is_tracer, jax.tree.leaves(exit.parcel)))
        ):
            # Out of a trace inside this one, which has ended: its values are
            # this level's now. (A parcel of placeholders, which JAX rebuilds
            # outputs around to learn their structure, is no one's.)
            parcel, exit.parcel, exit.origin = exit.parcel, None, 0
            level.absorb(parcel)
            if exit.trained and not level.trained:
                self._note_trained(level)
            if self._sends(level):
                self._send_unsent(level)
        if exit.role == ROOT:
            exit.level = level
            if level.way is None:
                level.way = ROOT
            if exit.step is None or level.own_step:
                return exit  # a copy, or back from a loop (see flatten_exit)
            # The model's own step here: in a loop over training steps, each pass's.
            level.step, level.step_leaf, level.own_step = _first_lane(exit.step), exit.step, True
            if self.recorder.every > 1 and not self.recorder.grads:
                level.gate = self.recorder.records_step(level.step)
        return exit

    def _around_staged(self, trace: Any) -> frozenset[int]:
        """The serials of the staged levels around ``grad``'s or ``vmap``'s ``trace`` (none outside a staged trace)."""
        while liftable(trace):
            trace = parent_of(trace)
        if trace is None or is_evaluation(trace):
            return frozenset()
        return self.level(trace).around

    def _lift_parcel(self, parcel: Parcel, trace: Any, trained: bool) -> None:
        """Takes a parcel out of ``grad``'s or ``vmap``'s trace to the first staged trace around it (or hands it over)."""
        while liftable(trace):
            parcel = jax.tree.map(lambda x, t=trace: lifted(x, t), parcel)
            trace = parent_of(trace)
        if is_evaluation(trace):
            key = _first_key(parcel)
            self._deliver_stamped(trained, key, lambda: self.recorder.clock.single(key), parcel)
            return
        level = self.level(trace)
        level.absorb(parcel)
        if trained and not level.trained:
            self._note_trained(level)
        if self._sends(level):
            self._send_unsent(level)

    def exit_set(self, module: nnx.Module, variable: nnx.Variable, exit: Exit) -> bool:
        """Flax sets an exit on a module (see ``hooks``); True when handled here (kept or dropped)."""
        if exit.role == ROOT:
            return False
        if tracing() and liftable(current_trace()):
            return True  # its parcel was taken out as it was rebuilt
        if tracing():
            level = self.level(current_trace())
            if level.way is None:
                self._choose_way(level, module, exit.path, variable)
                if level.way == LAZY:
                    return True
        # Carried here from a trace inside: its parcel joined this level (or
        # was taken) as it was rebuilt, and the module does not keep it.
        return True

    def _take(self, exit: Exit) -> Exit:
        """A call's exit back in Python: its values go to the recorder, once (JAX may rebuild an output twice)."""
        first = jax.tree.leaves((exit.step, exit.parcel))[0]
        if any(first is taken for taken in self._taken):
            return exit
        self._record_in_order()
        self._taken.append(first)
        self._levels = {}  # every trace has ended
        clock = self.recorder.clock
        if exit.role == LAZY:
            # A transform called from eager code: its values are one eager step.
            if exit.parcel:
                key = _first_key(exit.parcel)
                self._deliver_stamped(exit.trained, key, lambda: clock.single(key), exit.parcel)
            return exit
        # Recording gradients, every call is a training step: its values all leave by callback,
        # stamped as the gradients' run (see report), and the clock must move on with each call.
        trained = exit.trained or exit.scanned or self.recorder.grads
        evaluation = clock.evaluation(trained) if exit.sowed else None
        if evaluation is not None:
            if exit.parcel:
                self._deliver(evaluation.step, exit.parcel, evaluation=evaluation.gate)
        elif exit.sowed or exit.scanned:
            step = clock.call()
            if exit.parcel:
                self._deliver(step, exit.parcel)
            if exit.scanned:
                clock.scanned(step, exit.step)
        return exit

    # -- handing over ---------------------------------------------------------------

    def _items(self, parcel: Parcel | None) -> list[Item]:
        items = []
        if parcel is None:
            return items
        for label, value in zip(parcel.labels, parcel.values, strict=True):
            if label.form == STATIC:
                value = label.layout.value
            elif label.form == ROW:
                value = PackedRow(value, *label.layout)
            items.append(Item(label.path, label.var_type, label.name, label.index, label.order, value))
        return items

    def _deliver(
        self, step: int, parcel: Parcel, repeatable: bool = False, evaluation: int | None = None
    ) -> None:
        items = sorted(self._items(parcel), key=lambda item: item.order)
        self._delivered += 1
        self.recorder.deliver(Delivery(step, tuple(items), tuple(parcel.tables), repeatable, evaluation))

    def _deliver_stamped(
        self, trained: bool, key: Any, counted: Any, parcel: Parcel, repeatable: bool = False
    ) -> None:
        """Delivers values that arrived on their own: at an evaluation's step, or at the step ``counted()`` gives."""
        evaluation = self.recorder.clock.evaluation(trained, key)
        if evaluation is not None:
            self._deliver(evaluation.step, parcel, repeatable, evaluation=evaluation.gate)
        else:
            self._deliver(counted(), parcel, repeatable)

    def _deliver_single(self, key: tuple[Any, ...], value: Any, trained: bool = False) -> None:
        self._record_in_order()
        path, var_type, name = key
        item = Item(path, var_type, name, 0, next(trace_order), value)
        self._delivered += 1
        clock = self.recorder.clock
        evaluation = clock.evaluation(trained, key)
        if evaluation is None:
            self.recorder.deliver(Delivery(clock.single(key), (item,)))
        else:
            self.recorder.deliver(Delivery(evaluation.step, (item,), evaluation=evaluation.gate))

    def what_was_lost(self) -> list[str]:
        """After the block: why values the model sowed were not recorded, one sentence each (none when all were).

        Modules of the model's classes that are not the model's (another
        instance, a copy made with ``copy.deepcopy``) sow as Flax has them
        sow; they are named only when the model itself recorded nothing.
        """
        lost = []
        if self._in_shards:
            sites = ", ".join(self._in_shards)
            axes = ", ".join(sorted({axis for axes in self._in_shards.values() for axis in axes}))
            lost.append(
                f"{sites} sowed inside a shard_map body (mesh axes {axes}), where each device holds only "
                "its own shard of a value, so they were not recorded. Sow outside the body (return the value "
                "through out_specs and sow it after the shard_map), or let jax.jit partition the step over "
                "arrays sharded with jax.make_mesh, which watch and capture follow"
            )
        if self._received and not self._delivered:
            lost.append(
                f"the model sowed {self._received} values inside compiled code that never ran or whose "
                "outputs were dropped (a function only traced, with jax.eval_shape or .lower(), or a "
                "transform that does not hand back the model's state): nothing was recorded. A jitted "
                "function that merges the model from a split made in the block and returns no state "
                "(forward(graphdef, state, x)) keeps its values when it also returns nnx.state(model), "
                "or when the split is made before the block (they then leave by host callback)"
            )
        strangers = {cls.__name__: n for cls, n in getattr(self, "_strangers", {}).items() if n}
        if strangers and not self._delivered:
            names = ", ".join(f"{n} by {name}" for name, n in strangers.items())
            lost.append(
                f"values were sowed by modules of the model's classes that are not part of the model ({names}): "
                "a copy made with copy.deepcopy, or another instance; watch or capture that one too, or make "
                "copies with nnx.clone inside the block"
            )
        return lost

    def _staged_level(self) -> Level | None:
        """The level of the staged trace that runs now, past ``grad`` and ``vmap``; None outside a trace."""
        trace = current_trace() if tracing() else None
        while trace is not None and liftable(trace):
            trace = parent_of(trace)
        return None if trace is None or is_evaluation(trace) else self.level(trace)

    def place_gradient(self, key: tuple[Any, ...]) -> tuple[Any, int]:
        """The step tag and index of a value that leaves by callback with gradients (numbered at its staged trace)."""
        level = self._staged_level()
        if level is None:
            return None, 0
        return (level.step if usable_here(level.step) else None), level.place(key)

    def report(
        self, path: tuple[Any, ...], var_type: type, name: str, index: int, order: int, value: Any, step: Any
    ) -> None:
        """Records a value of the gradients' run, each leaf (see ``leaf_sites``): now if computed, else by callback."""
        leaves = [(n, v) for n, v in leaf_sites(name, value) if self.recorder.accepts(path, n)]
        if not is_traced(value):
            if self.recorder.holds_values:  # with the rest of its run, in order (see arrived)
                self._record_in_order()
                entries = [Entry(path, var_type, n, index, order, v) for n, v in leaves]
                self.arrived(Parcel(*_as_arrays(entries)), None, 0, "repeated")
                return
            for leaf_name, leaf in leaves:  # the gradients' run: a training step
                self._deliver_single((path, var_type, leaf_name), leaf, trained=True)
            return
        entries = [Entry(path, var_type, n, index, order, v) for n, v in leaves if isinstance(v, jax.Array)]
        if entries:
            parcel = pack(entries, self.recorder, None, tables=False)
            callbacks.send(self.route, parcel, step if usable_here(step) else None, "repeated", True)
            self._called_back = True
            level = self._staged_level()
            if level is not None:
                self._note_callback(level)  # the call sows: its return moves the clock on

    def arrived(self, parcel: Parcel, step: Any, callback_id: int, how: str, trained: bool = True) -> None:
        """A callback's parcel, on the host (on the runtime's thread); ``step`` as the device saw it, or None.

        ``how`` says what a second call of the callback for one step means (see ``callbacks.send``).
        """
        self._called_back = True
        clock = self.recorder.clock
        if self.recorder.holds_values:
            # A capture records in execution order: callbacks of values that do
            # not depend on each other may run in either order, so they wait,
            # to be sorted by when they were sowed.
            with self._groups_lock:
                self._held.append(parcel)
            return
        key = _first_key(parcel)
        if step is None:
            self._deliver_stamped(trained, key, lambda: clock.single(key), parcel, how == "repeated")
            return
        step = float(step)
        if how != "stacked":
            self._deliver_stamped(trained, key, lambda: clock.tagged(step), parcel, how == "repeated")
            return
        with self._groups_lock:
            self._groups.setdefault((step, callback_id, trained), []).append(parcel)
            done = [key for key in self._groups if key[0] < step]
            groups = [(key, self._groups.pop(key)) for key in sorted(done)]
        self._deliver_groups(groups)

    def _record_in_order(self) -> None:
        """In a capture, what earlier calls sent by callback is recorded before a value of a later call.

        A capture numbers each site's values as they are recorded, and holds
        callbacks' values until the end (see ``arrived``); a call's values
        that reach Python at once would otherwise be numbered before those of
        the calls that ran before it (on a busy runtime, even with ``keep="last"``).
        """
        if self.recorder.holds_values and self._called_back:
            self.drain(final=True)

    def _deliver_groups(self, groups: list[tuple[tuple[float, int, bool], list[Parcel]]]) -> None:
        clock = self.recorder.clock
        for (step, _, trained), parcels in groups:
            parcel = parcels[0] if len(parcels) == 1 else jax.tree.map(lambda *xs: np.stack(xs), *parcels)
            self._deliver_stamped(trained, _first_key(parcel), lambda step=step: clock.tagged(step), parcel)

    def drain(self, final: bool = False) -> None:
        """Hands over what callbacks left: all of it at the end of the block (``final``), else the steps done."""
        if final and self._called_back:
            jax.effects_barrier()  # host callbacks still in flight
        with self._groups_lock:
            if final:
                latest = None
            else:
                latest = max((step for step, _, _ in self._groups), default=None)
            done = [key for key in self._groups if latest is None or key[0] < latest]
            groups = [(key, self._groups.pop(key)) for key in sorted(done)]
            held, self._held = self._held, []
        self._deliver_groups(groups)
        for items in _calls_in_order([item for parcel in held for item in self._items(parcel)]):
            self._delivered += 1
            self.recorder.deliver(Delivery(0, tuple(items)))


# What the traces of Flax transforms that carry new state out are made for,
# besides jit (``jax_internals.traced_for``).
_FLAX_TRANSFORMS = frozenset({*LOOPS, "checkpoint / remat"})


def _first_lane(step: Any) -> Any:
    """The step a call runs (a scalar), from its step leaf, which has a lane per member of an ensemble."""
    return step if jax.numpy.ndim(step) == 0 else step[0]


def _like(step: Any, leaf: Any) -> Any:
    """``step`` in the shape of the step leaf ``leaf`` (see :func:`_first_lane`)."""
    return step if jax.numpy.ndim(leaf) == 0 else jax.numpy.broadcast_to(step, jax.numpy.shape(leaf))


def _holds_differentiated(module: nnx.Module) -> bool:
    """Whether a Variable of ``module`` or of its submodules holds a value being differentiated (see ``jax_internals.differentiated``)."""
    pending: list[nnx.Pytree] = [module]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        for value in vars(current).values():
            if isinstance(value, nnx.Pytree) and not isinstance(value, nnx.Variable):
                pending.append(value)  # a submodule, an nnx.List or nnx.Dict of them
            elif isinstance(value, nnx.Variable) and not isinstance(value, ExitVariable):
                if differentiated(flax_internals.held_value(value)):
                    return True
    return False


def _outer_traces(trace: Any) -> list[Any]:
    """The traces around ``trace``, innermost first."""
    found, outer = [], parent_of(trace)
    while outer is not None:
        found.append(outer)
        outer = parent_of(outer)
    return found


def _as_arrays(entries: list[Entry]) -> tuple[tuple[Label, ...], tuple[Any, ...]]:
    """The labels and values of a parcel that carries ``entries`` as they are."""
    labels = tuple(Label(e.path, e.var_type, e.name, e.index, e.order, ARRAY, None) for e in entries)
    return labels, tuple(e.value for e in entries)


def _calls_in_order(items: list[Item]) -> list[list[Item]]:
    """Items that came back by callback, as calls, each sorted by when its values were sowed.

    The sows of one trace are numbered in order, so a call's items come
    with rising numbers, and the next call of the same program starts
    again below them.
    """
    calls: list[list[Item]] = []
    for item in items:
        if not calls or item.order <= calls[-1][-1].order and item.order <= min(i.order for i in calls[-1]):
            calls.append([item])
        else:
            calls[-1].append(item)
    return [sorted(call, key=lambda item: item.order) for call in calls]


def _first_key(parcel: Parcel) -> tuple[Any, ...]:
    """The site of a parcel's first value, which numbers a parcel that arrives on its own."""
    if parcel.labels:
        label = parcel.labels[0]
        return (label.path, label.var_type, label.name)
    site = parcel.tables[0].sites[0]
    return (site.path, site.var_type, site.name)
