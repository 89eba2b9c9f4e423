"""NnxCapture: how a capture or a watch hooks into Flax NNX, and hands what a model sows to its recorder.

Installing changes the model in one place: its root module gets an exit
(see ``exits``). Every module is known by its site key, so the copies Flax
makes inside a transform are recognized too, and the model's classes get
the hooks of ``hooks`` (see ``installing``). A value sowed in eager code is
recorded at once; one sowed inside a trace joins that trace's
:class:`~levels.Level` (after leaving ``grad`` or ``vmap``, see
``jax_internals.lifted``), whose values leave the trace through the model's
exit, a lazy exit, or a host callback. What comes back, ``handover`` gives
the recorder as one :class:`~jaxcapture_nb.core.protocols.Delivery` per
step, numbered by its clock.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from flax import nnx

from jaxcapture_nb.backends.nnx.checks import lost_messages, warn_slow_step
from jaxcapture_nb.backends.nnx.exits import EXIT, Exit, ExitVariable, computed, fresh
from jaxcapture_nb.backends.nnx.gradients import GradientRun
from jaxcapture_nb.backends.nnx.handover import Handover, first_key
from jaxcapture_nb.backends.nnx.hooks import capture_of
from jaxcapture_nb.backends.nnx.installing import Installation
from jaxcapture_nb.backends.nnx.levels import CALLBACK, LAZY, ROOT, Level, Levels
from jaxcapture_nb.backends.nnx.parcel import Entry, Parcel, pack
from jaxcapture_nb.backends.nnx.routes import ROUTES, Site, lock, trace_order
from jaxcapture_nb.backends.nnx.writer import SiteWriter
from jaxcapture_nb.core.protocols import SiteRecorder
from jaxcapture_nb.stats.records import leaf_sites, site_name
from jaxcapture_nb.upstream import flax_internals
from jaxcapture_nb.upstream.jax_internals import (
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
        self.installation = Installation(model, self.var_types, methods)
        self.handover = Handover(recorder)
        self.levels = Levels()
        self.gradients = GradientRun(self.levels, self.handover)
        self._in_shards: dict[str, tuple[str, ...]] = {}  # sites sowed in a shard_map body: its mesh axes
        self._warned_slow = False  # whether a watched step's values left by callback for want of an exit

    # -- installing -----------------------------------------------------------

    def install(self) -> None:
        self.route = self.installation.install(self, self.drain, self.recorder.policy)

    def refresh_sites(self, module: nnx.Module) -> bool:
        """Registers the modules' keys again (an attribute set on the model changes one); whether ``module`` is now known."""
        with lock:
            if self.route not in ROUTES:
                return False
            self.installation.refresh()
        return capture_of(module)[0] is self

    def uninstall(self) -> None:
        """Removes every trace of the capture from the model; safe to repeat."""
        try:
            self.drain(final=True)
        finally:
            self.installation.uninstall(self)
            self.levels.clear()

    def note_copy(self, module: nnx.Module) -> None:
        """Flax set the model's exit on a module outside any trace: a copy of the model made in the block."""
        if module is not self.model:
            self.installation.copied = True

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
            self.handover.received += 1
            self.handover.deliver_single(key, value)
            return
        axes = manual_axes()
        if axes:
            # Each device holds its own shard of the value here, and neither an
            # exit nor a callback gets the whole of it out: named after the block.
            path, _, name = key
            self._in_shards.setdefault(".".join(map(str, (*path, site_name(path, name)))), axes)
            return
        self.handover.received += 1
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
            self.handover.deliver_single(key, value, self._trains(module))
            return
        if not isinstance(value, jax.Array) and not recorder.holds_values:
            return  # a stream records summaries of arrays
        level = self.levels.of(trace)
        if not level.trained and self._trains(module):  # one walk of the module's Variables per trace
            self.levels.note_trained(level)
        path, var_type, name = key
        entry = Entry(path, var_type, name, level.place(key), next(trace_order), value)
        if level.way is None:
            self._choose_way(level, module, key[0])
        if level.sends:
            self.levels.send(level, self.route, pack([entry], recorder, level.gate, tables=False))
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

    # -- levels -------------------------------------------------------------------

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
        outside, inside = self.installation.first_shape(path), flax_internals.first_variable_shape(module)
        return outside is not None and inside is not None and outside[1:] == inside

    def _set_way(self, level: Level, way: str) -> None:
        level.way = way
        if level.sends:
            self.levels.send_unsent(level, self.route, self.recorder)

    # -- exits --------------------------------------------------------------------

    def flatten_exit(self, exit: Exit, level: Level) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """An exit leaving its own trace: the step and the parcel it carries out (see ``exits``)."""
        if exit.role == ROOT and level.kind != "staged":
            self.levels.send_unsent(level, self.route, self.recorder)
            if level.kind == "loop" and level.own_step:
                # Each pass of a loop that carries the model is a training step
                # of its own; the step it carries moves on (see Levels.send).
                if level.next_step is None:
                    level.next_step = _like(level.step + 1, exit.step)
                return exit.passing(level.next_step)
            return exit.passing()
        parcel = level.parcel(self.recorder, exit.role == ROOT and level.hands_out_arrays)
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
            if computed(exit) and self.handover.take(exit):
                self.levels.clear()  # every trace has ended
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
                and exit.origin not in self.levels.around_staged(trace)
                and all(map(is_tracer, jax.tree.leaves(exit.parcel)))
            ):
                self._lift_parcel(exit.parcel, trace, exit.trained)
                exit.parcel, exit.origin = None, 0
            return exit
        level = self.levels.of(trace)
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
                self.levels.note_trained(level)
            if level.sends:
                self.levels.send_unsent(level, self.route, self.recorder)
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

    def _lift_parcel(self, parcel: Parcel, trace: Any, trained: bool) -> None:
        """Takes a parcel out of ``grad``'s or ``vmap``'s trace to the first staged trace around it (or hands it over)."""
        while liftable(trace):
            parcel = jax.tree.map(lambda x, t=trace: lifted(x, t), parcel)
            trace = parent_of(trace)
        if is_evaluation(trace):
            key = first_key(parcel)
            self.handover.deliver_stamped(trained, key, lambda: self.recorder.clock.single(key), parcel)
            return
        level = self.levels.of(trace)
        level.absorb(parcel)
        if trained and not level.trained:
            self.levels.note_trained(level)
        if level.sends:
            self.levels.send_unsent(level, self.route, self.recorder)

    def exit_set(self, module: nnx.Module, variable: nnx.Variable, exit: Exit) -> bool:
        """Flax sets an exit on a module (see ``hooks``); True when handled here (kept or dropped)."""
        if exit.role == ROOT:
            return False
        if tracing() and liftable(current_trace()):
            return True  # its parcel was taken out as it was rebuilt
        if tracing():
            level = self.levels.of(current_trace())
            if level.way is None:
                self._choose_way(level, module, exit.path, variable)
                if level.way == LAZY:
                    return True
        # Carried here from a trace inside: its parcel joined this level (or
        # was taken) as it was rebuilt, and the module does not keep it.
        return True

    def what_was_lost(self) -> list[str]:
        """After the block: why values the model sowed were not recorded, one sentence each (none when all were).

        Modules of the model's classes that are not the model's (another
        instance, a copy made with ``copy.deepcopy``) sow as Flax has them
        sow; they are named only when the model itself recorded nothing.
        """
        handover = self.handover
        return lost_messages(
            self._in_shards, handover.received, handover.delivered, self.installation.strangers()
        )

    def place_gradient(self, key: tuple[Any, ...]) -> tuple[Any, int]:
        """The step tag and index of a value that leaves by callback with gradients (see ``GradientRun.place``)."""
        return self.gradients.place(key)

    def report(
        self, path: tuple[Any, ...], var_type: type, name: str, index: int, order: int, value: Any, step: Any
    ) -> None:
        """Records a value of the gradients' run (see ``GradientRun.report``)."""
        self.gradients.report(self.route, path, var_type, name, index, order, value, step)

    def arrived(self, parcel: Parcel, step: Any, callback_id: int, how: str, trained: bool = True) -> None:
        """A callback's parcel, on the host (see ``Handover.arrived``)."""
        self.handover.arrived(parcel, step, callback_id, how, trained)

    def drain(self, final: bool = False) -> None:
        """Hands over what callbacks left: all of it at the end of the block (``final``), else the steps done."""
        self.handover.drain(final)


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
