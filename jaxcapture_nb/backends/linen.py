"""How a capture hooks into Flax Linen: the module's ``apply``.

Linen modules are immutable and their sowed values come back from ``apply``
in the ``intermediates`` collection, so the capture shadows ``apply`` on the
one module instance (never on its class): the shadow strips stale
``intermediates`` from the variables passed in, asks for the collection (and,
with ``methods=True``, for ``capture_intermediates``), records it, and returns
exactly what the user's call would have returned without the capture.

Records of one ``apply`` follow the collection's order (by module), which is
as close to execution order as Linen allows.

Inside ``jax.jit`` the collection holds tracers; they reach the host through
a host callback that reaches every process (summaries only, under ``keep="summary"``). The
callback finds its capture by module at run time, so a function compiled in
one block records into the capture of the block it runs in. A function that
was first traced outside any capture has no callback compiled in and records
nothing: trace it inside the block.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import Any

import jax
from flax import linen as nn

from jaxcapture_nb.core.hosts import host_callback
from jaxcapture_nb.core.protocols import Delivery, Item, SiteRecorder
from jaxcapture_nb.stats.records import leaf_sites
from jaxcapture_nb.stats.summarize import summarize
from jaxcapture_nb.upstream import flax_check, flax_internals
from jaxcapture_nb.upstream.jax_internals import is_tracer

COLLECTION = "intermediates"

# id(module) -> active capture, looked up when a compiled callback runs.
_ACTIVE: dict[int, LinenCapture] = {}


def _walk(tree: Mapping[str, Any], path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], str, Any]]:
    """Every sowed value of an ``intermediates`` collection, one site per leaf (see ``leaf_sites``)."""
    for key, value in tree.items():
        if isinstance(value, Mapping):
            yield from _walk(value, (*path, key))
            continue
        # The default reduce_fn keeps a tuple of the values sowed; a custom
        # one may keep a single value.
        for item in value if isinstance(value, tuple) else (value,):
            for name, leaf in leaf_sites(key, item):
                yield path, name, leaf


def _with_collection(mutable: Any) -> Any:
    if mutable is True or isinstance(mutable, nn.DenyList):
        return mutable
    if mutable is False or mutable is None:
        return [COLLECTION]
    names = [mutable] if isinstance(mutable, str) else list(mutable)
    return names if COLLECTION in names else [*names, COLLECTION]


def _asked_for_collection(mutable: Any, capture_intermediates: Any) -> bool:
    if capture_intermediates or mutable is True:
        return True
    if isinstance(mutable, nn.DenyList):
        return COLLECTION not in ([mutable.deny] if isinstance(mutable.deny, str) else mutable.deny)
    if isinstance(mutable, str):
        return mutable == COLLECTION
    return bool(mutable) and COLLECTION in mutable


def _deliver_from_callback(
    module_id: int, sites: list[tuple[tuple[str, ...], str]], statics: dict, *arrays
) -> None:
    capture = _ACTIVE.get(module_id)
    if capture is None:
        return
    values = iter(arrays)
    capture.record_sites(
        [(path, name, statics[i] if i in statics else next(values)) for i, (path, name) in enumerate(sites)]
    )


class LinenCapture:
    """Shadows ``apply`` on one Linen module instance for the block.

    Args:
      module: the Linen module whose ``apply`` calls are captured.
      recorder: where values go.
      methods: also record every submodule's ``__call__`` output.
    """

    def __init__(self, module: nn.Module, recorder: SiteRecorder, methods: bool):
        self.module = module
        self.recorder = recorder
        self.methods = methods

    def install(self) -> None:
        flax_check.check()
        if id(self.module) in _ACTIVE or "apply" in vars(self.module):
            raise RuntimeError(
                f"this {type(self.module).__name__} module is already being captured by another "
                "active capture(); end that `with capture(...)` block first."
            )
        _ACTIVE[id(self.module)] = self
        original = type(self.module).apply.__get__(self.module)
        flax_internals.shadow_attribute(
            self.module, "apply", functools.wraps(original)(functools.partial(self._apply, original))
        )

    def uninstall(self) -> None:
        flax_internals.unshadow_attribute(self.module, "apply")
        _ACTIVE.pop(id(self.module), None)

    def record_sites(self, sites: list[tuple[tuple[str, ...], str, Any]]) -> None:
        """Records ``(path, name, value)`` of every site of one ``apply``, in order, as one step."""
        seen: dict[tuple[tuple[str, ...], str], int] = {}
        items = []
        for order, (path, name, value) in enumerate(sites):
            index = seen[(path, name)] = seen.get((path, name), -1) + 1
            items.append(Item(path, COLLECTION, name, index, order, value))
        if items:
            self.recorder.deliver(Delivery(self.recorder.clock.call(), tuple(items)))

    def _apply(self, original, variables, *args, mutable=False, capture_intermediates=False, **kwargs):
        # Stale values from init() or an earlier apply() would be extended,
        # not replaced, by this call's sows.
        variables = {k: v for k, v in variables.items() if k != COLLECTION}
        out, state = original(
            variables,
            *args,
            mutable=_with_collection(mutable),
            capture_intermediates=capture_intermediates or self.methods,
            **kwargs,
        )
        state = dict(state)
        captured = (
            state.get(COLLECTION, {})
            if _asked_for_collection(mutable, capture_intermediates)
            else state.pop(COLLECTION, {})
        )
        self._record(captured)
        if mutable is False:
            return out
        return out, state

    def _record(self, captured: Mapping[str, Any]) -> None:
        sites = [
            (path, name, value) for path, name, value in _walk(captured) if self.recorder.accepts(path, name)
        ]
        if not any(is_tracer(value) for *_, value in sites):
            self.record_sites(sites)
            return
        # Arrays leave the trace by callback; anything else is the same on
        # every call, so the callback carries it.
        is_array = [isinstance(value, jax.Array) for *_, value in sites]
        arrays = [value for (*_, value), array in zip(sites, is_array, strict=True) if array]
        statics = {
            i: value for i, ((*_, value), array) in enumerate(zip(sites, is_array, strict=True)) if not array
        }
        if self.recorder.summarizes_in_trace:
            arrays = [summarize(x, bins=self.recorder.bins) for x in arrays]
        callback = functools.partial(
            _deliver_from_callback, id(self.module), [(path, name) for path, name, _ in sites], statics
        )
        host_callback(callback, *arrays)
