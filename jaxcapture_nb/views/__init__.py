"""The notebook views: widgets, their payloads and the pictures saved with a notebook.

Importing this package registers, for each kind of result, the widget that
shows it (see :mod:`jaxcapture_nb.core.display`). The widget modules, which
need ipywidgets and anywidget, load on the first view asked for, so a script
that never shows a result never imports them.
"""

from jaxcapture_nb.capturing.capture import Capture
from jaxcapture_nb.core.display import shows
from jaxcapture_nb.interventions.attention import AttentionPatterns
from jaxcapture_nb.interventions.lens_result import LogitLens
from jaxcapture_nb.interventions.result import PatchingResult
from jaxcapture_nb.modes.comparison import Comparison
from jaxcapture_nb.runs.run import Run


@shows(Capture)
def _capture_view(capture: Capture):
    from jaxcapture_nb.views.capture_view import CaptureView

    return CaptureView(capture)


@shows(Comparison)
def _compare_view(comparison: Comparison):
    from jaxcapture_nb.views.compare_view import CompareView

    return CompareView(comparison)


@shows(PatchingResult)
def _patching_view(result: PatchingResult, *, estimate: PatchingResult | None = None):
    from jaxcapture_nb.views.patching_view import PatchingView

    return PatchingView(result, estimate)


@shows(AttentionPatterns)
def _attention_view(patterns: AttentionPatterns):
    from jaxcapture_nb.views.attention_view import AttentionView

    return AttentionView(patterns)


@shows(LogitLens)
def _lens_view(lens: LogitLens):
    from jaxcapture_nb.views.lens_view import LogitLensView

    return LogitLensView(lens)


@shows(Run)
def _live_view(run: Run, *, total: int | None = None):
    from jaxcapture_nb.views.live_view import LiveView

    return LiveView(run, total=total)
