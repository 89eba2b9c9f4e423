"""Summaries of many arrays of any shapes, in one program whose size does not grow with their number.

A compiled step that summarizes each value on its own compiles one
summary per distinct shape: about 50 ms each on a CPU, which for a model
with a hundred sites is most of its first call. Here the values are laid
out as rows of one table instead, each value in whole rows of
``CHUNK`` elements (its last row padded), so that one set of row reductions,
one index pass and one scatter summarize them all: the program is the same
size for ten values as for a thousand.

Each row's reductions are combined per value with segment reductions over
the rows, which are few (:class:`Rows`); every element's bin is found from
its value's edges, gathered per row. The arithmetic is
:mod:`jaxcapture_nb.stats.summary`'s, element for element, with the same fast pass,
and the careful pass for values with NaN, Inf or extreme magnitudes and the
statistics from what a pass found are the very functions it runs
(:mod:`jaxcapture_nb.stats.passes`), so a value's summary here equals its summary
alone. Each ``lax.cond`` decides for the whole batch: one
value with a NaN sends every value of the batch through the careful pass,
which is exact for all of them.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxcapture_nb.stats.bins import SLOTS, ZERO, Found, edges, fast_pass_holds, index_all_finite
from jaxcapture_nb.stats.histogram import bin_counts
from jaxcapture_nb.stats.passes import careful_pass, statistics, with_zeros_in_their_bin
from jaxcapture_nb.stats.reduced import keyed_jit

# Elements per row. A value's last row is padded, so small values waste up
# to this many elements each; a row reduction of this width vectorizes well.
CHUNK = 256


class Layout:
    """Where each of ``sizes`` lies in the table: its rows, and the valid elements of each row.

    Made with NumPy while tracing (:meth:`of`), or on the host for a table
    of ``rows`` rows with room for ``count`` values (:meth:`padded`): a
    program that takes the layout as an input compiles once for every
    table of that size, whatever values it holds. Padding rows hold no
    valid element and belong to the first unused value slot, whose size is 0.

    Attributes:
      owner: ``[rows]``, the value each row belongs to.
      valid: ``[rows]``, how many of a row's elements are the value's.
      sizes: ``[count]``, each value's elements.
      last: ``[count]``, each value's last row (0 for an unused slot).
      count: how many value slots there are.

    Example:
      >>> layout = Layout.of([3, 300])
      >>> layout.rows, layout.owner.tolist(), layout.valid.tolist()
      (3, [0, 1, 1], [3, 256, 44])
      >>> padded = Layout.padded([3, 300], rows=4, count=4)
      >>> padded.owner.tolist(), padded.valid.tolist(), padded.sizes.tolist()
      ([0, 1, 1, 2], [3, 256, 44, 0], [3, 300, 0, 0])
    """

    def __init__(self, owner, valid, sizes, last, count: int):
        self.owner, self.valid, self.sizes, self.last, self.count = owner, valid, sizes, last, count

    @classmethod
    def of(cls, sizes: Sequence[int]) -> Layout:
        """The layout of ``sizes`` with no padding."""
        return cls.padded(sizes, rows=table_rows(sizes), count=len(sizes))

    @classmethod
    def padded(cls, sizes: Sequence[int], rows: int, count: int) -> Layout:
        """The layout of ``sizes`` in a table of ``rows`` rows with ``count`` value slots."""
        used = np.asarray(sizes, np.int64)
        per_value = -(-used // CHUNK)
        spare = rows - int(per_value.sum())
        if spare < 0 or count < len(used) + (spare > 0):
            raise ValueError(
                f"{len(used)} values of {per_value.sum()} rows do not fit {rows} rows, {count} slots"
            )
        owner = np.repeat(np.arange(len(used) + 1, dtype=np.int32), [*per_value, spare])
        starts = np.repeat(np.cumsum(per_value) - per_value, per_value)
        within = np.arange(len(starts)) - starts
        valid = np.minimum(CHUNK, np.repeat(used, per_value) - within * CHUNK)
        valid = np.concatenate([valid, np.zeros(spare, np.int64)]).astype(np.int32)
        all_sizes = np.zeros(count, np.int32)
        all_sizes[: len(used)] = used
        last = np.zeros(count, np.int32)
        last[: len(used)] = np.cumsum(per_value) - 1
        return cls(owner, valid, all_sizes, last, count)

    @property
    def rows(self) -> int:
        return len(self.owner)


jax.tree_util.register_pytree_node(
    Layout,
    lambda layout: ((layout.owner, layout.valid, layout.sizes, layout.last), layout.count),
    lambda count, arrays: Layout(*arrays, count),
)


def table_rows(sizes: Sequence[int]) -> int:
    """The rows that values of ``sizes`` fill, each starting a row.

    Example:
      >>> table_rows([3, 300])
      3
    """
    return int(sum(-(-int(n) // CHUNK) for n in sizes))


def _table(values: list[jax.Array], rows: int | None = None) -> jax.Array:
    """The values' elements as ``[rows, CHUNK]``, each value starting a row, pads zero.

    ``rows`` pads the table with zero rows to that many (see :meth:`Layout.padded`).
    """
    # lax rather than jnp: a step lays out a model's worth of values, and
    # jnp.pad costs a trace some tenths of a millisecond a value.
    zero = np.zeros((), values[0].dtype)
    parts = []
    for v in values:
        flat = jax.lax.reshape(v, (v.size,))
        pad = -v.size % CHUNK
        parts.append(jax.lax.pad(flat, zero, [(0, pad, 0)]) if pad else flat)
    table = jax.lax.concatenate(parts, 0)
    table = jax.lax.reshape(table, (table.size // CHUNK, CHUNK))
    if rows is not None and rows > table.shape[0]:
        table = jax.lax.pad(table, zero, [(0, rows - table.shape[0], 0), (0, 0, 0)])
    return table


def _per_value(row_values: jax.Array, layout: Layout, how: str) -> jax.Array:
    """Each value's ``how`` ("min", "max" or "sum") of its rows' ``row_values``."""
    n = layout.count
    owner = jnp.asarray(layout.owner)
    if how == "sum":
        return jax.ops.segment_sum(row_values, owner, n, indices_are_sorted=True)
    if how == "min":
        return jax.ops.segment_min(row_values, owner, n, indices_are_sorted=True)
    return jax.ops.segment_max(row_values, owner, n, indices_are_sorted=True)


def _row_extremes(table: jax.Array, layout: Layout) -> tuple[jax.Array, jax.Array]:
    """Each row's min and max, pads left out.

    Only a value's last row has pads, so only those rows are masked: a CPU
    ran a masked min and max over every row, fused, ten times slower than
    the plain ones.
    """
    last = jnp.asarray(layout.last)
    tail = table[last]
    valid = jnp.arange(CHUNK)[None, :] < jnp.asarray(layout.valid)[last][:, None]
    lo = jnp.min(table, axis=1).at[last].set(jnp.min(jnp.where(valid, tail, jnp.inf), axis=1))
    hi = jnp.max(table, axis=1).at[last].set(jnp.max(jnp.where(valid, tail, -jnp.inf), axis=1))
    return lo, hi


def _slots(index: jax.Array, inside: jax.Array, layout: Layout, bins: int) -> jax.Array:
    """``[n, bins + SLOTS]`` counts of each value's bin and slot indices; pads count nowhere."""
    n = layout.count
    width = bins + SLOTS
    cell = jnp.asarray(layout.owner)[:, None] * width + index
    cell = jnp.where(inside, cell, n * width)
    return bin_counts(cell, n * width + 1)[:-1].reshape(n, width)


def _rows_of(per_value: jax.Array, layout: Layout) -> jax.Array:
    """``per_value`` repeated for each row of its value, as a column: it broadcasts over a row."""
    return per_value[jnp.asarray(layout.owner)][:, None]


def _fast_histogram(table, inside, layout, lo, hi, lo_edge, hi_edge, total, squares, *, bins):
    scale = bins / (hi_edge - lo_edge)
    index = index_all_finite(table, _rows_of(lo_edge, layout), _rows_of(scale, layout), bins)
    slots = with_zeros_in_their_bin(_slots(index, inside, layout, bins), lo_edge, hi_edge, bins)
    zero = jnp.zeros_like(lo)
    e = jnp.zeros(lo.shape, jnp.int32)
    return Found(lo, hi, lo_edge, hi_edge, e, lo, hi, total, squares, zero, slots)


def _before_the_careful_pass(table, inside, layout, lo, hi, lo_edge, hi_edge, total, squares, *, bins):
    e = jnp.zeros(lo.shape, jnp.int32)
    slots = jnp.zeros((lo.shape[0], bins + SLOTS), jnp.int32)
    return Found(lo, hi, lo_edge, hi_edge, e, lo, hi, total, squares, jnp.zeros_like(lo), slots)


class Rows:
    """The values of a table, each in rows of its own: the :class:`~jaxcapture_nb.stats.passes.Segments` of a table.

    A row's reductions are combined per value with segment reductions over
    the rows, which are few; a value's numbers spread to each of its rows.
    """

    def __init__(self, layout: Layout, inside: jax.Array):
        self.layout, self.inside = layout, inside

    def min(self, x: jax.Array, initial: jax.Array) -> jax.Array:
        del initial  # a value without elements gets segment_min's, also the largest
        return _per_value(jnp.min(x, axis=1), self.layout, "min")

    def max(self, x: jax.Array, initial: jax.Array) -> jax.Array:
        del initial
        return _per_value(jnp.max(x, axis=1), self.layout, "max")

    def sum(self, x: jax.Array) -> jax.Array:
        return _per_value(jnp.sum(x, axis=1), self.layout, "sum")

    def spread(self, per_value: jax.Array) -> jax.Array:
        return _rows_of(per_value, self.layout)

    def slots(self, index: jax.Array, bins: int) -> jax.Array:
        return _slots(index, self.inside, self.layout, bins)

    def any(self, flags: jax.Array) -> jax.Array:
        return jnp.any(flags)


def summarize_batch(values: list[jax.Array], bins: int) -> tuple[jax.Array, jax.Array]:
    """The ``stats`` ``[n, 6 + k]`` and ``counts`` ``[n, 5 + bins]`` of non-empty float arrays of one float type (see :class:`~jaxcapture_nb.Summary`).

    Args:
      values: float32 or float64 arrays (all of one type) of any shapes,
        each with at least one element.
      bins: histogram bins.

    Example:
      >>> stats, counts = summarize_batch([jnp.array([0.0, 1.0, 3.0]), jnp.arange(4.0)], bins=3)
      >>> stats[:, :2].tolist(), counts[:, 5:].tolist()
      ([[0.0, 3.0], [0.0, 3.0]], [[1, 1, 1], [1, 1, 2]])
    """
    layout = Layout.of([v.size for v in values])
    return summarize_table(_table(values), layout, bins)


def summarize_table(table: jax.Array, layout: Layout, bins: int) -> tuple[jax.Array, jax.Array]:
    """The ``stats`` ``[count, 6 + k]`` and ``counts`` ``[count, 5 + bins]`` of the values laid out in ``table``.

    Slots of ``layout`` with no value get NaN statistics and zero counts.
    """
    stats, counts, _ = _summarized(table, layout, bins, careful=True)
    return stats, counts


def _summarized(table: jax.Array, layout: Layout, bins: int, careful: bool) -> tuple[jax.Array, ...]:
    """:func:`summarize_table`'s ``stats`` and ``counts``, and which values need the careful pass.

    With ``careful`` False the careful pass is left out of the program, and
    so are the conds and the rescaling that only its values need: the
    program then compiles in well under half the time (0.6 s of CPU instead
    of 1.6 s for a table of 88 values). The rows of the values it marks are
    not yet right; every other row is what the careful program makes, bit
    for bit.
    """
    inside = jnp.arange(CHUNK, dtype=jnp.int32)[None, :] < jnp.asarray(layout.valid)[:, None]
    # The fast pass's reductions, as summary._summarize_floats takes them;
    # pads are zeros, which leave sums alone and are kept out of min and max.
    lo, hi = _row_extremes(table, layout)
    lo, hi = _per_value(lo, layout, "min"), _per_value(hi, layout, "max")
    total = _per_value(jnp.sum(table, axis=1), layout, "sum")
    squares = _per_value(jnp.sum(jnp.square(table), axis=1), layout, "sum")
    lo_edge, hi_edge = edges(lo, hi)
    fast = fast_pass_holds(lo, hi, lo_edge, hi_edge, total, squares)
    args = (table, inside, lo, hi, lo_edge, hi_edge, total, squares)

    def fast_pass(table, inside, *rest):
        return _fast_histogram(table, inside, layout, *rest, bins=bins)

    def placeholders(table, inside, *rest):
        return _before_the_careful_pass(table, inside, layout, *rest, bins=bins)

    found = jax.lax.cond(jnp.any(fast), fast_pass, placeholders, *args) if careful else fast_pass(*args)
    sizes = jnp.asarray(layout.sizes)
    flushed = (found.lo == 0) & (found.hi == 0) & (found.slots[:, bins + ZERO] < sizes)
    needs_careful = (~fast | flushed) & (sizes > 0)

    def careful_again(table, inside, tree):
        again = careful_pass(table, Rows(layout, inside), bins)
        # Only the values that need it take the careful pass's results: for
        # the rest the fast pass's are as exact, and its variance better
        # conditioned.
        return Found(
            *(
                jnp.where(needs_careful.reshape((-1,) + (1,) * (a.ndim - 1)), a, b)
                for a, b in zip(again, tree, strict=True)
            )
        )

    if careful:
        found = jax.lax.cond(
            jnp.any(needs_careful),
            careful_again,
            lambda table, inside, found: found,
            table,
            inside,
            found,
        )
    stats, counts = statistics(table, layout.sizes, found, Rows(layout, inside), bins, quick=not careful)
    return stats, counts, needs_careful


# A step hands its small values over as one table (see :func:`padded_table`)
# and :func:`packed_rows` summarizes it in a program of its own. That program
# depends only on the table's size, rounded up to one of a few sizes, so a
# process compiles it once for many models and shapes, and a new step
# compiles only the table's layout, not the summaries.


def table_size(sizes: Sequence[int]) -> tuple[int, int]:
    """The rows and value slots of the table that holds values of ``sizes``.

    Rows round up to a quarter of their power of two (at least 64), so the
    padding costs at most a quarter more work; slots to a power of two (at
    least 64) above the number of values: the first spare slot owns the
    padding rows, and the last is never a value's (:func:`packed_rows`
    marks a table there). Slots cost little: a few numbers each.

    Example:
      >>> table_size([300] * 40)
      (80, 64)
    """
    rows = max(table_rows(sizes), 64)
    step = 1 << max(rows.bit_length() - 3, 0)
    return -(-rows // step) * step, 1 << max(len(sizes).bit_length(), 6)


def padded_table(values: list[jax.Array]) -> jax.Array:
    """The table of ``values`` (float arrays of one type, each with an element), padded to :func:`table_size`."""
    return _table(values, table_size([v.size for v in values])[0])


@functools.lru_cache(maxsize=256)
def device_layout(sizes: tuple[int, ...]) -> Layout:
    """The layout of a :func:`padded_table` of values of ``sizes``, on the default device, kept.

    Steps hand over tables of the same values again and again: their
    layout is copied to the device once.
    """
    return jax.device_put(Layout.padded(sizes, *table_size(sizes)))


def pack(stats: jax.Array, counts: jax.Array) -> jax.Array:
    """``stats`` bit-cast to int32 words and ``counts`` after them, one packed row per value."""
    words = jax.lax.bitcast_convert_type(stats, jnp.int32).reshape(*stats.shape[:-1], -1)
    return jnp.concatenate([words, counts], axis=-1)


def nonfinite_rows(table: jax.Array) -> jax.Array:
    """Whether each row of a :func:`padded_table` holds a NaN or an Inf, as ``[*lead, rows]`` bools.

    Made inside the step, beside the table: a step whose summaries are
    never made (its row is replaced by the next before anyone reads it)
    still says which sites held one, and saying so costs the step a
    reduction instead of another program to dispatch.

    Example:
      >>> values = [jnp.arange(3.0), jnp.array([1.0, jnp.inf])]
      >>> nonfinite_rows(padded_table(values))[:3].tolist()
      [False, True, False]
    """
    return jnp.any(~jnp.isfinite(table), axis=-1)


def nonfinite_values(rows: np.ndarray, sizes: Sequence[int] | np.ndarray) -> np.ndarray:
    """Whether each value of ``sizes`` holds a NaN or an Inf, from the :func:`nonfinite_rows` of its table.

    Example:
      >>> nonfinite_values(np.array([False, True, False, False]), [3, 2])
      array([False,  True])
    """
    per_value = -(-np.asarray(sizes, np.int64) // CHUNK)
    starts = np.cumsum(per_value) - per_value
    return np.logical_or.reduceat(rows[: int(per_value.sum())], starts)


def _packed_rows(table: jax.Array, layout: Layout, bins: int, careful: bool = True) -> jax.Array:
    """One packed row (see :func:`pack`) per slot of ``layout``, as ``[*lead, count, width]``.

    ``table`` is ``[*lead, rows, CHUNK]``: tables stacked by ``scan`` or
    ``vmap`` are summarized as one, each of its tables a copy of ``layout``.

    With ``careful`` False this is the quick program, which a process can
    compile while a step compiles: it leaves out the careful pass, for
    values with a NaN or an Inf, or of extreme magnitudes, and marks in
    each table's last slot, which no value uses (see :func:`table_size`),
    whether one of its values needs it (:func:`needs_careful`). Unmarked
    rows are those of the careful program.

    Example:
      >>> values = [jnp.arange(3.0), jnp.ones((2, 2))]
      >>> layout = device_layout(tuple(v.size for v in values))
      >>> rows = packed_rows(padded_table(values), layout, bins=4)
      >>> rows.shape, rows[:2, 6:8].tolist()
      ((64, 15), [[3, 0], [4, 0]])
      >>> quick = packed_rows(padded_table(values), layout, bins=4, careful=False)
      >>> bool(needs_careful(np.asarray(quick))), bool((quick[:2] == rows[:2]).all())
      (False, True)
    """
    lead, rows = table.shape[:-2], table.shape[-2]
    copies = math.prod(lead)
    count = layout.count
    if copies != 1:
        table = table.reshape(-1, CHUNK)
        shift = jnp.arange(copies, dtype=jnp.int32)[:, None]
        layout = Layout(
            (layout.owner[None] + shift * layout.count).ravel(),
            jnp.tile(layout.valid, copies),
            jnp.tile(layout.sizes, copies),
            (layout.last[None] + shift * rows).ravel(),
            layout.count * copies,
        )
    else:
        table = table.reshape(rows, CHUNK)
    stats, counts, marked = _summarized(table, layout, bins, careful)
    packed = pack(stats, counts).reshape(copies, count, -1)
    if not careful:
        packed = packed.at[:, -1, 0].set(jnp.any(marked.reshape(copies, count), axis=1).astype(jnp.int32))
    return packed.reshape(*lead, count, packed.shape[-1])


packed_rows = keyed_jit(_packed_rows, ("bins", "careful"))


def needs_careful(quick: np.ndarray) -> bool:
    """Whether a value of the tables that the quick :func:`packed_rows` summarized as ``quick`` needs the careful pass.

    Example:
      >>> values = [jnp.array([1.0, jnp.nan])]
      >>> layout = device_layout((2,))
      >>> bool(needs_careful(np.asarray(packed_rows(padded_table(values), layout, bins=4, careful=False))))
      True
    """
    return bool(quick[..., -1, 0].any())
