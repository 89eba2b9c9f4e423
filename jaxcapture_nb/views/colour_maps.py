"""The colour maps of the saved pictures, as js/draw.js's ``COLOUR_MAPS`` paints them in the widgets."""

from __future__ import annotations

import numpy as np

# Stops from 0 to 1, as [r, g, b]: viridis for values of one sign, ColorBrewer
# RdBu (blue, white, red) for values around zero.
MAPS = {
    "sequential": np.array([[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]]),
    "diverging": np.array([[33, 102, 172], [103, 169, 207], [247, 247, 247], [239, 138, 98], [178, 24, 43]]),
}
NOT_A_NUMBER = "#9e9e9e"


def colour_at(name: str, t: float) -> str:
    """The CSS colour of ``t`` in [0, 1] (clamped) on the map ``name``; grey when not a number.

    Example:
      >>> colour_at("sequential", 0.0), colour_at("diverging", 0.5), colour_at("diverging", float("nan"))
      ('#440154', '#f7f7f7', '#9e9e9e')
    """
    if not np.isfinite(t):
        return NOT_A_NUMBER
    stops = MAPS[name]
    at = min(max(t, 0.0), 1.0) * (len(stops) - 1)
    i = min(int(at), len(stops) - 2)
    rgb = np.rint(stops[i] + (at - i) * (stops[i + 1] - stops[i])).astype(int)
    return "#" + "".join(f"{c:02x}" for c in rgb)


def ink_on(colour: str) -> str:
    """Text colour that reads on a cell painted ``colour`` (``#rrggbb``).

    Example:
      >>> ink_on("#fde725"), ink_on("#440154")
      ('#000', '#fff')
    """
    r, g, b = (int(colour[k : k + 2], 16) for k in (1, 3, 5))
    return "#000" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 128 else "#fff"
