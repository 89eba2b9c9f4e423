"""Where a patch changes a value: ``Module.perturb``'s return and a method's output.

A patched module holds one :class:`PatchSlot` in the attribute
:data:`PATCH`: a Variable, so that a transform (``nnx.jit``) carries the
replacements' arrays in as arguments of the trace, and whose metadata
``spec`` (static, part of the graph definition) says which of the module's
sites are patched and how. A step compiled for one set of patched sites is
then traced once, whatever values the patches hold.

``Module.perturb(name, x)`` returns ``var[name] + x`` for the Perturbation
Variable that ``__captures__`` gives it (see ``hooks.py``): for a patched
module that Variable holds a :class:`PatchWriter`, whose entries are
:class:`_Patched` objects, and their ``+`` returns the patched value. A
method wrapper (``hooks._sowing_method``) passes a method's output to
:func:`patched_output` before a capture sees it, so a capture inside a
patch records patched values.
"""

from __future__ import annotations

import threading
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from flax import nnx

from jaxcapture_nb._backends import flax_internals

PATCH = "_jaxcapture_nb_patch"
PERTURB, METHOD = "perturb", "method"


class PatchSlot(nnx.Variable):
    """A patched module's replacement arrays; its ``spec`` metadata says where they go."""


class SiteSpec(NamedTuple):
    """One patch of a module, as static data.

    Attributes:
      site: the site's full name, as the user wrote it (for messages).
      kind: PERTURB (a name passed to ``Module.perturb``) or METHOD.
      name: the perturb name or the method's name.
      leaf: a leaf of a method's returned pytree (``[1]``, ``['k']``), or "".
      index: a NumPy index into the value (hashable, see ``_patch.hashable_index``), or None.
      fn: ``fn(target, *operands) -> new target``.
      sliced: whether an operand the shape of the whole value is indexed with ``index`` first.
    """

    site: str
    kind: str
    name: str
    leaf: str
    index: Any
    fn: Any
    sliced: bool


# Sites a patch reached, by (spec, site): a step compiled before reaches its
# sites without tracing them again, so this outlives a block.
reached: set[tuple[Any, str]] = set()
# Perturb names each module's class passed to a patched module, for messages.
perturb_names: dict[type, set[str]] = {}
_lock = threading.Lock()


def slot_of(module: Any) -> Any:
    """The module's :class:`PatchSlot`, or None (any copy Flax made of a patched module holds it)."""
    return vars(module).get(PATCH)


def specs(slot: Any) -> tuple[SiteSpec, ...]:
    """The patches a :class:`PatchSlot` holds, one :class:`SiteSpec` each."""
    return slot.get_metadata()["spec"]


def _apply(spec: SiteSpec, operands: tuple[Any, ...], value: Any) -> Any:
    if spec.index is None:
        return _conformed(spec.fn(value, *operands), value)
    index = _as_index(spec.index)
    if spec.sliced:
        operands = tuple(op[index] if jnp.shape(op) == jnp.shape(value) else op for op in operands)
    part = value[index]
    return value.at[index].set(_conformed(spec.fn(part, *operands), part))


def _conformed(new: Any, old: Any) -> Any:
    """``new`` as ``old``'s shape and type, so a patch never changes what the model computes with."""
    new = jnp.asarray(new)
    if new.shape != jnp.shape(old):
        try:
            new = jnp.broadcast_to(new, jnp.shape(old))
        except ValueError:
            raise ValueError(
                f"a replacement of shape {new.shape} cannot stand for a value of shape {jnp.shape(old)}"
            ) from None
    return new.astype(jnp.result_type(old))


def _as_index(index: Any) -> Any:
    """The NumPy index that ``_patch.hashable_index`` made hashable."""
    if isinstance(index, tuple) and index and index[0] == "slice":
        return slice(*index[1:])
    if isinstance(index, tuple):
        return tuple(_as_index(part) for part in index)
    return index


def _note_reached(slot: Any, spec: SiteSpec) -> None:
    with _lock:
        reached.add((specs(slot), spec.site))


def forget(slots: list[Any]) -> None:
    """Drops what :data:`reached` holds of these slots' patches."""
    with _lock:
        for slot in slots:
            held = specs(slot)
            for spec in held:
                reached.discard((held, spec.site))


class _Patched:
    """What ``var[name]`` gives ``Module.perturb`` in a patched module: ``self + value`` is the patched value."""

    __slots__ = ("inner", "name", "slot")

    def __init__(self, slot: Any, name: str, inner: Any):
        self.slot, self.name, self.inner = slot, name, inner

    def __add__(self, value: Any) -> Any:
        operands = flax_internals.held_value(self.slot)
        for k, spec in enumerate(specs(self.slot)):
            if spec.kind == PERTURB and spec.name == self.name:
                value = _apply(spec, operands[k], value)
                _note_reached(self.slot, spec)
        if self.inner is None:
            return value
        # A capture's own writer (gradients through perturb) sees the patched value.
        self.inner[self.name] = jax.tree.map(jnp.zeros_like, value)
        return self.inner[self.name] + value

    __radd__ = __add__


class PatchWriter:
    """The mapping ``Module.perturb`` reads and writes in a patched module (see the module doc)."""

    __slots__ = ("inner", "module", "slot")

    def __init__(self, module: Any, slot: Any, inner: Any = None):
        self.module, self.slot, self.inner = module, slot, inner

    def __contains__(self, name: object) -> bool:
        with _lock:
            perturb_names.setdefault(type(self.module), set()).add(str(name))
        return True  # nothing is stored: perturb reads its entry at once

    def __getitem__(self, name: str) -> _Patched:
        return _Patched(self.slot, name, self.inner)


def perturbation_for(module: Any, writers: tuple[Any, ...]) -> tuple[Any, ...]:
    """``__captures__`` for a module: a patched module's writer first, before a capture's ``writers``."""
    slot = slot_of(module)
    if slot is None:
        return writers
    inner = next((w for w in writers if type(w) is nnx.Perturbation), None)
    rest = tuple(w for w in writers if w is not inner)
    held = None if inner is None else flax_internals.held_value(inner)
    return (nnx.Perturbation(PatchWriter(module, slot, held)), *rest)


def patched_output(module: Any, method: str, out: Any) -> Any:
    """A method's output with the module's patches of it applied (``out`` itself if none)."""
    slot = slot_of(module)
    if slot is None:
        return out
    mine = [(k, spec) for k, spec in enumerate(specs(slot)) if spec.kind == METHOD and spec.name == method]
    if not mine:
        return out
    operands = flax_internals.held_value(slot)
    leaves, tree = jax.tree_util.tree_flatten_with_path(out)
    names = [jax.tree_util.keystr(path) for path, _ in leaves]
    values = [leaf for _, leaf in leaves]
    for k, spec in mine:
        if spec.leaf not in names:
            raise KeyError(
                f"{spec.site!r}: {method} returned {', '.join(repr(method + n) for n in names) or 'nothing'}, "
                f"not {method + spec.leaf!r}"
            )
        i = names.index(spec.leaf)
        values[i] = _apply(spec, operands[k], values[i])
        _note_reached(slot, spec)
    return jax.tree_util.tree_unflatten(tree, values)
