"""Where the widgets' JS and CSS come from: the wheel, or a source checkout.

Every widget's ES module is ``common.js`` and ``draw.js`` (the shared
functions and the drawing layer all of them use), then any files a few
widgets share (``compare_draw.js``, the comparison drawn by CompareView and
ModePanel), then the widget's own file, joined here: anywidget loads one module per widget, and a module served that way
cannot import a sibling file. Likewise every stylesheet starts with
``theme.css``, the colours all widgets take from the host's theme.
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


def module(name: str, extra: tuple[str, ...] = ()) -> str:
    """A widget's ES module: the shared helpers, the ``extra`` files, then the widget's own file.

    Example:
      >>> source = module("capture_view.js")
      >>> source.index("function drawAxes(") < source.index("export default")
      True
    """
    return "\n".join(asset(part).read_text() for part in ("common.js", "draw.js", *extra, name))


def stylesheet(name: str, extra: tuple[str, ...] = ()) -> str:
    """A widget's CSS: the shared theme, the ``extra`` files, then the widget's own rules.

    Example:
      >>> css = stylesheet("live_view.css")
      >>> css.index("--jcnb-fg:") < css.index(".jcnb-live")
      True
    """
    return "\n".join(asset(part).read_text() for part in ("theme.css", *extra, name))
