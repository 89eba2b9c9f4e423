"""Where the widgets' JS and CSS come from: the wheel, or a source checkout.

Every widget's ES module is ``common.js``, ``draw.js``, ``schema.js`` and
``names.js`` (the shared functions, the drawing layer, the reader of the schema
the kernel sends and how names are shown, which all of them use), then any files a few
widgets share (``compare_draw.js``, the comparison drawn by CompareView and
ModePanel), then the widget's entry file, each after the files it is made of
(``_PARTS``), joined here: anywidget loads one module per widget from a
string, and a module loaded that way cannot import a sibling file.

Each file keeps its own scope, as if it were an ES module. A file ends with
one line naming what it gives the files after it::

    export { fmt, h };

and the entry file with ``export default { render };``. Joining wraps each
file in a function, so its other top-level names stay private, and binds its
exports as constants the later files see::

    const { fmt, h } = (() => {
      ...common.js...
      return { fmt, h };
    })();

Two files may then define the same private name (``SPARK``); two files
exporting the same name is an error, raised here. Likewise every stylesheet
starts with ``theme.css``, the colours all widgets take from the host's theme.
"""

from __future__ import annotations

import pathlib
import re

_HERE = pathlib.Path(__file__).resolve().parent.parent

# A front-end file made of several: the files joined in front of it, in order
# (a file sees only what the files before it export).
_PARTS: dict[str, tuple[str, ...]] = {
    "compare_draw.js": ("compare_data.js", "compare_table.js", "compare_detail.js"),
    "mode_panel.js": ("mode_panel_layout.js", "mode_panel_controls.js"),
    "capture_view.js": (
        "capture_data.js",
        "capture_table.js",
        "capture_histogram.js",
        "capture_heat_picture.js",
        "capture_heatmap.js",
        "capture_range.js",
        "capture_layout.js",
    ),
    "patching_view.js": ("patching_data.js", "patching_heatmap.js", "patching_detail.js"),
    "live_view.js": (
        "live_state.js",
        "live_histograms.js",
        "live_heat.js",
        "live_lines.js",
        "live_run_bands.js",
        "live_export.js",
        "live_cards.js",
        "live_key.js",
        "live_scalars.js",
        "live_step_histogram.js",
        "live_detail.js",
        "live_layout.js",
    ),
}

_EXPORTS = re.compile(r"^export \{([^}]*)\};?[ \t]*$", re.MULTILINE)
_DEFAULT = re.compile(r"^export default (.+?);?[ \t]*$", re.MULTILINE)


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
    other file ends with one ``export { ... };`` line.

    Raises:
      ValueError: a file lacks its export line, or two files export one name.

    Example:
      >>> print(scoped([("a.js", "const x = 1;\\nconst y = 2;\\nexport { y };"),
      ...               ("b.js", "const x = y;\\nexport default { x };")]))
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
    for k, (name, text) in enumerate(parts):
        entry = k == len(parts) - 1
        found = (_DEFAULT if entry else _EXPORTS).findall(text)
        if len(found) != 1:
            kind = "export default" if entry else "export { ... }"
            raise ValueError(f"{name} needs exactly one `{kind}` line, found {len(found)}")
        if entry:
            body = _DEFAULT.sub(lambda m: f"return {m.group(1)};", text).rstrip()
            chunks.append(f"// {name}\nexport default (() => {{\n{body}\n}})();")
            continue
        names = [n.strip() for n in found[0].split(",") if n.strip()]
        for n in names:
            if n in owners:
                raise ValueError(f"{name} and {owners[n]} both export {n!r}")
            owners[n] = name
        exported = "{ " + ", ".join(names) + " }"
        body = _EXPORTS.sub("", text).rstrip()
        chunks.append(f"// {name}\nconst {exported} = (() => {{\n{body}\nreturn {exported};\n}})();")
    return "\n".join(chunks)


def module(name: str, extra: tuple[str, ...] = ()) -> str:
    """A widget's ES module: the shared helpers, the ``extra`` files, then the widget's own, each after its parts.

    Example:
      >>> source = module("capture_view.js")
      >>> source.index("function drawAxes(") < source.index("export default")
      True
    """
    files = [
        part
        for file in ("common.js", "draw.js", "schema.js", "names.js", *extra, name)
        for part in (*_PARTS.get(file, ()), file)
    ]
    return scoped([(part, asset(part).read_text()) for part in files])


def stylesheet(name: str, extra: tuple[str, ...] = ()) -> str:
    """A widget's CSS: the shared theme, the ``extra`` files, then the widget's own rules.

    Example:
      >>> css = stylesheet("live_view.css")
      >>> css.index("--jcnb-fg:") < css.index(".jcnb-live")
      True
    """
    return "\n".join(asset(part).read_text() for part in ("theme.css", *extra, name))
