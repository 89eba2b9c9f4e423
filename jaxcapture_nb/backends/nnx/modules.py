"""The submodules of an NNX model with their paths, as ``nnx.iter_modules`` finds them.

A capture installs its sinks on every submodule each time a block starts,
so this walk runs once per captured cell. Flax's ``iter_modules`` flattens
every leaf of the model (each parameter, each int of a layer's
configuration) to find the modules; here only attributes that hold modules
are followed, which is several times faster on typical models.

The quick walk covers models built from modules held in attributes and in
``nnx.List`` / ``nnx.Dict``. Anything else that may hold a module (a plain
list or dict of modules, a module shared between two places, a module inside
some other pytree) is left to Flax's own walk, so paths always match
``nnx.iter_modules``.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from flax import nnx

from jaxcapture_nb.upstream.flax_internals import child_key, is_flax_bookkeeping

Path = tuple[Any, ...]

# Attribute values that cannot hold a module, checked by exact type first
# because nearly every attribute of a layer is one of them.
_ATOMS = frozenset({type(None), bool, int, float, complex, str, bytes})


class _LeaveToFlax(Exception):
    """The model has a structure whose paths Flax's own walk should decide."""


def iter_modules(model: nnx.Module) -> list[tuple[Path, nnx.Module]]:
    """Every module of ``model`` (itself included) once, with its path.

    Args:
      model: the root module.

    Returns:
      ``(path, module)`` pairs, the same set ``nnx.iter_modules(model)``
      yields (children come before their parents).

    Example:
      >>> from flax import nnx
      >>> class Model(nnx.Module):
      ...     def __init__(self, rngs):
      ...         self.blocks = nnx.List([nnx.Linear(2, 2, rngs=rngs) for _ in range(2)])
      >>> [path for path, _ in iter_modules(Model(nnx.Rngs(0)))]
      [('blocks', 0), ('blocks', 1), ('blocks',), ()]
    """
    try:
        return _quick_walk(model)
    except _LeaveToFlax:
        pass
    try:
        # Tree mode is ~3x faster than graph mode but refuses shared modules (a ValueError
        # from flax/nnx/graphlib.py's ``_iter_tree``, Flax 0.12.6 to 0.12.12).
        return list(nnx.iter_modules(model, graph=False))
    except ValueError:
        return list(nnx.iter_modules(model, graph=True))


def _quick_walk(model: nnx.Module) -> list[tuple[Path, nnx.Module]]:
    found: list[tuple[Path, nnx.Module]] = []
    seen: set[int] = set()

    def visit(path: Path, module: nnx.Module) -> None:
        if id(module) in seen:
            raise _LeaveToFlax  # shared: which path names it is Flax's rule
        seen.add(id(module))
        for name, value in vars(module).items():
            if type(value) in _ATOMS:
                continue
            if isinstance(value, nnx.Module):
                visit((*path, child_key(module, name)), value)
            elif not is_flax_bookkeeping(name) and _may_hold_module(value):
                raise _LeaveToFlax
        found.append((path, module))

    visit((), model)
    return found


# Per attribute type: "leaf" (never holds a module), "flax" (a Flax pytree
# other than a module: its insides are Flax's business) or "container" (a
# pytree such as a tuple or dict, whose contents decide).
_kinds: dict[type, str] = {}


def _kind(value: Any) -> str:
    cls = type(value)
    if issubclass(cls, (nnx.Variable, nnx.RngStream, nnx.Rngs, jax.Array, np.ndarray)):
        return "leaf"
    if issubclass(cls, nnx.Pytree):
        return "flax"
    # Whether a type is a pytree node is decided by its registration, so the
    # answer holds for every value of the type.
    return "leaf" if jax.tree_util.all_leaves([value]) else "container"


def _may_hold_module(value: Any) -> bool:
    kind = _kinds.get(type(value))
    if kind is None:
        kind = _kinds[type(value)] = _kind(value)
    if kind != "container":
        return kind == "flax"
    if type(value) in (tuple, list) and all(type(item) in _ATOMS for item in value):
        return False  # a layer's configuration, such as a kernel size
    leaves = jax.tree.leaves(value, is_leaf=lambda x: isinstance(x, nnx.Pytree))
    return any(isinstance(leaf, nnx.Pytree) for leaf in leaves)
