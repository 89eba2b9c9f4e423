"""How values leave a compiled program by host callback: gradients, and what no exit can carry.

A backward pass has no state to carry values out in, so the gradient that
reaches a value passed through ``Module.perturb`` leaves by callback
(``jax.debug.callback``, made to reach every process by ``host_callback``);
so do values sowed where no exit reaches (see ``levels``): a ``cond``
branch, a loop whose outputs must keep their structure, a transform in
tree mode, or a step made before the capture began. Each callback carries
the step it belongs to when the trace knows it, and the order and index of
its values.

On the CPU a program with a host callback runs synchronously (the loop
cannot queue the next step while this one runs), which is why callbacks
are the way out of last resort.
"""

from __future__ import annotations

import functools
import itertools
from typing import Any

import jax
from flax import nnx

from jaxcapture_nb.backends.nnx.parcel import Parcel
from jaxcapture_nb.backends.nnx.routes import ROUTES, Routed, trace_order
from jaxcapture_nb.core.hosts import host_callback
from jaxcapture_nb.stats.records import Gradient

# Identifies each callback traced: repeated calls of one (a loop over
# layers) come back as the values of one site, stacked.
_callback_ids = itertools.count()


def send(route: int, parcel: Parcel, step: Any, how: str = "stacked", trained: bool = True) -> None:
    """Sends a parcel to the host from a trace.

    Args:
      route: the capture's route.
      parcel: what to send.
      step: the step it belongs to, as the device has it (a traced float), or None.
      how: what it means when the callback runs again for the same step:
        ``"stacked"``, a loop (over layers, say) called it once per pass,
        and its values are stacked; ``"repeated"``, a forward pass that
        ``remat`` recomputes called it again, and the first is kept;
        ``"passes"``, a loop over training steps (or the micro-batches of
        one) called it, and each call is handed over as it comes.
      trained: whether the trace differentiates the model (a training step,
        not an evaluation; see ``_clock``).
    """
    if not parcel:
        return
    leaves, treedef = jax.tree.flatten(parcel)
    arrive = functools.partial(_arrive, route, treedef, next(_callback_ids), how, trained, step is not None)
    host_callback(arrive, *([step] if step is not None else []), *leaves)


def _arrive(
    route: int, treedef: Any, callback_id: int, how: str, trained: bool, tagged: bool, *arrays: Any
) -> None:
    capture: Routed | None = ROUTES.get(route)
    if capture is None:
        return
    step = arrays[0] if tagged else None
    parcel = jax.tree.unflatten(treedef, arrays[1:] if tagged else arrays)
    capture.arrived(parcel, step, callback_id, how, trained)


class GradientTap:
    """What ``perturb`` reads back while gradients are recorded.

    ``Module.perturb`` returns ``stored + value``; adding a value to a tap
    returns it through an identity whose backward pass records the gradient
    that reaches it, so no perturbation state and no extra ``grad`` argument
    are needed.
    """

    def __init__(self, capture: Routed, path: tuple[Any, ...], name: str):
        self.route, self.path, self.name = capture.route, path, name

    def __add__(self, value: Any) -> Any:
        # The step and index go in as arguments: the forward and backward
        # passes of a custom_vjp inside ``remat`` are traced where the step's
        # trace is out of reach, and ``remat`` may trace the forward pass twice.
        capture = ROUTES.get(self.route)
        if capture is None:
            return value
        step, index = capture.place_gradient((self.path, nnx.Perturbation, self.name))
        return _tapped(value, step, (self.route, self.path, self.name, index))

    __radd__ = __add__


def _report(site: tuple[int, tuple[Any, ...], str, int], var_type: type, value: Any, step: Any) -> None:
    route, path, name, index = site
    capture = ROUTES.get(route)
    if capture is not None:
        capture.report(path, var_type, name, index, next(trace_order), value, step)


@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def _tapped(value: Any, step: Any, site: tuple[int, tuple[Any, ...], str, int]) -> Any:
    _report(site, nnx.Perturbation, value, step)
    return value


def _tapped_forward(value, step, site):
    _report(site, nnx.Perturbation, value, step)
    return value, step


def _tapped_backward(site, step, cotangent):
    _report(site, Gradient, cotangent, step)
    return cotangent, None


_tapped.defvjp(_tapped_forward, _tapped_backward)
