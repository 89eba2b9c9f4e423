"""What a capture puts on the classes of a model's modules (never on Flax's own classes, nor on modules).

* ``__captures__``, a class attribute that ``Module.sow`` and
  ``Module.perturb`` find with ``hasattr``: for a module of a captured model
  (found by its site key, in whatever copy Flax made of it) it gives the
  writers its values go to; for any other module it is absent, and Flax
  does what it does without a capture.
* the exit attribute (see ``exits``), a data descriptor: Flax sets a
  module's attributes with ``object.__setattr__``, which this sees, so a
  lazy exit that a transform carries out to the level around it is taken
  apart there instead of being kept (see ``NnxCapture.exit_set``). The
  modules' mappings mark the attribute as data for the length of the block
  (``flax_internals.mark_data``), so a module that takes an exit inside a
  transform keeps the graph definition of its copies outside.
* with ``methods=True``, wrappers of the classes' own methods that sow each
  method's output, on the modules of a model that records method outputs,
  after a patch of that output (``patching``) has replaced it.

Each is reference-counted by class, so models captured at the same time
share them. The exit attribute stays on a class once put there: a state
split inside a block carries the model's exit, and ``nnx.update`` of a
model with it after the block must not give the model a new attribute.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

from flax import nnx

from jaxcapture_nb.backends.nnx.exits import EXIT, Exit
from jaxcapture_nb.backends.nnx.patching import (
    patched_output,
    perturbation_for,
    refuse_copy_made_before,
    slot_of,
)
from jaxcapture_nb.backends.nnx.routes import ROUTES, SITES, lock
from jaxcapture_nb.upstream import flax_internals
from jaxcapture_nb.upstream.jax_internals import tracing


def capture_of(module: Any) -> tuple[Any, Any]:
    """The active capture and site of a module of a captured model, or (None, None)."""
    site = SITES.get(id(flax_internals.site_key(module)))
    if site is None:
        return None, None
    capture = ROUTES.get(site.route)
    return (capture, site) if capture is not None else (None, None)


class _CapturesSlot:
    """``__captures__`` on a class: the writers of a captured module's values (see the module doc)."""

    def __get__(self, module: Any, cls: Any = None) -> Any:
        if module is None:
            return self
        capture, site = capture_of(module)
        patched = slot_of(module) is not None
        if capture is None and not patched:
            capture, site = _recognized(module)
        if capture is not None:
            return perturbation_for(module, capture.writers(site, module))
        if patched:
            return perturbation_for(module, ())
        refuse_copy_made_before(module)
        raise AttributeError(flax_internals.CAPTURES)


def _recognized(module: Any) -> tuple[Any, Any]:
    """Looks a module up again after its key changed (an attribute set on the model during the block).

    A module of a captured class that no capture knows (a copy made with
    ``copy.deepcopy``, another instance of the class) is counted, by class.
    """
    for capture in list(ROUTES.values()):
        if capture.refresh_sites(module):
            return capture_of(module)
    with lock:
        class_hooks.strangers[type(module)] = class_hooks.strangers.get(type(module), 0) + 1
    return None, None


class _ExitSlot:
    """The exit attribute on a class: a module's exit lives in its instance dict; sets go through the capture."""

    def __get__(self, module: Any, cls: Any = None) -> Any:
        if module is None:
            return self
        try:
            return vars(module)[EXIT]
        except KeyError:
            raise AttributeError(EXIT) from None

    def __set__(self, module: Any, variable: Any) -> None:
        exit = flax_internals.held_value(variable) if isinstance(variable, nnx.Variable) else None
        capture = ROUTES.get(exit.route) if isinstance(exit, Exit) else None
        if capture is not None and isinstance(exit, Exit):
            if not tracing():
                capture.note_copy(module)
            if not capture.exit_set(module, variable, exit):
                vars(module)[EXIT] = variable
            return
        if isinstance(exit, Exit) and not tracing():
            # An ended capture's exit, from a state split inside its block
            # (``nnx.update(model, state)`` after it): the model stays as it is.
            flax_internals.without_attribute(module, EXIT)
            return
        vars(module)[EXIT] = variable

    def __delete__(self, module: Any) -> None:
        vars(module).pop(EXIT, None)


_CAPTURES_SLOT = _CapturesSlot()
_EXIT_SLOT = _ExitSlot()


class ClassHooks:
    """Reference-counted hooks on module classes: ``__captures__``, the exit slot, and method wrappers."""

    def __init__(self):
        # Sows by modules of a hooked class that no capture knows, by class (see _recognized).
        self.strangers: dict[type, int] = {}
        self._users: dict[type, int] = {}
        self._method_users: dict[type, int] = {}
        self._originals: dict[type, dict[str, Any]] = {}

    def acquire(self, cls: type, methods: bool) -> None:
        with lock:
            if EXIT not in vars(cls):
                setattr(cls, EXIT, _EXIT_SLOT)
            self._users[cls] = self._users.get(cls, 0) + 1
            if self._users[cls] == 1:
                setattr(cls, flax_internals.CAPTURES, _CAPTURES_SLOT)
            if methods:
                self._method_users[cls] = self._method_users.get(cls, 0) + 1
                if self._method_users[cls] == 1:
                    self._wrap_methods(cls)

    def release(self, cls: type, methods: bool) -> None:
        with lock:
            if methods:
                self._method_users[cls] -= 1
                if not self._method_users[cls]:
                    del self._method_users[cls]
                    for name, method in self._originals.pop(cls).items():
                        setattr(cls, name, method)
            self._users[cls] -= 1
            if not self._users[cls]:
                del self._users[cls]
                if vars(cls).get(flax_internals.CAPTURES) is _CAPTURES_SLOT:
                    delattr(cls, flax_internals.CAPTURES)

    def _wrap_methods(self, cls: type) -> None:
        originals = wrapped_methods(cls)
        for name, method in originals.items():
            setattr(cls, name, _sowing_method(name, method))
        self._originals[cls] = originals


def wrapped_methods(cls: type) -> dict[str, Any]:
    """The methods whose outputs are sites (``methods=True``) and may be patched: the class's own, public or ``__call__``."""
    return {
        name: method
        for name, method in vars(cls).items()
        if inspect.isfunction(method) and (name == "__call__" or not name.startswith("_"))
    }


class_hooks = ClassHooks()


def _sowing_method(name: str, method):
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        out = patched_output(self, name, method(self, *args, **kwargs))
        capture, _ = capture_of(self)
        if capture is not None and capture.methods:
            self.sow(nnx.Intermediate, name, out)
        return out

    return wrapper
