"""Exit: the one Variable through which a compiled call hands out what its model sowed.

A capture puts one :class:`ExitVariable` on the model's root module (the
only change it makes to the model's state). It holds an :class:`Exit`, a
small pytree whose flattening and unflattening are the capture's hooks:

* Entering a call (flattened outside any trace), a watch's exit carries
  one leaf, the step the call belongs to (from the recorder's clock): the
  gate of ``watch(every=N)`` and the tag of host callbacks, on the device.
  So a compiled step takes the same inputs on every call and is traced
  once. A capture's carries nothing in.
* Inside a trace (unflattened), the exit tells the trace's :class:`Level`
  that its values leave with it; any parcel it brings from a trace inside
  this one is added to the level's.
* Leaving a trace (flattened), it carries the level's parcel, named by
  the level that packed it; under a loop or a branch, whose output must
  have its input's structure, the level's values have left by host
  callback, and it leaves as it came, with the step moved on by one in a
  loop, so that a call that scans several training steps numbers each. A
  parcel that comes into a trace from one around it (the exit passed into
  a transform) only passes through.
* Back in Python (unflattened around computed arrays), it hands the
  parcel to the capture, once, and takes in the same structure as before
  when the next call takes it in.

A lazy exit is the same object on a submodule inside a transform (see
``levels``): it carries no step in and its level's parcel out.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxcapture_nb.backends.nnx.levels import LAZY, ROOT
from jaxcapture_nb.backends.nnx.parcel import Parcel
from jaxcapture_nb.backends.nnx.routes import ROUTES
from jaxcapture_nb.upstream.jax_internals import current_trace, is_tracer, reflattening_outputs, tracing

# The attribute a module holds its exit in. Flax sets a module's attributes
# in the order of their names (flax/nnx/pytreelib.py: ``_graph_node_flatten``
# sorts them and ``_graph_node_init`` sets them in that order, Flax 0.12.6 to
# 0.12.12), and this one sorts after every identifier, so a module being
# rebuilt has all its others when it is set (see hooks).
EXIT = "~jaxcapture_nb_exit"


class ExitVariable(nnx.Variable):
    """The Variable type of an exit, so that Flax's filters (``nnx.Param``, ``nnx.Intermediate``) leave it alone."""


class Exit:
    """See the module doc.

    Attributes:
      route: the capture's route (see ``routes``).
      role: ROOT (the model's) or LAZY (a submodule's, inside a transform).
      path: the path of the module that holds it.
      step: the step leaf: an int outside a call, a tracer inside one; None for a lazy exit.
        It has one lane per member when the model is an ensemble (``lanes``).
      lanes: the number of members of a model made by ``nnx.vmap`` (every one
        of its arrays has that leading axis), or 0: ``nnx.vmap`` maps the
        step leaf along that axis with the rest of the model's state.
      parcel: what it carries out, or None.
      origin: the serial of the level that packed the parcel.
      policy: the recorder's policy when it was made: a compiled step is not reused across policies.
      sowed: (on the way out) whether the call sowed anything, by parcel or callback.
      scanned: (on the way out) whether the call scanned several training steps.
      trained: (on the way out) whether the call differentiated the model: a
        training step, not an evaluation (see ``_clock``).
    """

    __slots__ = (
        "held",
        "lanes",
        "level",
        "origin",
        "parcel",
        "path",
        "policy",
        "role",
        "route",
        "scanned",
        "sowed",
        "step",
        "trained",
    )

    def __init__(
        self,
        route: int,
        role: str,
        path: tuple[Any, ...] = (),
        policy: Any = None,
        step: Any = None,
        parcel: Parcel | None = None,
        origin: int = 0,
        sowed: bool = False,
        scanned: bool = False,
        trained: bool = False,
        lanes: int = 0,
    ):
        self.route, self.role, self.path, self.policy = route, role, path, policy
        self.lanes = lanes
        self.step, self.parcel, self.origin = step, parcel, origin
        self.sowed, self.scanned, self.trained = sowed, scanned, trained
        self.level: Any = None  # the Level whose exit this object is, inside a trace
        # The children and static data it was rebuilt from, which it
        # flattens to again when JAX flattens the outputs it rebuilt (see
        # jax_internals.reflattening_outputs); taken in again, it carries no parcel.
        self.held: tuple[tuple[Any, ...], tuple[Any, ...]] | None = None

    def __repr__(self) -> str:
        return f"Exit({self.role}, path={self.path!r})"

    # -- pytree ---------------------------------------------------------------

    def _flatten(self):
        capture = ROUTES.get(self.route)
        static = (self.route, self.role, self.path, self.policy)
        if self.held is not None and reflattening_outputs():
            return self.held
        if capture is None or capture.recorder.policy != self.policy:
            return (), (
                *static,
                False,
                0,
                False,
                False,
                False,
            )  # a copy kept from an ended capture: carries nothing
        if not tracing():
            if self.role == LAZY or capture.recorder.holds_values:
                # A capture numbers each site's values, and needs no step: with no
                # leaf, the model also goes whole through vmap (an ensemble).
                return (), (*static, False, 0, False, False, False)
            # A call is taking the model in: the step it belongs to.
            clock = capture.recorder.clock
            step = np.float32(clock.on_device(clock.entry()))
            if self.lanes:
                step = np.full((self.lanes,), step)
            return (step,), (*static, True, 0, False, False, False)
        level = self.level
        if level is None or level.trace is not current_trace():
            return self.passing()
        return capture.flatten_exit(self, level)

    def passing(self, step: Any = None) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """Children and static data of an exit that carries on what it holds (the step, or ``step``, and its parcel).

        An exit read or handed on away from its own trace (``nnx.state``
        inside a transform, a copy), or leaving a loop or a branch, whose
        outputs must have their inputs' structure.
        """
        if step is None and self.held is not None:
            return self.held
        static = (self.route, self.role, self.path, self.policy)
        children = [] if self.step is None else [self.step if step is None else step]
        if self.parcel:
            children.append(self.parcel)
        origin = self.origin if self.parcel else 0
        return tuple(children), (*static, self.step is not None, origin, False, False, self.trained)

    @classmethod
    def _unflatten(cls, static, children):
        route, role, path, policy, has_step, origin, sowed, scanned, trained = static
        children_in = children
        children = list(children)
        step = children.pop(0) if has_step else None
        parcel = children.pop(0) if children else None
        lanes = np.shape(step)[0] if np.ndim(step) == 1 else 0  # an ensemble's step keeps its lanes
        exit = cls(route, role, path, policy, step, parcel, origin, sowed, scanned, trained, lanes)
        if not tracing():
            exit.held = (tuple(children_in), static)
        capture = ROUTES.get(route)
        if capture is None or capture.recorder.policy != policy:
            return exit
        return capture.unflatten_exit(exit)


jax.tree_util.register_pytree_node(Exit, Exit._flatten, Exit._unflatten)


def fresh(step: Any) -> Any:
    """A new tracer equal to ``step``, so that a copy of the exit taken before the call's sows reads as changed.

    Tree-mode ``nnx.jit`` hands back only the Variables whose leaves are
    not the very objects they were when the call began (flax/nnx/extract.py's
    ``variable_changed``, Flax 0.12.6 to 0.12.12).
    """
    if is_tracer(step) or (tracing() and isinstance(step, np.generic)):
        return jnp.asarray(step) + jnp.zeros((), jnp.asarray(step).dtype)
    return step


def computed(exit: Exit) -> bool:
    """Whether an exit rebuilt outside a trace holds computed arrays (not the placeholders JAX also rebuilds outputs around)."""
    leaves = jax.tree.leaves((exit.step, exit.parcel))
    return bool(leaves) and all(isinstance(x, jax.Array) and not is_tracer(x) for x in leaves)


__all__ = ["EXIT", "LAZY", "ROOT", "Exit", "ExitVariable", "computed", "fresh"]
