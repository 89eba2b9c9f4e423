"""A compiled call's small sowed values, handed over as one table and summarized after the call.

Summarizing inside a step makes every new step compile its summaries
again: about a second on a CPU for a model's worth of sites, more than the
model itself. So a step lays its small values out as one table
(:func:`batch.padded_table`) and hands that over as its output; the
summaries are made after the call (as it returns for a capture, as its
stream settles for a watch), by :func:`batch.packed_rows`, which a process
compiles once for every table of a size. The step's output is one array
rather than one per site, and the host records the whole table with one
transfer.
"""

from __future__ import annotations

import contextlib
import math
import threading
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxcapture_nb.core.hosts import fetch_all
from jaxcapture_nb.stats.batch import CHUNK, Layout, device_layout, needs_careful, packed_rows, table_size
from jaxcapture_nb.stats.program_cache import compile_and_keep, load_kept, load_or_compile, usable
from jaxcapture_nb.stats.reduced import statistics_key
from jaxcapture_nb.stats.summary import Summary, unpack_summary


class TableSite(NamedTuple):
    """One value laid out in a :class:`StepTable`: its site, and the array it was."""

    path: tuple[Any, ...]
    var_type: Any
    name: str
    index: int  # among the values the site sowed in the call
    order: int  # when it was sowed while tracing
    shape: tuple[int, ...]
    dtype: Any


class StepTable:
    """The table of a call's small values (a pytree: the table and its flags are its children).

    Attributes:
      table: ``[*lead, rows, CHUNK]``; ``scan`` and ``vmap`` stack tables
        as they stack any output.
      sites: one :class:`TableSite` per value, in the table's order.
      flags: ``[*lead, rows]``, which rows hold a NaN or an Inf
        (:func:`batch.nonfinite_rows`), for a recorder that may never
        summarize the table; else None.
    """

    __slots__ = ("flags", "sites", "table")

    def __init__(self, table: Any, sites: tuple[TableSite, ...], flags: Any = None):
        self.table, self.sites, self.flags = table, sites, flags

    def packed(self, bins: int, layout: Layout | None = None) -> PackedRows:
        """Dispatches the summaries: packed rows ``[*lead, slots, width]``, row ``k`` the ``k``-th site's.

        ``layout`` is the table's :func:`batch.device_layout`, if the caller
        keeps it. Until this process has the careful summary program, the
        quick one summarizes (see :func:`summary_program`).
        """
        layout = device_layout(sizes_of(self.sites)) if layout is None else layout
        if not usable((self.table, layout)):
            return PackedRows(packed_rows(self.table, layout, bins=bins))
        careful = _program_key(self.table.shape, layout.count, self.table.dtype, bins, True) in _programs
        program = summary_program(self.table.shape, layout, self.table.dtype, bins, careful=careful)
        rows = program(self.table, layout)
        if not careful:
            used_quick_program(_program_key(self.table.shape, layout.count, self.table.dtype, bins, False))
        return PackedRows(rows) if careful else PackedRows(rows, (self, layout, bins))


def sizes_of(sites: tuple[TableSite, ...]) -> tuple[int, ...]:
    """The number of elements of each site's value."""
    return tuple(math.prod(site.shape) for site in sites)


jax.tree_util.register_pytree_node(
    StepTable,
    lambda t: ((t.table, t.flags), t.sites),
    lambda sites, children: StepTable(children[0], sites, flags=children[1]),
)


class PackedRows:
    """A table's summaries as the device makes them, and the table until they are known to be final.

    Attributes:
      rows: the packed rows, ``[*lead, slots, width]``, on the device.
    """

    __slots__ = ("rows", "_quick")

    def __init__(self, rows: jax.Array, quick: tuple[StepTable, Layout, int] | None = None):
        # The table, its layout and bins, while the quick program's rows may
        # mark it for the careful one.
        self.rows, self._quick = rows, quick

    @property
    def shape(self) -> tuple[int, ...]:
        return self.rows.shape

    def final(self, fetched: np.ndarray) -> np.ndarray:
        """The final rows, given :attr:`rows` fetched: those, or the careful program's where the quick one marked the table.

        Lets the table go, and from then on :attr:`rows` are final. The
        careful program compiles here, once per process and table size, if
        no value has needed it before (as with a NaN, an Inf or values of
        extreme magnitude).
        """
        quick, self._quick = self._quick, None
        if quick is None or not needs_careful(fetched):
            return fetched
        table, layout, bins = quick
        program = summary_program(table.table.shape, layout, table.table.dtype, bins, careful=True)
        self.rows = program(table.table, layout)
        return fetch_all([self.rows])[0]


class TableSlot:
    """A site's summary among the packed rows of a :class:`StepTable`, fetched with the rest."""

    __slots__ = ("k", "packed", "shape", "dtype")

    def __init__(self, packed: PackedRows, k: int, shape: tuple[int, ...], dtype: Any):
        self.packed, self.k, self.shape, self.dtype = packed, k, shape, dtype

    def summary(self, packed: np.ndarray) -> Summary:
        """The site's :class:`Summary`, from the final packed rows (:meth:`PackedRows.final`)."""
        return unpack_summary(packed[..., self.k, :], self.shape, self.dtype)


# Compiling the summary program takes over a second on a CPU, once per
# table size, so it is kept on disk for the next process (``_program_cache``)
# and, where none was kept, compiles on a thread of its own (XLA compiles
# without holding Python's lock), started as the step is traced, beside
# the step's own: a capture summarizes a table as its call returns, and a
# watch's first row waits for its summaries. What compiles ahead is the
# quick program, in well under half the time, so that a first capture or row
# waits for little beyond its step; the careful one compiles when a value
# first needs it. Started once the step had run instead, a first row of a
# watch came a tenth later on two cores, where the step compiled alone.
_compiles: dict[tuple[Any, ...], threading.Thread] = {}
_compiles_lock = threading.Lock()
_programs: dict[tuple[Any, ...], Any] = {}
# Quick programs built for speed of compiling (QUICK_COMPILE), whose
# optimized build has not started: their arguments, settings and uses.
_unoptimized: dict[tuple[Any, ...], tuple[Any, ...]] = {}


def compile_ahead(sizes: tuple[int, ...], dtype: Any, bins: int) -> None:
    """Starts loading or compiling the quick summaries of a table of values of ``sizes`` in the background, once per process."""
    key = _program_key((table_size(sizes)[0], CHUNK), table_size(sizes)[1], dtype, bins, False)
    with _compiles_lock:
        if key in _compiles or key in _programs:
            return
        # Not a daemon: a process that ends while XLA compiles on a daemon
        # thread is aborted from inside the compiler; this way it waits.
        thread = _compiles[key] = threading.Thread(
            target=_compile, args=(sizes, dtype, bins), name="jaxcapture-compile"
        )
    thread.start()


def summary_program(shape: tuple[int, ...], layout: Layout, dtype: Any, bins: int, careful: bool) -> Any:
    """The compiled summaries of tables of ``shape`` laid out as ``layout``: this process's, kept on disk, or new.

    ``careful`` chooses the careful program or the quick one (see :func:`batch.packed_rows`).
    """
    key = _program_key(shape, layout.count, dtype, bins, careful)
    thread = _compiles.get(key)
    if thread is not None and thread is not threading.current_thread():
        thread.join()  # rather than compiling it a second time
    program = _programs.get(key)
    if program is None:
        args = (jax.ShapeDtypeStruct(shape, dtype), layout)
        static = {"bins": bins, "careful": careful, "statistics": statistics_key()}
        program = _programs[key] = (
            load_or_compile("packed_rows", packed_rows.jitted, args, None, **static)
            if careful
            else _quick_program(key, args, static)
        )
    return program


def _quick_program(key: tuple[Any, ...], args: tuple[Any, ...], static: dict[str, Any]) -> Any:
    """The quick program: its optimized build if one was kept, else a build for speed (see QUICK_COMPILE)."""
    program = load_kept("packed_rows", args, None, **static)
    if program is not None:
        return program
    lowered = None
    program = load_kept("packed_rows", args, QUICK_COMPILE, **static)
    if program is None:
        lowered = packed_rows.jitted.lower(*args, **static)
        program = compile_and_keep("packed_rows", lowered, args, QUICK_COMPILE, **static)
    with _compiles_lock:
        _unoptimized[key] = (lowered, args, static, 0)
    return program


def used_quick_program(key: tuple[Any, ...]) -> None:
    """Notes a use of a quick program; at its second, if built for speed, compiles its optimized build on a thread.

    Not at its first: a first capture's or watch's result, which the first
    use makes, must not share the processor with a compile.
    """
    with _compiles_lock:  # a watch's publishing thread may summarize too
        unoptimized = _unoptimized.get(key)
        if unoptimized is None:
            return
        lowered, args, static, uses = unoptimized
        if not uses:
            _unoptimized[key] = (lowered, args, static, 1)
            return
        del _unoptimized[key]

    def build() -> None:
        with contextlib.suppress(Exception):  # the quick build goes on serving
            if lowered is None:
                _programs[key] = load_or_compile("packed_rows", packed_rows.jitted, args, None, **static)
            else:  # XLA compiles without Python's lock; lowering again would hold it
                _programs[key] = compile_and_keep("packed_rows", lowered, args, None, **static)

    threading.Thread(target=build, name="jaxcapture-optimize").start()


# A process's first quick program is built for the first result rather
# than for speed: without LLVM's optimizations and with XLA's older CPU
# emitters it compiles in a third of the time (0.16 s instead of 0.48 s for
# a table of 60 values on a CPU) and runs some milliseconds slower (24 ms
# instead of 2), until the optimized build that its second use starts
# replaces it. Neither setting reorders arithmetic, so both builds make the
# careful program's rows, bit for bit. jaxlib 0.12.0.1 no longer knows
# ``xla_cpu_use_fusion_emitters`` (0.10.2 does); ``_program_cache`` then
# compiles without it.
QUICK_COMPILE = {"xla_backend_optimization_level": 0, "xla_cpu_use_fusion_emitters": False}


def _program_key(shape: tuple[int, ...], count: int, dtype: Any, bins: int, careful: bool) -> tuple[Any, ...]:
    return (tuple(shape), count, np.dtype(dtype), bins, statistics_key(), careful)


def _compile(sizes: tuple[int, ...], dtype: Any, bins: int) -> None:
    layout = device_layout(sizes)
    shape = (table_size(sizes)[0], CHUNK)
    # A failure here is the real call's to report.
    with contextlib.suppress(Exception):
        if usable((layout,)):
            summary_program(shape, layout, dtype, bins, careful=False)
        else:  # a call with zeros fills the jit cache that the real calls look in
            packed_rows(jnp.zeros(shape, dtype), layout, bins=bins).block_until_ready()
