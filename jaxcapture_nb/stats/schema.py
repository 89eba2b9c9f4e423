"""What every view shows: statistics, their names and formats, bands and colours, in one place.

The text tables, the script-free HTML saved with notebooks, ``plot()`` and
the widgets all read this module, and each widget sends :func:`as_json` to
its front end once, so a new statistic is one entry in :data:`STATS`,
computed from the others on the host (``derive``) or from the values on
the device (``reduce``, see :mod:`jaxcapture_nb.stats.reduced`), added with
:func:`register_statistic`. Views read the module's names when they draw
(``schema.STATS``, not a copy taken at import), so a statistic added at run
time reaches them too.

Example:
  >>> [s.key for s in table_stats()]
  ['mean', 'std', 'min', 'max', 'zero_pct']
  >>> capture_columns()[-2:], compare_columns()[-1]
  (('lo', 'hi'), 'nan')
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any


def number_text(x: float) -> str:
    """A number rounded for display: 4 significant digits, or scientific.

    Example:
      >>> number_text(3.14159), number_text(123456.0), number_text(float("nan"))
      ('3.142', '1.235e+05', 'nan')
    """
    if math.isnan(x):
        return "nan"
    if x == 0:
        return "0"
    if 1e-3 <= abs(x) < 1e5:
        return f"{x:.4g}"
    return f"{x:.3e}"


# How each kind of statistic is written in text: keyed by Stat.format.
FORMATS: dict[str, Callable[[float], str]] = {
    "number": number_text,
    "percent": lambda x: f"{x:.1f}",
    "count": lambda x: str(int(x)),
}


@dataclasses.dataclass(frozen=True)
class Stat:
    """One statistic of a site's values.

    Attributes:
      key: its name in :func:`~jaxcapture_nb.stats.records.flat_stats` and in the
        column lists the widgets receive, e.g. ``"zero_pct"``.
      label: how the widgets name it, e.g. ``"zeros %"``.
      header: how the text and HTML tables name it, e.g. ``"zeros%"``.
      format: a key of :data:`FORMATS`: ``"number"``, ``"percent"`` or ``"count"``.
      column: whether the tables give it a column of its own (the NaN/Inf
        counts share one, the range edges have none).
      compact: whether views short of room show it too: CompareView's rows,
        one group of columns per mode (its detail table shows them all).
      derive: computes it from the other statistics of the site (a dict of
        key to value); None for those a summary holds.
      reduce: computes it on the device, as the mean over a value's finite
        elements of what it gives for each element: ``lambda v: 100.0 *
        (jnp.abs(v) > 1)`` is the percentage of them above 1 in magnitude.
        A summary holds it; a mean of slices pools by their counts, as the
        mean does. None for the others. Add it before a watched training
        step is first compiled: one compiled before does not compute it.
    """

    key: str
    label: str
    header: str
    format: str = "number"
    column: bool = False
    compact: bool = False
    derive: Callable[[Mapping[str, float]], float] | None = None
    reduce: Callable[[Any], Any] | None = None

    def text(self, stats: Mapping[str, float]) -> str:
        """Its value among ``stats``, written as the tables write it."""
        return FORMATS[self.format](stats[self.key])


# Every statistic of a site, in the order of the widgets' statistics buffers.
STATS: tuple[Stat, ...] = (
    Stat("mean", "mean", "mean", column=True, compact=True),
    Stat("std", "std", "std", column=True, compact=True),
    Stat("min", "min", "min", column=True),
    Stat("max", "max", "max", column=True),
    Stat("zero_pct", "zeros %", "zeros%", "percent", column=True, compact=True),
    Stat("nan", "NaN", "nan", "count"),
    Stat("posinf", "+Inf", "+inf", "count"),
    Stat("neginf", "\u2212Inf", "-inf", "count"),
    Stat("count", "count", "count", "count"),
    Stat("lo", "range low", "lo"),
    Stat("hi", "range high", "hi"),
)
# The counts of values outside every histogram, which views flag.
NONFINITE_KEYS = ("nan", "posinf", "neginf")
# The tables' one column for them: "NaN count/Inf count", or "-" when both are 0.
NONFINITE_HEADER = "nan/inf"
# The statistics every live row holds, from one step's summary; the derived
# statistics and the percentiles follow them (live_columns).
LIVE_STAT_KEYS = ("mean", "std", "min", "max", "zero_pct", "nan", "posinf", "neginf", "lo", "hi")

# TensorBoard's distribution bands: the percentiles a live row holds, and the
# bands drawn between them, (low, high, opacity), widest and faintest first.
PERCENTILES = (0, 7, 16, 31, 50, 69, 84, 93, 100)
BANDS = ((7, 93, 0.16), (16, 84, 0.24), (31, 69, 0.34))
MEDIAN = 50

# Colours: the widgets set them as --jcnb-series, --jcnb-band and
# --jcnb-median (js/schema.js), so saved pictures and widgets draw alike.
SERIES_COLOUR = "#4c8ed9"
BAND_COLOUR = "#f58518"
MEDIAN_COLOUR = "#e4403c"
# One colour per mode of a comparison, and per run of a view of several
# runs, in order: Tableau's hues, darkened or lightened until each stands
# out at least 3.5:1 against white and against the dark themes' #111 and
# #1e1e1e (WCAG asks 3:1 of lines and marks), so one palette serves both.
MODE_COLOURS = ("#3b75c4", "#c96a00", "#3d8c35", "#d8433d", "#178787", "#a15cc0", "#9d6b4d")

# Heatmap colour indices: 0..COLOURS-1 for finite values on the clipped
# scale, then one each for NaN, +Inf and -Inf, drawn in these colours.
COLOURS = 253
NAN_INDEX, POSINF_INDEX, NEGINF_INDEX = 253, 254, 255
NONFINITE_RGB = {"nan": (255, 0, 255), "posinf": (255, 127, 14), "neginf": (23, 190, 207)}

# How every view of a comparison explains its shift column.
# "{noun}" is what the comparison compares: "mode" (compare_modes) or "run" (compare_runs).
SHIFT_NOTE = "shift: earth mover's distance to the first {noun}'s histogram, in pooled standard deviations"


def shift_note(noun: str = "mode") -> str:
    """The line that says what a comparison's shift measures.

    Example:
      >>> shift_note("run")
      "shift: earth mover's distance to the first run's histogram, in pooled standard deviations"
    """
    return SHIFT_NOTE.format(noun=noun)


# The statistics this package computes itself; the ones register_statistic adds follow them.
BUILT_IN = tuple(s.key for s in STATS)


def register_statistic(
    key: str,
    label: str,
    *,
    header: str | None = None,
    format: str = "number",
    derive: Callable[[Mapping[str, float]], float] | None = None,
    reduce: Callable[[Any], Any] | None = None,
    compact: bool = False,
) -> Stat:
    """Adds a statistic to every table, widget, saved picture and TensorBoard log.

    Give exactly one way to compute it: ``derive`` from a site's other
    statistics on the host, or ``reduce`` on the device, as the mean over a
    value's finite elements of what it gives for each element. Views read the
    statistics when they draw, so views made afterwards show it; register a
    reduced statistic before a watched training step is first compiled,
    since a step compiled before does not compute it.

    Example:
      >>> import jax.numpy as jnp
      >>> from jaxcapture_nb import register_statistic, remove_statistic, summarize
      >>> big = register_statistic("big_pct", "|x| > 1 %", format="percent", reduce=lambda v: 100.0 * (jnp.abs(v) > 1))
      >>> float(summarize(jnp.array([0.5, -2.0, 3.0, jnp.nan])).statistic("big_pct"))
      66.66666412353516
      >>> remove_statistic("big_pct")

    Args:
      key: its name in columns, exports and logs: letters, digits and ``_``.
      label: how the widgets name it.
      header: how the text and HTML tables name it; by default ``key``.
      format: ``"number"``, ``"percent"`` or ``"count"``.
      derive: computes it from a dict of the site's other statistics.
      reduce: computes it per element on the device.
      compact: whether views short of room (CompareView's rows) show it too.

    Returns:
      The :class:`Stat` added.

    Raises:
      ValueError: a key already used or not a name, a format unknown, or
        not exactly one of ``derive`` and ``reduce``.
    """
    global STATS
    if not (isinstance(key, str) and key.isidentifier()):
        raise ValueError(f"register_statistic(): key must be a name of letters, digits and _, got {key!r}")
    if any(s.key == key for s in STATS):
        raise ValueError(
            f"register_statistic(): a statistic {key!r} is registered already; remove_statistic({key!r}) first"
        )
    if format not in FORMATS:
        raise ValueError(f"register_statistic(): format must be one of {', '.join(FORMATS)}, got {format!r}")
    if (derive is None) == (reduce is None):
        raise ValueError(
            f"register_statistic({key!r}): give exactly one of derive= (from the other statistics, on the host) "
            "and reduce= (per element, on the device)"
        )
    added = Stat(
        key, label, header or key, format, column=True, compact=compact, derive=derive, reduce=reduce
    )
    STATS = (*STATS, added)
    return added


def remove_statistic(key: str) -> None:
    """Removes a statistic :func:`register_statistic` added; views made afterwards no longer show it.

    Raises:
      ValueError: ``key`` is one of this package's own statistics.
      KeyError: no statistic ``key`` is registered.
    """
    global STATS
    if key in BUILT_IN:
        raise ValueError(
            f"remove_statistic(): {key!r} is one of the package's own statistics, which every view needs"
        )
    if not any(s.key == key for s in STATS):
        raise KeyError(f"remove_statistic(): no statistic {key!r} is registered")
    STATS = tuple(s for s in STATS if s.key != key)


def stat(key: str) -> Stat:
    """The :class:`Stat` named ``key``."""
    return next(s for s in STATS if s.key == key)


def table_stats() -> tuple[Stat, ...]:
    """The statistics the tables give a column each, in order."""
    return tuple(s for s in STATS if s.column)


def capture_columns() -> tuple[str, ...]:
    """The columns of CaptureView's statistics buffer: every statistic."""
    return tuple(s.key for s in STATS)


def compare_columns() -> tuple[str, ...]:
    """The statistics a comparison keeps per mode: the table columns, then the NaN count."""
    return (*(s.key for s in table_stats()), "nan")


def reduced_stats() -> tuple[Stat, ...]:
    """The statistics computed on the device beside the pass's (those with a ``reduce``), in order."""
    return tuple(s for s in STATS if s.reduce is not None)


def live_columns() -> tuple[str, ...]:
    """The columns of a live row: :data:`LIVE_STAT_KEYS`, the reduced and the derived statistics, then ``p0`` .. ``p100``.

    Example:
      >>> live_columns()[-10:]
      ('hi', 'p0', 'p7', 'p16', 'p31', 'p50', 'p69', 'p84', 'p93', 'p100')
    """
    derived = (s.key for s in STATS if s.derive is not None)
    reduced = (s.key for s in reduced_stats())
    return (*LIVE_STAT_KEYS, *reduced, *derived, *(f"p{q}" for q in PERCENTILES))


def with_derived(stats: dict[str, float]) -> dict[str, float]:
    """``stats`` with every derived statistic of :data:`STATS` added (NaN where one cannot be had)."""
    for s in STATS:
        if s.derive is not None:
            try:
                stats[s.key] = float(s.derive(stats))
            except (KeyError, ValueError, ZeroDivisionError):
                stats[s.key] = math.nan
    return stats


# What views call a value Flax's ``perturb`` marks and its gradient:
# ``Module.perturb`` is how Flax records a gradient, so the value is an
# activation and its gradient a gradient, whatever the Variable types' names.
RECORD_KINDS = {"Perturbation": "activation", "Gradient": "gradient"}


def kind_name(var_type: Any) -> str:
    """How views name a record's kind: an activation or its gradient in words, any other type as :func:`type_name`.

    Example:
      >>> from flax import nnx
      >>> kind_name(nnx.Perturbation), kind_name(nnx.Intermediate)
      ('activation', 'Intermediate')
    """
    name = type_name(var_type)
    return RECORD_KINDS.get(name, name)


def type_name(var_type: Any) -> str:
    """How views name a record type: a collection name as it is, a Variable type by its class name.

    Example:
      >>> from flax import nnx
      >>> type_name(nnx.Intermediate), type_name("intermediates")
      ('Intermediate', 'intermediates')
    """
    return var_type if isinstance(var_type, str) else getattr(var_type, "__name__", str(var_type))


def as_json() -> dict[str, Any]:
    """Everything above that a front end draws with, as JSON: sent to each widget once.

    Example:
      >>> schema = as_json()
      >>> schema["stats"][4], schema["bands"][0], schema["nonfinite"][0]["index"]
      ({'key': 'zero_pct', 'label': 'zeros %', 'header': 'zeros%', 'format': 'percent', 'column': True, 'compact': True}, [7, 93, 0.16], 253)
    """
    return {
        "stats": [
            {
                "key": s.key,
                "label": s.label,
                "header": s.header,
                "format": s.format,
                "column": s.column,
                "compact": s.compact,
            }
            for s in STATS
        ],
        "nonfinite": [
            {"key": k, "label": stat(k).label, "index": i, "rgb": list(NONFINITE_RGB[k])}
            for k, i in zip(NONFINITE_KEYS, (NAN_INDEX, POSINF_INDEX, NEGINF_INDEX), strict=True)
        ],
        "nonfinite_label": "NaN/Inf",
        "finite_colours": COLOURS,
        "percentiles": list(PERCENTILES),
        "bands": [list(b) for b in BANDS],
        "median": MEDIAN,
        "colours": {"series": SERIES_COLOUR, "band": BAND_COLOUR, "median": MEDIAN_COLOUR},
        "mode_colours": list(MODE_COLOURS),
        "run_colours": list(MODE_COLOURS),
        "shift_note": SHIFT_NOTE,
    }
