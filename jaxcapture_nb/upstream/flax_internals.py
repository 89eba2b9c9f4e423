"""Every use of Flax's private behaviour, behind one door (JAX's is in ``jaxcapture_nb.upstream.jax_internals``).

The package hooks into Flax below its public API. NNX's ``Module.sow`` and
``Module.perturb`` write into ``self.__captures__`` when a module has one
(the protocol behind ``nnx.capture``); a class attribute counts, so a
capture gives the model's classes one and changes no module. A module is
known by its ``_pytree__nodes`` mapping, which Flax keeps by reference in
every graph definition and pytree structure it makes of the module, so
the copies a transform traces (``nnx.jit``, ``nnx.scan``, ``jax.jit`` over
``nnx.merge``) hold the same mapping object. Flax's graph-mode transforms
carry a Variable that their function adds to a module out to the caller's
module, setting it with ``object.__setattr__`` (which a data descriptor on
the class sees), and a module remembers the trace it was made in. ``nnx.List``
keeps its items in attributes named by their index, ``nnx.view_info``
prints ``set_view``'s arguments in a fixed layout, and a frozen Linen
module still takes an attribute set through ``object.__setattr__``. None
of this is promised by Flax, so each use lives here with the Flax source
it relies on (each as Flax 0.12.6 to 0.12.12 have it), and :func:`check`
tries every one on tiny modules the first time a capture starts: an
upgrade that changes one fails with an error naming it, the installed
Flax and the releases this package was tested with, instead of recording
nothing or the wrong thing. A Flax whose ``sow`` no longer goes through
``__captures__`` at all (a functional ``sow``) is named as such.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from flax import linen as nn
from flax import nnx

# The Flax releases the package is tested with, per Python version (Flax 0.12.9 and
# later declare Requires-Python >=3.12): pyproject.toml's requirement, its environment
# marker, and the releases in words. pyproject.toml declares the same.
FLAX_RANGES = (
    ("flax>=0.12.6,<0.12.9", "python_version < '3.12'", "0.12.6 to 0.12.8"),
    ("flax>=0.12.9,<0.12.13", "python_version >= '3.12'", "0.12.9 to 0.12.12"),
)
# The range for the running Python.
FLAX_REQUIREMENT, _, TESTED_FLAX = FLAX_RANGES[sys.version_info >= (3, 12)]

# flax/nnx/module.py, Module.sow and Module.perturb (Flax 0.12.6 to 0.12.12):
# a module with this attribute (``hasattr``) stores sowed and perturbed values
# into it instead of into Variables of its own.
CAPTURES = "__captures__"
# flax/nnx/pytreelib.py (Flax 0.12.6 to 0.12.12): Flax's own bookkeeping
# attributes of a Pytree, and the mapping of a module's attribute names to
# whether each is data.
_PYTREE_PREFIX = "_pytree__"
_NODES = "_pytree__nodes"


class FlaxCompatibilityError(RuntimeError):
    """The installed Flax no longer behaves the way this package relies on."""


# -- NNX: the __captures__ protocol --------------------------------------------


def leftover_captures(module: nnx.Module) -> Any:
    """A ``__captures__`` attribute of the module itself (``nnx.capture`` leaves one when its function raises), else None.

    One on the instance hides the class attribute a capture installs.
    """
    return vars(module).get(CAPTURES)


# -- NNX: knowing a module in every copy of it ----------------------------------


def site_key(module: nnx.Module) -> Any:
    """The object that identifies ``module`` and every copy Flax makes of it: its ``_pytree__nodes`` mapping.

    flax/nnx/pytreelib.py: each module keeps a ``HashableMapping`` of its
    attribute names in the instance attribute ``_pytree__nodes``, a static
    attribute like any other, so ``split``/``merge``, graph-mode and
    tree-mode flattening put the same object into the copies. A module
    gets its own mapping the first time an attribute is set on it (Flax
    makes a new one with ``update`` in ``Pytree._setattr``); until then it
    shares its class's. The same in Flax 0.12.6 to 0.12.12.
    """
    return vars(module).get(_NODES)


def own_site_key(module: nnx.Module) -> Any:
    """Gives ``module`` a mapping of its own if it shares its class's, equal to it (graph definitions stay equal)."""
    key = site_key(module)
    if key is not None and key is getattr(type(module), _NODES, None):
        key = fresh_site_key(module)
    return key


def fresh_site_key(module: nnx.Module) -> Any:
    """Gives ``module`` a new mapping, equal to its own (a clone shares its original's)."""
    key = site_key(module)
    key = type(key)(dict(key.items()))
    object.__setattr__(module, _NODES, key)
    return key


def mark_data(key: Any, attribute: str) -> None:
    """Marks ``attribute`` as data in a module's mapping, in place: every copy that holds the mapping sees it.

    flax/typing.py: ``HashableMapping`` keeps its entries in ``_mapping``
    (Flax 0.12.6 to 0.12.12). A module whose mapping marks an attribute it
    does not have is flattened as before (``Pytree._graph_node_flatten``
    reads the attributes from ``vars``), and one given that attribute
    inside a transform keeps the graph definition its copies outside have:
    a Variable added there leaves it as data.
    """
    key._mapping[attribute] = True


def unmark(key: Any, attribute: str) -> None:
    """Undoes :func:`mark_data` (and :func:`mark_site`)."""
    key._mapping.pop(attribute, None)


def mark_site(key: Any, site: str) -> str:
    """Makes a module's mapping tell its site, in place; returns the entry, for :func:`unmark`.

    Two modules of the same class and attributes have equal mappings, so
    equal graph definitions, and JAX reuses what it traced for one (``remat``,
    ``scan``) for the other: the values sowed in that trace would be the
    first one's. An entry of its own (static, for an attribute that does not
    exist) makes each module's graph definition its own.
    """
    entry = f"~jaxcapture_nb site {site}"
    key._mapping[entry] = False
    return entry


def give_back_site_key(module: nnx.Module, entries: set[str]) -> None:
    """Gives ``module`` a new mapping without ``entries`` (equal to the one it had before they were added).

    The marked mapping itself is left as it is: copies of the module made
    while it was marked (a ``cached_partial``'s clone, a graph definition
    split off for ``jax.jit``) hold it, and a step compiled over such a copy
    checks that the copy comes out with the graph definition it went in
    with. Unmarked in place, the step made inside a block fails when called
    after it, after its donated buffers are gone (``cached_partial`` checks
    the graph definition after the call: flax/nnx/graphlib.py,
    ``SplitContext.unflatten``, Flax 0.12.6 to 0.12.12).
    """
    current = site_key(module)
    if current is not None and any(entry in current for entry in entries):
        clean = {k: v for k, v in current.items() if k not in entries}
        object.__setattr__(module, _NODES, type(current)(clean))


def without_attribute(module: nnx.Module, attribute: str) -> None:
    """Puts back a mapping without ``attribute`` (equal to the one before), undoing Flax's ``_setattr`` of it."""
    current = site_key(module)
    if current is not None and attribute in current:
        object.__setattr__(
            module, _NODES, type(current)({k: v for k, v in current.items() if k != attribute})
        )


def made_in_this_trace(module: nnx.Module) -> bool:
    """Whether ``module`` was made (or merged) by the trace that runs now, so that it may take new attributes.

    flax/nnx/pytreelib.py: ``PytreeState.trace_state`` records the JAX
    trace a module was made in, and Flax refuses to change a module from
    another one (Flax 0.12.6 to 0.12.12).
    """
    state = vars(module).get("_pytree__state")
    return state is not None and state.trace_state.is_valid()


def graph_updates_on() -> bool:
    """Whether Flax transforms run now in graph mode with graph updates (``nnx.set_graph_mode``, ``set_graph_updates``).

    Only then does a transform carry a Variable its function added to a
    module out to the caller (flax/nnx/transforms: ``graph and
    graph_updates``); tree-mode transforms drop it. flax/nnx/graphlib.py
    has ``set_graph_mode`` since Flax 0.12.5 and ``set_graph_updates``
    since 0.12.6; a mode that Flax lacks counts as on.
    """
    graphlib = nnx.graphlib
    modes = [getattr(graphlib, name, None) for name in ("set_graph_mode", "set_graph_updates")]
    return all(mode is None or mode.current_value() for mode in modes)


# What a staged trace is made for (``jax_internals.traced_for``), for the Flax
# transforms that can run with or without graph updates whatever the mode in
# force: the tag of the update context their graph-updating path runs in.
# flax/nnx/transforms/autodiff.py: ``remat(..., graph_updates=False)`` (or
# ``graph=False``) runs ``SimpleRematFn``, which hands back the values of the
# module's Variables and drops any Variable its function added, while the
# graph-updating path runs inside ``graphlib.update_context('remat')``, which
# pushes onto ``GRAPH_CONTEXT.update_context_stacks`` (Flax 0.12.6 to 0.12.12).
_UPDATE_CONTEXT_TAGS = {"checkpoint / remat": "remat"}


def carries_new_variables(traced_for: str | None) -> bool:
    """Whether the Flax transform a trace was made for carries a Variable its function adds out to the caller.

    True for every trace but that of a transform in
    ``_UPDATE_CONTEXT_TAGS`` that runs without graph updates (an argument
    of its own, which :func:`graph_updates_on` does not see).
    """
    tag = _UPDATE_CONTEXT_TAGS.get(traced_for or "")
    if tag is None:
        return True
    stacks = getattr(getattr(nnx.graphlib, "GRAPH_CONTEXT", None), "update_context_stacks", None)
    return stacks is None or bool(stacks.get(tag))


def ensemble_size(model: nnx.Module) -> int:
    """How many members a model made by ``nnx.vmap`` has: the leading axis every array of its Variables shares; else 0.

    An ensemble (``nnx.split_rngs`` and ``nnx.vmap`` over a constructor)
    stacks each parameter of its members along a first axis, and
    ``nnx.vmap(f, in_axes=(0, ...))(ensemble, ...)`` maps every leaf of its
    state along it.

    Example:
      >>> @nnx.split_rngs(splits=3)
      ... @nnx.vmap(in_axes=(0,), out_axes=0)
      ... def make(rngs):
      ...     return nnx.Linear(2, 4, rngs=rngs)
      >>> ensemble_size(make(nnx.Rngs(0))), ensemble_size(nnx.Linear(2, 4, rngs=nnx.Rngs(0)))
      (3, 0)
    """
    leading = set()
    for _, value in nnx.iter_graph(model):
        if isinstance(value, nnx.Variable):
            held = value.get_raw_value()
            shape = getattr(held, "shape", None)
            if shape is None:
                continue
            leading.add(shape[0] if shape else None)
            if len(leading) > 1:
                return 0
    found = next(iter(leading), None)
    return found if isinstance(found, int) and found > 1 else 0


def first_variable_shape(module: nnx.Module) -> tuple[int, ...] | None:
    """The shape of the first array among a module's Variables and its submodules' (by attribute name), or None."""
    for name in sorted(vars(module)):
        value = vars(module)[name]
        if isinstance(value, nnx.Variable):
            raw = value.get_raw_value()
            if hasattr(raw, "shape"):
                return tuple(raw.shape)
        elif isinstance(value, nnx.Module) and not is_flax_bookkeeping(name):
            shape = first_variable_shape(value)
            if shape is not None:
                return shape
    return None


def held_value(variable: nnx.Variable) -> Any:
    """What a Variable holds, without Flax's value hooks (``Variable.get_raw_value``)."""
    return variable.get_raw_value()


def set_held_value(variable: nnx.Variable, value: Any) -> None:
    """Replaces what a Variable holds, from any trace (``Variable.set_raw_value``, unchecked)."""
    variable.set_raw_value(value, _unsafe_bypass_check=True)


# -- NNX: where modules keep their children -------------------------------------


def child_key(container: nnx.Module, attribute: str) -> Any:
    """The path key of the child held in ``attribute``: ``nnx.List`` item i lives in attribute "i"."""
    return int(attribute) if isinstance(container, nnx.List) and attribute.isdigit() else attribute


def is_flax_bookkeeping(attribute: str) -> bool:
    """Whether ``attribute`` is one of Flax's own attributes of a Pytree, never a child."""
    return attribute.startswith(_PYTREE_PREFIX)


def filter_predicate(only: Any) -> Callable[[tuple[Any, ...], Any], bool]:
    """``(path, module) -> bool`` for an NNX filter, as ``nnx.view(..., only=)`` reads it.

    ``nnx.filterlib.to_predicate`` (flax/nnx/filterlib.py, Flax 0.12.6 to
    0.12.12) is how Flax itself reads filters; it is not part of the
    documented API.
    """
    return nnx.filterlib.to_predicate(... if only is None else only)


# -- NNX: the text of nnx.view_info ---------------------------------------------


def set_view_docs(model: nnx.Module, cls: type) -> dict[str, str]:
    """Descriptions of ``cls.set_view``'s arguments, read from ``nnx.view_info``.

    ``view_info`` prints each argument as a line ``"  name: text"`` followed
    by continuation lines indented by four spaces; it raises KeyError when
    the docstring's Args miss a parameter, and then this returns {}
    (flax/nnx/module.py's ``view_info``, unchanged from Flax 0.12.6 to 0.12.12).
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
    """Sets an attribute on one frozen Linen module instance (its ``__setattr__`` refuses).

    flax/linen/module.py: ``Module.__setattr__`` raises
    ``SetAttributeFrozenModuleError`` once the module is initialized,
    outside ``setup`` (Flax 0.12.6 to 0.12.12).
    """
    object.__setattr__(module, name, value)


def unshadow_attribute(module: nn.Module, name: str) -> None:
    """Removes what :func:`shadow_attribute` set, so the class attribute shows again."""
    if name in vars(module):
        object.__delattr__(module, name)


def init_decode_cache(module: nnx.Module, batch_dims: tuple[int, ...], max_length: int) -> None:
    """Builds a fresh, empty decode cache on an attention module (``MultiHeadAttention.init_cache``).

    ``set_view(decode=True)`` builds one only when the attribute is missing,
    and MultiHeadAttention always has it (``cached_key=None``), so a view
    with new cache sizes builds it here (flax/nnx/nn/attention.py:
    ``MultiHeadAttention.set_view`` tests ``hasattr(self, 'cached_key')``,
    which ``__init__`` always sets; Flax 0.12.6 to 0.12.12). The line of
    Flax code that does the same is :func:`init_decode_cache_code`.
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
