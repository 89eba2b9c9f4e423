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
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from jaxcapture_nb.backends.replacing import METHOD, PERTURB, SiteSpec, replaced, replaced_output
from jaxcapture_nb.upstream import flax_internals

PATCH = "_jaxcapture_nb_patch"


class PatchSlot(nnx.Variable):
    """A patched module's replacement arrays; its ``spec`` metadata says where they go."""


# Sites a patch reached, by (specs, site, id of the module's site key): a
# step compiled in an earlier block reaches its sites without tracing them
# again, so this outlives a block.
reached: set[tuple[Any, str, int]] = set()
# The site keys (flax_internals.site_key) of the modules an active block
# patches, by id, with one of their sites: a module that holds one of these
# keys but no slot is a copy Flax made before the block, which the patch
# cannot reach (see refuse_copy_made_before).
patched_keys: dict[int, str] = {}
# Perturb names each module's class passed to a patched module, for messages.
perturb_names: dict[type, set[str]] = {}
_lock = threading.Lock()


def slot_of(module: Any) -> Any:
    """The module's :class:`PatchSlot`, or None (any copy Flax made of a patched module holds it)."""
    return vars(module).get(PATCH)


def specs(slot: Any) -> tuple[SiteSpec, ...]:
    """The patches a :class:`PatchSlot` holds, one :class:`SiteSpec` each."""
    return slot.get_metadata()["spec"]


def _note_reached(module: Any, slot: Any, spec: SiteSpec) -> None:
    with _lock:
        reached.add((specs(slot), spec.site, id(flax_internals.site_key(module))))


def was_reached(module: Any, slot: Any, spec: SiteSpec) -> bool:
    """Whether a patch of ``module`` reached ``spec``'s site, in this block or in a step compiled in an earlier one."""
    return (specs(slot), spec.site, id(flax_internals.site_key(module))) in reached


def forget(modules: list[tuple[Any, Any]]) -> None:
    """Drops what :data:`reached` holds of these ``(module, slot)`` pairs' patches."""
    with _lock:
        for module, slot in modules:
            held = specs(slot)
            for spec in held:
                reached.discard((held, spec.site, id(flax_internals.site_key(module))))


def refuse_copy_made_before(module: Any) -> None:
    """Raises if ``module`` is a copy, made before the active patch, of a module it patches.

    Such a copy (an ``nnx.cached_partial``'s, an ``nnx.view``, modules that
    ``nnx.merge`` builds from a graph definition split off before the
    block) shares the patched module's site key but not its slot: it would
    compute unpatched values while the block says they are patched.
    """
    if not patched_keys:  # no block active: the common case, one test
        return
    site = patched_keys.get(id(flax_internals.site_key(module)))
    if site is not None:
        raise RuntimeError(
            f"{site!r} is patched, but this call runs a copy of its module made before the "
            "`with patch(...)` block began, which does not hold the patch: an nnx.cached_partial, "
            "an nnx.view, or the graph definition of an nnx.split given to jax.jit. Make the copy "
            "inside the block (`with patch(model, ...): step = nnx.cached_partial(...)`, or "
            "`graphdef, state = nnx.split(model)` inside it), or call the model itself"
        )


class _Patched:
    """What ``var[name]`` gives ``Module.perturb`` in a patched module: ``self + value`` is the patched value."""

    __slots__ = ("inner", "module", "name", "slot")

    def __init__(self, module: Any, slot: Any, name: str, inner: Any):
        self.module, self.slot, self.name, self.inner = module, slot, name, inner

    def __add__(self, value: Any) -> Any:
        operands = flax_internals.held_value(self.slot)
        for k, spec in enumerate(specs(self.slot)):
            if spec.kind == PERTURB and spec.name == self.name:
                value = replaced(spec, operands[k], value)
                _note_reached(self.module, self.slot, spec)
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
        return _Patched(self.module, self.slot, name, self.inner)


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
        refuse_copy_made_before(module)
        return out
    mine = [(k, spec) for k, spec in enumerate(specs(slot)) if spec.kind == METHOD and spec.name == method]
    if not mine:
        return out
    operands = flax_internals.held_value(slot)
    out = replaced_output(method, out, [(spec, operands[k]) for k, spec in mine])
    for _, spec in mine:
        _note_reached(module, slot, spec)
    return out
