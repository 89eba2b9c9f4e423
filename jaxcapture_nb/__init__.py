"""jaxcapture_nb: see inside Flax models from a notebook.

Record every tensor a model sows with :func:`capture`, summarize arrays on
the device with :func:`summarize`, and look at them in a notebook with
``%load_ext jaxcapture_nb`` and the ``%%capture_intermediates`` cell magic, or
``Capture.show()``.

Example:
  >>> import jax.numpy as jnp
  >>> from jaxcapture_nb import summarize
  >>> int(summarize(jnp.arange(6.0)).count)
  6
"""

from jaxcapture_nb.capturing.capture import Capture, capture, capture_grads
from jaxcapture_nb.core.user_warnings import JaxCaptureWarning
from jaxcapture_nb.interventions.attention import AttentionPatterns, attention_patterns
from jaxcapture_nb.interventions.lens import find_readout, logit_lens
from jaxcapture_nb.interventions.lens_result import LogitLens
from jaxcapture_nb.interventions.patch import Patch, at, patch
from jaxcapture_nb.interventions.replacements import (
    Replacement,
    mean_ablation,
    resample_ablation,
    steering,
    zero_ablation,
)
from jaxcapture_nb.interventions.result import PatchingResult
from jaxcapture_nb.interventions.sweep import attribution_patching, patching_sweep
from jaxcapture_nb.modes.compare import compare_modes
from jaxcapture_nb.modes.comparison import Comparison, SiteComparison
from jaxcapture_nb.modes.modes import ModeError, ModuleOptions, ViewOption, view_options, with_mode
from jaxcapture_nb.runs.compare_runs import compare_runs
from jaxcapture_nb.runs.history import NonFiniteError
from jaxcapture_nb.runs.run import Run
from jaxcapture_nb.runs.sources import read_run
from jaxcapture_nb.runs.watch import Watch, watch
from jaxcapture_nb.stats.records import Gradient, Record
from jaxcapture_nb.stats.schema import register_statistic, remove_statistic
from jaxcapture_nb.stats.summarize import summarize
from jaxcapture_nb.stats.summary import Summary
from jaxcapture_nb.upstream.flax_internals import FlaxCompatibilityError
from jaxcapture_nb.views.run_views import open_run, overlay_runs


def __getattr__(name):
    # The widget needs ipywidgets; import it only when asked for.
    if name == "CaptureView":
        from jaxcapture_nb.views.capture_view import CaptureView

        return CaptureView
    if name == "LiveView":
        from jaxcapture_nb.views.live_view import LiveView

        return LiveView
    if name == "CompareView":
        from jaxcapture_nb.views.compare_view import CompareView

        return CompareView
    if name == "PatchingView":
        from jaxcapture_nb.views.patching_view import PatchingView

        return PatchingView
    if name == "AttentionView":
        from jaxcapture_nb.views.attention_view import AttentionView

        return AttentionView
    if name == "LogitLensView":
        from jaxcapture_nb.views.lens_view import LogitLensView

        return LogitLensView
    if name in ("ModePanel", "mode_panel"):
        from jaxcapture_nb.views import mode_panel

        return getattr(mode_panel, name)
    raise AttributeError(f"module 'jaxcapture_nb' has no attribute {name!r}")


__version__ = "0.1.0"


def load_ipython_extension(ipython):
    """``%load_ext jaxcapture_nb``: registers ``%%capture_intermediates``."""
    from jaxcapture_nb.jupyter.magics import load

    load(ipython)


def unload_ipython_extension(ipython):
    """``%unload_ext jaxcapture_nb``: removes ``%%capture_intermediates``."""
    from jaxcapture_nb.jupyter.magics import unload

    unload(ipython)


__all__ = [
    "AttentionPatterns",
    "AttentionView",
    "Capture",
    "CaptureView",
    "CompareView",
    "Comparison",
    "FlaxCompatibilityError",
    "Gradient",
    "JaxCaptureWarning",
    "LiveView",
    "LogitLens",
    "LogitLensView",
    "ModeError",
    "ModePanel",
    "ModuleOptions",
    "NonFiniteError",
    "Patch",
    "PatchingResult",
    "PatchingView",
    "Record",
    "Replacement",
    "Run",
    "SiteComparison",
    "Summary",
    "ViewOption",
    "Watch",
    "at",
    "attention_patterns",
    "attribution_patching",
    "capture",
    "capture_grads",
    "compare_modes",
    "compare_runs",
    "find_readout",
    "logit_lens",
    "mean_ablation",
    "mode_panel",
    "open_run",
    "overlay_runs",
    "patch",
    "patching_sweep",
    "read_run",
    "register_statistic",
    "remove_statistic",
    "resample_ablation",
    "steering",
    "summarize",
    "view_options",
    "watch",
    "with_mode",
    "zero_ablation",
    "__version__",
]
