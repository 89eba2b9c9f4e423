"""Recorder: where backends deliver sowed values, and how many are kept.

A backend hook calls :meth:`Recorder.add` for every value it sees and nothing
else; the recorder applies ``include`` and ``keep`` and turns values into
:class:`~jaxcapture_nb._records.Record` objects, so the keep policy lives in
exactly one place whatever Flax API the value came from.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

from jaxcapture_nb._records import Record, is_array, shape_and_dtype
from jaxcapture_nb._summary import (
    PendingSummaries,
    Summary,
    check_bins,
    fetch_summaries,
    is_concrete_numeric,
    summarize,
    unpack_summary,
)

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


def _site_filter(include: Include) -> Callable[[str], bool]:
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


class Recorder:
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

    # Every value is recorded; a Stream may record one step in several.
    every = 1

    def __init__(self, keep: str = "all", bins: int = 64, include: Include = None, grads: bool = False):
        if keep not in KEEP_MODES:
            raise ValueError(f"keep={keep!r} is not one of {', '.join(map(repr, KEEP_MODES))}")
        check_bins(bins)
        self.keep = keep
        self.bins = bins
        self.grads = grads
        self._accepts_site = _site_filter(include)
        # Everything that changes what a traced sow stores; hashable.
        self.policy = (keep, bins, include_key(include), grads)
        self._records: dict[Any, Record] = {}
        self._calls: dict[Any, int] = {}
        self._drains: list[Callable[[], None]] = []
        self._pending: dict[Any, tuple[Record, PendingSummaries]] = {}
        self._lock = threading.RLock()

    def accepts(self, path: tuple[Any, ...], name: str) -> bool:
        """Whether values sowed at ``path``/``name`` are to be recorded."""
        return bool(self._accepts_site(site_label(path, name)))

    def add_drain(self, drain: Callable[[], None]) -> None:
        """Registers a backend function that delivers values held elsewhere."""
        self._drains.append(drain)

    def drain(self) -> None:
        """Asks every backend to deliver the values it still holds."""
        for drain in self._drains:
            drain()

    def add(self, path: tuple[Any, ...], var_type: Any, name: str, value: Any) -> None:
        """Records one sowed value (or a :class:`Summary` made on the device).

        Thread-safe: host callbacks from compiled programs call it from the
        runtime's threads.
        """
        if not self.accepts(path, name):
            return
        with self._lock:
            self._add(path, var_type, name, value)

    def expect(self, path: tuple[Any, ...], var_type: Any, name: str) -> None:
        """Called as a program being traced sets up a host callback for a site.

        Nothing to list ahead here: records keep the order values arrive in.
        """

    def call_returned(self) -> None:
        """Called on the caller's thread once a call has handed over all its values.

        Nothing to do here: records are read when the capture ends.
        """

    def add_row(
        self, path: tuple[Any, ...], var_type: Any, name: str, row: Any, layout: Any, order: int
    ) -> None:
        """Records the summary a compiled program sent as one packed row (see ``packed_summary``).

        ``layout`` is the shape and dtype of the summarized array. ``order``,
        when the site was sowed in the trace, matters only to a stream.
        """
        self.add(path, var_type, name, unpack_summary(row, *layout))

    def _add(self, path: tuple[Any, ...], var_type: Any, name: str, value: Any) -> None:
        site = (path, var_type, name)
        call_index = self._calls.get(site, 0)
        self._calls[site] = call_index + 1
        if isinstance(value, Summary):
            summary, value = value, None
            shape = (*summary.stacked_shape, *summary.shape)
            dtype = summary.dtype
        else:
            shape, dtype = shape_and_dtype(value)
            summary = None
        record = Record(path, name, call_index, var_type, shape, dtype, value, summary)
        key = (site, call_index) if self.keep == "all" else site
        if self.keep != "all":
            # One record per site; moving it to the end keeps the order of the
            # latest step, which is the execution order a user expects.
            record.call_index = 0
            self._records.pop(key, None)
        self._records[key] = record
        if is_concrete_numeric(value):
            # Summarized now, while Python goes on; fetched when first needed.
            self._pending[key] = (record, PendingSummaries([value], self.bins))
            if self.keep == "summary":
                record.value = None
        elif self.keep == "summary" and is_array(value):
            record.summary, record.value = summarize(value, bins=self.bins), None

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
        for (record, _), (summary,) in zip(pending, fetch_summaries([p for _, p in pending]), strict=True):
            record.summary = summary

    def summarize_missing(self) -> None:
        """Summarizes every array record still without a summary, in one program."""
        with self._lock:
            self._fetch_pending()
        missing = [r for r in self._records.values() if r.summary is None and is_array(r.value)]
        if not missing:
            return
        for record, summary in zip(
            missing, summarize([r.value for r in missing], bins=self.bins), strict=True
        ):
            record.summary = summary
