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
a power of two (see :mod:`jaxcapture_nb.stats.float32`).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcapture_nb.core.hosts import to_host
from jaxcapture_nb.stats.batch import device_layout, packed_rows, padded_table, summarize_batch
from jaxcapture_nb.stats.bins import SLOTS, ZERO, Found, edges, fast_pass_holds, index_all_finite
from jaxcapture_nb.stats.histogram import _explicit_sharding, bin_counts
from jaxcapture_nb.stats.passes import (
    careful_pass,
    counted,
    moments,
    statistics,
    stats_row,
    with_zeros_in_their_bin,
)
from jaxcapture_nb.stats.reduced import PASS_FIELDS, float_fields, keyed_jit, reduced_means
from jaxcapture_nb.upstream.jax_internals import is_tracer

DEFAULT_BINS = 64
# Bin indices are read from a float's mantissa (see index_all_finite).
MAX_BINS = 1 << 16


# The counts a summary holds, in the order of its ``counts`` array (the
# histogram follows them); its floats are ``reduced.float_fields()``.
INT_FIELDS = ("count", "nan_count", "posinf_count", "neginf_count", "zero_count")


def _column(array: str, name: str, doc: str) -> property:
    """A read-only statistic: column ``name`` of ``array``, a scalar for an unstacked summary."""
    i = (PASS_FIELDS if array == "stats" else INT_FIELDS).index(name)

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
      stats: float32 ``[..., 6 + k]``: min, max, mean, std, lo and hi,
        then the ``k`` statistics of the schema computed on the device (see
        :mod:`jaxcapture_nb.stats.reduced`), which :meth:`statistic` reads.
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

    def statistic(self, key: str) -> Any:
        """The statistic ``key`` of ``stats``, a float column, e.g. one the schema reduces on the device.

        NaN for one added to the schema after the program that made this
        summary was compiled.
        """
        if self.stats is None:
            return None
        i = float_fields().index(key)
        if i >= np.shape(self.stats)[-1]:
            return np.full(np.shape(self.stats)[:-1], np.nan, np.asarray(self.stats).dtype)[()]
        return self.stats[..., i][()]

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
        with np.errstate(over="ignore"):
            width = hi - lo
        if np.isfinite(width).all():
            return lo + width * steps
        # A float64 range wider than the largest float64: in halves (exact).
        return (lo / 2 + (hi / 2 - lo / 2) * steps) * 2

    def to_numpy(self) -> Summary:
        """Returns the same summary with both arrays on the host (itself, if they are).

        Each array is read with :func:`~jaxcapture_nb.core.hosts.to_host`: for the
        small arrays of a summary, ``np.asarray`` costs about a quarter of what
        ``jax.device_get`` does, and the replicated summary of a multi-process
        run is read through this process's copy, starting no device work.
        """
        if self.counts is None or (
            isinstance(self.stats, np.ndarray) and isinstance(self.counts, np.ndarray)
        ):
            return self
        return dataclasses.replace(self, stats=to_host(self.stats), counts=to_host(self.counts))


def _is_summarizable(x: Any) -> bool:
    return isinstance(x, (jax.Array, np.ndarray, np.generic)) or (
        isinstance(x, (bool, int, float, complex)) and not isinstance(x, type)
    )


def _no_summary(x: Any, reason: str) -> Summary:
    return Summary(shape=tuple(np.shape(x)), dtype=str(x.dtype), reason=reason)


def _note(dtype: Any) -> str:
    """How values of ``dtype`` are read: complex ones by their magnitude."""
    return "magnitude of complex values" if jnp.issubdtype(dtype, jnp.complexfloating) else ""


def stats_dtype(dtype: Any) -> np.dtype:
    """The float type of a summary's statistics: float64 for 64-bit values, float32 for the rest.

    64-bit values (float64, int64, uint64, complex128) exist only with
    ``jax_enable_x64``; everything narrower is summarized in float32 whether
    or not it is set, so its summaries do not change with it.

    Example:
      >>> stats_dtype(np.float64), stats_dtype(np.uint64), stats_dtype(np.int32), stats_dtype(np.bool_)
      (dtype('float64'), dtype('float64'), dtype('float32'), dtype('float32'))
    """
    return _stats_dtype(np.dtype(dtype))


@functools.cache
def _stats_dtype(dtype: np.dtype) -> np.dtype:
    wide = (dtype.itemsize == 8 and dtype.kind in "fiu") or dtype == np.complex128
    return np.dtype(np.float64 if wide else np.float32)


def as_real(x: jax.Array) -> tuple[jax.Array, str]:
    """The values to summarize, as float32 or float64 (see :func:`stats_dtype`), and the note on them."""
    note = _note(x.dtype)
    return (jnp.abs(x) if note else x).astype(stats_dtype(x.dtype)), note


def _fast_histogram(v, lo, hi, lo_edge, hi_edge, total, squares, *, bins) -> Found:
    """Histogram of an all-finite array of ordinary magnitude whose reductions are already known."""
    slots = bin_counts(index_all_finite(v, lo_edge, bins / (hi_edge - lo_edge), bins), bins + SLOTS)
    slots = with_zeros_in_their_bin(slots, lo_edge, hi_edge, bins)
    zero = jnp.zeros((), v.dtype)
    return Found(lo, hi, lo_edge, hi_edge, jnp.int32(0), lo, hi, total, squares, zero, slots)


def _before_the_careful_pass(v, lo, hi, lo_edge, hi_edge, total, squares, *, bins) -> Found:
    """Placeholders, when the careful pass comes next."""
    zero = jnp.int32(0)
    return Found(
        lo,
        hi,
        lo_edge,
        hi_edge,
        zero,
        lo,
        hi,
        total,
        squares,
        jnp.zeros((), v.dtype),
        jnp.zeros(bins + SLOTS, zero.dtype),
    )


class _Whole:
    """One array, every element of it the value's: the :class:`~jaxcapture_nb.stats.passes.Segments` of :func:`summarize`."""

    inside = None

    def min(self, x: jax.Array, initial: jax.Array) -> jax.Array:
        return jnp.min(x, initial=initial)

    def max(self, x: jax.Array, initial: jax.Array) -> jax.Array:
        return jnp.max(x, initial=initial)

    def sum(self, x: jax.Array) -> jax.Array:
        return jnp.sum(x)

    def spread(self, per_value: jax.Array) -> jax.Array:
        return per_value

    def slots(self, index: jax.Array, bins: int) -> jax.Array:
        return bin_counts(index, bins + SLOTS)

    def any(self, flags: jax.Array) -> jax.Array:
        return flags


WHOLE = _Whole()


def _summarize_array(x: jax.Array, bins: int) -> Summary:
    shape, dtype = tuple(x.shape), str(x.dtype)
    if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
        return _no_summary(x, "PRNG key array: its bits are not numbers")
    # Summaries observe a value and are never differentiated: a sow inside
    # nnx.grad would otherwise carry tangents through every summary op.
    x = jax.lax.stop_gradient(jnp.asarray(x))
    if x.dtype in (np.int64, np.uint64) and x.size:
        stats, counts = _summarize_integers(x, bins)
        note = ""
    else:
        v, note = as_real(x)
        stats, counts = _summarize_floats(v, bins)
    return Summary(stats=stats, counts=counts, shape=shape, dtype=dtype, note=note)


def _summarize_floats(v: jax.Array, bins: int) -> tuple[jax.Array, jax.Array]:
    """The ``stats`` and ``counts`` of a float32 or float64 array, in its own float type."""
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
    lo_edge, hi_edge = edges(lo, hi)
    fast = fast_pass_holds(lo, hi, lo_edge, hi_edge, total, squares)
    found = jax.lax.cond(
        fast,
        functools.partial(_fast_histogram, bins=bins),
        functools.partial(_before_the_careful_pass, bins=bins),
        *(v, lo, hi, lo_edge, hi_edge, total, squares),
    )
    # The careful pass also follows the fast one when an array of subnormal
    # values (and zeros) reads as all-zero on a CPU, which flushes them
    # (https://github.com/jax-ml/jax/issues/16200): only the fast pass's
    # count of exact zeros, taken from the bits, tells. Placed here rather
    # than in the first cond, it appears once in the compiled program.
    flushed = (found.lo == 0) & (found.hi == 0) & (found.slots[bins + ZERO] < v.size)
    found = jax.lax.cond(
        ~fast | flushed, lambda v, _: careful_pass(v, WHOLE, bins), lambda _, found: found, v, found
    )
    return statistics(v, v.size, found, WHOLE, bins)


def _summarize_integers(x: jax.Array, bins: int) -> tuple[jax.Array, jax.Array]:
    """The ``stats`` (float64) and ``counts`` of a non-empty int64 or uint64 array.

    float64 holds integers exactly only up to 2**53, so the values are read
    as offsets from their minimum, ``x - min``, exact as uint64: the mean,
    std and histogram are those of the offsets, and a narrow range of large
    integers keeps its spread (float64 itself would round ``2**62 + 1`` and
    ``2**62 + 100`` to the same number).

    The histogram is exact for the integers as they are. Bin ``k`` holds the
    values with ``k <= (x - min) * bins / (max - min) < k + 1`` (the last bin
    also ``x = max``): equal-width bins between the exact integer minimum
    and maximum, as ``np.histogram(x, bins, range=(min, max))`` would draw
    them with edges in exact arithmetic. Each bin is estimated in float64
    and corrected by comparing both sides as exact 96-bit products, so a
    value on an edge counts in the bin above it, however large. The
    summary's ``min``, ``max``, ``lo`` and ``hi`` are float64, so beyond
    2**53 they, and :attr:`Summary.edges`, are the nearest float64 to the
    exact values; the counts stay those of the exact edges. A constant array
    has padded edges, as a float one has, and its values in bin ``bins // 2``.
    """
    lo, hi = jnp.min(x), jnp.max(x)
    # Two's complement: a difference modulo 2**64 is exact as a uint64.
    as_unsigned = functools.partial(jax.lax.bitcast_convert_type, new_dtype=jnp.uint64)
    offsets = as_unsigned(x) - as_unsigned(lo)
    spread = as_unsigned(hi) - as_unsigned(lo)
    u, width = offsets.astype(jnp.float64), spread.astype(jnp.float64)
    index = jnp.where(spread == 0, bins // 2, _exact_bin(offsets, u, spread, width, bins))
    slots = bin_counts(jnp.where(x == 0, bins + ZERO, index.astype(jnp.int32)), bins + SLOTS)
    zero_offset = as_unsigned(jnp.zeros((), x.dtype)) - as_unsigned(lo)
    zero_bin = jnp.where(
        spread == 0, bins // 2, _exact_bin(zero_offset, zero_offset.astype(jnp.float64), spread, width, bins)
    )
    slots = slots.at[zero_bin.astype(jnp.int32)].add(slots[bins + ZERO])

    low, high = lo.astype(jnp.float64), hi.astype(jnp.float64)
    padded_lo, padded_hi = edges(low, low)
    lo_edge = jnp.where(spread == 0, padded_lo, low)
    hi_edge = jnp.where(spread == 0, padded_hi, high)
    pivot = width / 2
    zero = jnp.zeros((), jnp.float64)
    found = Found(
        lo=zero,
        hi=width,
        lo_edge=lo_edge,
        hi_edge=hi_edge,
        e=jnp.int32(0),
        low=zero,
        high=width,
        total=jnp.sum(u),
        squares=jnp.sum(jnp.square(u - pivot)),
        pivot=pivot,
        slots=slots,
    )
    count, counts = counted(slots, x.size, bins)
    offset_mean, std = moments(u, found, count, WHOLE)
    mean = jnp.clip(low + offset_mean, low, high)
    reduced = reduced_means(x, None, count, WHOLE.sum, jnp.float64)
    return stats_row([low, high, mean, std, lo_edge, hi_edge], reduced, count, jnp.float64), counts


def _exact_bin(offset: jax.Array, u: jax.Array, spread: jax.Array, width: jax.Array, bins: int) -> jax.Array:
    """``floor(offset * bins / spread)``, at most ``bins - 1``, exact for uint64 ``offset <= spread``.

    ``u`` and ``width`` are ``offset`` and ``spread`` rounded to float64. The
    float64 estimate is off by less than ``bins * 2**-50`` of a bin, so at
    most by one bin, which two exact comparisons put right. (uint64 needs
    ``jax_enable_x64``; tests/test_x64.py checks this on values at edges.)
    """
    target = _exact_product(offset, jnp.uint64(bins))
    guess = jnp.clip(jnp.floor(u * (bins / jnp.maximum(width, 1.0))), 0, bins - 1).astype(jnp.uint64)
    k = jnp.where(_at_most(_exact_product(spread, guess), target), guess, guess - 1)
    up = k + 1
    return jnp.where((up < bins) & _at_most(_exact_product(spread, up), target), up, k)


def _exact_product(a: jax.Array, m: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``a * m`` for uint64 ``a`` and ``m < 2**31``, exact, as ``(high, low)``: ``high * 2**32 + low``."""
    low = (a & 0xFFFFFFFF) * m
    return (a >> 32) * m + (low >> 32), low & 0xFFFFFFFF


def _at_most(a: tuple[jax.Array, jax.Array], b: tuple[jax.Array, jax.Array]) -> jax.Array:
    """Whether the product ``a`` of :func:`_exact_product` is at most ``b``."""
    return (a[0] < b[0]) | ((a[0] == b[0]) & (a[1] <= b[1]))


# Values up to this size are summarized together, as rows of one table (see
# :mod:`jaxcapture_nb.stats.batch`): compiling a summary per value costs ~50 ms
# each on a CPU, far more than running it. Copying into the table is one
# pass over values the summary reads twice anyway; for larger values (a
# width-1024 MLP's activations at batch 256) the copy would cost a step more
# than compiling their summaries one by one saves.
_BATCH_MAX_SIZE = 1 << 17


def _batches(values: list[jax.Array]) -> dict[np.dtype, list[int]]:
    """Positions of the values summarized together, by the float type they are summarized in.

    Empty values, PRNG keys, 64-bit integers (summarized exactly, see
    :func:`_summarize_integers`), large values, and values split over
    explicit mesh axes (summarized shard by shard, see ``bin_counts``;
    flattening one would gather it) or over several devices are summarized
    alone.
    """
    batches: dict[np.dtype, list[int]] = {}
    for i, x in enumerate(values):
        if 0 < x.size <= _BATCH_MAX_SIZE and not _summarized_alone(x):
            batches.setdefault(stats_dtype(x.dtype), []).append(i)
    return batches


def _summarized_alone(x: Any) -> bool:
    """Whether ``x`` is summarized on its own whatever its size (see :func:`_batches`)."""
    return (
        jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)
        or x.dtype in (np.int64, np.uint64)
        or _explicit_sharding(x) is not None
        or _split_over_devices(x)
    )


def _split_over_devices(x: Any) -> bool:
    """Whether ``x`` is, or may be, split over several devices.

    A traced value's automatic sharding does not show in its type, so with
    several devices any traced value may be split; laying it out in a table
    would gather it.
    """
    if is_tracer(x):
        return jax.device_count() > 1
    sharding = getattr(x, "sharding", None)
    return sharding is not None and len(sharding.device_set) > 1 and not sharding.is_fully_replicated


def _parts(values: list[jax.Array], bins: int) -> list[tuple[list[int], Summary]]:
    """Summaries of ``values`` in parts: positions, and a stacked summary with a row for each.

    Small values are summarized together by :func:`batch.summarize_batch`,
    whose program does not grow with their number or their shapes; the rest
    each on their own, as a part of one, large ones by one program per shape
    and type (see ``_large_summary``).
    """
    parts = []
    batched = _batches(values)
    for members in batched.values():
        reals = [as_real(jax.lax.stop_gradient(jnp.asarray(values[i])))[0] for i in members]
        stats, counts = summarize_batch(reals, bins)
        parts.append((members, Summary(stats=stats, counts=counts)))
    alone = set(range(len(values))) - {i for members in batched.values() for i in members}
    for i in sorted(alone):
        x = values[i]
        s = _summarize_array(x, bins) if _summarized_alone(x) else _large_summary(x, bins=bins)
        stacked = (
            s if s.reason is not None else dataclasses.replace(s, stats=s.stats[None], counts=s.counts[None])
        )
        parts.append(([i], stacked))
    return parts


# A large value's summary as a program of its own, called from the trace:
# JAX traces and lowers it once per shape and type, however many values of
# that shape a step sows (a mixture of experts sows one per layer). Against
# one summary written out per value, a step of eight such values compiled
# in 0.71 s instead of 1.11 s and ran as fast; a loop over the values
# stacked compiled in 0.43 s but ran 4.5 times slower, copying them.
_large_summary = keyed_jit(_summarize_array, ("bins",))


def step_tables(values: list[jax.Array]) -> list[tuple[list[int], jax.Array]]:
    """The values :func:`_batches` puts together, as tables to summarize after the step.

    Returns, for each float type, the positions of its values and their
    :func:`batch.padded_table`, which :func:`batch.packed_rows` summarizes
    in a program compiled once per table size: a new step then compiles
    the table's layout, not the summaries. The other values are left out.
    """
    return [
        (members, padded_table([as_real(jax.lax.stop_gradient(jnp.asarray(values[i])))[0] for i in members]))
        for members in _batches(values).values()
    ]


def step_summaries(values: list[jax.Array], bins: int) -> list[Summary]:
    """Summaries of many values, as traced values; cheap to compile at any count (see :func:`_parts`)."""
    out: list[Any] = [None] * len(values)
    for members, part in _parts(values, bins):
        for k, i in enumerate(members):
            x = values[i]
            out[i] = (
                part
                if part.reason is not None
                else Summary(
                    stats=part.stats[k],
                    counts=part.counts[k],
                    shape=tuple(x.shape),
                    dtype=str(x.dtype),
                    note=_note(x.dtype),
                )
            )
    return out


def _packed_tables(values: list[jax.Array], bins: int) -> list[jax.Array]:
    """One packed table per entry of :func:`_kinds`, its rows in the order of that entry's positions."""
    parts = _parts(values, bins)
    tables = []
    for kind in _kinds([x.dtype for x in values]):
        mine = [(m, part) for m, part in parts if stats_dtype(values[m[0]].dtype) == kind]
        order = np.argsort(np.concatenate([m for m, _ in mine]))
        table = _pack([part for _, part in mine])
        tables.append(table if np.array_equal(order, np.arange(len(order))) else table[order])
    return tables


def step_rows(values: list[jax.Array], bins: int, gate: Any = None) -> list[jax.Array]:
    """One packed row per value, as :func:`step_summaries` makes them; zeros where ``gate`` is False.

    ``gate`` (a traced bool, or None for always) wraps every summary in one
    ``lax.cond``: a step that is not recorded skips them all.
    """
    kinds = _kinds([x.dtype for x in values])
    if gate is None:
        tables = _packed_tables(values, bins)
    else:
        tables = jax.lax.cond(
            gate,
            lambda v: _packed_tables(v, bins),
            lambda v: [jnp.zeros((len(m), row_width(k, bins)), jnp.int32) for k, m in kinds.items()],
            values,
        )
    out: list[Any] = [None] * len(values)
    for members, table in zip(kinds.values(), tables, strict=True):
        for k, i in enumerate(members):
            out[i] = table[k]
    return out


# Packed layout of a summary: one int32 row, its float statistics bit-cast
# and then its counts. A transfer, a host callback and a compiled program's
# outputs each cost per array, so summaries travel as rows of one table; the
# float64 statistics of 64-bit values take two words each, so their rows are
# wider and travel in a table of their own.


def row_width(stats_type: Any, bins: int) -> int:
    """The int32 words of a packed row whose statistics are of ``stats_type``."""
    return stats_words(np.dtype(stats_type)) + len(INT_FIELDS) + bins


def stats_words(stats_type: np.dtype) -> int:
    """How many 32-bit words a packed row's float statistics take, in ``stats_type``."""
    return len(float_fields()) * stats_type.itemsize // 4


def _kinds(dtypes: list[Any]) -> dict[np.dtype, list[int]]:
    """Positions of the values whose summaries pack into rows of each width, by statistics type."""
    kinds: dict[np.dtype, list[int]] = {}
    for i, dtype in enumerate(dtypes):
        kinds.setdefault(stats_dtype(dtype), []).append(i)
    return kinds


def _pack(summaries: list[Summary]) -> jax.Array:
    """One packed row per summary (a stacked summary gives one row per member), all of one width."""
    rows = []
    for s in summaries:
        words = stats_words(np.dtype(s.stats.dtype))
        stats = jax.lax.bitcast_convert_type(s.stats, jnp.int32).reshape(-1, words)
        rows.append(jnp.concatenate([stats, s.counts.reshape(-1, s.counts.shape[-1])], axis=1))
    return jnp.concatenate(rows)


@jax.jit
def _real_table(values: list[jax.Array]) -> jax.Array:
    """The :func:`batch.padded_table` of concrete values, each first made real (see :func:`as_real`).

    It compiles per set of shapes, but only the layout: the summaries are
    :func:`batch.packed_rows`'s, compiled once per table size.
    """
    return padded_table([as_real(jax.lax.stop_gradient(v))[0] for v in values])


class PendingSummaries:
    """Summaries dispatched to the device and not yet fetched.

    Dispatch returns at once and the device computes while Python goes on,
    so a summary started when a value is sowed is usually ready by the end of
    the block. :func:`fetch_summaries` then collects many in one transfer.
    Small values are laid out as tables, whose summary program is compiled
    once per table size, not per shape; each of the rest by
    :func:`packed_row`, compiled once per shape and type.
    """

    def __init__(self, arrays: list[jax.Array], bins: int):
        self._layout = [(tuple(a.shape), a.dtype) for a in arrays]
        self._batched = list(_batches(arrays).values())
        in_tables = {i for members in self._batched for i in members}
        self._rest = [i for i in range(len(arrays)) if i not in in_tables]
        self._tables: list[Any] = [
            packed_rows(
                _real_table([arrays[i] for i in members]),
                device_layout(tuple(arrays[i].size for i in members)),
                bins=bins,
            )
            for members in self._batched
        ]
        self._tables.extend(packed_row(arrays[i], bins=bins) for i in self._rest)

    def _unpack(self, tables: list[Any]) -> list[Summary]:
        out: list[Any] = [None] * len(self._layout)
        for members, table in zip(self._batched, tables, strict=False):
            for k, i in enumerate(members):
                out[i] = unpack_summary(table[k], *self._layout[i])
        for i, row in zip(self._rest, tables[len(self._batched) :], strict=True):
            out[i] = unpack_summary(row, *self._layout[i])
        return out


def packed_summary(x: jax.Array, bins: int) -> jax.Array:
    """One array's summary as one packed int32 row. Traceable."""
    return _pack([_summarize_array(x, bins)])[0]


# One concrete array's packed row. Large values are summarized this way, one
# call each, rather than together in one program: that program would compile
# once per set of shapes and hold a copy of the summary per value, where this
# compiles once per shape and type, and a program that stacked alike values
# to loop over them spent three times the summaries' own time on the copy.
packed_row = keyed_jit(packed_summary, ("bins",))


def unpack_summary(row: np.ndarray, shape: tuple[int, ...], dtype: Any, bins: int | None = None) -> Summary:
    """The host :class:`Summary` of a packed row, for an array of ``shape`` and ``dtype``.

    Rows stacked by ``scan`` or ``vmap`` (leading axes) give a stacked summary.
    Given its ``bins``, a row made by a program compiled before a statistic
    was added to the schema (a training step) unpacks with the statistics it
    has; :meth:`Summary.statistic` reads the others as NaN.
    """
    row = np.asarray(row, np.int32)
    name, note = _dtype_name_and_note(dtype)
    stats_type = stats_dtype(dtype)
    words = stats_words(stats_type) if bins is None else row.shape[-1] - len(INT_FIELDS) - bins
    return Summary(
        stats=row[..., :words].view(stats_type),
        counts=row[..., words:],
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
    tables = jax.device_get([p._tables for p in pending])
    return [p._unpack(t) for p, t in zip(pending, tables, strict=True)]


def check_bins(bins: Any) -> None:
    """Raises ValueError unless ``bins`` is a number of histogram bins a summary can have."""
    if not isinstance(bins, int) or isinstance(bins, bool) or not 1 <= bins <= MAX_BINS:
        raise ValueError(f"bins must be an integer from 1 to {MAX_BINS}, got {bins!r}")


def summarize(tree: Any, bins: int = DEFAULT_BINS) -> Any:
    """Summarizes every array in a pytree, fetched in one transfer.

    Small arrays are summarized together by a program compiled once per
    table size, whatever their shapes; large ones one by one, by a program
    compiled once per shape and type.

    Works on concrete arrays and inside ``jax.jit``, ``nnx.jit``, ``scan`` and
    ``vmap``. Floating inputs of any width (float16, bfloat16, float8) are
    summarized in float32, integers and booleans as numbers, complex arrays by
    their magnitude (``note`` says so). PRNG key arrays get a ``Summary``
    whose ``reason`` says why it has no statistics. Leaves that are not
    arrays or numbers become None.

    Args:
      tree: an array or any pytree of arrays.
      bins: number of equal-width histogram bins over the finite range.

    With ``jax_enable_x64`` on, 64-bit values (float64, int64, uint64,
    complex128) get float64 statistics; int64 and uint64 histograms are
    exact for every integer (see :func:`_summarize_integers`). Narrower
    values are summarized in float32 either way.

    Returns:
      A pytree like ``tree`` with a :class:`Summary` in place of each array.
      Summaries of concrete arrays hold host NumPy values, fetched together
      in one transfer; inside a traced function they hold traced values.

    Raises:
      TypeError: ``tree`` is itself neither an array, a number nor a pytree
        (a string, say).

    Example:
      >>> import jax.numpy as jnp
      >>> s = summarize(jnp.array([0.0, 1.0, 2.0, jnp.nan]), bins=4)
      >>> int(s.count), float(s.mean), int(s.nan_count), s.hist.tolist()
      (3, 1.0, 1, [1, 0, 1, 1])
    """
    check_bins(bins)
    leaves, treedef = jax.tree.flatten(tree, is_leaf=lambda x: x is None)
    if len(leaves) == 1 and leaves[0] is tree and not _is_summarizable(tree):
        raise TypeError(
            "summarize() takes an array, a Python number, or a pytree of them (a list, tuple, "
            f"dict or other registered pytree node), got {type(tree).__name__}"
        )
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
        results = step_summaries(values, bins)
    else:
        (results,) = fetch_summaries([PendingSummaries(values, bins)])
    out: list[Any] = [None] * len(leaves)
    for (i, _), summary in zip(numeric, results, strict=True):
        out[i] = summary
    for i, a in zip(positions, arrays, strict=True):
        if i in keys:
            out[i] = _summarize_array(a, bins)
    return jax.tree.unflatten(treedef, out)
