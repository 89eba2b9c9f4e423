"""How values leave a compiled NNX step by host callback: gradients, and all values beside them.

A backward pass has no state to carry values out in, so the gradient that
reaches a value passed through ``Module.perturb`` leaves by callback
(``jax.debug.callback``, made to reach every process by ``host_callback``);
so does a traced value whenever a recorder that does not hold values records
gradients, so that values and gradients arrive in execution order. Each
callback carries when its site was traced, the training step it belongs to
and its index among the site's values in that step.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import jax
from flax import nnx

from jaxcapture_nb._backends.nnx_routes import ROUTES, callback_routes, trace_counter
from jaxcapture_nb._hosts import host_callback
from jaxcapture_nb._records import Gradient, leaf_sites
from jaxcapture_nb._summary import packed_summary, unpack_summary
from jaxcapture_nb._tracing import is_traced

if TYPE_CHECKING:
    from jaxcapture_nb._backends.nnx import NnxCapture


def _arrive(
    route: int,
    path: tuple[Any, ...],
    var_type: type,
    name: str,
    layout: Any,
    order: int,
    index: int,
    stepped: Any,
    *arrays: Any,
) -> None:
    """Host side of a callback from a compiled program: records what it sent.

    ``stepped`` is the step the value belongs to (a scalar array), or None
    when its trace did not take the whole model in.
    """
    capture = ROUTES.get(route)
    if capture is None:
        return
    if not capture.recorder.holds_values:
        step = None if stepped is None else int(stepped)
        if layout is not None:
            capture.recorder.add_row(path, var_type, name, arrays[0], layout, order, step=step, index=index)
        else:
            capture.recorder.add(path, var_type, name, arrays[0], step=step, index=index)
        return
    # Held with the call's other values, to be recorded with them in the order they were traced.
    value = unpack_summary(arrays[0], *layout) if layout is not None else arrays[0]
    capture.hold(order, (path, var_type, name), value)


def report(
    site: tuple[int, tuple[Any, ...], str], var_type: type, value: Any, at: tuple[Any, int] | None = None
) -> None:
    """Records each leaf of a value (see ``leaf_sites``) that the capture accepts.

    ``at`` is the running step and the value's index in it (see
    ``NnxCapture.step_here``), when the caller knows them better than the
    running trace does.
    """
    route, path, name = site
    capture = ROUTES.get(route)
    if capture is None:
        return
    traced = is_traced(value)
    step, index = capture.place_in_step((path, var_type, name)) if at is None else at
    for leaf_name, leaf in leaf_sites(name, value):
        if capture.recorder.accepts(path, leaf_name):
            _report_leaf(capture, (route, path, leaf_name), var_type, leaf, traced, (step, index))


def _report_leaf(
    capture: NnxCapture,
    site: tuple[int, tuple[Any, ...], str],
    var_type: type,
    value: Any,
    traced: bool,
    at: tuple[Any, int],
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
    if not recorder.holds_values and not is_array:
        return  # rows are summaries of arrays
    callback_routes.add(route)
    # Callbacks of sites that do not depend on each other may run at the same
    # time, so each carries when it was traced, as a compiled step's rows do,
    # and the step it belongs to: a forward pass that ``remat`` recomputes
    # calls back again, with the same step.
    order = next(trace_counter)
    step, index = at
    recorder.expect(path, var_type, name, index)
    # A recorder that keeps only summaries gets one small array, not the tensor.
    if not is_array:
        layout, arrays = None, ()
    elif recorder.summarizes_in_trace:
        layout, arrays = (tuple(value.shape), value.dtype), (packed_summary(value, recorder.bins),)
    else:
        layout, arrays = None, (value,)
    arrive = functools.partial(_arrive, route, path, var_type, name, layout, order, index)
    if not is_array:
        # The same on every call: the callback carries it rather than sends it.
        arrive = functools.partial(_arrive_with, arrive, value)
    if step is None:
        host_callback(functools.partial(arrive, None), *arrays)
    else:
        host_callback(arrive, step, *arrays)


def _arrive_with(arrive: Any, value: Any, *arrays: Any) -> None:
    """``arrive(*arrays, value)``: a callback that carries a value rather than sends it."""
    arrive(*arrays, value)


class GradientTap:
    """What ``perturb`` reads back while gradients are recorded.

    ``Module.perturb`` returns ``stored + value``; adding a value to a tap
    returns it through an identity whose backward pass records the gradient
    that reaches it, so no perturbation state and no extra ``grad`` argument
    are needed.
    """

    def __init__(self, site: tuple[int, tuple[Any, ...], str]):
        self.site = site

    def __add__(self, value: Any) -> Any:
        # The step goes in as an argument: the forward and backward passes
        # of a custom_vjp inside ``remat`` are traced where the step's trace
        # is out of reach.
        # So does the index: ``remat`` may trace the forward pass twice.
        route, path, name = self.site
        capture = ROUTES.get(route)
        step, index = (None, 0) if capture is None else capture.place_in_step((path, nnx.Perturbation, name))
        return _tapped(value, step, (self.site, index))

    __radd__ = __add__


@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def _tapped(value: Any, step: Any, site: tuple[tuple[int, tuple[Any, ...], str], int]) -> Any:
    report(site[0], nnx.Perturbation, value, (step, site[1]))
    return value


def _tapped_forward(value, step, site):
    report(site[0], nnx.Perturbation, value, (step, site[1]))
    return value, step


def _tapped_backward(site, step, cotangent):
    report(site[0], Gradient, cotangent, (step, site[1]))
    return cotangent, None


_tapped.defvjp(_tapped_forward, _tapped_backward)
