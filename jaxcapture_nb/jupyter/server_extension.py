"""Notebooks that show each view's last picture when reopened: a Jupyter server extension.

Every view's output carries two pictures: the live widget
(``application/vnd.jupyter.widget-view+json``) and a script-free HTML
picture of what it showed (``text/html``). A notebook front end picks the
widget whenever the output has one, but a reopened notebook's widget is
gone with the kernel that made it, so JupyterLab and Notebook 7 then show
"Error displaying widget: model not found" (or, with widget state saved in
the file and no kernel, "Loading widget..." for good) rather than the
picture beside it: both texts come from jupyterlab_widgets 3.0.17's
``WidgetRenderer.renderModel``, and
https://github.com/jupyter-widgets/ipywidgets/issues/3823 reports the
first for JupyterLab 4 and Notebook 7.

So when JupyterLab or Notebook 7 saves a notebook, this extension leaves
the widget entry out of the saved outputs of this package's views, which
their output metadata marks (:data:`MARK`): the file keeps the picture, and
the open notebook keeps its live widgets. Re-running the cell brings the
live widget back. Outputs of other widgets are left as they are.

The package enables the extension itself: the wheel installs
``etc/jupyter/jupyter_server_config.d/jaxcapture_nb.json``, which Jupyter
reads from the environment it is installed in.

Example:
  >>> output = {"output_type": "display_data", "metadata": {MARK: {"saved": "text/html"}},
  ...           "data": {WIDGET_VIEW: {"model_id": "1"}, "text/html": "<table/>", "text/plain": "view"}}
  >>> notebook = {"cells": [{"cell_type": "code", "outputs": [output]}]}
  >>> without_live_views(notebook)
  1
  >>> sorted(output["data"])
  ['text/html', 'text/plain']
"""

from __future__ import annotations

from typing import Any

# The output metadata key that marks an output of this package's views.
MARK = "jaxcapture_nb"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def saved_view_metadata() -> dict[str, Any]:
    """The output metadata of a view whose ``text/html`` is its saved picture."""
    return {MARK: {"saved": "text/html"}}


def without_live_views(notebook: dict[str, Any]) -> int:
    """Leaves the widget entry out of the marked outputs of ``notebook`` (nbformat 4 JSON), in place.

    Returns:
      How many outputs lost their widget entry.
    """
    stripped = 0
    for cell in notebook.get("cells", ()):
        for output in cell.get("outputs", ()) if cell.get("cell_type") == "code" else ():
            data = output.get("data", {})
            if MARK in output.get("metadata", {}) and WIDGET_VIEW in data and "text/html" in data:
                del data[WIDGET_VIEW]
                stripped += 1
    return stripped


def keep_saved_pictures(model: dict[str, Any], **_: Any) -> None:
    """The pre-save hook: a notebook is saved with its views' pictures rather than their widgets."""
    if model.get("type") == "notebook" and isinstance(model.get("content"), dict):
        without_live_views(model["content"])


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": __name__}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    serverapp.contents_manager.register_pre_save_hook(keep_saved_pictures)
