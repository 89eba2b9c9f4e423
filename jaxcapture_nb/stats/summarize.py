"""summarize(): statistics and an exact histogram of every array in a pytree, fetched in one transfer.

Small arrays are summarized together, as the rows of one table, by a program
compiled once per table size (:mod:`jaxcapture_nb.stats.batch`); large ones
one by one, by the program of :mod:`jaxcapture_nb.stats.summary`, compiled
once per shape and type. Inside a trace the same functions give the
summaries of a compiled step's values (:func:`step_summaries`,
:func:`step_rows`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcapture_nb.stats.batch import device_layout, packed_rows, padded_table, summarize_batch
from jaxcapture_nb.stats.histogram import _explicit_sharding
from jaxcapture_nb.stats.program_cache import load_or_compile, usable
from jaxcapture_nb.stats.reduced import keyed_jit, statistics_key
from jaxcapture_nb.stats.summary import (
    DEFAULT_BINS,
    Summary,
    as_real,
    check_bins,
    dtype_note,
    is_summarizable,
    large_summary,
    row_width,
    stats_dtype,
    stats_words,
    summarize_array,
    unpack_summary,
)
from jaxcapture_nb.upstream.jax_internals import is_tracer

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
    :func:`summarize_integers`), large values, and values split over
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
    and type (see ``large_summary``).
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
        s = summarize_array(x, bins) if _summarized_alone(x) else large_summary(x, bins=bins)
        stacked = (
            s if s.reason is not None else dataclasses.replace(s, stats=s.stats[None], counts=s.counts[None])
        )
        parts.append(([i], stacked))
    return parts


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
                    note=dtype_note(x.dtype),
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
    :func:`large_row`, compiled once per shape and type.
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
        self._tables.extend(large_row(arrays[i], bins) for i in self._rest)

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
    return _pack([summarize_array(x, bins)])[0]


# One concrete array's packed row. Large values are summarized this way, one
# call each, rather than together in one program: that program would compile
# once per set of shapes and hold a copy of the summary per value, where this
# compiles once per shape and type, and a program that stacked alike values
# to loop over them spent three times the summaries' own time on the copy.
packed_row = keyed_jit(packed_summary, ("bins",))

# Programs of large_row, by shape, type, bins and statistics.
_row_programs: dict[tuple[Any, ...], Any] = {}


def large_row(x: jax.Array, bins: int) -> jax.Array:
    """:data:`packed_row` of a concrete array, by its shape's program kept on disk (see ``program_cache``) where it can be.

    A capture hands a compiled step's large values to the host (see
    ``backends/nnx/parcel``), so a first capture waits for these programs:
    a new process loads them rather than compiling them again. Arrays that
    a kept program cannot take (on another device, or split over several)
    go through ``jax.jit``.
    """
    if not usable((x,)):
        return packed_row(x, bins=bins)
    statistics = statistics_key()
    key = (tuple(x.shape), np.dtype(x.dtype), bins, statistics)
    program = _row_programs.get(key)
    if program is None:
        args = (jax.ShapeDtypeStruct(x.shape, x.dtype),)
        program = _row_programs[key] = load_or_compile(
            "packed_row", packed_row.jitted, args, None, bins=bins, statistics=statistics
        )
    return program(x)


def fetch_summaries(pending: list[PendingSummaries]) -> list[list[Summary]]:
    """The host summaries of each :class:`PendingSummaries`, in one transfer."""
    tables = jax.device_get([p._tables for p in pending])
    return [p._unpack(t) for p, t in zip(pending, tables, strict=True)]


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
    exact for every integer (see :func:`summarize_integers`). Narrower
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
    if len(leaves) == 1 and leaves[0] is tree and not is_summarizable(tree):
        raise TypeError(
            "summarize() takes an array, a Python number, or a pytree of them (a list, tuple, "
            f"dict or other registered pytree node), got {type(tree).__name__}"
        )
    positions = [i for i, x in enumerate(leaves) if is_summarizable(x)]
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
            out[i] = summarize_array(a, bins)
    return jax.tree.unflatten(treedef, out)
