"""Installation: what a capture changes on a model and its classes for the length of a block, and how it is undone.

Each module's ``_pytree__nodes`` mapping gets an entry naming its site
(``flax_internals.mark_site``), so that the copies Flax makes inside a
transform are recognized; the model's classes get the hooks of ``hooks``;
the root module gets the model's exit. :meth:`Installation.uninstall` takes
all of it back, also after a block that raised.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from flax import nnx

from jaxcapture_nb.backends.nnx.checks import (
    already_captured_message,
    leftover_message,
    warn_sowed_attributes,
)
from jaxcapture_nb.backends.nnx.exits import EXIT, Exit, ExitVariable
from jaxcapture_nb.backends.nnx.hooks import capture_of, class_hooks
from jaxcapture_nb.backends.nnx.levels import ROOT
from jaxcapture_nb.backends.nnx.modules import iter_modules
from jaxcapture_nb.backends.nnx.patching import patched_keys
from jaxcapture_nb.backends.nnx.routes import (
    ROUTES,
    SITES,
    Routed,
    Site,
    lock,
    register_site,
    route_for,
    unregister_route,
)
from jaxcapture_nb.upstream import flax_check, flax_internals


class Installation:
    """The marks and hooks one capture puts on a model, from :meth:`install` to :meth:`uninstall`.

    Args:
      model: the root module.
      var_types: the Variable types captured (a module holding values of
        them, sowed before the block, is warned about).
      methods: whether the hooks also record the output of every method call.

    Attributes:
      route: the model's route id (see ``routes.route_for``); -1 until installed.
      copied: whether the block made a copy of the model that may outlive it
        (see :meth:`uninstall`).
    """

    def __init__(self, model: nnx.Module, var_types: tuple[type, ...], methods: bool):
        self.model = model
        self.var_types = var_types
        self.methods = methods
        self.route = -1
        self.copied = False
        self._modules: list[tuple[tuple[Any, ...], nnx.Module]] = []
        self._keys: dict[tuple[Any, ...], Any] = {}  # path -> the site key registered for it
        self._entries: list[tuple[Any, str]] = []  # the site entries put in the keys (see mark_site)
        self._shapes: dict[tuple[Any, ...], tuple[int, ...] | None] = {}
        self._classes: list[type] = []
        self._strangers_before: dict[type, int] = {}
        self._strangers: dict[type, int] = {}

    def install(self, capture: Routed, drain: Callable[..., None], policy: Any) -> int:
        """Checks the model, routes its sites to ``capture`` and hooks its classes; returns the route.

        Args:
          capture: what the model's sites, exits and callbacks lead to.
          drain: handed to the recorder, which calls it to collect what callbacks left.
          policy: the recorder's policy, which the model's exit carries.

        Raises:
          RuntimeError: a module of the model is captured already, or holds
            what a failed ``nnx.capture`` left behind.
        """
        flax_check.check()
        # nnx.List/nnx.Dict are containers: they never sow, and an attribute
        # next to their integer keys would break Flax's sorting of state paths.
        modules = [
            (path, m) for path, m in iter_modules(self.model) if not isinstance(m, (Sequence, Mapping))
        ]
        for path, module in modules:
            if flax_internals.leftover_captures(module) is not None:
                raise RuntimeError(leftover_message(path))
            if capture_of(module)[0] is not None:
                raise RuntimeError(already_captured_message(path))
        warn_sowed_attributes(modules, self.var_types)
        self.route = route_for(self.model)
        with lock:
            ROUTES[self.route] = capture
        capture.recorder.add_drain(drain)
        self._modules = modules
        self._register(modules)
        self._classes = list(dict.fromkeys(type(m) for _, m in modules))
        for cls in self._classes:
            class_hooks.acquire(cls, self.methods)
        self._strangers_before = {cls: class_hooks.strangers.get(cls, 0) for cls in self._classes}
        if modules and modules[-1][1] is self.model:
            lanes = flax_internals.ensemble_size(self.model)
            vars(self.model)[EXIT] = ExitVariable(Exit(self.route, ROOT, (), policy, lanes=lanes))
        return self.route

    def _register(self, modules: list[tuple[tuple[Any, ...], nnx.Module]]) -> None:
        """Registers every module's site key, giving each module one of its own."""
        owners: dict[int, nnx.Module] = {}
        for path, module in modules:
            key = flax_internals.own_site_key(module)
            if owners.setdefault(id(key), module) is not module:
                # Two modules of the model hold one mapping (one is a clone of
                # the other): each needs its own to be told apart.
                key = flax_internals.fresh_site_key(module)
                owners[id(key)] = module
            self._mark(path, key)
            self._shapes[path] = flax_internals.first_variable_shape(module)

    def _mark(self, path: tuple[Any, ...], key: Any) -> None:
        """Marks a module's site key as the site at ``path``; any copy of the module may take a lazy exit inside a transform."""
        flax_internals.mark_data(key, EXIT)
        self._entries.append((key, flax_internals.mark_site(key, f"{self.route} {path!r}")))
        register_site(key, Site(self.route, path))
        self._keys[path] = key

    def refresh(self) -> None:
        """Registers the modules' keys again: an attribute set on the model in the block changes one (caller holds the lock)."""
        registered = {k for k, site in SITES.items() if site.route == self.route}
        for path, original in self._modules:
            key = flax_internals.site_key(original)
            if key is not None and id(key) not in registered:
                self._mark(path, key)
                registered.add(id(key))

    def first_shape(self, path: tuple[Any, ...]) -> tuple[int, ...] | None:
        """The shape of the first Variable of the module at ``path``, as it was when the block began."""
        return self._shapes.get(path)

    def strangers(self) -> dict[str, int]:
        """After the block: per class of the model, how many values modules of it that are not the model's sowed."""
        return {cls.__name__: n for cls, n in self._strangers.items() if n}

    def uninstall(self, capture: Routed) -> None:
        """Takes every mark and hook off the model and its classes; safe to repeat."""
        if isinstance(vars(self.model).get(EXIT), ExitVariable):
            del vars(self.model)[EXIT]
        self._unmark()
        self._keys, self._entries = {}, []
        self._strangers = {
            cls: class_hooks.strangers.get(cls, 0) - self._strangers_before.get(cls, 0)
            for cls in self._classes
        }
        for cls in self._classes:
            class_hooks.release(cls, self.methods)
        self._classes = []
        with lock:
            unregister_route(self.route)
            if ROUTES.get(self.route) is capture:
                del ROUTES[self.route]

    def _unmark(self) -> None:
        """Takes the capture's entries out of the modules' mappings (see ``flax_internals.mark_site``).

        In place, so that every module sharing a mapping (a view of the
        model made before the block) is as it was, unless the block made a
        copy of the model that outlives it (an ``nnx.cached_partial``): that
        copy holds the marked mappings, and its compiled step checks that
        they come out of each call as they went in, after its donated
        buffers are gone. Then the model's modules get clean mappings of
        their own (``give_back_site_key``), and the copy keeps the marked
        ones; a module a patch around the block knows by its mapping keeps it.
        """
        added = {EXIT, *(entry for _, entry in self._entries)}
        for _, module in self._modules:
            key = flax_internals.site_key(module)
            if self.copied and key is not None and id(key) not in patched_keys:
                flax_internals.give_back_site_key(module, added)
            else:
                for entry in added:
                    flax_internals.unmark(key, entry)
        if not self.copied:
            # Also the mappings the model's modules no longer hold (an attribute set in the block).
            for key in self._keys.values():
                for entry in added:
                    flax_internals.unmark(key, entry)
