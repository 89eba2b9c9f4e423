"""What every widget shares: its front end, the schema it draws with, and its saved picture.

A widget names its entry file and stylesheet as class keywords::

    class PatchingView(FrontEndWidget, entry="patching_view.js", css="patching_view.css"):
        ...
        def _saved_view(self) -> tuple[str, str]:
            return repr(self), patching_html(self._results)

and gets its ES module (the entry file and every file it imports, see
:mod:`~jaxcapture_nb.views.front_end`), its CSS after the shared theme,
the synced ``_schema`` trait (:func:`~jaxcapture_nb.stats.schema.as_json`:
statistics with their labels and formats, percentile bands, colours, the
heatmap's NaN/Inf colour indices, sent once), and a mime bundle that
carries :meth:`FrontEndWidget._saved_view`: what a notebook shows without
a kernel, and what Jupyter saves in place of the widget.
"""

from __future__ import annotations

from typing import Any

import anywidget
import traitlets as t

from jaxcapture_nb.stats import schema
from jaxcapture_nb.views.front_end import module, stylesheet
from jaxcapture_nb.views.static import with_fallback


class FrontEndWidget(anywidget.AnyWidget):
    """An anywidget whose front end is one of ``js/``'s entry files.

    Attributes:
      front_end: the entry file, e.g. ``"capture_view.js"``.
    """

    front_end: str = ""
    _schema = t.Dict().tag(sync=True)

    def __init_subclass__(cls, *, entry: str = "", css: str | tuple[str, ...] = (), **kwargs: Any) -> None:
        # Set before anywidget's `AnyWidget.__init_subclass__` reads _esm and _css (anywidget 0.11).
        if entry:
            sheets = (css,) if isinstance(css, str) else css
            cls.front_end = entry
            cls._esm = module(entry)
            cls._css = stylesheet(sheets[-1], sheets[:-1])
        super().__init_subclass__(**kwargs)

    @t.default("_schema")
    def _schema_now(self) -> dict[str, Any]:
        # Read when the widget is made, not at import: the schema as it is then.
        return schema.as_json()

    def _saved_view(self) -> tuple[str, str]:
        """The widget as plain text and as script-free HTML."""
        raise NotImplementedError

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict, dict] | None:
        bundle = super()._repr_mimebundle_(**kwargs)
        return None if bundle is None else with_fallback(bundle, *self._saved_view())
