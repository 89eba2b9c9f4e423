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

import itertools
import threading
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from jaxcapture_nb.backends.replacing import METHOD, PERTURB, SiteSpec, replaced, replaced_output
from jaxcapture_nb.upstream import flax_internals

PATCH = "_jaxcapture_nb_patch"

# Sites a patch reached, by (specs, site, id of the module's site key), with
# the number of the latest block begun when they were: a step compiled in an
# earlier block reaches its sites without tracing them again, so this
# outlives a block.
reached: dict[tuple[Any, str, int], int] = {}
# The specs of the active blocks whose arrays a program took as arguments
# (see Operands).
_taken: set[tuple[SiteSpec, ...]] = set()
_blocks = itertools.count(1)
_latest_block = 0
# The site keys (flax_internals.site_key) of the modules an active block
# patches, by id, with one of their sites: a module that holds one of these
# keys but no slot is a copy Flax made before the block, which the patch
# cannot reach (see refuse_copy_made_before).
patched_keys: dict[int, str] = {}
# Perturb names each module's class passed to a patched module, for messages.
perturb_names: dict[type, set[str]] = {}
_lock = threading.Lock()


class PatchSlot(nnx.Variable):
    """A patched module's replacement arrays; its ``spec`` metadata says where they go."""


@jax.tree_util.register_pytree_node_class
class Operands:
    """A block's replacement arrays, one tuple per patched site, as its :class:`PatchSlot` holds them.

    A program takes them as arguments by flattening them, and so notes that
    it was given the patched model: a step compiled in an earlier block
    reaches the sites without a trace, but a copy of the model made before
    the block never takes them. The note is by the patches' specs, which
    the tree's structure holds anyway (the slot's metadata holds them too):
    a block's own number there would make every block trace its steps again.
    """

    __slots__ = ("arrays", "specs")

    def __init__(self, arrays: tuple[Any, ...], site_specs: tuple[SiteSpec, ...]):
        self.arrays, self.specs = arrays, site_specs

    def __getitem__(self, k: int) -> Any:
        return self.arrays[k]

    def tree_flatten(self) -> tuple[tuple[Any, ...], tuple[SiteSpec, ...]]:
        with _lock:
            _taken.add(self.specs)
        return self.arrays, self.specs

    @classmethod
    def tree_unflatten(cls, site_specs: tuple[SiteSpec, ...], arrays: Any) -> Operands:
        return cls(tuple(arrays), site_specs)


def new_slot(operands: list[tuple[Any, ...]], site_specs: list[SiteSpec]) -> tuple[PatchSlot, int]:
    """The slot of a block that begins now, holding its ``operands`` for ``site_specs``, and the block's number.

    A module is in one block at a time, so what :data:`reached` notes of its
    sites from this number on is this block's.
    """
    global _latest_block
    held = tuple(site_specs)
    # Made outside the lock, and before the note is cleared: the Variable
    # flattens its value as it is made.
    slot = PatchSlot(Operands(tuple(operands), held), spec=held)
    with _lock:
        _latest_block = block = next(_blocks)
        _taken.discard(held)
    return slot, block


def slot_of(module: Any) -> Any:
    """The module's :class:`PatchSlot`, or None (any copy Flax made of a patched module holds it)."""
    return vars(module).get(PATCH)


def specs(slot: Any) -> tuple[SiteSpec, ...]:
    """The patches a :class:`PatchSlot` holds, one :class:`SiteSpec` each."""
    return slot.get_metadata()["spec"]


def _reach_key(module: Any, slot: Any, spec: SiteSpec) -> tuple[Any, str, int]:
    return specs(slot), spec.site, id(flax_internals.site_key(module))


def _note_reached(module: Any, slot: Any, spec: SiteSpec) -> None:
    with _lock:
        reached[_reach_key(module, slot, spec)] = _latest_block


def was_reached(module: Any, slot: Any, spec: SiteSpec, block: int) -> bool:
    """Whether ``block``, whose patch ``slot`` holds, reached ``spec``'s site of ``module``.

    Either a trace or an eager call reached it during the block, or a step
    compiled in an earlier block reached it then and took the block's arrays
    now.
    """
    noted = reached.get(_reach_key(module, slot, spec))
    return noted is not None and (noted >= block or specs(slot) in _taken)


def end_block(modules: list[tuple[Any, Any]], *, traced: bool) -> None:
    """Forgets what the blocks of these ``(module, slot)`` pairs left behind.

    A block inside a trace also drops what :data:`reached` holds of its
    patches: no compiled step will reach its sites again.
    """
    with _lock:
        for module, slot in modules:
            _taken.discard(specs(slot))
            if traced:
                for spec in specs(slot):
                    reached.pop(_reach_key(module, slot, spec), None)


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
