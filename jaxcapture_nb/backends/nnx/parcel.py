"""Parcel: what leaves a trace through an exit, and how a trace's values are packed into one.

A parcel is a pytree: its children are the arrays that leave the trace
(tables of small values, summaries, packed rows, or values a capture keeps),
its static data says which site each belongs to. ``scan`` and ``vmap``
stack a parcel's arrays as they stack any output, so a parcel from a
scanned block holds a value (or a summary) per layer.

What a trace's values become depends on what the recorder keeps (see
``protocols.SiteRecorder``): the values themselves; or small values laid
out as tables that the host summarizes after the call (see
``_step_table``) and the rest summarized in the trace, together, one
program per distinct size.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax

from jaxcapture_nb.core.protocols import SiteRecorder
from jaxcapture_nb.stats.batch import nonfinite_rows
from jaxcapture_nb.stats.step_table import StepTable, TableSite, compile_ahead, sizes_of
from jaxcapture_nb.stats.summarize import step_rows, step_summaries, step_tables

# What one held value is: an array kept as it is, a Summary, a packed row,
# or a leaf that is not an array (kept in the static data).
ARRAY, SUMMARY, ROW, STATIC = "array", "summary", "row", "static"


class Entry(NamedTuple):
    """A value of a trace, before it is packed: its site and when it was sowed."""

    path: tuple[Any, ...]
    var_type: Any
    name: str
    index: int
    order: int
    value: Any


class Label(NamedTuple):
    """The static data of one value in a parcel."""

    path: tuple[Any, ...]
    var_type: Any
    name: str
    index: int
    order: int
    form: str  # ARRAY, SUMMARY, ROW or STATIC
    layout: Any  # ROW: (shape, dtype) of the summarized array; STATIC: the value (see Static)


class Static:
    """A leaf that is not an array (a number, a string, an object), as hashable static data."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Static):
            return False
        try:
            return self.value is other.value or bool(self.value == other.value)
        except Exception:  # an object whose == is elementwise or raises
            return False

    def __hash__(self) -> int:
        try:
            return hash(self.value)
        except TypeError:
            return id(self.value)


class Parcel:
    """The values a trace hands out through an exit (a pytree: values and tables are its children).

    Attributes:
      labels: one :class:`Label` per entry of ``values``.
      values: arrays, summaries or packed rows (None for a STATIC label).
      tables: the :class:`StepTable` of the trace's small values.
    """

    __slots__ = ("labels", "tables", "values")

    def __init__(
        self, labels: tuple[Label, ...] = (), values: tuple[Any, ...] = (), tables: tuple[StepTable, ...] = ()
    ):
        self.labels, self.values, self.tables = labels, values, tables

    def __bool__(self) -> bool:
        return bool(self.labels or self.tables)

    def __add__(self, other: Parcel) -> Parcel:
        return Parcel(self.labels + other.labels, self.values + other.values, self.tables + other.tables)

    def renumbered(self, counts: dict[tuple[Any, ...], int]) -> Parcel:
        """The parcel with each site's values numbered after the ``counts`` already seen where it arrives; updates ``counts``.

        A block applied twice, each time inside its own ``remat``, sows
        index 0 in each: where both arrive, the second is index 1.
        """
        seen: dict[tuple[Any, ...], int] = {}

        def shifted(path: tuple[Any, ...], var_type: Any, name: str, index: int) -> int:
            key = (path, var_type, name)
            seen[key] = max(seen.get(key, 0), index + 1)
            return index + counts.get(key, 0)

        labels = tuple(
            label._replace(index=shifted(label.path, label.var_type, label.name, label.index))
            for label in self.labels
        )
        tables = tuple(
            StepTable(
                t.table,
                tuple(s._replace(index=shifted(s.path, s.var_type, s.name, s.index)) for s in t.sites),
                t.flags,
            )
            for t in self.tables
        )
        for key, n in seen.items():
            counts[key] = counts.get(key, 0) + n
        return Parcel(labels, self.values, tables)


jax.tree_util.register_pytree_node(
    Parcel,
    lambda p: ((p.values, p.tables), p.labels),
    lambda labels, children: Parcel(labels, *children),
)


# A capture's compiled step hands its large values to the host, which
# summarizes them as it summarizes values sowed in eager code, by a program
# per shape, rather than summarizing each in the step: each summary in the
# step made the step's compile longer (4 s more for the 33 large values of a
# decoder of Llama 3.2 1B's shapes, six times the compile without them),
# where a program per shape compiles once. Up to this many bytes in all;
# beyond, the rest are summarized in the step, where their memory is freed as
# the step goes.
HANDED_OUT_BYTES = 256 << 20


def pack(
    entries: list[Entry], recorder: SiteRecorder, gate: Any, tables: bool = True, arrays_out: bool = False
) -> Parcel:
    """Packs the values a trace collected into a parcel, as ``recorder`` wants them.

    Args:
      entries: the trace's values, in the order they were sowed.
      recorder: says whether values are kept or summarized (see ``SiteRecorder``).
      gate: a traced bool that skips the summaries of a step that is not
        recorded (``watch(every=N)``), or None.
      tables: lay small values out as tables, for the host to summarize;
        False summarizes every value here (a parcel sent by callback, whose
        tables the host would otherwise summarize one program per size).
      arrays_out: a recorder that holds values (a capture) gets large values
        as they are, up to :data:`HANDED_OUT_BYTES`, to summarize on the host: the
        parcel leaves a step through its exit, outside any loop, on one device.
    """
    statics = [e for e in entries if not isinstance(e.value, jax.Array)]
    arrays = [e for e in entries if isinstance(e.value, jax.Array)]
    labels = [Label(e.path, e.var_type, e.name, e.index, e.order, STATIC, Static(e.value)) for e in statics]
    values: list[Any] = [None] * len(statics)
    if not recorder.summarizes_in_trace:
        labels += [Label(e.path, e.var_type, e.name, e.index, e.order, ARRAY, None) for e in arrays]
        values += [e.value for e in arrays]
        return Parcel(tuple(labels), tuple(values))
    made: list[StepTable] = []
    in_tables: set[int] = set()
    for members, table in step_tables([e.value for e in arrays]) if tables else ():
        sites = tuple(
            TableSite(e.path, e.var_type, e.name, e.index, e.order, tuple(e.value.shape), e.value.dtype)
            for e in (arrays[i] for i in members)
        )
        # Compiled beside the step: a capture summarizes the table as its
        # call returns, and a watch shows its first row once it is summarized.
        compile_ahead(sizes_of(sites), table.dtype, recorder.bins)
        if recorder.holds_values:
            made.append(StepTable(table, sites))
        else:
            # A stream may never summarize a step's table (see Stream), and
            # still flags the sites that held a NaN or an Inf.
            made.append(StepTable(table, sites, nonfinite_rows(table)))
        in_tables.update(members)
    rest = [e for i, e in enumerate(arrays) if i not in in_tables]
    if rest and arrays_out and recorder.holds_values:
        out = _handed_out(rest)
        labels += [Label(e.path, e.var_type, e.name, e.index, e.order, ARRAY, None) for e in out]
        values += [e.value for e in out]
        rest = rest[len(out) :]
    if rest:
        if recorder.holds_values:
            summaries = step_summaries([e.value for e in rest], recorder.bins)
            labels += [Label(e.path, e.var_type, e.name, e.index, e.order, SUMMARY, None) for e in rest]
            values += summaries
        else:
            rows = step_rows([e.value for e in rest], recorder.bins, gate)
            labels += [
                Label(
                    e.path, e.var_type, e.name, e.index, e.order, ROW, (tuple(e.value.shape), e.value.dtype)
                )
                for e in rest
            ]
            values += rows
    return Parcel(tuple(labels), tuple(values), tuple(made))


def _handed_out(entries: list[Entry]) -> list[Entry]:
    """The longest run of ``entries``, from the first, that fits in :data:`HANDED_OUT_BYTES`."""
    out, total = [], 0
    for e in entries:
        total += e.value.size * e.value.dtype.itemsize
        if total > HANDED_OUT_BYTES:
            break
        out.append(e)
    return out
