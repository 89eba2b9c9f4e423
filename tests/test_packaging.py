"""The wheel carries the widget's front end, so installing needs no Node.js, and its modules load."""

import importlib
import json
import pathlib
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

from jaxcapture_nb.views import front_end

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_the_wheel_ships_the_widget_front_end(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("jaxcapture_nb-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    front_end = sorted(p.name for p in (ROOT / "js").iterdir() if p.suffix in (".js", ".css"))
    assert {"common.js", "draw.js", "theme.css", "live_view.js"} <= set(front_end)
    for name in front_end:
        shipped = zipfile.ZipFile(wheel).read(f"jaxcapture_nb/static/{name}")
        assert shipped == (ROOT / "js" / name).read_bytes()
    assert not any(n.endswith(".map") or "node_modules" in n for n in names)
    # The Jupyter server extension that saves each view's picture is enabled by the install itself.
    (config,) = [n for n in names if n.endswith("etc/jupyter/jupyter_server_config.d/jaxcapture_nb.json")]
    enabled = json.loads(zipfile.ZipFile(wheel).read(config))["ServerApp"]["jpserver_extensions"]
    assert enabled == {"jaxcapture_nb.jupyter.server_extension": True}


def test_the_front_end_needs_nothing_a_host_may_lack():
    """VS Code, Colab and marimo load the same modules: no host API, no import, no parsed HTML.

    The files import only one another, and the modules the widgets ship, those files joined,
    import nothing.
    """
    for path in sorted((ROOT / "js").glob("*.js")):
        text = path.read_text()
        for host_only in ("@jupyterlab", "jupyterapp", "require(", "innerHTML", "insertAdjacentHTML"):
            assert host_only not in text, (path.name, host_only)
        lines = [line for line in text.splitlines() if line.startswith("import ")]
        siblings = front_end.imports(text)
        assert len(siblings) == len(lines), path.name
        assert all((ROOT / "js" / file).exists() for file, _ in siblings), path.name
    for entry in ("capture_view.js", "live_view.js", "compare_view.js", "mode_panel.js", "patching_view.js"):
        assert "\nimport " not in front_end.module(entry), entry
    for path in sorted((ROOT / "js").glob("*.css")):
        # A host variable always comes with a fallback: hosts define JupyterLab's or VS Code's, or none.
        bare = re.findall(r"var\(--(?:jp|vscode)-[\w-]+\)", path.read_text())
        assert bare == [], (path.name, bare)


def _node_load(tmp_path, source, probe):
    """What `probe` prints after Node imports `source` as an ES module bound to `m`."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed; the wheel does not need it, this check does")
    module = tmp_path / f"module{len(list(tmp_path.iterdir()))}.mjs"
    module.write_text(source)
    script = f"const m = await import({json.dumps(module.as_uri())}); console.log({probe});"
    done = subprocess.run(
        [node, "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize(
    "widget",
    [
        "capture_view.CaptureView",
        "live_view.LiveView",
        "compare_view.CompareView",
        "mode_panel.ModePanel",
        "patching_view.PatchingView",
    ],
)
def test_every_widget_module_loads(tmp_path, widget):
    """The module a widget ships, its files joined, parses and runs its top level."""
    module_name, class_name = widget.split(".")
    cls = getattr(importlib.import_module(f"jaxcapture_nb.views.{module_name}"), class_name)
    # A default export is the widget, or (anywidget's factory, called once per widget) makes it.
    widget = "(typeof m.default === 'function' ? m.default() : m.default)"
    assert _node_load(tmp_path, cls._esm, f"typeof {widget}.render") == "function"


def test_a_file_sees_only_what_the_files_before_it_export(tmp_path):
    shared = "const SPARK = 1;\nconst hidden = 2;\nfunction shown() { return SPARK + hidden; }\nexport { shown };\n"
    entry = (
        "const SPARK = 10;\nconst probe = () => [shown(), SPARK, typeof hidden];\nexport default { probe };\n"
    )
    source = front_end.scoped([("shared.js", shared), ("entry.js", entry)])
    assert json.loads(_node_load(tmp_path, source, "JSON.stringify(m.default.probe())")) == [
        3,
        10,
        "undefined",
    ]
    # The day one widget loads capture_view.js beside compare_draw.js: both keep a private SPARK.
    files = dict.fromkeys(
        [*front_end.joined_files("compare_draw.js"), *front_end.joined_files("capture_view.js")]
    )
    both = front_end.scoped([(file, front_end.asset(file).read_text()) for file in files])
    assert _node_load(tmp_path, both, "typeof m.default.render") == "function"
    with pytest.raises(ValueError, match="both export 'shown'"):
        front_end.scoped([("a.js", shared), ("b.js", shared), ("entry.js", entry)])
    with pytest.raises(ValueError, match="needs exactly one"):
        front_end.scoped([("a.js", "const x = 1;\n"), ("entry.js", entry)])
    importer = 'import { shown, hidden } from "./shared.js";\nexport default { shown };\n'
    with pytest.raises(ValueError, match=r"imports \['hidden'\] from shared.js"):
        front_end.scoped([("shared.js", shared), ("entry.js", importer)])
    with pytest.raises(ValueError, match=r"imports \['shown', 'hidden'\] from shared.js"):
        front_end.scoped([("entry.js", importer)])


def test_every_front_end_file_is_in_a_widget_module():
    """A new file no widget imports would ship and never load."""
    sources = [
        front_end.module("capture_view.js"),
        front_end.module("live_view.js"),
        front_end.module("compare_view.js"),
        front_end.module("mode_panel.js"),
        front_end.module("patching_view.js"),
    ]
    joined = {
        line[3:]
        for source in sources
        for line in source.splitlines()
        if line.startswith("// ") and line.endswith(".js")
    }
    assert joined == {p.name for p in (ROOT / "js").glob("*.js")}
