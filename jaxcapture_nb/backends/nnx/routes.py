"""Which capture a module, an exit or a host callback belongs to: the registries the NNX backend shares.

A compiled step outlives the ``with`` block it was traced in, and so do the
exits and callbacks compiled into it, so none of them holds its capture:
each holds a route id, looked up here when a value arrives. A module is
found by its ``_pytree__nodes`` mapping (see ``flax_internals.site_key``),
which Flax hands by reference to every copy of the module it makes, inside
a trace or out: the copies inside ``nnx.jit``, ``nnx.scan`` and
``jax.jit`` + ``nnx.merge`` are new objects, and carry nothing else of
the original.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from typing import Any, NamedTuple, Protocol

from flax import nnx

from jaxcapture_nb.core.protocols import SiteRecorder

lock = threading.RLock()


class Routed(Protocol):
    """What the exits, callbacks, hooks and writers ask of the capture a route leads to.

    :class:`~jaxcapture_nb.backends.nnx.capture.NnxCapture` is the one
    implementation; naming its methods here keeps the modules it is built
    from free of imports of it.
    """

    recorder: SiteRecorder
    route: int
    methods: bool

    def writers(self, site: Site, module: nnx.Module) -> tuple[nnx.Variable, ...]: ...
    def receive(self, site: Site, var_type: type, name: str, value: Any, module: nnx.Module) -> None: ...
    def refresh_sites(self, module: nnx.Module) -> bool: ...
    def note_copy(self, module: nnx.Module) -> None: ...
    def exit_set(self, module: nnx.Module, variable: nnx.Variable, exit: Any) -> bool: ...
    def flatten_exit(self, exit: Any, level: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]: ...
    def unflatten_exit(self, exit: Any) -> Any: ...
    def place_gradient(self, key: tuple[Any, ...]) -> tuple[Any, int]: ...
    def report(
        self, path: tuple[Any, ...], var_type: type, name: str, index: int, order: int, value: Any, step: Any
    ) -> None: ...
    def arrived(self, parcel: Any, step: Any, callback_id: int, how: str, trained: bool = True) -> None: ...


# A route id names the model a site, an exit or a callback belongs to;
# ROUTES maps it to the model's active capture, if any. The id stays the same
# across captures of one model, so a step compiled in one block is reused by
# the next instead of being traced and compiled again.
ROUTES: dict[int, Routed] = {}
_route_ids = itertools.count()
_model_routes: weakref.WeakKeyDictionary[nnx.Module, int] = weakref.WeakKeyDictionary()

# When each value was sowed while tracing: a compiled program runs its sows
# in the order they were traced, so this orders the values a call hands over.
trace_order = itertools.count()


def route_for(model: nnx.Module) -> int:
    """The route id of ``model``: the same for every capture of it, while it lives."""
    with lock:
        route = _model_routes.get(model)
        if route is None:
            route = _model_routes[model] = next(_route_ids)
            weakref.finalize(model, readbacks.pop, route, None)
        return route


class Site(NamedTuple):
    """Where a module sits in a captured model: its route and path."""

    route: int
    path: tuple[Any, ...]


# id of a module's ``_pytree__nodes`` mapping -> its Site, for every module of
# every active capture (and the copies Flax makes of them).
SITES: dict[int, Site] = {}


def register_site(key: Any, site: Site) -> None:
    """Notes that modules holding the mapping ``key`` sit at ``site``; forgotten with the mapping."""
    with lock:
        if id(key) not in SITES:
            weakref.finalize(key, SITES.pop, id(key), None)
        SITES[id(key)] = site


def unregister_route(route: int) -> None:
    """Forgets every site of ``route``."""
    with lock:
        for key in [k for k, site in SITES.items() if site.route == route]:
            del SITES[key]


# Per route: (path, Variable type, name) -> (treedef, ((shape, dtype), ...))
# of the value ``perturb`` last stored there, which it reads back at once.
readbacks: dict[int, dict[tuple[Any, ...], tuple[Any, tuple[tuple[tuple[int, ...], Any], ...]]]] = {}
