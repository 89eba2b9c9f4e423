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
``jax.debug.callback`` (summaries only, under ``keep="summary"``). The
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

from jaxcapture_nb._recorder import Recorder
from jaxcapture_nb._summary import summarize

COLLECTION = "intermediates"

# id(module) -> active capture, looked up when a compiled callback runs.
_ACTIVE: dict[int, LinenCapture] = {}


def _walk(tree: Mapping[str, Any], path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], str, Any]]:
    for key, value in tree.items():
        if isinstance(value, Mapping):
            yield from _walk(value, (*path, key))
        elif isinstance(value, tuple):
            for item in value:
                yield path, key, item
        else:  # a custom reduce_fn kept a single value
            yield path, key, value


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


def _deliver_from_callback(module_id: int, tree: Any) -> None:
    capture = _ACTIVE.get(module_id)
    if capture is not None:
        capture.record_tree(tree)


class LinenCapture:
    """Shadows ``apply`` on one Linen module instance for the block.

    Args:
      module: the Linen module whose ``apply`` calls are captured.
      recorder: where values go.
      methods: also record every submodule's ``__call__`` output.
    """

    def __init__(self, module: nn.Module, recorder: Recorder, methods: bool):
        self.module = module
        self.recorder = recorder
        self.methods = methods

    def install(self) -> None:
        if id(self.module) in _ACTIVE or "apply" in vars(self.module):
            raise RuntimeError(
                f"this {type(self.module).__name__} module is already being captured by another "
                "active capture(); end that `with capture(...)` block first."
            )
        _ACTIVE[id(self.module)] = self
        original = type(self.module).apply.__get__(self.module)
        object.__setattr__(
            self.module, "apply", functools.wraps(original)(functools.partial(self._apply, original))
        )

    def uninstall(self) -> None:
        if vars(self.module).get("apply") is not None:
            object.__delattr__(self.module, "apply")
        _ACTIVE.pop(id(self.module), None)

    def record_tree(self, tree: Mapping[str, Any]) -> None:
        """Records every value of an ``intermediates`` collection."""
        for path, name, value in _walk(tree):
            self.recorder.add(path, COLLECTION, name, value)

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
        leaves = jax.tree.leaves(captured)
        if not any(isinstance(leaf, jax.core.Tracer) for leaf in leaves):
            self.record_tree(captured)
            return
        if self.recorder.keep == "summary":
            captured = _summaries_in_place(captured, self.recorder.bins)
        jax.debug.callback(functools.partial(_deliver_from_callback, id(self.module)), captured)


def _summaries_in_place(tree: Any, bins: int) -> Any:
    return jax.tree.map(
        lambda x: summarize(x, bins=bins) if isinstance(x, jax.Array | jax.core.Tracer) else x, tree
    )
