"""What a patch does to a value, whichever Flax API reached it: one :class:`SiteSpec` applied to one value.

Shared by the NNX patches (``nnx/patching.py``) and the Linen ones
(``linen_patch.py``): a spec says where its replacement goes (a method's
output, one leaf of it, an index into it) and what it computes; its arrays
come separately, so a compiled step can take them as arguments.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

PERTURB, METHOD = "perturb", "method"


class SiteSpec(NamedTuple):
    """One patch of a module, as static data.

    Attributes:
      site: the site's full name, as the user wrote it (for messages).
      kind: PERTURB (a name passed to ``Module.perturb``) or METHOD.
      name: the perturb name or the method's name.
      leaf: a leaf of a method's returned pytree (``[1]``, ``['k']``), or "".
      index: a NumPy index into the value (hashable, see ``patch.hashable_index``), or None.
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


def replaced(spec: SiteSpec, operands: tuple[Any, ...], value: Any) -> Any:
    """``value`` with ``spec``'s replacement applied, given the replacement's arrays ``operands``."""
    if spec.index is None:
        return _conformed(spec.fn(value, *operands), value, spec.site)
    index = _as_index(spec.index)
    if spec.sliced:
        operands = tuple(op[index] if jnp.shape(op) == jnp.shape(value) else op for op in operands)
    part = value[index]
    return value.at[index].set(_conformed(spec.fn(part, *operands), part, spec.site))


def _conformed(new: Any, old: Any, site: str) -> Any:
    """``new`` as ``old``'s shape and type, so a patch never changes what the model computes with.

    Raises:
      ValueError: ``new`` does not broadcast to ``old``'s shape; names ``site``.

    Example:
      >>> _conformed(jnp.ones(3), jnp.zeros((2, 4)), "blocks.0.residual")
      Traceback (most recent call last):
      ...
      ValueError: 'blocks.0.residual': a replacement of shape (3,) cannot stand for its value of shape (2, 4)
    """
    new = jnp.asarray(new)
    if new.shape != jnp.shape(old):
        try:
            new = jnp.broadcast_to(new, jnp.shape(old))
        except ValueError:
            raise ValueError(
                f"{site!r}: a replacement of shape {new.shape} cannot stand for its value of shape {jnp.shape(old)}"
            ) from None
    return new.astype(jnp.result_type(old))


def _as_index(index: Any) -> Any:
    """The NumPy index that ``patch.hashable_index`` made hashable."""
    if isinstance(index, tuple) and index and index[0] == "slice":
        return slice(*index[1:])
    if isinstance(index, tuple):
        return tuple(_as_index(part) for part in index)
    return index


def replaced_output(method: str, out: Any, patches: list[tuple[SiteSpec, tuple[Any, ...]]]) -> Any:
    """A method's output with each ``(spec, operands)`` applied to the leaf the spec names.

    Raises:
      KeyError: a spec names a leaf the output does not have.
    """
    leaves, tree = jax.tree_util.tree_flatten_with_path(out)
    names = [jax.tree_util.keystr(path) for path, _ in leaves]
    values = [leaf for _, leaf in leaves]
    for spec, operands in patches:
        if spec.leaf not in names:
            raise KeyError(
                f"{spec.site!r}: {method} returned {', '.join(repr(method + n) for n in names) or 'nothing'}, "
                f"not {method + spec.leaf!r}"
            )
        i = names.index(spec.leaf)
        values[i] = replaced(spec, operands, values[i])
    return jax.tree_util.tree_unflatten(tree, values)
