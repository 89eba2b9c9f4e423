"""LiveView: histograms over steps while a model trains (anywidget; JS in js/).

An update is one synced dict of binary buffers: the rows (steps,
statistics, histograms), an index of which site each block of rows belongs
to, and the same for the scalars. One trait rather than one per part, as
every trait set costs the publishing thread validation and notification.
An update carries only the rows recorded since the previous one; a *base*
update carries every kept row and replaces what the browser holds. Base
updates go out for the first two seconds (while the browser may still be
loading the front end), after the history was thinned, and at the end.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import anywidget
import numpy as np
import traitlets as t

from jaxcapture_nb._stream import Stream, flag_name, kind_label
from jaxcapture_nb._widgets.front_end import module, stylesheet
from jaxcapture_nb._widgets.live_static import live_html, live_text
from jaxcapture_nb._widgets.schema_trait import SchemaTrait
from jaxcapture_nb._widgets.static import with_fallback

# While the browser may still be loading the module, updates replace
# everything, so one missed in that window loses nothing.
BASE_SECONDS = 2.0


def _update_message(seq: int, base: bool, blocks: list, scalar_blocks: list) -> dict[str, Any]:
    """The ``_update`` dict of :class:`LiveView`, from ``_new_rows`` blocks of sites and scalars.

    Keys: ``seq``, the update's number; ``base``, whether it replaces all
    rows; ``index``, int32 (site, rows to drop, rows to add) per block;
    ``steps``, float64 per row; ``stats``, float32 ``_stat_columns`` per row;
    ``hists``, int32 bins per row; ``scalar_index``, as ``index`` for the
    scalars; ``scalar_rows``, float64 (step, value) pairs.
    """

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
            np.stack([r[0].astype(np.float64), r[1][:, 0].astype(np.float64)], 1).tobytes()
            for _, _, r in scalar_blocks
        ),
    }


class LiveView(SchemaTrait, anywidget.AnyWidget):
    """Histograms over steps, percentile bands and scalar charts of a :class:`Stream`.

    Made and fed by :func:`~jaxcapture_nb.watch`; :meth:`publish` sends what
    is new. Saved notebooks keep a plain-text summary and a script-free
    picture of the histograms over steps.

    Args:
      stream: the history to show.
      total: the number of steps planned, for the ETA.
    """

    _esm = module("live_view.js")
    _css = stylesheet("live_view.css")

    _sites = t.List(t.Dict()).tag(sync=True)
    _scalar_names = t.List(t.Unicode()).tag(sync=True)
    _bins = t.Int(0).tag(sync=True)
    _stat_columns = t.List(t.Unicode()).tag(sync=True)  # the stream's columns (RowLayout)
    _update = t.Dict().tag(sync=True)  # see _update_message
    _progress = t.Dict().tag(sync=True)

    def __init__(self, stream: Stream, total: int | None = None, **kwargs: Any):
        self.stream = stream
        self.total = total
        self._created = time.perf_counter()
        self._sent: dict[Any, int] = {}  # rows of each series already sent
        self._sent_version = -1
        self._publishing = threading.Lock()
        super().__init__(
            _bins=stream.bins,
            _stat_columns=list(stream.layout.columns),
            _update=_update_message(0, True, [], []),
            **kwargs,
        )

    def publish(self, final: bool = False) -> None:
        """Sends the rows recorded since the last call (all of them for a base update)."""
        with self._publishing, self.stream.lock:
            base = final or self._sent_version != self.stream.version or self._fresh()
            sites = list(self.stream.series.items())
            scalars = list(self.stream.scalars.items())
            blocks = self._new_rows(sites, base)
            scalar_blocks = self._new_rows(scalars, base)
            self._sent_version = self.stream.version
            progress = self._progress_now(final)
        if not (blocks or scalar_blocks or base) and progress == self._progress:
            return
        with self.hold_sync():
            if len(sites) != len(self._sites):
                self._sites = [{"label": s.label, "kind": kind_label(s.kind)} for _, s in sites]
            if len(scalars) != len(self._scalar_names):
                self._scalar_names = [s.label for _, s in scalars]
            self._update = _update_message(self._update["seq"] + 1, base, blocks, scalar_blocks)
            self._progress = progress

    def _fresh(self) -> bool:
        return time.perf_counter() - self._created < BASE_SECONDS

    def _new_rows(self, series: list, base: bool) -> list[tuple[int, int, tuple[np.ndarray, ...]]]:
        """Per series with changes: (index, rows the browser drops, rows it appends)."""
        blocks = []
        for i, (key, s) in enumerate(series):
            sent = self._sent.get(key, 0)
            start = 0 if base else min(sent, s.rewritten_from)
            if start < s.size or start < sent:
                rows = slice(start, s.size)
                drop = 0 if base else sent - start
                blocks.append((i, drop, (s.steps[rows].copy(), s.stats[rows].copy(), s.hists[rows].copy())))
            self._sent[key] = s.size
            s.rewritten_from = len(s.steps)
        return blocks

    def _progress_now(self, final: bool) -> dict[str, Any]:
        seen = max(self.stream.steps_seen, *(s.calls for s in self.stream.scalars.values()), 0)
        elapsed = time.perf_counter() - self.stream.started
        rate = seen / elapsed if elapsed > 0 and seen else 0.0
        eta = (self.total - seen) / rate if self.total and rate and seen < self.total else None
        found = self.stream.first_nonfinite
        return {
            # Which of ``_sites`` it is, so the view opens that one.
            "nonfinite_site": self._site_index(found[0]) if found else None,
            "seen": seen,
            "recorded": max((s.size for s in self.stream.series.values()), default=0),
            "rate": round(rate, 1),
            "total": self.total,
            "eta": None if eta is None else round(eta, 1),
            "nonfinite": None if found is None else {"site": found[0], "step": found[1]},
            "done": final,
        }

    def _site_index(self, name: str) -> int | None:
        """The index in ``_sites`` of the site that ``Stream.first_nonfinite`` names."""
        names = [flag_name(s) for s in self.stream.series.values()]
        return names.index(name) if name in names else None

    def __repr__(self) -> str:
        return live_text(self.stream)

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict, dict] | None:
        bundle = super()._repr_mimebundle_(**kwargs)
        return with_fallback(bundle, live_text(self.stream), live_html(self.stream))
