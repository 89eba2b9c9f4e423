"""compare_modes(): the same inputs through several modes of a model, site by site.

Each mode's run is captured (every sow and every submodule's output), the
model's state is put back after every run, and each site's values from all
modes are binned on one shared range, on the device, so their histograms can
be overlaid and compared. The shift score of a site is the earth mover's
(Wasserstein-1) distance between its histogram in a mode and in the first
mode, in units of their pooled standard deviation: scale-free, zero when the
distributions match, and sensitive to what a mean difference misses (Dropout
keeps the mean and moves mass to zero).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import linen as nn
from flax import nnx

from jaxcapture_nb.capturing.capture import Capture, capture
from jaxcapture_nb.core.display import view_of
from jaxcapture_nb.core.names import quoted, shown_name
from jaxcapture_nb.modes.call_modes import ModePlan, plan_modes, preset_note, unswitched_note
from jaxcapture_nb.modes.modes import Mode, ModeError, mode_label
from jaxcapture_nb.stats.bins import edges as _edges
from jaxcapture_nb.stats.float32 import magnitude_bits, scale_exponent, scaled
from jaxcapture_nb.stats.records import Record, flat_stats, site_label
from jaxcapture_nb.stats.schema import compare_columns, number_text, shift_note, type_name
from jaxcapture_nb.stats.summary import DEFAULT_BINS, as_real, bin_counts, stats_dtype

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


def _compare_captures(modes: list[str], captures: dict[str, Capture], bins: int) -> list[SiteComparison]:
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


def _labelled(modes: Sequence[Mode] | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(modes, Mapping):
        return dict(modes)
    if isinstance(modes, str):
        raise TypeError(f"modes takes a sequence of modes, e.g. ('train', 'eval'), got the string {modes!r}")
    for mode in modes:
        if isinstance(mode, nnx.Module):
            raise ModeError(
                "a view given as a mode needs a label: pass modes as a dict, e.g. "
                "modes={'as is': {}, 'view': view}"
            )
        if not isinstance(mode, (str, Mapping)):
            raise ModeError(
                "a mode is 'train', 'eval' or a dict of view options and call arguments, "
                f"got {quoted(mode)} ({type(mode).__name__})"
            )
    labelled = {mode_label(m): m for m in modes}
    if len(labelled) != len(modes):
        raise ValueError(f"modes names a mode twice: {[mode_label(m) for m in modes]}; give each mode once")
    return labelled


def compare_modes(
    model: Any,
    *args: Any,
    modes: Sequence[Mode] | Mapping[str, Any] = ("train", "eval"),
    call: Callable[[Any], Any] | None = None,
    update_stats: bool = False,
    include: Any = None,
    bins: int = DEFAULT_BINS,
    **kwargs: Any,
) -> Comparison:
    """Runs the same inputs through each mode of a model and compares every site.

    For an NNX model each mode is a view (see :func:`with_mode`) that shares
    the model's weights; each run is captured with ``methods=True``, so every
    submodule's output is a site as well as every sowed value. The model's
    state (BatchNorm statistics, RNG counters) is put back before each mode and
    at the end, unless ``update_stats=True``; when a run raises it is always
    put back, so a failed comparison leaves the model as it was.

    An NNX model may also switch modes with an argument of its call
    (``model(x, training=True)``), which wins over what a view sets when the
    model passes it down (``self.dropout(h, deterministic=not training)``).
    In a mode dict, a name that a submodule offers as a view option sets that
    option, and a name that ``__call__`` takes as a keyword is passed to the
    call; a name that is both (``deterministic``) does both. So
    ``modes={"train": {"training": True}, "eval": {"training": False}}``
    passes ``training=`` to each run. The presets pass the model's mode
    switches as well: ``training``, ``train``, ``is_training`` (True in
    ``"train"``), and ``deterministic``, ``use_running_average``, ``eval``,
    ``evaluation`` (True in ``"eval"``), where ``__call__`` takes one with a
    bool default or annotation, and :attr:`Comparison.note` says what they
    passed. A switch the inputs already give, or any switch when ``call=``
    runs the model, is left as it is; if every site is then the same in all
    modes, the note says which argument to pass.

    For a Linen module, modes are call arguments: pass ``modes`` as a dict of
    label to keyword arguments of ``apply``, e.g.
    ``{"train": {"train": True, "mutable": ["batch_stats"]}, "eval": {"train": False}}``,
    and the variables as the first positional argument.

    Args:
      model: an NNX module, or a Linen module.
      *args: the inputs (for Linen: ``variables`` first, then the inputs).
      modes: presets (``"train"``, ``"eval"``) or dicts of view options and
        call arguments, or a dict of label to mode, where a mode may also be
        a view of the model made elsewhere (``{"as is": {}, "panel":
        panel.model}``); two or more. The first is the reference the shift
        scores are measured against.
      call: ``call(view)`` runs the model instead of ``view(*args, **kwargs)``
        (e.g. ``lambda m: m.encode(x)``); NNX only. Modes then set view
        options only.
      update_stats: keep what the runs changed in the model's state, run after
        run, instead of putting it back.
      include: as for :func:`~jaxcapture_nb.capture`: a regex (or callable)
        on the dotted site path selecting the sites to compare.
      bins: histogram bins.
      **kwargs: keyword arguments of the call, the same in every mode.

    Returns:
      A :class:`Comparison` with its sites sorted by shift, largest first.

    Raises:
      ModeError: a mode the model cannot take: an unknown preset, a name
        that is neither a view option nor a keyword of ``__call__``, a mode
        switch given something other than True or False, a call argument
        with ``call=`` or one the inputs already give. Raised before
        anything runs.
      ValueError: fewer than two modes, or a mode given twice.
      TypeError: a Linen module with preset modes, ``call=`` or ``update_stats=``,
        or without its variables.

    Example:
      >>> import jax.numpy as jnp
      >>> from flax import nnx
      >>> model = nnx.Sequential(nnx.Linear(3, 8, rngs=nnx.Rngs(0)), nnx.Dropout(0.5, rngs=nnx.Rngs(1)))
      >>> result = compare_modes(model, jnp.ones((16, 3)))
      >>> result.modes, result.sites[0].site
      (['train', 'eval'], 'layers.1.__call__')

      A model whose call switches its mode:

      >>> class Net(nnx.Module):
      ...     def __init__(self, rngs):
      ...         self.linear, self.dropout = nnx.Linear(3, 8, rngs=rngs), nnx.Dropout(0.5, rngs=rngs)
      ...     def __call__(self, x, training: bool = False):
      ...         return self.dropout(self.linear(x), deterministic=not training)
      >>> result = compare_modes(Net(nnx.Rngs(0)), jnp.ones((16, 3)))
      >>> result.note
      'Net switches modes with its call argument training=: the presets pass training=True in train and training=False in eval'
      >>> result.call_arguments, result.sites[0].site, result.sites[0].shift > 0
      ({'train': {'training': True}, 'eval': {'training': False}}, 'dropout.__call__', True)
      >>> result = compare_modes(Net(nnx.Rngs(0)), jnp.ones((16, 3)), modes={"on": {"training": True}, "off": {}})
      >>> result.call_arguments
      {'on': {'training': True}, 'off': {}}
    """
    labelled = _labelled(modes)
    if len(labelled) < 2:
        raise ValueError(
            f"compare_modes needs two or more modes to compare, got {list(labelled)}; "
            "e.g. modes=('train', 'eval')"
        )
    if isinstance(model, nn.Module):
        if call is not None or update_stats:
            raise TypeError(
                "call= and update_stats= apply to NNX models; a Linen module is run by apply(), "
                "and its updated collections are in each run's output (pass mutable= in the mode)"
            )
        run: _NnxRunner | _LinenRunner = _LinenRunner(model, args, kwargs, labelled)
        plans: dict[str, Any] = labelled
        arguments = {label: dict(mode) for label, mode in labelled.items()}
    elif isinstance(model, nnx.Module):
        plans = plan_modes(model, labelled, args, kwargs, call_given=call is not None)
        run = _NnxRunner(model, args, kwargs, call, update_stats)
        arguments = {label: dict(plan.arguments) for label, plan in plans.items()}
    else:
        raise TypeError(
            f"compare_modes() needs a flax.nnx.Module or flax.linen.Module, got {type(model).__name__}"
        )
    captures: dict[str, Capture] = {}
    outputs: dict[str, Any] = {}
    with run as runner:
        for label, plan in plans.items():
            captures[label], outputs[label] = runner(plan, include, bins)
    sites = _compare_captures(list(labelled), captures, bins)
    note = ""
    if isinstance(model, nnx.Module):
        note = preset_note(model, plans)
        if sites and all(s.same for s in sites):
            note = unswitched_note(model, plans, args, kwargs, call is not None) or note
    return Comparison(
        list(labelled), labelled, sites, captures, outputs, bins, call_arguments=arguments, note=note
    )


class _NnxRunner:
    """Runs views of an NNX model; puts its state back before each run and at the end."""

    def __init__(
        self, model: nnx.Module, args: tuple, kwargs: dict, call: Callable | None, update_stats: bool
    ):
        self.model = model
        self.call = call or (lambda view, **arguments: view(*args, **kwargs, **arguments))
        self.update_stats = update_stats
        self.before: Any = None

    def __enter__(self) -> Callable:
        # Runs change state such as batch statistics and RNG counters, never
        # the parameters, so only the rest is copied.
        self.before = nnx.clone(nnx.state(self.model, nnx.Not(nnx.Param)))
        return self.run

    def run(self, plan: ModePlan, include: Any, bins: int) -> tuple[Capture, Any]:
        if not self.update_stats:
            nnx.update(self.model, self.before)
        with capture(plan.view, methods=True, include=include, bins=bins) as cap:
            # A plan has call arguments only without call= (plan_modes refuses them with it).
            out = self.call(plan.view, **plan.arguments)
        return cap, out

    def __exit__(self, *exc_info) -> bool:
        if not self.update_stats or exc_info[0] is not None:
            nnx.update(self.model, self.before)
        return False


class _LinenRunner:
    """Calls ``apply`` of a Linen module with each mode's arguments (Linen state is never mutated)."""

    def __init__(self, module: nn.Module, args: tuple, kwargs: dict, labelled: dict[str, Any]):
        presets = [label for label, mode in labelled.items() if not isinstance(mode, Mapping)]
        if presets:
            raise TypeError(
                "Linen modules take their modes as call arguments, not presets: pass modes as a dict, "
                "e.g. modes={'train': {'train': True}, 'eval': {'train': False}}"
            )
        if not args:
            raise TypeError("compare_modes(linen_module, variables, *inputs): the variables come first")
        if not isinstance(args[0], Mapping):
            shape = getattr(args[0], "shape", None)
            got = f"a {type(args[0]).__name__}" if shape is None else f"an array of shape {tuple(shape)}"
            raise TypeError(
                "compare_modes(linen_module, variables, *inputs): the variables are missing (the first "
                f"argument after the module is {got}, not a dict of collections). Pass what module.init() "
                "returned first: compare_modes(module, variables, x, modes=...)"
            )
        self.module = module
        self.args = args
        self.kwargs = kwargs

    def __enter__(self) -> Callable:
        return self.run

    def run(self, mode: Mapping[str, Any], include: Any, bins: int) -> tuple[Capture, Any]:
        with capture(self.module, methods=True, include=include, bins=bins) as cap:
            out = self.module.apply(*self.args, **self.kwargs, **mode)
        return cap, out

    def __exit__(self, *exc_info) -> bool:
        return False
