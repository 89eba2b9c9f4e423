"""The ``_schema`` trait: what every widget's front end draws with, sent once per widget.

It holds :func:`~jaxcapture_nb._schema.as_json` as the widget is made:
statistics with their labels and formats, percentile bands and their
opacity, colours, the heatmap's NaN/Inf colour indices. The front end can
take its constants from it rather than repeat them.
"""

from __future__ import annotations

from typing import Any

import traitlets as t

from jaxcapture_nb import _schema


class SchemaTrait(t.HasTraits):
    """A base class adding the synced ``_schema`` trait to a widget."""

    _schema = t.Dict().tag(sync=True)

    @t.default("_schema")
    def _schema_now(self) -> dict[str, Any]:
        # Read when the widget is made, not at import: the schema as it is then.
        return _schema.as_json()
