"""Comparison: sites side by side across modes or runs, and how one site's values are compared.

Each site's values in every mode are binned on one shared range, so their
histograms can be compared bin by bin; the shift of each mode from the first
is the earth mover's distance between them, in pooled standard deviations.
:func:`~jaxcapture_nb.compare_modes` and :func:`~jaxcapture_nb.compare_runs`
both return a :class:`Comparison`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcapture_nb.capturing.capture import Capture
from jaxcapture_nb.core.display import view_of
from jaxcapture_nb.core.names import shown_name
from jaxcapture_nb.stats.bins import edges as _edges
from jaxcapture_nb.stats.float32 import magnitude_bits, scale_exponent, scaled
from jaxcapture_nb.stats.records import Record, flat_stats, site_label
from jaxcapture_nb.stats.schema import compare_columns, number_text, shift_note, type_name
from jaxcapture_nb.stats.summary import as_real, bin_counts, stats_dtype

# How every view marks a site whose value no mode changes.
SAME_TEXT = "same in all {noun}s"


@dataclasses.dataclass
class SiteComparison:
    """One site seen in every mode.

    Attributes:
      site: the dotted path and name, e.g. ``"bn.__call__"``. A site that
        gives several values in one run keeps the plain name for the first,
        and the k-th after it is ``"bn.__call__[k]"``, as in
        :func:`~jaxcapture_nb.watch` and Flax's tuple of a site's values.
        Filters and ``include`` patterns match this.
      label: how views name the site, e.g. ``"bn (output)"``, and
        ``"bn (output[1])"`` for its second value (see
        :func:`~jaxcapture_nb.stats.records.site_label`).
      var_type: the record type's name, e.g. ``"Intermediate"``.
      shapes: the value's shape in each mode: None where the mode did not
        reach the site, a text saying why where the shape is not known (a
        run read from a log keeps no shapes).
      stats: per mode, the statistics named by
        :func:`~jaxcapture_nb.stats.schema.compare_columns`, mean and std first
        (NaN where the mode did not reach the site or the value has no statistics).
      lo: lower edge of the shared histogram range.
      hi: upper edge of the shared histogram range.
      hists: int32 ``[modes, bins]``: each mode's counts on the shared range.
      shifts: per mode, the shift score against the first mode (0 for the
        first mode itself, NaN where it cannot be computed).
      values_equal: whether every mode gave the site the same value, element
        for element (NaN equal to NaN in the same place); None where the
        values were not kept (runs keep histograms, not values).
    """

    site: str
    label: str
    var_type: str
    shapes: list[tuple[int, ...] | str | None]
    stats: np.ndarray
    lo: float
    hi: float
    hists: np.ndarray
    shifts: np.ndarray
    values_equal: bool | None = None

    @property
    def shift(self) -> float:
        """The largest shift over the modes (NaN if none could be computed)."""
        finite = self.shifts[~np.isnan(self.shifts)]
        return float(finite.max()) if finite.size else math.nan

    @property
    def same(self) -> bool:
        """Whether the site is the same in all modes: every mode reached it with the same value.

        Where the values were kept (:func:`compare_modes`) they are compared
        element for element; elsewhere every mode must have the same shape,
        statistics and histogram.
        """
        if len(self.shapes) < 2 or any(shape is None for shape in self.shapes):
            return False
        if self.values_equal is not None:
            return self.values_equal
        if (
            np.isnan(self.stats).all()
            or len({shape if isinstance(shape, str) else tuple(shape) for shape in self.shapes}) > 1
        ):
            return False  # nothing to compare, or values of different shapes
        first = self.stats[:1]
        return bool(
            np.array_equal(self.stats, np.broadcast_to(first, self.stats.shape), equal_nan=True)
            and (self.hists == self.hists[:1]).all()
        )


class Comparison:
    """The result of :func:`compare_modes`; displays as a widget in a notebook.

    Attributes:
      modes: the mode labels, in the order given (the first is the reference).
      settings: what each mode set: a preset name, a dict of options (for
        Linen, the call arguments), or a view of the model (an NNX module).
      call_arguments: the keyword arguments each mode added to the model's
        call, by label (for Linen, those of ``apply``).
      note: what the comparison needs said beside its numbers ("" when
        nothing): which call argument the presets passed, or why every site
        is the same in all modes and how to pass the argument that switches
        the model's mode.
      sites: one :class:`SiteComparison` per site, largest shift first.
      captures: the :class:`~jaxcapture_nb.Capture` of each mode's run, by label.
      outputs: what each mode's call returned, by label.
      bins: histogram bins.
      noun: what the comparison compares, as its texts name it: ``"mode"``,
        or ``"run"`` for :func:`~jaxcapture_nb.compare_runs`.
    """

    def __init__(
        self,
        modes: list[str],
        settings: dict[str, Any],
        sites: list[SiteComparison],
        captures: dict[str, Capture],
        outputs: dict[str, Any],
        bins: int,
        *,
        call_arguments: dict[str, dict[str, Any]] | None = None,
        note: str = "",
        noun: str = "mode",
    ):
        self.modes = modes
        self.settings = settings
        self.sites = sites
        self.captures = captures
        self.outputs = outputs
        self.bins = bins
        self.call_arguments = call_arguments if call_arguments is not None else {m: {} for m in modes}
        self.note = note
        self.noun = noun

    @property
    def same_text(self) -> str:
        """What marks a site the same everywhere: ``"same in all modes"`` (or runs)."""
        return SAME_TEXT.format(noun=self.noun)

    def table(self) -> str:
        """A deterministic plain-text table: per site, shift and per-mode mean and std.

        A site the same in all modes (see :attr:`SiteComparison.same`) ends
        its line with ``(same in all modes)`` (or runs); the :attr:`note`, when there
        is one, comes under the line on the shift.
        """
        header = ["site", "shift"] + [
            f"{column} [{shown_name(mode)}]" for mode in self.modes for column in ("mean", "std")
        ]
        header.append("")  # the mark of sites the same in all modes
        rows = [header]
        mean, std = (compare_columns().index(k) for k in ("mean", "std"))
        for s in self.sites:
            cells = [shown_name(s.site), number_text(s.shift)]
            for m in range(len(self.modes)):
                cells += [number_text(s.stats[m, mean]), number_text(s.stats[m, std])]
            cells.append(f"({self.same_text})" if s.same else "")
            rows.append(cells)
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
        if not self.sites:
            lines.append("(no site was recorded; check include=)")
        return "\n".join([shift_note(self.noun), *([shown_name(self.note)] if self.note else []), *lines])

    def __repr__(self) -> str:
        return self.table()

    def show(self):
        """The interactive :class:`~jaxcapture_nb.CompareView` widget."""
        return view_of(self)

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict, dict] | None:
        return self.show()._repr_mimebundle_(**kwargs)


@functools.partial(jax.jit, static_argnames="bins")
def _shared_histograms(values: tuple[jax.Array, ...], bins: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Counts of each array's finite values on one range spanning them all."""
    # Not flattened: merging a sharded axis with others would gather the array.
    # Compared in the summaries' float type: float64 if any value is 64-bit
    # (int64 beyond 2**53 then rounds to float64), else float32.
    common = np.result_type(*(stats_dtype(v.dtype) for v in values))
    floats = [as_real(v)[0].astype(common) for v in values]
    # ``initial``: an empty value (a shape with a 0) has no finite value, as one of only NaNs.
    lo = jnp.min(
        jnp.stack([jnp.min(jnp.where(jnp.isfinite(v), v, jnp.inf), initial=jnp.inf) for v in floats])
    )
    hi = jnp.max(
        jnp.stack([jnp.max(jnp.where(jnp.isfinite(v), v, -jnp.inf), initial=-jnp.inf) for v in floats])
    )
    lo, hi = _edges(lo, hi)
    # Binned in units of 2**e, so that a range as wide as the float type's own
    # (masked logits beside large values) does not overflow.
    e = scale_exponent(jnp.maximum(magnitude_bits(lo), magnitude_bits(hi)))
    lo_scaled = scaled(lo, e)
    scale = bins / (scaled(hi, e) - lo_scaled)
    hists = []
    for v in floats:
        index = jnp.clip(jnp.floor((scaled(v, e) - lo_scaled) * scale), 0, bins - 1).astype(jnp.int32)
        # Non-finite values go to one extra slot, left out of the counts.
        hists.append(bin_counts(jnp.where(jnp.isfinite(v), index, bins), bins + 1)[:bins])
    return jnp.stack(hists), lo, hi


def _all_equal(values: tuple[jax.Array, ...]) -> jax.Array:
    """Whether every array equals the first, element for element; NaN equals NaN in the same place."""
    first, rest = values[0], values[1:]
    if not rest:
        return jnp.asarray(True)
    if any(v.shape != first.shape or v.dtype != first.dtype for v in rest):
        return jnp.asarray(False)
    return jnp.stack([jnp.array_equal(first, v, equal_nan=True) for v in rest]).all()


@functools.partial(jax.jit, static_argnames="bins")
def _site_arrays(values: tuple[jax.Array, ...], bins: int) -> tuple[jax.Array, ...]:
    """A site's shared histograms and range, and whether its values are equal: one dispatch."""
    return (*_shared_histograms(values, bins), _all_equal(values))


def _earth_movers(hists: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Wasserstein-1 distance of each histogram to the first, on their shared bins."""
    totals = hists.sum(axis=1, keepdims=True).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        cdf = np.cumsum(hists, axis=1) / totals
    width = (hi - lo) / hists.shape[1]
    return np.abs(cdf - cdf[:1]).sum(axis=1) * width


def shift_scores(hists: np.ndarray, lo: float, hi: float, stds: np.ndarray, means: np.ndarray) -> np.ndarray:
    """Each mode's earth mover's distance to the first, in pooled standard deviations.

    A value with no spread in either mode (a scalar, such as a loss or a
    sum a method returns, or a constant) has no standard deviation to
    measure in; its shift is then relative to the pooled magnitude of the
    two means, so a scalar that moves from 10 to 11 shifts by less than 0.1.

    Example:
      >>> hists = np.array([[1, 0, 0, 0], [0, 0, 0, 1]])
      >>> shift_scores(hists, 10.0, 11.0, np.zeros(2), np.array([10.0, 11.0])).round(3).tolist()
      [0.0, 0.071]
    """
    distances = _earth_movers(hists, lo, hi)
    # hypot: the squares of float64 statistics near 1e300 would overflow.
    pooled = np.hypot(stds, stds[0]) / np.sqrt(2)
    magnitude = np.hypot(means, means[0]) / np.sqrt(2)
    scale = np.where(pooled > 0, pooled, magnitude)
    with np.errstate(invalid="ignore", divide="ignore"):
        scores = np.where(scale > 0, distances / scale, 0.0)
    scores[0] = 0.0
    return scores


def _keyed(records: Sequence[Record]) -> dict[tuple[Any, ...], Record]:
    return {(r.path, r.name, type_name(r.var_type), r.call_index): r for r in records}


def _indexed(name: str, call: int) -> str:
    """The name of a site's ``call``-th value in a run, as :func:`~jaxcapture_nb.watch` names it in a step.

    Example:
      >>> _indexed("__call__", 0), _indexed("__call__", 1), _indexed("out[0]", 2)
      ('__call__', '__call__[1]', 'out[0][2]')
    """
    return f"{name}[{call}]" if call else name


def _site_name(key: tuple[Any, ...]) -> str:
    path, name, _, call = key
    return ".".join(str(p) for p in (*path, _indexed(name, call)))


def _site_label(key: tuple[Any, ...]) -> str:
    path, name, _, call = key
    return site_label(path, _indexed(name, call))


def _has_stats(record: Record | None) -> bool:
    return record is not None and record.summary is not None and record.summary.reason is None


def _stats_row(record: Record | None) -> list[float]:
    columns = compare_columns()
    if not _has_stats(record):
        return [math.nan] * len(columns)
    stats = flat_stats(record.summary)
    return [float(stats[c]) for c in columns]


def _compare_site(key: tuple[Any, ...], found: list[Record | None], shared: Any, bins: int) -> SiteComparison:
    """One site from its records per mode and its fetched :func:`_site_arrays` (None without any)."""
    stats = np.array([_stats_row(r) for r in found])
    empty = (np.zeros((0, bins), np.int32), 0.0, 0.0, False)
    hists, lo, hi, equal = shared if shared is not None else empty
    lo, hi = float(lo), float(hi)
    usable = [i for i, r in enumerate(found) if _has_stats(r)]
    if len(usable) == len(found):
        mean, std = (compare_columns().index(k) for k in ("mean", "std"))
        shifts = shift_scores(np.asarray(hists), lo, hi, stats[:, std], stats[:, mean])
    else:
        shifts = np.full(len(found), math.nan)
        full = np.zeros((len(found), bins), np.int32)
        full[usable] = hists
        hists = full
    return SiteComparison(
        site=_site_name(key),
        label=_site_label(key),
        var_type=key[2],
        shapes=[r.shape if r is not None else None for r in found],
        stats=stats,
        lo=lo,
        hi=hi,
        hists=np.asarray(hists, np.int32),
        shifts=shifts,
        # Values without statistics (a string a method returns) are not compared.
        values_equal=len(usable) == len(found) and bool(equal),
    )


def compare_captures(modes: list[str], captures: dict[str, Capture], bins: int) -> list[SiteComparison]:
    per_mode = [_keyed(captures[m].records) for m in modes]
    keys: dict[tuple[Any, ...], None] = {}
    for keyed in per_mode:
        keys.update(dict.fromkeys(keyed))
    found = [[keyed.get(key) for keyed in per_mode] for key in keys]
    # Every site's histograms are dispatched first and fetched in one transfer.
    shared = jax.device_get(
        [
            _site_arrays(tuple(r.value for r in records if _has_stats(r)), bins)
            if any(map(_has_stats, records))
            else None
            for records in found
        ]
    )
    sites = [
        _compare_site(key, records, site_shared, bins)
        for key, records, site_shared in zip(keys, found, shared, strict=True)
    ]
    # Largest shift first; sites that cannot be scored (missing in a mode) last.
    return sorted(sites, key=lambda s: (math.isnan(s.shift), -s.shift if not math.isnan(s.shift) else 0.0))
