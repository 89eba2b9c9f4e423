"""Which capture a sink or a host callback belongs to: the registries the NNX backend shares.

A sink and a callback outlive the ``with`` block they were made in (a
compiled step keeps both), so neither holds its capture: each holds a route
id, looked up here when a value arrives.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from typing import TYPE_CHECKING, Any

from flax import nnx

if TYPE_CHECKING:
    from jaxcapture_nb._backends.nnx import NnxCapture

# A route id, stored in the sinks' static data, names the model a sink belongs
# to; ROUTES maps it to the model's active capture, if any. The id stays the
# same across captures of one model, so a step compiled in one block is reused
# by the next instead of being traced and compiled again. A sink whose model
# has no active capture (a copy kept by user code) records nothing.
ROUTES: dict[int, NnxCapture] = {}
_route_ids = itertools.count()
_model_routes: weakref.WeakKeyDictionary[nnx.Module, int] = weakref.WeakKeyDictionary()
# Per route: when each site's k-th held value was sowed in the latest trace. A compiled program
# runs its sows in the order they were traced, so this sorts what it leaves.
trace_orders: dict[int, dict[tuple[Any, ...], int]] = {}
trace_counter = itertools.count()
# Per route: (path, Variable type, name) -> (treedef, ((shape, dtype), ...))
# of the value ``perturb`` last stored there, which it reads back at once.
readbacks: dict[int, dict[tuple[Any, ...], tuple[Any, tuple[tuple[tuple[int, ...], Any], ...]]]] = {}
lock = threading.Lock()


def route_for(model: nnx.Module) -> int:
    """The route id of ``model``: the same for every capture of it, while it lives."""
    with lock:
        route = _model_routes.get(model)
        if route is None:
            route = _model_routes[model] = next(_route_ids)
            weakref.finalize(model, trace_orders.pop, route, None)
            weakref.finalize(model, readbacks.pop, route, None)
        return route


# Routes whose compiled programs may call back to the host; their captures
# wait for those calls before handing over their records.
callback_routes: set[int] = set()
