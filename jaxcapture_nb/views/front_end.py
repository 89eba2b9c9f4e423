"""Where the widgets' JS and CSS come from: the package's bundles and stylesheets.

The front end is ES modules that import one another (``js/``), and the
type checker reads them as such. anywidget loads each widget as one module
from a string, which cannot import a sibling file, so each widget's entry
file and everything it imports are bundled into one module by esbuild
(``npm run build``, see ``package.json``) into ``views/bundles/``. The
bundles are part of the source tree, so the package installs, from a wheel
or a checkout, where Node does not; the test command checks that they are
what esbuild makes of ``js/`` now.

Every stylesheet starts with ``theme.css``, the colours all widgets take
from the host's theme.
"""

from __future__ import annotations

import pathlib

_HERE = pathlib.Path(__file__).resolve().parent
BUNDLES = _HERE / "bundles"


def asset(name: str) -> pathlib.Path:
    """The path of a front-end source file (a stylesheet, or a module of ``js/``).

    A wheel ships the files in ``jaxcapture_nb/static``; a source checkout
    has them in ``js/`` at the top of the repository.
    """
    shipped = _HERE.parent / "static" / name
    return shipped if shipped.exists() else _HERE.parent.parent / "js" / name


def module(entry: str) -> str:
    """A widget's ES module: ``entry`` and every file it imports, as esbuild bundled them.

    Example:
      >>> source = module("capture_view.js")
      >>> source.index("function drawAxes(") < source.index("export {")
      True
    """
    return (BUNDLES / entry).read_text()


def stylesheet(name: str, extra: tuple[str, ...] = ()) -> str:
    """A widget's CSS: the shared theme, the ``extra`` files, then the widget's own rules.

    Example:
      >>> css = stylesheet("live_view.css")
      >>> css.index("--jcnb-fg:") < css.index(".jcnb-live")
      True
    """
    return "\n".join(asset(part).read_text() for part in ("theme.css", *extra, name))
