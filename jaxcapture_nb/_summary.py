"""summarize(): statistics and an exact histogram of every array in a pytree.

Everything here is pure JAX, so it runs on the device and composes with
``jax.jit``, ``nnx.jit``, ``lax.scan`` and ``vmap``. Only the small ``Summary``
arrays ever need to travel to the host.

On a CPU the cost is set by the number of passes over the data and of
scatter updates, so the work is a few plain reductions (min, max, sum, sum of
squares) and one scatter-add that bins every value and counts zeros, NaNs and
infinities in extra slots of the same table. Only when a NaN or Inf shows, or
the values are large enough to overflow float32 or small enough that their
squares underflow, does a careful pass do it all again, masked and scaled by
a power of two (see :mod:`jaxcapture_nb._float32`).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxcapture_nb._backends.flax_internals import is_tracer
from jaxcapture_nb._float32 import (
    INF_BITS,
    from_order_key,
    is_zero,
    magnitude_bits,
    order_key,
    scale_exponent,
    scaled,
    unscaled,
)
from jaxcapture_nb._histogram import _explicit_sharding, _histogram
from jaxcapture_nb._hosts import to_host

DEFAULT_BINS = 64
# Bin indices are read from a float's mantissa (see _index_all_finite).
MAX_BINS = 1 << 16


# The statistics a summary holds, in the order of its two arrays: floats in
# ``stats``, counts (then the histogram) in ``counts``.
FLOAT_FIELDS = ("min", "max", "mean", "std", "lo", "hi")
INT_FIELDS = ("count", "nan_count", "posinf_count", "neginf_count", "zero_count")


def _column(array: str, name: str, doc: str) -> property:
    """A read-only statistic: column ``name`` of ``array``, a scalar for an unstacked summary."""
    i = (FLOAT_FIELDS if array == "stats" else INT_FIELDS).index(name)

    def read(self: Summary) -> Any:
        table = getattr(self, array)
        return None if table is None else table[..., i][()]

    return property(read, doc=doc)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Summary:
    """Statistics of one array, computed on the device.

    All statistics except the non-finite counts are over the finite values
    only. ``hist`` holds exact int32 counts in equal-width bins spanning
    ``[lo, hi]``; its counts add up to ``count``.

    A summary is a pytree of two arrays, ``stats`` and ``counts``, which the
    named statistics below read from; ``shape``, ``dtype``, ``note`` and
    ``reason`` are static. Two leaves rather than one per statistic keep a
    compiled step that returns summaries cheap to call: every output array
    costs the caller host time on each step. When a summary comes out of
    ``lax.scan`` or ``vmap`` both arrays gain leading (stacked) axes; see
    :attr:`stacked_shape`.

    Attributes:
      stats: float32 ``[..., 6]``: min, max, mean, std, lo and hi.
      counts: int32 ``[..., 5 + bins]``: count, nan_count, posinf_count,
        neginf_count, zero_count, then the histogram.
      shape: shape of the summarized array.
      dtype: name of the summarized array's dtype.
      note: how the values were interpreted, e.g. ``"magnitude of complex
        values"``; empty when they were taken as they are.
      reason: why there is no summary (the arrays are then None), e.g. for
        PRNG key arrays; None for a real summary.

    Example:
      >>> import jax.numpy as jnp
      >>> s = summarize(jnp.array([0.0, 1.0, 3.0]), bins=3)
      >>> float(s.max), int(s.zero_count), s.hist.tolist(), s.stats.shape, s.counts.shape
      (3.0, 1, [1, 1, 1], (6,), (8,))
    """

    stats: Any = None
    counts: Any = None
    shape: tuple[int, ...] = dataclasses.field(default=(), metadata={"static": True})
    dtype: str = dataclasses.field(default="", metadata={"static": True})
    note: str = dataclasses.field(default="", metadata={"static": True})
    reason: str | None = dataclasses.field(default=None, metadata={"static": True})

    min = _column("stats", "min", "Smallest finite value.")
    max = _column("stats", "max", "Largest finite value.")
    mean = _column("stats", "mean", "Mean of the finite values.")
    std = _column("stats", "std", "Population standard deviation of the finite values.")
    lo = _column("stats", "lo", "Lower edge of the first bin.")
    hi = _column("stats", "hi", "Upper edge of the last bin.")
    count = _column("counts", "count", "Number of finite values.")
    nan_count = _column("counts", "nan_count", "Number of NaNs.")
    posinf_count = _column("counts", "posinf_count", "Number of +Inf values.")
    neginf_count = _column("counts", "neginf_count", "Number of -Inf values.")
    zero_count = _column("counts", "zero_count", "Number of exact zeros.")

    @property
    def hist(self) -> Any:
        """int32 counts per bin."""
        return None if self.counts is None else self.counts[..., len(INT_FIELDS) :]

    @property
    def bins(self) -> int:
        """Number of histogram bins (0 when there is no summary)."""
        return 0 if self.counts is None else int(np.shape(self.counts)[-1]) - len(INT_FIELDS)

    @property
    def stacked_shape(self) -> tuple[int, ...]:
        """Leading axes added by ``scan``/``vmap`` around the summarized array."""
        return () if self.counts is None else tuple(np.shape(self.counts)[:-1])

    @property
    def edges(self) -> np.ndarray:
        """The ``bins + 1`` bin edges, as a host NumPy array."""
        lo = np.asarray(self.lo, np.float64)[..., None]
        hi = np.asarray(self.hi, np.float64)[..., None]
        steps = np.linspace(0.0, 1.0, self.bins + 1)
        return lo + (hi - lo) * steps

    def to_numpy(self) -> Summary:
        """Returns the same summary with both arrays on the host (itself, if they are).

        Each array is read with :func:`~jaxcapture_nb._hosts.to_host`: for the
        small arrays of a summary, ``np.asarray`` costs about a quarter of what
        ``jax.device_get`` does, and the replicated summary of a multi-process
        run is read through this process's copy, starting no device work.
        """
        if self.counts is None or (
            isinstance(self.stats, np.ndarray) and isinstance(self.counts, np.ndarray)
        ):
            return self
        return dataclasses.replace(self, stats=to_host(self.stats), counts=to_host(self.counts))


_ARRAY_FIELDS = tuple(f.name for f in dataclasses.fields(Summary) if not f.metadata.get("static"))


def _is_summarizable(x: Any) -> bool:
    return isinstance(x, (jax.Array, np.ndarray, np.generic)) or (
        isinstance(x, (bool, int, float, complex)) and not isinstance(x, type)
    )


def _no_summary(x: Any, reason: str) -> Summary:
    return Summary(shape=tuple(np.shape(x)), dtype=str(x.dtype), reason=reason)


def _note(dtype: Any) -> str:
    """How values of ``dtype`` are read: complex ones by their magnitude."""
    return "magnitude of complex values" if jnp.issubdtype(dtype, jnp.complexfloating) else ""


def _as_real_float32(x: jax.Array) -> tuple[jax.Array, str]:
    note = _note(x.dtype)
    return (jnp.abs(x) if note else x).astype(jnp.float32), note


def _edges(lo: jax.Array, hi: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Histogram range; an empty or constant array still gets a visible bar.

    Distinct ``lo`` and ``hi`` are the edges as they are, subnormal ones
    included (they are compared by their bits, which a CPU does not flush to
    zero). A constant's padded edges stay within float32.

    Example:
      >>> [float(e) for e in _edges(jnp.float32(3.4e38), jnp.float32(3.4e38))]
      [3.396600011822504e+38, 3.4028234663852886e+38]
    """
    empty = lo > hi
    spread = order_key(hi) > order_key(lo)
    lo0, hi0 = jnp.where(empty, 0.0, lo), jnp.where(empty, 0.0, hi)
    pad = jnp.maximum(jnp.abs(lo0) * 1e-3, 0.5)
    largest = np.finfo(np.float32).max
    return (
        jnp.where(spread, lo, jnp.maximum(lo0 - pad, -largest)),
        jnp.where(spread, hi, jnp.minimum(hi0 + pad, largest)),
    )


# Slots after the ``bins`` histogram bins. Counting zeros, NaNs and infinities
# in the histogram's own scatter is free, where a compare-and-count pass per
# kind would cost more than the whole histogram.
_ZERO, _NAN, _POSINF, _NEGINF = range(4)


def _index_all_finite(v: jax.Array, lo: jax.Array, scale: jax.Array, bins: int) -> jax.Array:
    """The bin of every value of an all-finite array, or the zero slot.

    ``(v - lo) * scale`` lies in ``[0, bins]``. Adding ``2**p``, the power of
    two at or above ``bins``, moves its integer part into the top ``p`` bits
    of the mantissa, so the bin is a subtraction and a shift of the float's
    bits. ``floor`` and a float-to-int conversion, which XLA guards against
    NaN and overflow, took a third more time in a training step. The sum
    rounds to a multiple of ``2**(p - 23)``, so a value less than that part
    of a bin below an edge (1/131072 of a bin, for 64 bins) counts in the
    bin above, as rounding in ``(v - lo) * scale`` already makes values near
    the top of the range do. Zeros are told apart by their bits: a CPU
    compares a subnormal value as equal to zero.

    Example:
      >>> _index_all_finite(jnp.array([-1.0, 0.0, 0.49, 0.5, 1.0]), -1.0, 2.0, 4).tolist()
      [0, 4, 2, 3, 3]
    """
    p = (bins - 1).bit_length()  # at most 16, as bins <= MAX_BINS
    power = jnp.float32(2**p)
    bits = jax.lax.bitcast_convert_type((v - lo) * scale + power, jnp.int32)
    offset = bits - jax.lax.bitcast_convert_type(power, jnp.int32)
    index = jnp.minimum(jax.lax.shift_right_logical(offset, jnp.int32(23 - p)), bins - 1)
    return jnp.where(is_zero(v), bins + _ZERO, index)


def _index_careful(v: jax.Array, u: jax.Array, lo: jax.Array, scale: jax.Array, bins: int) -> jax.Array:
    """The bin or slot of every value of ``v``, from ``u``, its values in the scaled units of ``lo``."""
    index = jnp.clip(jnp.floor((u - lo) * scale), 0, bins - 1).astype(jnp.int32)
    magnitude = magnitude_bits(v)
    index = jnp.where(is_zero(v), bins + _ZERO, index)
    index = jnp.where(magnitude > INF_BITS, bins + _NAN, index)
    infinity = jnp.where(v > 0, bins + _POSINF, bins + _NEGINF)
    return jnp.where(magnitude == INF_BITS, infinity, index)


# Below this magnitude the squares of an array's values, and of their
# deviations from the mean, would fall among float32's subnormals, and on a
# CPU to zero.
_TINY = np.float32(2.0**-32)


class _Found(NamedTuple):
    """What a pass over an array finds: everything its statistics need.

    ``low``, ``high``, ``total``, ``squares`` and ``pivot`` are in units of
    ``2**e`` (``e`` is 0 after the fast pass); the rest as the values are.
    ``slots`` has each zero counted both in its bin and in the zero slot.
    """

    lo: jax.Array
    hi: jax.Array
    lo_edge: jax.Array
    hi_edge: jax.Array
    e: jax.Array
    low: jax.Array
    high: jax.Array
    total: jax.Array
    squares: jax.Array
    pivot: jax.Array
    slots: jax.Array


def _with_zeros_in_their_bin(
    slots: jax.Array, lo_edge: jax.Array, hi_edge: jax.Array, bins: int
) -> jax.Array:
    """``slots`` with the zero slot's count added to the bin of 0 (edges in any one unit)."""
    zero_bin = jnp.clip(jnp.floor(-lo_edge * (bins / (hi_edge - lo_edge))), 0, bins - 1).astype(jnp.int32)
    return slots.at[zero_bin].add(slots[bins + _ZERO])


def _pass_fast(v, lo, hi, lo_edge, hi_edge, total, squares, *, bins) -> _Found:
    """Histogram of an all-finite array of ordinary magnitude whose reductions are already known."""
    slots = _histogram(_index_all_finite(v, lo_edge, bins / (hi_edge - lo_edge), bins), bins + 4)
    slots = _with_zeros_in_their_bin(slots, lo_edge, hi_edge, bins)
    return _Found(lo, hi, lo_edge, hi_edge, jnp.int32(0), lo, hi, total, squares, jnp.float32(0.0), slots)


def _not_yet(v, lo, hi, lo_edge, hi_edge, total, squares, *, bins) -> _Found:
    """Placeholders, when the careful pass comes next."""
    del v
    zero = jnp.int32(0)
    return _Found(
        lo,
        hi,
        lo_edge,
        hi_edge,
        zero,
        lo,
        hi,
        total,
        squares,
        jnp.float32(0),
        jnp.zeros(bins + 4, zero.dtype),
    )


def _pass_careful(v: jax.Array, *, bins: int) -> _Found:
    """Everything again over the finite values only, in units of a power of two.

    Runs when a NaN or Inf is present, when a sum, a square or the range
    overflows float32, or when the values are too small to square. Min and
    max are taken over the values' bits, which keeps subnormal ones that a
    CPU's float comparisons read as zero. The values are then scaled by
    ``2**-e``, ``e`` chosen so that the widest bin edge becomes about 1: the
    sums cannot overflow and the squares of all but negligible values stay
    normal.
    """
    finite = magnitude_bits(v) < INF_BITS
    key = order_key(v)
    lo = from_order_key(jnp.min(jnp.where(finite, key, order_key(jnp.inf)), initial=order_key(jnp.inf)))
    hi = from_order_key(jnp.max(jnp.where(finite, key, order_key(-jnp.inf)), initial=order_key(-jnp.inf)))
    lo_edge, hi_edge = _edges(lo, hi)
    e = scale_exponent(jnp.maximum(magnitude_bits(lo_edge), magnitude_bits(hi_edge)))
    u, low, high = scaled(v, e), scaled(lo, e), scaled(hi, e)
    pivot = jnp.where(lo <= hi, (low + high) / 2, 0.0)
    total = jnp.sum(jnp.where(finite, u, 0.0))
    squares = jnp.sum(jnp.where(finite, jnp.square(u - pivot), 0.0))
    first, last = scaled(lo_edge, e), scaled(hi_edge, e)
    slots = _histogram(_index_careful(v, u, first, bins / (last - first), bins), bins + 4)
    slots = _with_zeros_in_their_bin(slots, first, last, bins)
    return _Found(lo, hi, lo_edge, hi_edge, e, low, high, total, squares, pivot, slots)


def _one_pass_variance(v, mean, n, e, variance):
    del v, mean, n, e
    return variance


def _centred_variance(v, mean, n, e, variance):
    """The variance from a second pass over the values' deviations from their mean, in units of ``2**e``."""
    del variance
    return jnp.sum(jnp.where(magnitude_bits(v) < INF_BITS, jnp.square(scaled(v, e) - mean), 0.0)) / n


# The one-pass variance E[(v - pivot)^2] - (mean - pivot)^2 loses float32
# precision in proportion to (mean - pivot)^2 / variance. Below this ratio
# its std stayed within 3.5e-6 of float64's over normal, uniform and
# exponential samples of 10 to a million values (a ratio of 1000 allowed
# 1.4e-4); above it the centred pass runs.
_ILL_CONDITIONED = 16.0


def _summarize_array(x: jax.Array, bins: int) -> Summary:
    shape, dtype = tuple(x.shape), str(x.dtype)
    if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
        return _no_summary(x, "PRNG key array: its bits are not numbers")
    # Summaries observe a value and are never differentiated: a sow inside
    # nnx.grad would otherwise carry tangents through every summary op.
    v, note = _as_real_float32(jax.lax.stop_gradient(jnp.asarray(x)))

    # These four reductions share one read of the data (XLA fuses sibling
    # reductions that do not depend on each other). Vectorized min/max may
    # drop a NaN, but the sums never do. Masking every element costs several
    # plain passes on a CPU, so the careful pass runs only when a NaN or Inf
    # shows, or the magnitudes are extreme; its results, like the fast
    # pass's, are all small. Keep the histogram inside the cond even though a
    # cond-free fast pass is faster alone: in a compiled training step XLA
    # then fuses the activation's own computation into the index pass and
    # runs it beside the step's matmuls, and a 4-layer MLP step went from
    # 1.05x to 1.17x its time unsummarized.
    lo = jnp.min(v, initial=jnp.inf)
    hi = jnp.max(v, initial=-jnp.inf)
    total = jnp.sum(v)
    squares = jnp.sum(jnp.square(v))
    lo_edge, hi_edge = _edges(lo, hi)
    fast = (
        jnp.isfinite(total)
        & jnp.isfinite(squares)
        & jnp.isfinite(hi_edge - lo_edge)
        & (lo <= hi)
        & ((jnp.maximum(-lo, hi) >= _TINY) | (lo == hi))
    )
    found = jax.lax.cond(
        fast,
        functools.partial(_pass_fast, bins=bins),
        functools.partial(_not_yet, bins=bins),
        *(v, lo, hi, lo_edge, hi_edge, total, squares),
    )
    # The careful pass also follows the fast one when an array of subnormal
    # values (and zeros) reads as all-zero on a CPU: only the fast pass's
    # count of exact zeros, taken from the bits, tells. Placed here rather
    # than in the first cond, it appears once in the compiled program.
    flushed = (found.lo == 0) & (found.hi == 0) & (found.slots[bins + _ZERO] < v.size)
    found = jax.lax.cond(
        ~fast | flushed, lambda v, _: _pass_careful(v, bins=bins), lambda _, found: found, v, found
    )

    slots = found.slots
    zero_count = slots[bins + _ZERO]
    nan_count = slots[bins + _NAN]
    posinf_count = slots[bins + _POSINF]
    neginf_count = slots[bins + _NEGINF]
    count = jnp.int32(v.size) - nan_count - posinf_count - neginf_count

    empty = count == 0
    n = jnp.maximum(count, 1).astype(jnp.float32)
    # Rounding can carry the mean just past the values, and past float32's
    # largest; it never lies outside them.
    mean = jnp.clip(found.total / n, found.low, found.high)
    variance = found.squares / n - jnp.square(mean - found.pivot)
    ill_conditioned = jnp.square(mean - found.pivot) > _ILL_CONDITIONED * jnp.maximum(variance, 0.0)
    variance = jax.lax.cond(
        ill_conditioned, _centred_variance, _one_pass_variance, v, mean, n, found.e, variance
    )
    # Likewise the std, which for any values is at most half their range.
    std = jnp.minimum(jnp.sqrt(jnp.maximum(variance, 0.0)), (found.high - found.low) / 2)
    # A constant is its own mean, even one too small for the units it was
    # summed in (its padded edges set them).
    mean = jnp.where(order_key(found.lo) == order_key(found.hi), found.lo, unscaled(mean, found.e))
    nan = jnp.float32(jnp.nan)
    stats = [
        jnp.where(empty, nan, found.lo),
        jnp.where(empty, nan, found.hi),
        jnp.where(empty, nan, mean),
        jnp.where(empty, nan, unscaled(std, found.e)),
        found.lo_edge,
        found.hi_edge,
    ]
    counts = [count, nan_count, posinf_count, neginf_count, zero_count]
    return Summary(
        stats=jnp.stack(stats).astype(jnp.float32),
        counts=jnp.concatenate([jnp.stack(counts), slots[:bins]]).astype(jnp.int32),
        shape=shape,
        dtype=dtype,
        note=note,
    )


# Many arrays up to this size that share a shape and dtype are summarized by
# one loop body: compiling the summary once per array costs ~0.1 s each, far
# more than running it. Large arrays would pay more for the copy into a stack,
# and small groups more for taking the stacked result apart again.
_GROUP_MAX_SIZE = 1 << 16
_GROUP_MIN_MEMBERS = 16


def _groups(leaves: list[Any]) -> list[list[int]]:
    """Positions of small arrays that share a shape and dtype, in sizeable groups."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, x in enumerate(leaves):
        if x.size <= _GROUP_MAX_SIZE:
            groups.setdefault((x.shape, x.dtype), []).append(i)
    return [members for members in groups.values() if len(members) >= _GROUP_MIN_MEMBERS]


@functools.partial(jax.jit, static_argnames="bins")
def _summarize_leaves(leaves: list[jax.Array], bins: int) -> tuple[list[Summary | None], list[Summary]]:
    """One program: each large or lone array alone, each small group in a loop.

    Returns the lone summaries (None where the array is in a group) and one
    stacked summary per group of :func:`_groups`.
    """
    groups = _groups(leaves)
    grouped = {i for members in groups for i in members}
    lone = [None if i in grouped else _summarize_array(x, bins) for i, x in enumerate(leaves)]
    stacked = [
        jax.lax.map(lambda x: _summarize_array(x, bins), jnp.stack([leaves[i] for i in members]))
        for members in groups
    ]
    return lone, stacked


def _summaries(leaves: list[jax.Array], bins: int) -> list[Summary]:
    """Summaries of traced arrays, as traced values."""
    lone, stacked = _summarize_leaves(leaves, bins=bins)
    out = list(lone)
    for members, group in zip(_groups(leaves), stacked, strict=True):
        for k, i in enumerate(members):
            out[i] = dataclasses.replace(group, **{f: getattr(group, f)[k] for f in _ARRAY_FIELDS})
    return out


# Values of a step up to this size are summarized in batches. Stacking costs
# a copy, which for larger values (a width-1024 MLP's activations at batch
# 256) costs a step more than compiling their summaries one by one saves.
_STEP_GROUP_MAX_SIZE = 1 << 17


def _step_groups(values: list[jax.Array]) -> list[list[int]]:
    """Positions of the values a compiled step summarizes together: same size and dtype.

    Large arrays, and arrays split over explicit mesh axes (summarized
    shard by shard, see ``_histogram``; flattening one would gather it), are
    summarized alone.
    """
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, x in enumerate(values):
        alone = x.size > _STEP_GROUP_MAX_SIZE or _explicit_sharding(x) is not None
        groups.setdefault(("alone", i) if alone else (x.size, x.dtype), []).append(i)
    return list(groups.values())


def step_summaries(values: list[jax.Array], bins: int) -> list[Summary]:
    """Summaries of the values one trace sowed, as traced values; cheap to compile at any count.

    Compiling a summary costs ~0.1-0.3 s on a CPU, far more than running it,
    and a step with hundreds of sites would compile one each. Values of one
    size and dtype (a transformer's residual stream at every layer, say) are
    flattened, stacked and summarized by one loop body instead, so a step
    compiles one summary per distinct size. The copy into the stack is one
    pass over values the summary reads two or three times anyway; values
    above ``_STEP_GROUP_MAX_SIZE`` skip it.
    """
    out: list[Summary | None] = [None] * len(values)
    for members in _step_groups(values):
        if len(members) == 1:
            (i,) = members
            out[i] = _summarize_array(values[i], bins)
            continue
        stacked = jnp.stack([jax.lax.stop_gradient(values[i]).ravel() for i in members])
        group = jax.lax.map(lambda v: _summarize_array(v, bins), stacked)
        for k, i in enumerate(members):
            x = values[i]
            out[i] = dataclasses.replace(
                group,
                stats=group.stats[k],
                counts=group.counts[k],
                shape=tuple(x.shape),
                dtype=str(x.dtype),
            )
    return out


def step_rows(values: list[jax.Array], bins: int, gate: Any = None) -> list[jax.Array]:
    """One packed row per value, as :func:`step_summaries` makes them; zeros where ``gate`` is False.

    ``gate`` (a traced bool, or None for always) wraps every summary in one
    ``lax.cond``: a step that is not recorded skips them all.
    """

    def rows(values: list[jax.Array]) -> jax.Array:
        return _pack(step_summaries(values, bins))

    if gate is None:
        table = rows(values)
    else:
        width = len(FLOAT_FIELDS) + len(INT_FIELDS) + bins
        table = jax.lax.cond(gate, rows, lambda v: jnp.zeros((len(v), width), jnp.int32), values)
    return [table[i] for i in range(len(values))]


# Packed layout of a summary: one int32 row, its float statistics bit-cast
# and then its counts. A transfer, a host callback and a compiled program's
# outputs each cost per array, so summaries travel as rows of one table.


def _pack(summaries: list[Summary]) -> jax.Array:
    """One packed row per summary (a stacked summary gives one row per member)."""
    rows = []
    for s in summaries:
        stats = jax.lax.bitcast_convert_type(s.stats, jnp.int32).reshape(-1, len(FLOAT_FIELDS))
        rows.append(jnp.concatenate([stats, s.counts.reshape(-1, s.counts.shape[-1])], axis=1))
    return jnp.concatenate(rows)


@functools.partial(jax.jit, static_argnames="bins")
def _summarize_packed(leaves: list[jax.Array], bins: int) -> jax.Array:
    """:func:`_summarize_leaves`, returned as one packed table in leaf order."""
    lone, stacked = _summarize_leaves(leaves, bins=bins)
    parts = [s for s in lone if s is not None] + stacked
    rows = [i for i, s in enumerate(lone) if s is not None] + [i for g in _groups(leaves) for i in g]
    return _pack(parts)[np.argsort(np.asarray(rows))]


class PendingSummaries:
    """Summaries dispatched to the device and not yet fetched.

    Dispatch returns at once and the device computes while Python goes on,
    so a summary started when a value is sowed is usually ready by the end of
    the block. :func:`fetch_summaries` then collects many in one transfer.
    """

    def __init__(self, arrays: list[jax.Array], bins: int):
        self._table = _summarize_packed(arrays, bins=bins)
        self._layout = [(tuple(a.shape), a.dtype) for a in arrays]

    def _unpack(self, table: np.ndarray) -> list[Summary]:
        return [
            unpack_summary(row, shape, dtype) for row, (shape, dtype) in zip(table, self._layout, strict=True)
        ]


def packed_summary(x: jax.Array, bins: int) -> jax.Array:
    """One array's summary as one packed int32 row. Traceable."""
    return _pack([_summarize_array(x, bins)])[0]


def unpack_summary(row: np.ndarray, shape: tuple[int, ...], dtype: Any) -> Summary:
    """The host :class:`Summary` of a packed row, for an array of ``shape`` and ``dtype``.

    Rows stacked by ``scan`` or ``vmap`` (leading axes) give a stacked summary.
    """
    row = np.asarray(row, np.int32)
    name, note = _dtype_name_and_note(dtype)
    return Summary(
        stats=row[..., : len(FLOAT_FIELDS)].view(np.float32),
        counts=row[..., len(FLOAT_FIELDS) :],
        shape=tuple(shape),
        dtype=name,
        note=note,
    )


@functools.cache
def _dtype_name_and_note(dtype: Any) -> tuple[str, str]:
    # A watched step unpacks a row per site and step: naming a dtype costs
    # more than the rest of the unpacking.
    return str(dtype), _note(dtype)


def is_concrete_numeric(x: Any) -> bool:
    """Whether ``x`` is a concrete JAX array that :class:`PendingSummaries` takes."""
    return (
        isinstance(x, jax.Array)
        and not is_tracer(x)
        and not jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)
    )


def fetch_summaries(pending: list[PendingSummaries]) -> list[list[Summary]]:
    """The host summaries of each :class:`PendingSummaries`, in one transfer."""
    tables = jax.device_get([p._table for p in pending])
    return [p._unpack(t) for p, t in zip(pending, tables, strict=True)]


def check_bins(bins: Any) -> None:
    """Raises ValueError unless ``bins`` is a number of histogram bins a summary can have."""
    if not isinstance(bins, int) or isinstance(bins, bool) or not 1 <= bins <= MAX_BINS:
        raise ValueError(f"bins must be an integer from 1 to {MAX_BINS}, got {bins!r}")


def summarize(tree: Any, bins: int = DEFAULT_BINS) -> Any:
    """Summarizes every array in a pytree, in one compiled program.

    Works on concrete arrays and inside ``jax.jit``, ``nnx.jit``, ``scan`` and
    ``vmap``. Floating inputs of any width (float16, bfloat16, float8) are
    summarized in float32, integers and booleans as numbers, complex arrays by
    their magnitude (``note`` says so). PRNG key arrays get a ``Summary``
    whose ``reason`` says why it has no statistics. Leaves that are not
    arrays or numbers become None.

    Args:
      tree: an array or any pytree of arrays.
      bins: number of equal-width histogram bins over the finite range.

    Returns:
      A pytree like ``tree`` with a :class:`Summary` in place of each array.
      Summaries of concrete arrays hold host NumPy values, fetched together
      in one transfer; inside a traced function they hold traced values.

    Example:
      >>> import jax.numpy as jnp
      >>> s = summarize(jnp.array([0.0, 1.0, 2.0, jnp.nan]), bins=4)
      >>> int(s.count), float(s.mean), int(s.nan_count), s.hist.tolist()
      (3, 1.0, 1, [1, 0, 1, 1])
    """
    check_bins(bins)
    leaves, treedef = jax.tree.flatten(tree, is_leaf=lambda x: x is None)
    positions = [i for i, x in enumerate(leaves) if _is_summarizable(x)]
    arrays = [jnp.asarray(leaves[i]) for i in positions]
    keys = {
        i
        for i, a in zip(positions, arrays, strict=True)
        if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key)
    }
    # Key arrays cannot pass through float conversions; keep them out of jit.
    numeric = [(i, a) for i, a in zip(positions, arrays, strict=True) if i not in keys]
    values = [a for _, a in numeric]
    if not values:
        results = []
    elif any(is_tracer(a) for a in values):
        results = _summaries(values, bins)
    else:
        (results,) = fetch_summaries([PendingSummaries(values, bins)])
    out: list[Any] = [None] * len(leaves)
    for (i, _), summary in zip(numeric, results, strict=True):
        out[i] = summary
    for i, a in zip(positions, arrays, strict=True):
        if i in keys:
            out[i] = _summarize_array(a, bins)
    return jax.tree.unflatten(treedef, out)
