"""Recorder: where backends deliver sowed values, and how many are kept.

A backend hands :meth:`Recorder.deliver` what a model sowed, one
:class:`~jaxcapture_nb.core.protocols.Delivery` per step, and nothing else; the
recorder applies ``include`` and ``keep`` and turns values into
:class:`~jaxcapture_nb.stats.records.Record` objects, so the keep policy lives in
exactly one place whatever Flax API the value came from.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable
from typing import Any

import jax
import numpy as np

from jaxcapture_nb.core.clock import StepClock
from jaxcapture_nb.core.names import shown_name
from jaxcapture_nb.core.protocols import BackendDrains, Delivery, PackedRow
from jaxcapture_nb.core.user_warnings import warn
from jaxcapture_nb.stats.records import NOTHING_SOWED, Gradient, Record, is_array, shape_and_dtype
from jaxcapture_nb.stats.step_table import TableSlot
from jaxcapture_nb.stats.summarize import PendingSummaries, fetch_summaries, summarize
from jaxcapture_nb.stats.summary import Summary, check_bins, is_concrete_numeric, unpack_summary

KEEP_MODES = ("all", "last", "summary")

Include = str | re.Pattern | Callable[[str], bool] | None


def site_label(path: tuple[Any, ...], name: str) -> str:
    """The dotted path of a site, as ``include`` sees it and views show it."""
    return ".".join(str(p) for p in (*path, name))


def include_key(include: Include) -> Any:
    """A hashable stand-in for ``include``, for the static data of a trace."""
    try:
        hash(include)
    except TypeError:
        return id(include)
    return include


def include_text(include: Include) -> str:
    """How messages show an ``include`` argument: the pattern, or the callable's name.

    Example:
      >>> include_text("attn|mlp"), include_text(re.compile("h$")), include_text(lambda site: True)
      ("'attn|mlp'", "'h$'", '<lambda>')
    """
    if isinstance(include, re.Pattern):
        return repr(include.pattern)
    if isinstance(include, str):
        return repr(include)
    return getattr(include, "__qualname__", type(include).__name__)


# An empty table names at most this many of the sites ``include`` turned away.
NAMED_SITES = 5

# keep="all" warns once when the values it keeps pass this many bytes.
KEPT_BYTES_WARNING = 256 * 2**20

# The names of the Variable types a value passed through ``Module.perturb``
# and its gradient are recorded as; a stream keys its sites by these names.
PERTURBED_TYPES = ("Perturbation", Gradient.__name__)


def warn_if_nothing_perturbed(var_types: Iterable[Any], include: Include) -> None:
    """Warns when ``grads=True`` recorded neither a perturbed value nor a gradient.

    Gradients are recorded only for values a module passes through
    ``Module.perturb``: a model that never calls it gets ``grads=True``'s
    cost and no gradient, which is otherwise easy to miss.

    Args:
      var_types: the Variable types (or their names) of what was recorded.
      include: the capture's ``include``, which may have turned the values away.
    """
    names = {t if isinstance(t, str) else getattr(t, "__name__", "") for t in var_types}
    if names & set(PERTURBED_TYPES):
        return
    turned_away = "" if include is None else f", or include={include_text(include)} kept none of them"
    warn(
        f"grads=True recorded no gradients: no value passed through Module.perturb{turned_away}. "
        "Gradients are recorded for the values a module passes through Module.perturb, e.g. "
        '`x = self.perturb("hidden", x)` in its __call__.'
    )


def site_filter(include: Include) -> Callable[[str], bool]:
    """The test of a dotted site name that ``include`` (None, a regular expression, or a function) makes."""
    if include is None:
        return lambda site: True
    if isinstance(include, (str, re.Pattern)):
        try:
            pattern = re.compile(include)
        except re.error as e:
            raise ValueError(f"include={include!r} is not a valid regular expression: {e}") from None
        return lambda site: pattern.search(site) is not None
    if callable(include):
        return include
    raise TypeError(
        f"include must be a regular expression or a callable taking the dotted site path, got {include!r}"
    )


# Values summarized by one program when a block's records are first read.
# A block that sows the same shapes in every call gets the same batches, and
# their programs, again; a block of many calls is not one huge program.
SUMMARY_BATCH = 128


class Recorder(BackendDrains):
    """Collects the records of one capture.

    Args:
      keep: ``"all"`` keeps every value, ``"last"`` the latest value per
        site, ``"summary"`` the latest summary per site and no value.
      bins: histogram bins of the summaries.
      include: keeps only the sites whose dotted path matches this regular
        expression (``re.search``) or for which this callable returns True.
      grads: also record the gradient reaching every value passed to
        ``Module.perturb`` (as :class:`~jaxcapture_nb.Gradient` records).
    """

    # Every step is recorded; a Stream may record one step in several.
    every = 1

    def __init__(self, keep: str = "all", bins: int = 64, include: Include = None, grads: bool = False):
        if keep not in KEEP_MODES:
            raise ValueError(f"keep={keep!r} is not one of {', '.join(map(repr, KEEP_MODES))}")
        check_bins(bins)
        self.keep = keep
        self.bins = bins
        self.grads = grads
        # What the backends may rely on (see SiteRecorder): the keep policy
        # is decided here and nowhere else.
        self.summarizes_in_trace = keep == "summary"
        self.holds_values = True
        self.keeps_every_value = keep == "all"
        self._accepts_site = site_filter(include)
        # Everything that changes what a traced sow stores; hashable.
        self.policy = (keep, bins, include_key(include), grads)
        self.include = include
        # The dotted paths of the sites ``include`` turned away, in the order
        # they were first sowed (a dict as an ordered set).
        self.dropped_sites: dict[str, None] = {}
        # The Variable types of the values recorded so far.
        self.var_types_seen: set[Any] = set()
        self._records: dict[Any, Record] = {}
        self._calls: dict[Any, int] = {}
        super().__init__()
        # Numbers the steps values arrive at; a capture numbers each site's values instead.
        self.clock = StepClock()
        # Records whose summary is still to fetch: under keep="summary" a
        # summary already dispatched (the value is not kept), otherwise the
        # value itself, summarized with the rest when first needed.
        self._pending: dict[Any, tuple[Record, Any]] = {}
        self._lock = threading.RLock()
        # The bytes of the values keep="all" holds, counted from their sizes
        # as they arrive (no device work); whether a site has sowed twice, so
        # that they grow with a loop; and whether a warning said so.
        self.kept_bytes = 0
        self._sowed_again = False
        self._warned_kept = False
        # The thread that made the recorder: the user's (see warn_if_keeping_much).
        self._thread = threading.get_ident()

    def accepts(self, path: tuple[Any, ...], name: str) -> bool:
        """Whether values sowed at ``path``/``name`` are to be recorded.

        Sites ``include`` turns away are remembered in :attr:`dropped_sites`,
        so an empty capture can say what it left out.
        """
        site = site_label(path, name)
        if self._accepts_site(site):
            return True
        self.dropped_sites.setdefault(site, None)
        return False

    def records_step(self, step: Any) -> Any:
        """Every step is recorded."""
        return True

    def deliver(self, delivery: Delivery) -> None:
        """Records a step's values, in the order they were sowed (thread-safe).

        Records are numbered by each site's values (``call_index``), not by
        step. The summaries of a table of small values are started on the
        device now and fetched with the rest when the records are read.
        """
        values: list[tuple[int, Any, Any]] = [(item.order, item, item.value) for item in delivery.items]
        for table in delivery.tables:
            packed = table.packed(self.bins)
            values += [
                (site.order, site, TableSlot(packed, k, site.shape, site.dtype))
                for k, site in enumerate(table.sites)
            ]
        values.sort(key=lambda v: v[0])
        with self._lock:
            for _, site, value in values:
                if isinstance(value, PackedRow):
                    value = unpack_summary(np.asarray(value.row), value.shape, value.dtype, self.bins)
                if self.accepts(site.path, site.name):
                    self._add(site.path, site.var_type, site.name, value)
        self.warn_if_keeping_much()

    def add(self, path: tuple[Any, ...], var_type: Any, name: str, value: Any) -> None:
        """Records one value (or a :class:`Summary`) of a site, outside any step (the Linen backend's)."""
        if self.accepts(path, name):
            with self._lock:
                self._add(path, var_type, name, value)
            self.warn_if_keeping_much()

    def warn_if_keeping_much(self) -> None:
        """Warns, once, when ``keep="all"`` holds more than :data:`KEPT_BYTES_WARNING` bytes of values.

        A loop under the default ``keep="all"`` keeps every value it sows
        until the capture ends, so it warns once a site has sowed twice; one
        large call keeps what it sows by design, and does not. Only the
        thread that made the recorder warns: a host callback delivers values
        on a runtime thread, where a warning would reach no one, and the end
        of the block asks again.
        """
        if (
            self._warned_kept
            or not self._sowed_again
            or self.kept_bytes <= KEPT_BYTES_WARNING
            or threading.get_ident() != self._thread
        ):
            return
        self._warned_kept = True
        warn(
            f"capture(keep='all') has kept {self.kept_bytes / 2**20:,.0f} MiB of sowed values so far, and "
            "keeps every value of every call until the capture ends. In a loop, capture(keep='last') keeps only the "
            "latest value per site, and capture(keep='summary') only its statistics and histogram."
        )

    def _add(self, path: tuple[Any, ...], var_type: Any, name: str, value: Any) -> None:
        site = (path, var_type, name)
        call_index = self._calls.get(site, 0)
        self._calls[site] = call_index + 1
        self.var_types_seen.add(var_type)
        slot = value if isinstance(value, TableSlot) else None
        if isinstance(value, Summary):
            summary, value = value, None
            shape = (*summary.stacked_shape, *summary.shape)
            dtype = summary.dtype
        elif slot is not None:
            summary, value = None, None
            shape, dtype = (*slot.packed.shape[:-2], *slot.shape), str(slot.dtype)
        else:
            shape, dtype = shape_and_dtype(value)
            summary = None
        record = Record(path, name, call_index, var_type, shape, dtype, value, summary)
        if self.keep == "all" and is_array(value):
            self.kept_bytes += value.nbytes
            self._sowed_again = self._sowed_again or call_index > 0
        key = (site, call_index) if self.keep == "all" else site
        if self.keep != "all":
            # One record per site, which keeps its call_index: the number of
            # the value kept. Moving it to the end keeps the order of the
            # latest step, which is the execution order a user expects.
            self._records.pop(key, None)
        self._records[key] = record
        if slot is not None:
            self._pending[key] = (record, slot)  # dispatched as its call returned
        elif is_concrete_numeric(value) and self.keep == "summary":
            # Summarized now, while Python goes on, as the value is not kept.
            self._pending[key] = (record, PendingSummaries([value], self.bins))
            record.value = None
        elif is_concrete_numeric(value):
            # Summarized with the rest of the block's values, in batches: one
            # program for all of a forward pass's values compiles once,
            # where a program per shape took most of a first capture's time.
            self._pending[key] = (record, value)
        elif self.keep == "summary" and is_array(value):
            record.summary, record.value = summarize(value, bins=self.bins), None

    def empty_note(self, methods: bool) -> str:
        """What a table without records says: why there are none, and what to try.

        Args:
          methods: whether the capture records method outputs (``methods=True``).
        """
        if self.dropped_sites:
            sites = list(self.dropped_sites)
            named = ", ".join(map(shown_name, sites[:NAMED_SITES]))
            if len(sites) > NAMED_SITES:
                named += f" and {len(sites) - NAMED_SITES} more"
            count = "1 site" if len(sites) == 1 else f"{len(sites)} sites"
            return f"(no site matched include={include_text(self.include)}; {count} sowed: {named})"
        if not methods:
            return (
                "(nothing was sowed; with methods=True, capture() also records "
                "every submodule's method outputs)"
            )
        return NOTHING_SOWED

    def records(self) -> list[Record]:
        """The records so far, in execution order, with their summaries."""
        with self._lock:
            self._fetch_pending()
            return list(self._records.values())

    def _fetch_pending(self) -> None:
        if not self._pending:
            return
        pending = list(self._pending.values())
        self._pending.clear()
        dispatched = [(r, p) for r, p in pending if isinstance(p, PendingSummaries)]
        slots = [(r, p) for r, p in pending if isinstance(p, TableSlot)]
        pending = [(r, p) for r, p in pending if not isinstance(p, TableSlot)]
        # One program takes values of one set of devices: in a run of several
        # processes a value of this process's device and a global one differ.
        by_devices: dict[Any, list[tuple[Record, Any]]] = {}
        for record, value in pending:
            if not isinstance(value, PendingSummaries):
                by_devices.setdefault(frozenset(value.sharding.device_set), []).append((record, value))
        batches = [
            values[i : i + SUMMARY_BATCH]
            for values in by_devices.values()
            for i in range(0, len(values), SUMMARY_BATCH)
        ]
        work = [p for _, p in dispatched] + [PendingSummaries([v for _, v in b], self.bins) for b in batches]
        results = fetch_summaries(work)
        tables = list({id(slot.packed): slot.packed for _, slot in slots}.values())
        host = {
            id(t): t.final(h) for t, h in zip(tables, jax.device_get([t.rows for t in tables]), strict=True)
        }
        for record, slot in slots:
            record.summary = slot.summary(host[id(slot.packed)])
        for (record, _), (summary,) in zip(dispatched, results[: len(dispatched)], strict=True):
            record.summary = summary
        for batch, summaries in zip(batches, results[len(dispatched) :], strict=True):
            for (record, _), summary in zip(batch, summaries, strict=True):
                record.summary = summary

    def summarize_missing(self) -> None:
        """Summarizes every array record still without a summary, fetched in one transfer."""
        with self._lock:
            self._fetch_pending()
        missing = [r for r in self._records.values() if r.summary is None and is_array(r.value)]
        if not missing:
            return
        for record, summary in zip(
            missing, summarize([r.value for r in missing], bins=self.bins), strict=True
        ):
            record.summary = summary
