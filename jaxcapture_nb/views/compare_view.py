"""CompareView: a mode comparison, site by site (anywidget; JS in js/).

Numbers travel as four binary buffers whose size depends on the number of
sites, modes and bins, never on the tensors': per site and mode the
statistics (float64) and the histogram on the site's shared range (int32),
per site that range (float64), and per site and mode the shift score
(float64). Only text travels as JSON: site names, types, shapes, mode labels,
per site whether it is the same in all modes, and the comparison's note
(which call argument switches the model's mode).
How the statistics are named and written, the mode colours and the note on
the shift come from the schema every widget receives (``_schema``).
The drawing lives in js/compare_draw.js, which ModePanel's front end shares:
:func:`comparison_traits` declares the traits of both, the panel's under a
prefix, and :func:`comparison_state` gives their values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import traitlets as t

from jaxcapture_nb.stats.schema import MODE_COLOURS, compare_columns
from jaxcapture_nb.views.base import FrontEndWidget
from jaxcapture_nb.views.compare_static import comparison_html

if TYPE_CHECKING:  # the comparison is only read here: no import of the code that makes it
    from jaxcapture_nb.modes.comparison import Comparison


def _buffers(comparison: Comparison) -> dict[str, bytes]:
    """The four number buffers, C order: [sites, modes, ...] and [sites, 2]."""
    sites, modes, bins = comparison.sites, len(comparison.modes), comparison.bins
    stats = np.full((len(sites), modes, len(compare_columns())), np.nan)
    hists = np.zeros((len(sites), modes, bins), np.int32)
    ranges = np.zeros((len(sites), 2))
    shifts = np.full((len(sites), modes), np.nan)
    for i, site in enumerate(sites):
        stats[i], hists[i], shifts[i] = site.stats, site.hists, site.shifts
        ranges[i] = site.lo, site.hi
    return {
        "_stats": stats.tobytes(),
        "_hists": hists.tobytes(),
        "_ranges": ranges.tobytes(),
        "_shifts": shifts.tobytes(),
    }


def comparison_traits(prefix: str = "") -> type[t.HasTraits]:
    """A base class holding the synced traits a comparison is drawn from, each named ``prefix + name``.

    CompareView takes them as they are; ModePanel under ``"_compare"``, so
    its own traits stay apart. js/compare_draw.js reads them by the same names.

    Example:
      >>> sorted(comparison_traits("_compare").class_trait_names())[:3]
      ['_compare_bins', '_compare_colours', '_compare_hists']
    """
    traits = {
        "_modes": t.List(t.Unicode()),
        "_colours": t.List(t.Unicode(), list(MODE_COLOURS)),
        # site, label, type, shapes (per mode, None if not reached), same (in all modes)
        "_sites": t.List(t.Dict()),
        "_stat_columns": t.List(t.Unicode()),
        "_stats": t.Bytes(),  # float64 [sites, modes, stat columns]
        "_hists": t.Bytes(),  # int32 [sites, modes, bins]
        "_ranges": t.Bytes(),  # float64 [sites, 2]: lo, hi
        "_shifts": t.Bytes(),  # float64 [sites, modes]
        "_bins": t.Int(0),
        "_note": t.Unicode(""),  # Comparison.note: "" when there is nothing to say
        "_noun": t.Unicode("mode"),  # Comparison.noun: what is compared, "mode" or "run"
    }
    named: dict[str, Any] = {prefix + name: trait.tag(sync=True) for name, trait in traits.items()}
    # The columns as the schema has them when a widget is made, not at import.
    named["_columns_now"] = t.default(prefix + "_stat_columns")(lambda self: list(compare_columns()))
    return type("ComparisonTraits", (t.HasTraits,), named)


def comparison_state(comparison: Comparison | None, prefix: str = "") -> dict[str, Any]:
    """The values of :func:`comparison_traits` for a comparison, named ``prefix + "_modes"`` and so on.

    ``None`` gives the empty state (no modes, no sites): nothing to draw.

    Args:
      comparison: what :func:`~jaxcapture_nb.compare_modes` returned, or None.
      prefix: put before each trait name: ``""`` for CompareView's own
        traits, ``"_compare"`` for ModePanel's.

    Returns:
      Trait name to value: text as JSON, numbers as binary buffers.

    Example:
      >>> sorted(comparison_state(None, "_compare"))[:3]
      ['_compare_bins', '_compare_hists', '_compare_modes']
    """
    if comparison is None:
        state: dict[str, Any] = {
            "_modes": [],
            "_stat_columns": list(compare_columns()),
            "_sites": [],
            "_bins": 0,
            "_note": "",
            "_noun": "mode",
            **dict.fromkeys(("_stats", "_hists", "_ranges", "_shifts"), b""),
        }
    else:
        state = {
            "_modes": [str(m) for m in comparison.modes],
            "_stat_columns": list(compare_columns()),
            "_sites": [
                {
                    "site": s.site,
                    "label": s.label,
                    "type": s.var_type,
                    # A shape, None where not reached, or why the shape is not known.
                    "shapes": [
                        shape if shape is None or isinstance(shape, str) else [int(n) for n in shape]
                        for shape in s.shapes
                    ],
                    "same": s.same,
                }
                for s in comparison.sites
            ],
            "_bins": comparison.bins,
            "_note": comparison.note,
            "_noun": comparison.noun,
            **_buffers(comparison),
        }
    return {prefix + name: value for name, value in state.items()}


class CompareView(FrontEndWidget, comparison_traits(), entry="compare_view.js", css="compare_view.css"):
    """Sites sorted by how far their distribution moves between modes.

    Each row shows the site's shift, the modes' histograms overlaid, and
    side by side every mode's statistics that the tables give a column
    (mean, std, min, max, share of zeros). Selecting a row shows a large
    overlaid histogram and every statistic of every mode. Saved notebooks
    keep the text table and a script-free HTML table.

    Args:
      comparison: the :class:`~jaxcapture_nb.Comparison` to show.

    Example:
      >>> import jax.numpy as jnp
      >>> from flax import nnx
      >>> from jaxcapture_nb import compare_modes
      >>> model = nnx.Sequential(nnx.Linear(3, 4, rngs=nnx.Rngs(0)), nnx.Dropout(0.5, rngs=nnx.Rngs(1)))
      >>> result = compare_modes(model, jnp.ones((8, 3)))
      >>> view = CompareView(result)
      >>> view._modes, repr(view) == result.table()
      (['train', 'eval'], True)
    """

    def __init__(self, comparison: Comparison, **kwargs: Any):
        self._comparison = comparison
        super().__init__(**comparison_state(comparison), **kwargs)

    def __repr__(self) -> str:
        return self._comparison.table()

    def _saved_view(self) -> tuple[str, str]:
        return self._comparison.table(), comparison_html(self._comparison)
