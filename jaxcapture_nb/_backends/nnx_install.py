"""What installing a capture on an NNX model checks and patches besides the sinks.

A leftover ``__captures__`` or values sowed outside a capture are named
before the block starts; with ``methods=True`` the model's own module
classes get wrappers that sow each method's output, reference-counted so
that models captured at the same time share them.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import flax
from flax import nnx

from jaxcapture_nb._backends import flax_internals
from jaxcapture_nb._backends.nnx_routes import ROUTES, lock
from jaxcapture_nb._backends.nnx_sink import Sink
from jaxcapture_nb._warnings import warn


def warn_sowed_attributes(modules, var_types) -> None:
    """Warns, once, when a module already holds values that ``Module.sow`` stored outside a capture."""
    # Flax 0.12.9 added a flag that makes sow and perturb do nothing outside a capture.
    noop_hint = (
        "; flax.config.update('nnx_sow_capture_noop', True) makes Module.sow outside a capture store nothing."
        if hasattr(flax.config, "nnx_sow_capture_noop")
        else "."
    )
    for path, module in modules:
        for attr, value in vars(module).items():
            if type(value) in var_types:
                where = ".".join(str(p) for p in (*path, attr))
                warn(
                    f"'{where}' holds values stored by Module.sow called outside a capture. Such "
                    "values grow by one entry per call, which makes nnx.jit re-trace and "
                    "recompile a step on every call (often ~10x slower). Remove them with "
                    f"nnx.pop(model, nnx.{type(value).__name__}) and sow inside "
                    "jaxcapture_nb.capture(model) instead" + noop_hint
                )
                return


class _MethodPatches:
    """Reference-counted wrappers on module classes, for ``methods=True``."""

    def __init__(self):
        self._originals: dict[type, dict[str, Any]] = {}
        self._users: dict[type, int] = {}

    def acquire(self, cls: type) -> None:
        with lock:
            self._users[cls] = self._users.get(cls, 0) + 1
            if self._users[cls] > 1:
                return
            originals = {}
            for name, method in list(vars(cls).items()):
                if inspect.isfunction(method) and (name == "__call__" or not name.startswith("_")):
                    originals[name] = method
                    setattr(cls, name, _sowing_method(name, method))
            self._originals[cls] = originals

    def release(self, cls: type) -> None:
        with lock:
            self._users[cls] -= 1
            if self._users[cls]:
                return
            del self._users[cls]
            for name, method in self._originals.pop(cls).items():
                setattr(cls, name, method)


method_patches = _MethodPatches()


def _sowing_method(name: str, method):
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        out = method(self, *args, **kwargs)
        if any(_records_methods(var) for var in flax_internals.captures(self)):
            self.sow(nnx.Intermediate, name, out)
        return out

    return wrapper


def _records_methods(variable: Any) -> bool:
    """Whether a ``__captures__`` Variable is our sink, of a capture that records method outputs.

    Method wrappers are installed on classes, which other models being
    captured at the same time may share.
    """
    sink = flax_internals.held_value(variable)
    capture = ROUTES.get(sink.route) if isinstance(sink, Sink) else None
    return capture is not None and capture.methods


def conflict_message(path: tuple[Any, ...], captures: Any) -> str:
    where = ".".join(str(p) for p in path) or "the model"
    ours = any(
        isinstance(v, nnx.Variable) and isinstance(flax_internals.held_value(v), Sink) for v in captures
    )
    if ours:
        return (
            f"{where} is already being captured by another active capture(). A module can be "
            "captured by one capture at a time: end the other `with capture(...)` block first, or "
            "capture both models' sites in one capture(model) of their common parent."
        )
    return (
        f"{where} has a leftover `__captures__` attribute, which flax.nnx.capture leaves behind "
        "when the function it wraps raises; later sow() calls would silently accumulate into it. "
        "Remove it from every submodule before capturing:\n"
        "    for _, m in nnx.iter_modules(model):\n"
        "        vars(m).pop('__captures__', None)"
    )
