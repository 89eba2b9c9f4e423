"""The messages the widgets send their front ends, declared once on each side.

A widget's synced traits are its wire: plain values, binary buffers, and
the JSON objects declared here. Each declaration has a twin in ``js/``, a
JSDoc ``@typedef`` of the same fields, which the code reading it is typed
with, so TypeScript checks every field the front end reads
(``tsc -p jsconfig.json``) and mypy every field the kernel writes;
``tests/test_wire.py`` checks that the two declarations name the same
fields, and that the traits a widget syncs are the ones its front end uses.

The module does without ``from __future__ import annotations``: a
TypedDict's optional fields (``NotRequired``) show at run time only when its
annotations are evaluated.
"""

from typing import Any, NotRequired, TypedDict


class LiveUpdate(TypedDict):
    """LiveView's ``_update``: the rows recorded since the last update, as binary buffers.

    ``index`` is int32 (site, rows to drop, rows to add) per block of rows;
    ``steps`` float64 per row; ``stats`` float32, the view's ``_stat_columns``
    per row; ``hists`` int32, ``_bins`` per row; ``scalar_index`` as
    ``index``, for the scalars; ``scalar_rows`` float64 (step, value, wall
    time in seconds since the epoch, NaN where not known) per row.
    """

    seq: int  # the update's number: the front end notices one it missed
    base: bool  # whether it replaces every row the browser holds
    index: bytes
    steps: bytes
    stats: bytes
    hists: bytes
    scalar_index: bytes
    scalar_rows: bytes


class LiveEntry(TypedDict):
    """One entry of LiveView's ``_sites`` (with its ``kind``) or ``_scalars``."""

    label: str
    kind: NotRequired[str]
    run: int  # its run's index in ``_runs``


class NonfiniteAt(TypedDict):
    """Where a run's first NaN or Inf was seen: its series' key, the step, and the run's index."""

    site: Any  # the run's key of the series (a site's, or a scalar's)
    step: int
    run: int


class RunProgress(TypedDict):
    """One run's progress, in a LiveView of several runs."""

    seen: int  # steps run
    recorded: int  # steps recorded by the series that holds the most
    done: bool
    ended: str  # how the run ended ("" while it runs)
    nonfinite: NonfiniteAt | None


class LiveProgress(TypedDict):
    """LiveView's ``_progress``: how far the runs are, and their first NaN or Inf.

    ``beat`` and ``silence`` come while a watch's thread publishes: the beat
    changes every few seconds, and a view that hears nothing for
    ``silence`` seconds says the kernel may be gone.
    """

    nonfinite_site: int | None  # the index in ``_sites`` of the first NaN/Inf's series, if listed
    nonfinite_scalar: int | None  # the same in ``_scalars``
    seen: int
    recorded: int
    rate: float  # steps a second
    total: int | None  # the steps planned, for the ETA
    eta: float | None  # seconds
    nonfinite: NonfiniteAt | None
    done: bool
    ended: str
    runs: list[RunProgress]  # each run's, for a view of several; empty otherwise
    beat: NotRequired[int]
    silence: NotRequired[float]


class CaptureSite(TypedDict):
    """One row of CaptureView's ``_sites``: names and shapes, never numbers to plot."""

    path: str
    name: str
    shown_name: str
    label: str
    call: int
    type: str
    shape: list[int] | None
    dtype: str
    note: str
    has_stats: bool
    has_value: bool
    same_as: int  # the earlier site holding the same values, or -1


class FillMessage(TypedDict):
    """A fill (see :class:`~jaxcapture_nb.views.fills.Fill`), as CaptureView's ``_range`` and ``_fill_sites`` carry it."""

    side: str
    limit: float
    value: float
    count: int
    exact: bool


class FillSite(TypedDict):
    """One entry of CaptureView's ``_fill_sites``: a site whose table row leaves its fills out."""

    site: int
    fills: list[FillMessage]


class RangeMessage(TypedDict):
    """CaptureView's ``_range``: the kernel's answer for the selected site's value range.

    Its histogram travels apart, as the bytes of ``_range_hist``.
    """

    site: int
    mode: str
    modes: list[str]
    note: str
    fills: list[FillMessage]
    lo: float | None
    hi: float | None
    under: int
    over: int
    rest: dict[str, float | None] | None
    percentiles: list[float]


class CompareSite(TypedDict):
    """One row of a comparison's ``_sites``."""

    site: str
    label: str
    type: str
    shapes: list[list[int] | str | None]  # per mode: a shape, None where not reached, or why unknown
    same: bool


class PatchMethod(TypedDict):
    """One entry of PatchingView's ``_methods``: a result's method, its metric's name and its two ends' metrics."""

    method: str
    metric: str
    clean: float
    corrupted: float


class OptionMessage(TypedDict):
    """One option of a ModePanel card."""

    name: str
    kind: str
    annotation: str
    doc: str
    via: str
    current: Any
    current_text: str


class GroupMessage(TypedDict):
    """One entry of ModePanel's ``_groups``: a class's card of options."""

    name: str
    ref: str
    paths: list[str]
    options: list[OptionMessage]


# Each message's twin in js/: the file, and the name of its @typedef there.
FRONT_END_TYPES: dict[type, tuple[str, str]] = {
    LiveUpdate: ("live_state.js", "LiveUpdate"),
    LiveEntry: ("live_state.js", "Entry"),
    NonfiniteAt: ("live_state.js", "NonfiniteAt"),
    RunProgress: ("live_state.js", "RunProgress"),
    LiveProgress: ("live_state.js", "LiveProgress"),
    CaptureSite: ("capture_data.js", "Site"),
    FillMessage: ("capture_data.js", "Fill"),
    FillSite: ("capture_data.js", "FillSite"),
    RangeMessage: ("capture_data.js", "RangeMessage"),
    CompareSite: ("compare_data.js", "Site"),
    PatchMethod: ("patching_data.js", "PatchMethod"),
    OptionMessage: ("mode_panel_controls.js", "Option"),
    GroupMessage: ("mode_panel_controls.js", "Group"),
}
