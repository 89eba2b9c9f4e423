"""Where the widgets' JS and CSS come from: the wheel, or a source checkout.

Every widget's ES module is ``common.js`` (helpers all of them use) followed
by the widget's own file, joined here: anywidget loads one module per widget,
and a module served that way cannot import a sibling file.
"""

from __future__ import annotations

import pathlib

_HERE = pathlib.Path(__file__).resolve().parent.parent


def asset(name: str) -> pathlib.Path:
    """The path of a front-end file.

    A wheel ships the files in ``jaxcapture_nb/static``; a source checkout
    has them in ``js/`` at the top of the repository.
    """
    shipped = _HERE / "static" / name
    return shipped if shipped.exists() else _HERE.parent / "js" / name


def module(name: str) -> str:
    """A widget's ES module: the shared helpers, then the widget's own file.

    Example:
      >>> source = module("capture_view.js")
      >>> source.index("function bytesOf(") < source.index("export default")
      True
    """
    return asset("common.js").read_text() + "\n" + asset(name).read_text()
