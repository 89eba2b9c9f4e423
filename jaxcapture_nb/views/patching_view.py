"""PatchingView: the effect of patching each site at each position, as a heatmap (anywidget; JS in js/).

Numbers travel as binary buffers whose size depends on the number of sites,
positions and readout values, never on the model's: per result (the exact
sweep and, where given, its estimate) and site and position the patched
metric (float64), and, where the sweep kept a readout, each patched run's
readout and the clean and corrupted runs' (float64). Only text travels as
JSON: site names in model order, position labels, each result's method and
its clean and corrupted metric, and the readout's labels.

Two traits are the view's state, readable and settable from Python:
``shown`` (which result the heatmap shows: ``"exact"``, ``"attribution"``
or ``"both"`` side by side) and ``selected`` (``[site, position]`` of the
clicked cell, or ``[]``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import traitlets as t

from jaxcapture_nb.core.names import shown_name
from jaxcapture_nb.core.wire import PatchMethod
from jaxcapture_nb.views.base import FrontEndWidget
from jaxcapture_nb.views.patching_static import colour_scale, patching_html

if TYPE_CHECKING:  # the result is only read here
    from jaxcapture_nb.interventions.result import PatchingResult


def aligned(result: PatchingResult, estimate: PatchingResult | None) -> list[PatchingResult]:
    """The results a view shows: ``result``, then ``estimate`` with its rows in ``result``'s site order.

    Raises:
      ValueError: the two patched other sites or positions.
    """
    if estimate is None:
        return [result]
    if sorted(estimate.sites) != sorted(result.sites) or estimate.positions != result.positions:
        raise ValueError(
            "the estimate patched other sites or positions than the result: give attribution_patching "
            "the sites and positions that patching_sweep was given"
        )
    rows = [estimate.sites.index(site) for site in result.sites]
    readouts = None
    if estimate.readouts is not None:
        readouts = (estimate.readouts[rows], estimate.clean_readout, estimate.corrupted_readout)
    reordered = type(estimate)(
        result.sites,
        estimate.positions,
        estimate.effect[rows],
        estimate.clean,
        estimate.corrupted,
        estimate.method,
        readouts,
        estimate.readout_labels or None,
        estimate.position_labels or result.position_labels or None,
        estimate.metric_name,
    )
    return [result, reordered]


def patching_state(results: list[PatchingResult]) -> dict[str, Any]:
    """The synced traits of a view of ``results`` (one result, or one and its estimate).

    Example:
      >>> from jaxcapture_nb.interventions.sweep import PatchingResult
      >>> result = PatchingResult(["b", "a"], [0, 1], [[1.0, 2.0], [0.0, 3.0]], 2.0, 0.0, "exact")
      >>> state = patching_state([result])
      >>> state["_sites"], state["_positions"], np.frombuffer(state["_effects"]).tolist()
      (['b', 'a'], ['0', '1'], [1.0, 2.0, 0.0, 3.0])
    """
    first = results[0]
    with_readout = next((r for r in results if r.readouts is not None), None)
    state: dict[str, Any] = {
        "_sites": [shown_name(site) for site in first.sites],
        "_positions": ["whole"] if first.positions is None else [str(p) for p in first.positions],
        "_position_labels": next((r.position_labels for r in results if r.position_labels), []),
        "_methods": [
            PatchMethod(method=r.method, metric=r.metric_name, clean=r.clean, corrupted=r.corrupted)
            for r in results
        ],
        "_effects": np.stack([r.effect for r in results]).astype(np.float64).tobytes(),
        "_scale": colour_scale(results),
        "_readout_labels": [],
        "_readouts": b"",
        "_readout_ends": b"",
    }
    if with_readout is not None:
        state["_readout_labels"] = [shown_name(label) for label in with_readout.readout_labels]
        state["_readouts"] = np.asarray(with_readout.readouts, np.float64).tobytes()
        ends = np.stack([with_readout.clean_readout, with_readout.corrupted_readout])
        state["_readout_ends"] = ends.astype(np.float64).tobytes()
    return state


class PatchingView(FrontEndWidget, entry="patching_view.js", css="patching_view.css"):
    """A patching sweep as a heatmap of the recovery by site (rows, in model order) and position (columns).

    Hovering a cell reads out its site, position, recovery and metric;
    clicking it shows the patched run's metric beside the clean and the
    corrupted run's, and, where the sweep kept a ``readout``, the patched
    run's readout beside theirs. Given an ``estimate``
    (:func:`~jaxcapture_nb.attribution_patching`'s), buttons switch between
    the exact sweep, the estimate, and both side by side. Saved notebooks
    keep the text tables and a script-free HTML heatmap.

    Args:
      result: a :class:`~jaxcapture_nb.PatchingResult`.
      estimate: another result over the same sites and positions, shown beside it.

    Example:
      >>> from jaxcapture_nb.interventions.sweep import PatchingResult
      >>> exact = PatchingResult(["a", "b"], [0, 1], [[1.0, 2.0], [0.0, 3.0]], 2.0, 0.0, "exact")
      >>> view = PatchingView(exact)
      >>> view.shown, view.selected, repr(view) == exact.table()
      ('exact', [], True)
    """

    _sites = t.List(t.Unicode()).tag(sync=True)  # shown names, model order
    _positions = t.List(t.Unicode()).tag(sync=True)  # column labels; ["whole"] where patched whole
    _position_labels = t.List(t.Unicode()).tag(sync=True)  # a label per position (its token), or []
    _methods = t.List(t.Dict()).tag(sync=True)  # per result: method, clean, corrupted (metrics)
    _effects = t.Bytes().tag(sync=True)  # float64 [results, sites, positions]: the patched metric
    _scale = t.Float(1.0).tag(
        sync=True
    )  # the recovery at either end of the colour map, as the saved picture has it
    _readout_labels = t.List(t.Unicode()).tag(sync=True)  # [] without a readout
    _readouts = t.Bytes().tag(sync=True)  # float64 [sites, positions, readout values]
    _readout_ends = t.Bytes().tag(sync=True)  # float64 [2, readout values]: clean, corrupted
    shown = t.Enum(["exact", "attribution", "both"], "exact").tag(sync=True)
    selected = t.List(t.Int()).tag(sync=True)

    def __init__(self, result: PatchingResult, estimate: PatchingResult | None = None, **kwargs: Any):
        self._results = aligned(result, estimate)
        kwargs.setdefault("shown", result.method if estimate is None else "both")
        super().__init__(**patching_state(self._results), **kwargs)

    @t.validate("shown")
    def _shown_given(self, proposal: t.Bunch) -> str:
        methods = [r.method for r in self._results]
        if proposal.value != "both" and proposal.value not in methods:
            raise t.TraitError(
                f"this view shows {' and '.join(methods)}; shown={proposal.value!r} is not one"
            )
        if proposal.value == "both" and len(methods) < 2:
            raise t.TraitError("shown='both' needs an estimate: PatchingView(result, estimate)")
        return proposal.value

    def __repr__(self) -> str:
        return "\n\n".join(r.table() for r in self._results)

    def _saved_view(self) -> tuple[str, str]:
        return repr(self), patching_html(self._results)
