"""What arrived for a stream and waits to be settled: packed rows, a step's table, summaries.

Nothing is read on the training loop's thread: an arrived value is queued
with its site and step, its device work already started, and the settling
thread (:mod:`jaxcapture_nb.runs.settling`) fetches what the device has
finished. These are the forms a value waits in, and how each is read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from jaxcapture_nb.core.hosts import readable, replicated, to_host
from jaxcapture_nb.core.protocols import PackedRow
from jaxcapture_nb.stats.batch import device_layout
from jaxcapture_nb.stats.step_table import PackedRows, TableSite, sizes_of
from jaxcapture_nb.stats.summary import Summary, stats_dtype, unpack_summary

if TYPE_CHECKING:
    from jaxcapture_nb.runs.series import SeriesBlock, SiteSeries


@dataclasses.dataclass(frozen=True)
class Row:
    """A packed summary row (on the device until settled), and the shape and dtype of its array."""

    row: Any
    shape: tuple[int, ...]
    dtype: Any
    slot: int | None = None  # the row's index among a table's packed rows, or None for one row


class TableSites:
    """The series of a :class:`StepTable`'s sites, found once for all the tables of a trace.

    ``block`` holds their rows when the series were made for these sites.
    """

    def __init__(
        self,
        sites: tuple[TableSite, ...],
        series: list[SiteSeries],
        block: SeriesBlock | None,
    ):
        self.sites, self.series, self.block = sites, series, block
        self.sizes = np.array(sizes_of(sites), np.float64)
        self.layout = device_layout(sizes_of(sites))
        self.stats_type = stats_dtype(sites[0].dtype)  # the float type of their summaries
        self.last_step = -1  # the latest step a table arrived with
        # Tables whose summaries wait for settle (see Stream._add_table): how
        # many, and the latest, which keeps its values until the next arrives.
        self.waiting = 0
        self.latest_waiting: TableRows | None = None


@dataclasses.dataclass
class TableRows:
    """A recorded step's table: its packed rows, or its values until settle knows whether it needs them.

    A table whose rows go into its block (see ``Stream._in_block``) waits
    with its values and the step's flags of its rows that hold a NaN or an
    Inf: most such steps are replaced by the next before anyone reads them
    (see :mod:`jaxcapture_nb.runs.row_grid`), and need only the flags. Once a
    later table of the block arrives, one of those lets its values go.
    """

    sites: TableSites
    packed: PackedRows | None = None  # on the device until settled
    values: Any = None  # the table itself, while its summaries may still be wanted
    nonfinite: Any = None  # [rows] bools (StepTable.flags), for a table that waits
    # Where the row would go among its block's appends: off the grid of kept
    # steps under the current stride, it is off the grid under any later one.
    append: int = 0

    @property
    def waits(self) -> bool:
        return self.nonfinite is not None

    @property
    def let_go(self) -> bool:
        """Whether the values were let go: a later table replaces this one's row."""
        return self.waits and self.packed is None and self.values is None

    @property
    def unstacked(self) -> bool:
        """Whether the table holds one step's rows (no axes stacked by ``scan`` or ``vmap``)."""
        if self.waits:
            return True
        table = self.packed if self.packed is not None else self.values.table
        return len(table.shape) == 2


def one_array_summary(value: Any) -> bool:
    """A summary of one array (not stacked by scan/vmap): one row of a batch in ``settle``."""
    return isinstance(value, Summary) and value.reason is None and np.ndim(value.counts) == 1


def as_row(value: Any) -> Any:
    """A delivered value as the stream queues it: a packed row as a :class:`Row`."""
    return Row(value.row, value.shape, value.dtype) if isinstance(value, PackedRow) else value


def device_arrays(value: Row | TableRows | Summary) -> tuple[Any, ...]:
    """The arrays of an arrived value that may still be on their way from the device."""
    if isinstance(value, Row):
        return (value.row,)
    if isinstance(value, TableRows):
        return (value.packed.rows,) if value.packed is not None else (value.nonfinite,)
    return (value.stats, value.counts)


def host_summary(value: Row | Summary, bins: int) -> Summary:
    """An arrived packed row or summary, as a :class:`Summary` of NumPy arrays (a fetch, no device work)."""
    if isinstance(value, Row):
        row = to_host(value.row)
        return unpack_summary(
            row if value.slot is None else row[..., value.slot, :], value.shape, value.dtype, bins
        )
    return value.to_numpy()


def readable_summary(value: Any) -> Any:
    """A summary whose arrays every process can read: split ones are replicated, now.

    Example:
      >>> s = Summary(stats=np.zeros(6), counts=np.zeros(9))
      >>> readable_summary(s) is s
      True
    """
    if not isinstance(value, Summary) or (readable(value.stats) and readable(value.counts)):
        return value
    return dataclasses.replace(value, stats=replicated(value.stats), counts=replicated(value.counts))


def computed_prefix(items: list[Any], arrays_of: Callable[[Any], tuple[Any, ...]]) -> int:
    """How many of ``items``, from the first, hold only arrays the device has finished computing.

    Steps finish in the order they were dispatched, so the first item with
    an array of ``arrays_of(item)`` still being computed ends the prefix.
    """
    for i, item in enumerate(items):
        if not all(a.is_ready() for a in arrays_of(item) if isinstance(a, jax.Array)):  # type: ignore[attr-defined]
            return i
    return len(items)
