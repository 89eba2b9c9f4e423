"""What a ModePanel leaves in a notebook: its text and script-free HTML, sent again when they change.

A notebook saves the last output a display sent, and its picture (the text
and the script-free HTML beside the widget) is what a saved notebook shows
(see :mod:`jaxcapture_nb.jupyter.server_extension`). So the panel shows itself
under a display id of its own and sends the output again whenever its
picture changes: a notebook saved after Eval was pressed shows Eval.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Any

from jaxcapture_nb.core.names import shown_name
from jaxcapture_nb.modes.comparison import Comparison
from jaxcapture_nb.views.compare_static import comparison_html
from jaxcapture_nb.views.mode_static import OptionRow, compared_note, panel_html, panel_text


def comparison_of(result: Any) -> Comparison | None:
    """The Comparison a compare function's result holds (a CompareView holds one), if any."""
    result = getattr(result, "_comparison", result)
    return result if isinstance(result, Comparison) else None


class PanelPicture:
    """The saved picture of a :class:`~jaxcapture_nb.views.mode_panel.ModePanel`, which mixes this in."""

    def _code_text(self) -> str:
        """The Flax calls that make ``model`` from ``original`` (called ``model`` and ``view`` here)."""
        return self._options.code(self._settings)

    def _rows(self) -> list[OptionRow]:
        """Every option, in the panel's order, with its value in the current view."""
        return [
            OptionRow(cls, option, repr(value), via, set_here)
            for cls, option, value, via, set_here in self._options.rows(self._settings)
        ]

    def _compared_picture(self, html: bool) -> str:
        """The comparison shown, under a line saying what it compares: text, or HTML; "" before Compare."""
        if not self._compared:
            return ""
        note = shown_name(compared_note(self._compared, self._stale))  # it holds class names from user code
        drawn = comparison_of(self.comparison)
        if html:
            shown = comparison_html(drawn) if drawn is not None else ""
            return f'<div style="margin-bottom:4px">{escape(note)}</div>{shown}'
        return note if drawn is None else f"{note}\n{drawn.table()}"

    def __repr__(self) -> str:
        return self._static(panel_text, self._compared_picture(html=False))

    def _static(self, render: Callable[..., str], compared: str) -> str:
        title = f"ModePanel of {shown_name(type(self.original).__name__)}"
        return render(title, self._linen, self._rows(), self._code, self.error, compared)

    def _saved_view(self) -> tuple[str, str]:
        return (
            self._static(panel_text, self._compared_picture(html=False)),
            self._static(panel_html, self._compared_picture(html=True)),
        )

    def _output(self) -> tuple[dict, dict] | None:
        """The panel's mime bundle; None once it is closed (ipywidgets 8's ``Widget.close`` then sets ``_repr_mimebundle_`` to None)."""
        mimebundle = self._repr_mimebundle_
        return mimebundle() if callable(mimebundle) else None

    def _ipython_display_(self) -> None:
        """Shows the panel under its display id, which :meth:`_update_display` sends the output to again."""
        from IPython.display import display

        bundle = self._output()
        if bundle is None:  # closed: its text alone, as IPython shows a closed widget
            display({"text/plain": repr(self)}, raw=True)
            return
        data, metadata = bundle
        self._picture = (data["text/plain"], data["text/html"])
        display(data, metadata=metadata, raw=True, display_id=self._panel_id)

    def _update_display(self) -> None:
        """Sends the panel's output again where its picture changed, so a saved notebook shows it as it is.

        Front ends draw the widget of an updated output anew (the new view
        opens as the last one was), so nothing is sent when only what the
        widget alone shows changed, such as the revision.
        """
        if self._picture is None:  # never displayed
            return
        bundle = self._output()
        if bundle is None:
            return
        data, metadata = bundle
        picture = (data["text/plain"], data["text/html"])
        if picture == self._picture:
            return
        from IPython.display import update_display

        self._picture = picture
        update_display(data, metadata=metadata, raw=True, display_id=self._panel_id)

    def _compared_text(self, result: Any, drawn: Comparison | None) -> str:
        """What the panel says the comparison shown compares."""
        if drawn is None:
            return (
                f"your compare function returned a {type(result).__name__}, not a Comparison: "
                "display panel.comparison to see it"
            )
        if self._against == "model":
            return f"model as it is against {self.view_label()}"
        if self._against == "presets":
            return f"{self.view_label()} against the train and eval presets"
        return f"your compare function on {self.view_label()}"
