"""Every use of Flax's private behaviour, behind one door (JAX's is in ``jaxcapture_nb._tracing``).

The package hooks into Flax below its public API: NNX's ``Module.sow`` and
``Module.perturb`` write into a ``__captures__`` attribute when a module has
one (the protocol behind ``nnx.capture``), ``flax.nnx.pytreelib.data`` makes
that attribute part of the module's pytree, ``nnx.List`` keeps its items in
attributes named by their index, ``nnx.view_info`` prints ``set_view``'s
arguments in a fixed layout, and a frozen Linen module still takes an
attribute set through ``object.__setattr__``. None of this is promised by
Flax, so each use lives here with the Flax source it relies on, and
:func:`check` tries every one on tiny modules the first time a capture
starts: an upgrade that changes one fails with an error naming it, the
installed Flax and the releases this package was tested with, instead of
recording nothing or the wrong thing. A Flax whose ``sow`` no longer goes
through ``__captures__`` at all (a functional ``sow``) is named as such.
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

from jaxcapture_nb import _tracing

# The Flax releases the package is tested with, per Python version (Flax 0.12.9 and
# later need Python 3.12): pyproject.toml's requirement, its environment marker, and
# the releases in words. pyproject.toml declares the same.
FLAX_RANGES = (
    ("flax>=0.12.6,<0.12.9", "python_version < '3.12'", "0.12.6 to 0.12.8"),
    ("flax>=0.12.9,<0.12.13", "python_version >= '3.12'", "0.12.9 to 0.12.12"),
)
# The range for the running Python.
FLAX_REQUIREMENT, _, TESTED_FLAX = FLAX_RANGES[sys.version_info >= (3, 12)]

# flax/nnx/module.py, Module.sow and Module.perturb: a module with this
# attribute stores sowed and perturbed values into it instead of into
# Variables of its own.
_CAPTURES = "__captures__"
# flax/nnx/pytreelib.py: Flax's own bookkeeping attributes of a Pytree.
_PYTREE_PREFIX = "_pytree__"


class FlaxCompatibilityError(RuntimeError):
    """The installed Flax no longer behaves the way this package relies on."""


# -- NNX: the __captures__ protocol --------------------------------------------


def set_captures(module: nnx.Module, variables: tuple[nnx.Variable, ...]) -> None:
    """Makes ``module.sow``/``perturb`` store into ``variables``, one Variable per type.

    ``Module.sow(var_type, name, value)`` picks the Variable whose type is
    exactly ``var_type`` and does ``var[name] = reduce_fn(...)`` (with
    ``name in var`` deciding between a first and a later sow);
    ``Module.perturb`` stores zeros the same way and reads ``var[name]``
    back. ``pytreelib.data`` marks the attribute as pytree data, so
    ``nnx.jit``, ``nnx.scan`` and ``nnx.vmap`` carry what the Variables hold
    in and out of their traces, as ``nnx.capture`` relies on too.
    """
    from flax.nnx import pytreelib  # private: flax/nnx/pytreelib.py

    setattr(module, _CAPTURES, pytreelib.data(variables))


def captures(module: nnx.Module) -> tuple[nnx.Variable, ...]:
    """The Variables :func:`set_captures` gave ``module`` (or anyone else did), else ()."""
    return vars(module).get(_CAPTURES, ())


def has_captures(module: nnx.Module) -> bool:
    """Whether ``module`` has a ``__captures__`` attribute, ours or ``nnx.capture``'s leftover."""
    return _CAPTURES in vars(module)


def remove_captures(module: nnx.Module) -> None:
    """Removes ``module``'s ``__captures__`` attribute, if any."""
    if _CAPTURES in vars(module):
        delattr(module, _CAPTURES)


def held_value(variable: nnx.Variable) -> Any:
    """What a Variable holds, without Flax's value hooks (``Variable.get_raw_value``)."""
    return variable.get_raw_value()


def copying_for_a_read() -> bool:
    """Whether the pytree being flattened is a Variable's value that ``Variable.get_value`` copies.

    flax/nnx/variablelib.py: ``Variable.get_value`` (behind ``name in var``
    and ``var[name]``, which ``Module.sow`` and ``perturb`` use) copies what
    the Variable holds with ``jax.tree.map``. Only the few frames between
    ``get_value`` and the flatten it causes are looked at; if Flax stops
    copying this way the answer is just False.
    """
    frame = sys._getframe(1)
    for _ in range(6):
        if frame is None:
            return False
        if frame.f_code is nnx.Variable.get_value.__code__:
            return True
        frame = frame.f_back
    return False


# -- NNX: where modules keep their children -------------------------------------


def child_key(container: nnx.Module, attribute: str) -> Any:
    """The path key of the child held in ``attribute``: ``nnx.List`` item i lives in attribute "i"."""
    return int(attribute) if isinstance(container, nnx.List) and attribute.isdigit() else attribute


def is_flax_bookkeeping(attribute: str) -> bool:
    """Whether ``attribute`` is one of Flax's own attributes of a Pytree, never a child."""
    return attribute.startswith(_PYTREE_PREFIX)


def filter_predicate(only: Any) -> Callable[[tuple[Any, ...], Any], bool]:
    """``(path, module) -> bool`` for an NNX filter, as ``nnx.view(..., only=)`` reads it.

    ``nnx.filterlib.to_predicate`` (flax/nnx/filterlib.py) is how Flax
    itself reads filters; it is not part of the documented API.
    """
    return nnx.filterlib.to_predicate(... if only is None else only)


# -- NNX: the text of nnx.view_info ---------------------------------------------


def set_view_docs(model: nnx.Module, cls: type) -> dict[str, str]:
    """Descriptions of ``cls.set_view``'s arguments, read from ``nnx.view_info``.

    ``view_info`` prints each argument as a line ``"  name: text"`` followed
    by continuation lines indented by four spaces; it raises KeyError when
    the docstring's Args miss a parameter, and then this returns {}.
    """
    try:
        text = nnx.view_info(model, only=cls)
    except KeyError:
        return {}
    docs: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("    ") and current is not None:
            current.append(line.strip())
        elif line.startswith("  ") and ":" in line:
            current = docs.setdefault(line.strip().split(":", 1)[0], [])
        else:
            current = None
    return {name: " ".join(lines) for name, lines in docs.items()}


def has_decode_cache(module: nnx.Module) -> bool:
    """Whether an attention module already holds a decode cache (``MultiHeadAttention.cached_key``)."""
    return getattr(module, "cached_key", None) is not None


# -- Linen: shadowing apply on one frozen instance ------------------------------


def shadow_attribute(module: nn.Module, name: str, value: Any) -> None:
    """Sets an attribute on one frozen Linen module instance (its ``__setattr__`` refuses)."""
    object.__setattr__(module, name, value)


def unshadow_attribute(module: nn.Module, name: str) -> None:
    """Removes what :func:`shadow_attribute` set, so the class attribute shows again."""
    if name in vars(module):
        object.__delattr__(module, name)


# -- the self-check --------------------------------------------------------------


class _Probe(nnx.Module):
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


def _sow_options() -> list[dict[str, Any]]:
    """Each way a model may call ``sow`` and ``perturb``.

    Flax 0.12.9 added ``capture_noop`` (default: the ``nnx_sow_capture_noop``
    flag), which decides what a call does outside a capture; inside one,
    either way must store into ``__captures__``.
    """
    if "capture_noop" in inspect.signature(nnx.Module.sow).parameters:
        return [{"capture_noop": False}, {"capture_noop": True}]
    return [{}]


def _sow_goes_through_captures() -> bool:
    for options in _sow_options():
        probe, sowed = _Probe(), _Recording()
        set_captures(probe, (nnx.Intermediate(sowed),))
        probe.sow(nnx.Intermediate, "sowed", np.ones(2, np.float32), **options)
        if not sowed.touched:
            return False
    return True


def _sow_and_perturb_use_captures() -> bool:
    for options in _sow_options():
        probe = _Probe()
        sowed, perturbed = _Recording(), _Recording()
        set_captures(probe, (nnx.Intermediate(sowed), nnx.Perturbation(perturbed)))
        x = np.ones(2, np.float32)
        probe(x, **options)
        if not (
            len(sowed) == 1
            and sowed.get("sowed", (None,))[0] is x
            and "perturbed" in perturbed.read
            and held_value(captures(probe)[0]) is sowed
        ):
            return False
    return True


def _captures_are_pytree_data() -> bool:
    probe, marker = _Probe(), np.arange(3.0)
    set_captures(probe, (nnx.Intermediate({"marker": marker}),))
    found = any(leaf is marker for leaf in jax.tree.leaves(probe))
    remove_captures(probe)
    return found and not has_captures(probe)


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


_SOW_GOES_THROUGH_CAPTURES = "Module.sow goes through a module's __captures__ attribute when it has one"

# What each probe shows, in the words an error names it by.
ASSUMPTIONS: dict[str, Callable[[], bool]] = {
    _SOW_GOES_THROUGH_CAPTURES: _sow_goes_through_captures,
    "Module.sow and Module.perturb store into the module's __captures__ Variables": (
        _sow_and_perturb_use_captures
    ),
    "flax.nnx.pytreelib.data makes __captures__ part of the module's pytree": _captures_are_pytree_data,
    "nnx.List keeps item i in attribute 'i'": _list_items_in_index_attributes,
    "nnx.view_info prints set_view's arguments as '  name: description' lines": _view_info_lists_arguments,
    "a frozen Linen module takes an attribute set with object.__setattr__": _frozen_linen_module_takes_a_shadow,
    # JAX's, which live with the trace helpers (jaxcapture_nb._tracing).
    **_tracing.ASSUMPTIONS,
}


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


def init_decode_cache(module: nnx.Module, batch_dims: tuple[int, ...], max_length: int) -> None:
    """Builds a fresh, empty decode cache on an attention module (``MultiHeadAttention.init_cache``).

    ``set_view(decode=True)`` builds one only when the attribute is missing,
    and MultiHeadAttention always has it (``cached_key=None``), so a view
    with new cache sizes builds it here. The line of Flax code that does the
    same is :func:`init_decode_cache_code`.
    """
    attention: Any = module  # an nnx.MultiHeadAttention; the checker knows only nnx.Module
    attention.init_cache((*batch_dims, max_length, attention.in_features), attention.dtype or "float32")


def init_decode_cache_code(name: str, batch_dims: tuple[int, ...], max_length: int, typed: bool) -> str:
    """The Flax call :func:`init_decode_cache` makes, on a module called ``name``, as code.

    ``typed``: the modules have a ``dtype`` of their own, so the code passes it.

    Example:
      >>> init_decode_cache_code("m", (1,), 32, typed=True)
      'm.init_cache((1, 32, m.in_features), m.dtype)'
    """
    dtype = f", {name}.dtype" if typed else ""
    return f"{name}.init_cache(({', '.join(map(str, batch_dims))}, {max_length}, {name}.in_features){dtype})"
