"""Exact int32 counts of bin indices, in one scatter per device.

A CPU scatter costs per update, so on one device the indices are counted in
pairs (see :func:`_histogram_on_one_device`). An array sharded over explicit
mesh axes is counted where each shard lies, and only the small counts are
summed across devices.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, PartitionSpec

# Pairs of up to this many slots (a table of 64K cells) are counted together.
_MAX_PAIRED_SLOTS = 255


def bin_counts(index: jax.Array, slots: int) -> jax.Array:
    """Exact int32 counts of ``index`` values in ``[0, slots)``.

    An array split over explicit mesh axes is counted shard by shard, with
    ``shard_map``: a scatter into one replicated table would need the
    sharding of its result spelled out, and counting locally leaves only the
    counts to add up across devices. With more devices and no explicit
    sharding, the indices keep their shape, because flattening them would
    gather the array onto one device.

    Example:
      >>> bin_counts(jnp.array([2, 0, 2, 2, 1]), 4).tolist()
      [1, 1, 3, 0]
    """
    sharding = _explicit_sharding(index)
    if sharding is not None:
        mesh, spec, axes = sharding

        def count_shard(local: jax.Array) -> jax.Array:
            return jax.lax.psum(_histogram_on_one_device(local, slots), axes)

        return jax.shard_map(count_shard, mesh=mesh, in_specs=spec, out_specs=PartitionSpec())(index)
    if jax.device_count() > 1:
        return jnp.zeros(slots, jnp.int32).at[index].add(1, mode="promise_in_bounds")
    return _histogram_on_one_device(index, slots)


def _explicit_sharding(
    x: jax.Array,
) -> tuple[jax.sharding.AbstractMesh, PartitionSpec, tuple[str, ...]] | None:
    """The mesh and spec of ``x``'s type, and the explicit axes it is split over; None if none.

    Only explicit axes show in an array's type: one sharded over automatic
    axes, or on one device, has none.
    """
    sharding = getattr(jax.typeof(x), "sharding", None)
    mesh = getattr(sharding, "mesh", None)
    if mesh is None:
        return None
    explicit = {
        name for name, kind in zip(mesh.axis_names, mesh.axis_types, strict=True) if kind == AxisType.Explicit
    }
    axes = []
    for entry in sharding.spec:
        for name in entry if isinstance(entry, tuple) else (entry,):
            if name in explicit:
                axes.append(name)
    return (mesh, sharding.spec, tuple(axes)) if axes else None


def _histogram_on_one_device(index: jax.Array, slots: int) -> jax.Array:
    """:func:`bin_counts` of indices that all lie on one device.

    With up to :data:`_MAX_PAIRED_SLOTS` slots the values are counted in
    pairs: each pair of neighbours adds to a cell of a ``slots x slots``
    table, and a value's count is its row sum plus its column sum. Half the
    updates make the histogram about 40% faster, but the table grows as the
    square of the slots: for thousands of bins it would take more memory
    than the array.
    """
    index = index.ravel()
    if slots > _MAX_PAIRED_SLOTS:
        return _count_codes(2 * index + 1, slots)
    width = slots + 1  # one more slot pads an odd-sized array and is dropped
    if index.size % 2:
        index = jnp.concatenate([index, jnp.full(1, slots, index.dtype)])
    pairs = index.reshape(-1, 2)
    table = _count_codes(2 * (pairs[:, 0] * width + pairs[:, 1]) + 1, width * width)
    table = table.reshape(width, width)
    # int32 sums: with jax_enable_x64 on, an integer sum would widen to int64.
    return (table.sum(axis=0, dtype=jnp.int32) + table.sum(axis=1, dtype=jnp.int32))[:slots]


_SCATTER_INTO_VECTOR = jax.lax.ScatterDimensionNumbers(
    update_window_dims=(1,), inserted_window_dims=(), scatter_dims_to_operand_dims=(0,)
)


def _count_codes(codes: jax.Array, cells: int) -> jax.Array:
    """How often each cell ``k < cells`` occurs in ``codes``, where cell k has code ``2k + 1``.

    The scatter adds each code to its own slot, so one array serves as both
    its indices and its updates: an array of ones would cost as much again
    to write as the codes. Slot ``2k + 1`` then holds ``count * (2k + 1)``
    modulo 2**32 (int32 arithmetic wraps), and as every odd number has an
    inverse modulo 2**32, multiplying by it gives back the exact count.
    """
    codes = codes[:, None]
    sums = jax.lax.scatter_add(
        jnp.zeros(2 * cells, jnp.int32),
        codes,
        codes,
        _SCATTER_INTO_VECTOR,
        mode=jax.lax.GatherScatterMode.PROMISE_IN_BOUNDS,
    )
    return sums[1::2] * _odd_inverses(cells)


@functools.cache
def _odd_inverses(cells: int) -> np.ndarray:
    """The inverses modulo 2**32 of the odd numbers 1, 3, ..., 2 * cells - 1, as int32.

    A NumPy constant, so a compiled step does not recompute it on every call.
    """
    odd = np.arange(1, 2 * cells, 2, dtype=np.uint32)
    # Newton's iteration doubles the correct low bits each time, from the 3
    # that ``odd`` itself gets right (a * a = 1 modulo 8 for odd a).
    inverse = odd.copy()
    for _ in range(4):
        inverse *= 2 - odd * inverse
    return inverse.view(np.int32)
