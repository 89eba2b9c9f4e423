"""patch: replace the value at named sites of an NNX model for the length of a block.

A site is named as a capture names it: a name the model passes to
``Module.perturb`` (``blocks.3.residual``), or a method's output
(``blocks.3.mlp.__call__``, a leaf of a returned tuple ``attn.__call__[1]``).
A value the model only sows (``Module.sow``) cannot be patched: ``sow``
hands nothing back, so the model goes on with its own value; pass it
through ``perturb`` instead (``x = self.perturb("residual", x)``), which
hands back the patched value and costs nothing outside a patch or capture.

The replacement's arrays enter a compiled step as arguments (see
``backends/nnx/patching.py``): a step is traced once per set of patched
sites, not once per value. A function given as a replacement is part of
that set: a new function traces the step again.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from flax import linen as nn
from flax import nnx

from jaxcapture_nb.backends.linen_patch import LinenPatch, linen_spec
from jaxcapture_nb.backends.nnx import patching
from jaxcapture_nb.backends.nnx.hooks import class_hooks, wrapped_methods
from jaxcapture_nb.backends.nnx.modules import iter_modules
from jaxcapture_nb.backends.nnx.patching import PATCH
from jaxcapture_nb.backends.replacing import METHOD, PERTURB, SiteSpec
from jaxcapture_nb.interventions.replacements import as_replacement
from jaxcapture_nb.upstream import flax_check, flax_internals
from jaxcapture_nb.upstream.jax_internals import tracing


def hashable_index(index: Any) -> Any:
    """A NumPy index (ints, slices, ``None``, ``...``, tuples of them) as a hashable value.

    Example:
      >>> hashable_index(np.s_[:, 3]), hashable_index(2)
      ((('slice', None, None, None), 3), 2)
    """
    if isinstance(index, slice):
        return ("slice", index.start, index.stop, index.step)
    if isinstance(index, tuple):
        return tuple(hashable_index(part) for part in index)
    if index is None or index is Ellipsis or isinstance(index, (int, np.integer)):
        return None if index is None else (index if index is Ellipsis else int(index))
    raise TypeError(
        f"a site's index is made of ints, slices, None and ..., as np.s_[:, 3] writes it; got {index!r}"
    )


_NAME = re.compile(r"^([^.\[]+)(.*)$")


class _Sites:
    """The modules of a model by dotted path, to tell a site's module from its name."""

    def __init__(self, model: nnx.Module):
        self.modules = {
            ".".join(str(p) for p in path): module
            for path, module in iter_modules(model)
            if not isinstance(module, (Sequence, Mapping))
        }

    def resolve(self, site: str) -> tuple[str, nnx.Module, str, str, str]:
        """``(module path, module, kind, name, leaf)`` of a site name."""
        best = None
        for path in self.modules:
            if (not path or site.startswith(path + ".")) and (best is None or len(path) > len(best)):
                best = path
        if best is None:
            raise KeyError(self._unknown(site, "no module of the model is at its start"))
        rest = site[len(best) + 1 :] if best else site
        match = _NAME.match(rest)
        if match is None:
            raise KeyError(self._unknown(site, "it names a module, not a value"))
        name, leaf = match.groups()
        module = self.modules[best]
        if name in wrapped_methods(type(module)):
            return best, module, METHOD, name, leaf
        if leaf and self._ends_in_a_method(rest):
            # "layer.1.__call__": a path to a method, mistyped.
            raise KeyError(self._unknown(site, f"{type(module).__name__} has no method {name!r}"))
        # Otherwise all the rest is a perturb name, which may hold dots
        # ("attn.scores"); one never called is named when the block ends.
        return best, module, PERTURB, rest, ""

    def _ends_in_a_method(self, rest: str) -> bool:
        """Whether a name's last part (before any ``[...]``) is a method some module of the model has."""
        last = rest.split("[", 1)[0].rsplit(".", 1)[-1]
        return any(last in wrapped_methods(type(module)) for module in self.modules.values())

    def names(self) -> list[str]:
        """Every method site and every perturb name seen, for messages."""
        out = []
        for path, module in self.modules.items():
            prefix = path + "." if path else ""
            methods = list(wrapped_methods(type(module)))
            perturbed = sorted(patching.perturb_names.get(type(module), ()))
            out += [prefix + n for n in (*perturbed, *methods)]
        return out

    def _unknown(self, site: str, why: str) -> str:
        near = difflib.get_close_matches(site, self.names(), n=5, cutoff=0.5)
        hint = f"; nearest: {', '.join(near)}" if near else ""
        return f"the model has no site {site!r} ({why}){hint}"


class SiteIndex(NamedTuple):
    """A slice of a site's value, as a key of :func:`patch` (see :func:`at`)."""

    site: str
    index: Any  # hashable_index's form


def at(site: str, index: Any) -> SiteIndex:
    """The part ``index`` (``np.s_[:, 3]``: token 3 of every example) of a site's value, to key a patch.

    Python before 3.12 cannot key a dict with a slice, so ``("site",
    np.s_[:, 3])`` works as a key there only as ``at("site", np.s_[:, 3])``.

    Example:
      >>> at("blocks.0.out", np.s_[:, 3])
      SiteIndex(site='blocks.0.out', index=(('slice', None, None, None), 3))
    """
    return SiteIndex(site, hashable_index(index))


def _parsed_key(key: Any) -> tuple[str, Any]:
    if isinstance(key, str):
        return key, None
    if isinstance(key, SiteIndex):
        return key.site, key.index
    if isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], str):
        return key[0], hashable_index(key[1])
    raise TypeError(
        "a patch is keyed by a site name or a part of one, as in at('blocks.0.out', np.s_[:, 3]); "
        f"got {key!r}"
    )


class Patch:
    """A block in which named sites of an NNX or Linen model hold replaced values. Make one with :func:`patch`."""

    def __init__(self, model: nnx.Module | nn.Module, patches: Mapping[Any, Any]):
        if not isinstance(model, (nnx.Module, nn.Module)):
            raise TypeError(
                f"patch() takes a flax.nnx.Module or flax.linen.Module, got {type(model).__name__}"
            )
        self.model = model
        self.patches = {_parsed_key(key): as_replacement(value) for key, value in patches.items()}
        self._installed: list[tuple[nnx.Module, Any, type, bool]] | None = None
        self._linen: LinenPatch | None = None
        self._traced = False
        self._block = 0  # the number patching.new_slot gives the block

    def __enter__(self) -> Patch:
        if self._installed is not None or self._linen is not None:
            raise RuntimeError("this patch is already active; a block cannot be entered twice at once")
        if not self.patches:  # nothing to install: the model and its compiled steps are left alone
            self._installed = []
            return self
        if isinstance(self.model, nn.Module):
            site_patches = [
                (linen_spec(site, index, r.fn, r.sliced), r.operands)
                for (site, index), r in self.patches.items()
            ]
            self._linen = LinenPatch(self.model, site_patches)
            self._linen.install()
            return self
        self._traced = tracing()
        if not self._traced:  # the probes trace programs of their own; a sweep checks before its trace
            flax_check.check()
        self._sites = _Sites(self.model)
        planned = self._planned()
        self._installed = []
        try:
            for module, specs, operands in planned:
                methods = any(spec.kind == METHOD for spec in specs)
                class_hooks.acquire(type(module), methods)
                key = flax_internals.own_site_key(module)
                self._installed.append((module, key, type(module), methods))
                flax_internals.mark_data(key, PATCH)
                vars(module)[PATCH], self._block = patching.new_slot(operands, specs)
                patching.patched_keys[id(key)] = specs[0].site
        except BaseException:
            self._uninstall()
            raise
        return self

    def _planned(self) -> list[tuple[nnx.Module, list[SiteSpec], list[tuple[Any, ...]]]]:
        """Each patched module with its patches' specs and arrays, in the order the patches were given."""
        by_module: dict[int, tuple[nnx.Module, list[SiteSpec], list[tuple[Any, ...]]]] = {}
        for (site, index), replacement in self.patches.items():
            _, module, kind, name, leaf = self._sites.resolve(site)
            if patching.slot_of(module) is not None:
                raise RuntimeError(
                    f"{site!r}: its module is already patched by another block; give one patch() "
                    "every site, or end the other block first"
                )
            entry = by_module.setdefault(id(module), (module, [], []))
            entry[1].append(SiteSpec(site, kind, name, leaf, index, replacement.fn, replacement.sliced))
            entry[2].append(replacement.operands)
        return list(by_module.values())

    def __exit__(self, exc_type, exc, tb) -> bool:
        linen, self._linen = self._linen, None
        if linen is not None:
            linen.uninstall()
            message = linen.unreached_message()
            if exc_type is None and message:
                raise KeyError(message)
            return False
        slots = [(patching.slot_of(m), m) for m, *_ in self._installed or ()]
        self._uninstall()
        if exc is not None and _split_along_a_stack(exc, self.patches.values()):
            exc.add_note(STACKED_NOTE)
        try:
            if exc_type is None:
                self._check_reached(slots)
        finally:
            ended = [(module, slot) for slot, module in slots if slot is not None]
            patching.end_block(ended, traced=self._traced)
        return False

    def _uninstall(self) -> None:
        installed, self._installed = self._installed or [], None
        for module, key, cls, methods in reversed(installed):
            patching.patched_keys.pop(id(key), None)
            vars(module).pop(PATCH, None)
            flax_internals.unmark(key, PATCH)
            class_hooks.release(cls, methods)

    def _check_reached(self, slots: list[tuple[Any, nnx.Module]]) -> None:
        if not slots:
            return
        missing = [
            spec
            for slot, module in slots
            if slot is not None
            for spec in patching.specs(slot)
            if not patching.was_reached(module, slot, spec, self._block)
        ]
        if missing:
            # A method site is known to exist; a perturb name only once called.
            near = {
                spec.site: difflib.get_close_matches(spec.site, self._sites.names(), n=3, cutoff=0.5)
                if spec.kind == PERTURB
                else []
                for spec in missing
            }
            listed = "; ".join(
                f"{s!r}" + (f" (nearest: {', '.join(n)})" if n else "") for s, n in near.items()
            )
            raise KeyError(
                f"the block never reached the patched site {listed}: a name that Module.perturb "
                "is not called with, a module the block did not run, or a step compiled before "
                "the block that holds a copy of the model without the patch (an nnx.cached_partial "
                "or a jax.jit of nnx.split state, called before `with patch(...)`: make it inside "
                "the block). A value passed to Module.sow cannot be patched; pass it through "
                "Module.perturb"
            )

    def variables(self, variables: Any) -> Any:
        """A Linen module's ``variables`` with this patch's arrays in them, for an ``apply`` under ``jax.jit``.

        A jitted function then takes the arrays as arguments: it is traced
        once per set of patched sites, not once per value, and keeps nothing
        of the patch after the block. An NNX model needs none of this: its
        patches enter ``nnx.jit`` steps with the model.
        """
        if self._linen is None:
            raise RuntimeError(
                "Patch.variables is for a Linen module's apply, inside its `with patch(...)` block"
            )
        return self._linen.variables(variables)

    def __call__(self, fn: Callable) -> Callable:
        """Runs ``fn`` inside this patch on every call (decorator form)."""

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        return wrapper


# nnx.scan splits a stacked module's Variables along their first axis, the
# patch's too: a replacement array without the stack's axis fails there,
# with JAX's words (jax.lax.scan's "different leading axis sizes", or an
# IndexError for a scalar). The note says what the patch needs instead.
STACKED_NOTE = (
    "jaxcapture_nb: if a patched site is in a stack that nnx.scan runs, the patch's arrays are split "
    "along the stack like its other Variables: give one per layer (a leading axis of the stack's "
    "length, e.g. steering(vectors, scales) with vectors [layers, width] and scales [layers]), or "
    "a replacement with no arrays, such as zero_ablation() or a function of the value"
)


def _split_along_a_stack(exc: BaseException, replacements: Any) -> bool:
    """Whether ``exc`` reads as nnx.scan failing to split a replacement's arrays."""
    if not any(r.operands for r in replacements):
        return False
    if isinstance(exc, ValueError) and "different leading axis sizes" in str(exc):
        return True
    return isinstance(exc, IndexError) and "tuple index out of range" in str(exc)


def patch(model: nnx.Module | nn.Module, patches: Mapping[Any, Any]) -> Patch:
    """Replaces the values at named sites of ``model`` inside a ``with`` block (or a decorated function).

    Args:
      model: an NNX module, or a Linen module whose eager ``apply`` calls
        the block patches (its sites are method outputs, as
        ``capture(module, methods=True)`` names them).
      patches: ``{site: replacement}``. A site is a name as :func:`capture`
        shows it, or :func:`at` of a name and an index to replace a part
        (``at("blocks.0.out", np.s_[:, 3])``: token 3 of every example). A
        replacement is an array (broadcast to the value; one the whole
        value's shape is sliced like it), a function of the value, or a
        :class:`Replacement` such as :func:`zero_ablation`.

    Returns:
      A :class:`Patch`. The model's state and structure after the block are
      what they were before, also when the block raises.

    Raises:
      KeyError: a site the model does not have, with the nearest names; or,
        as the block ends, a patched perturb name the block never reached.

    Example:
      >>> import jax.numpy as jnp
      >>> from jaxcapture_nb import zero_ablation
      >>> class Model(nnx.Module):
      ...     def __init__(self, rngs):
      ...         self.linear = nnx.Linear(2, 2, rngs=rngs)
      ...     def __call__(self, x):
      ...         h = self.perturb("hidden", self.linear(x))
      ...         return h.sum()
      >>> model = Model(nnx.Rngs(0))
      >>> with patch(model, {"hidden": 1.0}):
      ...     float(model(jnp.ones((1, 2))))
      2.0
      >>> with patch(model, {"linear.__call__": zero_ablation(), "hidden": lambda h: h + 3}):
      ...     float(model(jnp.ones((1, 2))))
      6.0
    """
    return Patch(model, patches)
