"""LiveView: histograms over steps while a model trains, of one run or several (anywidget; JS in js/).

An update is one synced dict of binary buffers: the rows (steps,
statistics, histograms), an index of which site each block of rows belongs
to, and the same for the scalars. One trait rather than one per part, as
every trait set costs the publishing thread validation and notification.
An update carries only the rows recorded since the previous one; a *base*
update carries every kept row and replaces what the browser holds. Base
updates go out for the first two seconds (while the browser may still be
loading the front end), after the history was thinned, and at the end.

A view of several runs (``overlay_runs``) sends the sites and scalars of
every run in one list, each entry naming its run; the front end overlays
what the runs share.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import traitlets as t

from jaxcapture_nb.core.wire import LiveEntry, LiveProgress, LiveUpdate, RunProgress
from jaxcapture_nb.runs.run import Run, Shown, runs_shown
from jaxcapture_nb.runs.series import kind_label
from jaxcapture_nb.views.base import FrontEndWidget
from jaxcapture_nb.views.live_static import live_html, live_text, runs_html

# While the browser may still be loading the module, updates replace
# everything, so one missed in that window loses nothing.
BASE_SECONDS = 2.0
# While a watch's thread publishes, the progress carries a beat that changes
# this often, so the view hears from the kernel even when no step ends; a
# view that hears nothing for SILENCE_SECONDS says the kernel may be gone
# (a restart or a crash leaves it no other way to know).
BEAT_SECONDS = 5.0
SILENCE_SECONDS = 30.0


def _walls(rows: tuple[np.ndarray, ...]) -> np.ndarray:
    """The wall times of a block of scalar rows; NaN where the series keeps none."""
    return rows[3] if len(rows) > 3 and rows[3] is not None else np.full(len(rows[0]), np.nan)


def _update_message(seq: int, base: bool, blocks: list, scalar_blocks: list) -> LiveUpdate:
    """The ``_update`` of :class:`LiveView` (see :class:`~jaxcapture_nb.core.wire.LiveUpdate`), from ``_new_rows`` blocks of sites and scalars."""

    def index(blocks: list) -> bytes:
        return np.array([(i, drop, len(rows[0])) for i, drop, rows in blocks], np.int32).tobytes()

    return {
        "seq": seq,
        "base": base,
        "index": index(blocks),
        "steps": b"".join(r[0].astype(np.float64).tobytes() for _, _, r in blocks),
        "stats": b"".join(r[1].tobytes() for _, _, r in blocks),
        "hists": b"".join(r[2].tobytes() for _, _, r in blocks),
        "scalar_index": index(scalar_blocks),
        "scalar_rows": b"".join(
            np.stack([r[0].astype(np.float64), r[1][:, 0].astype(np.float64), _walls(r)], 1).tobytes()
            for _, _, r in scalar_blocks
        ),
    }


class LiveView(FrontEndWidget, entry="live_view.js", css="live_view.css"):
    """Histograms over steps, percentile bands and scalar charts of one run or several.

    Made and fed by :func:`~jaxcapture_nb.watch`, :func:`~jaxcapture_nb.open_run`
    and :func:`~jaxcapture_nb.overlay_runs`; :meth:`publish` sends what is
    new. Saved notebooks keep a plain-text summary and a script-free
    picture of the histograms over steps.

    Args:
      stream: the run to show, or its history; for several runs overlaid (all with the
        same ``bins``), ``{run name: history}`` or a list of
        :class:`~jaxcapture_nb.Run` s.
      total: the number of steps planned, for the ETA.

    Attributes:
      runs: each :class:`~jaxcapture_nb.Run` shown.
      stream: the first run's history.
    """

    _runs = t.List(t.Unicode()).tag(sync=True)  # run names; empty for a view of one run
    _sites = t.List(t.Dict()).tag(sync=True)  # wire.LiveEntry, with kind
    _scalars = t.List(t.Dict()).tag(sync=True)  # wire.LiveEntry
    _bins = t.Int(0).tag(sync=True)
    _stat_columns = t.List(t.Unicode()).tag(sync=True)  # the stream's columns (RowLayout)
    _update = t.Dict().tag(sync=True)  # wire.LiveUpdate
    _progress = t.Dict().tag(sync=True)

    def __init__(self, stream: Shown, total: int | None = None, **kwargs: Any):
        self.runs = runs_shown(stream)
        self.stream = self.runs[0].stream
        first = self.runs[0]
        self.total = total
        self._created = time.perf_counter()
        self._handles: list[Any] = []  # displays to send again, see keep_saved_output_fresh
        self._sent: dict[Any, int] = {}  # rows of each series already sent
        self._sent_versions: list[int] = [-1] * len(self.runs)
        # Where each series sits in _sites / _scalars: a live run may add a
        # site after another run's were listed, so the order is arrival.
        self._site_order: dict[tuple[int, Any], int] = {}
        self._scalar_order: dict[tuple[int, Any], int] = {}
        self._publishing = threading.Lock()
        super().__init__(
            _runs=[run.name for run in self.runs] if len(self.runs) > 1 else [],
            _bins=first.bins,
            _stat_columns=list(first.columns),
            _update=_update_message(0, True, [], []),
            **kwargs,
        )

    def publish(self, final: bool = False) -> None:
        """Sends the rows recorded since the last call (all of them for a base update).

        Args:
          final: the runs have ended: send everything, and say so.
        """
        with self._publishing:
            versions = [run.version for run in self.runs]
            base = final or versions != self._sent_versions or self._fresh()
            blocks, scalar_blocks = [], []
            for k, run in enumerate(self.runs):
                with run.reading():
                    sites = self._listed(self._site_order, k, run.keyed_sites)
                    scalars = self._listed(self._scalar_order, k, run.scalars)
                    blocks += self._new_rows(sites, base)
                    scalar_blocks += self._new_rows(scalars, base)
            self._sent_versions = versions
            progress = self._progress_now(final)
        if not (blocks or scalar_blocks or base) and progress == self._progress:
            return
        with self.hold_sync():
            if len(self._site_order) != len(self._sites):
                sites = self._in_order(self._site_order, "keyed_sites")
                site_entries: list[LiveEntry] = [
                    {"label": s.label, "kind": kind_label(s.kind), "run": run} for run, s in sites
                ]
                self._sites = site_entries
            if len(self._scalar_order) != len(self._scalars):
                scalar_entries: list[LiveEntry] = [
                    {"label": s.label, "run": run} for run, s in self._in_order(self._scalar_order, "scalars")
                ]
                self._scalars = scalar_entries
            self._update = _update_message(self._update["seq"] + 1, base, blocks, scalar_blocks)
            self._progress = progress

    def _fresh(self) -> bool:
        return time.perf_counter() - self._created < BASE_SECONDS

    @staticmethod
    def _listed(order: dict, run: int, series: Mapping) -> list[tuple[int, Any, Any]]:
        """(index in the browser's list, key, series) of a run's series, new ones given the next index."""
        return [(order.setdefault((run, key), len(order)), (run, key), s) for key, s in series.items()]

    def _in_order(self, order: dict, field: str) -> list[tuple[int, Any]]:
        """(run, series) in the browser's order; ``field`` is the Run's ``"keyed_sites"`` or ``"scalars"``."""
        tables: dict[int, dict] = {}  # each run's series, copied once
        for run, _ in order:
            if run not in tables:
                tables[run] = getattr(self.runs[run], field)
        return [(run, tables[run][key]) for run, key in order]

    def _new_rows(self, series: list, base: bool) -> list[tuple[int, int, tuple[np.ndarray, ...]]]:
        """Per series with changes: (index, rows the browser drops, rows it appends)."""
        blocks = []
        for i, key, s in series:
            sent = self._sent.get(key, 0)
            start = 0 if base else min(sent, s.first_rewritten(self))
            if start < s.size or start < sent:
                rows = slice(start, s.size)
                drop = 0 if base else sent - start
                walls = None if s.walls is None else s.walls[rows].copy()
                blocks.append(
                    (i, drop, (s.steps[rows].copy(), s.stats[rows].copy(), s.hists[rows].copy(), walls))
                )
            self._sent[key] = s.size
            s.mark_read(self)
        return blocks

    def _progress_now(self, final: bool) -> LiveProgress:
        runs = [self._run_progress(k, run, final) for k, run in enumerate(self.runs)]
        seen = max(p["seen"] for p in runs)
        pace = self.runs[0].pace
        pace.note(runs[0]["seen"], time.perf_counter())
        rate, eta = pace.rate, pace.eta(self.total)
        first = min(
            ((p["nonfinite"]["step"], run) for run, p in enumerate(runs) if p["nonfinite"]), default=None
        )
        found = runs[first[1]]["nonfinite"] if first else None
        progress: LiveProgress = {
            # Which of ``_sites`` (or ``_scalars``) it is, so the view opens that one.
            "nonfinite_site": self._index_of(self._site_order, first, "keyed_sites"),
            "nonfinite_scalar": self._index_of(self._scalar_order, first, "scalars"),
            "seen": seen,
            "recorded": max(p["recorded"] for p in runs),
            "rate": round(rate, 1),
            "total": self.total,
            "eta": None if eta is None else round(eta, 1),
            "nonfinite": found,
            "done": all(p["done"] for p in runs),
            "ended": runs[0]["ended"],
            "runs": runs if len(runs) > 1 else [],
        }
        # The beat of a view whose run a thread publishes (see BEAT_SECONDS).
        if any(run.beating for run in self.runs) and not progress["done"]:
            progress["beat"] = int(time.time() / BEAT_SECONDS)
            progress["silence"] = SILENCE_SECONDS
        return progress

    @staticmethod
    def _run_progress(k: int, run: Run, final: bool) -> RunProgress:
        """Run ``k``'s steps seen and recorded, whether and how it has ended, and its first NaN/Inf."""
        found = run.first_nonfinite
        return {
            "seen": run.steps,
            "recorded": max((s.size for s in run.sites), default=0),
            "done": final or run.ended,
            "ended": run.ended_as,
            "nonfinite": None if found is None else {"site": found[0], "step": found[1], "run": k},
        }

    def _index_of(self, order: dict, first: tuple[int, int] | None, field: str) -> int | None:
        """The index in ``_sites`` or ``_scalars`` (``order``) of the first NaN/Inf's series, if listed there.

        Args:
          order: ``_site_order`` or ``_scalar_order``.
          first: (step, run) of the first NaN/Inf, or None.
          field: the Run's ``"keyed_sites"`` or ``"scalars"``.
        """
        if first is None:
            return None
        run = self.runs[first[1]]
        found = run.first_nonfinite_series
        key = next((key for key, s in getattr(run, field).items() if s is found), None)
        return order.get((first[1], key)) if key is not None else None

    def keep_saved_output_fresh(self) -> None:
        """From now on, displays the view under a display id that :meth:`refresh_saved_output` sends again.

        A view showing a run that is still training is displayed before the
        run has rows; a notebook file would keep that first, empty picture.
        IPython's ``display`` calls ``_ipython_display_`` where an object has
        one: set on this view only, it leaves every other view's display as
        IPython makes it.
        """
        self._ipython_display_ = self._display_with_id

    def _display_with_id(self) -> None:
        from IPython.display import display

        data, metadata = self._repr_mimebundle_() or ({"text/plain": self._text()}, {})
        self._handles.append(display(data, metadata=metadata, raw=True, display_id=True))

    def refresh_saved_output(self) -> None:
        """Sends each display of the view again, carrying the picture of now for the notebook file to keep."""
        if not self._handles:
            return
        data, metadata = self._repr_mimebundle_() or ({"text/plain": self._text()}, {})
        for handle in self._handles:
            handle.update(data, metadata=metadata, raw=True)

    def __repr__(self) -> str:
        return self._text()

    def _text(self) -> str:
        if len(self.runs) == 1:
            return live_text(self.runs[0])
        return "\n\n".join(f"run {run.name}:\n{live_text(run)}" for run in self.runs)

    def _saved_view(self) -> tuple[str, str]:
        text = self._text()
        return text, live_html(self.runs[0]) if len(self.runs) == 1 else runs_html(self.runs, text)
