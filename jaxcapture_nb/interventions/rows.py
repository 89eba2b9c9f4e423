"""The rows of a patching sweep: its sites, or each site's heads, and how a row's patch is placed.

A sweep given ``heads=`` patches one head at a time: each site gives a row
per head (``"layers.3.attn[head 5]"``), its heads together, the sites in the
order the model reaches them.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np


def heads_of(heads: int | Sequence[int] | None) -> tuple[int, ...] | None:
    """The heads to patch one at a time, or None.

    Example:
      >>> heads_of(3), heads_of([0, 2]), heads_of(None)
      ((0, 1, 2), (0, 2), None)
    """
    if heads is None:
        return None
    listed = tuple(range(heads)) if isinstance(heads, (int, np.integer)) else tuple(int(h) for h in heads)
    if not listed:
        raise ValueError("heads= names no head: give the number of heads, or the heads to patch")
    return listed


def row_order(order: list[int], heads: tuple[int, ...] | None) -> list[int]:
    """The program's rows (a site's heads together) in model order of the sites."""
    per_site = len(heads or (None,))
    return [site * per_site + h for site in order for h in range(per_site)]


def row_names(sites: tuple[str, ...], order: list[int], heads: tuple[int, ...] | None) -> list[str]:
    """A row's name: its site's, and its head's where heads were patched one at a time.

    Example:
      >>> row_names(("a", "b"), [1, 0], (0, 5))
      ['b[head 0]', 'b[head 5]', 'a[head 0]', 'a[head 5]']
    """
    if heads is None:
        return [sites[i] for i in order]
    return [f"{sites[i]}[head {h}]" for i in order for h in heads]


def check_heads(
    site: str, shape: tuple[int, ...], heads: tuple[int, ...], head_axis: int, position_axis: int | None
) -> None:
    """Raises unless ``heads`` lie along ``head_axis`` of a value of ``shape``, apart from its positions.

    Example:
      >>> check_heads("attn", (2, 6, 4, 8), (0, 5), 2, 1)
      Traceback (most recent call last):
      ...
      ValueError: heads= names head 5 of 'attn', whose value has 4 along head_axis=2 (shape (2, 6, 4, 8)): give heads along that axis, or another head_axis
    """
    if not -len(shape) <= head_axis < len(shape):
        raise ValueError(
            f"head_axis={head_axis} is not an axis of {site!r}, whose value has shape {shape}: "
            "give head_axis= the axis of its heads"
        )
    if position_axis is not None and head_axis % len(shape) == position_axis % len(shape):
        raise ValueError(
            f"head_axis and position_axis are both {head_axis % len(shape)}: heads and positions lie along other axes"
        )
    count = shape[head_axis]
    wrong = next((h for h in heads if not 0 <= h < count), None)
    if wrong is not None:
        raise ValueError(
            f"heads= names head {wrong} of {site!r}, whose value has {count} along head_axis={head_axis} "
            f"(shape {shape}): give heads along that axis, or another head_axis"
        )


def along(value: jax.Array, axis: int, index: jax.Array) -> jax.Array:
    """A mask, broadcastable to ``value``, of the entries at ``index`` along ``axis`` (which may count from the end)."""
    axis %= value.ndim
    places = jnp.arange(value.shape[axis]).reshape([-1 if a == axis else 1 for a in range(value.ndim)])
    return places == index


def estimated_rows(
    change: np.ndarray,
    positions: Sequence[int] | None,
    position_axis: int,
    heads: tuple[int, ...] | None,
    head_axis: int,
) -> list[list[float]]:
    """A site's estimated changes summed over every other axis: a row per head (one if None), a column per position.

    Example:
      >>> change = np.arange(12.0).reshape(1, 3, 2, 2)  # [batch, tokens, heads, head_dim]
      >>> estimated_rows(change, [0, 2], 1, (1,), 2)
      [[5.0, 21.0]]
    """
    kept = [
        axis % change.ndim
        for axis, given in ((head_axis, heads), (position_axis, positions))
        if given is not None
    ]
    if len(set(kept)) < len(kept):
        raise ValueError(
            f"head_axis and position_axis are both {kept[0]}: heads and positions lie along other axes"
        )
    moved = np.moveaxis(change, kept, list(range(len(kept))))
    summed = moved.reshape(*moved.shape[: len(kept)], -1).sum(-1)
    summed = summed[None] if heads is None else summed[list(heads)]
    summed = summed[..., None] if positions is None else summed[:, list(positions)]
    return summed.tolist()
