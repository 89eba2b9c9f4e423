"""check(): every assumption this package makes about Flax's internals, tried once per process.

Each probe runs a tiny model through the Flax behaviour one hook of
:mod:`jaxcapture_nb.upstream.flax_internals` relies on. The first capture of
a process calls :func:`check`, which raises a
:class:`~jaxcapture_nb.upstream.flax_internals.FlaxCompatibilityError` naming
the assumption that broke and what it meant, instead of a capture failing
later in a way that points nowhere.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from importlib import metadata
from typing import Any

import jax
import numpy as np
from flax import linen as nn
from flax import nnx

from jaxcapture_nb.upstream import jax_internals
from jaxcapture_nb.upstream.flax_internals import (
    CAPTURES,
    FLAX_REQUIREMENT,
    TESTED_FLAX,
    FlaxCompatibilityError,
    child_key,
    made_in_this_trace,
    own_site_key,
    set_view_docs,
    shadow_attribute,
    site_key,
    unshadow_attribute,
)


class _Probe(nnx.Module):
    def __init__(self):
        self.scale = nnx.Param(np.ones(2, np.float32))

    def __call__(self, x, **options):
        self.sow(nnx.Intermediate, "sowed", x, **options)
        return self.perturb("perturbed", x, **options)


class _Recording(dict):
    """A mapping that notes what ``sow`` and ``perturb`` do to it."""

    def __init__(self):
        super().__init__()
        self.read: list[str] = []
        self.touched = False

    def __contains__(self, name):
        self.touched = True
        return super().__contains__(name)

    def __getitem__(self, name):
        self.touched = True
        self.read.append(name)
        return super().__getitem__(name)

    def __setitem__(self, name, value):
        self.touched = True
        super().__setitem__(name, value)


class _ClassCaptures:
    """A class attribute that hands ``sow`` and ``perturb`` the Variables of one probe instance."""

    def __init__(self, owner: Any, variables: tuple[nnx.Variable, ...]):
        self.owner, self.variables = owner, variables

    def __get__(self, module: Any, cls: Any = None) -> Any:
        if module is not self.owner:
            raise AttributeError(CAPTURES)
        return self.variables


def _probe_with_captures(*mappings: dict) -> _Probe:
    """A probe of a class of its own whose ``__captures__`` class attribute holds ``mappings`` (Intermediate, Perturbation)."""
    probe = type("_CapturedProbe", (_Probe,), {})()
    types = (nnx.Intermediate, nnx.Perturbation)
    setattr(
        type(probe),
        CAPTURES,
        _ClassCaptures(probe, tuple(t(m) for t, m in zip(types, mappings, strict=False))),
    )
    return probe


def _sow_options() -> list[dict[str, Any]]:
    """Each way a model may call ``sow`` and ``perturb``.

    Flax 0.12.11 added ``capture_noop`` (default: the ``nnx_sow_capture_noop``
    flag; 0.12.10 has neither), which decides what a call does outside a
    capture; inside one, either way must store into ``__captures__``.
    """
    if "capture_noop" in inspect.signature(nnx.Module.sow).parameters:
        return [{"capture_noop": False}, {"capture_noop": True}]
    return [{}]


def _sow_goes_through_captures() -> bool:
    for options in _sow_options():
        sowed = _Recording()
        probe = _probe_with_captures(sowed)
        probe.sow(nnx.Intermediate, "sowed", np.ones(2, np.float32), **options)
        if not sowed.touched:
            return False
    return True


def _sow_and_perturb_use_captures() -> bool:
    # Probed while tracing, as models sow: run eagerly, ``perturb``'s
    # addition compiled two programs, a tenth of a second of a first capture.
    def probe_once(x, options):
        sowed, perturbed = _Recording(), _Recording()
        probe = _probe_with_captures(sowed, perturbed)
        probe(x, **options)
        return (
            len(sowed) == 1
            and sowed.get("sowed", (None,))[0] is x
            and "perturbed" in perturbed.read
            and "sowed" not in vars(probe)
        )

    held: list[bool] = []
    for options in _sow_options():
        jax.make_jaxpr(lambda x, options=options: held.append(probe_once(x, options)) or x)(
            np.ones(2, np.float32)
        )
    return all(held) and len(held) == len(_sow_options())


def _copies_share_the_site_key() -> bool:
    probe = _Probe()
    key = own_site_key(probe)
    graph_copy = nnx.merge(*nnx.split(probe))
    leaves, treedef = jax.tree.flatten(probe)
    tree_copy = jax.tree.unflatten(treedef, leaves)
    return site_key(graph_copy) is key and site_key(tree_copy) is key and graph_copy is not probe


class _SeenSets:
    """A data descriptor that notes each set of one attribute and keeps the value in the instance."""

    def __init__(self, name: str):
        self.name, self.seen = name, 0

    def __get__(self, module: Any, cls: Any = None) -> Any:
        if module is None:
            return self
        try:
            return vars(module)[self.name]
        except KeyError:
            raise AttributeError(self.name) from None

    def __set__(self, module: Any, value: Any) -> None:
        self.seen += 1
        vars(module)[self.name] = value


def _transforms_carry_new_variables_out() -> bool:
    seen = _SeenSets("grown")
    cls = type("_GrowingProbe", (_Probe,), {"grown": seen})

    inside: list[bool] = []

    def grow(module, x):
        inside.append(made_in_this_trace(module))
        module.grown = nnx.Intermediate(x * module.scale[...])
        return x

    try:
        transform = nnx.remat(grow, graph=True, graph_updates=True)  # whatever mode the caller set
    except TypeError:  # a Flax before 0.12.6, whose remat takes no graph_updates
        transform = nnx.remat(grow)
    grown: list[Any] = []

    def probe(x):
        # Made and transformed while tracing: run eagerly, the transform
        # compiled its function.
        module = cls()
        transform(module, x)
        grown.append(vars(module).get("grown"))
        return x

    jax.make_jaxpr(probe)(np.ones(2, np.float32))
    return inside == [True] and seen.seen >= 2 and isinstance(grown[0], nnx.Intermediate)


def _modules_remember_their_trace() -> bool:
    probe, seen = _Probe(), []
    jax.make_jaxpr(lambda x: seen.append(made_in_this_trace(probe)) or x)(1.0)
    return seen == [False] and made_in_this_trace(probe)


def _list_items_in_index_attributes() -> bool:
    item = _Probe()
    items = nnx.List([item])
    return vars(items).get("0") is item and child_key(items, "0") == 0


def _view_info_lists_arguments() -> bool:
    docs = set_view_docs(nnx.Dropout(0.5), nnx.Dropout)
    return bool(docs.get("deterministic"))


def _frozen_linen_module_takes_a_shadow() -> bool:
    module = nn.Dense(2)

    def marker(*args, **kwargs):
        return None

    shadow_attribute(module, "apply", marker)
    shadowed = module.apply is marker
    unshadow_attribute(module, "apply")
    return shadowed and module.apply is not marker


_SOW_GOES_THROUGH_CAPTURES = (
    "Module.sow goes through a module's __captures__ attribute when it has one, a class attribute included"
)


# What a broken assumption means for the user, where that says more than its name.
_MEANINGS = {
    _SOW_GOES_THROUGH_CAPTURES: (
        "Module.sow no longer goes through __captures__, as a functional sow (one that hands sowed "
        "values back instead of storing them in the module) would: this jaxcapture_nb release does "
        "not support the functional sow. "
    ),
}


def flax_version() -> str:
    """The installed Flax release."""
    return metadata.version("flax")


@functools.cache
def check() -> None:
    """Checks, once per process, every assumption this package makes about Flax and JAX.

    Raises:
      FlaxCompatibilityError: naming the assumption that failed, the installed
        Flax and the releases this package was tested with.
    """
    for assumption, holds in ASSUMPTIONS.items():
        try:
            ok = holds()
        except Exception as e:  # any failure of a probe means the assumption broke
            ok, detail = False, f" ({type(e).__name__}: {e})"
        else:
            detail = ""
        if not ok:
            raise FlaxCompatibilityError(
                f"jaxcapture_nb relies on this behaviour of Flax, which flax {flax_version()} does not "
                f"show: {assumption}{detail}. {_MEANINGS.get(assumption, '')}jaxcapture_nb is tested "
                f"with flax {TESTED_FLAX} on Python {sys.version_info.major}.{sys.version_info.minor}; "
                f"install one of those releases (pip install '{FLAX_REQUIREMENT}')."
            )


# What each probe shows, in the words an error names it by.
ASSUMPTIONS: dict[str, Callable[[], bool]] = {
    _SOW_GOES_THROUGH_CAPTURES: _sow_goes_through_captures,
    "Module.sow and Module.perturb store into the module's __captures__ Variables": (
        _sow_and_perturb_use_captures
    ),
    "the copies nnx.split/nnx.merge and jax.tree make of a module hold its _pytree__nodes mapping": (
        _copies_share_the_site_key
    ),
    "a graph-mode transform carries a Variable its function adds to a module out, with object.__setattr__": (
        _transforms_carry_new_variables_out
    ),
    "a module's _pytree__state knows the trace it was made in": _modules_remember_their_trace,
    "nnx.List keeps item i in attribute 'i'": _list_items_in_index_attributes,
    "nnx.view_info prints set_view's arguments as '  name: description' lines": _view_info_lists_arguments,
    "a frozen Linen module takes an attribute set with object.__setattr__": _frozen_linen_module_takes_a_shadow,
    # JAX's, which live with the trace helpers (jaxcapture_nb.upstream.jax_internals).
    **jax_internals.ASSUMPTIONS,
}
