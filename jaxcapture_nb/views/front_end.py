"""Where the widgets' JS and CSS come from: the wheel, or a source checkout.

The front end is ES modules that import one another (``js/``), and the
type checker reads them as such. anywidget, though, loads each widget as one
module from a string, and a module loaded that way cannot import a sibling
file; so :func:`module` follows a widget's imports from its entry file and
joins the files it reaches into one module, each after the files it
imports. The wheel ships the files as they are, with no build step, and
installs where Node does not.

Each file keeps its own scope. A file names what it takes from others on
``import { ... } from "./file.js";`` lines and what it gives them on one
last line::

    export { fmt, h };

and the entry file ends with ``export default { render };``. Joining drops
the import lines, wraps each file in a function, so its other top-level
names stay private, and binds its exports as constants the later files
see::

    const { fmt, h } = (() => {
      ...common.js...
      return { fmt, h };
    })();

Two files may then define the same private name (``SPARK``); two files of
one widget exporting the same name is an error, raised here, and so is an
import of a name the file imported from does not export. Likewise every
stylesheet starts with ``theme.css``, the colours all widgets take from the
host's theme.
"""

from __future__ import annotations

import pathlib
import re

_HERE = pathlib.Path(__file__).resolve().parent.parent

_IMPORT = re.compile(r'^import \{([^}]*)\} from "\./([\w.-]+\.js)";[ \t]*\n?', re.MULTILINE)
_EXPORTS = re.compile(r"^export \{([^}]*)\};?[ \t]*$", re.MULTILINE)
_DEFAULT = re.compile(r"^export default (.+?);?[ \t]*$", re.MULTILINE)


def _names(listed: str) -> list[str]:
    return [n.strip() for n in listed.split(",") if n.strip()]


def asset(name: str) -> pathlib.Path:
    """The path of a front-end file.

    A wheel ships the files in ``jaxcapture_nb/static``; a source checkout
    has them in ``js/`` at the top of the repository.
    """
    shipped = _HERE / "static" / name
    return shipped if shipped.exists() else _HERE.parent / "js" / name


def scoped(parts: list[tuple[str, str]]) -> str:
    """Joins ``(file name, source)`` pairs into one ES module, each file in its own scope.

    The last file is the entry: its ``export default`` is the module's. Every
    other file ends with one ``export { ... };`` line. Import lines are
    dropped: a file sees what every file before it exports.

    Raises:
      ValueError: a file lacks its export line, two files export one name,
        or a file imports a name that no file before it of the name it gives
        exports.

    Example:
      >>> print(scoped([("a.js", "const x = 1;\\nconst y = 2;\\nexport { y };"),
      ...               ("b.js", 'import { y } from "./a.js";\\nconst x = y;\\nexport default { x };')]))
      // a.js
      const { y } = (() => {
      const x = 1;
      const y = 2;
      return { y };
      })();
      // b.js
      export default (() => {
      const x = y;
      return { x };
      })();
    """
    owners: dict[str, str] = {}
    chunks = []
    for k, (name, source) in enumerate(parts):
        for dependency, wanted in imports(source):
            missing = [n for n in wanted if owners.get(n) != dependency]
            if missing:
                raise ValueError(
                    f"{name} imports {missing} from {dependency}, which no file before it exports"
                )
        text = _IMPORT.sub("", source)
        entry = k == len(parts) - 1
        found = (_DEFAULT if entry else _EXPORTS).findall(text)
        if len(found) != 1:
            kind = "export default" if entry else "export { ... }"
            raise ValueError(f"{name} needs exactly one `{kind}` line, found {len(found)}")
        if entry:
            body = _DEFAULT.sub(lambda m: f"return {m.group(1)};", text).rstrip()
            chunks.append(f"// {name}\nexport default (() => {{\n{body}\n}})();")
            continue
        names = _names(found[0])
        for n in names:
            if n in owners:
                raise ValueError(f"{name} and {owners[n]} both export {n!r}")
            owners[n] = name
        exported = "{ " + ", ".join(names) + " }"
        body = _EXPORTS.sub("", text).rstrip()
        chunks.append(f"// {name}\nconst {exported} = (() => {{\n{body}\nreturn {exported};\n}})();")
    return "\n".join(chunks)


def imports(text: str) -> list[tuple[str, list[str]]]:
    """The files a front-end file imports from, in order, each with the names it takes.

    Example:
      >>> imports('import { fmt, h } from "./common.js";\\nconst x = 1;\\n')
      [('common.js', ['fmt', 'h'])]
    """
    return [(file, _names(listed)) for listed, file in _IMPORT.findall(text)]


def joined_files(entry: str) -> list[str]:
    """The files a widget's module is made of: everything ``entry`` imports, each after its imports.

    Example:
      >>> joined_files("patching_view.js")[:4], joined_files("patching_view.js")[-1]
      (['common.js', 'draw.js', 'schema.js', 'names.js'], 'patching_view.js')
    """
    order: list[str] = []

    def visit(file: str, path: tuple[str, ...]) -> None:
        if file in path:
            raise ValueError(f"{file} imports itself through {' -> '.join(path)}")
        if file in order:
            return
        for dependency, _ in imports(asset(file).read_text()):
            visit(dependency, (*path, file))
        order.append(file)

    visit(entry, ())
    return order


def module(entry: str) -> str:
    """A widget's ES module: the files ``entry`` imports, directly or not, then ``entry``.

    Raises:
      ValueError: see :func:`scoped`.

    Example:
      >>> source = module("capture_view.js")
      >>> source.index("function drawAxes(") < source.index("export default")
      True
    """
    return scoped([(file, asset(file).read_text()) for file in joined_files(entry)])


def stylesheet(name: str, extra: tuple[str, ...] = ()) -> str:
    """A widget's CSS: the shared theme, the ``extra`` files, then the widget's own rules.

    Example:
      >>> css = stylesheet("live_view.css")
      >>> css.index("--jcnb-fg:") < css.index(".jcnb-live")
      True
    """
    return "\n".join(asset(part).read_text() for part in ("theme.css", *extra, name))
