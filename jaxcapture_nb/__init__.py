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

from jaxcapture_nb._backends.flax_internals import FlaxCompatibilityError
from jaxcapture_nb._capture import Capture, capture, capture_grads
from jaxcapture_nb._compare import Comparison, SiteComparison, compare_modes
from jaxcapture_nb._compare_runs import compare_runs
from jaxcapture_nb._modes import ModeError, ModuleOptions, ViewOption, view_options, with_mode
from jaxcapture_nb._overlay import overlay_runs
from jaxcapture_nb._patch import (
    Patch,
    Replacement,
    at,
    mean_ablation,
    patch,
    resample_ablation,
    steering,
    zero_ablation,
)
from jaxcapture_nb._records import Gradient, Record
from jaxcapture_nb._run import Run
from jaxcapture_nb._run_sources import read_run
from jaxcapture_nb._runs import open_run
from jaxcapture_nb._stream import NonFiniteError
from jaxcapture_nb._summary import Summary, summarize
from jaxcapture_nb._sweep import PatchingResult, attribution_patching, patching_sweep
from jaxcapture_nb._warnings import JaxCaptureWarning
from jaxcapture_nb._watch import Watch, watch


def __getattr__(name):
    # The widget needs ipywidgets; import it only when asked for.
    if name == "CaptureView":
        from jaxcapture_nb._widgets.capture_view import CaptureView

        return CaptureView
    if name == "LiveView":
        from jaxcapture_nb._widgets.live_view import LiveView

        return LiveView
    if name == "CompareView":
        from jaxcapture_nb._widgets.compare_view import CompareView

        return CompareView
    if name == "PatchingView":
        from jaxcapture_nb._widgets.patching_view import PatchingView

        return PatchingView
    if name in ("ModePanel", "mode_panel"):
        from jaxcapture_nb._widgets import mode_panel

        return getattr(mode_panel, name)
    raise AttributeError(f"module 'jaxcapture_nb' has no attribute {name!r}")


__version__ = "0.1.0"


def load_ipython_extension(ipython):
    """``%load_ext jaxcapture_nb``: registers ``%%capture_intermediates``."""
    from jaxcapture_nb._magics import load

    load(ipython)


def unload_ipython_extension(ipython):
    """``%unload_ext jaxcapture_nb``: removes ``%%capture_intermediates``."""
    from jaxcapture_nb._magics import unload

    unload(ipython)


__all__ = [
    "Capture",
    "CaptureView",
    "CompareView",
    "Comparison",
    "FlaxCompatibilityError",
    "Gradient",
    "JaxCaptureWarning",
    "LiveView",
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
    "attribution_patching",
    "capture",
    "capture_grads",
    "compare_modes",
    "compare_runs",
    "mean_ablation",
    "mode_panel",
    "open_run",
    "overlay_runs",
    "patch",
    "patching_sweep",
    "read_run",
    "resample_ablation",
    "steering",
    "summarize",
    "view_options",
    "watch",
    "with_mode",
    "zero_ablation",
    "__version__",
]
